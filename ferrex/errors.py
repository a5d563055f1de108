"""The errors ferrex raises: one class per distinguishable failure, each with its stable
``code``, the CLI's ``exit_code``, its one ``http_status`` and what it means to a client.

    FerrexError                 root; unclassified (exit 1, HTTP 500): ``error``
    ├── Internal, VersionMismatch
    ├── Unauthorized, Forbidden, KeyReused, TooManyStreams   who asks, how often (HTTP only)
    ├── UsageError              bad input from a person or an agent (exit 2): ``invalid_input``
    │   └── SecretRefused, MethodNotAllowed, NoHome, HelloRefused, Export{Invalid,Target,
    │       Foreign,Dirty}
    ├── JournalFailure          the journal refused: damage, lock, I/O (exit 3): ``journal``
    │   └── one class per journal code (``journal.<code>``), ExportAhead, ExportDiverged
    ├── ModelUnavailable        a configured model cannot be loaded (exit 4)
    │   └── ModelMismatch, ModelUnauthorized, ModelBadResponse
    ├── BackendUnavailable      a store (Qdrant, SQLite) cannot be reached (exit 5)
    │   └── Busy, GitUnavailable, GitFailure
    ├── Refused                 a store the memory rules refuse (exit 7): ``refused``
    │   └── NotFound, Duplicate, ConflictAmbiguous, AlreadySuperseded
    ├── ReadOnlyHome            a write on a read-only data directory (exit 8): ``read_only``
    └── StorageFull             a write refused to keep the free-space reserve (exit 9)

A class that declares a ``code`` must declare its ``http_status`` and ``meaning`` beside it,
and no two classes declare the same code (both checked when the class is made), so a new
failure cannot be added without its status: :data:`ERROR_CLASSES` maps each code to its
class, and the HTTP answers, error bodies and the OpenAPI document read it (through
``server.dashboard.edge.ERRORS``). A class without a code of its own (``remote.ServerDown``)
is a narrower catch of its parent's failure and keeps its own name as its ``kind``.

Errors may carry ``details``: the ids involved and scores, for agents and ``--json``.

Errors from the ``journal`` package (which imports nothing of ours) are translated into
``JournalFailure`` classes once, at the edge, by :func:`from_journal_error`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from journal.errors import JournalError

#: Every error code ferrex raises, with the class that carries it (its status, kind and
#: meaning). Filled as the classes are made; all of them are made in this module.
ERROR_CLASSES: dict[str, type[FerrexError]] = {}


class FerrexError(Exception):
    """Root of ferrex's errors. ``code`` never changes once published.

    ``kind`` is the family a client sees in an error body (the class that declares it, or
    the class's own name when it declares no code). The HTTP rule for ``http_status``: 4xx
    when the same request cannot succeed until someone changes something (the request, the
    memories, the server's setup), so a client must not retry it as it is; 503 (with
    ``Retry-After``) when it may succeed later by itself; 500 only for ``internal`` (and the
    unclassified root ``error``)."""

    code: str = "error"
    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 500
    kind: ClassVar[str] = "FerrexError"
    meaning: ClassVar[str] = "an unclassified failure, as `internal`"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "code" not in own:
            if "kind" not in own:
                cls.kind = cls.__name__
            return
        if "http_status" not in own or "meaning" not in own:
            raise TypeError(f"{cls.__name__} declares code {cls.code!r} without its "
                            "http_status and meaning")  # fmt: skip
        taken = ERROR_CLASSES.get(cls.code)
        if taken is not None:
            raise TypeError(f"{cls.__name__} declares code {cls.code!r}, already "
                            f"{taken.__name__}'s")  # fmt: skip
        ERROR_CLASSES[cls.code] = cls

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        code: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details or {}
        if code is not None:
            # Only to rebuild an error another process reported (its code may be one this
            # version does not know); ferrex's own raise sites use the code's class.
            self.code = code

    def reworded(self, message: str, *, details: dict[str, Any] | None = None) -> Self:
        """The same failure (class, code, hint) told with another message: a caller's
        context around a lower layer's error."""
        again = type(self)(message, hint=self.hint, details=details)
        if "code" in vars(self):  # a rebuilt error's code, kept
            again.code = self.code
        return again

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "hint": self.hint, **self.details}

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} (hint: {self.hint})"


