"""A million memories (issue 27): recall, store, stats, replay, disk and RSS at large sizes.

    python -m tools.bench_million [--sizes 100000,1000000] [--json FILE] [--profile PHASES]

For each size a home is built the fast honest way: the synthetic agent notes of
``tools/bench_replay.py`` (episodes, facts with supersedes, procedures, entities; generated
from word lists and templates with a fixed seed, never a shared data set) are appended to a
real journal in group commits, as ``ferrex`` would have journaled them, and the projections
(SQLite read model, Qdrant Edge with the real BM25) are built from it by ``App.replay``, the
path of ``ferrex replay``. Then, in a fresh process that opens the home as a server would:
recall p50/p95 of new query texts through ``Reader.recall``, before and after ``ferrex
optimize`` (the real command, run on this process's App); ``stats`` through the service (plain
and detailed); store p50 of new episodic memories through the real ``Writer`` (each fsynced);
disk per store; RSS, anonymous apart from file-backed pages (``/proc/self/status``).

The dense vectors are NOT the bundled model's: a stand-in embedder (a seeded random projection
of the texts' hashed word tokens, 384 dimensions, unit length, so texts sharing words get
near vectors) replaces it in this benchmark only, plugged in as the App's embedder the way
the tests pass one; nothing of ferrex changes. So every figure here leaves out the model's
time (about two thirds of a real store, ~13 ms a query on 2 cores) and its memory (~170 MB);
the output says so on its first lines, and gives the stand-in's own time apart.

Each phase runs in a process of its own (spawned), so the RSS of one is not the heap left
over by another. ``--profile replay,recall`` profiles those phases of the largest size with
cProfile, each in an extra pass after the measured one, and prints where the time went.
Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import dataclasses
import functools
import io
import json
import multiprocessing
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import Refused
from ferrex.models import Embedder
from ferrex.models.choice import BUNDLED_DIM, choose_embedding_model
from ferrex.models.identity import ModelIdentity
from ferrex.models.loading import LoadedModel, local_source
from ferrex.read.request import Legs, RecallRequest
from ferrex.rules.memory_input import StoreRequest
from ferrex.server.tool_calls import decode
from journal import Event, MemoryStored
from projections.documents import memory_text
from projections.generations import read_pointer
from tools import harness
from tools.bench_replay import (
    EPISODES,
    NAMESPACES,
    build_journal,
    profile_summary,
    size_of,
    slots,
    sqlite_files,
)
from tools.harness import Took, timed

STAND_IN_NOTE = (
    "VECTORS ARE A STAND-IN: dense vectors come from a seeded random projection of hashed "
    "word tokens (384 dims), not the bundled model; text, BM25, SQLite and Qdrant are real. "
    "Figures leave out the model's time and memory."
)
PROFILED = ("replay", "recall", "stats", "store")


def phase_list(text: str) -> frozenset[str]:
    """``--profile``'s value: phases, comma separated, each one of :data:`PROFILED`."""
    phases = frozenset(p.strip() for p in text.split(",") if p.strip())
    unknown = sorted(phases - set(PROFILED))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown phase {', '.join(unknown)}; phases: {', '.join(PROFILED)}"
        )
    return phases


# Memories are valid from dates spread over the two years before this (a fixed date, so a
# seed gives the same journal on any day).
HISTORY_END = datetime(2026, 11, 30, tzinfo=UTC)
HISTORY = timedelta(days=730)

# -- the stand-in embedder -------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+")


