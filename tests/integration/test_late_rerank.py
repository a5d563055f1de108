"""The late-interaction stage with the real bundled model: it reorders real recall results."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ferrex.models import Embedder
from ferrex.models.late import LateInteraction, load_late
from ferrex.models.rerank import RerankStage, choose_reranker, load_reranker
from ferrex.read.access import AccessLog
from ferrex.read.recall import Reader
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreSettings, Writer
from journal import Journal
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders

QUERY = "which database migration timed out during the deploy"
RELEVANT = "The deploy failed: the database migration timed out."
OTHERS = [
    "My grandmother bakes apple pie every Sunday.",
    "The user prefers dark mode in the editor.",
    "Quarterly revenue grew by twelve percent.",
]


@pytest.fixture(scope="module")
def late() -> LateInteraction:
    return load_late(1.0, threads=1)


def test_token_vectors_leave_out_the_special_tokens_and_are_unit(late: LateInteraction) -> None:
    (vectors,) = late.token_vectors(["deploy failed"])
    assert vectors.shape == (2, 384)  # "deploy", "failed": no [CLS], no [SEP]
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)


def test_moves_the_relevant_text_first_from_last(late: LateInteraction) -> None:
    stage = RerankStage(choose_reranker("late", {}), late)
    docs = [*OTHERS, RELEVANT]
    order = stage.rerank_top(QUERY, docs, pool=4)
    assert order[0][0] == len(OTHERS)
    scores = [s for _, s in order]
    assert all(s is not None and -1.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_cached_documents_score_the_same_and_are_not_run_again(late: LateInteraction) -> None:
    docs = ["a cache test sentence about late interaction", RELEVANT]
    first = late.rerank(QUERY, docs)
    hits = late.cache.hits
    second = late.rerank(QUERY, docs)
    assert late.cache.hits == hits + 2
    assert second == pytest.approx(first, abs=1e-2)  # float16 in the cache


def test_load_reranker_late_is_ready(tmp_path: Path) -> None:
    stage = load_reranker(choose_reranker("late", {}), tmp_path, late_weight=0.4)
    assert stage.status == "ready"
    assert isinstance(stage.encoder, LateInteraction) and stage.encoder.weight == 0.4


@pytest.fixture
def stores(tmp_path: Path, encoders: Encoders, shared_embedder: Embedder) -> Iterator[tuple]:
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "qdrant")
    projections = Projections.open(tmp_path, journal, backend, encoders)
    writer = Writer(journal, projections, shared_embedder, StoreSettings())
    yield projections, writer, shared_embedder
    projections.close()
    backend.close()
    journal.close()


def test_recall_with_the_late_stage_reorders_real_results(
    stores: tuple, late: LateInteraction
) -> None:
    projections, writer, embedder = stores
    # Many words of the query in a text about something else; the answer says it in few.
    texts = [
        "Deploy checklist: which database, which migration, which timeout, during the deploy.",
        "The migration of the orders table timed out, so the release was rolled back.",
        "Deploy day notes: lunch was late, the database team joined during the afternoon.",
        *OTHERS,
    ]
    ids = {writer.store(StoreRequest(content=t)).id: t for t in texts}
    none = RerankStage(choose_reranker("none", {}))
    off = Reader(projections, embedder, none, access=AccessLog())
    on = Reader(
        projections, embedder, RerankStage(choose_reranker("late", {}), late), access=AccessLog()
    )
    request = RecallRequest(query=QUERY, limit=6, explain=True, min_relevance=0.0)  # untrimmed
    plain = [r["id"] for r in off.recall(request).results]
    reranked = on.recall(request).results
    assert sorted(plain) == sorted(r["id"] for r in reranked)
    assert plain != [r["id"] for r in reranked]
    scores = [late.rerank(QUERY, [ids[r["id"]]])[0] for r in reranked]
    # Weight 1: the late score alone orders the pool (recency and importance are equal here).
    assert scores == sorted(scores, reverse=True)
    assert all(r["explain"]["rerank"] is not None for r in reranked)
