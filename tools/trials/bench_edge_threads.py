"""Qdrant Edge from several threads: is it safe, does its search release the GIL?

    python -m tools.trials.bench_edge_threads [--points 40000] [--optimize]

- queries/s of one thread searching against two threads at once (same shard, same queries);
- whether a search releases the GIL: beside a spinning thread with a long switch interval,
  ten searches that each release it take about ten intervals, ten that hold it about one
  (ten ``time.sleep`` calls are the control); this does not depend on the machine's load;
- three threads querying (dense and sparse) while a fourth upserts: any error is printed.

Without ``--optimize`` the shard has no HNSW index, so each search is a brute-force scan
that spends its time inside Edge. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid

import numpy as np

from projections.qdrant_edge import EdgeBackend
from projections.vectors import SparseVector, VectorFilter, VectorPoint
from tools import harness

DIM = 384
FILTER = VectorFilter(namespace="default")


def point(i: int, vector: np.ndarray) -> VectorPoint:
    return VectorPoint(
        str(uuid.UUID(int=i)), vector.tolist(), SparseVector((i % 1000, 1001 + i % 7), (1.0, 0.5)),
        {"memory_id": f"m{i}", "namespace": "default", "type": "semantic"},
    )  # fmt: skip


def searches(backend: EdgeBackend, queries: list[list[float]], n: int) -> float:
    began = time.perf_counter()
    for i in range(n):
        backend.query_dense("m", queries[i % len(queries)], FILTER, 30)
    return time.perf_counter() - began


def in_threads(count: int, work: object) -> float:
    threads = [threading.Thread(target=work) for _ in range(count)]  # type: ignore[arg-type]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=40_000)
    parser.add_argument("--queries", type=int, default=200, help="searches per thread")
    parser.add_argument("--optimize", action="store_true", help="build the HNSW index first")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.points, DIM)).astype(np.float32)
    queries = rng.standard_normal((200, DIM)).astype(np.float32).tolist()
    with tempfile.TemporaryDirectory(prefix="ferrex-edge-threads-") as root:
        backend = EdgeBackend(root)
        backend.ensure_collection("m", DIM)
        for start in range(0, args.points, 1000):
            backend.upsert("m", [point(i, vectors[i]) for i in range(start,
                                 min(start + 1000, args.points))])  # fmt: skip
        if args.optimize:
            backend.optimize("m")
        n = args.queries
        rates: dict[int, list[float]] = {}
        for threads in (1, 2, 1, 2):
            wall = in_threads(threads, lambda: searches(backend, queries, n))
            rates.setdefault(threads, []).append(threads * n / wall)

        # The GIL: with a long switch interval a thread gives the GIL up only when a call
        # releases it; a spinning thread then keeps it for the whole interval. So each
        # release costs the searching thread one interval: k searches that release it take
        # about k intervals, searches that hold it about one (the first forced switch).
        stop = threading.Event()

        def spin() -> None:
            while not stop.is_set():
                pass

        interval = sys.getswitchinterval()
        sys.setswitchinterval(0.2)
        spinner = threading.Thread(target=spin)
        spinner.start()
        time.sleep(0.05)
        held = searches(backend, queries, 10)
        began = time.perf_counter()
        for _ in range(10):
            time.sleep(0.001)  # the control: a call known to release the GIL
        released = time.perf_counter() - began
        stop.set()
        spinner.join()
        sys.setswitchinterval(interval)

        errors: list[BaseException] = []

        def upsert() -> None:
            try:
                for s in range(0, 2000, 50):
                    backend.upsert("m", [point(args.points + s + j, vectors[(s + j) % args.points])
                                         for j in range(50)])  # fmt: skip
            except BaseException as exc:
                errors.append(exc)

        def query() -> None:
            try:
                for i in range(n):
                    backend.query_dense("m", queries[i % 200], FILTER, 30)
                    backend.query_sparse("m", SparseVector((1, 5), (1.0, 1.0)), FILTER, 30)
            except BaseException as exc:
                errors.append(exc)

        workers = [threading.Thread(target=upsert)] + [threading.Thread(target=query)
                                                       for _ in range(3)]  # fmt: skip
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        total = backend.count("m")
        backend.close()
    load = os.getloadavg()
    index = "HNSW" if args.optimize else "no index"
    print(f"Qdrant Edge, {args.points} points of {DIM} floats, {index}; "
          f"load {load[0]:.2f} {load[1]:.2f}")  # fmt: skip
    for threads, got in sorted(rates.items()):
        print(f"{threads} thread(s): {max(got):.0f} queries/s (runs: "
              f"{', '.join(f'{r:.0f}' for r in got)})")  # fmt: skip
    print(f"10 searches beside a spinning thread (switch interval 0.2 s): {held:.2f} s; 10 "
          f"sleeps, which release the GIL: {released:.2f} s; the search "
          f"{'releases' if held > released / 2 else 'holds'} the GIL")  # fmt: skip
    print(f"3 query threads beside 1 upserting: {len(errors)} errors, {total} points after "
          f"({args.points + 2000} expected)")  # fmt: skip
    for exc in errors[:3]:
        print(f"  {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
