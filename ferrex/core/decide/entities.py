"""Entities: the names a store gives, resolved, and the corrections of entity resolution.

A store's names (:func:`name_entities`) are resolved against the spellings the memory's
scope may use (shared spellings, and the agent's own for its private memory; see
:mod:`ferrex.rules.visibility`) by :func:`ferrex.rules.entities.resolve_entity`; a new name
makes a new entity, a fuzzy or embedding match records the new spelling as an alias. Both
carry the scope. A fact's **subject** is resolved first, the same way but by
:func:`ferrex.rules.subjects.resolve_subject` (:func:`_resolve_subject`), and is the first
of the memory's entities.

:func:`decide_entity` is an operator's or agent's correction: merge two entities, split a
wrongly merged spelling off one, or say two are different things."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from ferrex.errors import NotFound, UsageError
from ferrex.rules.entities import Candidate, Resolution, normalize_entity, resolve_entity
from ferrex.rules.kinds import one_kind
from ferrex.rules.memory_input import ValidStore
from ferrex.rules.name_lookup import find_entity
from ferrex.rules.slots import same_head, slot_candidate
from ferrex.rules.subjects import Possible, objects_agree, resolve_subject
from ferrex.rules.visibility import in_scope, own_private, sees, sees_scope
from journal import (
    EntitiesDiffer,
    EntitiesMerged,
    EntityAliasAdded,
    EntityCreated,
    EntitySplit,
    Event,
    FactsDiffer,
    FactsPossiblyConflicting,
    Relink,
)
from journal.events import AliasMatch
from projections.documents import subject_key
from projections.readmodel.predicates import is_current
from projections.rows import RELATION, Memory, Spelling

from ..settings import StoreSettings
from ..view import View
from . import Decision, NewId
from .notes import SPLIT_HINT, merge_other_way
from .shared import Measures, Who, answer_doc, cosines_with


class EntityMatch(TypedDict):
    """A :class:`ResolvedEntity` as the store's answer names it."""

    name: str
    entity_id: str
    match: str
    score: float
    matched: str | None


@dataclass(frozen=True)
class ResolvedEntity:
    name: str
    entity_id: str
    match: str
    """exact, normalized, fuzzy, embedding, or new."""
    score: float
    matched: str | None
    """The known spelling it matched, if any."""

    def as_dict(self) -> EntityMatch:
        return {"name": self.name, "entity_id": self.entity_id, "match": self.match,
                "score": self.score, "matched": self.matched}  # fmt: skip


def _name_scores(measures: Measures) -> Callable[[str, Sequence[Candidate]], list[float]]:
    """The entity rules' embedding tier, answered by ``measures``."""
    return lambda name, candidates: cosines_with(measures, name, [c.name for c in candidates])


def scoped_candidates(view: View, who: Who) -> list[Candidate]:
    scope = who.scope  # once: a namespace may hold tens of thousands of spellings
    return [
        Candidate(s.entity_id, s.alias, s.normalized)
        for s in view.spellings(who.namespace)
        if in_scope(scope, s.agent_id, s.viewers)
    ]


@dataclass(frozen=True)
class Subject:
    """A fact's subject as resolved: its entity, the normalized spellings of that entity
    the store may use (the subject keys its facts are stored under), and the entities it is
    possibly the same as."""

    entity: ResolvedEntity | None
    keys: tuple[str, ...]
    possible: tuple[Possible, ...] = ()
    related: tuple[str, ...] = ()


def _subject_keys(view: View, who: Who, name: str, entity_id: str | None) -> tuple[str, ...]:
    keys = {subject_key(name)}
    if entity_id is not None:
        scope = who.scope
        keys |= {
            s.normalized
            for s in view.spellings(who.namespace)
            if s.entity_id == entity_id and in_scope(scope, s.agent_id, s.viewers)
        }
    return tuple(sorted(k for k in keys if k))


@dataclass(frozen=True)
class Named:
    """The entities a store names, resolved (a fact's subject first), and the events that
    make the new ones or record new spellings as aliases."""

    entities: tuple[ResolvedEntity, ...]
    subject: Subject
    events: tuple[Event, ...]


