"""The write side's decisions on the pure core, with an in-memory view (no Qdrant, no model).

The view here is the real Overlay over a base that holds only what a test sets by hand: the
decisions are pure functions of what they are given, and these tests give them exactly the
state each rule is about, folded from events as the read model folds them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from ferrex.core.decide.forget import (
    confirmable,
    decide_access,
    decide_eviction,
    decide_expiry,
    decide_forget,
    decide_mark,
    decide_settle,
    decide_validate,
)
from ferrex.core.decide.store import decide_store, episode_of, looks_like_turn
from ferrex.core.settings import StoreSettings
from ferrex.core.view import EpisodeTail, Overlay
from ferrex.errors import NotFound, Refused, UsageError
from ferrex.rules.freshness import DEFAULT_STALENESS
from ferrex.rules.memory_input import StoreRequest, validate
from ferrex.rules.slots import fact_phrase
from journal import (
    EntityAliasAdded,
    EntityCreated,
    Event,
    FactsPossiblyConflicting,
    MemoriesAccessed,
    MemoriesForgotten,
    MemoriesValidated,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
)
from journal.events import KeptEntity
from projections.rows import Memory, PossibleConflict, Spelling

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SETTINGS = StoreSettings()


class _Set:
    """What a test sets by hand beneath a :class:`FakeView`: committed episode tails and
    entity pairs said to differ (everything else comes from events)."""

    def __init__(self) -> None:
        self.tails: dict[tuple[str, str | None, str], EpisodeTail] = {}
        self.differ: set[tuple[str, ...]] = set()

    def memory(self, memory_id: str) -> Memory | None:
        return None

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]:
        return []

    def subject_facts(self, namespace: str, key: str) -> list[Memory]:
        return []

    def facts_holding(self, namespace: str, words: tuple[str, ...]) -> list[Memory]:
        return []

    def procedures(self, namespace: str, name: str) -> list[Memory]:
        return []

    def imported(self, namespace: str, key: str) -> list[Memory]:
        return []

    def spellings(self, namespace: str) -> list[Spelling]:
        return []

    def linked(self, entity_id: str) -> list[str]:
        return []

    def has_entity(self, entity_id: str) -> bool:
        return False

    def entities_differ(self, a: str, b: str) -> bool:
        return tuple(sorted((a, b))) in self.differ

    def facts_differ(self, a: str, b: str) -> bool:
        return False

    def flagged_with(self, memory_id: str) -> list[PossibleConflict]:
        return []

    def episode_tail(
        self, namespace: str, agent_id: str | None, visibility: str
    ) -> EpisodeTail | None:
        return self.tails.get((namespace, agent_id, visibility))


@dataclass
class Similar:
    """A unit test's measures (:class:`ferrex.core.decide.Measures`): the nearest memories
    given, each cosine from ``cosines`` or else ``otherwise``; with neither, a cosine the
    test did not expect fails it. ``asked`` records every pair asked, in order."""

    near: Sequence[tuple[str, float]] = ()
    cosines_of: Mapping[tuple[str, str], float] = field(default_factory=dict)
    otherwise: float | None = None
    asked: list[tuple[str, str]] = field(default_factory=list)
    neighbours_asked: int = 0

    def cosines(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.asked += pairs
        found = [self.cosines_of.get(pair, self.otherwise) for pair in pairs]
        unexpected = [pair for pair, value in zip(pairs, found, strict=True) if value is None]
        assert not unexpected, f"a cosine the test did not expect: {unexpected}"
        return [value for value in found if value is not None]

    def neighbours(self) -> Sequence[tuple[str, float]]:
        self.neighbours_asked += 1
        return self.near


class FakeView(Overlay):
    """The committed state a test sets up: its events folded by the overlay (the same fold
    as the read model's), over an empty base."""

    def __init__(self) -> None:
        self._set = _Set()
        super().__init__(self._set)
        self.tails = self._set.tails
        self.differ = self._set.differ

    def add(self, events: list[Event], at: datetime = NOW) -> None:
        """Commit ``events`` as if recorded at ``at``."""
        self.apply(events, recorded_at=at.timestamp())

    @property
    def rows(self) -> dict[str, Memory]:
        """The memories held, by id."""
        return {i: m for i, m in sorted(self._changed.items()) if m is not None}


def ids() -> object:
    counter = itertools.count(1)
    return lambda prefix: f"{prefix}_{next(counter):03d}"


def fact(subject: str, predicate: str, obj: str, **kw: object) -> object:
    return validate(StoreRequest(subject=subject, predicate=predicate, object=obj, **kw))  # type: ignore[arg-type]


def note(content: str, **kw: object) -> object:
    return validate(StoreRequest(content=content, **kw))  # type: ignore[arg-type]


def store(view: FakeView, valid: object, similar: Similar | None = None, **kw: object):  # type: ignore[no-untyped-def]
    """Decide a store, with every cosine it asks for measured as ``cosine`` (default 0.1),
    and commit it into ``view``."""
    cosine = kw.pop("cosine", 0.1)
    multi = bool(kw.pop("multi_valued", False))
    settings = kw.pop("settings", SETTINGS)
    new_id = kw.pop("new_id", ids())
    if similar is None:
        similar = Similar(otherwise=cosine)  # type: ignore[arg-type]
    now = kw.pop("now", NOW)
    decision = decide_store(
        valid,  # type: ignore[arg-type]
        view,
        similar,
        now=now,  # type: ignore[arg-type]
        new_id=new_id,  # type: ignore[arg-type]
        settings=settings,  # type: ignore[arg-type]
        multi_valued=multi,
    )
    view.add(list(decision.events), at=now)  # type: ignore[arg-type]
    return decision


# -- facts -------------------------------------------------------------------------------


def test_a_changed_fact_supersedes_the_old_one() -> None:
    view = FakeView()
    first = store(view, fact("payments-api", "uses", "PostgreSQL 15"), new_id=ids())
    # Told as news of a change: it began this morning.
    second = store(
        view,
        fact("payments-api", "is using", "CockroachDB", valid_from="2026-12-01T08:00:00Z"),
        new_id=lambda p: f"{p}_new",
    )
    assert second.result.superseded == (first.result.id,)
    old = view.memory(first.result.id)
    assert old is not None and old.superseded_by == second.result.id
    superseded = [e for e in second.events if isinstance(e, MemorySuperseded)]
    assert [(e.memory_id, e.reason) for e in superseded] == [(first.result.id, "conflict")]


def test_a_second_name_told_plainly_stands_beside_the_first_named_or_flagged() -> None:
    """Without a start, a word of change or values a thing has one of, a second value of
    one relation may be one more (offices, input tables) as well as a change: nothing is
    superseded. Told in the very words of the first, it is kept beside it as one value
    more and named; in other words (the subject spelt otherwise), both are flagged and the
    answer says how to settle it."""
    view = FakeView()
    first = store(view, fact("Quillmark", "sources oak from", "Porto"), new_id=ids())
    second = store(view, fact("Quillmark", "sources oak from", "Tallinn"),
                   new_id=lambda p: f"{p}_new")  # fmt: skip
    assert second.result.superseded == ()
    old = view.memory(first.result.id)
    assert old is not None and old.t_invalid is None
    assert not [e for e in second.events if isinstance(e, FactsPossiblyConflicting)]
    kept = second.result.as_dict()
    assert kept["multi_valued"] is True and kept["kept_beside"][0]["id"] == first.result.id
    assert f"supersedes={first.result.id}" in kept["plural_note"]
    # The subject written otherwise: flagged against both values, neither replaced.
    other = store(view, fact("quillmark", "sources oak from", "Riga"),
                  new_id=lambda p: f"{p}_other")  # fmt: skip
    assert other.result.superseded == ()
    (flag,) = [e for e in other.events if isinstance(e, FactsPossiblyConflicting)]
    both = {first.result.id, second.result.id}
    assert set(flag.others) == both and flag.reason == "relation"
    answer = other.result.as_dict()
    assert set(answer["possible_conflict"]) == both
    assert f"supersedes={first.result.id}" in answer["possible_conflict_note"]
    # The same told as news (a start given, a note of change) replaces them.
    third = store(view, fact("Quillmark", "sources oak from", "Vilnius",
                             valid_from="2026-12-01T08:00:00Z",
                             content="moved all oak sourcing to Vilnius"),
                  new_id=lambda p: f"{p}_news")  # fmt: skip
    assert set(third.result.superseded) == {first.result.id, second.result.id, other.result.id}


def test_an_attribute_a_role_or_a_place_told_twice_in_the_same_words_is_flagged() -> None:
    """An attribute names the one value a thing has (``log level``), a role is held by one
    (``owned by``), a thing is mostly in one place (``runs on``): a second value in the
    same words may be a change, so both are flagged, neither kept beside the other."""
    view = FakeView()
    for predicate, first_value, second_value in (
        ("log level", "DEBUG", "INFO"),
        ("owned by", "platform-team", "data-infra-team"),
        ("runs on", "node-7", "node-12"),
    ):
        first = store(view, fact("ingest worker", predicate, first_value),
                      new_id=lambda p, v=first_value: f"{p}_{v}")  # fmt: skip
        second = store(view, fact("ingest worker", predicate, second_value),
                       new_id=lambda p, v=second_value: f"{p}_{v}")  # fmt: skip
        assert not second.result.multi_valued, predicate
        if not second.result.superseded:
            (flag,) = [e for e in second.events if isinstance(e, FactsPossiblyConflicting)]
            assert flag.others == (first.result.id,), predicate


def test_a_start_alone_adds_one_more_value_to_a_relation_that_holds_many() -> None:
    """A start tells a change of one value; beside values kept beside each other it tells
    when one more began: kept beside them, nothing replaced, nothing flagged."""
    view = FakeView()
    first = store(view, fact("Quillmark", "sources oak from", "Porto"), new_id=ids())
    second = store(view, fact("Quillmark", "sources oak from", "Tallinn"),
                   new_id=lambda p: f"{p}_2")  # fmt: skip
    assert second.result.multi_valued
    dated = store(view, fact("Quillmark", "sources oak from", "Riga",
                             valid_from="2026-12-01T08:00:00Z"),
                  new_id=lambda p: f"{p}_3")  # fmt: skip
    assert dated.result.superseded == () and dated.result.multi_valued
    assert not [e for e in dated.events if isinstance(e, FactsPossiblyConflicting)]
    assert {f["id"] for f in dated.result.as_dict()["kept_beside"]} == {
        first.result.id,
        second.result.id,
    }
    # Beside one value only, a start is news of a change: it replaces it.
    one = store(view, fact("Quillmark", "hq in", "Porto"), new_id=lambda p: f"{p}_4")
    moved = store(view, fact("Quillmark", "hq in", "Lisbon", valid_from="2026-12-01T08:00:00Z"),
                  new_id=lambda p: f"{p}_5")  # fmt: skip
    assert moved.result.superseded == (one.result.id,)


def test_the_same_fact_again_is_a_duplicate_that_revalidates() -> None:
    view = FakeView()
    first = store(view, fact("billing", "owned by", "team payments"))
    again = store(view, fact("billing", "owned_by", "Team  Payments"), new_id=lambda p: f"{p}_x")
    assert again.result.status == "duplicate" and again.result.id == first.result.id
    assert [type(e) for e in again.events] == [MemoriesValidated]


def test_a_quantity_in_other_units_is_the_value_restated_not_a_second_count() -> None:
    view = FakeView()
    first = store(view, fact("checkout-web", "session timeout", "30 minutes"))
    again = store(view, fact("checkout-web", "session timeout", "1800 seconds"),
                  new_id=lambda p: f"{p}_2")  # fmt: skip
    # Not kept beside it as a count of another thing: the new wording replaces it.
    assert again.result.superseded == (first.result.id,)
    assert again.result.kept_beside == () and again.result.possible_conflict == ()
    # Counts of two things still both hold.
    gpus = store(view, fact("trainer", "has", "2 GPUs"), new_id=lambda p: f"{p}_3")
    cores = store(view, fact("trainer", "has", "64 cores"), new_id=lambda p: f"{p}_4")
    kept = [k.id for k in cores.result.kept_beside]
    assert cores.result.superseded == () and kept == [gpus.result.id]


def test_a_name_at_another_version_is_no_plain_second_value() -> None:
    view = FakeView()
    # Under a plainly plural relation, one name at another version is a change.
    first = store(view, fact("checkout", "calls", "payment-gateway-v1"))
    second = store(view, fact("checkout", "calls", "payment-gateway-v2"), new_id=lambda p: p + "_2")
    assert second.result.superseded == (first.result.id,) and second.result.kept_beside == ()
    # Told again in the same words of a relation of one value, it is flagged, not kept beside.
    old = store(view, fact("report job", "reads from", "orders-api-v1"), new_id=lambda p: p + "_3")
    new = store(view, fact("report job", "reads from", "orders-api-v2"), new_id=lambda p: p + "_4")
    assert new.result.kept_beside == () and new.result.superseded == ()
    assert new.result.possible_conflict == (old.result.id,)
    # Two other names in those words are still one value more.
    a = store(view, fact("export job", "reads from", "orders-api"), new_id=lambda p: p + "_5")
    b = store(view, fact("export job", "reads from", "refunds-api"), new_id=lambda p: p + "_6")
    assert [k.id for k in b.result.kept_beside] == [a.result.id]


def test_a_second_schedule_in_the_same_words_is_no_value_more() -> None:
    view = FakeView()
    # A job runs on one schedule at a time: a second one told as the first is weighed as a
    # change (it was kept beside the first as one value more, both current, no flag).
    first = store(view, fact("index rebuild", "runs", "nightly"))
    second = store(view, fact("index rebuild", "runs", "every Sunday"), new_id=lambda p: p + "_2")
    assert second.result.kept_beside == ()
    assert first.result.id in (*second.result.superseded, *second.result.possible_conflict)


def test_one_more_of_several_things_held_is_kept_beside() -> None:
    view = FakeView()
    first = store(view, fact("Brennmoor", "has depot in", "Duisburg"))
    second = store(view, fact("Brennmoor", "has depot in", "Rotterdam"), new_id=lambda p: p + "_2")
    assert second.result.superseded == () and second.result.possible_conflict == ()
    assert [k.id for k in second.result.kept_beside] == [first.result.id]
    # One headquarters: a second city is weighed as a change (flagged or replaced).
    hq = store(view, fact("Brennmoor", "has HQ in", "Hamburg"), new_id=lambda p: p + "_3")
    moved = store(view, fact("Brennmoor", "has HQ in", "Bremen"), new_id=lambda p: p + "_4")
    assert moved.result.kept_beside == ()
    assert hq.result.id in (*moved.result.superseded, *moved.result.possible_conflict)


def test_an_unclear_object_is_kept_beside_the_old_one_and_flagged() -> None:
    view = FakeView()
    first = store(view, fact("api", "hosted on", "the EU cluster"))
    second = store(
        view, fact("api", "hosted on", "EU cloud"), cosine=0.9, new_id=lambda p: p + "_2"
    )
    assert second.result.status == "stored" and second.result.superseded == ()
    assert second.result.possible_conflict == (first.result.id,)
    still = view.memory(first.result.id)
    assert still is not None and still.t_invalid is None


def test_a_back_dated_fact_is_kept_as_history_ended_by_the_newer_one() -> None:
    view = FakeView()
    newer = store(view, fact("ci", "runs on", "GitHub Actions", valid_from="2026-06-01T00:00:00Z"))
    older = store(
        view,
        fact("ci", "runs on", "Jenkins", valid_from="2025-01-01T00:00:00Z"),
        new_id=lambda p: f"{p}_old",
    )
    assert older.result.superseded == () and older.result.superseded_by == newer.result.id
    current = view.memory(newer.result.id)
    history = view.memory(older.result.id)
    assert current is not None and current.t_invalid is None
    assert history is not None and history.superseded_by == newer.result.id


def _ended_at(view: FakeView, memory_id: str) -> datetime | None:
    m = view.memory(memory_id)
    assert m is not None
    return None if m.t_invalid is None else datetime.fromtimestamp(m.t_invalid, UTC)


def test_a_change_dated_before_an_undated_fact_was_learned_is_current_and_ends_it_there() -> None:
    """orbit-db 15.4 stored at noon without a date, then 16.1 valid from this morning: 15.4's
    start is unknown (any time before noon), so nothing says 16.1 began before it. The one
    learned later is current, and 15.4 ends where 16.1 began."""
    view = FakeView()
    old = store(view, fact("orbit-db", "version", "15.4"))
    morning = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    new = store(
        view,
        fact("orbit-db", "version", "16.1", valid_from="2026-12-01T08:00:00Z"),
        new_id=lambda p: f"{p}_new",
        now=NOW + timedelta(hours=1),
    )
    assert new.result.status == "stored" and new.result.superseded == (old.result.id,)
    assert new.result.superseded_by is None and "history_reason" not in new.result.as_dict()
    assert _ended_at(view, new.result.id) is None
    assert _ended_at(view, old.result.id) == morning
    (stored,) = [e for e in new.events if isinstance(e, MemoryStored)]
    assert stored.valid_from_given is True
    (first,) = [e for e in old.events if isinstance(e, MemoryStored)]
    assert first.valid_from_given is False


def test_two_dated_facts_are_ordered_by_their_dates_whatever_order_they_were_learned_in() -> None:
    view = FakeView()
    later = store(view, fact("orbit-db", "version", "16.1", valid_from="2026-11-20T00:00:00Z"))
    earlier = store(
        view,
        fact("orbit-db", "version", "15.4", valid_from="2026-10-01T00:00:00Z"),
        new_id=lambda p: f"{p}_late_report",
    )
    assert earlier.result.status == "stored_as_history"
    assert earlier.result.superseded == () and earlier.result.superseded_by == later.result.id
    reason = earlier.result.as_dict()["history_reason"]
    assert later.result.id in reason and "2026-11-20T00:00:00Z" in reason
    assert "2026-10-01T00:00:00Z" in reason
    assert _ended_at(view, later.result.id) is None
    assert _ended_at(view, earlier.result.id) == datetime(2026, 11, 20, tzinfo=UTC)
    # Learned in order, the later date replaces the earlier at that date.
    view = FakeView()
    first = store(view, fact("orbit-db", "version", "15.4", valid_from="2026-10-01T00:00:00Z"))
    second = store(
        view,
        fact("orbit-db", "version", "16.1", valid_from="2026-11-20T00:00:00Z"),
        new_id=lambda p: f"{p}_2",
    )
    assert second.result.status == "stored" and second.result.superseded == (first.result.id,)
    assert _ended_at(view, first.result.id) == datetime(2026, 11, 20, tzinfo=UTC)


def test_an_undated_fact_learned_after_a_dated_one_is_current_unless_that_one_starts_later() -> (
    None
):
    view = FakeView()
    dated = store(view, fact("orbit-db", "version", "15.4", valid_from="2026-10-01T00:00:00Z"))
    undated = store(view, fact("orbit-db", "version", "16.1"), new_id=lambda p: f"{p}_2")
    assert undated.result.status == "stored" and undated.result.superseded == (dated.result.id,)
    assert _ended_at(view, dated.result.id) == NOW  # when the undated one was learned
    # A fact dated after the undated one was learned (here by a clock set back: a fact
    # dated ahead of the clock is refused) began after anything known then.
    view = FakeView()
    scheduled = store(view, fact("orbit-db", "version", "17.0", valid_from="2027-01-01T00:00:00Z"),
                      now=datetime(2027, 1, 2, tzinfo=UTC))  # fmt: skip
    today = store(view, fact("orbit-db", "version", "16.1"), new_id=lambda p: f"{p}_2")
    assert today.result.status == "stored_as_history"
    assert today.result.superseded_by == scheduled.result.id and today.result.superseded == ()
    assert "undated" in today.result.as_dict()["history_reason"]
    assert _ended_at(view, scheduled.result.id) is None


def test_a_fact_or_procedure_dated_ahead_of_the_clock_is_refused_and_an_event_kept() -> None:
    """ferrex has no scheduled changes: a fact starting tomorrow would end today's value
    today. Ten minutes ahead is clock skew, not a plan."""
    view = FakeView()
    old = store(view, fact("orbit-db", "version", "15.4"))
    for valid in (
        fact("orbit-db", "version", "16.1", valid_from="2026-12-02T00:00:00Z"),
        validate(StoreRequest(name="deploy", steps=["tag", "push"], valid_from="2026-12-03")),
    ):
        with pytest.raises(UsageError) as caught:
            store(view, valid, new_id=lambda p: f"{p}_2")
        assert "is in the future" in caught.value.message
        assert "2026-12-0" in caught.value.message and caught.value.hint
    assert _ended_at(view, old.result.id) is None  # nothing was written
    skewed = store(view, fact("orbit-db", "version", "16.1",
                              valid_from=(NOW + timedelta(minutes=9)).isoformat()),
                   new_id=lambda p: f"{p}_3")  # fmt: skip
    assert skewed.result.status == "stored"
    planned = store(view, note("the orbit-db upgrade window", valid_from="2026-12-20"),
                    new_id=lambda p: f"{p}_4")  # fmt: skip
    assert planned.result.status == "stored"


def test_an_undated_fact_after_an_undated_one_is_current() -> None:
    view = FakeView()
    old = store(view, fact("orbit-db", "version", "15.4"))
    new = store(
        view, fact("orbit-db", "version", "16.1"), new_id=lambda p: f"{p}_2", now=NOW - timedelta(1)
    )  # a clock set back: the learned order is the journal's, not the clocks'
    assert new.result.status == "stored" and new.result.superseded == (old.result.id,)


def test_a_fact_of_a_journal_without_the_flag_is_read_by_its_times() -> None:
    """A ``memory.stored`` written before ``valid_from_given``: ``t_valid`` at its record's
    time is read as undated (a change dated before it is current), one far from it as dated
    (a change dated before it is history)."""
    for t_valid, recorded, status in (
        (NOW, NOW + timedelta(seconds=2), "stored"),
        (NOW - timedelta(days=2), NOW, "stored_as_history"),
    ):
        view = FakeView()
        old = store(view, fact("orbit-db", "version", "15.4"))
        (event,) = [e for e in old.events if isinstance(e, MemoryStored)]
        view = FakeView()
        view.add(
            [*[e for e in old.events if not isinstance(e, MemoryStored)],
             msgspec.structs.replace(event, t_valid=t_valid, valid_from_given=None)],
            at=recorded,
        )  # fmt: skip
        new = store(
            view,
            fact("orbit-db", "version", "16.1", valid_from=(t_valid - timedelta(hours=3))),
            new_id=lambda p: f"{p}_2",
            now=NOW + timedelta(hours=1),
        )
        assert new.result.status == status


def test_multi_valued_facts_sit_side_by_side_and_a_later_single_one_replaces_them_saying_so() -> (
    None
):
    view = FakeView()
    a = store(view, fact("web", "depends on", "redis"), multi_valued=True)
    b = store(view, fact("web", "requires", "kafka"), multi_valued=True, new_id=lambda p: p + "b")
    assert a.result.multi_valued and b.result.superseded == ()
    stored = [e for e in b.events if isinstance(e, MemoryStored)]
    assert stored[0].multi_valued is True
    single = store(view, fact("web", "needs", "nginx"), new_id=lambda p: p + "c")
    assert single.result.superseded == (a.result.id, b.result.id)
    assert single.result.replaced_multi_valued == (a.result.id, b.result.id)
    assert "multi_valued=true" in single.result.as_dict()["note"]


def test_an_explicit_supersede_needs_a_visible_valid_memory() -> None:
    view = FakeView()
    secret = store(view, note("alice's private plan", agent_id="alice"))
    with pytest.raises(Refused) as hidden:
        store(view, note("bob replaces it", agent_id="bob", supersedes=secret.result.id),
              new_id=lambda p: p + "_b")  # fmt: skip
    with pytest.raises(Refused) as missing:
        store(view, note("bob replaces nothing", agent_id="bob", supersedes="mem_nothing"),
              new_id=lambda p: p + "_c")  # fmt: skip
    assert hidden.value.code == missing.value.code == "not_found"
    assert str(hidden.value).replace(secret.result.id, "X") == str(missing.value).replace(
        "mem_nothing", "X"
    )
    renewed = note("alice's new plan", agent_id="alice", supersedes=secret.result.id)
    replaced = store(view, renewed, new_id=lambda p: p + "_d")
    assert replaced.result.superseded == (secret.result.id,)
    with pytest.raises(Refused) as again:
        store(view, note("again", agent_id="alice", supersedes=secret.result.id),
              new_id=lambda p: p + "_e")  # fmt: skip
    assert again.value.code == "already_superseded"


def test_another_agents_private_fact_is_neither_superseded_nor_a_duplicate() -> None:
    view = FakeView()
    alice = store(view, fact("laptop", "runs", "Fedora", agent_id="alice"))
    bob = store(view, fact("laptop", "runs", "Fedora", agent_id="bob"), new_id=lambda p: p + "b")
    assert bob.result.status == "stored" and bob.result.superseded == ()
    assert view.memory(alice.result.id).t_invalid is None  # type: ignore[union-attr]


# -- dedup ---------------------------------------------------------------------------------


def test_a_near_copy_is_refused_but_not_one_the_caller_cannot_see() -> None:
    view = FakeView()
    shared = store(view, note("Deploys go out on Tuesdays", visibility="shared"))
    private = store(view, note("Standup is at nine", agent_id="alice"), new_id=lambda p: p + "a")
    near = Similar([(shared.result.id, 0.99)])
    with pytest.raises(Refused) as caught:
        store(view, note("Deploys go out on Tuesdays."), near, new_id=lambda p: p + "b")
    assert caught.value.code == "duplicate"
    hidden = Similar([(private.result.id, 0.99)])
    ok = store(view, note("Standup is at nine.", agent_id="bob"), hidden, new_id=lambda p: p + "c")
    assert ok.result.status == "stored"


def test_a_near_copy_that_says_something_else_is_kept_and_says_why() -> None:
    view = FakeView()
    first = store(view, note("feature-engine calls metrics-gateway synchronously"))
    near = Similar([(first.result.id, 0.974)])
    kept = store(view, note("metrics-gateway calls feature-engine synchronously"), near,
                 new_id=lambda p: p + "_b")  # fmt: skip
    assert kept.result.status == "stored"
    assert kept.result.similar is not None and kept.result.similar.id == first.result.id
    assert "order" in (kept.result.similar.kept_because or "")
    answer = kept.result.as_dict()["similar"]
    assert answer["similarity"] == 0.974 and f"supersedes={first.result.id}" in answer["note"]
    # The first text again is still a duplicate (of the first memory).
    again = Similar([(first.result.id, 1.0), (kept.result.id, 0.974)])
    with pytest.raises(Refused) as caught:
        store(view, note("feature-engine calls metrics-gateway synchronously."), again,
              new_id=lambda p: p + "_c")  # fmt: skip
    assert caught.value.code == "duplicate" and caught.value.details["ids"] == [first.result.id]


def test_a_close_memory_below_the_duplicate_threshold_is_named_in_the_answer() -> None:
    view = FakeView()
    first = store(view, note("Emails are sent through the notifications worker"))
    close = store(view, note("The notifications worker sends the emails"),
                  Similar([(first.result.id, 0.93)]), new_id=lambda p: p + "_b")  # fmt: skip
    assert close.result.similar is not None
    assert (close.result.similar.id, close.result.similar.kept_because) == (first.result.id, None)
    assert "supersedes=" in close.result.as_dict()["similar"]["note"]
    far = store(view, note("The notifications worker is written in Go"),
                Similar([(first.result.id, 0.87)]), new_id=lambda p: p + "_c")  # fmt: skip
    assert far.result.similar is None and "similar" not in far.result.as_dict()
    tuned = replace(SETTINGS, near_threshold=0.85)
    noted = store(view, note("Emails go out via the notifications worker"),
                  Similar([(first.result.id, 0.87)]), settings=tuned,
                  new_id=lambda p: p + "_d")  # fmt: skip
    assert noted.result.similar is not None and noted.result.similar.id == first.result.id


def test_the_same_words_up_to_punctuation_are_a_duplicate_below_the_threshold() -> None:
    view = FakeView()
    first = store(view, note("metrics-gateway calls feature-engine for every request."))
    with pytest.raises(Refused) as caught:
        store(view, note("Metrics-gateway calls feature-engine for every request"),
              Similar([(first.result.id, 0.94)]), new_id=lambda p: p + "_b")  # fmt: skip
    assert caught.value.code == "duplicate"
    # Other words at the same cosine are only noted as similar; a changed number is kept.
    close = store(view, note("metrics-gateway calls feature-engine on each request"),
                  Similar([(first.result.id, 0.94)]), new_id=lambda p: p + "_c")  # fmt: skip
    assert close.result.status == "stored" and close.result.similar is not None
    version = store(view, note("metrics-gateway v2 calls feature-engine for every request."),
                    Similar([(first.result.id, 0.94)]), new_id=lambda p: p + "_d")  # fmt: skip
    assert version.result.status == "stored"


def test_a_nan_neighbour_similarity_is_a_bug_not_a_decision() -> None:
    view = FakeView()
    first = store(view, note("The cache is warm"))
    with pytest.raises(ValueError, match="finite"):
        store(view, note("The cache is warm."), Similar([(first.result.id, float("nan"))]),
              new_id=lambda p: p + "_b")  # fmt: skip


@pytest.mark.parametrize(
    ("again", "why"),
    [
        ({"valid_from": "2026-11-03T03:00:00Z"}, "event time"),
        ({"valid_from": "2026-11-02T03:00:00Z", "source": "ops-log"}, "source"),
    ],
)
def test_the_same_text_at_another_time_or_from_another_source_is_another_event(
    again: dict[str, str], why: str
) -> None:
    view = FakeView()
    text = "Nightly backup of the orders database finished"
    first = store(view, note(text, valid_from="2026-11-02T03:00:00Z"))
    same = Similar([(first.result.id, 1.0)])
    other = store(view, note(text, **again), same, new_id=lambda p: p + "_b")
    assert other.result.status == "stored"
    assert other.result.similar is not None and why in (other.result.similar.kept_because or "")


@pytest.mark.parametrize(
    "retry",
    [{}, {"valid_from": "2026-11-02T03:00:00Z"}, {"source": "ops-log"}],
    ids=["plain", "same time", "same source"],
)
def test_a_retried_store_is_still_a_duplicate(retry: dict[str, str]) -> None:
    view = FakeView()
    text = "Nightly backup of the orders database finished"
    first = store(view, note(text, valid_from="2026-11-02T03:00:00Z", source="ops-log"))
    with pytest.raises(Refused) as caught:
        store(view, note(text, **retry), Similar([(first.result.id, 1.0)]),
              new_id=lambda p: p + "_b")  # fmt: skip
    assert caught.value.code == "duplicate"


def test_a_reworded_report_of_an_event_with_its_own_time_is_still_a_duplicate() -> None:
    view = FakeView()
    first = store(view, note("INC-4417: ledger-api returned 502 for 40 minutes",
                             valid_from="2026-03-18T08:10:00Z"))  # fmt: skip
    with pytest.raises(Refused) as caught:
        store(view, note("INC-4417: for 40 minutes ledger-api returned 502.",
                         valid_from="2026-03-18T09:00:00Z"),
              Similar([(first.result.id, 0.97)]), new_id=lambda p: p + "_b")  # fmt: skip
    assert caught.value.code == "duplicate"


def test_import_lines_are_events_by_place_and_a_second_import_stores_nothing() -> None:
    view = FakeView()
    line_2 = store(view, note("Ana: Thanks!", import_key="line 2 sha256:aa"))
    # Another line with the same text: another event, kept and named.
    line_4 = store(view, note("Ana: Thanks!", import_key="line 4 sha256:aa"),
                   Similar([(line_2.result.id, 1.0)]), new_id=lambda p: p + "_b")  # fmt: skip
    assert line_4.result.status == "stored"
    assert "line of an import" in (line_4.result.similar.kept_because or "")  # type: ignore[union-attr]
    stored = [e for e in line_4.events if isinstance(e, MemoryStored)]
    assert stored[0].body is not None and stored[0].body.import_key == "line 4 sha256:aa"
    # The same line again: refused before anything else is decided, whatever the similarity.
    for key, first in (("line 2 sha256:aa", line_2), ("line 4 sha256:aa", line_4)):
        with pytest.raises(Refused) as caught:
            store(view, note("Ana: Thanks!", import_key=key), Similar(),
                  new_id=lambda p: p + "_x")  # fmt: skip
        assert caught.value.code == "duplicate" and caught.value.details["imported"] is True
        assert caught.value.details["ids"] == [first.result.id]
    # A plain store of the same text is a duplicate of an imported one.
    with pytest.raises(Refused) as plain:
        store(view, note("Ana: Thanks!"), Similar([(line_2.result.id, 1.0)]),
              new_id=lambda p: p + "_y")  # fmt: skip
    assert plain.value.code == "duplicate" and "imported" not in plain.value.details


def test_an_imported_fact_later_replaced_is_not_imported_again() -> None:
    view = FakeView()
    old = store(view, fact("web", "uses", "react 18", import_key="line 1 sha256:01"))
    new = store(view, fact("web", "uses", "react 19", import_key="line 2 sha256:02"),
                new_id=lambda p: p + "_b")  # fmt: skip
    assert new.result.superseded == (old.result.id,)
    with pytest.raises(Refused) as caught:
        store(view, fact("web", "uses", "react 18", import_key="line 1 sha256:01"),
              new_id=lambda p: p + "_c")  # fmt: skip
    assert caught.value.details["imported"] is True
    assert view.memory(new.result.id).t_invalid is None  # type: ignore[union-attr]


def test_a_former_import_key_counts_for_the_same_context_and_a_changed_text_is_named() -> None:
    view = FakeView()
    where = {"import": "claude", "conversation": "k-1", "message": "m-1"}
    old = store(view, note("user: The oven runs hot.", context=where,
                           import_key="claude message m-1"))  # fmt: skip
    new_key = 'claude conversation "k-1" message "m-1"'
    # The same item under the key's new form: imported before.
    with pytest.raises(Refused) as caught:
        store(view, note("user: The oven runs hot.", context=where, import_key=new_key,
                         former_import_keys=("claude message m-1",)),
              new_id=lambda p: p + "_b")  # fmt: skip
    assert caught.value.details == {"ids": [old.result.id], "imported": True,
                                    "similarity": 1.0}  # fmt: skip
    # Its text changed since: refused as well, and said so.
    with pytest.raises(Refused) as changed:
        store(view, note("user: The oven runs cold.", context=where, import_key=new_key,
                         former_import_keys=("claude message m-1",)),
              new_id=lambda p: p + "_c")  # fmt: skip
    assert changed.value.details["changed"] is True
    assert f"forget {old.result.id}" in (changed.value.hint or "")
    # Another conversation's message under the same old key is another item.
    other = store(view, note("user: The hedge needs trimming.",
                             context={**where, "conversation": "k-2"},
                             import_key='claude conversation "k-2" message "m-1"',
                             former_import_keys=("claude message m-1",)),
                  new_id=lambda p: p + "_d")  # fmt: skip
    assert other.result.status == "stored"


def test_an_import_key_of_a_memory_the_caller_cannot_see_does_not_count() -> None:
    view = FakeView()
    store(view, note("Standup notes", agent_id="alice", import_key="line 1 sha256:01"))
    bob = store(view, note("Standup notes", agent_id="bob", import_key="line 1 sha256:01"),
                new_id=lambda p: p + "_b")  # fmt: skip
    assert bob.result.status == "stored"


def test_the_overlay_sees_import_keys_decided_earlier_in_the_batch() -> None:
    view = FakeView()
    overlay = Overlay(view)
    first = decide_store(note("Ana: Thanks!", import_key="line 2 sha256:aa"), overlay,  # type: ignore[arg-type]
                         Similar(), now=NOW, new_id=ids(), settings=SETTINGS)  # type: ignore[arg-type]  # fmt: skip
    overlay.apply(first.events)
    assert [m.memory_id for m in overlay.imported("default", "line 2 sha256:aa")] == [
        first.result.id
    ]
    assert view.imported("default", "line 2 sha256:aa") == []
    assert overlay.imported("other", "line 2 sha256:aa") == []
    assert overlay.imported("default", "line 3 sha256:aa") == []
    with pytest.raises(Refused, match="already imported"):
        decide_store(note("Ana: Thanks!", import_key="line 2 sha256:aa"), overlay,  # type: ignore[arg-type]
                     Similar(), now=NOW, new_id=ids(), settings=SETTINGS)  # type: ignore[arg-type]  # fmt: skip


def test_a_decision_asks_its_measures_only_for_what_its_rules_reach() -> None:
    view = FakeView()
    first = store(view, fact("api", "version", "2.4"))
    # A changed object: its cosine with the active fact's object is asked, once, then the
    # nearest memories for the dedup check.
    measured = Similar(cosines_of={("3.0", "2.4"): 0.1})
    changed = store(view, fact("api", "version", "3.0"), measured, new_id=lambda p: p + "_2")
    assert changed.result.superseded == (first.result.id,)
    assert measured.asked == [("3.0", "2.4")] and measured.neighbours_asked == 1
    # An explicit supersede runs no dedup: no nearest memories asked; a plain note with no
    # entities needs no cosine.
    explicit = Similar()
    store(view, fact("api", "version", "3.1", supersedes=changed.result.id), explicit,
          new_id=lambda p: p + "_3")  # fmt: skip
    assert explicit.asked == [] and explicit.neighbours_asked == 0
    plain = Similar()
    store(view, note("the api moved to 3.1"), plain, new_id=lambda p: p + "_4")
    assert plain.asked == [] and plain.neighbours_asked == 1


def test_a_refused_store_measures_nothing_it_did_not_reach() -> None:
    view = FakeView()
    store(view, note("Standup notes", import_key="line 1 sha256:01"))
    measured = Similar()
    with pytest.raises(Refused, match="already imported"):
        store(view, note("Standup notes", import_key="line 1 sha256:01", entities=["Ana"]),
              measured, new_id=lambda p: p + "_b")  # fmt: skip
    assert measured.asked == [] and measured.neighbours_asked == 0


# -- procedures ------------------------------------------------------------------------------


def test_procedure_versions_count_up_and_supersede_the_current_one() -> None:
    view = FakeView()
    one = store(view, validate(StoreRequest(name="deploy", steps=("build", "ship"))))
    two = store(
        view,
        validate(StoreRequest(name="deploy", steps=("build", "test", "ship"))),
        new_id=lambda p: p + "_2",
    )
    assert (one.result.version, two.result.version) == (1, 2)
    assert two.result.superseded == (one.result.id,)
    # Unowned versions are everyone's; an agent's private version is its own line.
    alice = store(
        view,
        validate(StoreRequest(name="backup", steps=("dump", "upload"), agent_id="alice")),
        new_id=lambda p: p + "_a",
    )
    bob = store(
        view,
        validate(StoreRequest(name="backup", steps=("snapshot",), agent_id="bob")),
        new_id=lambda p: p + "_b",
    )
    assert (alice.result.version, bob.result.version) == (1, 1)
    assert bob.result.superseded == ()
    assert view.memory(alice.result.id).t_invalid is None  # type: ignore[union-attr]


# -- entities --------------------------------------------------------------------------------


def test_entities_resolve_within_the_callers_scope_only() -> None:
    view = FakeView()
    alice = store(view, note("Postgres tuning notes", entities=["Postgres"], agent_id="alice"))
    created = [e for e in alice.events if isinstance(e, EntityCreated)]
    assert created[0].agent_id == "alice"  # a private memory's new entity is alice's
    bob = store(
        view,
        note("Bob's Postgres notes", entities=["Postgres"], agent_id="bob"),
        new_id=lambda p: p + "_b",
    )
    assert bob.result.entities[0].match == "new"  # bob does not resolve to alice's entity
    assert bob.result.entities[0].entity_id != alice.result.entities[0].entity_id
    again = store(
        view,
        note("More notes", entities=["postgres"], agent_id="alice"),
        new_id=lambda p: p + "_c",
    )
    assert again.result.entities[0].entity_id == alice.result.entities[0].entity_id


def test_an_embedding_match_adds_a_scoped_alias() -> None:
    view = FakeView()
    first = store(view, note("k8s upgrade", entities=["Kubernetes"], visibility="shared"))
    second = store(
        view, note("cluster notes", entities=["k8s"], visibility="shared"), cosine=0.95,
        new_id=lambda p: p + "_2",
    )  # fmt: skip
    assert second.result.entities[0].entity_id == first.result.entities[0].entity_id
    aliases = [e for e in second.events if isinstance(e, EntityAliasAdded)]
    assert aliases[0].match == "embedding" and aliases[0].agent_id is None


def test_a_subject_named_again_among_the_entities_is_answered_once() -> None:
    view = FakeView()
    done = store(view, fact("Billing API", "owned by", "team Nova",
                            entities=["billing api", "team Nova"]))  # fmt: skip
    names = [(e.name, e.match) for e in done.result.entities]
    assert [n for n, _ in names] == ["Billing API", "team Nova"], names
    assert len({e.entity_id for e in done.result.entities}) == 2


def test_citing_a_memory_validates_it_only_if_the_caller_sees_it() -> None:
    view = FakeView()
    secret = store(view, note("alice's secret", agent_id="alice"))
    public = store(view, note("shared fact", visibility="shared"), new_id=lambda p: p + "_p")
    bob = store(
        view,
        note("bob cites both", agent_id="bob", source=f"memory:{secret.result.id}"),
        new_id=lambda p: p + "_b",
    )
    assert bob.result.validated == ()
    private = store(
        view,
        note("bob cites privately", agent_id="bob", source=f"memory:{public.result.id}"),
        new_id=lambda p: p + "_c",
    )
    assert private.result.validated == ()  # a private memory changes nothing shared
    cites = store(
        view,
        note("bob cites", agent_id="bob", visibility="shared",
             source=f"memory:{public.result.id}"),
        new_id=lambda p: p + "_d",
    )  # fmt: skip
    assert cites.result.validated == (public.result.id,)


def test_a_private_memory_changes_nothing_shared() -> None:
    view = FakeView()
    shared = store(view, fact("db", "hosted on", "rack 4", visibility="shared"))
    mine = store(
        view, fact("db", "hosted on", "rack 9", agent_id="alice"), new_id=lambda p: p + "a"
    )
    assert mine.result.superseded == ()
    assert view.memory(shared.result.id).t_invalid is None  # type: ignore[union-attr]
    same = store(view, fact("db", "hosted on", "Rack 4", agent_id="bob"), new_id=lambda p: p + "b")
    assert same.result.status == "duplicate" and same.events == ()
    with pytest.raises(UsageError, match="private memory never changes"):
        store(view, fact("db", "hosted on", "rack 5", agent_id="bob",
                         supersedes=shared.result.id), new_id=lambda p: p + "c")  # fmt: skip
    proc = store(
        view,
        validate(StoreRequest(name="restore", steps=("a",), visibility="shared")),
        new_id=lambda p: p + "e",
    )
    private = store(
        view,
        validate(StoreRequest(name="restore", steps=("b",), agent_id="alice")),
        new_id=lambda p: p + "d",
    )
    assert private.result.version == 2 and private.result.superseded == ()
    assert view.memory(proc.result.id).t_invalid is None  # type: ignore[union-attr]


def test_a_shared_memory_replacing_a_private_one_shows_no_trace_of_it() -> None:
    """Issue 24, item 4: to its other readers, a plain shared memory."""
    view = FakeView()
    secret = store(view, note("my draft plan", agent_id="alice"))
    shared = store(
        view,
        note(
            "the plan, shared", agent_id="alice", visibility="shared", supersedes=secret.result.id
        ),
        new_id=lambda p: p + "_s",
    )
    assert shared.result.superseded == (secret.result.id,) and shared.result.validated == ()
    (stored,) = [e for e in shared.events if isinstance(e, MemoryStored)]
    assert stored.supersedes is None
    assert not [e for e in shared.events if isinstance(e, MemoriesValidated)]
    ended = view.memory(secret.result.id)
    assert ended is not None and ended.superseded_by == shared.result.id
    # A shared version of a procedure is numbered among the shared versions only.
    draft = store(
        view,
        validate(StoreRequest(name="deploy", steps=("a",), agent_id="alice")),
        new_id=lambda p: p + "_d",
    )
    assert draft.result.version == 1
    public = store(
        view,
        validate(
            StoreRequest(
                name="deploy",
                steps=("b",),
                agent_id="alice",
                visibility="shared",
                supersedes=draft.result.id,
            )
        ),
        new_id=lambda p: p + "_p",
    )
    assert public.result.version == 1 and public.result.superseded == (draft.result.id,)
    # Within one visibility, a supersede still links and confirms.
    again = store(
        view,
        note(
            "the plan, revised", agent_id="alice", visibility="shared", supersedes=shared.result.id
        ),
        new_id=lambda p: p + "_r",
    )
    (stored,) = [e for e in again.events if isinstance(e, MemoryStored)]
    assert stored.supersedes == shared.result.id and again.result.validated == (again.result.id,)


def test_a_back_dated_shared_fact_is_not_ended_by_a_private_one() -> None:
    view = FakeView()
    mine = store(
        view,
        fact("ci", "runs on", "Buildkite", agent_id="alice", valid_from="2026-06-01T00:00:00Z"),
    )
    older = store(
        view,
        fact(
            "ci",
            "runs on",
            "Jenkins",
            agent_id="alice",
            visibility="shared",
            valid_from="2025-01-01T00:00:00Z",
        ),
        new_id=lambda p: p + "_o",
    )
    assert older.result.superseded_by is None and older.result.superseded == ()
    current = view.memory(older.result.id)
    assert current is not None and current.t_invalid is None
    assert view.memory(mine.result.id).t_invalid is None  # type: ignore[union-attr]


# -- forget, validate, accesses, eviction ---------------------------------------------------


def test_forget_hides_what_the_caller_cannot_see_and_cascades_entities() -> None:
    view = FakeView()
    a = store(view, note("one", entities=["Solo"], visibility="shared"))
    secret = store(view, note("two", agent_id="alice"), new_id=lambda p: p + "_s")
    decision = decide_forget([a.result.id, secret.result.id], view, cascade=True, caller="bob")
    assert decision.result.forgotten == (a.result.id,)
    assert decision.result.not_found == (secret.result.id,)
    assert decision.result.dropped_entities == (a.result.entities[0].entity_id,)
    forgotten = [e for e in decision.events if isinstance(e, MemoriesForgotten)]
    assert forgotten[0].memory_ids == (a.result.id,)
    with pytest.raises(UsageError):
        decide_forget([], view)


def test_a_cascade_keeps_an_entity_only_for_those_whose_private_memories_name_it() -> None:
    """Issue 24, item 3: bob's answer is the same whether or not alice's private memory
    names the entity; she keeps it, he (and everyone else) sees it dropped."""
    answers = []
    for alice_writes in (True, False):
        view = FakeView()
        shared = store(
            view,
            note("gateway notes", agent_id="bob", visibility="shared", entities=["Osprey Gateway"]),
        )
        entity = shared.result.entities[0].entity_id
        if alice_writes:
            mine = store(
                view,
                note("my gateway", agent_id="alice", entities=["Osprey Gateway"]),
                new_id=lambda p: p + "_a",
            )
            assert mine.result.entities[0].entity_id == entity  # the shared entity
        decision = decide_forget([shared.result.id], view, cascade=True, caller="bob")
        answers.append(decision.result)
        (forgotten,) = decision.events
        assert isinstance(forgotten, MemoriesForgotten)
        if alice_writes:
            assert forgotten.dropped_entity_ids == ()
            assert forgotten.kept_entities == (KeptEntity(entity, ("alice",)),)
            view.add(list(decision.events))
            (kept,) = view.spellings("default")
            assert kept.viewers == ("alice",)
            # Alice still names it; a shared store (bob's or hers) makes a new entity.
            again = store(
                view,
                note("gateway again", agent_id="alice", entities=["Osprey Gateway"]),
                new_id=lambda p: p + "_b",
            )
            assert again.result.entities[0].entity_id == entity
            other = store(
                view,
                note(
                    "bob's gateway",
                    agent_id="bob",
                    visibility="shared",
                    entities=["Osprey Gateway"],
                ),
                new_id=lambda p: p + "_c",
            )
            assert other.result.entities[0].entity_id != entity
        else:
            assert forgotten.dropped_entity_ids == (entity,) and forgotten.kept_entities == ()
    assert answers[0] == answers[1]
    assert answers[0].dropped_entities == (answers[0].dropped_entities[0],)


def test_a_forget_of_private_memories_never_takes_a_shared_entity() -> None:
    view = FakeView()
    shared = store(view, note("grafana dashboards", visibility="shared", entities=["Grafana"]))
    view.add(list(decide_forget([shared.result.id], view).events))  # no cascade: an orphan
    mine = store(
        view, note("my grafana", agent_id="alice", entities=["Grafana"]), new_id=lambda p: p + "_a"
    )
    decision = decide_forget([mine.result.id], view, cascade=True, caller="alice")
    (forgotten,) = decision.events
    assert isinstance(forgotten, MemoriesForgotten)
    assert forgotten.dropped_entity_ids == () and forgotten.kept_entities == ()
    assert decision.result.dropped_entities == ()
    # Her own private entity goes with her last memory naming it.
    own = store(
        view, note("zanzibar", agent_id="alice", entities=["Zanzibar"]), new_id=lambda p: p + "_z"
    )
    gone = decide_forget([own.result.id], view, cascade=True, caller="alice")
    assert gone.result.dropped_entities == (own.result.entities[0].entity_id,)


def test_validate_reports_invisible_ids_as_not_found() -> None:
    view = FakeView()
    secret = store(view, note("alice's", agent_id="alice"))
    decision = decide_validate([secret.result.id], view, now=NOW, caller="bob")
    assert decision.events == () and decision.result.not_found == (secret.result.id,)
    mine = decide_validate([secret.result.id], view, now=NOW, caller="alice")
    assert isinstance(mine.events[0], MemoriesValidated)


def test_accesses_of_forgotten_memories_are_dropped() -> None:
    view = FakeView()
    kept = store(view, note("kept"))
    decision = decide_access({kept.result.id: (2, NOW), "mem_gone": (1, NOW)}, view)
    event = decision.events[0]
    assert isinstance(event, MemoriesAccessed)
    assert [(a.memory_id, a.count) for a in event.accesses] == [(kept.result.id, 2)]


def test_eviction_uses_the_staleness_it_is_given() -> None:
    view = FakeView()
    old = store(view, note("x" * 400, valid_from="2020-01-01T00:00:00Z"))
    memories = [replace(m, created_at=(NOW - timedelta(days=2000)).timestamp())
                for m in view.rows.values()]  # fmt: skip
    calls: list[str] = []

    def staleness(namespace: str):  # type: ignore[no-untyped-def]
        calls.append(namespace)
        return DEFAULT_STALENESS

    decision = decide_eviction(memories, budget=10, now=NOW, staleness=staleness)
    assert decision.result.forgotten == (old.result.id,)
    assert calls == ["default"]
    assert decide_eviction(memories, budget=10_000, now=NOW, staleness=staleness).events == ()


# -- the overlay -------------------------------------------------------------------------------


def test_the_overlay_shows_pending_decisions_like_applied_ones() -> None:
    base = FakeView()
    overlay = Overlay(base)
    stored = MemoryStored(
        memory_id="mem_1",
        namespace="default",
        memory_type="semantic",
        t_valid=NOW,
        body=MemoryBody(subject="API", predicate="version", object="1",
                        predicate_normalized="version"),
    )  # fmt: skip
    overlay.apply([stored])
    assert [m.memory_id for m in overlay.active_facts("default", "api", "version")] == ["mem_1"]
    overlay.apply(
        [MemorySuperseded(memory_id="mem_1", namespace="default", t_invalid=NOW,
                          superseded_by="mem_2")]
    )  # fmt: skip
    assert overlay.active_facts("default", "api", "version") == []
    assert overlay.memory("mem_1").superseded_by == "mem_2"  # type: ignore[union-attr]
    overlay.apply([MemoriesForgotten(memory_ids=("mem_1",), namespace="default")])
    assert overlay.memory("mem_1") is None and base.memory("mem_1") is None


def test_a_relation_no_rule_places_but_that_embeds_close_is_stored_and_flagged() -> None:
    view = FakeView()
    first = store(view, fact("office", "located in", "Berlin"))
    flagged = store(view, fact("office", "situated in", "Munich"), cosine=0.88,
                    new_id=lambda p: p + "_2")  # fmt: skip
    assert flagged.result.status == "stored" and flagged.result.superseded == ()
    assert flagged.result.possible_conflict == (first.result.id,)
    (event,) = [e for e in flagged.events if isinstance(e, FactsPossiblyConflicting)]
    assert event.reason == "relation" and event.entity_id == event.other_entity_id
    answer = flagged.result.as_dict()
    assert answer["possible_conflict_with"] == [
        {"id": first.result.id, "fact": "office located in Berlin", "reason": "relation"}
    ]
    note = answer["possible_conflict_note"]
    assert f"supersedes={first.result.id}" in note and f"differs_from={first.result.id}" in note
    # Far apart: another relation of its own, nothing flagged.
    apart = FakeView()
    store(apart, fact("office", "located in", "Berlin"))
    other = store(apart, fact("office", "situated in", "Munich"), cosine=0.5,
                  new_id=lambda p: p + "_3")  # fmt: skip
    assert other.result.status == "stored" and other.result.possible_conflict == ()


def test_two_values_of_one_kind_worded_alike_replace_one_another() -> None:
    view = FakeView()
    first = store(view, fact("auth gateway", "runs on", "k8s-node-07"))
    moved = store(view, fact("auth gateway", "is hosted at", "k8s-node-12"), cosine=0.83,
                  new_id=lambda p: p + "_2")  # fmt: skip
    assert moved.result.superseded == (first.result.id,)
    assert moved.result.possible_conflict == ()
    note = moved.result.as_dict()["replaced_note"]
    assert note.startswith(f"replaced {first.result.id} (auth gateway runs on k8s-node-07)")
    assert "multi_valued=true" in note
    # Two kinds of value (a version, a duration) are two slots, however close the words.
    store(view, fact("public api", "latest version", "v2"), new_id=lambda p: p + "_3")
    timeout = store(view, fact("public api", "default timeout", "30s"), cosine=0.95,
                    new_id=lambda p: p + "_4")  # fmt: skip
    assert timeout.result.superseded == () and timeout.result.possible_conflict == ()


def test_a_second_value_of_a_plural_relation_is_kept_beside_the_first() -> None:
    view = FakeView()
    first = store(view, fact("team-engage", "member", "Priya Nair"))
    second = store(view, fact("team-engage", "member", "Jonas Berg"), cosine=0.2,
                   new_id=lambda p: p + "_2")  # fmt: skip
    assert second.result.superseded == () and second.result.multi_valued
    assert "supersedes" in second.result.as_dict()["plural_note"]
    assert view.memory(first.result.id) is not None
    # A sibling predicate (max retries / max connections) is another slot.
    store(view, fact("push-svc", "max retries", "5"), new_id=lambda p: p + "_3")
    conns = store(view, fact("push-svc", "max connections", "50"), cosine=0.99,
                  new_id=lambda p: p + "_4")  # fmt: skip
    assert conns.result.superseded == () and conns.result.possible_conflict == ()


def test_an_inverse_relation_is_never_asked_about() -> None:
    view = FakeView()
    store(view, fact("ledger", "owned by", "team payments"))
    inverse = store(view, fact("ledger", "owns", "the invoices table"), cosine=0.99,
                    new_id=lambda p: p + "_2")  # fmt: skip
    assert inverse.result.status == "stored" and inverse.result.superseded == ()


def test_multi_valued_or_supersedes_settles_an_ambiguous_relation() -> None:
    view = FakeView()
    first = store(view, fact("office", "located in", "Berlin"))
    both = store(view, fact("office", "situated in", "Munich"), cosine=0.88, multi_valued=True,
                 new_id=lambda p: p + "_2")  # fmt: skip
    assert both.result.status == "stored"
    replaced = store(
        view,
        fact("office", "situated in", "Hamburg", supersedes=first.result.id),
        cosine=0.88,
        new_id=lambda p: p + "_3",
    )
    assert replaced.result.superseded == (first.result.id,)


def test_what_a_request_measures_covers_the_spellings_its_earlier_names_add() -> None:
    view = FakeView()
    store(view, note("db notes", entities=["PostgreSQL"], visibility="shared"))
    # "Postgres" joins PostgreSQL by the fuzzy tier and becomes a spelling that "staging",
    # new, is then compared with by embedding: the decision asks for that pair too.
    measured = Similar(otherwise=0.1)
    decision = store(
        view,
        note("staging db", entities=["Postgres", "staging"], visibility="shared"),
        measured,
        new_id=lambda p: p + "_2",
    )
    kinds = [e.match for e in decision.result.entities]
    assert kinds == ["fuzzy", "new"]
    assert ("staging", "Postgres") in measured.asked


# -- derived episodes ----------------------------------------------------------------------


def _episode(decision: object) -> tuple[str | None, int]:
    stored = [e for e in decision.events if isinstance(e, MemoryStored)]  # type: ignore[attr-defined]
    return stored[0].episode_id, stored[0].episode_index


def test_one_agents_consecutive_notes_form_an_episode_until_a_gap() -> None:
    view, new_id = FakeView(), ids()
    first = store(view, note("we met at the cafe", agent_id="a"), new_id=new_id)
    second = store(view, note("she ordered tea", agent_id="a"), new_id=new_id,
                   now=NOW + timedelta(minutes=20))  # fmt: skip
    third = store(view, note("then we left", agent_id="a"), new_id=new_id,
                  now=NOW + timedelta(minutes=49))  # fmt: skip
    later = store(view, note("the next day, rain", agent_id="a"), new_id=new_id,
                  now=NOW + timedelta(minutes=49, seconds=1801))  # fmt: skip
    assert _episode(first) == (first.result.id, 0)
    assert _episode(second) == (first.result.id, 1)
    assert _episode(third) == (first.result.id, 2)  # the gap is step by step
    assert _episode(later) == (later.result.id, 0)


def test_a_source_facts_and_other_chains_do_not_join_an_episode() -> None:
    view, new_id = FakeView(), ids()
    first = store(view, note("line one", agent_id="a"), new_id=new_id)
    assert _episode(store(view, note("cited", agent_id="a", source="chat/1"),
                          new_id=new_id)) == (None, 0)  # fmt: skip
    assert _episode(store(view, fact("a", "likes", "tea", agent_id="a"),
                          new_id=new_id)) == (None, 0)  # fmt: skip
    assert _episode(store(view, note("a document " * 100, agent_id="a"),
                          new_id=new_id)) == (None, 0)  # fmt: skip
    other_agent = store(view, note("line of b", agent_id="b"), new_id=new_id)
    shared = store(view, note("shared line", agent_id="a", visibility="shared"), new_id=new_id)
    elsewhere = store(view, note("other ns", agent_id="a", namespace="x"), new_id=new_id)
    for decision in (other_agent, shared, elsewhere):
        assert _episode(decision) == (decision.result.id, 0)
    assert _episode(store(view, note("line two", agent_id="a"), new_id=new_id)) == (
        first.result.id, 1)  # fmt: skip


def test_an_episode_continues_across_a_batch_through_the_overlay() -> None:
    base = FakeView()
    base.tails[("default", None, "shared")] = EpisodeTail("mem_old", 4, NOW.timestamp() - 7200)
    overlay, new_id = Overlay(base), ids()
    decisions = []
    for text in ("import line one", "import line two", "import line three"):
        decision = decide_store(note(text), overlay, Similar((), {}), now=NOW,  # type: ignore[arg-type]
                                new_id=new_id, settings=SETTINGS)  # type: ignore[arg-type]  # fmt: skip
        overlay.apply(decision.events)
        decisions.append(decision)
    head = decisions[0].result.id
    assert [_episode(d) for d in decisions] == [(head, 0), (head, 1), (head, 2)]


def test_episode_of_is_a_pure_rule() -> None:
    assert episode_of(None, "mem_1", NOW, 60.0) == ("mem_1", 0)
    tail = EpisodeTail("mem_0", 3, NOW.timestamp() - 60.0)
    assert episode_of(tail, "mem_1", NOW, 60.0) == ("mem_0", 4)
    assert episode_of(tail, "mem_1", NOW, 59.0) == ("mem_1", 0)
    future = EpisodeTail("mem_0", 3, NOW.timestamp() + 5)  # a clock that went back
    assert episode_of(future, "mem_1", NOW, 60.0) == ("mem_1", 0)
    assert episode_of(EpisodeTail("mem_0", 0, None), "mem_1", NOW, 0.0) == ("mem_0", 1)


def test_only_texts_that_look_like_turns_join_a_derived_episode() -> None:
    assert looks_like_turn("short note about the deploy", 1000)
    assert looks_like_turn("x" * 500, 1000) and not looks_like_turn("x" * 501, 1000)
    # A longer text joins when a speaker's label opens it, up to the whole limit.
    assert looks_like_turn("Sam: " + "so much to say " * 50, 1000)
    assert looks_like_turn("Dr. Lee: " + "a long answer " * 50, 1000)
    assert not looks_like_turn("Sam: " + "x" * 1000, 1000)
    # An abstract is not a turn, even with a colon somewhere in its first line.
    abstract = "Microglia in the developing brain: a review. " + "Cells were counted. " * 30
    assert not looks_like_turn(abstract, 1000)
    assert not looks_like_turn("42: " + "x" * 600, 1000)
    view, new_id = FakeView(), ids()
    store(view, note("first line", agent_id="a"), new_id=new_id)
    assert _episode(store(view, note("Sentences. " * 60, agent_id="a"), new_id=new_id)) == (
        None, 0)  # fmt: skip


# -- lifecycle marks: importance, pin, time to live -------------------------------------------


def test_a_store_at_the_default_marks_appends_no_marked_event() -> None:
    view = FakeView()
    plain = store(view, note("deploy notes for billing"))
    assert not any(isinstance(e, MemoryMarked) for e in plain.events)
    assert "pinned" not in plain.result.as_dict() and "importance" not in plain.result.as_dict()
    explicit = store(view, note("rollback notes for billing", importance=0.5))
    assert not any(isinstance(e, MemoryMarked) for e in explicit.events)


def test_a_marked_store_carries_its_marks_and_an_absolute_expiry() -> None:
    view = FakeView()
    kept = store(view, note("the on-call rota lives in the wiki", importance=0.9, pinned=True))
    marked = [e for e in kept.events if isinstance(e, MemoryMarked)]
    assert [(e.memory_id, e.importance, e.pinned, e.expires_at) for e in marked] == [
        (kept.result.id, 0.9, True, None)
    ]
    assert kept.result.as_dict()["pinned"] is True and kept.result.as_dict()["importance"] == 0.9
    scratch = store(view, note("scratch: trying the cache flag", ttl="2h"), new_id=lambda p: "m2")
    (event,) = [e for e in scratch.events if isinstance(e, MemoryMarked)]
    assert event.expires_at == NOW + timedelta(hours=2)
    assert scratch.result.as_dict()["expires_at"] == "2026-12-01T14:00:00Z"
    memory = view.memory("m2")
    assert memory is not None and memory.expires_at == (NOW + timedelta(hours=2)).timestamp()


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"importance": 1.5}, "importance 1.5"),
        ({"importance": True}, "importance must be a number"),
        ({"importance": float("nan")}, "importance nan"),
        ({"ttl": "5x"}, "not a duration"),
        ({"ttl": 0}, "between 1 second"),
        ({"ttl": "400d"}, "between 1 second"),
        ({"ttl": 1.5}, "ttl must be seconds"),
        ({"pinned": "yes"}, "pinned must be true or false"),
        ({"pinned": True, "ttl": "90s"}, "both pinned and expiring"),
    ],
)
def test_bad_marks_are_refused_before_any_decision(fields: dict[str, object], words: str) -> None:
    with pytest.raises(UsageError, match=words) as caught:
        note("a note", **fields)
    assert caught.value.code == "invalid_input"


