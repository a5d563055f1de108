"""One contract for both vector backends: Qdrant Edge on disk and qdrant-client's local mode.

Every test taking ``backend`` runs against both; the tests that name a backend check what
only that one has (Edge's shard lock and reopening; the server client's connection error).
The data is small and hand-made (dimension 8, a few sparse token ids) so that each
assertion says exactly which point must come back and why.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from projections.qdrant_edge import EdgeBackend
from projections.qdrant_server import ClientBackend
from projections.vectors import (
    EmbeddedVectors,
    Hit,
    SparseVector,
    StoreLocked,
    StoreUnreachable,
    VectorBackend,
    VectorFilter,
    VectorPoint,
    VectorStoreError,
    filter_clauses,
    passes,
)

ROOT = Path(__file__).resolve().parents[2]
DIM = 8
NAME = "memories"
COMMON = 7  # a token every point of the fixed data set holds
ONLY_P3 = 999  # a token only point 3 holds


def pid(n: int) -> str:
    """Point ids whose order is the order of ``n``, so tie-breaking is easy to state."""
    return str(uuid.UUID(int=n))


def unit(*pairs: tuple[int, float]) -> list[float]:
    v = [0.0] * DIM
    for i, x in pairs:
        v[i] = x
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def sparse(**weights: float) -> SparseVector:
    items = sorted((int(k[1:]), w) for k, w in weights.items())
    return SparseVector(tuple(i for i, _ in items), tuple(w for _, w in items))


@dataclass(frozen=True)
class Row:
    n: int
    memory: str
    ns: str
    type: str
    entities: tuple[str, ...]
    t_valid: float
    t_invalid: float | None
    agent: str | None
    visibility: str
    dense: list[float]
    sparse: SparseVector
    step: int = 0

    def point(self) -> VectorPoint:
        payload: dict[str, Any] = {
            "memory_id": self.memory,
            "namespace": self.ns,
            "type": self.type,
            "entity_ids": list(self.entities),
            "t_valid": self.t_valid,
            "t_invalid": self.t_invalid,
            "agent_id": self.agent,
            "visibility": self.visibility,
            "step": self.step,
        }
        return VectorPoint(pid(self.n), self.dense, self.sparse, payload)


# Against the dense query e0, namespace "a" ranks 1 (1.0), 5 (0.894), 2 (0.707), then 3, 4
# and 7 tie at 0. Against the token COMMON, weights fall from point 1 to point 7.
# m2 was superseded at t=300 (by m5); m7 was valid from 150 to 250. m3 has two steps.
ROWS = [
    Row(1, "m1", "a", "semantic", ("e1",), 100, None, None, "shared",
        unit((0, 1)), sparse(t7=1.0, t100=1.0)),
    Row(2, "m2", "a", "episodic", ("e2",), 200, 300, "alice", "private",
        unit((0, 1), (1, 1)), sparse(t7=0.8, t101=1.0)),
    Row(3, "m3", "a", "procedural", ("e1", "e3"), 300, None, "bob", "private",
        unit((1, 1)), sparse(t7=0.6, t999=1.0)),
    Row(4, "m3", "a", "procedural", ("e1", "e3"), 300, None, "bob", "private",
        unit((1, 1), (2, 1)), sparse(t7=0.5, t102=1.0), step=1),
    Row(5, "m5", "a", "semantic", ("e2",), 300, None, "alice", "shared",
        unit((0, 2), (2, 1)), sparse(t7=0.4, t101=0.5)),
    Row(6, "m6", "b", "semantic", ("e1",), 100, None, None, "shared",
        unit((0, 1), (3, 0.1)), sparse(t7=0.3, t100=1.0)),
    Row(7, "m7", "a", "episodic", (), 150, 250, None, "private",
        unit((3, 1)), sparse(t7=0.2)),
]  # fmt: skip
E0 = unit((0, 1))


def make(kind: str, tmp_path: Path) -> VectorBackend:
    if kind == "edge":
        # A tiny indexing threshold, so that optimize() really rebuilds these small shards.
        return EdgeBackend(tmp_path / "qdrant", indexing_threshold_kb=1)
    return ClientBackend(path=tmp_path / "local")


@pytest.fixture(params=["edge", "client"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorBackend]:
    store = make(request.param, tmp_path)
    yield store
    store.close()


@pytest.fixture
def loaded(backend: VectorBackend) -> VectorBackend:
    backend.ensure_collection(NAME, DIM)
    backend.upsert(NAME, [r.point() for r in ROWS])
    return backend


@pytest.fixture
def edge_loaded(tmp_path: Path) -> Iterator[EdgeBackend]:
    """The embedded backend with the rows: what only it does (:class:`EmbeddedVectors`)."""
    store = EdgeBackend(tmp_path / "qdrant", indexing_threshold_kb=1)
    store.ensure_collection(NAME, DIM)
    store.upsert(NAME, [r.point() for r in ROWS])
    yield store
    store.close()


def test_only_the_embedded_backend_has_the_embedded_capabilities(backend: VectorBackend) -> None:
    """A server acknowledges every write, holds its collections and indexes by itself: the
    client backend has none of :class:`EmbeddedVectors`' methods (no no-op, no refusal), and
    callers ask which a backend is."""
    embedded = isinstance(backend, EdgeBackend)
    assert isinstance(backend, EmbeddedVectors) == embedded
    for method in ("bulk", "sync", "release", "optimize", "unindexed", "copy_collection"):
        assert hasattr(backend, method) == embedded, method


def ns(hits: list[Hit]) -> list[int]:
    return [uuid.UUID(h.id).int for h in hits]


# -- storing -----------------------------------------------------------------------------


def test_points_come_back_as_stored(loaded: VectorBackend) -> None:
    assert loaded.count(NAME) == len(ROWS)
    got = loaded.retrieve(NAME, [pid(2), pid(4), pid(404)])
    assert sorted(got) == [pid(2), pid(4)]
    for row in (ROWS[1], ROWS[3]):
        dense, sp, payload = got[pid(row.n)]
        assert dense == pytest.approx(row.dense, abs=1e-6)  # stored normalized, as given
        assert sp.indices == row.sparse.indices
        assert sp.values == pytest.approx(row.sparse.values)
        assert payload == row.point().payload


def test_upserting_the_same_id_again_overwrites(loaded: VectorBackend) -> None:
    again = replace(ROWS[0], type="episodic", sparse=sparse(t7=1.0, t555=2.0)).point()
    loaded.upsert(NAME, [again, again])
    assert loaded.count(NAME) == len(ROWS)
    _, sp, payload = loaded.retrieve(NAME, [pid(1)])[pid(1)]
    assert payload["type"] == "episodic"
    assert sp.indices == (7, 555)


def test_ensure_collection_is_idempotent_and_checks_the_dimension(
    loaded: VectorBackend,
) -> None:
    loaded.ensure_collection(NAME, DIM)
    loaded.ensure_collection("entities", DIM)
    assert loaded.collections() == ["entities", NAME]
    assert loaded.count(NAME) == len(ROWS)
    with pytest.raises(VectorStoreError, match="dimension"):
        loaded.ensure_collection(NAME, DIM * 2)


def test_delete_by_id_and_by_memory(loaded: VectorBackend) -> None:
    loaded.delete(NAME, [pid(1), pid(404)])
    assert loaded.count(NAME) == len(ROWS) - 1
    loaded.delete_by_memory(NAME, ["m3", "m-unknown"])  # both steps of m3
    assert loaded.count(NAME) == len(ROWS) - 3
    assert loaded.retrieve(NAME, [pid(1), pid(3), pid(4)]) == {}
    loaded.delete(NAME, [])
    loaded.delete_by_memory(NAME, [])
    assert loaded.count(NAME) == len(ROWS) - 3


def test_set_payload_merges_into_every_step_of_the_memory(loaded: VectorBackend) -> None:
    loaded.set_payload(NAME, ["m3"], {"t_invalid": 400.0, "extra": "x"})
    got = loaded.retrieve(NAME, [pid(3), pid(4), pid(5)])
    for n in (3, 4):
        payload = got[pid(n)][2]
        assert payload["t_invalid"] == 400.0
        assert payload["extra"] == "x"
        assert payload["memory_id"] == "m3"
        assert payload["entity_ids"] == ["e1", "e3"]  # untouched keys stay
    assert got[pid(5)][2]["t_invalid"] is None
    # The merge is visible to filters at once.
    hits = loaded.query_dense(NAME, E0, VectorFilter(only_valid=True), 100)
    assert not {3, 4} & set(ns(hits))


def test_scroll_yields_every_point_with_its_payload(loaded: VectorBackend) -> None:
    seen = list(loaded.scroll(NAME))
    assert [i for i, _ in seen] == sorted(pid(r.n) for r in ROWS)
    assert dict(seen) == {pid(r.n): r.point().payload for r in ROWS}


def test_times_with_microseconds_round_trip_exactly(backend: VectorBackend) -> None:
    # Reconcile compares payload times for equality. Edge can return a double that needs all
    # 17 significant digits one unit in the last place off; epoch seconds with microseconds
    # come back exactly (as an integer their digits stay below 2**53 until the year 2255).
    seed = int(os.environ.get("FERREX_TEST_SEED", random.randrange(2**32)))
    print(f"seed={seed}")
    rng = random.Random(seed)
    times = [rng.randrange(0, 7_258_118_400 * 10**6) / 10**6 for _ in range(300)]  # to 2200
    backend.ensure_collection(NAME, DIM)
    points = [
        VectorPoint(pid(i + 1), E0, sparse(t1=1.0), {"t_valid": t, "t_invalid": t})
        for i, t in enumerate(times)
    ]
    backend.upsert(NAME, points)
    stored = dict(backend.scroll(NAME))
    wrong = [(t, stored[p.id]["t_valid"]) for p, t in zip(points, times, strict=True)]
    assert [pair for pair in wrong if pair[0] != pair[1]] == []


def test_drop_collection(loaded: VectorBackend) -> None:
    loaded.drop_collection(NAME)
    loaded.drop_collection(NAME)  # dropping what is not there is not an error
    assert loaded.collections() == []
    with pytest.raises(VectorStoreError):
        loaded.count(NAME)
    loaded.ensure_collection(NAME, DIM)
    assert loaded.count(NAME) == 0


def test_a_released_collection_answers_as_before_from_its_files(edge_loaded: EdgeBackend) -> None:
    """``release`` (after a rebuild): the same points and answers after, also when called
    inside a bulk block; the next use opens the collection again."""
    loaded = edge_loaded
    with loaded.bulk(NAME):
        loaded.delete(NAME, [pid(7)])
        before = loaded.query_hybrid(NAME, E0, sparse(t7=1.0), VectorFilter(), 10, 5)
        loaded.release(NAME)  # inside the block too: nothing waits for its end
    loaded.release(NAME)
    loaded.release("never-opened")  # nothing open: nothing to do
    assert loaded.open_collections() == []
    assert loaded.count(NAME) == len(ROWS) - 1
    assert loaded.query_hybrid(NAME, E0, sparse(t7=1.0), VectorFilter(), 10, 5) == before
    assert loaded.open_collections() == [NAME]


def test_bad_input_becomes_a_vector_store_error(loaded: VectorBackend) -> None:
    wrong_dim = VectorPoint(pid(50), [1.0] * (DIM - 1), sparse(t1=1.0), {})
    with pytest.raises(VectorStoreError):
        loaded.upsert(NAME, [wrong_dim])
    with pytest.raises(VectorStoreError):
        loaded.query_dense("no-such-collection", E0, VectorFilter(), 5)
    assert loaded.count(NAME) == len(ROWS)


# -- filters -----------------------------------------------------------------------------

ALL = {r.n for r in ROWS}
FILTERS: list[tuple[str, VectorFilter, set[int]]] = [
    ("nothing", VectorFilter(), ALL),
    ("namespace a", VectorFilter(namespace="a"), ALL - {6}),
    ("namespace b", VectorFilter(namespace="b"), {6}),
    ("namespace none", VectorFilter(namespace="zzz"), set()),
    ("types", VectorFilter(types=("procedural", "episodic")), {2, 3, 4, 7}),
    ("one entity", VectorFilter(entity_ids=("e3",)), {3, 4}),
    ("any entity", VectorFilter(entity_ids=("e2", "e3")), {2, 3, 4, 5}),
    ("time range", VectorFilter(t_valid_from=150, t_valid_to=300), {2, 7}),
    ("time from", VectorFilter(t_valid_from=300), {3, 4, 5}),
    ("as of 120", VectorFilter(valid_at=120), {1, 6}),
    ("as of 220", VectorFilter(valid_at=220), {1, 2, 6, 7}),
    ("as of 250 (m7 ends)", VectorFilter(valid_at=250), {1, 2, 6}),
    ("as of 300 (m2 superseded)", VectorFilter(valid_at=300), {1, 3, 4, 5, 6}),
    ("only valid", VectorFilter(only_valid=True), {1, 3, 4, 5, 6}),
    ("alice", VectorFilter(agent_id="alice"), {1, 2, 5, 6, 7}),
    ("bob", VectorFilter(agent_id="bob"), {1, 3, 4, 5, 6, 7}),
    ("stranger", VectorFilter(agent_id="carol"), {1, 5, 6, 7}),
    ("memory ids", VectorFilter(memory_ids=("m3", "m6")), {3, 4, 6}),
    (
        "together",
        VectorFilter(namespace="a", only_valid=True, agent_id="alice", types=("semantic",)),
        {1, 5},
    ),
]


@pytest.mark.parametrize(("flt", "expected"), [f[1:] for f in FILTERS], ids=[f[0] for f in FILTERS])
def test_every_leg_applies_the_filter(
    loaded: VectorBackend, flt: VectorFilter, expected: set[int]
) -> None:
    # A dense query returns every point that passes; the token COMMON is in every point.
    assert set(ns(loaded.query_dense(NAME, E0, flt, 100))) == expected
    assert set(ns(loaded.query_sparse(NAME, sparse(t7=1.0), flt, 100))) == expected
    hybrid = loaded.query_hybrid(NAME, E0, sparse(t7=1.0), flt, prefetch=100, limit=100)
    assert set(ns(hybrid)) == expected
    # The pure reading of the same clauses (recall admits neighbours with it) agrees.
    clauses = filter_clauses(flt)
    assert {r.n for r in ROWS if passes(clauses, r.point().payload)} == expected


def test_a_point_without_t_invalid_or_agent_counts_as_valid_and_unowned(
    loaded: VectorBackend,
) -> None:
    bare = replace(ROWS[0], n=60, memory="m60").point()
    for key in ("t_invalid", "agent_id"):
        del bare.payload[key]
    loaded.upsert(NAME, [bare])
    flt = VectorFilter(only_valid=True, agent_id="carol", valid_at=500)
    assert 60 in ns(loaded.query_dense(NAME, E0, flt, 100))
    assert passes(filter_clauses(flt), bare.payload)


# -- ranking -----------------------------------------------------------------------------


def test_dense_leg_ranks_by_cosine_and_ties_by_id(loaded: VectorBackend) -> None:
    hits = loaded.query_dense(NAME, E0, VectorFilter(namespace="a"), 10)
    assert ns(hits) == [1, 5, 2, 3, 4, 7]
    assert [h.score for h in hits[:3]] == pytest.approx([1.0, 2 / math.sqrt(5), math.sqrt(0.5)])
    assert ns(loaded.query_dense(NAME, E0, VectorFilter(namespace="a"), 4)) == [1, 5, 2, 3]


def test_sparse_leg_finds_exact_tokens_only(loaded: VectorBackend) -> None:
    assert ns(loaded.query_sparse(NAME, sparse(t999=1.0), VectorFilter(), 10)) == [3]
    assert ns(loaded.query_sparse(NAME, sparse(t101=1.0), VectorFilter(), 10)) == [2, 5]
    common = loaded.query_sparse(NAME, sparse(t7=1.0), VectorFilter(), 10)
    assert ns(common) == [1, 2, 3, 4, 5, 6, 7]
    assert loaded.query_sparse(NAME, sparse(t31337=1.0), VectorFilter(), 10) == []
    assert loaded.query_sparse(NAME, SparseVector((), ()), VectorFilter(), 10) == []


def test_a_point_without_sparse_terms_is_found_by_the_dense_leg_only(
    loaded: VectorBackend,
) -> None:
    # The later parts of a long memory carry no BM25 terms (the first part has them all).
    part = replace(ROWS[0], n=8, memory="m8", dense=unit((4, 1)), sparse=SparseVector((), ()))
    loaded.upsert(NAME, [part.point()])
    assert ns(loaded.query_dense(NAME, unit((4, 1)), VectorFilter(), 1)) == [8]
    common = loaded.query_sparse(NAME, sparse(t7=1.0), VectorFilter(), 10)
    assert 8 not in ns(common) and len(common) == 7
    stored = loaded.retrieve(NAME, [pid(8)])[pid(8)]
    assert stored[1] == SparseVector((), ())


def test_sparse_scores_carry_idf(loaded: VectorBackend) -> None:
    # IDF = ln(1 + (N - n + 0.5) / (n + 0.5)) with N = 7 points: a token in 1 point
    # outweighs a token in all 7 at equal stored weight.
    rare = loaded.query_sparse(NAME, sparse(t999=1.0), VectorFilter(), 1)[0].score
    everywhere = loaded.query_sparse(NAME, sparse(t7=1.0), VectorFilter(), 1)[0].score
    assert rare == pytest.approx(math.log(1 + 6.5 / 1.5), rel=1e-4)
    assert everywhere == pytest.approx(1.0 * math.log(1 + 0.5 / 7.5), rel=1e-4)


def test_hybrid_fuses_what_only_one_leg_finds(loaded: VectorBackend) -> None:
    flt = VectorFilter(namespace="a")
    dense_top = ns(loaded.query_dense(NAME, E0, flt, 2))
    sparse_all = ns(loaded.query_sparse(NAME, sparse(t999=1.0), flt, 10))
    assert dense_top == [1, 5]
    assert sparse_all == [3]  # point 3 is orthogonal to e0: only the sparse leg finds it
    hits = loaded.query_hybrid(NAME, E0, sparse(t999=1.0), flt, prefetch=2, limit=10)
    # RRF, k = 60: point 1 is first of the dense leg, point 3 first of the sparse leg, both
    # 1/60 and so tied (broken by id); point 5 is second of the dense leg, 1/61.
    assert ns(hits) == [1, 3, 5]
    assert [h.score for h in hits] == pytest.approx([1 / 60, 1 / 60, 1 / 61], rel=1e-5)
    assert hits[0].payload["memory_id"] == "m1"


def test_hybrid_adds_up_both_legs(loaded: VectorBackend) -> None:
    hits = loaded.query_hybrid(NAME, E0, sparse(t101=1.0), VectorFilter(), prefetch=3, limit=3)
    # Dense: 1, 6, 5; sparse: 2, 5. Point 5 is in both: 1/62 + 1/61.
    assert ns(hits) == [5, 1, 2]
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61, rel=1e-5)


def test_ties_are_broken_by_id_even_past_the_first_fetch(backend: VectorBackend) -> None:
    backend.ensure_collection("ties", DIM)
    numbers = list(range(100, 130))
    random.Random(0).shuffle(numbers)  # inserted out of id order
    same = [
        VectorPoint(pid(n), E0, sparse(t5=1.0), {"namespace": "t", "memory_id": f"m{n}"})
        for n in numbers
    ]
    backend.upsert("ties", same)
    flt = VectorFilter(namespace="t")
    assert ns(backend.query_dense("ties", E0, flt, 3)) == [100, 101, 102]
    settled = backend.query_sparse("ties", sparse(t5=1.0), flt, 3)
    assert ns(settled) == [100, 101, 102]
    # Settling the tie took more rounds; the kept hits still carry their whole payloads.
    assert [h.payload for h in settled] == [{"namespace": "t", "memory_id": f"m{n}"}
                                            for n in (100, 101, 102)]  # fmt: skip
    assert ns(backend.query_dense("ties", E0, flt, 25)) == list(range(100, 125))


def test_a_batch_of_dense_queries_answers_as_each_query_alone(loaded: VectorBackend) -> None:
    queries = [
        (E0, VectorFilter(namespace="a")),
        (unit((1, 1)), VectorFilter(namespace="a", types=("procedural",), agent_id="bob")),
        (unit((3, 1)), VectorFilter(only_valid=True)),
        (E0, VectorFilter(namespace="no-such-namespace")),
        (unit((0, 1), (1, 1)), VectorFilter(types=("semantic",), agent_id="alice")),
    ]
    for limit in (1, 2, 10):
        batch = loaded.query_dense_batch(NAME, queries, limit)
        alone = [loaded.query_dense(NAME, dense, flt, limit) for dense, flt in queries]
        assert batch == alone
    assert ns(loaded.query_dense_batch(NAME, queries, 4)[0]) == [1, 5, 2, 3]
    assert loaded.query_dense_batch(NAME, queries, 4)[3] == []
    assert loaded.query_dense_batch(NAME, [], 4) == []
    assert loaded.query_dense_batch(NAME, queries[:2], 0) == [[], []]
    with pytest.raises(VectorStoreError):
        loaded.query_dense_batch("no-such-collection", queries, 5)


def test_a_batch_asked_for_hits_of_at_least_a_score_leaves_out_only_the_lower(
    loaded: VectorBackend,
) -> None:
    queries = [
        (E0, VectorFilter(namespace="a")),
        (unit((1, 1)), VectorFilter()),
        (unit((3, 1)), VectorFilter(only_valid=True)),
        (unit((0, 1), (1, 1)), VectorFilter(types=("semantic",), agent_id="alice")),
    ]
    alone = [loaded.query_dense(NAME, dense, flt, 4) for dense, flt in queries]
    scores = sorted({h.score for hits in alone for h in hits})
    assert len(scores) > 3  # the floors below cut between hits of one answer
    for floor in (-1.0, *scores, 1.0):
        batch = loaded.query_dense_batch(NAME, queries, 4, at_least=floor)
        assert batch == [[h for h in hits if h.score >= floor] for hits in alone]


def test_an_indexed_collection_answers_a_batch_as_each_query_alone(tmp_path: Path) -> None:
    # After optimize a dense search walks the HNSW graph over the int8 copies with the
    # backend's search parameters; a batch asked without them (Edge's default ef, no
    # oversampling) answered 36 of these 40 queries otherwise than each query alone.
    rng = random.Random(27)

    def vector(dim: int = 64) -> list[float]:
        v = [rng.gauss(0.0, 1.0) for _ in range(dim)]
        norm = math.sqrt(sum(x * x for x in v))
        return [x / norm for x in v]

    store = make("edge", tmp_path)
    try:
        store.ensure_collection(NAME, 64)
        points = [
            VectorPoint(str(uuid.UUID(int=i + 1)), vector(), sparse(t1=1.0),
                        {"memory_id": f"m{i}", "namespace": "a"})
            for i in range(4000)
        ]  # fmt: skip
        with store.bulk(NAME):
            store.upsert(NAME, points)
        assert store.optimize(NAME)
        queries = [(vector(), VectorFilter(namespace="a")) for _ in range(40)]
        alone = [store.query_dense(NAME, dense, flt, 10) for dense, flt in queries]
        assert store.query_dense_batch(NAME, queries, 10) == alone
        # Asked for the hits of at least a score, the indexed search (over the int8 copies,
        # rescored with the floats) loses none of the hits at or above it, at any of these.
        scores = sorted(h.score for hits in alone for h in hits)
        for floor in scores[:: len(scores) // 8]:
            cut = [[h for h in hits if h.score >= floor] for hits in alone]
            assert store.query_dense_batch(NAME, queries, 10, at_least=floor) == cut
    finally:
        store.close()


def test_a_batch_settles_a_tie_across_the_cut_as_one_query_does(backend: VectorBackend) -> None:
    backend.ensure_collection("ties", DIM)
    numbers = list(range(100, 130))
    random.Random(1).shuffle(numbers)
    backend.upsert("ties", [
        VectorPoint(pid(n), E0, sparse(t5=1.0), {"namespace": "t", "memory_id": f"m{n}"})
        for n in numbers
    ])  # fmt: skip
    flt = VectorFilter(namespace="t")
    tied, other = backend.query_dense_batch("ties", [(E0, flt), (unit((1, 1)), flt)], 3)
    assert ns(tied) == [100, 101, 102]
    assert [h.payload["memory_id"] for h in tied] == ["m100", "m101", "m102"]
    assert other == backend.query_dense("ties", unit((1, 1)), flt, 3)
    # With a floor: the tie is settled as before (all 30 score the floor itself), and a
    # floor above every score leaves nothing.
    floor = tied[0].score
    assert backend.query_dense_batch("ties", [(E0, flt)], 3, at_least=floor) == [tied]
    assert backend.query_dense_batch("ties", [(E0, flt)], 3, at_least=1.5) == [[]]


def test_both_backends_rank_alike(tmp_path: Path) -> None:
    seed = int(os.environ.get("FERREX_TEST_SEED", random.randrange(2**32)))
    print(f"seed={seed}")
    rng = random.Random(seed)

    def rand_dense() -> list[float]:
        return unit(*((i, rng.gauss(0, 1)) for i in range(DIM)))

    def rand_sparse() -> SparseVector:
        tokens = sorted(rng.sample(range(40), rng.randint(2, 6)))
        return SparseVector(tuple(tokens), tuple(rng.uniform(0.1, 2.0) for _ in tokens))

    points = [
        VectorPoint(
            pid(rng.getrandbits(64)),
            rand_dense(),
            rand_sparse(),
            {
                "memory_id": f"m{i}",
                "namespace": rng.choice(["a", "b"]),
                "type": rng.choice(["semantic", "episodic", "procedural"]),
                "entity_ids": rng.sample(["e1", "e2", "e3", "e4"], rng.randint(0, 2)),
                "t_valid": float(rng.randint(0, 100)),
                "t_invalid": rng.choice([None, None, float(rng.randint(50, 150))]),
                "agent_id": rng.choice([None, "alice", "bob"]),
                "visibility": rng.choice(["private", "shared"]),
                "step": 0,
            },
        )
        for i in range(120)
    ]
    filters = [
        VectorFilter(),
        VectorFilter(namespace="a", only_valid=True),
        VectorFilter(agent_id="alice", types=("semantic", "episodic")),
        VectorFilter(valid_at=75, entity_ids=("e1", "e2")),
    ]
    queries = []
    for _ in range(4):
        tokens = tuple(sorted(rng.sample(range(40), 3)))
        queries.append((rand_dense(), SparseVector(tokens, (1.0,) * len(tokens))))
    answers: list[list[list[tuple[str, float]]]] = []
    for kind in ("edge", "client"):
        store = make(kind, tmp_path)
        try:
            store.ensure_collection(NAME, DIM)
            store.upsert(NAME, points)
            got = []
            for (dense, query), flt in itertools.product(queries, filters):
                for hits in (
                    store.query_dense(NAME, dense, flt, 10),
                    store.query_sparse(NAME, query, flt, 10),
                    store.query_hybrid(NAME, dense, query, flt, prefetch=12, limit=10),
                ):
                    got.append([(h.id, h.score) for h in hits])
            answers.append(got)
        finally:
            store.close()
    edge_answers, client_answers = answers
    assert sum(len(a) for a in edge_answers) > 200  # the queries did find things
    for edge_hits, client_hits in zip(edge_answers, client_answers, strict=True):
        assert [i for i, _ in edge_hits] == [i for i, _ in client_hits]
        assert [s for _, s in edge_hits] == pytest.approx([s for _, s in client_hits], rel=1e-4)


# -- optimize, reopen, processes ---------------------------------------------------------


def test_optimize_keeps_every_answer(edge_loaded: EdgeBackend) -> None:
    loaded = edge_loaded
    # Enough vectors to pass the indexing threshold; filtered out of every query below.
    filler = [
        VectorPoint(pid(1000 + i), unit((i % DIM, 1), (4, 0.5)), sparse(t5000=1.0), {
            "namespace": "filler", "t_valid": 0.0, "t_invalid": 1.0, "agent_id": "zed"
        })
        for i in range(200)
    ]  # fmt: skip
    loaded.upsert(NAME, filler)
    queries = [
        lambda: loaded.query_dense(NAME, E0, VectorFilter(namespace="a"), 10),
        lambda: loaded.query_sparse(NAME, sparse(t7=1.0), VectorFilter(only_valid=True), 10),
        lambda: loaded.query_hybrid(
            NAME, E0, sparse(t999=1.0), VectorFilter(valid_at=300, agent_id="bob"), 3, 10
        ),
    ]
    before = [q() for q in queries]
    assert loaded.optimize(NAME)
    after = [q() for q in queries]
    assert [ns(h) for h in after] == [ns(h) for h in before]
    for hits_after, hits_before in zip(after, before, strict=True):
        assert [h.score for h in hits_after] == pytest.approx([h.score for h in hits_before])
    loaded.upsert(NAME, [replace(ROWS[0], n=70, memory="m70").point()])  # still writable
    assert loaded.count(NAME) == len(ROWS) + len(filler) + 1


def test_edge_counts_the_dense_vectors_optimize_would_index(tmp_path: Path) -> None:
    # Shaped as the sink writes them: a memory's first part carries its BM25 terms, a later
    # part none; an entity's spelling has no step and its own terms.
    def memory(n: int, step: int) -> VectorPoint:
        terms = sparse(t7=1.0) if step == 0 else SparseVector((), ())
        payload = {"memory_id": f"m{n}", "namespace": "a", "step": step}
        return VectorPoint(pid(1000 * step + n), unit((n % DIM, 1), (7, 0.1)), terms, payload)

    spellings = [
        VectorPoint(pid(500 + i), unit((i % DIM, 1), (6, 0.1)), sparse(t9=1.0),
                    {"entity_id": f"e{i}"})
        for i in range(40)
    ]  # fmt: skip
    # A 1 KB threshold: Edge indexes a segment from 32 vectors of 8 floats on.
    store = make("edge", tmp_path)
    try:
        assert isinstance(store, EdgeBackend)
        store.ensure_collection(NAME, DIM)
        store.ensure_collection("entities", DIM)
        assert store.indexes_from(NAME) == 32
        store.upsert(NAME, [memory(n, 0) for n in range(36)] + [memory(n, 1) for n in range(4)])
        store.upsert("entities", spellings)
        assert store.unindexed(NAME) == 40
        assert store.unindexed("entities") == 40
        assert store.optimize(NAME) and store.optimize("entities")
        assert store.unindexed(NAME) == 0 and store.unindexed("entities") == 0
        store.upsert(NAME, [memory(n, 1) for n in range(100, 102)])
        assert store.unindexed(NAME) == 0  # two: too few for the threshold
        store.upsert(NAME, [memory(n, 0) for n in range(200, 230)])
        assert store.unindexed(NAME) == 32
        # Counted once; new points (joining no graph) add to it from the shard's info.
        store.upsert(NAME, [memory(n, 1) for n in range(300, 305)])
        assert store.unindexed(NAME) == 37
    finally:
        store.close()
    # Qdrant's own threshold (10,000 KB of vectors) is far above these few.
    default = EdgeBackend(tmp_path / "qdrant")
    try:
        assert default.indexes_from(NAME) == 10_000 * 1024 // (4 * DIM)
        assert default.unindexed(NAME) == 0
    finally:
        default.close()


def test_edge_copies_a_collection_that_answers_alike_and_lives_apart(
    edge_loaded: EdgeBackend,
) -> None:
    loaded = edge_loaded
    loaded.copy_collection(NAME, "copy_1")
    assert {NAME, "copy_1"} <= set(loaded.collections())

    def on_disk(name: str) -> tuple[int, int]:  # (bytes allocated, bytes long)
        files = [p for p in (loaded.root / name).rglob("*") if p.is_file()]
        return sum(p.stat().st_blocks * 512 for p in files), sum(p.stat().st_size for p in files)

    # Edge's growing files are mostly holes, and the copy leaves them holes.
    (held, length), (copy_held, copy_length) = on_disk(NAME), on_disk("copy_1")
    assert copy_length == length and held < length // 2
    assert copy_held <= held + 1024 * 1024
    flt = VectorFilter(namespace="a")
    assert loaded.query_dense("copy_1", E0, flt, 10) == loaded.query_dense(NAME, E0, flt, 10)
    loaded.upsert(NAME, [replace(ROWS[0], n=70, memory="m70").point()])
    assert loaded.count(NAME) == len(ROWS) + 1 and loaded.count("copy_1") == len(ROWS)
    with pytest.raises(VectorStoreError, match="exists"):
        loaded.copy_collection(NAME, "copy_1")
    loaded.drop_collection("copy_1")
    assert "copy_1" not in loaded.collections()


def test_edge_optimize_gives_an_old_shard_the_current_config(tmp_path: Path) -> None:
    """A shard made before the int8 copies (float vectors in RAM, Edge's defaults) opens
    as it is; ``optimize`` gives it this backend's config, and the answers stay."""
    import qdrant_edge as edge

    path = tmp_path / "qdrant" / NAME
    path.mkdir(parents=True)
    old = edge.EdgeShard.create(str(path), edge.EdgeConfig(
        vectors={"dense": edge.EdgeVectorParams(size=DIM, distance=edge.Distance.Cosine)},
        sparse_vectors={"bm25": edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
    ))  # fmt: skip
    old.close()
    store = make("edge", tmp_path)
    try:
        store.upsert(NAME, [r.point() for r in ROWS])  # opened lazily, its config kept
        assert "quantization" not in (path / "edge_config.json").read_text()
        # Four: the fifth and later tie (points 3, 4 and 7 are orthogonal to E0).
        query = (NAME, E0, sparse(t101=1.0), VectorFilter(), 4, 4)
        before = store.query_hybrid(*query), store.query_dense(NAME, E0, VectorFilter(), 4)
        assert store.optimize(NAME)
        config = json.loads((path / "edge_config.json").read_text())
        dense = config["vectors"]["dense"]
        assert dense["memory"] == "cold"
        assert dense["quantization_config"]["scalar"]["type"] == "int8"
        after = store.query_hybrid(*query), store.query_dense(NAME, E0, VectorFilter(), 4)
        assert [ns(hits) for hits in after] == [ns(hits) for hits in before]
        for hits_after, hits_before in zip(after, before, strict=True):
            assert [h.score for h in hits_after] == pytest.approx([h.score for h in hits_before])
    finally:
        store.close()


def test_edge_reopens_from_disk(tmp_path: Path) -> None:
    store = make("edge", tmp_path)
    store.ensure_collection(NAME, DIM)
    store.upsert(NAME, [r.point() for r in ROWS])
    store.set_payload(NAME, ["m1"], {"t_invalid": 1.0})
    before = store.query_hybrid(NAME, E0, sparse(t101=1.0), VectorFilter(), 5, 5)
    store.close()
    with pytest.raises(VectorStoreError, match="closed"):
        store.count(NAME)

    again = make("edge", tmp_path)
    try:
        assert again.collections() == [NAME]
        assert again.count(NAME) == len(ROWS)  # opened lazily, without ensure_collection
        assert again.retrieve(NAME, [pid(1)])[pid(1)][2]["t_invalid"] == 1.0
        assert again.query_hybrid(NAME, E0, sparse(t101=1.0), VectorFilter(), 5, 5) == before
        again.ensure_collection(NAME, DIM)
        with pytest.raises(VectorStoreError, match="dimension"):
            again.ensure_collection(NAME, DIM + 1)
    finally:
        again.close()
    third = make("edge", tmp_path)
    try:
        with pytest.raises(VectorStoreError, match="16"):  # checked by Edge on open
            third.ensure_collection(NAME, 16)
        assert third.count(NAME) == len(ROWS)
    finally:
        third.close()


def test_edge_shard_is_held_by_one_process_at_a_time(tmp_path: Path) -> None:
    store = make("edge", tmp_path)
    store.ensure_collection(NAME, DIM)
    store.upsert(NAME, [r.point() for r in ROWS])
    code = (
        "import sys\n"
        "from projections.qdrant_edge import EdgeBackend\n"
        "from projections.vectors import StoreLocked\n"
        f"store = EdgeBackend({str(tmp_path / 'qdrant')!r})\n"
        "try:\n"
        f"    store.count({NAME!r})\n"
        "except StoreLocked as exc:\n"
        "    print(exc)\n"
        "    sys.exit(3)\n"
        "print(store.count('memories'))\n"
    )
    run = [sys.executable, "-c", code]
    try:
        other = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert other.returncode == 3, other.stderr
        assert "open in another process" in other.stdout
        with pytest.raises(StoreLocked):  # a second backend in this process is refused too
            make("edge", tmp_path).count(NAME)
    finally:
        store.close()
    freed = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (freed.returncode, freed.stdout.strip()) == (0, str(len(ROWS))), freed.stderr


WRITER = """
import sys, uuid
from projections.qdrant_edge import EdgeBackend
from projections.vectors import SparseVector, VectorPoint
store = EdgeBackend(sys.argv[1])
store.ensure_collection("memories", 8)
for batch in range(10_000):
    points = [
        VectorPoint(str(uuid.UUID(int=batch * 10 + i + 1)), [1.0] + [0.0] * 7,
                    SparseVector((1,), (1.0,)), {"memory_id": f"m{batch}"})
        for i in range(10)
    ]
    store.upsert("memories", points)
    print(batch, flush=True)
"""


def test_edge_keeps_every_acknowledged_write_through_sigkill(tmp_path: Path) -> None:
    root = tmp_path / "qdrant"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lines.extend, args=(proc.stdout,))
    reader.start()
    deadline = time.monotonic() + 30
    while len(lines) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    reader.join(timeout=30)
    proc.stdout.close()
    acked = len(lines)
    assert acked >= 20
    store = EdgeBackend(root)
    try:
        stored = store.count(NAME)
        assert acked * 10 <= stored <= (acked + 1) * 10
        assert len(store.retrieve(NAME, [pid(n) for n in range(1, acked * 10 + 1)])) == acked * 10
    finally:
        store.close()


def test_client_says_plainly_when_no_server_listens() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(StoreUnreachable) as caught:
        ClientBackend(url=url)
    assert str(caught.value) == f"cannot connect to Qdrant at {url} — is it running?"


def test_bulk_writes_are_queryable_inside_and_durable_after(tmp_path: Path) -> None:
    backend = make("edge", tmp_path)
    assert isinstance(backend, EdgeBackend)
    backend.ensure_collection(NAME, DIM)
    with backend.bulk(NAME):
        backend.upsert(NAME, [r.point() for r in ROWS])
        backend.set_payload(NAME, ["m1"], {"t_invalid": 1.0})
        assert backend.count(NAME) == len(ROWS)
    backend.close()
    again = make("edge", tmp_path)
    try:
        assert again.count(NAME) == len(ROWS)
        assert again.retrieve(NAME, [pid(1)])[pid(1)][2]["t_invalid"] == 1.0
    finally:
        again.close()


def _old_shard(path: Path) -> None:
    """A shard as EdgeBackend created them before: with a WAL, dense vectors in RAM."""
    import qdrant_edge as edge

    config = edge.EdgeConfig(
        vectors={"dense": edge.EdgeVectorParams(size=DIM, distance=edge.Distance.Cosine)},
        sparse_vectors={"bm25": edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
    )
    shard = edge.EdgeShard.create(str(path), config)
    shard.close()


def _answers(store: EdgeBackend) -> list[list[tuple[str, float, str]]]:
    # Order-free: points that tie in a leg may come in either order, and the fused scores
    # of a hybrid query follow the legs' ranks, so those are compared as ids only.
    def alike(hits: list[Hit], scored: bool = True) -> list[tuple[str, float, str]]:
        return sorted((h.id, round(h.score, 5) if scored else 0.0, repr(h.payload)) for h in hits)

    return [
        alike(store.query_dense(NAME, E0, VectorFilter(namespace="a"), 10)),
        alike(store.query_sparse(NAME, sparse(t7=1.0), VectorFilter(only_valid=True), 10)),
        alike(
            store.query_hybrid(NAME, E0, sparse(t101=1.0), VectorFilter(valid_at=300), 5, 5),
            scored=False,
        ),
    ]


def test_edge_opens_a_collection_made_before_and_answers_alike(tmp_path: Path) -> None:
    """A collection made with the old config (WAL, vectors in RAM) opens, is written and
    reopened, and answers as one made now (no WAL, vectors memory-mapped) holding the same."""
    _old_shard(tmp_path / "old" / NAME)
    old = EdgeBackend(tmp_path / "old")
    new = EdgeBackend(tmp_path / "new")
    for store in (old, new):
        store.ensure_collection(NAME, DIM)
        store.upsert(NAME, [r.point() for r in ROWS])
        store.set_payload(NAME, ["m1"], {"t_invalid": 1.0})
    made_now = _answers(new)
    assert _answers(old) == made_now
    old.close()
    new.close()
    assert any((tmp_path / "old" / NAME / "wal").iterdir())  # its WAL is kept, still in use
    for root in ("old", "new"):
        again = EdgeBackend(tmp_path / root)
        try:
            assert again.count(NAME) == len(ROWS)  # opened lazily, then with the schema
            assert _answers(again) == made_now
            again.ensure_collection(NAME, DIM)
            again.upsert(NAME, [replace(ROWS[0], n=70, memory="m70").point()])
            assert again.count(NAME) == len(ROWS) + 1
        finally:
            again.close()


def test_edge_collections_made_now_keep_no_wal_and_map_their_vectors(tmp_path: Path) -> None:
    store = EdgeBackend(tmp_path / "qdrant")
    store.ensure_collection(NAME, DIM)
    store.upsert(NAME, [r.point() for r in ROWS])
    store.close()
    shard = tmp_path / "qdrant" / NAME
    config = json.loads((shard / "edge_config.json").read_text())
    assert config["wal_enabled"] is False
    assert config["vectors"]["dense"]["memory"] == "cold"
    (segment,) = (shard / "segments").iterdir()
    kept = json.loads((segment / "segment.json").read_text())["config"]
    assert kept["vector_data"]["dense"]["storage_type"] == "ChunkedMmap"  # not InRam…
