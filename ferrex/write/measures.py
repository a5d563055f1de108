"""What the writer measures for a store's decision, when the decision asks
(:class:`ferrex.core.decide.shared.Measures`): cosines of short texts, the nearest memories by
dense vector, and the vectors of a chunk's pending stores, which later stores of the chunk
are compared with."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ferrex.core.decide.copies import neighbour_floor
from ferrex.core.settings import StoreSettings
from ferrex.rules.memory_input import ValidStore
from projections.replay import Projections
from projections.vectors import VectorFilter

__all__ = ["ChunkVectors", "Pending", "StoreMeasures", "cosine", "nearest"]


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    value = float(np.dot(a, b))
    return max(-1.0, min(1.0, value)) if math.isfinite(value) else 0.0


class Pending:
    """The vectors of a chunk's pending stores, by memory id, in one growing matrix: the
    cosines of a new vector with all of them are one matrix product, not one call each."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._rows: np.ndarray[Any, Any] | None = None

    def add(self, memory_id: str, vector: np.ndarray[Any, Any]) -> None:
        row = np.asarray(vector, dtype=np.float32)
        if self._rows is None:
            self._rows = np.empty((16, row.shape[0]), dtype=np.float32)
        elif len(self.ids) == self._rows.shape[0]:
            grown = np.empty((2 * len(self.ids), row.shape[0]), dtype=np.float32)
            grown[: len(self.ids)] = self._rows
            self._rows = grown
        self._rows[len(self.ids)] = row
        self.ids.append(memory_id)

    def cosines(
        self, vector: np.ndarray[Any, Any], floor: float | None = None
    ) -> list[tuple[str, float]]:
        """``(id, cosine)`` of every pending vector, in the order they were added (clamped to
        [-1, 1]; a value that is not finite counts as 0, as :func:`cosine`); with ``floor``,
        only those at or above it (the dedup check looks at no others: a chunk's store is
        then not compared in Python with every store before it)."""
        if self._rows is None or not self.ids:
            return []
        values = self._rows[: len(self.ids)] @ np.asarray(vector, dtype=np.float32)
        values = np.where(np.isfinite(values), np.clip(values, -1.0, 1.0), 0.0)
        if floor is None:
            return list(zip(self.ids, values.tolist(), strict=True))
        kept = np.flatnonzero(values.astype(np.float64) >= floor)  # as the check compares
        return [(self.ids[i], v) for i, v in zip(kept.tolist(), values[kept].tolist(), strict=True)]


@dataclass
class ChunkVectors:
    """What the stores of one chunk keep between their decisions (the writer's
    ``Batch.state``): the vectors of its pending stores, the committed nearest memories by
    store index, and the vectors read ahead for those queries, by store index."""

    pending: Pending = field(default_factory=Pending)
    nearest: dict[int, list[tuple[str, float]]] = field(default_factory=dict)
    ahead: dict[int, NDArray[np.float32]] = field(default_factory=dict)


class StoreMeasures:
    """What one store's decision asks to measure (:class:`ferrex.core.decide.shared.Measures`),
    each measured once however often it is asked: cosines of short texts by the embedding
    model (``embed_many``; its cache keeps each text's vector), the nearest memories by
    ``nearest`` (Qdrant and the chunk's pending vectors), taken at the first ask."""

    def __init__(
        self,
        embed_many: Callable[[Sequence[str]], np.ndarray[Any, Any]],
        nearest: Callable[[], list[tuple[str, float]]],
    ) -> None:
        self._embed_many = embed_many
        self._nearest = nearest
        self._cosines: dict[tuple[str, str], float] = {}
        self._neighbours: list[tuple[str, float]] | None = None

    def cosines(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        new = [pair for pair in dict.fromkeys(pairs) if pair not in self._cosines]
        if new:
            texts = list(dict.fromkeys(text for pair in new for text in pair))
            vectors = dict(zip(texts, self._embed_many(texts), strict=True))
            self._cosines.update({(a, b): cosine(vectors[a], vectors[b]) for a, b in new})
        return [self._cosines[pair] for pair in pairs]

    def neighbours(self) -> list[tuple[str, float]]:
        if self._neighbours is None:
            self._neighbours = self._nearest()
        return self._neighbours


def nearest(
    projections: Projections,
    stores: Sequence[tuple[ValidStore, np.ndarray[Any, Any]]],
    settings: StoreSettings,
) -> list[list[tuple[str, float]]]:
    """The committed nearest memories of each ``(store, vector)``, from Qdrant in one batch
    of queries: of the store's namespace and type, the caller's visibility applied there too.
    The chunk's pending memories are not in Qdrant yet: :meth:`Pending.cosines` adds them."""
    queries = []
    for valid, vector in stores:
        flt = VectorFilter(
            namespace=valid.namespace or settings.default_namespace,
            types=(valid.type,),
            only_valid=True,
            agent_id=valid.agent_id,
        )
        queries.append((np.asarray(vector, dtype=np.float32).tolist(), flt))
    # The dedup check looks at no neighbour below the floor: Qdrant leaves them out.
    answers = projections.backend.query_dense_batch(
        projections.live.memories, queries, 5, at_least=neighbour_floor(settings)
    )
    return [[(str(hit.payload.get("memory_id")), hit.score) for hit in hits] for hits in answers]
