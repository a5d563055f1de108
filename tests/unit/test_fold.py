"""The one fold of events (``projections.fold``): what each event changes, and the row rule."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given

from journal import (
    Access,
    EntityCreated,
    EntitySplit,
    MemoriesAccessed,
    MemoriesConsolidated,
    MemoriesUnfolded,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    Relink,
)
from journal.events import AnyEvent
from projections import fold
from projections.rows import Memory
from tests.strategies import T0, events

LATER = T0 + timedelta(days=1)


def _row() -> Memory:
    stored = MemoryStored(
        memory_id="m1", namespace="a", memory_type="episodic", t_valid=T0,
        body=MemoryBody(content="x"), entity_ids=("e2", "e1"),
    )  # fmt: skip
    return Memory.from_event(stored, position=1, created_at=0.0, predicate_normalized=None)


def _fold(memory: Memory, event: AnyEvent) -> Memory:
    """The row after the event's updates of rows (its other changes left aside)."""
    for change in fold.changes(event):
        if isinstance(change, fold.RowUpdate):
            memory = fold.updated(memory, change)
    return memory


@given(events)
def test_every_event_has_its_changes(event: AnyEvent) -> None:
    found = fold.changes(event)
    assert all(isinstance(c, fold.Change) for c in found)
    assert any(isinstance(c, fold.PutMemory) for c in found) == isinstance(event, MemoryStored)


def test_validation_and_access_keep_the_later_time() -> None:
    m = _fold(_row(), MemoriesValidated(memory_ids=("m1",), at=LATER))
    m = _fold(m, MemoriesValidated(memory_ids=("m1",), at=T0))
    assert m.last_validated == LATER.timestamp()
    accesses = (Access("m1", LATER, 2), Access("m1", T0, 3))
    m = _fold(m, MemoriesAccessed(accesses=accesses))
    assert (m.access_count, m.last_accessed) == (5, LATER.timestamp())


def test_an_unfold_revalidates_only_what_its_summary_superseded() -> None:
    folded = MemoriesConsolidated(summary_id="s1", namespace="a", memory_ids=("m1",), at=LATER)
    changes = fold.changes(folded)
    assert fold.FoldedPair("s1", "m1", "a") in changes
    invalid = fold.updated(_row(), fold.Invalidated("m1", LATER.timestamp(), "s1"))
    other = MemoriesUnfolded(summary_id="s2", namespace="a", memory_ids=("m1",))
    assert _fold(invalid, other) == invalid
    mine = MemoriesUnfolded(summary_id="s1", namespace="a", memory_ids=("m1",))
    back = _fold(invalid, mine)
    assert (back.t_invalid, back.superseded_by) == (None, None)


def test_a_relink_is_read_back_sorted_as_the_read_model_reads_links() -> None:
    m = fold.updated(_row(), fold.Relinked("m1", ("e3", "e1")))
    assert m.entity_ids == ("e1", "e3")
    assert _row().entity_ids == ("e1", "e2")


def test_a_split_moves_one_spelling_to_a_new_entity() -> None:
    split = EntitySplit(
        entity_id="e1", new_entity_id="e9", namespace="a", name="PG", normalized="pg",
        relinked=(Relink("m1", ("e9", "e9")),),
    )  # fmt: skip
    assert fold.changes(split) == (
        fold.DropSpelling("a", "pg", "e1", "e1"),
        fold.PutEntity("e9", "a", "PG", "pg", None, None),
        fold.PutSpelling("a", "pg", "PG", "e9", "operator", 1.0, None),
        fold.Differ("a", "e1", "e9"),
        fold.Relinked("m1", ("e9",)),
    )
    created = EntityCreated(entity_id="e1", namespace="a", name="Tokio", normalized="tokio")
    assert fold.changes(created)[1] == fold.PutSpelling(
        "a", "tokio", "Tokio", "e1", "exact", 1.0, None
    )
