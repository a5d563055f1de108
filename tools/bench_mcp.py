"""The MCP server as an agent meets it: start-up, round trips over stdio and HTTP, two clients.

    python tools/bench_mcp.py [--memories 10000] [--home DIR] [--calls 200] [--starts 5]

- start-up: a fresh ``ferrex`` process until its answer to ``initialize`` (median of
  ``--starts``), measured with raw JSON-RPC on the pipes;
- round trips: ``store`` and ``recall`` through the SDK's client, over stdio and over
  Streamable HTTP (``ferrex serve --http``), p50/p95, on a home holding ``--memories``
  memories (built once through the real import path, or reused with ``--home``);
- two clients: two server processes on the same home (one owns the stores, the other asks
  it over the local socket), each driven by its own client doing recall+store pairs for
  ``--seconds``; operations per second, against one client alone.

Speed is reported, never asserted. The machine's load is printed with the results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from tools.bench_recall import build, pct, text  # noqa: E402

FERREX = str(Path(sys.executable).with_name("ferrex"))
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "1"}},
}  # fmt: skip


def startup(home: Path) -> float:
    """Seconds from spawning ``ferrex`` until its initialize answer arrives on stdout."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(INIT) + "\n").encode())
    process.stdin.flush()
    line = process.stdout.readline()
    elapsed = time.perf_counter() - began
    assert b'"result"' in line, line
    process.stdin.close()
    process.wait(timeout=120)
    process.stdout.close()
    return elapsed


async def round_trips(client: Client, calls: int, rng: random.Random) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"store": [], "recall": []}
    await client.call_tool("stats", {})  # the owner has loaded its models
    for i in range(calls):
        began = time.perf_counter()
        result = await client.call_tool(
            "store", {"content": text(rng, 10_000_000 + rng.randrange(10**9)) + f" #{i}"}
        )
        times["store"].append(time.perf_counter() - began)
        assert not result.is_error, result.content
        began = time.perf_counter()
        result = await client.call_tool("recall", {"query": text(rng, rng.randrange(10**6))})
        times["recall"].append(time.perf_counter() - began)
        assert not result.is_error, result.content
    return times


async def drive(client: Client, seconds: float, rng: random.Random) -> int:
    """recall + store pairs until the time is up; returns the operations done."""
    await client.call_tool("stats", {})
    done = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        await client.call_tool("recall", {"query": text(rng, rng.randrange(10**6))})
        await client.call_tool(
            "store", {"content": text(rng, 20_000_000 + rng.randrange(10**9)) + f" c{done}"}
        )
        done += 2
    return done


def stdio(home: Path) -> Client:
    return Client(StdioServerParameters(command=FERREX, args=["--home", str(home)]),
                  read_timeout_seconds=600)  # fmt: skip


async def over_stdio(home: Path, calls: int, rng: random.Random) -> dict[str, list[float]]:
    async with stdio(home) as client:
        return await round_trips(client, calls, rng)


async def over_http(home: Path, calls: int, rng: random.Random) -> dict[str, list[float]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=600) as client:
            return await round_trips(client, calls, rng)
    finally:
        server.terminate()
        server.wait(timeout=120)


async def two_clients(home: Path, seconds: float) -> tuple[float, float]:
    """(ops/s of one client alone, ops/s of two clients on two server processes)."""
    async with stdio(home) as alone:
        single = await drive(alone, seconds, random.Random(1))
    async with stdio(home) as a, stdio(home) as b:
        counts = await asyncio.gather(
            drive(a, seconds, random.Random(2)), drive(b, seconds, random.Random(3))
        )
    return single / seconds, sum(counts) / seconds


def row(name: str, values: list[float]) -> str:
    return (f"| {name} | {len(values)} | {statistics.median(values) * 1000:.1f} | "
            f"{pct(values, 0.95) * 1000:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--home", type=Path, help="reuse this data directory (kept)")
    parser.add_argument("--calls", type=int, default=200, help="store+recall pairs per transport")
    parser.add_argument("--starts", type=int, default=5, help="start-ups to time")
    parser.add_argument("--seconds", type=float, default=20.0, help="two-client run length")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="ferrex-bench-mcp-") as tmp:
        empty = Path(tmp) / "empty"
        starts = [startup(empty / str(i)) for i in range(args.starts)]
        home = args.home or Path(tmp) / "home"
        if not (home / "journal").exists():
            print(f"building {args.memories} memories in {home} ...", file=sys.stderr)
            build(home, args.memories, rng)
        stdio_times = asyncio.run(over_stdio(home, args.calls, rng))
        http_times = asyncio.run(over_http(home, args.calls, rng))
        single, pair = asyncio.run(two_clients(home, args.seconds))
    load = os.getloadavg()
    print(f"ferrex MCP, {args.memories} memories; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"start-up to initialize answered: median {statistics.median(starts):.2f} s "
          f"(runs: {', '.join(f'{s:.2f}' for s in starts)})")  # fmt: skip
    print("| call | n | p50 ms | p95 ms |\n|---|---|---|---|")
    for transport, times in (("stdio", stdio_times), ("http", http_times)):
        for tool in ("store", "recall"):
            print(row(f"{tool} over {transport}", times[tool]))
    print(f"one client: {single:.1f} ops/s; two clients on two processes: {pair:.1f} ops/s "
          f"({pair / single:.2f}x)")  # fmt: skip
    if args.json:
        doc: dict[str, Any] = {
            "memories": args.memories, "load": load, "startup_s": starts,
            "stdio": stdio_times, "http": http_times,
            "ops_per_s": {"one_client": single, "two_clients": pair},
        }  # fmt: skip
        args.json.write_text(json.dumps(doc))


if __name__ == "__main__":
    main()
