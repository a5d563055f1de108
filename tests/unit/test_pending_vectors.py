"""What the writer measures: the chunk's pending vectors (one matrix product gives what a cosine
per vector gave) and a store's measures, each taken once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ferrex.write.measures import Pending, StoreMeasures, cosine
from ferrex.write.pipeline import embedding_units


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


def test_store_measures_measure_each_pair_and_the_neighbours_once() -> None:
    rng = np.random.default_rng(7)
    table = {t: v / np.linalg.norm(v) for t, v in
             ((t, rng.normal(size=8).astype(np.float32)) for t in ("a", "b", "c"))}  # fmt: skip
    embedded: list[list[str]] = []

    def embed_many(texts: Sequence[str]) -> np.ndarray[Any, Any]:
        embedded.append(list(texts))
        return np.stack([table[t] for t in texts])

    looked: list[int] = []

    def nearest() -> list[tuple[str, float]]:
        looked.append(1)
        return [("mem_1", 0.9)]

    measures = StoreMeasures(embed_many, nearest)
    first = measures.cosines([("a", "b"), ("a", "c"), ("a", "b")])
    assert embedded == [["a", "b", "c"]]  # one call, each text once
    assert first[0] == first[2] and abs(first[1] - cosine(table["a"], table["c"])) < 1e-6
    assert measures.cosines([("a", "c")]) == [first[1]] and len(embedded) == 1
    measures.cosines([("b", "c"), ("a", "b")])
    assert embedded[1] == ["b", "c"]  # only the new pair is measured
    assert measures.neighbours() == measures.neighbours() == [("mem_1", 0.9)]
    assert looked == [1]


def test_a_floor_leaves_out_only_the_cosines_below_it() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((30, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pending = Pending()
    for i, vector in enumerate(vectors):
        pending.add(f"mem_{i}", vector)
    pending.add("mem_nan", np.array([np.nan] * 8, dtype=np.float32))
    every = pending.cosines(vectors[3])
    for floor in (-1.0, 0.0, 0.2, 0.5, every[3][1], 1.0):
        assert pending.cosines(vectors[3], floor) == [(i, v) for i, v in every if v >= floor]
    assert ("mem_3", every[3][1]) in pending.cosines(vectors[3], every[3][1])
    assert ("mem_nan", 0.0) in pending.cosines(vectors[3], 0.0)


def test_the_embedding_units_cover_every_chunk_once_in_order() -> None:
    assert embedding_units(0) == []
    assert embedding_units(1) == [range(0, 1)]
    assert embedding_units(2) == [range(0, 1), range(1, 2)]
    assert embedding_units(8) == [range(0, 1), range(1, 5), range(5, 7), range(7, 8)]
    for chunks in range(40):
        for most in (1, 2, 4, 7):
            units = embedding_units(chunks, most)
            assert [n for unit in units for n in unit] == list(range(chunks))
            assert all(1 <= len(unit) <= most for unit in units)
            if chunks > 2:
                assert len(units[0]) == len(units[-1]) == 1
