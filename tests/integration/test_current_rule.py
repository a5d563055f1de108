"""The rules *current* and *visible* mean the same in SQL and in Python on a real read-model
file. *Current*: the read model's SQL (``predicates.CURRENT``, rendered from
``projections.vectors.CURRENT``) and the Python callers' check (``predicates.is_current``,
read from the same spec) pick the same rows, whatever the journal did to them: stored,
superseded (at any time, the epoch's zero too), replaced by another memory, folded into a
summary. *Visible*: see the last test."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrex.rules.visibility import sees
from journal import (
    AnyEvent,
    MemoriesConsolidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
    Record,
)
from journal.events import Visibility
from projections.readmodel.predicates import CURRENT, is_current, seen_by
from projections.sqlite import ReadModel

BASE = datetime(2026, 1, 1, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

FATES = st.sampled_from(("kept", "superseded", "at_epoch", "replaced", "folded"))


def _stored(memory_id: str, minute: int) -> MemoryStored:
    return MemoryStored(
        memory_id=memory_id, namespace="ns", memory_type="episodic",
        t_valid=BASE + timedelta(minutes=minute),
        body=MemoryBody(content=f"turn {memory_id}", source="chat"),
    )  # fmt: skip


def _records(fates: list[str]) -> list[Record]:
    """Each fate as its own memory (``m{n}``), then what befalls it, a record later."""
    stored: list[AnyEvent] = []
    after: list[AnyEvent] = []
    for n, fate in enumerate(fates):
        memory_id = f"m{n}"
        stored.append(_stored(memory_id, n))
        when = BASE + timedelta(days=n % 3 - 1)  # before, at or after the stores
        if fate == "superseded":
            after.append(MemorySuperseded(memory_id=memory_id, namespace="ns", t_invalid=when))
        elif fate == "at_epoch":  # a t_invalid of 0.0: set, though false in Python
            after.append(MemorySuperseded(memory_id=memory_id, namespace="ns", t_invalid=EPOCH))
        elif fate == "replaced":
            after.append(_stored(f"r{n}", n))
            after.append(MemorySuperseded(memory_id=memory_id, namespace="ns", t_invalid=when,
                                          superseded_by=f"r{n}"))  # fmt: skip
        elif fate == "folded":
            after.append(_stored(f"s{n}", n))
            after.append(MemoriesConsolidated(summary_id=f"s{n}", namespace="ns",
                                              memory_ids=(memory_id,), at=when))  # fmt: skip
    return [
        Record(recorded_at=BASE, events=tuple(stored), position=1),
        Record(recorded_at=BASE + timedelta(days=1), events=tuple(after), position=2),
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FATES, min_size=1, max_size=12))
def test_sql_and_python_pick_the_same_current_rows(fates: list[str]) -> None:
    with tempfile.TemporaryDirectory() as home:
        rm = ReadModel.open(Path(home) / "rm.sqlite")
        try:
            rm.apply(_records(fates))
            in_sql = {
                i for (i,) in rm.db.execute(f"SELECT memory_id FROM memories WHERE {CURRENT}")
            }
            rows = rm.memories()
        finally:
            rm.close()
    in_python = {m.memory_id for m in rows if is_current(m)}
    assert in_sql == in_python
    kept = {f"m{n}" for n, fate in enumerate(fates) if fate == "kept"}
    made = {m.memory_id for m in rows} - {f"m{n}" for n in range(len(fates))}
    assert in_python == kept | made  # the replacements and summaries stay current
    assert len(rows) > len(in_python) or set(fates) == {"kept"}


OWNERS = st.sampled_from((None, "a", "b"))
SCOPES: st.SearchStrategy[Visibility] = st.sampled_from(("shared", "private"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(OWNERS, SCOPES), min_size=1, max_size=10), st.sampled_from(("a", "b")))
def test_sql_and_python_let_an_agent_see_the_same_rows(
    memories: list[tuple[str | None, Visibility]], caller: str
) -> None:
    """The rule *visible* too: ``predicates.seen_by`` (SQL, from ``vectors.visible``) and
    ``ferrex.rules.visibility.sees`` (Python, reading the same spec) agree for an agent that
    is not the operator."""
    events: list[AnyEvent] = [
        MemoryStored(memory_id=f"m{n}", namespace="ns", memory_type="episodic", t_valid=BASE,
                     agent_id=owner, visibility=scope,
                     body=MemoryBody(content=f"turn {n}", source="chat"))
        for n, (owner, scope) in enumerate(memories)
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as home:
        rm = ReadModel.open(Path(home) / "rm.sqlite")
        try:
            rm.apply([Record(recorded_at=BASE, events=tuple(events), position=1)])
            sql = f"SELECT memory_id FROM memories WHERE {seen_by()}"
            in_sql = {i for (i,) in rm.db.execute(sql, (caller,))}
            rows = rm.memories()
        finally:
            rm.close()
    assert in_sql == {m.memory_id for m in rows if sees(caller, m.agent_id, m.visibility)}
