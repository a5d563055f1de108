"""The read model's file: its connections, snapshots, metadata and checkpoints.

- WAL mode and a busy timeout let several processes share the file.
- Reads may run in many threads at once: inside :meth:`Store.snapshot` every query of that
  thread goes through the thread's own read-only connection, in one WAL read transaction, so
  it sees one committed state (never half of an apply) while another thread applies. Outside
  a snapshot the queries use the writer's connection (:attr:`Store.db`).
- Writes run in :func:`immediate`: the write lock taken up front, a full disk reported as
  :class:`ReadModelFull`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from journal.files import create_private_file, make_private_dir
from projections.readmodel import schema
from projections.rows import Spelling

SQLITE = "sqlite"
"""The read model's own checkpoint name."""


class ReadModelError(Exception):
    """The read model file cannot be used (corrupt, or written by another schema)."""


class ReadModelFull(ReadModelError):
    """The disk holding the read model is full: a write transaction was rolled back."""


def _on_read_only_disk(path: Path) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


class Store:
    """One read model file. Open with :meth:`open`; close when done."""

    def __init__(
        self,
        path: Path,
        connection: apsw.Connection,
        *,
        busy_timeout_ms: int = 10_000,
        immutable: bool = False,
    ) -> None:
        self.path = path
        self._primary = connection
        self._busy_timeout_ms = busy_timeout_ms
        self._immutable = immutable
        self._local = threading.local()  # this thread's reader connection and snapshot depth
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        # namespace → (spelling generation, its spellings): a store resolves its names
        # against every spelling of the namespace, ~0.24 s to read at 30k spellings.
        self.spelling_cache: dict[str, tuple[int, tuple[Spelling, ...]]] = {}

    @property
    def db(self) -> apsw.Connection:
        """The connection this thread's queries use: its snapshot's, else the writer's."""
        snapshot: apsw.Connection | None = getattr(self._local, "snapshot", None)
        return self._primary if snapshot is None else snapshot

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Run this thread's queries on one committed state of the file (re-entrant).

        A WAL read transaction on the thread's own read-only connection: applies in other
        threads or processes go on, and are seen by the next snapshot."""
        if getattr(self._local, "snapshot", None) is not None:
            yield
            return
        reader = self._reader()
        try:
            reader.execute("BEGIN")
            # The snapshot is fixed by the first read of the transaction, not by BEGIN.
            reader.execute("SELECT count(*) FROM checkpoints").fetchall()
        except apsw.Error as exc:
            if reader.in_transaction:
                reader.execute("ROLLBACK")
            raise ReadModelError(f"cannot read the read model {self.path}: {exc}") from exc
        self._local.snapshot = reader
        try:
            yield
        finally:
            self._local.snapshot = None
            reader.execute("ROLLBACK")  # a read transaction: nothing to keep

    def _reader(self) -> apsw.Connection:
        reader: apsw.Connection | None = getattr(self._local, "reader", None)
        if reader is None:
            try:
                # apsw refuses a connection busy in another thread: each thread has its own.
                if self._immutable:
                    reader = apsw.Connection(
                        f"file:{self.path}?immutable=1",
                        flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
                    )
                else:
                    reader = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
                reader.setbusytimeout(self._busy_timeout_ms)
            except apsw.Error as exc:
                raise ReadModelError(f"cannot open the read model {self.path}: {exc}") from exc
            with self._readers_lock:
                self._readers.append(reader)
            self._local.reader = reader
        return reader

    @classmethod
    def open(cls, path: Path, *, busy_timeout_ms: int = 10_000) -> Store:
        """Open (creating it if need be) the file at ``path``, its schema brought up to date;
        on a read-only disk, an immutable file for queries only."""
        if path.exists() and _on_read_only_disk(path):
            return cls._open_immutable(path)
        make_private_dir(path.parent)
        create_private_file(path)  # SQLite gives its -wal and -shm files this file's mode
        try:
            db = apsw.Connection(str(path))
            db.setbusytimeout(busy_timeout_ms)
            db.pragma("journal_mode", "wal")
            db.pragma("synchronous", "normal")
            db.pragma("foreign_keys", 0)
            # A statement journal (a write whose triggers touch several rows) stays in memory,
            # not a temporary file under /var/tmp written and dropped on every store.
            db.pragma("temp_store", "memory")
            # An INSERT OR REPLACE of a memory fires the delete trigger of the row it replaces.
            db.pragma("recursive_triggers", 1)
            with immediate(db):
                schema.create(db)
        except apsw.Error as exc:
            raise ReadModelError(f"cannot open the read model {path}: {exc}") from exc
        return cls(path, db, busy_timeout_ms=busy_timeout_ms)

    @classmethod
    def _open_immutable(cls, path: Path) -> Store:
        # On a read-only disk SQLite cannot create the -shm file a WAL database needs; nothing
        # can change the file there, so it is opened as immutable (queries only).
        try:
            db = apsw.Connection(
                f"file:{path}?immutable=1",
                flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
            )
            db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchall()
        except apsw.Error as exc:
            raise ReadModelError(f"cannot open the read model {path} (read-only): {exc}") from exc
        return cls(path, db, immutable=True)

    def close(self) -> None:
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()
        self._primary.close()

    # -- metadata and checkpoints -----------------------------------------------------------

    def meta(self, key: str) -> str | None:
        value = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).get
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        with immediate(self.db):
            self.db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, value),
            )

    @property
    def schema_version(self) -> int:
        return int(self.meta("schema_version") or 0)

    def checkpoint(self, name: str = SQLITE) -> int:
        return _checkpoint(self.db, name)

    def set_checkpoint(self, name: str, position: int) -> None:
        """Record another sink's checkpoint (Qdrant's), after its write was acknowledged."""
        with immediate(self.db):
            self.write_checkpoint(name, position)

    def write_checkpoint(self, name: str, position: int) -> None:
        """Record a checkpoint inside the caller's transaction."""
        self.db.execute(
            "INSERT INTO checkpoints (name, position) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET position=excluded.position",
            (name, position),
        )


def applied_at(path: Path, name: str = SQLITE) -> int:
    """The journal position a read model file has applied (0: none, or unreadable), read
    without opening it for writing or running its migrations."""
    if not path.is_file():
        return 0
    try:
        db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return _checkpoint(db, name)
        finally:
            db.close()
    except apsw.Error:
        return 0


def _checkpoint(db: apsw.Connection, name: str) -> int:
    """The position a sink's checkpoint row names (0: none yet)."""
    value = db.execute("SELECT position FROM checkpoints WHERE name=?", (name,)).get
    return int(value) if value is not None else 0


@contextmanager
def immediate(db: apsw.Connection) -> Iterator[None]:
    """A write transaction that takes the write lock up front (no upgrade deadlocks)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException as exc:
        if not db.getautocommit():  # still open (a failed COMMIT may have ended it)
            db.execute("ROLLBACK")
        if isinstance(exc, apsw.FullError):
            raise ReadModelFull(f"the disk holding the read model is full: {exc}") from exc
        raise
