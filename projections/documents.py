"""What text of a memory is indexed: one pure function shared by every sink and the store.

The text a memory is found by is derived from its event alone (no clock, no config), so a
rebuild indexes exactly what the incremental projection indexed:

- episodic: the content;
- semantic: ``subject predicate object``, after the content when one is given (``content
  (subject predicate object)``): a fact is found by what it states even when its note words
  it otherwise ("who owns the ledger?" finds ``ledger owner Erin`` noted "Erin took over
  the ledger service");
- procedural: the name, the conditions and the steps, one per line. A procedure longer
  than the embedding window is split into *parts* on step boundaries by the caller (the
  part texts come from :func:`procedure_parts`), each part one vector of the same memory.

Any other text longer than the window (an episodic memory stored with ``split_long``, a long
semantic ``content``) is split into parts on sentence boundaries by :func:`text_parts`. Parts
are for the dense model only: a memory's BM25 document is always its whole text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Final

from journal import MemoryBody

TEXT_RECIPE: Final = "text2"
"""Names what :func:`memory_text` indexes, in a generation's encoders identity, so a change of
it rebuilds (re-embeds) the projections once, on the first start after the upgrade. ``text2``:
a semantic memory's triple is indexed with its content (it was the content alone)."""

_SEPARATORS = re.compile(r"[\s\-_.]+")
# A sentence ends at . ! ? (optionally closed by a quote or bracket) before white space, or
# at a line break; the separator stays with the sentence before it.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_WORD_GAP = re.compile(r"(?<=\S)(?=\s)")


def subject_key(subject: str) -> str:
    """The comparable form of a fact's subject: NFKC, case-folded, separators to one space,
    so ``API-Server`` and ``api server`` are one subject."""
    # NFKC again after case folding: folding can produce sequences NFKC would compose.
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", subject).casefold())
    return _SEPARATORS.sub(" ", folded).strip()


def memory_text(memory_type: str, body: MemoryBody) -> str:
    """The whole searchable text of a memory."""
    if memory_type == "semantic":
        fact = " ".join(p for p in (body.subject, body.predicate, body.object) if p)
        return f"{body.content} ({fact})" if body.content and fact else body.content or fact
    if memory_type == "procedural":
        return "\n".join(_procedure_header(body) + _procedure_steps(body))
    return body.content or ""


def _procedure_header(body: MemoryBody) -> list[str]:
    lines: list[str] = []
    if body.procedure_name:
        lines.append(body.procedure_name)
    if body.content:
        lines.append(body.content)
    lines.extend(f"when: {c}" for c in body.conditions)
    return lines


def _procedure_steps(body: MemoryBody) -> list[str]:
    return [f"{i}. {step}" for i, step in enumerate(body.steps, start=1)]


def procedure_windows(body: MemoryBody) -> Iterator[str]:
    """Every text :func:`procedure_parts` can make of this procedure, whatever the window:
    the header with each contiguous run of steps (n·(n+1)/2 texts for n steps). Lets a purge
    find the cached vectors of a procedure without loading the model that split it."""
    header = _procedure_header(body)
    steps = _procedure_steps(body)
    if not steps:
        yield "\n".join(header)
    for i in range(len(steps)):
        for j in range(i + 1, len(steps) + 1):
            yield "\n".join(header + steps[i:j])


def procedure_parts(body: MemoryBody, fits: Callable[[str], bool]) -> list[str]:
    """Split a procedure into texts that each ``fits`` the embedding window.

    Every part starts with the procedure's name (and conditions) so that it is found on its
    own; steps are never cut in the middle. A single step too long to fit becomes a part of
    its own (the caller's model truncates it; the store refuses such input up front).
    """
    header = _procedure_header(body)
    steps = _procedure_steps(body)
    whole = "\n".join(header + steps)
    if fits(whole) or not steps:
        return [whole]
    parts: list[str] = []
    current: list[str] = []
    for step in steps:
        candidate = "\n".join(header + current + [step])
        if current and not fits(candidate):
            parts.append("\n".join(header + current))
            current = [step]
        else:
            current.append(step)
    parts.append("\n".join(header + current))
    return parts


def text_parts(text: str, fits: Callable[[str], bool]) -> list[str]:
    """Split ``text`` into consecutive parts that each ``fits`` the embedding window.

    Whole sentences are packed greedily, in order, into as few parts as that allows; a
    sentence too long to fit on its own starts a new part and is cut between words, and a
    single "word" too long to fit (a URL, a base64 blob) becomes a part of its own, which
    the model truncates. A text that fits is one part, itself. Joining the parts gives back
    the text up to the white space at the cuts.
    """
    if fits(text):
        return [text]
    parts: list[str] = []
    current = ""
    for sentence in _pieces(text, _SENTENCE_END):
        if fits((current + sentence).strip()):
            current += sentence
            continue
        if current.strip():
            parts.append(current.strip())
        current = ""
        if fits(sentence.strip()):
            current = sentence
            continue
        for word in _pieces(sentence, _WORD_GAP):  # a sentence longer than the window
            if current.strip() and not fits((current + word).strip()):
                parts.append(current.strip())
                current = ""
            current += word
    if current.strip():
        parts.append(current.strip())
    return parts


def _pieces(text: str, boundary: re.Pattern[str]) -> list[str]:
    """``text`` cut after every match of ``boundary``; the pieces join back to ``text``."""
    pieces: list[str] = []
    start = 0
    for match in boundary.finditer(text):
        if match.end() > start:
            pieces.append(text[start : match.end()])
            start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces
