"""What every dashboard response and refusal shares, for ``web`` and ``api`` alike.

The headers each answer carries (error pages and JSON errors included) and the two refusals
of who is asking. Kept apart so that ``api`` (which ``web`` builds) needs nothing from
``web``: the dashboard's modules import one way, ``web`` → ``api`` → ``edge``.
"""

from __future__ import annotations

from ferrex.errors import FerrexError

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    # same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on the
    # dashboard's own POSTs, and no address (the login URL with its token) leaves the site.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


class Unauthorized(FerrexError):
    code = "unauthorized"


class Forbidden(FerrexError):
    code = "forbidden"
