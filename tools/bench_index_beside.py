"""A server's background index, as its calls meet it: before, during and after, in one run.

    python -m tools.bench_index_beside --home DIR [--calls 100]

A home whose memories came one store at a time (or an old import) has no vector indexes:
every dense search compares the query with every vector. A server now indexes such a home
by itself (``Service.index_due`` every ``qdrant.index_every_seconds``): it copies the due
collections, a child process indexes the copies while the server serves the live ones, and
the copies catch up and are switched in (``projections.index_beside``). This tool opens a
copy of ``--home`` as a server does (model and stores warm), then sends recalls of new query
texts and stores of new episodic memories, alternating, in three phases: before the index,
while it is built (until the switch), and after. It prints each phase's wall p50 / p95 /
max per call kind, the index's total time, the child's share of it, and the rest (copying,
catching up and switching), with ferrex's own log line that splits the rest, and the five
slowest calls of the build with when they began. Speed is printed, never asserted.

``--stand-in`` opens a home that ``python -m tools.bench_million --keep`` built (its dense vectors a
stand-in, a hashed projection of the words, not the model's) with that same stand-in, as a
home must be opened with the embedder it was projected with; its output then says so first.
A million-memory home is built unindexed by that tool's build and replay phases alone.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import threading
import time
from pathlib import Path

from ferrex.app import App
from ferrex.config import load
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from projections.index_beside import index_beside
from projections.indexing import ApartBuild
from projections.qdrant_edge import EdgeBackend
from tools import harness
from tools.bench_journal import WORDS


def _ms(samples: list[float]) -> str:
    if not samples:
        return "no calls"
    ordered = sorted(samples)
    p95 = harness.percentile(ordered, 0.95)
    return (
        f"p50 {statistics.median(ordered):6.2f} / p95 {p95:6.2f} / max {ordered[-1]:7.2f} ms"
        f" ({len(ordered)})"
    )


class Caller:
    """Recalls and stores of new texts, alternating, timed by kind."""

    def __init__(self, app: App, seed: int) -> None:
        self.app = app
        self.rng = random.Random(seed)
        self.stamp = time.time_ns()
        self.n = 0

    def one(
        self, into: dict[str, list[float]], log: list[tuple[float, str, float]] | None = None
    ) -> None:
        words = " ".join(self.rng.choice(WORDS) for _ in range(14))
        self.n += 1
        started = time.perf_counter()
        if self.n % 2:
            query = " ".join(words.split()[:6])
            self.app.reader().recall(RecallRequest(query=query, limit=5, min_relevance=0))
            kind = "recall"
        else:
            self.app.writer().store(StoreRequest(content=f"{words} ({self.n} {self.stamp})"))
            kind = "store"
        into[kind].append((time.perf_counter() - started) * 1000)
        if log is not None:
            log.append((started, kind, into[kind][-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="a built home (copied)")
    parser.add_argument("--calls", type=int, default=100, help="calls before and after")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--stand-in", action="store_true",
        help="the home was built by tools/bench_million.py: open it with its stand-in vectors",
    )  # fmt: skip
    harness.add_arguments(parser)
    args = parser.parse_args()
    if not args.home.is_dir():
        parser.error(f"--home {args.home} does not exist")
    if args.stand_in:
        from tools.bench_million import STAND_IN_NOTE

        print(STAND_IN_NOTE)
    harness.begin(args)
    # The index's own report: how long the copy, the build and the switch took.
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("ferrex.projections").setLevel(logging.INFO)
    with harness.scratch("ferrex-beside-") as scratch:
        home = harness.home_copy(args.home, scratch)
        if args.stand_in:
            from tools.bench_million import HashProjection, open_app

            app = open_app(home, HashProjection())
        else:
            app = App(home=home, config=load(home, env={}))
        try:
            projections, backend = app.projections(), app.backend()
            assert isinstance(backend, EdgeBackend), "the embedded Qdrant Edge only"
            print(f"unindexed dense vectors: {backend.unindexed(projections.live.memories):,}")
            caller = Caller(app, args.seed)
            warm: dict[str, list[float]] = {"recall": [], "store": []}
            for _ in range(10):
                caller.one(warm)
            phases: dict[str, dict[str, list[float]]] = {
                phase: {"recall": [], "store": []} for phase in ("before", "during", "after")
            }
            for _ in range(args.calls):
                caller.one(phases["before"])
            child = ApartBuild(backend.root, backend.indexing_threshold_kb)
            built: list[float] = []

            def build_apart(names: list[str]) -> dict[str, bool]:
                began = time.perf_counter()
                try:
                    return child(names)
                finally:
                    built.append(time.perf_counter() - began)

            outcome: list[object] = []

            def index() -> None:
                began = time.perf_counter()
                try:
                    outcome.append(index_beside(projections, build_apart))
                except Exception as exc:  # printed below
                    outcome.append(exc)
                outcome.append(time.perf_counter() - began)

            thread = threading.Thread(target=index, name="bench-index")
            calls: list[tuple[float, str, float]] = []
            start = time.perf_counter()
            thread.start()
            while thread.is_alive():
                caller.one(phases["during"], calls)
            thread.join()
            switched, total = outcome
            if isinstance(switched, Exception):
                raise SystemExit(f"the index failed: {switched}")
            for _ in range(args.calls):
                caller.one(phases["after"])
            left = backend.unindexed(projections.live.memories)
        finally:
            app.close()
    assert isinstance(total, float)
    child_s = built[0] if built else 0.0
    print(
        f"index: {total:.2f} s in all, the child's build {child_s:.2f} s, copying, catching up"
        f" and switching {total - child_s:.2f} s; switched in: {switched}; unindexed after:"
        f" {left:,}"
    )
    slowest = sorted(calls, key=lambda c: -c[2])[:5]
    print(
        "slowest calls during it:",
        ", ".join(f"{kind} {ms:.0f} ms at {began - start:.2f} s" for began, kind, ms in slowest),
    )
    for phase, kinds in phases.items():
        for kind, samples in kinds.items():
            print(f"{phase:7} {kind:6} {_ms(samples)}")


if __name__ == "__main__":
    main()
