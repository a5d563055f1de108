"""Reading a file journal's segments, without a lock: records, frames, the first record.

Safe while other processes append: a reader that meets incomplete bytes at the end of the
active segment stops there (a writer may be mid-append) and never cuts. A sequential reader
(the projections, a follower) resumes at the last record it read (``SegmentReader._cursor``)
instead of decoding its segment again from the start; a segment compacted since (the same
records at other offsets) is read again from its start.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from journal.errors import JournalDamaged, JournalFormatError
from journal.record import (
    FRAME,
    FRAME_SIZE,
    MAX_PART,
    Decoded,
    Record,
    check_frame,
    decode_frames,
    decode_record,
)
from journal.segment import HEADER_SIZE, header_problem, list_segments, scan_frames

REPAIR_HINT = "run `ferrex journal verify` for details; `ferrex journal repair` sets it aside"


class SegmentReader:
    """Reads the segments in ``directory``; ``gaps`` are the positions a repair set aside
    (``journal.manifest``), known to the journal that opened it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.gaps: frozenset[int] = frozenset()
        self._cursor: tuple[int, Path, int] | None = None
        """(position, segment, offset of that record's frame): where ``read`` resumes."""

    def first(self) -> Record | None:
        """The first record, with its hash; None when the journal is empty.

        Read from the first frame alone (an export names a journal by its first record;
        decoding the whole first segment for it would cost a second per 100,000 records).
        """
        segments = list_segments(self.directory)
        if segments:
            with open(segments[0][1], "rb") as f:
                data = f.read(HEADER_SIZE + FRAME_SIZE)
                if len(data) == HEADER_SIZE + FRAME_SIZE and header_problem(data) is None:
                    payload_len = FRAME.unpack_from(data, HEADER_SIZE)[3]
                    data += f.read(min(payload_len, MAX_PART))
                    info = check_frame(data, HEADER_SIZE, len(data))
                    if not isinstance(info, str):
                        try:
                            return decode_record(data, info)
                        except (ValueError, msgspec.DecodeError, msgspec.ValidationError):
                            pass  # the reader below says what is wrong with it
        # An unusual first segment (being created, torn): let the reader decide.
        for record in self.read(hashes=True):
            return record
        return None

    def frames(self, after: int = 0) -> Iterator[tuple[int, bytes]]:
        """(position, frame bytes) of the complete records after ``after``, as stored (for
        ``ferrex journal copy``, which moves records without re-encoding them). No lock."""
        segments = list_segments(self.directory)
        firsts = [first for first, _ in segments]
        index = max(bisect.bisect_right(firsts, after + 1) - 1, 0)
        for i in range(index, len(segments)):
            first, path = segments[i]
            is_last = i == len(segments) - 1
            data = path.read_bytes()
            problem = header_problem(data)
            if problem is not None:
                if is_last:
                    return
                raise JournalFormatError(f"{path.name}: {problem}")
            scan = scan_frames(data, HEADER_SIZE, first, gaps=self.gaps)
            for info in scan.frames:
                if info.position > after:
                    yield info.position, data[info.offset : info.offset + info.length]
            if scan.bad_offset is not None and not is_last:
                raise JournalDamaged(
                    f"{path.name}: damaged record at offset {scan.bad_offset} ({scan.reason})",
                    segment=path,
                    offset=scan.bad_offset,
                    hint=REPAIR_HINT,
                )

    def read(self, after: int = 0, *, hashes: bool = False) -> Iterator[Record]:
        """Records with position > ``after``, in order, as far as they are complete now.

        Takes no lock: safe while other processes append. Raises JournalDamaged for a bad
        record that has valid records after it. ``hashes=True`` also computes each record's
        chain hash (``Record.hash``), which costs about a fifth of the read time.
        """
        segments = list_segments(self.directory)
        if not segments:
            return
        firsts = [first for first, _ in segments]
        index = max(bisect.bisect_right(firsts, after + 1) - 1, 0)
        for i in range(index, len(segments)):
            first, path = segments[i]
            is_last = i == len(segments) - 1
            found: Decoded | None = None
            cursor = self._cursor
            if cursor is not None and cursor[1] == path and cursor[0] <= after:
                # Sequential readers (projections, followers) resume at the last record they
                # read instead of re-reading the segment: ``base`` is the file offset of
                # data[0]. If that record is not there any more, the segment was compacted
                # since: read it from its start.
                base = cursor[2]
                data, _ = read_from(path, base)
                found = _decode(path, data, 0, cursor[0], after, self.gaps, hashes)
                if found.last is None:
                    found = None
            if found is None:
                base = 0
                data, _ = read_from(path, 0)
                problem = header_problem(data)
                if problem is not None:
                    if is_last:
                        return  # a segment being created right now
                    raise JournalFormatError(f"{path.name}: {problem}")
                found = _decode(path, data, HEADER_SIZE, first, after, self.gaps, hashes)
            if found.last is not None and found.last_position is not None:
                # also when nothing was new: a caught-up reader must not rescan the segment
                self._cursor = (found.last_position, path, base + found.last)
            yield from found.records
            if found.bad_offset is not None:
                if is_last:
                    return  # incomplete bytes at the very end: an append in progress
                raise JournalDamaged(
                    f"{path.name}: damaged record at offset {base + found.bad_offset} "
                    f"({found.reason})",
                    segment=path,
                    offset=base + found.bad_offset,
                    hint=REPAIR_HINT,
                )


def _decode(
    path: Path,
    data: bytes,
    start: int,
    expected: int,
    after: int,
    gaps: frozenset[int],
    hashes: bool,
) -> Decoded:
    try:
        return decode_frames(data, start, expected, after=after, gaps=gaps, hashes=hashes)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise JournalFormatError(
            f"{path.name}: a record passed its checksum but cannot be decoded: {exc}",
            hint="was it written by a newer, incompatible ferrex?",
        ) from exc


def read_from(path: Path, offset: int) -> tuple[bytes, int]:
    """The file's bytes from ``offset`` on, and the file's size."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(offset)
        return f.read(), size
