"""A process that rebuilt a home at open serves it as a new process on the same files would:
the shards the rebuild filled are closed and loaded again from their files by the first query
(Qdrant Edge answers a shard filled in the same process slower while it stays open), no other
shard stays open with its search threads, and the C heap the rebuild freed is handed back."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ferrex import heap
from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from projections.generations import read_pointer, write_pointer
from projections.qdrant_edge import EdgeBackend


def _serve(home: Path, embedder: Embedder) -> tuple[int, list[str], list[str], str]:
    """Open the home, recall once: (generation, shards open after opening, after the recall,
    the first hit's content)."""
    app = App(home=home, config=load_config(home, None), _embedder=embedder)
    try:
        projections = app.projections()
        backend = projections.backend
        assert isinstance(backend, EdgeBackend)
        opened = backend.open_collections()
        result = app.recall(RecallRequest(query="when does the release train leave", limit=1))
        return (
            projections.live.generation,
            opened,
            backend.open_collections(),
            result.results[0]["content"],
        )
    finally:
        app.close()


def test_a_rebuild_at_open_serves_what_a_new_process_would(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    first = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    for text in ("The release train leaves every Tuesday", "Lunch is at noon on Fridays"):
        first.writer().store(StoreRequest(content=text))
    first.close()
    trims: list[None] = []
    monkeypatch.setattr(heap, "trim", lambda: trims.append(None))

    fresh = _serve(home, shared_embedder)
    assert trims == []  # nothing was rebuilt
    live = read_pointer(home)
    assert live is not None
    # An upgrade that changes the read model's schema: the next open rebuilds.
    write_pointer(home, msgspec.structs.replace(live, schema_version=live.schema_version - 1))
    rebuilt = _serve(home, shared_embedder)
    assert len(trims) == 1
    assert rebuilt[0] == fresh[0] + 1
    memories = read_pointer(home)
    assert memories is not None
    # Nothing open until the recall, then the memories shard alone, as in a new process.
    assert rebuilt[1:] == ([], [memories.memories], "The release train leaves every Tuesday")
    assert fresh[1:3] == ([], [live.memories])
    assert _serve(home, shared_embedder)[1:] == rebuilt[1:] and len(trims) == 1
