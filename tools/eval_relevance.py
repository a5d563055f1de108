"""How well recall's relevance labels tell answerable queries from unanswerable ones.

    python tools/eval_relevance.py [--json] [--fit] [--verbose] [--keep DIR]

The golden set (``golden_set/``) is loaded into a fresh data directory through the real store
path, as ``tools/eval_golden.py`` does; then, through the real recall (``explain`` on, ten
results each):

1. every golden query (each has memories that answer it);
2. the ``unseen`` and ``near_miss`` queries of ``golden_set/unanswerable.json``;
3. every memory a ``forgotten`` query names is forgotten (the real forget path), then the
   ``forgotten`` queries run: their only memories are gone.

Each result carries its evidence (``relevance_evidence``: cosine, coverage), so any model of
:mod:`ferrex.rules.relevance` can be scored without recalling again. Queries are split in two
halves by a hash of their id: thresholds (and, with ``--fit``, the logistic coefficients) are
chosen on the calibration half only; the numbers that count are those of the test half.

Metrics per half:

- ``none`` label, query level: a query is judged *nothing relevant* when its top result is
  labelled ``none`` (the answer's ``nothing_relevant``, no result reaching ``weak``, is
  reported too). Precision and recall of that judgement against the truth (the unanswerable
  queries are the positives).
- ``strong``: of the golden queries whose top result is one of its expected memories, the
  share where that result is labelled ``strong``.
- ``answer hits none``: of the golden queries with an expected memory in the top 10, the
  share where every such memory is labelled ``none`` (what ``min_relevance`` at ``weak``
  would wrongly drop).

``--fit`` fits the logistic model (IRLS, balanced classes, a little L2) on the calibration
half: positives are the expected memories among the golden queries' results, negatives the
top five results of the unanswerable queries; ``weak_from`` is then the threshold that
maximises F1 of the ``none`` judgement on the calibration half and ``strong_from`` the lowest
threshold at which 95% of the calibration results at or above it are positives. It prints
the constants to paste into ``ferrex/rules/relevance.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferrex.app import App  # noqa: E402
from ferrex.config import load  # noqa: E402
from ferrex.read.recall import RecallRequest  # noqa: E402
from ferrex.rules.relevance import DEFAULT_MODEL, Evidence, Model  # noqa: E402
from tools.eval_golden import DEFAULT_SET, GoldenSet, GoldenSetError, load_into, load_set  # noqa: E402

DEPTH: Final = 10
NEGATIVES_PER_QUERY: Final = 5
STRONG_PRECISION: Final = 0.95
KINDS: Final = frozenset({"unseen", "near_miss", "forgotten"})


@dataclass(frozen=True)
class Unanswerable:
    id: str
    kind: str
    query: str
    forget: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    """One result of one query: whether it answers the query, and its evidence."""

    key: str
    answers: bool
    evidence: Evidence


@dataclass(frozen=True)
class Judged:
    id: str
    kind: str
    """``golden`` or the unanswerable kind."""
    query: str
    rows: tuple[Row, ...]

    @property
    def answerable(self) -> bool:
        return self.kind == "golden"

    @property
    def calibration(self) -> bool:
        return zlib.crc32(self.id.encode()) % 2 == 0


def load_unanswerable(path: Path, golden: GoldenSet) -> tuple[Unanswerable, ...]:
    """Read ``unanswerable.json``, checking kinds, ids and the keys to forget."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise GoldenSetError(f"cannot read {path}: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("queries"), list):
        raise GoldenSetError(f"{path.name} must be an object with a list under 'queries'")
    keys = {m.key for m in golden.memories}
    seen = {q.id for q in golden.queries}
    out: list[Unanswerable] = []
    for raw in doc["queries"]:
        if not isinstance(raw, dict) or not all(
            isinstance(raw.get(f), str) and raw[f] for f in ("id", "kind", "query")
        ):
            raise GoldenSetError(f"{path.name}: every query needs text id, kind and query")
        where = f"{path.name} query {raw['id']!r}"
        if raw["id"] in seen:
            raise GoldenSetError(f"{where}: id used twice")
        seen.add(raw["id"])
        if raw["kind"] not in KINDS:
            raise GoldenSetError(f"{where}: kind must be one of {sorted(KINDS)}")
        forget = tuple(raw.get("forget", ()))
        if (raw["kind"] == "forgotten") != bool(forget):
            raise GoldenSetError(f"{where}: 'forget' is given exactly for forgotten queries")
        missing = [k for k in forget if k not in keys]
        if missing:
            raise GoldenSetError(f"{where}: no memory has the key {', '.join(missing)}")
        out.append(Unanswerable(raw["id"], raw["kind"], raw["query"], forget))
    return tuple(out)


