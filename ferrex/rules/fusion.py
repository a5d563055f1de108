"""Fusion of the retrieval legs and episode context, as pure functions over scores.

See :mod:`ferrex.read.recall` for why recall fuses per memory rather than with RRF.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # annotations only: the configuration imports this module's defaults
    from projections.vectors import Hit

T = TypeVar("T")

SPEAKER = re.compile(r"[^\W\d_][\w'.-]*(?: [\w'.-]+){0,2}: \S")
"""A speaker's label opening a turn: one to three words, a colon ("Sam: ", "Dr. Lee: ")."""


NOTE_CONTEXT_SHARE = 0.0
"""The share of its score an episode without a speaker's label lends its neighbours (the
default ``recall.note_context_share``; a labelled turn lends ``recall.context_share``)."""


def opens_with_speaker(text: str) -> bool:
    """Whether ``text`` opens with a speaker's label (:data:`SPEAKER`): a line of a
    conversation between people ("Caroline: I went to the LGBTQ support group"), whose
    meaning spans turns, rather than a note or a message that stands on its own."""
    return SPEAKER.match(text) is not None


def best_part(hits: Sequence[Hit]) -> dict[str, Hit]:
    """One hit per memory (a long procedure has several parts): its best, in hit order."""
    best: dict[str, Hit] = {}
    for hit in hits:
        memory_id = str(hit.payload.get("memory_id"))
        if memory_id not in best:
            best[memory_id] = hit
    return best


@dataclass(frozen=True)
class Leg:
    """What one leg returned: each memory's best part, best first, and the floor its scores
    are normalised against."""

    best: dict[str, Hit]
    floor: float
    """The score of the last point when the leg was cut off at the number asked for (or of
    the point at the ``scale`` rank, :meth:`of`); when it returned fewer it returned every
    point it scores at all, so 0 (or that last score, if negative)."""
    flat: bool = False
    """Cut off with its best point no higher than its floor: every point it returned ties
    with the cut-off (a word every memory holds alike), so which of the tied points came
    back, and how many, is the engine's choice and the depth's, not evidence."""

    @classmethod
    def of(cls, hits: Sequence[Hit], asked: int, scale: int | None = None) -> Leg:
        """The leg of ``hits`` (best first) when ``asked`` points were asked for. ``scale``:
        the floor is the point at that rank (when the leg returned that many), not the
        last, so that asking deeper adds candidates without changing how the first ones
        score; deeper points then get 0 from this leg."""
        if not hits:
            return cls({}, 0.0)
        depth = asked if scale is None else min(scale, asked)
        if len(hits) >= depth:
            floor = hits[depth - 1].score
            return cls(best_part(hits), floor, flat=hits[0].score <= floor)
        return cls(best_part(hits), min(hits[-1].score, 0.0))


def normalized(scores: Sequence[float], floor: float) -> list[float]:
    """Scores (best first) mapped by min-max onto [0, 1]: the best is 1, ``floor`` is 0."""
    if not scores:
        return []
    high = scores[0]
    if high <= floor:
        return [1.0] * len(scores)
    return [max(0.0, x - floor) / (high - floor) for x in scores]


def fuse(legs: Sequence[Leg], weights: Sequence[float]) -> list[tuple[str, float]]:
    """Convex combination of the legs' min-max normalised scores: ``score(m) = sum of
    weight * normalised score`` over the legs that returned ``m`` (0 from the others);
    best first, ties by id."""
    if len(weights) != len(legs):
        raise ValueError(f"{len(legs)} legs but {len(weights)} weights")
    fused: dict[str, float] = {}
    for leg, weight in zip(legs, weights, strict=True):
        ids = list(leg.best)
        values = normalized([leg.best[i].score for i in ids], leg.floor)
        for memory_id, value in zip(ids, values, strict=True):
            fused[memory_id] = fused.get(memory_id, 0.0) + weight * value
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def bm25_confidence(scores: Sequence[float]) -> float:
    """How sure the BM25 leg is of its best memory, in [0, 1]: the gap between its best
    and its second raw score, over the best (scores best first). One scored memory is
    certainty (1); none, or a best score that is not positive, is none (0)."""
    if not scores or scores[0] <= 0:
        return 0.0
    if len(scores) == 1:
        return 1.0
    return min(1.0, max(0.0, (scores[0] - scores[1]) / scores[0]))