ERROR_CLASSES[FerrexError.code] = FerrexError


class Internal(FerrexError):
    code = "internal"
    http_status = 500
    meaning = "the server failed; the error is in its log"


class VersionMismatch(FerrexError):
    code = "version_mismatch"
    http_status = 503
    meaning = "processes of two ferrex versions share the data directory (a restart?)"


# -- who is asking, and how often (the HTTP edge's own) -------------------------------------


class Unauthorized(FerrexError):
    code = "unauthorized"
    kind = "Unauthorized"
    http_status = 401
    meaning = "no token, or one not known"


class Forbidden(FerrexError):
    code = "forbidden"
    kind = "Forbidden"
    http_status = 403
    meaning = "a Host or Origin this server does not answer, or a view this token may not see"


class KeyReused(FerrexError):
    code = "idempotency_key_reused"
    kind = "KeyReused"
    http_status = 422
    meaning = "an Idempotency-Key already used for a different request"


class TooManyStreams(FerrexError):
    code = "too_many_streams"
    kind = "TooManyStreams"
    http_status = 429
    meaning = "this token (or the server) holds as many change streams as it may; close one"


# -- the request ----------------------------------------------------------------------------


class UsageError(FerrexError):
    code = "invalid_input"
    kind = "UsageError"
    exit_code = 2
    http_status = 400
    meaning = "bad input; nothing was changed"


class MethodNotAllowed(UsageError):
    code = "method_not_allowed"
    http_status = 405
    meaning = "the path does not take this method"


class SecretRefused(UsageError):
    code = "secret_refused"
    http_status = 422
    meaning = "the text carries a likely secret; nothing was stored"


class NoHome(UsageError):
    code = "no_home"
    http_status = 409
    meaning = "the data directory does not exist"


class HelloRefused(UsageError):
    code = "hello_refused"
    http_status = 503
    meaning = "the owner process refused this process's hello (another ferrex version?)"


class ExportInvalid(UsageError):
    """The command line only (never over HTTP), as are the other ``export_*`` and ``git_*``."""

    code = "export_invalid"
    http_status = 400
    meaning = "an export file that cannot be read"


class ExportTarget(UsageError):
    code = "export_target"
    http_status = 400
    meaning = "an export target that is no directory"


class ExportForeign(UsageError):
    code = "export_foreign"
    http_status = 409
    meaning = "the export is of another journal"


class ExportDirty(UsageError):
    code = "export_dirty"
    http_status = 409
    meaning = "the export's work tree has changes"


# -- the memories ---------------------------------------------------------------------------


class Refused(FerrexError):
    """The memory rules refuse this store; ``details`` names the memories involved."""

    code = "refused"
    kind = "Refused"
    exit_code = 7
    http_status = 409
    meaning = "the memory rules refuse it"


class NotFound(Refused):
    code = "not_found"
    http_status = 404
    meaning = "no such memory (or `supersedes` names none), or not one this token may see"


class Duplicate(Refused):
    code = "duplicate"
    http_status = 409
    meaning = "a near-copy exists (its id in `ids`); pass `supersedes` to replace it"


class ConflictAmbiguous(Refused):
    code = "conflict_ambiguous"
    http_status = 409
    meaning = "it would replace a pinned fact (its id in `ids`); pass `supersedes` to replace it"


class AlreadySuperseded(Refused):
    code = "already_superseded"
    http_status = 409
    meaning = "the memory to replace was replaced"


