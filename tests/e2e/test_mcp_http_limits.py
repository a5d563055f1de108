"""The HTTP edge under slow and many connections: a real ``serve --http`` process.

Connections that never finish their request head, or their body, are closed; a flood of
them under a low descriptor limit neither keeps another client out nor floods the log.
"""

from __future__ import annotations

import contextlib
import errno
import resource
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.mcp_helpers import FERREX
from tests.healthz import wait_healthy
from tests.ports import free_port


@contextlib.contextmanager
def _serving(
    home: Path, log: Path, nofile: int | None = None, config: str = ""
) -> Iterator[tuple[str, str]]:
    """``serve --http`` on ``home`` (its stderr in ``log``), with RLIMIT_NOFILE set low."""
    home.mkdir(parents=True, exist_ok=True)
    if config:
        (home / "ferrex.toml").write_text(config)
    port = free_port()

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    with log.open("wb") as sink:
        server = subprocess.Popen(
            [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, preexec_fn=limit,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base, timeout=120, output=log.read_text)
        yield base, (home / "run" / "http.token").read_text().strip()
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _stats(base: str, token: str) -> httpx.Response:
    """One MCP tools/call on a fresh connection (30 s at most, so a test cannot hang)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "stats", "arguments": {}}}  # fmt: skip
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
    return httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=30)


def _slow(base: str, head: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=30)
    s.sendall(head)
    s.setblocking(False)
    return s


def _closed(s: socket.socket) -> bool:
    """Whether the server closed ``s`` (what it sent before, a 401 say, is read and dropped)."""
    try:
        while True:
            if s.recv(65536, socket.MSG_DONTWAIT) == b"":
                return True
    except BlockingIOError:
        return False
    except OSError as exc:
        return exc.errno != errno.ENOTCONN


def _wait_closed(s: socket.socket, what: str) -> None:
    deadline = time.monotonic() + 60
    while not _closed(s):
        assert time.monotonic() < deadline, f"the server kept {what} open"
        time.sleep(0.1)


@pytest.fixture(autouse=True)
def _room_for_many_sockets() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096 and hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))


def test_slow_connections_under_a_low_descriptor_limit_keep_no_one_out(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with _serving(tmp_path / "home", log, nofile=512) as (base, token):
        assert _stats(base, token).status_code == 200
        before = log.stat().st_size
        slow = []
        try:
            for _ in range(700):  # more than the server has descriptors for
                sock = socket.socket()
                sock.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    sock.connect(("127.0.0.1", int(base.rsplit(":", 1)[1])))
                slow.append(sock)
            for sock in slow:
                with contextlib.suppress(OSError):
                    sock.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            answers = [_stats(base, token) for _ in range(3)]
            assert [a.status_code for a in answers] == [200, 200, 200]
            assert "active memories" in answers[-1].text
        finally:
            for sock in slow:
                sock.close()
        grown = log.stat().st_size - before
        assert grown < 100_000, log.read_text()[-3000:]
        assert "Too many open files" not in log.read_text()


def test_a_request_head_or_body_that_never_ends_is_closed(tmp_path: Path) -> None:
    config = "[server]\nheader_timeout = 1\nbody_timeout = 1\n"
    with _serving(tmp_path / "home", tmp_path / "server.log", config=config) as (base, token):
        head = _slow(base, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: b\r\n")
        body = _slow(base, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                     b"Content-Type: application/json\r\n\r\n{")  # fmt: skip
        silent = _slow(base, b"")
        for sock, what in ((head, "a head"), (body, "a body"), (silent, "a silent one")):
            with sock:
                _wait_closed(sock, what)
        assert _stats(base, token).status_code == 200  # a prompt client is served


def test_at_the_per_client_cap_the_oldest_waiting_connection_makes_room(tmp_path: Path) -> None:
    config = "[server]\nmax_connections_per_client = 4\n"
    log = tmp_path / "server.log"
    with _serving(tmp_path / "home", log, config=config) as (base, token):
        idle = [_slow(base, b"GET / HTTP/1.1\r\n") for _ in range(4)]
        try:
            assert _stats(base, token).status_code == 200  # the fifth, prompt, is served
            _wait_closed(idle[0], "the oldest waiting connection")
            assert not any(_closed(s) for s in idle[2:]), log.read_text()
        finally:
            for sock in idle:
                sock.close()
