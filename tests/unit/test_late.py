"""The MaxSim math, the blend, the token cache and the choice of the late reranker."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from ferrex.errors import UsageError
from ferrex.models.late import TokenCache, blend, maxsim, unit_rows
from ferrex.models.rerank import RerankStage, choose_reranker, load_reranker


def rows(*vectors: Sequence[float]) -> np.ndarray:
    return unit_rows(np.array(vectors, dtype=np.float32))


def test_maxsim_takes_each_query_tokens_best_match_and_averages() -> None:
    query = rows([1, 0], [0, 1])
    # Token 1 of the query matches the document's first row exactly (1.0); token 2's best
    # is the second row, at 45 degrees (cos = 0.7071...).
    document = rows([1, 0], [1, 1], [-1, 0])
    assert maxsim(query, document) == pytest.approx((1.0 + 2**-0.5) / 2, abs=1e-6)


def test_maxsim_is_not_symmetric_and_ignores_extra_document_tokens() -> None:
    query = rows([1, 0])
    document = rows([1, 0], [0, 1], [0, -1])
    assert maxsim(query, document) == pytest.approx(1.0)
    assert maxsim(document, query) == pytest.approx((1.0 + 0.0 + 0.0) / 3, abs=1e-6)


def test_maxsim_of_an_empty_side_is_zero() -> None:
    assert maxsim(np.empty((0, 2), np.float32), rows([1, 0])) == 0.0
    assert maxsim(rows([1, 0]), np.empty((0, 2), np.float32)) == 0.0


def test_maxsim_refuses_rows_of_different_widths() -> None:
    with pytest.raises(ValueError, match="dims"):
        maxsim(rows([1, 0]), rows([1, 0, 0]))


def test_unit_rows_normalises_and_keeps_zero_rows_zero() -> None:
    scaled = unit_rows(np.array([[3, 4], [0, 0]], dtype=np.float32))
    assert scaled[0] == pytest.approx([0.6, 0.8])
    assert scaled[1] == pytest.approx([0.0, 0.0])


def test_blend_is_a_convex_combination() -> None:
    assert blend(0.8, 0.2, 0.0) == pytest.approx(0.8)
    assert blend(0.8, 0.2, 1.0) == pytest.approx(0.2)
    assert blend(0.8, 0.2, 0.25) == pytest.approx(0.65)


def test_token_cache_evicts_least_recently_used_within_its_bytes() -> None:
    one = np.ones((4, 8), np.float32)  # 64 bytes as float16
    cache = TokenCache(max_bytes=128)
    cache.put("a", one)
    cache.put("b", one * 0.5)
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", one)
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.size_bytes == 128 and len(cache) == 2
    assert (cache.hits, cache.misses) == (3, 1)


def test_token_cache_keeps_nothing_larger_than_itself() -> None:
    cache = TokenCache(max_bytes=10)
    cache.put("long", np.ones((4, 8), np.float32))
    assert len(cache) == 0 and cache.get("long") is None


def test_token_cache_refuses_a_negative_size() -> None:
    with pytest.raises(ValueError):
        TokenCache(max_bytes=-1)


def test_late_is_a_reranker_choice() -> None:
    choice = choose_reranker(None, {"FERREX_RERANKER": "LATE"})
    assert choice.kind == "late" and choice.model_name == "late"


def test_a_late_weight_outside_zero_to_one_is_a_usage_error(tmp_path: object) -> None:
    with pytest.raises(UsageError, match="late_weight"):
        load_reranker(choose_reranker("late", {}), tmp_path, late_weight=1.5)  # type: ignore[arg-type]


class FixedScores:
    """A test double of the late scorer: fixed scores per document text (pure logic)."""

    def __init__(self, scores: dict[str, float], weight: float) -> None:
        self.scores, self.weight = scores, weight

    def rerank(self, query: str, docs: Sequence[str]) -> list[float]:
        return [self.scores[d] for d in docs]


def test_rerank_top_blends_late_scores_with_the_fused_ones() -> None:
    scorer = FixedScores({"a": 0.0, "b": 1.0, "c": 0.5}, weight=0.5)
    stage = RerankStage(choose_reranker("late", {}), scorer)  # type: ignore[arg-type]
    order = stage.rerank_top("q", ["a", "b", "c", "d"], pool=3, fused=[0.9, 0.2, 0.6, 0.1])
    # a: 0.45, b: 0.6, c: 0.55; d is outside the pool and keeps its place with no score.
    assert [p for p, _ in order] == [1, 2, 0, 3]
    assert [s for _, s in order] == pytest.approx([0.6, 0.55, 0.45, None])
    replaced = stage.rerank_top("q", ["a", "b", "c"], pool=3)  # no fused scores: MaxSim alone
    assert [p for p, _ in replaced] == [1, 2, 0]