def test_a_pinned_fact_yields_to_an_explicit_supersede_but_not_to_a_conflict() -> None:
    view = FakeView()
    pinned = store(view, fact("billing", "uses", "PostgreSQL 15", pinned=True))
    with pytest.raises(Refused) as caught:
        store(view, fact("billing", "uses", "CockroachDB", valid_from="2026-12-01T08:00:00Z"),
              new_id=lambda p: f"{p}_new")  # fmt: skip
    assert caught.value.code == "conflict_ambiguous"
    assert caught.value.details["ids"] == [pinned.result.id] and caught.value.details["pinned"]
    assert f"supersedes={pinned.result.id}" in (caught.value.hint or "")
    still = view.memory(pinned.result.id)
    assert still is not None and still.t_invalid is None
    replaced = store(
        view,
        fact("billing", "uses", "CockroachDB", supersedes=pinned.result.id),
        new_id=lambda p: f"{p}_explicit",
    )
    assert replaced.result.superseded == (pinned.result.id,)
    gone = view.memory(pinned.result.id)
    assert gone is not None and gone.superseded_by == replaced.result.id


def test_mark_sets_only_what_it_is_given_and_journals_only_changes() -> None:
    view = FakeView()
    a = store(view, note("billing runbook", importance=0.8))
    decision = decide_mark([a.result.id], view, now=NOW, pinned=True)
    (event,) = decision.events
    assert isinstance(event, MemoryMarked)
    assert (event.importance, event.pinned, event.expires_at) == (0.8, True, None)
    view.add(list(decision.events))
    assert decide_mark([a.result.id], view, now=NOW, pinned=True).events == ()
    lower = decide_mark([a.result.id, "mem_gone"], view, now=NOW, importance=0.2)
    assert lower.result.marked == (a.result.id,) and lower.result.not_found == ("mem_gone",)
    assert [(e.importance, e.pinned) for e in lower.events] == [(0.2, True)]  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="say what to mark"):
        decide_mark([a.result.id], view, now=NOW)
    with pytest.raises(UsageError, match="importance 2"):
        decide_mark([a.result.id], view, now=NOW, importance=2)


