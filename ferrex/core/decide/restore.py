"""Restoring a dump: the checked lines (:mod:`ferrex.porting.dump` parses them) and the
decisions that journal each as it was.

A restore is a command like a store (writer lock → catch up → decide → append → apply), but
what it decides is only what is not in the dump: whether the id already exists (then the
line is skipped, which makes importing the same dump twice add nothing) and which entity
each name is (an entity of that namespace with that normalized name, else a new one). It
does not re-run dedup, conflict resolution or versioning: the dump records their outcomes.

Each entity line is one record: ``entity.created`` with the dumped id, scope and kind, and
an ``entity.alias_added`` per other spelling (an entity the home already holds by id, or by
the same spelling in the same scope, only gets the spellings it lacks). An entity split off
a merged one (:func:`split_offs`) is journaled as that ``entity.split`` again, after the
merged entity (``porting/restore`` orders them so), which loses the spelling as it did.
Each memory is one record: its new entities (only for a line without ``entity_ids``),
``memory.stored`` with the dumped id, type, multi-valued flag, derived episode,
t_valid, links, text and ``learned_at`` (the dumped ``created_at``), then
``memory.superseded`` (t_invalid, superseded_by),
``memories.validated`` (last_validated, source ``operator``), ``memories.accessed``
(access_count, last_accessed) and ``memory.marked`` (importance, pinned, expires_at) when
the dump has them; a source a consolidation line folds gets no ``memory.superseded``: the
line's ``memories.consolidated``, after the memories, supersedes it and records the fold.
Flag lines (possible conflicts, facts or entities said to differ) are journaled as their
events only beside something this restore journaled.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

import msgspec

from ferrex.rules.entities import normalize_entity
from ferrex.rules.lifecycle import DEFAULT_IMPORTANCE
from ferrex.rules.memory_input import ValidStore
from ferrex.rules.predicates import normalize_predicate
from ferrex.rules.visibility import in_scope, scope_of
from journal import (
    Access,
    EntitiesDiffer,
    EntitiesMerged,
    EntityAliasAdded,
    EntityCreated,
    EntitySplit,
    Event,
    FactsDiffer,
    FactsPossiblyConflicting,
    KeptEntity,
    MemoriesAccessed,
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesValidated,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
)
from journal.events import AliasMatch as AliasMatchKind
from journal.events import EpisodeRef

from ..settings import StoreSettings
from ..view import View
from . import Decision, NewId
from .shared import body_of

FlagKind = Literal["possible_conflict", "entities_differ", "facts_differ"]
"""The kinds of flag line: a possible conflict between two facts, two entities said to
differ, two facts said to both hold (format 4); the ``type`` of a dump's flag line
(:mod:`ferrex.porting.lines`)."""

POSSIBLE: Final[FlagKind] = "possible_conflict"
"""The ``type`` of a line recording that two dumped facts were kept as possibly conflicting."""

DIFFER: Final[FlagKind] = "entities_differ"
"""The ``type`` of a line recording that two dumped entities were said to differ."""

FACTS_DIFFER: Final[FlagKind] = "facts_differ"
"""The ``type`` of a line recording that two dumped facts were said to both hold (``id``
sorts before ``other_id``)."""


@dataclass(frozen=True)
class Restored:
    """One dump line, checked: the memory as it was, to be journaled as it was."""

    memory_id: str
    valid: ValidStore
    predicate_normalized: str | None
    version: int | None
    t_invalid: datetime | None
    superseded_by: str | None
    last_validated: datetime | None
    last_accessed: datetime | None
    access_count: int
    expires_at: datetime | None = None
    """Its lifecycle marks are ``valid.importance`` and ``valid.pinned``, and this."""
    multi_valued: bool = False
    episode: EpisodeRef | None = None
    entity_ids: tuple[str, ...] = ()
    """The dumped ids of its entities (a dump's entity lines say what each is); empty in a
    dump without entity lines, whose ``entities`` names are resolved instead."""
    import_key: str | None = None
    """The import line it came from (``ferrex import``), so re-importing that file after a
    restore still stores nothing twice."""
    valid_from_given: bool = True
    """Whether ``valid.t_valid`` is a start the memory was stored with (see the module
    docstring)."""
    created_at: datetime | None = None
    """When the home it was dumped from learned it (restored as ``learned_at``)."""


@dataclass(frozen=True)
class RestoredAlias:
    alias: str
    normalized: str
    match: AliasMatchKind
    score: float
    agent_id: str | None


@dataclass(frozen=True)
class RestoredEntity:
    """One entity line, checked: the entity as it was, with its spellings and scope."""

    entity_id: str
    namespace: str | None
    name: str
    normalized: str
    kind: str | None
    agent_id: str | None
    aliases: tuple[RestoredAlias, ...]
    merged_into: str | None = None
    """The dumped entity it was merged into (restored as ``entities.merged``)."""
    kept_for: tuple[str, ...] = ()
    """The agents a cascading forget kept it for (restored as that forget's ``kept_entities``,
    a ``memories.forgotten`` of no memory)."""


@dataclass(frozen=True)
class RestoredFold:
    """One consolidation line, checked: ``memory_ids`` were folded into ``summary_id``."""

    summary_id: str
    namespace: str
    memory_ids: tuple[str, ...]
    at: datetime


@dataclass(frozen=True)
class RestoredFlag:
    """One flag line, checked: a possible conflict between two facts (``kind`` POSSIBLE:
    ``first``/``other`` are memories), two facts said to both hold (FACTS_DIFFER), or two
    entities said to differ (DIFFER)."""

    kind: FlagKind
    namespace: str
    first: str
    other: str
    entity_id: str = ""
    other_entity_id: str = ""
    reason: str = ""
    score: float = 1.0


@dataclass(frozen=True)
class Restore:
    status: Literal["stored", "skipped"]
    id: str
    position: int | None = None
    """The record that restored it; None when skipped (the id exists)."""
    warnings: tuple[str, ...] = ()


Item = Restored | RestoredEntity | RestoredFlag | RestoredFold
"""One checked line of a dump."""


def decide_restore(
    item: Restored,
    view: View,
    *,
    new_id: NewId,
    settings: StoreSettings,
    entities: Mapping[str, RestoredEntity] | None = None,
    folded_into: str | None = None,
) -> Decision[Restore]:
    """The events that journal one dumped memory as it was; skipped when its id exists.

    ``entities``: the dump's entity lines by id, so a memory links to the entity its dump
    named (restored by :func:`decide_restored_entity` before it) or to the one that entity merged
    into. ``folded_into``: the summary a consolidation line of the dump folds it into (its
    ``memories.consolidated``, journaled by :func:`decide_fold`, supersedes it)."""
    if view.memory(item.memory_id) is not None:
        return Decision((), Restore("skipped", item.memory_id))
    events = _events(item, view, new_id, settings, entities or {})
    if folded_into is not None and item.superseded_by == folded_into:
        events = [e for e in events if not isinstance(e, MemorySuperseded)]
    return Decision(tuple(events), Restore("stored", item.memory_id))


def decide_flag(item: RestoredFlag, view: View, fresh: set[str]) -> Decision[Restore]:
    """A dumped possible conflict between two facts, two facts said to both hold, or a
    difference between two entities, journaled as its event when this restore journaled one
    of the two and the home holds both; skipped otherwise."""
    if item.kind == FACTS_DIFFER:
        there = view.memory(item.first) is not None and view.memory(item.other) is not None
        event: Event = FactsDiffer(memory_id=item.first, other_id=item.other,
                                   namespace=item.namespace)  # fmt: skip
    elif item.kind == POSSIBLE:
        there = view.memory(item.first) is not None and view.memory(item.other) is not None
        event = FactsPossiblyConflicting(
            memory_id=item.first, namespace=item.namespace, others=(item.other,),
            entity_id=item.entity_id, other_entity_id=item.other_entity_id,
            reason=item.reason, score=item.score,
        )  # fmt: skip
    else:
        # Either may have been merged since (a split-off entity merged into a third): the
        # difference stands in the home all the same, so it is restored.
        there = view.has_entity(item.first) and view.has_entity(item.other)
        event = EntitiesDiffer(entity_id=item.first, other_id=item.other, namespace=item.namespace)
    if not there or not ({item.first, item.other} & fresh):
        return Decision((), Restore("skipped", item.first))
    return Decision((event,), Restore("stored", item.first))


def decide_fold(
    item: RestoredFold, view: View, fresh: set[str], memories: Mapping[str, Restored]
) -> Decision[Restore]:
    """A dumped consolidation journaled as its ``memories.consolidated``, when this restore
    journaled the summary or a source and the home holds the summary and its sources (so
    ``consolidate --undo`` and a forgotten source's refold work on the restored home);
    skipped otherwise. A source the dump shows superseded by something else since is
    superseded so again after it."""
    there = tuple(m for m in item.memory_ids if view.memory(m) is not None)
    mine = {item.summary_id, *item.memory_ids} & fresh
    if not mine or view.memory(item.summary_id) is None or not there:
        return Decision((), Restore("skipped", item.summary_id))
    events: list[Event] = [
        MemoriesConsolidated(
            summary_id=item.summary_id, namespace=item.namespace, memory_ids=there, at=item.at
        )
    ]
    for memory_id in there:
        dumped = memories.get(memory_id)
        if dumped is None or dumped.superseded_by == item.summary_id:
            continue
        if dumped.t_invalid is not None:
            events.append(
                MemorySuperseded(memory_id=memory_id, namespace=item.namespace,
                                 t_invalid=dumped.t_invalid, superseded_by=dumped.superseded_by)
            )  # fmt: skip
    return Decision(tuple(events), Restore("stored", item.summary_id))


def decide_restored_entity(
    item: RestoredEntity,
    view: View,
    *,
    settings: StoreSettings,
    entities: Mapping[str, RestoredEntity] | None = None,
    split_ids: Collection[str] | None = None,
) -> Decision[Restore]:
    """The events that journal one dumped entity as it was, with its id, scope and spellings,
    and, for one the dump shows merged, its ``entities.merged`` into the entity that took it
    (``entities``: the dump's entity lines by id; the one it merged into comes first;
    ``split_ids``: their :func:`split_offs`, when the caller has it: a whole dump's restore
    finds them once).

    Skipped when the home already holds that id, or an entity of that namespace and scope
    with that normalized spelling (then the dumped entity merges into it); either way the
    spellings it lacks are added."""
    namespace = item.namespace or settings.default_namespace
    dumped = entities or {}
    target = _entity_target(item, namespace, view, dumped)
    if target is None and view.has_entity(item.entity_id):
        target = item.entity_id  # held already: merged, or left with no spelling by a split
    known = {(s.entity_id, s.normalized) for s in view.spellings(namespace)}
    events: list[Event] = []
    if target is None:
        target = item.entity_id
        split = _split_off(
            item, namespace, view, dumped, split_offs(dumped) if split_ids is None else split_ids
        )
        if split is not None:
            events.append(split)
            known = {(target, item.normalized)}  # the spelling the split gives it
        else:
            events.append(
                EntityCreated(
                    entity_id=target,
                    namespace=namespace,
                    name=item.name,
                    normalized=item.normalized,
                    kind=item.kind,
                    agent_id=item.agent_id,
                )
            )
            known = set()  # every dumped spelling is journaled, even one replacing the name's
    for alias in item.aliases:
        if (target, alias.normalized) in known:
            continue
        known.add((target, alias.normalized))
        events.append(
            EntityAliasAdded(
                entity_id=target,
                namespace=namespace,
                alias=alias.alias,
                normalized=alias.normalized,
                match=alias.match,
                score=alias.score,
                agent_id=alias.agent_id,
            )
        )
    created = bool(events) and isinstance(events[0], EntityCreated | EntitySplit)
    into = _merged_into(item, namespace, view, dumped)
    if created and into is not None and into != target:
        events.append(EntitiesMerged(entity_id=target, into=into, namespace=namespace))
    if created and item.kept_for:
        # Who still sees it: the one event that says so is a cascading forget's.
        events.append(
            MemoriesForgotten(memory_ids=(), namespace=namespace, reason="import",
                              kept_entities=(KeptEntity(target, item.kept_for),))
        )  # fmt: skip
    return Decision(tuple(events), Restore("stored" if created else "skipped", item.entity_id))


def split_offs(entities: Mapping[str, RestoredEntity]) -> frozenset[str]:
    """The dumped entities that look split off a merged one: not merged themselves, no kind,
    their name spelled by the operator (what ``entity.split`` makes), and the dump holds a
    merged entity of that spelling and scope (which lost it to the split). One pass over the
    dump's entities, whatever their number."""
    merged = {
        (e.namespace, e.normalized, e.agent_id)
        for e in entities.values()
        if e.merged_into is not None
    }
    return frozenset(
        e.entity_id
        for e in entities.values()
        if e.merged_into is None
        and e.kind is None
        and (e.namespace, e.normalized, e.agent_id) in merged
        and RestoredAlias(e.name, e.normalized, "operator", 1.0, e.agent_id) in e.aliases
    )


def _split_off(
    item: RestoredEntity,
    namespace: str,
    view: View,
    entities: Mapping[str, RestoredEntity],
    split: Collection[str],
) -> EntitySplit | None:
    """The ``entity.split`` that made ``item`` (its history, journaled again), when the home
    holds its spelling under a dumped entity merged into another: the merged entity loses the
    spelling, as it did in the dumped home, instead of keeping one the dump says it lost.
    None when the dump does not show such a split (the entity is then created)."""
    if item.entity_id not in split:
        return None
    for s in view.spellings(namespace):
        if (s.normalized, s.agent_id) != (item.normalized, item.agent_id):
            continue
        merged = entities.get(s.recorded_under or "")
        if merged is not None and merged.merged_into is not None:
            return EntitySplit(
                entity_id=s.entity_id, new_entity_id=item.entity_id, namespace=namespace,
                name=item.name, normalized=item.normalized, entity_agent_id=item.agent_id,
                spelling_entity_id=s.recorded_under,
            )  # fmt: skip
    return None


def _merged_into(
    item: RestoredEntity, namespace: str, view: View, entities: Mapping[str, RestoredEntity]
) -> str | None:
    """The home's entity a dumped merged entity goes into: the one the dumped entity it
    merged into became, or that id when the home holds it; None when not merged (or the
    entity it merged into is in neither)."""
    if item.merged_into is None:
        return None
    dumped = entities.get(item.merged_into)
    target = _entity_target(dumped, namespace, view, entities) if dumped is not None else None
    if target is None and any(s.entity_id == item.merged_into for s in view.spellings(namespace)):
        target = item.merged_into
    return target


def _entity_target(
    item: RestoredEntity, namespace: str, view: View, dumped: Mapping[str, RestoredEntity]
) -> str | None:
    """The entity of the home a dumped entity is (its id, or the same spelling in the same
    scope), or None when it is new. A spelling of another of the dump's own entities is no
    match: the dump says they are two (an entity merged, then its name split off again into
    a new one, holds no spelling of its name; its line comes after the new one's)."""
    spellings = view.spellings(namespace)
    if any(s.entity_id == item.entity_id for s in spellings):
        return item.entity_id
    for spelling in spellings:
        if spelling.normalized != item.normalized or spelling.agent_id != item.agent_id:
            continue
        if any(
            other in dumped and other != item.entity_id
            for other in (spelling.entity_id, spelling.recorded_under)
        ):
            continue
        return spelling.entity_id
    return None


def _linked(
    item: Restored, namespace: str, view: View, entities: Mapping[str, RestoredEntity]
) -> tuple[str, ...] | None:
    """The home's entities for a memory's dumped entity ids; None when one of them is
    neither in the dump nor in the home (then its names are resolved instead)."""
    if not item.entity_ids:
        return None
    known = {s.entity_id for s in view.spellings(namespace)}
    linked: list[str] = []
    for entity_id in item.entity_ids:
        dumped = entities.get(entity_id)
        target = _entity_target(dumped, namespace, view, entities) if dumped is not None else None
        if target is None and entity_id in known:
            target = entity_id
        if target is None:
            return None
        linked.append(target)
    return tuple(dict.fromkeys(linked))


def _entity(
    namespace: str, scope: str | None, name: str, view: View, new_id: NewId, events: list[Event]
) -> str:
    """The entity of that namespace and scope with that normalized name, else a new one."""
    normalized = normalize_entity(name)
    for spelling in view.spellings(namespace):
        if spelling.normalized == normalized and in_scope(
            scope, spelling.agent_id, spelling.viewers
        ):
            return spelling.entity_id
    for event in events:  # created earlier in this same memory
        if isinstance(event, EntityCreated) and event.normalized == normalized:
            return event.entity_id
    entity_id = new_id("ent")
    events.append(
        EntityCreated(
            entity_id=entity_id,
            namespace=namespace,
            name=name,
            normalized=normalized,
            agent_id=scope,
        )
    )
    return entity_id


def restored_body(item: Restored, predicate_normalized: str | None) -> MemoryBody:
    """The body a stored memory of the same text would get (``body_of``), with the dumped
    normalized predicate and the import line the dumped memory came from."""
    return msgspec.structs.replace(
        body_of(item.valid), predicate_normalized=predicate_normalized, import_key=item.import_key
    )


def _events(
    item: Restored,
    view: View,
    new_id: NewId,
    settings: StoreSettings,
    entities: Mapping[str, RestoredEntity],
) -> list[Event]:
    v = item.valid
    namespace = v.namespace or settings.default_namespace
    assert v.t_valid is not None  # a dump line always has t_valid
    events: list[Event] = []
    visibility = v.visibility or "shared"
    scope = scope_of(v.agent_id, visibility)
    entity_ids = _linked(item, namespace, view, entities)
    if entity_ids is None:
        entity_ids = tuple(
            dict.fromkeys(_entity(namespace, scope, n, view, new_id, events) for n in v.entities)
        )
    predicate = item.predicate_normalized if v.predicate is not None else None
    if v.predicate is not None and predicate is None:
        predicate = normalize_predicate(v.predicate, settings.synonyms_for(namespace))
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
            visibility=visibility,
            body=restored_body(item, predicate),
            multi_valued=item.multi_valued,
            episode=item.episode,
            valid_from_given=item.valid_from_given,
            learned_at=item.created_at,
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
    if v.importance != DEFAULT_IMPORTANCE or v.pinned or item.expires_at is not None:
        events.append(
            MemoryMarked(
                memory_id=item.memory_id,
                namespace=namespace,
                importance=v.importance,
                pinned=v.pinned,
                expires_at=item.expires_at,
            )
        )
    if item.access_count and item.last_accessed is not None:
        events.append(
            MemoriesAccessed(
                accesses=(Access(item.memory_id, item.last_accessed, item.access_count),)
            )
        )
    return events
