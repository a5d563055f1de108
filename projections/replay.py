"""Keeping the projections in step with the journal: open, catch up, rebuild.

(Comparing them with the journal, ``reconcile``, is :mod:`projections.reconcile`.)

Invariants:

- What is live is named by one pointer file, ``projections.json`` in the data directory: the
  generation number, the SQLite file and the two Qdrant collections, and the versions and
  encoder identity they were built with. It is replaced atomically (write, fsync, rename).
- A rebuild (``replay``) builds a *new* generation from position 0 while the old one keeps
  serving, then switches the pointer and drops the old one. A crash before the switch
  leaves the old generation live; its leftovers are cleared by the next rebuild.
- A version or encoder mismatch at open is resolved by a rebuild, never by mixing.
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
import dataclasses
import fcntl
import hashlib
import itertools
import logging
import os
import re
import secrets
import signal
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from journal import Journal, JournalBackend, MemoryStored, Record
from journal.files import replace_durably
from projections.documents import memory_text
from projections.gate import Gate
from projections.readmodel.projector import NO_RULES, Rules
from projections.readmodel.schema import SCHEMA_VERSION
from projections.readmodel.store import ReadModelError
from projections.sqlite import ReadModel
from projections.vector_sink import Collections, Encoders, VectorSink
from projections.vectors import SparseVector, VectorBackend, VectorStoreError

log = logging.getLogger("ferrex.projections")

POINTER = "projections.json"
QDRANT = "qdrant"
VECTOR_VERSION = 2
"""Bump when what the vector sink derives from events changes (payload, text, parts)."""
BATCH = 512
SYNC_RECORDS = 1000
SYNC_SECONDS = 1.0
"""Incremental vector writes are made durable (and the Qdrant checkpoint advanced) this long
after the first of them, on a thread of their own (so no command waits for Qdrant's flush),
at close, and before a reconcile. Until then they are served from memory, and a crash
re-applies them from the durable checkpoint (vector writes are idempotent)."""
HELD_SYNC_RECORDS = 20_000
"""Inside :meth:`Projections.holding_sync` (an import) the vector writes are made durable
only this often and when the block ends: the journal is the durable record, and what a
crash loses from the vectors is re-applied from the checkpoint."""

RELEASE_RECORDS = 5_000
"""A :meth:`Projections.holding_sync` block (an import) that applied at least this many
records ends by releasing the vector collections (:meth:`VectorBackend.release`): Qdrant
Edge answers filtered queries slower on points added by this process while their shard stays
open (9k points added to a shard of 1k loaded: the filtered dense leg 4.0-4.4 ms against
2.6-3.3 once loaded again; 800 added to 9.2k: no difference, NOISY)."""

INDEX_SHARE = 0.05
"""A server indexes a collection beside the live one when this share of its dense vectors
(or more) is outside any index, and at least a segment's worth: at 1M memories every 50,000
stores, with up to 50,000 vectors searched one by one meanwhile (about 10 ms more a recall,
going by the 100,000 unindexed vectors that cost 23 ms more at 100k)."""

_COPY_CHUNK = 16
"""Records :meth:`Projections.index_beside` applies to its copies per hold of the shared
gate before the switch (a write's apply waits for at most one such chunk)."""

_COPY_PAUSE = 0.005  # seconds between two of those holds

SPLIT_RECORDS = 20_000
"""A rebuild of at least this many records applies the read model in a child process of its
own while this one writes the vectors (see :func:`apply_split`): two cores instead of one."""

Progress = Callable[[int, int], None]
"""Called with (records done, records in all) during long work."""


class Live(msgspec.Struct, frozen=True, kw_only=True):
    """The pointer file: which generation of the projections is live."""

    generation: int
    sqlite: str
    memories: str
    entities: str
    encoders: str
    schema_version: int
    vector_version: int
    rules: str = ""


def _slug(identity: str) -> str:
    readable = re.sub(r"[^a-z0-9]+", "-", identity.lower()).strip("-")[:40]
    return f"{readable}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


HOME_TAG = "projections-tag"
"""A file in the home holding a random tag that the home's Qdrant collections carry."""


def home_tag(home: Path) -> str:
    """This home's tag, made on its first build: the collections of two homes on one Qdrant
    server (two ferrex servers sharing a PostgreSQL journal, or two unrelated homes) never
    share a name, so neither writes, rebuilds or drops the other's vectors."""
    path = home / HOME_TAG
    if path.exists():
        tag = path.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{8}", tag):
            return tag
        log.warning("projections: %s is unreadable; making a new tag", path)
    tag = secrets.token_hex(4)
    replace_durably(path, tag.encode("ascii") + b"\n")
    return tag


def plan_generation(
    number: int, encoders: Encoders, rules: Rules = NO_RULES, *, tag: str = ""
) -> Live:
    slug = _slug(encoders.identity)
    own = f"{tag}-" if tag else ""
    return Live(
        generation=number,
        sqlite=f"readmodel-{number}.sqlite",
        memories=f"memories-{own}{slug}-g{number}",
        entities=f"entities-{own}{slug}-g{number}",
        encoders=encoders.identity,
        schema_version=SCHEMA_VERSION,
        vector_version=VECTOR_VERSION,
        rules=rules.identity,
    )


def _base(collection: str) -> str:
    """A collection's name without the suffix :meth:`Projections.index_beside` gives its
    copies (``_`` and hex digits: generated names have no ``_`` of their own)."""
    return collection.partition("_")[0]


def _of_generation(backend: VectorBackend, live: Live) -> list[str]:
    """The existing collections of ``live``'s generation: its two, and any copies of them
    (live or not) :meth:`Projections.index_beside` made."""
    bases = {_base(live.memories), _base(live.entities)}
    return [name for name in backend.collections() if _base(name) in bases]


def read_pointer(home: Path) -> Live | None:
    path = home / POINTER
    if not path.exists():
        return None
    try:
        return msgspec.json.decode(path.read_bytes(), type=Live)
    except msgspec.DecodeError as exc:
        log.warning("projections: %s is unreadable (%s); rebuilding", path, exc)
        return None


def write_pointer(home: Path, live: Live) -> None:
    replace_durably(home / POINTER, msgspec.json.format(msgspec.json.encode(live)))


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


def read_model_at(
    journal: JournalBackend,
    path: Path,
    position: int,
    *,
    rules: Rules = NO_RULES,
    progress: Progress | None = None,
) -> ReadModel:
    """A read model of the journal's records up to ``position``, built afresh at ``path``
    (SQLite only, no vectors) by the one fold, as a replay builds the live one. It needs
    nothing but the journal, which any process may read: a backup taken while a server owns
    the home reads one of these, whole at one journal position."""
    remove_sqlite(path)
    model = ReadModel.open(path, rules=rules)
    try:
        for chunk in chunks(journal.read(), BATCH):
            model.apply([r for r in chunk if r.position <= position])
            if progress is not None:
                progress(min(chunk[-1].position, position), position)
            if chunk[-1].position >= position:
                break
    except BaseException:
        model.close()
        remove_sqlite(path)
        raise
    return model


def remove_sqlite(path: Path) -> None:
    """Delete an SQLite file with its WAL and shared-memory files, if they exist."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


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
        self.live = live
        self.read_model = ReadModel.open(home / live.sqlite, rules=rules)
        self.sink = VectorSink(
            backend,
            Collections(live.memories, live.entities),
            encoders,
            self.read_model.episode_before,
        )
        self._qdrant_applied = self.read_model.checkpoint(QDRANT)
        self._holding = 0  # open holding_sync blocks
        self._held_from = 0  # the vector position when the outermost one began
        self.gate = Gate()
        self._later: threading.Timer | None = None  # the sync _sync_later scheduled
        self._later_lock = threading.Lock()
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
        reason = cls._unusable(home, backend, encoders, rules, live)
        if reason is not None:
            if before_build is not None:
                before_build(reason)
            # A first start is routine; anything else is worth a warning.
            level = logging.INFO if live is None else logging.WARNING
            log.log(level, "projections: rebuilding from the journal: %s", reason)
            live = cls._build(home, journal, backend, encoders, rules, live, progress)
        assert live is not None
        projections = cls(home, journal, backend, encoders, live, rules)
        checkpoint = projections.read_model.checkpoint()
        head = journal.refresh().position
        if checkpoint > head:
            projections.close()
            log.warning(
                "projections: checkpoint %d is ahead of the journal head %d; rebuilding",
                checkpoint,
                head,
            )
            if before_build is not None:
                before_build(f"checkpoint {checkpoint} is ahead of the journal head {head}")
            live = cls._build(home, journal, backend, encoders, rules, live, progress)
            projections = cls(home, journal, backend, encoders, live, rules)
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
        live = cls._build(home, journal, backend, encoders, rules, read_pointer(home), progress)
        return cls(home, journal, backend, encoders, live, rules)

    @staticmethod
    def _unusable(
        home: Path, backend: VectorBackend, encoders: Encoders, rules: Rules, live: Live | None
    ) -> str | None:
        if live is None:
            return "no projections yet"
        if live.schema_version != SCHEMA_VERSION:
            return f"read model schema {live.schema_version} -> {SCHEMA_VERSION}"
        if live.vector_version != VECTOR_VERSION:
            return f"vector projection version {live.vector_version} -> {VECTOR_VERSION}"
        if live.encoders != encoders.identity:
            return f"encoders changed ({live.encoders} -> {encoders.identity})"
        if live.rules != rules.identity:
            return f"derivation rules changed ({live.rules!r} -> {rules.identity!r}): a backfill"
        if not (home / live.sqlite).exists():
            return f"the read model {live.sqlite} is missing"
        collections = set(backend.collections())
        if live.memories not in collections or live.entities not in collections:
            return "a Qdrant collection is missing"
        try:
            ReadModel.open(home / live.sqlite).close()
        except ReadModelError as exc:
            return str(exc)
        return None

    @staticmethod
    def _build(
        home: Path,
        journal: JournalBackend,
        backend: VectorBackend,
        encoders: Encoders,
        rules: Rules,
        old: Live | None,
        progress: Progress | None,
    ) -> Live:
        """Build a new generation from position 0, switch to it, drop the old one."""
        number = (old.generation if old else 0) + 1
        live = plan_generation(number, encoders, rules, tag=home_tag(home))
        # Leftovers of a rebuild that crashed before its switch.
        remove_sqlite(home / live.sqlite)
        for name in (live.memories, live.entities):
            if name in backend.collections():
                backend.drop_collection(name)
        collections = Collections(live.memories, live.entities)
        if splits(journal, encoders):
            sink = VectorSink(backend, collections, encoders)
            sink.ensure()
            with backend.bulk(live.memories), backend.bulk(live.entities):
                apply_split(journal, home / live.sqlite, rules, sink, progress)
        else:
            read_model = ReadModel.open(home / live.sqlite, rules=rules)
            try:
                sink = VectorSink(backend, collections, encoders, read_model.episode_before)
                sink.ensure()
                # One flush at the end instead of one per batch: an interrupted build is
                # discarded (the pointer still names the old generation), never resumed.
                with backend.bulk(live.memories), backend.bulk(live.entities):
                    _apply_all(journal, read_model, sink, after=0, progress=progress)
            finally:
                read_model.close()
        if old is not None:
            # Served from its files, as a new process would open it: an embedded shard
            # filled in this process answers slower while it stays open (EdgeBackend.release).
            # Not after a first build: a new home's first store then left more free space
            # after its process ended than before (tests/e2e/test_disk_full.py), not yet
            # understood.
            backend.release(live.memories)
            backend.release(live.entities)
        write_pointer(home, live)
        if old is not None and old.generation != live.generation:
            remove_sqlite(home / old.sqlite)
            # Its collections, and any copy Projections.index_beside left of them.
            for name in _of_generation(backend, old):
                backend.drop_collection(name)
        return live

    def rebuild(self, progress: Progress | None = None) -> Live:
        """``ferrex replay``: a fresh generation from the journal, switched in atomically."""
        old = self.live
        new = self._build_beside(old, progress)
        with self.gate.exclusive():
            self.read_model.close()
            self.live = new
            self.read_model = ReadModel.open(self.home / new.sqlite, rules=self.rules)
            self.sink = VectorSink(
                self.backend,
                Collections(new.memories, new.entities),
                self.encoders,
                self.read_model.episode_before,
            )
            self._qdrant_applied = self.read_model.checkpoint(QDRANT)
        return new

    def _build_beside(self, old: Live, progress: Progress | None) -> Live:
        # The old read model stays open (and serving) until the switch.
        return self._build(
            self.home, self.journal, self.backend, self.encoders, self.rules, old, progress
        )

    def index_beside(
        self,
        build: Callable[[list[str]], dict[str, bool]],
        *,
        before_copy: Callable[[list[str]], None] | None = None,
    ) -> list[str]:
        """Index the live vector collections that :meth:`VectorBackend.unindexed` says are
        due, on copies, while these go on serving; then switch the copies in. Returns the
        collections switched in (none: nothing was due, or the build changed nothing).

        ``build(names)`` builds the indexes of the copies (in another process: see
        :mod:`projections.indexing`) and says which changed; ``before_copy(names)`` may
        refuse the copies by raising (ferrex checks its free-space reserve). The steps:

        1. Under the gate: the vector writes made durable, both collections copied (no
           write can land meanwhile; both, so that step 3 writes only into copies), and the
           vector position ``at`` noted.
        2. Without it: ``build``; stores and recalls go on against the live collections.
        3. A sink of the copies applies what the live collections gained since ``at``, a
           few records per hold of the shared gate (:meth:`_catch_up_copies`).
        4. Under the journal's writer lock and the gate: the Qdrant checkpoint set back to
           where step 3 got and the sink of the copies made the live one, so a catch-up
           applies the rest (vector writes are idempotent); the copies made durable; then
           the pointer file names them. The old collections are dropped after.

        A crash before the pointer is written leaves the old collections live with a
        checkpoint at or before what they hold (applied again at the next start); one after
        leaves the copies live, durable at the checkpoint. A copy left by a crash is removed
        by the next call, and by the next rebuild."""
        backend = self.backend
        with self.gate.shared():  # a read: stores and recalls go on
            live = self.live
            due = [n for n in (live.memories, live.entities) if self._index_due(n)]
        if not due:
            return []
        began = time.perf_counter()
        with self.gate.exclusive():
            if self._holding or self._closed or self.live != live:
                return []
            self._drop_copies(live)
            if before_copy is not None:
                before_copy([live.memories, live.entities])
            self.sync()
            at = self._qdrant_applied
            # Both collections, so that the catch-up below writes only into copies.
            copies = {
                name: f"{_base(name)}_{secrets.token_hex(4)}"
                for name in (live.memories, live.entities)
            }
            try:
                for name, copy in copies.items():
                    backend.copy_collection(name, copy)
            except BaseException:
                self._drop_copies(live)
                raise
        copied = time.perf_counter()
        new = msgspec.structs.replace(
            live, memories=copies[live.memories], entities=copies[live.entities]
        )
        sink = VectorSink(
            backend,
            Collections(new.memories, new.entities),
            self.encoders,
            self.read_model.episode_before,
        )
        try:
            changed = build(list(copies.values()))
            built = time.perf_counter()
            if not any(changed.values()):  # nothing to switch in
                with self.gate.exclusive():
                    self._drop_copies(self.live)
                return []
            for copy in copies.values():
                # Opened here, not while a write waits. Edge holds the interpreter while it
                # loads a shard (0.5 s at 100k memories): every thread waits once.
                backend.count(copy)
            near, early = self._catch_up_copies(sink, at)
        except BaseException:
            with self.gate.exclusive():
                self._drop_copies(self.live)
            raise
        near_at = time.perf_counter()
        # The journal's writer lock before the gate, in the order a write takes them: the
        # catch-up below reads what other writers appended.
        with self.journal.exclusive(), self.gate.exclusive():
            locked = time.perf_counter()
            if self._closed or self.live != live:  # closed, or rebuilt meanwhile
                self._drop_copies(self.live)
                return []
            old_sink, old_at = self.sink, self._qdrant_applied
            try:
                self.sync()
                self.read_model.set_checkpoint(QDRANT, near)
                self._qdrant_applied = near
                self.sink = sink
                late = self._catch_up(None)
                # Forced: what _catch_up_copies wrote is not durable yet either.
                self.sink.sync()
                self.read_model.set_checkpoint(QDRANT, self._qdrant_applied)
                write_pointer(self.home, new)
            except BaseException:
                # The old collections hold everything up to old_at, durably (the first sync).
                self.sink, self._qdrant_applied = old_sink, old_at
                self.read_model.set_checkpoint(QDRANT, old_at)
                self._drop_copies(live)
                raise
            self.live = new
        switched = time.perf_counter()
        # No read or write names the old collections any more: dropped without the gate.
        for name in copies:
            backend.drop_collection(name)
        log.info(
            "projections: indexed %s on copies: copied in %.2f s, built in %.2f s, caught up"
            " in %.2f s (%d records), switched in %.2f s (%d records; %.2f s waiting for the"
            " locks)",
            ", ".join(copies), copied - began, built - copied, near_at - built, early,
            switched - locked, late, locked - near_at,
        )  # fmt: skip
        return list(copies.values())

    def _index_due(self, name: str) -> bool:
        """Whether ``name`` has vectors worth indexing: a segment's worth that ``optimize``
        would index (:meth:`VectorBackend.unindexed`), and at least :data:`INDEX_SHARE` of its
        points, since each build copies the whole collection (3 GB at a million memories,
        seconds during which calls wait) to index what came since the last one."""
        unindexed = self.backend.unindexed(name)
        return unindexed > 0 and unindexed >= INDEX_SHARE * self.backend.count(name)

    def _catch_up_copies(self, sink: VectorSink, at: int) -> tuple[int, int]:
        """Apply to ``sink`` (the copies) the records after ``at`` that the live collections
        hold, a few at a time under the shared gate, so that the switch has little left to
        apply while everything waits; (the position reached, records applied). Reads go on
        meanwhile, and a write's apply waits at most one chunk."""
        applied = 0
        # One read of the journal for as long as it lasts (each read decodes its segment
        # from the start, 0.1 s and more at 100k records); a new one for what came after.
        records: Iterator[Record] = iter(())
        while True:
            with self.gate.shared(), self.read_model.snapshot():
                upto = self._qdrant_applied
                if at >= upto:
                    break
                chunk = list(itertools.islice(records, _COPY_CHUNK))
                if not chunk:
                    records = self.journal.read(after=at)
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

    def _drop_copies(self, live: Live) -> None:
        """Remove the collections of ``live``'s generation that are not live: copies
        :meth:`index_beside` made and did not switch in, or the ones it switched out, left
        by a crash or a failed build. One another process still holds is left for the next
        time."""
        keep = {live.memories, live.entities}
        for name in _of_generation(self.backend, live):
            if name not in keep:
                try:
                    self.backend.drop_collection(name)
                except VectorStoreError as exc:
                    log.warning("projections: could not remove the copy %s: %s", name, exc)

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
        applied, self._qdrant_applied = _apply_all(
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
                self._sync_later()
        if due:
            self.sync()
        return applied

    def _sync_later(self) -> None:
        """Have the vector writes made durable :data:`SYNC_SECONDS` from now on a thread of
        their own, unless that is arranged already. A store used to flush Qdrant itself when
        it came a second or more after the last flush: an agent's store, which comes seconds
        apart, then waited for the flush every time (10 ms at the median at 10k memories,
        up to 120)."""
        with self._later_lock:
            if self._later is not None or self._closed:
                return
            timer = threading.Timer(SYNC_SECONDS, self._sync_due)
            timer.name, timer.daemon = "ferrex-vector-sync", True
            self._later = timer
            timer.start()

    def _sync_due(self) -> None:
        with self._later_lock:
            self._later = None
        try:
            with self.gate.exclusive():
                # An import's block makes its writes durable when it ends; a closed
                # projection made them durable as it closed.
                if not self._holding and not self._closed:
                    self.sync()
        except Exception as exc:  # the journal holds them: the next sync, or a restart
            log.warning("making the vector writes durable failed: %s", exc, exc_info=True)

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
                        self.backend.release(self.live.memories)
                        self.backend.release(self.live.entities)

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
        with self._later_lock:
            self._closed = True
            if self._later is not None:
                self._later.cancel()
                self._later = None
        with self.gate.exclusive():  # a scheduled sync already running ends first
            try:
                self.sync()
            finally:
                self.read_model.close()


def _apply_all(
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


def splits(journal: JournalBackend, encoders: Encoders) -> bool:
    """Whether a rebuild applies the read model in a forked child (:func:`apply_split`).

    Only where that is safe and worth it: a journal in files (a child reads them on its own;
    a PostgreSQL connection must not cross a fork), turns embedded without their neighbour
    (with ``context_chars`` the vectors ask the read model being built for it), no other
    Python thread (none can be inside SQLite, holding one of its locks, at the fork), and
    enough records to repay the fork."""
    return (
        hasattr(os, "fork")
        and isinstance(journal, Journal)
        and not encoders.context_chars
        and threading.active_count() == 1
        and journal.refresh().position >= SPLIT_RECORDS
    )


def apply_split(
    journal: JournalBackend, path: Path, rules: Rules, sink: VectorSink, progress: Progress | None
) -> None:
    """A rebuild on two cores: a forked child reads the journal and applies it to the new read
    model at ``path``, and computes the BM25 vectors of its memories' texts and whether they
    fit the dense model's window, while this process reads it again and writes the vectors
    (taking the child's answers batch by batch); then the Qdrant checkpoint is recorded as
    :func:`_apply_all` leaves it.

    The two are independent consumers of the same records (without neighbour context the
    vectors read nothing of the read model, and a BM25 vector and a window check depend on
    the text alone), so the result is the one-process result; what the child did not send
    (an entity's spelling, a procedure's parts) is computed here. A failure on either side
    fails the rebuild, which is discarded like any interrupted one; a child whose parent died
    stops at its next batch."""
    ReadModel.open(path, rules=rules).close()  # the schema, made once, before the fork
    child, pipe = _fork_read_model(journal, path, rules, sink.encoders)
    feed = _SparseFeed(os.fdopen(pipe, "rb"), sink.encoders)
    sink.encoders = dataclasses.replace(sink.encoders, sparse=feed.sparse, fits=feed.fits)
    try:
        vectors_at = 0
        total = max(journal.refresh().position, 0)
        done = 0
        for chunk in chunks(journal.read(after=0), BATCH):
            feed.next_batch()
            sink.apply(chunk)
            vectors_at = chunk[-1].position
            done += len(chunk)
            if progress is not None:
                progress(done, max(total, done))
    except BaseException:
        os.kill(child, signal.SIGKILL)
        feed.close()
        os.waitpid(child, 0)
        raise
    failure = feed.finish()
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise ReadModelError(f"rebuilding the read model {path.name} failed: {failure}")
    read_model = ReadModel.open(path, rules=rules)
    try:
        if vectors_at:
            read_model.set_checkpoint(QDRANT, vectors_at)
    finally:
        read_model.close()


_SPARSE = b"S"
_FAILED = b"F"
_FRAME = struct.Struct("<cI")
"""A frame from the child: its kind and the length of what follows."""
_PIPE_BYTES = 1 << 20
"""The pipe's buffer (Linux's default ceiling for an unprivileged process): the child may run
this far ahead of the parent before it waits."""
_Vectors = list[tuple[str, tuple[int, ...], tuple[float, ...], bool | None]]
"""A batch's memory texts, each with its BM25 vector and whether it fits the dense model's
window (None: not asked, a procedure's parts are asked by their own texts)."""


class _SparseFeed:
    """The parent's end of the child's pipe: one frame of BM25 vectors and window checks per
    batch, in the order the child applied the batches, then at most one frame saying why it
    failed. What a frame does not hold is computed here."""

    def __init__(self, pipe: BinaryIO, encoders: Encoders) -> None:
        self._pipe = pipe
        self._encode = encoders.sparse
        self._fits = encoders.fits
        self._batch: dict[str, SparseVector] = {}
        self._fitting: dict[str, bool] = {}
        self._decoder = msgspec.msgpack.Decoder(_Vectors)
        self._failure = ""

    def _frame(self) -> tuple[bytes, bytes] | None:
        head = self._pipe.read(_FRAME.size)
        if len(head) < _FRAME.size:
            return None
        kind, length = _FRAME.unpack(head)
        return kind, self._pipe.read(length)

    def next_batch(self) -> None:
        """The next batch's vectors (none once the child stopped sending)."""
        self._batch, self._fitting = {}, {}
        if self._failure or self._pipe.closed:
            return
        frame = self._frame()
        if frame is None:
            self._failure = "it exited early"
        elif frame[0] == _FAILED:
            self._failure = frame[1].decode(errors="replace")
        else:
            for text, indices, values, fits in self._decoder.decode(frame[1]):
                self._batch[text] = SparseVector(indices, values)
                if fits is not None:
                    self._fitting[text] = fits

    def sparse(self, text: str) -> Any:
        found = self._batch.get(text)
        return found if found is not None else self._encode(text)

    def fits(self, text: str) -> bool:
        found = self._fitting.get(text)
        return found if found is not None else self._fits(text)

    def finish(self) -> str:
        """Read to the end; why the child failed ("" if it did not say)."""
        while not self._failure and (frame := self._frame()) is not None:
            if frame[0] == _FAILED:
                self._failure = frame[1].decode(errors="replace")
        self.close()
        return self._failure

    def close(self) -> None:
        self._pipe.close()


def _fork_read_model(
    journal: JournalBackend, path: Path, rules: Rules, encoders: Encoders
) -> tuple[int, int]:
    """Fork a child that applies the whole journal to the read model at ``path`` and sends
    each batch's BM25 vectors; returns its pid and the read end of its pipe."""
    parent = os.getpid()
    readable, writable = os.pipe()
    with contextlib.suppress(AttributeError, OSError):  # Linux: a few batches ahead, not one
        fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    with warnings.catch_warnings():
        # Python 3.12 warns of any fork with other threads; the checks of ``splits`` and
        # the child's confinement (its own SQLite file and the journal's files, then
        # ``os._exit``) are what make this one safe.
        warnings.filterwarnings("ignore", r".*multi-threaded.*fork", DeprecationWarning)
        pid = os.fork()
    if pid:
        os.close(writable)
        return pid, readable
    # The child: never returns, never runs the parent's exit handlers.
    os.close(readable)
    code = 1
    with os.fdopen(writable, "wb") as out:
        try:
            _apply_read_model(journal, path, rules, encoders, out, parent)
            code = 0
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}".encode(errors="replace")[:4096]
            with contextlib.suppress(OSError):
                out.write(_FRAME.pack(_FAILED, len(message)) + message)
                out.flush()
        finally:
            os._exit(code)


def _apply_read_model(
    journal: JournalBackend,
    path: Path,
    rules: Rules,
    encoders: Encoders,
    out: BinaryIO,
    parent: int,
) -> None:
    encoder = msgspec.msgpack.Encoder()
    read_model = ReadModel.open(path, rules=rules)
    try:
        for chunk in chunks(journal.read(after=0), BATCH):
            if os.getppid() != parent:
                raise RuntimeError("the rebuilding process is gone")
            read_model.apply(chunk)
            vectors = []
            for record in chunk:
                for event in record.events:
                    if isinstance(event, MemoryStored) and event.body is not None:
                        text = memory_text(event.memory_type, event.body)
                        sparse = encoders.sparse(text)
                        procedure = event.memory_type == "procedural"
                        fits = None if procedure else encoders.fits(text)
                        vectors.append((text, tuple(sparse.indices), tuple(sparse.values), fits))
            data = encoder.encode(vectors)
            out.write(_FRAME.pack(_SPARSE, len(data)) + data)
            out.flush()
    finally:
        read_model.close()
