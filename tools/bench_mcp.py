"""The MCP server as an agent meets it: start-up, round trips over stdio and HTTP, two clients.

    python -m tools.bench_mcp [--memories 10000] [--home DIR] [--calls 200] [--starts 5]

- start-up: a fresh ``ferrex`` process until its answer to ``initialize`` (median of
  ``--starts``), measured with raw JSON-RPC on the pipes;
- round trips: ``store`` and ``recall`` through the SDK's client, over stdio and over
  Streamable HTTP (``ferrex serve --http``), p50/p95, on a home holding ``--memories``
  memories (built once through the real import path, or reused with ``--home``);
- two clients: two server processes on the same home (one owns the stores, the other asks
  it over the local socket), each driven by its own client doing recall+store pairs for
  ``--seconds``; operations per second, against one client alone.

- concurrency (``--concurrency``): one stateless HTTP server, 1/2/4/8 clients each in a
  process of its own, read-only (recall) and 80/20 recall/store, for ``--cell-seconds``
  each; calls/s and p50/p95 per mix and client count, in one run;
- hand-over (``--handovers``): an idle owner process and a peer that has been called (so
  its models are warm); the owner is SIGKILLed and the peer's next recall is timed, kill →
  answer; median and max.

Speed is reported, never asserted. The machine's load is printed with the results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tools import harness
from tools.bench_recall import build, text

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "1"}},
}  # fmt: skip


def startup(home: Path) -> float:
    """Seconds from spawning ``ferrex`` until its initialize answer arrives on stdout."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [harness.FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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
    return Client(StdioServerParameters(command=harness.FERREX, args=["--home", str(home)]),
                  read_timeout_seconds=600)  # fmt: skip


async def over_stdio(home: Path, calls: int, rng: random.Random) -> dict[str, list[float]]:
    async with stdio(home) as client:
        return await round_trips(client, calls, rng)


