"""Compaction: rewrite sealed segments with the text of forgotten memories redacted.

What is redacted: the body (the text) of every ``memory.stored`` event whose memory a
``memories.forgotten`` event names, whatever the reason (request, eviction, cascade, import).
Superseded versions keep their text: the history of a fact is kept on purpose, and only
forgetting purges. Entity names and aliases are not bodies (format v1) and are kept.

Invariants:

- A redacted frame keeps its head byte for byte (``journal.record.redact_frame``): positions,
  record hashes and the chain are unchanged and the event keeps its ``body_hash``, so
  ``verify`` passes and the audit trail still proves that a text existed, without holding
  it. The salt that was inside the body goes with it, so the hash cannot confirm a guess.
- Only sealed segments are rewritten. When the active segment holds text to redact it is
  sealed first (``Journal.seal``: the next append starts a new segment), so no writer ever
  appends to a file that is being replaced.
- Every rewrite is copy → fsync → rename → directory fsync, never in place: after a crash at
  any point a segment's name holds either its old bytes or its new ones, both complete and
  valid. The new bytes are checked before they replace the old: same positions, same record
  hashes, every body matching its hash, no forgotten body left.
- All of it runs under the writer lock. Readers take no lock; one that meets a segment
  replaced since it last looked finds its place again by position (see ``journal.log``).
- Files that may hold stray copies of the text — torn tails kept aside at open
  (``*.corrupt-*``), damage set aside by a repair (``*.damaged-*``), a repair's unfinished
  copy (``*.rewrite``) — are scrubbed *before* the segments, while the text to look for can
  still be read from the journal: a crash in between loses nothing that a rerun needs.
- Idempotent: once done, a second run finds nothing to redact and writes nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec

from journal.errors import JournalDamaged, JournalError
from journal.events import MemoriesForgotten, MemoryBody, MemoryStored
from journal.files import open_private
from journal.manifest import load_gaps
from journal.record import (
    MAGIC,
    FrameInfo,
    Record,
    body_problems,
    check_frame,
    decode_frames,
    decode_record,
    head_bytes,
    record_hash,
    redact_frame,
)
from journal.segment import HEADER_SIZE, SEALING_SUFFIX, fsync_dir, list_segments, scan_frames


class Compactable(Protocol):
    """What compaction needs of a journal (``journal.log.Journal`` is one): its directory,
    its writer lock, and sealing the active segment. Compaction is written against this, so
    ``journal.log`` can call it without the two modules importing each other."""

    @property
    def directory(self) -> Path: ...

    def exclusive(self) -> AbstractContextManager[Any]: ...

    def seal(self) -> Path | None: ...


TEMP_SUFFIX = ".compacting"
"""A rewritten copy not yet renamed into place; left behind only by a crash, never read."""

LEFTOVER = re.compile(r".+\.seg(\.corrupt-.+|\.damaged-.+|\.rewrite)$")
"""Files beside the segments that may hold copies of journal bytes."""

MIN_NEEDLE = 4
"""Shorter text values are not searched for in leftover bytes: they would match anything."""
MIN_TORN_PREFIX = 8
"""A leftover ending with at least this much of a text value was torn in the middle of it."""

Step = Callable[[str], None]
"""Called with the name of each step as it completes (crash tests stop the process there)."""
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Target:
    """One body to redact: a forgotten memory's ``memory.stored`` event."""

    position: int
    memory_id: str
    memory_type: str
    body: MemoryBody
    segment: Path


