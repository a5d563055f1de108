"""The persistent embedding cache: vectors by (model identity, text hash), shared by processes.

Embedding is the expensive part of a rebuild; with this cache a replay re-embeds only texts
it has never seen (DESIGN.md section 3). Vectors of two model identities never mix.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import apsw
import numpy as np
from numpy.typing import NDArray

from ferrex.errors import BackendUnavailable
from ferrex.models.identity import ModelIdentity
from journal.files import create_private_file, make_private_dir

_BUSY_TIMEOUT_MS: Final = 10_000
_LOOKUP_CHUNK: Final = 500
UNWRITABLE: Final = (apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.CantOpenError)
"""What a cache write meets on a full (SQLITE_FULL, or ENOSPC as an I/O error) or read-only
disk: the write is dropped, since every vector can be made again."""
log = logging.getLogger("ferrex")


def _switch_to_wal(db: apsw.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, retried while busy: two processes opening a fresh cache
    at once can get SQLITE_BUSY at once, without the busy handler (SQLite's deadlock
    avoidance), from this one statement."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def cache_path(home: Path) -> Path:
    # v2: rowid table, model ids (the first version stored 4.7 KB a vector, this ~2 KB).
    return home / "cache" / "embeddings-v2.sqlite3"


_OLD_CACHE_NAMES = ("embeddings.sqlite3",)


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: int
    misses: int


def text_key(text: str) -> bytes:
    """The cache key of a text: SHA-256 of its UTF-8 bytes, exactly as given."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Vectors by (model identity, text hash) in an SQLite file several processes may share.

    WAL lets readers run while one process writes; writes take ``BEGIN IMMEDIATE`` and wait
    out a busy peer (busy timeout) instead of failing. ``hits``/``misses`` count distinct keys
    looked up by this object.
    """

    def __init__(self, path: Path) -> None:
        make_private_dir(path.parent)
        create_private_file(path)  # before SQLite creates it with the umask's mode
        self.path = path
        self.hits = 0
        self.misses = 0
        self._unwritable = False  # the last write failed (and was logged)
        self._db = apsw.Connection(str(path))
        # apsw refuses a connection busy in another thread: one statement at a time.
        self._lock = threading.Lock()
        self._model_ids: dict[str, int] = {}
        try:
            self._prepare(path)
        except BaseException:
            self._db.close()
            raise

    def _prepare(self, path: Path) -> None:
        self._db.set_busy_timeout(_BUSY_TIMEOUT_MS)
        _switch_to_wal(self._db)
        # Losing the newest cache rows on power loss is harmless: they are recomputed.
        self._db.execute("PRAGMA synchronous=NORMAL")
        # A rowid table keeps each 1.5 KB vector in its leaf page (a WITHOUT ROWID table
        # spilled every row to an overflow page), and models are referred to by a small id.
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL);"
            "CREATE TABLE IF NOT EXISTS vectors ("
            " model INTEGER NOT NULL, text_sha256 BLOB NOT NULL, vector BLOB NOT NULL);"
            "CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors (model, text_sha256);"
        )
        for name in _OLD_CACHE_NAMES:  # an older cache format: its vectors are re-made
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    (path.parent / f"{name}{suffix}").unlink()

    def _model_id(self, identity: ModelIdentity, *, create: bool) -> int | None:
        key = identity.key
        if key not in self._model_ids:
            row = self._db.execute("SELECT id FROM models WHERE key = ?", (key,)).fetchone()
            if row is None:
                if not create:
                    return None
                self._db.execute("INSERT OR IGNORE INTO models (key) VALUES (?)", (key,))
                row = self._db.execute("SELECT id FROM models WHERE key = ?", (key,)).fetchone()
            assert row is not None
            self._model_ids[key] = int(row[0])
        return self._model_ids[key]

    def get_many(
        self, identity: ModelIdentity, keys: Iterable[bytes]
    ) -> dict[bytes, NDArray[np.float32]]:
        with self._lock:
            return self._get(identity, keys)

    def _get(
        self, identity: ModelIdentity, keys: Iterable[bytes]
    ) -> dict[bytes, NDArray[np.float32]]:
        wanted = list(dict.fromkeys(keys))
        found: dict[bytes, NDArray[np.float32]] = {}
        model = self._model_id(identity, create=False)
        for start in range(0, len(wanted) if model is not None else 0, _LOOKUP_CHUNK):
            chunk = wanted[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                "SELECT text_sha256, vector FROM vectors"
                f" WHERE model = ? AND text_sha256 IN ({marks})",
                (model, *chunk),
            )
            for key, blob in rows:
                assert isinstance(key, bytes) and isinstance(blob, bytes)
                # A row of another length is not this model's vector: treat it as a miss.
                if len(blob) == 4 * identity.dim:
                    found[key] = np.frombuffer(blob, dtype="<f4")
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        return found

    def put_many(
        self, identity: ModelIdentity, items: Iterable[tuple[bytes, NDArray[np.float32]]]
    ) -> bool:
        """Add vectors, best effort: on a full or read-only disk nothing is added, the
        failure is logged (once per cache object until a write succeeds again) and False is
        returned. The cache only saves work, so it never fails the store or recall that
        embedded the texts; a store is then refused by the free-space reserve, under the
        writer lock, before anything of it is written (``ferrex.home_safety.check_reserve``)."""
        pairs = list(items)
        if not pairs:
            return True
        with self._lock:
            try:
                self._put(identity, pairs)
            except UNWRITABLE as exc:
                if not self._unwritable:
                    self._unwritable = True
                    log.warning("the embedding cache %s cannot be written (%s); vectors are "
                                "embedded again until it can", self.path, exc)  # fmt: skip
                return False
            self._unwritable = False
            return True

    def _put(self, identity: ModelIdentity, pairs: list[tuple[bytes, NDArray[np.float32]]]) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            model = self._model_id(identity, create=True)
            rows = [(model, key, np.asarray(v, dtype="<f4").tobytes()) for key, v in pairs]
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (model, text_sha256, vector) VALUES (?, ?, ?)",
                rows,
            )
            self._db.execute("COMMIT")  # on a full disk, this is where SQLITE_FULL comes
        except BaseException:
            self._model_ids.clear()  # a model row inserted here was rolled back too
            if self._db.in_transaction:  # (SQLite may have rolled back already)
                self._db.execute("ROLLBACK")
            raise

    def forget(self, keys: Iterable[bytes]) -> int:
        """Delete the vectors of these texts (under every model) and rewrite the file, so
        that no copy of a deleted row is left in a free page, in unused space of a page or
        in the WAL. Returns the rows deleted. The file is rewritten even when no row was
        left to delete (a run stopped after the delete, before the rewrite); with no keys,
        nothing is written.

        Raises BackendUnavailable when another process keeps the WAL from being emptied.
        """
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return 0
        deleted = 0
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                chunk = wanted[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                self._db.execute(f"DELETE FROM vectors WHERE text_sha256 IN ({marks})", chunk)
                deleted += self._db.changes()
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        # VACUUM rebuilds every page (older copies of a row can sit in the unused space of
        # pages it left); the checkpoint then copies the result over the file and empties
        # the WAL, which held the pages as they were before.
        self._db.execute("VACUUM")
        row = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if row is None or row[0] != 0:
            raise BackendUnavailable(
                f"the embedding cache {self.path} is in use by another process, so its "
                "write-ahead log still holds deleted vectors",
                hint="stop the other ferrex process and run the command again",
            )
        return deleted

    def count(self) -> int:
        for (total,) in self._db.execute("SELECT count(*) FROM vectors"):
            assert isinstance(total, int)
            return total
        return 0

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses)

    def close(self) -> None:
        self._db.close()
