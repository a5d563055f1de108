"""An import of many chunks makes its vector writes durable once, at its end (issue 27).

The journal is the durable record; the Qdrant checkpoint advances only after a flush, so
inside an import it stays where it was and a crash there re-applies the vectors from it.
What is stored is the same as with a flush per chunk: equal to a rebuild from the journal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.models import Embedder
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreResult
from projections import flush_thread
from projections.applying import QDRANT
from tests.integration.test_projections import snapshot
from tests.integration.test_vector_sync import durable_within, flushes_of


def _notes(count: int, offset: int = 0) -> list[StoreRequest]:
    return [
        StoreRequest(content=f"note {i}: the rota for week {i % 52} moved to desk {i * 37 % 101}")
        for i in range(offset, offset + count)
    ]


def test_an_import_flushes_the_vectors_once_at_its_end(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Outside an import every catch-up would now have a flush follow at once (on its thread).
    monkeypatch.setattr(flush_thread, "SYNC_SECONDS", 0.0)
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        writer = app.writer()
        projections = app.projections()
        first = writer.store(StoreRequest(content="the staging database moved to rack 4"))
        # one store: synced
        assert durable_within(projections, first.position, seconds=30)
        flushes = flushes_of(projections)
        seen: list[tuple[int, int]] = []  # (durable checkpoint, applied) after each chunk

        def progress(_done: int, _total: int) -> None:
            seen.append((projections.read_model.checkpoint(QDRANT), projections.qdrant_position))

        outcomes = writer.store_many(_notes(12), chunk=4, progress=progress)
        assert all(isinstance(o, StoreResult) and o.status == "stored" for o in outcomes)
        head = app.journal().head.position
        # Inside: applied to the vectors chunk by chunk, never made durable (nor the
        # checkpoint moved); at the end: one flush, the checkpoint at the head.
        assert [durable for durable, _ in seen] == [first.position] * 3
        assert [applied for _, applied in seen] == sorted({a for _, a in seen})
        assert seen[-1][1] == head
        assert len(flushes) == 1
        assert projections.read_model.checkpoint(QDRANT) == head
        del projections.sink.sync
        # What was stored is what a rebuild from the journal derives.
        incremental = snapshot(projections)
        projections.rebuild()
        assert snapshot(projections) == incremental
    finally:
        app.close()


def test_a_failed_flush_at_the_end_of_an_import_keeps_its_outcomes(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        writer = app.writer()
        projections = app.projections()

        def broken() -> None:
            raise OSError("disk went away")

        projections.sink.sync = broken  # type: ignore[method-assign]
        outcomes = writer.store_many(_notes(8), chunk=4)
        # The records are in the journal: every line is stored, the checkpoint stays behind.
        assert all(isinstance(o, StoreResult) and o.status == "stored" for o in outcomes)
        assert projections.read_model.checkpoint(QDRANT) == 0
        del projections.sink.sync
        projections.sync()
        assert projections.read_model.checkpoint(QDRANT) == app.journal().head.position
    finally:
        app.close()