@dataclass
class Plan:
    """What a compaction would do, found by reading only."""

    head: int = 0
    forgotten: frozenset[str] = frozenset()
    """Every memory id a ``memories.forgotten`` event names."""
    last_forget: int = 0
    """Position of the last record with a ``memories.forgotten`` event (0: none)."""
    targets: list[Target] = field(default_factory=list)
    already_redacted: int = 0
    """Bodies of forgotten memories redacted by an earlier compaction."""
    active: Path | None = None
    leftovers: list[Path] = field(default_factory=list)
    """Leftover files that hold text of a forgotten memory."""
    stale_temps: list[Path] = field(default_factory=list)

    @property
    def segments(self) -> list[Path]:
        """The segments to rewrite, in order."""
        return sorted({t.segment for t in self.targets})

    @property
    def seal(self) -> bool:
        """Whether the active segment holds text to redact (so must be sealed first)."""
        return self.active is not None and any(t.segment == self.active for t in self.targets)

    @property
    def empty(self) -> bool:
        return not (self.targets or self.leftovers or self.stale_temps)


@dataclass
class Rewritten:
    segment: str
    positions: list[int]
    bytes_before: int
    bytes_after: int


@dataclass
class Report:
    """What a compaction did."""

    plan: Plan
    sealed: str | None = None
    """The segment ``seal`` started, if the active one had to be sealed."""
    segments: list[Rewritten] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    temps_removed: list[str] = field(default_factory=list)

    @property
    def redacted(self) -> int:
        return sum(len(s.positions) for s in self.segments)


# -- planning (read-only) --------------------------------------------------------------------


def plan(directory: Path, progress: Progress | None = None) -> Plan:
    """Find what to redact; reads only, takes no lock (``compact`` re-plans under the lock).

    Two passes over the journal: the forgotten ids first (a forget always comes after the
    store it names), then the bodies of those memories, segment by segment.
    Raises JournalDamaged if a segment cannot be read whole: verify (and repair) first.
    """
    gaps = load_gaps(directory)
    segments = list_segments(directory)
    result = Plan(active=segments[-1][1] if segments else None)
    total = 2 * len(segments)
    forgotten: set[str] = set()
    for done, (_, _, records) in enumerate(_segment_records(segments, gaps), 1):
        for record in records:
            result.head = record.position
            for event in record.events:
                if isinstance(event, MemoriesForgotten):
                    forgotten.update(event.memory_ids)
                    result.last_forget = record.position
        if progress is not None:
            progress(done, total)
    result.forgotten = frozenset(forgotten)
    if forgotten:
        for done, (_, path, records) in enumerate(_segment_records(segments, gaps), 1):
            for record in records:
                for event in record.events:
                    if isinstance(event, MemoryStored) and event.memory_id in forgotten:
                        if event.body is not None:
                            result.targets.append(
                                Target(
                                    record.position,
                                    event.memory_id,
                                    event.memory_type,
                                    event.body,
                                    path,
                                )
                            )
                        elif event.redacted:
                            result.already_redacted += 1
            if progress is not None:
                progress(len(segments) + done, total)
    needles = _needles(result.targets)
    for path in sorted(directory.iterdir()):
        if path.name.endswith((TEMP_SUFFIX, SEALING_SUFFIX)):
            result.stale_temps.append(path)
        elif (
            LEFTOVER.fullmatch(path.name)
            and path.is_file()
            and _scrubbed(path.read_bytes(), forgotten, needles) is not None
        ):
            result.leftovers.append(path)
    return result


def _segment_records(
    segments: list[tuple[int, Path]], gaps: frozenset[int]
) -> Iterator[tuple[int, Path, list[Record]]]:
    for index, (first, path) in enumerate(segments):
        data = path.read_bytes()
        found = decode_frames(data, HEADER_SIZE, first, gaps=gaps)
        if found.bad_offset is not None and index != len(segments) - 1:
            raise JournalDamaged(
                f"{path.name}: damaged record at offset {found.bad_offset} ({found.reason})",
                segment=path,
                offset=found.bad_offset,
                hint="run `ferrex journal verify`, and `ferrex journal repair` if it fails",
            )
        yield first, path, found.records


# -- compacting ------------------------------------------------------------------------------