def name_entities(
    valid: ValidStore,
    view: View,
    who: Who,
    measures: Measures,
    settings: StoreSettings,
    new_id: NewId,
) -> Named:
    """Resolve a fact's subject, then every name of ``entities``; a later name is compared
    with the spellings the earlier ones added too."""
    known = scoped_candidates(view, who)
    events: list[Event] = []
    subject = Subject(None, ())
    if valid.type == "semantic" and valid.subject is not None:
        subject, made = _resolve_subject(valid.subject, view, who, known, measures, settings,
                                         new_id)  # fmt: skip
        events += [made] if made is not None else []
    entities = [subject.entity] if subject.entity is not None else []
    for name in valid.entities:
        candidates = [*known, *_spelled(events)]
        found = resolve_entity(
            name,
            candidates,
            fuzzy_threshold=settings.entity_fuzzy,
            embedding_threshold=settings.entity_embedding,
            embedding_scores=_name_scores(measures),
        )
        normalized = normalize_entity(name)
        spelled = found.kind not in ("fuzzy", "embedding") or any(
            c.normalized == normalized for c in candidates
        )
        entity, made = _entity_or_spelling(
            name, found, None if spelled else _alias_match(found), who, new_id
        )
        events += [made] if made is not None else []
        # A name given twice (the subject again among the entities) is one entity, named once.
        if not any(e.entity_id == entity.entity_id and normalize_entity(e.name) == normalized
                   for e in entities):  # fmt: skip
            entities.append(entity)
    return Named(tuple(entities), subject, tuple(events))


def _spelled(events: Sequence[Event]) -> list[Candidate]:
    """The entities and spellings ``events`` add, as candidates for a later name."""
    return [
        Candidate(e.entity_id, e.name if isinstance(e, EntityCreated) else e.alias, e.normalized)
        for e in events
        if isinstance(e, EntityCreated | EntityAliasAdded)
    ]


def _entity_or_spelling(
    name: str, found: Resolution, alias: AliasMatch | None, who: Who, new_id: NewId
) -> tuple[ResolvedEntity, Event | None]:
    """The entity ``name`` resolved to, with the event it takes: a name that resolved to
    nothing makes a new entity; one that resolved with ``alias`` (how it matched) records
    the spelling as an alias of its entity; a spelling already known takes none. Both events
    carry the store's scope."""
    normalized = normalize_entity(name)
    if found.entity_id is None:
        entity_id = new_id("ent")
        made = EntityCreated(entity_id=entity_id, namespace=who.namespace, name=name,
                             normalized=normalized, agent_id=who.scope)  # fmt: skip
        return ResolvedEntity(name, entity_id, "new", 1.0, None), made
    entity = ResolvedEntity(name, found.entity_id, found.kind, found.score, found.matched)
    if alias is None:
        return entity, None
    added = EntityAliasAdded(entity_id=found.entity_id, namespace=who.namespace, alias=name,
                             normalized=normalized, match=alias, score=round(found.score, 6),
                             agent_id=who.scope)  # fmt: skip
    return entity, added


def _resolve_subject(
    name: str,
    view: View,
    who: Who,
    known: Sequence[Candidate],
    measures: Measures,
    settings: StoreSettings,
    new_id: NewId,
) -> tuple[Subject, Event | None]:
    """A fact's subject through entity resolution (:func:`ferrex.rules.subjects.
    resolve_subject`), in the store's scope: the entity it names, made or given the new
    spelling as an alias, like a name in ``entities``."""
    found = resolve_subject(
        name,
        known,
        abbreviations=settings.abbreviations_for(who.namespace),
        fuzzy_threshold=settings.entity_fuzzy,
        embedding_threshold=settings.entity_embedding,
        embedding_scores=_name_scores(measures),
    )
    res = found.resolution
    normalized = normalize_entity(name)
    possible = tuple(p for p in found.possible if res.entity_id is None or
                     not view.entities_differ(res.entity_id, p.entity_id))  # fmt: skip
    alias: AliasMatch | None = None
    if not any(c.normalized == normalized and c.entity_id == res.entity_id for c in known):
        alias = "abbreviation" if res.kind in ("abbreviation", "normalized") else _alias_match(res)
    related = tuple(r for r in found.related if res.entity_id is None or
                    not view.entities_differ(res.entity_id, r))  # fmt: skip
    entity, made = _entity_or_spelling(name, res, alias, who, new_id)
    keys = _subject_keys(view, who, name, res.entity_id)
    possible += _own_private_possible(name, view, who, settings, res.entity_id, possible)
    return Subject(entity, keys, possible, related), made


