"""The period legs' pure parts (``ferrex/read/period.py``): the window they search, their
weights in fusion, and a vague question's ranking with the period's memories first."""

from __future__ import annotations

from datetime import UTC, datetime

from ferrex.read.period import (
    in_period_first,
    period_parts,
    period_ranking,
    question_less_period,
    within,
)
from ferrex.rules.dates import Period
from ferrex.rules.fusion import Leg
from projections.vectors import Hit, VectorFilter

DAY = Period("September 1", datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 9, 2, tzinfo=UTC))
START, END = DAY.start.timestamp(), DAY.end.timestamp()


def leg(*ids: str) -> Leg:
    return Leg({m: Hit(m, 1.0 - i / 10, {"memory_id": m}) for i, m in enumerate(ids)}, 0.0)


def test_the_period_is_searched_within_the_callers_window() -> None:
    plain = within(VectorFilter(namespace="n"), DAY)
    assert plain is not None and (plain.t_valid_from, plain.t_valid_to) == (START, END)
    assert plain.namespace == "n"
    narrower = within(VectorFilter(t_valid_from=START + 3600, t_valid_to=END + 86400), DAY)
    assert narrower is not None and (narrower.t_valid_from, narrower.t_valid_to) == (
        START + 3600,
        END,
    )
    # a window that misses the period: nothing to search
    assert within(VectorFilter(t_valid_to=START), DAY) is None
    assert within(VectorFilter(t_valid_from=END), DAY) is None


def test_the_period_legs_split_their_weight_as_the_whole_store_legs_do() -> None:
    legs = {"dense": leg("a"), "period_dense": leg("b"), "period_bm25": leg("c")}
    parts, weights = period_parts(legs, 0.4, 0.5)
    assert parts == [legs["period_dense"], legs["period_bm25"]]
    assert weights == [0.2, 0.5 * 0.6]
    assert period_parts(legs, 0.4, 0.0) == ([], [])
    assert period_parts({"period_bm25": leg("c")}, 0.4, 0.5) == ([legs["period_bm25"]], [0.3])


def test_a_vague_question_ranks_what_the_period_legs_found_first_in_fused_order() -> None:
    ranking = [("x", 0.9), ("b", 0.8), ("y", 0.7), ("a", 0.2)]
    legs = {"dense": leg("x", "y"), "period_dense": leg("a"), "period_bm25": leg("b")}
    assert in_period_first(ranking, legs) == [("b", 0.8), ("a", 0.2), ("x", 0.9), ("y", 0.7)]
    assert in_period_first(ranking, {"dense": leg("x")}) == ranking


def test_the_period_legs_rank_the_period_first_and_the_rest_follows_the_whole_store() -> None:
    whole = [leg("x", "a", "y"), leg("y")]
    inside = [leg("a", "b")]
    ranking = period_ranking(inside, [0.2], 0.5, whole, [0.4, 0.6])
    assert [m for m, _ in ranking] == ["a", "b", "y", "x"]
    assert ranking[0][1] == 0.4  # the period leg's own weight over the period weight, 0.4


def test_the_period_legs_ask_for_the_question_without_its_period() -> None:
    day = Period("Black Friday, November 27", DAY.start, DAY.end)
    rest = question_less_period("Which incidents occurred on Black Friday, November 27?", day)
    assert rest == "Which incidents occurred on ?"
