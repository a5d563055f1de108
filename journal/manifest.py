"""The repair manifest, ``repairs.json``: the holes explicit repairs have left in a journal.

Written only by ``journal.repairs``; read by the log (open, read), by verify and by
compaction, which accept a position jump or a chain break only at a ``resume_position``
listed here. The file is replaced atomically (write, fsync, rename, directory fsync).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from journal.errors import JournalError
from journal.files import replace_durably

MANIFEST = "repairs.json"


class RepairEntry(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    segment: str
    offset: int
    length: int
    lost_positions: tuple[int, ...]
    """First and last position lost (empty when no record was lost)."""
    resume_position: int
    saved_to: str | None
    reason: str
    at: str


def load_entries(directory: Path) -> list[RepairEntry]:
    path = directory / MANIFEST
    if not path.exists():
        return []
    try:
        return msgspec.json.decode(path.read_bytes(), type=list[RepairEntry])
    except msgspec.DecodeError as exc:
        raise JournalError(f"{path} is unreadable: {exc}") from exc


def load_gaps(directory: Path) -> frozenset[int]:
    return frozenset(entry.resume_position for entry in load_entries(directory))


def write_manifest(directory: Path, entries: list[RepairEntry]) -> None:
    replace_durably(directory / MANIFEST, msgspec.json.format(msgspec.json.encode(entries)))