class HashProjection:
    """Texts to unit vectors: the sum of one fixed random vector per hashed word token.

    Deterministic for a seed (CRC-32 of the token, never Python's salted ``hash``); two texts
    sharing words get vectors whose cosine grows with what they share, which is what the
    dense leg and the HNSW index need to behave like they do on real vectors. Cheap: a table
    of ``buckets`` x ``dim`` float32 (6 MB by default) and one gather-and-sum per text.
    Counts the texts it embedded and the seconds it took, so a report can give them apart.
    """

    def __init__(self, dim: int = BUNDLED_DIM, buckets: int = 4096, seed: int = 27) -> None:
        rng = np.random.default_rng(seed)
        self.dim = dim
        self.buckets = buckets
        self.table = rng.standard_normal((buckets, dim), dtype=np.float32)
        self._bucket: dict[str, int] = {}
        self.texts = 0
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    def _rows(self, text: str) -> list[int]:
        rows = []
        for token in _TOKEN.findall(text.lower()):
            row = self._bucket.get(token)
            if row is None:
                row = zlib.crc32(token.encode()) % self.buckets
                if len(self._bucket) < 1_000_000:
                    self._bucket[token] = row
            rows.append(row)
        return rows or [0]

    def vectors(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """An ``(n, dim)`` float32 array of unit rows, row ``i`` for ``texts[i]``."""
        started, cpu = time.perf_counter(), time.process_time()
        summed = np.empty((len(texts), self.dim), dtype=np.float32)
        for first in range(0, len(texts), 64):  # small gathers stay in the CPU's caches
            rows = [self._rows(text) for text in texts[first : first + 64]]
            flat = np.fromiter((r for one in rows for r in one), dtype=np.intp)
            starts = np.cumsum([0] + [len(one) for one in rows[:-1]])
            summed[first : first + len(rows)] = np.add.reduceat(self.table[flat], starts, axis=0)
        norms = np.linalg.norm(summed, axis=1, keepdims=True)
        result: NDArray[np.float32] = (summed / np.maximum(norms, 1e-12)).astype(np.float32)
        self.texts += len(texts)
        self.seconds += time.perf_counter() - started
        self.cpu_seconds += time.process_time() - cpu
        return result

    def embed(self, texts: list[str], batch_size: int = 64) -> Iterator[NDArray[np.float32]]:
        """fastembed's ``TextEmbedding.embed`` shape, which ``LoadedModel.run`` calls."""
        yield from self.vectors(texts)


STAND_IN_IDENTITY = ModelIdentity(
    "bench-stand-in/hashed-token-projection", BUNDLED_DIM, "stand-in-4096-buckets-seed-27"
)


class StandInEmbedder(Embedder):
    """The real :class:`Embedder` (the bundled tokenizer counts tokens and checks windows as
    usual) whose model is a :class:`HashProjection`; no embedding cache (its vectors are not
    worth keeping, and a real cache's disk is not what this measures)."""

    def __init__(self, home: Path, projection: HashProjection) -> None:
        super().__init__(home, choose_embedding_model(None, {}), use_cache=False)
        self.projection = projection
        engine = cast(Any, projection)  # duck-typed as fastembed's TextEmbedding
        self._model = LoadedModel(STAND_IN_IDENTITY, local_source(self.choice), engine, 0.0)


def open_app(home: Path, projection: HashProjection) -> App:
    return App(home=home, config=load(home, env={}), _embedder=StandInEmbedder(home, projection))


# -- memory of this process ------------------------------------------------------------------

STATUS_KEYS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")


def parse_status(text: str) -> dict[str, int]:
    """The memory lines of ``/proc/PID/status`` we report, in bytes (the file says kB)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in STATUS_KEYS:
            number, _, unit = value.strip().partition(" ")
            found[key] = int(number) * (1024 if unit.strip() == "kB" else 1)
    return found


def memory_now() -> dict[str, int]:
    try:
        return parse_status(Path("/proc/self/status").read_text())
    except OSError:  # not Linux: nothing to report
        return {}


def mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f}"


# -- figures ---------------------------------------------------------------------------------


@dataclass
class Latency:
    calls: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    cpu_p50_ms: float

    @classmethod
    def of(cls, took: Sequence[Took[object]]) -> Latency:
        ms = [t.wall * 1000 for t in took]
        cpu = statistics.median(t.cpu * 1000 for t in took)
        return cls(len(ms), statistics.median(ms), harness.percentile(ms, 0.95), max(ms), cpu)

    def cell(self) -> str:
        return f"{self.p50_ms:.1f} / {self.p95_ms:.1f} ({self.cpu_p50_ms:.1f})"


# -- query texts -----------------------------------------------------------------------------

QUESTIONS = (
    "why did {service} fail on {env}",
    "{symptom} on {service} {env}",
    "what caused {inc}",
    "{cause} in {tool}",
    "who fixed {service} after {cause}",
    "how do I rotate {tool} credentials for {service}",
    "what does {service}-{small} depend on",
    "deploy of {service} {version} failed",
    "{person} and {tool} migration",
    "load test {service} rps",
)


def queries(rng: random.Random, samples: Sequence[tuple[str, str]], n: int) -> list[RecallRequest]:
    """``n`` recall requests no home holds as text: half questions from templates (in a random
    namespace), half six-word windows of a stored memory's text (in its namespace), no two
    alike (a query vector is never reused within a call)."""
    made: list[RecallRequest] = []
    texts: set[str] = set()
    i = 0
    while len(made) < n:
        i += 1
        if i % 2 == 0 or not samples:
            values = dict(slots(rng), small=rng.randrange(100))
            text = rng.choice(QUESTIONS).format(**values)
            namespace = rng.choice(NAMESPACES)
        else:
            stored, namespace = rng.choice(samples)
            words = stored.split()
            first = rng.randrange(max(1, len(words) - 6))
            text = " ".join(words[first : first + 6])
        if text not in texts:
            texts.add(text)
            made.append(RecallRequest(query=text, namespace=namespace, limit=5))
    return made


def new_note(rng: random.Random) -> StoreRequest:
    """A new episodic memory as an agent stores one: no source (so an episode is derived)."""
    text = " ".join(rng.choice(EPISODES).format(**slots(rng)) for _ in range(rng.randint(1, 2)))
    return StoreRequest(content=text, namespace=rng.choice(NAMESPACES), agent_id="claude-code")


# -- the phases (each in a process of its own) -----------------------------------------------


def profiled(run: Callable[[], object]) -> str:
    """Where ``run`` spends its time, by cProfile. Always an extra pass, after the measured
    one: no figure of the tables is taken under the profiler (it inflates Python code)."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        run()
    finally:
        profiler.disable()
    return profile_summary(profiler, 25)


@dataclass
class BuildResult:
    records: int
    memories: int
    entities: int
    supersedes: int
    types: dict[str, int]
    seconds: float
    cpu_seconds: float
    samples: list[tuple[str, str]]  # (memory text, namespace), for the query windows
    rss: dict[str, int]


def phase_build(home: Path, n: int, seed: int, group: int) -> BuildResult:
    rng = random.Random(seed + 1)
    samples: list[tuple[str, str]] = []
    seen = 0

    def sample(command: list[Event]) -> None:  # reservoir of 2,000 stored texts
        nonlocal seen
        for event in command:
            if isinstance(event, MemoryStored) and event.body is not None:
                seen += 1
                item = (memory_text(event.memory_type, event.body), event.namespace)
                if len(samples) < 2000:
                    samples.append(item)
                elif (slot := rng.randrange(seen)) < 2000:
                    samples[slot] = item

    step = HISTORY / max(1, n)

    cpu = time.process_time()
    built = build_journal(
        home / "journal", n, seed, 0.05, group, start=HISTORY_END - HISTORY, step=step,
        each=sample,
    )  # fmt: skip
    cpu = time.process_time() - cpu
    return BuildResult(
        built.records, built.memories, built.entities, built.supersedes, dict(built.types),
        built.seconds, cpu, samples, memory_now(),
    )  # fmt: skip


@dataclass
class ReplayResult:
    seconds: float
    cpu_seconds: float
    records: int
    stand_in_seconds: float
    stand_in_cpu_seconds: float
    stand_in_texts: int
    rss: dict[str, int]
    profile: str | None = None


def cpu_with_children() -> float:
    """CPU seconds of this process and of its children that have exited: a rebuild of many
    records applies the read model in a child process of its own."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def phase_replay(home: Path, profile: bool) -> ReplayResult:
    projection = HashProjection()
    app = open_app(home, projection)
    try:
        app.journal()  # opened before the clock starts, as `ferrex replay` has it by then
        started, cpu = time.perf_counter(), cpu_with_children()
        projections = app.replay()
        seconds, cpu = time.perf_counter() - started, cpu_with_children() - cpu
        records = projections.read_model.checkpoint()
        result = ReplayResult(
            seconds, cpu, records, projection.seconds, projection.cpu_seconds, projection.texts,
            memory_now(),
        )  # fmt: skip
        if profile:  # a second replay (a rebuild into a new generation), profiled
            result.profile = profiled(app.replay)
        return result
    finally:
        app.close()


@dataclass
class Sizes:
    journal: int
    sqlite: int
    qdrant_memories: int  # disk blocks (the segments are sparse, memory-mapped files)
    qdrant_memories_apparent: int
    qdrant_entities: int
    home: int

    @classmethod
    def of(cls, home: Path) -> Sizes:
        live = read_pointer(home)
        assert live is not None, "no live projections to measure"
        qdrant = home / "qdrant"
        memories = size_of(qdrant / live.memories)
        return cls(
            journal=size_of(home / "journal").allocated,
            sqlite=size_of(*sqlite_files(home / live.sqlite)).allocated,
            qdrant_memories=memories.allocated,
            qdrant_memories_apparent=memories.apparent,
            qdrant_entities=size_of(qdrant / live.entities).allocated,
            home=size_of(home).allocated,
        )


@dataclass
class ServeResult:
    """What a process serving the home measures, in order."""

    open_seconds: float = 0.0
    rss_open: dict[str, int] = field(default_factory=dict)
    recall_before: Latency | None = None
    legs_before: dict[str, Latency] = field(default_factory=dict)  # one leg alone
    legs_after: dict[str, Latency] = field(default_factory=dict)
    first_recall_ms: float = 0.0
    rss_recalled: dict[str, int] = field(default_factory=dict)
    optimize_seconds: float = 0.0
    optimize_cpu_seconds: float = 0.0
    optimized: dict[str, bool] = field(default_factory=dict)  # what the command said it did
    rss_optimized: dict[str, int] = field(default_factory=dict)  # its peak: optimize's
    recall_after: Latency | None = None
    dense_recall_at_10: float = 0.0  # of the HNSW over int8 copies, rescored, against exact
    stats: Latency | None = None
    stats_detailed: Latency | None = None
    stats_first_ms: float = 0.0
    store: Latency | None = None
    store_outcomes: dict[str, int] = field(default_factory=dict)
    rss_end: dict[str, int] = field(default_factory=dict)
    stand_in_ms_per_query: float = 0.0
    sizes_before_optimize: Sizes | None = None
    sizes_after: Sizes | None = None
    profiles: dict[str, str] = field(default_factory=dict)


def dense_recall(app: App, projection: HashProjection, requests: list[RecallRequest]) -> float:
    """The share of the 10 nearest memories by exact search (every float vector compared)
    that the dense leg's indexed search finds, over the queries' vectors, unfiltered."""
    from projections.qdrant_edge import EdgeBackend

    backend, live = app.backend(), read_pointer(app.home)
    assert isinstance(backend, EdgeBackend) and live is not None
    vectors = projection.vectors([r.query for r in requests])
    found = 0
    for v in vectors:
        exact = set(backend.nearest_ids(live.memories, v.tolist(), 10, exact=True))
        found += len(exact & set(backend.nearest_ids(live.memories, v.tolist(), 10, exact=False)))
    return found / (10 * len(requests))


def phase_serve(
    home: Path,
    samples: list[tuple[str, str]],
    n_queries: int,
    n_stores: int,
    n_stats: int,
    seed: int,
    profile: frozenset[str],
) -> ServeResult:
    """Open the home as a server would and measure recall, optimize, stats and stores."""
    from ferrex.cli.projections import optimize
    from ferrex.server.service import Caller, Service

    rng = random.Random(seed + 2)
    projection = HashProjection()
    result = ServeResult()
    app = open_app(home, projection)
    service = Service(app)
    try:
        result.open_seconds = timed(lambda: (app.projections(), app.reader())).wall
        result.rss_open = memory_now()
        result.sizes_before_optimize = Sizes.of(home)
        reader = app.reader()

        def recalls(requests: list[RecallRequest]) -> list[Took[object]]:
            return [timed(functools.partial(reader.recall, request)) for request in requests]

        def one_leg_recalls() -> dict[str, Latency]:
            """Diagnostics: recall with one leg alone (the later stages as usual), to see which
            leg's search the time goes to; the two alternate, half the queries each."""
            took: dict[str, list[Took[object]]] = {"dense": [], "bm25": []}
            for i, request in enumerate(queries(rng, samples, n_queries)):
                legs: Legs = "dense" if i % 2 == 0 else "bm25"
                took[legs].extend(recalls([dataclasses.replace(request, legs=legs)]))
            return {legs: Latency.of(t) for legs, t in took.items()}

        result.first_recall_ms = 1000 * recalls(queries(rng, samples, 1))[0].wall
        embedded_before = (projection.texts, projection.seconds)
        before = recalls(queries(rng, samples, n_queries))
        texts = projection.texts - embedded_before[0]
        if texts:
            result.stand_in_ms_per_query = 1000 * (projection.seconds - embedded_before[1]) / texts
        result.recall_before = Latency.of(before)
        say(f"  recall p50 / p95 ms (CPU p50), before optimize: {result.recall_before.cell()}")
        result.legs_before = one_leg_recalls()
        result.rss_recalled = memory_now()

        printed = io.StringIO()

        def run_optimize() -> None:
            with contextlib.redirect_stdout(printed):
                optimize.main(args=["--json"], obj=app, standalone_mode=False)

        started, cpu = time.perf_counter(), time.process_time()
        run_optimize()
        result.optimize_seconds = time.perf_counter() - started
        result.optimize_cpu_seconds = time.process_time() - cpu
        result.optimized = json.loads(printed.getvalue())["optimized"]
        result.rss_optimized = memory_now()
        say(f"  ferrex optimize: {result.optimize_seconds:.1f} s")
        result.recall_after = Latency.of(recalls(queries(rng, samples, n_queries)))
        say(f"  recall p50 / p95 ms (CPU p50), after optimize: {result.recall_after.cell()}")
        result.legs_after = one_leg_recalls()
        result.dense_recall_at_10 = dense_recall(app, projection, queries(rng, samples, n_queries))
        say(f"  dense leg's recall@10 against exact search: {result.dense_recall_at_10:.3f}")
        if "recall" in profile:
            more = queries(rng, samples, n_queries)
            result.profiles["recall after optimize"] = profiled(lambda: recalls(more))

        operator = Caller()

        plain: list[Took[object]] = []
        detailed: list[Took[object]] = []

        def stats_call(detailed: bool) -> Callable[[], object]:
            args = {"detailed": True} if detailed else {}
            return lambda: service.call(decode("stats", args), operator)

        def stats_calls() -> None:  # the two kinds alternate, so neither gets the warmer turn
            for _ in range(n_stats):
                plain.append(timed(stats_call(False)))
                detailed.append(timed(stats_call(True)))

        stats_calls()
        if "stats" in profile:
            plain_stats = stats_call(False)
            result.profiles["stats"] = profiled(lambda: [plain_stats() for _ in range(n_stats)])
        result.stats_first_ms = plain[0].wall * 1000
        result.stats = Latency.of(plain)
        result.stats_detailed = Latency.of(detailed)
        say(f"  stats p50 {result.stats.p50_ms:,.0f} ms (CPU {result.stats.cpu_p50_ms:,.0f})")

        writer = app.writer()
        outcomes: dict[str, int] = {}

        def store_into(answers: list[str], request: StoreRequest) -> None:
            # A random note may repeat one of a million stored: the refusal is an outcome.
            try:
                answers.append(writer.store(request).status)
            except Refused:
                answers.append("refused")

        def stores(count: int) -> list[Took[object]]:
            took: list[Took[object]] = []
            for _ in range(count):
                request = new_note(rng)
                answers: list[str] = []
                took.append(timed(functools.partial(store_into, answers, request)))
                outcomes[answers[0]] = outcomes.get(answers[0], 0) + 1
            return took

        store_into([], new_note(rng))  # the first store opens the writer's parts
        result.store = Latency.of(stores(n_stores))
        result.store_outcomes = dict(outcomes)
        say(f"  store p50 / p95 ms (CPU p50): {result.store.cell()}")
        result.rss_end = memory_now()
        if "store" in profile:
            result.profiles["store"] = profiled(lambda: stores(n_stores))
    finally:
        service.close()
    result.sizes_after = Sizes.of(home)
    return result


def in_child(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in a fresh spawned process; its result."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


# -- report ----------------------------------------------------------------------------------


@dataclass
class SizeResult:
    memories: int
    build: BuildResult
    replay: ReplayResult
    serve: ServeResult


def say(message: str = "") -> None:
    print(message, flush=True)


def table(results: Sequence[SizeResult]) -> str:
    lines = [
        "| memories | records | journal build s | replay s (records/s; per CPU-s) "
        "| recall p50 / p95 ms (CPU p50) | after `ferrex optimize` | optimize s "
        "| stats ms (CPU) | stats detailed ms | store p50 / p95 ms (CPU p50) "
        "| disk MB: journal / SQLite / Qdrant | RSS MB anon + file (after serving) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        s = r.serve
        assert s.recall_before and s.recall_after and s.stats and s.stats_detailed and s.store
        assert s.sizes_after is not None
        z = s.sizes_after
        rss = s.rss_end
        lines.append(
            f"| {r.memories:,} | {r.build.records:,} | {r.build.seconds:.1f} "
            f"| {r.replay.seconds:.1f} ({r.replay.records / r.replay.seconds:,.0f}; "
            f"{r.replay.records / r.replay.cpu_seconds:,.0f}) "
            f"| {s.recall_before.cell()} | {s.recall_after.cell()} | {s.optimize_seconds:.1f} "
            f"| {s.stats.p50_ms:,.0f} ({s.stats.cpu_p50_ms:,.0f}) "
            f"| {s.stats_detailed.p50_ms:,.0f} | {s.store.cell()} "
            f"| {mib(z.journal)} / {mib(z.sqlite)} / {mib(z.qdrant_memories + z.qdrant_entities)} "
            f"| {mib(rss.get('RssAnon'))} + {mib(rss.get('RssFile'))} |"
        )
    return "\n".join(lines)


def details(r: SizeResult) -> str:
    s = r.serve
    b, p = r.build, r.replay
    assert s.recall_before and s.recall_after and s.stats and s.stats_detailed and s.store
    z0, z = s.sizes_before_optimize, s.sizes_after
    assert z0 is not None and z is not None

    def rss(values: dict[str, int]) -> str:
        return (
            f"RSS {mib(values.get('VmRSS'))} MB = anon {mib(values.get('RssAnon'))} + file "
            f"{mib(values.get('RssFile'))} + shmem {mib(values.get('RssShmem'))}; "
            f"peak {mib(values.get('VmHWM'))} MB"
        )

    def legs(by_leg: dict[str, Latency]) -> str:
        return ", ".join(
            f"{leg} p50 {t.p50_ms:.1f} / p95 {t.p95_ms:.1f} ms" for leg, t in by_leg.items()
        )

    lines = [
        f"### {r.memories:,} memories",
        f"- journal: {b.records:,} records ({b.types}, {b.entities:,} entities, "
        f"{b.supersedes:,} supersedes) in {b.seconds:.1f} s, "
        f"{b.records / b.seconds:,.0f} records/s (CPU {b.cpu_seconds:.1f} s); "
        f"builder {rss(b.rss)}",
        f"- replay (`App.replay`, as `ferrex replay`): {p.seconds:.1f} s, "
        f"{p.records / p.seconds:,.0f} records/s; CPU {p.cpu_seconds:.1f} s "
        f"({p.records / p.cpu_seconds:,.0f} records per CPU-second, its child process's "
        f"included); of it the stand-in embedder {p.stand_in_seconds:.1f} s "
        f"(CPU {p.stand_in_cpu_seconds:.1f} s) for "
        f"{p.stand_in_texts:,} texts; {rss(p.rss)}",
        f"- serving process: opened in {s.open_seconds:.2f} s, {rss(s.rss_open)}",
        f"- recall ({s.recall_before.calls} new queries, limit 5): first {s.first_recall_ms:.0f}"
        f" ms, then p50 {s.recall_before.p50_ms:.1f}, p95 {s.recall_before.p95_ms:.1f}, max "
        f"{s.recall_before.max_ms:.1f} ms, CPU p50 {s.recall_before.cpu_p50_ms:.1f} ms; the "
        "stand-in's share "
        f"{s.stand_in_ms_per_query:.2f} ms a query; after them {rss(s.rss_recalled)}",
        f"- one leg alone (diagnostic), before optimize: {legs(s.legs_before)}",
        f"- `ferrex optimize`: {s.optimize_seconds:.1f} s (CPU {s.optimize_cpu_seconds:.1f} s), "
        "optimized "
        f"{sum(s.optimized.values())} of {len(s.optimized)} collections, then "
        f"{rss(s.rss_optimized)}; dense leg's recall@10 against exact search "
        f"{s.dense_recall_at_10:.3f}; recall after it p50 "
        f"{s.recall_after.p50_ms:.1f}, p95 {s.recall_after.p95_ms:.1f}, max "
        f"{s.recall_after.max_ms:.1f} ms, CPU p50 {s.recall_after.cpu_p50_ms:.1f} ms; one leg "
        f"alone: {legs(s.legs_after)}",
        f"- stats through the service ({s.stats.calls} calls of each kind, alternating): first "
        f"{s.stats_first_ms:,.0f} ms, p50 {s.stats.p50_ms:,.0f} ms (CPU "
        f"{s.stats.cpu_p50_ms:,.0f}); detailed p50 {s.stats_detailed.p50_ms:,.0f} ms (CPU "
        f"{s.stats_detailed.cpu_p50_ms:,.0f})",
        f"- store ({s.store.calls} new episodic memories, each fsynced): p50 "
        f"{s.store.p50_ms:.1f}, p95 {s.store.p95_ms:.1f} ms, CPU p50 {s.store.cpu_p50_ms:.1f} "
        f"ms; outcomes {s.store_outcomes}; "
        f"after serving {rss(s.rss_end)}",
        f"- disk (allocated), before optimize: journal {mib(z0.journal)} MB, SQLite "
        f"{mib(z0.sqlite)} MB, Qdrant memories {mib(z0.qdrant_memories)} MB (apparent "
        f"{mib(z0.qdrant_memories_apparent)}), entities {mib(z0.qdrant_entities)} MB; after: "
        f"journal {mib(z.journal)}, SQLite {mib(z.sqlite)}, Qdrant memories "
        f"{mib(z.qdrant_memories)} (apparent {mib(z.qdrant_memories_apparent)}), entities "
        f"{mib(z.qdrant_entities)}; whole home {mib(z.home)} MB "
        f"({z.home / r.memories:,.0f} B a memory)",
    ]
    return "\n".join(lines)


def targets(r: SizeResult) -> str:
    """How far a size is from the issue's targets at 1M (which hold for 1M only)."""
    s = r.serve
    assert s.recall_after and s.stats
    rate = r.replay.records / r.replay.seconds
    return (
        f"targets at 1M (this is {r.memories:,}): recall p50 after optimize "
        f"{s.recall_after.p50_ms:.1f} ms (<= 50), stats {s.stats.p50_ms / 1000:.2f} s "
        f"(<= 0.5), replay {rate:,.0f} records/s (>= 20,000)"
    )


BUILT_FILE = "bench-million-built.json"  # a home's build and replay figures, for --reuse


def load_built(path: Path) -> tuple[BuildResult, ReplayResult]:
    doc = json.loads(path.read_text())
    build = doc["build"]
    build["samples"] = [(text, namespace) for text, namespace in build["samples"]]
    return BuildResult(**build), ReplayResult(**doc["replay"])


def run_size(root: Path, n: int, args: argparse.Namespace, profile: frozenset[str]) -> SizeResult:
    home = root / f"n{n}"
    say(f"\n## {n:,} memories in {home}")
    say("(the serving process prints each figure as it is measured; the summary follows)")
    kept = home / BUILT_FILE
    if args.reuse and kept.is_file():
        built, replayed = load_built(kept)
        say(f"reusing the home built before (--reuse): build and replay figures from {kept}")
    else:
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True, mode=0o700)
        built = in_child(phase_build, home, n, args.seed, args.group)
        replayed = in_child(phase_replay, home, "replay" in profile)
        kept.write_text(json.dumps({"build": asdict(built), "replay": asdict(replayed)}))
    say(f"journal built: {built.records:,} records in {built.seconds:.1f} s")
    rate = replayed.records / replayed.seconds
    say(
        f"replayed: {replayed.seconds:.1f} s ({rate:,.0f} records/s; CPU {replayed.cpu_seconds:.1f}"
        f" s, {replayed.records / replayed.cpu_seconds:,.0f} records per CPU-second)"
    )
    served: ServeResult = in_child(
        phase_serve, home, built.samples, args.queries, args.stores, args.stats_runs,
        args.seed, profile,
    )  # fmt: skip
    result = SizeResult(n, built, replayed, served)
    say(details(result))
    say(targets(result))
    for name, summary in [("replay", replayed.profile), *served.profiles.items()]:
        if summary:
            say(f"\n#### cProfile of {name} at {n:,}\n\n{summary}")
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    return result


def to_json(
    results: Iterable[SizeResult], args: argparse.Namespace, wall: float, load_before: float
) -> str:
    sizes = []
    for r in results:
        doc = asdict(r)
        doc["build"].pop("samples")
        sizes.append(doc)
    return json.dumps(
        {
            "benchmark": "tools/bench_million.py",
            "vectors": STAND_IN_NOTE,
            "argv": sys.argv[1:],
            "noisy": bool(args.noisy),
            "load_before": load_before,
            "load_after": os.getloadavg()[0],
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "python": sys.version.split()[0],
            "wall_seconds": round(wall, 1),
            "sizes": sizes,
        },
        indent=2,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="memory counts (%(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="recalls per side of optimize")
    parser.add_argument("--stores", type=int, default=50, help="stores of new memories")
    parser.add_argument("--stats-runs", type=int, default=5, help="stats calls of each kind")
    parser.add_argument("--group", type=int, default=1000, help="records per group commit")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep each size's home")
    parser.add_argument(
        "--reuse", action="store_true",
        help="with --dir: serve the home a former --keep run built there instead of building "
        "it again (its build and replay figures are the former run's; serving changes the "
        "home, so optimize then finds less to do)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="write results")
    parser.add_argument(
        "--profile", type=phase_list, default=frozenset(), metavar="PHASES",
        help=f"at the largest size, profile these phases ({', '.join(PROFILED)}; comma "
        "separated) in an extra pass each, and print where their time went",
    )  # fmt: skip
    harness.add_arguments(parser)
    args = parser.parse_args()
    say(STAND_IN_NOTE)
    harness.begin(args)
    load_before = os.getloadavg()[0]
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    root: Path = args.dir or Path(tempfile.mkdtemp(prefix="ferrex-million-"))
    root.mkdir(parents=True, exist_ok=True)
    say(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}, dir {root}")
    started = time.perf_counter()
    results = []
    try:
        for n in sizes:
            results.append(run_size(root, n, args, args.profile if n == sizes[-1] else frozenset()))
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    wall = time.perf_counter() - started
    say("\n## Results\n")
    say(STAND_IN_NOTE)
    say("")
    say(table(results))
    say(f"\nwall time {wall:.0f} s")
    if args.json is not None:
        args.json.write_text(to_json(results, args, wall, load_before) + "\n")
        say(f"wrote {args.json}")


if __name__ == "__main__":
    main()
