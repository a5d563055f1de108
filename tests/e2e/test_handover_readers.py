"""The owner killed while one peer writes and another's reads are in flight.

Every read is answered (by the old owner or, sent again, by the new one), every acknowledged
store is there afterwards and recalls find it, and the journal verifies and the projections
reconcile. Real processes: one ``ferrex`` that owns the stores, two that are peers, each
driven by the SDK's client over stdio.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import anyio
from mcp import Client
from mcp_types import CallToolResult

from tests.e2e.mcp_helpers import FERREX, call, ferrex, owner_pid, stdio_client


def test_owner_killed_with_reads_in_flight_loses_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    owner = subprocess.Popen(
        [FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    acked: list[str] = []
    answered: list[int] = []
    try:
        assert owner_pid(home) == owner.pid

        async def write(peer: Client, killed: anyio.Event) -> None:
            for i in range(24):
                args = {"content": f"Change CHG-{3100 + i}: the payments queue consumer {i} "
                        "was moved to the new broker"}  # fmt: skip
                if i == 8:
                    os.kill(owner.pid, signal.SIGKILL)
                    killed.set()
                result = await peer.call_tool("store", args)
                assert isinstance(result, CallToolResult)
                doc = result.structured_content or {}
                if result.is_error:  # cut off and sent again: dedup names the landed copy
                    assert doc["error"]["code"] == "duplicate", doc
                    acked.append(doc["error"]["ids"][0])
                else:
                    acked.append(doc["id"])

        async def read(peer: Client, killed: anyio.Event) -> None:
            n = 0
            while not killed.is_set() or n < 30:
                with anyio.fail_after(120):
                    doc = await call(peer, "recall", {"query": "payments queue consumer broker"})
                assert isinstance(doc["results"], list)
                await call(peer, "stats", {})
                n += 1
            answered.append(n)

        async def main() -> None:
            async with stdio_client(home) as writer, stdio_client(home) as reader:
                await call(reader, "stats", {})  # both peers have been called: models warm
                await call(writer, "stats", {})
                killed = anyio.Event()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(write, writer, killed)
                    tg.start_soon(read, reader, killed)
                assert owner_pid(home) != owner.pid  # a peer took over
                assert (await call(reader, "stats", {}))["total"] == 24 == len(set(acked))
                for i in (0, 8, 23):
                    found = await call(reader, "recall", {"query": f"CHG-{3100 + i}"})
                    assert acked[i] in {r["id"] for r in found["results"]}

        anyio.run(main)
    finally:
        owner.kill()
        owner.communicate(timeout=30)
    assert answered and answered[0] >= 30
    assert ferrex(home, "journal", "verify").returncode == 0
    reconcile = ferrex(home, "reconcile")
    assert reconcile.returncode == 0 and "no drift" in reconcile.stdout
