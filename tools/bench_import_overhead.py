"""What an import adds around the model, this tree beside another in one run: the CPU of
``Writer.store_many`` over texts whose vectors are all in the embedding cache already.

    python -m tools.bench_import_overhead --against TREE [--texts 2000] [--rounds 3] [--noisy]

:mod:`tools.bench_import` times the whole import beside the bare encoder; on a loaded
machine its wall rates are noise and even its CPU seconds carry the model's ~15 s. Here
every text's vector is cached first (an embedder's cache, shared by every home it opens;
not timed), so what is timed is only what ferrex does around the model: validation, the
decisions and their measures (the Qdrant queries), the journal appends, the projections.
Each side runs in its own process (``TREE`` first on the import path for the other), into
a fresh data directory, the order alternating by round. It prints each side's CPU seconds
(process, and the deciding thread alone) per round and the median ratio other/this, and
first where each side imports ferrex from: each runs in the scratch directory, since
``python -c`` puts its working directory before ``PYTHONPATH`` (until session 15 both sides
ran this tool's own tree whenever it was started from inside a checkout, so the "against"
figures it printed before then compared a tree with itself).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import harness
from tools.bench_import import child_env, imported_from, texts

#: One side, run in its own process: warm the cache, then time ``store_many``.
_SIDE = """
import json, sys, time
from pathlib import Path
from ferrex.app import App
from ferrex.config import load
from ferrex.models import Embedder, choose_embedding_model
from ferrex.rules.memory_input import StoreRequest
models, home = Path(sys.argv[1]), Path(sys.argv[2])
lines = json.loads(Path(sys.argv[3]).read_text())
embedder = Embedder(models, choose_embedding_model("small", {}))
embedder.embed_many(lines)
app = App(home=home, config=load(home, None), _embedder=embedder)
writer = app.writer()
cpu, main = time.process_time(), time.thread_time()
outcomes = writer.store_many([StoreRequest(content=t) for t in lines])
cpu, main = time.process_time() - cpu, time.thread_time() - main
stored = sum(1 for o in outcomes if getattr(o, "status", None) == "stored")
app.close()
print(json.dumps({"cpu": cpu, "main": main, "stored": stored}))
"""


def side(tree: Path | None, work: Path, lines: list[str]) -> dict[str, float]:
    env = child_env(tree)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
    source = home.with_suffix(".json")
    source.write_text(json.dumps(lines))
    done = subprocess.run(
        [sys.executable, "-c", _SIDE, str(work / "models"), str(home), str(source)],
        env=env, cwd=work, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"a side failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    if result["stored"] != len(lines):
        raise SystemExit(f"a side did not store every text: {result}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, metavar="TREE", required=True)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as scratch:
        work = Path(scratch)
        print(f"this side runs {imported_from(None, work)}", flush=True)
        print(f"against side runs {imported_from(args.against, work)}", flush=True)
        ratios: list[float] = []
        for round_ in range(args.rounds):
            lines = texts(args.texts, seed=round_)
            order = ["this", "against"] if round_ % 2 == 0 else ["against", "this"]
            got = {name: side(None if name == "this" else args.against, work, lines)
                   for name in order}  # fmt: skip
            ratios.append(got["against"]["cpu"] / got["this"]["cpu"])
            print(
                f"round {round_ + 1} ({' then '.join(order)}): CPU s this "
                f"{got['this']['cpu']:.2f} (deciding thread {got['this']['main']:.2f}), "
                f"against {got['against']['cpu']:.2f} ({got['against']['main']:.2f}); "
                f"against/this {ratios[-1]:.3f}  [{harness.load_line()}]",
                flush=True,
            )
        print(f"median CPU against/this {statistics.median(ratios):.3f} over {args.texts} texts")


if __name__ == "__main__":
    main()
