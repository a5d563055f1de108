"""A team's notes through ferrex's real import and MCP recall: what an agent is shown.

    python -m tools.eval_agent_notes [--half tuning|held-out|both] [--show N] [--json]
        [--notes FILE] [--questions FILE] [--keep DIR] [--setting KEY=VALUE ...]

The workload is ``golden_set/agent_notes/`` (its README: 1,040 notes of a fictional team,
260 questions of five kinds). Nothing runs in-process but the token counter:

1. The notes become store lines, written as an agent would store them: ``content`` and
   ``entities``; ``valid_from`` the note's date at 12:00 UTC (an event's time, a fact's
   start); a note with a subject, predicate and object is a fact (``type: semantic``, the
   triple, its text kept as ``content``); a procedural note written ``NAME: how`` is a
   procedure (``name``, one step: the rest); any other note, a semantic one without a
   triple or a how-to without a name among them, is an event (``type: episodic``), since a
   fact needs its triple and a procedure its name and steps. ``ferrex --home TMP import
   FILE --json`` stores them; its per-line outcomes map each note to its memory (a line not
   stored, a repeated fact or a refused near-copy, to the memory its outcome names, when it
   names one) and say which facts a later note superseded (recall hides those by default).
2. One ``ferrex --home TMP`` stdio server answers every question through the MCP SDK's
   client, with the question's filters (``after``, ``before``, ``entities``) as recall
   arguments, three times: ``limit: 5`` as an agent asks (trimmed by relevance), ``limit: 5``
   with ``min_relevance: 0`` (untrimmed: the ranking alone), and ``limit: 10`` untrimmed.

Metrics per kind, for the default and the untrimmed answers: hit@5 (an answer note among
the results shown), recall@5 and (untrimmed) recall@10 (the share of a question's answer
notes shown), the verdict (the answer's ``nothing_relevant``), "shown without the verdict"
(an answer note shown and no verdict: what an agent can use as it stands), results shown,
and the tokens of the answer's text content (what the agent reads; the bundled model's
tokenizer, as ``tools/bench_tokens.py`` and ``python -m tools.eval_relevance --trimming`` count)
and of its structured content (compact JSON), default ÷ untrimmed. For unanswerable
questions the verdict is the success.

Questions are split by a hash of their id: ``sha256(id)``'s first byte even is the tuning
half, odd the held-out half. The held-out half is reported as totals per kind only, so that
whoever tunes never sees its questions; ``--show N`` prints up to N misses of the tuning half
(an answerable question with no answer note shown by default, or shown under the verdict;
an unanswerable one without the verdict) with the answer notes, where an explained recall
(30 deep, untrimmed) ranks them (fused, dense and BM25 ranks, relevance), and what was shown.

``--setting KEY=VALUE`` (repeatable) writes a configuration key (``ferrex config show``
lists them; the value in TOML: ``recall.dense_lift=0.8``, ``recall.top_guard=false``) into
the home's ``ferrex.toml`` before the import, so a setting is compared on the same path.

Recall's recency boost counts from the day the evaluation runs (the notes end on
2026-12-04), and recalls count as accesses, as they do for an agent: neither changes which
memories match. The FERREX_* environment is not passed on (the numbers are the defaults').
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

from ferrex.config import CONFIG_NAME, KEYS
from ferrex.models import Embedder
from ferrex.models.choice import choose_embedding_model
from tools import harness
from tools.harness import ROOT

SET_DIR: Final = ROOT / "golden_set" / "agent_notes"
KINDS: Final = ("paraphrase", "identifier", "time", "filtered", "unanswerable")
HALVES: Final = ("tuning", "held-out")
#: The three recalls asked of every question: name → (limit, min_relevance).
WAYS: Final[dict[str, tuple[int, float | None]]] = {
    "default": (5, None),
    "untrimmed": (5, 0.0),
    "untrimmed@10": (10, 0.0),
}
#: How deep the explained recall of a shown miss looks for its answer notes.
EXPLAIN_DEPTH: Final = 30
IMPORT_TIMEOUT: Final = 1800.0
CALL_TIMEOUT: Final = 300.0
#: A procedural note ``NAME: how`` (the name without a colon or a code span).
_PROCEDURE: Final = re.compile(r"(?P<name>[^:`]{3,120}): (?P<how>.+)", re.DOTALL)


def half_of(question_id: str) -> str:
    return "tuning" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "held-out"


# --- The notes as store lines, and the import -------------------------------------------


def store_line(note: Mapping[str, Any]) -> dict[str, Any]:
    """The store request an agent would send for ``note`` (rules in the module docstring)."""
    text = str(note["text"])
    line: dict[str, Any] = {}
    if note.get("subject") and note.get("predicate") and note.get("object"):
        line.update(
            type="semantic",
            subject=note["subject"],
            predicate=note["predicate"],
            object=note["object"],
            content=text,
        )
    elif note["type"] == "procedural" and (m := _PROCEDURE.fullmatch(text)) is not None:
        line.update(type="procedural", name=m["name"].strip(), steps=[m["how"].strip()])
    else:
        line.update(type="episodic", content=text)
    if note.get("entities"):
        line["entities"] = list(note["entities"])
    line["valid_from"] = f"{note['date']}T12:00:00Z"
    return line


@dataclass
class Imported:
    """What the import made of the notes."""

    memory_of: dict[str, str]
    """Note id → the memory that holds it (its own, or the one a refusal named)."""
    note_of: dict[str, str]
    """Memory id → the note it was stored for (the first, when several map to one)."""
    counts: dict[str, int]
    refused: list[dict[str, Any]]
    superseded: dict[str, str]
    """Note id → the note whose fact superseded it (its memory is hidden by default)."""
    near_kept: int
    stored_as: dict[str, int]
    seconds: float


def _named_id(outcome: Mapping[str, Any]) -> str | None:
    """The memory a line not stored names: the fact a repeated fact re-validated (status
    ``duplicate``, its ``id``), or the first of a refusal's ``ids`` (the near-copy, the
    conflicting fact)."""
    named = [outcome.get("id"), *(outcome.get("ids") or ())]
    return next((m for m in named if isinstance(m, str) and m.startswith("mem_")), None)


def config_text(items: Sequence[str]) -> str:
    """The home's ``ferrex.toml`` for ``--setting KEY=VALUE`` items: every key one of
    :data:`ferrex.config.KEYS`, every value TOML (checked as the server will read it)."""
    known = {key.name for key in KEYS}
    lines = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in known:
            raise SystemExit(f"--setting {item!r}: need KEY=VALUE, a key of ferrex.config.KEYS")
        try:
            tomllib.loads(f"x = {value}")
        except tomllib.TOMLDecodeError as exc:
            raise SystemExit(f"--setting {item!r}: the value is not TOML ({exc})") from exc
        lines.append(f"{name} = {value}\n")
    return "".join(lines)


def run_import(
    ferrex: str, home: Path, notes: Sequence[Mapping[str, Any]], env: dict[str, str], work: Path
) -> Imported:
    lines = [store_line(n) for n in notes]
    path = work / "notes-store.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    started = time.monotonic()
    done = subprocess.run(
        [ferrex, "--home", str(home), "import", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=IMPORT_TIMEOUT,
        env=env,
    )
    seconds = time.monotonic() - started
    if done.returncode not in (0, 7):  # 7: a line was refused (reported below)
        raise SystemExit(f"ferrex import failed (exit {done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    memory_of: dict[str, str] = {}
    note_of: dict[str, str] = {}
    refused: list[dict[str, Any]] = []
    near_kept = 0
    by_line = {int(o["line"]): o for o in report["lines"]}
    for number, note in enumerate(notes, start=1):
        outcome = by_line.get(number, {"status": "missing"})
        if outcome.get("status") == "stored":
            memory_id = str(outcome["id"])
            near_kept += "similar" in outcome
        else:
            named = _named_id(outcome)
            refused.append(
                {
                    "note": note["id"],
                    "status": outcome.get("status"),
                    "code": outcome.get("code"),
                    "memory": named,
                    "message": outcome.get("message"),
                }
            )
            if named is None:
                continue
            memory_id = named
        memory_of[note["id"]] = memory_id
        note_of.setdefault(memory_id, note["id"])
    superseded: dict[str, str] = {}
    for number, note in enumerate(notes, start=1):
        for old in by_line.get(number, {}).get("superseded") or ():
            old_id = old if isinstance(old, str) else old.get("id")
            if old_id in note_of:
                superseded[note_of[old_id]] = note["id"]
    for item in refused:  # a refusal named a memory the import wrote: its note's
        if item["memory"] is not None:
            item["memory_note"] = note_of.get(item["memory"])
    stored_as: dict[str, int] = {}
    for note, line in zip(notes, lines, strict=True):
        key = f"{note['type']} as {line['type']}"
        stored_as[key] = stored_as.get(key, 0) + 1
    return Imported(
        memory_of,
        note_of,
        dict(report["counts"]),
        refused,
        superseded,
        near_kept,
        stored_as,
        round(seconds, 1),
    )


# --- Asking -------------------------------------------------------------------------------


@dataclass
class Answer:
    """One recall's answer as the agent received it."""

    shown: list[dict[str, Any]]
    nothing_relevant: bool
    text_tokens: int
    json_tokens: int
    unknown_entities: list[str] = field(default_factory=list)
    hidden: dict[str, Any] = field(default_factory=dict)