def test_pinning_an_expiring_memory_keeps_it_and_an_expired_one_is_not_found() -> None:
    view = FakeView()
    scratch = store(view, note("scratch: cache experiment", ttl=600))
    keep = decide_mark([scratch.result.id], view, now=NOW, pinned=True)
    (event,) = keep.events
    assert isinstance(event, MemoryMarked) and event.pinned and event.expires_at is None
    later = NOW + timedelta(seconds=600)
    late = decide_mark([scratch.result.id], view, now=later, pinned=True)
    assert late.events == () and late.result.not_found == (scratch.result.id,)


def test_marks_follow_visibility() -> None:
    view = FakeView()
    secret = store(view, note("alice's private plan", agent_id="alice"))
    theirs = decide_mark([secret.result.id], view, now=NOW, pinned=True, caller="bob")
    assert theirs.events == () and theirs.result.not_found == (secret.result.id,)
    mine = decide_mark([secret.result.id], view, now=NOW, pinned=True, caller="alice")
    assert mine.result.marked == (secret.result.id,)


def test_expiry_forgets_what_is_due_and_nothing_else() -> None:
    view = FakeView()
    soon = store(view, note("scratch one", ttl="90s"), new_id=lambda p: "m_soon")
    later = store(view, note("scratch two", ttl="2h"), new_id=lambda p: "m_later")
    other = store(view, note("scratch three", ttl="1m", namespace="ops"), new_id=lambda p: "m_ops")
    kept = store(view, note("kept forever"), new_id=lambda p: "m_kept")
    memories = list(view.rows.values())
    assert decide_expiry(memories, now=NOW + timedelta(seconds=59)).events == ()
    decision = decide_expiry(memories, now=NOW + timedelta(seconds=90))
    assert decision.result.forgotten == ("m_ops", "m_soon")
    assert [(e.namespace, e.memory_ids, e.reason, e.details) for e in decision.events] == [  # type: ignore[attr-defined]
        ("default", ("m_soon",), "expired", ("expired at 2026-12-01T12:01:30Z",)),
        ("ops", ("m_ops",), "expired", ("expired at 2026-12-01T12:01:00Z",)),
    ]
    assert later.result.id not in decision.result.forgotten
    assert kept.result.id not in decision.result.forgotten and soon.result.id == "m_soon"
    assert other.result.id == "m_ops"


