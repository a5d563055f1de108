"""stats and reflect at many memories: from the read model's aggregates against the old path
that read and assessed every memory, alternating, on one home.

    python -m tools.trials.bench_insight [--memories 100000] [--ages 30,400] [--rounds 5]

A home here is a read-model file only (stats and reflect read nothing else), built by
applying ``memory.stored`` events (episodes, facts on a few hundred subjects with entities,
procedures; three agents' private and shared memories), a fifth of them recalled and a tenth
validated, their store times spread evenly over the last ``age`` days: a home of the last
30 days has nothing old enough to be aging, one of 400 days has most memories old enough to
be assessed. Each round runs the new path and the old one (``old_stats`` / ``old_reflect``,
the test oracle in ``tests/integration/test_insight_aggregates.py``) back to back, for the
operator and for one agent, checks that both answer the same, and prints medians of the
CPU time each took.
Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ferrex.read.insight import reflect, stats
from ferrex.read.labels import RARELY_RECALLED, clock_bound, scoring
from ferrex.read.seen import Sight
from ferrex.rules.freshness import StalenessConfig
from ferrex.rules.subjects import object_form
from journal import (
    Access,
    AnyEvent,
    EntityCreated,
    MemoriesAccessed,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
    Record,
)
from projections.readmodel.insight import LabelQuery
from projections.readmodel.projector import Rules
from projections.sqlite import ReadModel
from tests.integration.test_insight_aggregates import old_reflect, old_stats
from tools import harness

NOW = datetime(2026, 12, 1, tzinfo=UTC)
AGENTS = [None, "alice", "bob", "carol"]
PREDICATES = ["uses", "owns", "runs on", "depends on", "lives in"]
RULES = Rules("objects", object_form=object_form)
"""The read model keeps object forms, as the live one does (``ferrex.parts.build_rules``)."""


def build(path: Path, count: int, age_days: int, seed: int) -> None:
    rng = random.Random(seed)
    model = ReadModel.open(path, rules=RULES)
    subjects = [f"service {i}" for i in range(400)]
    records: list[Record] = []
    current: dict[tuple[int, str, str | None, str], str] = {}
    position = 0

    def flush() -> None:
        model.apply(records)
        records.clear()

    def add(at: datetime, events: list[AnyEvent]) -> None:
        nonlocal position
        position += 1
        records.append(Record(recorded_at=at, events=tuple(events), position=position))
        if len(records) >= 2_000:
            flush()

    start = NOW - timedelta(days=age_days)
    add(start, [EntityCreated(entity_id=f"e{i}", namespace="default", name=s, normalized=s)
                for i, s in enumerate(subjects)])  # fmt: skip
    for i in range(count):
        at = start + timedelta(seconds=age_days * 86_400 * i / count)
        kind = rng.random()
        replaced: list[AnyEvent] = []
        agent = rng.choice(AGENTS)
        visibility = "private" if agent and rng.random() < 0.5 else "shared"
        common: dict[str, Any] = {
            "memory_id": f"m{i:07d}", "namespace": "default", "t_valid": at,
            "agent_id": agent, "visibility": visibility,
        }  # fmt: skip
        if kind < 0.6:
            event = MemoryStored(memory_type="episodic",
                                 body=MemoryBody(content=f"incident {i} on host {i % 97}"),
                                 **common)  # fmt: skip
        elif kind < 0.9:
            s = rng.randrange(len(subjects))
            p = rng.choice(PREDICATES)
            multi = rng.random() < 0.5
            event = MemoryStored(
                memory_type="semantic", entity_ids=(f"e{s}",),
                body=MemoryBody(subject=subjects[s], predicate=p, predicate_normalized=p,
                                object=f"value {rng.randrange(50)}"),
                multi_valued=multi, **common,
            )  # fmt: skip
            # A new value of a single-valued fact replaces the one before, as a store does
            # (in one scope; a private value never replaces a shared one), and now and then
            # both stand, as when an agent's store raced another's.
            key = (s, p, agent if visibility == "private" else None, visibility)
            before = None if multi else current.get(key)
            if not multi:
                current[key] = common["memory_id"]
            if before is not None and rng.random() < 0.98:
                replaced = [
                    MemorySuperseded(
                        memory_id=before,
                        namespace="default",
                        t_invalid=at,
                        superseded_by=event.memory_id,
                    )
                ]
        else:
            event = MemoryStored(memory_type="procedural",
                                 body=MemoryBody(procedure_name=f"runbook {i % 300}",
                                                 steps=("check", "restart")), **common)  # fmt: skip
        add(at, [event, *replaced])
        later = min(NOW, at + timedelta(days=rng.uniform(0, age_days)))
        if rng.random() < 0.2:
            add(later, [MemoriesAccessed(accesses=(Access(f"m{i:07d}", later, 1),))])
        if rng.random() < 0.1:
            add(later, [MemoriesValidated(memory_ids=(f"m{i:07d}",), at=later)])
    flush()
    model.close()


def cpu_and_answer(call: Callable[[], Any]) -> tuple[float, Any]:
    """The CPU time of one call (this process's: wall time on a loaded machine would
    measure the other processes) and its answer."""
    took = harness.timed(call)
    return took.cpu, took.value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--ages", default="30,400", help="days the store times spread over")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per home")
    parser.add_argument("--seed", type=int, default=7)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    config = StalenessConfig()
    now = NOW.timestamp()
    for age in (int(a) for a in args.ages.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "rm.sqlite"
            took, _ = cpu_and_answer(lambda: build(path, args.memories, age, args.seed))  # noqa: B023
            rm = ReadModel.open(path, rules=RULES)
            old_enough = sum(
                c.n
                for t in ("episodic", "semantic", "procedural")
                for c in rm.insight.label_counts(
                    LabelQuery("default", t, scoring(config.base, t),
                               clock_bound(config.base, t, now), now),
                    rarely_below=RARELY_RECALLED,
                )
            )  # fmt: skip
            seen = stats(rm, Sight(None, now), config, namespace=None, detailed=True)
            print(f"home: {rm.count()} memories over {age} days, built in {took:.1f} s CPU; "
                  f"{old_enough} old enough to be labelled in SQL; the operator sees "
                  f"{seen['needs_attention']}", flush=True)  # fmt: skip
            for agent in (None, "alice"):
                sight = Sight(agent, now)
                keys = ("stats", "old stats", "reflect", "old reflect")
                sides: dict[str, list[float]] = {k: [] for k in keys}
                for _ in range(args.rounds):
                    t1, new = cpu_and_answer(lambda: stats(rm, sight, config, namespace=None,  # noqa: B023
                                                  detailed=True))  # fmt: skip
                    t2, old = cpu_and_answer(lambda: old_stats(rm, sight, config, None))  # noqa: B023
                    assert new == old, "stats differ from the old path"
                    t3, new = cpu_and_answer(lambda: reflect(rm, sight, config, namespace=None))  # noqa: B023
                    t4, old = cpu_and_answer(lambda: old_reflect(rm, sight, config, None, 10))  # noqa: B023
                    assert new == old, "reflect differs from the old path"
                    for key, t in zip(sides, (t1, t2, t3, t4), strict=True):
                        sides[key].append(t)
                med = {k: statistics.median(v) * 1000 for k, v in sides.items()}
                parts = [
                    f"{k} {med[k]:8.1f} ms CPU (old {med['old ' + k]:8.1f} ms, "
                    f"x{med['old ' + k] / med[k]:.1f})"
                    for k in ("stats", "reflect")
                ]
                print(f"  {agent or 'operator':8} " + "   ".join(parts)
                      + f"   medians of {args.rounds} alternating rounds; answers identical",
                      flush=True)  # fmt: skip
            rm.close()


if __name__ == "__main__":
    main()
