"""What every dashboard response and refusal shares, for ``web`` and ``api`` alike.

The headers each answer carries (error pages and JSON errors included), and :data:`ERRORS`:
every error code's one HTTP status and ``kind``, read from the error classes of
:mod:`ferrex.errors` (the two refusals of who is asking among them), which the answers, the
error bodies and the OpenAPI document all read. Kept apart so that ``api``
(which ``web`` builds) needs nothing from ``web``: the dashboard's modules import one way,
``web`` → ``api`` → ``edge``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ferrex.errors import ERROR_CLASSES, FerrexError
from ferrex.errors import Forbidden as Forbidden
from ferrex.errors import Unauthorized as Unauthorized
from ferrex.server.caller import Caller, error_document

if TYPE_CHECKING:
    from starlette.requests import Request

    from ferrex.server.hub import Hub
    from ferrex.server.mcp_auth import TokenTable


class Gate(Protocol):
    """What the API and the change stream need of the dashboard that mounts them (``web``'s
    ``Dashboard`` is the one): the hub calls go through, the token table, and the checks of
    who is asking. Written here so that ``api`` and ``stream`` import nothing from ``web``."""

    hub: Hub
    tokens: TokenTable | None

    def caller(self, request: Request) -> Caller: ...

    def authenticated(self, request: Request) -> tuple[Caller, bool]: ...

    def check_host(self, request: Request) -> None: ...

    def same_origin(self, request: Request) -> None: ...


HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    # same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on the
    # dashboard's own POSTs, and no address (the login URL with its token) leaves the site.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class ErrorStatus:
    """What an error code is over HTTP: its one status, the ``kind`` its body carries and
    what it means to a client."""

    status: int
    kind: str
    meaning: str


#: Every error code ferrex raises, with its one HTTP status, for the pages and the JSON API
#: alike, and rendered into the OpenAPI document: read from the error classes
#: (:data:`ferrex.errors.ERROR_CLASSES`), each of which carries its status and meaning.
ERRORS: dict[str, ErrorStatus] = {
    code: ErrorStatus(cls.http_status, cls.kind, cls.meaning) for code, cls in ERROR_CLASSES.items()
}

#: The HTTP status of each error code (the table's statuses alone).
STATUS = {code: found.status for code, found in ERRORS.items()}

#: What a 503 tells a client to wait before it retries (seconds).
RETRY_AFTER_SECONDS = 5


def status_of(code: str) -> int:
    """The HTTP status of an error code (an unknown code: 500, as ``internal``)."""
    return STATUS.get(code, 500)


def error_headers(status: int) -> dict[str, str]:
    """The headers of an error answer: :data:`HEADERS`, and ``Retry-After`` on a 503 or a
    429."""
    if status in (429, 503):
        return {**HEADERS, "Retry-After": str(RETRY_AFTER_SECONDS)}
    return dict(HEADERS)


def error_body(exc: FerrexError) -> dict[str, Any]:
    """The JSON error document of an HTTP answer: ``kind`` (the code's, from :data:`ERRORS`,
    whichever process raised it), ``code``, ``message``, ``hint`` and the details."""
    doc = error_document(exc)
    found = ERRORS.get(exc.code)
    return {**doc, "kind": found.kind if found is not None else "FerrexError"}
