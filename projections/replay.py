"""Keeping the projections in step with the journal: open, catch up, rebuild.

(Generations and the pointer file are :mod:`projections.generations`; a rebuild on two cores
:mod:`projections.split_rebuild`; the flush thread :mod:`projections.flush_thread`; indexing
beside the live collections :mod:`projections.index_beside`; comparing the projections with
the journal, ``reconcile``, :mod:`projections.reconcile`.)

Invariants:

- The SQLite checkpoint advances in the same transaction as its writes; the Qdrant one is
  stored in the read model after the vector writes were acknowledged.
- Reads run in many threads at once, beside a write, each on one consistent state: every
  apply (:meth:`Projections.catch_up`) passes the :class:`~projections.gate.Gate`
  exclusively, every read (:meth:`Projections.reading`) shares it and runs its SQLite
  queries in one snapshot. So the read model and the vectors a read sees are at the same
  journal position (the read model is the authority on what a memory is; a vector hit is
  only a candidate), and a record is seen whole or not at all.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from journal import JournalBackend
from journal.errors import JournalBehind
from projections.applying import QDRANT, Progress, apply_all
from projections.flush_thread import FlushTimer
from projections.gate import Gate
from projections.generations import Live, build, drop_copies, read_pointer, unusable, write_pointer
from projections.readmodel.projector import NO_RULES, Rules
from projections.sqlite import ReadModel
from projections.vector_sink import Collections, Encoders, VectorSink
from projections.vectors import VectorBackend

log = logging.getLogger("ferrex.projections")

SYNC_RECORDS = 1000
"""Incremental vector writes are made durable (and the Qdrant checkpoint advanced) once this
many records wait for it, and otherwise by the flush thread
(:data:`projections.flush_thread.SYNC_SECONDS` after the first), at close, and before a
reconcile."""

HELD_SYNC_RECORDS = 20_000
"""Inside :meth:`Projections.holding_sync` (an import) the vector writes are made durable
only this often and when the block ends: the journal is the durable record, and what a
crash loses from the vectors is re-applied from the checkpoint."""

RELEASE_RECORDS = 5_000
"""A :meth:`Projections.holding_sync` block (an import) that applied at least this many
records ends by releasing the vector collections (:meth:`EmbeddedVectors.release`): Qdrant
Edge answers filtered queries slower on points added by this process while their shard stays
open (9k points added to a shard of 1k loaded: the filtered dense leg 4.0-4.4 ms against
2.6-3.3 once loaded again; 800 added to 9.2k: no difference, NOISY)."""


class Projections:
    """The live read model and vector collections, and the operations that maintain them."""

    def __init__(
        self,
        home: Path,
        journal: JournalBackend,
        backend: VectorBackend,
        encoders: Encoders,
        live: Live,
        rules: Rules = NO_RULES,
    ) -> None:
        self.home = home
        self.journal = journal
        self.backend = backend
        self.encoders = encoders
        self.rules = rules
        self._attach(live)
        self._holding = 0  # open holding_sync blocks
        self._held_from = 0  # the vector position when the outermost one began
        self.gate = Gate()
        self._flush_timer = FlushTimer(self._flush_due)
        self._closed = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """One consistent read of both projections (see the module docstring; re-entrant).

        What other processes appended is applied first when the journal's writer lock is free
        this instant; while a write is in progress the read goes on without waiting for it
        and sees the state before it (the write's caller is answered only after its apply)."""
        if not self.gate.held_here():
            with self.journal.try_exclusive() as head:
                if head is not None and head.position > min(
                    self._sqlite_applied(), self._qdrant_applied
                ):
                    self.catch_up()
        with self.gate.shared(), self.read_model.snapshot():
            yield

    def _sqlite_applied(self) -> int:
        with self.read_model.snapshot():
            return self.read_model.checkpoint()

    @classmethod
    def open(
        cls,
        home: Path,
        journal: JournalBackend,
        backend: VectorBackend,
        encoders: Encoders,
        *,
        rules: Rules = NO_RULES,
        progress: Progress | None = None,
        before_build: Callable[[str], None] | None = None,
    ) -> Projections:
        """Open what is live, rebuilding first if it is missing, stale or broken.

        ``before_build(reason)`` is called before a rebuild and may refuse it by raising
        (ferrex checks its free-space reserve there: a rebuild writes every store anew)."""
        live = read_pointer(home)
        reason = unusable(home, backend, encoders, rules, live)
        if reason is not None:
            if before_build is not None:
                before_build(reason)
            # A first start is routine; anything else is worth a warning.
            level = logging.INFO if live is None else logging.WARNING
            log.log(level, "projections: rebuilding from the journal: %s", reason)
            live = build(home, journal, backend, encoders, rules, live, progress)
        assert live is not None
        projections = cls(home, journal, backend, encoders, live, rules)
        checkpoint = projections.read_model.checkpoint()
        head = journal.refresh().position
        if checkpoint > head:
            # Records up to the checkpoint were appended, fsynced and applied: a journal that
            # ends before it lost acknowledged records. Rebuilding from it would serve less
            # and write new records at their positions; only the operator may accept that.
            projections.close()
            raise JournalBehind(checkpoint, head)
        projections.catch_up(progress=progress)
        projections.sync()
        return projections

    @classmethod
    def replay(
        cls,
        home: Path,
        journal: JournalBackend,
        backend: VectorBackend,
        encoders: Encoders,
        *,
        rules: Rules = NO_RULES,
        progress: Progress | None = None,
    ) -> Projections:
        """Build a new generation from the journal (whatever is live now), switch to it."""
        live = build(home, journal, backend, encoders, rules, read_pointer(home), progress)
        return cls(home, journal, backend, encoders, live, rules)

    def rebuild(self, progress: Progress | None = None) -> Live:
        """``ferrex replay``: a fresh generation from the journal, switched in atomically."""
        old = self.live
        new = self._build_beside(old, progress)
        with self.gate.exclusive():
            self.read_model.close()
            self._attach(new)
        return new

    def _attach(self, live: Live) -> None:
        """Serve generation ``live``: its read model, and a sink into its collections."""
        self.live = live
        self.read_model = ReadModel.open(self.home / live.sqlite, rules=self.rules)
        self.sink = VectorSink(
            self.backend,
            Collections(live.memories, live.entities),
            self.encoders,
            self.read_model.episode_before,
        )
        self._qdrant_applied = self.read_model.checkpoint(QDRANT)

    def _build_beside(self, old: Live, progress: Progress | None) -> Live:
        # The old read model stays open (and serving) until the switch.
        return build(
            self.home, self.journal, self.backend, self.encoders, self.rules, old, progress
        )

    @property
    def holding(self) -> bool:
        """Inside a :meth:`holding_sync` block (an import)."""
        return self._holding > 0

    @property
    def closed(self) -> bool:
        return self._closed

    def switch_vectors(
        self, live: Live, new: Live, sink: VectorSink, near: int
    ) -> tuple[int, float] | None:
        """Make ``new`` live, whose collections (``sink``'s) hold the vector writes up to
        ``near`` (:mod:`projections.index_beside`'s last step). Under the journal's writer
        lock and the gate: the Qdrant checkpoint set back to ``near`` and ``sink`` made the
        live one, so a catch-up applies the rest (vector writes are idempotent); the new
        collections made durable; then the pointer file names them. Returns the records the
        catch-up applied and when the locks were taken (``time.perf_counter``); None, the
        collections of ``new`` dropped, when the projections closed or ``live`` is no
        longer live. On a failure the old collections stay live, at the old checkpoint."""
        # The journal's writer lock before the gate, in the order a write takes them: the
        # catch-up below reads what other writers appended.
        with self.journal.exclusive(), self.gate.exclusive():
            locked = time.perf_counter()
            if self._closed or self.live != live:  # closed, or rebuilt meanwhile
                drop_copies(self.backend, self.live)
                return None
            old_sink, old_at = self.sink, self._qdrant_applied
            try:
                self.sync()
                self.read_model.set_checkpoint(QDRANT, near)
                self._qdrant_applied = near
                self.sink = sink
                late = self._catch_up(None)
                # Forced: what was written into the new collections is not durable yet either.
                self.sink.sync()
                self.read_model.set_checkpoint(QDRANT, self._qdrant_applied)
                write_pointer(self.home, new)
            except BaseException:
                # The old collections hold everything up to old_at, durably (the first sync).
                self.sink, self._qdrant_applied = old_sink, old_at
                self.read_model.set_checkpoint(QDRANT, old_at)
                drop_copies(self.backend, live)
                raise
            self.live = new
        return late, locked

    def behind(self, head: int) -> bool:
        """Whether a journal whose head is at ``head`` holds a record one of the projections
        has not applied (what :meth:`catch_up` would apply). A writer holding the journal's
        lock asks it with the head the lock gave it, and skips a catch-up with nothing to do."""
        with self.gate.exclusive():
            return head > min(self.read_model.checkpoint(), self._qdrant_applied)

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply what the journal has beyond the checkpoints; returns records applied.

        Vector writes are made durable in batches (see :data:`SYNC_RECORDS`); reads wait
        while it applies (:meth:`reading`)."""
        with self.gate.exclusive():
            return self._catch_up(progress)

    def _catch_up(self, progress: Progress | None) -> int:
        applied, self._qdrant_applied = apply_all(
            self.journal,
            self.read_model,
            self.sink,
            after=min(self.read_model.checkpoint(), self._qdrant_applied),
            progress=progress,
            qdrant_at=self._qdrant_applied,
            durable=False,
        )
        unsynced = self._qdrant_applied - self.read_model.checkpoint(QDRANT)
        if self._holding:
            due = unsynced >= HELD_SYNC_RECORDS
        else:
            due = unsynced >= SYNC_RECORDS
            if unsynced and not due:
                self._flush_timer.request()
        if due:
            self.sync()
        return applied

    def _flush_due(self) -> None:
        """What the flush thread runs (:class:`~projections.flush_thread.FlushTimer`)."""
        with self.gate.exclusive():
            # An import's block makes its writes durable when it ends; a closed
            # projection made them durable as it closed.
            if not self._holding and not self._closed:
                self.sync()

    @contextlib.contextmanager
    def holding_sync(self) -> Iterator[None]:
        """Many writes in a row (an import): the catch-ups inside make the vector writes
        durable (one Qdrant flush, then the checkpoint) only every :data:`HELD_SYNC_RECORDS`
        records instead of every second, and once when the block ends (re-entrant).

        The checkpoint is never ahead of what the vector store has made durable: a crash
        inside re-applies the vectors from the journal at the next start. A block that
        applied :data:`RELEASE_RECORDS` or more ends by releasing the vector collections
        (under the gate, so no read is in them), to be loaded again by the next use."""
        with self.gate.exclusive():
            if not self._holding:
                self._held_from = self._qdrant_applied
            self._holding += 1
        try:
            yield
        finally:
            with self.gate.exclusive():
                self._holding -= 1
                if not self._holding:
                    self.sync()
                    if self._qdrant_applied - self._held_from >= RELEASE_RECORDS:
                        self.sink.release()

    @property
    def qdrant_position(self) -> int:
        """The last record applied to the vectors (durable or not yet)."""
        return self._qdrant_applied

    def sync(self) -> None:
        """Make the applied vector writes durable, then record the Qdrant checkpoint."""
        with self.gate.exclusive():
            if self._qdrant_applied <= self.read_model.checkpoint(QDRANT):
                return
            self.sink.sync()
            self.read_model.set_checkpoint(QDRANT, self._qdrant_applied)

    def close(self) -> None:
        self._closed = True
        self._flush_timer.close()
        with self.gate.exclusive():  # a scheduled sync already running ends first
            try:
                self.sync()
            finally:
                self.read_model.close()