def test_eviction_never_takes_a_pinned_memory() -> None:
    view = FakeView()
    store(view, note("x" * 400, valid_from="2020-01-01T00:00:00Z", pinned=True))
    memories = [replace(m, created_at=(NOW - timedelta(days=2000)).timestamp())
                for m in view.rows.values()]  # fmt: skip
    decision = decide_eviction(
        memories, budget=10, now=NOW, staleness=lambda namespace: DEFAULT_STALENESS
    )
    assert decision.events == ()
    unpinned = [replace(m, pinned=False) for m in memories]
    evicted = decide_eviction(
        unpinned, budget=10, now=NOW, staleness=lambda namespace: DEFAULT_STALENESS
    )
    assert evicted.result.forgotten == (memories[0].memory_id,)


def test_a_fact_stored_again_with_a_pin_pins_the_fact_it_repeats() -> None:
    view = FakeView()
    first = store(view, fact("billing", "owned by", "team payments", importance=0.7))
    again = store(view, fact("billing", "owned by", "team payments", pinned=True),
                  new_id=lambda p: f"{p}_x")  # fmt: skip
    assert again.result.status == "duplicate" and again.result.pinned
    assert again.result.importance == 0.7
    (marked,) = [e for e in again.events if isinstance(e, MemoryMarked)]
    assert (marked.memory_id, marked.pinned, marked.importance) == (first.result.id, True, 0.7)
    plain = store(view, fact("billing", "owned by", "team payments"), new_id=lambda p: f"{p}_y")
    assert not any(isinstance(e, MemoryMarked) for e in plain.events)
    assert plain.result.as_dict()["pinned"] is True  # the answer tells the marks it has


