"""One person's MCP clients, each with its own agent id, share memories by default.

The clients are configured as the README's snippets configure them (``CLIENT_ARGS``): one
``--agent-id`` per client and ``--default-visibility shared``. Each runs its own stdio
server process on one data directory, as MCP clients do.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client

#: The arguments the README's client snippets give ferrex (after the executable).
CLIENT_ARGS = {
    "claude-code": ["--agent-id", "claude-code", "--default-visibility", "shared"],
    "cursor": ["--agent-id", "cursor", "--default-visibility", "shared"],
}


def test_two_clients_configured_from_the_readme_share_what_they_store(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with (
            stdio_client(home, *CLIENT_ARGS["claude-code"]) as claude,
            stdio_client(home, *CLIENT_ARGS["cursor"]) as cursor,
            stdio_client(home, "--agent-id", "old-snippet") as old,
        ):
            tools = {t.name: t for t in (await cursor.list_tools()).tools}
            visibility = tools["store"].input_schema["properties"]["visibility"]
            assert visibility["description"].startswith("Unset: shared")
            text = "The billing service deploys from the release-7 branch on Fridays"
            shared = await call(claude, "store", {"content": text})
            kept = await call(claude, "store", {
                "content": "Draft idea for the billing refactor, not ready to share",
                "visibility": "private"})  # fmt: skip
            text = "The old snippet's agent keeps the billing VPN notes to itself"
            private_by_default = await call(old, "store", {"content": text})
            found = await call(cursor, "recall", {"query": "billing", "limit": 10,
                                                  "min_relevance": 0})  # fmt: skip
            ids = {r["id"] for r in found["results"]}
            assert shared["id"] in ids
            assert kept["id"] not in ids  # private when asked for
            assert private_by_default["id"] not in ids  # no flag: private, as before
            # the stored memory names its author and is shared
            mine = await call(claude, "recall", {"query": "release-7 branch Fridays"})
            top = mine["results"][0]
            assert top["id"] == shared["id"]
            assert top.get("visibility", "shared") == "shared"
            # and the other way round: cursor's memory reaches claude-code
            back = await call(cursor, "store", {
                "content": "Cursor found that the billing tests need TZ=UTC to pass"})  # fmt: skip
            seen = await call(claude, "recall", {"query": "billing tests TZ=UTC"})
            assert seen["results"][0]["id"] == back["id"]

    anyio.run(main)
