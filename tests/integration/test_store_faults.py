"""A store that reached the journal is a store: projection faults after the append never turn
an acknowledged write into a failure (which an agent would retry into a duplicate)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import BackendUnavailable
from ferrex.models import Embedder
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode

AGENT = Caller(agent_id="agent-x")


def _service(home: Path, embedder: Embedder) -> Service:
    return Service(App(home=home, config=load(home, None), _embedder=embedder))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _recalled(service: Service, query: str) -> list[str]:
    doc = service.call(decode("recall", {"query": query, "limit": 20}), AGENT)
    return [r["content"] for r in doc["results"]]


def test_deleting_the_vector_store_under_a_running_service_loses_nothing(
    home: Path, shared_embedder: Embedder
) -> None:
    service = _service(home, shared_embedder)
    service.call(decode("store", {"content": "The cache warms up at 06:00"}), AGENT)
    shutil.rmtree(home / "qdrant")
    acked = []
    for i in range(3):
        doc = service.call(decode("store", {"content": f"Deploy window number {i} is on Thursday"}),
                           AGENT)  # fmt: skip
        assert doc["status"] == "stored"
        acked.append(doc["id"])
    service.close()  # the vectors cannot be flushed: logged, not raised

    again = _service(home, shared_embedder)  # rebuilt from the journal
    try:
        found = _recalled(again, "deploy window Thursday")
        assert {f"Deploy window number {i} is on Thursday" for i in range(3)} <= set(found)
    finally:
        again.close()


def test_an_apply_failure_after_the_append_is_a_warning_not_a_failure(
    home: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _service(home, shared_embedder)
    service.call(decode("stats", {}), AGENT)  # open the stores
    projections = service.app.projections()
    real = projections.catch_up
    journal = service.app.journal()
    before = journal.refresh().position

    def failing_after_append() -> int:
        if journal.refresh().position > before:  # the record is durable: now fail
            raise BackendUnavailable("the vector store went away")
        return real()

    monkeypatch.setattr(projections, "catch_up", failing_after_append)
    doc = service.call(decode("store", {"content": "The release train leaves at noon"}), AGENT)
    assert doc["status"] == "stored" and doc["warnings"]
    assert "stored in the journal" in doc["warnings"][0]
    assert journal.refresh().position == before + 1
    monkeypatch.setattr(projections, "catch_up", real)
    assert "The release train leaves at noon" in _recalled(service, "release train noon")
    service.close()


def test_a_backend_failure_before_the_append_is_a_coded_error_and_writes_nothing(
    home: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _service(home, shared_embedder)
    service.call(decode("stats", {}), AGENT)
    projections = service.app.projections()
    journal = service.app.journal()
    before = journal.refresh().position
    backend = projections.backend

    def broken(*_: object, **__: object) -> object:
        from projections.vectors import VectorStoreError

        raise VectorStoreError("Qdrant Edge could not search: the shard is gone")

    monkeypatch.setattr(backend, "query_dense_batch", broken)
    with pytest.raises(BackendUnavailable) as caught:
        service.call(decode("store", {"content": "A note that cannot be deduplicated now"}), AGENT)
    assert caught.value.code == "backend_unavailable"
    assert journal.refresh().position == before
    service.close()