def test_an_expired_memory_is_gone_for_the_decisions_before_the_sweep() -> None:
    view = FakeView()
    scratch = store(view, fact("cache", "state", "on", ttl="1m"), new_id=lambda p: "m_old")
    later = NOW + timedelta(minutes=1)
    again = store(view, fact("cache", "state", "on"), now=later, new_id=lambda p: "m_new")
    assert again.result.status == "stored" and again.result.superseded == ()
    with pytest.raises(Refused) as caught:
        store(view, note("x", supersedes=scratch.result.id), now=later, new_id=lambda p: "m3")
    assert caught.value.code == "not_found"
    checked = decide_validate([scratch.result.id], view, now=later)
    assert checked.events == () and checked.result.not_found == (scratch.result.id,)
    before = decide_validate([scratch.result.id], view, now=NOW)
    assert before.result.validated == (scratch.result.id,)


def test_a_near_copy_of_an_expired_memory_is_no_duplicate() -> None:
    view = FakeView()
    text = "Scratch: the staging cache flag is on"
    scratch = store(view, note(text, ttl="1m"), new_id=lambda p: "m_old")
    near = Similar(((scratch.result.id, 0.99),), {})
    with pytest.raises(Refused) as caught:
        store(view, note(text), near, now=NOW, new_id=lambda p: "m_dup")
    assert caught.value.code == "duplicate"
    later = NOW + timedelta(minutes=1)
    again = store(view, note(text), near, now=later, new_id=lambda p: "m_new")
    assert again.result.status == "stored"