# -- the server's setup ---------------------------------------------------------------------


class ReadOnlyHome(FerrexError):
    """The data directory is on a read-only file system; reading commands still work."""

    code = "read_only"
    kind = "ReadOnlyHome"
    exit_code = 8
    http_status = 409
    meaning = "the data directory is read-only"


class StorageFull(FerrexError):
    """Too little free space is left to write safely; nothing was written."""

    code = "storage_full"
    kind = "StorageFull"
    exit_code = 9
    http_status = 507
    meaning = "too little free space to write safely"


class ModelUnavailable(FerrexError):
    code = "model_unavailable"
    kind = "ModelUnavailable"
    exit_code = 4
    http_status = 503
    meaning = "a model cannot be loaded"


class ModelMismatch(ModelUnavailable):
    code = "model_mismatch"
    http_status = 409
    meaning = "the vectors were built with another model (`ferrex reembed`)"


class ModelUnauthorized(ModelUnavailable):
    code = "model_unauthorized"
    http_status = 424
    meaning = "the embeddings server refuses the server's key"


class ModelBadResponse(ModelUnavailable):
    code = "model_bad_response"
    http_status = 424
    meaning = "the embeddings server's answer is not one ferrex can use"


class BackendUnavailable(FerrexError):
    code = "backend_unavailable"
    kind = "BackendUnavailable"
    exit_code = 5
    http_status = 503
    meaning = "a store or the embeddings server cannot be reached"


class Busy(BackendUnavailable):
    code = "busy"
    http_status = 503
    meaning = "another process holds the stores"


class GitUnavailable(BackendUnavailable):
    code = "git_unavailable"
    http_status = 409
    meaning = "git is not installed"


class GitFailure(BackendUnavailable):
    code = "git_failed"
    http_status = 503
    meaning = "git failed; run it again"


# -- the journal ----------------------------------------------------------------------------


class JournalFailure(FerrexError):
    code = "journal"
    kind = "JournalFailure"
    exit_code = 3
    http_status = 503
    meaning = "the journal failed"


class JournalErred(JournalFailure):
    code = "journal.error"
    http_status = 503
    meaning = "the journal failed (closed, or PostgreSQL erred)"


class JournalDamagedFailure(JournalFailure):
    code = "journal.damaged"
    http_status = 409
    meaning = "the journal is damaged (`ferrex journal repair`)"


class JournalFormatFailure(JournalFailure):
    code = "journal.format"
    http_status = 409
    meaning = "the journal's files are not a ferrex journal"


class JournalTooNewFailure(JournalFailure):
    code = "journal.too_new"
    http_status = 409
    meaning = "the journal was written by a newer ferrex"


class JournalEncodeFailure(JournalFailure):
    code = "journal.encode"
    http_status = 422
    meaning = "a value that cannot be written to the journal"


class JournalConnectFailure(JournalFailure):
    code = "journal.connect"
    http_status = 503
    meaning = "the PostgreSQL journal cannot be connected to"


class JournalUnavailableFailure(JournalFailure):
    code = "journal.unavailable"
    http_status = 503
    meaning = "PostgreSQL went away; nothing was half-written"


class ExportAhead(JournalFailure):
    code = "export_ahead"
    http_status = 409
    meaning = "the export is ahead of the journal"


class ExportDiverged(JournalFailure):
    code = "export_diverged"
    http_status = 409
    meaning = "the export and the journal diverged"


def from_journal_error(exc: JournalError) -> JournalFailure:
    """Translate a journal error into the class of its code (``journal.<code>``), keeping
    its message and hint."""
    code = f"journal.{exc.code}"
    cls = ERROR_CLASSES.get(code)
    if cls is not None and issubclass(cls, JournalFailure):
        return cls(str(exc.message), hint=exc.hint)
    # a code of a journal package newer than this module: kept as it is
    return JournalFailure(str(exc.message), hint=exc.hint, code=code)
