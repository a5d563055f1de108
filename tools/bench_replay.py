"""Replay benchmark (issue 4): rebuild the projections from a synthetic journal.

Measures ``Projections.replay`` (SQLite read model + Qdrant Edge) with a cold and a warm
embedding cache, shows where a warm replay spends its time (wall-clock stage timers, then a
cProfile summary by module), and the disk each store takes per memory. Prints markdown;
speed is reported, never asserted.

    python -m tools.bench_replay [--sizes 10000,100000] [--dir DIR] [--skip-cold]

Goal stated in issue 4: 100k memories replayed in under 60 s with a warm cache on a 2-core
machine. A cold replay embeds every text (the bundled model does ~200 texts/s on such a
machine, so a cold 100k replay takes about ten minutes): above ``--cold-max`` memories the
cold replay is not run; the cache is instead pre-warmed in one pass of
``Embedder.embed_many`` over every text the replay will embed, and that pre-warm time is
reported as the cold embedding cost.

The stage breakdown wraps functions of ferrex in this process only (timers around
``Journal.read``, ``ReadModel.apply``, ``VectorSink``, the encoders, the cache and the Edge
backend), restored afterwards; no file of ferrex is changed.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import os
import pstats
import random
import resource
import shutil
import sys
import sysconfig
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import ferrex.models.embedder as embedder_module
import projections.qdrant_edge as edge_module
from ferrex.models import Embedder, EmbeddingCache, LoadedModel, cache_path
from ferrex.parts import build_encoders
from journal import (
    EntityCreated,
    Event,
    Journal,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
)
from journal.events import MemoryType
from projections.documents import memory_text, procedure_parts
from projections.generations import Live, read_pointer
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.sqlite import ReadModel
from projections.vector_sink import Encoders, VectorSink
from tools import harness

REPO = harness.ROOT
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NAMESPACES = ("acme", "acme", "acme", "acme-infra", "personal")

# -- the synthetic journal -------------------------------------------------------------------

SERVICES = (
    "api-gateway",
    "billing",
    "auth",
    "search",
    "ingest",
    "scheduler",
    "payments",
    "notifier",
    "ledger",
    "catalog",
    "checkout",
    "reports",
)
PEOPLE = ("Alice", "Bob", "Carol", "Dmitri", "Eve", "Farah", "Goran", "Hana", "Ivan", "June")
TOOLS = (
    "postgres",
    "redis",
    "kafka",
    "tokio",
    "nginx",
    "kubernetes",
    "terraform",
    "grafana",
    "clickhouse",
    "envoy",
)
ENVS = ("prod", "staging", "dev", "eu-west-1", "us-east-2")
SYMPTOMS = (
    "p99 latency",
    "the error rate",
    "queue depth",
    "memory usage",
    "the connection count",
    "CPU load",
)
CAUSES = (
    "a stale config",
    "an expired TLS certificate",
    "a missing index",
    "a leaked file handle",
    "a retry storm",
    "a bad feature flag",
    "DNS caching",
    "a full disk",
)
ACTIONS = ("rolled back", "restarted", "scaled out", "patched", "reconfigured", "drained")
EPISODES = (
    "{person} {action} {service} on {env} after {inc} pushed {symptom} to {number} ms.",
    "{inc}: {service} returned 5xx on {env} because of {cause} in {tool}.",
    "Deploy of {service} {version} to {env} failed; {tool} refused connections for "
    "{minutes} minutes.",
    "{person} traced {inc} to {cause} in {service} and fixed it in PR #{pr}.",
    "Migration {migration} on {tool} blocked writes to {service} for {minutes} minutes.",
    "{person} asked to keep {service} on {tool} {version} until {inc} is closed.",
    "On-call handoff: {inc} is still open, {symptom} on {env} is at {number}.",
    "The {service} canary on {env} showed {symptom} rising {number}% after {version}.",
    "{person} paired with {person2} on {inc}; the root cause was {cause}.",
    "A load test of {service} reached {number} rps before {tool} saturated.",
)
PREDICATES = (
    "depends on",
    "runs on",
    "is owned by",
    "is deployed to",
    "uses",
    "has an SLO of",
    "stores data in",
    "is paged through",
    "was migrated to",
)
STEPS = (
    "check the {tool} dashboard for {symptom} on {env}",
    "drain {service} pods in {env}-{number}",
    "run `{tool}ctl rotate --cluster {env}-{number}`",
    "verify that {symptom} stays below {number}",
    "post a status update in #{service}-oncall",
    "open ticket OPS-{pr} and link {inc}",
    "restart {service} with the {version} image",
    "ask {person} to approve the {tool} change",
)
PROCEDURES = (
    "rotate {tool} credentials for {service} on {env}",
    "fail over {service} from {env} to {env2}",
    "upgrade {tool} to {version} under {service}",
    "recover {service} after {cause}",
)


def slots(rng: random.Random) -> dict[str, object]:
    """Random values for every placeholder of the templates above."""
    env, env2 = rng.sample(ENVS, 2)
    person, person2 = rng.sample(PEOPLE, 2)
    return {
        "person": person,
        "person2": person2,
        "action": rng.choice(ACTIONS),
        "service": rng.choice(SERVICES),
        "env": env,
        "env2": env2,
        "inc": f"INC-{rng.randrange(10_000, 100_000)}",
        "symptom": rng.choice(SYMPTOMS),
        "number": rng.randrange(2, 5000),
        "cause": rng.choice(CAUSES),
        "tool": rng.choice(TOOLS),
        "version": f"v{rng.randrange(1, 5)}.{rng.randrange(0, 30)}.{rng.randrange(0, 10)}",
        "minutes": rng.randrange(2, 120),
        "pr": rng.randrange(100, 20_000),
        "migration": f"2025{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d}_add_index",
    }


def episodic(rng: random.Random) -> MemoryBody:
    sentences = [rng.choice(EPISODES).format(**slots(rng)) for _ in range(rng.randint(1, 3))]
    return MemoryBody(content=" ".join(sentences), source="session")


def fact_object(rng: random.Random, predicate: str) -> str:
    s = slots(rng)
    if predicate == "has an SLO of":
        return f"{s['number']} ms p99 on {s['env']}"
    if predicate == "is owned by":
        return f"{s['person']} (team {s['service']}, since {s['inc']})"
    if predicate in ("is deployed to", "is paged through"):
        return f"{s['env']}-cluster-{s['number']}"
    return f"{s['tool']} {s['version']}"


def semantic(rng: random.Random, subject: str, predicate: str) -> MemoryBody:
    obj = fact_object(rng, predicate)
    content = f"The {subject} service {predicate} {obj}." if rng.random() < 0.3 else None
    return MemoryBody(
        content=content,
        subject=subject,
        predicate=predicate,
        object=obj,
        predicate_normalized=predicate.replace(" ", "_"),
        source="session",
    )


def procedural(rng: random.Random) -> MemoryBody:
    s = slots(rng)
    steps = tuple(
        rng.choice(STEPS).format(**slots(rng)).capitalize() for _ in range(rng.randint(3, 6))
    )
    return MemoryBody(
        procedure_name=rng.choice(PROCEDURES).format(**s),
        conditions=(f"{s['symptom']} on {s['env']} is above {s['number']}",),
        steps=steps,
        source="runbook",
    )


@dataclass
class Built:
    """What was written to the journal."""

    memories: int = 0
    entities: int = 0
    supersedes: int = 0
    records: int = 0
    types: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def commands(
    n: int,
    seed: int,
    supersede_rate: float,
    built: Built,
    *,
    start: datetime = T0,
    step: timedelta = timedelta(minutes=1),
) -> Iterator[list[Event]]:
    """One command (the events of one record) per stored memory; distinct texts throughout.

    Memory ``i`` is valid from ``start + i * step``.

    ~70% episodic, ~25% semantic, ~5% procedural; an entity is created with every 20th
    memory, and memories link to one or two recent entities; a fraction ``supersede_rate``
    of the semantic facts update an earlier fact (same subject and predicate).
    """
    rng = random.Random(seed)
    seen: set[str] = set()
    entities: list[tuple[str, str]] = []  # (entity id, namespace)
    facts: list[tuple[str, str, str, str]] = []  # live facts: (memory id, ns, subject, pred)
    for i in range(n):
        at = start + i * step
        namespace = rng.choice(NAMESPACES)
        events: list[Event] = []
        if i % 20 == 0:
            kind = rng.choice(("service", "person", "tool"))
            base = {"service": SERVICES, "person": PEOPLE, "tool": TOOLS}[kind]
            name = f"{rng.choice(base)}-{len(entities):05d}"
            entity_id = f"ent_{len(entities):08d}"
            events.append(
                EntityCreated(
                    entity_id=entity_id,
                    namespace=namespace,
                    name=name,
                    normalized=name.lower(),
                    kind=kind,
                )
            )
            entities.append((entity_id, namespace))
            seen.add(name)
        memory_id = f"mem_{i:010d}"
        roll = rng.random()
        memory_type: MemoryType = (
            "episodic" if roll < 0.70 else "semantic" if roll < 0.95 else "procedural"
        )
        old: tuple[str, str, str, str] | None = None
        if memory_type == "semantic" and facts and rng.random() < supersede_rate:
            old = facts.pop(rng.randrange(len(facts)))
            namespace = old[1]
        while True:
            if memory_type == "episodic":
                body = episodic(rng)
            elif memory_type == "semantic":
                subject = old[2] if old else f"{rng.choice(SERVICES)}-{rng.randrange(100)}"
                predicate = old[3] if old else rng.choice(PREDICATES)
                body = semantic(rng, subject, predicate)
            else:
                body = procedural(rng)
            text = memory_text(memory_type, body)
            if text not in seen:
                seen.add(text)
                break
        recent = entities[-60:]
        linked = tuple(
            dict.fromkeys(rng.choice(recent)[0] for _ in range(rng.randint(1, 2)))
            if recent and rng.random() < 0.8
            else ()
        )
        events.append(
            MemoryStored(
                memory_id=memory_id,
                namespace=namespace,
                memory_type=memory_type,
                t_valid=at,
                confidence=round(rng.uniform(0.6, 1.0), 2),
                entity_ids=linked,
                supersedes=old[0] if old else None,
                procedure_version=1 if memory_type == "procedural" else None,
                agent_id=rng.choice(("claude-code", "cursor", "ops-bot")),
                visibility="shared" if rng.random() < 0.9 else "private",
                body=body,
            )
        )
        if old is not None:
            events.append(
                MemorySuperseded(
                    memory_id=old[0],
                    namespace=old[1],
                    t_invalid=at,
                    superseded_by=memory_id,
                    reason="conflict",
                )
            )
            built.supersedes += 1
        if memory_type == "semantic":
            facts.append((memory_id, namespace, body.subject or "", body.predicate or ""))
        built.memories += 1
        built.types[memory_type] += 1
        built.entities = len(entities)
        yield events


def build_journal(
    directory: Path,
    n: int,
    seed: int,
    supersede_rate: float,
    group: int,
    *,
    start: datetime = T0,
    step: timedelta = timedelta(minutes=1),
    each: Callable[[list[Event]], None] | None = None,
) -> Built:
    """Append ``commands(n, ...)`` in group commits; ``each`` sees every command first."""
    built = Built()
    started = time.perf_counter()
    with Journal.open(directory) as journal:
        batch: list[list[Event]] = []
        for command in commands(n, seed, supersede_rate, built, start=start, step=step):
            if each is not None:
                each(command)
            batch.append(command)
            if len(batch) >= group:
                built.records += len(journal.append_batch(batch))
                batch = []
        if batch:
            built.records += len(journal.append_batch(batch))
    built.seconds = time.perf_counter() - started
    return built


# -- sizes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    apparent: int  # bytes the files say they hold
    allocated: int  # bytes of disk blocks they use (mmapped files may be sparse)


def size_of(*paths: Path) -> Size:
    apparent = allocated = 0
    for path in paths:
        files = [path] if path.is_file() else list(path.rglob("*")) if path.is_dir() else []
        for f in files:
            if f.is_file():
                st = f.stat()
                apparent += st.st_size
                allocated += st.st_blocks * 512
    return Size(apparent, allocated)


def sqlite_files(path: Path) -> list[Path]:
    return [Path(str(path) + suffix) for suffix in ("", "-wal", "-shm")]


@dataclass(frozen=True)
class Sizes:
    journal: Size
    sqlite: Size
    memories: Size
    entities: Size
    cache: Size


def measure_sizes(home: Path) -> Sizes:
    live = read_pointer(home)
    assert live is not None, "no live projections to measure"
    qdrant = home / "qdrant"
    return Sizes(
        journal=size_of(home / "journal"),
        sqlite=size_of(*sqlite_files(home / live.sqlite)),
        memories=size_of(qdrant / live.memories),
        entities=size_of(qdrant / live.entities),
        cache=size_of(*sqlite_files(cache_path(home))),
    )


# -- stage timers ----------------------------------------------------------------------------


class Stages:
    """Exclusive wall time per named stage: a stage's time excludes the stages it calls."""

    def __init__(self) -> None:
        self.own: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self._children: list[float] = []

    def _enter(self) -> float:
        self._children.append(0.0)
        return time.perf_counter()

    def _leave(self, name: str, started: float) -> None:
        elapsed = time.perf_counter() - started
        self.own[name] += elapsed - self._children.pop()
        self.calls[name] += 1
        if self._children:
            self._children[-1] += elapsed

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            started = self._enter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._leave(name, started)

        return wrapped

    def wrap_iter(self, name: str, make: Callable[..., Iterator[Any]]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Iterator[Any]:
            inner = make(*args, **kwargs)
            while True:
                started = self._enter()
                try:
                    item = next(inner)
                except StopIteration:
                    return
                finally:
                    self._leave(name, started)
                yield item

        return wrapped


# (owner, attribute, stage name): class methods are timed for every instance the replay makes.
CLASS_STAGES: tuple[tuple[type, str, str], ...] = (
    (ReadModel, "apply", "SQLite: ReadModel.apply (events -> rows, commit)"),
    (ReadModel, "set_checkpoint", "SQLite: Qdrant checkpoint transaction"),
    (VectorSink, "apply", "sink: VectorSink.apply event loop"),
    (VectorSink, "_memory_points", "sink: _memory_points (payload, uuid5 ids, parts)"),
    (VectorSink, "_flush", "sink: _flush (VectorPoint build, dense rows to lists)"),
    (EmbeddingCache, "get_many", "embedding cache: get_many (SQLite lookups)"),
    (EmbeddingCache, "put_many", "embedding cache: put_many (inserts)"),
    (LoadedModel, "run", "model inference (cache misses)"),
)
MODULE_STAGES: tuple[tuple[Any, str, str], ...] = (
    (embedder_module, "text_key", "embedding cache: text_key (SHA-256 of texts)"),
    (edge_module, "_point", "Edge: _point (VectorPoint -> edge.Point: dense, sparse, payload)"),
)


@contextmanager
def instrumented(
    stages: Stages, journal: Journal, backend: EdgeBackend, encoders: Encoders
) -> Iterator[Encoders]:
    """Time the pieces of a replay; yields the encoders to replay with (timed too)."""
    saved: list[tuple[Any, str, Any]] = []
    try:
        for owner, attribute, name in CLASS_STAGES + MODULE_STAGES:
            original = getattr(owner, attribute)
            saved.append((owner, attribute, original))
            setattr(owner, attribute, stages.wrap(name, original))
        # Instance attributes shadow the methods; deleting them restores the class's.
        journal.read = stages.wrap_iter("journal: read + decode", journal.read)  # type: ignore[method-assign]
        backend.upsert = stages.wrap("Edge: upsert (shard.update)", backend.upsert)  # type: ignore[method-assign]
        backend.set_payload = stages.wrap("Edge: set_payload (supersedes)", backend.set_payload)  # type: ignore[method-assign]
        backend._flush = stages.wrap("Edge: flush", backend._flush)  # type: ignore[method-assign]
        yield dataclasses.replace(
            encoders,
            dense=stages.wrap("embed_many (keys, dict, result rows)", encoders.dense),
            sparse=stages.wrap("sparse: BM25 encode_document", encoders.sparse),
            fits=stages.wrap("procedure token count (fits)", encoders.fits),
        )
    finally:
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)
        for attribute in ("read",):
            journal.__dict__.pop(attribute, None)
        for attribute in ("upsert", "set_payload", "_flush"):
            backend.__dict__.pop(attribute, None)


# -- replays ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    seconds: float
    live: Live
    hits: int
    misses: int
    model_load: float


def replay(
    home: Path,
    *,
    stages: Stages | None = None,
    profiler: cProfile.Profile | None = None,
) -> Replay:
    """One ``Projections.replay`` with fresh handles; only the replay call is timed."""
    embedder = Embedder.from_env(home)
    load_started = time.perf_counter()
    encoders = build_encoders(embedder)  # loads the model now: not part of the replay
    model_load = time.perf_counter() - load_started
    backend = EdgeBackend(home / "qdrant")
    journal = Journal.open(home / "journal")
    try:
        with (
            instrumented(stages, journal, backend, encoders)
            if stages is not None
            else _as_is(encoders) as used
        ):
            if profiler is not None:
                profiler.enable()
            started = time.perf_counter()
            projections = Projections.replay(home, journal, backend, used)
            seconds = time.perf_counter() - started
            if profiler is not None:
                profiler.disable()
        live = projections.live
        projections.close()
    finally:
        backend.close()
        journal.close()
        stats = embedder.cache_stats()
        embedder.close()
    return Replay(seconds, live, stats.hits, stats.misses, model_load)


@contextmanager
def _as_is(encoders: Encoders) -> Iterator[Encoders]:
    yield encoders


