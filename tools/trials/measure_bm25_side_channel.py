"""Measure how much one agent's private text moves another agent's recall (BM25's IDF).

    python -m tools.trials.measure_bm25_side_channel [--bob 60] [--alice 300] [--queries 40]

Two data directories get the same memories of bob's (shared); in one of them alice also
stores private memories drawn from the same vocabulary. Bob then runs the same recalls in
both and the tool reports, over his queries: how often the set of results differs (it must
never: that would be a leak of which memories exist), how often the order differs, how often
the top result differs, and the relative change of his scores (median and max). The sparse
leg's IDF is collection-wide, so the scores move; docs/security.md reports the
numbers this prints.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from ferrex.app import App
from ferrex.config import load
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode

WORDS = (
    "deploy",
    "rollback",
    "backup",
    "cache",
    "latency",
    "incident",
    "migration",
    "pager",
    "queue",
    "shard",
    "replica",
    "index",
    "token",
    "quota",
    "billing",
    "invoice",
    "refund",
    "webhook",
    "cluster",
    "region",
    "kafka",
    "postgres",
    "redis",
    "grafana",
)


def sentence(rng: random.Random) -> str:
    return (
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 10))) + f" #{rng.randint(0, 9999)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bob", type=int, default=60, help="bob's shared memories")
    parser.add_argument("--alice", type=int, default=300, help="alice's private memories")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    bob_texts = [sentence(rng) for _ in range(args.bob)]
    alice_texts = [sentence(rng) for _ in range(args.alice)]
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
    bob, alice = Caller(agent_id="bob"), Caller(agent_id="alice")

    answers: list[list[list[tuple[str, float]]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for with_alice in (False, True):
            home = Path(tmp) / f"home-{with_alice}"
            service = Service(App(home=home, config=load(home, None)))
            try:
                for text in bob_texts:
                    service.call(decode("store", {"content": text, "visibility": "shared"}), bob)
                if with_alice:
                    for text in alice_texts:
                        service.call(decode("store", {"content": text}), alice)
                runs = []
                for query in queries:
                    doc: dict[str, Any] = service.call(
                        decode(
                            "recall",
                            {
                                "query": query,
                                "limit": 100,
                                "include_stale": True,
                                "min_relevance": 0,
                            },
                        ),
                        bob,
                    )
                    runs.append([(r["content"], float(r["score"])) for r in doc["results"]])
                answers.append(runs)
            finally:
                service.close()

    sets = order = top = 0
    changes: list[float] = []
    for without, withal in zip(answers[0], answers[1], strict=True):
        a, b = [t for t, _ in without], [t for t, _ in withal]
        sets += set(a) != set(b)
        order += a != b
        top += bool(a and b and a[0] != b[0])
        scores = dict(withal)
        changes += [abs(scores[t] - s) / s for t, s in without if t in scores and s > 0]
    n = len(queries)
    print(f"bob {args.bob} shared memories, alice {args.alice} private, {n} queries")
    print(f"result sets differ: {sets}/{n}")
    print(f"result order differs: {order}/{n}; top result differs: {top}/{n}")
    if changes:
        print(
            f"relative score change: median {statistics.median(changes):.4f}, "
            f"max {max(changes):.4f}"
        )


if __name__ == "__main__":
    main()
