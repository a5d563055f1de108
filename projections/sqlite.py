"""The SQLite read model (apsw): memories, entities, aliases, links, access and validation.

Invariants:

- Written only by :meth:`ReadModel.apply`, inside ``BEGIN IMMEDIATE``, and the checkpoint
  (the last journal position applied) advances in the same transaction. The checkpoint is
  re-read inside that transaction, so when several processes catch up at once each record
  is applied exactly once.
- ``apply`` reads no clock, no randomness, no environment: every value comes from the
  event or its record, so a rebuild from position 0 equals incremental application.
- WAL mode and a busy timeout let several processes share the file.
- Times are stored as float seconds since the epoch (UTC), as in the Qdrant payload.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, assert_never

import apsw
import msgspec

from journal import (
    AnyEvent,
    EntityAliasAdded,
    EntityCreated,
    MemoriesAccessed,
    MemoriesForgotten,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
    Record,
)
from journal.files import create_private_file, make_private_dir
from projections.documents import subject_key

SCHEMA_VERSION = 1
"""Bump when what ``apply`` derives changes: a mismatch at open triggers a rebuild (backfill)."""

SQLITE = "sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    memory_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    type TEXT NOT NULL,
    content TEXT,
    subject TEXT,
    subject_key TEXT,
    predicate TEXT,
    object TEXT,
    predicate_normalized TEXT,
    procedure_name TEXT,
    procedure_version INTEGER,
    conditions TEXT,
    steps TEXT,
    source TEXT,
    context TEXT,
    confidence REAL NOT NULL,
    agent_id TEXT,
    visibility TEXT NOT NULL,
    supersedes TEXT,
    t_valid REAL NOT NULL,
    t_invalid REAL,
    superseded_by TEXT,
    created_at REAL NOT NULL,
    position INTEGER NOT NULL,
    redacted INTEGER NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed REAL,
    last_validated REAL
);
CREATE INDEX IF NOT EXISTS memories_ns_type ON memories (namespace, type);
CREATE INDEX IF NOT EXISTS memories_fact ON memories (namespace, subject_key, predicate_normalized);
CREATE INDEX IF NOT EXISTS memories_procedure ON memories (namespace, procedure_name);
CREATE INDEX IF NOT EXISTS memories_episodes ON memories (namespace, source, t_valid, memory_id);
CREATE TABLE IF NOT EXISTS entities (
    entity_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    normalized TEXT NOT NULL,
    kind TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS entities_ns_norm ON entities (namespace, normalized);
CREATE TABLE IF NOT EXISTS aliases (
    namespace TEXT NOT NULL,
    normalized TEXT NOT NULL,
    alias TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    match TEXT NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (namespace, normalized)
);
CREATE INDEX IF NOT EXISTS aliases_entity ON aliases (entity_id);
CREATE TABLE IF NOT EXISTS memory_entities (
    memory_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX IF NOT EXISTS memory_entities_entity ON memory_entities (entity_id);
"""

TABLES = ("memories", "entities", "aliases", "memory_entities")


@dataclass(frozen=True)
class Rules:
    """Values the read model derives with rules that may change (a change is a backfill).

    ``predicate(namespace, recorded)`` re-normalizes the predicate a fact's event recorded at
    store time with the current rules; None keeps the recorded one. ``identity`` names the
    rules: the live projection records it, and a different one at start rebuilds the read
    model.
    """

    identity: str = ""
    predicate: Callable[[str, str], str] | None = None


NO_RULES = Rules()


class ReadModelError(Exception):
    """The read model file cannot be used (corrupt, or written by another schema)."""


@dataclass(frozen=True)
class Memory:
    """One row of the memories table, as the query side sees it."""

    memory_id: str
    namespace: str
    type: str
    content: str | None
    subject: str | None
    predicate: str | None
    object: str | None
    predicate_normalized: str | None
    procedure_name: str | None
    procedure_version: int | None
    conditions: tuple[str, ...]
    steps: tuple[str, ...]
    source: str | None
    context: dict[str, Any] | None
    confidence: float
    agent_id: str | None
    visibility: str
    supersedes: str | None
    t_valid: float
    t_invalid: float | None
    superseded_by: str | None
    created_at: float
    position: int
    redacted: bool
    access_count: int
    last_accessed: float | None
    last_validated: float | None
    entity_ids: tuple[str, ...] = ()

    def body(self) -> MemoryBody:
        """The memory's text fields, as its event carried them."""
        return MemoryBody(
            content=self.content,
            subject=self.subject,
            predicate=self.predicate,
            object=self.object,
            predicate_normalized=self.predicate_normalized,
            procedure_name=self.procedure_name,
            conditions=self.conditions,
            steps=self.steps,
            source=self.source,
            context=self.context,
        )


def _ts(value: datetime) -> float:
    return value.timestamp()


