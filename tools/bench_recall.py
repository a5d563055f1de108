"""Recall and store latency (p50/p95) on the embedded Qdrant, at several memory counts.

    python -m tools.bench_recall [--sizes 1000,10000] [--homes DIR,...] [--queries 200]

Each size needs a data directory holding that many memories. ``--homes`` reuses existing
ones (for example those ``python -m tools.bench_replay --keep`` leaves, whose embedding caches are
warm); otherwise a home is built here through the real import path (``store_many``), which
embeds every text once (about 200 texts/s on 2 cores). Recall runs in-process through the
composition root, without and with a small test reranker (built like the test suite's), so
its cost shows; stores are new, distinct memories. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ferrex.app import App
from ferrex.config import load
from ferrex.models.rerank import choose_reranker, load_reranker
from ferrex.read.access import QueryCache
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from tools import harness
from tools.bench_journal import WORDS


def text(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(14))
    return f"INC-{20000 + i}: {words} (note {i})"


def build(
    home: Path,
    n: int,
    rng: random.Random,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Store ``n`` distinct memories into ``home`` through the import path (``store_many``).

    ``progress(done, total)`` is called as chunks are committed (a 100k build takes minutes).
    """
    app = App(home=home, config=load(home, env={}))
    try:
        requests = [StoreRequest(content=text(rng, i)) for i in range(n)]
        app.writer().store_many(requests, chunk=512, progress=progress)
    finally:
        app.close()


class Measured(NamedTuple):
    """Wall-clock latencies in ms, one per call, on a home holding ``memories`` memories."""

    memories: int
    recall_ms: list[float]  # new query texts: the model embeds each query
    seen_ms: list[float]  # the same texts again: query vectors from the cache
    rerank_ms: list[float]  # as seen_ms plus the tiny test reranker; empty without one
    store_ms: list[float]  # new, distinct episodic memories, one store each
    fact_ms: list[float]  # new facts, one store each (their subjects resolve: other work)


def measure(
    home: Path, queries: int, stores: int, rng: random.Random, reranker: Path | None
) -> Measured:
    app = App(home=home, config=load(home, env={}))
    try:
        reader = app.reader()
        count = reader.projections.read_model.db.execute("SELECT count(*) FROM memories").get
        sql = "SELECT content, subject, object, namespace FROM memories ORDER BY memory_id"
        rows = list(reader.projections.read_model.db.execute(sql + " LIMIT 5000"))
        probes = []
        for _ in range(queries):
            content, subject, obj, namespace = rng.choice(rows)
            words = (content or f"{subject} {obj}").split()
            start = rng.randrange(max(1, len(words) - 6))
            # Recall in the probe's own namespace: that is where its neighbours are.
            probes.append((" ".join(words[start : start + 6]), namespace))
        reader.recall(RecallRequest(query="warm up the model"))
        recall_ms = []  # new query texts: the model embeds each query
        for probe in probes:
            t = time.perf_counter()
            reader.recall(RecallRequest(query=probe[0], namespace=probe[1], limit=5))
            recall_ms.append((time.perf_counter() - t) * 1000)
        seen_ms = []  # the same texts again: their vectors come from the embedding cache
        reader.queries = QueryCache(app.embedder())
        for probe in probes:
            t = time.perf_counter()
            reader.recall(RecallRequest(query=probe[0], namespace=probe[1], limit=5))
            seen_ms.append((time.perf_counter() - t) * 1000)
        rerank_ms: list[float] = []  # as seen_ms, plus the tiny reranker
        if reranker is not None:
            reader.reranker = load_reranker(choose_reranker(str(reranker), {}), home)
            reader.queries = QueryCache(app.embedder())
            for probe in probes:
                t = time.perf_counter()
                reader.recall(RecallRequest(query=probe[0], namespace=probe[1], limit=5))
                rerank_ms.append((time.perf_counter() - t) * 1000)
        writer = app.writer()
        store_ms = []
        for i in range(stores):
            # Distinct from any earlier run's stores on the same home (or dedup refuses them).
            request = StoreRequest(content=f"{text(rng, i)} run {time.time_ns()}")
            t = time.perf_counter()
            writer.store(request)
            store_ms.append((time.perf_counter() - t) * 1000)
        fact_ms = []
        for i in range(stores):
            # A few subjects, each stated again with new objects: entity resolution and the
            # fact rules (supersession, conflicts) have something to read.
            request = StoreRequest(type="semantic", subject=f"service-{i % 5}", predicate="runs on",
                                   object=f"host {i} of run {time.time_ns()}")  # fmt: skip
            t = time.perf_counter()
            writer.store(request)
            fact_ms.append((time.perf_counter() - t) * 1000)
        return Measured(int(count or 0), recall_ms, seen_ms, rerank_ms, store_ms, fact_ms)
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="memory counts to build")
    parser.add_argument("--homes", default="", help="existing data directories to measure")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--stores", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    rng = random.Random(args.seed)
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}")
    work = Path(tempfile.mkdtemp(prefix="ferrex-bench-recall-"))
    homes = [Path(h) for h in args.homes.split(",") if h]
    for size in (int(s) for s in args.sizes.split(",") if s):
        home = work / f"n{size}"
        started = time.perf_counter()
        build(home, size, rng)
        print(f"built {size} memories in {time.perf_counter() - started:.1f} s")
        homes.append(home)
    reranker = None
    try:
        from tests.integration.test_rerank import _token_table, _write_cross_encoder

        reranker = work / "tiny-reranker"
        reranker.mkdir()
        _write_cross_encoder(reranker, _token_table())
    except ImportError as exc:  # the test suite is not there (an installed ferrex)
        print(f"no test reranker ({exc}); rerank cost not measured")
    rows: list[Measured] = []
    for home in homes:
        rows.append(measure(home, args.queries, args.stores, rng, reranker))
    print(
        "\n| memories | recall p50 / p95 ms (new query) | recall p50 / p95 ms (query seen "
        "before) | same + tiny reranker p50 / p95 ms | store p50 / p95 ms "
        "| fact store p50 / p95 ms |"
        "\n|---:|---:|---:|---:|---:|---:|"
    )

    def cell(values: list[float]) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values):.1f} / {harness.percentile(values, 0.95):.1f}"

    for count, recall_ms, seen_ms, rerank_ms, store_ms, fact_ms in rows:
        print(
            f"| {count:,} | {cell(recall_ms)} | {cell(seen_ms)} | {cell(rerank_ms)} "
            f"| {cell(store_ms)} | {cell(fact_ms)} |"
        )
    print(f"\nload average after: {os.getloadavg()}; work dir {work}")


if __name__ == "__main__":
    main()
