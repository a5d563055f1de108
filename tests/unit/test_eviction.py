"""Eviction under a storage budget: the documented priority, the protected memories, one plan."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.errors import UsageError
from ferrex.rules.eviction import EvictionCandidate, EvictionParams, eviction_plan, eviction_reason
from ferrex.rules.freshness import DAY

NOW = 1_800_000_000.0
EVERYTHING = 10**12


def candidate(memory_id: str, **changes: object) -> EvictionCandidate:
    """A stale, never recalled, unlinked episodic memory of 100 bytes, unless changed."""
    c = EvictionCandidate(
        memory_id=memory_id,
        type="episodic",
        size_bytes=100,
        t_invalid=None,
        staleness=0.8,
        label="stale",
        access_count=0,
        last_accessed=None,
        referenced_by_entities=False,
    )
    return replace(c, **changes)  # type: ignore[arg-type]


def superseded(memory_id: str, days_ago: float, memory_type: str = "semantic") -> EvictionCandidate:
    return candidate(
        memory_id,
        type=memory_type,
        t_invalid=NOW - days_ago * DAY,
        label="superseded",
        staleness=0.2,
    )


MIXED = [
    candidate("e-linked", referenced_by_entities=True, staleness=0.9),
    candidate("e-stale-2", staleness=0.7),
    superseded("s-old", 400),
    candidate("e-recent-use", access_count=4, last_accessed=NOW - DAY, staleness=0.95),
    candidate("e-stale-1", staleness=0.9),
    superseded("p-older", 500, "procedural"),
    superseded("s-recent", 30),
    candidate("sem-stale", type="semantic", staleness=0.99),
    candidate("proc-stale", type="procedural", staleness=0.99),
    candidate("e-aging", label="aging", staleness=0.5),
    candidate("e-fresh", label="fresh", staleness=0.1),
]


def test_the_documented_priority() -> None:
    assert eviction_plan(MIXED, EVERYTHING, NOW) == [
        ("p-older", "superseded_past_retention"),
        ("s-old", "superseded_past_retention"),
        ("e-stale-1", "stale_unreferenced_episodic"),
        ("e-stale-2", "stale_unreferenced_episodic"),
        ("e-recent-use", "stale_episodic"),
        ("e-linked", "stale_episodic"),
    ]


def test_the_plan_stops_once_the_overshoot_is_covered() -> None:
    assert eviction_plan(MIXED, 1, NOW) == [("p-older", "superseded_past_retention")]
    assert [m for m, _ in eviction_plan(MIXED, 100, NOW)] == ["p-older"]
    assert [m for m, _ in eviction_plan(MIXED, 101, NOW)] == ["p-older", "s-old"]
    assert [m for m, _ in eviction_plan(MIXED, 300, NOW)] == ["p-older", "s-old", "e-stale-1"]


def test_sizes_decide_where_the_plan_stops() -> None:
    memories = [superseded("big", 200), replace(superseded("small", 300), size_bytes=10)]
    assert [m for m, _ in eviction_plan(memories, 500, NOW)] == ["small", "big"]
    assert [m for m, _ in eviction_plan(memories, 10, NOW)] == ["small"]


@pytest.mark.parametrize("bytes_over", [0, -5])
def test_nothing_is_planned_within_budget(bytes_over: int) -> None:
    assert eviction_plan(MIXED, bytes_over, NOW) == []


def test_a_shortfall_returns_every_evictable_memory_and_nothing_protected() -> None:
    overshoot = 10_000
    plan = eviction_plan(MIXED, overshoot, NOW)
    planned = {m for m, _ in plan}
    assert planned == {"p-older", "s-old", "e-stale-1", "e-stale-2", "e-recent-use", "e-linked"}
    # What the caller reports: the overshoot the plan could not cover.
    freed = sum(c.size_bytes for c in MIXED if c.memory_id in planned)
    assert overshoot - freed == 9_400


@pytest.mark.parametrize(
    "protected",
    [
        candidate("active fact", type="semantic", staleness=1.0),
        candidate("active procedure", type="procedural", staleness=1.0),
        candidate("aging note", label="aging", staleness=0.59),
        candidate("fresh note", label="fresh", staleness=0.0),
        superseded("recently superseded", 89.9),
        # Superseded in the future: still active, and an active fact.
        candidate("fact", type="semantic", t_invalid=NOW + DAY, staleness=1.0),
    ],
)
def test_protected_memories_are_never_evicted(protected: EvictionCandidate) -> None:
    assert eviction_reason(protected, NOW) is None
    assert eviction_plan([protected], EVERYTHING, NOW) == []


def test_retention_starts_at_the_invalidation() -> None:
    edge = NOW - 90 * DAY
    assert eviction_reason(superseded("x", 0, "episodic"), NOW) is None
    assert eviction_reason(candidate("x", t_invalid=edge), NOW) == "superseded_past_retention"
    assert eviction_reason(candidate("x", t_invalid=edge + 1), NOW) is None
    longer = EvictionParams(superseded_retention_days=365)
    assert eviction_reason(candidate("x", t_invalid=edge), NOW, longer) is None


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({}, "stale_unreferenced_episodic"),
        ({"access_count": 3, "last_accessed": NOW - 90 * DAY}, "stale_unreferenced_episodic"),
        ({"access_count": 3, "last_accessed": NOW - 90 * DAY + 1}, "stale_episodic"),
        ({"access_count": 3, "last_accessed": NOW - DAY}, "stale_episodic"),
        ({"referenced_by_entities": True}, "stale_episodic"),
    ],
)
def test_unreferenced_means_unlinked_and_unused(changes: dict[str, object], reason: str) -> None:
    assert eviction_reason(candidate("x", **changes), NOW) == reason


def test_the_unused_window_is_a_parameter() -> None:
    used_last_month = candidate("x", access_count=1, last_accessed=NOW - 30 * DAY)
    assert eviction_reason(used_last_month, NOW) == "stale_episodic"
    short = EvictionParams(unused_after_days=7)
    assert eviction_reason(used_last_month, NOW, short) == "stale_unreferenced_episodic"


def test_ties_are_broken_by_id() -> None:
    memories = [candidate(i) for i in ("c", "a", "b")]
    memories += [superseded(i, 100) for i in ("z", "x", "y")]
    assert [m for m, _ in eviction_plan(memories, EVERYTHING, NOW)] == [
        "x",
        "y",
        "z",
        "a",
        "b",
        "c",
    ]


@given(st.permutations(MIXED), st.integers(min_value=-1, max_value=800))
def test_the_plan_does_not_depend_on_input_order(
    shuffled: list[EvictionCandidate], bytes_over: int
) -> None:
    assert eviction_plan(shuffled, bytes_over, NOW) == eviction_plan(MIXED, bytes_over, NOW)


@pytest.mark.parametrize("field", ["superseded_retention_days", "unused_after_days"])
@pytest.mark.parametrize("days", [-1.0, float("nan")])
def test_eviction_windows_are_checked(field: str, days: float) -> None:
    with pytest.raises(UsageError, match=field):
        EvictionParams(**{field: days})
