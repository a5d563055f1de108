"""The one walk over a journal's segments, with the rules every full check shares.

``Journal._advance`` (open, catch-up: it recovers) and ``journal.verify.verify`` (read only:
it reports) check the same things in the same order; this module says them once, and each
caller decides what a finding means to it (raise or report, cut a torn tail or note it).

For each segment, in position order:

1. its header must be readable, unless the walk resumes inside it; an unreadable header on
   the *last* segment with no valid frame after it is a segment being created (or torn while
   it was): ``Torn(whole=True)``;
2. it must start where the one before ended, or after a hole a repair left (``gaps``);
3. its frames, checksummed and contiguous (``segment.scan_frames``), must each chain to the
   record before it (``prev_hash``), except at a hole;
4. bad bytes after its last valid frame are a torn tail (``Torn``) only at the very end of
   the last segment with no valid frame after them; anywhere else they are damage.

The walk yields ``Segment`` (a segment's frames found, before they are checked), ``Frame``
(one that chains), ``Ended`` (a segment walked to its end, after its torn tail if any),
``Torn`` and ``Damage``. It stops after a ``Damage`` or a whole-segment ``Torn``; a consumer
may stop earlier (``verify`` does at a bad body). ``expected`` and ``prev_hash`` always say
where the walk stands: the position after the last frame that chained, and that frame's hash.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from journal.record import GENESIS_HASH, FrameInfo, head_bytes, record_hash
from journal.segment import HEADER_SIZE, Scan, header_problem, next_valid_frame, scan_frames


@dataclass(frozen=True)
class Resumed:
    """Where a walk picks up inside its first segment: ``data`` read from file offset
    ``base``, its new records starting at ``data[start]`` (header and start already checked)."""

    data: bytes
    base: int
    start: int


@dataclass(frozen=True)
class Segment:
    """One segment's bytes as walked (``data[0]`` is at file offset ``base``) and its frames."""

    index: int
    first: int
    path: Path
    data: bytes
    base: int
    is_last: bool
    resumed: bool
    scan: Scan


@dataclass(frozen=True)
class Frame:
    """A frame of ``segment`` that continues the chain."""

    segment: Segment
    info: FrameInfo


@dataclass(frozen=True)
class Torn:
    """Incomplete bytes at the very end of the journal: ``torn``, the last segment's bytes
    from file offset ``offset`` on; ``whole``: its header itself is incomplete (no frames)."""

    path: Path
    offset: int
    torn: bytes
    reason: str
    whole: bool


@dataclass(frozen=True)
class Ended:
    """``segment`` walked to ``end`` (file offset just after its last valid frame)."""

    segment: Segment
    end: int


@dataclass(frozen=True)
class Damage:
    """The first thing wrong that is not a torn tail.

    ``kind``: "header" (``reason`` says why), "segment" (it starts at ``first``, not at
    ``position``), "chain" (the frame at ``offset`` holding ``position`` does not chain) or
    "frame" (bad bytes at ``offset`` where ``position`` was expected; ``resume_offset`` and
    ``resume_position`` locate the next valid frame after them in the same segment, if any).
    """

    kind: str
    path: Path
    offset: int
    position: int
    reason: str = ""
    first: int = 0
    resume_offset: int | None = None
    resume_position: int | None = None


Step = Segment | Frame | Torn | Ended | Damage


@dataclass
class SegmentWalk:
    """Iterate to walk ``segments[start_index:]`` from ``expected`` after ``prev_hash``
    (both advance as frames are walked)."""

    segments: Sequence[tuple[int, Path]]
    _: KW_ONLY
    gaps: frozenset[int]
    start_index: int = 0
    expected: int = 1
    prev_hash: bytes = GENESIS_HASH
    resume: Resumed | None = None

    def __iter__(self) -> Iterator[Step]:
        segments, gaps = self.segments, self.gaps
        for index in range(self.start_index, len(segments)):
            first, path = segments[index]
            is_last = index == len(segments) - 1
            resume = self.resume if index == self.start_index else None
            if resume is not None:
                data, base, start = resume.data, resume.base, resume.start
            else:
                data, base, start = path.read_bytes(), 0, HEADER_SIZE
                problem = header_problem(data)
                if problem is not None:
                    if is_last and next_valid_frame(data, 0) is None:
                        yield Torn(path, 0, data, problem, whole=True)
                        return
                    yield Damage("header", path, 0, self.expected, problem)
                    return
                if first != self.expected and not (first in gaps and first > self.expected):
                    yield Damage("segment", path, 0, self.expected, first=first)
                    return
            scan = scan_frames(data, start, self.expected, gaps=gaps)
            segment = Segment(index, first, path, data, base, is_last, resume is not None, scan)
            yield segment
            for info in scan.frames:
                if info.prev_hash != self.prev_hash and info.position not in gaps:
                    yield Damage("chain", path, base + info.offset, info.position)
                    return
                self.prev_hash = record_hash(info.position, info.prev_hash, head_bytes(data, info))
                self.expected = info.position + 1
                yield Frame(segment, info)
            end = base + scan.end
            if scan.bad_offset is not None:
                following = next_valid_frame(data, scan.bad_offset)
                if not (is_last and following is None):
                    yield Damage(
                        "frame",
                        path,
                        base + scan.bad_offset,
                        self.expected,
                        scan.reason or "",
                        resume_offset=None if following is None else base + following.offset,
                        resume_position=None if following is None else following.position,
                    )
                    return
                yield Torn(
                    path,
                    base + scan.bad_offset,
                    data[scan.bad_offset :],
                    scan.reason or "",
                    whole=False,
                )
                end = base + scan.bad_offset
            yield Ended(segment, end)
