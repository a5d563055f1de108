"""Streamable HTTP without per-session state (the default) and with sessions (--sessions).

Real server processes; the SDK's own client for the calls, and raw HTTP where the question
is what the transport itself does (a session id or none).
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from tests.e2e.mcp_helpers import FERREX, call, ferrex, http_client
from tests.healthz import wait_healthy
from tests.ports import free_port

_INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "1"}},
}  # fmt: skip
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _serve(home: Path, *extra: str) -> Iterator[tuple[str, str]]:
    port = free_port()
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_healthy(server, f"http://127.0.0.1:{port}", timeout=120,
                     output=lambda: server.communicate()[1])  # fmt: skip
        token = (home / "run" / "http.token").read_text().strip()
        yield f"http://127.0.0.1:{port}/mcp", token
    finally:
        server.terminate()
        server.communicate(timeout=60)


@pytest.fixture
def stateless(tmp_path: Path) -> Iterator[tuple[str, str]]:
    yield from _serve(tmp_path / "home")


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[tuple[str, str]]:
    yield from _serve(tmp_path / "home", "--sessions")


def _post(url: str, token: str, body: dict[str, object], **headers: str) -> httpx.Response:
    return httpx.post(
        url, json=body, headers={**_HEADERS, "Authorization": f"Bearer {token}", **headers},
        timeout=120,
    )  # fmt: skip


def _tool_call(n: int, tool: str, args: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}  # fmt: skip


def _answer(response: httpx.Response) -> dict[str, object]:
    """The JSON-RPC answer of a POST, sent as JSON or as one SSE event."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


def test_stateless_by_default_a_call_needs_no_session(stateless: tuple[str, str]) -> None:
    url, token = stateless
    init = _post(url, token, _INIT)
    assert init.status_code == 200
    assert "mcp-session-id" not in init.headers  # nothing pinned on the server
    # A call on a connection of its own, without any session id, is answered.
    stored = _answer(_post(url, token, _tool_call(2, "store", {
        "content": "The staging cluster is rebuilt every Sunday night"}),
        **{"MCP-Protocol-Version": "2025-06-18"}))  # fmt: skip
    assert "result" in stored, stored
    result = stored["result"]
    assert isinstance(result, dict) and not result.get("isError"), result


def test_several_sdk_clients_at_once_over_stateless_http(stateless: tuple[str, str]) -> None:
    url, token = stateless

    async def client(i: int, ids: dict[int, str]) -> None:
        async with http_client(url, token) as c:
            doc = await call(c, "store", {"content": f"Runbook RB-{500 + i}: rotate the "
                                          f"TLS certificate of edge node {i}"})  # fmt: skip
            ids[i] = doc["id"]
            found = await call(c, "recall", {"query": f"RB-{500 + i} TLS certificate"})
            assert found["results"][0]["id"] == doc["id"]

    async def main() -> None:
        ids: dict[int, str] = {}
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(client, i, ids)
        assert len(set(ids.values())) == 4
        async with http_client(url, token) as c:
            assert (await call(c, "stats", {}))["total"] == 4

    anyio.run(main)


def test_sessions_flag_serves_the_session_transport(sessions: tuple[str, str]) -> None:
    url, token = sessions
    # Without a session, a call is refused: the session-based transport pins state.
    refused = _post(url, token, _tool_call(2, "stats", {}))
    assert refused.status_code >= 400
    init = _post(url, token, _INIT)
    assert init.status_code == 200 and init.headers.get("mcp-session-id")

    async def main() -> None:
        async with http_client(url, token) as c:
            doc = await call(c, "store", {"content": "Backups of the wiki run at 02:00 UTC"})
            found = await call(c, "recall", {"query": "when do wiki backups run"})
            assert found["results"][0]["id"] == doc["id"]

    anyio.run(main)


def test_sessions_without_http_is_a_usage_error(tmp_path: Path) -> None:
    done = ferrex(tmp_path / "home", "serve", "--sessions")
    assert done.returncode == 2
    assert "--sessions applies to --http" in done.stderr


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """`serve --http` on a busy port says so and exits 2; it never claims to be serving,
    and it opens no store (no owner lock taken, no journal)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        home = tmp_path / "home"
        done = subprocess.run(
            [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "serving" not in done.stderr and "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert not home.exists()  # nothing was opened or created
