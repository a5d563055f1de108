"""The embedded vector backend: Qdrant Edge (``qdrant-edge-py``) running in this process.

One Edge shard per collection, in ``<root>/<collection>/``; its lock file is
``<root>/<collection>.lock``.

Invariants:

- One process at a time opens a shard. We hold an exclusive ``flock`` on the lock file for
  as long as the shard is open, so a second process (or a second backend in this one) gets
  :class:`StoreLocked` with a clear message, instead of Edge's own WAL-lock error text.
- A write returns only after ``flush()`` (outside a ``bulk`` block): Edge writes through
  memory maps without fsync, which survives the process being killed but not the machine
  losing power, and the projection's checkpoint advances as soon as a write returns.
- A collection created here has no WAL and keeps its dense vectors in plain memory-mapped
  chunks (``EdgeBackend._config(new=True)``): the journal is the durable record and the
  projection's checkpoint moves only after a flush, so what a crash loses since the last
  flush is applied again from the journal (vector writes are idempotent); a WAL would only
  repeat it, and at 10k memories its segment, read through at every open, stayed ~23 MB
  resident, with ~15 MB of buffers. Plain mmap chunks, unlike the populated in-RAM ones,
  hold in memory only the pages a query reads (at 10k, 15 MB of vectors in a 32 MB chunk,
  not the chunk twice). Collections made before keep their WAL (Edge fixes it when a shard
  is created) and their segments' placement until ``optimize`` rebuilds them.
- Every error raised by Edge (which raises bare ``Exception``) becomes a
  :class:`VectorStoreError` here, once.
- ``optimize()`` builds HNSW and payload-index structures; Edge never does it by itself, and
  it blocks and holds the GIL, so the caller chooses when.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, assert_never

import qdrant_edge as edge

from journal.files import make_private_dir, open_private
from projections.file_holes import copy_keeping_holes
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

_CONFIG_FILE = "edge_config.json"  # written by Edge in every shard directory it creates
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")  # no dot: "x.lock" is the lock of "x"
_DEFAULT_INDEXING_KB = 10_000  # Qdrant's indexing_threshold when a shard's config has none
_UPSERT_BATCH = 512  # points per WAL record: bounds one record's size for big imports

# The dense vectors as the optimizer indexes them. Float vectors in memory-mapped files (the
# page cache holds what searches touch; a laptop can drop the rest), an int8 copy of each
# (4x smaller) in RAM, and the HNSW graph built over the int8 copies: at 100k memories
# `ferrex optimize` took 46 s of CPU and 272 MB of anonymous memory at its peak this way,
# against 100 s and ~1 GB resident with float vectors in RAM, and the memory grows with the
# points (8.5 GB at 1M, unfinished after 20 minutes). A dense search oversamples the int8
# candidates twice and rescores them with the float vectors, and walks the graph with
# `hnsw_ef` 256 (Qdrant's default is ef_construct, 100): recall@10 against exact search 0.988
# at 100k with the default ef (0.981 before, the float HNSW without rescoring); at 1M 0.907
# with the default ef, 0.958 with 256, for ~2 ms of CPU a search (NOISY). Small homes, never
# indexed, are searched in full as before. An old shard, opened lazily, keeps the config it
# was made with until `optimize`, which gives it this one first (Edge keeps the stored
# vectors and rebuilds its segments to the new config).
_DENSE_QUANTIZATION = edge.ScalarQuantizationConfig(edge.ScalarType.Int8, always_ram=True)
_DENSE_SEARCH = edge.SearchParams(
    hnsw_ef=256, quantization=edge.QuantizationSearchParams(rescore=True, oversampling=2.0)
)


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    try:
        yield
    except Exception as exc:  # Edge raises plain Exception for everything
        raise VectorStoreError(f"Qdrant Edge could not {what}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class _OpenShard:
    """A loaded shard and the lock that gives this process the right to hold it."""

    shard: edge.EdgeShard
    lock_fd: int
    dim: int | None  # the dimension Edge checked on opening; None when opened lazily


class EdgeBackend:
    """Collections as Qdrant Edge shards under ``root``; opened on first use."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        indexing_threshold_kb: int | None = None,
        before_open: Callable[[Path], None] | None = None,
    ):
        """``indexing_threshold_kb``: segments larger than this get an HNSW index on
        ``optimize()`` (Qdrant's default, 10,000 KB, is about 6,500 vectors of 384 floats).
        It is stored in a shard by ``ensure_collection``. ``before_open``: called with an
        existing shard's directory before this process opens it, and may refuse by raising
        (opening maps the shard's files for writing and may write into them)."""
        self.root = Path(root)
        self._before_open = before_open
        self._indexing_threshold_kb = indexing_threshold_kb
        self._open: dict[str, _OpenShard] = {}
        self._guard = threading.Lock()  # opening and closing shards, not their operations
        self._closed = False
        self._deferred: set[str] = set()
        self._dirty: set[str] = set()
        self._in_graphs: dict[str, int] = {}  # dense vectors in HNSW graphs (unindexed)

    @property
    def indexing_threshold_kb(self) -> int | None:
        """The indexing threshold this backend gives the shards it opens (None: Qdrant's)."""
        return self._indexing_threshold_kb

    # -- collections -------------------------------------------------------------------

    def ensure_collection(self, name: str, dim: int) -> None:
        with self._guard:
            held = self._open.get(name)
            if held is not None and held.dim is None:
                # Opened lazily without a schema to check: reopen so that Edge checks it.
                self._release(name, self._open.pop(name))
                held = None
            if held is None:
                held = self._open[name] = self._load(name, create_dim=dim)
            elif held.dim != dim:
                raise VectorStoreError(
                    f"collection {name!r} holds {held.dim}-dimensional vectors, not {dim}"
                )
        shard = held.shard
        with _translated(f"read the payload indexes of {name!r}"):
            present = set(shard.info().payload_schema)
        wanted = [(f, edge.PayloadSchemaType.Keyword) for f in KEYWORD_FIELDS] + [
            (f, edge.PayloadSchemaType.Float) for f in FLOAT_FIELDS
        ]
        missing = [(f, kind) for f, kind in wanted if f not in present]
        for field, kind in missing:
            with _translated(f"index payload field {field!r} of {name!r}"):
                shard.update(edge.UpdateOperation.create_field_index(field, kind))
        if missing:
            self._flush(name, shard)

    def collections(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / _CONFIG_FILE).is_file())

    def drop_collection(self, name: str) -> None:
        self._in_graphs.pop(name, None)
        with self._guard:
            held = self._open.pop(name, None)
            if held is None and not (self._path(name) / _CONFIG_FILE).is_file():
                return
            lock_fd = self._lock(name) if held is None else held.lock_fd
            try:
                if held is not None:
                    with _translated(f"close {name!r}"):
                        held.shard.close()
                shutil.rmtree(self._path(name))
                # Unlinked while still locked: a process that opened the old file fails to
                # lock it, one that comes later creates a fresh file and finds no shard.
                self._lock_path(name).unlink(missing_ok=True)
            finally:
                os.close(lock_fd)

    # -- writes ------------------------------------------------------------------------

    def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        shard = self._shard(name)
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = [_point(p) for p in points[start : start + _UPSERT_BATCH]]
            with _translated(f"upsert {len(batch)} points into {name!r}"):
                shard.update(edge.UpdateOperation.upsert_points(batch))
        self._flush(name, shard)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        if ids:
            self._update(name, "delete points from", edge.UpdateOperation.delete_points(list(ids)))

    def delete_by_memory(self, name: str, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            operation = edge.UpdateOperation.delete_points_by_filter(_of_memories(memory_ids))
            self._update(name, "delete memories from", operation)

    def set_payload(self, name: str, memory_ids: Sequence[str], payload: dict[str, Any]) -> None:
        if memory_ids and payload:
            flt = _of_memories(memory_ids)
            operation = edge.UpdateOperation.set_payload_by_filter(flt, payload)
            self._update(name, "set the payload of memories in", operation)

    def _update(self, name: str, what: str, operation: edge.UpdateOperation) -> None:
        shard = self._shard(name)
        with _translated(f"{what} {name!r}"):
            shard.update(operation)
        self._flush(name, shard)

    # -- reads -------------------------------------------------------------------------

    def count(self, name: str) -> int:
        shard = self._shard(name)
        with _translated(f"count the points of {name!r}"):
            return shard.count(edge.CountRequest(exact=True))

    def scroll(self, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
        shard = self._shard(name)
        offset: edge.PointId | None = None
        while True:
            with _translated(f"scroll {name!r}"):
                records, offset = shard.scroll(
                    edge.ScrollRequest(
                        offset=offset, limit=256, with_payload=True, with_vector=False
                    )
                )
            for record in records:
                yield str(record.id), dict(record.payload or {})
            if offset is None:
                return

    def retrieve(self, name: str, ids: Sequence[str]) -> dict[str, Stored]:
        if not ids:
            return {}
        shard = self._shard(name)
        with _translated(f"retrieve points from {name!r}"):
            records = shard.retrieve(list(ids), with_payload=True, with_vector=True)
        return {str(r.id): stored(r.vector, r.payload, _from_edge_sparse) for r in records}

    def query_hybrid(
        self,
        name: str,
        dense: Sequence[float],
        sparse: SparseVector,
        flt: VectorFilter,
        prefetch: int,
        limit: int,
    ) -> list[Hit]:
        shard = self._shard(name)
        where = _filter(flt)
        legs = [
            edge.Prefetch(
                limit=prefetch,
                query=edge.Query.Nearest(list(dense), using=DENSE),
                filter=where,
                params=_DENSE_SEARCH,
            ),
            edge.Prefetch(
                limit=prefetch,
                query=edge.Query.Nearest(_to_edge_sparse(sparse), using=SPARSE),
                filter=where,
            ),
        ]

        def fetch(n: int) -> list[Hit]:
            # The stub lists Fusion, not its nested Rrf class, among the query types.
            rrf: Any = edge.Fusion.Rrf(k=RRF_K)
            request = edge.QueryRequest(limit=n, prefetches=legs, query=rrf, with_payload=True)
            with _translated(f"run a hybrid query on {name!r}"):
                return hits_of(shard.query(request))

        return settle_ties(fetch, limit, most=2 * prefetch)

    def query_dense(
        self, name: str, dense: Sequence[float], flt: VectorFilter, limit: int
    ) -> list[Hit]:
        query = edge.Query.Nearest(list(dense), using=DENSE)
        return self._query_leg(name, query, flt, limit, params=_DENSE_SEARCH)

    def nearest_ids(
        self, name: str, dense: Sequence[float], limit: int, *, exact: bool
    ) -> list[str]:
        """The ids of the ``limit`` points nearest ``dense``, unfiltered: as a dense leg
        searches (``exact=False``) or by comparing every float vector (``exact=True``), so
        a benchmark can say how near the index and its int8 copies come."""
        params = edge.SearchParams(exact=True) if exact else _DENSE_SEARCH
        query = edge.Query.Nearest(list(dense), using=DENSE)
        request = edge.QueryRequest(limit=limit, query=query, params=params, with_payload=False)
        with _translated(f"query {name!r}"):
            return [str(p.id) for p in self._shard(name).query(request)]

    def query_dense_batch(
        self,
        name: str,
        queries: Sequence[tuple[Sequence[float], VectorFilter]],
        limit: int,
        *,
        at_least: float | None = None,
    ) -> list[list[Hit]]:

        def ask(want: int, threshold: float | None) -> list[list[Hit]]:
            shard = self._shard(name)
            # The search parameters of query_dense: after optimize, without them the batch
            # would walk the graph with Edge's default ef and answer unlike each query alone.
            requests = [
                edge.QueryRequest(limit=want, query=edge.Query.Nearest(list(dense), using=DENSE),
                                  filter=_filter(flt), params=_DENSE_SEARCH, with_payload=True,
                                  score_threshold=threshold)
                for dense, flt in queries
            ]  # fmt: skip
            with _translated(f"query {name!r}"):
                answers = shard.query_batch(edge.QueryBatchRequest(requests))
            return [hits_of(p) for p in answers]

        return dense_batch(
            queries, limit, at_least, ask,
            lambda dense, flt: self.query_dense(name, dense, flt, limit),
        )  # fmt: skip

    def query_sparse(
        self, name: str, sparse: SparseVector, flt: VectorFilter, limit: int
    ) -> list[Hit]:
        query = edge.Query.Nearest(_to_edge_sparse(sparse), using=SPARSE)
        return self._query_leg(name, query, flt, limit)

    # -- maintenance -------------------------------------------------------------------

    def optimize(self, name: str) -> bool:
        """Index the shard, having first given it this backend's config (a shard opened
        lazily keeps the one it was created with; an old home's then changes here)."""
        self._shard(name)
        dim = self._open[name].dim
        if dim is None:
            dim = self._stored_dim(name)
            self.ensure_collection(name, dim)
        shard = self._shard(name)
        self._in_graphs.pop(name, None)
        with _translated(f"optimize {name!r}"):
            changed = shard.optimize()
        self._flush(name, shard)
        return changed

    def unindexed(self, name: str) -> int:
        """Dense vectors outside any HNSW index, if at least a segment's worth that
        ``optimize`` indexes (:meth:`indexes_from`), else 0.

        Edge's ``indexed_vectors_count`` counts a dense vector once it is in an HNSW graph
        and every non-empty sparse vector (its inverted index is kept as points come). Only
        a memory's first part (``step`` 0) and an entity's spelling (no ``step``) carry BM25
        terms, so the dense vectors in graphs are that count less those points; one whose
        text has no BM25 term at all is counted unindexed (a slight over-count). Counting
        those points reads every payload (20-40 ms at 10k, seconds at a million), so it is
        done only when the cheap bound (every point with a sparse vector) reaches the
        threshold, and once per collection in this process: new points join no graph until
        ``optimize``, so the graphs' count stays until then (a point deleted from a graph
        makes it an over-count, and this an under-count, by one)."""
        shard = self._shard(name)
        least = self.indexes_from(name)
        with _translated(f"read the index state of {name!r}"):
            info = shard.info()
            points, indexed = info.points_count, info.indexed_vectors_count
            if 2 * points - indexed < least:
                return 0
            in_graphs = self._in_graphs.get(name)
            if in_graphs is None:
                # A memory's first part, or an entity's spelling (no step: each has its terms).
                first = edge.Filter(
                    should=[
                        edge.FieldCondition("step", match=edge.MatchValue(0)),
                        edge.IsEmptyCondition("step"),
                    ]
                )
                sparse = shard.count(edge.CountRequest(exact=True, filter=first))
                in_graphs = self._in_graphs[name] = max(indexed - sparse, 0)
        plain = points - in_graphs
        return plain if plain >= least else 0

    def indexes_from(self, name: str) -> int:
        """How many dense vectors a segment holds before ``optimize`` indexes it: Qdrant
        indexes a segment whose vectors take ``indexing_threshold`` KB or more (10,000 by
        default, about 6,700 vectors of 384 floats)."""
        kb = self._indexing_threshold_kb or _DEFAULT_INDEXING_KB
        return max(kb * 1024 // (4 * self._stored_dim(name)), 1)

    def copy_collection(self, name: str, to: str) -> None:
        """A copy of the shard's files (flushed first) as a new shard ``to``, with a lock
        of its own; the caller keeps writes to ``name`` out until this returns."""
        source, target = self._path(name), self._path(to)
        if target.exists():
            raise VectorStoreError(f"cannot copy {name!r} to {to!r}: {to!r} exists")
        shard = self._shard(name)
        with _translated(f"flush {name!r} to disk"):
            shard.flush()  # even inside a bulk block: the copy must hold every write
        self._dirty.discard(name)
        lock_fd = self._lock(to)
        try:
            with _translated(f"copy {name!r} to {to!r}"):
                try:
                    shutil.copytree(source, target, copy_function=copy_keeping_holes)
                except BaseException:
                    shutil.rmtree(target, ignore_errors=True)
                    raise
        finally:
            os.close(lock_fd)

    def open_collections(self) -> list[str]:
        """The collections whose shards this process holds open now, sorted (each shard
        runs Edge's search threads while it is open)."""
        with self._guard:
            return sorted(self._open)

    def release(self, name: str) -> None:
        """Flush and close the shard of ``name`` if it is open here (its search threads
        end with it); the next use loads it from its files, as a new process does.

        A shard created and filled in this process answers filtered queries more slowly
        than the same files loaded: at 10k memories a recall's Edge queries took ~6.7 ms of
        CPU in the process that had just rebuilt the home at open, ~4.8 in a new process on
        the same files, the same once it was loaded again (NOISY). Replaying the rebuild's
        writes and a recall's queries alone, the filtered dense leg (namespace and unset
        ``t_invalid``) took 3.8-4.0 ms on the filled shard, 1.9-2.4 loaded; unfiltered,
        1.6-1.8 either way: the filtering (Edge's payload indexes as updates left them, it
        seems), not the vector search.
        So a rebuild releases what it built (``projections.generations``)."""
        with self._guard:
            held = self._open.pop(name, None)
            self._dirty.discard(name)
            if held is not None:
                self._release(name, held)

    def close(self) -> None:
        with self._guard:
            self._closed = True
            errors = []
            for name, held in self._open.items():
                try:
                    self._release(name, held)
                except VectorStoreError as exc:
                    errors.append(exc)
            self._open.clear()
        if errors:
            raise errors[0]

    # -- internals ---------------------------------------------------------------------

    def _query_leg(
        self,
        name: str,
        query: edge.Query,
        flt: VectorFilter,
        limit: int,
        params: edge.SearchParams | None = None,
    ) -> list[Hit]:
        shard = self._shard(name)
        where = _filter(flt)
        rounds = [0]

        def fetch(n: int) -> list[Hit]:
            # A second round means a tie at the cut, and settling one may take every point
            # of the collection (a term in every memory scores them all alike): ids and
            # scores only then, since 10k payloads cost some 100 MB the heap keeps; the kept
            # hits' payloads are read after.
            request = edge.QueryRequest(limit=n, query=query, filter=where, params=params,
                                        with_payload=rounds[0] == 0)  # fmt: skip
            rounds[0] += 1
            with _translated(f"query {name!r}"):
                return hits_of(shard.query(request))

        hits = settle_ties(fetch, limit, most=None)
        if rounds[0] == 1 or not hits:
            return hits
        with _translated(f"query {name!r}"):
            records = shard.retrieve([h.id for h in hits], with_payload=True, with_vector=False)
        payloads = {str(r.id): dict(r.payload or {}) for r in records}
        return [Hit(h.id, h.score, payloads.get(h.id, {})) for h in hits]

    def _shard(self, name: str) -> edge.EdgeShard:
        held = self._open.get(name)
        if held is not None:
            return held.shard
        with self._guard:
            if name not in self._open:
                self._open[name] = self._load(name, create_dim=None)
            return self._open[name].shard

    def _load(self, name: str, create_dim: int | None) -> _OpenShard:
        """Lock and open a shard; create it when ``create_dim`` is given and it is missing."""
        if self._closed:
            raise VectorStoreError("the Qdrant Edge backend is closed")
        path = self._path(name)
        exists = (path / _CONFIG_FILE).is_file()
        if not exists and create_dim is None:
            raise VectorStoreError(f"collection {name!r} does not exist under {self.root}")
        if exists and self._before_open is not None:
            self._before_open(path)
        lock_fd = self._lock(name)
        try:
            if create_dim is None:
                # Without a config, Edge keeps the shard's own (as ensure_collection left it).
                with _translated(f"open collection {name!r} in {path}"):
                    shard = edge.EdgeShard.load(str(path))
            elif not exists:
                with _translated(f"create collection {name!r} in {path}"):
                    shard = edge.EdgeShard.create(str(path), self._config(create_dim, new=True))
            else:
                # With a config, Edge checks that the stored vectors have this schema.
                what = (
                    f"open collection {name!r} in {path} as {create_dim}-dimensional"
                    " (a new embedding model needs a new collection)"
                )
                with _translated(what):
                    shard = edge.EdgeShard.load(str(path), self._config(create_dim))
        except BaseException:
            os.close(lock_fd)
            raise
        return _OpenShard(shard, lock_fd, create_dim)

    def _stored_dim(self, name: str) -> int:
        """The dimension of the dense vectors a shard holds, from the config Edge stored."""
        path = self._path(name) / _CONFIG_FILE
        try:
            return int(json.loads(path.read_text())["vectors"][DENSE]["size"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            what = f"cannot read the vector size of {name!r} in {path}: {exc}"
            raise VectorStoreError(what) from exc

    def _release(self, name: str, held: _OpenShard) -> None:
        try:
            with _translated(f"close {name!r}"):
                held.shard.flush()
                held.shard.close()
        finally:
            os.close(held.lock_fd)

    def _config(self, dim: int, *, new: bool = False) -> edge.EdgeConfig:
        """The schema a shard is opened with: dense vectors in plain mmap chunks (Edge's cold
        placement) with an int8 copy in RAM; ``new``: also the choice fixed at creation, no
        WAL (see the module's invariants). An existing segment keeps its placement; the
        segments ``optimize`` builds take this config."""
        optimizers = (
            edge.EdgeOptimizersConfig(indexing_threshold=self._indexing_threshold_kb)
            if self._indexing_threshold_kb is not None
            else None
        )
        return edge.EdgeConfig(
            vectors={
                DENSE: edge.EdgeVectorParams(
                    size=dim,
                    distance=edge.Distance.Cosine,
                    memory=edge.Memory.Cold,
                    quantization_config=_DENSE_QUANTIZATION,
                )
            },
            sparse_vectors={SPARSE: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
            optimizers=optimizers,
            wal_enabled=False if new else None,
        )

    @contextmanager
    def bulk(self, name: str, *, flush: bool = True) -> Iterator[None]:
        if name in self._deferred:  # nested: the outer block decides
            yield
            return
        self._deferred.add(name)
        try:
            yield
        finally:
            self._deferred.discard(name)
        if flush:
            self.sync(name)

    def sync(self, name: str) -> None:
        if name in self._dirty:
            self._dirty.discard(name)
            self._flush(name, self._shard(name))

    def _flush(self, name: str, shard: edge.EdgeShard) -> None:
        if name in self._deferred:
            self._dirty.add(name)  # flushed once when the bulk block ends
            return
        with _translated(f"flush {name!r} to disk"):
            shard.flush()

    def _lock(self, name: str) -> int:
        make_private_dir(self.root)  # Edge's own files take the umask's mode: this guards them
        fd = open_private(self._lock_path(name), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLocked(
                f"the Qdrant Edge collection {name!r} in {self.root} is open in another process;"
                " embedded Qdrant allows one process at a time (stop the other ferrex, or run"
                " a Qdrant server and pass --qdrant-url)"
            ) from None
        return fd

    def _path(self, name: str) -> Path:
        if not _NAME.fullmatch(name):
            raise VectorStoreError(f"invalid collection name {name!r}")
        return self.root / name

    def _lock_path(self, name: str) -> Path:
        return self.root / f"{name}.lock"


def _point(p: VectorPoint) -> edge.Point:
    vectors: dict[str, edge.NamedVector] = {
        DENSE: p.dense if isinstance(p.dense, list) else [float(x) for x in p.dense],
        SPARSE: _to_edge_sparse(p.sparse),
    }
    return edge.Point(p.id, vectors, p.payload)


def _to_edge_sparse(v: SparseVector) -> edge.SparseVector:
    # Edge reads each value as a float itself (ints, numpy scalars alike).
    return edge.SparseVector(list(v.indices), list(v.values))


def _from_edge_sparse(v: object) -> SparseVector | None:
    if not isinstance(v, edge.SparseVector):
        return None
    return SparseVector(tuple(int(i) for i in v.indices), tuple(float(x) for x in v.values))


def _of_memories(memory_ids: Sequence[str]) -> edge.Filter:
    return edge.Filter(must=[_condition(AnyOf("memory_id", tuple(memory_ids)))])


def _filter(flt: VectorFilter) -> edge.Filter | None:
    clauses = filter_clauses(flt)
    return edge.Filter(must=[_condition(c) for c in clauses]) if clauses else None


def _condition(clause: Clause) -> edge.ConditionType:
    match clause:
        case AnyOf(key, (value,)):
            # One value: the same points as MatchAny([value]), checked for less (a filtered
            # search checks each point it visits: 0.3-0.5 ms less for a nearest-memories
            # query at 10k memories, tools/bench_filter.py).
            return edge.FieldCondition(key, match=edge.MatchValue(value))
        case AnyOf(key, values):
            return edge.FieldCondition(key, match=edge.MatchAny(list(values)))
        case Range(key, gte, gt, lte, lt):
            return edge.FieldCondition(key, range=edge.RangeFloat(gte=gte, gt=gt, lte=lte, lt=lt))
        case Unset(key):
            return edge.IsEmptyCondition(key)
        case Either(options):
            return edge.Filter(should=[_condition(o) for o in options])
        case All(parts):
            return edge.Filter(must=[_condition(o) for o in parts])
        case _:
            assert_never(clause)
