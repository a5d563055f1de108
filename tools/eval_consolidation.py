"""What consolidation does to recall and to the stored text, on LoCoMo.

    python -m tools.eval_consolidation [--data FILE] [--cache-home DIR] [--home DIR]
        [--groups consolidate|sessions] [--runs turn:0.8,...] [--recent 2] [--json FILE]

LoCoMo is imported as ``tools/eval_retrieval.py`` imports it (one namespace per
conversation, each turn an episodic memory ``"Speaker: text"`` with the conversation as its
source, back-dated to its session; the same loader, the same embedding cache under
``--cache-home``), and every question is asked through ``Reader.recall`` with the default
configuration, top 10:

1. **unconsolidated**: recall@10 as ``eval_retrieval.py`` measures it (a question's relevant
   turns found among the results);
2. for each of ``--runs`` (``UNIT:KEEP_RATIO``, the summary's ``consolidation.unit`` and
   ``consolidation.keep_ratio``) the home is consolidated and the questions asked again.
   ``--groups consolidate`` (the default) folds what ``ferrex consolidate --older-than 0``
   folds, with its own groups (``Writer.consolidate``); ``--groups sessions`` folds every
   session of each conversation but the last ``--recent``, one summary per session, through
   ``Writer.fold`` (the same command path, with the sessions as its groups). An evidence
   turn that was folded counts as found only when a summary that folded it is among the
   results **and still holds the turn's text** (every sentence of the turn, in order;
   ``strict``); ``lenient`` counts a summary holding at least one of the turn's
   sentences. Then every summary is undone (``Writer.unfold``) and the next ratio runs on
   the restored home, which also checks that undo gives back the unconsolidated recall.

The shrink factor is the characters of the folded turns over their summaries', and of the
whole corpus (every valid memory's text) before and after. ``folded_evidence`` is recall@10
over the questions with an evidence turn folded (``ratio``: over the same questions
unconsolidated; the issue's bar is 0.98), ``dropped_evidence`` the folded evidence turns no
summary holds whole.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ferrex.app import App
from ferrex.config import load
from ferrex.core.decide.consolidate import Folding
from ferrex.read.recall import Reader
from ferrex.read.request import RecallRequest
from ferrex.rules.consolidation import sentences
from projections.rows import Memory
from tools import harness
from tools.eval_retrieval import (
    DATA,
    Bench,
    K,
    Stored,
    locomo_bench,
    prepare_home,
    store,
)

Found = Callable[[str], set[str]]
"""A result's memory id → the benchmark turn keys it counts for."""


def recall_at_k(
    reader: Reader,
    bench: Bench,
    found: Found,
    progress: Callable[[str], None],
    folded: set[str] | None = None,
    shares: list[float] | None = None,
) -> dict[str, float]:
    """Mean recall@10 overall and per LoCoMo category; with ``folded`` (turn keys), also
    ``folded_evidence``: over the questions with an evidence turn among them."""
    sums: dict[str, list[float]] = {}
    started = time.perf_counter()
    for n, query in enumerate(bench.queries, 1):
        result = reader.recall(
            RecallRequest(
                query=query.text,
                namespace=query.namespace,
                limit=K,
                count_access=False,
                min_relevance=0.0,
            )  # measured untrimmed, as eval_retrieval
        )
        keys: set[str] = set()
        for r in result.results[:K]:
            keys |= found(str(r["id"]))
        share = len(keys & query.relevant) / len(query.relevant)
        if shares is not None:
            shares.append(share)
        groups = ["all", query.group]
        if folded is not None and query.relevant & folded:
            groups.append("folded_evidence")
        for group in groups:
            sums.setdefault(group, []).append(share)
        if n % 500 == 0:
            progress(
                f"    {n}/{len(bench.queries)} questions ({time.perf_counter() - started:.0f} s)"
            )
    return {g: round(sum(v) / len(v), 4) for g, v in sorted(sums.items())}


def _squash(text: str) -> str:
    return " ".join(text.split())


def holds(summary: str, turn: str, *, strict: bool) -> bool:
    """Whether a summary's text still holds a turn's text: every sentence of it, in order
    and side by side (``strict``), or at least one sentence."""
    parts = sentences(turn)
    if not parts:
        return False
    if strict:
        return _squash(turn) in _squash(summary)
    return any(_squash(p) in _squash(summary) for p in parts)


def session_groups(
    rows: Sequence[Memory], stored: Stored, recent: int
) -> list[tuple[str, list[Memory]]]:
    """Per conversation, one group per session but the last ``recent`` ones, in order."""
    sessions: dict[str, dict[int, list[Memory]]] = {}
    for m in rows:
        key = stored.by_memory.get(m.memory_id)
        if key is None or m.t_invalid is not None:
            continue
        conversation, dia = key.split("/", 1)
        number = int(dia.split(":")[0].lstrip("D"))
        sessions.setdefault(conversation, {}).setdefault(number, []).append(m)
    groups: list[tuple[str, list[Memory]]] = []
    for conversation in sorted(sessions):
        numbers = sorted(sessions[conversation])
        for number in numbers[: max(len(numbers) - recent, 0)]:
            members = sorted(sessions[conversation][number], key=lambda m: (m.t_valid, m.position))
            groups.append((f"session:{conversation}/D{number}", members))
    return groups


