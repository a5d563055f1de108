"""Owner and peers compare ferrex version and hub protocol before a call is run."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ferrex import __version__
from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.errors import FerrexError
from ferrex.models import Embedder
from ferrex.ownership import Endpoint
from ferrex.server.frames import PROTOCOL, recv_frame, send_frame
from ferrex.server.hub import Hub
from ferrex.server.service import Caller
from ferrex.server.tool_calls import decode
from journal import FORMAT_VERSION


def test_a_peer_of_another_version_gets_a_coded_error(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    home = tmp_path / "home"

    def open_app() -> App:
        return App(home=home, config=load_config(home, None), _embedder=shared_embedder)

    owner = Hub(home, open_app, Caller(), flush_every=None)
    peer = Hub(home, open_app, Caller(), flush_every=None)
    try:
        assert owner.call(decode("stats", {}))["total"] == 0
        assert owner.role == "owner"
        assert peer.call(decode("stats", {}))["total"] == 0  # same version: served
        assert peer.role == "peer"
        endpoint = Endpoint.read(home)
        assert endpoint is not None
        ours = {"ferrex": __version__, "protocol": PROTOCOL, "journal": FORMAT_VERSION}
        for claimed in ({**ours, "ferrex": "0.0.1"}, {**ours, "protocol": PROTOCOL + 1},
                        {**ours, "journal": FORMAT_VERSION + 1}, {}):  # fmt: skip
            with socket.create_connection(("127.0.0.1", endpoint.port), timeout=30) as sock:
                send_frame(sock, {"token": endpoint.token, "tool": "stats", "args": {},
                                  "caller": {}, **claimed})  # fmt: skip
                reply = recv_frame(sock)
            assert reply is not None and "ok" not in reply
            error = reply["error"]
            assert error["code"] == "version_mismatch"
            assert (
                f"ferrex {__version__} (hub protocol {PROTOCOL}, journal format "
                f"{FORMAT_VERSION})" in error["message"]
            )
            assert str(claimed.get("ferrex", "unknown")) in error["message"]
    finally:
        peer.close()
        owner.close()


def test_the_peer_raises_the_owners_version_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a peer rebuilds from the owner's answer keeps the code (framing level)."""
    from ferrex.server import hub_peer, hub_port
    from ferrex.server.caller import error_document

    monkeypatch.setattr(hub_port, "PROTOCOL", PROTOCOL + 7)
    mismatch = hub_port.version_mismatch(
        {"ferrex": __version__, "protocol": PROTOCOL, "journal": FORMAT_VERSION}
    )
    assert mismatch is not None
    rebuilt = hub_peer.error_from_document(error_document(mismatch))
    assert isinstance(rebuilt, FerrexError) and rebuilt.code == "version_mismatch"
    assert f"hub protocol {PROTOCOL + 7}" in rebuilt.message
    assert f"hub protocol {PROTOCOL}, journal" in rebuilt.message
