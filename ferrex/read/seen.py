"""What a caller may see: the one home of the read rules every read surface applies.

The tools (recall, stats, reflect), the MCP resources, the dashboard's reads and its JSON
API all ask here, so a rule is spelled once:

- **visible** (:mod:`ferrex.rules.visibility`): shared memories, unowned ones and the
  caller's own private ones; the operator (no agent id) sees all;
- **unexpired** (:func:`unexpired`): a memory whose time to live has run out is gone the
  moment it expires, on every surface, before the owner's sweep forgets it;
- **spellings**: the entity spellings of the caller's scope (shared ones and its own), the
  candidates a name the caller gives is resolved against;
- **history** (:meth:`Sight.history`): a memory's versions, one walk for every surface, back
  through both kinds of replacement (an explicit ``supersedes`` and a fact's older value,
  which records only ``superseded_by``) and forward through ``superseded_by``;
- **brief** (:func:`brief`): how a memory is listed (:class:`Brief`), and how one is shown
  whole (:class:`MemoryDetail`, the typed answer the service's memory resource builds).

A :class:`Sight` is one caller at one instant (and the recall hits not journaled yet, so a
use counts at once); it reads through the read model's named queries only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypedDict

from ferrex.rules.lifecycle import Marks, expired
from ferrex.rules.visibility import sees, sees_scope
from ferrex.times import Rfc3339, rfc3339
from projections.documents import memory_text
from projections.rows import Entity, Memory, Spelling
from projections.sqlite import ReadModel

CHAIN: Final = 50
"""The most versions a history walks each way from the memory asked about."""

Pending = Mapping[str, tuple[int, float]]
"""Recall hits not journaled yet, by memory id: (count, last access as float epoch seconds)."""


def unexpired(m: Memory, now: float) -> bool:
    """Whether ``m`` is still there at ``now`` (its time to live, if any, has not run out)."""
    return not expired(m.expires_at, now)


def expired_entities(rm: ReadModel, now: float) -> set[str]:
    """The entities every memory naming them has expired: gone with them (the sweep that
    forgets those memories drops such entities too), so no surface lists or resolves them."""
    gone = {m.memory_id: m for m in rm.expiring(by=now)}
    named = sorted({e for m in gone.values() for e in m.entity_ids})
    if not named:
        return set()
    kept = {entity_id for entity_id, memory_id in rm.links(named) if memory_id not in gone}
    return set(named) - kept


def with_pending(m: Memory, pending: Pending) -> Memory:
    """``m`` with the recall hits still waiting in the access log counted, as the journal will."""
    hits = pending.get(m.memory_id)
    if hits is None:
        return m
    count, last = hits
    last_accessed = last if m.last_accessed is None else max(m.last_accessed, last)
    return replace(m, access_count=m.access_count + count, last_accessed=last_accessed)


def one_line(m: Memory, width: int = 80) -> str:
    """A memory's text on one line, cut to ``width`` characters."""
    text = " ".join(memory_text(m.type, m.body()).split())
    return text if len(text) <= width else text[: width - 1] + "…"


class Brief(TypedDict):
    """A memory as lists show it (:func:`brief`): id, type, event time, end of validity, when
    stored, text. The HTTP API's ``Brief`` schema is read from it."""

    id: str
    type: str
    event_time: Rfc3339
    t_invalid: Rfc3339 | None
    created_at: Rfc3339
    summary: str


class MemoryLink(TypedDict):
    """One version of a memory as its detail lists it."""

    id: str
    t_valid: Rfc3339
    t_invalid: Rfc3339 | None
    summary: str


class MemoryDetail(Brief, Marks):
    """One memory as the ``ferrex://memory/{id}`` resource and ``GET /api/v1/memory/{id}``
    show it (``Service._memory`` builds it): :class:`Brief` with its scope, names, own
    fields and use, its marks (each only when set) and its versions. The HTTP API's
    ``MemoryDetail`` schema is read from it."""

    namespace: str
    visibility: str
    entities: list[str]
    body: dict[str, Any]
    confidence: float
    access_count: int
    last_accessed: Rfc3339 | None
    last_validated: Rfc3339 | None
    history: list[MemoryLink]


