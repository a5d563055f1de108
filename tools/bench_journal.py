"""Journal benchmark, on both backends (files, PostgreSQL): appends/s single and batched,
read records/s, follow latency (append on handle A → yielded by a follower on handle B) p50/p95,
the writer lock's cost (``exclusive()``: lock + head) p50, store p50 through the MCP server,
and on PostgreSQL: a store on one server until a recall on another returns it, p50/p95.
Prints a markdown table; speed is reported, never asserted.

    python -m tools.bench_journal [--records 100000] [--postgres URL] [--backends files,postgres]

Without ``--postgres`` a throwaway PostgreSQL 15 cluster is started (``tests/pg_cluster.py``)
and stopped at the end. ``--mcp-stores 0`` skips the MCP server runs.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ferrex.server.tool_calls import decode
from journal import Journal, JournalBackend, MemoryBody, MemoryStored
from journal.postgres import PostgresJournal
from tools import harness

WORDS = [
    "deploy",
    "api",
    "server",
    "tokio",
    "postgres",
    "migration",
    "incident",
    "rollback",
    "cache",
    "latency",
    "config",
    "alice",
    "bob",
    "release",
    "pipeline",
    "staging",
    "prod",
    "feature",
    "flag",
    "retry",
    "timeout",
    "queue",
    "worker",
]


def memory(i: int) -> MemoryStored:
    words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(18))
    return MemoryStored(
        memory_id=f"mem_{i:012d}",
        namespace="acme",
        memory_type="episodic",
        t_valid=datetime(2026, 1, 1, tzinfo=UTC),
        entity_ids=(f"ent_{i % 97:04d}", f"ent_{i % 13:04d}"),
        agent_id="claude-code",
        body=MemoryBody(content=f"INC-{90000 + i}: {words}.", source="session"),
    )


Opener = Callable[[], JournalBackend]


def bench_appends(open_fresh: Opener, n: int, batch: int) -> float:
    with open_fresh() as journal:
        commands = [[memory(i)] for i in range(n)]
        start = time.perf_counter()
        for i in range(0, n, batch):
            journal.append_batch(commands[i : i + batch])
        return n / (time.perf_counter() - start)


APPEND_RUNS = ((300, 1), (20_000, 100), (50_000, 1000))  # (records, records per commit)


@dataclass(frozen=True, slots=True)
class Numbers:
    """Medians over the repeats; ``append_per_s`` maps records per commit to records/s."""

    append_per_s: dict[int, float]
    read_per_s: float
    follow_ms: tuple[float, float]  # p50, p95
    lock_ms: float
    store_ms: float | None
    cross_ms: tuple[float, float] | None = None  # store on A → recalled on B


def follow_latency(open_journal: Opener, samples: int) -> tuple[float, float]:
    """Append on one handle, wait for another handle's follower to yield it."""
    writer, reader = open_journal(), open_journal()
    after = writer.refresh().position
    stop = threading.Event()
    seen: dict[int, float] = {}
    ready = threading.Event()

    def follow() -> None:
        ready.set()
        for record in reader.follow(after=after, stop=stop, poll_ms=1000):
            seen[record.position] = time.perf_counter()

    thread = threading.Thread(target=follow)
    thread.start()
    ready.wait()
    time.sleep(0.5)  # the follower has read what there was and is waiting
    sent: dict[int, float] = {}
    for i in range(samples):
        began = time.perf_counter()
        record = writer.append([memory(10_000_000 + i)])
        sent[record.position] = began
        deadline = time.perf_counter() + 5
        while record.position not in seen and time.perf_counter() < deadline:
            time.sleep(0.0005)
        time.sleep(0.01)
    stop.set()
    thread.join()
    writer.close()
    reader.close()
    latencies = [(seen[p] - t) * 1000 for p, t in sent.items() if p in seen]
    return harness.percentile(latencies, 0.5), harness.percentile(latencies, 0.95)


def lock_cost(open_journal: Opener, n: int = 300) -> float:
    with open_journal() as journal:
        times = []
        for _ in range(n):
            began = time.perf_counter()
            with journal.exclusive():
                pass
            times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def store_p50(home: Path, url: str | None, stores: int) -> float:
    """Median ``store`` round trip through a real ``ferrex`` MCP server on stdio."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if url is not None:
        config = home / "ferrex.toml"
        config.write_text(f'[journal]\nurl = "{url}"\n')
        config.chmod(0o600)
    ferrex = harness.FERREX

    async def main() -> list[float]:
        params = StdioServerParameters(command=ferrex, args=["--home", str(home)])
        async with Client(params, read_timeout_seconds=600) as client:
            await client.call_tool("stats", {})
            times = []
            for i in range(stores):
                words = " ".join(WORDS[(i * k) % len(WORDS)] for k in range(3, 12))
                began = time.perf_counter()
                result = await client.call_tool("store", {"content": f"note {i}: {words}"})
                times.append((time.perf_counter() - began) * 1000)
                assert not result.is_error, result.content
            return times

    return statistics.median(asyncio.run(main()))


def cross_server(url: str, root: Path, stores: int) -> tuple[float, float]:
    """Two servers (two data directories, one PostgreSQL journal), in this process: after a
    store on A has been answered, how long until a recall on B returns it (p50, p95 ms). Each
    call catches up from the journal first, so B's first recall should already find it."""
    from ferrex.app import App
    from ferrex.config import load
    from ferrex.server.service import Caller, Service

    caller = Caller(agent_id="bench")
    services = []
    for name in ("a", "b"):
        home = root / f"server-{name}"
        home.mkdir(mode=0o700, parents=True)
        config = home / "ferrex.toml"
        config.write_text(f'[journal]\nurl = "{url}"\n')
        config.chmod(0o600)
        services.append(Service(App(home=home, config=load(home, None))))
    a, b = services
    try:
        a.call(decode("stats", {}), caller)
        b.call(decode("stats", {}), caller)
        times = []
        for i in range(stores):
            content = f"server a noted deploy {i} of service-{i * 13} at {i % 24}:00"
            a.call(decode("store", {"content": content, "visibility": "shared"}), caller)
            began = time.perf_counter()
            while True:
                found = b.call(decode("recall", {"query": content, "limit": 3}), caller)
                if any(r["content"] == content for r in found["results"]):
                    break
            times.append((time.perf_counter() - began) * 1000)
    finally:
        a.close()
        b.close()
    return harness.percentile(times, 0.5), harness.percentile(times, 0.95)


