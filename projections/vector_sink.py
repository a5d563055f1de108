"""The Qdrant projection: journal events → points (memories) and entity-name vectors.

Invariants:

- One point per memory, or one per *part* of a text longer than the model's window (a
  procedure's parts end on step boundaries, any other text's on sentence boundaries), all
  carrying the memory's id in the payload. Point ids are derived from the memory id and the
  part number, so re-applying an event overwrites instead of duplicating.
- Parts are for the dense model only. The BM25 vector of a memory is that of its whole text
  and rides on its first point; the other parts carry an empty one. So BM25 ranks memories,
  not fragments, and a memory counts once in the document frequencies behind the IDF.
- One entity point per spelling (an entity's name and each alias), keyed like the read
  model's alias rows by (namespace, normalized spelling).
- Encoders are injected (``projections`` cannot import ``ferrex``); everything else comes
  from the events: no clock, no randomness.
- Writes are acknowledged (the backend waits) before ``apply`` returns, so the caller can
  advance the checkpoint afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from journal import MemoryStored, Record
from journal.events import start_given
from projections import fold
from projections.documents import memory_text, procedure_parts, text_parts
from projections.rows import Memory
from projections.vectors import (
    START_UNKNOWN,
    EmbeddedVectors,
    SparseVector,
    VectorBackend,
    VectorPoint,
)

_POINT_NAMESPACE = uuid.UUID("6f1c2d0e-8b7a-4c3e-9d51-2a7e4b8f0c11")


def point_id(memory_id: str, part: int = 0) -> str:
    """The deterministic point id of one part of a memory."""
    return _uuid5(f"{memory_id}#{part}")


def alias_point_id(namespace: str, normalized: str, entity_id: str) -> str:
    """The point of one spelling of an entity: like the read model's alias rows, one per
    (namespace, normalized name, entity); two agents' private entities may share a spelling."""
    key = f"alias\x00{namespace}\x00{normalized}\x00{entity_id}"
    return _uuid5(key)


_NAMESPACE_BYTES = _POINT_NAMESPACE.bytes


