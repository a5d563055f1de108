"""Consolidation's extractive summary: which sentences of a group of episodes to keep.

Pure and deterministic: the same sources always give the same summary, and the summary only
*selects* sentences that are there, character for character; it never rewrites, reorders
within a sentence, or adds a word. The rule:

1. cut every source's text into sentences (after ``.``, ``!`` or ``?`` followed by space, and
   at line breaks), each an exact slice of its source, surrounding space trimmed;
2. a sentence's content words: lower-cased words of three letters or more that are not
   function words; a word's weight is how many sentences of the group hold it;
3. greedily take the sentence that covers the most weight of words no kept sentence covers
   yet, per character to the power ``LENGTH_DAMPING`` (long sentences are not favoured just
   for being long), the earliest on a tie; skip a sentence that would pass the budget,
   until nothing uncovered is left; then fill what is left of the budget with the remaining
   sentences by the weight of all their words per character (same damping), the heaviest
   first (the budget: ``keep_ratio`` of the group's text, at least
   ``MIN_BUDGET`` characters, never more than the sources hold; the first sentence is always
   kept);
4. write the kept sentences in their original order, joined by a space, and say which
   source each came from (:class:`Piece`: offsets into the summary).

A sentence repeated word for word (after case and space) is kept at most once.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

MIN_BUDGET = 200
"""The fewest characters a summary may use, whatever ``keep_ratio`` says."""
LENGTH_DAMPING = 0.5
DEFAULT_KEEP_RATIO = 0.8
Unit = Literal["sentence", "turn"]
UNITS: tuple[Unit, ...] = ("sentence", "turn")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_FUNCTION_TEXT = """
the and for are but not you all any can had her was one our out has him his how its
let may who did get got she they them then than that this with have from what when
where which will would could should there their these those your yours also just very
been being into onto over under about after before again because while some such only
own same too more most other each both few nor off once here why whom does doing were
am is it an as at be by do if in me my no of on or so to up us we he i a oh yeah yes
okay ok really like thing things lot well much even still yet ever it's i'm i've
that's don't didn't can't you're we're they're
"""
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())


@dataclass(frozen=True, slots=True)
class Source:
    """One episode to fold: its id and its text."""

    memory_id: str
    text: str


@dataclass(frozen=True, slots=True)
class Piece:
    """One kept sentence: the source it came from and where it sits in the summary."""

    memory_id: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    pieces: tuple[Piece, ...]
    source_chars: int
    """How many characters the sources held (the summary's ``len(text)`` beside it is the
    shrink)."""

    def sentences(self) -> list[tuple[str, str]]:
        """(source id, sentence) for each kept sentence, in order."""
        return [(p.memory_id, self.text[p.start : p.end]) for p in self.pieces]


@dataclass(frozen=True, slots=True)
class _Sentence:
    order: int
    memory_id: str
    text: str
    words: frozenset[str]


def _damped(s: _Sentence) -> float:
    return math.pow(max(len(s.text), 1), LENGTH_DAMPING)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each an exact slice of it with outer space trimmed."""
    found: list[str] = []
    start = 0
    for cut in _SENTENCE_END.finditer(text):
        piece = text[start : cut.start()].strip()
        if piece:
            found.append(piece)
        start = cut.end()
    tail = text[start:].strip()
    if tail:
        found.append(tail)
    return found


def content_words(text: str) -> frozenset[str]:
    return frozenset(
        w
        for w in (m.group(0).lower() for m in _WORD.finditer(text))
        if len(w) >= 3 and w not in _FUNCTION_WORDS
    )


def summarize(
    sources: Sequence[Source], *, keep_ratio: float = DEFAULT_KEEP_RATIO, unit: Unit = "sentence"
) -> Summary:
    """The extractive summary of ``sources`` (in the order given: the episodes' order).

    ``unit="turn"``: the pieces ranked and kept are whole sources (each one's text, outer
    space trimmed) rather than their sentences, so a kept episode is kept whole."""
    if not 0 < keep_ratio <= 1:
        raise ValueError("keep_ratio must be in (0, 1]")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}")
    pool: list[_Sentence] = []
    seen: set[str] = set()
    total = 0
    for source in sources:
        total += len(source.text)
        chunks = sentences(source.text) if unit == "sentence" else [source.text.strip()]
        for text in (c for c in chunks if c):
            key = " ".join(text.lower().split())
            if key in seen:
                continue
            seen.add(key)
            pool.append(_Sentence(len(pool), source.memory_id, text, content_words(text)))
    weight = Counter(w for s in pool for w in s.words)
    budget = min(total, max(MIN_BUDGET, int(total * keep_ratio)))
    covered: set[str] = set()
    kept: list[_Sentence] = []
    used = 0
    left = list(pool)

    def fits(s: _Sentence) -> bool:
        return not kept or used + len(s.text) + 1 <= budget

    while left:  # coverage first
        best: _Sentence | None = None
        best_score = 0.0
        for s in left:
            gain = sum(weight[w] for w in s.words - covered)
            score = gain / _damped(s)
            if score > best_score:  # strict: the earliest wins a tie
                best, best_score = s, score
        if best is None:
            break  # nothing uncovered is left
        left.remove(best)
        if not fits(best):
            continue  # does not fit: a shorter one may
        used += len(best.text) + (1 if kept else 0)
        kept.append(best)
        covered |= best.words

    # then the budget's rest, by how much of the group's vocabulary a sentence carries
    def weight_of(s: _Sentence) -> float:
        return sum(weight[w] for w in s.words) / _damped(s)

    for s in sorted((s for s in left if s.words), key=lambda s: (-weight_of(s), s.order)):
        if fits(s):
            used += len(s.text) + (1 if kept else 0)
            kept.append(s)
    kept.sort(key=lambda s: s.order)
    parts: list[str] = []
    pieces: list[Piece] = []
    at = 0
    for s in kept:
        if parts:
            at += 1
        pieces.append(Piece(s.memory_id, at, at + len(s.text)))
        parts.append(s.text)
        at += len(s.text)
    return Summary(" ".join(parts), tuple(pieces), total)