def replay_texts(home: Path, fits: Callable[[str], bool]) -> list[str]:
    """Every text the vector sink embeds in a replay: memory texts (procedure parts) and
    entity names, computed by the same functions the sink uses."""
    texts: list[str] = []
    with Journal.open(home / "journal") as journal:
        for record in journal.read():
            for event in record.events:
                if isinstance(event, MemoryStored) and event.body is not None:
                    if event.memory_type == "procedural":
                        texts.extend(procedure_parts(event.body, fits))
                    else:
                        texts.append(memory_text(event.memory_type, event.body))
                elif isinstance(event, EntityCreated):
                    texts.append(event.name)
    return texts


@dataclass(frozen=True)
class Prewarm:
    seconds: float
    texts: int


def prewarm(home: Path, batch: int) -> Prewarm:
    """Fill the cache in one pass of ``Embedder.embed_many``: the cold cost of a replay."""
    embedder = Embedder.from_env(home)
    try:
        model = embedder.model()
        texts = list(dict.fromkeys(replay_texts(home, model.fits)))
        started = time.perf_counter()
        last = started
        for start in range(0, len(texts), batch):
            embedder.embed_many(texts[start : start + batch])
            if time.perf_counter() - last > 60:
                last = time.perf_counter()
                rate = (start + batch) / (last - started)
                say(f"  pre-warm: {start + batch}/{len(texts)} texts, {rate:.0f} texts/s")
        return Prewarm(time.perf_counter() - started, len(texts))
    finally:
        embedder.close()