def _own_private_possible(
    name: str,
    view: View,
    who: Who,
    settings: StoreSettings,
    resolved: str | None,
    possible: Sequence[Possible],
) -> tuple[Possible, ...]:
    """For a shared store of an agent: the entities of its own private spellings the subject
    names, or may name (``nightjar auth-gw`` shared after ``Nightjar auth gateway`` private).
    A shared store never resolves to them (its entity and spellings are everyone's), but
    its facts are weighed against theirs: two current answers the agent sees get a flag that
    only it sees, since the flag names its private fact."""
    if who.scope is not None or who.agent_id is None:
        return ()
    own = [Candidate(s.entity_id, s.alias, s.normalized)
           for s in view.spellings(who.namespace)
           if own_private(who.agent_id, s.agent_id, s.viewers)]  # fmt: skip
    if not own:
        return ()
    found = resolve_subject(name, own, abbreviations=settings.abbreviations_for(who.namespace),
                            fuzzy_threshold=settings.entity_fuzzy)  # fmt: skip
    named = found.resolution
    extra = [*([Possible(named.entity_id, "name", named.score)]
               if named.entity_id is not None else []), *found.possible]  # fmt: skip
    seen = {resolved, *(p.entity_id for p in possible)}
    out: list[Possible] = []
    for p in extra:
        if p.entity_id in seen or (resolved is not None
                                   and view.entities_differ(resolved, p.entity_id)):  # fmt: skip
            continue
        seen.add(p.entity_id)
        out.append(p)
    return tuple(out)


def _alias_match(found: Resolution) -> Literal["fuzzy", "embedding"]:
    return "embedding" if found.kind == "embedding" else "fuzzy"


def _relinked(memories: Sequence[Memory], old: str, new: str) -> tuple[Relink, ...]:
    """Each memory's entity links with ``old`` replaced by ``new``."""
    return tuple(
        Relink(m.memory_id, tuple(dict.fromkeys(new if e == old else e for e in m.entity_ids)))
        for m in sorted(memories, key=lambda m: m.memory_id)
    )


def _private(spellings: Sequence[Spelling], entity_id: str) -> bool:
    """Whether every spelling of the entity is one agent's own (a private entity)."""
    return all(s.agent_id is not None for s in spellings if s.entity_id == entity_id)


EntityAction = Literal["merge", "split", "differ"]


@dataclass(frozen=True)
class EntityResult:
    action: str
    entity: str
    """The entity acted on (for merge: the one kept), by id."""
    other: str
    """merge: the entity merged into ``entity``; differ: the other entity; split: the new
    entity the spelling became."""
    namespace: str
    position: int | None = None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return answer_doc(self)


def decide_entity(
    action: EntityAction,
    first: str,
    second: str,
    view: View,
    *,
    namespace: str,
    caller: str | None,
    new_id: NewId,
) -> Decision[EntityResult]:
    """An operator's or agent's correction of entity resolution, as one event:

    - ``merge``: ``second`` is the entity ``first`` (its spellings and links join it);
    - ``split``: the spelling ``second`` of entity ``first`` was a wrong merge: it becomes an
      entity of its own, with the facts whose subject it spells, and the two differ;
    - ``differ``: ``first`` and ``second`` are different things (no possible conflicts
      between their facts).

    Names are resolved through the spellings the caller sees (another agent's private
    spelling is unknown, exactly like a name nobody used); a name that resolves nowhere is
    ``not_found``, and nothing is written."""
    if action not in ("merge", "split", "differ"):
        raise UsageError(
            f"unknown entity action {action!r}", hint="the actions are merge, split and differ"
        )
    spellings = [s for s in view.spellings(namespace) if sees_scope(caller, s.agent_id, s.viewers)]
    kept = _entity_named(first, spellings, namespace)
    if action == "split":
        return _split(kept, first, second, spellings, view, namespace, caller, new_id)
    other = _entity_named(second, spellings, namespace)
    if other == kept:
        raise UsageError(
            f"{first!r} and {second!r} are already one entity",
            hint=SPLIT_HINT if action == "differ" else "nothing to merge",
        )
    event: Event
    if action == "merge":
        if _private(spellings, kept) and not _private(spellings, other):
            # Every caller would lose the shared entity into one only its agent sees.
            raise UsageError(
                f"cannot merge the shared entity {second!r} into the private entity {first!r}",
                hint=merge_other_way(second, first),
            )
        named = [m for m in (view.memory(i) for i in view.linked(other)) if m is not None]
        event = EntitiesMerged(
            entity_id=other,
            into=kept,
            namespace=namespace,
            relinked=_relinked(named, other, kept),
            agent_id=caller,
        )
        flags = _merged_slots(view, namespace, caller, kept, other)
        return Decision((event, *flags), EntityResult(action, kept, other, namespace))
    else:
        event = EntitiesDiffer(entity_id=kept, other_id=other, namespace=namespace,
                               agent_id=caller)  # fmt: skip
    return Decision((event,), EntityResult(action, kept, other, namespace))


