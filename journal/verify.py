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
from journal.record import GENESIS_HASH, body_problems, decode_record
from journal.segment import list_segments
from journal.walk import Damage, Frame, SegmentWalk, Torn


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
    walk = SegmentWalk(segments, gaps=gaps)
    for step in walk:
        if isinstance(step, Frame):
            data, info = step.segment.data, step.info
            body_issues = body_problems(data, info)
            if body_issues:
                report.problem = Problem(
                    "body", step.segment.path, info.offset, info.position, "; ".join(body_issues)
                )
                return report
            if decode:
                try:
                    record = decode_record(data, info)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    report.problem = Problem(
                        "decode",
                        step.segment.path,
                        info.offset,
                        info.position,
                        f"cannot decode: {exc}",
                    )
                    return report
                report.events += len(record.events)
                report.redacted_bodies += sum(
                    1 for e in record.events if getattr(e, "redacted", False)
                )
            report.records += 1
        elif isinstance(step, Torn):
            report.torn_tail = TailNote(step.path, step.offset, len(step.torn), step.reason)
        elif isinstance(step, Damage):
            report.problem = _problem(step)
            return report
    report.head_position = walk.expected - 1
    report.head_hash = walk.prev_hash
    return report


def _problem(damage: Damage) -> Problem:
    if damage.kind == "segment":
        reason = (
            f"segment starts at position {damage.first}, "
            f"but the one before ends at {damage.position - 1}"
        )
    elif damage.kind == "chain":
        reason = (
            "the record's previous-hash does not match the record before it "
            "(altered, dropped or reordered records)"
        )
    elif damage.kind == "frame":
        reason = damage.reason or "bad frame"
    else:
        reason = damage.reason
    return Problem(
        damage.kind,
        damage.path,
        damage.offset,
        damage.position,
        reason,
        resume_offset=damage.resume_offset,
        resume_position=damage.resume_position,
    )
