"""Resources and prompts end to end: a real ``ferrex`` process, the SDK's stdio client."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from tests.e2e.mcp_helpers import call, stdio_client


def test_resources_and_prompts_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home, "--agent-id", "alice") as client:
            old = await call(client, "store", {
                "subject": "billing-db", "predicate": "runs on", "object": "PostgreSQL 15",
                "entities": ["Postgres"]})  # fmt: skip
            new = await call(client, "store", {
                "subject": "billing-db", "predicate": "runs on", "object": "PostgreSQL 16",
                "entities": ["postgres"]})  # fmt: skip
            assert new["superseded"] == [old["id"]]
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            assert listed == {"ferrex://stats", "ferrex://recent"}
            read = await client.read_resource(f"ferrex://memory/{old['id']}")
            memory = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert [h["id"] for h in memory["history"]] == [old["id"], new["id"]]
            assert memory["history"][0]["t_invalid"] == memory["history"][1]["t_valid"]
            # From the newer end too: an automatic supersede records only superseded_by.
            read = await client.read_resource(f"ferrex://memory/{new['id']}")
            newer = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert [h["id"] for h in newer["history"]] == [old["id"], new["id"]]
            entity = json.loads(
                (await client.read_resource("ferrex://entity/PostgreSQL")).contents[0].text  # type: ignore[union-attr]
            )
            assert entity["memories"][0]["id"] == new["id"]
            recent = json.loads(
                (await client.read_resource("ferrex://recent")).contents[0].text  # type: ignore[union-attr]
            )
            assert [m["id"] for m in recent["memories"]] == [new["id"]]
            with pytest.raises(MCPError):
                await client.read_resource("ferrex://memory/mem_00000000000000000000000000")
            names = {p.name for p in (await client.list_prompts()).prompts}
            assert names == {"session-start", "memory-review", "remember-conversation"}
            start = await client.get_prompt("session-start")
            text = start.messages[0].content.text  # type: ignore[union-attr]
            assert "1 active memories" in text and new["id"] in text
            remember = await client.get_prompt("remember-conversation", {"topic": "billing"})
            assert "Focus on: billing" in remember.messages[0].content.text  # type: ignore[union-attr]

    anyio.run(main)