def _merged_slots(
    view: View, namespace: str, caller: str | None, kept: str, other: str
) -> list[FactsPossiblyConflicting]:
    """Facts of two entities just merged that may fill one slot under different predicates
    (same predicates are a contradiction proper, which readers find): flagged, by the
    structural evidence alone (:func:`ferrex.rules.slot_outcomes.slot_match` without a phrase
    cosine: one object kind, or one head word). Only facts the caller sees, and never a
    pair already said to both hold (``facts.differ``)."""

    def current(entity_id: str) -> list[Memory]:
        found = (view.memory(i) for i in view.linked(entity_id))
        return [
            m for m in found
            if m is not None and m.type == "semantic" and is_current(m)
            and not m.multi_valued and m.object and m.predicate_normalized
            and m.entity_ids[:1] == (entity_id,) and sees(caller, m.agent_id, m.visibility)
        ]  # fmt: skip

    ours, theirs = current(kept), current(other)
    flags: list[FactsPossiblyConflicting] = []
    for m in ours:
        pred, obj = str(m.predicate_normalized), str(m.object)
        others = tuple(
            o.memory_id
            for o in theirs
            if slot_candidate(pred, obj, str(o.predicate_normalized), str(o.object))
            and (one_kind(obj, str(o.object)) or same_head(pred, str(o.predicate_normalized)))
            and not objects_agree(obj, str(o.object))
            and not view.facts_differ(m.memory_id, o.memory_id)
        )
        if others:
            flags.append(FactsPossiblyConflicting(
                memory_id=m.memory_id, namespace=namespace, others=others, entity_id=kept,
                other_entity_id=other, reason=RELATION, score=0.0,
            ))  # fmt: skip
    return flags


def _entity_named(name: str, spellings: Sequence[Spelling], namespace: str) -> str:
    """The entity a caller's ``name`` is, through the spellings it sees, or the entity of
    that id (``ent_...``) when it has one the caller sees; ``not_found``."""
    if any(s.entity_id == name for s in spellings):
        return name
    found = find_entity(name, [Candidate(s.entity_id, s.alias, s.normalized) for s in spellings])
    if found is None:
        raise NotFound(
            f"no entity {name!r} in {namespace}",
            hint="name it as a memory does (a fact's subject, an entity of recall's results, "
            "the ferrex://entity/{name} resource), or by its id; mind --namespace",
            details={"name": name},
        )
    return found


def _split(
    kept: str,
    first: str,
    second: str,
    spellings: Sequence[Spelling],
    view: View,
    namespace: str,
    caller: str | None,
    new_id: NewId,
) -> Decision[EntityResult]:
    """The spelling ``second`` of entity ``kept`` (named ``first``) made an entity of its
    own, with the facts whose subject it spells."""
    normalized = normalize_entity(second)
    spelling = next(
        (s for s in spellings if s.entity_id == kept and s.normalized == normalized), None
    )
    if spelling is None:
        raise NotFound(
            f"{second!r} is not a spelling of the entity {first!r}",
            hint="an entity's spellings are listed by the MCP resource ferrex://entity/NAME "
            "and by GET /api/v1/entities?name=NAME",
            details={"name": second},
        )
    if all(s.normalized == normalized for s in spellings if s.entity_id == kept):
        raise UsageError(
            f"{second!r} is the only spelling of {first!r}: nothing to split",
            hint="split a spelling that was merged into another",
        )
    new_entity = new_id("ent")
    moved = [
        m
        for m in (view.memory(i) for i in view.linked(kept))
        if m is not None and m.type == "semantic" and m.subject_key == normalized
    ]
    event = EntitySplit(
        entity_id=kept,
        new_entity_id=new_entity,
        namespace=namespace,
        name=spelling.alias,
        normalized=normalized,
        entity_agent_id=spelling.agent_id,
        spelling_entity_id=spelling.recorded_under,
        relinked=_relinked(moved, kept, new_entity),
        agent_id=caller,
    )
    return Decision((event, *_told_apart(moved, kept, view, namespace, caller)),
                    EntityResult("split", kept, new_entity, namespace))  # fmt: skip


def _told_apart(
    moved: Sequence[Memory], kept: str, view: View, namespace: str, caller: str | None
) -> list[FactsDiffer]:
    """The flags a split settles: each fact it moves and a fact left on the entity it split
    from (both seen by the caller) were flagged as one subject's, and the split says the two
    subjects differ, so both hold. Flags with the facts of any other subject stay."""
    moved_ids = {m.memory_id for m in moved}
    settled: list[FactsDiffer] = []
    for m in moved:
        for flag in view.flagged_with(m.memory_id):
            other = view.memory(flag.other_id)
            if (other is None or other.memory_id in moved_ids
                    or kept not in other.entity_ids
                    or not sees(caller, m.agent_id, m.visibility)
                    or not sees(caller, other.agent_id, other.visibility)):  # fmt: skip
                continue
            settled.append(FactsDiffer(memory_id=m.memory_id, other_id=other.memory_id,
                                       namespace=namespace, agent_id=caller))  # fmt: skip
    return settled
