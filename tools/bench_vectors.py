"""Vector backend benchmark: upsert rate and hybrid query latency, before and after optimize().

Qdrant Edge at --points (default 10k), qdrant-client's local mode at --client-points (default
1k: it scans, so it is slow). 384-d random unit vectors, sparse vectors of ~20 tokens drawn
from a skewed vocabulary, payloads shaped like ferrex's. Each upsert call is acknowledged and
(on Edge) flushed to disk before the next. Prints a markdown table and the load average;
speed is reported, never asserted.

    python -m tools.bench_vectors [--points 10000] [--client-points 1000] [--queries 200]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from projections.qdrant_edge import EdgeBackend
from projections.qdrant_server import ClientBackend
from projections.vectors import (
    EmbeddedVectors,
    SparseVector,
    VectorBackend,
    VectorFilter,
    VectorPoint,
)
from tools import harness

DIM = 384
VOCAB = 30_000
NAME = "memories"


def unit_vector(rng: random.Random) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def token(rng: random.Random) -> int:
    # Skewed like words: a few common tokens, a long tail, so IDF varies.
    return min(int(rng.paretovariate(0.7)), VOCAB)


def sparse_doc(rng: random.Random, nnz: int = 20) -> SparseVector:
    tokens = sorted({token(rng) for _ in range(nnz)})
    return SparseVector(tuple(tokens), tuple(rng.uniform(0.3, 2.0) for _ in tokens))


def sparse_query(rng: random.Random) -> SparseVector:
    tokens = sorted({token(rng) for _ in range(5)})
    return SparseVector(tuple(tokens), (1.0,) * len(tokens))


def point(rng: random.Random, i: int) -> VectorPoint:
    superseded = rng.random() < 0.2
    return VectorPoint(
        str(uuid.UUID(int=rng.getrandbits(128))),
        unit_vector(rng),
        sparse_doc(rng),
        {
            "memory_id": f"mem_{i:08d}",
            "namespace": f"ns{rng.randrange(4)}",
            "type": rng.choice(["episodic", "semantic", "procedural"]),
            "entity_ids": [f"ent_{rng.randrange(200)}" for _ in range(rng.randrange(4))],
            "t_valid": 1.7e9 + rng.uniform(0, 3e7),
            "t_invalid": 1.73e9 + rng.uniform(0, 1e6) if superseded else None,
            "agent_id": rng.choice([None, "agent0", "agent1", "agent2", "agent3"]),
            "visibility": rng.choice(["private", "shared"]),
            "step": 0,
        },
    )


def latency_ms(calls: list[Callable[[], object]]) -> tuple[float, float]:
    """p50 and p95 wall milliseconds of the calls, one at a time."""
    samples = [harness.timed(call).wall * 1000 for call in calls]
    return statistics.median(samples), harness.percentile(samples, 0.95)


def run(
    label: str, backend: VectorBackend, n: int, queries: int, batch: int, seed: int
) -> list[str]:
    rng = random.Random(seed)
    points = [point(rng, i) for i in range(n)]
    backend.ensure_collection(NAME, DIM)
    rows = []

    singles = points[:100]
    single = latency_ms([functools.partial(backend.upsert, NAME, [p]) for p in singles])
    rows.append(f"| {label} | upsert 1 point per call (p50 / p95 ms) | {fmt(single)} |")

    start = time.perf_counter()
    for i in range(len(singles), n, batch):
        backend.upsert(NAME, points[i : i + batch])
    rate = (n - len(singles)) / (time.perf_counter() - start)
    rows.append(f"| {label} | upsert {batch} points per call | {rate:,.0f} points/s |")

    filtered = VectorFilter(namespace="ns1", only_valid=True, agent_id="agent1")
    asks = [(unit_vector(rng), sparse_query(rng)) for _ in range(queries)]

    def hybrid(flt: VectorFilter) -> list[Callable[[], object]]:
        return [
            functools.partial(backend.query_hybrid, NAME, d, s, flt, prefetch=50, limit=10)
            for d, s in asks
        ]

    for stage in ("before optimize", "after optimize"):
        if stage == "after optimize":
            start = time.perf_counter()
            # A server indexes by itself: nothing to ask of it.
            rebuilt = isinstance(backend, EmbeddedVectors) and backend.optimize(NAME)
            took = time.perf_counter() - start
            rows.append(f"| {label} | optimize() | {took:.1f} s (rebuilt: {rebuilt}) |")
        latency_ms(hybrid(filtered)[:5])  # warm caches
        for what, flt in (("filtered", filtered), ("no filter", VectorFilter())):
            latency = fmt(latency_ms(hybrid(flt)))
            rows.append(f"| {label} | hybrid, {what}, {stage} (p50 / p95 ms) | {latency} |")
    rows.append(f"| {label} | points stored | {backend.count(NAME):,} |")
    return rows


def fmt(p: tuple[float, float]) -> str:
    return f"{p[0]:.1f} / {p[1]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000, help="points for Qdrant Edge")
    parser.add_argument("--client-points", type=int, default=1_000, help="points for local mode")
    parser.add_argument("--queries", type=int, default=200, help="queries per measure")
    parser.add_argument("--batch", type=int, default=256, help="points per upsert call")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    root = args.dir or Path(tempfile.mkdtemp(prefix="ferrex-bench-vectors-"))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"cpus: {os.cpu_count()}, data in {root}\n")
    rows = ["| backend | measure | result |", "|---|---|---|"]
    try:
        edge = EdgeBackend(root / "edge")
        try:
            label = f"Edge, {args.points:,} pts"
            rows += run(label, edge, args.points, args.queries, args.batch, args.seed)
        finally:
            edge.close()
        local = ClientBackend(path=root / "local")
        try:
            label = f"client local, {args.client_points:,} pts"
            rows += run(label, local, args.client_points, args.queries, args.batch, args.seed)
        finally:
            local.close()
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print("\n".join(rows))
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