def recall_args(question: Mapping[str, Any], limit: int, cut: float | None) -> dict[str, Any]:
    args: dict[str, Any] = {"query": question["question"], "limit": limit}
    filters = question.get("filters") or {}
    for key in ("after", "before", "entities"):
        if filters.get(key):
            args[key] = filters[key]
    if cut is not None:
        args["min_relevance"] = cut
    return args


def _row(result: Mapping[str, Any], note_of: Mapping[str, str]) -> dict[str, Any]:
    row = {
        "id": result["id"],
        "note": note_of.get(str(result["id"])),
        "score": result.get("score"),
        "relevance": result.get("relevance"),
        "label": result.get("relevance_label"),
    }
    explain = result.get("explain")
    if isinstance(explain, dict):
        row.update(
            dense_rank=explain.get("dense_rank"),
            bm25_rank=explain.get("sparse_rank"),
            dense=explain.get("dense"),
            bm25=explain.get("bm25"),
        )
    return row


async def _recall(client: Client, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    with anyio.fail_after(CALL_TIMEOUT):
        result = await client.call_tool("recall", args)
    assert isinstance(result, CallToolResult)
    if result.is_error or result.structured_content is None:
        text = "".join(getattr(c, "text", "") for c in result.content)
        raise SystemExit(f"recall {args} failed: {text}")
    return dict(result.structured_content), "".join(getattr(c, "text", "") for c in result.content)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def ask_all(
    params: StdioServerParameters,
    questions: Sequence[Mapping[str, Any]],
    note_of: Mapping[str, str],
    count: Any,
    pick: Callable[[Mapping[str, Mapping[str, Answer]]], Iterable[str]],
) -> tuple[dict[str, dict[str, Answer]], dict[str, list[dict[str, Any]]]]:
    """Every question asked every way, then the explained recalls of the questions ``pick``
    chooses from those answers, on the same server."""
    answers: dict[str, dict[str, Answer]] = {}
    explained: dict[str, list[dict[str, Any]]] = {}
    started = time.monotonic()
    async with Client(params, read_timeout_seconds=CALL_TIMEOUT) as client:
        for i, q in enumerate(questions, start=1):
            per: dict[str, Answer] = {}
            for way, (limit, cut) in WAYS.items():
                body, text = await _recall(client, recall_args(q, limit, cut))
                per[way] = Answer(
                    shown=[_row(r, note_of) for r in body.get("results", [])],
                    nothing_relevant=bool(body.get("nothing_relevant")),
                    text_tokens=int(count(text) or 0),
                    json_tokens=int(count(_compact(body)) or 0),
                    unknown_entities=list(body.get("unknown_entities") or []),
                    hidden=dict(body.get("hidden") or {}),
                )
            answers[q["id"]] = per
            if i % 20 == 0 or i == len(questions):
                print(
                    f"  asked {i}/{len(questions)} questions ({time.monotonic() - started:.0f} s)",
                    file=sys.stderr,
                )
        wanted = list(pick(answers))
        if wanted:
            print(f"explaining {len(wanted)} misses", file=sys.stderr)
        by_id = {q["id"]: q for q in questions}
        for qid in wanted:
            args = {**recall_args(by_id[qid], EXPLAIN_DEPTH, 0.0), "explain": True}
            body, _ = await _recall(client, args)
            explained[qid] = [_row(r, note_of) for r in body.get("results", [])]
    return answers, explained


# --- Scoring ------------------------------------------------------------------------------


def judge(
    q: Mapping[str, Any], per: Mapping[str, Answer], memory_of: Mapping[str, str]
) -> dict[str, Any]:
    """One question's figures, every way it was asked."""
    expected = [memory_of.get(n) for n in q["answers"]]
    out: dict[str, Any] = {}
    for way, answer in per.items():
        shown = [r["id"] for r in answer.shown]
        found = sum(1 for m in expected if m is not None and m in shown[: WAYS[way][0]])
        figures: dict[str, Any] = {
            "verdict": answer.nothing_relevant,
            "rows": len(shown),
            "text_tokens": answer.text_tokens,
            "json_tokens": answer.json_tokens,
            "unknown_entities": answer.unknown_entities,
        }
        if expected:
            share = found / len(expected)
            figures.update(
                hit=found > 0, recall=share, usable=found > 0 and not answer.nothing_relevant
            )
        out[way] = figures
    return out


def is_miss(q: Mapping[str, Any], judged: Mapping[str, Any]) -> bool:
    d = judged["default"]
    if q["kind"] == "unanswerable":
        return not d["verdict"]
    return not d["usable"]


def interleaved(questions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids of ``questions`` taking each kind in turn (the first of each, then the
    second...), so that a short list of misses shows every kind."""
    by_kind = [[q["id"] for q in questions if q["kind"] == k] for k in KINDS]
    longest = max((len(ids) for ids in by_kind), default=0)
    return [ids[i] for i in range(longest) for ids in by_kind if i < len(ids)]


def totals(
    questions: Sequence[Mapping[str, Any]], judged: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Figures per kind (and over all kinds) for the default and untrimmed answers."""
    groups: dict[str, list[Mapping[str, Any]]] = {k: [] for k in KINDS}
    for q in questions:
        groups.setdefault(q["kind"], []).append(q)
    groups["all"] = list(questions)
    out: dict[str, dict[str, Any]] = {}
    for kind, qs in groups.items():
        if not qs:
            continue
        n = len(qs)
        answerable = [q for q in qs if q["answers"]]
        g: dict[str, Any] = {"questions": n}
        for way in ("default", "untrimmed"):
            rows = [judged[q["id"]][way] for q in qs]
            w: dict[str, Any] = {
                "verdict": round(sum(r["verdict"] for r in rows) / n, 3),
                "rows": round(sum(r["rows"] for r in rows) / n, 2),
                "text_tokens": round(sum(r["text_tokens"] for r in rows) / n, 1),
                "json_tokens": round(sum(r["json_tokens"] for r in rows) / n, 1),
            }
            if answerable:
                ans = [judged[q["id"]][way] for q in answerable]
                m = len(answerable)
                w.update(
                    {
                        "hit@5": round(sum(r["hit"] for r in ans) / m, 3),
                        "recall@5": round(sum(r["recall"] for r in ans) / m, 3),
                        "shown_without_verdict": round(sum(r["usable"] for r in ans) / m, 3),
                    }
                )
            g[way] = w
        g["unknown_entity_filters"] = sum(
            1 for q in qs if judged[q["id"]]["default"]["unknown_entities"]
        )
        if answerable:
            r10 = [judged[q["id"]]["untrimmed@10"]["recall"] for q in answerable]
            g["untrimmed"]["recall@10"] = round(sum(r10) / len(answerable), 3)
        for part in ("text_tokens", "json_tokens"):
            base = g["untrimmed"][part]
            g[f"{part}_ratio"] = round(g["default"][part] / base, 3) if base else None
        out[kind] = g
    return out


# --- Reporting ----------------------------------------------------------------------------


def _f(value: Any) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def render_totals(name: str, groups: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = [
        f"{name}: per kind (default = trimmed as an agent asks; untrimmed = min_relevance 0)",
        f"{'kind':<13} {'n':>3} | default: hit@5  R@5 usable verdict rows tokens | "
        "untrimmed: hit@5  R@5  R@10 usable verdict rows tokens | tokens d/u",
    ]
    for kind, g in groups.items():
        d, u = g["default"], g["untrimmed"]
        lines.append(
            f"{kind:<13} {g['questions']:>3} | {_f(d.get('hit@5')):>14} {_f(d.get('recall@5'))} "
            f"{_f(d.get('shown_without_verdict')):>6} {_f(d['verdict']):>7} {d['rows']:>4.2f} "
            f"{d['text_tokens']:>6.0f} | {_f(u.get('hit@5')):>16} {_f(u.get('recall@5'))} "
            f"{_f(u.get('recall@10'))} {_f(u.get('shown_without_verdict')):>6} "
            f"{_f(u['verdict']):>7} {u['rows']:>4.2f} {u['text_tokens']:>6.0f} | "
            f"{_f(g['text_tokens_ratio']):>10}"
            + (
                f" ({g['unknown_entity_filters']} unknown entity filters)"
                if g["unknown_entity_filters"]
                else ""
            )
        )
    return lines


def _question_line(q: Mapping[str, Any], j: Mapping[str, Any]) -> str:
    d, u, t = j["default"], j["untrimmed"], j["untrimmed@10"]
    if q["answers"]:
        what = (
            f"default hit {int(d['hit'])} R@5 {d['recall']:.2f} usable {int(d['usable'])} | "
            f"untrimmed R@5 {u['recall']:.2f} R@10 {t['recall']:.2f}"
        )
    else:
        what = f"default verdict {int(d['verdict'])} | untrimmed verdict {int(u['verdict'])}"
    return (
        f"{q['id']} {q['kind']:<12} {what} | rows {d['rows']}/{u['rows']} "
        f"tokens {d['text_tokens']}/{u['text_tokens']}"
    )


def _clip(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def render_miss(
    q: Mapping[str, Any],
    per: Mapping[str, Answer],
    explained: Sequence[Mapping[str, Any]] | None,
    notes: Mapping[str, Mapping[str, Any]],
    imported: Imported,
) -> list[str]:
    d = per["default"]
    lines = [
        f"- {q['id']} [{q['kind']}] {q['question']!r}"
        + (f" filters {json.dumps(q['filters'])}" if q.get("filters") else "")
    ]
    if d.unknown_entities:
        lines.append(f"    unknown entities: {d.unknown_entities}")
    ranks = {r["id"]: (i, r) for i, r in enumerate(explained or [], start=1)}
    for n in q["answers"]:
        memory = imported.memory_of.get(n)
        where = "not imported"
        if memory is not None:
            if memory in ranks:
                i, r = ranks[memory]
                where = (
                    f"rank {i} (dense {r.get('dense_rank')}, bm25 {r.get('bm25_rank')}) "
                    f"rel {r.get('relevance')} {r.get('label')}"
                )
            else:
                where = f"not in the top {EXPLAIN_DEPTH}"
            if n in imported.superseded:
                where += f"; superseded by {imported.superseded[n]}"
        lines.append(f"    answer {n} ({where}): {_clip(notes[n]['text'])}")
    verdict = " — nothing_relevant" if d.nothing_relevant else ""
    lines.append(f"    shown by default ({len(d.shown)}){verdict}:")
    for i, r in enumerate(d.shown, start=1):
        e = ranks.get(r["id"], (None, {}))[1]
        text = notes[r["note"]]["text"] if r["note"] in notes else r["id"]
        mark = " *" if r["note"] in q["answers"] else ""
        lines.append(
            f"      {i}. {r['note']}{mark} score {r['score']} rel {r['relevance']} "
            f"{r['label']} (dense {e.get('dense_rank')}, bm25 {e.get('bm25_rank')}): "
            f"{_clip(text, 120)}"
        )
    return lines


def render_import(imported: Imported) -> list[str]:
    counts = ", ".join(f"{n} {s}" for s, n in sorted(imported.counts.items()))
    codes: dict[str, int] = {}
    for r in imported.refused:
        key = f"{r['status']} {r['code'] or ''}".strip()
        codes[key] = codes.get(key, 0) + 1
    lines = [
        f"import: {counts} in {imported.seconds} s; not stored {codes or '{}'}; "
        f"{sum(1 for r in imported.refused if r['memory'])} of those mapped to the memory "
        f"named; {imported.near_kept} stored beside a near-identical memory; "
        f"{len(imported.superseded)} facts superseded by a later note",
        "stored as: " + ", ".join(f"{k} {v}" for k, v in sorted(imported.stored_as.items())),
    ]
    for r in imported.refused:
        lines.append(
            f"  {r['status']} {r['note']}: [{r['code']}] → {r.get('memory_note')} "
            f"{_clip(str(r['message']), 140)}"
        )
    return lines


# --- Main ---------------------------------------------------------------------------------


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


def _ferrex() -> str:
    beside = Path(harness.FERREX)
    found = str(beside) if beside.exists() else shutil.which("ferrex")
    if found is None:
        raise SystemExit("no ferrex executable beside this Python or on PATH")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="eval_agent_notes.py",
        description="Import a team's notes with `ferrex import`, ask its questions through "
        "one MCP stdio server, and report what an agent is shown, per kind.",
    )
    parser.add_argument("--half", choices=("tuning", "held-out", "both"), default="both")
    parser.add_argument(
        "--show",
        type=int,
        default=0,
        metavar="N",
        help="print up to N misses of the tuning half, with what was shown",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--notes", type=Path, default=SET_DIR / "notes.jsonl", metavar="FILE")
    parser.add_argument(
        "--questions", type=Path, default=SET_DIR / "questions.jsonl", metavar="FILE"
    )
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="build the home here (new or empty) and keep it"
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a configuration key for the home (the value in TOML); repeatable",
    )
    args = parser.parse_args(argv)
    settings = config_text(args.setting)
    started = time.monotonic()
    notes = _load(args.notes)
    by_id = {n["id"]: n for n in notes}
    questions = [
        q for q in _load(args.questions) if args.half == "both" or half_of(q["id"]) == args.half
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERREX_")}
    ferrex = _ferrex()
    with tempfile.TemporaryDirectory(prefix="ferrex-notes-") as tmp:
        work = Path(tmp)
        home = args.keep if args.keep is not None else work / "home"
        if home.exists() and any(home.iterdir()):
            raise SystemExit(f"--keep {home}: not empty")
        if settings:
            home.mkdir(parents=True, exist_ok=True)
            (home / CONFIG_NAME).write_text(settings, "utf-8")
        print(f"importing {len(notes)} notes into {home}", file=sys.stderr)
        imported = run_import(ferrex, home, notes, env, work)
        print(f"  {imported.counts} in {imported.seconds} s", file=sys.stderr)
        embedder = Embedder(work / "models", choose_embedding_model("small", {}))
        try:
            count = embedder.model().count_tokens
            params = StdioServerParameters(command=ferrex, args=["--home", str(home)], env=env)
            tuning = [q for q in questions if half_of(q["id"]) == "tuning"]
            print(f"asking {len(questions)} questions, {len(WAYS)} ways each", file=sys.stderr)

            def misses_of(answers: Mapping[str, Mapping[str, Answer]]) -> list[str]:
                missed = [
                    q for q in tuning if is_miss(q, judge(q, answers[q["id"]], imported.memory_of))
                ]
                return interleaved(missed)[: max(args.show, 0)]

            first, explained = anyio.run(
                ask_all, params, questions, imported.note_of, count, misses_of
            )
            judged = {q["id"]: judge(q, first[q["id"]], imported.memory_of) for q in questions}
            order = {qid: i for i, qid in enumerate(explained)}
            misses = sorted((q for q in tuning if q["id"] in order), key=lambda q: order[q["id"]])
        finally:
            embedder.close()
    seconds = round(time.monotonic() - started, 1)
    halves = {h: [q for q in questions if half_of(q["id"]) == h] for h in HALVES}
    report: dict[str, Any] = {
        "import": {
            "counts": imported.counts,
            "seconds": imported.seconds,
            "refused": imported.refused,
            "near_identical_kept": imported.near_kept,
            "superseded": imported.superseded,
            "stored_as": imported.stored_as,
        },
        "halves": {h: totals(qs, judged) for h, qs in halves.items() if qs},
        "questions": [
            {"id": q["id"], "kind": q["kind"], **judged[q["id"]]} for q in halves["tuning"]
        ],
        "seconds": seconds,
    }
    if args.json:
        report["misses"] = [
            {
                "id": q["id"],
                "explained": explained.get(q["id"]),
                "shown": first[q["id"]]["default"].shown,
            }
            for q in misses
        ]
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    out = render_import(imported)
    if halves["tuning"]:
        out += ["", "tuning questions (default / untrimmed):"]
        out += [_question_line(q, judged[q["id"]]) for q in halves["tuning"]]
    for h, groups in report["halves"].items():
        out += ["", *render_totals(h, groups)]
    if misses:
        out += ["", f"tuning misses (first {len(misses)}; * marks an answer note):"]
        for q in misses:
            out += render_miss(q, first[q["id"]], explained.get(q["id"]), by_id, imported)
    out += ["", f"{seconds} s in all (import {imported.seconds} s)"]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
