"""The rule *foldable* means the same in SQL and in Python: the read model's listing
(``DecisionReads.foldable``, rendered from ``predicates.foldable_rule``) and the decisions'
check (``ferrex.core.decide.consolidate.foldable``, read from the same spec) agree on every
combination of what the rule looks at, on a real read-model file with the events applied
as the projection applies them. A summary is not folded again and an empty text is not
folded (before the one spec, the SQL listed an empty text and Python folded a summary)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ferrex.core.decide.consolidate import consolidation_groups, decide_consolidate, foldable
from journal import (
    AnyEvent,
    MemoriesConsolidated,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
    Record,
)
from projections.rows import Memory
from projections.sqlite import ReadModel

BASE = datetime(2026, 1, 1, tzinfo=UTC)
CUTOFF = (BASE + timedelta(days=30)).timestamp()
YOUNG = BASE + timedelta(days=40)
"""When the young memories are recorded: after the cutoff, so they are learned too late."""

TEXTS = ("text", "", None, "redacted")
"""A memory's text: there, empty, absent (None, never given) or purged."""


def _case_id(kind: str, superseded: bool, pinned: bool, expiring: bool, text: str | None,
             summary: bool, young: bool) -> str:  # fmt: skip
    flags = [kind, "old" if superseded else "cur", "pin" if pinned else "-",
             "exp" if expiring else "-", repr(text), "sum" if summary else "-",
             "young" if young else "-"]  # fmt: skip
    return "|".join(flags)


BOTH = (False, True)
CASES = [
    (_case_id(*c), *c)
    for c in itertools.product(("episodic", "semantic"), BOTH, BOTH, BOTH, TEXTS, BOTH, BOTH)
]


def _expected(kind: str, superseded: bool, pinned: bool, expiring: bool, text: str | None,
              summary: bool, young: bool) -> bool:  # fmt: skip
    """The one meaning a user expects, written out plainly."""
    return (kind == "episodic" and not superseded and not pinned and not expiring
            and text == "text" and not summary and not young)  # fmt: skip


def _stored(memory_id: str, kind: str, text: str | None, minute: int) -> MemoryStored:
    t_valid = BASE - timedelta(days=400) + timedelta(minutes=minute)
    if text == "redacted":
        return MemoryStored(memory_id=memory_id, namespace="ns", memory_type=kind,  # type: ignore[arg-type]
                            t_valid=t_valid, body=None, body_hash=b"\x01" * 32)  # fmt: skip
    return MemoryStored(memory_id=memory_id, namespace="ns", memory_type=kind,  # type: ignore[arg-type]
                        t_valid=t_valid, body=MemoryBody(content=text, source="chat"))  # fmt: skip


def _records() -> list[Record]:
    """Every case as its own memory, with the events that give it its marks: the old ones in
    one record, the young ones in a record after the cutoff, then the supersedes (at the
    start) and the folds that make the summaries (each folding one filler memory)."""
    old: list[AnyEvent] = []
    young: list[AnyEvent] = []
    after: list[AnyEvent] = []
    for n, (case, kind, superseded, pinned, expiring, text, summary, is_young) in enumerate(CASES):
        events = young if is_young else old
        events.append(_stored(case, kind, text, n))
        if pinned or expiring:
            events.append(MemoryMarked(
                memory_id=case, namespace="ns", pinned=pinned,
                expires_at=BASE + timedelta(days=900) if expiring else None,
            ))  # fmt: skip
        if superseded:
            after.append(MemorySuperseded(memory_id=case, namespace="ns", t_invalid=BASE))
        if summary:
            filler = f"filler {n}"
            old.append(_stored(filler, "episodic", "a folded turn", n))
            after.append(MemoriesConsolidated(summary_id=case, namespace="ns",
                                              memory_ids=(filler,), at=BASE))  # fmt: skip
    return [
        Record(recorded_at=BASE, events=tuple(old), position=1),
        Record(recorded_at=YOUNG, events=tuple(young), position=2),
        Record(recorded_at=YOUNG, events=tuple(after), position=3),
    ]


@pytest.fixture(scope="module")
def read_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadModel]:
    rm = ReadModel.open(Path(tmp_path_factory.mktemp("foldable")) / "rm.sqlite")
    try:
        rm.apply(_records())
        yield rm
    finally:
        rm.close()


def test_sql_and_python_agree_with_the_rule_on_every_case(read_model: ReadModel) -> None:
    rows = {m.memory_id: m for m in read_model.memories()}
    summaries = read_model.decisions.summaries_among(sorted(rows))
    assert summaries == {case for case, *c in CASES if c[-2]}
    listed = {m.memory_id for m in read_model.decisions.foldable(created_before=CUTOFF)}
    may_fold = foldable(CUTOFF)
    in_python = {i for i, m in rows.items() if may_fold(m, i in summaries)}
    expected = {case for case, *c in CASES if _expected(*c)}
    assert len(expected) == 1  # the one episodic, current, plain, old text of the table
    assert listed == expected
    assert in_python == expected  # the fillers, folded, are not foldable either


@pytest.mark.parametrize("case", ["episodic|cur|-|-|''|-|-", "episodic|cur|-|-|'text'|sum|-"])
def test_an_empty_text_and_a_summary_are_not_folded(read_model: ReadModel, case: str) -> None:
    """The two cases where SQL and Python differed: neither side folds them now."""
    (row,) = read_model.by_ids([case])
    summary = bool(read_model.decisions.summaries_among([case]))
    assert summary == ("sum" in case)
    assert not foldable(CUTOFF)(row, summary)
    assert case not in {m.memory_id for m in read_model.decisions.foldable(created_before=CUTOFF)}


def test_the_decisions_leave_a_summary_out(read_model: ReadModel) -> None:
    """A group handed to the decisions with a summary in it folds the others only."""
    plain = _row(read_model, "episodic|cur|-|-|'text'|-|-")
    summary = _row(read_model, "episodic|cur|-|-|'text'|sum|-")
    twin = Memory(**{**vars(plain), "memory_id": "twin", "position": plain.position + 1})
    members = [plain, summary, twin]
    groups = consolidation_groups(members, created_before=CUTOFF,
                                  summaries=frozenset({summary.memory_id}))  # fmt: skip
    assert [[m.memory_id for m in ms] for _, ms in groups] == [[plain.memory_id, "twin"]]
    alone = decide_consolidate(
        "source:chat", [plain, summary], created_before=CUTOFF,
        summaries=frozenset({summary.memory_id}), now=BASE, summary_id="s", keep_ratio=0.5,
    )  # fmt: skip
    assert alone.events == ()  # one member left: nothing to fold


def _row(rm: ReadModel, memory_id: str) -> Memory:
    (row,) = rm.by_ids([memory_id])
    return row
