"""Learn recall's relevance model from real questions: collect, fit, choose, report.

    python -m tools.learn_relevance collect [--out DIR] [--home DIR] [--cache-home DIR]
    python -m tools.learn_relevance fit     [--out DIR]   (prints the constants)
    python -m tools.learn_relevance report  [--out DIR]   (today's constants, per split)
    python -m tools.learn_relevance rank    [--out DIR]   (a learned order of the pool)
    python -m tools.learn_relevance verdict [--out DIR] [--check FILE ...]
                                              (a learned "nothing relevant", fitted and reported)

``collect`` runs ferrex's real import and real recall (``tools/eval_retrieval.py``'s loading
and home preparation; ``tools/eval_relevance.py``'s golden loading) and writes one JSON line
per question to ``DIR/rows.jsonl``: every result of an untrimmed recall at ``limit`` 5
(``explain`` on) with its relevance evidence (:class:`ferrex.rules.relevance.Evidence`, as
recall computed it), whether it is an answer, and its size in the bundled model's tokens
(the result as an agent is shown it, compact JSON). The questions:

- LoCoMo, plain lines (what ``ferrex import`` of plain lines gives), split by conversation
  (``tools/splits.py``): each question in its own conversation (answerable: its evidence
  turns are the answers, the top-ranked other turns hard negatives), and again in another
  conversation's namespace of the same split (validation: a training one), where it is
  unanswerable (another pair of speakers, another life).
- The golden set (``golden_set/``: its queries, ``unanswerable.json`` and the relevance set
  of its own), split by ``tools/eval_relevance.py``'s hash halves: the calibration half
  trains, the other half validates and is reported.
- LongMemEval is not collected (its embeddings are not cached yet; a haystack per question
  costs minutes to embed on a busy machine): the code path is left for when they are.

``fit`` fits :class:`ferrex.rules.relevance.AnswerModel` (logistic, numpy Newton steps with
an L2 penalty, not on the bias) on the training rows: the results a trim may hide (ranked
4th and 5th) of the answerable questions, positive when they hold an answer the first three
lack (what hiding them would lose), hard negatives otherwise; each set weighs the same, and
its positives as much as its negatives. The L2 strength and the golden set's weight are
chosen on the validation rows (log loss), then ``kept_from``: the highest threshold at
which trimming loses no validation answer that showing every result past the third would
keep, on every set. It prints the constants for ``ferrex/rules/relevance.py`` and, before
(trimming by relevance alone) and after, for every set and split, what a default recall
would show against an untrimmed one: hit@5 both ways, the tokens' ratio (answerable
questions, as ``tools/eval_retrieval.py`` counts), results per answer, and the verdict's
rate on unanswerable and answerable questions. ``report`` prints the same for the
constants in the package. The simulation is exact for the first five results, which is
what a default recall judges; ``python -m tools.eval_retrieval --modes trimmed``,
``tools/eval_agent_notes.py`` and ``python -m tools.eval_relevance --trimming`` measure it through
recall itself.

``collect --depth 30`` keeps an answerable question's whole pool (the first
:data:`ferrex.read.request.POOL` of an untrimmed recall), each row with its explain document
(the stages' scores) and its text; ``rank`` then fits a linear ranker over the pool
(:data:`RANK_INPUTS`, pointwise or pairwise logistic) on the train splits, chooses its form
and L2 on validation (R@10) and prints R@5, R@10 and any@5 before and after for every set and
split. Recall does not use it, and no ranker's weights are in the package: chosen on
validation (pairwise, L2 0.1; LoCoMo validation R@10 0.778 to 0.806, LongMemEval 0.911 to
0.915), it moved LongMemEval's test split from R@10 0.860 to 0.863 (any@5 0.892 both) and
lowered LoCoMo's (R@10 0.732 to 0.724, any@5 0.727 to 0.719); across the grid no setting
raised either test split's R@10 by more than 0.003. Its inputs cost about 4.5 ms per recall
(30 candidates, on a loaded two-core machine).

The relevance model (the labels and the verdict) is not refitted here: refits of its five
text inputs on these rows traded the golden set's unanswerable verdicts for LoCoMo's
(see the branch's report).

``verdict`` learns the verdict *nothing relevant* from the rows instead of the relevance
rules alone: a logistic chance that a result is an answer over :data:`VERDICT_INPUTS` (the
relevance rules' own value, on a logit scale, so the rules are evidence and not the last
word; the cosine, its margin over the dense leg's floor, a per-store calibration: what the
store's memories that are not about the question score against it; the coverage; the legs'
ranks and agreement; the gap to the best cosine; the BM25 share; and how far the memory
stands out of its dense neighbourhood, ``cosine - runner_up``). Fitted on every set's train
split (answers positive; every result of an unanswerable question and the other results of
an answerable one negative; each set and class weighing the same), its L2 and its threshold
chosen on the validation splits, it is reported on every split, and, as the verdict
``veto`` (the rules' verdict kept only where the learned chance agrees) too, beside the
rules' verdict. ``--check FILE`` adds rows of other sets to the report only, never fitted
or chosen on: ``collect --sets agent-notes --out DIR2`` writes the agent-notes workload's
tuning half (its held-out half is never collected). Recall does not use it (see
:func:`verdict`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from ferrex.app import App
from ferrex.config import load
from ferrex.read.request import RecallRequest
from ferrex.rules import relevance
from ferrex.rules.asked import answers_form, asked_kinds, stated_kinds
from ferrex.rules.relevance import AnswerModel, Evidence, Model
from tools import eval_relevance
from tools.eval_golden import DEFAULT_SET, load_set
from tools.eval_retrieval import (
    STORE_ENV,
    Bench,
    locomo_bench,
    longmemeval_haystacks,
    longmemeval_session,
    prepare_home,
    store,
)
from tools.splits import locomo_split, longmemeval_split

LIMIT: Final = 5
"""A default recall's limit: the rows are what it would judge."""
DATA: Final = Path("/work/shared/data")
OUT: Final = Path("/tmp/ferrex-learn-relevance")
L2_GRID: Final = (0.1, 1.0, 10.0)
GOLDEN_WEIGHT_GRID: Final = (0.5, 1.0, 2.0)


