"""One person's MCP clients, each with its own agent id, share memories by default.

The clients are configured as the README's snippets configure them (``CLIENT_ARGS``): one
``--agent-id`` per client and ``--default-visibility shared``. Each runs its own stdio
server process on one data directory, as MCP clients do.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_args() -> dict[str, list[str]]:
    """The arguments the README's client snippets give ferrex, by agent id: the JSON
    snippets' ``"args"`` lines and the ``claude mcp add`` line, read from the README itself,
    so the test follows the snippets as a user copies them."""
    found: dict[str, list[str]] = {}
    for line in README.read_text().splitlines():
        line = line.strip()
        if line.startswith('"args": ['):
            args = json.loads(line.removeprefix('"args":').rstrip(","))
        elif line.startswith("claude mcp add ferrex -- /path/to/ferrex/.venv/bin/ferrex "):
            args = shlex.split(line)[6:]
        else:
            continue
        found[args[args.index("--agent-id") + 1]] = args
    return found


CLIENT_ARGS = _readme_args()
"""The arguments the README's client snippets give ferrex (after the executable)."""


def test_the_readme_gives_each_client_its_own_id_and_shares_by_default() -> None:
    assert {"claude-code", "claude-desktop", "vscode", "cursor"} <= set(CLIENT_ARGS)
    for args in CLIENT_ARGS.values():
        assert args[args.index("--default-visibility") + 1] == "shared", args


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
