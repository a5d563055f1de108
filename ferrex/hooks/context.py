"""What the hooks put into an agent's context, within a budget (pure: the documents of the
tools in, text out).

Budgets are in tokens, counted by the ``count`` a caller passes (the hooks pass the bundled
model's tokenizer, the one recall's ``max_tokens`` counts with; a client's model counts
somewhat differently): :data:`BRIEF_TOKENS` (300) for the session brief,
:data:`PROMPT_TOKENS` (250) for a prompt's memories, the wrapping included (room for the
wrapping's 32 and the three results the hook asks for at up to about 70 tokens each: a
line is cut to :data:`LINE_CHARS` characters; 200 cut a third result on the prompt set's
tuning half). A memory id is about 20 of them. Lines are dropped whole, least important
first; a line is cut to :data:`LINE_CHARS` characters first.

Everything injected sits between ``OPEN`` and ``CLOSE`` (:mod:`ferrex.rules.conversation`), so
that a capture of the session leaves it out (``conversation.without_ours``, which
:mod:`ferrex.porting.transcripts` applies).
This module imports nothing heavy: the prompt hook's lean path (:mod:`ferrex.hooks.lean`)
loads it without the stores' code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ferrex.rules import relevance
from ferrex.rules.conversation import CLOSE, OPEN
from ferrex.server.answers import recall_line

BRIEF_TOKENS: Final = 300
PROMPT_TOKENS: Final = 250
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
    facts and recent memories of ``recent["memories"]`` (the hook reads the latest current
    facts on their own, beside ``ferrex://recent``'s other memories, so a captured session's
    turns do not push them out); empty when the namespace holds nothing the agent sees."""
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


PROMPT_HEAD: Final = "ferrex memories relevant to this prompt (confirm the ids that help):"
WRAP_TOKENS: Final = 32
"""At least the tokens of :data:`OPEN`, :data:`CLOSE` and :data:`PROMPT_HEAD` with their line
breaks (32 by the bundled tokenizer; ``tests/unit/test_hook_lean.py`` holds it)."""
RECALL_TOKENS: Final = PROMPT_TOKENS - WRAP_TOKENS
"""The ``max_tokens`` the prompt hook asks recall for: the owner cuts its answer with the
bundled tokenizer to this, its text a head line and one line per result, so the results'
lines and the wrapping stay within :data:`PROMPT_TOKENS` without the hook loading a
tokenizer of its own."""


PROMPT_CANDIDATES: Final = 3
"""The results the prompt hook asks recall for and shows when it injects."""
INJECT_FROM: Final = 0.74
"""The prompt relevance (:func:`prompt_relevance`) from which the hook injects: some one of
the first :data:`PROMPT_CANDIDATES` results must reach it. Chosen on the tuning half of
``golden_set/hook_prompts`` alone (``tools/eval_hooks.py``) as the lowest threshold at which
at most 10% of the unrelated prompts get context (7 of 71 at 0.74; 0.76: 5 of 71, with 29
rather than 33 of the 59 related prompts given their answer), with the relevance model's
weights as they are: a refit of them calls for choosing it again. It does not reach the
targets on that half (90% of the related prompts given their answer at most 10% of the
unrelated ones given anything): the evidence recall gives separates them at an AUC of
about 0.87 there."""


def prompt_relevance(result: Mapping[str, Any]) -> float:
    """How relevant a recalled memory is to a prompt: the calibrated relevance model
    (:class:`ferrex.rules.relevance.Model`) on the result's dense cosine and its coverage of
    the prompt's terms (recall's ``relevance_evidence``, given under ``explain``), without
    the penalties for a question's named specifics (``missing_named``, ``missing_name``,
    ``missing_attribute``). Those read a question ("which port does X listen on?" is not
    answered by a memory about X that gives no port); a prompt is most often a task, and
    pastes an error, a path or code whose numbers and names no memory holds, while the
    memory about the thing it works on is what helps. 0 for a result without evidence."""
    evidence = result.get("relevance_evidence")
    if not isinstance(evidence, Mapping):
        return 0.0
    cosine, cover = evidence.get("cosine"), evidence.get("coverage")
    if not isinstance(cosine, int | float) or not isinstance(cover, int | float):
        return 0.0
    z = relevance.COSINE_WEIGHT * cosine + relevance.COVERAGE_WEIGHT * cover + relevance.BIAS
    return 1.0 / (1.0 + math.exp(-z))


def worth_injecting(recall: Mapping[str, Any]) -> bool:
    """Whether recall's answer (with ``explain``) holds a memory relevant enough to the
    prompt to inject: one of its first :data:`PROMPT_CANDIDATES` results reaches
    :data:`INJECT_FROM` (:func:`prompt_relevance`)."""
    results = [r for r in recall.get("results") or [] if isinstance(r, Mapping)]
    return any(prompt_relevance(r) >= INJECT_FROM for r in results[:PROMPT_CANDIDATES])


def prompt_context(recall: Mapping[str, Any], count: Count | None = estimate) -> str:
    """The memories recall found for a prompt the hook judged worth a context
    (:func:`worth_injecting`), one line each with its id; empty when recall found nothing.
    Recall's own relevance label, which judges a question, is left out of the lines.
    ``count`` None: the answer was cut to :data:`RECALL_TOKENS` by recall's ``max_tokens``
    (lines are only shortened here)."""
    results = [r for r in recall.get("results") or [] if isinstance(r, Mapping)]
    if not results:
        return ""
    lines = [PROMPT_HEAD, *(_cut(recall_line(_unlabelled(r))) for r in results)]
    return _wrapped(lines if count is None else _fit(lines, PROMPT_TOKENS, count))


def _unlabelled(result: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in _JUDGED}


_JUDGED: Final = frozenset({"relevance_label", "explain", "relevance_evidence", "answer_chance"})


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
