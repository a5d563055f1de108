"""Errors raised by the journal. The package imports nothing of ferrex's, so it has its own root.

JournalError            root; ``code`` is stable, ``hint`` says what to do
├── JournalDamaged      a bad record with valid records after it, or a broken chain
│   └── JournalBehind   the journal ends before a position its projections applied
├── JournalFormatError  a file that is not a ferrex journal segment (or a newer format)
│   └── JournalTooNew   records (or a PostgreSQL schema) newer than this code: it will not write
├── EncodeError         an event that cannot be written (bad field values)
├── JournalConnectError a PostgreSQL journal that cannot be used as configured (URL, login)
└── JournalUnavailable  PostgreSQL is unreachable or went away mid-call (nothing half-written)
"""

from __future__ import annotations

from pathlib import Path


class JournalError(Exception):
    code = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} (hint: {self.hint})"


class JournalDamaged(JournalError):
    """Acknowledged data is damaged. Never repaired implicitly."""

    code = "damaged"

    def __init__(
        self,
        message: str,
        *,
        segment: Path,
        offset: int,
        position: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.segment = segment
        self.offset = offset
        self.position = position


class JournalBehind(JournalDamaged):
    """The journal ends before a position its projections applied: records that were
    appended, fsynced and acknowledged are missing (cut as a torn tail, or the journal was put
    back from an older copy)."""

    def __init__(self, applied: int, head: int) -> None:
        missing = applied - head
        super().__init__(
            f"the journal ends at position {head}, but position {applied} was written and "
            f"applied: {missing} acknowledged record{'s are' if missing > 1 else ' is'} missing "
            "from it (cut as a torn tail, kept beside its segment as .corrupt-*, or the "
            "journal was put back from an older copy)",
            segment=Path(),
            offset=0,
            position=head + 1,
            hint="put back the journal from a copy that holds them; to go on without them, "
            "`ferrex replay` rebuilds everything from the journal as it is",
        )
        self.applied = applied
        self.head = head


class JournalFormatError(JournalError):
    code = "format"


class JournalTooNew(JournalFormatError):
    """The journal holds records of a format newer than this code understands.

    Raised when a process would open the journal (which may cut a torn tail) or append to
    it: a writer must never add records, or decisions, beside ones it cannot fully read.
    """

    code = "too_new"

    def __init__(self, message: str, *, found: int | None, supported: int) -> None:
        super().__init__(
            message,
            hint="upgrade ferrex to the version that wrote these records (or a newer one)",
        )
        self.found = found
        """The newest format found; None for a record of a layout no format has."""
        self.supported = supported

    @classmethod
    def refusing_writes(cls, where: str, found: int, supported: int) -> JournalTooNew:
        """A journal (``where``: "in DIR", "at URL") whose newest records are of format
        ``found``, newer than ``supported``: this ferrex will not write to it."""
        return cls(
            f"the journal {where} holds records of format version {found}, newer than this "
            f"ferrex's {supported}; it will not write to this journal",
            found=found,
            supported=supported,
        )


class EncodeError(JournalError):
    code = "encode"


class JournalConnectError(JournalError):
    """The configured PostgreSQL journal cannot be used: a malformed URL, a refused login, a
    database that does not exist, or no permission to use (or create) the schema."""

    code = "connect"


class JournalUnavailable(JournalError):
    """PostgreSQL cannot be reached, or went away during a call. A transaction it interrupted
    is rolled back whole: nothing of it was written unless its commit had been acknowledged."""

    code = "unavailable"
