"""Journal benchmark: append throughput (single fsynced, group-committed), read+decode speed,
and bytes per stored memory. Prints a markdown table; speed is reported, never asserted.

    python tools/bench_journal.py [--records 1000000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from journal import Journal, MemoryBody, MemoryStored
from journal.segment import list_segments

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


def bench_appends(directory: Path, n: int, batch: int) -> float:
    shutil.rmtree(directory, ignore_errors=True)
    with Journal.open(directory) as journal:
        commands = [[memory(i)] for i in range(n)]
        start = time.perf_counter()
        for i in range(0, n, batch):
            journal.append_batch(commands[i : i + batch])
        return n / (time.perf_counter() - start)


APPEND_RUNS = ((500, 1), (50_000, 100), (200_000, 1000))  # (records, records per fsync)


@dataclass(frozen=True, slots=True)
class JournalNumbers:
    """Medians over the repeats; ``append_per_s`` maps records per fsync to records/s."""

    append_per_s: dict[int, float]
    records: int  # in the journal read back
    read_per_s: float
    open_s: float  # one open of that journal: the recovery scan
    bytes_per_memory: float


def run(root: Path, records: int, repeat: int) -> JournalNumbers:
    """Write and read journals under ``root`` (left there: the caller removes it)."""
    append_per_s = {}
    for n, batch in APPEND_RUNS:
        runs = [bench_appends(root / "a", n, batch) for _ in range(repeat)]
        append_per_s[batch] = statistics.median(runs)
    big = root / "big"
    shutil.rmtree(big, ignore_errors=True)
    with Journal.open(big) as journal:
        for i in range(0, records, 1000):
            journal.append_batch([[memory(j)] for j in range(i, min(i + 1000, records))])
    size = sum(p.stat().st_size for _, p in list_segments(big))
    runs = []
    for _ in range(repeat):
        with Journal.open(big) as journal:
            start = time.perf_counter()
            count = sum(1 for _ in journal.read())
            runs.append(count / (time.perf_counter() - start))
    start = time.perf_counter()
    Journal.open(big).close()
    open_s = time.perf_counter() - start
    return JournalNumbers(append_per_s, records, statistics.median(runs), open_s, size / records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records for the read run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; median shown")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: a tmp dir)"
    )
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="ferrex-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}, dir: {root}")
    try:
        numbers = run(root, args.records, args.repeat)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    rows = [
        (
            "append, 1 record per fsync" if batch == 1 else f"append, batches of {batch}",
            f"{rate:,.0f} records/s",
        )
        for batch, rate in numbers.append_per_s.items()
    ]
    rows += [
        (f"read + decode, {args.records:,} records", f"{numbers.read_per_s:,.0f} records/s"),
        (f"open (recover scan) of {args.records:,} records", f"{numbers.open_s:.2f} s"),
        ("journal bytes per stored memory", f"{numbers.bytes_per_memory:,.0f} B"),
    ]
    print("\n| measure | result |\n|---|---|")
    for label, value in rows:
        print(f"| {label} | {value} |")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