# -- cProfile summary ------------------------------------------------------------------------

_SITE = Path(sysconfig.get_paths()["purelib"]).resolve()
_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()

FuncKey = tuple[str, int, str]


def module_of(filename: str) -> str:
    if filename.startswith("<") or filename == "~":
        return filename
    path = Path(filename).resolve()
    for root, prefix in ((REPO, ""), (_SITE, "site-packages: "), (_STDLIB, "stdlib: ")):
        if path.is_relative_to(root):
            parts = path.relative_to(root).parts
            if prefix == "site-packages: ":
                return prefix + parts[0].removesuffix(".py")
            return prefix + "/".join(parts)
    return str(path)


def describe(key: FuncKey) -> str:
    filename, line, name = key
    if filename == "~":
        return name
    return f"{module_of(filename)}:{line}({name})"


def profile_summary(profiler: cProfile.Profile, top: int) -> str:
    """Self time by module (a builtin's time charged to the module that called it), the
    functions with the most self time, and the inclusive time of the replay's entry points."""
    raw: dict[FuncKey, tuple[int, int, float, float, dict[FuncKey, Any]]]
    raw = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_module: defaultdict[str, float] = defaultdict(float)
    total = 0.0
    for key, (_, _, tt, _, callers) in raw.items():
        total += tt
        if key[0] != "~":
            by_module[module_of(key[0])] += tt
            continue
        charged = 0.0
        for caller, numbers in callers.items():
            share = float(numbers[2])
            caller_module = module_of(caller[0]) if caller[0] != "~" else "builtins"
            by_module[f"{caller_module} -> builtins"] += share
            charged += share
        if tt - charged > 1e-9:
            by_module["builtins (caller unknown)"] += tt - charged
    lines = [
        f"cProfile total self time: {total:.2f} s (profiling inflates Python-heavy parts)",
        "",
        "| module (builtins charged to their caller) | self s | share |",
        "|---|---:|---:|",
    ]
    for module, seconds in sorted(by_module.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| {module} | {seconds:.2f} | {100 * seconds / total:.1f}% |")
    lines += ["", "| function (self time) | calls | self s | cum s |", "|---|---:|---:|---:|"]
    ranked = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
    for key, (_, nc, tt, ct, _) in ranked:
        lines.append(f"| `{describe(key)}` | {nc} | {tt:.2f} | {ct:.2f} |")
    entry_points = (
        ("log.py", "read"),
        ("sqlite.py", "apply"),
        ("sqlite.py", "set_checkpoint"),
        ("vector_sink.py", "apply"),
        ("vector_sink.py", "_flush"),
        ("vector_sink.py", "_memory_points"),
        ("embedding.py", "embed_many"),
        ("embedding.py", "get_many"),
        ("sparse.py", "encode_document"),
        ("qdrant_edge.py", "upsert"),
        ("qdrant_edge.py", "set_payload"),
        ("qdrant_edge.py", "_flush"),
        ("qdrant_edge.py", "_point"),
    )
    lines += ["", "| entry point (inclusive) | calls | cum s |", "|---|---:|---:|"]
    for filename, name in entry_points:
        for key, (_, nc, _, ct, _) in raw.items():
            if key[2] == name and key[0].endswith(filename) and str(REPO) in key[0]:
                lines.append(f"| `{describe(key)}` | {nc} | {ct:.2f} |")
    return "\n".join(lines)


# -- report ----------------------------------------------------------------------------------


@dataclass
class Result:
    n: int
    built: Built
    cold: Replay | None = None
    prewarm: Prewarm | None = None
    warm: Replay | None = None
    sizes: Sizes | None = None
    stages: Stages | None = None
    staged: Replay | None = None
    profile: str | None = None


def say(message: str) -> None:
    print(message, flush=True)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def per(value: float, n: int) -> str:
    return f"{value / n:,.0f}" if n else "-"


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}" if seconds > 0 else "-"


