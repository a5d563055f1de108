"""How SQLite answers the read model's never-validated queries (stats and reflect): the plan
of the very statement each method runs, captured as it runs on a real read-model file. The
count per scope is the kept aggregate less index ranges of the recent and the expired ones,
never a scan of the memories, whatever the namespace (SQLite has no statistics here, so a
plan is the planner's guess from the schema alone)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from ferrex.read.insight import stats
from ferrex.read.labels import scoring
from ferrex.read.seen import Sight
from ferrex.rules.freshness import StalenessConfig, StalenessParams
from ferrex.rules.subjects import object_form
from ferrex.rules.visibility import sees
from journal import Event, MemoriesValidated, MemoryBody, MemoryMarked, MemoryStored, Record
from projections.readmodel.insight import LabelQuery
from projections.readmodel.projector import NO_RULES, Rules
from projections.sqlite import ReadModel
from tests.strategies import T0

DAY = 86_400.0
FORMS = Rules("objects", object_form=object_form)


def _home(path: Path) -> ReadModel:
    rm = ReadModel.open(path)
    records = [
        Record(
            recorded_at=T0 + timedelta(days=i),
            position=i + 1,
            events=(
                MemoryStored(
                    memory_id=f"m{i}",
                    namespace="acme" if i % 2 else "other",
                    memory_type="episodic",
                    t_valid=T0 + timedelta(days=i),
                    agent_id="alice" if i % 3 else None,
                    body=MemoryBody(content=f"incident {i}"),
                ),
            ),
        )
        for i in range(40)
    ]
    # Some validated, some expired by the instant the tests ask at (day 60), some later.
    marks: list[Event] = [
        MemoriesValidated(memory_ids=tuple(f"m{i}" for i in range(0, 40, 5)), at=T0),
        *(
            MemoryMarked(
                memory_id=f"m{i}",
                namespace="acme" if i % 2 else "other",
                expires_at=T0 + timedelta(days=50 if i % 3 else 70),
            )
            for i in range(1, 40, 4)
        ),
    ]
    records.append(Record(recorded_at=T0 + timedelta(days=41), position=41, events=tuple(marks)))
    rm.apply(records)
    return rm


def _plans(rm: ReadModel, call: Any) -> tuple[Any, list[str]]:
    """What ``call`` answers, and the query plan of every statement it ran on ``memories``
    (not the entities read for the memories found)."""
    ran: list[tuple[str, Any]] = []

    def trace(_cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        ran.append((sql, bindings))
        return True

    db = rm.db
    db.exec_trace = trace
    try:
        out = call()
    finally:
        db.exec_trace = None
    plans = [
        " / ".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", bindings))
        for sql, bindings in ran
        if "FROM memories WHERE" in sql or "JOIN memories" in sql
    ]
    return out, plans


@pytest.mark.parametrize("namespace", [None, "acme"])
@pytest.mark.parametrize("day", [60, 45, 50, 51, 20, 100])
def test_the_never_validated_count_reads_a_covering_index(
    tmp_path: Path, namespace: str | None, day: int
) -> None:
    rm = _home(tmp_path / "rm.sqlite")
    now = (T0 + timedelta(days=day)).timestamp()
    counts, plans = _plans(rm, lambda: rm.insight.unvalidated_counts(namespace, now, 30 * DAY))
    # The two ends of the never-validated store times (day 1: m0 is validated; day 39),
    # then the side of the bound (day - 30) that spans less: past day 20, the kept count less two
    # index ranges, the recent ones (store times, read from the covering index) and the
    # expired ones (few, by expiry); before it, the old ones counted in the covering index.
    # Never a scan.
    assert "COVERING INDEX memories_unvalidated_scoped" in plans[0], plans
    if day - 30 > 20:
        assert len(plans) == 3, plans
        assert "COVERING INDEX memories_unvalidated_scoped (created_at>?)" in plans[1], plans
        assert "INDEX memories_expiring (expires_at<?)" in plans[2], plans
    else:
        assert len(plans) == 2, plans
        assert "COVERING INDEX memories_unvalidated_scoped (created_at<?)" in plans[1], plans
    # The same answer as counting the memories one by one.
    every = [m for m in rm.memories() if namespace is None or m.namespace == namespace]
    expected: dict[tuple[str | None, str], int] = {}
    for m in every:
        unexpired = m.expires_at is None or m.expires_at > now
        if m.last_validated is None and now - m.created_at >= 30 * DAY and unexpired:
            key = (m.agent_id, m.visibility)
            expected[key] = expected.get(key, 0) + 1
    assert {(a, v): n for a, v, n in counts} == expected
    assert expected or day < 30
    rm.close()


@pytest.mark.parametrize("namespace", [None, "acme"])
def test_the_never_validated_pages_follow_the_same_index(
    tmp_path: Path, namespace: str | None
) -> None:
    rm = _home(tmp_path / "rm.sqlite")
    now = (T0 + timedelta(days=60)).timestamp()
    listed, plans = _plans(rm, lambda: list(rm.insight.unvalidated(namespace, now, 30 * DAY)))
    assert plans and all("INDEX memories_unvalidated_scoped" in plan for plan in plans), plans
    assert "TEMP B-TREE" not in " ".join(plans)  # read in the index's order, no sort
    assert [m.created_at for m in listed] == sorted(m.created_at for m in listed)
    assert listed
    rm.close()


def test_a_file_with_the_old_index_loses_it_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "rm.sqlite"
    rm = _home(path)
    rm.db.execute("DROP INDEX memories_unvalidated_scoped")
    rm.db.execute(
        "CREATE INDEX memories_unvalidated ON memories (created_at, memory_id) "
        "WHERE t_invalid IS NULL AND last_validated IS NULL"
    )
    rm.close()
    reopened = ReadModel.open(path)
    names = {
        str(name)
        for (name,) in reopened.db.execute("SELECT name FROM sqlite_master WHERE type='index'")
    }
    assert "memories_unvalidated_scoped" in names
    assert "memories_unvalidated" not in names
    reopened.close()


def _facts(path: Path, rules: Rules) -> ReadModel:
    """Facts on two subjects, some disagreeing, of two agents and shared."""
    rm = ReadModel.open(path, rules=rules)
    stored = [
        MemoryStored(
            memory_id=f"f{i}", namespace="acme" if i % 2 else "other", memory_type="semantic",
            t_valid=T0, agent_id=("alice", "bob", None)[i % 3],
            visibility="private" if i % 4 == 0 else "shared",
            body=MemoryBody(subject=f"api {i % 3}", predicate="runs on",
                            object=f"tokio 1.{i % 4 // 2}"),
        )
        for i in range(24)
    ]  # fmt: skip
    rm.apply([Record(recorded_at=T0, position=1, events=tuple(stored))])
    return rm


@pytest.mark.parametrize("namespace", [None, "acme"])
@pytest.mark.parametrize("caller", [None, "alice"])
def test_the_fact_groups_read_a_covering_index_in_its_order(
    tmp_path: Path, namespace: str | None, caller: str | None
) -> None:
    rm = _facts(tmp_path / "rm.sqlite", FORMS)
    now = T0.timestamp()
    groups, plans = _plans(rm, lambda: rm.insight.fact_groups(namespace, now, caller))
    assert len(plans) == 1, plans
    assert "COVERING INDEX memories_single_facts" in plans[0], plans
    assert "TEMP B-TREE" not in plans[0], plans  # grouped in the index's order, no sort
    assert groups
    # The same counts and forms as the facts read one by one.
    expected: dict[tuple[str, str, str], list[str]] = {}
    for f in rm.insight.single_facts(namespace, now):
        if sees(caller, f.agent_id, f.visibility):
            key = (f.namespace, f.subject_key, str(f.predicate_normalized))
            expected.setdefault(key, []).append(object_form(f.object or ""))
    assert {(g.namespace, g.subject_key, g.predicate_normalized):
            (g.n, g.least_form, g.greatest_form) for g in groups or ()} == {
        k: (len(v), min(v), max(v)) for k, v in expected.items()
    }  # fmt: skip
    rm.close()


def test_a_file_without_object_forms_is_answered_from_its_facts(tmp_path: Path) -> None:
    """A file of schema 9 (no ``object_form``) gains the column when opened; its facts have
    no form, so ``fact_groups`` says so and stats reads the facts: the same answer."""
    kept = _facts(tmp_path / "kept.sqlite", FORMS)
    path = tmp_path / "old.sqlite"
    old = _facts(path, NO_RULES)
    old.db.execute("DROP INDEX memories_single_facts")
    old.db.execute("ALTER TABLE memories DROP COLUMN object_form")
    old.close()
    reopened = ReadModel.open(path)
    columns = {str(row[1]) for row in reopened.db.execute("PRAGMA table_info(memories)")}
    assert "object_form" in columns
    assert reopened.insight.fact_groups(None, T0.timestamp(), None) is None
    assert kept.insight.fact_groups(None, T0.timestamp(), None)
    for caller in (None, "alice"):
        sight = Sight(caller, T0.timestamp())
        answers = [
            stats(rm, sight, StalenessConfig(), namespace=None, detailed=True)
            for rm in (reopened, kept)
        ]
        assert answers[0] == answers[1]
        assert answers[0]["needs_attention"]["conflicts"] > 0
    reopened.close()
    kept.close()


@pytest.mark.parametrize("namespace", [None, "acme"])
@pytest.mark.parametrize("caller", [None, "alice"])
def test_the_fact_subjects_read_the_same_covering_index(
    tmp_path: Path, namespace: str | None, caller: str | None
) -> None:
    """Counted again per subject key in SQL: each key's predicates, and how many of its
    groups disagree, as the groups themselves say; a file without forms answers None."""
    rm = _facts(tmp_path / "rm.sqlite", FORMS)
    now = T0.timestamp()
    keyed, plans = _plans(rm, lambda: rm.insight.fact_subjects(namespace, now, caller))
    assert len(plans) == 1, plans
    assert "COVERING INDEX memories_single_facts" in plans[0], plans
    assert keyed
    expected: dict[tuple[str, str], tuple[set[str], int]] = {}
    for g in rm.insight.fact_groups(namespace, now, caller) or ():
        predicates, n = expected.setdefault((g.namespace, g.subject_key), (set(), 0))
        predicates.add(g.predicate_normalized)
        expected[(g.namespace, g.subject_key)] = (
            predicates, n + (g.least_form != g.greatest_form))  # fmt: skip
    assert {(k.namespace, k.subject_key): (set(json.loads(k.predicates)), k.disagreeing)
            for k in keyed} == expected  # fmt: skip
    assert any(n for _, n in expected.values())
    rm.close()
    bare = _facts(tmp_path / "bare.sqlite", NO_RULES)
    assert bare.insight.fact_subjects(namespace, now, caller) is None
    bare.close()


def test_memories_with_pending_hits_are_looked_up_by_id_and_clocked_with_the_hit(
    tmp_path: Path,
) -> None:
    """``clocked_before``: the memories with recall hits not journaled yet whose oldest
    clock, the hit counted as their last access, is before the bound; by id, never a scan."""
    rm = _home(tmp_path / "rm.sqlite")  # m{i} stored on day i, none recalled yet
    now = (T0 + timedelta(days=60)).timestamp()
    bound = (T0 + timedelta(days=10)).timestamp()
    query = LabelQuery("acme", "episodic", scoring(StalenessParams(), "episodic"), bound, now)
    day = lambda d: (T0 + timedelta(days=d)).timestamp()  # noqa: E731
    hits = {
        "m3": day(59),  # old: its event time is its oldest clock
        "m31": day(59),  # recent
        "m33": day(5),  # recent, but the hit (before its store) is its oldest clock
        "m2": day(1),  # another namespace, whose bound is later
        "m4": day(5),  # the other namespace, clocked after its bound
        "gone": day(1),  # no such memory
    }
    other = replace(query, namespace="other", before=(T0 + timedelta(days=1.5)).timestamp())
    found, plans = _plans(rm, lambda: rm.insight.clocked_before([query, other], hits))
    assert found == ["m2", "m3", "m33"]
    assert len(plans) == 1 and "SCAN memories" not in plans[0], plans
    assert "SEARCH m USING INDEX sqlite_autoindex_memories_1 (memory_id=?)" in plans[0], plans
    rm.close()
