"""The vector store's contract: points, filters, hits, errors and the ``VectorBackend`` protocol.

Two real backends implement it (DESIGN.md section 6): Qdrant Edge in-process
(``projections.qdrant_edge``) and qdrant-client against a server or its local mode
(``projections.qdrant_server``). What only the embedded engine does (writes made durable when
told, collections released, indexes built when told) is apart, :class:`EmbeddedVectors`.
This module is plain data and pure functions, so importing it loads no Qdrant code.

Invariants every backend keeps:

- One collection schema: a named dense vector ``dense`` (cosine) and a named sparse vector
  ``bm25`` with the IDF modifier; keyword payload indexes on :data:`KEYWORD_FIELDS` and float
  indexes on :data:`FLOAT_FIELDS` (the float index on ``t_invalid`` also serves its null check).
- A :class:`VectorFilter` means the same on every backend: :func:`filter_clauses` states it
  once, each backend only spells the clauses in its own types.
- Hybrid queries fuse a dense and a sparse leg, both filtered, by RRF with k = 60 inside
  Qdrant. Results are ordered by ``(-score, id)``: equal scores never come back in an
  arbitrary order (see :func:`settle_ties`).
- Writes return once the backend has acknowledged them.

Errors::

    VectorStoreError        any failure of the vector store, with a message a person can act on
    ├── StoreLocked         another process holds the store (Qdrant Edge: one process per shard)
    └── StoreUnreachable    the Qdrant server cannot be reached
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final, Protocol, assert_never, runtime_checkable

DENSE = "dense"
"""Name of the dense vector in every collection."""
SPARSE = "bm25"
"""Name of the sparse vector in every collection."""
RRF_K = 60
"""The RRF constant: score = sum over legs of 1 / (k + rank), rank counted from 0."""
KEYWORD_FIELDS = ("namespace", "type", "entity_ids", "memory_id", "agent_id", "visibility", "start")
FLOAT_FIELDS = ("t_valid", "t_invalid")
TIE_SLACK = 8
"""How many hits beyond ``limit`` a query asks for first, to see whether a tie crosses the cut."""
THRESHOLD_MARGIN = 0.001
"""How far below the score a caller wants (``at_least``) a batch of dense queries asks the
engine to cut. Qdrant keeps the hits that score strictly above its threshold, in float32,
after the rescoring of an indexed segment's candidates with the float vectors: a threshold
of ``at_least`` itself lost the hits that score exactly that (the floors of
``tests/integration/test_vector_backends.py`` are hits' own scores). A thousandth below keeps
them, with room to spare for a float32 score's rounding (about 6e-8 near 1); the exact cut
is made on the returned scores."""


class VectorStoreError(Exception):
    """The vector store failed; the message says what and, where it can, what to do."""


class StoreLocked(VectorStoreError):
    """Another process has the store open."""


class StoreUnreachable(VectorStoreError):
    """The Qdrant server did not answer."""


@dataclass(frozen=True, slots=True)
class SparseVector:
    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class VectorPoint:
    id: str
    """A UUID string; deterministic, so writing the same point twice overwrites it."""
    dense: Sequence[float]
    sparse: SparseVector
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    score: float
    payload: dict[str, Any]


Stored = tuple[list[float], SparseVector, dict[str, Any]]
"""A point as :meth:`VectorBackend.retrieve` gives it: dense vector, sparse vector, payload."""


class Scored(Protocol):
    """A scored point as either engine answers a query."""

    @property
    def id(self) -> object: ...

    @property
    def score(self) -> float: ...

    @property
    def payload(self) -> Mapping[str, Any] | None: ...


def hits_of(points: Iterable[Scored]) -> list[Hit]:
    """An engine's scored points as hits, in the engine's order."""
    return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]


def stored(
    vector: object,
    payload: Mapping[str, Any] | None,
    sparse_of: Callable[[object], SparseVector | None],
) -> Stored:
    """A retrieved point as :data:`Stored`, from its named vectors as the engine gives them
    (``vector``: a dict by name, else none) and its payload; ``sparse_of`` reads the engine's
    sparse vector (None: not one). A vector missing comes back empty."""
    named: dict[str, object] = dict(vector) if isinstance(vector, dict) else {}
    dense, sparse = named.get(DENSE), sparse_of(named.get(SPARSE))
    return (
        [float(x) for x in dense] if isinstance(dense, list) else [],
        sparse if sparse is not None else SparseVector((), ()),
        dict(payload or {}),
    )


@dataclass(frozen=True, slots=True)
class VectorFilter:
    """Which points a query may return. The defaults restrict nothing.

    Times are epoch seconds. An empty tuple means "no restriction", not "match nothing".
    """

    namespace: str | None = None
    types: tuple[str, ...] = ()
    """Any of these ``type`` values."""
    entity_ids: tuple[str, ...] = ()
    """Points linked to any of these entities."""
    t_valid_from: float | None = None
    """Inclusive lower bound on ``t_valid``."""
    t_valid_to: float | None = None
    """Exclusive upper bound on ``t_valid``."""
    valid_at: float | None = None
    """As-of time x: ``t_valid <= x`` (or a start unknown and ``t_invalid > x``), and
    ``t_invalid`` unset or ``> x``."""
    only_valid: bool = False
    """Only points whose ``t_invalid`` is unset (null or absent)."""
    agent_id: str | None = None
    """When set, what this agent may see: shared points, points of no agent, and its own.
    When None, every point (the operator's view)."""
    memory_ids: tuple[str, ...] = ()


# The clauses a filter is made of. Every clause of a list must hold.


@dataclass(frozen=True, slots=True)
class AnyOf:
    """The keyword field ``key`` holds one of ``values`` (for a list field: any element does)."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Range:
    key: str
    gte: float | None = None
    gt: float | None = None
    lte: float | None = None
    lt: float | None = None


@dataclass(frozen=True, slots=True)
class Unset:
    """The field is null, absent or an empty list (Qdrant's ``is_empty``)."""

    key: str


@dataclass(frozen=True, slots=True)
class Either:
    """At least one of the options holds."""

    options: tuple[Clause, ...]


@dataclass(frozen=True, slots=True)
class All:
    """Every one of the parts holds (inside an :class:`Either`)."""

    parts: tuple[Clause, ...]


Clause = AnyOf | Range | Unset | Either | All

START_UNKNOWN: Final = "unknown"
"""The payload's ``start`` of a fact stored without ``valid_from``: its ``t_valid`` is when it
was learned, its start unknown, at or before then (``journal.events``)."""


CURRENT: Final = Unset("t_invalid")
"""The rule *current*: not superseded nor invalidated (``t_invalid`` unset)."""


def visible(agent_id: str) -> Clause:
    """The rule *visible* (``ferrex.rules.visibility.sees``) for an agent that is not the
    operator (who sees everything, and needs no clause): shared, of no agent, or its own.
    ``projections.readmodel.predicates`` renders the same spec to SQL."""
    return Either(
        (AnyOf("visibility", ("shared",)), Unset("agent_id"), AnyOf("agent_id", (agent_id,)))
    )


def filter_clauses(flt: VectorFilter) -> list[Clause]:
    """The conditions, all of which a point must meet to pass ``flt``.

    "Unset" rather than "null" for ``t_invalid`` and ``agent_id``: a point that lacks the key
    altogether is then still valid and still visible, instead of silently disappearing.
    """
    clauses: list[Clause] = []
    if flt.namespace is not None:
        clauses.append(AnyOf("namespace", (flt.namespace,)))
    if flt.types:
        clauses.append(AnyOf("type", flt.types))
    if flt.entity_ids:
        clauses.append(AnyOf("entity_ids", flt.entity_ids))
    if flt.memory_ids:
        clauses.append(AnyOf("memory_id", flt.memory_ids))
    if flt.t_valid_from is not None or flt.t_valid_to is not None:
        clauses.append(Range("t_valid", gte=flt.t_valid_from, lt=flt.t_valid_to))
    if flt.valid_at is not None:
        # Begun by then; or a fact of an unknown start that ended after then: it held up to
        # its end (a change dated this morning ends a fact learned only this afternoon).
        ended_later = Range("t_invalid", gt=flt.valid_at)
        clauses.append(Either((Range("t_valid", lte=flt.valid_at),
                               All((AnyOf("start", (START_UNKNOWN,)), ended_later)))))  # fmt: skip
        clauses.append(Either((Unset("t_invalid"), ended_later)))
    if flt.only_valid:
        clauses.append(CURRENT)
    if flt.agent_id is not None:
        clauses.append(visible(flt.agent_id))
    return clauses


def passes(clauses: Sequence[Clause], payload: Mapping[str, Any]) -> bool:
    """Whether a point with ``payload`` meets every clause (``filter_clauses(flt)``), read
    the way both backends read them: for callers that hold the payload already (recall
    checks a memory's neighbours against its filter from their read-model rows)."""
    return all(_holds(clause, payload) for clause in clauses)


def _holds(clause: Clause, payload: Mapping[str, Any]) -> bool:
    match clause:
        case AnyOf(key, values):
            value = payload.get(key)
            held = value if isinstance(value, list | tuple) else [value]
            return any(v in values for v in held)
        case Range(key, gte, gt, lte, lt):
            x = payload.get(key)
            if not isinstance(x, int | float):
                return False
            return ((gte is None or x >= gte) and (gt is None or x > gt)
                    and (lte is None or x <= lte) and (lt is None or x < lt))  # fmt: skip
        case Unset(key):
            value = payload.get(key)
            return value is None or (isinstance(value, list | tuple) and not value)
        case Either(options):
            return any(_holds(option, payload) for option in options)
        case All(parts):
            return all(_holds(part, payload) for part in parts)
    assert_never(clause)


def settle_ties(fetch: Callable[[int], list[Hit]], limit: int, most: int | None) -> list[Hit]:
    """The first ``limit`` hits in ``(-score, id)`` order, whatever order the engine used.

    ``fetch(n)`` runs the query for its best ``n`` hits. Qdrant orders equal scores
    arbitrarily, so which of several tied points survives the cut would be arbitrary too.
    Ask for a few more than needed; while the last hit fetched still ties with the one at
    the cut, ask for twice as many. ``most`` is how many hits the query can ever return
    (a fused query: both prefetch limits together), if bounded.
    """
    if limit <= 0:
        return []
    want = limit + TIE_SLACK
    while True:
        if most is not None:
            want = min(want, most)
        hits = settled(fetch(want), limit, want, complete=most is not None and want >= most)
        if hits is not None:
            return hits
        want *= 2


def settled(
    hits: Sequence[Hit], limit: int, want: int, *, complete: bool = False
) -> list[Hit] | None:
    """The first ``limit`` of ``hits`` (a query's best ``want``) in ``(-score, id)`` order,
    or None when a tie crosses the cut and more hits are needed to settle it (``complete``:
    the query can return no more than these)."""
    ordered = sorted(hits, key=lambda h: (-h.score, h.id))
    # Not complete means len(ordered) == want > limit, so the cut is inside the list.
    if complete or len(ordered) < want or ordered[limit - 1].score > ordered[-1].score:
        return ordered[:limit]
    return None


def settle_batch(
    queries: Sequence[tuple[Sequence[float], VectorFilter]],
    answers: Sequence[Sequence[Hit]],
    limit: int,
    alone: Callable[[Sequence[float], VectorFilter], list[Hit]],
    at_least: float | None = None,
) -> list[list[Hit]]:
    """A batch of dense queries' answers (each the best ``limit + TIE_SLACK``) cut to
    ``limit`` each as :func:`settle_ties` cuts one; a query whose tie crosses the cut is
    asked again on its own, ``alone(dense, filter)``, which settles it. With ``at_least``,
    the hits that score less are then left out (a score that is not a number stays, for the
    caller's check of its measures to refuse)."""
    found = []
    for (dense, flt), hits in zip(queries, answers, strict=True):
        cut = settled(hits, limit, limit + TIE_SLACK)
        cut = cut if cut is not None else alone(dense, flt)
        found.append(cut if at_least is None else [h for h in cut if not h.score < at_least])
    return found


def dense_batch(
    queries: Sequence[tuple[Sequence[float], VectorFilter]],
    limit: int,
    at_least: float | None,
    ask: Callable[[int, float | None], Sequence[Sequence[Hit]]],
    alone: Callable[[Sequence[float], VectorFilter], list[Hit]],
) -> list[list[Hit]]:
    """:meth:`VectorBackend.query_dense_batch` over an engine that answers the whole batch
    in one call, ``ask(want, threshold)`` (each query's best ``want``, those above the
    engine's ``threshold``), settled by :func:`settle_batch` (``alone``: one query alone)."""
    if not queries or limit <= 0:
        return [[] for _ in queries]
    answers = ask(limit + TIE_SLACK, engine_threshold(at_least))
    return settle_batch(queries, answers, limit, alone, at_least)


def engine_threshold(at_least: float | None) -> float | None:
    """The score threshold a batch of dense queries (:meth:`VectorBackend.query_dense_batch`)
    asks the engine for when its caller wants hits of ``at_least``: lower by
    :data:`THRESHOLD_MARGIN`, since the engine keeps only what scores above its threshold
    (the exact cut is made on the returned scores, :func:`settle_batch`)."""
    return None if at_least is None else at_least - THRESHOLD_MARGIN


class VectorBackend(Protocol):
    """A Qdrant deployment holding ferrex's collections."""

    def ensure_collection(self, name: str, dim: int) -> None:
        """Create the collection with ferrex's schema, or check that the existing one has it.

        Idempotent. An existing collection with another dimension raises
        :class:`VectorStoreError` (a new model means a new collection, never mixed vectors).
        """
        ...

    def collections(self) -> list[str]:
        """Names of the existing collections, sorted."""
        ...

    def drop_collection(self, name: str) -> None:
        """Delete a collection and its data; nothing happens if there is none."""
        ...

    def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        """Insert or overwrite points; acknowledged when this returns."""
        ...

    def delete(self, name: str, ids: Sequence[str]) -> None:
        """Delete points by id; ids that are not there are ignored."""
        ...

    def delete_by_memory(self, name: str, memory_ids: Sequence[str]) -> None:
        """Delete every point (every step) of these memories."""
        ...

    def set_payload(self, name: str, memory_ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge ``payload``'s keys into every point of these memories."""
        ...

    def count(self, name: str) -> int:
        """The exact number of points."""
        ...

    def scroll(self, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every point's id and payload, in id order."""
        ...

    def retrieve(self, name: str, ids: Sequence[str]) -> dict[str, Stored]:
        """Dense vector, sparse vector and payload of the points found among ``ids``.

        Dense vectors come back as stored: cosine collections keep them normalized.
        """
        ...

    def query_hybrid(
        self,
        name: str,
        dense: Sequence[float],
        sparse: SparseVector,
        flt: VectorFilter,
        prefetch: int,
        limit: int,
    ) -> list[Hit]:
        """One query: ``prefetch`` dense and ``prefetch`` sparse candidates, both filtered,
        fused by RRF (k = 60); the best ``limit`` in ``(-score, id)`` order."""
        ...

    def query_dense(
        self, name: str, dense: Sequence[float], flt: VectorFilter, limit: int
    ) -> list[Hit]:
        """The dense leg alone (cosine similarity), in ``(-score, id)`` order."""
        ...

    def query_dense_batch(
        self,
        name: str,
        queries: Sequence[tuple[Sequence[float], VectorFilter]],
        limit: int,
        *,
        at_least: float | None = None,
    ) -> list[list[Hit]]:
        """:meth:`query_dense` of each ``(dense, filter)`` query, in one call to the engine
        where it can: one list of hits per query, in the order of ``queries``, each the same
        as that query alone would give; with ``at_least``, only the hits of those that score
        at least that much (the engine is asked to leave out what scores below it, so a
        query with no near point costs no hits to convert)."""
        ...

    def query_sparse(
        self, name: str, sparse: SparseVector, flt: VectorFilter, limit: int
    ) -> list[Hit]:
        """The sparse leg alone (BM25 weights times IDF), in ``(-score, id)`` order."""
        ...

    def close(self) -> None:
        """Release the store; the backend is unusable afterwards."""
        ...


@runtime_checkable
class EmbeddedVectors(VectorBackend, Protocol):
    """What only an engine in this process (Qdrant Edge) does, beside :class:`VectorBackend`:
    writes made durable when told (:meth:`bulk`, :meth:`sync`), collections held open
    (:meth:`release`), and indexes built when told, on copies if need be (:meth:`optimize`,
    :meth:`unindexed`, :meth:`copy_collection`). A server acknowledges every write, holds
    its collections and indexes by itself, so it has none of these; callers ask
    ``isinstance(backend, EmbeddedVectors)``."""

    def optimize(self, name: str) -> bool:
        """Build indexes now; True if anything was rebuilt. May block for a long time."""
        ...

    def unindexed(self, name: str) -> int:
        """How many dense vectors of ``name`` a search compares one by one that
        :meth:`optimize` would index now; 0 when it would index none (too few for the
        backend's threshold)."""
        ...

    def copy_collection(self, name: str, to: str) -> None:
        """Copy collection ``name`` (its writes made durable first) as a new collection
        ``to``; the caller keeps writes to ``name`` out meanwhile."""
        ...

    def bulk(self, name: str, *, flush: bool = True) -> AbstractContextManager[None]:
        """Writes to ``name`` inside need not be durable one by one: the backend makes them
        durable together when the block ends, or with ``flush=False`` at the next
        :meth:`sync` (or flushing block end). Outside a bulk block every write is durable on
        return."""
        ...

    def sync(self, name: str) -> None:
        """Make every write to ``name`` so far durable."""
        ...

    def release(self, name: str) -> None:
        """Let go of what this process holds open for ``name``, its writes made durable
        first; the next use opens it again, as a new process would. A rebuild calls it on
        the collections it built (an embedded store serves a collection it has just
        filled slower than one it opens from its files)."""
        ...
