"""Identity across processes: a call forwarded to the owner carries its caller's identity.

One process owns a data directory's stores; every other process forwards its tool calls to
it (``ferrex.server.hub``). Whatever agent id the owner was started with, a memory stored
through another process belongs to that process's caller: its agent, or the operator (no
agent: shared, seen by all) when it was started without one.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, ferrex, owner_pid, stdio_client


def _owners(home: Path) -> dict[str, tuple[object, object]]:
    """Each memory's agent and visibility, from a dump (the servers have stopped)."""
    dumped = ferrex(home, "export", "jsonl", "-")
    assert dumped.returncode == 0, dumped.stderr
    lines = [json.loads(line) for line in dumped.stdout.splitlines() if line.strip()]
    return {d["id"]: (d.get("agent_id"), d.get("visibility")) for d in lines
            if str(d.get("id", "")).startswith("mem_")}  # fmt: skip


def test_a_process_without_an_agent_id_stores_as_the_operator_not_as_the_owner(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> tuple[str, str, str]:
        async with stdio_client(home, "--agent-id", "claude-code") as owner:
            # The first process owns the stores (its agent id is the owner's configuration).
            await call(owner, "stats", {})
            first = owner_pid(home)
            async with (
                stdio_client(home) as operator,
                stdio_client(home, "--agent-id", "cursor") as cursor,
            ):
                mine = await call(operator, "store", {"content": "Operator's note: the "
                                  "backup window for billing-db moved to 02:00 UTC"})  # fmt: skip
                theirs = await call(cursor, "store", {"content": "Cursor's note: the lint "
                                    "step of web-ui now runs eslint 9"})  # fmt: skip
                own = await call(owner, "store", {"content": "Claude's note: the staging "
                                 "cluster was drained for the upgrade"})  # fmt: skip
                assert owner_pid(home) == first  # both stores were forwarded to the owner
                # The operator's memory is shared and carries no agent: every agent sees it.
                for client in (owner, cursor):
                    found = await call(client, "recall", {"query": "billing-db backup window"})
                    assert mine["id"] in {r["id"] for r in found["results"]}
                # Cursor's memory is cursor's own: the owner's agent does not see it.
                found = await call(owner, "recall", {"query": "web-ui lint step eslint"})
                assert theirs["id"] not in {r["id"] for r in found["results"]}
                found = await call(cursor, "recall", {"query": "staging cluster drained"})
                assert own["id"] not in {r["id"] for r in found["results"]}
                # The operator sees all three.
                seen = await call(operator, "stats", {})
                assert seen["total"] == 3
        return mine["id"], theirs["id"], own["id"]

    mine, theirs, own = anyio.run(main)
    owners = _owners(home)
    assert owners[mine] == (None, "shared")
    assert owners[theirs] == ("cursor", "private")
    assert owners[own] == ("claude-code", "private")


def test_the_cli_without_an_agent_id_stores_as_the_operator_beside_an_agents_server(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> tuple[str, str]:
        async with stdio_client(home, "--agent-id", "claude-code") as server:
            await call(server, "stats", {})
            stored = ferrex(home, "store", "--json", "--content", "The on-call rota for the search "
                            "cluster changed to weekly hand-overs on Tuesdays")  # fmt: skip
            assert stored.returncode == 0, stored.stderr
            memory_id = json.loads(stored.stdout)["id"]
            found = await call(server, "recall", {"query": "search cluster on-call rota"})
            assert memory_id in {r["id"] for r in found["results"]}
            # With an agent id of its own, the CLI stores as that agent.
            note = "ops-bot rotated the TLS certificates of the edge proxies"
            other = ferrex(home, "--agent-id", "ops-bot", "store", "--json", "--content", note)
            assert other.returncode == 0, other.stderr
            return memory_id, json.loads(other.stdout)["id"]

    operators, bots = anyio.run(main)
    owners = _owners(home)
    assert owners[operators] == (None, "shared")
    assert owners[bots] == ("ops-bot", "private")


def test_an_import_stores_as_the_importing_process_and_keeps_the_agents_a_line_names(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    lines = tmp_path / "notes.jsonl"
    lines.write_text(
        json.dumps({"content": "The nightly export job of ledger-svc now writes Parquet"})
        + "\n"
        + json.dumps(
            {
                "content": "Deploy freeze for the mobile app until the 12th",
                "agent_id": "release-bot",
                "visibility": "shared",
            }
        )
        + "\n"
    )
    imported = ferrex(home, "--agent-id", "importer", "import", "--json", str(lines))
    assert imported.returncode == 0, imported.stderr
    by_text: dict[str, tuple[object, object]] = {}
    dumped = ferrex(home, "export", "jsonl", "-")
    for line in dumped.stdout.splitlines():
        doc = json.loads(line)
        if str(doc.get("id", "")).startswith("mem_"):
            by_text[doc["content"][:20]] = (doc.get("agent_id"), doc.get("visibility"))
    assert by_text["The nightly export j"] == ("importer", "private")
    assert by_text["Deploy freeze for th"] == ("release-bot", "shared")
    # Without an agent id the importer is the operator: shared, no agent.
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"content": "Grafana alerts for queue depth were muted"}) + "\n")
    assert ferrex(home, "import", "--json", str(other)).returncode == 0
    dumped = ferrex(home, "export", "jsonl", "-")
    rows = [json.loads(x) for x in dumped.stdout.splitlines()]
    muted = [r for r in rows if str(r.get("content", "")).startswith("Grafana alerts")]
    assert [(r.get("agent_id"), r.get("visibility")) for r in muted] == [(None, "shared")]
