"""HTTP always needs a bearer token: real ``ferrex serve --http`` processes, real requests."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from tests.e2e.mcp_helpers import FERREX, call, http_client
from tests.healthz import wait_healthy
from tests.ports import free_port


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _write_tokens(home: Path, entries: list[tuple[str, str | None]]) -> None:
    lines = []
    for token, agent in entries:
        lines += ["[[auth.tokens]]", f'sha256 = "{_sha(token)}"',
                  f'agent = "{agent}"' if agent else "operator = true", ""]  # fmt: skip
    tmp = home / "ferrex.toml.tmp"
    tmp.write_text("\n".join(lines))
    os.replace(tmp, home / "ferrex.toml")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    home = tmp_path / "home"
    home.mkdir()
    _write_tokens(home, [("alice-secret", "alice"), ("bob-secret", "bob")])
    port = free_port()
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_healthy(server, url)
    try:
        yield home, url
    finally:
        started = time.monotonic()
        server.terminate()
        _, err = server.communicate(timeout=30)  # does not hang after SIGTERM
        assert time.monotonic() - started < 30
        for secret in ("alice-secret", "bob-secret", _operator_token(home)):
            assert secret not in err


def _operator_token(home: Path) -> str:
    return (home / "run" / "http.token").read_text().strip()


def _initialize(url: str, headers: dict[str, str]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
    return httpx.post(f"{url}/mcp", json=body, timeout=30, headers={
        "Accept": "application/json, text/event-stream", **headers})  # fmt: skip


def test_the_token_file_is_private(served: tuple[Path, str]) -> None:
    home, _ = served
    mode = stat.S_IMODE((home / "run" / "http.token").stat().st_mode)
    assert mode == 0o600
    assert len(_operator_token(home)) >= 32


def test_no_token_or_a_wrong_one_is_401(served: tuple[Path, str]) -> None:
    _, url = served
    assert _initialize(url, {}).status_code == 401
    assert _initialize(url, {"Authorization": "Bearer not-a-token"}).status_code == 401
    assert _initialize(url, {"Authorization": f"Bearer {_sha('alice-secret')}"}).status_code == 401
    # a proxy header claiming loopback does not stand in for a token
    forwarded = {"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1",
                 "Forwarded": "for=127.0.0.1"}  # fmt: skip
    assert _initialize(url, forwarded).status_code == 401
    assert _initialize(url, {"Authorization": "Bearer alice-secret"}).status_code == 200


def test_healthz_needs_no_token_and_tells_nothing(served: tuple[Path, str]) -> None:
    _, url = served
    answer = httpx.get(f"{url}/healthz", timeout=10)
    assert answer.status_code == 200 and answer.json() == {"ok": True}


def test_each_token_sees_what_its_agent_may(served: tuple[Path, str]) -> None:
    home, url = served

    async def main() -> None:
        async with http_client(f"{url}/mcp", "alice-secret") as alice:
            mine = await call(alice, "store", {"content": "Alice's private note: the staging "
                                               "database password rotates on Fridays"})  # fmt: skip
            note = "Team note: the staging database lives on db-stage-2"
            shared = await call(alice, "store", {"content": note, "visibility": "shared"})
        async with http_client(f"{url}/mcp", "bob-secret") as bob:
            seen = await call(bob, "recall", {"query": "staging database", "limit": 10})
            ids = {r["id"] for r in seen["results"]}
            assert shared["id"] in ids and mine["id"] not in ids
        async with http_client(f"{url}/mcp", _operator_token(home)) as operator:
            seen = await call(operator, "recall", {"query": "staging database", "limit": 10})
            assert {mine["id"], shared["id"]} <= {r["id"] for r in seen["results"]}

    anyio.run(main)


def test_a_token_revoked_in_the_file_is_refused_without_a_restart(
    served: tuple[Path, str],
) -> None:
    home, url = served
    assert _initialize(url, {"Authorization": "Bearer bob-secret"}).status_code == 200
    _write_tokens(home, [("alice-secret", "alice")])
    deadline = time.monotonic() + 30
    while _initialize(url, {"Authorization": "Bearer bob-secret"}).status_code != 401:
        assert time.monotonic() < deadline, "the revoked token still works"
        time.sleep(0.2)
    assert _initialize(url, {"Authorization": "Bearer alice-secret"}).status_code == 200
    _write_tokens(home, [("alice-secret", "alice"), ("carol-secret", "carol")])
    deadline = time.monotonic() + 30
    while _initialize(url, {"Authorization": "Bearer carol-secret"}).status_code != 200:
        assert time.monotonic() < deadline, "the added token does not work"
        time.sleep(0.2)


def test_a_bad_token_entry_is_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text('[[auth.tokens]]\nsha256 = "plain-token"\nagent = "a"\n')
    done = subprocess.run([FERREX, "--home", str(home), "serve", "--http", "127.0.0.1:1"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert "sha256 must be 64 lowercase hex digits" in done.stderr


def test_open_loopback_serves_without_a_token_only_when_asked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text("[auth]\nopen_loopback = true\n")
    port = free_port()
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.1)
        assert _initialize(url, {}).status_code == 200
        assert not (home / "run" / "http.token").exists()
        # with no token needed, any Authorization header is no reason to skip the Origin
        # check (a browser adds Basic credentials by itself), nor is a rebound host let in
        port_part = f":{port}"
        for headers in (
            {"Authorization": "Basic YTpi", "Origin": "http://evil.example"},
            {"Authorization": "Bearer x"},
            {"Host": "127.attacker.example" + port_part,
             "Origin": "http://127.attacker.example" + port_part},
        ):  # fmt: skip
            forget = httpx.post(f"{url}/actions/forget", headers=headers, timeout=60,
                                data={"ids": ["mem_00000000000000000000000000"],
                                      "confirmed": "yes"})  # fmt: skip
            assert forget.status_code == 403, headers
        stats = httpx.get(f"{url}/api/v1/stats", headers={"Host": "127.0.0.1.nip.io"}, timeout=60)
        assert stats.status_code == 403
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "open_loopback" in err  # it says so loudly
