"""What the hooks put into an agent's context, within a budget (pure: the documents of the
tools in, text out).

Budgets are in tokens, counted by the ``count`` a caller passes (the hooks pass the bundled
model's tokenizer, the one recall's ``max_tokens`` counts with; a client's model counts
somewhat differently): :data:`BRIEF_TOKENS` (300) for the session brief,
:data:`PROMPT_TOKENS` (200) for a prompt's memories, the wrapping included. A memory id is
about 20 of them. Lines are dropped whole, least important first; a line is cut to
:data:`LINE_CHARS` characters first.

Everything injected sits between ``transcripts.OPEN`` and ``transcripts.CLOSE``, so that a
capture of the session leaves it out (:func:`ferrex.porting.transcripts.without_ours`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ferrex.porting.transcripts import CLOSE, OPEN
from ferrex.server.answers import recall_line

BRIEF_TOKENS: Final = 300
PROMPT_TOKENS: Final = 200
CHARS_PER_TOKEN: Final = 4

Count = Callable[[str], int]
"""How many tokens a text is."""


def estimate(text: str) -> int:
    """Tokens at four characters a token, rounded up: the count when no tokenizer is at hand
    (prose comes to about that; identifiers to more tokens, so pass a real count for them)."""
    return -(-len(text) // CHARS_PER_TOKEN)


LINE_CHARS: Final = 200
ATTENTION_ITEMS: Final = 3
RECENT_ITEMS: Final = 5


def session_brief(
    namespace: str,
    reflect: Mapping[str, Any],
    recent: Mapping[str, Any],
    count: Count = estimate,
) -> str:
    """The session-start brief: what needs attention (reflect's findings), then the current
    facts and recent memories (``ferrex://recent``); empty when the namespace holds nothing
    the agent sees."""
    memories = [m for m in recent.get("memories") or [] if isinstance(m, Mapping)]
    attention = _attention(reflect)
    if not memories and not attention:
        return ""
    counts = {k: v for k, v in (reflect.get("counts") or {}).items() if v}
    head = f"ferrex memory, namespace {namespace}"
    if counts:
        head += "; needs attention: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    lines = [head + " (recall for more; ids work with confirm, supersedes, forget)"]
    facts = [m for m in memories if m.get("type") == "semantic"][:RECENT_ITEMS]
    others = [m for m in memories if m.get("type") != "semantic"][:RECENT_ITEMS]
    if attention:
        lines += ["attention:", *attention]
    if facts:
        lines += ["current facts:", *(_brief_line(m) for m in facts)]
    if others:
        lines += ["recent:", *(_brief_line(m) for m in others)]
    return _wrapped(_fit(lines, BRIEF_TOKENS, count))


def prompt_context(recall: Mapping[str, Any], count: Count = estimate) -> str:
    """The memories recall judged relevant to a prompt, one line each with its id; empty
    when recall found nothing or says nothing is relevant."""
    results = [r for r in recall.get("results") or [] if isinstance(r, Mapping)]
    if recall.get("nothing_relevant") or not results:
        return ""
    lines = ["ferrex memories relevant to this prompt (confirm the ids that help):"]
    lines += [_cut(recall_line(r)) for r in results]
    return _wrapped(_fit(lines, PROMPT_TOKENS, count))


def _attention(reflect: Mapping[str, Any]) -> list[str]:
    lines = []
    for item in (reflect.get("contradictions") or [])[:ATTENTION_ITEMS]:
        lines.append(_cut("- contradiction: " + json.dumps(item, separators=(",", ":"))))
    for key, what in (("stale", "stale, verify"), ("unvalidated", "never confirmed")):
        for item in (reflect.get(key) or [])[:ATTENTION_ITEMS]:
            if isinstance(item, Mapping):
                lines.append(_cut(f"- {item.get('id')} ({what}): {item.get('summary', '')}"))
    return lines[:ATTENTION_ITEMS]


def _brief_line(memory: Mapping[str, Any]) -> str:
    return _cut(f"- {memory.get('id')}: {memory.get('summary', '')}")


def _cut(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def _fit(lines: Sequence[str], budget: int, count: Count) -> list[str]:
    """The first lines whose tokens (with the wrapping) are within ``budget``; a section title
    left with no line under it goes too. A text's tokens are its lines' tokens summed: the
    tokenizers this counts with split at white space first."""
    used = count(OPEN) + count(CLOSE)
    kept: list[str] = []
    for line in lines:
        used += count(line)
        if used > budget:
            break
        kept.append(line)
    while kept and kept[-1].endswith(":"):
        kept.pop()
    return kept


def _wrapped(lines: list[str]) -> str:
    return f"{OPEN}\n" + "\n".join(lines) + f"\n{CLOSE}" if lines else ""