def results_table(results: Sequence[Result]) -> str:
    lines = [
        "| memories | records | journal build s | cold replay s | cold mem/s "
        "| pre-warm s (= cold embed) | warm replay s | warm mem/s | cache hits/misses (warm) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cold_s = f"{r.cold.seconds:.1f}" if r.cold else "not run"
        cold_rate = rate(r.n, r.cold.seconds) if r.cold else "-"
        pre = f"{r.prewarm.seconds:.1f} ({r.prewarm.texts} texts)" if r.prewarm else "-"
        warm_s = f"{r.warm.seconds:.1f}" if r.warm else "-"
        warm_rate = rate(r.n, r.warm.seconds) if r.warm else "-"
        hits = f"{r.warm.hits}/{r.warm.misses}" if r.warm else "-"
        lines.append(
            f"| {r.n:,} | {r.built.records:,} | {r.built.seconds:.1f} | {cold_s} | {cold_rate} "
            f"| {pre} | {warm_s} | {warm_rate} | {hits} |"
        )
    return "\n".join(lines)


def sizes_table(results: Sequence[Result]) -> str:
    lines = [
        "| memories | journal B/mem | SQLite B/mem | Qdrant memories B/mem (disk / apparent) "
        "| Qdrant entities B total (disk) | Qdrant all B/mem (disk) | cache B/text |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        s = r.sizes
        if s is None:
            continue
        qdrant = s.memories.allocated + s.entities.allocated
        texts = r.prewarm.texts if r.prewarm else r.n + r.built.entities
        lines.append(
            f"| {r.n:,} | {per(s.journal.apparent, r.n)} | {per(s.sqlite.apparent, r.n)} "
            f"| {per(s.memories.allocated, r.n)} / {per(s.memories.apparent, r.n)} "
            f"| {s.entities.allocated:,} | {per(qdrant, r.n)} | {per(s.cache.apparent, texts)} |"
        )
    return "\n".join(lines)


def stages_table(r: Result) -> str:
    assert r.stages is not None and r.staged is not None
    total = r.staged.seconds
    lines = [
        f"Warm replay of {r.n:,} memories with stage timers: {total:.1f} s "
        f"({rate(r.n, total)} mem/s; timer overhead included)",
        "",
        "| stage (exclusive wall time) | calls | s | share |",
        "|---|---:|---:|---:|",
    ]
    accounted = 0.0
    for name, seconds in sorted(r.stages.own.items(), key=lambda kv: -kv[1]):
        accounted += seconds
        lines.append(
            f"| {name} | {r.stages.calls[name]:,} | {seconds:.2f} | {100 * seconds / total:.1f}% |"
        )
    rest = total - accounted
    lines.append(
        f"| other (replay driver, chunking, generation switch) | - | {rest:.2f} "
        f"| {100 * rest / total:.1f}% |"
    )
    return "\n".join(lines)


def run_size(root: Path, n: int, args: argparse.Namespace, profile_size: int) -> Result:
    home = root / f"n{n}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    say(f"\n## {n:,} memories in {home}")
    built = build_journal(home / "journal", n, args.seed, args.supersede_rate, args.group)
    say(
        f"journal: {built.records:,} records in {built.seconds:.1f} s; types {dict(built.types)},"
        f" {built.entities:,} entities, {built.supersedes:,} supersedes"
    )
    result = Result(n, built)
    if not args.skip_cold and n <= args.cold_max:
        say("cold replay (empty embedding cache) ...")
        result.cold = replay(home)
        say(
            f"cold replay: {result.cold.seconds:.1f} s, {rate(n, result.cold.seconds)} mem/s, "
            f"cache hits/misses {result.cold.hits}/{result.cold.misses} "
            f"(model load {result.cold.model_load:.1f} s, not counted)"
        )
    else:
        say("pre-warming the embedding cache with Embedder.embed_many (the cold cost) ...")
        result.prewarm = prewarm(home, args.prewarm_batch)
        say(
            f"pre-warm: {result.prewarm.texts:,} texts in {result.prewarm.seconds:.1f} s, "
            f"{rate(result.prewarm.texts, result.prewarm.seconds)} texts/s"
        )
    say("warm replay ...")
    result.warm = replay(home)
    say(
        f"warm replay: {result.warm.seconds:.1f} s, {rate(n, result.warm.seconds)} mem/s, "
        f"cache hits/misses {result.warm.hits}/{result.warm.misses}"
    )
    result.sizes = measure_sizes(home)
    if not args.no_stages:
        say("warm replay with stage timers ...")
        result.stages = Stages()
        result.staged = replay(home, stages=result.stages)
        say(stages_table(result))
    if n == profile_size:
        say("warm replay under cProfile ...")
        profiler = cProfile.Profile()
        profiled = replay(home, profiler=profiler)
        say(f"profiled warm replay: {profiled.seconds:.1f} s")
        result.profile = profile_summary(profiler, args.top)
        say(result.profile)
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sizes",
        default="10000,100000",
        help="memory counts, comma separated (default: %(default)s)",
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="work directory (default: a temp dir, removed)"
    )
    parser.add_argument("--skip-cold", action="store_true", help="no cold replay (pre-warm only)")
    parser.add_argument(
        "--cold-max",
        type=int,
        default=10_000,
        help="largest size replayed with a cold cache; larger ones are pre-warmed (%(default)s)",
    )
    parser.add_argument(
        "--profile-size",
        type=int,
        default=None,
        help="size whose warm replay runs under cProfile (default: the smallest; 0: none)",
    )
    parser.add_argument("--no-stages", action="store_true", help="skip the stage-timer replays")
    parser.add_argument("--prewarm-batch", type=int, default=1024, help="texts per embed_many")
    parser.add_argument("--group", type=int, default=1000, help="records per group commit")
    parser.add_argument(
        "--supersede-rate", type=float, default=0.05, help="share of facts that supersede"
    )
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--top", type=int, default=20, help="rows of the profile tables")
    parser.add_argument("--keep", action="store_true", help="keep each size's data directory")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    profile_size = sizes[0] if args.profile_size is None else args.profile_size

    temporary = args.dir is None
    root: Path = Path(tempfile.mkdtemp(prefix="ferrex-replay-")) if temporary else args.dir
    root.mkdir(parents=True, exist_ok=True)
    load_before = load()
    say(f"# ferrex replay benchmark\n\nload average before: {load_before}")
    say(
        f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}, dir: {root}, "
        f"model: {os.environ.get('FERREX_EMBEDDING_MODEL', 'small (default)')}"
    )
    started = time.perf_counter()
    results: list[Result] = []
    try:
        for n in sizes:
            results.append(run_size(root, n, args, profile_size))
    finally:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
    say("\n## Results\n")
    say(results_table(results))
    say("")
    say(sizes_table(results))
    colds = [r for r in results if r.cold and r.warm]
    for r in results:
        if r.cold is not None or r.warm is None:
            continue
        lines = [f"\nCold replay of {r.n:,} memories was not run. Estimates (extrapolations):"]
        if r.prewarm is not None:
            lines.append(
                f"- pre-warm + warm replay, both measured here: "
                f"{r.prewarm.seconds + r.warm.seconds:.0f} s"
            )
        for c in colds:
            assert c.cold is not None and c.warm is not None
            embed_per_memory = (c.cold.seconds - c.warm.seconds) / c.n
            estimate = r.warm.seconds + embed_per_memory * r.n
            lines.append(
                f"- warm {r.n:,} + (cold - warm) of {c.n:,} scaled linearly: {estimate:.0f} s "
                f"(EXTRAPOLATED, {r.n / estimate:,.0f} mem/s)"
            )
        say("\n".join(lines))
    goal = [r for r in results if r.n >= 100_000 and r.warm]
    for r in goal:
        assert r.warm is not None
        verdict = "met" if r.warm.seconds * 100_000 / r.n < 60 else "MISSED"
        say(f"\nGoal (100k warm < 60 s): {verdict}: {r.n:,} warm in {r.warm.seconds:.1f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall = time.perf_counter() - started
    say(f"\npeak RSS: {peak:,.0f} MiB; wall time of the benchmark: {wall:.0f} s")
    say(f"load average before: {load_before}; after: {load()}")


if __name__ == "__main__":
    main()