def _uuid5(name: str) -> str:
    """``str(uuid.uuid5(_POINT_NAMESPACE, name))`` without the ``UUID`` object: the SHA-1 of
    the namespace and the name, its version and variant bits set (RFC 9562), as hex with
    dashes. A third of the time (a rebuild computes one per point)."""
    sha1 = hashlib.sha1(_NAMESPACE_BYTES + name.encode(), usedforsecurity=False)
    digest = bytearray(sha1.digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _Sparse(Protocol):
    @property
    def indices(self) -> tuple[int, ...]: ...

    @property
    def values(self) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class Encoders:
    """How text becomes vectors, supplied by the composition root."""

    identity: str
    """Names the dense model (with its dimension and hash) and the sparse recipe."""
    dim: int
    dense: Callable[[Sequence[str]], Iterable[Iterable[float]]]
    sparse: Callable[[str], _Sparse]
    fits: Callable[[str], bool]
    """Whether a text fits the dense model's window (longer texts are embedded in parts)."""
    context_chars: int = 0
    """Up to this many characters of the turn before an episodic memory in its episode are
    embedded with it (``store.embed_context``; 0: off). See :func:`with_context`."""
    context_when: Callable[[str], bool] | None = None
    """Which turns get their neighbour (ferrex: a turn that opens with a speaker's label, a
    line of a conversation between people); None: every turn of an episode."""


Before = Callable[[str, str, int], tuple[str, str] | None]
"""(namespace, episode key, journal position) → the (memory id, text) of the episode's last
episodic memory before that position, or None."""


@dataclass(frozen=True)
class Collections:
    memories: str
    entities: str


@dataclass(eq=False)
class VectorSink:
    """Applies records to a memories collection and an entities collection."""

    backend: VectorBackend
    collections: Collections
    encoders: Encoders
    before: Before | None = None
    """The read model's last episodic memory of an episode before a journal position,
    for an episode this sink has not seen yet (a catch-up in a new process)."""
    _tails: dict[tuple[str, str], tuple[str, str]] = field(
        default_factory=dict, init=False, repr=False
    )
    """The last episodic memory seen of each episode (namespace, episode key) as its id
    and its text cut to ``context_chars``: the next turn of that episode is embedded
    with it."""
    _embedded: EmbeddedVectors | None = field(default=None, init=False, repr=False)
    """The backend when it runs in this process (:class:`EmbeddedVectors`), asked once: a
    server has no write to defer, no collection to release."""

    def __post_init__(self) -> None:
        self._embedded = self.backend if isinstance(self.backend, EmbeddedVectors) else None

    def ensure(self) -> None:
        self.backend.ensure_collection(self.collections.memories, self.encoders.dim)
        self.backend.ensure_collection(self.collections.entities, self.encoders.dim)

    def apply(self, records: Sequence[Record], *, durable: bool = True) -> None:
        """Apply records in order; texts of the whole batch are embedded in one call.

        With ``durable`` the batch is durable when this returns, with one flush per
        collection written rather than one per write; without, at the next :meth:`sync`.
        """
        with self.bulk(flush=durable):
            self._apply(records)

    def apply_changes(self, changes: Iterable[tuple[int, float, fold.Change]]) -> None:
        """Apply the fold's changes (each with the position of its record) in order, durably:
        what ``reconcile --fix`` replays for the points it found wrong, the changes of the
        memories and spellings they hold and nothing else."""
        with self.bulk(flush=True):
            self._apply_changes(changes)

    @contextlib.contextmanager
    def bulk(self, *, flush: bool = True) -> Iterator[None]:
        """Writes to both collections inside need not be durable one by one: an embedded
        backend makes them durable together when the block ends, or with ``flush=False`` at
        the next :meth:`sync` (:meth:`EmbeddedVectors.bulk`); a server acknowledges each."""
        backend = self._embedded
        if backend is None:
            yield
            return
        with (
            backend.bulk(self.collections.memories, flush=flush),
            backend.bulk(self.collections.entities, flush=flush),
        ):
            yield

    def sync(self) -> None:
        """Make every write to both collections so far durable (a server's already are)."""
        if self._embedded is not None:
            self._embedded.sync(self.collections.memories)
            self._embedded.sync(self.collections.entities)

    def release(self) -> None:
        """Let an embedded backend close both collections, their writes made durable first
        (:meth:`EmbeddedVectors.release`); a server holds them itself."""
        if self._embedded is not None:
            self._embedded.release(self.collections.memories)
            self._embedded.release(self.collections.entities)

    def _apply(self, records: Sequence[Record]) -> None:
        self._apply_changes(
            (record.position, record.recorded_at.timestamp(), change)
            for record in records
            for event in record.events
            for change in fold.changes(event)
        )

    def _apply_changes(self, changes: Iterable[tuple[int, float, fold.Change]]) -> None:
        pending: list[_Pending] = []
        entities: list[_Pending] = []
        # Invalidations wait for the upserts before them, so that a supersede does not cut
        # the batch in two (a batch embeds and upserts in one call); they keep their order.
        invalidations: list[tuple[str, float | None]] = []

        def flush_memories() -> None:
            self._flush(pending, self.collections.memories)
            for memory_id, t_invalid in invalidations:
                self.backend.set_payload(
                    self.collections.memories, [memory_id], {"t_invalid": t_invalid}
                )
            invalidations.clear()

        for position, recorded_at, change in changes:
            match change:
                case fold.PutMemory():
                    memory_id = change.event.memory_id
                    if any(m == memory_id for m, _ in invalidations):
                        flush_memories()  # stored again after its invalidation
                    pending.extend(self._memory_points(change.event, position, recorded_at))
                case fold.Invalidated():
                    invalidations.append((change.memory_id, change.t_invalid))
                case fold.Revalidated():
                    invalidations.append((change.memory_id, None))
                case fold.Forgot():
                    flush_memories()
                    self._forget_tails(change.memory_ids)
                    self.backend.delete_by_memory(
                        self.collections.memories, list(change.memory_ids)
                    )
                case fold.DropEntities():
                    self._flush(entities, self.collections.entities)
                    # The entity's name and all its aliases.
                    self.backend.delete_by_memory(
                        self.collections.entities, list(change.entity_ids)
                    )
                case fold.PutSpelling():
                    entities.append(
                        _Pending(
                            alias_point_id(change.namespace, change.normalized, change.entity_id),
                            change.alias,
                            change.alias,
                            _entity_payload(change.entity_id, change.namespace),
                        )
                    )
                case fold.DropSpelling():
                    # The spelling's point (a split moves it to the new entity).
                    self._flush(entities, self.collections.entities)
                    self.backend.delete(
                        self.collections.entities,
                        [alias_point_id(change.namespace, change.normalized, change.owner)],
                    )
                case fold.Relinked():
                    # The entities filter reads the payload: it follows the new links.
                    flush_memories()
                    self.backend.set_payload(
                        self.collections.memories,
                        [change.memory_id],
                        {"entity_ids": list(change.entity_ids)},
                    )
                case fold.Validated() | fold.Accessed() | fold.Marked():
                    pass  # freshness and marks live in the read model
                case fold.PutEntity() | fold.KeptFor() | fold.Merged():
                    pass  # an entity's points are its spellings'; merges keep them
                case (
                    fold.Flagged()
                    | fold.Differ()
                    | fold.FoldedPair()
                    | fold.Unfolded()
                    | fold.Unflagged()
                ):
                    pass  # read-model facts: vectors do not change
                case _:
                    assert_never(change)
        flush_memories()
        self._flush(entities, self.collections.entities)

    def _memory_points(
        self, event: MemoryStored, position: int, recorded_at: float
    ) -> list[_Pending]:
        body = event.body
        if body is None:
            return []  # redacted: nothing left to index
        text = memory_text(event.memory_type, body)
        if event.memory_type == "procedural":
            parts = procedure_parts(body, self.encoders.fits)
        else:
            parts = text_parts(text, self.encoders.fits)
        if self.encoders.context_chars and len(parts) == 1:
            parts = [self._with_neighbour(event, text, position)]
        base = memory_payload(
            event.memory_id, event.namespace, event.memory_type, event.entity_ids,
            event.t_valid.timestamp(), None, event.agent_id, event.visibility,
            start_given=start_given(event, recorded_at),
        )  # fmt: skip
        return [
            _Pending(point_id(event.memory_id, n), part, text if n == 0 else None,
                     base | {"step": n})
            for n, part in enumerate(parts)
        ]  # fmt: skip

    def _with_neighbour(self, event: MemoryStored, text: str, position: int) -> str:
        """The dense text of an episodic memory: its own text, then the tail of the turn
        stored before it (in journal order, not forgotten) in the same episode; and this
        one remembered as the next turn's neighbour."""
        key = episode_key(event)
        if key is None:
            return text
        when = self.encoders.context_when
        chars = self.encoders.context_chars
        if when is not None and not when(text):
            self._tails[key] = (event.memory_id, text[-chars:])
            return text
        seen = self._tails.get(key)
        if seen is None and self.before is not None:
            found = self.before(key[0], key[1], position)
            seen = (found[0], found[1][-chars:]) if found is not None else None
        self._tails[key] = (event.memory_id, text[-chars:])
        return with_context(text, seen[1] if seen is not None else None)

    def _forget_tails(self, memory_ids: Iterable[str]) -> None:
        """A forgotten memory is no neighbour: the next turn of its episode asks the read
        model (which no longer holds it) for the turn before."""
        gone = set(memory_ids)
        for key in [k for k, (m, _) in self._tails.items() if m in gone]:
            del self._tails[key]

    def _flush(self, pending: list[_Pending], collection: str) -> None:
        if not pending:
            return
        dense = self.encoders.dense([p.dense_text for p in pending])
        points = []
        for p, vector in zip(pending, dense, strict=True):
            points.append(
                VectorPoint(
                    id=p.point_id,
                    dense=_floats(vector),
                    sparse=self._sparse(p.sparse_text),
                    payload=p.payload,
                )
            )
        self.backend.upsert(collection, points)
        pending.clear()

    def _sparse(self, text: str | None) -> SparseVector:
        if text is None:
            return SparseVector((), ())
        sparse = self.encoders.sparse(text)
        return SparseVector(tuple(sparse.indices), tuple(sparse.values))


@dataclass(frozen=True, slots=True)
class _Pending:
    """A point waiting to be embedded and written."""

    point_id: str
    dense_text: str
    sparse_text: str | None
    """None: this point carries no BM25 terms (a later part of a memory)."""
    payload: dict[str, Any]


def episode_key(event: MemoryStored) -> tuple[str, str] | None:
    """Which episode an episodic memory belongs to for context embedding: (namespace,
    ``source:<source>``), else (namespace, ``episode:<derived episode id>``); None for any
    other memory (the keys :meth:`ReadModel.episode_before` reads)."""
    body = event.body
    if event.memory_type != "episodic" or body is None:
        return None
    if body.source:
        return (event.namespace, f"source:{body.source}")
    if event.episode is not None:
        return (event.namespace, f"episode:{event.episode.id}")
    return None


def with_context(text: str, before: str | None) -> str:
    """A turn's text followed by its neighbour's tail. The turn comes first, so a model that
    truncates at its window drops the neighbour, never the turn."""
    if not before:
        return text
    return f"{text}\n{before}"


def memory_payload(
    memory_id: str,
    namespace: str,
    memory_type: str,
    entity_ids: Iterable[str],
    t_valid: float,
    t_invalid: float | None,
    agent_id: str | None,
    visibility: str,
    *,
    start_given: bool = True,
) -> dict[str, Any]:
    """The payload of a memory's points, what a vector filter reads
    (``vectors.filter_clauses``): written by the sink from the stored event, given by
    :func:`payload_of` from the read model's row. A fact stored without ``valid_from`` has
    ``start`` :data:`START_UNKNOWN` (an ``as_of`` before it was learned may still find it,
    once it has ended)."""
    start = {"start": START_UNKNOWN} if memory_type == "semantic" and not start_given else {}
    return start | {
        "memory_id": memory_id,
        "namespace": namespace,
        "type": memory_type,
        "entity_ids": list(dict.fromkeys(entity_ids)),
        "t_valid": t_valid,
        "t_invalid": t_invalid,
        "agent_id": agent_id,
        "visibility": visibility,
    }


def payload_of(memory: Memory) -> dict[str, Any]:
    """:func:`memory_payload` of a read-model row: what its points hold now (recall's
    context neighbours are admitted by it, reconcile checks the points against it)."""
    m = memory
    return memory_payload(m.memory_id, m.namespace, m.type, m.entity_ids, m.t_valid,
                          m.t_invalid, m.agent_id, m.visibility,
                          start_given=m.valid_from_given)  # fmt: skip


def _entity_payload(entity_id: str, namespace: str) -> dict[str, Any]:
    # ``memory_id`` is the owner key the backends delete and filter by; for an entity's
    # name and aliases the owner is the entity.
    return {
        "entity_id": entity_id,
        "memory_id": entity_id,
        "namespace": namespace,
        "type": "entity",
    }


def _floats(vector: Iterable[float]) -> list[float]:
    # numpy rows convert in C; anything else element by element.
    tolist = getattr(vector, "tolist", None)
    return list(tolist()) if tolist is not None else [float(x) for x in vector]
