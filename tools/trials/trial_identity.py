"""Trial: whose memory is a store forwarded to the owner? (issue 42, item 1)

    python -m tools.trials.trial_identity [--runs N] [--ferrex PATH]

Each run makes a fresh data directory, starts ``ferrex --agent-id claude-code`` over stdio
(the owner), then stores through other processes that forward to it: MCP servers started
without an agent id, as ``cursor`` and as ``claude-code``, and the CLI without and with
``--agent-id``. Once every process has stopped, a dump (``ferrex export jsonl``) says whose
each memory is. A memory is *misowned* when its agent or visibility is not its caller's:
``(None, shared)`` for a process without an agent id, ``(agent, private)`` for an agent.
Prints one line per run and the totals (runs, stores, misowned); exits 1 if any.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tools import harness

OWNER = "claude-code"
#: The forwarding MCP servers: the agent id each is started with (None: none).
PEERS: tuple[str | None, ...] = (None, "cursor", OWNER)
#: The CLI stores: the agent id given (None: none).
CLI: tuple[str | None, ...] = (None, "ops-bot")


def _expected(agent: str | None) -> tuple[str | None, str]:
    return (agent, "private") if agent else (None, "shared")


def _args(home: Path, agent: str | None) -> list[str]:
    return ["--home", str(home), *(["--agent-id", agent] if agent else [])]


async def _mcp_run(ferrex: str, home: Path, run: int) -> dict[str, str | None]:
    """Stores through the owner and the forwarding servers: memory id → caller's agent."""
    made: dict[str, str | None] = {}

    async def store(client: Client, agent: str | None, text: str) -> None:
        answer = await client.call_tool("store", {"content": text})
        content = answer.structured_content or {}
        if answer.is_error or "id" not in content:
            raise SystemExit(f"run {run}: a store failed: {answer.content}")
        made[str(content["id"])] = agent

    owner = StdioServerParameters(command=ferrex, args=_args(home, OWNER))
    async with Client(owner, read_timeout_seconds=120) as first:
        await first.call_tool("stats", {})  # the first process owns the stores
        await store(first, OWNER, f"run {run}: the owner's own note on the staging rollout")
        for i, agent in enumerate(PEERS):
            params = StdioServerParameters(command=ferrex, args=_args(home, agent))
            async with Client(params, read_timeout_seconds=120) as peer:
                await store(peer, agent, f"run {run}, peer {i}: the backup window of db-{i} "
                            f"moved to 0{i}:30 UTC")  # fmt: skip
        for i, agent in enumerate(CLI):
            done = subprocess.run(
                [ferrex, *_args(home, agent), "store", "--json", "--content",
                 f"run {run}, CLI {i}: rotated the TLS certificates of edge-{i}"],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"run {run}: the CLI store failed: {done.stderr}")
            made[json.loads(done.stdout)["id"]] = agent
    return made


def _owners(ferrex: str, home: Path) -> dict[str, tuple[str | None, str]]:
    dumped = subprocess.run([ferrex, "--home", str(home), "export", "jsonl", "-"],
                            capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    rows = [json.loads(line) for line in dumped.stdout.splitlines() if line.strip()]
    return {r["id"]: (r.get("agent_id"), r.get("visibility")) for r in rows
            if str(r.get("id", "")).startswith("mem_")}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ferrex", default=harness.FERREX)
    args = parser.parse_args()
    stores = misowned = 0
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ferrex-trial-identity-") as scratch:
            home = Path(scratch) / "home"
            made = anyio.run(_mcp_run, args.ferrex, home, run)
            owners = _owners(args.ferrex, home)
            wrong = {m: (owners.get(m), _expected(a)) for m, a in made.items()
                     if owners.get(m) != _expected(a)}  # fmt: skip
            stores += len(made)
            misowned += len(wrong)
            print(f"run {run}: {len(made)} stores, {len(wrong)} misowned"
                  + "".join(f"\n  {m}: stored as {got}, caller was {want}"
                            for m, (got, want) in wrong.items()), flush=True)  # fmt: skip
    print(f"runs {args.runs}, stores {stores}, misowned {misowned}")
    return 1 if misowned else 0


if __name__ == "__main__":
    sys.exit(main())
