"""What a store's nearest-memories filter costs Qdrant Edge, spelt one way or another.

    python -m tools.trials.bench_filter --home benchhomes/n10000 [--queries 100] [--rounds 20]

A store's dedup check asks for the nearest memories of its namespace and type that are
still valid (``write/measures.nearest``). A filtered search checks each point it visits
against every clause, so how a clause is spelt counts. On a copy of ``--home`` this times
that query, for ``--queries`` random unit vectors, with the filter as the backend spells it
(``qdrant_edge._filter``) and with each one-value keyword clause as ``MatchAny([value])``
instead (the spelling before), unfiltered beside them; the spellings interleaved in random
order each round, process CPU per query, median and least of the rounds. It also checks
that both spellings answer the same hits, scores included. Speed is printed, never asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as edge

from ferrex.app import App
from ferrex.config import load
from projections import qdrant_edge
from projections.vectors import DENSE, TIE_SLACK, AnyOf, VectorFilter, filter_clauses
from tools import harness


def _as_before(flt: VectorFilter) -> Any:
    """The filter with every keyword clause a MatchAny, as it was spelt before."""
    conditions = [
        edge.FieldCondition(c.key, match=edge.MatchAny(list(c.values)))
        if isinstance(c, AnyOf)
        else qdrant_edge._condition(c)
        for c in filter_clauses(flt)
    ]
    return edge.Filter(must=conditions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="a built home (copied first)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    rng = random.Random(args.seed)
    with harness.scratch("ferrex-bench-filter-") as scratch:
        home = harness.home_copy(args.home, scratch)
        app = App(home=home, config=load(home, env={}))
        try:
            projections = app.projections()
            settings = app.writer().settings
            shard = projections.backend._shard(projections.live.memories)  # type: ignore[attr-defined]
            flt = VectorFilter(namespace=settings.default_namespace, types=("episodic",),
                               only_valid=True, agent_id=app.config["store.agent_id"])  # fmt: skip
            spellings = {
                "as the backend spells it": qdrant_edge._filter(flt),
                "keywords as MatchAny (before)": _as_before(flt),
                "unfiltered": None,
            }
            vectors = np.random.default_rng(args.seed).standard_normal((args.queries, 384))
            dim = projections.encoders.dim
            vectors = vectors[:, :dim] if dim <= 384 else np.resize(vectors, (args.queries, dim))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            dense = [v.astype(np.float32).tolist() for v in vectors]

            def request(v: list[float], f: Any) -> Any:
                nearest = edge.Query.Nearest(v, using=DENSE)
                params = qdrant_edge._DENSE_SEARCH
                return edge.QueryRequest(limit=5 + TIE_SLACK, query=nearest, filter=f,
                                         params=params, with_payload=True)  # fmt: skip

            def answers(f: Any) -> list[list[tuple[str, float]]]:
                return [[(str(p.id), p.score) for p in shard.query(request(v, f))] for v in dense]

            same = answers(spellings["as the backend spells it"]) == answers(
                spellings["keywords as MatchAny (before)"]
            )
            print(f"{projections.backend.count(projections.live.memories)} points; "
                  f"filter {filter_clauses(flt)}")  # fmt: skip
            print(f"both spellings answer the same hits and scores: {same}")
            times: dict[str, list[float]] = {name: [] for name in spellings}
            for _ in range(args.rounds):
                order = list(spellings)
                rng.shuffle(order)
                for name in order:
                    cpu = time.process_time()
                    for v in dense:
                        shard.query(request(v, spellings[name]))
                    times[name].append((time.process_time() - cpu) * 1000 / len(dense))
            print("| CPU ms per query | median | least |\n|---|---:|---:|")
            for name, values in times.items():
                print(f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} |")
        finally:
            app.close()


if __name__ == "__main__":
    main()
