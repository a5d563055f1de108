"""The rule *stale* in SQL never says other than Python: on a real read-model file, for
generated times and staleness settings, the score SQLite computes
(``predicates.STALENESS_SCORE``) is Python's (``ferrex.rules.freshness.staleness``) to a few
units in the last place; a memory SQL puts in a sure band has that label in Python; and the
clock bound that keeps a memory out of the SQL (``read.labels.clock_bound``) keeps out only
memories Python calls fresh. So every label stats and reflect give is Python's."""

from __future__ import annotations

import math
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrex.read.labels import RARELY_RECALLED, clock_bound, scoring
from ferrex.rules.assess import freshness_input
from ferrex.rules.freshness import (
    DAY,
    StalenessParams,
    StalenessWeights,
    TypeStaleness,
    staleness,
)
from journal import (
    Access,
    AnyEvent,
    MemoriesAccessed,
    MemoriesValidated,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
    Record,
)
from projections.readmodel.insight import LabelQuery
from projections.sqlite import ReadModel

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TYPES = ("episodic", "semantic", "procedural")
YEARS = 3 * 365 * 86_400.0


@st.composite
def type_staleness(draw: st.DrawFn) -> TypeStaleness:
    fresh, aging, stale = sorted(draw(st.lists(st.floats(0.0, 800.0), min_size=3, max_size=3)))
    stale = max(stale, 0.5)
    half_life = st.none() | st.floats(0.5, 2000.0)
    scores: tuple[float | None, float | None] = (None, None)
    if draw(st.booleans()):
        low, high = sorted(draw(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2)))
        scores = (low, high)
    return TypeStaleness(
        fresh=fresh, aging=aging, stale=stale, age_half_life_days=draw(half_life),
        access_half_life_days=draw(half_life), validation_half_life_days=draw(half_life),
        aging_score=scores[0], stale_score=scores[1],
    )  # fmt: skip


@st.composite
def staleness_params(draw: st.DrawFn) -> StalenessParams:
    parts = draw(st.lists(st.integers(0, 10), min_size=4, max_size=4).filter(lambda p: sum(p[:3])))
    total = sum(parts)
    weights = StalenessWeights(*(p / total for p in parts))
    return StalenessParams(
        weights=weights, episodic=draw(type_staleness()), semantic=draw(type_staleness()),
        procedural=draw(type_staleness()), count_saturation=draw(st.integers(1, 20)),
    )  # fmt: skip


seconds_ago = st.floats(-30 * 86_400.0, YEARS)
"""How long before ``NOW`` a time is (a little in the future too)."""

Memory = tuple[str, float, float, float | None, float | None, int, bool]
"""Type, how long ago its event time and its store were, its last hit and confirmation (each
a share of the time since the store), its hits, whether pinned."""

NEAR = st.sampled_from([0.0, 1e-6, -1e-6, 1.0, -1.0, 3600.0, -3600.0]) | st.floats(
    -3 * DAY, 3 * DAY
)
"""How far from a boundary day an untouched memory was stored."""


@st.composite
def memory(draw: st.DrawFn, params: StalenessParams) -> Memory:
    """A memory with any times, or an untouched one stored near the day its type turns
    aging or stale (where its score is near a threshold: the derived thresholds are those
    of an untouched memory on those days)."""
    kind = draw(st.sampled_from(TYPES))
    pinned = draw(st.booleans())
    if draw(st.booleans()):
        rules = params.for_type(kind)
        created_ago = max(0.0, draw(st.sampled_from([rules.fresh, rules.stale])) * DAY
                          + draw(NEAR))  # fmt: skip
        valid_ago = created_ago + draw(st.sampled_from([0.0, 1.0]) | st.floats(0.0, YEARS))
        return (kind, valid_ago, created_ago, None, None, 0, pinned)
    return (
        kind, draw(seconds_ago), draw(st.floats(0.0, YEARS)), draw(st.none() | st.floats(0, 1)),
        draw(st.none() | st.floats(0, 1)), draw(st.integers(0, 40)), pinned,
    )  # fmt: skip


@st.composite
def homes(draw: st.DrawFn) -> tuple[StalenessParams, list[Memory]]:
    params = draw(staleness_params())
    return params, draw(st.lists(memory(params), min_size=1, max_size=25))


def _at(ago: float) -> datetime:
    return NOW - timedelta(seconds=ago)


def _records(memories: list[Memory]) -> list[Record]:
    """Each memory stored in a record of its own at its ``created_at``, then its hits, its
    confirmation and its pin, each memory of an agent of its own (one scope per memory)."""
    records: list[Record] = []
    later: list[tuple[datetime, AnyEvent]] = []
    for i, (kind, valid_ago, created_ago, hit, confirmed, hits, pinned) in enumerate(memories):
        memory_id = f"m{i:03d}"
        stored = MemoryStored(memory_id=memory_id, namespace="ns", memory_type=kind,  # type: ignore[arg-type]
                              t_valid=_at(valid_ago), agent_id=f"a{i:03d}",
                              body=MemoryBody(content=f"memory {i}"))  # fmt: skip
        records.append(Record(recorded_at=_at(created_ago), events=(stored,)))
        if hit is not None and hits:
            last = _at(created_ago * (1 - hit))
            later.append((last, MemoriesAccessed(accesses=(Access(memory_id, last, hits),))))
        if confirmed is not None:
            at = _at(created_ago * (1 - confirmed))
            later.append((at, MemoriesValidated(memory_ids=(memory_id,), at=at)))
        if pinned:
            later.append((_at(0), MemoryMarked(memory_id=memory_id, namespace="ns", pinned=True)))
    records.sort(key=lambda r: r.recorded_at)
    records += [Record(recorded_at=t, events=(e,)) for t, e in sorted(later, key=lambda x: x[0])]
    return [Record(recorded_at=r.recorded_at, events=r.events, position=n + 1)
            for n, r in enumerate(records)]  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(home=homes())
def test_sql_labels_only_what_python_labels_the_same(
    home: tuple[StalenessParams, list[Memory]],
) -> None:
    params, memories = home
    now = NOW.timestamp()
    with tempfile.TemporaryDirectory() as tmp:
        rm = ReadModel.open(Path(tmp) / "rm.sqlite")
        try:
            rm.apply(_records(memories))
            rows = rm.memories()
            python = {m.memory_id: staleness(freshness_input(m), now, params) for m in rows}
            band: dict[str, str] = {}
            sql_score: dict[str, float] = {}
            for kind in TYPES:
                bound = clock_bound(params, kind, now)
                query = LabelQuery("ns", kind, scoring(params, kind), bound, now)
                for count in rm.insight.label_counts(query, rarely_below=RARELY_RECALLED):
                    assert count.n == 1 and count.agent_id is not None
                    band[f"m{count.agent_id[1:]}"] = count.band
                everything = (-math.inf, math.inf)
                for memory_id, score, _ in rm.insight.most_stale(query, caller=None,
                                                                 scores=everything):  # fmt: skip
                    sql_score[memory_id] = score
        finally:
            rm.close()
    assert band.keys() == sql_score.keys()
    for memory_id, exact in python.items():
        if memory_id not in band:  # clocked too late to be aging, or pinned: fresh
            assert exact.label == "fresh", (memory_id, exact)
            continue
        assert abs(sql_score[memory_id] - exact.score) <= 1e-12, (memory_id, exact)
        assert band[memory_id] in (exact.label, "unsure"), (memory_id, band[memory_id], exact)
