"""Segment files: naming, the file header, and walking the frames inside one segment.

A journal directory holds segments named by the position of their first record,
``00000000000000000001.seg``, in position order. Only the last one (the *active* segment)
is ever appended to; the others are *sealed* and never change, except through an explicit
compaction that rewrites a copy and renames it into place.

Segment layout::

    offset  size  field
    0       8     magic  b"FERREXJ\\x00"
    8       4     format version (u32 LE), currently 1
    12      4     reserved, zero
    16      ...   frames, back to back (see ``journal.record``)
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from journal.files import fsync_dir
from journal.record import FRAME_SIZE, MAGIC, FrameInfo, check_frame

__all__ = ["fsync_dir"]

SEGMENT_MAGIC = b"FERREXJ\x00"
FORMAT_VERSION = 1
SEGMENT_HEADER = struct.Struct("<8sII")
HEADER_SIZE = SEGMENT_HEADER.size  # 16
SUFFIX = ".seg"
SEALING_SUFFIX = ".sealing"
"""A segment being created by ``Journal.seal``; left behind only by a crash, and never read."""


def segment_name(first_position: int) -> str:
    return f"{first_position:020d}{SUFFIX}"


def segment_header() -> bytes:
    return SEGMENT_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION, 0)


def header_problem(data: bytes | memoryview) -> str | None:
    """Why the first bytes are not a segment header we can read, or None."""
    if len(data) < HEADER_SIZE:
        return "incomplete segment header"
    magic, version, _ = SEGMENT_HEADER.unpack_from(data, 0)
    if magic != SEGMENT_MAGIC:
        return "not a ferrex journal segment"
    if version != FORMAT_VERSION:
        return f"segment format version {version} is not supported (this ferrex reads 1)"
    return None


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """(first position, path) of every segment, in position order."""
    found = []
    for name in os.listdir(directory):
        if name.endswith(SUFFIX) and name[: -len(SUFFIX)].isdigit():
            found.append((int(name[: -len(SUFFIX)]), directory / name))
    found.sort()
    return found


@dataclass
class Scan:
    """The outcome of walking one segment's frames from ``start``."""

    frames: list[FrameInfo] = field(default_factory=list)
    end: int = 0
    """Offset just after the last valid frame."""
    bad_offset: int | None = None
    reason: str | None = None


def scan_frames(
    data: bytes | memoryview,
    start: int,
    first_position: int | None,
    *,
    gaps: frozenset[int] = frozenset(),
    keep: bool = True,
) -> Scan:
    """Walk checksummed, contiguous frames from ``start``; stop at the first that is not.

    ``first_position`` is the position the first frame must carry (None: whatever it says).
    ``gaps`` are positions that may follow a hole a repair left (see ``journal.repairs``).
    """
    scan = Scan(end=start)
    end = len(data)
    offset = start
    expected = first_position
    while offset < end:
        info = check_frame(data, offset, end)
        if isinstance(info, str):
            scan.bad_offset, scan.reason = offset, info
            break
        if (
            expected is not None
            and info.position != expected
            and not (info.position in gaps and info.position > expected)
        ):
            scan.bad_offset = offset
            scan.reason = f"position {info.position} where {expected} was expected"
            break
        if keep:
            scan.frames.append(info)
        expected = info.position + 1
        offset += info.length
        scan.end = offset
    return scan


def next_valid_frame(data: bytes | memoryview, after: int) -> FrameInfo | None:
    """The first checksummed frame starting after offset ``after``, if any.

    Tells a torn tail (nothing valid follows the bad bytes) from damage (something does).
    """
    raw = bytes(data)
    offset = after
    while True:
        offset = raw.find(MAGIC, offset + 1)
        if offset < 0 or len(raw) - offset < FRAME_SIZE:
            return None
        info = check_frame(raw, offset, len(raw))
        if not isinstance(info, str):
            return info
