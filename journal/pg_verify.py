"""Verifying the PostgreSQL journal's rows: framing, positions, chain, bodies, head row.

It reads only, through the journal's own reads (:meth:`JournalBackend.frames`), and takes
no lock; a problem is reported at the records table (``label``), row by position.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from journal.backend import JournalBackend
from journal.record import (
    GENESIS_HASH,
    body_problems,
    check_frame,
    decode_record,
    head_bytes,
    record_hash,
)
from journal.verify import Problem, VerifyReport


def verify_rows(journal: JournalBackend, label: Path, *, decode: bool = True) -> VerifyReport:
    """Walk every record (framing, positions, chain, bodies) and report the first problem,
    as ``journal.verify.verify`` does for files; also check the head row against the chain.
    Reads only, takes no lock."""
    report = VerifyReport(segments=1)
    expected, prev_hash = 1, GENESIS_HASH
    head = journal.refresh()
    for position, frame in journal.frames():
        if position > head.position:
            break  # appended after the head was read
        info = check_frame(frame, 0, len(frame))
        if isinstance(info, str) or info.length != len(frame):
            report.problem = Problem("frame", label, 0, position, str(info))
            return report
        if info.position != position or position != expected:
            report.problem = Problem(
                "segment", label, 0, expected,
                f"row {position} holds position {info.position} where {expected} was expected",
            )  # fmt: skip
            return report
        if info.prev_hash != prev_hash:
            report.problem = Problem(
                "chain", label, 0, position,
                "the record's previous-hash does not match the record before it "
                "(altered, dropped or reordered records)",
            )  # fmt: skip
            return report
        issues = body_problems(frame, info)
        if issues:
            report.problem = Problem("body", label, 0, position, "; ".join(issues))
            return report
        if decode:
            try:
                record = decode_record(frame, info)
            except (ValueError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                report.problem = Problem("decode", label, 0, position, f"cannot decode: {exc}")
                return report
            report.events += len(record.events)
            report.redacted_bodies += sum(1 for e in record.events if getattr(e, "redacted", False))
        prev_hash = record_hash(position, info.prev_hash, head_bytes(frame, info))
        expected = position + 1
        report.records += 1
    if expected - 1 != head.position or prev_hash != head.hash:
        report.problem = Problem(
            "chain", label, 0, head.position,
            f"the head row says position {head.position}, but the records end at "
            f"{expected - 1} (or with another hash)",
        )  # fmt: skip
        return report
    report.head_position = expected - 1
    report.head_hash = prev_hash
    return report
