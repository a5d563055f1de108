"""The one fold of journal events: what each event changes, as small typed values.

Every projection of the journal reads an event through :func:`changes`, the only ``match``
over the event catalogue on the read side: the SQLite read model turns each change into SQL
(``ReadModel.apply``), the command side's overlay (``ferrex.core.view.Overlay``) keeps them in
its dictionaries, and the vector sink (``projections.vector_sink``) derives from them what to
upsert, update and delete. A new event type is one more case here (``assert_never`` makes the
type checker name it), and every projection then sees it, or is told by the type checker which
change it does not yet handle.

Changes are of three concepts:

- **memory rows** (:data:`MemoryChange`): a row put from a ``memory.stored``
  (:class:`PutMemory`), fields of a row updated (:class:`Invalidated`, :class:`Revalidated`,
  :class:`Validated`, :class:`Accessed`, :class:`Marked`, :class:`Relinked`; :func:`updated`
  is the one rule of what each does to a :class:`~projections.rows.Memory`), rows dropped
  (:class:`Forgot`);
- **entities and their spellings** (:data:`EntityChange`);
- **flags** between memories or entities (:data:`FlagChange`): possible conflicts, entities
  said to differ, the pairs a consolidation folded.

Pure: no clock, no SQL, no vectors; a row's ``position`` and ``created_at`` come from the
record, which the SQLite projection adds itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import assert_never

from journal import events as ev
from projections.rows import Memory, PossibleConflict

# -- memory rows ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PutMemory:
    """The row :meth:`Memory.from_event` makes of the event (replacing one of the same id)."""

    event: ev.MemoryStored


@dataclass(frozen=True, slots=True)
class Invalidated:
    """No longer valid from ``t_invalid``: superseded, or folded into a summary."""

    memory_id: str
    t_invalid: float
    superseded_by: str | None


@dataclass(frozen=True, slots=True)
class Revalidated:
    """Valid again, if ``summary_id`` is still what superseded it (an unfold's summary, or a
    forgotten memory that had replaced it)."""

    memory_id: str
    summary_id: str


@dataclass(frozen=True, slots=True)
class Validated:
    memory_id: str
    at: float


@dataclass(frozen=True, slots=True)
class Accessed:
    memory_id: str
    count: int
    at: float


@dataclass(frozen=True, slots=True)
class Marked:
    """The memory's marks as they stand after the event."""

    memory_id: str
    importance: float
    pinned: bool
    expires_at: float | None


@dataclass(frozen=True, slots=True)
class Relinked:
    """The memory now names these entities (each once, in the event's order)."""

    memory_id: str
    entity_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Forgot:
    """The memories are gone, with their links, flags and folds."""

    memory_ids: tuple[str, ...]


RowUpdate = Invalidated | Revalidated | Validated | Accessed | Marked | Relinked
"""A change to fields of a row that exists (of a row that does not, nothing)."""

MemoryChange = PutMemory | RowUpdate | Forgot

# -- entities and spellings -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PutEntity:
    entity_id: str
    namespace: str
    name: str
    normalized: str
    kind: str | None
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class PutSpelling:
    """One spelling of an entity, as matched when first seen (one per scope)."""

    namespace: str
    normalized: str
    alias: str
    entity_id: str
    match: str
    score: float
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class DropSpelling:
    """The spelling ``normalized`` leaves ``entity_id`` and the entities merged into it; its
    vector point is the one recorded under ``owner``."""

    namespace: str
    normalized: str
    entity_id: str
    owner: str


@dataclass(frozen=True, slots=True)
class DropEntities:
    """The entities are gone, with all their spellings."""

    entity_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KeptFor:
    """A cascading forget kept the entity only for these agents."""

    entity_id: str
    agent_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Merged:
    """``absorbed`` (and what was merged into it) is now ``into``."""

    absorbed: str
    into: str


EntityChange = PutEntity | PutSpelling | DropSpelling | DropEntities | KeptFor | Merged

# -- flags ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Flagged:
    """A possible conflict between two facts (see ``facts.possible_conflict``)."""

    namespace: str
    conflict: PossibleConflict


@dataclass(frozen=True, slots=True)
class Differ:
    """Two entities said to be different (kept as the sorted pair)."""

    namespace: str
    entity_id: str
    other_id: str


@dataclass(frozen=True, slots=True)
class FoldedPair:
    summary_id: str
    memory_id: str
    namespace: str


@dataclass(frozen=True, slots=True)
class Unfolded:
    """The summary's folds are undone."""

    summary_id: str


@dataclass(frozen=True, slots=True)
class Unflagged:
    """Two facts said to both hold (``facts.differ``): no possible conflict between them any
    more, and the pair is kept (sorted) so that nothing flags it again (an entity merge)."""

    memory_id: str
    other_id: str
    namespace: str


