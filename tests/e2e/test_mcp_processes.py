"""Several ferrex server processes on one data directory: the normal case with MCP clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import anyio
from mcp import Client
from mcp_types import CallToolResult

from tests.e2e.mcp_helpers import FERREX, call, ferrex, owner_pid, stdio_client


def test_two_servers_store_concurrently_and_see_each_other(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with (
            stdio_client(home, "--agent-id", "alice") as a,
            stdio_client(home, "--agent-id", "bob") as b,
        ):
            ids: dict[str, list[str]] = {"alice": [], "bob": []}

            async def store(client: Client, who: str, n: int) -> None:
                for i in range(n):
                    text = (f"Ticket {who.upper()}-{100 + i}: {who} rotated the credentials "
                            f"of service svc-{who}-{i}")  # fmt: skip
                    doc = await call(client, "store", {"content": text, "visibility": "shared"})
                    ids[who].append(doc["id"])

            async with anyio.create_task_group() as tg:
                tg.start_soon(store, a, "alice", 12)
                tg.start_soon(store, b, "bob", 12)
            # each sees what the other stored a moment ago
            seen_by_a = await call(a, "recall", {"query": "bob rotated credentials",
                                                 "limit": 30})  # fmt: skip
            assert set(ids["bob"]) <= {r["id"] for r in seen_by_a["results"]}
            seen_by_b = await call(b, "recall", {"query": "alice rotated credentials",
                                                 "limit": 30})  # fmt: skip
            assert set(ids["alice"]) <= {r["id"] for r in seen_by_b["results"]}
            assert (await call(a, "stats", {}))["total"] == 24

    anyio.run(main)
    verify = ferrex(home, "journal", "verify", "--json")
    assert verify.returncode == 0 and json.loads(verify.stdout)["records"] >= 24
    reconcile = ferrex(home, "reconcile")
    assert reconcile.returncode == 0, reconcile.stdout + reconcile.stderr
    assert "no drift" in reconcile.stdout


async def _kill_soon(pid: int) -> None:
    await anyio.sleep(0.005)
    os.kill(pid, signal.SIGKILL)


def test_owner_killed_mid_write_the_survivor_keeps_every_acked_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    owner = subprocess.Popen(
        [FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    acked: list[str] = []
    try:
        assert owner_pid(home) == owner.pid

        async def main() -> None:
            async with stdio_client(home) as peer:
                for i in range(30):
                    args = {"content": f"Incident INC-{7000 + i}: queue worker {i} restarted "
                            "after an out-of-memory kill"}  # fmt: skip
                    if i == 10:  # kill the owner while this store is in flight
                        with anyio.fail_after(120):
                            async with anyio.create_task_group() as tg:
                                tg.start_soon(_kill_soon, owner.pid)
                                result = await peer.call_tool("store", args)
                    else:
                        result = await peer.call_tool("store", args)
                    assert isinstance(result, CallToolResult)
                    doc = result.structured_content or {}
                    if result.is_error:
                        # a store cut off with the owner and sent again: dedup names the
                        # copy that had landed
                        assert doc["error"]["code"] == "duplicate", doc
                        acked.append(doc["error"]["ids"][0])
                    else:
                        acked.append(doc["id"])
                assert owner_pid(home) != owner.pid  # the survivor took over
                total = (await call(peer, "stats", {}))["total"]
                assert total == 30 == len(set(acked))
                found = await call(peer, "recall", {"query": "INC-7003 queue worker"})
                assert found["results"][0]["id"] == acked[3]

        anyio.run(main)
    finally:
        owner.kill()
        owner.communicate(timeout=30)  # reaps it and closes the pipes
    assert ferrex(home, "journal", "verify").returncode == 0
    assert ferrex(home, "reconcile").returncode == 0


def test_private_memories_stay_private(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with (
            stdio_client(home, "--agent-id", "alice") as alice,
            stdio_client(home, "--agent-id", "bob") as bob,
            stdio_client(home) as operator,
        ):
            secret = await call(alice, "store", {"content": "Alice keeps the on-call pager "
                                                 "PIN for prod-east in her notes"})  # fmt: skip
            shared = await call(
                alice,
                "store",
                {
                    "content": "The prod-east on-call rotation changes on Mondays",
                    "visibility": "shared",
                },
            )
            query = {"query": "prod-east on-call pager PIN", "limit": 10}
            bob_sees = {r["id"] for r in (await call(bob, "recall", query))["results"]}
            assert secret["id"] not in bob_sees and shared["id"] in bob_sees
            alice_sees = {r["id"] for r in (await call(alice, "recall", query))["results"]}
            assert {secret["id"], shared["id"]} <= alice_sees
            all_seen = {r["id"] for r in (await call(operator, "recall", query))["results"]}
            assert {secret["id"], shared["id"]} <= all_seen
            assert (await call(bob, "stats", {}))["total"] == 1
            assert (await call(operator, "stats", {}))["total"] == 2
            refused = await call(bob, "forget", {"ids": [secret["id"]]})
            assert refused["forgotten"] == [] and refused["not_found"] == [secret["id"]]
            assert secret["id"] in {
                r["id"] for r in (await call(alice, "recall", query))["results"]}  # fmt: skip

    anyio.run(main)


def test_cli_works_beside_a_running_server(tmp_path: Path) -> None:
    """With a server owning the data directory, the CLI's tool commands go through it and
    maintenance commands refuse clearly instead of fighting over the stores."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as server:
            stored = await call(server, "store", {"content": "The CI runners for harbor-web "
                                                  "moved to the ci-east pool"})  # fmt: skip
            done = ferrex(home, "recall", "--json", "where do the harbor-web CI runners run")
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["results"][0]["id"] == stored["id"]
            stats = ferrex(home, "stats", "--json")
            assert stats.returncode == 0 and json.loads(stats.stdout)["total"] == 1
            doctor = ferrex(home, "doctor", "--json")
            server_state = json.loads(doctor.stdout)["server"]
            assert server_state["running"] is True and server_state["pid"] == owner_pid(home)
            busy = ferrex(home, "replay")
            assert busy.returncode == 5, busy.stderr
            assert "error [busy]" in busy.stderr and "stop the MCP servers" in busy.stderr
            # and the server was not disturbed
            found = await call(server, "recall", {"query": "harbor-web CI runners"})
            assert found["results"][0]["id"] == stored["id"]

    anyio.run(main)
