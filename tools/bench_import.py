"""An import as the user waits for it, beside the bare encoder on the same texts, in one run.

    python -m tools.bench_import [--texts 2000] [--rounds 3] [--noisy]

Each round runs both sides, alternating which goes first:

- **import**: ``ferrex import FILE --json`` in a subprocess, into a fresh data directory (so
  every text is embedded: the embedding cache lives in the data directory), timed from the
  process's start to its exit: start-up, model load, validation, embedding, decisions,
  journal appends and projections all included.
- **bare**: :class:`ferrex.models.encoder.OnnxEncoder` in this process on the same texts
  (``run``: one batched tokenize, sorted by length, batches as the encoder plans them),
  with the session settings ferrex's own loading gives it (threads included), the model
  loaded beforehand and not timed.

It prints texts/s of each side per round and the ratio import/bare per round and of the
medians; and the CPU seconds of each side (the import's from its process's rusage, the bare
encoder's of this process while it runs), whose ratio bare/import says what share of the
import's CPU the model's own work is: on a loaded machine a steadier figure than the wall
rates, though not the one the user waits for.

The texts are short generated notes (6 to 20 words), different in every round so
the shared vector cache of one round never serves the next. The per-user model cache (the
assembled model and its optimised graph) is warmed before the first round, as it is for a
user's second command, and so is the bytecode of each tree imported (``compileall`` before
the first round): under ``PYTHONDONTWRITEBYTECODE`` every import would otherwise compile
ferrex's own modules again (about 0.35 s of CPU), which an installed ferrex never does.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools import harness

WORDS = [
    "meeting",
    "project",
    "deadline",
    "release",
    "server",
    "database",
    "backup",
    "invoice",
    "customer",
    "schedule",
    "review",
    "budget",
    "design",
    "sprint",
    "bug",
    "report",
    "deploy",
    "staging",
    "office",
    "travel",
    "lunch",
    "call",
    "vendor",
    "contract",
    "draft",
    "slides",
    "training",
    "hiring",
    "laptop",
    "password",
    "policy",
    "network",
    "outage",
    "migration",
    "roadmap",
    "feedback",
    "survey",
    "launch",
    "partner",
    "quarter",
    "metrics",
    "incident",
    "on-call",
]
#: The ``ferrex`` command, run by this interpreter (whatever ``ferrex`` package it imports).
FERREX = (sys.executable, "-c", "from ferrex.cli import main; main()")
VERBS = [
    "moved",
    "opened",
    "closed",
    "fixed",
    "asked",
    "planned",
    "shipped",
    "noted",
    "cancelled",
    "changed",
]


def texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    made = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 19))]
        words.insert(rng.randint(1, len(words)), rng.choice(VERBS))
        made.append(f"{' '.join(words)} #{seed}-{i}")
    return made


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_env(tree: Path | None) -> dict[str, str]:
    """The environment of a child that runs ``tree`` (or this tool's own tree) in the scratch
    directory: the tree first on the path. ``python -c`` puts its working directory before
    PYTHONPATH, so a child run from inside one tree would import that tree on both sides."""
    first = tree if tree is not None else harness.ROOT
    path = os.pathsep.join([str(first), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path}


def timed_import(
    lines: list[str], work: Path, tree: Path | None = None
) -> tuple[float, float, dict[str, int]]:
    """Wall seconds and CPU seconds of one ``ferrex import`` (of the source tree ``tree``
    if given: another version, first on the import path), and its counts."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
    source = work / f"{home.name}.jsonl"
    source.write_text("".join(json.dumps({"content": t}) + "\n" for t in lines))
    env = {**child_env(tree), "FERREX_HOME": str(home)}
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(
        [*FERREX, "import", str(source), "--json"],
        env=env, cwd=work, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"ferrex import failed ({done.returncode}): {done.stderr[-2000:]}")
    counts: dict[str, int] = json.loads(done.stdout)["counts"]
    return seconds, cpu, counts


def imported_from(tree: Path | None, work: Path) -> str:
    """Where a child run as :func:`timed_import` runs it imports ferrex from (printed, so a
    side that ran the wrong tree shows)."""
    done = subprocess.run(
        [sys.executable, "-c", "import ferrex; print(ferrex.__file__)"],
        env=child_env(tree), cwd=work, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return str(Path(done.stdout.strip()).parent)


def compiled(tree: Path) -> None:
    """Write the bytecode of the tree's three packages, as an install does, so that an
    import does not compile them from source."""
    for package in ("ferrex", "journal", "projections"):
        compileall.compile_dir(tree / package, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--against", type=Path, metavar="TREE",
        help="also import with the ferrex of this source tree (e.g. `git archive main` "
        "unpacked), a third side in the same rotation: before and after in one run",
    )  # fmt: skip
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)

    import ferrex
    from ferrex.models.choice import choose_embedding_model
    from ferrex.models.encoder import OnnxEncoder
    from ferrex.models.identity import INT8_ACTIVATIONS
    from ferrex.models.loading import load_model, local_source

    with tempfile.TemporaryDirectory(prefix="bench-import-") as scratch:
        work = Path(scratch)
        choice = choose_embedding_model("small", {})
        # Assembles the model and builds its optimised graph; its session's settings and its
        # arithmetic are the bare side's, so that both sides run the model as ferrex runs it.
        settings = load_model(choice, work / "warm").session_settings
        source = local_source(choice)
        assert source is not None and settings is not None
        encoder = OnnxEncoder(
            source, "model.onnx", mean_pooling=True, settings=settings,
            int8_activations=choice.variant == INT8_ACTIVATIONS,
        )  # fmt: skip
        compiled(Path(ferrex.__file__).resolve().parent.parent)  # the one this side imports
        if args.against is not None:
            compiled(args.against)
        print(f"import side runs {imported_from(None, work)}", flush=True)
        if args.against is not None:
            print(f"against side runs {imported_from(args.against, work)}", flush=True)
        timed_import(texts(50, seed=999), work)  # the interpreter's and the OS's caches
        if args.against is not None:
            timed_import(texts(50, seed=998), work, args.against)
        print(f"{args.texts} texts a side, {args.rounds} rounds, {settings.intra_op_threads} "
              f"intra-op threads, batches on {settings.callers} threads", flush=True)  # fmt: skip
        imports: list[float] = []
        bares: list[float] = []
        cpu_ratios: list[float] = []
        for round_ in range(args.rounds):
            lines = texts(args.texts, seed=round_)
            sides = ["import", "bare"] + (["against"] if args.against else [])
            sides = sides[round_ % len(sides) :] + sides[: round_ % len(sides)]
            rates: dict[str, float] = {}
            cpus: dict[str, float] = {}
            for side in sides:
                if side in ("import", "against"):
                    tree = args.against if side == "against" else None
                    seconds, cpu, counts = timed_import(lines, work, tree)
                    if counts.get("stored", 0) != len(lines):
                        raise SystemExit(f"the import did not store every text: {counts}")
                else:
                    started, cpu = time.perf_counter(), time.process_time()
                    encoder.run(lines)
                    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
                rates[side] = len(lines) / seconds
                cpus[side] = cpu
            imports.append(rates["import"])
            bares.append(rates["bare"])
            cpu_ratios.append(cpus["bare"] / cpus["import"])
            print(
                f"round {round_ + 1} ({' then '.join(sides)}): import {rates['import']:.1f} "
                f"texts/s, bare encoder {rates['bare']:.1f} texts/s, ratio "
                f"{rates['import'] / rates['bare']:.3f}; CPU s import {cpus['import']:.1f}, "
                f"bare {cpus['bare']:.1f} (bare/import {cpu_ratios[-1]:.3f})  "
                + (
                    f"; against: {rates['against']:.1f} texts/s, CPU s {cpus['against']:.1f} "
                    f"(this/against wall {rates['import'] / rates['against']:.3f}, CPU "
                    f"{cpus['against'] / cpus['import']:.3f})"
                    if "against" in rates
                    else ""
                )
                + f"  [{harness.load_line()}]",
                flush=True,
            )
        ratios = [a / b for a, b in zip(imports, bares, strict=True)]
        print(
            f"median: import {statistics.median(imports):.1f} texts/s, bare "
            f"{statistics.median(bares):.1f} texts/s; ratio of medians "
            f"{statistics.median(imports) / statistics.median(bares):.3f}, median ratio "
            f"{statistics.median(ratios):.3f}; CPU bare/import median "
            f"{statistics.median(cpu_ratios):.3f}"
        )


if __name__ == "__main__":
    main()
