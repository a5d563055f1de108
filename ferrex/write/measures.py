"""What the writer measures for a store's decision: the cosine of two vectors, and the
vectors of a chunk's pending stores, which later stores of the chunk are compared with."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["Pending", "cosine"]


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

    def cosines(self, vector: np.ndarray[Any, Any]) -> list[tuple[str, float]]:
        """``(id, cosine)`` of every pending vector, in the order they were added (clamped to
        [-1, 1]; a value that is not finite counts as 0, as :func:`cosine`)."""
        if self._rows is None or not self.ids:
            return []
        values = self._rows[: len(self.ids)] @ np.asarray(vector, dtype=np.float32)
        values = np.where(np.isfinite(values), np.clip(values, -1.0, 1.0), 0.0)
        return list(zip(self.ids, (float(v) for v in values), strict=True))
