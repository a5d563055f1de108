"""Applying journal records to both projections, batch by batch.

The Qdrant checkpoint is named :data:`QDRANT` in the read model (the read model's own is its
default one); :func:`apply_all` is the one loop that a catch-up and a one-process rebuild
share, and :func:`chunks` the batching every reader of the journal here uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from journal import JournalBackend, Record
from projections.sqlite import ReadModel
from projections.vector_sink import VectorSink

QDRANT = "qdrant"
BATCH = 512

Progress = Callable[[int, int], None]
"""Called with (records done, records in all) during long work."""


def chunks(records: Iterator[Record], size: int) -> Iterator[list[Record]]:
    """The records in lists of ``size`` (the last one shorter)."""
    chunk: list[Record] = []
    for record in records:
        chunk.append(record)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def apply_all(
    journal: JournalBackend,
    read_model: ReadModel,
    sink: VectorSink,
    *,
    after: int,
    progress: Progress | None,
    qdrant_at: int | None = None,
    durable: bool = True,
) -> tuple[int, int]:
    """Apply records after ``after`` to both sinks; (records read, last vector position).

    ``durable``: advance the Qdrant checkpoint after each acknowledged batch; otherwise the
    caller does, after a sync.
    """
    total = max(journal.refresh().position - after, 0)
    done = 0
    sqlite_at = read_model.checkpoint()
    vectors_at = read_model.checkpoint(QDRANT) if qdrant_at is None else qdrant_at
    for chunk in chunks(journal.read(after=after), BATCH):
        read_model.apply([r for r in chunk if r.position > sqlite_at])
        vector_part = [r for r in chunk if r.position > vectors_at]
        if vector_part:
            sink.apply(vector_part, durable=durable)
            vectors_at = vector_part[-1].position
            if durable:
                read_model.set_checkpoint(QDRANT, vectors_at)
        done += len(chunk)
        if progress is not None:
            progress(done, max(total, done))
    return done, vectors_at
