"""Copying a journal to another backend (files → PostgreSQL and back), record for record.

The frames move byte for byte, so positions, hashes and the chain are the same on both
sides. A copy is resumable: a target that already holds a prefix of the source (the same
position *and* hash as the source at that position) is continued; any other non-empty
target is refused. It is verified by comparing head hashes at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from journal.backend import JournalBackend
from journal.errors import JournalError

BATCH = 1000
"""Records per append (one transaction or one fsync) on the target."""


@dataclass(frozen=True)
class CopyReport:
    copied: int
    resumed_at: int
    """The target's head before the copy (0: it was empty)."""
    head_position: int
    head_hash: bytes


def copy(
    source: JournalBackend,
    target: JournalBackend,
    progress: Callable[[int, int], None] | None = None,
) -> CopyReport:
    """Copy the records the target lacks, up to the source's head as it is now."""
    end = source.refresh()
    start = target.refresh()
    if start.position > end.position:
        raise JournalError(
            f"the target holds {start.position} records, more than the source's "
            f"{end.position}: it is another journal",
            hint="copy into an empty journal",
        )
    if start.position:
        mine = next(iter(source.read(after=start.position - 1, hashes=True)), None)
        if mine is None or mine.hash != start.hash:
            raise JournalError(
                f"the target's record at position {start.position} differs from the "
                "source's: it holds another journal, not an unfinished copy of this one",
                hint="copy into an empty journal",
            )
    total = end.position - start.position
    copied = 0
    batch: list[bytes] = []
    for position, frame in source.frames(after=start.position):
        if position > end.position:
            break
        batch.append(frame)
        if len(batch) == BATCH:
            target.append_frames(batch)
            copied += len(batch)
            batch = []
            if progress is not None:
                progress(copied, total)
    if batch:
        target.append_frames(batch)
        copied += len(batch)
    if progress is not None:
        progress(copied, total)
    head = target.refresh()
    if (head.position, head.hash) != (end.position, end.hash):
        raise JournalError(
            f"after the copy the target's head is {head.position} ({head.hash.hex()[:16]}…), "
            f"the source's {end.position} ({end.hash.hex()[:16]}…)",
            hint="another writer appended to the target during the copy; copy again into an "
            "empty journal",
        )
    return CopyReport(copied, start.position, head.position, head.hash)
