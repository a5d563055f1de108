"""What recall keeps between calls: the query vectors it embedded, and the accesses it has not
written yet (the owner flushes them as ``memories.accessed``)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, Final

import numpy as np

from ferrex.models import Embedder
from ferrex.models.query_adapter import QueryAdapter, adapter_for
from ferrex.rules.fusion import Leg
from projections.vectors import VectorBackend, VectorFilter


class QueryCache:
    """Query vectors by text, least recently used first out (queries repeat a lot)."""

    def __init__(self, embedder: Embedder, size: int = 512, *, adapt: float = 0.0) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._adapt = adapt

    @cached_property
    def _adapter(self) -> QueryAdapter | None:
        """The query adapter of the embedder's model (:mod:`ferrex.models.query_adapter`),
        when ``adapt`` (how far to move a question, 0 to 1) is above 0 and there is one."""
        return adapter_for(self.embedder.identity.key) if self._adapt > 0 else None

    def adapted(self, vector: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | None:
        """A question's vector (:meth:`vector`) as a dense leg searches with it when there
        is an adapter to move it; else None, and the leg searches with the vector as it is
        (which is also how two texts are compared, and what relevance reads)."""
        adapter = self._adapter
        return None if adapter is None else adapter(vector, self._adapt)

    def searched(self, text: str) -> np.ndarray[Any, Any]:
        """The vector a dense leg searches with for ``text``: adapted if it can be."""
        vector = self.vector(text)
        moved = self.adapted(vector)
        return vector if moved is None else moved

    def vector(self, text: str) -> np.ndarray[Any, Any]:
        with self._lock:
            if text in self._vectors:
                self._vectors.move_to_end(text)
                return self._vectors[text]
        vector = self.embedder.embed_query(text)
        with self._lock:
            self._vectors[text] = vector
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector


class AccessLog:
    """Recall hits waiting to be journaled; flushed in batches (timer, shutdown, CLI exit)."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[int, datetime]] = {}
        self._lock = threading.Lock()

    def record(self, memory_ids: Sequence[str], at: datetime) -> None:
        with self._lock:
            for memory_id in memory_ids:
                count, last = self._pending.get(memory_id, (0, at))
                self._pending[memory_id] = (count + 1, max(last, at))

    def __len__(self) -> int:
        return len(self._pending)

    def snapshot(self) -> dict[str, tuple[int, float]]:
        """The hits not journaled yet: memory id -> (count, last hit as float epoch seconds)."""
        with self._lock:
            return {mid: (n, last.timestamp()) for mid, (n, last) in self._pending.items()}

    def flush(self, write: Callable[[Mapping[str, tuple[int, datetime]]], object]) -> int:
        """Hand everything pending to ``write`` (the writer journals it as one
        ``memories.accessed`` record); returns how many memories it covered. Kept for the
        next flush if ``write`` fails."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return 0
        try:
            write(pending)
        except BaseException:
            with self._lock:  # nothing acknowledged: keep them for the next flush
                for memory_id, (count, last) in pending.items():
                    old_count, old_last = self._pending.get(memory_id, (0, last))
                    self._pending[memory_id] = (old_count + count, max(old_last, last))
            raise
        return len(pending)


#: The leg beside an adapted dense leg that holds the plain query vector's cosines: the
#: evidence relevance reads (its model was fitted on plain cosines), while the adapted leg
#: ranks.
COSINES: Final = "cosines"


def dense_legs(
    backend: VectorBackend,
    collection: str,
    queries: QueryCache,
    question: str,
    flt: VectorFilter,
    n: int,
    scale: int,
) -> dict[str, Leg]:
    """The dense leg of ``question`` (its best ``n`` points as a ranking of memories,
    normalised against its point at rank ``scale``), searched with the adapted vector when
    there is one; then also :data:`COSINES`, the same search with the plain vector, in one
    call to the engine. Raises :class:`ferrex.models.remote.ServerDown` when the embeddings
    server cannot be reached."""
    vector = queries.vector(question)
    plain = [float(x) for x in vector]
    moved = queries.adapted(vector)
    if moved is None:
        return {"dense": Leg.of(backend.query_dense(collection, plain, flt, n), n, scale)}
    asked = [([float(x) for x in moved], flt), (plain, flt)]
    ranked, compared = backend.query_dense_batch(collection, asked, n)
    return {"dense": Leg.of(ranked, n, scale), COSINES: Leg.of(compared, n, scale)}
