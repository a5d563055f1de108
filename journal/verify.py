"""Read-only verification of a whole journal: framing, positions, hash chain, bodies.

``verify`` never writes, never cuts and takes no lock; it can run beside live writers (a
record being appended at that moment shows as an incomplete tail, which is not damage).
It stops at the first problem and says exactly where it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from journal.manifest import load_gaps
from journal.record import (
    GENESIS_HASH,
    body_problems,
    decode_record,
    head_bytes,
    record_hash,
)
from journal.segment import (
    HEADER_SIZE,
    header_problem,
    list_segments,
    next_valid_frame,
    scan_frames,
)


@dataclass(frozen=True)
class Problem:
    """The first bad thing found, precisely located."""

    kind: str  # "header" | "frame" | "chain" | "body" | "decode" | "segment"
    segment: Path
    offset: int
    position: int | None
    reason: str
    resume_offset: int | None = None
    """For frame damage: where the next valid frame in the same segment starts, if any."""
    resume_position: int | None = None


@dataclass(frozen=True)
class TailNote:
    """Incomplete bytes at the very end: a torn write (or one in progress), not damage."""

    segment: Path
    offset: int
    length: int
    reason: str


@dataclass
class VerifyReport:
    segments: int = 0
    records: int = 0
    events: int = 0
    head_position: int = 0
    head_hash: bytes = GENESIS_HASH
    redacted_bodies: int = 0
    gaps: list[int] = field(default_factory=list)
    problem: Problem | None = None
    torn_tail: TailNote | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def verify(directory: Path, *, decode: bool = True) -> VerifyReport:
    """Walk every record of the journal in ``directory`` and report the first problem."""
    report = VerifyReport()
    gaps = load_gaps(directory)
    report.gaps = sorted(gaps)
    segments = list_segments(directory)
    report.segments = len(segments)
    expected, prev_hash = 1, GENESIS_HASH
    for index, (first, path) in enumerate(segments):
        is_last = index == len(segments) - 1
        data = path.read_bytes()
        problem = header_problem(data)
        if problem is not None:
            if is_last and next_valid_frame(data, 0) is None:
                report.torn_tail = TailNote(path, 0, len(data), problem)
                break
            report.problem = Problem("header", path, 0, expected, problem)
            return report
        if first != expected and not (first in gaps and first > expected):
            report.problem = Problem(
                "segment",
                path,
                0,
                expected,
                f"segment starts at position {first}, but the one before ends at {expected - 1}",
            )
            return report
        scan = scan_frames(data, HEADER_SIZE, expected, gaps=gaps)
        for info in scan.frames:
            if info.prev_hash != prev_hash and info.position not in gaps:
                report.problem = Problem(
                    "chain",
                    path,
                    info.offset,
                    info.position,
                    "the record's previous-hash does not match the record before it "
                    "(altered, dropped or reordered records)",
                )
                return report
            body_issues = body_problems(data, info)
            if body_issues:
                report.problem = Problem(
                    "body", path, info.offset, info.position, "; ".join(body_issues)
                )
                return report
            if decode:
                try:
                    record = decode_record(data, info)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    report.problem = Problem(
                        "decode", path, info.offset, info.position, f"cannot decode: {exc}"
                    )
                    return report
                report.events += len(record.events)
                report.redacted_bodies += sum(
                    1 for e in record.events if getattr(e, "redacted", False)
                )
            prev_hash = record_hash(info.position, info.prev_hash, head_bytes(data, info))
            expected = info.position + 1
            report.records += 1
        if scan.bad_offset is not None:
            following = next_valid_frame(data, scan.bad_offset)
            if is_last and following is None:
                report.torn_tail = TailNote(
                    path, scan.bad_offset, len(data) - scan.bad_offset, scan.reason or ""
                )
                break
            report.problem = Problem(
                "frame",
                path,
                scan.bad_offset,
                expected,
                scan.reason or "bad frame",
                resume_offset=following.offset if following else None,
                resume_position=following.position if following else None,
            )
            return report
    report.head_position = expected - 1
    report.head_hash = prev_hash
    return report