def compact(
    journal: Compactable,
    *,
    before_rewrite: Callable[[Plan], None] | None = None,
    step: Step | None = None,
    progress: Progress | None = None,
) -> Report:
    """Plan and apply under the writer lock; ``before_rewrite`` sees the plan first (the
    caller purges its own copies of the text then, while the journal still holds it)."""
    with journal.exclusive():
        found = plan(journal.directory, progress)
        _step(step, "planned")
        if before_rewrite is not None:
            before_rewrite(found)
        return _apply(journal, found, step)


def _apply(journal: Compactable, found: Plan, step: Step | None) -> Report:
    """Carry out a plan made under the same hold of the writer lock."""
    report = Report(found)
    forgotten = set(found.forgotten)
    with journal.exclusive():
        for path in found.stale_temps:
            path.unlink(missing_ok=True)
            report.temps_removed.append(path.name)
        if found.stale_temps:
            fsync_dir(journal.directory)
        needles = _needles(found.targets)
        for path in found.leftovers:
            new = _scrubbed(path.read_bytes(), forgotten, needles)
            if new is not None:
                _replace(path, new, "leftover", step)
                report.leftovers.append(path.name)
        if found.seal:
            sealed = journal.seal()
            report.sealed = sealed.name if sealed is not None else None
            _step(step, "sealed")
        gaps = load_gaps(journal.directory)
        active = list_segments(journal.directory)[-1][1]
        for path in found.segments:
            if path == active:
                # Writers append to it (and may hold it open): never replaced, whatever happens.
                raise JournalError(f"{path.name} is the active segment; it was not sealed")
            first = int(path.name.split(".")[0])
            wanted = {t.position for t in found.targets if t.segment == path}
            old = path.read_bytes()
            new, positions = _redacted(old, path, first, gaps, wanted, forgotten)
            if not positions:
                continue
            _check(old, new, path, first, gaps, set(positions), forgotten)
            _replace(path, new, "segment", step)
            report.segments.append(Rewritten(path.name, positions, len(old), len(new)))
    return report


def _redacted(
    data: bytes,
    path: Path,
    first: int,
    gaps: frozenset[int],
    wanted: set[int],
    forgotten: set[str],
) -> tuple[bytes, list[int]]:
    """The segment with the forgotten bodies of the ``wanted`` positions redacted, and the
    positions that changed."""
    scan = scan_frames(data, HEADER_SIZE, first, gaps=gaps)
    if scan.bad_offset is not None:
        raise JournalDamaged(
            f"{path.name}: damaged record at offset {scan.bad_offset} ({scan.reason}) in a "
            "sealed segment; nothing was rewritten",
            segment=path,
            offset=scan.bad_offset,
            hint="run `ferrex journal verify`, and `ferrex journal repair` if it fails",
        )
    out = bytearray(data[:HEADER_SIZE])
    positions: list[int] = []
    for info in scan.frames:
        frame = redact_frame(data, info, forgotten) if info.position in wanted else None
        if frame is None:
            out += data[info.offset : info.offset + info.length]
        else:
            out += frame
            positions.append(info.position)
    return bytes(out), positions


def _check(
    old: bytes,
    new: bytes,
    path: Path,
    first: int,
    gaps: frozenset[int],
    changed: set[int],
    forgotten: set[str],
) -> None:
    """Refuse to install a rewrite that is not the same chain with the text gone: the same
    positions and record hashes, every other frame byte for byte, and each changed frame
    with bodies that match their hashes and no forgotten body left."""
    before = scan_frames(old, HEADER_SIZE, first, gaps=gaps)
    after = scan_frames(new, HEADER_SIZE, first, gaps=gaps)
    problem = None
    if after.bad_offset is not None or after.end != len(new):
        problem = f"the rewrite does not read back whole ({after.reason})"
    elif [f.position for f in before.frames] != [f.position for f in after.frames]:
        problem = "the rewrite changes the positions"
    for a, b in zip(before.frames, after.frames, strict=False):
        if problem is not None:
            break
        if a.position not in changed:
            if old[a.offset : a.offset + a.length] != new[b.offset : b.offset + b.length]:
                problem = f"position {a.position} changed although it held no forgotten text"
            continue
        if record_hash(a.position, a.prev_hash, head_bytes(old, a)) != record_hash(
            b.position, b.prev_hash, head_bytes(new, b)
        ):
            problem = f"position {b.position} would get another hash"
        elif body_problems(new, b):
            problem = f"a body at position {b.position} would not match its hash"
        elif any(
            isinstance(e, MemoryStored) and e.memory_id in forgotten and e.body is not None
            for e in decode_record(new, b, hashes=False).events
        ):
            problem = f"position {b.position} would still hold forgotten text"
    if problem is not None:
        # A bug, not damage on disk: the old segment is left as it was.
        raise JournalDamaged(
            f"{path.name}: compaction stopped before replacing the segment: {problem}",
            segment=path,
            offset=0,
        )


