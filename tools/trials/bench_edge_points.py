"""Where a rebuild's writer spends its time per point in Qdrant Edge (issue 27's replay).

    python -m tools.trials.bench_edge_points [--points 20000] [--rounds 3]

CPU microseconds per point, median of ``--rounds`` interleaved rounds, for:

- building an ``edge.Point`` as ``projections.qdrant_edge`` does (id, dense and sparse
  vectors, the memory payload of ``VectorSink``), and parts of it alone (id only, with the
  dense vector, the sparse vector, the payload): Edge's conversion tries a payload value as
  bool, unsigned, signed and float before it takes it as a string, so each string costs about
  as much as a 384-float vector;
- ``EdgeShard.update`` of those points in batches of 512 into a new shard made with the
  backend's config, with the payload indexes created first (as ``ensure_collection`` does),
  and without them, the indexes then created over the points already there (the "index
  after the upserts" a rebuild could do: it is the cost to compare, per point).

Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as edge

from projections.qdrant_edge import EdgeBackend, _point
from projections.vectors import (
    DENSE,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    SPARSE,
    SparseVector,
    VectorPoint,
)
from tools import harness

DIM = 384
BATCH = 512


def points(n: int, seed: int) -> list[VectorPoint]:
    """Points shaped like a rebuild's: unit dense vectors, ~20 BM25 terms, the sink's payload."""
    rng = random.Random(seed)
    dense = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    out = []
    for i in range(n):
        indices = tuple(sorted(rng.sample(range(1 << 20), 20)))
        payload = {
            "memory_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "namespace": f"ns{i % 5}",
            "type": "episodic",
            "entity_ids": [f"e{i % 97}", f"e{i % 89}"],
            "t_valid": 1.7e9 + i,
            "t_invalid": None,
            "agent_id": "claude-code",
            "visibility": "shared",
            "step": 0,
        }
        sparse = SparseVector(indices, tuple(rng.random() for _ in indices))
        out.append(VectorPoint(str(uuid.UUID(int=i)), dense[i].tolist(), sparse, payload))
    return out


def per_point(run: Callable[[], object], n: int) -> float:
    started = time.process_time()
    run()
    return (time.process_time() - started) / n * 1e6


def build_parts(pts: list[VectorPoint]) -> dict[str, float]:
    n = len(pts)
    dense = [list(p.dense) for p in pts]
    sparse = [edge.SparseVector(list(p.sparse.indices), list(p.sparse.values)) for p in pts]
    return {
        "Point as the backend builds it": per_point(lambda: [_point(p) for p in pts], n),
        "  id only": per_point(lambda: [edge.Point(p.id, {}, None) for p in pts], n),
        "  id + dense": per_point(
            lambda: [edge.Point(p.id, {DENSE: d}) for p, d in zip(pts, dense, strict=True)], n
        ),
        "  id + sparse": per_point(
            lambda: [edge.Point(p.id, {SPARSE: s}) for p, s in zip(pts, sparse, strict=True)], n
        ),
        "  id + payload": per_point(lambda: [edge.Point(p.id, {}, p.payload) for p in pts], n),
    }


def create_indexes(shard: edge.EdgeShard) -> None:
    for field in KEYWORD_FIELDS:
        kind = edge.PayloadSchemaType.Keyword
        shard.update(edge.UpdateOperation.create_field_index(field, kind))
    for field in FLOAT_FIELDS:
        shard.update(edge.UpdateOperation.create_field_index(field, edge.PayloadSchemaType.Float))


def write(built: list[edge.Point], root: Path, indexed_first: bool) -> dict[str, Any]:
    """Upsert into a fresh shard; the indexes before (as a collection is made) or after."""
    shutil.rmtree(root, ignore_errors=True)
    backend = EdgeBackend(root)
    n = len(built)
    try:
        if indexed_first:
            backend.ensure_collection("c", DIM)  # made as a live collection is
            backend.close()
            shard = edge.EdgeShard.load(str(root / "c"))
        else:
            root.mkdir(parents=True, exist_ok=True)
            shard = edge.EdgeShard.create(str(root / "c"), backend._config(DIM, new=True))

        def upserts() -> None:
            for start in range(0, n, BATCH):
                shard.update(edge.UpdateOperation.upsert_points(built[start : start + BATCH]))

        update = per_point(upserts, n)
        after = 0.0 if indexed_first else per_point(lambda: create_indexes(shard), n)
        flush = per_point(shard.flush, n)
        schema = sorted(shard.info().payload_schema)
        shard.close()
        return {"update": update, "indexes after": after, "flush": flush, "schema": schema}
    finally:
        backend.close()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=27)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)

    pts = points(args.points, args.seed)
    builds: dict[str, list[float]] = {}
    writes: dict[str, dict[str, list[float]]] = {"indexes first": {}, "indexes after": {}}
    schemas: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="ferrex-edge-points-") as tmp:
        for _ in range(args.rounds):
            for name, value in build_parts(pts).items():
                builds.setdefault(name, []).append(value)
            built = [_point(p) for p in pts]
            for label in ("indexes first", "indexes after"):
                result = write(built, Path(tmp) / "shard", label == "indexes first")
                schemas[label] = result.pop("schema")
                for key, value in result.items():
                    writes[label].setdefault(key, []).append(value)

    print(f"\n{args.points:,} points, median of {args.rounds} rounds, CPU us a point\n")
    print("| building | us |\n|---|---:|")
    for name, values in builds.items():
        print(f"| {name} | {statistics.median(values):.1f} |")
    print("\n| writing | update | indexes after | flush | total |\n|---|---:|---:|---:|---:|")
    for label, parts in writes.items():
        medians = {k: statistics.median(v) for k, v in parts.items()}
        cells = " | ".join(f"{v:.1f}" for v in medians.values())
        print(f"| {label} | {cells} | {sum(medians.values()):.1f} |")
    same = schemas["indexes first"] == schemas["indexes after"]
    print(f"\nthe same payload indexes either way: {same} ({', '.join(schemas['indexes first'])})")


if __name__ == "__main__":
    main()