def run(open_fresh: Opener, open_again: Opener, args: argparse.Namespace, home: Path,
        url: str | None) -> Numbers:  # fmt: skip
    append_per_s = {}
    for n, batch in APPEND_RUNS:
        runs = [bench_appends(open_fresh, n, batch) for _ in range(args.repeat)]
        append_per_s[batch] = statistics.median(runs)
    with open_fresh() as journal:
        for i in range(0, args.records, 1000):
            journal.append_batch([[memory(j)] for j in range(i, min(i + 1000, args.records))])
    runs = []
    for _ in range(args.repeat):
        with open_again() as journal:
            start = time.perf_counter()
            count = sum(1 for _ in journal.read())
            runs.append(count / (time.perf_counter() - start))
    follow = follow_latency(open_again, args.follow_samples)
    lock = lock_cost(open_again)
    store = store_p50(home, url, args.mcp_stores) if args.mcp_stores else None
    cross = None
    if url is not None and args.cross_stores:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:  # a fresh journal for it
            conn.execute("DROP TABLE ferrex_journal_records, ferrex_journal_head, "
                         "ferrex_journal_meta")  # fmt: skip
        cross = cross_server(url, home.parent / "cross", args.cross_stores)
    return Numbers(append_per_s, statistics.median(runs), follow, lock, store, cross)


@contextmanager
def postgres(url: str | None) -> Iterator[tuple[str, Callable[[], str]]]:
    """(a URL to show, a function giving the URL of a fresh empty database)."""
    if url is not None:
        import psycopg

        def fresh_schema() -> str:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    "DROP TABLE IF EXISTS ferrex_journal_records, ferrex_journal_head, "
                    "ferrex_journal_meta"
                )
            return url

        yield url, fresh_schema
        return
    from tests.pg_cluster import start_cluster

    cluster = start_cluster()
    try:
        yield cluster.url(), cluster.new_database
    finally:
        cluster.stop()


def bench_files(root: Path, args: argparse.Namespace) -> Numbers:
    where = root / "files"

    def fresh() -> JournalBackend:
        shutil.rmtree(where, ignore_errors=True)
        return Journal.open(where)

    return run(fresh, lambda: Journal.open(where), args, root / "home-files", None)


def bench_postgres(fresh_db: Callable[[], str], root: Path, args: argparse.Namespace) -> Numbers:
    current = [""]

    def fresh() -> JournalBackend:
        current[0] = fresh_db()
        return PostgresJournal.open(current[0])

    def again() -> JournalBackend:
        return PostgresJournal.open(current[0])

    return run(fresh, again, args, root / "home-pg", fresh_db())


def cross_cell(r: Numbers) -> str:
    return "n/a" if r.cross_ms is None else f"{r.cross_ms[0]:.1f} / {r.cross_ms[1]:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records for the read run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; median shown")
    parser.add_argument("--follow-samples", type=int, default=200)
    parser.add_argument("--mcp-stores", type=int, default=40, help="stores through MCP (0: skip)")
    parser.add_argument("--cross-stores", type=int, default=20,
                        help="stores on server A recalled on server B (0: skip)")  # fmt: skip
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL (its ferrex tables "
                        "are dropped!); default: a throwaway cluster")  # fmt: skip
    parser.add_argument("--backends", default="files,postgres")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    root = Path(tempfile.mkdtemp(prefix="ferrex-bench-"))
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}, dir: {root}")
    results: dict[str, Numbers] = {}
    try:
        with postgres(args.postgres) as (shown, fresh_db):
            for backend in args.backends.split(","):
                if backend == "files":
                    results["files"] = bench_files(root, args)
                elif backend == "postgres":
                    results["postgres"] = bench_postgres(fresh_db, root, args)
                else:
                    raise SystemExit(f"unknown backend {backend!r}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}; PostgreSQL: {shown.split('@')[-1]}")
    names = list(results)
    print("\n| measure | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))

    def _per_s(r: Numbers, batch: int) -> str:
        return f"{r.append_per_s[batch]:,.0f} records/s"

    def row(label: str, cell: Callable[[Numbers], str]) -> None:
        print(f"| {label} | " + " | ".join(cell(results[n]) for n in names) + " |")

    for _, batch in APPEND_RUNS:
        label = "append, 1 record per commit" if batch == 1 else f"append, batches of {batch}"
        row(label, functools.partial(_per_s, batch=batch))
    row(f"read + decode, {args.records:,} records", lambda r: f"{r.read_per_s:,.0f} records/s")
    row("follow latency p50 / p95", lambda r: f"{r.follow_ms[0]:.1f} / {r.follow_ms[1]:.1f} ms")
    row("writer lock (exclusive(): lock + head) p50", lambda r: f"{r.lock_ms:.2f} ms")
    row("store on server A → recalled on server B p50 / p95", cross_cell)
    row("store p50 through the MCP server (stdio)",
        lambda r: "skipped" if r.store_ms is None else f"{r.store_ms:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
