"""A home as imported beside the same home with its vector indexes built, in one run.

    python -m tools.trials.bench_index --home DIR [--queries 200] [--stores 50]

What an import of 5,000 memories or more now ends with (``App.index_vectors``, the work of
``ferrex optimize``) against a home left without it. The home (one ``tools/bench.py`` or
``tools/bench_recall.py`` built through ``store_many``, which does not index) is copied twice;
one copy is indexed by a child process, as ``ferrex import`` indexes it, and both are then
opened by this process, as a server opens a home the import left. Recalls of new query texts
(five results, nothing trimmed) and stores of new episodic memories go to both homes in turn,
the side that goes first alternating, so a burst of other work falls on both. It prints
the wall p50 and p95 of each side, the time the index took, and how often the two sides gave
the same five results (the indexed dense leg is an approximate search). Speed is printed,
never asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ferrex.app import App
from ferrex.config import load
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from tools import harness
from tools.bench_journal import WORDS
from tools.harness import ROOT

_INDEX = """
import sys, time
from pathlib import Path
from ferrex.app import App
from ferrex.config import load
home = Path(sys.argv[1])
app = App(home=home, config=load(home, env={}))
app.projections()
started = time.perf_counter()
app.index_vectors()
print(time.perf_counter() - started)
app.close()
"""


def _ms(samples: list[float]) -> str:
    p95 = harness.percentile(samples, 0.95)
    return f"p50 {statistics.median(samples):.2f} / p95 {p95:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="a built home (copied twice)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--stores", type=int, default=50)
    parser.add_argument("--seed", type=int, default=4)
    harness.add_arguments(parser)
    args = parser.parse_args()
    if not args.home.is_dir():
        parser.error(f"--home {args.home} does not exist")
    harness.begin(args)
    with tempfile.TemporaryDirectory(prefix="ferrex-index-") as scratch:
        homes = {
            side: harness.home_copy(args.home, Path(scratch), side)
            for side in ("as imported", "indexed")
        }
        done = subprocess.run(
            [sys.executable, "-c", _INDEX, str(homes["indexed"])],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        print(f"indexing took {float(done.stdout.split()[-1]):.1f} s", flush=True)
        apps = {side: App(home=home, config=load(home, env={})) for side, home in homes.items()}
        try:
            rng = random.Random(args.seed)
            recalls: dict[str, list[float]] = {side: [] for side in apps}
            stores: dict[str, list[float]] = {side: [] for side in apps}
            tops: dict[str, list[list[str]]] = {side: [] for side in apps}
            for app in apps.values():
                app.reader().recall(RecallRequest(query="warm up the model", min_relevance=0))
            sides = list(apps)
            for i in range(args.queries):
                query = " ".join(rng.choice(WORDS) for _ in range(6))
                for side in sides if i % 2 == 0 else sides[::-1]:
                    reader = apps[side].reader()
                    started = time.perf_counter()
                    found = reader.recall(RecallRequest(query=query, limit=5, min_relevance=0))
                    recalls[side].append((time.perf_counter() - started) * 1000)
                    tops[side].append([r["id"] for r in found.results])
            stamp = time.time_ns()
            for i in range(args.stores):
                content = " ".join(rng.choice(WORDS) for _ in range(14))
                for side in sides if i % 2 == 0 else sides[::-1]:
                    started = time.perf_counter()
                    apps[side].writer().store(StoreRequest(content=f"{content} ({i} {stamp})"))
                    stores[side].append((time.perf_counter() - started) * 1000)
        finally:
            for app in apps.values():
                app.close()
    for side in sides:
        print(f"{side:12} recall {_ms(recalls[side])}; store {_ms(stores[side])}")
    plain, indexed = (tops[side] for side in sides)
    same = sum(a == b for a, b in zip(plain, indexed, strict=True)) / len(plain)
    print(f"the same five results in {same:.3f} of the recalls")


if __name__ == "__main__":
    main()
