"""The chunk's pending vectors: one matrix product gives what a cosine per vector gave."""

from __future__ import annotations

import numpy as np

from ferrex.write.measures import Pending, cosine


def test_cosines_with_every_pending_vector_in_the_order_added() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((40, 8)).astype(np.float32)  # past the first growth (16)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pending = Pending()
    assert pending.cosines(vectors[0]) == []
    for i, vector in enumerate(vectors):
        pending.add(f"mem_{i}", vector)
    query = vectors[7]
    found = pending.cosines(query)
    assert [memory_id for memory_id, _ in found] == [f"mem_{i}" for i in range(40)]
    for (_, value), vector in zip(found, vectors, strict=True):
        assert abs(value - cosine(query, vector)) < 1e-6
    assert abs(found[7][1] - 1.0) < 1e-6


def test_a_value_that_is_not_finite_counts_as_zero() -> None:
    pending = Pending()
    pending.add("mem_a", np.array([np.nan, 0.0], dtype=np.float32))
    pending.add("mem_b", np.array([2.0, 0.0], dtype=np.float32))
    assert pending.cosines(np.array([1.0, 0.0], dtype=np.float32)) == [
        ("mem_a", 0.0),
        ("mem_b", 1.0),  # 2.0, clamped
    ]