def test_a_recall_confirms_only_ids_it_showed() -> None:
    assert confirmable(["mem_b", "mem_a"], ["mem_a", "mem_b", "mem_c"]) == ["mem_b", "mem_a"]
    with pytest.raises(UsageError, match="not returned: mem_x") as refused:
        confirmable(["mem_a", "mem_x"], ["mem_a"])
    assert refused.value.code == "invalid_input"


# -- settling a possible conflict ----------------------------------------------------------


def test_an_agent_settles_a_possible_conflict_by_either_fact() -> None:
    view = FakeView()
    first = store(view, fact("office", "located in", "Berlin", visibility="shared"))
    second = store(view, fact("office", "situated in", "Munich", visibility="shared"),
                   cosine=0.88, new_id=lambda p: p + "_2")  # fmt: skip
    new, old = second.result.id, first.result.id
    both = decide_settle([new], view, now=NOW, differs_from=[old, "mem_gone"])
    assert [type(e).__name__ for e in both.events] == ["FactsDiffer"]
    assert both.result.differ == ((new, old),) and both.result.not_found == ("mem_gone",)
    ends = decide_settle([new], view, now=NOW, supersedes=old)
    (ended,) = ends.events
    assert isinstance(ended, MemorySuperseded)
    assert (ended.memory_id, ended.superseded_by, ended.reason) == (old, new, "explicit")
    # Another agent's private fact is not found, and a private fact ends no shared one.
    mine = store(view, fact("office", "lies in", "Bonn", visibility="private", agent_id="al"),
                 new_id=lambda p: p + "_3")  # fmt: skip
    # Named alone, it is refused like an id that never was: nothing to tell apart, and the
    # confirm it came with writes nothing either.
    for unseen in (mine.result.id, "mem_01M9ZZZZZZZZZZZZZZZZZZZZZZ"):
        with pytest.raises(NotFound, match=f"differs_from names no memory you can see: {unseen}"):
            decide_settle([new], view, now=NOW, differs_from=[unseen], caller="bo")
    with pytest.raises(UsageError):
        decide_settle([mine.result.id], view, now=NOW, supersedes=old, caller="al")