async def over_http(home: Path, calls: int, rng: random.Random) -> dict[str, list[float]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [harness.FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
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


async def _client_run(
    url: str,
    token: str,
    go: Any,
    ready: Any,
    seconds: float,
    writes: float,
    seed: int,
    per_second: float = 0.0,
) -> list[tuple[str, float]]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    rng = random.Random(seed)
    out: list[tuple[str, float]] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, read_timeout_seconds=600) as client:
            await client.call_tool("stats", {})
            ready.put(seed)
            await asyncio.to_thread(go.wait)  # every client is connected: start together
            start_at = time.time()
            n = 0
            while time.time() < start_at + seconds:
                n += 1
                if per_second:  # a paced client: call n is due at start + n / rate
                    await asyncio.sleep(max(0.0, start_at + n / per_second - time.time()))
                if rng.random() < writes:
                    tool = "store"
                    args: dict[str, Any] = {
                        "content": text(rng, 30_000_000 + rng.randrange(10**9)) + f" s{seed}-{n}"
                    }
                else:
                    tool, args = "recall", {"query": text(rng, rng.randrange(10**6))}
                began = time.perf_counter()
                result = await client.call_tool(tool, args)
                out.append((tool, time.perf_counter() - began))
                assert not result.is_error, result.content
    return out


def _client_process(results: Any, *args: Any) -> None:
    results.put(asyncio.run(_client_run(*args)))


def _clients(url: str, token: str, seconds: float, plan: list[tuple[float, float]], seed: int
             ) -> list[list[tuple[str, float]]]:  # fmt: skip
    """Run one client process per (share of writes, calls per second or 0: as fast as it
    can) in ``plan``, started together once all are connected; their calls and latencies."""
    spawn = multiprocessing.get_context("spawn")
    go, ready, results = spawn.Event(), spawn.Queue(), spawn.Queue()
    procs = [
        spawn.Process(target=_client_process,
                      args=(results, url, token, go, ready, seconds, writes, seed + i, rate))
        for i, (writes, rate) in enumerate(plan)
    ]  # fmt: skip
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=600)
    go.set()
    out = [results.get(timeout=600 + seconds) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    return out


def _http_server(home: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [harness.FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(1200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    token = (home / "run" / "http.token").read_text().strip()
    return server, f"http://127.0.0.1:{port}/mcp", token


def concurrency(home: Path, seconds: float) -> list[dict[str, Any]]:
    """The table: per mix and client count, calls/s and recall/store p50/p95 (seconds)."""
    server, url, token = _http_server(home)
    cells: list[dict[str, Any]] = []
    try:
        for mix, writes in (("read-only", 0.0), ("80/20", 0.2)):
            for clients in (1, 2, 4, 8):
                results = _clients(url, token, seconds, [(writes, 0.0)] * clients, 100 * clients)
                cells.append(_cell(mix, clients, seconds, [c for r in results for c in r]))
                print(f"  {mix} x{clients}: {cells[-1]['calls_per_s']:.1f} calls/s",
                      file=sys.stderr)  # fmt: skip
        # One client recalling while another stores 20 memories a second.
        recalls, stores = _clients(url, token, seconds, [(0.0, 0.0), (1.0, 20.0)], 900)
        cells.append(_cell("recall beside 20 stores/s", 2, seconds, recalls + stores))
    finally:
        server.terminate()
        server.wait(timeout=120)
    return cells


def _cell(mix: str, clients: int, seconds: float, calls: list[tuple[str, float]]) -> dict[str, Any]:
    cell: dict[str, Any] = {"mix": mix, "clients": clients, "calls_per_s": len(calls) / seconds}
    for tool in ("recall", "store"):
        times = [t for name, t in calls if name == tool]
        if times:
            cell[tool] = (statistics.median(times), harness.percentile(times, 0.95), len(times))
    return cell


def handover(home: Path, rounds: int) -> list[float]:
    """Seconds from SIGKILL of the owner to the warm peer's next answered recall."""
    times: list[float] = []

    async def one() -> float:
        owner = subprocess.Popen(
            [harness.FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            for _ in range(1200):  # until it owns the stores and listens
                if (home / "run" / "owner.json").exists():
                    try:
                        if (
                            json.loads((home / "run" / "owner.json").read_text())["pid"]
                            == owner.pid
                        ):
                            break
                    except (OSError, ValueError, KeyError):
                        pass
                await asyncio.sleep(0.1)
            async with stdio(home) as peer:
                await peer.call_tool("recall", {"query": "warm up the peer"})
                await asyncio.sleep(15)  # the peer loads its models in the background
                began = time.perf_counter()
                owner.send_signal(signal.SIGKILL)
                result = await peer.call_tool("recall", {"query": "deploy rollback incident"})
                took = time.perf_counter() - began
                assert not result.is_error, result.content
                return took
        finally:
            owner.kill()
            owner.communicate(timeout=60)

    for _ in range(rounds):
        times.append(asyncio.run(one()))
        print(f"  hand-over {times[-1]:.3f} s", file=sys.stderr)
    return times


def row(name: str, values: list[float]) -> str:
    return (f"| {name} | {len(values)} | {statistics.median(values) * 1000:.1f} | "
            f"{harness.percentile(values, 0.95) * 1000:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--home", type=Path, help="reuse this data directory (kept)")
    parser.add_argument("--calls", type=int, default=200, help="store+recall pairs per transport")
    parser.add_argument("--starts", type=int, default=5, help="start-ups to time")
    parser.add_argument("--seconds", type=float, default=20.0, help="two-client run length")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--only-concurrency", action="store_true",
                        help="skip start-up, round trips and two clients")  # fmt: skip
    parser.add_argument("--cell-seconds", type=float, default=10.0,
                        help="length of each cell of the concurrency table")  # fmt: skip
    parser.add_argument("--handovers", type=int, default=5, help="owner kills to time")
    parser.add_argument("--skip-table", action="store_true",
                        help="with --only-concurrency: only the hand-over")  # fmt: skip
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    if args.only_concurrency:
        concurrency_main(args)
        return
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


def concurrency_main(args: argparse.Namespace) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="ferrex-bench-mcp-") as tmp:
        home = args.home or Path(tmp) / "home"
        if not (home / "journal").exists():
            print(f"building {args.memories} memories in {home} ...", file=sys.stderr)
            build(home, args.memories, rng)
        cells = [] if args.skip_table else concurrency(home, args.cell_seconds)
        handovers = handover(home, args.handovers)
    load = os.getloadavg()
    print(f"ferrex MCP concurrency, {args.memories} memories, stateless HTTP, clients in "
          f"separate processes; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    print("| mix | clients | calls/s | recall p50 ms | recall p95 ms | store p50 ms | "
          "store p95 ms |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for c in cells:  # none with --skip-table
        rec, sto = c.get("recall"), c.get("store")
        print(f"| {c['mix']} | {c['clients']} | {c['calls_per_s']:.1f} | "
              + (f"{rec[0] * 1000:.0f} | {rec[1] * 1000:.0f} | " if rec else "- | - | ")
              + (f"{sto[0] * 1000:.0f} | {sto[1] * 1000:.0f} |" if sto else "- | - |"))  # fmt: skip
    print(f"hand-over (kill -> next answered call, warm peer): median "
          f"{statistics.median(handovers):.3f} s, max {max(handovers):.3f} s "
          f"(runs: {', '.join(f'{t:.3f}' for t in handovers)})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"memories": args.memories, "load": load,
                                         "cells": cells, "handover_s": handovers}))  # fmt: skip


if __name__ == "__main__":
    main()
