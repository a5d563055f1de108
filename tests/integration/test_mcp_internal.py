"""An unexpected failure reaches the agent as one clean ``[internal]`` tool error."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client
from mcp_types import CallToolResult

from ferrex.app import App
from ferrex.server.hub import Hub
from ferrex.server.mcp_server import build_server
from ferrex.server.service import Caller


def test_an_internal_error_says_internal_once(tmp_path: Path) -> None:
    def broken() -> App:
        raise RuntimeError("the composition root is broken on purpose")

    hub = Hub(tmp_path / "home", broken, Caller(), wait_seconds=5, flush_every=None)
    server = build_server(hub)

    async def one() -> CallToolResult:
        with anyio.fail_after(60):
            async with Client(server) as client:
                result = await client.call_tool("stats", {})
                assert isinstance(result, CallToolResult)
                return result

    try:
        result = anyio.run(one)
    finally:
        hub.close()
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("[internal] ") and text.count("[internal]") == 1, text
    assert "broken on purpose" not in text  # the cause is in the log, not told to the agent