def _json(value: object) -> str | None:
    if value is None or value == ():
        return None
    return msgspec.json.encode(value).decode()


def _on_read_only_disk(path: Path) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


class ReadModel:
    """The read model in one SQLite file. Open with :meth:`open`; close when done."""

    def __init__(self, path: Path, connection: apsw.Connection, rules: Rules = NO_RULES) -> None:
        self.path = path
        self.db = connection
        self.rules = rules

    @classmethod
    def open(
        cls, path: Path, *, rules: Rules = NO_RULES, busy_timeout_ms: int = 10_000
    ) -> ReadModel:
        if path.exists() and _on_read_only_disk(path):
            return cls._open_immutable(path, rules)
        make_private_dir(path.parent)
        create_private_file(path)  # SQLite gives its -wal and -shm files this file's mode
        try:
            db = apsw.Connection(str(path))
            db.setbusytimeout(busy_timeout_ms)
            db.pragma("journal_mode", "wal")
            db.pragma("synchronous", "normal")
            db.pragma("foreign_keys", 0)
            with _immediate(db):
                db.execute(_SCHEMA)
                if db.execute("SELECT value FROM meta WHERE key='schema_version'").get is None:
                    db.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),),
                    )
        except apsw.Error as exc:
            raise ReadModelError(f"cannot open the read model {path}: {exc}") from exc
        return cls(path, db, rules)

    @classmethod
    def _open_immutable(cls, path: Path, rules: Rules) -> ReadModel:
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
        return cls(path, db, rules)

    def close(self) -> None:
        self.db.close()

    # -- metadata and checkpoints -----------------------------------------------------------

    def meta(self, key: str) -> str | None:
        value = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).get
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        with _immediate(self.db):
            self.db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, value),
            )

    @property
    def schema_version(self) -> int:
        return int(self.meta("schema_version") or 0)

    def checkpoint(self, name: str = SQLITE) -> int:
        value = self.db.execute("SELECT position FROM checkpoints WHERE name=?", (name,)).get
        return int(value) if value is not None else 0

    def set_checkpoint(self, name: str, position: int) -> None:
        """Record another sink's checkpoint (Qdrant's), after its write was acknowledged."""
        with _immediate(self.db):
            self._write_checkpoint(name, position)

    def _write_checkpoint(self, name: str, position: int) -> None:
        self.db.execute(
            "INSERT INTO checkpoints (name, position) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET position=excluded.position",
            (name, position),
        )

    # -- applying events --------------------------------------------------------------------

    def apply(self, records: Sequence[Record]) -> int:
        """Apply records not yet applied, in one transaction; returns how many were new."""
        if not records:
            return 0
        with _immediate(self.db):
            done = self.checkpoint()
            fresh = [r for r in records if r.position > done]
            for record in fresh:
                for event in record.events:
                    self._apply_event(event, record)
            if fresh:
                self._write_checkpoint(SQLITE, fresh[-1].position)
        return len(fresh)

    def _apply_event(self, event: AnyEvent, record: Record) -> None:
        db = self.db
        match event:
            case MemoryStored():
                body = event.body
                db.execute(
                    "INSERT OR REPLACE INTO memories (memory_id, namespace, type, content, "
                    "subject, subject_key, predicate, object, predicate_normalized, "
                    "procedure_name, procedure_version, conditions, steps, source, context, "
                    "confidence, agent_id, visibility, supersedes, t_valid, t_invalid, "
                    "superseded_by, created_at, position, redacted) VALUES (?, ?, ?, ?, ?, ?, "
                    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?)",
                    (
                        event.memory_id,
                        event.namespace,
                        event.memory_type,
                        body.content if body else None,
                        body.subject if body else None,
                        subject_key(body.subject) if body and body.subject else None,
                        body.predicate if body else None,
                        body.object if body else None,
                        self._predicate(event.namespace, body),
                        body.procedure_name if body else None,
                        event.procedure_version,
                        _json(body.conditions) if body else None,
                        _json(body.steps) if body else None,
                        body.source if body else None,
                        _json(body.context) if body else None,
                        event.confidence,
                        event.agent_id,
                        event.visibility,
                        event.supersedes,
                        _ts(event.t_valid),
                        _ts(record.recorded_at),
                        record.position,
                        1 if event.redacted else 0,
                    ),
                )
                db.execute("DELETE FROM memory_entities WHERE memory_id=?", (event.memory_id,))
                for entity_id in dict.fromkeys(event.entity_ids):
                    db.execute(
                        "INSERT INTO memory_entities (memory_id, entity_id) VALUES (?, ?)",
                        (event.memory_id, entity_id),
                    )
            case MemorySuperseded():
                db.execute(
                    "UPDATE memories SET t_invalid=?, superseded_by=? WHERE memory_id=?",
                    (_ts(event.t_invalid), event.superseded_by, event.memory_id),
                )
            case MemoriesForgotten():
                for memory_id in event.memory_ids:
                    db.execute("DELETE FROM memories WHERE memory_id=?", (memory_id,))
                    db.execute("DELETE FROM memory_entities WHERE memory_id=?", (memory_id,))
                for entity_id in event.dropped_entity_ids:
                    db.execute("DELETE FROM entities WHERE entity_id=?", (entity_id,))
                    db.execute("DELETE FROM aliases WHERE entity_id=?", (entity_id,))
            case MemoriesValidated():
                at = _ts(event.at)
                for memory_id in event.memory_ids:
                    db.execute(
                        "UPDATE memories SET last_validated=max(coalesce(last_validated, ?), ?) "
                        "WHERE memory_id=?",
                        (at, at, memory_id),
                    )
            case MemoriesAccessed():
                for access in event.accesses:
                    at = _ts(access.last_at)
                    db.execute(
                        "UPDATE memories SET access_count=access_count+?, "
                        "last_accessed=max(coalesce(last_accessed, ?), ?) WHERE memory_id=?",
                        (access.count, at, at, access.memory_id),
                    )
            case EntityCreated():
                db.execute(
                    "INSERT OR REPLACE INTO entities (entity_id, namespace, name, normalized, "
                    "kind, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        event.entity_id,
                        event.namespace,
                        event.name,
                        event.normalized,
                        event.kind,
                        _ts(record.recorded_at),
                    ),
                )
                db.execute(
                    "INSERT OR REPLACE INTO aliases (namespace, normalized, alias, entity_id, "
                    "match, score) VALUES (?, ?, ?, ?, 'exact', 1.0)",
                    (event.namespace, event.normalized, event.name, event.entity_id),
                )
            case EntityAliasAdded():
                db.execute(
                    "INSERT OR REPLACE INTO aliases (namespace, normalized, alias, entity_id, "
                    "match, score) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        event.namespace,
                        event.normalized,
                        event.alias,
                        event.entity_id,
                        event.match,
                        event.score,
                    ),
                )
            case _:
                assert_never(event)

    def _predicate(self, namespace: str, body: MemoryBody | None) -> str | None:
        # The current rules re-normalize what the store decided (which may have been a
        # fuzzy match to a known predicate); normalization is idempotent, so only a changed
        # rule changes the result.
        recorded = body.predicate_normalized or body.predicate if body else None
        if recorded and self.rules.predicate is not None:
            return self.rules.predicate(namespace, recorded)
        return recorded

    # -- reading ----------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory | None:
        rows = self.memories(memory_ids=[memory_id])
        return rows[0] if rows else None

    def memories(
        self, *, memory_ids: Sequence[str] | None = None, namespace: str | None = None
    ) -> list[Memory]:
        """Memories by id and/or namespace (all of them when both are None), with entities."""
        where: list[str] = []
        args: list[Any] = []
        if memory_ids is not None:
            if not memory_ids:
                return []
            where.append(f"memory_id IN ({','.join('?' * len(memory_ids))})")
            args.extend(memory_ids)
        if namespace is not None:
            where.append("namespace=?")
            args.append(namespace)
        sql = "SELECT * FROM memories"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY memory_id"
        out = []
        for row in self.db.execute(sql, args):
            out.append(self._memory(row))
        return out

    def _memory(self, row: tuple[Any, ...]) -> Memory:
        (mid, ns, typ, content, subj, _skey, pred, obj, pnorm, pname, pver, conds, steps, source,
         context, conf, agent, vis, sup, tv, ti, sby, created, pos, red, acount, lacc,
         lval) = row  # fmt: skip
        entity_ids = tuple(
            str(e)
            for (e,) in self.db.execute(
                "SELECT entity_id FROM memory_entities WHERE memory_id=? ORDER BY entity_id",
                (mid,),
            )
        )
        return Memory(
            memory_id=mid,
            namespace=ns,
            type=typ,
            content=content,
            subject=subj,
            predicate=pred,
            object=obj,
            predicate_normalized=pnorm,
            procedure_name=pname,
            procedure_version=pver,
            conditions=tuple(json.loads(conds)) if conds else (),
            steps=tuple(json.loads(steps)) if steps else (),
            source=source,
            context=json.loads(context) if context else None,
            confidence=conf,
            agent_id=agent,
            visibility=vis,
            supersedes=sup,
            t_valid=tv,
            t_invalid=ti,
            superseded_by=sby,
            created_at=created,
            position=pos,
            redacted=bool(red),
            access_count=acount,
            last_accessed=lacc,
            last_validated=lval,
            entity_ids=entity_ids,
        )

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every projected table, sorted: what a rebuild must reproduce."""
        return {
            table: sorted(self.db.execute(f"SELECT * FROM {table}"), key=repr) for table in TABLES
        }


@contextmanager
def _immediate(db: apsw.Connection) -> Iterator[None]:
    """A write transaction that takes the write lock up front (no upgrade deadlocks)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
