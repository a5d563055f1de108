"""Benchmark ferrex's models: dense throughput and latency, sparse encoding, cache hits.

Usage: ``.venv/bin/python -m tools.bench_models [--home DIR] [--rounds N]``. Without
``--home`` a throwaway data directory is used (the model is assembled into it first). The
load average is printed before and after, since the numbers mean little on a busy machine.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from ferrex.models import (
    Embedder,
    EmbeddingCache,
    cache_path,
    choose_embedding_model,
    text_key,
)
from ferrex.models.sparse import Bm25Encoder
from tools import harness

SUBJECTS = ("the deploy", "INC-90312", "the billing service", "our staging cluster", "Alice")
VERBS = ("failed after", "was fixed by", "depends on", "moved to", "was reviewed in")
OBJECTS = ("the v2.3.1 release", "a database migration", "PR #260", "Friday's rollout", "Bob")
TAILS = ("again", "according to the runbook", "before the freeze", "on eu-west-1", "twice")


def short_texts(count: int, salt: str) -> list[str]:
    """Deterministic memory-sized sentences (10 to 20 words), distinct per ``salt``."""
    texts = []
    for i in range(count):
        parts = (
            SUBJECTS[i % 5],
            VERBS[(i // 5) % 5],
            OBJECTS[(i // 25) % 5],
            TAILS[(i // 125) % 5],
        )
        texts.append(f"Note {salt}-{i}: {' '.join(parts)}, see ticket {i * 7919 % 100000}.")
    return texts


def wall_of(action: Callable[..., object], *args: object) -> float:
    """Wall seconds ``action(*args)`` takes (arguments are built before the clock starts)."""
    return harness.timed(functools.partial(action, *args)).wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="data directory (default: a temporary one)")
    parser.add_argument("--rounds", type=int, default=5, help="batches of 256 to time")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    with tempfile.TemporaryDirectory(prefix="ferrex-bench-") as scratch:
        run(args.home or Path(scratch), args.rounds)


def run(home: Path, rounds: int) -> None:
    print(f"load average before: {os.getloadavg()}  (cpus: {os.cpu_count()})")
    rows: list[tuple[str, str]] = []

    embedder = Embedder(home, choose_embedding_model(None, os.environ))
    load = wall_of(embedder.model)
    model = embedder.model()
    rows.append(("model", f"{model.identity.name} ({model.identity.dim} d)"))
    rows.append(("model load (first, incl. assembly)", f"{load:.2f} s"))

    model.run(short_texts(32, "warm"), embedder.batch_size)
    batch_times = [
        wall_of(model.run, short_texts(256, f"b{r}"), embedder.batch_size) for r in range(rounds)
    ]
    rows.append(
        (
            f"dense, batches of 256 short texts (batch_size {embedder.batch_size})",
            f"{256 / statistics.median(batch_times):.0f} texts/s",
        )
    )
    whole_batch = [wall_of(model.run, short_texts(256, f"w{r}"), 256) for r in range(3)]
    rows.append(
        (
            "dense, batches of 256 short texts (batch_size 256)",
            f"{256 / statistics.median(whole_batch):.0f} texts/s",
        )
    )

    queries = short_texts(200, "q")
    latencies = [wall_of(model.run, [q], 1) * 1000.0 for q in queries]
    rows.append(("single query p50 (model only)", f"{harness.percentile(latencies, 0.50):.2f} ms"))
    rows.append(("single query p95 (model only)", f"{harness.percentile(latencies, 0.95):.2f} ms"))

    cached = short_texts(1000, "c")
    embedder.embed_many(cached)
    hit_times = [wall_of(embedder.embed, t) * 1e6 for t in cached]
    rows.append(("embed() of a cached text, p50", f"{harness.percentile(hit_times, 0.50):.0f} µs"))
    cache = EmbeddingCache(cache_path(home))
    identity = model.identity
    lookups = [wall_of(cache.get_many, identity, [text_key(t)]) * 1e6 for t in cached]
    rows.append(("cache lookup (one key), p50", f"{harness.percentile(lookups, 0.50):.0f} µs"))
    rows.append(("cache lookup (one key), p95", f"{harness.percentile(lookups, 0.95):.0f} µs"))
    bulk = wall_of(cache.get_many, identity, [text_key(t) for t in cached])
    rows.append(("cache lookup (1000 keys at once)", f"{bulk * 1e6 / len(cached):.1f} µs/key"))
    cache.close()
    embedder.close()

    encoder = Bm25Encoder()
    sparse_texts = short_texts(10_000, "s")
    sparse_time = sum(wall_of(encoder.encode_document, t) for t in sparse_texts)
    rows.append(("sparse encode_document", f"{len(sparse_texts) / sparse_time:.0f} texts/s"))
    query_time = sum(wall_of(encoder.encode_query, t) for t in sparse_texts)
    rows.append(("sparse encode_query", f"{len(sparse_texts) / query_time:.0f} texts/s"))

    width = max(len(name) for name, _ in rows)
    print(f"{'measure'.ljust(width)}  value")
    print(f"{'-' * width}  {'-' * 24}")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
