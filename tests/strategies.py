"""Hypothesis strategies for journal events, shared by the property tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, get_args

import msgspec
from hypothesis import strategies as st

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
    Fold,
    KeptEntity,
    MemoriesAccessed,
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesUnfolded,
    MemoriesValidated,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
    Relink,
)
from journal.events import AliasMatch, EpisodeRef

ids = st.text(alphabet="0123456789abcdefghjkmnpqrstvwxyz", min_size=1, max_size=26)
texts = st.text(max_size=200)
names = st.text(min_size=1, max_size=40)
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda m: timezone(timedelta(minutes=m))
)
times = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=offsets
)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | texts
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
bodies = st.builds(
    MemoryBody,
    content=st.none() | texts,
    subject=st.none() | texts,
    predicate=st.none() | texts,
    object=st.none() | texts,
    predicate_normalized=st.none() | texts,
    procedure_name=st.none() | texts,
    conditions=st.lists(texts, max_size=3).map(tuple),
    steps=st.lists(texts, max_size=5).map(tuple),
    source=st.none() | texts,
    context=st.none() | st.dictionaries(texts, json_values, max_size=4),
    import_key=st.none() | texts,
)
confidence = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)

memory_stored = st.builds(
    MemoryStored,
    memory_id=ids,
    namespace=names,
    memory_type=st.sampled_from(["episodic", "semantic", "procedural"]),
    t_valid=times,
    confidence=confidence,
    entity_ids=st.lists(ids, max_size=4).map(tuple),
    supersedes=st.none() | ids,
    procedure_version=st.none() | st.integers(1, 10_000),
    agent_id=st.none() | names,
    visibility=st.sampled_from(["private", "shared"]),
    body=st.none() | bodies,
    multi_valued=st.booleans(),
    episode=st.none() | st.builds(EpisodeRef, id=ids, index=st.integers(0, 10_000)),
    valid_from_given=st.sampled_from([None, False, True]),
    learned_at=st.none() | times,
)
relinks = st.lists(
    st.builds(Relink, memory_id=ids, entity_ids=st.lists(ids, max_size=3).map(tuple)),
    max_size=3,
).map(tuple)
events: st.SearchStrategy[Event] = st.one_of(
    memory_stored,
    st.builds(
        MemorySuperseded,
        memory_id=ids,
        namespace=names,
        t_invalid=times,
        superseded_by=st.none() | ids,
        reason=st.sampled_from(["explicit", "conflict", "version"]),
    ),
    st.builds(
        MemoriesForgotten,
        memory_ids=st.lists(ids, min_size=1, max_size=5).map(tuple),
        namespace=names,
        reason=st.sampled_from(["request", "eviction", "cascade", "import", "expired"]),
        dropped_entity_ids=st.lists(ids, max_size=3).map(tuple),
        kept_entities=st.lists(
            st.builds(KeptEntity, entity_id=ids, agent_ids=st.lists(ids, max_size=2).map(tuple)),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(
        MemoriesValidated,
        memory_ids=st.lists(ids, min_size=1, max_size=5).map(tuple),
        at=times,
        source=st.sampled_from(["agent", "citation", "supersede", "duplicate", "operator"]),
    ),
    st.builds(
        MemoriesAccessed,
        accesses=st.lists(
            st.builds(Access, memory_id=ids, last_at=times, count=st.integers(1, 1000)),
            min_size=1,
            max_size=5,
        ).map(tuple),
    ),
    st.builds(
        EntityCreated,
        entity_id=ids,
        namespace=names,
        name=names,
        normalized=names,
        agent_id=st.none() | names,
    ),
    st.builds(
        EntityAliasAdded,
        entity_id=ids,
        namespace=names,
        alias=names,
        normalized=names,
        match=st.sampled_from(get_args(AliasMatch)),
        score=confidence,
        agent_id=st.none() | names,
    ),
    st.builds(
        MemoryMarked,
        memory_id=ids,
        namespace=names,
        importance=confidence,
        pinned=st.booleans(),
        expires_at=st.none() | times,
    ),
    st.builds(
        FactsPossiblyConflicting,
        memory_id=ids,
        namespace=names,
        others=st.lists(ids, min_size=1, max_size=3).map(tuple),
        entity_id=ids,
        other_entity_id=ids,
        reason=st.sampled_from(["head word", "embedding", "relation"]),
        score=confidence,
    ),
    st.builds(EntitiesMerged, entity_id=ids, into=ids, namespace=names, agent_id=st.none() | names),
    st.builds(
        EntitySplit,
        entity_id=ids,
        new_entity_id=ids,
        namespace=names,
        name=names,
        normalized=names,
        entity_agent_id=st.none() | names,
        spelling_entity_id=st.none() | ids,
        relinked=relinks,
        agent_id=st.none() | names,
    ),
    st.builds(
        EntitiesDiffer, entity_id=ids, other_id=ids, namespace=names, agent_id=st.none() | names
    ),
    st.builds(
        MemoriesConsolidated,
        summary_id=ids,
        namespace=names,
        memory_ids=st.lists(ids, min_size=1, max_size=4).map(tuple),
        at=times,
        folds=st.lists(
            st.builds(Fold, memory_id=ids, start=st.integers(0, 2**31), end=st.integers(0, 2**31)),
            max_size=3,
        ).map(tuple),
    ),
    st.builds(
        MemoriesUnfolded, summary_id=ids, namespace=names, memory_ids=st.lists(ids).map(tuple)
    ),
    st.builds(
        FactsDiffer, memory_id=ids, other_id=ids, namespace=names, agent_id=st.none() | names
    ),
)
commands = st.lists(events, min_size=1, max_size=4)

T0 = datetime(2026, 1, 1, tzinfo=UTC)

RECORDED = T0 + timedelta(days=30)
"""When a home of :func:`home_histories` was written (its journal's clock): an undated store
was learned seconds before, so a restore, long after, records it at another time."""


def stored(i: int, text: str | None = None) -> MemoryStored:
    """A plain episodic memory, for tests that need many simple records."""
    return MemoryStored(
        memory_id=f"m{i}",
        namespace="default",
        memory_type="episodic",
        t_valid=T0,
        body=MemoryBody(content=text if text is not None else f"memory number {i}"),
    )


@dataclass
class Made:
    """What earlier commands made, for :func:`plausible` over commands in parts."""

    entities: dict[str, str | None] = field(default_factory=dict)  # entity → its scope
    memories: dict[str, str] = field(default_factory=dict)  # memory id ever stored → namespace
    superseded_by: dict[str, str] = field(default_factory=dict)  # memory → what replaced it
    entity_ids: set[str] = field(default_factory=set)  # every entity id ever made
    # (namespace, normalized spelling) → the entity it was recorded under; merges keep it
    spellings: dict[tuple[str, str], str] = field(default_factory=dict)
    merged_into: dict[str, str] = field(default_factory=dict)  # entity merged away → into


def plausible(commands: list[list[Event]], made: Made | None = None) -> list[list[Event]]:
    """The commands without the events no decision makes: a memory id stored again, or
    superseded or marked in another namespace than its own; an
    entity id made twice (created, or split onto, even after it was merged away or dropped:
    decisions draw fresh ids), a spelling, merge or split of an entity not there (or merged
    away), a merge into itself, a split of a spelling the entity does not have (and a split's
    ``spelling_entity_id`` set as decide sets it: the entity a merged-in spelling was recorded
    under), a cascade keeping a
    private entity for others; an unfold giving back a memory its summary no longer holds
    (decide's ``_still_folded``: the read model keeps it replaced, the vectors would not)."""
    made = Made() if made is None else made
    live = made.entities
    kept: list[list[Event]] = []
    for command in commands:
        out: list[Event] = []
        for event in command:
            if isinstance(event, MemoryStored):
                if event.memory_id in made.memories:
                    continue
                made.memories[event.memory_id] = event.namespace
            elif (
                isinstance(event, MemorySuperseded | MemoryMarked)
                and made.memories.get(event.memory_id, event.namespace) != event.namespace
            ):
                continue  # a decision names the memory's own namespace
            match event:
                case EntityCreated() if event.entity_id in made.entity_ids:
                    continue
                case EntityCreated():
                    live[event.entity_id] = event.agent_id
                    made.entity_ids.add(event.entity_id)
                    made.spellings[(event.namespace, event.normalized)] = event.entity_id
                case EntityAliasAdded() if event.entity_id not in live:
                    continue
                case EntityAliasAdded():
                    made.spellings[(event.namespace, event.normalized)] = event.entity_id
                case EntitiesMerged() if (
                    event.entity_id == event.into
                    or event.entity_id not in live
                    or event.into not in live
                ):
                    continue
                case EntitiesMerged():
                    del live[event.entity_id]
                    made.merged_into[event.entity_id] = event.into
                case EntitySplit() if (
                    event.entity_id not in live
                    or event.new_entity_id in made.entity_ids
                    or _owner(made, event.namespace, event.normalized) != event.entity_id
                ):
                    continue  # decide splits off only a spelling the entity has
                case EntitySplit():
                    # As decide writes it: the entity the spelling was recorded under, when
                    # that is one merged into the entity split (its point is keyed so).
                    recorded = made.spellings[(event.namespace, event.normalized)]
                    event = msgspec.structs.replace(
                        event,
                        spelling_entity_id=None if recorded == event.entity_id else recorded,
                    )
                    made.spellings[(event.namespace, event.normalized)] = event.new_entity_id
                    live[event.new_entity_id] = event.entity_agent_id
                    made.entity_ids.add(event.new_entity_id)
                case MemoryStored():
                    made.superseded_by.pop(event.memory_id, None)
                case MemorySuperseded() if event.superseded_by is None:
                    made.superseded_by.pop(event.memory_id, None)
                case MemorySuperseded():
                    made.superseded_by[event.memory_id] = event.superseded_by
                case MemoriesConsolidated():
                    made.superseded_by.update(dict.fromkeys(event.memory_ids, event.summary_id))
                case MemoriesUnfolded():
                    back = tuple(
                        m
                        for m in dict.fromkeys(event.memory_ids)
                        if made.superseded_by.get(m) == event.summary_id
                    )
                    for m in back:
                        del made.superseded_by[m]
                    event = msgspec.structs.replace(event, memory_ids=back)
                case MemoriesForgotten():
                    for m in event.memory_ids:
                        made.superseded_by.pop(m, None)
                    shared = tuple(
                        k for k in event.kept_entities if live.get(k.entity_id, "?") is None
                    )
                    event = msgspec.structs.replace(event, kept_entities=shared)
                    for entity_id in event.dropped_entity_ids:
                        live.pop(entity_id, None)
                case _:
                    pass
            out.append(event)
        if out:
            kept.append(out)
    return kept


def _owner(made: Made, namespace: str, normalized: str) -> str | None:
    """The entity a spelling belongs to now: the one it was recorded under, or the entity
    that one was merged into (through every merge); None for a spelling never made."""
    entity = made.spellings.get((namespace, normalized))
    seen: set[str] = set()
    while entity is not None and entity in made.merged_into and entity not in seen:
        seen.add(entity)
        entity = made.merged_into[entity]
    return entity


# -- whole homes: plausible histories a store could have written ------------------------------

SPELLINGS = {
    "payments repository": ("payments repo", "payments-repository"),
    "api server": ("api srv", "API-Server"),
    "tokio": ("tokio runtime",),
    "carol": ("caz",),
    "build cache": ("build-cache",),
}
"""Entity names and other spellings of each (an abbreviation, another form)."""

WORDS = ("deploy", "backup", "disk", "cluster", "rollback", "lake", "museum", "release",
         "pager", "invoice", "replica", "failover")  # fmt: skip

LONG_TEXT = " ".join(
    f"Part {n}: the review covered the failover of the payments database, the replication "
    f"lag on replica {n}, and the alert thresholds the team agreed to change."
    for n in range(16)
)
"""An episodic text longer than the bundled model's window (stored with ``split_long``)."""

ALIAS_MATCHES: tuple[AliasMatch, ...] = get_args(AliasMatch)
"""Every kind of spelling match the catalogue has: a kind it gains is drawn at once."""
SCOPES = ((None, "shared"), ("agent-7", "private"), ("agent-7", "shared"))


@st.composite
def home_histories(draw: st.DrawFn, max_steps: int = 14) -> list[list[Event]]:
    """Commands (lists of events, one record each) such as a home's decisions write: entities
    and their spellings (abbreviations among them), facts (some multi-valued), episodes
    (some derived, some long), procedures, supersedes, validations, recall hits, marks
    (importance, pins, times to live), consolidations and their undoing, merges, forgets,
    possible conflicts (one fact against several), facts said to both hold (a flag cleared),
    entities said to differ. Every memory is one a dump line can describe."""
    memories: dict[str, MemoryStored] = {}
    valid: set[str] = set()
    entities: dict[str, str] = {}  # id → name
    spelled: set[tuple[str, str]] = set()
    folds: dict[str, tuple[str, ...]] = {}  # summary → sources still folded
    merged: set[str] = set()
    flagged: set[tuple[str, str]] = set()  # possible conflicts drawn (fact, other)
    commands: list[list[Event]] = []
    n_ids = 0

    def new_id(prefix: str) -> str:
        nonlocal n_ids
        n_ids += 1
        return f"{prefix}_{n_ids:04d}"

    def when(days: int) -> datetime:
        return T0 + timedelta(days=days, seconds=draw(st.integers(0, 86_399)))

    def start() -> dict[str, Any]:
        """A start given (or, in an old record, not said), or none: ``t_valid`` is then the
        moment the store was learned, seconds before :data:`RECORDED`."""
        if draw(st.booleans()):
            learned = RECORDED - timedelta(seconds=draw(st.integers(1, 50)))
            return {"t_valid": learned, "valid_from_given": False}
        return {"t_valid": when(draw(st.integers(0, 60))),
                "valid_from_given": draw(st.sampled_from([None, True]))}  # fmt: skip

    def links(subject: str | None) -> tuple[str, ...]:
        live = sorted(e for e in entities if e not in merged)
        chosen = draw(st.lists(st.sampled_from(live), max_size=2, unique=True)) if live else []
        by_name = {name: e for e, name in entities.items() if e not in merged}
        first = [by_name[subject]] if subject in by_name else []
        return tuple(dict.fromkeys([*first, *chosen]))

    for _ in range(draw(st.integers(3, max_steps))):
        kinds = ["entity", "episode", "fact", "fact", "procedure"]  # facts: flags need them
        if entities:
            kinds += ["alias"]
        if len([e for e in entities if e not in merged]) >= 2:
            kinds += ["merge", "differ"]
        splittable = sorted((e, a) for e, a in spelled if e not in merged and entities[e] != a)
        if splittable:
            kinds += ["split"]
        if valid:
            kinds += ["supersede", "validate", "access", "mark", "forget"]
        foldable = sorted(
            m for m in valid if memories[m].memory_type == "episodic" and m not in folds
        )
        if len(foldable) >= 2:
            kinds += ["consolidate"]
        if folds:
            kinds += ["unfold"]
        facts = sorted(m for m in memories if memories[m].memory_type == "semantic")
        if len(facts) >= 2:
            kinds += ["conflict", "facts_differ"]
        kind = draw(st.sampled_from(kinds))
        command: list[Event] = []
        if kind == "entity":
            name = draw(st.sampled_from(sorted(SPELLINGS)))
            if name in entities.values():
                continue
            entity_id = new_id("ent")
            entities[entity_id] = name
            command.append(EntityCreated(entity_id=entity_id, namespace="default", name=name,
                                         normalized=name))  # fmt: skip
        elif kind == "alias":
            entity_id = draw(st.sampled_from(sorted(entities)))
            others = SPELLINGS.get(entities[entity_id], ())
            if not others:
                continue  # an entity split off under another spelling
            alias = draw(st.sampled_from(others))
            if any(a == alias for _, a in spelled) or entity_id in merged:
                continue  # a spelling some entity holds resolves to it: never added again
            spelled.add((entity_id, alias))
            command.append(
                EntityAliasAdded(entity_id=entity_id, namespace="default", alias=alias,
                                 normalized=alias.casefold(),
                                 match=draw(st.sampled_from(ALIAS_MATCHES)),
                                 score=draw(st.sampled_from([1.0, 0.93, 0.81])))
            )  # fmt: skip
        elif kind in ("episode", "fact", "procedure"):
            memory_id = new_id("mem")
            agent_id, visibility = draw(st.sampled_from(SCOPES))
            words = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=7)))
            episode = None
            if kind == "episode":
                long = draw(st.booleans()) and not any(
                    m.body is not None and m.body.content == LONG_TEXT for m in memories.values()
                )
                source = draw(st.none() | st.sampled_from(["chat-1", "standup"]))
                if source is None and draw(st.booleans()):
                    episodes = sorted({m.episode.id for m in memories.values() if m.episode})
                    episode = EpisodeRef(memory_id, 0)
                    if episodes and draw(st.booleans()):
                        episode = EpisodeRef(draw(st.sampled_from(episodes)),
                                             draw(st.integers(1, 5)))  # fmt: skip
                key = draw(st.none() | st.just(f"chat conv-1 {n_ids}"))
                body = MemoryBody(content=LONG_TEXT if long else f"The {words} note {n_ids}.",
                                  source=source, import_key=key)  # fmt: skip
                stored_event = MemoryStored(
                    memory_id=memory_id, namespace="default", memory_type="episodic",
                    **start(), entity_ids=links(None),
                    agent_id=agent_id, visibility=visibility, body=body, episode=episode,
                    confidence=draw(st.sampled_from([1.0, 0.7])),
                )  # fmt: skip
            elif kind == "fact":
                subject = draw(st.sampled_from(sorted(SPELLINGS)))
                predicate = draw(st.sampled_from(["owned by", "uses", "deployed to"]))
                stored_event = MemoryStored(
                    memory_id=memory_id, namespace="default", memory_type="semantic",
                    **start(), entity_ids=links(subject),
                    agent_id=agent_id, visibility=visibility,
                    multi_valued=draw(st.booleans()),
                    body=MemoryBody(subject=subject, predicate=predicate, object=words,
                                    predicate_normalized=predicate.replace(" ", "_")),
                )  # fmt: skip
            else:
                steps = tuple(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)))
                stored_event = MemoryStored(
                    memory_id=memory_id, namespace="default", memory_type="procedural",
                    **start(), entity_ids=links(None),
                    agent_id=agent_id, visibility=visibility,
                    procedure_version=draw(st.integers(1, 3)),
                    body=MemoryBody(procedure_name=f"run {words}", steps=steps,
                                    conditions=tuple(draw(st.lists(st.just("on call"),
                                                                   max_size=1)))),
                )  # fmt: skip
            memories[memory_id] = stored_event
            valid.add(memory_id)
            command.append(stored_event)
            if draw(st.booleans()):
                command.append(_marks(draw, memory_id))
        elif kind == "supersede":
            old = draw(st.sampled_from(sorted(valid)))
            others = sorted(set(memories) - {old})
            by = draw(st.none() | st.sampled_from(others)) if others else None
            command.append(MemorySuperseded(memory_id=old, namespace="default",
                                            t_invalid=when(61), superseded_by=by))  # fmt: skip
            valid.discard(old)
        elif kind == "validate":
            chosen = draw(st.lists(st.sampled_from(sorted(valid)), min_size=1, max_size=3))
            command.append(MemoriesValidated(memory_ids=tuple(dict.fromkeys(chosen)),
                                             at=when(62), source="operator"))  # fmt: skip
        elif kind == "access":
            chosen = draw(st.lists(st.sampled_from(sorted(valid)), min_size=1, max_size=3))
            command.append(MemoriesAccessed(accesses=tuple(
                Access(m, when(63), draw(st.integers(1, 4))) for m in dict.fromkeys(chosen)
            )))  # fmt: skip
        elif kind == "mark":
            command.append(_marks(draw, draw(st.sampled_from(sorted(valid)))))
        elif kind == "forget":
            gone = draw(st.sampled_from(sorted(valid)))
            if gone in folds or any(gone in s for s in folds.values()):
                continue  # the writer refolds those (decide_refold); not drawn here
            live = sorted(e for e in entities if e not in merged)
            kept = draw(st.lists(st.sampled_from(live), max_size=1)) if live else []
            command.append(MemoriesForgotten(
                memory_ids=(gone,), namespace="default", reason="cascade",
                kept_entities=tuple(KeptEntity(e, ("agent-7",)) for e in kept),
            ))  # fmt: skip
            valid.discard(gone)
            del memories[gone]
        elif kind == "consolidate":
            sources = tuple(draw(st.lists(st.sampled_from(foldable), min_size=2, max_size=3,
                                          unique=True)))  # fmt: skip
            summary_id = new_id("mem")
            texts = [memories[m].body.content or "" for m in sources]  # type: ignore[union-attr]
            summary = MemoryStored(
                memory_id=summary_id, namespace="default", memory_type="episodic",
                t_valid=min(memories[m].t_valid for m in sources),
                body=MemoryBody(content=" ".join(texts)),
                agent_id=memories[sources[0]].agent_id,
                visibility=memories[sources[0]].visibility,
            )  # fmt: skip
            memories[summary_id] = summary
            command += [summary, MemoriesConsolidated(summary_id=summary_id, namespace="default",
                                                      memory_ids=sources, at=when(64))]  # fmt: skip
            valid.difference_update(sources)
            valid.add(summary_id)
            folds[summary_id] = sources
        elif kind == "unfold":
            summary_id = draw(st.sampled_from(sorted(folds)))
            back = tuple(m for m in folds.pop(summary_id) if m in memories)
            command += [
                MemoriesUnfolded(summary_id=summary_id, namespace="default", memory_ids=back),
                MemoriesForgotten(memory_ids=(summary_id,), namespace="default",
                                  reason="consolidation"),
            ]  # fmt: skip
            valid.update(back)
            valid.discard(summary_id)
            del memories[summary_id]
        elif kind == "merge":
            live = sorted(e for e in entities if e not in merged)
            absorbed, into = draw(st.lists(st.sampled_from(live), min_size=2, max_size=2,
                                           unique=True))  # fmt: skip
            relinked = tuple(
                Relink(m.memory_id, tuple(dict.fromkeys(
                    into if e == absorbed else e for e in m.entity_ids)))
                for m in memories.values() if absorbed in m.entity_ids
            )  # fmt: skip
            command.append(EntitiesMerged(entity_id=absorbed, into=into, namespace="default",
                                          relinked=relinked))  # fmt: skip
            merged.add(absorbed)
            for r in relinked:
                memories[r.memory_id] = msgspec.structs.replace(
                    memories[r.memory_id], entity_ids=r.entity_ids
                )
        elif kind == "split":
            entity_id, alias = draw(st.sampled_from(splittable))
            new_entity = new_id("ent")
            command.append(EntitySplit(entity_id=entity_id, new_entity_id=new_entity,
                                       namespace="default", name=alias,
                                       normalized=alias.casefold()))  # fmt: skip
            spelled.discard((entity_id, alias))
            spelled.add((new_entity, alias))  # the spelling is the new entity's now
            entities[new_entity] = alias
        elif kind == "differ":
            live = sorted(e for e in entities if e not in merged)
            first, other = draw(st.lists(st.sampled_from(live), min_size=2, max_size=2,
                                         unique=True))  # fmt: skip
            command.append(EntitiesDiffer(entity_id=first, other_id=other, namespace="default"))
        elif kind == "conflict":
            n = 1 + draw(st.integers(1, min(2, len(facts) - 1)))
            first, *others = draw(st.lists(st.sampled_from(facts), min_size=n, max_size=n,
                                           unique=True))  # fmt: skip
            command.append(FactsPossiblyConflicting(
                memory_id=first, namespace="default", others=tuple(others),
                entity_id=(memories[first].entity_ids or ("ent_x",))[0],
                other_entity_id=(memories[others[0]].entity_ids or ("ent_y",))[0],
                reason=draw(st.sampled_from(["head word", "embedding", "relation"])),
                score=draw(st.sampled_from([1.0, 0.87, 0.5])),
            ))  # fmt: skip
            flagged.update((first, o) for o in others)
        elif kind == "facts_differ":
            # mostly a pair flagged before (the flag goes), sometimes one never flagged
            pairs = sorted(flagged & {(a, b) for a in facts for b in facts})
            pick = st.sampled_from(pairs) if pairs else st.nothing()
            first, other = draw(pick | st.lists(st.sampled_from(facts), min_size=2, max_size=2,
                                                unique=True).map(tuple))  # fmt: skip
            if draw(st.booleans()):
                first, other = other, first  # said from either side
            command.append(FactsDiffer(memory_id=first, other_id=other, namespace="default",
                                       agent_id=draw(st.none() | st.just("agent-7"))))  # fmt: skip
            flagged.discard((first, other))
            flagged.discard((other, first))
        if command:
            commands.append(command)
    return commands


def _marks(draw: st.DrawFn, memory_id: str) -> MemoryMarked:
    pinned = draw(st.booleans())
    expires = None if pinned else draw(st.none() | st.sampled_from([T0 + timedelta(days=400)]))
    return MemoryMarked(memory_id=memory_id, namespace="default",
                        importance=draw(st.sampled_from([0.5, 0.2, 0.9])), pinned=pinned,
                        expires_at=expires)  # fmt: skip
