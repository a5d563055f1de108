"""The owner's warm-up opens what the first recall would otherwise open itself: the live Qdrant
Edge collection (seen from outside: its lock is held once the warm-up is done)."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.rules.memory_input import StoreRequest
from ferrex.server.caller import Caller
from ferrex.server.service import Service
from ferrex.server.tool_calls import decode
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


class _Announced:
    """The service's opening lock, calling ``waiting()`` before each wait for it."""

    def __init__(self, lock: threading.Lock, waiting: Callable[[], None]) -> None:
        self._lock = lock
        self._waiting = waiting

    def __enter__(self) -> None:
        self._waiting()
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_the_expiry_sweep_waits_for_the_warm_up_of_a_new_home(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    """On a new home the warm-up builds the first projections; the owner's expiry sweep
    falling due meanwhile (every ``store.expiry_sweep_seconds``, 1 s in some tests) opened
    the writer, and with it the projections, itself: a second build of the same generation
    dropped the collections the warm-up had just made ("collection ... does not exist",
    "Shard is not initialized"). Driven here in that order: the warm-up pauses once it has
    made its first collection, until the sweep either waits for the opening lock (it
    must) or has dropped that collection and is making its own."""
    home = tmp_path / "home"
    app = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    service = Service(app)
    backend = app.backend()
    made, resume, warmed = threading.Event(), threading.Event(), threading.Event()
    threads: dict[str, threading.Thread] = {}
    errors: dict[str, BaseException] = {}
    real_ensure = backend.ensure_collection

    def ensure(name: str, dim: int) -> None:
        here = threading.current_thread()
        if here is threads.get("sweep"):
            resume.set()  # the failing order: the warm-up goes on after the sweep's drop
            warmed.wait(60)  # a bound against a hang, not a timing
        real_ensure(name, dim)
        if here is threads["warm"] and not made.is_set():
            made.set()
            resume.wait(60)

    def waiting() -> None:
        if threading.current_thread() is threads.get("sweep"):
            resume.set()

    def run(name: str, action: Callable[[], object]) -> None:
        try:
            action()
        except BaseException as exc:
            errors[name] = exc
        finally:
            if name == "warm":
                warmed.set()

    backend.ensure_collection = ensure  # type: ignore[method-assign]
    service._opening = _Announced(service._opening, waiting)  # type: ignore[assignment]
    try:
        threads["warm"] = threading.Thread(target=run, args=("warm", service.warm))
        threads["warm"].start()
        assert made.wait(120), "the warm-up made no collection"
        threads["sweep"] = threading.Thread(target=run, args=("sweep", service.sweep_expired))
        threads["sweep"].start()
        for thread in threads.values():
            thread.join(120)
        assert errors == {}
        stored = service.call(decode("store", {"content": "The canteen opens at half past eight"}),
                              Caller(agent_id="a"))  # fmt: skip
        found = service.call(decode("recall", {"query": "when does the canteen open"}), Caller("a"))
        assert [r["id"] for r in found["results"]][:1] == [stored["id"]]
        live = app.projections().live
        assert {live.memories, live.entities} <= set(backend.collections())
    finally:
        service.close()
