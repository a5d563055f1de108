"""The read side: recall (hybrid retrieval with freshness), and the access log.

Recall reads the projections only: embed the query → one Qdrant query that prefetches
dense and BM25 candidates under the filters (namespace, types, entities through their
aliases, event-time range, validity or as-of, agent visibility) and fuses them with RRF →
optional cross-encoder rerank of the top candidates → type-specific recency boost →
staleness labels, hiding stale (and superseded) memories unless asked → top N, each with
its freshness and, on request, the score of every stage.

A recall hit is an *access*, never a validation: hits are counted in an :class:`AccessLog`
and journaled in batches (``memories.accessed``), so a replay reproduces staleness.
"""

from __future__ import annotations

import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ferrex.embedding import Embedder
from ferrex.entities import Candidate, resolve_entity
from ferrex.errors import UsageError
from ferrex.freshness import (
    DEFAULT_STALENESS,
    StalenessParams,
    boosted,
    freshness,
    recency_boost,
    staleness,
)
from ferrex.insight import freshness_input
from ferrex.memory_input import MEMORY_TYPES, parse_time
from ferrex.rerank import RerankStage
from ferrex.sparse import Bm25Encoder
from journal import Access, Journal, MemoriesAccessed
from projections.documents import memory_text, subject_key
from projections.replay import Projections
from projections.sqlite import Memory
from projections.vectors import Hit, SparseVector, VectorFilter

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100


@dataclass(frozen=True)
class RecallRequest:
    query: str
    types: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    namespace: str | None = None
    limit: int = 5
    include_stale: bool = False
    include_invalidated: bool = False
    as_of: datetime | str | None = None
    after: datetime | str | None = None
    before: datetime | str | None = None
    explain: bool = False
    agent_id: str | None = None
    """Recall as this agent (shared, unowned and its own private memories); None: all."""


@dataclass(frozen=True)
class RecallSettings:
    default_namespace: str = "default"
    default_limit: int = 5
    prefetch: int = 40
    rerank_pool: int = 20
    staleness: StalenessParams = DEFAULT_STALENESS
    namespace_staleness: dict[str, StalenessParams] = field(default_factory=dict)


@dataclass(frozen=True)
class RecallResult:
    query: str
    namespace: str
    results: list[dict[str, Any]]
    hidden: dict[str, int]
    """How many candidates were held back, by reason (stale, superseded)."""
    unknown_entities: list[str]
    reranker: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "namespace": self.namespace,
            "results": self.results,
            "hidden": self.hidden,
            "unknown_entities": self.unknown_entities,
            "reranker": self.reranker,
        }


