"""Restore a dump: journal memories exactly as the dump describes them, ids and times kept.

A restore is a command like a store (writer lock → catch up → decide → append → apply), but
what it decides is only what is not in the dump: whether the id already exists (then the
line is skipped, which makes importing the same dump twice add nothing) and which entity
each name is (an entity of that namespace with that normalized name, else a new one). It
does not re-run dedup, conflict resolution or versioning: the dump records their outcomes.

Each memory is one record: its new entities, ``memory.stored`` with the dumped id, type,
t_valid, links and text, then ``memory.superseded`` (t_invalid, superseded_by),
``memories.validated`` (last_validated, source ``operator``) and ``memories.accessed``
(access_count, last_accessed) when the dump has them. Chunks are group-committed and their
texts embedded in one batch, as in :meth:`ferrex.store.Writer.store_many`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ferrex.ids import new_id
from ferrex.porting.dump import Restored
from ferrex.rules.entities import normalize_entity
from ferrex.rules.predicates import normalize_predicate
from ferrex.store import Writer
from journal import (
    Access,
    EntityCreated,
    Event,
    MemoriesAccessed,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
)
from projections.documents import memory_text
from projections.sqlite import ReadModel


@dataclass(frozen=True)
class Restore:
    status: Literal["stored", "skipped"]
    id: str
    position: int | None
    """The record that restored it; None when skipped (the id exists)."""


def restore_many(
    writer: Writer,
    items: Sequence[Restored],
    *,
    chunk: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> list[Restore]:
    """Restore every item not already present; one outcome per item, in order."""
    outcomes: list[Restore] = []
    seen: set[str] = set()
    for start in range(0, len(items), chunk):
        part = items[start : start + chunk]
        writer.embedder.embed_many([memory_text(i.valid.type, _body(i, None)) for i in part])
        with writer.journal.exclusive():
            writer.projections.catch_up()
            rm = writer.projections.read_model
            present = {m.memory_id for m in rm.memories(memory_ids=[i.memory_id for i in part])}
            entities = _Entities(rm, writer)
            commands: list[list[Event]] = []
            fresh: list[int] = []
            for item in part:
                if item.memory_id in present or item.memory_id in seen:
                    outcomes.append(Restore("skipped", item.memory_id, None))
                    continue
                seen.add(item.memory_id)
                commands.append(_events(item, writer, entities))
                fresh.append(len(outcomes))
                outcomes.append(Restore("stored", item.memory_id, None))
            records = writer.journal.append_batch(commands)
            writer.projections.catch_up()
        for at, record in zip(fresh, records, strict=True):
            outcomes[at] = Restore("stored", outcomes[at].id, record.position)
        if writer.settings.budget_bytes is not None and records:
            writer.enforce_budget(writer.settings.budget_bytes)
        if progress is not None:
            progress(len(outcomes), len(items))
    return outcomes


class _Entities:
    """Names → entity ids in one chunk: known spellings of the namespace, then the ones this
    chunk creates."""

    def __init__(self, read_model: ReadModel, writer: Writer) -> None:
        self.rm = read_model
        self.writer = writer
        self.created: dict[tuple[str, str], str] = {}

    def resolve(self, namespace: str, name: str, events: list[Event]) -> str:
        normalized = normalize_entity(name)
        key = (namespace, normalized)
        if key in self.created:
            return self.created[key]
        known = self.rm.db.execute(
            "SELECT entity_id FROM aliases WHERE namespace=? AND normalized=?", key
        ).get
        if known is not None:
            return str(known)
        entity_id = new_id("ent", self.writer.clock())
        events.append(
            EntityCreated(
                entity_id=entity_id, namespace=namespace, name=name, normalized=normalized
            )
        )
        self.created[key] = entity_id
        return entity_id


def _body(item: Restored, predicate_normalized: str | None) -> MemoryBody:
    v = item.valid
    return MemoryBody(
        content=v.content,
        subject=v.subject,
        predicate=v.predicate,
        object=v.object,
        predicate_normalized=predicate_normalized,
        procedure_name=v.name,
        conditions=v.conditions,
        steps=v.steps,
        source=v.source,
        context=v.context,
    )


def _events(item: Restored, writer: Writer, entities: _Entities) -> list[Event]:
    v = item.valid
    settings = writer.settings
    namespace = v.namespace or settings.default_namespace
    assert v.t_valid is not None  # a dump line always has t_valid
    events: list[Event] = []
    entity_ids = tuple(dict.fromkeys(entities.resolve(namespace, n, events) for n in v.entities))
    predicate = item.predicate_normalized if v.predicate is not None else None
    if v.predicate is not None and predicate is None:
        synonyms = settings.namespace_synonyms.get(namespace, settings.synonyms)
        predicate = normalize_predicate(v.predicate, synonyms)
    events.append(
        MemoryStored(
            memory_id=item.memory_id,
            namespace=namespace,
            memory_type=v.type,
            t_valid=v.t_valid,
            confidence=v.confidence,
            entity_ids=entity_ids,
            supersedes=v.supersedes,
            procedure_version=item.version,
            agent_id=v.agent_id,
            visibility=v.visibility or "shared",
            body=_body(item, predicate),
        )
    )
    if item.t_invalid is not None:
        events.append(
            MemorySuperseded(
                memory_id=item.memory_id,
                namespace=namespace,
                t_invalid=item.t_invalid,
                superseded_by=item.superseded_by,
                reason="version" if v.type == "procedural" else "explicit",
            )
        )
    if item.last_validated is not None:
        events.append(
            MemoriesValidated(
                memory_ids=(item.memory_id,), at=item.last_validated, source="operator"
            )
        )
    if item.access_count and item.last_accessed is not None:
        events.append(
            MemoriesAccessed(
                accesses=(Access(item.memory_id, item.last_accessed, item.access_count),)
            )
        )
    return events