def corpus_chars(app: App) -> int:
    rm = app.projections().read_model
    return sum(len(m.content or "") for m in rm.memories() if m.t_invalid is None)


def run(
    data: Path, home: Path, cache_home: Path, runs: Sequence[tuple[str, float]], recent: int,
    progress: Callable[[str], None], grouping: str = "consolidate",
) -> dict[str, Any]:  # fmt: skip
    bench = locomo_bench(data)
    prepare_home(home, cache_home)
    app = App(home=home, config=load(home, env={}))
    report: dict[str, Any] = {"bench": bench.name, "queries": len(bench.queries),
                              "groups": grouping, "recent_sessions_kept": recent,
                              "runs": []}  # fmt: skip
    try:
        progress(f"{bench.name}: {len(bench.docs)} turns, {len(bench.queries)} questions")
        stored = store(app, bench, progress)
        report["memories"] = len(stored.by_memory)
        progress(f"  {len(stored.by_memory)} memories ready in {stored.seconds:.0f} s")
        reader = app.reader()
        texts = {m.memory_id: m.content or "" for m in app.projections().read_model.memories()}

        def plain(memory_id: str) -> set[str]:
            key = stored.by_memory.get(memory_id)
            return {key} if key else set()

        progress("  unconsolidated")
        report["unconsolidated_shares"] = []
        report["unconsolidated"] = recall_at_k(
            reader, bench, plain, progress, shares=report["unconsolidated_shares"]
        )
        report["corpus_chars"] = corpus_chars(app)
        writer = app.writer()
        for unit, ratio in runs:
            writer.settings = replace(
                writer.settings,
                consolidation_keep_ratio=ratio,
                consolidation_unit=unit,  # type: ignore[arg-type]
            )
            rm = app.projections().read_model
            started = time.perf_counter()
            if grouping == "sessions":
                groups = session_groups(rm.memories(), stored, recent)
                done = writer.fold(groups, created_before=datetime.now(UTC).timestamp())
            else:
                done = writer.consolidate(older_than_days=0)
            fold_seconds = time.perf_counter() - started
            rm = app.projections().read_model
            summaries = {f.summary_id: f for f in done.summaries}
            content = {s: (rm.get(s).content or "") for s in summaries}  # type: ignore[union-attr]

            held: dict[tuple[str, bool], set[str]] = {}  # a summary's turns, found once

            def counted(
                memory_id: str,
                strict: bool,
                summaries: dict[str, Folding] = summaries,
                content: dict[str, str] = content,
                held: dict[tuple[str, bool], set[str]] = held,
            ) -> set[str]:
                folding = summaries.get(memory_id)
                if folding is None:
                    return plain(memory_id)
                if (memory_id, strict) not in held:
                    held[memory_id, strict] = {
                        stored.by_memory[m]
                        for m in folding.memory_ids
                        if m in stored.by_memory
                        and holds(content[memory_id], texts[m], strict=strict)
                    }
                return held[memory_id, strict]

            folded = sum(len(f.memory_ids) for f in done.summaries)
            source_chars = sum(f.source_chars for f in done.summaries)
            chars = sum(f.chars for f in done.summaries)
            progress(f"  {unit}:{ratio}: {len(summaries)} summaries of {folded} turns, "
                     f"{source_chars} → {chars} characters ({fold_seconds:.0f} s)")  # fmt: skip
            entry: dict[str, Any] = {
                "unit": unit,
                "keep_ratio": ratio,
                "summaries": len(summaries),
                "folded_turns": folded,
                "folded_chars": source_chars,
                "summary_chars": chars,
                "folded_shrink": round(source_chars / chars, 3) if chars else None,
                "corpus_chars_after": corpus_chars(app),
                "fold_seconds": round(fold_seconds, 1),
            }
            entry["corpus_shrink"] = round(report["corpus_chars"] / entry["corpus_chars_after"], 3)
            squashed = {s: _squash(c) for s, c in content.items()}
            turns_held = sum(
                _squash(texts[m]) in squashed[s] for s, f in summaries.items() for m in f.memory_ids
            )
            entry["folded_turns_held_whole"] = round(turns_held / folded, 4) if folded else None
            folded_keys = {
                stored.by_memory[m]
                for f in done.summaries
                for m in f.memory_ids
                if m in stored.by_memory
            }
            evidence = {k for q in bench.queries for k in q.relevant}
            entry["dropped_evidence"] = sum(
                1
                for s, f in summaries.items()
                for m in f.memory_ids
                if stored.by_memory.get(m) in evidence and _squash(texts[m]) not in squashed[s]
            )
            entry["folded_evidence_turns"] = len(folded_keys & evidence)
            progress("    strict")
            entry["strict"] = recall_at_k(
                reader, bench, lambda i: counted(i, True), progress, folded_keys
            )
            progress("    lenient")
            entry["lenient"] = recall_at_k(
                reader, bench, lambda i: counted(i, False), progress, folded_keys
            )
            entry["strict_minus_unconsolidated"] = round(
                entry["strict"]["all"] - report["unconsolidated"]["all"], 4
            )
            base = [
                share
                for q, share in zip(bench.queries, report["unconsolidated_shares"], strict=True)
                if q.relevant & folded_keys
            ]
            if base:
                entry["unconsolidated_folded_evidence"] = round(sum(base) / len(base), 4)
                entry["folded_evidence_questions"] = len(base)
                entry["folded_evidence_ratio"] = round(
                    entry["strict"]["folded_evidence"] / entry["unconsolidated_folded_evidence"], 4
                )
            for summary_id in summaries:
                writer.unfold(summary_id)
            entry["restored_corpus_chars"] = corpus_chars(app)
            report["runs"].append(entry)
        progress("  after every undo")
        report["after_undo"] = recall_at_k(reader, bench, plain, progress)
    finally:
        app.close()
    return report


