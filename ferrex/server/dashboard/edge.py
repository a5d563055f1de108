"""What every dashboard response and refusal shares, for ``web`` and ``api`` alike.

The headers each answer carries (error pages and JSON errors included), the two refusals
of who is asking, and :data:`ERRORS`: every error code's one HTTP status and ``kind``, which
the answers, the error bodies and the OpenAPI document all read. Kept apart so that ``api``
(which ``web`` builds) needs nothing from ``web``: the dashboard's modules import one way,
``web`` → ``api`` → ``edge``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ferrex.errors import FerrexError
from ferrex.server.caller import error_document

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


@dataclass(frozen=True)
class ErrorStatus:
    """What an error code is over HTTP: its one status, the ``kind`` its body carries and
    what it means to a client."""

    status: int
    kind: str
    meaning: str


def _journal(status: int, meaning: str) -> ErrorStatus:
    return ErrorStatus(status, "JournalFailure", meaning)


#: Every error code ferrex raises, with its one HTTP status, for the pages and the JSON API
#: alike, and rendered into the OpenAPI document. The rule: 4xx when the same request cannot
#: succeed until someone changes something (the request, the memories, the server's setup),
#: so a client must not retry it as it is; 503 (with ``Retry-After``) when it may succeed
#: later by itself; 500 only for ``internal`` (and the unclassified root ``error``).
#: ``tests/unit/test_error_statuses.py`` finds every code in the source and fails on one
#: missing here.
# fmt: off
ERRORS: dict[str, ErrorStatus] = {
    # the request
    "invalid_input": ErrorStatus(400, "UsageError", "bad input; nothing was changed"),
    "unauthorized": ErrorStatus(401, "Unauthorized", "no token, or one not known"),
    "forbidden": ErrorStatus(403, "Forbidden", "a Host or Origin this server does not "
                             "answer, or a view this token may not see"),
    "not_found": ErrorStatus(404, "Refused", "no such memory (or `supersedes` names none), "
                             "or not one this token may see"),
    "method_not_allowed": ErrorStatus(405, "UsageError", "the path does not take this method"),
    "secret_refused": ErrorStatus(422, "UsageError", "the text carries a likely secret; "
                                  "nothing was stored"),
    "idempotency_key_reused": ErrorStatus(422, "KeyReused", "an Idempotency-Key already "
                                          "used for a different request"),
    "too_many_streams": ErrorStatus(429, "TooManyStreams", "this token (or the server) "
                                    "holds as many change streams as it may; close one"),
    # the memories
    "duplicate": ErrorStatus(409, "Refused", "a near-copy exists (its id in `ids`); pass "
                             "`supersedes` to replace it"),
    "conflict_ambiguous": ErrorStatus(409, "Refused", "it contradicts several memories"),
    "already_superseded": ErrorStatus(409, "Refused", "the memory to replace was replaced"),
    "refused": ErrorStatus(409, "Refused", "the memory rules refuse it"),
    # the server's setup: an operator must act before a retry can succeed
    "read_only": ErrorStatus(409, "ReadOnlyHome", "the data directory is read-only"),
    "no_home": ErrorStatus(409, "UsageError", "the data directory does not exist"),
    "model_mismatch": ErrorStatus(409, "ModelUnavailable", "the vectors were built with "
                                  "another model (`ferrex reembed`)"),
    "model_unauthorized": ErrorStatus(424, "ModelUnavailable", "the embeddings server "
                                      "refuses the server's key"),
    "model_bad_response": ErrorStatus(424, "ModelUnavailable", "the embeddings server's "
                                      "answer is not one ferrex can use"),
    "journal.damaged": _journal(409, "the journal is damaged (`ferrex journal repair`)"),
    "journal.format": _journal(409, "the journal's files are not a ferrex journal"),
    "journal.too_new": _journal(409, "the journal was written by a newer ferrex"),
    "journal.encode": _journal(422, "a value that cannot be written to the journal"),
    # the command line only (never over HTTP), for completeness
    "export_invalid": ErrorStatus(400, "UsageError", "an export file that cannot be read"),
    "export_target": ErrorStatus(400, "UsageError", "an export target that is no directory"),
    "export_foreign": ErrorStatus(409, "UsageError", "the export is of another journal"),
    "export_dirty": ErrorStatus(409, "UsageError", "the export's work tree has changes"),
    "export_ahead": ErrorStatus(409, "JournalFailure", "the export is ahead of the journal"),
    "export_diverged": ErrorStatus(409, "UsageError", "the export and the journal diverged"),
    "git_unavailable": ErrorStatus(409, "BackendUnavailable", "git is not installed"),
    "git_failed": ErrorStatus(503, "BackendUnavailable", "git failed; run it again"),
    # for now: retry later (after Retry-After)
    "busy": ErrorStatus(503, "BackendUnavailable", "another process holds the stores"),
    "backend_unavailable": ErrorStatus(503, "BackendUnavailable", "a store or the "
                                       "embeddings server cannot be reached"),
    "model_unavailable": ErrorStatus(503, "ModelUnavailable", "a model cannot be loaded"),
    "version_mismatch": ErrorStatus(503, "FerrexError", "processes of two ferrex versions "
                                    "share the data directory (a restart?)"),
    "hello_refused": ErrorStatus(503, "UsageError", "the owner process refused this "
                                 "process's hello (another ferrex version?)"),
    "journal": _journal(503, "the journal failed"),
    "journal.error": _journal(503, "the journal failed (closed, or PostgreSQL erred)"),
    "journal.connect": _journal(503, "the PostgreSQL journal cannot be connected to"),
    "journal.unavailable": _journal(503, "PostgreSQL went away; nothing was half-written"),
    "storage_full": ErrorStatus(507, "StorageFull", "too little free space to write safely"),
    # the server itself
    "internal": ErrorStatus(500, "FerrexError", "the server failed; the error is in its log"),
    "error": ErrorStatus(500, "FerrexError", "an unclassified failure, as `internal`"),
}
# fmt: on

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
