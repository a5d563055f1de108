"""The journal on PostgreSQL: the same records as the file journal, in three tables.

Chosen by ``journal.url = "postgresql://…"``; several ferrex servers, on several machines,
share one log this way, each keeping its own projections.

Schema (version :data:`SCHEMA_VERSION`, in the connection's current schema)::

    ferrex_journal_meta     key text primary key, value text      ('schema_version', …)
    ferrex_journal_head     one row (id = 1): position, hash, recorded_at, newest_version
    ferrex_journal_records  position bigint primary key, frame bytea

``frame`` holds exactly the bytes the file journal writes for a record (``journal.record``):
the same magic, checksum, position, previous hash and payload, so a record hashes, verifies
and exports the same whichever backend holds it, and ``ferrex journal copy`` moves frames
without re-encoding them.

Invariants:

- An append (or a batch) is one transaction: it locks the head row, numbers its records from
  the head, chains them to the head's hash, moves the head and commits synchronously
  (``synchronous_commit = on``). It returns only after the commit; positions stay unique and
  contiguous and the chain intact with writers on several machines. If PostgreSQL goes away
  before the commit, the transaction is rolled back whole: nothing half-written, ever.
- ``exclusive()`` holds a session advisory lock (:data:`LOCK_KEY`) on the writer connection;
  every append takes the same lock for its transaction, so no one appends between a holder's
  read and its append. The lock dies with the session: a killed writer never leaves it held.
- A committed append notifies channel :data:`CHANNEL` (delivered at commit); followers LISTEN
  and also poll, so a lost notification (a dropped connection) only delays.
- The schema is created in an empty database, and refused — before anything is written —
  when it is partial, foreign, or of a newer ferrex (:class:`JournalTooNew`, with its version).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from journal.errors import (
    EncodeError,
    JournalConnectError,
    JournalDamaged,
    JournalError,
    JournalFormatError,
    JournalTooNew,
    JournalUnavailable,
)
from journal.events import Event, MemoriesForgotten, utc_now
from journal.log import Head
from journal.pg_connect import REFUSED, connect, connect_error, display, driver, first_line
from journal.pg_verify import verify_rows
from journal.record import (
    FORMAT_VERSION,
    GENESIS_HASH,
    Record,
    body_problems,
    check_frame,
    continuing_frame,
    decode_frames,
    decode_record,
    encode_record,
    frame_version,
    head_bytes,
    redact_frame,
)
from journal.verify import VerifyReport

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("journal")

SCHEMA_VERSION = 1
META = "ferrex_journal_meta"
HEAD = "ferrex_journal_head"
RECORDS = "ferrex_journal_records"
COLUMNS: dict[str, dict[str, str]] = {
    META: {"key": "text", "value": "text"},
    HEAD: {
        "id": "integer",
        "position": "bigint",
        "hash": "bytea",
        "recorded_at": "timestamp with time zone",
        "newest_version": "integer",
    },
    RECORDS: {"position": "bigint", "frame": "bytea"},
}
CREATE = (
    f"CREATE TABLE {META} (key text PRIMARY KEY, value text NOT NULL)",
    f"CREATE TABLE {HEAD} (id integer PRIMARY KEY CHECK (id = 1), position bigint NOT NULL, "
    "hash bytea NOT NULL, recorded_at timestamp with time zone, newest_version integer NOT NULL)",
    f"CREATE TABLE {RECORDS} (position bigint PRIMARY KEY CHECK (position > 0), "
    "frame bytea NOT NULL)",
)
CHANNEL = "ferrex_journal"
LOCK_KEY = 0x66_65_72_72_65_78_4A_01
"""The writer lock (``pg_advisory_lock``): "ferrexJ" and 1, a fixed bigint."""
SCHEMA_LOCK = LOCK_KEY + 1
"""Held while a schema is checked or created, so two first starts do not both create it."""
PAGE = 2000
"""Records fetched per query when reading."""
LABEL = Path(RECORDS)
"""What a JournalDamaged from this backend names as its 'segment'."""


class PostgresJournal:
    """A hash-chained log of records in PostgreSQL (see the module docstring)."""

    def __init__(
        self, url: str, conn: psycopg.Connection[Any], clock: Callable[[], datetime]
    ) -> None:
        self.url = url
        self.where = display(url)
        self._clock = clock
        self._conn: psycopg.Connection[Any] | None = conn
        self._reader: psycopg.Connection[Any] | None = None
        self._thread_lock = threading.RLock()
        self._read_lock = threading.Lock()
        self._lock_depth = 0
        self._head = Head(0, GENESIS_HASH, None)
        self._newest_version = 0
        self._closed = False

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str, *, clock: Callable[[], datetime] = utc_now) -> PostgresJournal:
        """Connect, create the schema in an empty database (or check it), read the head."""
        conn = connect(url)
        journal = cls(url, conn, clock)
        try:
            with journal._mapped():
                journal._ensure_schema(conn)
            journal.refresh()
            journal._refuse_if_too_new()
        except BaseException:
            journal.close()
            raise
        return journal

    def _ensure_schema(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            schema = conn.execute("SELECT current_schema()").fetchone()
            if schema is None or schema[0] is None:
                raise JournalConnectError(
                    f"PostgreSQL at {self.where} has no current schema to hold the journal",
                    hint="set a search_path naming an existing schema the user may write to",
                )
            rows = conn.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
                (list(COLUMNS),),
            ).fetchall()
            found: dict[str, dict[str, str]] = {}
            for table, column, kind in rows:
                found.setdefault(table, {})[column] = kind
            if not found:
                for statement in CREATE:
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {META} (key, value) VALUES ('schema_version', %s)",
                    (str(SCHEMA_VERSION),),
                )
                conn.execute(
                    f"INSERT INTO {HEAD} (id, position, hash, recorded_at, newest_version) "
                    "VALUES (1, 0, %s, NULL, 0)",
                    (GENESIS_HASH,),
                )
                log.info("journal: created the ferrex journal schema in %s", self.where)
                return
            place = f"PostgreSQL at {schema[0]!r} of {self.where}"
            if META in found and found[META] == COLUMNS[META]:
                row = conn.execute(
                    f"SELECT value FROM {META} WHERE key = 'schema_version'"
                ).fetchone()
                version = int(row[0]) if row is not None and str(row[0]).isdigit() else None
                if version is None:
                    raise JournalFormatError(
                        f"{place}: {META} holds no schema version: not a ferrex journal",
                        hint="point journal.url at an empty database, or at a ferrex journal",
                    )
                if version > SCHEMA_VERSION:
                    raise JournalTooNew(
                        f"{place} holds a journal schema of version {version}, newer than this "
                        f"ferrex's {SCHEMA_VERSION}; it will not use it",
                        found=version,
                        supported=SCHEMA_VERSION,
                    )
            missing = [table for table in COLUMNS if table not in found]
            if missing:
                raise JournalFormatError(
                    f"{place} holds a partial ferrex journal schema: {', '.join(sorted(found))} "
                    f"but no {', '.join(missing)}",
                    hint="restore the missing tables from a backup, or point journal.url at "
                    "an empty database",
                )
            for table, want in COLUMNS.items():
                if found[table] != want:
                    have = ", ".join(f"{c} {t}" for c, t in sorted(found[table].items()))
                    raise JournalFormatError(
                        f"{place}: table {table} is not a ferrex journal table (it has "
                        f"columns {have})",
                        hint="another program uses these table names: give ferrex its own "
                        "database or schema",
                    )
            if conn.execute(f"SELECT 1 FROM {HEAD} WHERE id = 1").fetchone() is None:
                raise JournalFormatError(
                    f"{place}: {HEAD} has no head row: a partial ferrex journal schema",
                    hint="restore the journal from a backup",
                )

    def close(self) -> None:
        self._closed = True
        for conn in (self._conn, self._reader):
            if conn is not None:
                conn.close()
        self._conn = self._reader = None

    def __enter__(self) -> PostgresJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections and errors -------------------------------------------------------------

    @contextmanager
    def _mapped(self) -> Iterator[None]:
        """psycopg's errors become journal errors, once, here."""
        psycopg = driver()
        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            state = getattr(exc, "sqlstate", None)
            if state in REFUSED:
                raise connect_error(exc, self.where) from exc
            raise JournalUnavailable(
                f"PostgreSQL at {self.where} went away: {first_line(exc)}",
                hint="nothing unacknowledged was written; retry once PostgreSQL is back",
            ) from exc
        except psycopg.errors.InsufficientPrivilege as exc:
            raise JournalConnectError(
                f"PostgreSQL at {self.where} refused: {first_line(exc)}",
                hint="the journal.url user needs to read and write the ferrex_journal tables",
            ) from exc
        except psycopg.Error as exc:
            raise JournalError(f"PostgreSQL at {self.where}: {first_line(exc)}") from exc

    def _writer(self) -> psycopg.Connection[Any]:
        """The writer connection, reconnected if it broke (never while a lock is held)."""
        if self._closed:
            raise JournalError("the journal is closed")
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if self._lock_depth:
                raise JournalUnavailable(
                    f"the connection to PostgreSQL at {self.where} broke while it held the "
                    "writer lock",
                    hint="nothing unacknowledged was written; retry the call",
                )
            if conn is not None:
                conn.close()
            self._conn = None
            self._conn = conn = connect(self.url)
        return conn

    def _read_conn(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise JournalError("the journal is closed")
        conn = self._reader
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                conn.close()
            self._reader = None
            self._reader = conn = connect(self.url)
        return conn

    # -- the head ---------------------------------------------------------------------------

    @property
    def head(self) -> Head:
        return self._head

    @property
    def newest_version(self) -> int:
        return self._newest_version

    def _set_head(self, row: tuple[Any, ...]) -> None:
        position, hash_, recorded_at, newest = row
        self._head = Head(int(position), bytes(hash_), recorded_at)
        self._newest_version = int(newest)

    def _refuse_if_too_new(self) -> None:
        if self._newest_version > FORMAT_VERSION:
            raise JournalTooNew.refusing_writes(
                f"in {self.where}", self._newest_version, FORMAT_VERSION
            )

    def refresh(self) -> Head:
        with self._thread_lock, self._mapped():
            row = (
                self._writer()
                .execute(f"SELECT position, hash, recorded_at, newest_version FROM {HEAD}")
                .fetchone()
            )
        if row is None:
            raise JournalFormatError(f"{self.where}: {HEAD} has no head row")
        self._set_head(row)
        return self._head

    @contextmanager
    def exclusive(self) -> Iterator[Head]:
        """Hold the writer lock (an advisory lock) across a read-decide-append sequence."""
        with self._thread_lock:
            if self._lock_depth == 0:
                with self._mapped():
                    self._writer().execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
            with self._holding() as head:
                yield head

    @contextmanager
    def try_exclusive(self) -> Iterator[Head | None]:
        """:meth:`exclusive` if the advisory lock is free this instant (``pg_try_advisory_lock``),
        else ``None`` at once, holding nothing."""
        if not self._thread_lock.acquire(blocking=False):
            yield None
            return
        try:
            if self._lock_depth == 0:
                with self._mapped():
                    row = (
                        self._writer()
                        .execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,))
                        .fetchone()
                    )
                if not row or not row[0]:
                    yield None
                    return
            with self._holding() as head:
                yield head
        finally:
            self._thread_lock.release()

    @contextmanager
    def _holding(self) -> Iterator[Head]:
        """Inside the advisory lock (just taken, or held by an outer call): the head, caught up."""
        self._lock_depth += 1
        try:
            head = self.refresh()
            self._refuse_if_too_new()
            yield head
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0:
                self._unlock()

    def _unlock(self) -> None:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return  # the session is gone, and its lock with it
        psycopg = driver()
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        except psycopg.Error:
            # Unsure whether the lock is still held: drop the session, which releases it.
            conn.close()

    # -- appending --------------------------------------------------------------------------

    def append(self, events: Sequence[Event]) -> Record:
        return self.append_batch([events])[0]

    def append_batch(self, commands: Sequence[Sequence[Event]]) -> list[Record]:
        """One transaction for the whole batch: all its records are committed, or none."""
        if not commands:
            return []
        now = self._clock()
        if now.tzinfo is None:
            raise EncodeError("the journal clock must return timezone-aware times")
        with self._thread_lock, self._mapped():
            conn = self._writer()
            # Pipelined: BEGIN, the lock and the head go in one round trip, the rows, the
            # head's move and COMMIT in another. The advisory lock comes before the row lock,
            # always, so an exclusive() holder elsewhere and this append cannot deadlock.
            with conn.pipeline(), conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                row = conn.execute(
                    f"SELECT position, hash, recorded_at, newest_version FROM {HEAD} "
                    "WHERE id = 1 FOR UPDATE"
                ).fetchone()
                if row is None:
                    raise JournalFormatError(f"{self.where}: {HEAD} has no head row")
                self._set_head(row)
                self._refuse_if_too_new()
                head = self._head
                if head.recorded_at is not None and now < head.recorded_at:
                    now = head.recorded_at  # recorded_at never goes backwards along the log
                position, prev_hash = head.position + 1, head.hash
                rows: list[tuple[int, bytes]] = []
                records: list[Record] = []
                for events in commands:
                    frame, record = encode_record(position, now, prev_hash, events)
                    assert record.hash is not None  # encode_record always computes it
                    rows.append((position, frame))
                    records.append(record)
                    prev_hash = record.hash
                    position += 1
                with conn.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {RECORDS} (position, frame) VALUES (%s, %s)", rows
                    )
                conn.execute(
                    f"UPDATE {HEAD} SET position = %s, hash = %s, recorded_at = %s, "
                    "newest_version = GREATEST(newest_version, %s) WHERE id = 1 "
                    "RETURNING pg_notify(%s, position::text)",
                    (position - 1, prev_hash, now, FORMAT_VERSION, CHANNEL),
                )
            self._head = Head(position - 1, prev_hash, now)
            self._newest_version = max(self._newest_version, FORMAT_VERSION)
        return records

    def append_frames(self, frames: Sequence[bytes]) -> Head:
        """Append records already framed elsewhere (``journal copy``), checked first: each
        frame must be valid and continue the chain from the head. One transaction."""
        if not frames:
            return self.refresh()
        with self._thread_lock, self._mapped():
            conn = self._writer()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                row = conn.execute(
                    f"SELECT position, hash, recorded_at, newest_version FROM {HEAD} "
                    "WHERE id = 1 FOR UPDATE"
                ).fetchone()
                assert row is not None
                self._set_head(row)
                head = self._head
                expected, prev_hash = head.position + 1, head.hash
                newest = self._newest_version
                rows: list[tuple[int, bytes]] = []
                recorded_at = head.recorded_at
                for frame in frames:
                    info = continuing_frame(
                        frame, expected, prev_hash, where=f"at {self.where}", head=head.position
                    )
                    record = self._decoded(frame, info.position, hashes=True)
                    assert record.hash is not None
                    newest = max(newest, frame_version(frame, info) or 0)
                    rows.append((info.position, frame))
                    prev_hash, expected = record.hash, info.position + 1
                    recorded_at = record.recorded_at
                with conn.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {RECORDS} (position, frame) VALUES (%s, %s)", rows
                    )
                conn.execute(
                    f"UPDATE {HEAD} SET position = %s, hash = %s, recorded_at = %s, "
                    "newest_version = %s WHERE id = 1 RETURNING pg_notify(%s, position::text)",
                    (expected - 1, prev_hash, recorded_at, newest, CHANNEL),
                )
            self._head = Head(expected - 1, prev_hash, recorded_at)
            self._newest_version = newest
        return self._head

    # -- reading ----------------------------------------------------------------------------

    def frames(self, after: int = 0) -> Iterator[tuple[int, bytes]]:
        """(position, frame bytes) of the records after ``after``, in pages, unchecked."""
        last = after
        while True:
            with self._read_lock, self._mapped():
                rows = (
                    self._read_conn()
                    .execute(
                        f"SELECT position, frame FROM {RECORDS} WHERE position > %s "
                        "ORDER BY position LIMIT %s",
                        (last, PAGE),
                        binary=True,  # bytea as bytes, not hex text to decode
                    )
                    .fetchall()
                )
            for position, frame in rows:
                yield int(position), bytes(frame)
            if len(rows) < PAGE:
                return
            last = int(rows[-1][0])

    def read(self, after: int = 0, *, hashes: bool = False) -> Iterator[Record]:
        """Records with position > ``after``, in order. Raises JournalDamaged for a record
        whose bytes fail their checksum or a position missing from the sequence."""
        expected = after + 1
        page: list[bytes] = []
        first = expected
        for position, frame in self.frames(after):
            if position != expected:
                raise JournalDamaged(
                    f"{self.where}: position {expected} is missing (the next record is {position})",
                    segment=LABEL,
                    offset=0,
                    position=expected,
                )
            page.append(frame)
            expected += 1
            if len(page) == PAGE:
                yield from self._decode_page(page, first, hashes)
                page, first = [], expected
        if page:
            yield from self._decode_page(page, first, hashes)

    def _decode_page(self, frames: list[bytes], first: int, hashes: bool) -> list[Record]:
        buf = b"".join(frames)
        try:
            found = decode_frames(buf, 0, first, hashes=hashes)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise JournalFormatError(
                f"{self.where}: a record passed its checksum but cannot be decoded: {exc}",
                hint="was it written by a newer, incompatible ferrex?",
            ) from exc
        if found.reason is not None:
            bad = first + len(found.records)
            raise JournalDamaged(
                f"{self.where}: damaged record at position {bad} ({found.reason})",
                segment=LABEL,
                offset=0,
                position=bad,
                hint="run `ferrex journal verify` for details",
            )
        return found.records

    def _decoded(self, frame: bytes, position: int, *, hashes: bool) -> Record:
        info = check_frame(frame, 0, len(frame))
        if isinstance(info, str) or info.position != position:
            raise JournalDamaged(
                f"{self.where}: damaged record at position {position} ({info})",
                segment=LABEL,
                offset=0,
                position=position,
            )
        try:
            return decode_record(frame, info, hashes=hashes)
        except (ValueError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise JournalFormatError(
                f"{self.where}: the record at position {position} cannot be decoded: {exc}"
            ) from exc

    def first(self) -> Record | None:
        for position, frame in self.frames():
            return self._decoded(frame, position, hashes=True)
        return None

    def verify(self, *, decode: bool = True) -> VerifyReport:
        """Check every record as the file journal's verify does, and the head row against
        the chain; reads only, takes no lock (:func:`journal.pg_verify.verify_rows`)."""
        return verify_rows(self, LABEL, decode=decode)

    def compact(self) -> int:
        """Redact forgotten bodies in place, in one transaction (:func:`_compact`)."""
        return _compact(self)

    def follow(
        self, after: int = 0, *, stop: threading.Event, poll_ms: int = 1000
    ) -> Iterator[Record]:
        """Yield records after ``after`` as they are appended, by anyone, until ``stop``.

        LISTENs on :data:`CHANNEL` and reads on every notification, and at least every
        ``poll_ms`` besides: a lost notification, or PostgreSQL away for a while, delays
        and never loses. While PostgreSQL is away the follower waits and retries.
        """
        last = after
        listener: psycopg.Connection[Any] | None = None
        psycopg = driver()
        step = min(poll_ms, 100) / 1000
        try:
            while not stop.is_set():
                # LISTEN before reading, so nothing committed in between goes unnoticed.
                if listener is None or listener.closed or listener.broken:
                    listener = self._listen(listener)
                try:
                    for record in self.read(after=last):
                        last = record.position
                        yield record
                except JournalUnavailable as exc:
                    log.warning("journal: follower waiting for PostgreSQL: %s", exc)
                deadline = time.monotonic() + poll_ms / 1000
                while not stop.is_set() and time.monotonic() < deadline:
                    if listener is None:
                        stop.wait(step)
                        continue
                    try:
                        notified = any(True for _ in listener.notifies(timeout=step, stop_after=1))
                    except psycopg.Error:
                        listener.close()
                        listener = None
                        continue
                    if notified:
                        break
        finally:
            if listener is not None:
                listener.close()

    def _listen(self, old: psycopg.Connection[Any] | None) -> psycopg.Connection[Any] | None:
        if old is not None:
            old.close()
        try:
            conn = connect(self.url)
            conn.execute(f"LISTEN {CHANNEL}")
        except (JournalError, driver().Error) as exc:
            log.warning("journal: cannot LISTEN for new records (polling instead): %s", exc)
            return None
        return conn


# -- redaction and compaction ----------------------------------------------------------


def redactions(journal: PostgresJournal) -> list[tuple[bytes, int, bytes]]:
    """(new frame, position, old frame) for every record holding a forgotten memory's body
    not yet redacted. Reads only."""
    forgotten: set[str] = set()
    for record in journal.read():
        for event in record.events:
            if isinstance(event, MemoriesForgotten):
                forgotten.update(event.memory_ids)
    changes: list[tuple[bytes, int, bytes]] = []
    if not forgotten:
        return changes
    for position, frame in journal.frames():
        info = check_frame(frame, 0, len(frame))
        if isinstance(info, str):
            raise JournalDamaged(
                f"{journal.where}: damaged record at position {position} ({info})",
                segment=LABEL,
                offset=0,
                position=position,
            )
        new = redact_frame(frame, info, forgotten)
        if new is None:
            continue
        new_info = check_frame(new, 0, len(new))
        assert not isinstance(new_info, str)
        if bytes(head_bytes(new, new_info)) != bytes(head_bytes(frame, info)) or body_problems(
            new, new_info
        ):
            raise JournalError(f"redacting position {position} would change its record")
        changes.append((new, position, frame))
    return changes


def _compact(journal: PostgresJournal) -> int:
    """Redact the bodies of every forgotten memory, in place, in one transaction under the
    writer lock; returns how many records changed. Heads are kept byte for byte, so hashes
    and the chain are unchanged (``journal.record.redact_frame``). Idempotent."""
    with journal.exclusive():
        changes = redactions(journal)
        if changes:
            with journal._thread_lock, journal._mapped():
                conn = journal._writer()
                with conn.transaction(), conn.cursor() as cur:
                    for new, position, old in changes:
                        cur.execute(
                            f"UPDATE {RECORDS} SET frame = %s WHERE position = %s AND frame = %s",
                            (new, position, old),
                        )
                        if cur.rowcount != 1:
                            raise JournalError(f"position {position} changed during compaction")
        return len(changes)
