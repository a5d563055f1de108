"""Fusion of the retrieval legs and episode context, as pure functions over scores.

See :mod:`ferrex.read.recall` for why recall fuses per memory rather than with RRF.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from projections.vectors import Hit


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
    """The score of the last point when the leg was cut off at the number asked for; when
    it returned fewer it returned every point it scores at all, so 0 (or that last score,
    if negative)."""

    @classmethod
    def of(cls, hits: Sequence[Hit], asked: int) -> Leg:
        if not hits:
            return cls({}, 0.0)
        last = hits[-1].score
        return cls(best_part(hits), last if len(hits) >= asked else min(last, 0.0))


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


def lend_to_neighbours(
    fused: Sequence[tuple[str, float]], neighbours: Mapping[str, Sequence[str]], share: float
) -> tuple[list[tuple[str, float]], dict[str, tuple[str, float]]]:
    """Episode context as a pure function. Each candidate lends ``share`` of its score to
    each of its ``neighbours``; a memory keeps its own score plus the largest loan it got
    (from the best-scoring lender; ties by id). Returns the new ranking, best first, ties by
    id, and for each memory that got a loan, the lender and the amount."""
    own = dict(fused)
    loans: dict[str, tuple[str, float]] = {}
    for memory_id, score in fused:
        amount = share * score
        if amount <= 0:  # a leg alone may score below zero (cosine): nothing to lend
            continue
        for neighbour in neighbours.get(memory_id, ()):
            if neighbour not in loans or amount > loans[neighbour][1]:
                loans[neighbour] = (memory_id, amount)
    total = {m: own.get(m, 0.0) + loans[m][1] if m in loans else own[m]
             for m in own.keys() | loans.keys()}  # fmt: skip
    return sorted(total.items(), key=lambda item: (-item[1], item[0])), loans
