"""What recall keeps between calls: the query vectors it embedded, and the accesses it has not
written yet (the owner flushes them as ``memories.accessed``)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ferrex.models import Embedder


class QueryCache:
    """Query vectors by text, least recently used first out (queries repeat a lot)."""

    def __init__(self, embedder: Embedder, size: int = 512) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

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
