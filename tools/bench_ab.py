"""Two versions of ferrex side by side on the same home: recall and store, interleaved.

    python -m tools.bench_ab --home DIR --base TREE [--queries 200] [--stores 50] [--facts 0]
        [--paced 0 --gap 1.5]

A comparison taken in two runs at two moments measures the machine as much as the code. This
one runs both sides at once, in two worker processes: this tree (B) and another checkout
``--base TREE`` (A, for example ``git archive <commit> | tar -x -C /tmp/base``), each on its
own fresh copy of ``--home`` (a home built by ``python -m tools.bench --reuse``, whose embedding
cache then serves the stored texts), and with a model cache of its own
(``~/.cache/ferrex-ab/A`` and ``B``, kept warm across runs). Every call goes to both sides
in turn, the side that goes first alternating, so a burst of other work falls on both. Each
worker reports the process CPU time of the call (all its threads: ONNX Runtime and Qdrant
Edge included) and its wall time; at the end its resident memory (total, anonymous,
file-backed). Recalls are new query texts (each one embedded), five results, nothing
trimmed; stores are new, distinct episodic memories, each fsynced; with ``--facts N``, N facts
after them (five subjects stated again with new objects, as ``tools/profile_store.py`` stores
them), reported apart; with ``--paced N``, N more stores ``--gap`` seconds apart (an agent's
pace, which a tight loop of stores does not show: work a store leaves for later, such as a
flush due a second after the last, falls on the next store only when it comes that much
later). The output gives medians per side and the ratio B / A. Speed is reported, never
asserted.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any


def _worker(tree: Path, home: Path) -> None:
    """Serve calls read as JSON lines on stdin; answer each with its CPU and wall time."""
    # The point of a side: the ferrex of ``tree`` (this checkout, or the ``--base`` one) is
    # imported first, so the worker runs that version. Nothing of ferrex is imported before.
    sys.path.insert(0, str(tree))
    from ferrex.app import App
    from ferrex.config import load

    # the name recall.py holds in every tree (imported there since read/request.py)
    RecallRequest = importlib.import_module("ferrex.read.recall").RecallRequest
    from ferrex.rules.memory_input import StoreRequest

    app = App(home=home, config=load(home, env={}))
    reader, writer = app.reader(), app.writer()
    reader.recall(RecallRequest(query="warm up the model", min_relevance=0))
    out = sys.stdout
    import ferrex

    out.write(json.dumps({"ready": True, "code": str(Path(ferrex.__file__).parent)}) + "\n")
    out.flush()
    for line in sys.stdin:
        call = json.loads(line)
        cpu, wall = time.process_time(), time.perf_counter()
        if call["op"] == "recall":
            reader.recall(RecallRequest(query=call["text"], limit=5, min_relevance=0))
        elif call["op"] in ("store", "paced"):
            writer.store(StoreRequest(content=call["text"]))
        elif call["op"] == "fact":
            subject, obj = call["text"].split("|", 1)
            writer.store(StoreRequest(type="semantic", subject=subject, predicate="runs on",
                                      object=obj))  # fmt: skip
        else:
            break
        answer = {
            "cpu_ms": (time.process_time() - cpu) * 1000,
            "wall_ms": (time.perf_counter() - wall) * 1000,
        }
        out.write(json.dumps(answer) + "\n")
        out.flush()
    app.close()


class Side:
    def __init__(self, name: str, tree: Path, home: Path, cache: Path) -> None:
        self.name = name
        # A cache of its own: two versions keep their own saved model graphs (each removes
        # graphs of the same model it did not write).
        env = {**os.environ, "FERREX_CACHE_DIR": str(cache)}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(tree), str(home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tree,
            env=env,
        )
        self.calls: dict[str, list[dict[str, float]]] = {
            "recall": [], "store": [], "fact": [], "paced": []
        }  # fmt: skip
        self.memory: dict[str, float] = {}
        ready = json.loads(self._read())
        assert ready.get("ready")
        self.code = str(ready["code"])

    def _read(self) -> str:
        stdout: IO[str] | None = self.proc.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            raise SystemExit(f"side {self.name}: the worker stopped (exit {self.proc.wait()})")
        return line

    def call(self, op: str, text: str) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps({"op": op, "text": text}) + "\n")
        stdin.flush()
        self.calls[op].append(json.loads(self._read()))

    def finish(self) -> None:
        """Read the worker's resident memory (MB: in all, anonymous, file-backed), then end it."""
        from tools.bench_million import parse_status

        status = parse_status(Path(f"/proc/{self.proc.pid}/status").read_text())
        wanted = {"VmRSS": "rss", "RssAnon": "anonymous", "RssFile": "file"}
        self.memory = {name: status[key] / 2**20 for key, name in wanted.items() if key in status}
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps({"op": "end"}) + "\n")
        stdin.flush()
        self.proc.wait()


