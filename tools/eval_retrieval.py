"""Retrieval quality on public benchmarks, through ferrex's real import and real recall.

    python -m tools.eval_retrieval beir   [--data DIR]  [--cache-home DIR] [--home DIR]
    python -m tools.eval_retrieval locomo [--data FILE] [--cache-home DIR] [--home DIR]
    python -m tools.eval_retrieval longmemeval [--every N] [--offset K] [--protocol plain]
    python -m tools.eval_retrieval all    (SciFact and LoCoMo, one after the other)
        [--reranker NAME] [--later-days N] [--setting dense_weight=0.5 ...] [--json FILE]

With a warm embedding cache ``all`` takes about three minutes on two cores; the first run
embeds every text (SciFact's abstracts in about 15,000 window-sized parts), which takes
20-40 minutes on a busy two-core machine.

Each benchmark is stored as memories in a fresh data directory (a temporary one, or
``--home DIR`` to keep it; a home that already holds the data is reused as it is) through
``Writer.store_many``, the path ``ferrex import`` takes, and every query is asked through
``Reader.recall`` as an agent would ask it, once per retrieval mode, in the same run:

- ``bm25``, ``dense``: one leg alone (``RecallRequest(legs=...)``), episode context off;
- ``hybrid, no episode context``: both legs fused, episode context off (LoCoMo only);
- ``bm25 + episode context``: the BM25 leg with episode context (LoCoMo only), so the
  default is also compared with the best single leg given the same later stages;
- ``hybrid (ferrex default)``: what ``App.reader()`` does with the default configuration;
- ``hybrid+rerank``: the default with a cross-encoder reranker, when ``--reranker`` names
  one that loads; none ships offline, so by default the row says "unavailable" (``late``,
  the bundled model's MaxSim, always loads; ``--late-weights 0.6,1`` adds a row per weight,
  sharing one model session and token cache);
- ``..., N days later``: the default recall with its clock moved ``--later-days`` ahead,
  with and without ``include_stale``, to show what staleness does to imported history.

Every later stage of recall (recency boost, staleness labels and the hiding of stale
memories) runs in every mode, so the table measures what an agent gets. Metrics are nDCG@10
(binary relevance), recall@5 and recall@10 (the share of a query's relevant memories in the
top k), averaged over queries.

**BEIR SciFact** (``--data``, default ``../shared/data/scifact``): each abstract is one
episodic memory, ``title + " " + text``, in namespace ``scifact``. Most abstracts are longer
than the embedding model's window, so they are stored with ``split_long``: one memory,
embedded in parts, the whole text indexed for BM25 (see ``ferrex.rules.memory_input``).
**LoCoMo** (``--data``, default ``../shared/data/locomo/locomo10.json``): the retrieval-only
protocol of its README. One namespace per conversation; each dialog turn one episodic memory
``"Speaker: text"`` back-dated to its session's date (read as UTC; turn *i* of a session at
the session's time plus *i* minutes, so the turns keep their order), with the conversation
as its ``source`` (which is what lets episode context find a turn's neighbours); each
question asked in its conversation's namespace; relevant = its evidence turns, normalised
(``D8:6; D9:17`` is two turns, ``D30:05`` is ``D30:5``, ids of turns that do not exist are
dropped, and the four questions left without evidence are skipped). Reported overall and
per category (adversarial questions, which name the wrong speaker, as their own category).

**LongMemEval-S** (``--data``, default ``../shared/data/longmemeval``; the 313 shared
questions, see its README): the turn-level protocol, one fresh data directory per question
holding one episodic memory per user turn of its haystack (``plain``: the turn's text alone,
in haystack order; ``source``: with the session as ``source`` and the session's date as
event time, turn *i* at the date plus *i* minutes, and the question asked at its own date);
relevant = the ``has_answer`` turns of its evidence sessions. A turn longer than the
model's window is stored whole with ``split_long`` (embedded in parts), as for SciFact.
Reported overall, per half (questions alternate) and per ``question_type``, with
``recall_any@5`` (a relevant turn in the top five). A whole run stores about 76,000 turns:
``--every 3`` keeps every third question (``--offset`` picks which), the fixed subset to
tune on. The embedding cache is
shared by every question's directory, so a turn seen before is not embedded again.

``--cache-home DIR`` (default ``~/.cache/ferrex-eval``) keeps the assembled model and the
embedding cache across runs: the data directory's ``models/`` and ``cache/`` are links to
it, so a second run embeds only the queries it has never seen. The data sets are read where
they are and never copied.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import FerrexError
from ferrex.models.late import LateInteraction
from ferrex.models.rerank import RerankStage, choose_reranker, load_reranker
from ferrex.read.access import AccessLog
from ferrex.read.recall import Reader
from ferrex.read.request import Legs, RecallRequest
from ferrex.rules.arguments import STRATEGIES, Strategy
from ferrex.rules.memory_input import StoreRequest
from tools import harness
from tools.harness import ROOT
from tools.splits import locomo_split, longmemeval_split

DATA = ROOT.parent / "shared" / "data"
K = 10
DEFAULT = "hybrid (ferrex default)"
RERANK = "hybrid+rerank"
TUNE, HELD_OUT = "tune half", "held-out half"
MODE_KINDS = ("legs", "context", "strategies", "later", "trimmed")
SHORT = 5
"""The limit of the two rows that compare a default (trimmed) answer with an untrimmed one."""
TRIMMED = f"{DEFAULT}, limit {SHORT}"
UNTRIMMED = f"{DEFAULT}, limit {SHORT}, min_relevance 0"
"""Queries alternate between the half settings are chosen on and the half reported."""
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

# -- metrics (pure) ------------------------------------------------------------------------


def dcg(ranked: Sequence[str], relevant: set[str], k: int = K) -> float:
    return sum(1.0 / math.log2(rank + 2) for rank, d in enumerate(ranked[:k]) if d in relevant)


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int = K) -> float:
    """nDCG@k with binary relevance; 0 when nothing is relevant."""
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(k, len(relevant))))
    return dcg(ranked, relevant, k) / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """The share of ``relevant`` found in the first ``k`` of ``ranked``."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