def _rows(
    app: App, request: RecallRequest, expected: set[str], key_of: dict[str, str]
) -> tuple[Row, ...]:
    result = app.recall(replace(request, limit=DEPTH, explain=True))
    rows = []
    for r in result.results:
        ev = r["relevance_evidence"]
        key = key_of.get(r["id"], r["id"])
        rows.append(Row(key, key in expected, Evidence(ev["cosine"], ev["coverage"])))
    return tuple(rows)


def collect(golden: GoldenSet, unanswerable: Sequence[Unanswerable], home: Path) -> list[Judged]:
    """Every query through the real recall (forgotten ones after their forget)."""
    config = load(home, None, env={})
    app = App(home=home, config=config)
    judged: list[Judged] = []
    try:
        loaded = load_into(app, golden)
        app.reader().clock = lambda: golden.now
        for q in golden.queries:
            rows = _rows(app, q.request(), set(q.expected), loaded.keys)
            judged.append(Judged(q.id, "golden", q.query, rows))
        later = [u for u in unanswerable if u.kind == "forgotten"]
        for u in unanswerable:
            if u.kind != "forgotten":
                rows = _rows(app, RecallRequest(u.query), set(), loaded.keys)
                judged.append(Judged(u.id, u.kind, u.query, rows))
        ids = sorted({loaded.ids[k] for u in later for k in u.forget if k in loaded.ids})
        app.writer().forget(ids)
        for u in later:
            rows = _rows(app, RecallRequest(u.query), set(), loaded.keys)
            judged.append(Judged(u.id, u.kind, u.query, rows))
    finally:
        app.close()
    return judged


# --- Scoring --------------------------------------------------------------------------------


def _says_nothing(q: Judged, model: Model, *, top_only: bool) -> bool:
    rows = q.rows[:1] if top_only else q.rows
    return all(model.label(model.relevance(r.evidence)) == "none" for r in rows)


def _precision_recall(judged: Sequence[Judged], model: Model, top_only: bool) -> dict[str, float]:
    said = [q for q in judged if _says_nothing(q, model, top_only=top_only)]
    truth = [q for q in judged if not q.answerable]
    hits = sum(1 for q in said if not q.answerable)
    precision = hits / len(said) if said else 1.0
    recall = hits / len(truth) if truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "judged_nothing": len(said),
        "unanswerable": len(truth),
    }


def score(judged: Sequence[Judged], model: Model) -> dict[str, Any]:
    golden = [q for q in judged if q.answerable]
    correct_top = [q for q in golden if q.rows and q.rows[0].answers]
    strong = [
        q for q in correct_top if model.label(model.relevance(q.rows[0].evidence)) == "strong"
    ]
    reached = [q for q in golden if any(r.answers for r in q.rows)]
    dropped = [
        q
        for q in reached
        if all(model.label(model.relevance(r.evidence)) == "none" for r in q.rows if r.answers)
    ]
    return {
        "queries": len(judged),
        "golden": len(golden),
        "none_top": _precision_recall(judged, model, top_only=True),
        "none_answer": _precision_recall(judged, model, top_only=False),
        "strong_of_correct_top": round(len(strong) / len(correct_top), 3) if correct_top else None,
        "correct_top": len(correct_top),
        "answer_hits_none": round(len(dropped) / len(reached), 3) if reached else None,
        "answer_hits_none_ids": [q.id for q in dropped],
    }


# --- Fitting ---------------------------------------------------------------------------------