def render(report: dict[str, Any]) -> str:
    base = report["unconsolidated"]
    lines = [
        f"{report['bench']}: {report['queries']} questions, {report['memories']} turns; "
        + (
            f"the last {report['recent_sessions_kept']} sessions of each conversation kept"
            if report.get("groups") == "sessions"
            else "folded as `ferrex consolidate --older-than 0` folds"
        ),
        "",
        "| recall@10 | all | " + " | ".join(g for g in base if g != "all") + " |",
        "|---|---|" + "---|" * (len(base) - 1),
    ]

    def row(label: str, scores: dict[str, float]) -> str:
        rest = " | ".join(f"{scores.get(g, 0):.3f}" for g in base if g != "all")
        return f"| {label} | {scores['all']:.3f} | {rest} |"

    lines.append(row("unconsolidated", base))
    for r in report["runs"]:
        lines.append(row(f"{r['unit']}:{r['keep_ratio']}, strict", r["strict"]))
        lines.append(row(f"{r['unit']}:{r['keep_ratio']}, lenient", r["lenient"]))
    lines.append(row("after undo", report["after_undo"]))
    lines.append("")
    for r in report["runs"]:
        if "folded_evidence_ratio" in r:
            lines.append(
                f"{r['unit']}:{r['keep_ratio']}: recall@10 over the "
                f"{r['folded_evidence_questions']} questions whose evidence is folded "
                f"{r['strict']['folded_evidence']:.4f} vs {r['unconsolidated_folded_evidence']:.4f}"
                f" unconsolidated (ratio {r['folded_evidence_ratio']:.4f}); summaries hold "
                f"{1 / r['folded_shrink']:.3f}x the folded text; {r['dropped_evidence']} of "
                f"{r['folded_evidence_turns']} folded evidence turns not held whole"
            )
        lines.append(
            f"{r['unit']}:{r['keep_ratio']}: {r['summaries']} summaries of {r['folded_turns']} "
            f"turns; folded text {r['folded_chars']} → {r['summary_chars']} characters "
            f"(shrink {r['folded_shrink']}x), whole corpus {report['corpus_chars']} → "
            f"{r['corpus_chars_after']} (shrink {r['corpus_shrink']}x); "
            f"{r['folded_turns_held_whole']:.1%} of folded turns held whole; "
            f"strict recall@10 {r['strict_minus_unconsolidated']:+.4f} vs unconsolidated"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA / "locomo" / "locomo10.json")
    parser.add_argument("--cache-home", type=Path, default=Path.home() / ".cache" / "ferrex-eval")
    parser.add_argument("--home", type=Path, help="keep the data directory here (reused)")
    parser.add_argument("--runs", default="turn:0.8")
    parser.add_argument(
        "--groups",
        choices=("consolidate", "sessions"),
        default="consolidate",
        help="consolidate: the groups `ferrex consolidate --older-than 0` folds; sessions: "
        "one per session, all but the last --recent of each conversation",
    )
    parser.add_argument("--recent", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the report as JSON")
    args = parser.parse_args(argv)
    runs = [(u, float(r)) for u, r in (item.split(":") for item in args.runs.split(",") if item)]

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with harness.scratch("ferrex-consolidation-", args.home) as home:
        report = run(args.data, home, args.cache_home, runs, args.recent, progress, args.groups)
    print(render(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