@dataclass
class Scores:
    """Per-query metrics of one retrieval mode, averaged on demand."""

    ndcg: list[float] = field(default_factory=list)
    r1: list[float] = field(default_factory=list)
    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    session: list[float] = field(default_factory=list)
    """Whether any document of an evidence session is in the top 10 (when sessions exist)."""
    any5: list[float] = field(default_factory=list)
    """Whether any relevant document is in the top 5."""
    tokens: list[float] = field(default_factory=list)
    """The answer's results as compact JSON, in the bundled model's tokens (when counted)."""

    def add(
        self,
        ranked: Sequence[str],
        relevant: set[str],
        session: Callable[[str], str] | None,
        tokens: int | None = None,
    ) -> None:
        if tokens is not None:
            self.tokens.append(tokens)
        self.ndcg.append(ndcg_at(ranked, relevant, 10))
        self.r1.append(recall_at(ranked, relevant, 1))
        self.r5.append(recall_at(ranked, relevant, 5))
        self.r10.append(recall_at(ranked, relevant, 10))
        self.any5.append(float(bool(relevant.intersection(ranked[:5]))))
        if session is not None:
            wanted = {session(d) for d in relevant}
            self.session.append(float(any(session(d) in wanted for d in ranked[:K])))

    def mean(self) -> dict[str, float]:
        n = len(self.ndcg)
        if not n:
            return {"n": 0, "ndcg@10": math.nan, "recall@1": math.nan, "recall@5": math.nan,
                    "recall@10": math.nan, "session@10": math.nan,
                    "recall_any@5": math.nan}  # fmt: skip
        return {
            "n": n,
            "ndcg@10": sum(self.ndcg) / n,
            "recall@1": sum(self.r1) / n,
            "recall@5": sum(self.r5) / n,
            "recall@10": sum(self.r10) / n,
            "session@10": sum(self.session) / n if self.session else math.nan,
            "recall_any@5": sum(self.any5) / n,
            "tokens": sum(self.tokens) / n if self.tokens else math.nan,
        }

    def merge(self, other: Scores) -> None:
        for name in ("ndcg", "r1", "r5", "r10", "session", "any5", "tokens"):
            getattr(self, name).extend(getattr(other, name))


# -- data (pure parsing) ---------------------------------------------------------------------

_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")


def normalize_evidence(raw: Iterable[str]) -> list[str]:
    """LoCoMo evidence ids, cleaned: several ids in one string are split (``"D8:6; D9:17"``,
    ``"D9:1 D4:4"``), zero padding and a stray colon are dropped (``D30:05`` → ``D30:5``,
    ``D:11:26`` → ``D11:26``), anything else unreadable is left out; first occurrence kept."""
    found: list[str] = []
    for entry in raw:
        for match in _DIA_ID.finditer(str(entry)):
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia_id not in found:
                found.append(dia_id)
    return found


def parse_session_time(text: str) -> datetime:
    """A LoCoMo session time such as ``1:56 pm on 8 May, 2023``, read as UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


@dataclass(frozen=True)
class Doc:
    key: str
    """The benchmark's id of the document (a SciFact ``_id``, a LoCoMo ``dia_id``)."""
    request: StoreRequest


@dataclass(frozen=True)
class Query:
    text: str
    namespace: str
    relevant: frozenset[str]
    group: str = "all"


@dataclass(frozen=True)
class Bench:
    name: str
    docs: list[Doc]
    queries: list[Query]
    notes: list[str]
    episodes: bool = False
    """Whether the documents are episodes (episode context can apply)."""
    session: Callable[[str], str] | None = None
    """A document key's session (for the session-level recall), when documents have one."""