def _median(calls: list[dict[str, float]], key: str) -> float:
    return statistics.median(c[key] for c in calls) if calls else float("nan")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    # Imported here, not above: a worker (run as this file) imports nothing but its tree's ferrex.
    from tools import harness
    from tools.bench_journal import WORDS

    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, required=True, help="a built home (copied per side)")
    parser.add_argument("--base", type=Path, required=True, help="the other tree (side A)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--stores", type=int, default=50)
    parser.add_argument(
        "--facts", type=int, default=0,
        help="facts stored after the notes, as tools/profile_store.py stores them (a few "
        "subjects stated again with new objects), reported apart",
    )  # fmt: skip
    parser.add_argument(
        "--paced", type=int, default=0,
        help="stores after the facts, --gap seconds apart, as an agent stores between its "
        "other work (reported apart as 'paced')",
    )  # fmt: skip
    parser.add_argument("--gap", type=float, default=1.5, help="seconds between paced stores")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    harness.add_arguments(parser)
    args = parser.parse_args()
    if not (args.base / "ferrex" / "app.py").is_file():
        parser.error(f"--base {args.base} is not a ferrex tree (no ferrex/app.py)")
    if not args.home.is_dir():
        parser.error(f"--home {args.home} does not exist")
    harness.begin(args)
    rng = random.Random(args.seed)
    stamp = time.time_ns()
    with tempfile.TemporaryDirectory(prefix="ferrex-ab-") as tmp:
        homes = {}
        for name in ("A", "B"):
            homes[name] = harness.home_copy(args.home, Path(tmp), name)
        caches = Path.home() / ".cache" / "ferrex-ab"
        sides = [
            Side("A", args.base.resolve(), homes["A"], caches / "A"),
            Side("B", harness.ROOT, homes["B"], caches / "B"),
        ]
        queries = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(args.queries)]
        for i, query in enumerate(queries):
            for side in sides if i % 2 == 0 else sides[::-1]:
                side.call("recall", query)
        for i in range(args.stores):
            content = " ".join(rng.choice(WORDS) for _ in range(14))
            for side in sides if i % 2 == 0 else sides[::-1]:
                side.call("store", f"{content} (ab note {i} {stamp})")
        for i in range(args.facts):
            fact = f"service-{i % 5}|host {i} of run {stamp}"
            for side in sides if i % 2 == 0 else sides[::-1]:
                side.call("fact", fact)
        for i in range(args.paced):
            time.sleep(args.gap)
            content = " ".join(rng.choice(WORDS) for _ in range(14))
            for side in sides if i % 2 == 0 else sides[::-1]:
                side.call("paced", f"{content} (ab paced note {i} {stamp})")
        for side in sides:
            side.finish()
    a, b = sides
    print(f"A runs {a.code}, B runs {b.code}; home {args.home} copied per side")
    print("| median ms | A cpu | B cpu | B/A cpu | A wall | B wall | B/A wall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    figures: dict[str, Any] = {}
    for op in ("recall", "store", "fact", "paced"):
        if not a.calls[op]:
            continue
        row = {
            f"{s.name}_{k}": _median(s.calls[op], f"{k}_ms") for s in sides for k in ("cpu", "wall")
        }
        figures[op] = row
        print(
            f"| {op} (n={len(a.calls[op])}) | {row['A_cpu']:.1f} | {row['B_cpu']:.1f} | "
            f"{row['B_cpu'] / row['A_cpu']:.2f} | {row['A_wall']:.1f} | {row['B_wall']:.1f} | "
            f"{row['B_wall'] / row['A_wall']:.2f} |"
        )
    for s in sides:
        m = s.memory
        print(
            f"{s.name} resident after the calls: {m.get('rss', 0):.0f} MB "
            f"({m.get('anonymous', 0):.0f} anonymous, {m.get('file', 0):.0f} file-backed)"
        )
    figures["memory"] = {s.name: s.memory for s in sides}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