def _check(req: RecallRequest) -> None:
    if not isinstance(req.query, str) or not req.query.strip():
        raise UsageError("the query is empty", hint="say what to look for, in words")
    if len(req.query) > MAX_QUERY_CHARS:
        raise UsageError(
            f"the query is {len(req.query)} characters; at most {MAX_QUERY_CHARS}",
            hint="ask for one thing at a time",
        )
    if any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in req.query):
        raise UsageError("the query contains control characters")
    if isinstance(req.limit, bool) or not isinstance(req.limit, int):
        raise UsageError("limit must be a whole number")
    if not 1 <= req.limit <= MAX_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_LIMIT}, got {req.limit}")
    unknown = [t for t in req.types if t not in MEMORY_TYPES]
    if unknown:
        raise UsageError(
            f"unknown memory type {', '.join(map(repr, unknown))}",
            hint="types are episodic, semantic and procedural",
        )
    if any(not isinstance(e, str) or not e.strip() for e in req.entities):
        raise UsageError("entity names must be non-empty text")


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
        vector = self.embedder.embed(text)
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

    def flush(self, journal: Journal) -> int | None:
        """Append one ``memories.accessed`` record for everything pending; its position."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return None
        accesses = tuple(
            Access(memory_id, last, count) for memory_id, (count, last) in sorted(pending.items())
        )
        try:
            return journal.append([MemoriesAccessed(accesses=accesses)]).position
        except BaseException:
            with self._lock:  # nothing acknowledged: keep them for the next flush
                for memory_id, (count, last) in pending.items():
                    old_count, old_last = self._pending.get(memory_id, (0, last))
                    self._pending[memory_id] = (old_count + count, max(old_last, last))
            raise


def _now() -> datetime:
    return datetime.now(UTC)


class Reader:
    """Recall over the live projections."""

    def __init__(
        self,
        projections: Projections,
        embedder: Embedder,
        reranker: RerankStage,
        settings: RecallSettings | None = None,
        access: AccessLog | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.projections = projections
        self.queries = QueryCache(embedder)
        self.reranker = reranker
        self.settings = settings or RecallSettings()
        self.access = access if access is not None else AccessLog()
        self.clock = clock
        self.bm25 = Bm25Encoder()

    def recall(self, req: RecallRequest) -> RecallResult:
        _check(req)
        as_of = parse_time(req.as_of, "as_of")
        after = parse_time(req.after, "after")
        before = parse_time(req.before, "before")
        now = self.clock()
        namespace = req.namespace or self.settings.default_namespace
        self.projections.catch_up()
        rm = self.projections.read_model
        entity_ids, unknown = self._entity_ids(namespace, req.entities)
        if req.entities and not entity_ids:
            return RecallResult(req.query, namespace, [], {}, unknown, self.reranker.status)
        flt = VectorFilter(
            namespace=namespace,
            types=tuple(dict.fromkeys(req.types)),
            entity_ids=entity_ids,
            t_valid_from=after.timestamp() if after else None,
            t_valid_to=before.timestamp() if before else None,
            valid_at=as_of.timestamp() if as_of else None,
            only_valid=not (req.include_invalidated or as_of is not None),
            agent_id=req.agent_id,
        )
        dense = [float(x) for x in self.queries.vector(req.query)]
        sparse_query = self.bm25.encode_query(req.query)
        sparse = SparseVector(sparse_query.indices, sparse_query.values)
        prefetch = max(self.settings.prefetch, 30, req.limit * 4)
        pool = max(self.settings.rerank_pool, req.limit * 3)
        name = self.projections.live.memories
        hits = self.projections.backend.query_hybrid(name, dense, sparse, flt, prefetch, pool)
        best = _best_part(hits)
        memories = {m.memory_id: m for m in rm.memories(memory_ids=list(best))}
        ordered = [(best[mid], memories[mid]) for mid in best if mid in memories]

        texts = [memory_text(m.type, m.body()) for _, m in ordered]
        rerank_scores: dict[str, float | None] = {}
        if self.reranker.state == "ready":
            order = self.reranker.rerank_top(req.query, texts, self.settings.rerank_pool)
            ordered = [ordered[i] for i, _ in order]
            rerank_scores = {ordered[k][1].memory_id: s for k, (_, s) in enumerate(order)}

        params = self.settings.namespace_staleness.get(namespace, self.settings.staleness)
        hidden: dict[str, int] = {}
        scored: list[tuple[float, Memory, dict[str, Any]]] = []
        for hit, memory in ordered:
            base = rerank_scores.get(memory.memory_id)
            base = hit.score if base is None else base
            age = now.timestamp() - memory.t_valid
            boost = recency_boost(memory.type, age)
            state = staleness(freshness_input(memory), now.timestamp(), params)
            label = state.label
            if label == "superseded" and not (req.include_invalidated or as_of is not None):
                hidden["superseded"] = hidden.get("superseded", 0) + 1
                continue
            if label == "stale" and not req.include_stale:
                hidden["stale"] = hidden.get("stale", 0) + 1
                continue
            stages = {
                "rrf": round(hit.score, 6),
                "rerank": rerank_scores.get(memory.memory_id),
                "boost": round(boost, 4),
                "staleness": {k: round(v, 4) for k, v in state.components.items()},
            }
            scored.append((boosted(base, boost), memory, stages))
        scored.sort(key=lambda item: (-item[0], item[1].memory_id))
        top = scored[: req.limit]
        if req.explain and top:
            dense_ranks, sparse_ranks = self._leg_ranks(name, dense, sparse, flt, prefetch)
            for _, memory, stages in top:
                stages["dense_rank"] = dense_ranks.get(memory.memory_id)
                stages["sparse_rank"] = sparse_ranks.get(memory.memory_id)
        results = [
            self._result(memory, score, stages, now, params, req.explain)
            for score, memory, stages in top
        ]
        self.access.record([m.memory_id for _, m, _ in top], now)
        return RecallResult(req.query, namespace, results, hidden, unknown, self.reranker.status)

    def _leg_ranks(
        self, name: str, dense: list[float], sparse: SparseVector, flt: VectorFilter, n: int
    ) -> tuple[dict[str, int], dict[str, int]]:
        """For explain: each memory's rank in the dense leg and in the sparse leg alone."""
        backend = self.projections.backend
        return (
            _ranks(backend.query_dense(name, dense, flt, n)),
            _ranks(backend.query_sparse(name, sparse, flt, n)),
        )

    def _result(
        self,
        memory: Memory,
        score: float,
        stages: dict[str, Any],
        now: datetime,
        params: StalenessParams,
        explain: bool,
    ) -> dict[str, Any]:
        rm = self.projections.read_model
        names = {
            str(e): str(n)
            for e, n in rm.db.execute(
                f"SELECT entity_id, name FROM entities WHERE entity_id IN "
                f"({','.join('?' * len(memory.entity_ids))})",
                memory.entity_ids,
            )
        } if memory.entity_ids else {}  # fmt: skip
        result: dict[str, Any] = {
            "id": memory.memory_id,
            "type": memory.type,
            "score": round(score, 6),
            "entities": [names.get(e, e) for e in memory.entity_ids],
            "event_time": _iso(memory.t_valid),
            "freshness": freshness(freshness_input(memory), now.timestamp(), params),
        }
        if memory.type == "semantic":
            result.update(subject=memory.subject, predicate=memory.predicate, object=memory.object)
            if memory.content:
                result["content"] = memory.content
            result["contradiction"] = self._contradicted(memory)
        elif memory.type == "procedural":
            result.update(
                name=memory.procedure_name,
                version=memory.procedure_version,
                conditions=list(memory.conditions),
                steps=list(memory.steps),
            )
        else:
            result["content"] = memory.content
        if memory.t_invalid is not None:
            result["invalidated_at"] = _iso(memory.t_invalid)
            result["superseded_by"] = memory.superseded_by
        if explain:
            result["explain"] = stages
        return result

    def _contradicted(self, memory: Memory) -> bool:
        """Another active fact for the same subject and predicate (multi-valued or not)."""
        if memory.t_invalid is not None or not memory.predicate_normalized or not memory.subject:
            return False
        other = self.projections.read_model.db.execute(
            "SELECT count(*) FROM memories WHERE namespace=? AND subject_key=? "
            "AND predicate_normalized=? AND t_invalid IS NULL AND memory_id<>?",
            (
                memory.namespace,
                subject_key(memory.subject),
                memory.predicate_normalized,
                memory.memory_id,
            ),
        ).get
        return bool(other)

    def _entity_ids(
        self, namespace: str, names: Sequence[str]
    ) -> tuple[tuple[str, ...], list[str]]:
        """Entity ids for the names, through aliases ("tokio" finds "Tokio runtime")."""
        if not names:
            return (), []
        candidates = [
            Candidate(str(e), str(a), str(n))
            for e, a, n in self.projections.read_model.db.execute(
                "SELECT entity_id, alias, normalized FROM aliases WHERE namespace=?",
                (namespace,),
            )
        ]
        found: list[str] = []
        unknown: list[str] = []
        for name in names:
            resolution = resolve_entity(name, candidates)
            if resolution.entity_id is None:
                unknown.append(name)
            elif resolution.entity_id not in found:
                found.append(resolution.entity_id)
        return tuple(found), unknown


def _best_part(hits: Sequence[Hit]) -> dict[str, Hit]:
    """One hit per memory (a long procedure has several parts): its best, in hit order."""
    best: dict[str, Hit] = {}
    for hit in hits:
        memory_id = str(hit.payload.get("memory_id"))
        if memory_id not in best:
            best[memory_id] = hit
    return best


def _ranks(hits: Sequence[Hit]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for hit in hits:
        memory_id = str(hit.payload.get("memory_id"))
        ranks.setdefault(memory_id, len(ranks) + 1)
    return ranks


def _iso(value: float | None) -> str | None:
    if value is None:
        return None
    return datetime.fromtimestamp(value, UTC).isoformat().replace("+00:00", "Z")
