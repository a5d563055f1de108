"""Retrieval quality on ferrex's own golden set: recall@3, recall@5 and MRR, per category.

    python -m tools.eval_golden [--set DIR] [--json] [--verbose] [--config FILE] [--keep DIR]

The set (``golden_set/``, described in its README) is loaded into a fresh data directory
through the real store path (``App.writer().store_many``: validation, entity resolution,
predicate normalization, conflicts, dedup, procedure versions), then every query runs
through the real recall (``App.reader()``: dense + BM25 in Qdrant Edge fused with RRF,
recency boost, staleness, filters). Nothing is mocked.

Memories are referred to by the ``key`` of their line; the ids a store generates are mapped
back to keys. Every line carries ``valid_from`` and recall runs at the fixed ``now`` of
``queries.json``, so the numbers do not drift with the day the evaluation runs. The FERREX_*
environment is ignored (the numbers are those of the defaults, or of ``--config``).

Metrics, averaged over queries: recall@k is the share of a query's expected memories found
in its top k; MRR is 1 / the rank of the first expected memory in the top 10 (0 when none is
there). A query may also name memories that must be ``absent`` from its top 5 (a superseded
fact when asking what is current): those are reported as violations, apart from the
metrics. Store outcomes that differ from what a line expects (a fact not superseded, a
repeat not refused) are reported as store surprises.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import FerrexError, Refused
from ferrex.models import Embedder
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from ferrex.rules.store_fields import parse_time
from ferrex.write.writer import StoreResult
from tools.harness import ROOT, NotEmpty, scratch

DEFAULT_SET: Final = ROOT / "golden_set"
#: Results asked of every recall: MRR looks this deep.
DEPTH: Final = 10
#: How deep an ``absent`` memory must not appear.
ABSENT_DEPTH: Final = 5
CUTOFFS: Final = (3, 5)

# Fields of a golden line that are not store fields; stripped before the StoreRequest.
_GOLDEN_FIELDS: Final = frozenset(
    {"key", "supersedes_key", "expect_status", "expect_superseded", "multi_valued"}
)
_LIST_FIELDS: Final = frozenset({"steps", "conditions", "entities"})
_STORE_FIELDS: Final = frozenset(StoreRequest.__dataclass_fields__)
_OPTION_FIELDS: Final = frozenset(
    {"types", "entities", "include_invalidated", "include_stale", "as_of", "after", "before"}
)
_STATUSES: Final = frozenset({"stored", "stored_as_history", "duplicate", "refused"})


class GoldenSetError(ValueError):
    """The golden set files are malformed (a bad line, an unknown key, a duplicate key)."""


# --- The set -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldenMemory:
    key: str
    request: StoreRequest
    multi_valued: bool = False
    supersedes_key: str | None = None
    expect_status: str = "stored"
    expect_superseded: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoldenQuery:
    id: str
    category: str
    query: str
    expected: tuple[str, ...]
    absent: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)

    def request(self) -> RecallRequest:
        opts = dict(self.options)
        for name in ("types", "entities"):
            if name in opts:
                opts[name] = tuple(opts[name])
        # min_relevance 0: measured untrimmed (a default recall leaves out the irrelevant).
        return RecallRequest(query=self.query, limit=DEPTH, min_relevance=0.0, **opts)


@dataclass(frozen=True)
class GoldenSet:
    memories: tuple[GoldenMemory, ...]
    queries: tuple[GoldenQuery, ...]
    now: datetime


def load_set(directory: Path = DEFAULT_SET) -> GoldenSet:
    """Read ``memories.jsonl`` and ``queries.json`` from ``directory``, checking every
    reference between them."""
    memories = _read_memories(directory / "memories.jsonl")
    doc = _read_json(directory / "queries.json")
    if not isinstance(doc, dict) or not isinstance(doc.get("queries"), list):
        raise GoldenSetError("queries.json must be an object with a list under 'queries'")
    now = parse_time(doc.get("now"), "now")
    if now is None:
        raise GoldenSetError("queries.json needs 'now': the time recall runs at (ISO 8601)")
    keys = {m.key for m in memories}
    queries = tuple(_query(raw, i, keys) for i, raw in enumerate(doc["queries"]))
    ids = [q.id for q in queries]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise GoldenSetError(f"query ids used twice: {', '.join(repeated)}")
    return GoldenSet(memories, queries, now)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise GoldenSetError(f"cannot read {path}: {exc}") from exc


def _read_memories(path: Path) -> tuple[GoldenMemory, ...]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise GoldenSetError(f"cannot read {path}: {exc}") from exc
    memories: list[GoldenMemory] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldenSetError(f"{where}: not JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise GoldenSetError(f"{where}: a line must be a JSON object")
        memory = _memory(raw, where)
        if memory.key in seen:
            raise GoldenSetError(f"{where}: key {memory.key!r} used twice")
        # A reference must point backwards: lines are stored in file order.
        for ref in (memory.supersedes_key, *memory.expect_superseded):
            if ref is not None and ref not in seen:
                raise GoldenSetError(f"{where}: {ref!r} is not the key of an earlier line")
        seen.add(memory.key)
        memories.append(memory)
    return tuple(memories)


def _memory(raw: dict[str, Any], where: str) -> GoldenMemory:
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise GoldenSetError(f"{where}: every line needs a non-empty 'key'")
    unknown = sorted(set(raw) - _GOLDEN_FIELDS - _STORE_FIELDS)
    if unknown:
        raise GoldenSetError(f"{where}: unknown fields {', '.join(unknown)}")
    if "supersedes" in raw:
        raise GoldenSetError(f"{where}: use 'supersedes_key' (ids are generated at store time)")
    status = raw.get("expect_status", "stored")
    if status not in _STATUSES:
        raise GoldenSetError(f"{where}: expect_status must be one of {sorted(_STATUSES)}")
    fields: dict[str, Any] = {
        name: tuple(value) if name in _LIST_FIELDS else value
        for name, value in raw.items()
        if name not in _GOLDEN_FIELDS
    }
    return GoldenMemory(
        key=key,
        request=StoreRequest(**fields),
        multi_valued=bool(raw.get("multi_valued", False)),
        supersedes_key=raw.get("supersedes_key"),
        expect_status=status,
        expect_superseded=tuple(raw.get("expect_superseded", ())),
    )


def _query(raw: object, index: int, keys: set[str]) -> GoldenQuery:
    where = f"queries.json query {index}"
    if not isinstance(raw, dict):
        raise GoldenSetError(f"{where}: must be an object")
    missing = [f for f in ("id", "category", "query", "expected") if not raw.get(f)]
    if missing:
        raise GoldenSetError(f"{where}: missing {', '.join(missing)}")
    where = f"query {raw['id']!r}"
    options = raw.get("options", {})
    unknown = sorted(set(options) - _OPTION_FIELDS)
    if unknown:
        raise GoldenSetError(f"{where}: unknown options {', '.join(unknown)}")
    expected = tuple(raw["expected"])
    absent = tuple(raw.get("absent", ()))
    dangling = sorted({*expected, *absent} - keys)
    if dangling:
        raise GoldenSetError(f"{where}: no memory has the key {', '.join(dangling)}")
    return GoldenQuery(
        str(raw["id"]), str(raw["category"]), str(raw["query"]), expected, absent, options
    )


# --- Loading through the store path --------------------------------------------------------


@dataclass
class Loaded:
    ids: dict[str, str]
    """Golden key -> memory id, for every line that was stored (or repeated a stored fact)."""
    keys: dict[str, str]
    """Memory id -> the first golden key stored as it (a repeated fact maps to its original)."""
    outcomes: dict[str, str]
    """Golden key -> stored, duplicate, or refused:<code>."""
    surprises: list[str]
    """Store outcomes that differ from what the line expects."""
    seconds: float


def _batches(memories: Sequence[GoldenMemory]) -> Iterator[list[GoldenMemory]]:
    """Runs of lines that one ``store_many`` can take: the same ``multi_valued``, and none
    naming a line of its own run in ``supersedes_key`` (its id is not known yet)."""
    run: list[GoldenMemory] = []
    keys: set[str] = set()
    for memory in memories:
        if run and (memory.multi_valued != run[0].multi_valued or memory.supersedes_key in keys):
            yield run
            run, keys = [], set()
        run.append(memory)
        keys.add(memory.key)
    if run:
        yield run


def load_into(app: App, golden: GoldenSet) -> Loaded:
    """Store every golden line, in file order, through ``app``'s writer."""
    started = time.perf_counter()
    writer = app.writer()
    ids: dict[str, str] = {}
    outcomes: dict[str, str] = {}
    replaced: dict[str, tuple[str, ...]] = {}
    surprises: list[str] = []
    for batch in _batches(golden.memories):
        requests = []
        for memory in batch:
            request = memory.request
            if memory.supersedes_key is not None:
                target = ids.get(memory.supersedes_key)
                if target is None:
                    surprises.append(
                        f"{memory.key}: its supersedes_key {memory.supersedes_key} was not "
                        "stored, so it is stored without it"
                    )
                else:
                    request = replace(request, supersedes=target)
            requests.append(request)
        results = writer.store_many(requests, multi_valued=batch[0].multi_valued)
        for memory, result in zip(batch, results, strict=True):
            outcomes[memory.key] = _outcome(result)
            if isinstance(result, StoreResult):
                ids[memory.key] = result.id
                replaced[memory.key] = result.superseded
            status = outcomes[memory.key].partition(":")[0]
            if status != memory.expect_status:
                message = result.message if isinstance(result, FerrexError) else result.id
                surprises.append(
                    f"{memory.key}: expected {memory.expect_status}, got "
                    f"{outcomes[memory.key]} ({message})"
                )
    key_of: dict[str, str] = {}
    for key, memory_id in ids.items():
        key_of.setdefault(memory_id, key)
    for memory in golden.memories:
        if memory.key not in replaced or outcomes[memory.key] != "stored":
            continue
        got = sorted(key_of.get(i, i) for i in replaced[memory.key])
        if got != sorted(memory.expect_superseded):
            surprises.append(
                f"{memory.key}: expected to supersede {sorted(memory.expect_superseded)}, "
                f"superseded {got}"
            )
    return Loaded(ids, key_of, outcomes, surprises, time.perf_counter() - started)


