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


#: The HTTP status of each error code the tools raise (others: by their family, else 500),
#: for the pages and the JSON API alike.
STATUS = {
    "invalid_input": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "duplicate": 409,
    "conflict_ambiguous": 409,
    "already_superseded": 409,
    "read_only": 409,
    "method_not_allowed": 405,
    "idempotency_key_reused": 422,
    "busy": 503,
    "backend_unavailable": 503,
    "model_unavailable": 503,
    "version_mismatch": 503,
    "storage_full": 507,
}


def status_of(code: str) -> int:
    """The HTTP status of an error code: the table, a journal failure 503, else 500."""
    if code in STATUS:
        return STATUS[code]
    if code.startswith("journal."):
        return 503
    return 500
