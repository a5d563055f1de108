"""The MCP server end to end: a real ``ferrex`` process, driven by the SDK's stdio client."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e import npm_helpers
from tests.e2e.mcp_helpers import (
    FERREX,
    call,
    error,
    ferrex,
    http_client,
    journal_head,
    stdio_client,
)
from tests.ports import free_port

GOLDEN = Path(__file__).parent.parent / "golden" / "mcp_tools.json"


def _tool_listing(tools: list[object]) -> list[dict[str, object]]:
    return [
        t.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[attr-defined]
        for t in tools
    ]


def test_tools_match_the_golden_schemas(tmp_path: Path) -> None:
    async def main() -> dict[str, list[dict[str, object]]]:
        async with stdio_client(tmp_path / "home") as client:
            assert client.instructions and "recall" in client.instructions
            return {
                "tools": _tool_listing(list((await client.list_tools()).tools)),
                "resources": _tool_listing(list((await client.list_resources()).resources)),
                "resource_templates": _tool_listing(
                    list((await client.list_resource_templates()).resource_templates)
                ),
                "prompts": _tool_listing(list((await client.list_prompts()).prompts)),
            }

    everything = anyio.run(main)
    if os.environ.get("FERREX_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(everything, indent=2, ensure_ascii=False) + "\n")
    assert everything == json.loads(GOLDEN.read_text()), (
        "the tool, resource or prompt listings changed; if on purpose, rerun with "
        "FERREX_UPDATE_GOLDEN=1"
    )
    listing = everything["tools"]
    by_name = {str(t["name"]): t for t in listing}
    assert sorted(by_name) == ["confirm", "forget", "recall", "reflect", "stats", "store"]
    for name in ("recall", "reflect", "stats"):
        assert by_name[name]["annotations"]["readOnlyHint"] is True  # type: ignore[index]
    # recall writes nothing an agent asked for (use counts aside): confirming is its own tool
    assert by_name["confirm"]["annotations"]["readOnlyHint"] is False  # type: ignore[index]
    assert "validate_ids" not in by_name["recall"]["inputSchema"]["properties"]  # type: ignore[index]
    assert by_name["forget"]["annotations"]["destructiveHint"] is True  # type: ignore[index]
    assert by_name["recall"]["inputSchema"]["required"] == ["query"]  # type: ignore[index]
    assert by_name["forget"]["inputSchema"]["required"] == ["ids"]  # type: ignore[index]


def test_store_recall_forget_round_trip(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            stored = await call(client, "store", {
                "content": "On 2026-11-28 the nightly backup of billing-db failed: the disk "
                "was full", "entities": ["billing-db"]})  # fmt: skip
            assert stored["status"] == "stored" and stored["type"] == "episodic"
            fact = await call(client, "store", {
                "subject": "api-server", "predicate": "uses", "object": "tokio 1.36"})  # fmt: skip
            assert fact["type"] == "semantic"
            found = await call(client, "recall", {"query": "why did the backup fail?"})
            assert found["results"][0]["id"] == stored["id"]
            assert found["results"][0]["freshness"]["label"] == "fresh"
            newer = await call(client, "store", {
                "subject": "api-server", "predicate": "uses", "object": "tokio 1.38"})  # fmt: skip
            assert newer["superseded"] == [fact["id"]]
            history = await call(client, "recall", {
                "query": "api-server tokio", "include_invalidated": True, "limit": 10})  # fmt: skip
            labels = {r["id"]: r["freshness"]["label"] for r in history["results"]}
            assert labels[fact["id"]] == "superseded" and labels[newer["id"]] == "fresh"
            confirmed = await call(client, "confirm", {"ids": [newer["id"], "mem_unknown"]})
            assert confirmed["validated"] == [newer["id"]]
            assert confirmed["not_found"] == ["mem_unknown"]
            stats = await call(client, "stats", {"detailed": True})
            assert stats["total"] == 2
            reflect = await call(client, "reflect", {})
            assert set(reflect) >= {"stale", "unvalidated", "contradictions"}
            gone = await call(client, "forget", {"ids": [stored["id"], "mem_unknown"]})
            assert gone["forgotten"] == [stored["id"]] and gone["not_found"] == ["mem_unknown"]
            after = await call(client, "recall", {"query": "backup billing-db disk full"})
            assert stored["id"] not in {r["id"] for r in after["results"]}

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_every_error_path_is_a_tool_error_with_a_code(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            first = await call(
                client,
                "store",
                {"content": "The staging VPN moved to vpn2.example.internal on 2026-11-02"},
            )
            head = first["position"]
            cases: list[tuple[str, dict[str, object], str]] = [
                ("store", {}, "invalid_input"),  # nothing to remember
                ("store", {"content": 42}, "invalid_input"),  # wrong type
                ("store", {"content": "x", "confidence": 2}, "invalid_input"),
                ("store", {"content": "about a date", "valid_from": "last tuesday"},
                 "invalid_input"),
                ("store", {"content": "bell \x07 inside"}, "invalid_input"),
                ("store", {"content": "The staging VPN moved to vpn2.example.internal on "
                           "2026-11-02"}, "duplicate"),
                ("store", {"content": "A correction", "supersedes": "mem_nothing"},
                 "not_found"),
                ("store", {"subject": "a", "predicate": "b"}, "invalid_input"),
                ("recall", {}, "invalid_input"),
                ("recall", {"query": "vpn", "limit": -1}, "invalid_input"),
                ("recall", {"query": "vpn", "limit": 10**12}, "invalid_input"),
                ("recall", {"query": "vpn", "types": ["dream"]}, "invalid_input"),
                ("recall", {"query": "vpn", "as_of": "yesterday-ish"}, "invalid_input"),
                ("recall", {"query": "vpn", "validate_ids": ["mem_not_returned"]},
                 "invalid_input"),
                ("forget", {"ids": []}, "invalid_input"),
                ("forget", {"ids": "mem_1"}, "invalid_input"),
                ("reflect", {"limit": 0}, "invalid_input"),
                ("stats", {"detailed": "yes please"}, "invalid_input"),
                ("no_such_tool", {}, "invalid_input"),
            ]  # fmt: skip
            for tool, args, code in cases:
                got, text = await error(client, tool, args)
                assert got == code, (tool, args, text)
            # a tool error is not a stored memory: the journal did not move
            assert (await call(client, "stats", {}))["total"] == 1
            later = await call(client, "store", {"content": "Later, a real store"})
            assert later["position"] == head + 1

    anyio.run(main)


def test_http_transport(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_for_port(port, server)
        token = _token(home / "run" / "http.token")

        async def main() -> None:
            async with http_client(f"http://127.0.0.1:{port}/mcp", token) as c:
                tools = {t.name for t in (await c.list_tools()).tools}
                assert tools == {"store", "recall", "confirm", "forget", "reflect", "stats"}
                stored = await call(
                    c,
                    "store",
                    {"content": "Deploys of web-frontend are frozen during the December sale"},
                )
                found = await call(c, "recall", {"query": "when are frontend deploys frozen"})
                assert found["results"][0]["id"] == stored["id"]
                code, _ = await error(c, "recall", {"query": ""})
                assert code == "invalid_input"

        anyio.run(main)
    finally:
        server.terminate()
        out, err = server.communicate(timeout=60)
    assert server.returncode in (0, -15), err
    assert out == ""  # nothing but protocol on stdout, and HTTP has none there
    assert token not in err  # the token is in its file, never in the log
    assert str(home / "run" / "http.token") in err
    assert ferrex(home, "journal", "verify").returncode == 0


def test_bad_http_address_is_a_usage_error(tmp_path: Path) -> None:
    done = ferrex(tmp_path / "home", "serve", "--http", "nowhere")
    assert done.returncode == 2
    assert "HOST:PORT" in done.stderr


def test_third_party_client_mcp_inspector(tmp_path: Path) -> None:
    """The MCP Inspector's CLI (a Node.js client) lists the tools, stores and recalls."""
    home = tmp_path / "home"
    inspector = npm_helpers.inspector()

    def run(*args: str) -> dict[str, object]:
        done = subprocess.run(
            [str(inspector), "--cli", FERREX, "--home", str(home), *args],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    listed = run("--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == {  # type: ignore[attr-defined]
        "store", "recall", "confirm", "forget", "reflect", "stats"}  # fmt: skip
    stored = run("--method", "tools/call", "--tool-name", "store",
                 "--tool-arg", "content=Grafana dashboards for api-server live in folder "
                 "SRE-7")  # fmt: skip
    assert stored["isError"] is False
    memory_id = stored["structuredContent"]["id"]  # type: ignore[index]
    found = run("--method", "tools/call", "--tool-name", "recall",
                "--tool-arg", "query=where are the api-server dashboards")  # fmt: skip
    assert found["structuredContent"]["results"][0]["id"] == memory_id  # type: ignore[index]
    assert journal_head(home) == 2  # the store, then the recall's access, flushed at exit


def _token(path: Path, timeout: float = 60) -> str:
    """The server's token once it is written: the server listens (and a connection succeeds)
    before it makes the token file, so under load the file can still be absent or empty."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            if token := path.read_text().strip():
                return token
        time.sleep(0.1)
    pytest.fail(f"{path} was not written")


def _wait_for_port(port: int, process: subprocess.Popen[str], timeout: float = 60) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited: {process.stderr.read() if process.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail("the HTTP server did not start listening")


def test_stdout_carries_nothing_but_protocol(tmp_path: Path) -> None:
    """Raw JSON-RPC over the pipes: every byte on stdout is a protocol message, even while
    the models load and a memory is stored and recalled; logs go to stderr."""
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "store", "arguments": {"content": "Raw protocol check: the "
                                                   "build bot is called tern"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "recall", "arguments": {"query": "what is the build bot called"}}},
    ]  # fmt: skip
    process = subprocess.Popen(
        [FERREX, "--home", str(tmp_path / "home"), "-v"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    for message in messages:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        if "id" in message:
            while message["id"] not in answers:
                line = process.stdout.readline()
                assert line, "the server closed stdout early"
                parsed = json.loads(line)  # anything but JSON here fails the test
                assert parsed["jsonrpc"] == "2.0"
                if "id" in parsed:
                    answers[parsed["id"]] = parsed
    out, err = process.communicate(timeout=120)
    for line in out.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert process.returncode == 0, err
    recalled = answers[3]["result"]["structuredContent"]
    stored = answers[2]["result"]["structuredContent"]
    assert recalled["results"][0]["id"] == stored["id"]
    assert "ferrex" in err  # -v logged something, and it went to stderr
    lines = err.splitlines()
    assert not [line for line in lines if line.startswith("ferrex: ferrex:")], err
    assert len(set(lines)) == len(lines), f"a log line was printed twice: {err}"


def test_a_bad_frame_on_stdio_gets_an_answer(tmp_path: Path) -> None:
    """A line that is not JSON-RPC gets an error with id null, and the server keeps serving."""
    process = subprocess.Popen(
        [FERREX, "--home", str(tmp_path / "home")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    bad = ["{not json", '{"jsonrpc": "2.0", "id": 5, "method": "ping", "x": "\\ud800"}',
           "[" * 5000 + "]" * 5000, '{"hello": "world"}']  # fmt: skip
    codes = []
    for line in bad:
        process.stdin.write(line + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())  # a hang here fails by timeout
        assert answer["id"] is None and answer["jsonrpc"] == "2.0"
        codes.append(answer["error"]["code"])
    assert codes == [-32700, -32700, -32700, -32600]
    process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}) + "\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 7, "result": {}}
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert err.count("answered a line on stdin that could not be served") == 1  # logged once
    assert "ud800" not in err and "hello" not in err  # never the line itself
