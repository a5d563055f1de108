"""Helpers for the MCP end-to-end tests: real server processes, the SDK's own client."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

FERREX = str(Path(sys.executable).with_name("ferrex"))


def server_params(home: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=FERREX, args=["--home", str(home), *extra])


@asynccontextmanager
async def stdio_client(home: Path, *extra: str) -> AsyncIterator[Client]:
    async with Client(server_params(home, *extra), read_timeout_seconds=120) as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool call that must succeed; returns its structured content."""
    result = await client.call_tool(tool, args)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def store_fact(
    client: Client, subject: str, predicate: str, obj: str, **extra: Any
) -> dict[str, Any]:
    """Store one fact over MCP as an agent states it; the store's answer."""
    args = {"subject": subject, "predicate": predicate, "object": obj, **extra}
    return await call(client, "store", args)


async def error(client: Client, tool: str, args: dict[str, Any]) -> tuple[str, str]:
    """A tool call that must fail as a tool error; returns (code, text)."""
    result = await client.call_tool(tool, args)
    assert isinstance(result, CallToolResult)
    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    code = result.structured_content["error"]["code"]
    assert text.startswith(f"[{code}]"), text
    return code, text


def ferrex(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FERREX, "--home", str(home), *args], capture_output=True, text=True, timeout=300
    )


def journal_head(home: Path) -> int:
    done = ferrex(home, "journal", "verify", "--json")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["head_position"])


@asynccontextmanager
async def http_client(url: str, token: str | None) -> AsyncIterator[Client]:
    """The SDK's client over Streamable HTTP, sending ``token`` as its bearer token."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, read_timeout_seconds=120) as client:
            yield client


def owner_pid(home: Path, timeout: float = 60) -> int:
    """The pid of the process that owns ``home``'s stores, once one does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return int(json.loads((home / "run" / "owner.json").read_text())["pid"])
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
    raise AssertionError("no process became the owner")


@contextmanager
def serving(home: Path, *extra: str, start_within: float = 600) -> Iterator[int]:
    """An MCP stdio server on ``home`` (``extra`` its arguments), held open by a client on a
    thread of its own while the block runs; it answers one ``stats`` first, so it owns the
    stores when the block starts. Yields the owner's pid."""
    stop, up = threading.Event(), threading.Event()

    async def serve() -> None:
        async with stdio_client(home, *extra) as client:
            await call(client, "stats", {})
            up.set()
            while not stop.is_set():
                await anyio.sleep(0.05)

    thread = threading.Thread(target=lambda: anyio.run(serve), daemon=True)
    thread.start()
    try:
        if not up.wait(start_within):
            raise AssertionError(f"the server did not start within {start_within:.0f} s")
        yield owner_pid(home)
    finally:
        stop.set()
        thread.join(60)