FlagChange = Flagged | Differ | FoldedPair | Unfolded | Unflagged

Change = MemoryChange | EntityChange | FlagChange


def changes(event: ev.AnyEvent) -> tuple[Change, ...]:
    """What one event changes, in the order the projections apply it."""
    match event:
        case ev.MemoryStored():
            return (PutMemory(event),)
        case ev.MemorySuperseded():
            return (Invalidated(event.memory_id, event.t_invalid.timestamp(), event.superseded_by),)
        case ev.MemoriesForgotten():
            return (
                Forgot(event.memory_ids),
                *((DropEntities(event.dropped_entity_ids),) if event.dropped_entity_ids else ()),
                *(KeptFor(k.entity_id, k.agent_ids) for k in event.kept_entities),
                *(Revalidated(c.memory_id, c.replaced_by) for c in event.current_again),
            )
        case ev.MemoriesValidated():
            at = event.at.timestamp()
            return tuple(Validated(m, at) for m in event.memory_ids)
        case ev.MemoriesAccessed():
            return tuple(
                Accessed(a.memory_id, a.count, a.last_at.timestamp()) for a in event.accesses
            )
        case ev.MemoryMarked():
            expires = None if event.expires_at is None else event.expires_at.timestamp()
            return (Marked(event.memory_id, event.importance, event.pinned, expires),)
        case ev.EntityCreated():
            return (
                PutEntity(event.entity_id, event.namespace, event.name, event.normalized,
                          event.kind, event.agent_id),
                PutSpelling(event.namespace, event.normalized, event.name, event.entity_id,
                            "exact", 1.0, event.agent_id),
            )  # fmt: skip
        case ev.EntityAliasAdded():
            return (
                PutSpelling(event.namespace, event.normalized, event.alias, event.entity_id,
                            event.match, event.score, event.agent_id),
            )  # fmt: skip
        case ev.FactsPossiblyConflicting():
            e = event
            return tuple(
                Flagged(e.namespace, PossibleConflict(e.memory_id, other, e.entity_id,
                                                      e.other_entity_id, e.reason, e.score))
                for other in e.others
            )  # fmt: skip
        case ev.EntitiesMerged():
            return (Merged(event.entity_id, event.into), *_relinked(event.relinked))
        case ev.EntitySplit():
            owner = event.spelling_entity_id or event.entity_id
            return (
                DropSpelling(event.namespace, event.normalized, event.entity_id, owner),
                PutEntity(event.new_entity_id, event.namespace, event.name, event.normalized,
                          None, event.entity_agent_id),
                PutSpelling(event.namespace, event.normalized, event.name, event.new_entity_id,
                            "operator", 1.0, event.entity_agent_id),
                Differ(event.namespace, event.entity_id, event.new_entity_id),
                *_relinked(event.relinked),
            )  # fmt: skip
        case ev.EntitiesDiffer():
            return (Differ(event.namespace, event.entity_id, event.other_id),)
        case ev.FactsDiffer():
            return (Unflagged(event.memory_id, event.other_id, event.namespace),)
        case ev.MemoriesConsolidated():
            at = event.at.timestamp()
            return tuple(
                change
                for m in event.memory_ids
                for change in (
                    Invalidated(m, at, event.summary_id),
                    FoldedPair(event.summary_id, m, event.namespace),
                )
            )
        case ev.MemoriesUnfolded():
            return (
                *(Revalidated(m, event.summary_id) for m in event.memory_ids),
                Unfolded(event.summary_id),
            )
        case _:
            assert_never(event)


def _relinked(relinked: tuple[ev.Relink, ...]) -> tuple[Relinked, ...]:
    return tuple(Relinked(r.memory_id, tuple(dict.fromkeys(r.entity_ids))) for r in relinked)


def updated(memory: Memory, change: RowUpdate) -> Memory:
    """The row after one update: the rule the read model's SQL and the overlay both follow."""
    match change:
        case Invalidated():
            return replace(memory, t_invalid=change.t_invalid, superseded_by=change.superseded_by)
        case Revalidated():
            if memory.superseded_by != change.summary_id:
                return memory
            return replace(memory, t_invalid=None, superseded_by=None)
        case Validated():
            return replace(memory, last_validated=_later(memory.last_validated, change.at))
        case Accessed():
            return replace(
                memory,
                access_count=memory.access_count + change.count,
                last_accessed=_later(memory.last_accessed, change.at),
            )
        case Marked():
            return replace(
                memory,
                importance=change.importance,
                pinned=change.pinned,
                expires_at=change.expires_at,
            )
        case Relinked():
            return replace(memory, entity_ids=tuple(sorted(change.entity_ids)))
        case _:
            assert_never(change)


def _later(old: float | None, at: float) -> float:
    return at if old is None else max(old, at)
