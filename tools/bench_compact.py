"""Compaction benchmark: how long ``journal.compact`` takes to plan and to rewrite, and how a
reader that was following the journal catches up afterwards. Prints a markdown table; speed
is reported, never asserted.

    python -m tools.bench_compact [--records 200000] [--forget 0.01] [--dir DIR]

The journal part only (no embedding cache, no projection rebuild: that is ``ferrex
replay``'s cost, measured by ``tools/bench_replay.py``).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from journal import Journal, MemoriesForgotten, MemoryBody, MemoryStored, verify
from journal.compact import compact, plan
from journal.segment import list_segments
from tools import harness


def memory(i: int) -> MemoryStored:
    return MemoryStored(
        memory_id=f"mem_{i:012d}",
        namespace="acme",
        memory_type="episodic",
        t_valid=datetime(2026, 1, 1, tzinfo=UTC),
        body=MemoryBody(content=f"INC-{90000 + i}: the deploy of build {i} rolled back " * 2),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--forget", type=float, default=0.01, help="share of memories forgotten")
    parser.add_argument("--segment-mib", type=int, default=64)
    parser.add_argument("--dir", type=Path, default=None)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    root = Path(tempfile.mkdtemp(dir=args.dir))
    directory = root / "journal"
    try:
        every = max(1, round(1 / args.forget)) if args.forget > 0 else 0
        with Journal.open(directory, segment_bytes=args.segment_mib << 20) as journal:
            for start in range(0, args.records, 5000):
                stop = min(start + 5000, args.records)
                journal.append_batch([[memory(i)] for i in range(start, stop)])
            ids = tuple(f"mem_{i:012d}" for i in range(0, args.records, every)) if every else ()
            if ids:
                journal.append([MemoriesForgotten(memory_ids=ids, namespace="acme")])
        size = sum(p.stat().st_size for _, p in list_segments(directory))
        segments = len(list_segments(directory))

        follower = Journal.open(directory)
        sum(1 for _ in follower.read())  # a reader that has seen everything

        started = time.perf_counter()
        found = plan(directory)
        planned = time.perf_counter() - started

        with Journal.open(directory) as journal:
            started = time.perf_counter()
            report = compact(journal)
            compacted = time.perf_counter() - started
            started = time.perf_counter()
            again = compact(journal)
            second = time.perf_counter() - started

        started = time.perf_counter()
        caught_up = sum(1 for _ in follower.read(after=follower.head.position))
        follower.refresh()
        resumed = time.perf_counter() - started
        follower.close()

        started = time.perf_counter()
        ok = verify(directory).ok
        verified = time.perf_counter() - started
        after = sum(p.stat().st_size for _, p in list_segments(directory))

        rows = [
            ("records", f"{args.records:,}"),
            ("forgotten memories", f"{len(ids):,}"),
            ("segments before / with forgotten text", f"{segments} / {len(found.segments)}"),
            ("journal size before / after", f"{size / 2**20:.1f} / {after / 2**20:.1f} MiB"),
            ("plan (read-only, two passes)", f"{planned:.2f} s"),
            (
                "compact (plan + rewrite under the lock)",
                f"{compacted:.2f} s, {len(report.segments)} segments, {report.redacted:,} bodies",
            ),
            ("compact again (nothing to do)", f"{second:.2f} s, {again.redacted} bodies"),
            ("follower catch-up after the rewrite", f"{resumed * 1000:.1f} ms ({caught_up} new)"),
            ("verify afterwards", f"{verified:.2f} s, {'ok' if ok else 'FAILED'}"),
        ]
        print("| measure | value |\n|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