# --- collect ------------------------------------------------------------------------------


def _evidence(doc: dict[str, Any]) -> Evidence:
    return Evidence(
        doc["cosine"],
        doc["coverage"],
        doc["missing_named"],
        doc["missing_name"],
        doc["missing_attribute"],
        doc.get("given", 0.0),
        doc.get("dense_rank"),
        doc.get("sparse_rank"),
        doc.get("cosine_gap", 0.0),
        doc.get("bm25_share", 0.0),
        doc.get("off_subject", 0.0),
        doc.get("floor", 0.0),
        doc.get("runner_up", 0.0),
    )


def _shown(result: Mapping[str, Any]) -> dict[str, Any]:
    # A result as a default recall shows it: without explain and its evidence.
    return {k: v for k, v in result.items() if k not in ("explain", "relevance_evidence")}


def _rows(
    app: App,
    request: RecallRequest,
    answers: set[str],
    key_of: Callable[[str], str],
    depth: int = LIMIT,
) -> list[dict[str, Any]]:
    count = app.embedder().model().count_tokens
    result = app.recall(replace(request, limit=depth, explain=True, min_relevance=0.0,
                                count_access=False))  # fmt: skip
    rows = []
    for r in result.results:
        shown = json.dumps(_shown(r), separators=(",", ":"), ensure_ascii=False)
        row = {
            "answer": key_of(r["id"]) in answers,
            "tokens": int(count(shown) or 0),
            "evidence": r["relevance_evidence"],
        }
        row["text"] = _text(r)
        if depth > LIMIT:  # what the ranker reads beside the evidence
            row["stages"] = r["explain"]
        rows.append(row)
    return rows


def _text(result: Mapping[str, Any]) -> str:
    parts = [result.get(k) for k in ("subject", "predicate", "object", "content", "name")]
    return " ".join(str(p) for p in parts if p)


def collect_locomo(
    out: Path, home: Path, cache_home: Path, depth: int = LIMIT
) -> Iterable[dict[str, Any]]:
    bench = locomo_bench(DATA / "locomo/locomo10.json", plain=True)
    prepare_home(home, cache_home)
    app = App(home=home, config=load(home, env=STORE_ENV))
    try:
        stored = store(app, bench, lambda m: print(m, file=sys.stderr))
        by_memory = stored.by_memory
        namespaces = sorted({q.namespace for q in bench.queries})
        split_of = {ns: locomo_split(ns.removeprefix("locomo-")) for ns in namespaces}
        others = {}
        for ns in namespaces:
            same = [n for n in namespaces if split_of[n] == split_of[ns] and n != ns]
            if not same:  # validation holds one conversation: ask it in a training one
                same = [n for n in namespaces if split_of[n] == "train"]
            others[ns] = same[0] if same else ns
        for number, q in enumerate(bench.queries):
            split = split_of[q.namespace]
            request = RecallRequest(query=q.text, namespace=q.namespace)
            rows = _rows(app, request, set(q.relevant), lambda m: by_memory.get(m, m), depth)
            yield {"set": "locomo", "split": split, "kind": "answer", "group": q.group,
                   "query": q.text, "relevant": len(q.relevant), "rows": rows}  # fmt: skip
            elsewhere = replace(request, namespace=others[q.namespace])
            rows = _rows(app, elsewhere, set(), lambda m: m)
            yield {"set": "locomo", "split": split, "kind": "unanswerable", "group": q.group,
                   "query": q.text, "rows": rows}  # fmt: skip
            if number % 200 == 0:
                print(f"  locomo {number}/{len(bench.queries)}", file=sys.stderr, flush=True)
    finally:
        app.close()


