"""The query adapter: the file shipped for the bundled model, and the dense legs' use of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ferrex.models import Embedder
from ferrex.models.query_adapter import (
    ADAPTER_FILE,
    QueryAdapter,
    adapter_for,
    read_adapter,
    write_adapter,
)
from ferrex.models.rerank import RerankStage, choose_reranker
from ferrex.read.access import QueryCache
from ferrex.read.recall import Reader
from ferrex.read.request import RecallHit, RecallRequest, RecallSettings
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreSettings, Writer
from journal import Journal
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders


def test_the_shipped_adapter_is_of_the_bundled_model(shared_embedder: Embedder) -> None:
    shipped = read_adapter(ADAPTER_FILE)
    # Refitted for another model (or the bundled model changed), it would apply to no one.
    assert shipped.model_key == shared_embedder.identity.key
    assert shipped.matrix.shape == (384, 384)
    assert adapter_for(shared_embedder.identity.key) is not None
    assert adapter_for("another-model|384|0") is None


def test_a_question_moves_toward_what_answers_it(shared_embedder: Embedder) -> None:
    adapter = adapter_for(shared_embedder.identity.key)
    assert adapter is not None
    question, answer, other = shared_embedder.embed_many([
        "when did she go to the support group?",
        "I went to an LGBTQ support group yesterday, it was so powerful",
        "the support team rotates every week",
    ])  # fmt: skip
    moved = adapter(question)
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-5
    # Toward the answer more than toward the look-alike.
    assert float(moved @ answer) - float(question @ answer) > float(moved @ other) - float(
        question @ other
    )


def test_the_dense_legs_search_with_the_moved_vector_only_when_asked(
    shared_embedder: Embedder,
) -> None:
    text = "which node does the auth gateway run on?"
    off, half, full = (QueryCache(shared_embedder, adapt=s) for s in (0.0, 0.5, 1.0))
    raw = off.vector(text)
    assert off.adapted(raw) is None and np.allclose(off.searched(text), raw)
    adapter = adapter_for(shared_embedder.identity.key)
    assert adapter is not None
    moved = full.searched(text)
    assert not np.allclose(moved, raw) and np.allclose(moved, adapter(raw))
    # Half the way: between the plain vector and the fully moved one.
    between = half.searched(text)
    assert float(between @ raw) > float(moved @ raw)
    assert float(between @ moved) > float(raw @ moved)


def test_an_adapter_file_round_trips_and_a_torn_one_is_refused(tmp_path: Path) -> None:
    matrix = np.eye(4, dtype=np.float32) + 0.25
    path = tmp_path / "adapter.bin"
    write_adapter(path, QueryAdapter(matrix, "m|4|x"), {"ridge": 1.0})
    back = read_adapter(path)
    assert back.model_key == "m|4|x" and np.allclose(back.matrix, matrix, atol=1e-3)
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(ValueError, match="values for a 4 x 4 matrix"):
        read_adapter(path)
    with pytest.raises(ValueError, match="square matrix"):
        QueryAdapter(np.ones((2, 3), dtype=np.float32), "m")


OTHERS = (
    "The staging database was moved to a larger instance with 64 GB of memory.",
    "Aiko prefers pnpm over npm for every frontend repository.",
    "The nightly CronJob of the data pipeline writes Parquet files to the lake bucket.",
    "On-call handover happens every Monday at 10:00 in the SRE channel.",
)
TOPIC = "Jonas descales the office espresso machine every Friday with citric acid."


def test_the_adapted_vector_ranks_and_the_plain_one_is_the_evidence(
    tmp_path: Path, encoders: Encoders, shared_embedder: Embedder
) -> None:
    """Relevance was fitted on plain cosines: an adapted recall ranks with the moved vector
    but judges with the plain one, so its labels are the unadapted recall's."""
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "qdrant")
    projections = Projections.open(tmp_path, journal, backend, encoders)
    try:
        writer = Writer(journal, projections, shared_embedder, StoreSettings())
        for text in OTHERS:
            writer.store(StoreRequest(content=text))
        topic = writer.store(StoreRequest(content=TOPIC)).id
        none = RerankStage(choose_reranker("none", {}))
        answers: dict[float, RecallHit] = {}
        for adapt in (1.0, 0.0):
            reader = Reader(projections, shared_embedder, none, RecallSettings(query_adapter=adapt))
            request = RecallRequest(query="who cleans the coffee machine?", explain=True)
            found = {r["id"]: r for r in reader.recall(request).results}
            answers[adapt] = found[topic]
        on, off = answers[1.0], answers[0.0]
        assert on["explain"]["dense"] != pytest.approx(off["explain"]["dense"], abs=1e-4)
        assert on["relevance_evidence"]["cosine"] == pytest.approx(
            off["relevance_evidence"]["cosine"], abs=1e-5
        )
        assert on["relevance_evidence"]["cosine"] == pytest.approx(
            off["explain"]["dense"], abs=1e-5
        )
        assert on["relevance_label"] == off["relevance_label"]
    finally:
        projections.close()
        backend.close()
        journal.close()
