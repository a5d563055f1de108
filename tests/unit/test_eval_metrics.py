"""The retrieval evaluation's pure parts: metrics and the LoCoMo data clean-up."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from tools.eval_retrieval import (
    Scores,
    ndcg_at,
    normalize_evidence,
    parse_session_time,
    recall_at,
)


def test_ndcg_is_one_for_an_ideal_ranking_and_zero_without_hits() -> None:
    assert ndcg_at(["a", "b", "x"], {"a", "b"}) == pytest.approx(1.0)
    assert ndcg_at(["x", "y"], {"a"}) == 0.0
    assert ndcg_at(["a"], set()) == 0.0


def test_ndcg_discounts_by_log_rank_and_ideal_counts_at_most_k() -> None:
    # One relevant at rank 2 (0-based 1): (1/log2(3)) / 1.
    assert ndcg_at(["x", "a"], {"a"}) == pytest.approx(1 / math.log2(3))
    # Twelve relevant, two found at the top: the ideal is ten hits, not twelve.
    relevant = {f"r{i}" for i in range(12)}
    ideal = sum(1 / math.log2(r + 2) for r in range(10))
    assert ndcg_at(["r0", "r1"], relevant) == pytest.approx((1 + 1 / math.log2(3)) / ideal)
    # Hits beyond k do not count.
    assert ndcg_at([*"xxxxxxxxxx", "a"], {"a"}, 10) == 0.0


def test_recall_is_the_share_of_relevant_found_within_k() -> None:
    ranked = ["a", "x", "b", "y", "z", "c"]
    assert recall_at(ranked, {"a", "b", "c", "d"}, 5) == pytest.approx(0.5)
    assert recall_at(ranked, {"a", "b", "c", "d"}, 10) == pytest.approx(0.75)
    assert recall_at(ranked, set(), 5) == 0.0
    assert recall_at(["a", "a"], {"a", "b"}, 2) == pytest.approx(0.5)  # a repeat counts once


def test_scores_average_over_queries() -> None:
    scores = Scores()

    def session(turn: str) -> str:
        return turn.split(":")[0]

    scores.add(["s1:a"], {"s1:a"}, session)
    scores.add(["s1:x"], {"s1:a"}, session)  # the right session, not the right turn
    mean = scores.mean()
    assert mean["n"] == 2
    assert mean["ndcg@10"] == pytest.approx(0.5)
    assert mean["recall@1"] == pytest.approx(0.5)
    assert mean["recall@5"] == pytest.approx(0.5) and mean["recall@10"] == pytest.approx(0.5)
    assert mean["session@10"] == pytest.approx(1.0)
    assert math.isnan(Scores().mean()["ndcg@10"])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:3"], ["D1:3"]),
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"]),
        (["D30:05"], ["D30:5"]),
        (["D:11:26"], ["D11:26"]),
        (["D"], []),
        (["D1:3", "D1:03"], ["D1:3"]),
    ],
)
def test_locomo_evidence_ids_are_normalised(raw: list[str], expected: list[str]) -> None:
    assert normalize_evidence(raw) == expected


def test_locomo_session_times_are_read_as_utc() -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_time("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=UTC
    )
