"""The SQLite read model on a real file: event semantics, checkpoints, rebuild equality."""

from __future__ import annotations

import tempfile
import threading
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
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
    Journal,
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
    Record,
    Relink,
)
from projections.sqlite import ReadModel
from tests.strategies import T0, times

# Small pools of ids, so that random events hit the same memories and entities.
memory_ids = st.sampled_from([f"m{i}" for i in range(6)])
entity_ids = st.sampled_from([f"e{i}" for i in range(4)])
interacting: st.SearchStrategy[Event] = st.one_of(
    st.builds(
        MemoryStored,
        memory_id=memory_ids,
        namespace=st.sampled_from(["a", "b"]),
        memory_type=st.sampled_from(["episodic", "semantic", "procedural"]),
        t_valid=times,
        entity_ids=st.lists(entity_ids, max_size=3).map(tuple),
        body=st.builds(MemoryBody, content=st.text(max_size=30), steps=st.just(("x", "y"))),
        multi_valued=st.booleans(),
        agent_id=st.sampled_from([None, "alice"]),
        visibility=st.sampled_from(["private", "shared"]),
        valid_from_given=st.sampled_from([None, False, True]),
    ),
    st.builds(MemorySuperseded, memory_id=memory_ids, namespace=st.just("a"), t_invalid=times),
    st.builds(
        MemoriesForgotten,
        memory_ids=st.lists(memory_ids, min_size=1, max_size=2).map(tuple),
        namespace=st.just("a"),
        dropped_entity_ids=st.lists(entity_ids, max_size=1).map(tuple),
        kept_entities=st.lists(
            st.builds(
                KeptEntity,
                entity_id=entity_ids,
                agent_ids=st.lists(
                    st.sampled_from(["alice", "bob"]), min_size=1, max_size=2, unique=True
                ).map(tuple),
            ),
            max_size=1,
        ).map(tuple),
    ),
    st.builds(MemoriesValidated, memory_ids=st.lists(memory_ids, min_size=1).map(tuple), at=times),
    st.builds(
        MemoryMarked,
        memory_id=memory_ids,
        namespace=st.just("a"),
        importance=st.sampled_from([0.0, 0.5, 0.9]),
        pinned=st.booleans(),
        expires_at=st.none() | times,
    ),
    st.builds(
        MemoriesAccessed,
        accesses=st.lists(
            st.builds(Access, memory_id=memory_ids, last_at=times, count=st.integers(1, 5)),
            min_size=1,
            max_size=3,
        ).map(tuple),
    ),
    st.builds(
        EntityCreated,
        entity_id=entity_ids,
        namespace=st.just("a"),
        name=st.sampled_from(["Tokio", "tokio runtime", "Postgres"]),
        normalized=st.sampled_from(["tokio", "tokio runtime", "postgres"]),
        agent_id=st.sampled_from([None, "alice", "bob"]),
    ),
    st.builds(
        EntityAliasAdded,
        entity_id=entity_ids,
        namespace=st.just("a"),
        alias=st.just("PG"),
        normalized=st.sampled_from(["pg", "postgresql"]),
        match=st.just("fuzzy"),
        score=st.floats(0.8, 1.0),
        agent_id=st.sampled_from([None, "alice"]),
    ),
    st.builds(
        FactsPossiblyConflicting,
        memory_id=memory_ids,
        namespace=st.just("a"),
        others=st.lists(memory_ids, min_size=1, max_size=2).map(tuple),
        entity_id=entity_ids,
        other_entity_id=entity_ids,
        reason=st.sampled_from(["head word", "relation"]),
    ),
    st.builds(FactsDiffer, memory_id=memory_ids, other_id=memory_ids, namespace=st.just("a")),
    st.builds(
        EntitiesMerged,
        entity_id=entity_ids,
        into=entity_ids,
        namespace=st.just("a"),
        relinked=st.lists(
            st.builds(
                Relink, memory_id=memory_ids, entity_ids=st.lists(entity_ids, max_size=2).map(tuple)
            ),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(
        EntitySplit,
        entity_id=entity_ids,
        new_entity_id=entity_ids,
        namespace=st.just("a"),
        name=st.just("PG"),
        normalized=st.sampled_from(["pg", "postgres"]),
    ),
    st.builds(EntitiesDiffer, entity_id=entity_ids, other_id=entity_ids, namespace=st.just("a")),
    st.builds(
        MemoriesConsolidated,
        summary_id=memory_ids,
        namespace=st.just("a"),
        memory_ids=st.lists(memory_ids, min_size=1, max_size=3).map(tuple),
        at=times,
        folds=st.lists(
            st.builds(Fold, memory_id=memory_ids, start=st.integers(0, 5), end=st.integers(5, 9)),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(
        MemoriesUnfolded,
        summary_id=memory_ids,
        namespace=st.just("a"),
        memory_ids=st.lists(memory_ids, max_size=3).map(tuple),
    ),
)


def journaled(root: Path, commands: list[list[Event]]) -> list[Record]:
    """``commands`` appended to a real journal under ``root``, read back as its records."""
    with Journal.open(root / "journal") as journal:
        journal.append_batch(commands)
        return list(journal.read())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    commands=st.lists(st.lists(interacting, min_size=1, max_size=3), min_size=1, max_size=25),
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=10),
)
def test_incremental_application_with_restarts_equals_a_rebuild(
    commands: list[list[Event]], cuts: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = journaled(root, commands)
        # Incremental: chunks of random sizes, the model closed and reopened between.
        position, i = 0, 0
        while position < len(records):
            size = cuts[i % len(cuts)]
            i += 1
            model = ReadModel.open(root / "incremental.sqlite")
            chunk = records[position : position + size]
            # Re-offering already applied records must change nothing.
            model.apply(records[max(0, position - 2) : position + size])
            assert model.checkpoint() == chunk[-1].position
            model.close()
            position += size
        incremental = ReadModel.open(root / "incremental.sqlite")
        rebuilt = ReadModel.open(root / "rebuilt.sqlite")
        rebuilt.apply(records)
        assert incremental.maintenance.dump() == rebuilt.maintenance.dump()
        assert incremental.maintenance.dump()["memory_counts"] == recount(incremental)
        assert incremental.maintenance.dump()["unvalidated_counts"] == recount_unvalidated(
            incremental
        )
        incremental.close()
        rebuilt.close()


def recount(model: ReadModel) -> list[tuple[object, ...]]:
    """The ``memory_counts`` aggregate counted afresh from the memories table."""
    return sorted(
        model.db.execute(
            "SELECT namespace, type, coalesce(agent_id, ''), agent_id IS NOT NULL, visibility, "
            "t_invalid IS NULL, expires_at IS NOT NULL, count(*) FROM memories "
            "GROUP BY 1, 2, 3, 4, 5, 6, 7"
        ),
        key=repr,
    )


def recount_unvalidated(model: ReadModel) -> list[tuple[object, ...]]:
    """The ``unvalidated_counts`` aggregate counted afresh from the memories table."""
    return sorted(
        model.db.execute(
            "SELECT namespace, coalesce(agent_id, ''), agent_id IS NOT NULL, visibility, "
            "count(*) FROM memories WHERE t_invalid IS NULL AND last_validated IS NULL "
            "GROUP BY 1, 2, 3, 4"
        ),
        key=repr,
    )


def test_memory_counts_follow_every_change_of_a_memory(tmp_path: Path) -> None:
    """Stored twice (replaced), superseded, marked to expire, forgotten: the kept counts
    move with each, and a file written before the aggregates existed is counted on open."""
    path = tmp_path / "rm.sqlite"
    model = ReadModel.open(path)
    steps: list[list[Event]] = [
        [stored("m1"), stored("m2", agent_id="alice", visibility="private")],
        [stored("m1", agent_id="bob")],
        [MemorySuperseded(memory_id="m2", namespace="acme", t_invalid=T0)],
        [MemoryMarked(memory_id="m1", namespace="acme", expires_at=T0)],
        [MemoriesForgotten(memory_ids=("m2",), namespace="acme")],
    ]
    with Journal.open(tmp_path / "j") as journal:
        for step in steps:
            journal.append(step)
        records = list(journal.read())
    seen = []
    for record in records:
        model.apply([record])
        assert model.maintenance.dump()["memory_counts"] == recount(model)
        assert model.maintenance.dump()["unvalidated_counts"] == recount_unvalidated(model)
        seen.append([(c.agent_id, c.visibility, c.active, c.expiring, c.n)
                     for c in model.insight.memory_counts("acme")])  # fmt: skip
    assert seen == [
        [(None, "shared", True, False, 1), ("alice", "private", True, False, 1)],
        [("alice", "private", True, False, 1), ("bob", "shared", True, False, 1)],
        [("alice", "private", False, False, 1), ("bob", "shared", True, False, 1)],
        [("alice", "private", False, False, 1), ("bob", "shared", True, True, 1)],
        [("bob", "shared", True, True, 1)],
    ]
    # An older file: no aggregate yet, memories already there.
    model.db.execute("DROP TABLE memory_counts")
    model.db.execute("DROP TABLE unvalidated_counts")
    model.close()
    reopened = ReadModel.open(path)
    assert reopened.maintenance.dump()["memory_counts"] == recount(reopened) != []
    assert reopened.maintenance.dump()["unvalidated_counts"] == recount_unvalidated(reopened) != []
    reopened.close()


def stored(mid: str, **kw: object) -> MemoryStored:
    return MemoryStored(
        memory_id=mid,
        namespace="acme",
        memory_type="semantic",
        t_valid=kw.pop("t_valid", T0),  # type: ignore[arg-type]
        entity_ids=("e1",),
        body=MemoryBody(subject="api", predicate="uses", object="tokio 1.36"),
        **kw,  # type: ignore[arg-type]
    )


def test_event_semantics(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        journal.append(
            [EntityCreated(entity_id="e1", namespace="acme", name="Tokio", normalized="tokio")]
        )
        journal.append([stored("m1"), stored("m2")])
        journal.append(
            [
                MemorySuperseded(
                    memory_id="m1",
                    namespace="acme",
                    t_invalid=T0 + timedelta(days=1),
                    superseded_by="m2",
                )
            ]
        )
        journal.append([MemoriesValidated(memory_ids=("m2",), at=T0 + timedelta(days=3))])
        journal.append([MemoriesValidated(memory_ids=("m2",), at=T0 + timedelta(days=2))])
        journal.append(
            [
                MemoriesAccessed(
                    accesses=(Access("m2", T0 + timedelta(days=4), 2), Access("m2", T0, 1))
                )
            ]
        )
        journal.append([MemoriesForgotten(memory_ids=("m1",), namespace="acme")])
        records = list(journal.read())
    model = ReadModel.open(tmp_path / "rm.sqlite")
    assert model.apply(records) == 7
    assert model.apply(records) == 0, "applied records are never applied twice"
    assert model.get("m1") is None
    m2 = model.get("m2")
    assert m2 is not None
    assert m2.subject == "api" and m2.object == "tokio 1.36" and m2.entity_ids == ("e1",)
    assert m2.t_invalid is None and m2.access_count == 3
    assert m2.last_validated == (T0 + timedelta(days=3)).timestamp()
    assert m2.last_accessed == (T0 + timedelta(days=4)).timestamp()
    assert model.checkpoint() == 7
    # m1 was superseded before it was forgotten; an earlier snapshot shows it.
    early = ReadModel.open(tmp_path / "early.sqlite")
    early.apply(records[:3])
    m1 = early.get("m1")
    assert m1 is not None and m1.superseded_by == "m2" and m1.t_invalid is not None
    early.close()
    model.close()


def test_whether_a_start_was_given_is_kept_and_an_older_file_reads_it_by_the_times(
    tmp_path: Path,
) -> None:
    """A row keeps the event's ``valid_from_given``; an event without it (an older journal)
    is read by its times, and so is a row of a file folded before the column existed."""
    at = T0 + timedelta(days=10)
    events = [
        stored("dated", t_valid=at, valid_from_given=True),
        stored("undated", t_valid=at, valid_from_given=False),
        stored("old-now", t_valid=at - timedelta(seconds=3)),
        stored("old-dated", t_valid=at - timedelta(days=3)),
    ]
    with Journal.open(tmp_path / "j", clock=lambda: at) as journal:
        journal.append(events)
        records = list(journal.read())
    expected = {"dated": True, "undated": False, "old-now": False, "old-dated": True}
    model = ReadModel.open(tmp_path / "rm.sqlite")
    model.apply(records)
    given = {k: model.get(k).valid_from_given for k in expected}  # type: ignore[union-attr]
    assert given == expected
    # A file of an older ferrex: the column absent until it is opened, then empty (NULL).
    model.db.execute("ALTER TABLE memories DROP COLUMN valid_from_given")
    model.close()
    model = ReadModel.open(tmp_path / "rm.sqlite")
    assert model.db.execute("SELECT count(valid_from_given) FROM memories").get == 0
    read = {k: model.get(k).valid_from_given for k in expected}  # type: ignore[union-attr]
    # "dated" was given a start that is its record's own time: read as undated.
    assert read == {"dated": False, "undated": False, "old-now": False, "old-dated": True}
    model.close()


def test_two_connections_catching_up_at_once_apply_each_record_once(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        journal.append([stored("m1")])
        journal.append_batch(
            [[MemoriesAccessed(accesses=(Access("m1", T0, 1),))] for _ in range(200)]
        )
        records = list(journal.read())
    ReadModel.open(tmp_path / "rm.sqlite").close()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            model = ReadModel.open(tmp_path / "rm.sqlite")
            for i in range(0, len(records), 7):
                model.apply(records[: i + 7])
            model.close()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    model = ReadModel.open(tmp_path / "rm.sqlite")
    m1 = model.get("m1")
    assert m1 is not None and m1.access_count == 200
    model.close()
