"""What the late-interaction reranker (``models.reranker = late``) adds to a recall.

    nice -n 10 python -m tools.bench_late [--size 10000] [--home DIR] [--queries 300]

Builds (or reuses, ``--home``) a data directory of ``--size`` memories through the import
path (``tools/bench_recall.build``), then asks the same probe queries through the composition
root's reader three ways, interleaved query by query so the machine's load falls on all
alike: no reranker; the late stage with a cold token cache (each probe's candidates are new
to it: the cache is emptied before each recall); the late stage with a warm cache (the same
probes again). Query vectors come from the embedding cache in every row (each probe is asked
once before timing), so the differences are the stage's own cost. Reports medians and p95 in
ms, and the load average before and after. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from ferrex.app import App
from ferrex.config import load
from ferrex.models.late import LateInteraction, TokenCache
from ferrex.models.rerank import RerankStage, choose_reranker, load_reranker
from ferrex.read.request import RecallRequest
from tools import harness
from tools.bench_recall import build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--home", type=Path, help="reuse (or build and keep) this home")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    rng = random.Random(args.seed)
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}")
    home = args.home or Path(tempfile.mkdtemp(prefix="ferrex-bench-late-")) / "home"
    if not (home / "journal").exists():
        started = time.perf_counter()
        build(home, args.size, rng)
        print(f"built {args.size} memories in {time.perf_counter() - started:.1f} s")
    app = App(home=home, config=load(home, env={}))
    try:
        reader = app.reader()
        rows = list(
            reader.projections.read_model.db.execute(
                "SELECT content, namespace FROM memories ORDER BY memory_id LIMIT 5000"
            )
        )
        probes = []
        for _ in range(args.queries):
            content, namespace = rng.choice(rows)
            words = str(content).split()
            start = rng.randrange(max(1, len(words) - 6))
            probes.append((" ".join(words[start : start + 6]), namespace))
        off = RerankStage(choose_reranker("none", {}))
        late = load_reranker(choose_reranker("late", {}), home)
        assert isinstance(late.encoder, LateInteraction), late.status
        scorer = late.encoder
        for query, namespace in probes:  # warm the query vectors, and the stage's session
            reader.recall(RecallRequest(query=query, namespace=namespace, limit=10))
        scorer.rerank("warm up", ["the late stage's first run"])
        times: dict[str, list[float]] = {"none": [], "late, cold cache": [], "late, warm": []}

        def recall_as(label: str, stage: RerankStage, query: str, namespace: str) -> None:
            reader.reranker = stage
            request = RecallRequest(query=query, namespace=namespace, limit=10)
            times[label].append(harness.timed(lambda: reader.recall(request)).wall * 1000)

        for query, namespace in probes:
            recall_as("none", off, query, namespace)
            scorer.cache = TokenCache()
            recall_as("late, cold cache", late, query, namespace)
            recall_as("late, warm", late, query, namespace)
        count = reader.projections.read_model.db.execute("SELECT count(*) FROM memories").get
    finally:
        app.close()
    print(f"\n{count:,} memories, {len(probes)} recalls each, limit 10, rerank pool 20\n")
    print("| reranker | recall p50 ms | p95 ms |\n|---|---:|---:|")
    for label, values in times.items():
        p50, p95 = statistics.median(values), harness.percentile(values, 0.95)
        print(f"| {label} | {p50:.1f} | {p95:.1f} |")
    print(f"\nload average after: {os.getloadavg()}; home {home}")


if __name__ == "__main__":
    main()