def test_a_fact_settles_no_conflict_by_superseding_itself_or_from_the_past() -> None:
    """confirm ids=[X] supersedes=X ended X with X as its own successor, and a fact already
    replaced could replace its own successor (each ended by the other): both leave the slot
    with no current value. Both are refused and write nothing."""
    view = FakeView()
    old = store(view, fact("checkout service", "request timeout", "30 seconds"))
    new = store(view, fact("checkout service", "request timeout", "45 seconds"),
                new_id=lambda p: p + "_2")  # fmt: skip
    assert new.result.superseded == (old.result.id,)
    with pytest.raises(UsageError, match="cannot supersede itself"):
        decide_settle([new.result.id], view, now=NOW, supersedes=new.result.id)
    with pytest.raises(UsageError, match=f"already superseded by {new.result.id}"):
        decide_settle([old.result.id], view, now=NOW, supersedes=new.result.id)
    assert view.memory(new.result.id).t_invalid is None  # type: ignore[union-attr]
    # Nor does a fact differ from itself: `ferrex differ X X` said nothing and exited 0.
    with pytest.raises(UsageError, match="cannot differ from itself"):
        decide_settle([new.result.id], view, now=NOW, differs_from=[new.result.id])


def test_plural_values_kept_beside_are_named_and_a_disagreeing_wording_is_flagged() -> None:
    view = FakeView()
    first = store(view, fact("ledger-api", "depends on", "Postgres"))
    second = store(view, fact("ledger-api", "depends on", "Redis"), new_id=lambda p: p + "_2")
    assert second.result.superseded == () and second.result.possible_conflict == ()
    answer = second.result.as_dict()
    assert answer["kept_beside"] == [
        {"id": first.result.id, "fact": "ledger-api depends on Postgres", "reason": "plural"}
    ]
    assert (
        f"confirm ids=[{second.result.id}] supersedes={first.result.id}" in (answer["plural_note"])
    )
    # ``maintained by`` reads as one owner, ``maintainer`` as one of many: both kept, flagged.
    owner = store(view, fact("llm-gateway", "maintained by", "Lucia Ferri"),
                  new_id=lambda p: p + "_3")  # fmt: skip
    team = store(view, fact("llm-gateway", "maintainer", "ml-infra team"),
                 new_id=lambda p: p + "_4")  # fmt: skip
    assert team.result.superseded == () and team.result.possible_conflict == (owner.result.id,)
    assert f"supersedes={owner.result.id}" in team.result.as_dict()["possible_conflict_note"]
    # One thing at another version is a change, even of a relation of many values.
    r18 = store(view, fact("web", "depends on", "react 18"), new_id=lambda p: p + "_7")
    r19 = store(view, fact("web", "depends on", "react 19"), new_id=lambda p: p + "_8")
    assert r19.result.superseded == (r18.result.id,) and not r19.result.plural
    # A limit is one value, whatever its noun's number (max retries 5, then 3).
    five = store(view, fact("push-svc", "max retries", "5"), new_id=lambda p: p + "_5")
    three = store(view, fact("push-svc", "max retries", "3"), new_id=lambda p: p + "_6")
    assert three.result.superseded == (five.result.id,) and not three.result.plural