def collect_golden(scratch: Path) -> Iterable[dict[str, Any]]:
    golden = load_set(DEFAULT_SET)
    unanswerable = eval_relevance.load_unanswerable(DEFAULT_SET / "unanswerable.json", golden)
    own = eval_relevance.load_own(DEFAULT_SET, golden)
    made: list[list[dict[str, Any]]] = []

    def rows(
        app: App, request: RecallRequest, expected: set[str], key_of: dict[str, str]
    ) -> tuple[Any, ...]:
        found = _rows(app, request, expected, lambda m: key_of.get(m, m))
        made.append(found)
        return tuple(found)

    # eval_relevance.collect asks every query through the real recall (forgotten ones after
    # their forget); its row maker is swapped for this one, which keeps the new evidence.
    original = eval_relevance._rows
    eval_relevance._rows = rows
    try:
        judged = eval_relevance.collect(golden, unanswerable, own, scratch)
    finally:
        eval_relevance._rows = original
    for j in judged:
        yield {"set": "golden", "split": "train" if j.calibration else "validation",
               "kind": "answer" if j.answerable else "unanswerable", "group": j.category,
               "query": j.query, "rows": list(j.rows)}  # fmt: skip


def _key_of(by_memory: dict[str, str]) -> Callable[[str], str]:
    return lambda memory_id: by_memory.get(memory_id, memory_id)


def collect_longmemeval(
    splits: Sequence[str], cache_home: Path, depth: int = LIMIT
) -> Iterable[dict[str, Any]]:
    """LongMemEval-S, plain protocol, the questions of ``splits``: each in a fresh data
    directory holding its own haystack (answerable), and the previous question of the same
    split asked of it too (unanswerable, when none of its answer turns is in this haystack).
    One embedder (and embedding cache) serves every directory."""
    stacks = [h for h in longmemeval_haystacks(DATA / "longmemeval", plain=True)
              if longmemeval_split(h.question_id) in splits]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ferrex-learn-lme-") as scratch:
        base = Path(scratch) / "embedder"
        prepare_home(base, cache_home)
        owner = App(home=base, config=load(base, env=STORE_ENV))
        embedder = owner.embedder()
        previous: dict[str, Any] = {}
        try:
            for number, stack in enumerate(stacks):
                split = longmemeval_split(stack.question_id)
                home = Path(scratch) / stack.question_id
                prepare_home(home, cache_home)
                app = App(home=home, config=load(home, env=STORE_ENV), _embedder=embedder)
                try:
                    bench = Bench("lme", stack.docs, [stack.query], [], episodes=True,
                                  session=longmemeval_session)  # fmt: skip
                    by_memory = store(app, bench, lambda _: None).by_memory
                    keys = set(by_memory.values())
                    request = RecallRequest(query=stack.query.text, namespace="longmemeval")
                    rows = _rows(app, request, set(stack.query.relevant),
                                 _key_of(by_memory), depth)  # fmt: skip
                    yield {"set": "longmemeval", "split": split, "kind": "answer",
                           "group": stack.query.group, "query": stack.query.text,
                           "relevant": len(stack.query.relevant), "rows": rows}  # fmt: skip
                    other = previous.get(split)
                    if other is not None and not (set(other.query.relevant) & keys):
                        asked = replace(request, query=other.query.text)
                        yield {"set": "longmemeval", "split": split, "kind": "unanswerable",
                               "group": other.query.group, "query": other.query.text,
                               "rows": _rows(app, asked, set(), lambda m: m)}  # fmt: skip
                    previous[split] = stack
                finally:
                    app._embedder = None  # shared: the owner closes it
                    app.close()
                print(f"  longmemeval {number + 1}/{len(stacks)}", file=sys.stderr, flush=True)
        finally:
            owner.close()


def collect_agent_notes(scratch: Path) -> Iterable[dict[str, Any]]:
    """The agent-notes workload's TUNING half only (``tools/eval_agent_notes.py``: its
    notes through the real ``ferrex import``, its questions with their filters, untrimmed,
    ``explain`` on, in-process): rows to check a learned model against (``verdict
    --check``), never to fit or choose on; its held-out half is never collected."""
    # Imported here: the workload's tool pulls in the MCP client, which the other sets need not.
    from tools import eval_agent_notes as notes_eval

    notes = notes_eval._load(notes_eval.SET_DIR / "notes.jsonl")
    questions = notes_eval._load(notes_eval.SET_DIR / "questions.jsonl")
    home = scratch / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERREX_")}
    imported = notes_eval.run_import(notes_eval._ferrex(), home, notes, env, scratch)
    app = App(home=home, config=load(home, env={}))
    try:
        for q in questions:
            if notes_eval.half_of(q["id"]) != "tuning":
                continue
            args = notes_eval.recall_args(q, LIMIT, 0.0)
            request = RecallRequest(
                query=args["query"], entities=tuple(args.get("entities") or ()),
                after=args.get("after"), before=args.get("before"),
            )  # fmt: skip
            answers = set(q.get("answers") or ())
            rows = _rows(app, request, answers, lambda m: imported.note_of.get(m, m))
            kind = "unanswerable" if q["kind"] == "unanswerable" else "answer"
            yield {"set": "agent-notes", "split": "tuning", "kind": kind, "group": q["kind"],
                   "query": q["question"], "rows": rows}  # fmt: skip
    finally:
        app.close()


