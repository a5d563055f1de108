"""A peer keeps the models warm for a takeover, only once it has been called."""

from __future__ import annotations

import time
from pathlib import Path

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.server.hub import Hub
from ferrex.server.service import Caller
from ferrex.server.tool_calls import decode


def test_a_called_peer_takes_over_with_the_models_it_warmed(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    home = tmp_path / "home"
    owner = Hub(
        home,
        lambda: App(home=home, config=load_config(home, None), _embedder=shared_embedder),
        Caller(),
        flush_every=None,
    )
    # The peer's Apps load their own model, as a separate process's would.
    peer = Hub(home, lambda: App(home=home, config=load_config(home, None)), Caller(),
               flush_every=None)  # fmt: skip
    idle = Hub(home, lambda: App(home=home, config=load_config(home, None)), Caller(),
               flush_every=None)  # fmt: skip
    cold_config = load_config(home, None, flags={"server.warm_peers": False})
    cold = Hub(home, lambda: App(home=home, config=cold_config), Caller(), flush_every=None)
    try:
        stored = owner.call(decode("store", {"content": "The release train leaves every Tuesday"}))
        assert owner.role == "owner"
        assert peer.call(decode("stats", {}))["total"] == 1 and peer.role == "peer"
        assert cold.call(decode("stats", {}))["total"] == 1 and cold.role == "peer"
        deadline = time.monotonic() + 300
        while peer._spare is None and time.monotonic() < deadline:
            time.sleep(0.1)
        spare = peer._spare
        assert spare is not None and spare._embedder is not None and spare._embedder.loaded
        assert spare._projections is None and spare._backend is None  # no store opened
        assert idle._spare is None and not idle._warming  # never called: nothing loaded
        assert cold._spare is None  # server.warm_peers = false: called, nothing loaded
        owner.close()
        found = peer.call(decode("recall", {"query": "when does the release train leave"}))
        assert peer.role == "owner"
        assert peer._ownership is not None and peer._ownership.service.service.app is spare
        assert found["results"][0]["id"] == stored["id"]
    finally:
        cold.close()
        idle.close()
        peer.close()
        owner.close()
