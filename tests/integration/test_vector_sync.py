"""A command never waits for Qdrant's flush: the vector writes it applied are made durable
(the flush, then the Qdrant checkpoint) on a thread of their own a moment later, or when the
projections close. The journal stays the durable record throughout."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.models import Embedder
from ferrex.rules.memory_input import StoreRequest
from projections import flush_thread
from projections.applying import QDRANT
from projections.replay import Projections


def durable_within(projections: Projections, position: int, seconds: float) -> bool:
    """Whether the vector writes up to ``position`` are made durable within ``seconds``."""
    deadline = time.monotonic() + seconds
    while projections.read_model.checkpoint(QDRANT) < position:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def flushes_of(projections: Projections) -> list[str]:
    """The names of the threads that flush ``projections``' vectors, as they do."""
    names: list[str] = []
    sync = projections.sink.sync

    def counted() -> None:
        names.append(threading.current_thread().name)
        sync()

    projections.sink.sync = counted  # type: ignore[method-assign]
    return names


def test_a_store_returns_before_the_flush_which_follows_on_its_own_thread(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flush_thread, "SYNC_SECONDS", 0.05)
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        writer, projections = app.writer(), app.projections()
        writer.store(StoreRequest(content="the billing service pages the platform team"))
        time.sleep(0.2)  # the first store's own flush, if any, is over
        flushes = flushes_of(projections)
        stored = [
            writer.store(StoreRequest(content=text)).position
            for text in ("the staging database moved to rack 4", "Dana owns the ledger API")
        ]
        assert durable_within(projections, stored[-1], seconds=30)
        assert flushes and set(flushes) == {"ferrex-vector-sync"}, flushes
    finally:
        app.close()


def test_closing_makes_the_writes_durable_and_cancels_the_pending_flush(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flush_thread, "SYNC_SECONDS", 60.0)
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    writer, projections = app.writer(), app.projections()
    position = writer.store(StoreRequest(content="the nightly ETL writes to the lake")).position
    assert projections.read_model.checkpoint(QDRANT) < position  # not flushed on its path
    pending = projections._flush_timer.pending
    assert pending is not None and pending.is_alive()
    flushes = flushes_of(projections)
    app.close()
    assert flushes == [threading.current_thread().name]  # by close, once
    pending.join(timeout=5)
    assert not pending.is_alive()
    reopened = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        assert reopened.projections().read_model.checkpoint(QDRANT) == position
    finally:
        reopened.close()


def test_a_flush_due_inside_an_import_waits_for_the_import_s_end(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flush_thread, "SYNC_SECONDS", 0.0)
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        writer, projections = app.writer(), app.projections()
        writer.store(StoreRequest(content="the rota moved to Tuesdays"))
        time.sleep(0.2)
        flushes = flushes_of(projections)
        with projections.holding_sync():
            writer.store(StoreRequest(content="the on-call phone is in the second drawer"))
            projections._flush_timer.request()  # as a catch-up outside the block would have
            time.sleep(0.3)
            assert flushes == []  # the scheduled flush found the block open
        assert len(flushes) == 1  # the block's end
        assert projections.read_model.checkpoint(QDRANT) == app.journal().head.position
    finally:
        app.close()