def _replace(path: Path, data: bytes, what: str, step: Step | None) -> None:
    """Copy → fsync → rename → directory fsync: a crash leaves the old file or the new."""
    tmp = path.with_name(path.name + TEMP_SUFFIX)
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        _step(step, f"{what}-written")
        os.fsync(fd)
    finally:
        os.close(fd)
    _step(step, f"{what}-synced")
    os.replace(tmp, path)
    _step(step, f"{what}-renamed")
    fsync_dir(path.parent)
    _step(step, f"{what}-done")


def _step(step: Step | None, name: str) -> None:
    if step is not None:
        step(name)


# -- leftovers -------------------------------------------------------------------------------


def _needles(targets: list[Target]) -> list[bytes]:
    """The text values of the bodies to redact, longest first, as they appear in bytes."""
    found: set[str] = set()
    for target in targets:
        _strings(msgspec.to_builtins(target.body), found)
    encoded = {s.encode("utf-8") for s in found}
    return sorted((n for n in encoded if len(n) >= MIN_NEEDLE), key=len, reverse=True)


def _strings(value: Any, into: set[str]) -> None:
    if isinstance(value, str):
        into.add(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _strings(k, into)
            _strings(v, into)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings(v, into)


def _scrubbed(data: bytes, forgotten: set[str], needles: list[bytes]) -> bytes | None:
    """The leftover with forgotten text removed, or None if it holds none.

    Whole frames in it are redacted like segment frames. The bytes around them (a torn
    frame, a damaged one) cannot be parsed, so every text value of a forgotten body found
    there is overwritten with zeros, and so is a start of one that the bytes end with (a
    write torn in the middle of the text). Text the damage itself altered is not found.
    """
    out = bytearray()
    at = 0
    for info in _frames_in(data):
        out += _blanked(data[at : info.offset], needles, at_end=False)
        frame: bytes | None
        try:
            frame = redact_frame(data, info, forgotten)
        except (msgspec.DecodeError, msgspec.ValidationError):
            frame = None  # checksummed but not ours to read: treated as opaque bytes below
            out += _blanked(data[info.offset : info.offset + info.length], needles, at_end=False)
        else:
            out += frame if frame is not None else data[info.offset : info.offset + info.length]
        at = info.offset + info.length
    out += _blanked(data[at:], needles, at_end=True)
    return None if out == data else bytes(out)


def _frames_in(data: bytes) -> Iterator[FrameInfo]:
    """Every checksummed frame in arbitrary bytes, wherever it starts."""
    at = data.find(MAGIC)
    while at >= 0:
        info = check_frame(data, at, len(data))
        if isinstance(info, str):
            at = data.find(MAGIC, at + 1)
        else:
            yield info
            at = data.find(MAGIC, at + info.length)


def _blanked(chunk: bytes, needles: list[bytes], *, at_end: bool) -> bytes:
    out = chunk
    for needle in needles:
        if needle in out:
            out = out.replace(needle, bytes(len(needle)))
    if at_end:
        for needle in needles:
            for cut in range(len(needle) - 1, MIN_TORN_PREFIX - 1, -1):
                if out.endswith(needle[:cut]):
                    out = out[:-cut] + bytes(cut)
                    break
    return out
