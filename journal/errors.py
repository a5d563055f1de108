"""Errors raised by the journal. The package imports nothing of ferrex's, so it has its own root.

JournalError            root; ``code`` is stable, ``hint`` says what to do
├── JournalDamaged      a bad record with valid records after it, or a broken chain
├── JournalFormatError  a file that is not a ferrex journal segment (or a newer format)
└── EncodeError         an event that cannot be written (bad field values)
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


class JournalFormatError(JournalError):
    code = "format"


class EncodeError(JournalError):
    code = "encode"
