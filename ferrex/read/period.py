"""The period legs: a question that names a period also searches inside it.

A question naming a period ("what happened on September 1?", "which incidents between
September 14 and 16?") is often answered by memories that share none of its words: the
dense and BM25 legs, asked over every memory, rank the notes that *mention* September or
incidents first and never reach the plain events of that day. So recall asks both legs a
second time with the period as their event-time window (within any ``after``/``before``
the caller gave), and fuses what they return beside the two whole-store legs at
``RecallSettings.period_weight`` (the same dense/BM25 split), as the entity graph leg is
fused. A memory inside the period then reaches the candidates by how well it matches the
question among that period's memories; one outside loses nothing it had, so a question
about a thing ("what did we decide about Kafka yesterday?") still finds the Kafka
decision of the day before. The date boost and the guard stage
(:meth:`ferrex.read.recall.Reader._ordered`) do the rest.

Both searches ask for the question less its period's words (:func:`question_less_period`):
two more queries inside Qdrant and one more query embedding, for questions naming a period
only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from ferrex.models.remote import ServerDown
from ferrex.rules.dates import Period
from ferrex.rules.fusion import Leg, fuse
from projections.vectors import SparseVector, VectorBackend, VectorFilter

PERIOD_LEGS: Final = ("period_dense", "period_bm25")
"""The names of the period legs among a recall's legs: the dense leg's, the BM25 leg's."""


def within(flt: VectorFilter, period: Period) -> VectorFilter | None:
    """``flt`` with its event-time window narrowed to ``period`` (None: the window the
    caller gave and the period do not overlap, so there is nothing to search)."""
    start, end = period.start.timestamp(), period.end.timestamp()
    if flt.t_valid_from is not None:
        start = max(start, flt.t_valid_from)
    if flt.t_valid_to is not None:
        end = min(end, flt.t_valid_to)
    if start >= end:
        return None
    return replace(flt, t_valid_from=start, t_valid_to=end)


def question_less_period(question: str, period: Period) -> str:
    """The question without the words that name its period ("Which incidents occurred on
    Black Friday, November 27?" → "Which incidents occurred on ?"): inside the period
    those words tell no memory from another."""
    return " ".join(question.replace(period.phrase, " ").split())


def period_legs(
    backend: VectorBackend,
    collection: str,
    flt: VectorFilter,
    period: Period,
    question: str,
    embed: Callable[[str], Sequence[float]],
    encode: Callable[[str], SparseVector],
    n: int,
    scale: int,
) -> dict[str, Leg]:
    """The dense leg (unless the embeddings server is away) and the BM25 leg (when the
    question has terms besides its period) asked again inside ``period`` for the
    question less the period's words (``embed`` gives the query vector, ``encode`` the
    BM25 query): each its best ``n`` points as a ranking of memories, normalised against
    its point at rank ``scale`` (:meth:`ferrex.rules.fusion.Leg.of`). Empty when the period
    lies outside the caller's window."""
    inside = within(flt, period)
    if inside is None:
        return {}
    rest = question_less_period(question, period)
    legs: dict[str, Leg] = {}
    try:
        dense = embed(rest)
    except ServerDown:
        pass
    else:
        legs["period_dense"] = Leg.of(backend.query_dense(collection, dense, inside, n), n, scale)
    sparse = encode(rest)
    if sparse.indices:
        hits = backend.query_sparse(collection, sparse, inside, n)
        leg = Leg.of(hits, n, scale)
        # Its words alike in more memories of the period than it returned: as for the
        # whole-store leg, the engine's choice among them must not rank them; meaning does.
        legs["period_bm25"] = Leg({}, 0.0) if leg.flat and "period_dense" in legs else leg
    return legs


def period_parts(
    legs: dict[str, Leg], share: float, weight: float
) -> tuple[list[Leg], list[float]]:
    """The period legs present in ``legs`` and their fusion weights: ``weight`` split as
    the whole-store legs split theirs (``share`` to the dense leg, the rest to BM25)."""
    parts: list[Leg] = []
    weights: list[float] = []
    for name, part in zip(PERIOD_LEGS, (share, 1.0 - share), strict=True):
        if name in legs and weight > 0:
            parts.append(legs[name])
            weights.append(weight * part)
    return parts, weights


def period_ranking(
    inside: Sequence[Leg],
    inside_weights: Sequence[float],
    weight: float,
    parts: Sequence[Leg],
    weights: Sequence[float],
) -> list[tuple[str, float]]:
    """The fused ranking for a question that asks for little besides its period: the
    period legs' memories first, fused by those legs alone (their weights over ``weight``,
    the dense/BM25 split of the whole-store legs), as a window would rank them; then the
    rest as the whole-store legs (``parts``) rank them."""
    first = fuse(inside, [w / weight for w in inside_weights])
    seen = {memory_id for memory_id, _ in first}
    return first + [item for item in fuse(parts, weights) if item[0] not in seen]


def in_period_first(
    ranking: Sequence[tuple[str, float]], legs: Mapping[str, Leg]
) -> list[tuple[str, float]]:
    """The fused ``ranking`` with the memories the period legs returned (all inside the
    period) first, each part in its own order: for a question that asks for little besides
    the period, so that the period's memories reach the candidates however the
    whole-store legs ranked them."""
    inside = {mid for name in PERIOD_LEGS if name in legs for mid in legs[name].best}
    return [item for item in ranking if item[0] in inside] + [
        item for item in ranking if item[0] not in inside
    ]