def _samples(judged: Sequence[Judged]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    xs: list[tuple[float, float]] = []
    ys: list[float] = []
    for q in judged:
        rows = [r for r in q.rows if r.answers] if q.answerable else q.rows[:NEGATIVES_PER_QUERY]
        for r in rows:
            xs.append((r.evidence.cosine, r.evidence.coverage))
            ys.append(1.0 if q.answerable else 0.0)
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def fit(judged: Sequence[Judged]) -> Model:
    """The logistic coefficients and label thresholds chosen on ``judged`` (see the module
    docstring)."""
    x, y = _samples(judged)
    design = np.column_stack([x, np.ones(len(x))])
    weights = np.where(y == 1.0, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    beta = np.zeros(3)
    ridge = np.diag([0.01, 0.01, 0.0])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (weights * (y - p)) - ridge @ beta
        hessian = design.T @ (design * (weights * p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(hessian, gradient)
        beta = beta + step
        if float(np.abs(step).max()) < 1e-9:
            break
    a, b, c = (round(float(v), 3) for v in beta)
    base = Model(a, b, c, 0.5, 0.5)
    grid = [round(0.02 * i, 2) for i in range(1, 50)]
    weak = max(
        grid, key=lambda t: (_f1(judged, replace(base, weak_from=t, strong_from=max(t, 0.5))), -t)
    )
    relevances = sorted(
        (
            (base.relevance(Evidence(float(u), float(v))), bool(label))
            for (u, v), label in zip(x, y, strict=True)
        ),
        reverse=True,
    )
    strong = 0.99
    for t in [round(0.01 * i, 2) for i in range(99, int(weak * 100) - 1, -1)]:
        above = [ok for r, ok in relevances if r >= t]
        if above and sum(above) / len(above) >= STRONG_PRECISION:
            strong = t
    return Model(a, b, c, weak, max(strong, weak))


def _f1(judged: Sequence[Judged], model: Model) -> float:
    return _precision_recall(judged, model, top_only=True)["f1"]


# --- The command line ------------------------------------------------------------------------


@contextmanager
def _home(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="ferrex-relevance-") as tmp:
        yield Path(tmp)


def _render(name: str, s: dict[str, Any]) -> str:
    top, answer = s["none_top"], s["none_answer"]
    return (
        f"{name:<12} {s['queries']:>3} queries ({s['golden']} golden, {top['unanswerable']} "
        f"unanswerable) | none (top result): P {top['precision']:.3f} R {top['recall']:.3f} "
        f"| none (answer): P {answer['precision']:.3f} R {answer['recall']:.3f} "
        f"| strong of correct top: {s['strong_of_correct_top']} of {s['correct_top']} "
        f"| answer hits all none: {s['answer_hits_none']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--fit", action="store_true", help="fit the model on the calibration half")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the data directory here")
    args = parser.parse_args(argv)
    golden = load_set(args.set)
    unanswerable = load_unanswerable(args.set / "unanswerable.json", golden)
    with _home(args.keep) as home:
        judged = collect(golden, unanswerable, home)
    calibration = [q for q in judged if q.calibration]
    test = [q for q in judged if not q.calibration]
    model = fit(calibration) if args.fit else DEFAULT_MODEL
    report = {
        "model": {
            "cosine_weight": model.cosine_weight,
            "coverage_weight": model.coverage_weight,
            "bias": model.bias,
            "weak_from": model.weak_from,
            "strong_from": model.strong_from,
        },
        "fitted": args.fit,
        "calibration": score(calibration, model),
        "test": score(test, model),
        "all": score(judged, model),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    m = report["model"]
    print(
        f"model: relevance = sigmoid({m['cosine_weight']} cosine + {m['coverage_weight']} "
        f"coverage + {m['bias']}); weak from {m['weak_from']}, strong from {m['strong_from']}"
    )
    for name in ("calibration", "test", "all"):
        print(_render(name, report[name]))
    print(
        f"test: golden queries whose answers are all labelled none: "
        f"{report['test']['answer_hits_none_ids']}"
    )
    if args.fit:
        print("\n# paste into ferrex/rules/relevance.py")
        print(f"COSINE_WEIGHT: Final = {model.cosine_weight}")
        print(f"COVERAGE_WEIGHT: Final = {model.coverage_weight}")
        print(f"BIAS: Final = {model.bias}")
        print(f"WEAK_FROM: Final = {model.weak_from}")
        print(f"STRONG_FROM: Final = {model.strong_from}")
    if args.verbose:
        for q in judged:
            said = _says_nothing(q, model, top_only=True)
            if said == q.answerable:
                top = q.rows[0] if q.rows else None
                detail = (
                    "no results"
                    if top is None
                    else (
                        f"top {top.key} cos {top.evidence.cosine:.3f} "
                        f"cov {top.evidence.coverage:.2f} "
                        f"rel {model.relevance(top.evidence):.3f}"
                    )
                )
                half = "cal" if q.calibration else "test"
                print(f"  wrong ({half}) {q.kind:<9} {q.id}: {q.query!r}: {detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