def beir_bench(data: Path) -> Bench:
    namespace = "scifact"
    docs = []
    for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        text = f"{raw['title']} {raw['text']}".strip()
        docs.append(Doc(str(raw["_id"]), StoreRequest(content=text, namespace=namespace,
                                                       split_long=True)))  # fmt: skip
    texts = {}
    for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        texts[str(raw["_id"])] = str(raw["text"])
    qrels: dict[str, set[str]] = {}
    for line in (data / "qrels-test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query_id, set()).add(doc_id)
    queries = [
        Query(texts[q], namespace, frozenset(rel)) for q, rel in sorted(qrels.items(), key=_num)
    ]
    return Bench("BEIR SciFact (test)", docs, queries, [])


def _num(item: tuple[str, Any]) -> tuple[int, str]:
    key = item[0]
    return (int(key), key) if key.isdigit() else (0, key)


def locomo_session(key: str) -> str:
    """``locomo-conv-26/D3:5`` → ``locomo-conv-26/D3``."""
    return key.rsplit(":", 1)[0]


def locomo_bench(path: Path, plain: bool = False, split: str | None = None) -> Bench:
    """LoCoMo's turns as memories. ``plain``: the plain-lines protocol, what an import of
    ``{"content": ..., "namespace": ...}`` lines gives (no source, no time: the turns arrive
    in file order and episode context must come from that alone). ``split``: only the
    conversations of that split (:mod:`tools.splits`)."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    if split is not None:
        samples = [s for s in samples if locomo_split(str(s["sample_id"])) == split]
    docs: list[Doc] = []
    queries: list[Query] = []
    dropped_ids = 0
    skipped = 0
    for sample in samples:
        namespace = f"locomo-{sample['sample_id']}"
        conversation = sample["conversation"]
        turns: set[str] = set()
        for key, session in conversation.items():
            if not re.fullmatch(r"session_\d+", key):
                continue
            start = parse_session_time(conversation[f"{key}_date_time"])
            for index, turn in enumerate(session):
                dia_id = normalize_evidence([turn["dia_id"]])[0]
                turns.add(dia_id)
                request = StoreRequest(
                    content=f"{turn['speaker']}: {turn['text']}",
                    namespace=namespace,
                    valid_from=None if plain else start + timedelta(minutes=index),
                    source=None if plain else f"locomo/{sample['sample_id']}",
                    context=None if plain else {"dia_id": dia_id},
                )
                docs.append(Doc(f"{namespace}/{dia_id}", request))
        for qa in sample["qa"]:
            evidence = normalize_evidence(qa.get("evidence", []))
            known = [e for e in evidence if e in turns]
            dropped_ids += len(evidence) - len(known)
            if not known:
                skipped += 1
                continue
            group = LOCOMO_CATEGORIES.get(int(qa["category"]), f"category {qa['category']}")
            relevant = frozenset(f"{namespace}/{e}" for e in known)
            queries.append(Query(str(qa["question"]), namespace, relevant, group))
    notes = [
        f"{skipped} questions without a readable evidence turn skipped; "
        f"{dropped_ids} evidence ids naming no turn dropped"
    ]
    name = f"LoCoMo ({len(samples)} conversations, turn level)"
    name += f", {split} split" if split else ""
    name += ", plain lines (no source, no time)" if plain else ", with source and session time"
    return Bench(name, docs, queries, notes, episodes=True, session=locomo_session)


def parse_longmemeval_time(text: str) -> datetime:
    """A LongMemEval date such as ``2023/05/30 (Tue) 23:40``, read as UTC."""
    return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def longmemeval_session(key: str) -> str:
    """``answer_3a6f1e82_1/4`` (a session id and a turn number) → ``answer_3a6f1e82_1``."""
    return key.rsplit("/", 1)[0]


@dataclass(frozen=True)
class Haystack:
    """One LongMemEval question with the turns of its own haystack."""

    number: int
    """The question's place in the file (halves alternate over the questions kept)."""
    question_id: str
    query: Query
    docs: list[Doc]
    asked_at: datetime


def longmemeval_haystacks(
    data: Path, plain: bool = True, every: int = 1, offset: int = 0, split: str | None = None
) -> list[Haystack]:
    """The questions of ``data/questions.jsonl`` (every ``every``-th from ``offset``; of
    ``split`` alone when given, :mod:`tools.splits`), each with its haystack's user turns as
    store requests, in the haystack's order."""
    sessions: dict[str, dict[str, Any]] = {}
    with gzip.open(data / "sessions.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            raw = json.loads(line)
            sessions[str(raw["session_id"])] = raw
    haystacks = []
    questions = (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(questions):
        if number % every != offset % every:
            continue
        q = json.loads(line)
        if split is not None and longmemeval_split(str(q["question_id"])) != split:
            continue
        evidence = {str(s) for s in q["answer_session_ids"]}
        docs: list[Doc] = []
        relevant: set[str] = set()
        for session_id in q["haystack_session_ids"]:
            session = sessions[str(session_id)]
            start = parse_longmemeval_time(session["date"])
            for turn in session["user_turns"]:
                key = f"{session_id}/{turn['turn']}"
                if session_id in evidence and "answer" in session_id and turn.get("has_answer"):
                    relevant.add(key)
                docs.append(Doc(key, StoreRequest(
                    content=str(turn["content"]), namespace="longmemeval",
                    valid_from=None if plain else start + timedelta(minutes=int(turn["turn"])),
                    source=None if plain else f"longmemeval/{session_id}", split_long=True,
                )))  # fmt: skip
        if not relevant:
            continue
        query = Query(str(q["question"]), "longmemeval", frozenset(relevant),
                      str(q["question_type"]))  # fmt: skip
        haystacks.append(Haystack(number, str(q["question_id"]), query, docs,
                                  parse_longmemeval_time(q["question_date"])))  # fmt: skip
    return haystacks


# -- running ---------------------------------------------------------------------------------


HOME_CONFIG: list[str] = []
"""The text of ``--home-config``, written as every evaluated data directory's ``ferrex.toml``
(another embedding model, an embeddings server); empty: the defaults."""


def prepare_home(home: Path, cache_home: Path) -> None:
    """Point ``home``'s model and cache directories at ``cache_home``'s, so that the
    assembled model and the embedding cache outlive the (temporary) data directory."""
    # Private from the start, as ferrex makes a home: it would tighten (and warn of) any
    # entry others could read, once per data directory.
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if HOME_CONFIG:
        config = home / "ferrex.toml"
        config.write_text(HOME_CONFIG[0], encoding="utf-8")
        config.chmod(0o600)
    for name in ("models", "cache"):
        shared = cache_home / name
        shared.mkdir(mode=0o700, parents=True, exist_ok=True)
        link = home / name
        if not link.exists() and not link.is_symlink():
            link.symlink_to(shared, target_is_directory=True)


@dataclass
class Stored:
    by_memory: dict[str, str]
    """memory id → the benchmark's document key."""
    refused: dict[str, int]
    seconds: float


def store(app: App, bench: Bench, progress: Callable[[str], None]) -> Stored:
    """Import the documents (or find them in a reused home) and map memory ids to keys."""
    started = time.perf_counter()
    existing = {
        str(key): str(memory_id)
        for memory_id, key in app.projections().read_model.db.execute(
            "SELECT memory_id, json_extract(context, '$.eval_key') FROM memories"
        )
        if key is not None
    }
    wanted = [d for d in bench.docs if d.key not in existing]
    refused: dict[str, int] = {}
    if wanted:
        requests = [_with_key(d) for d in wanted]
        last = [0.0]

        def report(done: int, total: int) -> None:
            now = time.perf_counter()
            if now - last[0] > 15 or done == total:
                last[0] = now
                progress(f"  stored {done}/{total} ({now - started:.0f} s)")

        outcomes = app.writer().store_many(requests, chunk=256, progress=report)
        for doc, outcome in zip(wanted, outcomes, strict=True):
            if isinstance(outcome, FerrexError):
                refused[outcome.code] = refused.get(outcome.code, 0) + 1
                progress(f"  refused {doc.key}: [{outcome.code}] {outcome}")
            else:
                existing[doc.key] = outcome.id
    by_memory = {memory_id: key for key, memory_id in existing.items()}
    return Stored(by_memory, refused, time.perf_counter() - started)


def _with_key(doc: Doc) -> StoreRequest:
    context = dict(doc.request.context or {})
    context["eval_key"] = doc.key
    r = doc.request
    return StoreRequest(
        content=r.content, namespace=r.namespace, valid_from=r.valid_from, context=context,
        source=r.source, entities=r.entities, split_long=r.split_long,
    )  # fmt: skip


@dataclass(frozen=True)
class Mode:
    label: str
    reader: Reader
    legs: Legs
    include_stale: bool = False
    strategy: Strategy = "balanced"
    limit: int = K
    trimmed: bool = False
    """Asked as an agent asks (no ``min_relevance``: trimmed), not untrimmed."""

    def request(self, query: Query) -> RecallRequest:
        return RecallRequest(
            query=query.text,
            namespace=query.namespace,
            limit=self.limit,
            legs=self.legs,
            include_stale=self.include_stale,
            strategy=self.strategy,
            min_relevance=None if self.trimmed else 0.0,
        )


def short_modes(reader: Reader, kinds: Sequence[str]) -> list[Mode]:
    """The default at limit 5 untrimmed and trimmed (what an agent is shown), when asked."""
    if "trimmed" not in kinds:
        return []
    return [Mode(UNTRIMMED, reader, "hybrid", limit=SHORT),
            Mode(TRIMMED, reader, "hybrid", limit=SHORT, trimmed=True)]  # fmt: skip


def answer_tokens(
    count: Callable[[str], int | None], results: Sequence[Mapping[str, Any]]
) -> int | None:
    """The results an agent reads, as compact JSON, in tokens (None: no tokenizer)."""
    return count(json.dumps(list(results), separators=(",", ":"), ensure_ascii=False))


@dataclass
class Run:
    scores: dict[str, dict[str, Scores]]
    """mode → group → scores (the group ``all`` holds every query)."""
    hidden: dict[str, dict[str, int]]
    seconds: dict[str, float]


def ask(
    modes: Sequence[Mode],
    bench: Bench,
    stored: Stored,
    progress: Callable[[str], None],
    count: Callable[[str], int | None] | None = None,
) -> Run:
    run = Run({}, {}, {})
    for mode in modes:
        started = time.perf_counter()
        scores = run.scores[mode.label] = {}
        hidden = run.hidden[mode.label] = {}
        for number, query in enumerate(bench.queries):
            result = mode.reader.recall(mode.request(query))
            ranked = [stored.by_memory.get(r["id"], "?") for r in result.results]
            used = None
            if count is not None and mode.limit == SHORT:
                used = answer_tokens(count, result.results)
            half = HELD_OUT if number % 2 else TUNE
            for group in dict.fromkeys(("all", half, query.group)):
                scores.setdefault(group, Scores()).add(
                    ranked, set(query.relevant), bench.session, used
                )
            for reason, n in result.hidden.items():
                hidden[reason] = hidden.get(reason, 0) + n
        run.seconds[mode.label] = time.perf_counter() - started
        progress(f"  {mode.label}: {len(bench.queries)} queries in {run.seconds[mode.label]:.1f} s")
    return run


STORE_ENV: dict[str, str] = {}
"""The environment every evaluated data directory's configuration reads (``--embed-context``
sets ``FERREX_EMBED_CONTEXT``); nothing else of the caller's environment."""


def evaluate(
    bench: Bench,
    home: Path,
    cache_home: Path,
    reranker: str,
    later_days: float,
    progress: Callable[[str], None],
    overrides: dict[str, Any] | None = None,
    kinds: Sequence[str] = MODE_KINDS,
    variants: Sequence[dict[str, Any]] = (),
    late_weights: Sequence[float] = (),
) -> dict[str, Any]:
    prepare_home(home, cache_home)
    app = App(home=home, config=load(home, env=STORE_ENV))
    try:
        progress(f"{bench.name}: {len(bench.docs)} documents, {len(bench.queries)} queries")
        stored = store(app, bench, progress)
        progress(f"  {len(stored.by_memory)} memories ready in {stored.seconds:.0f} s")
        default = app.reader()
        if overrides:
            default.settings = replace(default.settings, **overrides)
        settings = default.settings
        projections, embedder = app.projections(), app.embedder()
        plain = Reader(projections, embedder, default.reranker,
                       replace(settings, **NO_CONTEXT), AccessLog())  # fmt: skip
        modes = [Mode("bm25", plain, "bm25")]
        if "legs" in kinds:
            modes.append(Mode("dense", plain, "dense"))
        if bench.episodes and "context" in kinds:
            modes += [
                Mode("hybrid, no episode context", plain, "hybrid"),
                Mode("bm25 + episode context", default, "bm25"),
            ]
        modes.append(Mode(DEFAULT, default, "hybrid"))
        modes += short_modes(default, kinds)
        if "strategies" in kinds:
            modes += [Mode(f"strategy {name}", default, "hybrid", strategy=name)
                      for name in STRATEGIES if name != "balanced"]  # fmt: skip
        for variant in variants:
            label = ", ".join(f"{k}={v}" for k, v in variant.items())
            tried = Reader(projections, embedder, default.reranker,
                           replace(settings, **variant), AccessLog())  # fmt: skip
            modes.append(Mode(f"{DEFAULT} with {label}", tried, "hybrid"))
        stage = load_reranker(choose_reranker(reranker, {}), home)
        if stage.state == "ready":
            modes.append(Mode(RERANK, Reader(projections, embedder, stage, settings), "hybrid"))
        if stage.state == "ready" and isinstance(stage.encoder, LateInteraction):
            for weight in late_weights:  # one model session and token cache for every weight
                tried_stage = RerankStage(stage.choice, stage.encoder.with_weight(weight))
                tried = Reader(projections, embedder, tried_stage, settings)
                modes.append(Mode(f"{RERANK} late_weight={weight:g}", tried, "hybrid"))
        if later_days and "later" in kinds:
            later = datetime.now(UTC) + timedelta(days=later_days)
            shifted = Reader(projections, embedder, default.reranker, settings, AccessLog(),
                             clock=lambda: later)  # fmt: skip
            label = f"{DEFAULT}, {later_days:g} days later"
            modes.append(Mode(label, shifted, "hybrid"))
            modes.append(Mode(f"{label}, include_stale", shifted, "hybrid", include_stale=True))
        run = ask(modes, bench, stored, progress, embedder.model().count_tokens)
    finally:
        app.close()
    table = {
        mode: {group: s.mean() for group, s in sorted(groups.items())}
        for mode, groups in run.scores.items()
    }
    return {
        "bench": bench.name,
        "documents": len(bench.docs),
        "memories": len(stored.by_memory),
        "refused": stored.refused,
        "queries": len(bench.queries),
        "notes": bench.notes,
        "store_seconds": round(stored.seconds, 1),
        "query_seconds": {m: round(s, 1) for m, s in run.seconds.items()},
        "hidden": {m: h for m, h in run.hidden.items() if h},
        "reranker": "ready" if stage.state == "ready" else f"unavailable ({stage.status})",
        "settings": {k: v for k, v in asdict(settings).items() if k != "namespace_staleness"},
        "results": table,
    }


def evaluate_longmemeval(
    haystacks: Sequence[Haystack],
    plain: bool,
    cache_home: Path,
    progress: Callable[[str], None],
    overrides: dict[str, Any] | None = None,
    kinds: Sequence[str] = MODE_KINDS,
    variants: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Each question in a fresh data directory of its own (its haystack's turns stored
    through ``Writer.store_many``), asked once per mode (and once per variant of the
    default's settings, so variants share one import); one embedder (and so one embedding
    cache and one loaded model) serves every directory."""
    name = "LongMemEval-S (shared questions, turn level)"
    name += ", plain lines (no source, no time)" if plain else ", with source and session time"
    started = time.perf_counter()
    scores: dict[str, dict[str, Scores]] = {}
    refused: dict[str, int] = {}
    hidden: dict[str, int] = {}
    seconds = {"store": 0.0, "recall": 0.0}
    documents = memories = 0
    with tempfile.TemporaryDirectory(prefix="ferrex-eval-lme-") as scratch:
        base = Path(scratch) / "embedder"
        prepare_home(base, cache_home)
        owner = App(home=base, config=load(base, env=STORE_ENV))
        embedder = owner.embedder()
        try:
            for index, stack in enumerate(haystacks):
                home = Path(scratch) / stack.question_id
                prepare_home(home, cache_home)
                app = App(home=home, config=load(home, env=STORE_ENV), _embedder=embedder)
                try:
                    bench = Bench(name, stack.docs, [stack.query], [], episodes=True,
                                  session=longmemeval_session)  # fmt: skip
                    stored = store(app, bench, lambda _: None)
                    seconds["store"] += stored.seconds
                    documents += len(stack.docs)
                    memories += len(stored.by_memory)
                    for code, n in stored.refused.items():
                        refused[code] = refused.get(code, 0) + n
                    asked = time.perf_counter()
                    default = app.reader()
                    if overrides:
                        default.settings = replace(default.settings, **overrides)
                    at = None if plain else stack.asked_at
                    modes = _lme_modes(app, default, kinds, at, variants)
                    half = HELD_OUT if index % 2 else TUNE
                    for mode in modes:
                        result = mode.reader.recall(mode.request(stack.query))
                        ranked = [stored.by_memory.get(r["id"], "?") for r in result.results]
                        used = None
                        if mode.limit == SHORT:
                            used = answer_tokens(embedder.model().count_tokens, result.results)
                        by_group = scores.setdefault(mode.label, {})
                        for group in ("all", half, stack.query.group):
                            by_group.setdefault(group, Scores()).add(
                                ranked, set(stack.query.relevant), longmemeval_session, used
                            )
                        for reason, count in result.hidden.items():
                            hidden[reason] = hidden.get(reason, 0) + count
                    seconds["recall"] += time.perf_counter() - asked
                finally:
                    app._embedder = None  # shared: the owner closes it
                    app.close()
                    shutil.rmtree(home, ignore_errors=True)
                if (index + 1) % 10 == 0 or index + 1 == len(haystacks):
                    progress(f"  {index + 1}/{len(haystacks)} questions "
                             f"({time.perf_counter() - started:.0f} s)")  # fmt: skip
        finally:
            owner.close()
    table = {
        mode: {group: s.mean() for group, s in sorted(groups.items())}
        for mode, groups in scores.items()
    }
    return {
        "bench": name,
        "documents": documents,
        "memories": memories,
        "refused": refused,
        "queries": len(haystacks),
        "notes": ["one fresh data directory per question"],
        "store_seconds": round(seconds["store"], 1),
        "query_seconds": {"all modes": round(seconds["recall"], 1)},
        "hidden": {DEFAULT: hidden} if hidden else {},
        "reranker": "not run",
        "settings": {},
        "results": table,
    }


def _lme_modes(
    app: App,
    default: Reader,
    kinds: Sequence[str],
    at: datetime | None,
    variants: Sequence[dict[str, Any]] = (),
) -> list[Mode]:
    """bm25, (dense), the default, the default with each variant's settings: each reading
    the clock at the question's date when the protocol has dates, so "two weeks ago" and
    staleness count from the day it was asked."""
    settings = default.settings
    projections, embedder = app.projections(), app.embedder()
    clock = (lambda: at) if at is not None else (lambda: datetime.now(UTC))
    plain = Reader(projections, embedder, default.reranker,
                   replace(settings, **NO_CONTEXT), AccessLog(), clock=clock)  # fmt: skip
    asked = Reader(projections, embedder, default.reranker, settings, AccessLog(), clock=clock)
    modes = [Mode("bm25", plain, "bm25")]
    if "legs" in kinds:
        modes.append(Mode("dense", plain, "dense"))
    modes.append(Mode(DEFAULT, asked, "hybrid"))
    modes += short_modes(asked, kinds)
    for variant in variants:
        label = ", ".join(f"{k}={v}" for k, v in variant.items())
        tried = Reader(projections, embedder, default.reranker, replace(settings, **variant),
                       AccessLog(), clock=clock)  # fmt: skip
        modes.append(Mode(f"{DEFAULT} with {label}", tried, "hybrid"))
    return modes


# -- report ----------------------------------------------------------------------------------


def _row(mode: str, m: dict[str, float]) -> str:
    cells = [m["recall@1"], m["recall@5"], m["recall_any@5"], m["recall@10"], m["ndcg@10"],
             m["session@10"]]  # fmt: skip
    return f"| {mode} | " + " | ".join("" if math.isnan(c) else f"{c:.3f}" for c in cells) + " |"


def render(report: dict[str, Any]) -> str:
    lines = [f"## {report['bench']}", ""]
    lines.append(
        f"{report['documents']} documents → {report['memories']} memories"
        + (f" (refused: {report['refused']})" if report["refused"] else "")
        + f", {report['queries']} queries; import {report['store_seconds']} s; queries "
        + ", ".join(f"{m} {s} s" for m, s in report["query_seconds"].items())
    )
    lines += report["notes"]
    lines.append(f"held back by recall (stale, superseded): {report['hidden'] or 'nothing'}")
    results = report["results"]
    header = ["| mode | recall@1 | recall@5 | recall_any@5 | recall@10 | nDCG@10 | session@10 |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for title, group in (("all queries", "all"), (TUNE, TUNE), (HELD_OUT, HELD_OUT)):
        lines += ["", f"{title}:", "", *header]
        lines += [_row(mode, by_group[group]) for mode, by_group in results.items()
                  if group in by_group]  # fmt: skip
        if RERANK not in results:
            lines.append(f"| {RERANK} | {report['reranker']} | | | | | |")
    if TRIMMED in results and UNTRIMMED in results:
        lines += ["", f"limit {SHORT}, trimmed (as an agent asks) against untrimmed:", "",
                  "| queries | recall_any@5 | recall@5 | tokens | tokens ÷ untrimmed |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for group in ("all", TUNE, HELD_OUT):
            cut, whole = results[TRIMMED].get(group), results[UNTRIMMED].get(group)
            if cut is None or whole is None:
                continue
            ratio = cut["tokens"] / whole["tokens"] if whole["tokens"] else math.nan
            lines.append(
                f"| {group}: trimmed | {cut['recall_any@5']:.3f} | "
                f"{cut['recall@5']:.3f} | {cut['tokens']:.0f} | {ratio:.3f} |"
            )
            lines.append(f"| {group}: untrimmed | {whole['recall_any@5']:.3f} | "
                         f"{whole['recall@5']:.3f} | {whole['tokens']:.0f} | |")  # fmt: skip
    groups = [g for g in results[DEFAULT] if g not in ("all", TUNE, HELD_OUT)]
    if groups:
        lines += ["", "recall@10 (recall@1) by category, all queries:", ""]
        sizes = [f"{g} (n={results[DEFAULT][g]['n']})" for g in groups]
        lines.append("| mode | " + " | ".join(sizes) + " |")
        lines.append("|---" * (len(groups) + 1) + "|")
        for mode, by_group in results.items():
            cells = [
                f"{by_group[g]['recall@10']:.3f} ({by_group[g]['recall@1']:.3f})" for g in groups
            ]
            lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


class _NoContext(TypedDict):
    context_share: float
    note_context_share: float


NO_CONTEXT: _NoContext = {"context_share": 0.0, "note_context_share": 0.0}
"""The settings that turn episode context off (labelled turns and notes alike)."""

_SETTINGS: dict[str, Callable[[str], Any]] = {
    "dense_weight": float, "context_share": float, "note_context_share": float,
    "context_reach": int,
    "context_gap": float, "prefetch": int, "dense_adapt": float, "dense_lift": float,
    "graph_weight": float, "date_boost": float, "spelling_weight": float,
    "form_boost": float,
    "context_below_lender": lambda v: v.lower() in ("1", "true", "yes"),
    "top_guard": lambda v: v.lower() in ("1", "true", "yes"),
    "label_order": lambda v: v.lower() in ("1", "true", "yes"),
    "query_adapter": float,
}  # fmt: skip


def parse_setting(item: str) -> tuple[str, Any]:
    name, _, value = item.partition("=")
    if name not in _SETTINGS:
        raise SystemExit(f"--setting {item!r}: one of {', '.join(_SETTINGS)}")
    return name, _SETTINGS[name](value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", choices=("beir", "locomo", "longmemeval", "all"))
    parser.add_argument("--data", type=Path, help="the data set (directory or file)")
    parser.add_argument("--home", type=Path, help="keep (or reuse) the data directory here")
    parser.add_argument(
        "--cache-home",
        type=Path,
        default=Path("~/.cache/ferrex-eval").expanduser(),
        help="where the model files and the embedding cache persist across runs",
    )
    parser.add_argument("--reranker", default="none", help="a reranker setting (models.reranker)")
    parser.add_argument(
        "--late-weights",
        default="",
        help="with --reranker late: more rows, one per recall.late_weight, comma-separated",
    )
    parser.add_argument(
        "--protocol",
        default="plain,source",
        help="LoCoMo and LongMemEval protocols, comma-separated: plain (lines without source "
        "or time, in file order) and source (the conversation or session as source, the "
        "session time)",
    )
    parser.add_argument(
        "--every", type=int, default=1,
        help="LongMemEval: keep every N-th question (3: the fixed tuning subset)",
    )  # fmt: skip
    parser.add_argument(
        "--offset", type=int, default=0, help="LongMemEval: which of every N to keep (0..N-1)"
    )
    parser.add_argument(
        "--split", choices=("train", "validation", "test"),
        help="LoCoMo and LongMemEval: only this split of tools/splits.py (fit on train, "
        "choose on validation, report on test)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument(
        "--modes",
        default=",".join(MODE_KINDS),
        help="which modes beside bm25 and the default, comma-separated: legs (dense alone), "
        "context (hybrid without and bm25 with episode context), strategies (each "
        "non-default strategy), later (the clock moved --later-days ahead), trimmed (the "
        "default at limit 5 untrimmed and as an agent asks, with its answers' tokens)",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a RecallSettings value for this run (dense_weight, dense_adapt, "
        "context_share, note_context_share, context_reach, context_gap, prefetch, "
        "graph_weight, date_boost, context_below_lender, top_guard, query_adapter); repeatable",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=VALUE[,NAME=VALUE]",
        help="also run the default with these settings overridden, as one more row "
        "(same names as --setting); repeatable, so settings are compared in one run",
    )
    parser.add_argument(
        "--later-days",
        type=float,
        default=30.0,
        help="also run the default recall as if this many days had passed (0: skip)",
    )
    parser.add_argument(
        "--embed-context",
        type=int,
        default=None,
        metavar="CHARS",
        help="store.embed_context for every store of the run: characters of the turn before "
        "an episodic memory embedded with it (0: off; unset: the default)",
    )
    parser.add_argument(
        "--home-config",
        type=Path,
        default=None,
        metavar="TOML",
        help="a ferrex.toml for every evaluated data directory, e.g. [models] dense = "
        '"openai:e5" with embedding_url set, to measure another embedding model (use a '
        "--cache-home of its own)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.home_config is not None:
        try:
            HOME_CONFIG[:] = [args.home_config.read_text(encoding="utf-8")]
        except (OSError, UnicodeDecodeError) as exc:
            parser.error(f"--home-config {args.home_config}: {exc}")
    if args.embed_context is not None:
        STORE_ENV["FERREX_EMBED_CONTEXT"] = str(args.embed_context)
    overrides = dict(parse_setting(item) for item in args.setting)
    variants = [dict(parse_setting(i) for i in v.split(",")) for v in args.variant]
    kinds = [k for k in args.modes.split(",") if k]
    if any(k not in MODE_KINDS for k in kinds):
        raise SystemExit(f"--modes {args.modes!r}: each one of {', '.join(MODE_KINDS)}")

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    benches: list[tuple[str, Callable[[], Bench]]] = []
    if args.bench in ("beir", "all"):
        path = args.data if args.bench == "beir" and args.data else DATA / "scifact"
        benches.append(("beir", lambda: beir_bench(path)))
    if args.bench in ("locomo", "all"):
        file = args.data if args.bench == "locomo" and args.data else DATA / "locomo/locomo10.json"
        if "plain" in args.protocol:
            benches.append(("locomo-plain", lambda: locomo_bench(file, True, args.split)))
        if "source" in args.protocol:
            benches.append(("locomo", lambda: locomo_bench(file, False, args.split)))

    def run(bench: Bench, home: Path) -> dict[str, Any]:
        return evaluate(bench, home, args.cache_home, args.reranker, args.later_days,
                        progress, overrides, kinds, variants,
                        [float(w) for w in args.late_weights.split(",") if w.strip()])  # fmt: skip

    started = time.perf_counter()
    reports = []
    if args.bench == "longmemeval":
        if args.every < 1:
            raise SystemExit("--every must be 1 or more")
        folder = args.data or DATA / "longmemeval"
        for protocol in [p for p in ("plain", "source") if p in args.protocol]:
            stacks = longmemeval_haystacks(
                folder, protocol == "plain", args.every, args.offset, args.split
            )
            progress(f"LongMemEval-S {protocol}: {len(stacks)} questions, "
                     f"{sum(len(h.docs) for h in stacks)} turns")  # fmt: skip
            reports.append(evaluate_longmemeval(stacks, protocol == "plain", args.cache_home,
                                                progress, overrides, kinds, variants))  # fmt: skip
    for name, build in benches:
        bench = build()
        keep = args.home / name if args.home is not None else None
        with harness.scratch(f"ferrex-eval-{name}-", keep) as home:
            reports.append(run(bench, home))
    load_avg = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    total = time.perf_counter() - started
    print(f"# ferrex retrieval evaluation ({total:.0f} s; {load_avg})\n")
    for report in reports:
        print(render(report) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"seconds": total, "uptime": load_avg,
                                         "reports": reports}, indent=2, default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
