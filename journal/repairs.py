"""Explicit repair of a damaged journal: set the damaged span aside, record what was lost.

A repair is never implicit: open refuses a damaged journal, and an operator runs
``ferrex journal repair`` to set the damaged bytes aside. Each repair is recorded in
``repairs.json`` (:mod:`journal.manifest`) with exactly what was lost: the byte range, the
positions, and the file the bytes were saved to. Readers and verify accept a position jump
or a chain break only at a ``resume_position`` listed there.
"""

from __future__ import annotations

import fcntl
import os
from datetime import UTC, datetime
from pathlib import Path

from journal.errors import JournalError
from journal.files import open_private, private_opener, replace_durably
from journal.manifest import RepairEntry, load_entries, write_manifest
from journal.segment import fsync_dir, list_segments
from journal.verify import verify


def _rewrite(path: Path, data: bytes) -> None:
    """Replace a segment by copy, fsync, rename: a crash leaves the old or the new file."""
    replace_durably(path, data, suffix=".rewrite")


def plan_repair(directory: Path) -> RepairEntry | None:
    """What ``repair`` would do about the first problem, without doing it (None: healthy)."""
    report = verify(directory, decode=False)
    problem = report.problem
    if problem is None:
        return None
    at = datetime.now(UTC).isoformat()
    expected = problem.position or 1
    if problem.kind == "frame":
        data_len = problem.segment.stat().st_size
        end = problem.resume_offset if problem.resume_offset is not None else data_len
        resume = problem.resume_position
        if resume is None:
            # Nothing valid follows in this segment: the journal resumes at the next one.
            after = [f for f, p in list_segments(directory) if p.name > problem.segment.name]
            resume = after[0] if after else expected
        lost = (expected, resume - 1) if resume > expected else ()
        return RepairEntry(
            kind="frame",
            segment=problem.segment.name,
            offset=problem.offset,
            length=end - problem.offset,
            lost_positions=lost,
            resume_position=resume,
            saved_to=f"{problem.segment.name}.damaged-{problem.offset}",
            reason=problem.reason,
            at=at,
        )
    if problem.kind == "chain":
        return RepairEntry(
            kind="chain",
            segment=problem.segment.name,
            offset=problem.offset,
            length=0,
            lost_positions=(),
            resume_position=expected,
            saved_to=None,
            reason=problem.reason + "; the break is accepted, both sides are kept",
            at=at,
        )
    if problem.kind == "segment":
        first = int(problem.segment.name.split(".")[0])
        return RepairEntry(
            kind="segment",
            segment=problem.segment.name,
            offset=0,
            length=0,
            lost_positions=(expected, first - 1),
            resume_position=first,
            saved_to=None,
            reason=problem.reason,
            at=at,
        )
    raise JournalError(
        f"{problem.segment.name} offset {problem.offset}: {problem.reason} — this kind of "
        f"damage ({problem.kind}) cannot be repaired automatically",
        hint="restore the segment from a backup or a git export",
    )


def repair(directory: Path) -> RepairEntry | None:
    """Set aside the first damaged span (keeping its bytes) and record what was lost.

    Run it with no ferrex process using the journal. Returns None when nothing needs repair.
    """
    lock_fd = open_private(directory / "LOCK", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        entry = plan_repair(directory)
        if entry is None:
            return None
        # The manifest goes first: after a crash between the two steps, the same damage is
        # found and planned again, whereas a hole with no manifest entry would be new damage.
        entries = load_entries(directory)
        if entry.resume_position not in {e.resume_position for e in entries}:
            write_manifest(directory, [*entries, entry])
        if entry.kind == "frame" and entry.length > 0:
            path = directory / entry.segment
            data = path.read_bytes()
            damaged = data[entry.offset : entry.offset + entry.length]
            assert entry.saved_to is not None
            saved = directory / entry.saved_to
            with open(saved, "wb", opener=private_opener) as f:
                f.write(damaged)
                f.flush()
                os.fsync(f.fileno())
            fsync_dir(directory)
            _rewrite(path, data[: entry.offset] + data[entry.offset + entry.length :])
        return entry
    finally:
        os.close(lock_fd)
