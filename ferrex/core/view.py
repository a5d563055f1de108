"""What a decision reads, and the two real things that answer it.

:class:`View` is the whole of what the decisions in :mod:`ferrex.core.decide` may ask about
the committed state: a memory by id, the active facts of one relation, the facts of one
subject, the versions of a procedure, the spellings of a namespace's entities, which
memories name an entity, and where an agent's last derived episode ends. Two implementations:

- :class:`ReadModelView`: the SQLite read model, through its named queries;
- :class:`Overlay`: a view plus the events decided earlier in the same batch but not yet
  appended. It turns a ``memory.stored`` into a memory with the same
  :meth:`projections.sqlite.Memory.from_event` the projection uses, so a later request of the
  batch sees exactly what it would see once the batch is applied.

Unit tests of the decisions use a small in-memory view of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from journal import (
    EntitiesDiffer,
    EntitiesMerged,
    EntityAliasAdded,
    EntityCreated,
    EntitySplit,
    Event,
    FactsPossiblyConflicting,
    MemoriesAccessed,
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesUnfolded,
    MemoriesValidated,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
    Relink,
)
from projections.sqlite import Memory, ReadModel, Spelling, viewers


@dataclass(frozen=True)
class EpisodeTail:
    """The last memory of an agent's derived episodes (see ``decide.episode_of``)."""

    episode: str
    index: int
    at: float | None
    """When it was recorded (epoch seconds); None: decided earlier in the same batch."""


class View(Protocol):
    """The committed state as decisions see it (every list ordered by id)."""

    def memory(self, memory_id: str) -> Memory | None: ...

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]: ...

    def subject_facts(self, namespace: str, key: str) -> list[Memory]: ...

    def procedures(self, namespace: str, name: str) -> list[Memory]: ...

    def imported(self, namespace: str, key: str) -> list[Memory]: ...

    def spellings(self, namespace: str) -> list[Spelling]: ...

    def linked(self, entity_id: str) -> list[str]: ...

    def entities_differ(self, a: str, b: str) -> bool: ...

    def episode_tail(
        self, namespace: str, agent_id: str | None, visibility: str
    ) -> EpisodeTail | None: ...


class ReadModelView:
    """The read model as a :class:`View`, for one chunk of the command runner.

    The runner builds one under the writer lock, after catching up, and drops it before the
    chunk's records are applied: the read model cannot change while it lives, so each
    question is asked of SQLite once (the chunk's decisions ask many of the same ones) and
    answered from memory after that."""

    def __init__(self, read_model: ReadModel) -> None:
        self._rm = read_model
        self._answers: dict[tuple[object, ...], Any] = {}

    def _once(self, key: tuple[object, ...], ask: Callable[[], Any]) -> Any:
        if key not in self._answers:
            self._answers[key] = ask()
        return self._answers[key]

    def memory(self, memory_id: str) -> Memory | None:
        found: Memory | None = self._once(("memory", memory_id), lambda: self._rm.get(memory_id))
        return found

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]:
        def ask() -> list[Memory]:
            return self._rm.active_facts(namespace, key, predicate)

        return list(self._once(("active", namespace, key, predicate), ask))

    def subject_facts(self, namespace: str, key: str) -> list[Memory]:
        return list(
            self._once(("subject", namespace, key), lambda: self._rm.subject_facts(namespace, key))
        )

    def procedures(self, namespace: str, name: str) -> list[Memory]:
        return list(
            self._once(
                ("procedures", namespace, name), lambda: self._rm.procedures(namespace, name)
            )
        )

    def imported(self, namespace: str, key: str) -> list[Memory]:
        return list(
            self._once(("imported", namespace, key), lambda: self._rm.imported(namespace, key))
        )

    def spellings(self, namespace: str) -> list[Spelling]:
        return list(self._once(("spellings", namespace), lambda: self._rm.spellings(namespace)))

    def linked(self, entity_id: str) -> list[str]:
        return list(
            self._once(("linked", entity_id), lambda: [m for _, m in self._rm.links([entity_id])])
        )

    def entities_differ(self, a: str, b: str) -> bool:
        return bool(self._once(("differ", *sorted((a, b))), lambda: self._rm.entities_differ(a, b)))

    def episode_tail(
        self, namespace: str, agent_id: str | None, visibility: str
    ) -> EpisodeTail | None:
        m: Memory | None = self._once(
            ("tail", namespace, agent_id, visibility),
            lambda: self._rm.episode_tail(namespace, agent_id, visibility),
        )
        if m is None or m.episode is None:
            return None
        return EpisodeTail(m.episode, m.episode_index, m.created_at)


