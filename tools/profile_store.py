"""Where one store's time goes: its stages' wall or CPU time, from a profile.

    python -m tools.profile_store --home benchhomes/n10000 [--stores 50] [--threads N] [--clock cpu]

The home (one ``tools/bench.py`` built) is copied to a temporary directory, so it is not
changed. After a few warm-up stores, ``--stores`` new episodic memories are stored one at a
time as ``tools/bench.py`` stores them, then as many facts: first plainly (wall and CPU per
store, p50), then again under cProfile, whose cumulative times are grouped into the stages
of the write path: the leaves (tokenising, the model, Qdrant's queries, upserts and flush,
SQLite's statements, the journal's fsync), which add up, the Python around them; and the
parts (validation, embedding, the decision, the append, the projections), which overlap.
cProfile slows Python code, not the model or the database,
so the profile's total is a little above the plain run's. Speed is printed, never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import pstats
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ferrex.app import App
from ferrex.config import load
from ferrex.rules.memory_input import StoreRequest
from tools import harness
from tools.bench_recall import text

#: The leaves of a store's time: native calls (and the one Python function that counts
#: tokens), none inside another, so their times add up; what they leave is Python around them.
#: Each is named by (an ending of the path, a part of the function's name) as cProfile names
#: them; a native call's path is "~".
LEAVES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("window check: tokenising to count", (("models/loading.py", "count_tokens"),)),
    ("tokenising for the model", (("~", "'encode_batch' of 'tokenizers"),)),
    ("the model (ONNX Runtime run)", (("~", "onnxruntime_pybind11_state.run"),)),
    (
        "Qdrant queries (nearest memories, entities)",
        (("~", "'query' of 'builtins.EdgeShard"), ("~", "'query_batch' of 'builtins.EdgeShard")),
    ),
    ("Qdrant upserts", (("~", "'update' of 'builtins.EdgeShard"),)),
    ("Qdrant flush (at most once a second)", (("~", "'flush' of 'builtins.EdgeShard"),)),
    (
        "SQLite statements (read model, embedding cache)",
        (("~", "of 'apsw."),),
    ),
    ("journal fsync", (("~", "posix.fdatasync"), ("~", "posix.fsync"))),
)

#: Parts of the write path, each a function's cumulative time (they overlap: the decision
#: contains the nearest query, a fact's decision the model for its subject's name).
PARTS: tuple[tuple[str, str, str], ...] = (
    ("validation (with the window check)", "write/pipeline.py", "_validated"),
    ("embedding before the lock (with the model)", "write/pipeline.py", "prepare"),
    ("decision (with the nearest query)", "write/pipeline.py", "_decide"),
    ("journal append (with the fsync)", "journal/log.py", "append_batch"),
    ("catching up, before and after (projections, flush)", "projections/replay.py", "catch_up"),
    ("SQLite projection", "projections/readmodel/projector.py", "apply"),
    ("Qdrant projection (points, payloads)", "projections/vector_sink.py", "apply"),
    ("in all", "write/writer.py", "store"),
)


def requests(kind: str, n: int, rng: random.Random) -> list[StoreRequest]:
    """``n`` new memories as ``tools/bench.py`` stores them (distinct from any earlier run's)."""
    if kind == "episodic":
        return [StoreRequest(content=f"{text(rng, i)} run {time.time_ns()}") for i in range(n)]
    facts = []
    for i in range(n):
        # A few subjects, each stated again with new objects (as tools/bench.py stores them).
        obj = f"host {i} of run {time.time_ns()}"
        subject = f"service-{i % 5}"
        facts.append(
            StoreRequest(type="semantic", subject=subject, predicate="runs on", object=obj)
        )
    return facts


def latency(store: Callable[[StoreRequest], object], batch: Sequence[StoreRequest]) -> str:
    """Wall and CPU p50 of storing each request of ``batch``, one at a time."""
    took = [harness.timed(functools.partial(store, request)) for request in batch]
    walls = [t.wall * 1000 for t in took]
    cpus = [t.cpu * 1000 for t in took]
    return f"wall p50 {statistics.median(walls):.2f} ms, CPU p50 {statistics.median(cpus):.2f} ms"


def _named(name: str, part: str, *, native: bool) -> bool:
    return part in name if native else name == part


def cumulative(stats: pstats.Stats, functions: Sequence[tuple[str, str]]) -> float:
    """The summed cumulative seconds of ``functions`` in ``stats``."""
    # (file, line, function) → (primitive calls, calls, own s, cumulative s, callers)
    table: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    table = stats.stats  # type: ignore[attr-defined]  # typeshed's Stats does not declare it
    return sum(
        entry[3]
        for (path, _line, name), entry in table.items()
        if any(
            path.endswith(end) and _named(name, part, native=end == "~") for end, part in functions
        )
    )


def profile(
    store: Callable[[StoreRequest], object], batch: Sequence[StoreRequest], clock: str
) -> None:
    # The CPU clock counts the whole process's CPU (the model's second thread too).
    profiler = cProfile.Profile(time.process_time if clock == "cpu" else time.perf_counter)
    profiler.enable()
    for request in batch:
        store(request)
    profiler.disable()
    stats = pstats.Stats(profiler)
    per_store = 1000 / len(batch)
    everything = cumulative(stats, [("write/writer.py", "store")]) * per_store
    print("  leaves, ms per store (they add up):")
    listed = 0.0
    for leaf, functions in LEAVES:
        ms = cumulative(stats, functions) * per_store
        listed += ms
        print(f"    {leaf:<52} {ms:7.2f}  {100 * ms / everything:5.1f} %")
    rest = everything - listed
    print(f"    {'Python around them':<52} {rest:7.2f}  {100 * rest / everything:5.1f} %")
    print("  parts, ms per store (they overlap):")
    for part, end, name in PARTS:
        print(f"    {part:<52} {cumulative(stats, [(end, name)]) * per_store:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="a built home (copied first)")
    parser.add_argument("--stores", type=int, default=50, help="stores of each kind")
    parser.add_argument("--threads", type=int, default=None, help="the model's intra-op threads")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall",
        help="what the profile measures: wall time, or the process's CPU time (steadier on a "
        "busy machine)",
    )  # fmt: skip
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    rng = random.Random(args.seed)
    with harness.scratch("ferrex-profile-store-") as scratch:
        home = harness.home_copy(args.home, scratch)
        app = App(home=home, config=load(home, env={}))
        try:
            if args.threads is not None:  # before the model loads
                app.embedder().threads = args.threads
            writer = app.writer()
            for request in requests("episodic", 5, rng):  # the model loads, caches warm
                writer.store(request)
            settings = app.embedder().model().session_settings
            print(f"model session: {settings}")
            for kind in ("episodic", "fact"):
                print(f"{kind}: plain run of {args.stores}: "
                      f"{latency(writer.store, requests(kind, args.stores, rng))}")  # fmt: skip
                print(f"{kind}: {args.clock} time under cProfile, {args.stores} more stores:")
                profile(writer.store, requests(kind, args.stores, rng), args.clock)
        finally:
            app.close()


if __name__ == "__main__":
    main()