def _outcome(result: StoreResult | FerrexError) -> str:
    if isinstance(result, StoreResult):
        return result.status
    kind = "refused" if isinstance(result, Refused) else "invalid"
    return f"{kind}:{result.code}"


# --- Recall and the metrics ----------------------------------------------------------------


@dataclass(frozen=True)
class QueryOutcome:
    id: str
    category: str
    query: str
    options: Mapping[str, Any]
    expected: dict[str, int | None]
    """Each expected key and its rank in the top ``DEPTH`` (None: not there)."""
    returned: list[str]
    """The keys recalled, best first (an id when it maps to no key)."""
    recall: dict[int, float]
    reciprocal_rank: float
    violations: list[str]
    """``absent`` keys found in the top ``ABSENT_DEPTH``."""
    hidden: dict[str, int]
    unknown_entities: list[str]
    not_stored: list[str]


def run_query(app: App, query: GoldenQuery, loaded: Loaded) -> QueryOutcome:
    """One query through the real recall, scored against its expected keys."""
    result = app.recall(query.request())
    returned_ids = [r["id"] for r in result.results]
    returned = [loaded.keys.get(i, i) for i in returned_ids]

    def rank(key: str) -> int | None:
        memory_id = loaded.ids.get(key)
        return returned_ids.index(memory_id) + 1 if memory_id in returned_ids else None

    ranks = {key: rank(key) for key in query.expected}
    found = [rank for rank in ranks.values() if rank is not None]
    return QueryOutcome(
        id=query.id,
        category=query.category,
        query=query.query,
        options=dict(query.options),
        expected=ranks,
        returned=returned,
        recall={k: sum(1 for rank in found if rank <= k) / len(query.expected) for k in CUTOFFS},
        reciprocal_rank=1 / min(found) if found else 0.0,
        violations=[key for key in query.absent if (rank(key) or DEPTH + 1) <= ABSENT_DEPTH],
        hidden=dict(result.hidden),
        unknown_entities=list(result.unknown_entities),
        not_stored=[key for key in query.expected if key not in loaded.ids],
    )