class Overlay:
    """A :class:`View` plus decisions not yet applied (see the module docstring)."""

    def __init__(self, base: View) -> None:
        self._base = base
        self._changed: dict[str, Memory | None] = {}  # None: forgotten in this batch
        self._spellings: dict[str, list[Spelling]] = {}
        self._dropped: set[str] = set()
        self._kept: dict[str, tuple[str, ...]] = {}  # entity → the agents a cascade kept it for
        self._tails: dict[tuple[str, str | None, str], EpisodeTail] = {}
        self._merged_into: dict[str, str] = {}

    # -- applying ---------------------------------------------------------------------------

    def apply(self, events: Sequence[Event]) -> None:
        """Take one command's events as if they had been applied."""
        for event in events:
            match event:
                case MemoryStored():
                    body = event.body
                    predicate = body.predicate_normalized or body.predicate if body else None
                    self._changed[event.memory_id] = Memory.from_event(
                        event, position=0, created_at=0.0, predicate_normalized=predicate
                    )
                    if event.episode_id is not None:
                        key = (event.namespace, event.agent_id, event.visibility)
                        self._tails[key] = EpisodeTail(event.episode_id, event.episode_index, None)
                case MemorySuperseded():
                    self._update(
                        event.memory_id,
                        t_invalid=event.t_invalid.timestamp(),
                        superseded_by=event.superseded_by,
                    )
                case MemoriesForgotten():
                    for memory_id in event.memory_ids:
                        self._changed[memory_id] = None
                    self._dropped.update(event.dropped_entity_ids)
                    self._kept.update((k.entity_id, k.agent_ids) for k in event.kept_entities)
                case MemoriesValidated():
                    at = event.at.timestamp()
                    for memory_id in event.memory_ids:
                        old = self.memory(memory_id)
                        if old is not None:
                            self._update(
                                memory_id, last_validated=max(old.last_validated or at, at)
                            )
                case MemoriesAccessed():
                    for access in event.accesses:
                        old = self.memory(access.memory_id)
                        if old is not None:
                            at = access.last_at.timestamp()
                            self._update(
                                access.memory_id,
                                access_count=old.access_count + access.count,
                                last_accessed=max(old.last_accessed or at, at),
                            )
                case MemoryMarked():
                    expires = None if event.expires_at is None else event.expires_at.timestamp()
                    self._update(
                        event.memory_id,
                        importance=event.importance,
                        pinned=event.pinned,
                        expires_at=expires,
                    )
                case EntityCreated():
                    self._spell(event.namespace).append(
                        Spelling(
                            event.entity_id,
                            event.name,
                            event.normalized,
                            event.agent_id,
                            viewers=viewers(event.agent_id),
                        )
                    )
                case EntityAliasAdded():
                    # A spelling more of a known entity: seen by those who see the entity.
                    seen_by = next(
                        (
                            s.viewers
                            for s in self.spellings(event.namespace)
                            if s.entity_id == event.entity_id
                        ),
                        None,
                    )
                    self._spell(event.namespace).append(
                        Spelling(
                            event.entity_id,
                            event.alias,
                            event.normalized,
                            event.agent_id,
                            viewers=seen_by,
                        )
                    )
                case EntitiesMerged():
                    self._relink(event.relinked)
                    self._merged_into[event.entity_id] = event.into
                    for absorbed, into in list(self._merged_into.items()):
                        if into == event.entity_id:
                            self._merged_into[absorbed] = event.into
                case EntitySplit():
                    # Entity commands run alone: only the links matter to a later decision.
                    self._relink(event.relinked)
                case FactsPossiblyConflicting() | EntitiesDiffer():
                    pass  # a store's flags and differences change no decision in a batch
                case MemoriesConsolidated():
                    for memory_id in event.memory_ids:
                        self._update(
                            memory_id,
                            t_invalid=event.at.timestamp(),
                            superseded_by=event.summary_id,
                        )
                case MemoriesUnfolded():
                    for memory_id in event.memory_ids:
                        old = self.memory(memory_id)
                        if old is not None and old.superseded_by == event.summary_id:
                            self._update(memory_id, t_invalid=None, superseded_by=None)

    def _relink(self, relinked: Sequence[Relink]) -> None:
        for link in relinked:
            self._update(link.memory_id, entity_ids=tuple(dict.fromkeys(link.entity_ids)))

    def _update(self, memory_id: str, **changes: object) -> None:
        old = self.memory(memory_id)
        if old is not None:
            self._changed[memory_id] = replace(old, **changes)  # type: ignore[arg-type]

    def _spell(self, namespace: str) -> list[Spelling]:
        return self._spellings.setdefault(namespace, [])

    # -- reading ----------------------------------------------------------------------------

    def memory(self, memory_id: str) -> Memory | None:
        if memory_id in self._changed:
            return self._changed[memory_id]
        return self._base.memory(memory_id)

    def _merged(self, base: Sequence[Memory], keep: _Keep) -> list[Memory]:
        ids = [m.memory_id for m in base]
        ids += [i for i, m in self._changed.items() if m is not None and keep(m)]
        found = (self.memory(i) for i in sorted(set(ids)))
        return [m for m in found if m is not None and keep(m)]

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return (
                m.namespace == namespace
                and m.type == "semantic"
                and m.subject_key == key
                and m.predicate_normalized == predicate
                and m.t_invalid is None
            )

        return self._merged(self._base.active_facts(namespace, key, predicate), keep)

    def subject_facts(self, namespace: str, key: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return m.namespace == namespace and m.type == "semantic" and m.subject_key == key

        return self._merged(self._base.subject_facts(namespace, key), keep)

    def procedures(self, namespace: str, name: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return m.namespace == namespace and m.type == "procedural" and m.procedure_name == name

        return self._merged(self._base.procedures(namespace, name), keep)

    def imported(self, namespace: str, key: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return m.namespace == namespace and m.import_key == key

        return self._merged(self._base.imported(namespace, key), keep)

    def spellings(self, namespace: str) -> list[Spelling]:
        found = [*self._base.spellings(namespace), *self._spellings.get(namespace, ())]
        into = self._merged_into
        merged = [
            replace(s, entity_id=into[s.entity_id], recorded_under=s.recorded_under or s.entity_id)
            if s.entity_id in into
            else s
            for s in found
            if s.entity_id not in self._dropped
        ]
        return [
            replace(s, viewers=self._kept[s.entity_id]) if s.entity_id in self._kept else s
            for s in merged
        ]

    def linked(self, entity_id: str) -> list[str]:
        ids = {m for m in self._base.linked(entity_id) if self.memory(m) is not None}
        ids |= {i for i, m in self._changed.items() if m is not None and entity_id in m.entity_ids}
        return sorted(ids)

    def entities_differ(self, a: str, b: str) -> bool:
        return self._base.entities_differ(a, b)

    def episode_tail(
        self, namespace: str, agent_id: str | None, visibility: str
    ) -> EpisodeTail | None:
        pending = self._tails.get((namespace, agent_id, visibility))
        return pending or self._base.episode_tail(namespace, agent_id, visibility)


class _Keep(Protocol):
    def __call__(self, memory: Memory, /) -> bool: ...
