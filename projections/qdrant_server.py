"""The client vector backend: qdrant-client talking to a Qdrant server, or to its local mode.

``ClientBackend(url=…)`` is for an external server or cluster (how a large or shared store
scales out); ``ClientBackend(path=…)`` or ``path=":memory:"`` runs qdrant-client's own local
mode, which speaks the same client API and is what the tests use where no server can run.

Invariants:

- The same schema and the same queries as the Edge backend: named vectors ``dense`` (cosine)
  and ``bm25`` (IDF modifier), the same payload indexes, RRF through
  ``RrfQuery(rrf=Rrf(k=60))`` (a plain ``FusionQuery(fusion=RRF)`` uses Qdrant's default k).
- Writes pass ``wait=True``: they return once the server has applied them.
- A server that does not answer fails at construction, after one attempt bounded by the
  timeout, with :class:`StoreUnreachable`; every other client error becomes a
  :class:`VectorStoreError` here, once.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, assert_never

from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ApiException

from projections.vectors import (
    DENSE,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    RRF_K,
    SPARSE,
    All,
    AnyOf,
    Clause,
    Either,
    Hit,
    Range,
    SparseVector,
    Stored,
    StoreLocked,
    StoreUnreachable,
    Unset,
    VectorFilter,
    VectorPoint,
    VectorStoreError,
    dense_batch,
    filter_clauses,
    hits_of,
    settle_ties,
    stored,
)

CONNECT_TIMEOUT_S = 3
REQUEST_TIMEOUT_S = 60  # a big upsert or a cold query on a busy server may take a while
_MEMORY = ":memory:"
_UPSERT_BATCH = 512  # points per request: keeps one request well under the server's body limit
# Local mode warns, once per process, that payload indexes do nothing there (it scans).
_LOCAL_INDEX_WARNING = "Payload indexes have no effect in the local Qdrant"


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    # ApiException: the server answered with an error, or could not be reached. ValueError:
    # local mode's way of refusing input (bad dimension, bad id, unknown collection).
    try:
        yield
    except (ApiException, ValueError) as exc:
        raise VectorStoreError(f"Qdrant could not {what}: {exc}") from exc


class ClientBackend:
    """Collections in a Qdrant server (``url``) or in qdrant-client's local mode (``path``)."""

    def __init__(
        self,
        *,
        url: str | None = None,
        path: str | os.PathLike[str] | None = None,
        api_key: str | None = None,
    ) -> None:
        if (url is None) == (path is None):
            raise ValueError("give exactly one of url (a Qdrant server) or path (local mode)")
        if url is not None:
            _probe(url, api_key)
            # The client's own version check only warns when it fails; _probe has answered.
            self._client = QdrantClient(
                url=url, api_key=api_key, timeout=REQUEST_TIMEOUT_S, check_compatibility=False
            )
        elif str(path) == _MEMORY:
            self._client = QdrantClient(location=_MEMORY)
        else:
            try:
                self._client = QdrantClient(path=str(path))
            except RuntimeError as exc:  # local mode's folder lock is held
                raise StoreLocked(
                    f"the local Qdrant storage {path} is open in another process"
                ) from exc

    # -- collections -------------------------------------------------------------------

    def ensure_collection(self, name: str, dim: int) -> None:
        with _translated(f"look up collection {name!r}"):
            exists = self._client.collection_exists(name)
        if exists:
            self._check_schema(name, dim)
        else:
            with _translated(f"create collection {name!r}"):
                self._client.create_collection(
                    name,
                    vectors_config={DENSE: qm.VectorParams(size=dim, distance=qm.Distance.COSINE)},
                    sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
                )
        with _translated(f"read the payload indexes of {name!r}"):
            present = set(self._client.get_collection(name).payload_schema)
        wanted = [(f, qm.PayloadSchemaType.KEYWORD) for f in KEYWORD_FIELDS] + [
            (f, qm.PayloadSchemaType.FLOAT) for f in FLOAT_FIELDS
        ]
        for field, kind in wanted:
            if field in present:
                continue
            with (
                _translated(f"index payload field {field!r} of {name!r}"),
                warnings.catch_warnings(),
            ):
                # Still created in local mode, so the tests run the same calls as a server.
                warnings.filterwarnings("ignore", _LOCAL_INDEX_WARNING, UserWarning)
                self._client.create_payload_index(name, field, kind, wait=True)

    def collections(self) -> list[str]:
        with _translated("list collections"):
            return sorted(c.name for c in self._client.get_collections().collections)

    def drop_collection(self, name: str) -> None:
        with _translated(f"drop collection {name!r}"):
            self._client.delete_collection(name)

    # -- writes ------------------------------------------------------------------------

    def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = [_point(p) for p in points[start : start + _UPSERT_BATCH]]
            with _translated(f"upsert {len(batch)} points into {name!r}"):
                self._client.upsert(name, batch, wait=True)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        with _translated(f"delete points from {name!r}"):
            self._client.delete(name, qm.PointIdsList(points=list(ids)), wait=True)

    def delete_by_memory(self, name: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with _translated(f"delete memories from {name!r}"):
            self._client.delete(name, qm.FilterSelector(filter=_of_memories(memory_ids)), wait=True)

    def set_payload(self, name: str, memory_ids: Sequence[str], payload: dict[str, Any]) -> None:
        if not memory_ids or not payload:
            return
        with _translated(f"set the payload of memories in {name!r}"):
            self._client.set_payload(name, payload, points=_of_memories(memory_ids), wait=True)

    # -- reads -------------------------------------------------------------------------

    def count(self, name: str) -> int:
        with _translated(f"count the points of {name!r}"):
            return self._client.count(name, exact=True).count

    def scroll(self, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
        offset: qm.ExtendedPointId | None = None
        while True:
            with _translated(f"scroll {name!r}"):
                records, offset = self._client.scroll(
                    name, limit=256, offset=offset, with_payload=True, with_vectors=False
                )
            for record in records:
                yield str(record.id), dict(record.payload or {})
            if offset is None:
                return

    def retrieve(self, name: str, ids: Sequence[str]) -> dict[str, Stored]:
        if not ids:
            return {}
        with _translated(f"retrieve points from {name!r}"):
            records = self._client.retrieve(name, list(ids), with_payload=True, with_vectors=True)
        return {str(r.id): stored(r.vector, r.payload, _from_sparse) for r in records}

    def query_hybrid(
        self,
        name: str,
        dense: Sequence[float],
        sparse: SparseVector,
        flt: VectorFilter,
        prefetch: int,
        limit: int,
    ) -> list[Hit]:
        where = _filter(flt)
        legs = [
            qm.Prefetch(query=list(dense), using=DENSE, filter=where, limit=prefetch),
            qm.Prefetch(query=_sparse(sparse), using=SPARSE, filter=where, limit=prefetch),
        ]

        def fetch(n: int) -> list[Hit]:
            with _translated(f"run a hybrid query on {name!r}"):
                response = self._client.query_points(
                    name,
                    prefetch=legs,
                    query=qm.RrfQuery(rrf=qm.Rrf(k=RRF_K)),
                    limit=n,
                    with_payload=True,
                )
            return hits_of(response.points)

        return settle_ties(fetch, limit, most=2 * prefetch)

    def query_dense(
        self, name: str, dense: Sequence[float], flt: VectorFilter, limit: int
    ) -> list[Hit]:
        return self._query_leg(name, list(dense), DENSE, flt, limit)

    def query_dense_batch(
        self,
        name: str,
        queries: Sequence[tuple[Sequence[float], VectorFilter]],
        limit: int,
        *,
        at_least: float | None = None,
    ) -> list[list[Hit]]:

        def ask(want: int, threshold: float | None) -> list[list[Hit]]:
            requests = [
                qm.QueryRequest(query=list(dense), using=DENSE, filter=_filter(flt), limit=want,
                                with_payload=True, score_threshold=threshold)
                for dense, flt in queries
            ]  # fmt: skip
            with _translated(f"query {name!r}"):
                answers = self._client.query_batch_points(name, requests=requests)
            return [hits_of(a.points) for a in answers]

        return dense_batch(
            queries, limit, at_least, ask,
            lambda dense, flt: self.query_dense(name, dense, flt, limit),
        )  # fmt: skip

    def query_sparse(
        self, name: str, sparse: SparseVector, flt: VectorFilter, limit: int
    ) -> list[Hit]:
        return self._query_leg(name, _sparse(sparse), SPARSE, flt, limit)

    # -- maintenance -------------------------------------------------------------------

    def close(self) -> None:
        self._client.close()

    # -- internals ---------------------------------------------------------------------

    def _query_leg(
        self,
        name: str,
        query: list[float] | qm.SparseVector,
        using: str,
        flt: VectorFilter,
        limit: int,
    ) -> list[Hit]:
        where = _filter(flt)

        def fetch(n: int) -> list[Hit]:
            with _translated(f"query {name!r}"):
                response = self._client.query_points(
                    name, query=query, using=using, query_filter=where, limit=n, with_payload=True
                )
            return hits_of(response.points)

        return settle_ties(fetch, limit, most=None)

    def _check_schema(self, name: str, dim: int) -> None:
        with _translated(f"read the configuration of {name!r}"):
            params = self._client.get_collection(name).config.params
        dense = params.vectors.get(DENSE) if isinstance(params.vectors, dict) else None
        sparse = (params.sparse_vectors or {}).get(SPARSE)
        if dense is None or sparse is None:
            raise VectorStoreError(
                f"collection {name!r} was not created by ferrex (no {DENSE!r}/{SPARSE!r} vectors)"
            )
        if dense.size != dim or dense.distance != qm.Distance.COSINE:
            raise VectorStoreError(
                f"collection {name!r} holds {dense.size}-dimensional {dense.distance.value}"
                f" vectors, not {dim}-dimensional Cosine: a new embedding model needs a new"
                " collection"
            )
        if sparse.modifier != qm.Modifier.IDF:
            raise VectorStoreError(f"collection {name!r} has no IDF modifier on {SPARSE!r}")


def _probe(url: str, api_key: str | None) -> None:
    """One request, bounded by CONNECT_TIMEOUT_S, so a missing server fails fast."""
    probe = QdrantClient(
        url=url, api_key=api_key, timeout=CONNECT_TIMEOUT_S, check_compatibility=False
    )
    try:
        probe.get_collections()
    except (ApiException, OSError) as exc:
        raise StoreUnreachable(f"cannot connect to Qdrant at {url} — is it running?") from exc
    finally:
        probe.close()


def _point(p: VectorPoint) -> qm.PointStruct:
    return qm.PointStruct(
        id=p.id,
        vector={DENSE: [float(x) for x in p.dense], SPARSE: _sparse(p.sparse)},
        payload=p.payload,
    )


def _sparse(v: SparseVector) -> qm.SparseVector:
    return qm.SparseVector(indices=list(v.indices), values=[float(x) for x in v.values])


def _from_sparse(v: object) -> SparseVector | None:
    if not isinstance(v, qm.SparseVector):
        return None
    return SparseVector(tuple(v.indices), tuple(float(x) for x in v.values))


def _of_memories(memory_ids: Sequence[str]) -> qm.Filter:
    return qm.Filter(must=[_condition(AnyOf("memory_id", tuple(memory_ids)))])


def _filter(flt: VectorFilter) -> qm.Filter | None:
    clauses = filter_clauses(flt)
    return qm.Filter(must=[_condition(c) for c in clauses]) if clauses else None


def _condition(clause: Clause) -> qm.Condition:
    match clause:
        case AnyOf(key, values):
            return qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values)))
        case Range(key, gte, gt, lte, lt):
            return qm.FieldCondition(key=key, range=qm.Range(gte=gte, gt=gt, lte=lte, lt=lt))
        case Unset(key):
            return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=key))
        case Either(options):
            return qm.Filter(should=[_condition(o) for o in options])
        case All(parts):
            return qm.Filter(must=[_condition(o) for o in parts])
        case _:
            assert_never(clause)
