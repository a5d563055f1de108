"""Indexing the live vector collections on copies while they go on serving, then switching
the copies in (a server's background index, ``App.index_beside``).

:func:`index_beside` runs four steps, each a function here:

1. :func:`_copy`, under the gate: the vector writes made durable, both collections copied (no
   write can land meanwhile; both, so that step 3 writes only into copies), and the vector
   position ``at`` noted.
2. :func:`_build`, without it: ``build``; stores and recalls go on against the live
   collections.
3. :func:`_catch_up_copies`: a sink of the copies applies what the live collections gained
   since ``at``, a few records per hold of the shared gate.
4. :meth:`Projections.switch_vectors <projections.replay.Projections.switch_vectors>`, under
   the journal's writer lock and the gate: the Qdrant checkpoint set back to where step 3 got
   and the sink of the copies made the live one, so a catch-up applies the rest (vector
   writes are idempotent); the copies made durable; then the pointer file names them. The
   old collections are dropped after.

A crash before the pointer is written leaves the old collections live with a checkpoint at or
before what they hold (applied again at the next start); one after leaves the copies live,
durable at the checkpoint. A copy left by a crash is removed by the next call, and by the
next rebuild.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections.abc import Callable, Iterator

import msgspec

from journal import Record
from projections.generations import Live, base, drop_copies
from projections.replay import Projections
from projections.vector_sink import Collections, VectorSink
from projections.vectors import EmbeddedVectors

log = logging.getLogger("ferrex.projections")

INDEX_SHARE = 0.05
"""A server indexes a collection beside the live one when this share of its dense vectors
(or more) is outside any index, and at least a segment's worth: at 1M memories every 50,000
stores, with up to 50,000 vectors searched one by one meanwhile (about 10 ms more a recall,
going by the 100,000 unindexed vectors that cost 23 ms more at 100k)."""

_COPY_CHUNK = 16
"""Records :func:`_catch_up_copies` applies to the copies per hold of the shared gate before
the switch (a write's apply waits for at most one such chunk)."""

_COPY_PAUSE = 0.005  # seconds between two of those holds

Build = Callable[[list[str]], dict[str, bool]]


def index_beside(
    projections: Projections,
    build: Build,
    *,
    before_copy: Callable[[list[str]], None] | None = None,
) -> list[str]:
    """Index the live vector collections that :meth:`EmbeddedVectors.unindexed` says are due,
    on copies, while these go on serving; then switch the copies in (the steps: the module's
    docstring). Returns the collections switched in (none: nothing was due, or the build
    changed nothing).

    ``build(names)`` builds the indexes of the copies (in another process: see
    :mod:`projections.indexing`) and says which changed; ``before_copy(names)`` may refuse
    the copies by raising (ferrex checks its free-space reserve). Nothing for a server,
    which indexes by itself (it is no :class:`EmbeddedVectors`)."""
    backend = projections.backend
    if not isinstance(backend, EmbeddedVectors):
        return []
    with projections.gate.shared():  # a read: stores and recalls go on
        live = projections.live
        due = [n for n in (live.memories, live.entities) if _index_due(backend, n)]
    if not due:
        return []
    began = time.perf_counter()
    copied_at = _copy(projections, backend, live, before_copy)
    if copied_at is None:
        return []
    at, copies = copied_at
    copied = time.perf_counter()
    new = msgspec.structs.replace(
        live, memories=copies[live.memories], entities=copies[live.entities]
    )
    sink = VectorSink(
        projections.backend,
        Collections(new.memories, new.entities),
        projections.encoders,
        projections.read_model.episode_before,
    )
    try:
        if not _build(projections, build, list(copies.values())):
            return []
        built = time.perf_counter()
        for copy in copies.values():
            # Opened here, not while a write waits. Edge holds the interpreter while it
            # loads a shard (0.5 s at 100k memories): every thread waits once.
            projections.backend.count(copy)
        near, early = _catch_up_copies(projections, sink, at)
    except BaseException:
        with projections.gate.exclusive():
            drop_copies(projections.backend, projections.live)
        raise
    near_at = time.perf_counter()
    switch = projections.switch_vectors(live, new, sink, near)
    if switch is None:
        return []
    late, locked = switch
    switched = time.perf_counter()
    # No read or write names the old collections any more: dropped without the gate.
    for name in copies:
        projections.backend.drop_collection(name)
    log.info(
        "projections: indexed %s on copies: copied in %.2f s, built in %.2f s, caught up"
        " in %.2f s (%d records), switched in %.2f s (%d records; %.2f s waiting for the"
        " locks)",
        ", ".join(copies), copied - began, built - copied, near_at - built, early,
        switched - locked, late, locked - near_at,
    )  # fmt: skip
    return list(copies.values())


def _index_due(backend: EmbeddedVectors, name: str) -> bool:
    """Whether ``name`` has vectors worth indexing: a segment's worth that ``optimize``
    would index (:meth:`EmbeddedVectors.unindexed`), and at least :data:`INDEX_SHARE` of its
    points, since each build copies the whole collection (3 GB at a million memories,
    seconds during which calls wait) to index what came since the last one."""
    unindexed = backend.unindexed(name)
    return unindexed > 0 and unindexed >= INDEX_SHARE * backend.count(name)


def _copy(
    projections: Projections,
    backend: EmbeddedVectors,
    live: Live,
    before_copy: Callable[[list[str]], None] | None,
) -> tuple[int, dict[str, str]] | None:
    """Step 1: both live collections copied under the gate, and the vector position they
    hold; (that position, each collection's copy), or None when the projections are in an
    import, closed or rebuilt since ``live`` was read."""
    with projections.gate.exclusive():
        if projections.holding or projections.closed or projections.live != live:
            return None
        drop_copies(projections.backend, live)
        if before_copy is not None:
            before_copy([live.memories, live.entities])
        projections.sync()
        at = projections.qdrant_position
        # Both collections, so that the catch-up after the build writes only into copies.
        copies = {
            name: f"{base(name)}_{secrets.token_hex(4)}" for name in (live.memories, live.entities)
        }
        try:
            for name, copy in copies.items():
                backend.copy_collection(name, copy)
        except BaseException:
            drop_copies(projections.backend, live)
            raise
    return at, copies


def _build(projections: Projections, build: Build, copies: list[str]) -> bool:
    """Step 2: the copies' indexes built; whether any changed (when none did, they are
    dropped: nothing to switch in)."""
    changed = build(copies)
    if not any(changed.values()):
        with projections.gate.exclusive():
            drop_copies(projections.backend, projections.live)
        return False
    return True


def _catch_up_copies(projections: Projections, sink: VectorSink, at: int) -> tuple[int, int]:
    """Step 3: apply to ``sink`` (the copies) the records after ``at`` that the live
    collections hold, a few at a time under the shared gate, so that the switch has little
    left to apply while everything waits; (the position reached, records applied). Reads go
    on meanwhile, and a write's apply waits at most one chunk."""
    applied = 0
    # One read of the journal for as long as it lasts (each read decodes its segment
    # from the start, 0.1 s and more at 100k records); a new one for what came after.
    records: Iterator[Record] = iter(())
    while True:
        with projections.gate.shared(), projections.read_model.snapshot():
            upto = projections.qdrant_position
            if at >= upto:
                break
            chunk = list(itertools.islice(records, _COPY_CHUNK))
            if not chunk:
                records = projections.journal.read(after=at)
                chunk = list(itertools.islice(records, _COPY_CHUNK))
            kept = [r for r in chunk if r.position <= upto]
            if kept:
                sink.apply(kept, durable=False)
                at = kept[-1].position
                applied += len(kept)
            if len(kept) < len(chunk) or not kept:
                break  # records the live ones lack yet: left to the switch's catch-up
        # Not urgent: the serving threads get the interpreter between two chunks.
        time.sleep(_COPY_PAUSE)
    return at, applied