def test_two_sure_slots_are_one_too_many_both_flagged() -> None:
    view = FakeView()
    a = store(view, fact("billing worker", "runs on", "bw-node-3"))
    b = store(view, fact("billing worker", "lives on", "bw-node-4"), new_id=lambda p: p + "_2")
    moved = store(view, fact("billing worker", "hosted at", "bw-node-9"), cosine=0.9,
                  new_id=lambda p: p + "_3")  # fmt: skip
    assert moved.result.superseded == ()
    assert set(moved.result.possible_conflict) == {a.result.id, b.result.id}


def test_a_bare_value_flags_the_closest_slot_never_replaces_it() -> None:
    view = FakeView()
    engine = store(view, fact("orbit-db", "storage engine", "RocksDB"))
    store(view, fact("orbit-db", "owned by", "team Nova"), new_id=lambda p: p + "_2")
    mine = fact_phrase("is_a", "LMDB")
    near = Similar(cosines_of={(mine, fact_phrase("storage_engine", "RocksDB")): 0.35,
                               (mine, fact_phrase("owned_by", "team Nova")): 0.15})  # fmt: skip
    bare = store(view, fact("orbit-db", "is", "LMDB"), near, new_id=lambda p: p + "_3")
    assert bare.result.superseded == () and bare.result.possible_conflict == (engine.result.id,)
