"""What lifecycle marks cost: the sweep's idle check, a sweep, recall with marks.

    python -m tools.bench_lifecycle [--memories 2000] [--expiring 200] [--queries 50]

Builds a home of ``--memories`` distinct memories through the import path
(``store_many``), ``--expiring`` of them with a ttl of one hour and a tenth of the rest
pinned with an importance of 0.9, then measures in-process through the composition root:

- the owner's idle check (``Writer.sweep_due`` when nothing is due: one indexed query);
- recall latency (cached query vectors) before and after the expiring memories expire
  (recall hides them itself until the sweep);
- one sweep forgetting every expired memory (one ``memories.forgotten`` per namespace).

Expiry is reached without waiting: recall and the sweep are given a clock an hour and a
second ahead. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ferrex.app import App
from ferrex.config import load
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from tools import harness
from tools.bench_recall import text


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--expiring", type=int, default=200)
    parser.add_argument("--queries", type=int, default=50)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    rng = random.Random(18)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        app = App(home=home, config=load(home, env={}))
        try:
            requests = []
            for i in range(args.memories):
                marks: dict[str, object] = {}
                if i < args.expiring:
                    marks = {"ttl": "1h"}
                elif i % 10 == 0:
                    marks = {"pinned": True, "importance": 0.9}
                requests.append(StoreRequest(content=text(rng, i), **marks))  # type: ignore[arg-type]
            built = time.perf_counter()
            app.writer().store_many(requests, chunk=512)
            print(f"built {args.memories} memories in {_ms(built) / 1000:.1f} s")

            idle = []
            for _ in range(20):
                start = time.perf_counter()
                assert app.writer().sweep_due() == 0
                idle.append(_ms(start))
            print(f"idle sweep check (nothing due): median {statistics.median(idle):.2f} ms")

            reader = app.reader()
            queries = [text(rng, i) for i in range(args.queries)]
            for q in queries:  # warm the query vectors
                reader.recall(RecallRequest(query=q))

            def recall_ms() -> float:
                times = []
                for q in queries:
                    start = time.perf_counter()
                    reader.recall(RecallRequest(query=q, limit=10))
                    times.append(_ms(start))
                return statistics.median(times)

            before = recall_ms()
            later = datetime.now(UTC) + timedelta(hours=1, seconds=1)
            reader.clock = lambda: later
            expired = recall_ms()
            writer = app.writer()
            writer.clock = lambda: later
            start = time.perf_counter()
            forgotten = len(writer.sweep_expired().forgotten)
            sweep = _ms(start)
            after = recall_ms()
            again = recall_ms()  # the same again: is a difference the sweep's, or noise?
            print(f"recall median: {before:.1f} ms; with {args.expiring} expired, unswept: "
                  f"{expired:.1f} ms; after the sweep: {after:.1f} ms, "
                  f"then {again:.1f} ms")  # fmt: skip
            print(f"sweep forgetting {forgotten} memories: {sweep:.1f} ms")
        finally:
            app.close()


if __name__ == "__main__":
    main()