@dataclass(frozen=True)
class Scores:
    queries: int
    recall_at_3: float
    recall_at_5: float
    mrr: float

    @staticmethod
    def of(outcomes: Sequence[QueryOutcome]) -> Scores:
        n = len(outcomes)
        if not n:
            return Scores(0, 0.0, 0.0, 0.0)
        return Scores(
            n,
            sum(o.recall[3] for o in outcomes) / n,
            sum(o.recall[5] for o in outcomes) / n,
            sum(o.reciprocal_rank for o in outcomes) / n,
        )


@dataclass(frozen=True)
class Report:
    overall: Scores
    categories: dict[str, Scores]
    queries: list[QueryOutcome]
    memories: int
    store_outcomes: dict[str, int]
    store_surprises: list[str]
    now: str
    reranker: str
    load_seconds: float
    query_seconds: float

    def misses(self) -> list[QueryOutcome]:
        """Queries that did not get every expected memory into their top 3."""
        return [o for o in self.queries if o.recall[3] < 1.0]

    def violations(self) -> list[QueryOutcome]:
        return [o for o in self.queries if o.violations]

    def as_dict(self) -> dict[str, Any]:
        def scores(s: Scores) -> dict[str, float | int]:
            return {
                "queries": s.queries,
                "recall@3": round(s.recall_at_3, 4),
                "recall@5": round(s.recall_at_5, 4),
                "mrr": round(s.mrr, 4),
            }

        return {
            "overall": scores(self.overall),
            "categories": {name: scores(s) for name, s in self.categories.items()},
            "memories": self.memories,
            "store_outcomes": self.store_outcomes,
            "store_surprises": self.store_surprises,
            "now": self.now,
            "reranker": self.reranker,
            "load_seconds": round(self.load_seconds, 2),
            "query_seconds": round(self.query_seconds, 2),
            "queries": [
                {
                    "id": o.id,
                    "category": o.category,
                    "query": o.query,
                    "options": dict(o.options),
                    "expected": o.expected,
                    "returned": o.returned,
                    "recall@3": round(o.recall[3], 4),
                    "recall@5": round(o.recall[5], 4),
                    "reciprocal_rank": round(o.reciprocal_rank, 4),
                    "violations": o.violations,
                    "hidden": o.hidden,
                    "unknown_entities": o.unknown_entities,
                    "not_stored": o.not_stored,
                }
                for o in self.queries
            ],
        }