def adaptive_dense_share(base: float, confidence: float, pull: float) -> float:
    """The dense leg's share of fusion for one query: ``base`` lowered by ``pull`` times
    the BM25 leg's :func:`bm25_confidence`, so that a query whose words single out one
    memory keeps the lexical top, and a query the words cannot separate leans on meaning.
    ``pull`` 0 is the fixed share; 1 gives the BM25 leg everything when it is certain."""
    if not (0.0 <= base <= 1.0 and 0.0 <= confidence <= 1.0 and 0.0 <= pull <= 1.0):
        raise ValueError(f"share {base}, confidence {confidence}, pull {pull}: each in [0, 1]")
    return base * (1.0 - pull * confidence)


HELD_HALF = 0.5
"""The share of the question's terms below which the BM25 leg's best is a partial match."""


def lifted_dense_share(share: float, held: float, lift: float) -> float:
    """The dense share raised toward 1 by ``lift`` times how little of the question the
    BM25 leg's best memory holds (``held``, the share of the question's terms it has):
    words that a question shares with no memory but in passing (a paraphrase) do not
    outvote meaning."""
    if not (0.0 <= share <= 1.0 and 0.0 <= held <= 1.0 and 0.0 <= lift <= 1.0):
        raise ValueError(f"share {share}, held {held}, lift {lift}: each in [0, 1]")
    short = max(0.0, 1.0 - held / HELD_HALF)
    return share + lift * short * (1.0 - share)


def lend_to_neighbours(
    fused: Sequence[tuple[str, float]],
    neighbours: Mapping[str, Sequence[str]],
    share: float,
    below_lender: bool = False,
    shares: Mapping[str, float] | None = None,
) -> tuple[list[tuple[str, float]], dict[str, tuple[str, float]]]:
    """Episode context as a pure function. Each candidate lends ``share`` of its score to
    each of its ``neighbours`` (a lender named in ``shares`` lends its own share instead:
    see :func:`context_shares`); a memory keeps its own score plus the largest loan it got
    (from the best-scoring lender; ties by id). With ``below_lender``, a loan lifts a
    memory at most to just below its lender's own score (never above the memory that
    found it; a memory already above keeps its own score). Returns the new ranking, best
    first, ties by id, and for each memory that got a loan, the lender and the amount."""
    own = dict(fused)
    loans: dict[str, tuple[str, float]] = {}
    for memory_id, score in fused:
        amount = (share if shares is None else shares.get(memory_id, share)) * score
        if amount <= 0:  # a leg alone may score below zero (cosine): nothing to lend
            continue
        for neighbour in neighbours.get(memory_id, ()):
            if neighbour not in loans or amount > loans[neighbour][1]:
                loans[neighbour] = (memory_id, amount)
    if below_lender:
        for memory_id, (lender, amount) in list(loans.items()):
            mine = own.get(memory_id, 0.0)
            room = max(0.0, own[lender] * (1.0 - 1e-9) - mine)
            if room < amount:
                loans[memory_id] = (lender, room)
    total = {m: own.get(m, 0.0) + loans[m][1] if m in loans else own[m]
             for m in own.keys() | loans.keys()}  # fmt: skip
    return sorted(total.items(), key=lambda item: (-item[1], item[0])), loans


def context_shares(texts: Mapping[str, str], dialogue: float, note: float) -> dict[str, float]:
    """Each lender's share of episode context, by its text: ``dialogue`` for a turn that
    opens with a speaker's label (an answer is often the next speaker's turn, and a short
    reply means little without the line it answers), ``note`` for a turn without one (an
    agent's notes or one speaker's messages stored in a row, each said on its own: a
    neighbour of a hit is no likelier to be an answer for being next to it)."""
    return {mid: dialogue if opens_with_speaker(text) else note for mid, text in texts.items()}


def keep_top(ranking: Sequence[T], memory_id: Callable[[T], str], top: str | None) -> list[T]:
    """The top guard: ``ranking`` with the memory ``top`` (the BM25 leg's best) moved first
    and every other in its order; unchanged when ``top`` is None or not in it (held back as
    stale, say). Fusion, episode context and the boosts reorder the rest, but the first
    place goes to the memory whose words match the question best: on LoCoMo the fused
    first place was right less often than BM25's (recall@1 0.328 against 0.358), the dense
    leg's best being a near miss more often than the lexical one."""
    at = next((i for i, item in enumerate(ranking) if memory_id(item) == top), None)
    if at is None:
        return list(ranking)
    return [ranking[at], *ranking[:at], *ranking[at + 1 :]]
