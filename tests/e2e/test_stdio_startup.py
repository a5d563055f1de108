"""A stdio client's ``initialize`` is answered before anything heavy: no model runtime, no
vector store, no SQLite, no numpy loaded, no owner elected. The election and the warm-up
follow once the client has the answer and speaks again (issue #27).

What a process has loaded is read from ``/proc/PID/maps`` (native libraries), so nothing here
depends on how fast the machine is: the client holds the handshake still while it looks.
"""

from __future__ import annotations

import time
from pathlib import Path

from ferrex.ownership import Endpoint, is_held
from tests.e2e.stdio_helpers import INITIALIZE, INITIALIZED, RawServer, line

HEAVY = ("onnxruntime", "qdrant_edge", "apsw", "numpy")
RECALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
          "params": {"name": "recall", "arguments": {"query": "release plans"}}}  # fmt: skip


def native(pid: int) -> set[str]:
    """Which of the heavy packages have a shared library mapped in process ``pid``."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {name for name in HEAVY if f"/{name}/" in maps}


def until(condition: object, what: str, seconds: float = 120) -> None:
    """Poll for a state (a generous bound against a hang, not a timing)."""
    assert callable(condition)
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def test_initialize_is_answered_before_anything_heavy_then_the_owner_warms_up(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    server = RawServer(home)
    try:
        server.write(line(INITIALIZE))
        answer = server.answer()
        assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "ferrex"
        pid = server.process.pid
        # Until the client speaks again nothing more happens: a look now is exact.
        assert native(pid) == set(), "loaded before initialize was answered"
        assert not is_held(home), "the owner was elected before initialize was answered"
        assert Endpoint.read(home) is None

        server.write(line(INITIALIZED))
        # No tool call yet: the election and the model's warm-up start on their own.
        until(lambda: is_held(home) and Endpoint.read(home) is not None, "the election")
        until(lambda: {"onnxruntime", "qdrant_edge"} <= native(pid), "the warm-up")

        server.write(line(RECALL))
        result = server.answer()
        assert result["id"] == 7 and not result["result"].get("isError"), result
        assert server.close() == 0
    finally:
        server.kill()


def test_a_ping_before_initialize_starts_nothing(tmp_path: Path) -> None:
    """A ping before ``initialize`` is answered without electing or loading; the handshake's
    end still starts the owner. (Both in one write: the client's ``initialize`` is there when
    the server begins, well inside its clock for a client that never sends one.)"""
    home = tmp_path / "home"
    server = RawServer(home)
    try:
        server.write(line({"jsonrpc": "2.0", "id": 2, "method": "ping"}) + line(INITIALIZE))
        assert server.answer()["id"] == 2
        assert server.answer()["id"] == 1
        assert native(server.process.pid) == set()
        assert not is_held(home)
        server.write(line(INITIALIZED))
        until(lambda: is_held(home), "the election")
        assert server.close() == 0
    finally:
        server.kill()


def test_a_server_nobody_initializes_still_becomes_the_owner(tmp_path: Path) -> None:
    """A process started with a silent stdin (to own the stores for others) elects anyway."""
    home = tmp_path / "home"
    server = RawServer(home)
    try:
        until(lambda: is_held(home) and Endpoint.read(home) is not None, "the election")
        assert server.close() == 0
    finally:
        server.kill()