def evaluate(
    golden: GoldenSet,
    home: Path,
    *,
    config_file: Path | None = None,
    embedder: Embedder | None = None,
) -> Report:
    """Load ``golden`` into the empty data directory ``home`` and run every query.

    ``embedder``: an already loaded embedder to use instead of the one ``home`` would
    assemble (the test suite shares one across tests); it must be the configured model.
    """
    # The environment is ignored: the numbers are those of the defaults or of the file.
    config = load(home, config_file, env={})
    app = App(home=home, config=config, _embedder=embedder)
    try:
        loaded = load_into(app, golden)
        reader = app.reader()
        # Recall at the set's own "now": recency boosts and staleness then do not depend
        # on the day this runs. The store side keeps the real clock; every line carries
        # valid_from, so only ids and record times come from it.
        reader.clock = lambda: golden.now
        started = time.perf_counter()
        outcomes = [run_query(app, query, loaded) for query in golden.queries]
        query_seconds = time.perf_counter() - started
        reranker = reader.reranker.status
    finally:
        app.close()
    categories: dict[str, list[QueryOutcome]] = {}
    for outcome in outcomes:
        categories.setdefault(outcome.category, []).append(outcome)
    counts: dict[str, int] = {}
    for status in loaded.outcomes.values():
        counts[status] = counts.get(status, 0) + 1
    return Report(
        overall=Scores.of(outcomes),
        categories={name: Scores.of(group) for name, group in categories.items()},
        queries=outcomes,
        memories=len(golden.memories),
        store_outcomes=dict(sorted(counts.items())),
        store_surprises=loaded.surprises,
        now=golden.now.isoformat().replace("+00:00", "Z"),
        reranker=reranker,
        load_seconds=loaded.seconds,
        query_seconds=query_seconds,
    )


