"""HTTP: a request whose id is not a string or an integer gets -32600, not a silent 202
(issue #24, item 11; stdio's side is in test_stdio_framing.py)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.mcp_helpers import FERREX
from tests.healthz import wait_healthy


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    home = tmp_path_factory.mktemp("http-ids") / "home"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_healthy(server, url)
    token = (home / "run" / "http.token").read_text().strip()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
    try:
        yield f"{url}/mcp", headers
    finally:
        server.terminate()
        _, err = server.communicate(timeout=60)
        assert err.count("whose id is not a string or an integer") == 1, err  # logged once


@pytest.mark.parametrize("bad_id", ["{}", "[1]", "1.5", "true", "null"])
def test_a_bad_id_over_http_gets_invalid_request(
    served: tuple[str, dict[str, str]], bad_id: str
) -> None:
    url, headers = served
    body = '{"jsonrpc":"2.0","id":' + bad_id + ',"method":"ping"}'
    answer = httpx.post(url, content=body, headers=headers, timeout=60)
    assert answer.status_code == 400, answer.text
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Invalid Request: the id must be a string or an integer",
        },
    }


def test_good_ids_and_notifications_still_pass(served: tuple[str, dict[str, str]]) -> None:
    url, headers = served
    answer = httpx.post(url, content='{"jsonrpc":"2.0","id":5,"method":"ping"}',
                        headers=headers, timeout=60)  # fmt: skip
    assert answer.status_code == 200 and '"id":5' in answer.text, answer.text
    note = httpx.post(url, content='{"jsonrpc":"2.0","method":"notifications/initialized"}',
                      headers=headers, timeout=60)  # fmt: skip
    assert note.status_code == 202, note.text
    broken = httpx.post(url, content="{not json", headers=headers, timeout=60)
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
