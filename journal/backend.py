"""What a journal is to its users: the one interface its two backends share.

The file journal (``journal.log.Journal``, the embedded default) and the PostgreSQL journal
(``journal.postgres.PostgresJournal``) keep the same records — the same frame bytes,
positions and hash chain — and promise the same things: an append returns only once it is
durable; positions are unique and contiguous and every record chains to the one before it,
whichever process (or machine) wrote it; ``exclusive()`` holds off every other writer across
a read-decide-append sequence; readers never see a half-written record.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from journal.events import Event
from journal.log import Head
from journal.record import Record
from journal.verify import VerifyReport


class JournalBackend(Protocol):
    """A durable, hash-chained log of records (see the module docstring)."""

    where: str
    """Where the log is, as messages name it (a directory; a URL without its password)."""

    @property
    def head(self) -> Head:
        """The last record this process knows of (others' appends show after ``refresh``)."""
        ...

    @property
    def newest_version(self) -> int:
        """The newest record format version in the journal (0 when it is empty)."""
        ...

    def refresh(self) -> Head:
        """Catch up with records others appended, and return the head."""
        ...

    def exclusive(self) -> AbstractContextManager[Head]:
        """Hold the writer lock across a read-decide-append sequence; appends inside nest."""
        ...

    def try_exclusive(self) -> AbstractContextManager[Head | None]:
        """:meth:`exclusive` if the writer lock is free this instant, else ``None`` at once,
        holding nothing (a read catching up skips the catch-up while someone writes)."""
        ...

    def append(self, events: Sequence[Event]) -> Record:
        """Append one command's events as one record; returns once it is durable."""
        ...

    def append_batch(self, commands: Sequence[Sequence[Event]]) -> list[Record]:
        """Append one record per command, all durable together (group commit), or none."""
        ...

    def read(self, after: int = 0, *, hashes: bool = False) -> Iterator[Record]:
        """Records with position > ``after``, in order, as far as they are complete now."""
        ...

    def follow(
        self, after: int = 0, *, stop: threading.Event, poll_ms: int = 1000
    ) -> Iterator[Record]:
        """Yield records after ``after`` as they are appended, by anyone, until ``stop``."""
        ...

    def frames(self, after: int = 0) -> Iterator[tuple[int, bytes]]:
        """(position, frame bytes) of the records after ``after``, as stored."""
        ...

    def append_frames(self, frames: Sequence[bytes]) -> Head:
        """Append records framed elsewhere, checked to continue the chain; all or none."""
        ...

    def first(self) -> Record | None:
        """The first record, with its hash; None when the journal is empty."""
        ...

    def verify(self, *, decode: bool = True) -> VerifyReport:
        """Check every record (framing, positions, hash chain, bodies; with ``decode``, that
        each decodes) and report the first problem, located. Reads only: no lock, no cut,
        no change, so it can run beside live writers."""
        ...

    def compact(self) -> int:
        """Redact the body of every forgotten memory, under the writer lock, keeping each
        record's head byte for byte (so its hash and the chain hold, and ``verify`` passes);
        returns how many records changed. Idempotent: a second run changes nothing."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> JournalBackend: ...

    def __exit__(self, *exc: object) -> None: ...
