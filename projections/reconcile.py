"""Reconcile: compare the journal, the read model and the vectors, and repair the drift.

``ferrex reconcile`` (DESIGN.md section 3) reports missing points, orphan points, stale
payloads, rows that differ from a replay of the journal, and checkpoint lag; ``--fix``
repairs them by replaying only what is affected. It reads the journal and the live
projections of a :class:`~projections.replay.Projections` and changes nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

from journal import MemoryStored, Record
from journal.backend import JournalBackend
from projections import fold
from projections.applying import BATCH, QDRANT, chunks
from projections.generations import read_model_at, read_pointer, remove_sqlite
from projections.replay import Projections
from projections.sqlite import ReadModel
from projections.vector_sink import alias_point_id, payload_of


@dataclass
class Drift:
    """What ``reconcile`` found. Empty lists and zero lag mean no drift."""

    journal_head: int = 0
    sqlite_checkpoint: int = 0
    qdrant_checkpoint: int = 0
    sqlite_rows: list[str] = field(default_factory=list)
    """Memory or entity ids whose read-model rows differ from a replay of the journal."""
    missing_points: list[str] = field(default_factory=list)
    orphan_points: list[str] = field(default_factory=list)
    stale_payloads: list[str] = field(default_factory=list)
    entity_drift: list[str] = field(default_factory=list)

    @property
    def lag(self) -> int:
        return self.journal_head - min(self.sqlite_checkpoint, self.qdrant_checkpoint)

    @property
    def clean(self) -> bool:
        return self.lag == 0 and not (
            self.sqlite_rows
            or self.missing_points
            or self.orphan_points
            or self.stale_payloads
            or self.entity_drift
        )

    def as_dict(self, examples: int = 5) -> dict[str, Any]:
        def part(items: list[str]) -> dict[str, Any]:
            return {"count": len(items), "examples": sorted(items)[:examples]}

        return {
            "clean": self.clean,
            "journal_head": self.journal_head,
            "sqlite_checkpoint": self.sqlite_checkpoint,
            "qdrant_checkpoint": self.qdrant_checkpoint,
            "lag": self.lag,
            "sqlite_rows": part(self.sqlite_rows),
            "missing_points": part(self.missing_points),
            "orphan_points": part(self.orphan_points),
            "stale_payloads": part(self.stale_payloads),
            "entity_drift": part(self.entity_drift),
        }


_PAYLOAD_KEYS = ("namespace", "type", "t_valid", "t_invalid", "agent_id", "visibility")


def reconcile(p: Projections, *, fix: bool = False) -> Drift:
    """Compare journal, read model and vectors; with ``fix``, repair what differs."""
    p.sync()
    drift = _compare(p)
    if fix and not drift.clean:
        _fix(p, drift)
        p.sync()
        drift = _compare(p)
    return drift


def predicate_drift(
    home: Path, journal: JournalBackend, predicate: Callable[[str, str], str]
) -> list[dict[str, str | None]]:
    """Facts whose normalized predicate in the live read model of ``home`` differs from what
    ``predicate(namespace, recorded)`` (the current rules) gives for the predicate their
    store recorded: what a backfill would change. Reads only (the live read model is opened
    on its own, beside any projections open in this process)."""
    live = read_pointer(home)
    if live is None or not (home / live.sqlite).exists():
        return []
    recorded: dict[str, tuple[str, str]] = {}
    for record in journal.read():
        for event in record.events:
            if isinstance(event, MemoryStored) and event.body and event.body.predicate:
                body = event.body
                recorded[event.memory_id] = (
                    event.namespace,
                    body.predicate_normalized or body.predicate or "",
                )
    model = ReadModel.open(home / live.sqlite)
    try:
        rows = [
            (m.memory_id, m.subject, m.predicate, m.predicate_normalized)
            for m in model.memories()
            if m.type == "semantic" and m.predicate is not None
        ]
    finally:
        model.close()
    changes: list[dict[str, str | None]] = []
    for memory_id, subject, predicate_text, current in rows:
        if memory_id not in recorded:
            continue
        namespace, stored = recorded[memory_id]
        after = predicate(namespace, stored)
        if after != current:
            changes.append(
                {"id": memory_id, "subject": subject, "predicate": predicate_text,
                 "before": current, "after": after}
            )  # fmt: skip
    return changes


def _compare(p: Projections) -> Drift:
    rm = p.read_model
    drift = Drift(
        journal_head=p.journal.refresh().position,
        sqlite_checkpoint=rm.checkpoint(),
        qdrant_checkpoint=rm.checkpoint(QDRANT),
    )
    scratch_path = p.home / f"reconcile-{os.getpid()}.sqlite"
    scratch = read_model_at(p.journal, scratch_path, drift.sqlite_checkpoint, rules=p.rules)
    try:
        drift.sqlite_rows = _row_differences(rm, scratch)
    finally:
        scratch.close()
        remove_sqlite(scratch_path)

    memories = {m.memory_id: m for m in rm.memories() if not m.redacted}
    seen: set[str] = set()
    for pid, payload in p.backend.scroll(p.live.memories):
        memory_id = payload.get("memory_id")
        memory = memories.get(memory_id) if isinstance(memory_id, str) else None
        if memory is None:
            drift.orphan_points.append(pid)
            continue
        seen.add(memory.memory_id)
        expected = payload_of(memory)
        differs = any(payload.get(k) != expected[k] for k in _PAYLOAD_KEYS)
        differs |= sorted(payload.get("entity_ids") or []) != sorted(memory.entity_ids)
        if differs and memory.memory_id not in drift.stale_payloads:
            drift.stale_payloads.append(memory.memory_id)
    drift.missing_points = sorted(set(memories) - seen)

    # One entity point per alias row: (namespace, normalized spelling) -> entity.
    owners = {pid: spelling[2] for pid, spelling in _alias_points(rm).items()}
    actual = {pid: payload.get("entity_id") for pid, payload in p.backend.scroll(p.live.entities)}
    drift.entity_drift = sorted(
        pid for pid in owners.keys() | actual.keys() if actual.get(pid) != owners.get(pid)
    )
    return drift


def _fix(p: Projections, drift: Drift) -> None:
    p.catch_up()
    if drift.sqlite_rows:
        _fix_rows(p, set(drift.sqlite_rows))
        # The points were compared with the rows before their repair: a memory whose row
        # was missing had its points counted as orphans. Compare them again.
        drift = _compare(p)
    if drift.orphan_points:
        p.backend.delete(p.live.memories, drift.orphan_points)
    affected = set(drift.missing_points) | set(drift.stale_payloads)
    if drift.entity_drift:
        p.backend.delete(p.live.entities, drift.entity_drift)
    expected = _alias_points(p.read_model)
    spellings = {expected[pid] for pid in drift.entity_drift if pid in expected}
    if affected or spellings:
        if affected:
            p.backend.delete_by_memory(p.live.memories, sorted(affected))
        p.sink.apply_changes(_changes_of(p.journal.read(), affected, spellings))


def _fix_rows(p: Projections, keys: set[str]) -> None:
    """Replace the differing rows with those of a replay of just the affected keys."""
    scratch_path = p.home / f"reconcile-fix-{os.getpid()}.sqlite"
    remove_sqlite(scratch_path)
    scratch = ReadModel.open(scratch_path, rules=p.rules)
    try:
        for chunk in chunks(p.journal.read(), BATCH):
            scratch.apply(chunk)
    finally:
        scratch.close()
    try:
        p.read_model.replace_rows(scratch_path, sorted(keys))
    finally:
        remove_sqlite(scratch_path)


def _row_differences(live: ReadModel, replayed: ReadModel) -> list[str]:
    """Keys (memory or entity ids) whose rows differ between two read models."""
    return live.differing_keys(replayed)


def _alias_points(rm: ReadModel) -> dict[str, tuple[str, str, str]]:
    """The entity points the read model implies: id -> (namespace, normalized, entity)."""
    return {
        alias_point_id(ns, norm, entity): (ns, norm, entity) for ns, norm, entity in rm.alias_rows()
    }


def _changes_of(
    records: Iterator[Record], memory_ids: set[str], spellings: set[tuple[str, str, str]]
) -> Iterator[tuple[int, float, fold.Change]]:
    """The fold's changes to the given memories' points and the given spellings' points
    (namespace, normalized, entity), each with its record's position and time, in journal order:
    every change a projection applies to them (a fold, an unfold, a relink by a merge or a
    split) and none to any other point."""
    for record in records:
        for event in record.events:
            for change in fold.changes(event):
                kept = _concerning(change, memory_ids, spellings)
                if kept is not None:
                    yield record.position, record.recorded_at.timestamp(), kept


def _concerning(
    change: fold.Change, memory_ids: set[str], spellings: set[tuple[str, str, str]]
) -> fold.Change | None:
    """The part of one change that concerns the given points, or None."""
    match change:
        case fold.PutMemory():
            return change if change.event.memory_id in memory_ids else None
        case (
            fold.Invalidated()
            | fold.Revalidated()
            | fold.Validated()
            | fold.Accessed()
            | fold.Marked()
            | fold.Relinked()
        ):
            return change if change.memory_id in memory_ids else None
        case fold.Forgot():
            gone = tuple(m for m in change.memory_ids if m in memory_ids)
            return fold.Forgot(gone) if gone else None
        case fold.PutSpelling():
            key = (change.namespace, change.normalized, change.entity_id)
            return change if key in spellings else None
        case fold.DropSpelling():
            key = (change.namespace, change.normalized, change.owner)
            return change if key in spellings else None
        case fold.DropEntities():
            # A spelling the read model still holds belongs to an entity never dropped
            # (entity ids are not drawn twice): dropping would only take correct points.
            return None
        case fold.PutEntity() | fold.KeptFor() | fold.Merged():
            return None  # an entity's points are its spellings'
        case (
            fold.Flagged() | fold.Differ() | fold.FoldedPair() | fold.Unfolded() | fold.Unflagged()
        ):
            return None  # read-model facts: no point holds them
        case _:
            assert_never(change)
