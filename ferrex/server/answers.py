"""The text an agent reads of each answer: compact lines, nothing that says nothing.

The JSON document of an answer stays complete (the MCP server sends it as structured
content); this is its rendering as text content, where every character costs the agent a
token. One line per memory (id, type, freshness label when not fresh, age, text); fields
at their defaults are left out. Pure functions over the answers' documents, shared by the
MCP server and the service's ``max_tokens`` cut, so the text measured is the text sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def age(days: float) -> str:
    """A short age: ``now``, ``5m``, ``3h``, ``4d``, ``7mo``, ``2y``."""
    minutes = days * 1440
    if minutes < 1:
        return "now"
    if minutes < 60:
        return f"{int(minutes)}m"
    if days < 1:
        return f"{int(minutes // 60)}h"
    if days < 60:
        return f"{int(days)}d"
    if days < 730:
        return f"{int(days // 30.4)}mo"
    return f"{int(days // 365.25)}y"


def memory_text(result: Mapping[str, Any]) -> str:
    """What a recalled memory says, on one line."""
    match result.get("type"):
        case "semantic":
            text = f"{result.get('subject')} {result.get('predicate')} {result.get('object')}"
            if result.get("content"):
                text += f" ({result['content']})"
        case "procedural":
            steps = "; ".join(f"{i}. {s}" for i, s in enumerate(result.get("steps") or (), 1))
            text = f"{result.get('name')} v{result.get('version')}: {steps}"
            if result.get("conditions"):
                text += f" [when: {'; '.join(result['conditions'])}]"
        case _:
            text = str(result.get("content") or "")
    return " ".join(text.split())


def recall_line(result: Mapping[str, Any]) -> str:
    """``id type [label] relevance age: text [flags]``; the freshness label only when it is
    not ``fresh``, the relevance label (strong, weak, none) when recall gave one."""
    fresh = result.get("freshness") or {}
    parts = [str(result.get("id")), str(result.get("type"))]
    label = fresh.get("label")
    if label and label != "fresh":
        parts.append(str(label))
    if result.get("relevance_label"):
        parts.append(str(result["relevance_label"]))
    if "age_days" in fresh:
        parts.append(age(float(fresh["age_days"])))
    line = " ".join(parts) + ": " + memory_text(result)
    flags = []
    if result.get("contradiction"):
        flags.append("contradicted")
    if result.get("possible_conflict"):
        flags.append(f"may conflict with {', '.join(map(str, result['possible_conflict']))}")
    if result.get("superseded_by"):
        flags.append(f"superseded by {result['superseded_by']}")
    if result.get("pinned"):
        flags.append("pinned")
    if "importance" in result:
        flags.append(f"importance {result['importance']:g}")
    if result.get("expires_at"):
        flags.append(f"expires {result['expires_at']}")
    if flags:
        line += f" [{'; '.join(flags)}]"
    if result.get("explain"):
        line += " " + json.dumps(result["explain"], separators=(",", ":"))
    return line


def recall_head(doc: Mapping[str, Any]) -> str:
    """The first line: how many results, what was held back or cut, and why."""
    results = doc.get("results") or []
    head = f"{len(results)} memor{'y' if len(results) == 1 else 'ies'}"
    if not results:
        head = "no memories found"
    notes = []
    hidden = doc.get("hidden") or {}
    for reason, flag in (("stale", "include_stale"), ("superseded", "include_invalidated")):
        if hidden.get(reason):
            notes.append(f"{hidden[reason]} {reason} hidden ({flag})")
    if hidden.get("irrelevant"):
        notes.append(f"{hidden['irrelevant']} irrelevant left out (min_relevance: 0 shows them)")
    if doc.get("unknown_entities"):
        notes.append("unknown entities: " + ", ".join(doc["unknown_entities"]))
    if doc.get("nothing_relevant") and results:  # with no results, "no memories found" says it
        notes.append(str(doc.get("note") or "nothing relevant"))
    if doc.get("warning"):  # e.g. recall by keywords alone while the embeddings server is down
        notes.append(str(doc["warning"]))
    cut = doc.get("truncated")
    if isinstance(cut, Mapping):
        notes.append(f"{cut['omitted']} more cut to fit max_tokens={cut['max_tokens']}")
    return head + (f"; {'; '.join(notes)}" if notes else "")


def recall_text(doc: Mapping[str, Any]) -> str:
    return "\n".join([recall_head(doc), *(recall_line(r) for r in doc.get("results") or [])])


def _summaries(items: Sequence[Mapping[str, Any]], extra: str | None = None) -> list[str]:
    lines = []
    for item in items:
        line = f"- {item.get('id')}"
        if item.get("type"):
            line += f" {item['type']}"
        line += f": {item.get('summary', '')}"
        if extra and item.get(extra):
            value = item[extra]
            line += f" ({', '.join(value) if isinstance(value, list) else value})"
        lines.append(line)
    return lines


def _counts(counts: Mapping[str, Any]) -> str:
    shown = [f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v]
    return ", ".join(shown) if shown else "nothing"


def stats_text(doc: Mapping[str, Any]) -> str:
    """The overview in a few lines; the detailed parts as compact JSON after them."""
    namespace = doc.get("namespace") or "default"
    lines = [
        f"{doc.get('total', 0)} active memories in {namespace}; "
        f"needs attention: {_counts(doc.get('needs_attention') or {})}"
        + (f"; {doc['expiring']} expiring" if doc.get("expiring") else "")
    ]
    if doc.get("recent"):
        lines.append("recent:")
        lines.extend(_summaries(doc["recent"]))
    shown = {"namespace", "total", "recent", "needs_attention", "expiring"}
    rest = {k: v for k, v in doc.items() if k not in shown}
    if rest:
        lines.append(json.dumps(rest, separators=(",", ":"), ensure_ascii=False))
    return "\n".join(lines)


_SECTIONS = {
    "stale": ("stale (verify, then confirm, supersede or forget)", "reasons"),
    "unvalidated": ("never confirmed", None),
    "forget_candidates": ("rarely used (forget if no longer useful)", "eviction"),
}


def reflect_text(doc: Mapping[str, Any]) -> str:
    """What needs attention, section by section; empty sections are left out."""
    lines = [f"needs attention: {_counts(doc.get('counts') or {})}"]
    for key, (title, extra) in _SECTIONS.items():
        if doc.get(key):
            lines.append(f"{title}:")
            lines.extend(_summaries(doc[key], extra))
    if doc.get("contradictions"):
        lines.append("contradictions (store the right value with supersedes):")
        lines.extend(
            "- " + json.dumps(c, separators=(",", ":"), ensure_ascii=False)
            for c in doc["contradictions"]
        )
    if doc.get("possible_conflicts"):
        lines.append("possible conflicts (two facts that may fill one slot; each says what to do):")
        lines.extend(
            "- " + json.dumps(
                {"reason": c.get("reason"), "facts": c.get("facts"), "do": c.get("what_to_do")},
                separators=(",", ":"), ensure_ascii=False,
            )
            for c in doc["possible_conflicts"]
        )  # fmt: skip
    if doc.get("dormant_entities"):
        names = ", ".join(str(e.get("name")) for e in doc["dormant_entities"])
        lines.append(f"entities no recent memory mentions: {names}")
    return "\n".join(lines)


def text(tool: str, doc: Mapping[str, Any]) -> str:
    """The text content of ``tool``'s answer ``doc``; compact JSON for the short answers."""
    match tool:
        case "recall":
            return recall_text(doc)
        case "stats":
            return stats_text(doc)
        case "reflect":
            return reflect_text(doc)
        case _:
            return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
