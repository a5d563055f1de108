"""One memory on its way through recall, and the explain document of it.

Recall (:mod:`ferrex.read.recall`) is a pipeline of stages over these records: each stage
returns new :class:`Candidate` values (``dataclasses.replace``) with the part it decided
filled in, so what the explain document shows is exactly what ranked the memory. The
document itself (:meth:`Candidate.explain`) is rendered only when the caller asked for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ferrex.rules.dates import Period
from ferrex.times import rfc3339
from projections.rows import Memory


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory recall is ranking: its row, what each leg said of it, and what every later
    stage made of that (leg scores raw; the explain document rounds them)."""

    memory: Memory
    fused: float
    """The fused score (a single leg's own score under ``legs`` dense or bm25), with the
    episode context it received."""
    dense_rank: int | None = None
    sparse_rank: int | None = None
    dense: float | None = None
    """The dense leg's score of the memory's best part (None: the leg did not return it)."""
    bm25: float | None = None
    graph: float | None = None
    """The entity graph leg's score (None: it did not reach the memory, or did not run)."""
    via: tuple[str, ...] = ()
    """The names the graph leg reached the memory through (``co-mention`` marks the hop)."""
    named: tuple[str, ...] = ()
    """The query's entities the memory names, by the spelling found in the query."""
    lent: tuple[str, float] | None = None
    """Episode context: the episode that lent to this memory, and how much."""
    rerank: float | None = None
    boost: float = 1.0
    """Recency (weighed by the strategy) times the date boost."""
    importance: float = 1.0
    """The importance factor (exactly 1 at the default importance)."""
    in_period: bool = False
    """The memory's event time falls in the period the query names."""
    staleness: Mapping[str, float] = field(default_factory=dict)
    score: float = 0.0
    """The final score: the rerank score (else the fused one) with the boosts applied."""
    lexical: float | None = None
    """The BM25 leg's score with the same boosts (what the top guard compares)."""
    top_guard: bool = False
    """First by the top guard, not by its score."""
    deep: bool = False
    """Beyond the pool (:data:`ferrex.read.request.POOL`): reached only by a longer answer,
    ranked after every pooled candidate and lending no episode context."""

    @property
    def memory_id(self) -> str:
        return self.memory.memory_id

    def explain(self, legs: str, strategy: str, period: Period | None) -> dict[str, Any]:
        """The score of every stage, as ``explain`` shows it."""
        doc: dict[str, Any] = {
            "legs": legs,
            "dense_rank": self.dense_rank,
            "sparse_rank": self.sparse_rank,
            "dense": _rounded(self.dense),
            "bm25": _rounded(self.bm25),
            "fused": round(self.fused, 6),
            "context": None
            if self.lent is None
            else {"from": self.lent[0], "lent": round(self.lent[1], 6)},
            "rerank": self.rerank,
            "boost": round(self.boost, 4),
            "strategy": strategy,
            "date": None if period is None else _period_doc(period, self.in_period),
            "entities": list(self.named) or None,
            "graph": None
            if self.graph is None
            else {"score": round(self.graph, 6), "via": list(self.via)},
            "staleness": {k: round(v, 4) for k, v in self.staleness.items()},
            "importance": {"value": self.memory.importance, "factor": round(self.importance, 4)},
        }
        if self.top_guard:
            doc["top_guard"] = True
        return doc


def _period_doc(period: Period, within: bool) -> dict[str, Any]:
    return {
        "phrase": period.phrase,
        "from": rfc3339(period.start.timestamp()),
        "to": rfc3339(period.end.timestamp()),
        "within": within,
    }


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(score, 6)