def brief(m: Memory) -> Brief:
    """A memory as lists show it: id, type, event time, end of validity, when stored, text."""
    return {"id": m.memory_id, "type": m.type, "event_time": rfc3339(m.t_valid),
            "t_invalid": rfc3339(m.t_invalid), "created_at": rfc3339(m.created_at),
            "summary": one_line(m, 200)}  # fmt: skip


@dataclass(frozen=True)
class Sight:
    """One caller (``agent_id``; None: the operator) at one instant (``now``, epoch seconds)."""

    agent_id: str | None
    now: float
    pending: Pending = field(default_factory=dict)

    def sees(self, m: Memory) -> bool:
        """Whether the caller may see ``m`` now: visible to it and not expired."""
        return sees(self.agent_id, m.agent_id, m.visibility) and unexpired(m, self.now)

    def shown(self, memories: Iterable[Memory]) -> list[Memory]:
        """The memories the caller may see, in order, with pending recall hits counted."""
        return [with_pending(m, self.pending) for m in memories if self.sees(m)]

    def memories(self, rm: ReadModel, ids: Iterable[str]) -> list[Memory]:
        """The memories of ``ids`` the caller may see (unknown ids are left out)."""
        return self.shown(rm.memories(memory_ids=list(ids)))

    def spellings(self, rm: ReadModel, namespace: str) -> list[Spelling]:
        """The entity spellings of the caller's scope in a namespace (not those of an entity
        only expired memories name)."""
        gone = expired_entities(rm, self.now)
        return [
            s
            for s in rm.spellings(namespace)
            if sees_scope(self.agent_id, s.agent_id, s.viewers) and s.entity_id not in gone
        ]

    def entities(self, rm: ReadModel, namespace: str | None) -> list[Entity]:
        """The entities of the caller's scope in a namespace (all of them when None), by id:
        shared ones and those the caller's own private memory introduced."""
        gone = expired_entities(rm, self.now)
        return [
            e
            for e in rm.entities(namespace)
            if sees_scope(self.agent_id, e.agent_id, e.viewers) and e.entity_id not in gone
        ]

    def history(self, rm: ReadModel, memory: Memory) -> list[Memory]:
        """The versions through ``memory``, oldest first, ``memory`` among them.

        Back: what each version replaced, an explicit ``supersedes`` or an older value of
        the same fact (``ReadModel.replaced_by``), the latest of them when several; for a
        consolidation summary, every memory folded into it, in episode order; forward:
        ``superseded_by``. Only versions the caller sees now, at most :data:`CHAIN` each way."""
        chain = {memory.memory_id}
        older: list[Memory] = []
        current = memory
        folded = rm.folded(memory.memory_id)
        if folded:
            older = sorted(
                self.memories(rm, folded), key=lambda m: (m.t_valid, m.position), reverse=True
            )[:CHAIN]
        while folded == [] and len(older) < CHAIN:
            before = self.shown(rm.recall.replaced_by(current.memory_id))
            if current.supersedes:
                before += self.memories(rm, [current.supersedes])
            before = [m for m in before if m.memory_id not in chain]
            if not before:
                break
            current = max(before, key=lambda m: (m.t_valid, m.memory_id))
            chain.add(current.memory_id)
            older.append(current)
        newer: list[Memory] = []
        current = memory
        while len(newer) < CHAIN and current.superseded_by:
            after = [m for m in self.memories(rm, [current.superseded_by])
                     if m.memory_id not in chain]  # fmt: skip
            if not after:
                break
            current = after[0]
            chain.add(current.memory_id)
            newer.append(current)
        return [*reversed(older), memory, *newer]
