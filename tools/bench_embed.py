"""Benchmark dense embedding: the previous path (fastembed) against ferrex's own, in one run.

Usage: ``nice -n 10 .venv/bin/python -m tools.bench_embed [--rounds N] [--variants]
[--home DIR --stores N]``.

Both paths load the bundled all-MiniLM-L6-v2 in this process. The previous path is what
``Embedder.embed_many`` did before: texts sorted by character count, then fastembed's
``embed`` in batches of 64 on its default ONNX session. The current path is
:class:`~ferrex.models.encoder.OnnxEncoder` as the default tier runs it (8-bit activations),
beside the same encoder in float32 (``small-float``). Rounds alternate which path goes first and the
ratio is taken per round, so a change in the machine's load hits both; medians are reported,
with the load average before and after. ``--variants`` adds session settings (threads,
spinning) to the table.

The ceiling: FLOPs per text are counted from the model's shapes (2 x weights x tokens for the
matrix products, plus attention's 4 x tokens^2 x width per layer), and the machine's float32
GFLOP/s is measured with numpy matrix products of the model's own shapes.

``--home DIR`` (a data directory, e.g. one ``tools/bench_recall.py`` builds) adds store latency
in-process: two fresh copies of DIR, one per path, stores alternating between them, so both
see the same load. Each store is a new, distinct memory, fsynced. ``--imports N`` adds the
import path: N new memories through ``store_many`` into a fresh home, per path, twice,
alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ferrex.app import App
from ferrex.config import load
from ferrex.models.choice import choose_embedding_model
from ferrex.models.encoder import OnnxEncoder, SessionSettings, usable_cores
from ferrex.models.identity import INT8_ACTIVATIONS
from ferrex.models.loading import LoadedModel, Runner, load_model
from ferrex.rules.memory_input import StoreRequest
from tools import harness

LAYERS, WIDTH, FFN = 6, 384, 1536  # all-MiniLM-L6-v2
GOLDEN = harness.ROOT / "golden_set" / "memories.jsonl"


def vocabulary() -> list[str]:
    """Words from the golden set's memories: text that tokenizes like real memories."""
    words: list[str] = []
    for line in GOLDEN.read_text(encoding="utf-8").splitlines():
        for value in json.loads(line).values():
            if isinstance(value, str):
                words.extend(value.split())
    return words


def make_texts(count: int, low: int, high: int, count_tokens: Callable[[str], int | None],
               seed: int) -> list[str]:  # fmt: skip
    """``count`` texts of ``low`` to ``high`` tokens (special tokens included), uniformly."""
    rng = random.Random(seed)
    words = vocabulary()
    texts: list[str] = []
    while len(texts) < count:
        target = rng.randint(low, high)
        text = f"note {len(texts)}:"
        while (count_tokens(text) or 0) < target:
            text += " " + rng.choice(words)
        while (count_tokens(text) or 0) > target:
            text = text.rsplit(" ", 1)[0]
        texts.append(text)
    return texts


def flops_per_text(tokens: float) -> float:
    per_layer = 2 * (4 * WIDTH * WIDTH + 2 * WIDTH * FFN) * tokens + 4 * tokens * tokens * WIDTH
    return LAYERS * per_layer


