"""Relevance on real parts (journal, SQLite, Qdrant Edge, the bundled model): after the only
memory about a topic is forgotten, recall of that topic says nothing relevant; a default
recall is not padded with irrelevant results, ``min_relevance: 0`` shows them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrex.errors import UsageError
from ferrex.models import Embedder
from ferrex.models.rerank import RerankStage, choose_reranker
from ferrex.read.recall import Reader
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from ferrex.rules.relevance import (
    HIDDEN_BELOW,
    NEAREST_WHEN_NOTHING,
    NOTE_NOTHING_RELEVANT,
    SHOWN_AT_LEAST,
)
from ferrex.write.writer import StoreSettings, Writer
from journal import Journal
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders

OTHERS = (
    "The staging database was moved to a larger instance with 64 GB of memory.",
    "Aiko prefers pnpm over npm for every frontend repository.",
    "The nightly CronJob of the data pipeline writes Parquet files to the lake bucket.",
    "Release 4.0 of the web frontend shipped with the React 19 upgrade.",
    "On-call handover happens every Monday at 10:00 in the SRE channel.",
)
TOPIC = "The office espresso machine is descaled every Friday by Jonas with citric acid."
QUERY = "who descales the espresso machine"


@pytest.fixture
def parts(
    tmp_path: Path, encoders: Encoders, shared_embedder: Embedder
) -> Iterator[tuple[Writer, Reader]]:
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "qdrant")
    projections = Projections.open(tmp_path, journal, backend, encoders)
    writer = Writer(journal, projections, shared_embedder, StoreSettings())
    reader = Reader(projections, shared_embedder, RerankStage(choose_reranker("none", {})))
    yield writer, reader
    projections.close()
    backend.close()
    journal.close()


def test_a_forgotten_topic_is_nothing_relevant(parts: tuple[Writer, Reader]) -> None:
    writer, reader = parts
    for text in OTHERS:
        writer.store(StoreRequest(content=text))
    topic = writer.store(StoreRequest(content=TOPIC)).id

    before = reader.recall(RecallRequest(QUERY, explain=True))
    assert before.results[0]["id"] == topic
    assert before.results[0]["relevance_label"] != "none"
    assert before.nothing_relevant is False
    assert "note" not in before.as_dict()

    writer.forget([topic])
    after = reader.recall(RecallRequest(QUERY, explain=True))
    assert after.results, "the nearest memories are still returned at the default"
    assert topic not in [r["id"] for r in after.results]
    assert {r["relevance_label"] for r in after.results} == {"none"}, after.results
    assert after.nothing_relevant is True
    doc = after.as_dict()
    assert doc["nothing_relevant"] is True and doc["note"] == NOTE_NOTHING_RELEVANT
    for r in after.results:
        assert 0.0 <= r["relevance"] <= 1.0
        assert set(r["relevance_evidence"]) == {
            "cosine",
            "coverage",
            "missing_named",
            "missing_name",
            "missing_attribute",
            "given",
            "dense_rank",
            "sparse_rank",
            "cosine_gap",
            "bm25_share",
            "off_subject",
            "floor",
            "runner_up",
        }
        assert 0.0 <= r["answer_chance"] <= 1.0
        # the evidence's ranks are the legs' own, as explain shows them
        assert r["relevance_evidence"]["dense_rank"] == r["explain"]["dense_rank"]
        assert r["relevance_evidence"]["sparse_rank"] == r["explain"]["sparse_rank"]
    # the runner-up of the dense leg's first is the second's cosine, and the first's cosine
    # is every other result's runner-up; every returned cosine is at least the floor
    every = reader.recall(RecallRequest(QUERY, explain=True, min_relevance=0.0))
    explained = [r["relevance_evidence"] for r in every.results]
    by_rank = {e["dense_rank"]: e for e in explained if e["dense_rank"] is not None}
    first, second = by_rank[1], by_rank[2]
    assert first["runner_up"] == second["cosine"] <= first["cosine"]
    assert all(e["runner_up"] == first["cosine"] for rank, e in by_rank.items() if rank != 1)
    assert all(e["floor"] <= e["cosine"] for e in by_rank.values())


def test_min_relevance_drops_and_counts_what_falls_below(parts: tuple[Writer, Reader]) -> None:
    writer, reader = parts
    for text in (*OTHERS, TOPIC):
        writer.store(StoreRequest(content=text))
    everything = reader.recall(RecallRequest(QUERY, limit=10, min_relevance=0))
    assert len(everything.results) == len(OTHERS) + 1
    assert "irrelevant" not in everything.hidden
    cut = 0.5
    kept = reader.recall(RecallRequest(QUERY, limit=10, min_relevance=cut))
    expected = [r["id"] for r in everything.results if r["relevance"] >= cut]
    assert [r["id"] for r in kept.results] == expected
    assert expected, "the memory about the topic passes"
    assert kept.hidden.get("irrelevant") == len(everything.results) - len(expected)


@pytest.mark.parametrize("value", [-0.5, 2.0, "high"])
def test_a_bad_min_relevance_is_a_usage_error(parts: tuple[Writer, Reader], value: object) -> None:
    _, reader = parts
    with pytest.raises(UsageError, match="min_relevance"):
        reader.recall(RecallRequest(QUERY, min_relevance=value))  # type: ignore[arg-type]


def test_a_default_recall_hides_only_what_is_surely_irrelevant(
    parts: tuple[Writer, Reader],
) -> None:
    writer, reader = parts
    for text in OTHERS:
        writer.store(StoreRequest(content=text))
    topic = writer.store(StoreRequest(content=TOPIC)).id

    untrimmed = reader.recall(RecallRequest(QUERY, min_relevance=0))
    assert len(untrimmed.results) == 5, "min_relevance 0 keeps every one, up to the limit"
    assert "irrelevant" not in untrimmed.hidden
    trimmed = reader.recall(RecallRequest(QUERY))
    ids = [r["id"] for r in trimmed.results]
    assert ids[0] == topic and trimmed.nothing_relevant is False
    shown = [
        r["id"]
        for i, r in enumerate(untrimmed.results)
        if i < SHOWN_AT_LEAST or r["relevance"] >= HIDDEN_BELOW
    ]
    assert ids == shown
    assert trimmed.hidden.get("irrelevant", 0) == len(untrimmed.results) - len(ids)


def test_nothing_relevant_comes_with_a_couple_of_the_nearest(
    parts: tuple[Writer, Reader],
) -> None:
    writer, reader = parts
    for text in OTHERS:
        writer.store(StoreRequest(content=text))
    untrimmed = reader.recall(RecallRequest(QUERY, min_relevance=0))
    assert untrimmed.nothing_relevant is True and len(untrimmed.results) == 5
    trimmed = reader.recall(RecallRequest(QUERY))
    assert trimmed.nothing_relevant is True
    shown = [
        r["id"]
        for i, r in enumerate(untrimmed.results)
        if i < NEAREST_WHEN_NOTHING or r["relevance"] >= HIDDEN_BELOW
    ]
    assert [r["id"] for r in trimmed.results] == shown
    assert trimmed.hidden.get("irrelevant", 0) == 5 - len(shown)
    assert trimmed.as_dict()["note"] == NOTE_NOTHING_RELEVANT
