"""The errors ferrex raises, each with a stable code, a message and an optional hint.

    FerrexError                 root; ``code`` is stable, ``exit_code`` is the CLI's
    ├── UsageError              bad input from a person or an agent (exit 2)
    ├── JournalFailure          the journal refused: damage, lock, I/O (exit 3)
    ├── ModelUnavailable        a configured model cannot be loaded (exit 4)
    ├── BackendUnavailable      a store (Qdrant, SQLite) cannot be reached (exit 5)
    ├── Refused                 a store the memory rules refuse (exit 7):
    │                           ``duplicate``, ``conflict_ambiguous``, ``not_found``
    ├── ReadOnlyHome            a write on a read-only data directory (exit 8): ``read_only``
    └── StorageFull             a write refused to keep the free-space reserve (exit 9):
                                ``storage_full``

Errors may carry ``details``: the ids involved and scores, for agents and ``--json``.

Errors from the ``journal`` package (which imports nothing of ours) are translated into
``JournalFailure`` once, at the edge, by :func:`from_journal_error`.
"""

from __future__ import annotations

from typing import Any

from journal.errors import JournalError


class FerrexError(Exception):
    """Root of ferrex's errors. ``code`` never changes once published."""

    code = "error"
    exit_code = 1

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
            self.code = code

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "hint": self.hint, **self.details}

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} (hint: {self.hint})"


class UsageError(FerrexError):
    code = "invalid_input"
    exit_code = 2


class JournalFailure(FerrexError):
    code = "journal"
    exit_code = 3


class ModelUnavailable(FerrexError):
    code = "model_unavailable"
    exit_code = 4


class BackendUnavailable(FerrexError):
    code = "backend_unavailable"
    exit_code = 5


class Refused(FerrexError):
    """The memory rules refuse this store; ``details`` names the memories involved."""

    code = "refused"
    exit_code = 7


class ReadOnlyHome(FerrexError):
    """The data directory is on a read-only file system; reading commands still work."""

    code = "read_only"
    exit_code = 8


class StorageFull(FerrexError):
    """Too little free space is left to write safely; nothing was written."""

    code = "storage_full"
    exit_code = 9


def from_journal_error(exc: JournalError) -> JournalFailure:
    """Translate a journal error, keeping its stable code and hint."""
    return JournalFailure(str(exc.message), hint=exc.hint, code=f"journal.{exc.code}")