def machine_gflops(rows: int) -> float:
    """Best float32 GFLOP per CPU-second of numpy matrix products shaped like the model's
    (``rows`` tokens by the width, times the feed-forward weights): what one core does when it
    runs, whatever else the machine is doing."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, WIDTH), dtype=np.float32)
    b = rng.standard_normal((WIDTH, FFN), dtype=np.float32)
    best = 0.0
    for _ in range(20):
        started = time.process_time()
        for _ in range(10):
            a @ b
        seconds = time.process_time() - started
        best = max(best, 10 * 2 * rows * WIDTH * FFN / seconds / 1e9)
    return best


def previous_path(model: LoadedModel) -> Callable[[Sequence[str]], object]:
    return lambda texts: model.run(sorted(texts, key=len), 64)


def store_latency(home: Path, stores: int) -> dict[Runner, list[float]]:
    """Milliseconds per store on a copy of ``home`` per path, stores alternating."""
    work = Path(tempfile.mkdtemp(prefix="ferrex-bench-embed-store-"))
    apps: dict[Runner, App] = {}
    for runner in ("fastembed", "direct"):
        copy = harness.home_copy(home, work, runner)
        app = App(home=copy, config=load(copy, env={}))
        app.embedder().runner = runner
        app.writer().store(StoreRequest(content=f"warm-up store {time.time_ns()}"))
        apps[runner] = app
    samples: dict[Runner, list[float]] = {runner: [] for runner in apps}
    rng = random.Random(3)
    words = vocabulary()
    try:
        for i in range(stores):
            for runner, app in apps.items():
                content = f"note {i}: {' '.join(rng.choice(words) for _ in range(14))}"
                request = StoreRequest(content=f"{content} ({runner} {time.time_ns()})")
                started = time.perf_counter()
                app.writer().store(request)
                samples[runner].append((time.perf_counter() - started) * 1000)
    finally:
        for app in apps.values():
            app.close()
        shutil.rmtree(work, ignore_errors=True)
    return samples


def import_rates(count: int, rounds: int = 2) -> dict[Runner, list[float]]:
    """Memories per second imported through ``store_many`` into a fresh home, per path."""
    rates: dict[Runner, list[float]] = {"fastembed": [], "direct": []}
    words = vocabulary()
    for _ in range(rounds):
        for runner in rates:
            home = Path(tempfile.mkdtemp(prefix="ferrex-bench-embed-import-"))
            app = App(home=home, config=load(home, env={}))
            try:
                app.embedder().runner = runner
                app.embedder().model()
                rng = random.Random(11)
                requests = [
                    StoreRequest(
                        content=f"turn {i}: {' '.join(rng.choice(words) for _ in range(14))}"
                    )
                    for i in range(count)
                ]
                started = time.perf_counter()
                app.writer().store_many(requests, chunk=256)
                rates[runner].append(count / (time.perf_counter() - started))
            finally:
                app.close()
                shutil.rmtree(home, ignore_errors=True)
    return rates


def _memory(pid: int) -> str:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) // 1024
    return f"RSS {fields['VmRSS']} MB ({fields['RssAnon']} anonymous, {fields['RssFile']} file)"


def _child_pid() -> int:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            parts = stat.read_text().rsplit(")", 1)[1].split()
            if int(parts[1]) == os.getpid():
                return int(stat.parent.name)
    raise RuntimeError("the ferrex server process was not found")


async def server_memory(home: Path) -> None:
    """What a server on a copy of ``home`` holds in memory, and its first answers' times."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    copy = harness.home_copy(home, Path(tempfile.mkdtemp(prefix="ferrex-bench-embed-rss-")))
    ferrex = harness.FERREX
    params = StdioServerParameters(command=ferrex, args=["--home", str(copy)], env=dict(os.environ))
    rng = random.Random(5)
    words = vocabulary()
    try:
        async with Client(params, read_timeout_seconds=600) as client:
            pid = _child_pid()
            print(f"server started: {_memory(pid)}")
            started = time.perf_counter()
            bad = await client.call_tool("store", {"content": "   "})
            print(f"a bad first store answered in {time.perf_counter() - started:.2f} s "
                  f"(error: {bad.is_error})")  # fmt: skip
            started = time.perf_counter()
            first = await client.call_tool("store", {"content": f"first {time.time_ns()}"})
            body = first.structured_content or json.loads(first.content[0].text)  # type: ignore[union-attr]
            print(f"the first store answered in {time.perf_counter() - started:.2f} s, "
                  f"warnings {body.get('warnings')}; {_memory(pid)}")  # fmt: skip
            for i in range(30):
                content = f"note {i}: {' '.join(rng.choice(words) for _ in range(14))}"
                await client.call_tool("store", {"content": f"{content} {time.time_ns()}"})
                await client.call_tool("recall", {"query": " ".join(rng.sample(words, 5))})
            print(f"after 30 stores and 30 recalls: {_memory(pid)}")
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--short", type=int, default=512, help="short texts per round")
    parser.add_argument("--long", type=int, default=96, help="long texts per round")
    parser.add_argument("--variants", action="store_true", help="also time session settings")
    parser.add_argument("--home", type=Path, help="a data directory to time stores on")
    parser.add_argument("--stores", type=int, default=60, help="stores per path with --home")
    parser.add_argument("--imports", type=int, default=0, help="memories to import per path")
    parser.add_argument("--server-rss", action="store_true", help="a server's memory (--home)")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}; cores usable: "
          f"{usable_cores()}")  # fmt: skip
    home = Path(tempfile.mkdtemp(prefix="ferrex-bench-embed-"))
    choice = choose_embedding_model("small", {})
    old = load_model(choice, home, runner="fastembed")
    new = load_model(choice, home)
    assert new.source is not None
    count = old.count_tokens
    sets = {
        "short (5-40 tokens)": make_texts(args.short, 5, 40, count, seed=1),
        "long (60-256 tokens)": make_texts(args.long, 60, 256, count, seed=2),
    }
    in_float = load_model(choose_embedding_model("small-float", {}), home)
    paths: dict[str, Callable[[Sequence[str]], object]] = {
        "previous (fastembed)": previous_path(old),
        "current": lambda texts: new.run(texts, 64),
        "current in float32 (small-float)": lambda texts: in_float.run(texts, 64),
    }
    if args.variants:
        variants = {
            "current, 1 thread": SessionSettings(intra_op_threads=1),
            "current, spinning threads": SessionSettings(usable_cores(), spinning=True),
            "current, arena kept": SessionSettings(usable_cores(), shrink_arena=False),
            "current, no memory arena": SessionSettings(usable_cores(), memory_arena=False),
        }
        for label, settings in variants.items():
            paths[label] = OnnxEncoder(
                new.source, "model.onnx", mean_pooling=True, settings=settings,
                int8_activations=choice.variant == INT8_ACTIVATIONS,
            ).run  # fmt: skip
    one_at_a_time = sets["short (5-40 tokens)"][:64]
    rates: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    singles: dict[str, list[float]] = {name: [] for name in paths}
    singles_cpu: dict[str, list[float]] = {name: [] for name in paths}
    names = list(paths)
    for round_ in range(args.rounds):
        order = names if round_ % 2 == 0 else names[::-1]
        for set_name, texts in sets.items():
            for name in order:
                started, cpu_started = time.perf_counter(), time.process_time()
                paths[name](texts)
                rates.setdefault((set_name, name), []).append(
                    len(texts) / (time.perf_counter() - started)
                )
                cpu.setdefault((set_name, name), []).append(
                    len(texts) / (time.process_time() - cpu_started)
                )
        for name in order:
            for text in one_at_a_time:
                started, cpu_started = time.perf_counter(), time.process_time()
                paths[name]([text])
                singles[name].append((time.perf_counter() - started) * 1000)
                singles_cpu[name].append((time.process_time() - cpu_started) * 1000)
    base = names[0]
    mean_tokens = {
        set_name: statistics.fmean(count(t) or 0 for t in texts) for set_name, texts in sets.items()
    }
    peak = machine_gflops(rows=2048)
    print(f"numpy float32 matmul: {peak:.1f} GFLOP per CPU-second (best of 20)")
    print(f"{'texts':<22} {'path':<27} {'texts/s':>7} {'ratio':>6} {'per CPU-s':>9} {'ratio':>6} "
          f"{'GFLOP/CPU-s':>11} {'of numpy':>8}")  # fmt: skip
    for set_name in sets:
        per_text = flops_per_text(mean_tokens[set_name])
        for name in names:
            key, ref = (set_name, name), (set_name, base)
            rate = statistics.median(rates[key])
            ratio = statistics.median(a / b for a, b in zip(rates[key], rates[ref], strict=True))
            per_cpu = statistics.median(cpu[key])
            cpu_ratio = statistics.median(a / b for a, b in zip(cpu[key], cpu[ref], strict=True))
            gflops = per_cpu * per_text / 1e9
            print(f"{set_name:<22} {name:<27} {rate:7.0f} {ratio:5.2f}x {per_cpu:9.0f} "
                  f"{cpu_ratio:5.2f}x {gflops:11.1f} {gflops / peak:8.0%}")  # fmt: skip
    for set_name, tokens in mean_tokens.items():
        print(f"{set_name}: {tokens:.1f} tokens on average, "
              f"{flops_per_text(tokens) / 1e6:.0f} MFLOP per text")  # fmt: skip
    for name in names:
        print(f"one short text at a time, {name}: p50 {statistics.median(singles[name]):.1f} ms"
              f" wall, {statistics.median(singles_cpu[name]):.1f} ms CPU")  # fmt: skip
    if args.home is not None:
        print(f"load before the stores: {Path('/proc/loadavg').read_text().strip()}")
        for runner, ms in store_latency(args.home, args.stores).items():
            p95 = harness.percentile(ms, 0.95)
            print(f"store on {args.home.name}, {runner} path: p50 {statistics.median(ms):.1f} ms, "
                  f"p95 {p95:.1f} ms ({len(ms)} stores)")  # fmt: skip
    if args.server_rss and args.home is not None:
        asyncio.run(server_memory(args.home))
    if args.imports:
        print(f"load before the imports: {Path('/proc/loadavg').read_text().strip()}")
        for runner, values in import_rates(args.imports).items():
            print(f"import of {args.imports} memories, {runner} path: "
                  f"{statistics.median(values):.0f} memories/s")  # fmt: skip
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
