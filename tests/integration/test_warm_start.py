"""The owner's warm-up opens what the first recall would otherwise open itself: the live Qdrant
Edge collection (seen from outside: its lock is held once the warm-up is done)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.rules.memory_input import StoreRequest
from ferrex.server.service import Service
from projections.qdrant_edge import EdgeBackend


def _held(lock: Path) -> bool:
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_the_warm_up_opens_the_live_collection(tmp_path: Path, shared_embedder: Embedder) -> None:
    home = tmp_path / "home"
    first = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    first.writer().store(StoreRequest(content="The release train leaves every Tuesday"))
    first.close()
    app = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    service = Service(app)
    try:
        projections = app.projections()
        backend = projections.backend
        if not isinstance(backend, EdgeBackend):
            pytest.fail("the default vector backend is Qdrant Edge")
        lock = backend.root / f"{projections.live.memories}.lock"
        assert not lock.exists() or not _held(lock)  # opened lazily: not yet
        service.warm()
        assert _held(lock)
    finally:
        service.close()
