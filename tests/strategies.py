"""Hypothesis strategies for journal events, shared by the property tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone

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
from journal.events import EpisodeRef

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
        match=st.sampled_from(
            ["exact", "normalized", "abbreviation", "fuzzy", "embedding", "operator"]
        ),
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


def plausible(commands: list[list[Event]], made: Made | None = None) -> list[list[Event]]:
    """The commands without the events no decision makes: a memory id stored again, or
    superseded or marked in another namespace than its own; an
    entity id made twice (created, or split onto, even after it was merged away or dropped:
    decisions draw fresh ids), a spelling, merge or split of an entity not there (or merged
    away), a merge into itself, a cascade keeping a
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
                case EntityAliasAdded() if event.entity_id not in live:
                    continue
                case EntitiesMerged() if (
                    event.entity_id == event.into
                    or event.entity_id not in live
                    or event.into not in live
                ):
                    continue
                case EntitiesMerged():
                    del live[event.entity_id]
                case EntitySplit() if (
                    event.entity_id not in live or event.new_entity_id in made.entity_ids
                ):
                    continue
                case EntitySplit():
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