def collect(
    out: Path,
    home: Path,
    cache_home: Path,
    sets: Sequence[str],
    lme_splits: Sequence[str],
    depth: int = LIMIT,
) -> None:
    """Append the rows of ``sets`` to ``out/rows.jsonl``; ``depth``: how many results an
    answerable LoCoMo or LongMemEval question's rows hold (:data:`LIMIT` to learn a trim; the
    pool, :data:`ferrex.read.request.POOL`, to learn an order: then each row also carries
    the explain document and the memory's text)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "rows.jsonl").open("a", encoding="utf-8") as sink:
        if "golden" in sets:
            with tempfile.TemporaryDirectory(prefix="ferrex-learn-golden-") as scratch:
                for doc in collect_golden(Path(scratch)):
                    sink.write(json.dumps(doc) + "\n")
        if "agent-notes" in sets:
            with tempfile.TemporaryDirectory(prefix="ferrex-learn-notes-") as scratch:
                for doc in collect_agent_notes(Path(scratch)):
                    sink.write(json.dumps(doc) + "\n")
        if "locomo" in sets:
            for doc in collect_locomo(out, home, cache_home, depth):
                sink.write(json.dumps(doc) + "\n")
        if "longmemeval" in sets:
            for doc in collect_longmemeval(lme_splits, cache_home, depth):
                sink.write(json.dumps(doc) + "\n")
                sink.flush()


# --- fit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    set: str
    split: str
    kind: str
    group: str
    evidence: tuple[Evidence, ...]
    answers: tuple[bool, ...]
    tokens: tuple[int, ...]


def read(out: Path) -> list[Question]:
    return _read_lines(out / "rows.jsonl")


def matrix(
    questions: Sequence[Question], golden_weight: float
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Inputs (:func:`ferrex.rules.relevance.inputs`), labels and weights of the results a
    trim may hide (past the first :data:`ferrex.rules.relevance.SHOWN_AT_LEAST`) of the
    answerable questions: positive when the result holds an answer none of the first ones
    gives. Each set weighs the same in total (times ``golden_weight`` for the golden set),
    and within it positives and negatives weigh the same."""
    first = relevance.SHOWN_AT_LEAST
    xs, ys, groups = [], [], []
    for q in questions:
        if q.kind != "answer":
            continue
        for e, a in list(zip(q.evidence, q.answers, strict=True))[first:LIMIT]:
            label = a and not any(q.answers[:first])
            xs.append(relevance.inputs(e, relevance.DEFAULT_MODEL.relevance(e)))
            ys.append(1.0 if label else 0.0)
            groups.append((q.set, label))
    sizes: dict[tuple[str, bool], int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    w = np.asarray([(golden_weight if g[0] == "golden" else 1.0) / sizes[g] for g in groups])
    return np.asarray(xs), np.asarray(ys), w * len(w) / w.sum()


def logistic(
    x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], w: np.ndarray[Any, Any], l2: float
) -> tuple[np.ndarray[Any, Any], float]:
    """Weighted logistic regression with an L2 penalty (not on the bias), by Newton steps."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    penalty = np.eye(d + 1) * l2
    penalty[d, d] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(xb @ beta)))
        grad = xb.T @ (w * (p - y)) + penalty @ beta
        hess = (xb * (w * p * (1 - p))[:, None]).T @ xb + penalty
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:d], float(beta[d])


def log_loss(model: AnswerModel, questions: Sequence[Question]) -> float:
    x, y, w = matrix(questions, 1.0)
    z = x @ np.asarray(model.weights) + model.bias
    p = 1.0 / (1.0 + np.exp(-z))
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return float(-(w * (y * np.log(p) + (1 - y) * np.log(1 - p))).sum() / w.sum())


@dataclass
class Figures:
    questions: int = 0
    answerable: int = 0
    unanswerable: int = 0
    hit_default: int = 0
    hit_untrimmed: int = 0
    tokens_default: int = 0
    tokens_untrimmed: int = 0
    verdict_unanswerable: int = 0
    verdict_answerable: int = 0
    rows_default: int = 0

    @property
    def lost(self) -> int:
        return self.hit_untrimmed - self.hit_default

    def line(self) -> str:
        a, u = max(self.answerable, 1), max(self.unanswerable, 1)
        ratio = self.tokens_default / max(self.tokens_untrimmed, 1)
        return (
            f"n={self.answerable}+{self.unanswerable} hit@5 default {self.hit_default / a:.3f} "
            f"untrimmed {self.hit_untrimmed / a:.3f} (lost {self.lost})"
            f" tokens ratio {ratio:.3f} rows {self.rows_default / max(self.questions, 1):.2f}"
            f" verdict: unanswerable {self.verdict_unanswerable / u:.3f}"
            f" answerable {self.verdict_answerable / a:.3f}"
        )


def simulate(
    questions: Iterable[Question],
    model: Model = relevance.DEFAULT_MODEL,
    answer: AnswerModel | None = relevance.ANSWER_MODEL,
) -> Figures:
    """What a default recall (trimmed: :func:`ferrex.rules.relevance.trim`) shows against an
    untrimmed one, from the first :data:`LIMIT` results of each question (what recall's trim
    sees); token ratio over the answerable questions, as ``tools/eval_retrieval.py``."""
    f = Figures()
    for q in questions:
        shown = q.evidence[:LIMIT]
        values = [model.relevance(e) for e in shown]
        chances = None
        if answer is not None:
            chances = [answer.chance(e, v) for e, v in zip(shown, values, strict=True)]
        kept = relevance.trim(values, model, chances, answer or relevance.ANSWER_MODEL)
        verdict = relevance.nothing_relevant([model.label(v) for v in values])
        f.questions += 1
        f.rows_default += len(kept)
        if q.kind == "answer":
            f.tokens_default += sum(q.tokens[i] for i in kept)
            f.tokens_untrimmed += sum(q.tokens[:LIMIT])
            f.answerable += 1
            f.hit_untrimmed += any(q.answers[:LIMIT])
            f.hit_default += any(q.answers[i] for i in kept)
            f.verdict_answerable += verdict
        else:
            f.unanswerable += 1
            f.verdict_unanswerable += verdict
    return f


def report(questions: Sequence[Question], answer: AnswerModel | None) -> None:
    for name in ("golden", "locomo", "longmemeval"):
        for split in ("train", "validation", "test"):
            chosen = [q for q in questions if q.set == name and q.split == split]
            if chosen:
                figures = simulate(chosen, answer=answer)
                print(f"{name:11s} {split:10s} {figures.line()}")


def choose_kept_from(answer: AnswerModel, validation: Sequence[Question]) -> AnswerModel:
    """The highest ``kept_from`` at which trimming loses no answer of the validation
    questions' top fives that showing every result past the third would keep, on every set
    (what the verdict's shorter answers lose is the verdict's)."""
    by_set = {s: [q for q in validation if q.set == s] for s in sorted({q.set for q in validation})}
    keep_all = replace(answer, kept_from=0.0)
    before = {s: simulate(qs, answer=keep_all).lost for s, qs in by_set.items()}
    best = 0.0
    for t in [round(x, 3) for x in np.arange(0.005, 0.6, 0.005)]:
        tried = replace(answer, kept_from=t)
        if all(simulate(qs, answer=tried).lost <= before[s] for s, qs in by_set.items()):
            best = t
        else:
            break
    return replace(answer, kept_from=best)


def fit(out: Path) -> AnswerModel:
    questions = read(out)
    train = [q for q in questions if q.split == "train"]
    validation = [q for q in questions if q.split == "validation"]
    print("before (the relevance model alone trims), per set and split:")
    report(questions, None)
    best: tuple[float, AnswerModel, float, float] | None = None
    for l2 in L2_GRID:
        for gw in GOLDEN_WEIGHT_GRID:
            x, y, w = matrix(train, gw)
            weights, bias = logistic(x, y, w, l2)
            m = AnswerModel(tuple(float(v) for v in weights), bias, 0.0)
            loss = log_loss(m, validation)
            print(f"l2={l2} golden_weight={gw}: validation log loss {loss:.4f}")
            if best is None or loss < best[0]:
                best = (loss, m, l2, gw)
    assert best is not None
    _, m, l2, gw = best
    m = choose_kept_from(m, validation)
    print(f"\nchosen: l2={l2} golden_weight={gw}; paste into ferrex/rules/relevance.py:\n")
    listed = ", ".join(f"{v:.3f}" for v in m.weights)
    print(f"ANSWER_WEIGHTS: Final = ({listed})")
    print(f"ANSWER_BIAS: Final = {m.bias:.3f}")
    print(f"ANSWER_KEPT_FROM: Final = {m.kept_from:.3f}")
    print("\nafter (kept when the answer chance reaches it), per set and split:")
    report(questions, m)
    return m


# --- rank: a learned order of the pool ------------------------------------------------------

RANK_INPUTS: Final = (
    "position",
    *relevance.ANSWER_INPUTS,
    "fused_share",
    "context_share",
    "lent",
    "answers_form",
    "boost",
)
"""What the ranker reads of a pooled candidate: its place in today's order (log scale), the
answer model's inputs (text evidence, the legs' ranks and scores, the relevance), its fused
score over the pool's best, the episode context it was lent (share of the best, and whether
any), whether it states a value of the kind the question's form asks for
(:func:`ferrex.rules.asked.answers_form`), and its boost (recency, date, form)."""


@dataclass(frozen=True)
class Pool:
    set: str
    split: str
    relevant: int
    features: np.ndarray[Any, Any]
    answers: tuple[bool, ...]


def pools(out: Path) -> list[Pool]:
    """The answerable questions collected with ``--depth`` (rows carrying their stages)."""
    found = []
    for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        rows = doc["rows"]
        if doc["kind"] != "answer" or not rows or "stages" not in rows[0]:
            continue
        asks = asked_kinds(doc["query"])
        top = max(r["stages"]["fused"] for r in rows) or 1.0
        xs = []
        for place, r in enumerate(rows):
            e = _evidence(r["evidence"])
            stages = r["stages"]
            lent = stages["context"]["lent"] if stages.get("context") else 0.0
            form = bool(asks) and answers_form(asks, stated_kinds(r["text"], None, None))
            xs.append([
                math.log(place + 1) / math.log(30),
                *relevance.inputs(e, relevance.DEFAULT_MODEL.relevance(e)),
                stages["fused"] / top, lent / top, float(lent > 0), float(form),
                min(float(stages["boost"]), 3.0),
            ])  # fmt: skip
        found.append(Pool(doc["set"], doc["split"], int(doc["relevant"]), np.asarray(xs),
                          tuple(bool(r["answer"]) for r in rows)))  # fmt: skip
    return found


def ranked_figures(chosen: Sequence[Pool], order: Callable[[Pool], list[int]]) -> str:
    r5 = r10 = any5 = 0.0
    for p in chosen:
        answers = [p.answers[i] for i in order(p)]
        r5 += sum(answers[:5]) / p.relevant
        r10 += sum(answers[:10]) / p.relevant
        any5 += any(answers[:5])
    n = max(len(chosen), 1)
    return f"R@5 {r5 / n:.4f} R@10 {r10 / n:.4f} any@5 {any5 / n:.4f}"


def fit_ranker(train: Sequence[Pool], l2: float, pairwise: bool) -> np.ndarray[Any, Any]:
    """A linear score over :data:`RANK_INPUTS`: pointwise (logistic, answer or not, each
    question weighing the same) or pairwise (logistic on the differences between an answer
    and a non-answer of one question: RankNet with a linear score)."""
    xs, ys, ws = [], [], []
    for p in train:
        yes = [i for i, a in enumerate(p.answers) if a]
        no = [i for i, a in enumerate(p.answers) if not a]
        if pairwise:
            for i in yes:
                for j in no:
                    for sign in (1.0, -1.0):
                        xs.append(sign * (p.features[i] - p.features[j]))
                        ys.append(1.0 if sign > 0 else 0.0)
                        ws.append(1.0 / (len(yes) * len(no)))
        else:
            for i, a in enumerate(p.answers):
                xs.append(p.features[i])
                ys.append(float(a))
                ws.append(1.0 / len(p.answers))
    w = np.asarray(ws)
    weights, bias = logistic(np.asarray(xs), np.asarray(ys), w * len(w) / w.sum(), l2)
    return np.append(weights, bias)


def rank(out: Path) -> None:
    """Fit the ranker on the train splits, choose its form and L2 on validation (mean R@10
    over the sets), and print before/after for every set and split."""
    every = pools(out)
    groups = sorted({(p.set, p.split) for p in every})
    today = {g: ranked_figures([p for p in every if (p.set, p.split) == g],
                               lambda p: list(range(len(p.answers)))) for g in groups}  # fmt: skip
    train = [p for p in every if p.split == "train"]
    best: tuple[float, str, np.ndarray[Any, Any]] | None = None
    for pairwise in (False, True):
        for l2 in (0.1, 1.0, 10.0, 100.0):
            beta = fit_ranker(train, l2, pairwise)

            def order(p: Pool, beta: np.ndarray[Any, Any] = beta) -> list[int]:
                z = p.features @ beta[:-1]
                return sorted(range(len(z)), key=lambda i: (-z[i], i))

            name = f"{'pairwise' if pairwise else 'pointwise'} l2={l2}"
            scores = []
            print(name)
            for g in groups:
                chosen = [p for p in every if (p.set, p.split) == g]
                line = ranked_figures(chosen, order)
                print(f"  {g[0]:11s} {g[1]:10s} today {today[g]} | ranked {line}")
                if g[1] == "validation":
                    scores.append(float(line.split("R@10 ")[1].split()[0]))
            value = sum(scores) / max(len(scores), 1)
            if best is None or value > best[0]:
                best = (value, name, beta)
    assert best is not None
    print(f"chosen on validation: {best[1]}; weights ({', '.join(RANK_INPUTS)}, bias):")
    print(", ".join(f"{v:.3f}" for v in best[2]))


# --- verdict: a learned "nothing relevant" ---------------------------------------------------

VERDICT_INPUTS: Final = (
    "rules",
    "cosine",
    "margin",
    "coverage",
    "dense_rank",
    "sparse_rank",
    "both_legs",
    "cosine_gap",
    "bm25_share",
    "lead",
)
"""What the learned verdict reads of a result (:func:`verdict_inputs`)."""

FALSE_VERDICTS_AT_MOST: Final = 0.05
"""The threshold is the one that says *nothing relevant* on the most unanswerable
validation questions while saying it on at most this share of the answerable ones whose
top five holds an answer."""


def verdict_inputs(e: Evidence) -> list[float]:
    """:data:`VERDICT_INPUTS` of one result: the relevance rules' value (logit), the cosine
    and its margin over the dense leg's floor, the coverage, the legs' ranks (log scale) and
    agreement, the gap to the best cosine, the BM25 share, and the cosine's lead over the
    best other memory of the dense leg."""
    value = min(max(relevance.DEFAULT_MODEL.relevance(e), 1e-4), 1 - 1e-4)
    return [
        math.log(value / (1 - value)),
        e.cosine,
        e.cosine - e.floor,
        e.coverage,
        relevance.rank_depth(e.dense_rank),
        relevance.rank_depth(e.sparse_rank),
        relevance.both_legs(e),
        e.cosine_gap,
        e.bm25_share,
        e.cosine - e.runner_up,
    ]


def verdict_matrix(
    questions: Sequence[Question],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Inputs, labels and weights of every result: positive when it is an answer; each set
    and class (answer or not) weighing the same in total."""
    xs, ys, groups = [], [], []
    for q in questions:
        for e, a in zip(q.evidence, q.answers, strict=True):
            label = q.kind == "answer" and a
            xs.append(verdict_inputs(e))
            ys.append(1.0 if label else 0.0)
            groups.append((q.set, label))
    sizes: dict[tuple[str, bool], int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    w = np.asarray([1.0 / sizes[g] for g in groups])
    return np.asarray(xs), np.asarray(ys), w * len(w) / w.sum()


@dataclass(frozen=True)
class Verdict:
    """A learned verdict: weights over :data:`VERDICT_INPUTS`, a bias and the threshold
    below which a question's best result says *nothing relevant*; ``veto``: only where the
    relevance rules say it too."""

    weights: tuple[float, ...]
    bias: float
    below: float
    veto: bool = False

    def says(self, q: Question) -> bool:
        if self.veto and not rules_verdict(q):
            return False
        best = max((self.chance(e) for e in q.evidence[:LIMIT]), default=0.0)
        return best < self.below

    def chance(self, e: Evidence) -> float:
        z = float(np.dot(self.weights, verdict_inputs(e))) + self.bias
        return 1.0 / (1.0 + math.exp(-z))


def rules_verdict(q: Question) -> bool:
    return relevance.nothing_relevant(
        [relevance.DEFAULT_MODEL.label(relevance.DEFAULT_MODEL.relevance(e))
         for e in q.evidence[:LIMIT]]
    )  # fmt: skip


def verdict_line(questions: Sequence[Question], says: Callable[[Question], bool]) -> str:
    """The verdict's rate on unanswerable questions, and on answerable ones whose first
    result is an answer and whose top five holds one (false verdicts)."""
    unanswerable = [q for q in questions if q.kind != "answer"]
    hit = [q for q in questions if q.kind == "answer" and any(q.answers[:LIMIT])]
    first = [q for q in hit if q.answers[0]]

    def rate(chosen: Sequence[Question]) -> str:
        return f"{sum(map(says, chosen)) / max(len(chosen), 1):.3f}"

    return (
        f"unanswerable {rate(unanswerable)} (n={len(unanswerable)}) | false: answer first "
        f"{rate(first)} (n={len(first)}), answer in top 5 {rate(hit)} (n={len(hit)})"
    )


def choose_below(weights: tuple[float, ...], bias: float, validation: Sequence[Question],
                 veto: bool) -> Verdict:  # fmt: skip
    """The threshold with the most unanswerable validation verdicts whose false verdicts
    (answerable, an answer in the top five) stay at most :data:`FALSE_VERDICTS_AT_MOST`."""
    best = Verdict(weights, bias, 0.0, veto)
    best_rate = -1.0
    unanswerable = [q for q in validation if q.kind != "answer"]
    hit = [q for q in validation if q.kind == "answer" and any(q.answers[:LIMIT])]
    for below in [round(x, 3) for x in np.arange(0.05, 0.96, 0.025)]:
        v = Verdict(weights, bias, below, veto)
        false = sum(map(v.says, hit)) / max(len(hit), 1)
        said = sum(map(v.says, unanswerable)) / max(len(unanswerable), 1)
        if false <= FALSE_VERDICTS_AT_MOST and said > best_rate:
            best, best_rate = v, said
    return best


def verdict(out: Path, check: Sequence[Path] = ()) -> Verdict:
    """Fit the learned verdict on the train splits, choose its L2 and threshold on the
    validation splits (the most unanswerable verdicts, false ones at most
    :data:`FALSE_VERDICTS_AT_MOST`), and print the rules' verdict, the learned one and the
    veto for every set and split, and for the ``check`` rows.

    UNFINISHED: recall does not use it. On the rows of this branch (golden, LoCoMo,
    LongMemEval; the agent-notes tuning half as a check) no threshold of either form said
    *nothing relevant* on more of the agent-notes unanswerable questions without saying it
    on more of its answerable ones than the rules do: its near misses (a stored thing asked
    of what was never stored) score a higher cosine, margin and lead than its paraphrases'
    answers, and the public sets' unanswerable questions (another conversation's, another
    haystack's) are the easy kind (see the branch's report)."""
    questions = read(out)
    checked = [q for path in check for q in _read_lines(path)]
    train = [q for q in questions if q.split == "train"]
    validation = [q for q in questions if q.split == "validation"]
    groups = sorted({(q.set, q.split) for q in questions}) + sorted(
        {(q.set, q.split) for q in checked}
    )
    every = [*questions, *checked]
    chosen: Verdict | None = None
    score = -1.0
    for l2 in L2_GRID:
        x, y, w = verdict_matrix(train)
        weights, bias = logistic(x, y, w, l2)
        for veto in (False, True):
            v = choose_below(tuple(float(b) for b in weights), bias, validation, veto)
            said = [v.says(q) for q in validation if q.kind != "answer"]
            rate = sum(said) / max(len(said), 1)
            print(f"l2={l2} veto={veto}: below {v.below} validation unanswerable {rate:.3f}")
            if rate > score:
                chosen, score = v, rate
    assert chosen is not None
    names = ", ".join(f"{n} {w:.3f}" for n, w in zip(VERDICT_INPUTS, chosen.weights, strict=True))
    print(f"\nchosen: veto={chosen.veto} below={chosen.below}; weights {names}; "
          f"bias {chosen.bias:.3f}\n")  # fmt: skip
    for g in groups:
        part = [q for q in every if (q.set, q.split) == g]
        print(f"{g[0]:11s} {g[1]:10s} rules   {verdict_line(part, rules_verdict)}")
        print(f"{'':22s} learned {verdict_line(part, chosen.says)}")
    return chosen


def _read_lines(path: Path) -> list[Question]:
    questions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        rows = doc["rows"]
        questions.append(Question(
            doc["set"], doc["split"], doc["kind"], doc["group"],
            tuple(_evidence(r["evidence"]) for r in rows),
            tuple(bool(r["answer"]) for r in rows), tuple(int(r["tokens"]) for r in rows),
        ))  # fmt: skip
    return questions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("collect", "fit", "report", "rank", "verdict"))
    parser.add_argument("--out", type=Path, default=OUT, help="where rows.jsonl is kept")
    parser.add_argument("--home", type=Path, default=OUT / "locomo-plain",
                        help="LoCoMo's data directory (kept and reused)")  # fmt: skip
    parser.add_argument("--cache-home", type=Path,
                        default=Path("~/.cache/ferrex-eval").expanduser())  # fmt: skip
    parser.add_argument(
        "--sets",
        default="golden,locomo",
        help="collect: golden, locomo, longmemeval, agent-notes (its tuning half: a check"
        " for verdict, never fitted on) (comma-separated)",
    )
    parser.add_argument(
        "--depth",
        type=int,
        default=LIMIT,
        help="collect: results per answerable question (30: the ranker's pool)",
    )
    parser.add_argument("--check", type=Path, action="append", default=[],
                        help="verdict: rows reported, never fitted on (repeatable)")  # fmt: skip
    parser.add_argument("--lme-splits", default="train,validation,test",
                        help="collect: LongMemEval's splits to collect")  # fmt: skip
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.command == "collect":
        collect(args.out, args.home, args.cache_home, args.sets.split(","),
                args.lme_splits.split(","), args.depth)  # fmt: skip
    elif args.command == "fit":
        fit(args.out)
    elif args.command == "rank":
        rank(args.out)
    elif args.command == "verdict":
        verdict(args.out, args.check)
    else:
        print("the package's constants, per set and split:")
        report(read(args.out), relevance.ANSWER_MODEL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