# --- The command line ----------------------------------------------------------------------


def render(report: Report, *, verbose: bool) -> str:
    """The report as text: a table per category, then violations, surprises and misses."""
    outcomes = ", ".join(f"{n} {status}" for status, n in report.store_outcomes.items())
    lines = [
        f"golden set: {report.memories} memories ({outcomes}), "
        f"{report.overall.queries} queries, recall at {report.now}, reranker: {report.reranker}",
        f"load {report.load_seconds:.1f} s, queries {report.query_seconds:.1f} s",
        "",
        f"{'category':<16} {'queries':>7} {'recall@3':>9} {'recall@5':>9} {'MRR':>7}",
    ]

    def row(name: str, s: Scores) -> str:
        return (
            f"{name:<16} {s.queries:>7} {s.recall_at_3:>9.3f} {s.recall_at_5:>9.3f} {s.mrr:>7.3f}"
        )

    lines += [row(name, s) for name, s in report.categories.items()]
    lines.append(row("all", report.overall))
    violations = report.violations()
    if violations:
        lines += ["", f"absent memories recalled (top {ABSENT_DEPTH}):"]
        lines += [f"  {o.id}: {', '.join(o.violations)}" for o in violations]
    if report.store_surprises:
        lines += ["", "store surprises:"]
        lines += [f"  {s}" for s in report.store_surprises]
    misses = report.misses()
    if verbose and misses:
        lines += ["", "misses (an expected memory not in the top 3):"]
        for o in misses:
            options = f" {json.dumps(dict(o.options))}" if o.options else ""
            lines.append(f"  {o.id} [{o.category}] {o.query!r}{options}")
            expected = ", ".join(
                f"{key} (rank {rank})" if rank else f"{key} (not in top {DEPTH})"
                for key, rank in o.expected.items()
            )
            lines.append(f"    expected: {expected}")
            lines.append(f"    top 5:    {', '.join(o.returned[:5]) or '(nothing)'}")
            notes = []
            if o.hidden:
                notes.append("hidden " + ", ".join(f"{n} {r}" for r, n in o.hidden.items()))
            if o.unknown_entities:
                notes.append("unknown entities " + ", ".join(o.unknown_entities))
            if o.not_stored:
                notes.append("never stored " + ", ".join(o.not_stored))
            if notes:
                lines.append(f"    note:     {'; '.join(notes)}")
    elif misses:
        lines += ["", f"{len(misses)} queries missed (--verbose lists them)"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="eval_golden.py",
        description=(
            "Load ferrex's golden set into a fresh data directory through the real store "
            "path, run its queries through the real recall, and report recall@3, recall@5 "
            "and MRR, overall and per query category."
        ),
        epilog=(
            "Exit codes: 0 ok; 1 recall@3 below --fail-under; 2 usage, or a malformed "
            "golden set. The FERREX_* environment is ignored; use --config to evaluate "
            "other settings (a model, a reranker)."
        ),
    )
    parser.add_argument(
        "--set",
        dest="set_dir",
        type=Path,
        default=DEFAULT_SET,
        metavar="DIR",
        help="the golden set directory (memories.jsonl, queries.json); default: %(default)s",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="list every query that missed, and why"
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="a ferrex.toml to evaluate instead of defaults"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="build the data directory here (new or empty) and keep it, to inspect with "
        "`ferrex --home DIR recall ... --explain`",
    )
    parser.add_argument(
        "--fail-under",
        type=float,
        metavar="R",
        help="exit 1 when the overall recall@3 is below R (0 to 1)",
    )
    args = parser.parse_args(argv)
    try:
        golden = load_set(args.set_dir)
        with scratch("ferrex-golden-", args.keep, empty=True) as home:
            report = evaluate(golden, home, config_file=args.config)
    except (GoldenSetError, NotEmpty) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FerrexError as exc:
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(json.dumps(report.as_dict(), ensure_ascii=False))
    else:
        print(render(report, verbose=args.verbose))
    if args.fail_under is not None and report.overall.recall_at_3 < args.fail_under:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
