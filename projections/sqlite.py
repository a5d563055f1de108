"""The SQLite read model (apsw): memories, entities, aliases, links, access and validation.

Invariants:

- Written only by :meth:`ReadModel.apply`, inside ``BEGIN IMMEDIATE``, and the checkpoint
  (the last journal position applied) advances in the same transaction. The checkpoint is
  re-read inside that transaction, so when several processes catch up at once each record
  is applied exactly once.
- ``apply`` reads no clock, no randomness, no environment: every value comes from the
  event or its record, so a rebuild from position 0 equals incremental application.
- WAL mode and a busy timeout let several processes share the file.
- Reads may run in many threads at once: inside :meth:`ReadModel.snapshot` every named query
  of that thread goes through the thread's own read-only connection, in one WAL read
  transaction, so it sees one committed state (never half of an ``apply``) while another
  thread applies. Outside a snapshot the queries use the writer's connection.
- Times are stored as float seconds since the epoch (UTC), as in the Qdrant payload.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, NamedTuple, assert_never

import apsw
import msgspec

from journal import MemoryBody, MemoryStored, Record
from journal.events import given_by_time
from journal.files import create_private_file, make_private_dir
from projections import fold
from projections.rows import RELATION, viewers
from projections.rows import AliasMatch as AliasMatch  # re-exported: the queries' rows
from projections.rows import Entity as Entity
from projections.rows import Memory as Memory
from projections.rows import MemoryCount as MemoryCount
from projections.rows import PossibleConflict as PossibleConflict
from projections.rows import Spelling as Spelling

SCHEMA_VERSION = 12
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
    last_validated REAL,
    multi_valued INTEGER NOT NULL DEFAULT 0,
    episode TEXT,
    episode_index INTEGER NOT NULL DEFAULT 0,
    importance REAL NOT NULL DEFAULT 0.5,
    pinned INTEGER NOT NULL DEFAULT 0,
    expires_at REAL,
    import_key TEXT,
    object_form TEXT,
    valid_from_given INTEGER
);
CREATE INDEX IF NOT EXISTS memories_ns_type ON memories (namespace, type);
CREATE INDEX IF NOT EXISTS memories_fact ON memories (namespace, subject_key, predicate_normalized);
CREATE INDEX IF NOT EXISTS memories_procedure ON memories (namespace, procedure_name);
CREATE INDEX IF NOT EXISTS memories_episodes ON memories (namespace, source, t_valid, memory_id);
CREATE INDEX IF NOT EXISTS memories_derived_episodes
    ON memories (namespace, episode, episode_index);
CREATE INDEX IF NOT EXISTS memories_episode_tails ON memories (namespace, agent_id, position)
    WHERE episode IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_expiring ON memories (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_superseded_by ON memories (superseded_by)
    WHERE superseded_by IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_import_keys ON memories (namespace, import_key)
    WHERE import_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS forgotten (
    memory_id TEXT PRIMARY KEY,
    agent_id TEXT,
    visibility TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entities (
    entity_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    normalized TEXT NOT NULL,
    kind TEXT,
    created_at REAL NOT NULL,
    agent_id TEXT,
    merged_into TEXT
);
CREATE INDEX IF NOT EXISTS entities_ns_norm ON entities (namespace, normalized);
CREATE TABLE IF NOT EXISTS aliases (
    namespace TEXT NOT NULL,
    normalized TEXT NOT NULL,
    alias TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    match TEXT NOT NULL,
    score REAL NOT NULL,
    agent_id TEXT
);
-- One spelling of an entity per scope: an agent's private spelling never replaces another
-- agent's (or the shared one) of the same form.
CREATE UNIQUE INDEX IF NOT EXISTS aliases_scoped
    ON aliases (namespace, normalized, entity_id, coalesce(agent_id, ''));
CREATE INDEX IF NOT EXISTS aliases_entity ON aliases (entity_id);
CREATE TABLE IF NOT EXISTS memory_entities (
    memory_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX IF NOT EXISTS memory_entities_entity ON memory_entities (entity_id);
CREATE TABLE IF NOT EXISTS possible_conflicts (
    namespace TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    other_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    other_entity_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (memory_id, other_id)
);
CREATE INDEX IF NOT EXISTS possible_conflicts_other ON possible_conflicts (other_id);
CREATE TABLE IF NOT EXISTS entity_differs (
    namespace TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    other_id TEXT NOT NULL,
    PRIMARY KEY (entity_id, other_id)
);
-- Two facts said to both hold (facts.differ), as the sorted pair: never flagged again.
CREATE TABLE IF NOT EXISTS fact_differs (
    namespace TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    other_id TEXT NOT NULL,
    PRIMARY KEY (memory_id, other_id)
);
CREATE INDEX IF NOT EXISTS fact_differs_other ON fact_differs (other_id);
CREATE TABLE IF NOT EXISTS entity_kept_for (
    entity_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    PRIMARY KEY (entity_id, agent_id)
);
CREATE TABLE IF NOT EXISTS folds (
    summary_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    PRIMARY KEY (summary_id, memory_id)
);
CREATE INDEX IF NOT EXISTS folds_memory ON folds (memory_id);
"""


def _counted(row: str, step: int) -> str:
    """The trigger statements that count ``row`` (``new`` or ``old``) in or out of its
    ``memory_counts`` group."""
    if step > 0:
        return (
            f"INSERT INTO memory_counts VALUES ({row}.namespace, {row}.type, "
            f"coalesce({row}.agent_id, ''), {row}.agent_id IS NOT NULL, {row}.visibility, "
            f"{row}.t_invalid IS NULL, {row}.expires_at IS NOT NULL, 1) "
            "ON CONFLICT (namespace, type, owner, owned, visibility, active, expiring) "
            "DO UPDATE SET n = n + 1;"
        )
    return (
        f"UPDATE memory_counts SET n = n - 1 WHERE namespace = {row}.namespace "
        f"AND type = {row}.type AND owner = coalesce({row}.agent_id, '') "
        f"AND owned = ({row}.agent_id IS NOT NULL) AND visibility = {row}.visibility "
        f"AND active = ({row}.t_invalid IS NULL) AND expiring = ({row}.expires_at IS NOT NULL); "
        "DELETE FROM memory_counts WHERE n <= 0;"
    )


def context_path(key: str) -> str:
    """The JSON path of a top-level context key (a key holding ``"`` or ``\\`` is refused
    before it gets here: ``ferrex.server.dashboard.reads``)."""
    return f'$."{key}"'


def _context_holds() -> str:
    """SQL true of a row whose context, at a path (the first parameter), is the text of the
    second, or a list holding it."""
    return (
        "EXISTS (SELECT 1 FROM json_each(memories.context, ?) AS c "
        "WHERE c.type = 'text' AND c.value = ?)"
    )


def _seen_by(param: str = "?", table: str = "") -> str:
    """SQL true of a row an agent (bound at ``param``) sees, as ``ferrex.rules.visibility.sees``
    decides for a caller that is not the operator (who sees every row, and needs no clause);
    ``table``: the columns' qualifier (``"m."``)."""
    return f"({table}visibility='shared' OR {table}agent_id IS NULL OR {table}agent_id={param})"


_SINGLE_FACT = (
    "type='semantic' AND t_invalid IS NULL AND multi_valued=0 AND subject IS NOT NULL "
    "AND subject != '' AND predicate_normalized IS NOT NULL AND predicate_normalized != ''"
)
"""The facts that may contradict one another (active, single-valued, with a subject and a
predicate), spelt exactly as ``memories_single_facts`` is restricted."""

# Aggregates for stats and reflect (``ferrex.read.insight``), kept by SQLite itself as rows of
# ``memories`` come, change and go, so every write path (and a rebuild) derives the same.
#
# ``memory_counts``: how many memories per namespace, type, scope (owner, visibility), whether
# active (``t_invalid`` unset) and whether they have a time to live. Timeless: the labels that
# move with time are not counted here (see ``memories_clock`` below). ``owner`` is the agent id
# or '' with ``owned`` 0 (a primary key never holds two NULLs equal).
#
# ``memories_clock``: an index on the *oldest clock* of an active memory, the earliest of the
# times its staleness counts from (learned, last accessed or else stored, last validated or
# else stored). Every component of the score only grows with ``now - clock``, so a memory
# whose oldest clock is recent cannot be aging or stale; reflect fetches only the old ones.
#
# ``unvalidated_counts``: how many active memories were never validated, per namespace and
# scope (whatever their store time or expiry). The never-validated count of stats at ``now``
# is this minus the ones stored too recently and the old ones expired but not swept yet,
# both read from ``memories_unvalidated_scoped`` (a range of recent store times, and the
# few with an expiry), so its cost follows the recent memories, not all of them.
#
# ``memories_single_facts``: the facts that may contradict one another (``_SINGLE_FACT``), by
# namespace, subject key, predicate and object form, with their scope and expiry (and the
# columns of its own restriction, or SQLite would not take it as covering): the
# contradictions of stats and reflect are counted from it per (subject, predicate) group in
# SQL (``ReadModel.fact_groups``), never reading a fact into Python.
#
# ``memories_unvalidated_scoped``: the active memories never validated, by store time, with
# every column their count per scope reads (``t_invalid`` and ``last_validated`` too, always
# NULL here, or SQLite would not take it as covering), so the count never visits the table.
# It replaced ``memories_unvalidated`` (store time and id alone: the count read every row),
# dropped when a file that has it is opened.
_AGGREGATES = f"""
CREATE TABLE IF NOT EXISTS memory_counts (
    namespace TEXT NOT NULL,
    type TEXT NOT NULL,
    owner TEXT NOT NULL,
    owned INTEGER NOT NULL,
    visibility TEXT NOT NULL,
    active INTEGER NOT NULL,
    expiring INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (namespace, type, owner, owned, visibility, active, expiring)
);
CREATE TRIGGER IF NOT EXISTS memory_counts_in AFTER INSERT ON memories BEGIN
    {_counted("new", +1)}
END;
CREATE TRIGGER IF NOT EXISTS memory_counts_out AFTER DELETE ON memories BEGIN
    {_counted("old", -1)}
END;
CREATE TRIGGER IF NOT EXISTS memory_counts_change
AFTER UPDATE OF namespace, type, agent_id, visibility, t_invalid, expires_at ON memories BEGIN
    {_counted("old", -1)}
    {_counted("new", +1)}
END;
CREATE INDEX IF NOT EXISTS memories_clock ON memories (namespace, type, min(
    max(t_valid, created_at), coalesce(last_accessed, created_at),
    coalesce(last_validated, created_at))) WHERE t_invalid IS NULL;
DROP INDEX IF EXISTS memories_unvalidated;
CREATE INDEX IF NOT EXISTS memories_unvalidated_scoped ON memories (created_at, memory_id,
    namespace, agent_id, visibility, expires_at, t_invalid, last_validated)
    WHERE t_invalid IS NULL AND last_validated IS NULL;
CREATE INDEX IF NOT EXISTS memories_latest ON memories (created_at DESC, memory_id)
    WHERE t_invalid IS NULL;
CREATE INDEX IF NOT EXISTS memories_single_facts ON memories (namespace, subject_key,
    predicate_normalized, object_form, agent_id, visibility, expires_at, type, t_invalid,
    multi_valued, subject) WHERE {_SINGLE_FACT};
"""


def _unvalidated_triggers() -> str:
    """The ``unvalidated_counts`` table and its triggers: a row of ``memories`` counts while
    active and never validated; an update counts its old row out and its new row in."""
    counted = "{0}.t_invalid IS NULL AND {0}.last_validated IS NULL"
    into = (
        "INSERT INTO unvalidated_counts VALUES (new.namespace, coalesce(new.agent_id, ''), "
        "new.agent_id IS NOT NULL, new.visibility, 1) "
        "ON CONFLICT (namespace, owner, owned, visibility) DO UPDATE SET n = n + 1;"
    )
    out = (
        "UPDATE unvalidated_counts SET n = n - 1 WHERE namespace = old.namespace "
        "AND owner = coalesce(old.agent_id, '') AND owned = (old.agent_id IS NOT NULL) "
        "AND visibility = old.visibility; DELETE FROM unvalidated_counts WHERE n <= 0;"
    )
    update = "UPDATE OF namespace, agent_id, visibility, t_invalid, last_validated"
    triggers = (("in", "INSERT", "new", into), ("out", "DELETE", "old", out),
                ("was", update, "old", out), ("is", update, "new", into))  # fmt: skip
    return (
        "CREATE TABLE IF NOT EXISTS unvalidated_counts (namespace TEXT NOT NULL, "
        "owner TEXT NOT NULL, owned INTEGER NOT NULL, visibility TEXT NOT NULL, "
        "n INTEGER NOT NULL, PRIMARY KEY (namespace, owner, owned, visibility));\n"
    ) + "".join(
        f"CREATE TRIGGER IF NOT EXISTS unvalidated_counts_{name} AFTER {what} ON memories "
        f"WHEN {counted.format(row)} BEGIN {body} END;\n"
        for name, what, row, body in triggers
    )


_UNVALIDATED_COUNTS = _unvalidated_triggers()


def _spelling_generation_triggers() -> str:
    # Any write to what ReadModel.spellings reads moves the generation, whoever writes it
    # (apply, reconcile's replace_rows, another process): a cached list of a generation
    # other than the file's is never served.
    bumps = "".join(
        f"CREATE TRIGGER IF NOT EXISTS spelling_gen_{table}_{verb} AFTER {verb.upper()} "
        f"ON {table} BEGIN UPDATE spelling_generation SET n = n + 1; END;\n"
        for table in ("aliases", "entities", "entity_kept_for")
        for verb in ("insert", "update", "delete")
    )
    return (
        "CREATE TABLE IF NOT EXISTS spelling_generation (n INTEGER NOT NULL);\n"
        "INSERT INTO spelling_generation (n) SELECT 0 "
        "WHERE NOT EXISTS (SELECT 1 FROM spelling_generation);\n" + bumps
    )


_SPELLING_GENERATION = _spelling_generation_triggers()

_CLOCK = (
    "min(max(t_valid, created_at), coalesce(last_accessed, created_at), "
    "coalesce(last_validated, created_at))"
)
"""The oldest clock of a memory, spelt exactly as ``memories_clock`` indexes it."""

# The staleness score of ``ferrex.rules.freshness`` (``staleness``), term for term and in the
# same order of operations, as SQLite's math functions compute it (the parameters come from
# :class:`Scoring`). It may differ from Python's in the last bits (``pow(2, x)`` against
# ``exp2(x)``), so insight only trusts the label it gives a memory whose score is further
# than ``:margin`` from a threshold, and assesses the others in Python.
_SCORE = (
    "min(1.0, max(0.0, "
    ":w_age * (1.0 - pow(2.0, -max(0.0, :now - max(t_valid, created_at)) / :h_age)) + "
    ":w_access * (1.0 - pow(2.0, -max(0.0, :now - coalesce(last_accessed, created_at)) "
    "/ :h_access)) + "
    ":w_validation * (1.0 - pow(2.0, -max(0.0, :now - coalesce(last_validated, created_at)) "
    "/ :h_validation)) + "
    ":w_count * (1.0 - min(1.0, ln(1 + max(0, access_count)) / :ln_saturation))))"
)
_BAND = (
    "CASE WHEN s >= :stale + :margin THEN 'stale' WHEN s >= :stale - :margin THEN 'unsure' "
    "WHEN s >= :aging + :margin THEN 'aging' WHEN s >= :aging - :margin THEN 'unsure' "
    "ELSE 'fresh' END"
)
# Keeps a subquery apart (SQLite does not flatten one with a LIMIT), so that its score is
# computed once per row, not again wherever the outer query names it.
_APART = " LIMIT -1"
# The memories whose label moves with time, of one namespace and type: active, not pinned
# (a pinned memory is fresh), unexpired, clocked before ``:before`` (``memories_clock``), and
# not among ``:skip`` (a JSON array of ids: those with recall hits not journaled yet).
_LABELLED = (
    f"namespace=:namespace AND type=:type AND t_invalid IS NULL AND {_CLOCK} < :before "
    "AND pinned=0 AND (expires_at IS NULL OR expires_at > :now) "
    "AND memory_id NOT IN (SELECT value FROM json_each(:skip))"
)

TABLES = (
    "memories",
    "entities",
    "aliases",
    "memory_entities",
    "possible_conflicts",
    "entity_differs",
    "fact_differs",
    "entity_kept_for",
    "folds",
    "memory_counts",
    "unvalidated_counts",
    "forgotten",
)


@dataclass(frozen=True)
class Rules:
    """Values the read model derives with rules that may change (a change is a backfill).

    ``predicate(namespace, recorded)`` re-normalizes the predicate a fact's event recorded at
    store time with the current rules; None keeps the recorded one. ``object_form(text)`` is
    the comparable form of a fact's object (``ferrex.rules.subjects.object_form``), kept in
    ``memories.object_form`` so that contradictions are counted in SQL; None keeps none (and
    ``ReadModel.fact_groups`` says so). ``identity`` names the rules: the live projection
    records it, and a different one at start rebuilds the read model.
    """

    identity: str = ""
    predicate: Callable[[str, str], str] | None = None
    object_form: Callable[[str], str] | None = None


NO_RULES = Rules()


class ReadModelError(Exception):
    """The read model file cannot be used (corrupt, or written by another schema)."""


class ReadModelFull(ReadModelError):
    """The disk holding the read model is full: a write transaction was rolled back."""


@dataclass(frozen=True)
class Scoring:
    """One memory type's staleness score and label thresholds, as the read model's label
    queries compute them (``ferrex.read.insight`` builds it from
    ``ferrex.rules.freshness.StalenessParams``): the weights of the age, access, validation
    and count components, the three clocks' half-lives in seconds, the count saturation,
    the aging and stale score thresholds, and the margin within which a label is unsure."""

    weights: tuple[float, float, float, float]
    half_lives: tuple[float, float, float]
    count_saturation: int
    aging: float
    stale: float
    margin: float

    def bindings(self, now: float) -> dict[str, Any]:
        w_age, w_access, w_validation, w_count = self.weights
        h_age, h_access, h_validation = self.half_lives
        return {
            "now": now, "w_age": w_age, "w_access": w_access, "w_validation": w_validation,
            "w_count": w_count, "h_age": h_age, "h_access": h_access,
            "h_validation": h_validation, "ln_saturation": math.log1p(self.count_saturation),
            "aging": self.aging, "stale": self.stale, "margin": self.margin,
        }  # fmt: skip


@dataclass(frozen=True)
class LabelQuery:
    """Which memories a label query reads (see ``_LABELLED``: of one namespace and type,
    clocked before ``before``, none of ``skip``) and how it scores them at ``now``."""

    namespace: str
    type: str
    scoring: Scoring
    before: float
    now: float
    skip: tuple[str, ...] = ()

    def bindings(self) -> dict[str, Any]:
        return {**self.scoring.bindings(self.now), "namespace": self.namespace,
                "type": self.type, "before": self.before,
                "skip": json.dumps(list(self.skip))}  # fmt: skip


@dataclass(frozen=True, slots=True)
class LabelCount:
    """How many memories of one scope (owner, visibility) a label query puts in one band
    (``stale``, ``aging``, ``fresh``, or ``unsure``: too near a threshold to tell in SQL),
    and whether they were recalled fewer than the given number of times; the unsure ones'
    ids."""

    agent_id: str | None
    visibility: str
    band: str
    rarely: bool
    n: int
    unsure: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FactRow:
    """A fact as contradictions read it (``ReadModel.single_facts``): the fields of
    :class:`Memory` they look at, its subject key and its scope."""

    memory_id: str
    namespace: str
    type: str
    t_invalid: float | None
    multi_valued: bool
    subject: str | None
    subject_key: str
    predicate_normalized: str | None
    object: str | None
    agent_id: str | None
    visibility: str


class FactGroup(NamedTuple):
    """How many facts a caller sees of one namespace, subject key and predicate
    (``ReadModel.fact_groups``), and the least and greatest of their object forms: they
    disagree when these differ. A tuple: tens of thousands are made per call."""

    namespace: str
    subject_key: str
    predicate_normalized: str
    n: int
    least_form: str
    greatest_form: str


class FactSubject(NamedTuple):
    """The facts a caller sees of one namespace and subject key (``ReadModel.fact_subjects``):
    its predicates (a JSON array, the same text for the same list, so that it can key a
    cache) and how many of them have facts that disagree (their least and greatest object
    forms differ). A tuple: thousands are made per call."""

    namespace: str
    subject_key: str
    predicates: str
    disagreeing: int


_CHUNK = 5_000
"""The most ids one ``IN (...)`` query of :meth:`ReadModel.by_ids` names."""

_PAGE = 256
"""Rows per page of the read model's paged queries."""


def _ts(value: datetime) -> float:
    return value.timestamp()


def _json(value: object) -> str | None:
    if value is None or value == ():
        return None
    return msgspec.json.encode(value).decode()


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _on_read_only_disk(path: Path) -> bool:
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


class ReadModel:
    """The read model in one SQLite file. Open with :meth:`open`; close when done."""

    def __init__(
        self,
        path: Path,
        connection: apsw.Connection,
        rules: Rules = NO_RULES,
        *,
        busy_timeout_ms: int = 10_000,
        immutable: bool = False,
    ) -> None:
        self.path = path
        self._primary = connection
        self.rules = rules
        self._busy_timeout_ms = busy_timeout_ms
        self._immutable = immutable
        self._local = threading.local()  # this thread's reader connection and snapshot depth
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        # namespace → (spelling generation, its spellings): a store resolves its names
        # against every spelling of the namespace, ~0.24 s to read at 30k spellings.
        self._spelling_cache: dict[str, tuple[int, tuple[Spelling, ...]]] = {}

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
            # A statement journal (a write whose triggers touch several rows) stays in memory,
            # not a temporary file under /var/tmp written and dropped on every store.
            db.pragma("temp_store", "memory")
            # An INSERT OR REPLACE of a memory fires the delete trigger of the row it replaces.
            db.pragma("recursive_triggers", 1)
            with _immediate(db):
                db.execute(_SCHEMA)
                _add_aggregates(db)
                if db.execute("SELECT value FROM meta WHERE key='schema_version'").get is None:
                    db.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),),
                    )
        except apsw.Error as exc:
            raise ReadModelError(f"cannot open the read model {path}: {exc}") from exc
        return cls(path, db, rules, busy_timeout_ms=busy_timeout_ms)

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
        return cls(path, db, rules, immutable=True)

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
                    for change in fold.changes(event):
                        self._apply_change(change, record)
            if fresh:
                self._write_checkpoint(SQLITE, fresh[-1].position)
        return len(fresh)

    def _apply_change(self, change: fold.Change, record: Record) -> None:
        # Each change of the one fold (``projections.fold``) as SQL, by concept.
        if isinstance(change, fold.MemoryChange):
            self._memory_change(change, record)
        elif isinstance(change, fold.EntityChange):
            self._entity_change(change, record)
        else:
            self._flag_change(change)

    def _memory_change(self, change: fold.MemoryChange, record: Record) -> None:
        db = self.db
        match change:
            case fold.PutMemory():
                self._put_memory(change.event, record)
            case fold.Invalidated():
                db.execute(
                    "UPDATE memories SET t_invalid=?, superseded_by=? WHERE memory_id=?",
                    (change.t_invalid, change.superseded_by, change.memory_id),
                )
            case fold.Revalidated():
                db.execute(
                    "UPDATE memories SET t_invalid=NULL, superseded_by=NULL "
                    "WHERE memory_id=? AND superseded_by=?",
                    (change.memory_id, change.summary_id),
                )
            case fold.Validated():
                db.execute(
                    "UPDATE memories SET last_validated=max(coalesce(last_validated, ?), ?) "
                    "WHERE memory_id=?",
                    (change.at, change.at, change.memory_id),
                )
            case fold.Accessed():
                db.execute(
                    "UPDATE memories SET access_count=access_count+?, "
                    "last_accessed=max(coalesce(last_accessed, ?), ?) WHERE memory_id=?",
                    (change.count, change.at, change.at, change.memory_id),
                )
            case fold.Marked():
                db.execute(
                    "UPDATE memories SET importance=?, pinned=?, expires_at=? WHERE memory_id=?",
                    (change.importance, 1 if change.pinned else 0, change.expires_at,
                     change.memory_id),
                )  # fmt: skip
            case fold.Relinked():
                self._relink(change)
            case fold.Forgot():
                self._forget(change.memory_ids)
            case _:
                assert_never(change)

    def _entity_change(self, change: fold.EntityChange, record: Record) -> None:
        db = self.db
        match change:
            case fold.PutEntity():
                db.execute(
                    "INSERT OR REPLACE INTO entities (entity_id, namespace, name, normalized, "
                    "kind, created_at, agent_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (change.entity_id, change.namespace, change.name, change.normalized,
                     change.kind, _ts(record.recorded_at), change.agent_id),
                )  # fmt: skip
            case fold.PutSpelling():
                db.execute(
                    "INSERT OR REPLACE INTO aliases (namespace, normalized, alias, entity_id, "
                    "match, score, agent_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (change.namespace, change.normalized, change.alias, change.entity_id,
                     change.match, change.score, change.agent_id),
                )  # fmt: skip
            case fold.DropSpelling():
                family = "(SELECT entity_id FROM entities WHERE entity_id=? OR merged_into=?)"
                db.execute(
                    "DELETE FROM aliases WHERE namespace=? AND normalized=? "
                    f"AND entity_id IN {family}",
                    (change.namespace, change.normalized, change.entity_id, change.entity_id),
                )
            case fold.DropEntities():
                for entity_id in change.entity_ids:
                    db.execute("DELETE FROM entities WHERE entity_id=?", (entity_id,))
                    db.execute("DELETE FROM aliases WHERE entity_id=?", (entity_id,))
                    db.execute("DELETE FROM entity_kept_for WHERE entity_id=?", (entity_id,))
            case fold.KeptFor():
                db.execute("DELETE FROM entity_kept_for WHERE entity_id=?", (change.entity_id,))
                for agent_id in change.agent_ids:
                    db.execute(
                        "INSERT OR IGNORE INTO entity_kept_for (entity_id, agent_id) VALUES (?, ?)",
                        (change.entity_id, agent_id),
                    )
            case fold.Merged():
                self._merge(change.absorbed, change.into)
            case _:
                assert_never(change)

    def _flag_change(self, change: fold.FlagChange) -> None:
        db = self.db
        match change:
            case fold.Flagged():
                c = change.conflict
                db.execute(
                    "INSERT OR REPLACE INTO possible_conflicts (namespace, memory_id, "
                    "other_id, entity_id, other_entity_id, reason, score) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (change.namespace, c.memory_id, c.other_id, c.entity_id, c.other_entity_id,
                     c.reason, c.score),
                )  # fmt: skip
            case fold.Differ():
                first, second = sorted((change.entity_id, change.other_id))
                db.execute(
                    "INSERT OR IGNORE INTO entity_differs (namespace, entity_id, other_id) "
                    "VALUES (?, ?, ?)",
                    (change.namespace, first, second),
                )
            case fold.FoldedPair():
                db.execute(
                    "INSERT OR REPLACE INTO folds (summary_id, memory_id, namespace) "
                    "VALUES (?, ?, ?)",
                    (change.summary_id, change.memory_id, change.namespace),
                )
            case fold.Unfolded():
                db.execute("DELETE FROM folds WHERE summary_id=?", (change.summary_id,))
            case fold.Unflagged():
                db.execute(
                    "DELETE FROM possible_conflicts WHERE (memory_id=? AND other_id=?) "
                    "OR (memory_id=? AND other_id=?)",
                    (change.memory_id, change.other_id, change.other_id, change.memory_id),
                )
                first, second = sorted((change.memory_id, change.other_id))
                db.execute(
                    "INSERT OR IGNORE INTO fact_differs (namespace, memory_id, other_id) "
                    "VALUES (?, ?, ?)",
                    (change.namespace, first, second),
                )
            case _:
                assert_never(change)

    def _put_memory(self, event: MemoryStored, record: Record) -> None:
        db = self.db
        m = Memory.from_event(
            event,
            position=record.position,
            created_at=_ts(record.recorded_at),
            predicate_normalized=self._predicate(event.namespace, event.body),
        )
        db.execute(
            "INSERT OR REPLACE INTO memories (memory_id, namespace, type, content, "
            "subject, subject_key, predicate, object, predicate_normalized, "
            "procedure_name, procedure_version, conditions, steps, source, context, "
            "confidence, agent_id, visibility, supersedes, t_valid, t_invalid, "
            "superseded_by, created_at, position, redacted, multi_valued, episode, "
            "episode_index, import_key, object_form, valid_from_given) VALUES (?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                m.memory_id, m.namespace, m.type, m.content, m.subject, m.subject_key,
                m.predicate, m.object, m.predicate_normalized, m.procedure_name,
                m.procedure_version, _json(m.conditions), _json(m.steps), m.source,
                _json(m.context), m.confidence, m.agent_id, m.visibility, m.supersedes,
                m.t_valid, m.created_at, m.position, 1 if m.redacted else 0,
                1 if m.multi_valued else 0, m.episode, m.episode_index, m.import_key,
                self._object_form(m), 1 if m.valid_from_given else 0,
            ),
        )  # fmt: skip
        db.execute("DELETE FROM memory_entities WHERE memory_id=?", (m.memory_id,))
        for entity_id in m.entity_ids:
            db.execute(
                "INSERT INTO memory_entities (memory_id, entity_id) VALUES (?, ?)",
                (m.memory_id, entity_id),
            )

    def _forget(self, memory_ids: Sequence[str]) -> None:
        db = self.db
        for memory_id in memory_ids:
            # Who could see it, kept (no text) so a change stream tells only them it went.
            db.execute(
                "INSERT OR REPLACE INTO forgotten (memory_id, agent_id, visibility) "
                "SELECT memory_id, agent_id, visibility FROM memories WHERE memory_id=?",
                (memory_id,),
            )
            db.execute("DELETE FROM memories WHERE memory_id=?", (memory_id,))
            db.execute("DELETE FROM memory_entities WHERE memory_id=?", (memory_id,))
            db.execute(
                "DELETE FROM possible_conflicts WHERE memory_id=? OR other_id=?",
                (memory_id, memory_id),
            )
            db.execute(
                "DELETE FROM fact_differs WHERE memory_id=? OR other_id=?", (memory_id, memory_id)
            )
            db.execute(
                "DELETE FROM folds WHERE memory_id=? OR summary_id=?", (memory_id, memory_id)
            )

    def _merge(self, absorbed: str, into: str) -> None:
        # Spellings keep their rows (their vectors are keyed by them); the entity points on.
        db = self.db
        db.execute(
            "UPDATE entities SET merged_into=? WHERE entity_id=? OR merged_into=?",
            (into, absorbed, absorbed),
        )
        for column in ("entity_id", "other_entity_id"):
            db.execute(
                f"UPDATE possible_conflicts SET {column}=? WHERE {column}=?", (into, absorbed)
            )
        db.execute(
            "DELETE FROM entity_differs WHERE (entity_id=? AND other_id=?) "
            "OR (entity_id=? AND other_id=?)",
            (absorbed, into, into, absorbed),
        )

    def _relink(self, link: fold.Relinked) -> None:
        # Only memories still here: a forgotten memory's links are gone with it.
        db = self.db
        if db.execute("SELECT 1 FROM memories WHERE memory_id=?", (link.memory_id,)).fetchone():
            db.execute("DELETE FROM memory_entities WHERE memory_id=?", (link.memory_id,))
            for entity_id in link.entity_ids:
                db.execute(
                    "INSERT INTO memory_entities (memory_id, entity_id) VALUES (?, ?)",
                    (link.memory_id, entity_id),
                )

    def _object_form(self, m: Memory) -> str | None:
        # The form contradictions compare (an absent object is the empty text's form).
        form = self.rules.object_form
        return None if form is None or m.type != "semantic" else form(m.object or "")

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
        rows = list(self.db.execute(sql, args))
        # Every row's entities in one query, not one per row: by ids (recall asks for dozens
        # at a time), or for a whole namespace (stats and reflect read every memory).
        linked = self._grouped(
            "SELECT me.memory_id, me.entity_id FROM memory_entities AS me",
            "me.memory_id", memory_ids, namespace,
            "JOIN memories AS m ON m.memory_id = me.memory_id WHERE m.namespace=?",
            " ORDER BY me.memory_id, me.entity_id",
        )  # fmt: skip
        return [self._memory(row, tuple(linked.get(str(row[0]), ()))) for row in rows]

    def forgotten_seen(self, memory_ids: Sequence[str], agent_id: str | None) -> set[str]:
        """Which of these forgotten memories ``agent_id`` could see before they went (None:
        the operator, every one), asked in chunks of ids."""
        found: set[str] = set()
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            where = f"memory_id IN ({','.join('?' * len(chunk))})"
            if agent_id is not None:
                where += f" AND {_seen_by()}"
                chunk.append(agent_id)
            sql = f"SELECT memory_id FROM forgotten WHERE {where}"
            found.update(str(row[0]) for row in self.db.execute(sql, chunk))
        return found

    def context_values(
        self,
        key: str,
        *,
        agent_id: str | None,
        now: float,
        namespace: str | None = None,
        state: str = "current",
        limit: int = 100,
    ) -> list[tuple[str, int]]:
        """The text values of context key ``key`` (a value, or the texts of a list) over the
        memories ``agent_id`` sees (None: the operator), unexpired at ``now``, with how many
        memories hold each: most first, then by value."""
        where = ["(m.expires_at IS NULL OR m.expires_at > ?)", "j.type = 'text'"]
        args: list[Any] = [now]
        if agent_id is not None:
            where.append(_seen_by(table="m."))
            args.append(agent_id)
        if namespace is not None:
            where.append("m.namespace=?")
            args.append(namespace)
        if state == "current":
            where.append("m.t_invalid IS NULL")
        elif state == "superseded":
            where.append("m.t_invalid IS NOT NULL")
        sql = (f"SELECT j.value, COUNT(DISTINCT m.memory_id) AS n FROM memories AS m, "
               f"json_each(m.context, ?) AS j WHERE {' AND '.join(where)} "
               f"GROUP BY j.value ORDER BY n DESC, j.value LIMIT ?")  # fmt: skip
        rows = self.db.execute(sql, [context_path(key), *args, limit])
        return [(str(value), int(n)) for value, n in rows]

    def memory_page(
        self,
        *,
        agent_id: str | None,
        now: float,
        namespace: str | None = None,
        types: Sequence[str] = (),
        source: str | None = None,
        entity_ids: Sequence[str] | None = None,
        visibility: str | None = None,
        state: str = "current",
        after: float | None = None,
        before: float | None = None,
        sort: str = "-created",
        cursor: tuple[float, str] | None = None,
        limit: int = 50,
        context: Sequence[tuple[str, str]] = (),
    ) -> list[Memory]:
        """One page of the memories ``agent_id`` sees (None: the operator, every one), unexpired
        at ``now``, filtered, in ``sort`` order (``created`` or ``valid_from``, ``-`` first for
        newest first; ties by id), starting after ``cursor`` (the sort value and id of the
        last memory of the page before). ``state``: ``current`` (not superseded), ``superseded``
        or ``all``; ``after``/``before``: the event time's window (``t_valid``); ``context``:
        (key, value) pairs the memory's context holds, each (:func:`_context_holds`)."""
        column = {"created": "created_at", "valid_from": "t_valid"}[sort.lstrip("-")]
        newest_first = sort.startswith("-")
        where = ["(expires_at IS NULL OR expires_at > ?)"]
        args: list[Any] = [now]
        if agent_id is not None:
            where.append(_seen_by())
            args.append(agent_id)
        for clause, value in (("namespace=?", namespace), ("source=?", source),
                              ("visibility=?", visibility), ("t_valid>=?", after),
                              ("t_valid<?", before)):  # fmt: skip
            if value is not None:
                where.append(clause)
                args.append(value)
        if types:
            where.append(f"type IN ({','.join('?' * len(types))})")
            args.extend(types)
        if entity_ids is not None:
            if not entity_ids:
                return []
            where.append(
                "memory_id IN (SELECT memory_id FROM memory_entities WHERE entity_id IN "
                f"({','.join('?' * len(entity_ids))}))"
            )
            args.extend(entity_ids)
        if state == "current":
            where.append("t_invalid IS NULL")
        elif state == "superseded":
            where.append("t_invalid IS NOT NULL")
        for key, value in context:
            where.append(_context_holds())
            args.extend([context_path(key), value])
        if cursor is not None:
            beyond = "<" if newest_first else ">"
            where.append(f"({column} {beyond} ? OR ({column} = ? AND memory_id {beyond} ?))")
            args.extend([cursor[0], cursor[0], cursor[1]])
        direction = "DESC" if newest_first else "ASC"
        sql = (f"SELECT memory_id FROM memories WHERE {' AND '.join(where)} "
               f"ORDER BY {column} {direction}, memory_id {direction} LIMIT ?")  # fmt: skip
        ids = [str(row[0]) for row in self.db.execute(sql, [*args, limit])]
        found = {m.memory_id: m for m in self.memories(memory_ids=ids)}
        return [found[i] for i in ids if i in found]

    def _memory(self, row: tuple[Any, ...], entity_ids: tuple[str, ...] | None = None) -> Memory:
        (mid, ns, typ, content, subj, _skey, pred, obj, pnorm, pname, pver, conds, steps, source,
         context, conf, agent, vis, sup, tv, ti, sby, created, pos, red, acount, lacc,
         lval, multi, episode, episode_index, importance, pinned, expires_at,
         import_key, _form, *rest) = row  # fmt: skip
        # NULL (a row folded before the flag existed) or absent (an older file opened
        # read-only): read by the rule for events without it.
        given = rest[0] if rest else None
        if entity_ids is None:
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
            multi_valued=bool(multi),
            episode=episode,
            episode_index=int(episode_index),
            importance=float(importance),
            pinned=bool(pinned),
            expires_at=expires_at,
            import_key=import_key,
            valid_from_given=given_by_time(tv, created) if given is None else bool(given),
        )

    def _where(self, sql: str, args: Sequence[Any]) -> list[Memory]:
        return [self._memory(row) for row in self.db.execute(sql, args)]

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]:
        """Semantic memories still valid for one subject (its :func:`subject_key`) and
        normalized predicate, by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND subject_key=? "
            "AND predicate_normalized=? AND t_invalid IS NULL AND type='semantic' "
            "ORDER BY memory_id",
            (namespace, key, predicate),
        )

    def imported(self, namespace: str, key: str) -> list[Memory]:
        """The memories an import line with this key stored (valid or not), by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND import_key=? ORDER BY memory_id",
            (namespace, key),
        )

    def subject_facts(self, namespace: str, key: str) -> list[Memory]:
        """Every semantic memory of one subject (valid or not), by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND subject_key=? AND type='semantic' "
            "ORDER BY memory_id",
            (namespace, key),
        )

    def procedures(self, namespace: str, name: str) -> list[Memory]:
        """Every version of one named procedure, by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND type='procedural' "
            "AND procedure_name=? ORDER BY memory_id",
            (namespace, name),
        )

    def replaced_by(self, memory_id: str) -> list[Memory]:
        """The memories ``memory_id`` superseded (an explicit ``supersedes`` or a newer value
        of a fact), by id: a history walks back through them."""
        return self._where(
            "SELECT * FROM memories WHERE superseded_by=? ORDER BY memory_id", (memory_id,)
        )

    def spellings(self, namespace: str) -> list[Spelling]:
        """Every known spelling of every entity of a namespace, by normalized form. The
        spellings of an entity merged into another are that other's.

        Kept per namespace until the file's spelling generation moves (read before the
        spellings, so a list is never older than the generation it is kept under)."""
        try:
            generation = int(self.db.execute("SELECT n FROM spelling_generation").get)
        except apsw.SQLError:  # an older ferrex's file, opened immutable: nothing to key on
            return self._read_spellings(namespace)
        cached = self._spelling_cache.get(namespace)
        if cached is not None and cached[0] == generation:
            return list(cached[1])
        found = self._read_spellings(namespace)
        self._spelling_cache[namespace] = (generation, tuple(found))
        return found

    def _read_spellings(self, namespace: str) -> list[Spelling]:
        kept = self._kept_for(namespace)
        return [
            _spelling(row, kept)
            for row in self.db.execute(
                "SELECT coalesce(e.merged_into, a.entity_id), a.alias, a.normalized, a.agent_id, "
                "e.merged_into, a.entity_id, e.agent_id "
                "FROM aliases a LEFT JOIN entities e ON e.entity_id=a.entity_id "
                "WHERE a.namespace=? ORDER BY a.normalized, 1",
                (namespace,),
            )
        ]  # fmt: skip

    def entity_spellings(self, namespace: str, normalized: str) -> list[Spelling]:
        """Every spelling of the entities that ``normalized`` spells in a namespace (the
        spelling itself included), as :meth:`spellings` reports them, by normalized form."""
        ids = sorted(
            {
                str(e)
                for (e,) in self.db.execute(
                    "SELECT coalesce(e.merged_into, a.entity_id) FROM aliases a "
                    "LEFT JOIN entities e ON e.entity_id=a.entity_id "
                    "WHERE a.namespace=? AND a.normalized=?",
                    (namespace, normalized),
                )
            }
        )
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        kept = self._kept_for(entity_ids=ids)
        return [
            _spelling(row, kept)
            for row in self.db.execute(
                "SELECT coalesce(e.merged_into, a.entity_id), a.alias, a.normalized, a.agent_id, "
                "e.merged_into, a.entity_id, e.agent_id FROM aliases a "
                "LEFT JOIN entities e ON e.entity_id=a.entity_id "
                f"WHERE a.namespace=? AND (a.entity_id IN ({marks}) OR a.entity_id IN "
                f"(SELECT entity_id FROM entities WHERE merged_into IN ({marks}))) "
                "ORDER BY a.normalized, 1",
                (namespace, *ids, *ids),
            )
        ]  # fmt: skip

    def _kept_for(
        self, namespace: str | None = None, entity_ids: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        """Entity id → the agents a cascade kept it for (entities kept for everyone absent)."""
        return self._grouped(
            "SELECT k.entity_id, k.agent_id FROM entity_kept_for AS k",
            "k.entity_id", entity_ids, namespace,
            "JOIN entities AS e ON e.entity_id = k.entity_id WHERE e.namespace=?",
        )  # fmt: skip

    def _grouped(
        self,
        select: str,
        key: str,
        ids: Sequence[str] | None,
        namespace: str | None,
        in_namespace: str,
        order: str = "",
    ) -> dict[str, list[str]]:
        """The pairs ``select`` reads, grouped by their first column: of the ``ids`` (on
        column ``key``), else of a ``namespace`` (through the join ``in_namespace``), else
        all of them."""
        if ids is not None:
            if not ids:
                return {}
            rows = self.db.execute(
                f"{select} WHERE {key} IN ({','.join('?' * len(ids))}){order}", list(ids)
            )
        elif namespace is not None:
            rows = self.db.execute(f"{select} {in_namespace}{order}", (namespace,))
        else:
            rows = self.db.execute(f"{select}{order}")
        found: dict[str, list[str]] = {}
        for a, b in rows:
            found.setdefault(str(a), []).append(str(b))
        return found

    def alias_matches(self, entity_ids: Sequence[str]) -> list[AliasMatch]:
        """Every spelling of the given entities with how it was matched when first seen
        (``exact``, ``normalized``, ``fuzzy``, ``embedding``) and that match's score, by
        entity and alias."""
        if not entity_ids:
            return []
        kept = self._kept_for(entity_ids=entity_ids)
        return [
            AliasMatch(str(e), str(a), str(m), float(s), _text(g), str(n),
                       viewers(_text(z), kept.get(str(e), ())))
            for e, a, m, s, g, n, z in self.db.execute(
                f"SELECT coalesce(e.merged_into, a.entity_id), a.alias, a.match, a.score, "
                f"a.agent_id, a.normalized, e.agent_id FROM aliases a "
                f"LEFT JOIN entities e ON e.entity_id=a.entity_id "
                f"WHERE coalesce(e.merged_into, a.entity_id) "
                f"IN ({','.join('?' * len(entity_ids))}) ORDER BY 1, a.alias",
                list(entity_ids),
            )
        ]  # fmt: skip

    def entities(self, namespace: str | None = None) -> list[Entity]:
        """The entities of a namespace (of all of them when None), by id; not those merged
        into another."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        kept = self._kept_for(namespace or None)
        return [
            Entity(
                str(e),
                str(ns),
                str(n),
                _text(g),
                str(z),
                _text(k),
                viewers(_text(g), kept.get(str(e), ())),
            )
            for e, ns, n, g, z, k in self.db.execute(
                f"SELECT entity_id, namespace, name, agent_id, normalized, kind FROM entities "
                f"{where} {'AND' if where else 'WHERE'} merged_into IS NULL ORDER BY entity_id",
                args,
            )
        ]

    def entity_rows(
        self, namespace: str | None = None
    ) -> list[tuple[Entity, str | None, tuple[str, ...]]]:
        """Every entity, merged ones too, each with the entity it was merged into (None: not
        merged) and the agents a cascade kept it for (empty: not kept for some only),
        unmerged ones first, by id: what a dump carries."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        kept = self._kept_for(namespace or None)
        return [
            (
                Entity(str(e), str(ns), str(n), _text(g), str(z), _text(k)),
                _text(into),
                tuple(sorted(kept.get(str(e), ()))),
            )
            for e, ns, n, g, z, k, into in self.db.execute(
                "SELECT entity_id, namespace, name, agent_id, normalized, kind, merged_into "
                f"FROM entities {where} ORDER BY merged_into IS NOT NULL, entity_id",
                args,
            )
        ]

    def spelling_rows(self, namespace: str | None = None) -> list[AliasMatch]:
        """Every spelling as recorded, under the entity it was recorded for (not the one
        that entity was merged into), by entity and alias: what a dump carries."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        return [
            AliasMatch(str(e), str(a), str(m), float(s), _text(g), str(n))
            for e, a, m, s, g, n in self.db.execute(
                "SELECT entity_id, alias, match, score, agent_id, normalized FROM aliases "
                f"{where} ORDER BY entity_id, alias",
                args,
            )
        ]

    def entity_names(self, entity_ids: Sequence[str] | None = None) -> dict[str, str]:
        """Entity id → name, for the given ids (every entity when None)."""
        if entity_ids is None:
            rows = self.db.execute("SELECT entity_id, name FROM entities")
        elif not entity_ids:
            return {}
        else:
            rows = self.db.execute(
                f"SELECT entity_id, name FROM entities WHERE entity_id IN "
                f"({','.join('?' * len(entity_ids))})",
                list(entity_ids),
            )
        return {str(e): str(n) for e, n in rows}

    def links(self, entity_ids: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(entity id, memory id) pairs, for the given entities (every link when None)."""
        if entity_ids is None:
            rows = self.db.execute("SELECT entity_id, memory_id FROM memory_entities")
        elif not entity_ids:
            return []
        else:
            rows = self.db.execute(
                f"SELECT entity_id, memory_id FROM memory_entities WHERE entity_id IN "
                f"({','.join('?' * len(entity_ids))})",
                list(entity_ids),
            )
        return sorted((str(e), str(m)) for e, m in rows)

    def entity_links(
        self,
        namespace: str,
        entity_ids: Sequence[str],
        *,
        agent_id: str | None = None,
        only_valid: bool = True,
        limit: int = 200,
    ) -> list[tuple[str, str]]:
        """(memory id, entity id) pairs of the memories of ``namespace`` that name one of
        ``entity_ids``, from the latest memories (by journal position) back, at most
        ``limit`` memories. With ``agent_id``, only memories that agent may see (the rule
        of ``ferrex.rules.visibility``), chosen before the limit, so another agent's
        private memories never take a place; ``only_valid`` leaves out invalidated ones."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        seen = "" if agent_id is None else f" AND {_seen_by(table='m.')}"
        valid = " AND m.t_invalid IS NULL" if only_valid else ""
        args: list[Any] = [namespace, *entity_ids]
        if agent_id is not None:
            args.append(agent_id)
        rows = self.db.execute(
            f"SELECT m.memory_id FROM memories m WHERE m.namespace=? AND m.memory_id IN "
            f"(SELECT memory_id FROM memory_entities WHERE entity_id IN ({marks})){seen}{valid} "
            f"ORDER BY m.position DESC, m.memory_id LIMIT ?",
            (*args, limit),
        )
        chosen = [str(m) for (m,) in rows]
        if not chosen:
            return []
        pairs = self.db.execute(
            f"SELECT memory_id, entity_id FROM memory_entities WHERE memory_id IN "
            f"({','.join('?' * len(chosen))}) AND entity_id IN ({marks})",
            (*chosen, *entity_ids),
        )
        return sorted((str(m), str(e)) for m, e in pairs)

    def merged_ids(self, entity_ids: Sequence[str]) -> list[str]:
        """The given entity ids and every entity merged into one of them, sorted."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.db.execute(
            f"SELECT entity_id FROM entities WHERE merged_into IN ({marks})", list(entity_ids)
        )
        return sorted({*entity_ids, *(str(e) for (e,) in rows)})

    def possible_conflicts(
        self, memory_ids: Sequence[str] | None = None, namespace: str | None = None
    ) -> list[PossibleConflict]:
        """The possible conflicts of the given memories (of a namespace, or all, when None),
        seen from each side, without pairs whose entities were merged or said to differ,
        by memory and other."""
        if memory_ids is not None and not memory_ids:
            return []
        where, args = "", []
        if memory_ids is not None:
            marks = ",".join("?" * len(memory_ids))
            where = f"WHERE memory_id IN ({marks}) OR other_id IN ({marks})"
            args = [*memory_ids, *memory_ids]
        elif namespace is not None:
            where, args = "WHERE namespace=?", [namespace]
        rows = list(
            self.db.execute(
                "SELECT memory_id, other_id, entity_id, other_entity_id, reason, score "
                f"FROM possible_conflicts {where}",
                args,
            )
        )
        named = sorted({str(e) for row in rows for e in row[2:4]})
        differ = (
            {
                (str(a), str(b))
                for a, b in self.db.execute(
                    f"SELECT entity_id, other_id FROM entity_differs WHERE entity_id IN "
                    f"({','.join('?' * len(named))})",
                    named,
                )
            }
            if named
            else set()
        )
        out: dict[tuple[str, str], PossibleConflict] = {}
        for m, o, e, oe, r, sc in rows:
            # Subjects merged: a contradiction proper, unless the relations differed.
            if (e == oe and r != RELATION) or tuple(sorted((str(e), str(oe)))) in differ:
                continue
            out.setdefault(
                (str(m), str(o)),
                PossibleConflict(str(m), str(o), str(e), str(oe), str(r), float(sc)),
            )
            out.setdefault(
                (str(o), str(m)),
                PossibleConflict(str(o), str(m), str(oe), str(e), str(r), float(sc)),
            )
        wanted = None if memory_ids is None else set(memory_ids)
        return [c for key, c in sorted(out.items()) if wanted is None or c.memory_id in wanted]

    def possible_conflict_rows(self, namespace: str | None = None) -> list[PossibleConflict]:
        """The possible conflicts as their events recorded them (one row a pair and
        direction, merged or differing entities included), by memory and other: what a dump
        carries."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        return [
            PossibleConflict(str(m), str(o), str(e), str(f), str(r), float(c))
            for m, o, e, f, r, c in self.db.execute(
                "SELECT memory_id, other_id, entity_id, other_entity_id, reason, score FROM "
                f"possible_conflicts {where} ORDER BY memory_id, other_id",
                args,
            )
        ]

    def differing(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every pair of entities said to differ: (namespace, entity, other), by ids."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        return [
            (str(n), str(e), str(o))
            for n, e, o in self.db.execute(
                f"SELECT namespace, entity_id, other_id FROM entity_differs {where} "
                "ORDER BY entity_id, other_id",
                args,
            )
        ]

    def facts_differing(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every pair of facts said to both hold: (namespace, memory, other), by ids, the
        pair sorted."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        return [
            (str(n), str(m), str(o))
            for n, m, o in self.db.execute(
                f"SELECT namespace, memory_id, other_id FROM fact_differs {where} "
                "ORDER BY memory_id, other_id",
                args,
            )
        ]

    def fold_rows(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every memory folded into a summary: (namespace, summary, memory), by ids; what a
        dump carries of the consolidations."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        return [
            (str(n), str(s), str(m))
            for n, s, m in self.db.execute(
                f"SELECT namespace, summary_id, memory_id FROM folds {where} "
                "ORDER BY summary_id, memory_id",
                args,
            )
        ]

    def entities_differ(self, a: str, b: str) -> bool:
        """Whether the two entities were said to differ (or split apart)."""
        first, second = sorted((a, b))
        return (
            self.db.execute(
                "SELECT 1 FROM entity_differs WHERE entity_id=? AND other_id=?", (first, second)
            ).fetchone()
            is not None
        )

    def facts_differ(self, a: str, b: str) -> bool:
        """Whether the two facts were said to both hold (``facts.differ``)."""
        first, second = sorted((a, b))
        return (
            self.db.execute(
                "SELECT 1 FROM fact_differs WHERE memory_id=? AND other_id=?", (first, second)
            ).fetchone()
            is not None
        )

    def episode_neighbours(
        self, memory: Memory, reach: int, *, agent_id: str | None = None
    ) -> list[list[tuple[str, float]]]:
        """The episodes just before ``memory`` (nearest first) and just after it, up to
        ``reach`` each: ``[before, after]`` as (id, t_valid). With a ``source``: the episodes
        of its namespace and source, in event time. Without one, those of its derived
        ``episode``, in arrival order. Neither: no neighbours.

        With ``agent_id``, only episodes that agent may see (shared, unowned or its own:
        the rule of ``ferrex.rules.visibility``), so another agent's private episodes are not
        even stepping stones."""
        if memory.source:
            key, place = "source=? AND type='episodic'", "(t_valid, memory_id)"
            args: list[Any] = [memory.namespace, memory.source, memory.t_valid, memory.memory_id]
            by = "t_valid {0}, memory_id {0}"
        elif memory.episode is not None:
            key, place = "episode=?", "episode_index"
            args = [memory.namespace, memory.episode, memory.episode_index]
            by = "episode_index {0}"
        else:
            return [[], []]
        seen = "" if agent_id is None else f" AND {_seen_by()}"
        sides: list[list[tuple[str, float]]] = []
        for direction, order in (("<", "DESC"), (">", "ASC")):
            values = [*args, agent_id] if agent_id is not None else list(args)
            placeholder = "(?, ?)" if memory.source else "?"
            rows = self.db.execute(
                f"SELECT memory_id, t_valid FROM memories WHERE namespace=? AND {key} "
                f"AND {place} {direction} {placeholder}{seen} "
                f"ORDER BY {by.format(order)} LIMIT ?",
                (*values, reach),
            )
            sides.append([(str(m), float(t)) for m, t in rows])
        return sides

    def episode_before(self, namespace: str, key: str, position: int) -> tuple[str, str] | None:
        """The (id, text) of the last episodic memory with text of one episode stored before
        journal ``position``: ``key`` is ``source:<source>`` or ``episode:<id>`` (see
        ``projections.vector_sink.episode_key``). The neighbour a turn is embedded with."""
        kind, _, value = key.partition(":")
        column = "source" if kind == "source" else "episode"
        row = self.db.execute(
            f"SELECT memory_id, content FROM memories WHERE namespace=? AND {column}=? "
            "AND type='episodic' AND content IS NOT NULL AND position<? "
            "ORDER BY position DESC LIMIT 1",
            (namespace, value, position),
        ).get
        return (str(row[0]), str(row[1])) if row is not None else None

    def episode_tail(self, namespace: str, agent_id: str | None, visibility: str) -> Memory | None:
        """The last memory of ``agent_id``'s derived episodes in ``namespace`` with
        ``visibility`` (by journal position): where the next store of that agent may join."""
        rows = self._where(
            "SELECT * FROM memories WHERE namespace=? AND agent_id IS ? AND visibility=? "
            "AND episode IS NOT NULL ORDER BY position DESC LIMIT 1",
            (namespace, agent_id, visibility),
        )
        return rows[0] if rows else None

    def foldable(
        self, *, created_before: float, namespace: str | None = None, agent_id: str | None = None
    ) -> list[Memory]:
        """Episodic memories consolidation may fold: valid, learned before
        ``created_before`` (the read model's ``created_at``, when the journal recorded
        them, never their event time), not pinned, with no expiry, text not purged, not a
        summary themselves; of one namespace and one agent when given. In episode order."""
        sql = (
            "SELECT * FROM memories WHERE type='episodic' AND t_invalid IS NULL AND pinned=0 "
            "AND expires_at IS NULL AND redacted=0 AND content IS NOT NULL AND created_at<? "
            "AND memory_id NOT IN (SELECT summary_id FROM folds)"
        )
        args: list[Any] = [created_before]
        if namespace is not None:
            sql += " AND namespace=?"
            args.append(namespace)
        if agent_id is not None:
            sql += " AND agent_id=?"
            args.append(agent_id)
        sql += " ORDER BY namespace, t_valid, episode_index, position, memory_id"
        return self._where(sql, args)

    def folded(self, summary_id: str) -> list[str]:
        """The memories folded into the summary ``summary_id`` (empty: not a summary)."""
        return [
            str(m)
            for (m,) in self.db.execute(
                "SELECT memory_id FROM folds WHERE summary_id=? ORDER BY memory_id", (summary_id,)
            )
        ]

    def fold_counts(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """For each of ``memory_ids`` that is a summary: how many memories it folds."""
        if not memory_ids:
            return {}
        return {
            str(s): int(n)
            for s, n in self.db.execute(
                f"SELECT summary_id, count(*) FROM folds WHERE summary_id IN "
                f"({','.join('?' * len(memory_ids))}) GROUP BY summary_id",
                list(memory_ids),
            )
        }

    def summaries(self, namespace: str | None = None) -> dict[str, list[str]]:
        """Every consolidation summary (of ``namespace`` when given) → the memories folded
        into it, both in id order."""
        sql = "SELECT summary_id, memory_id FROM folds"
        args: list[Any] = []
        if namespace is not None:
            sql += " WHERE namespace=?"
            args.append(namespace)
        found: dict[str, list[str]] = {}
        for s, m in self.db.execute(sql + " ORDER BY summary_id, memory_id", args):
            found.setdefault(str(s), []).append(str(m))
        return found

    def folded_into(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """For each of ``memory_ids`` folded into a summary: that summary's id."""
        if not memory_ids:
            return {}
        return {
            str(m): str(s)
            for m, s in self.db.execute(
                f"SELECT memory_id, summary_id FROM folds WHERE memory_id IN "
                f"({','.join('?' * len(memory_ids))})",
                list(memory_ids),
            )
        }

    def expiring(self, *, by: float | None = None) -> list[Memory]:
        """The memories with an expiry (``expires_at``), soonest first; with ``by``, only
        those expiring at or before it (what a sweep at ``by`` forgets)."""
        if by is None:
            return self._where(
                "SELECT * FROM memories WHERE expires_at IS NOT NULL "
                "ORDER BY expires_at, memory_id",
                (),
            )
        return self._where(
            "SELECT * FROM memories WHERE expires_at <= ? ORDER BY expires_at, memory_id", (by,)
        )

    # -- aggregates for stats and reflect (``ferrex.read.insight``) --------------------------

    def memory_counts(self, namespace: str | None = None) -> list[MemoryCount]:
        """The kept counts of memories (of a namespace, or all), one per key."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace is not None else ("", ())
        return [
            MemoryCount(str(ns), str(t), str(o) if owned else None, str(v), bool(a), bool(x),
                        int(n))
            for ns, t, o, owned, v, a, x, n in self.db.execute(
                "SELECT namespace, type, owner, owned, visibility, active, expiring, n "
                f"FROM memory_counts {where} ORDER BY 1, 2, 3, 4, 5, 6, 7",
                args,
            )
        ]  # fmt: skip

    def by_ids(self, memory_ids: Sequence[str]) -> list[Memory]:
        """:meth:`memories` of any number of ids (asked in chunks), by id."""
        ids = sorted(set(memory_ids))
        out: list[Memory] = []
        for start in range(0, len(ids), _CHUNK):
            out.extend(self.memories(memory_ids=ids[start : start + _CHUNK]))
        return sorted(out, key=lambda m: m.memory_id)

    def label_counts(self, query: LabelQuery, *, rarely_below: int) -> list[LabelCount]:
        """The memories whose label moves with time (see ``_LABELLED``), counted per scope
        and band of their score at ``now`` (see ``_BAND``), and whether recalled fewer than
        ``rarely_below`` times; the ids of the ``unsure`` ones with their count."""
        args = {**query.bindings(), "rarely": rarely_below}
        return [
            LabelCount(_text(a), str(v), str(b), bool(r), int(n),
                       tuple(json.loads(ids)) if ids is not None else ())
            for a, v, b, r, n, ids in self.db.execute(
                f"SELECT agent_id, visibility, band, rarely, count(*), CASE band WHEN 'unsure' "
                f"THEN json_group_array(memory_id) END FROM (SELECT agent_id, visibility, "
                f"memory_id, access_count < :rarely AS rarely, {_BAND} AS band FROM (SELECT "
                f"agent_id, visibility, memory_id, access_count, {_SCORE} AS s FROM memories "
                f"WHERE {_LABELLED}{_APART})) GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
                args,
            )
        ]  # fmt: skip

    def clocked_before(
        self, queries: Sequence[LabelQuery], last_hits: Mapping[str, float]
    ) -> list[str]:
        """Of the memories with recall hits not journaled yet (id → the latest hit's time),
        the active ones of a query's namespace and type whose oldest clock, counting that
        hit as their last access (as ``ferrex.read.seen.with_pending`` does), is before that
        query's ``before``, by id: the others cannot be aging at its ``now``. In one pass
        over the hits, each memory looked up by id: the cost follows the hits, not the
        memories."""
        if not queries or not last_hits:
            return []
        bounds = [[q.namespace, q.type, q.before] for q in queries]
        return [
            str(m)
            for (m,) in self.db.execute(
                # CROSS JOIN: the hits first, each memory by its key (not every memory of
                # a namespace and type through ``memories_clock``, then each hit).
                "SELECT m.memory_id FROM json_each(:hits) AS h "
                "CROSS JOIN memories AS m ON m.memory_id = h.key "
                "CROSS JOIN json_each(:bounds) AS b "
                "WHERE b.value ->> 0 = m.namespace AND b.value ->> 1 = m.type "
                "AND m.t_invalid IS NULL AND min(max(m.t_valid, m.created_at), "
                "CASE WHEN m.last_accessed IS NULL THEN h.value "
                "ELSE max(m.last_accessed, h.value) END, "
                "coalesce(m.last_validated, m.created_at)) < b.value ->> 2 ORDER BY 1",
                {"hits": json.dumps(dict(last_hits)), "bounds": json.dumps(bounds)},
            )
        ]

    def most_stale(
        self,
        query: LabelQuery,
        *,
        caller: str | None,
        scores: tuple[float, float],
        rarely_below: int | None = None,
        limit: int | None = None,
        oldest: int | None = None,
    ) -> list[tuple[str, float, int]]:
        """(id, SQL score, access count) of the memories a label query reads that
        ``caller`` may see (the rule of ``ferrex.rules.visibility``; None: the operator),
        scored from ``scores[0]`` (inclusive) to ``scores[1]`` (exclusive) at ``now``,
        recalled fewer than ``rarely_below`` times if given: the highest score first (then
        by id), at most ``limit``; with ``oldest``, those among the ``oldest`` first
        clocked (see ``_AGGREGATES``), by clock instead."""
        args = {**query.bindings(), "low": scores[0], "high": scores[1], "caller": caller,
                "rarely": rarely_below}  # fmt: skip
        seen = "" if caller is None else f" AND {_seen_by(':caller')}"
        rarely = "" if rarely_below is None else " AND access_count < :rarely"
        cut = "" if limit is None else f" LIMIT {int(limit)}"
        first = _APART if oldest is None else f" ORDER BY {_CLOCK} LIMIT {int(oldest)}"
        order = "s DESC, memory_id" if oldest is None else "clock, memory_id"
        return [
            (str(m), float(score), int(n))
            for m, score, n in self.db.execute(
                f"SELECT memory_id, s, access_count FROM (SELECT memory_id, access_count, "
                f"{_SCORE} AS s, {_CLOCK} AS clock FROM memories "
                f"WHERE {_LABELLED}{seen}{rarely}{first}) WHERE s >= :low AND s < :high "
                f"ORDER BY {order}{cut}",
                args,
            )
        ]

    def unvalidated_counts(
        self, namespace: str | None, now: float, after_seconds: float
    ) -> list[tuple[str | None, str, int]]:
        """(agent id, visibility, how many) of the active memories never validated and
        stored at least ``after_seconds`` before ``now``, not expired at ``now``. Whichever
        side of the store-time bound spans less time (the earliest and latest store times
        of ``memories_unvalidated_scoped``, two index ends) is read: the old ones counted
        directly (the test of :meth:`unvalidated`), or the kept ``unvalidated_counts`` less
        those stored later (the exact test's complement behind an index bound a second
        wider than any rounding) and those expired by ``now``. The same count either way;
        the cost follows the fewer."""
        earliest, latest = self.db.execute(
            "SELECT (SELECT min(created_at) FROM memories WHERE t_invalid IS NULL "
            "AND last_validated IS NULL), (SELECT max(created_at) FROM memories "
            "WHERE t_invalid IS NULL AND last_validated IS NULL)"
        ).fetchone() or (None, None)
        if earliest is None or latest is None:
            return []
        bound = now - after_seconds
        scope: dict[tuple[str | None, str], int] = {}
        if bound - float(earliest) <= float(latest) - bound:
            where, args = self._unvalidated_where(namespace, now, after_seconds)
            for a, v, n in self.db.execute(
                f"SELECT agent_id, visibility, count(*) FROM memories WHERE {where} GROUP BY 1, 2",
                args,
            ):
                scope[(_text(a), str(v))] = int(n)
        else:
            scope = self._unvalidated_less_recent(namespace, now, after_seconds)
        return sorted(
            ((a, v, n) for (a, v), n in scope.items() if n > 0),
            key=lambda c: (c[0] is not None, c[0] or "", c[1]),
        )

    def _unvalidated_less_recent(
        self, namespace: str | None, now: float, after_seconds: float
    ) -> dict[tuple[str | None, str], int]:
        scope: dict[tuple[str | None, str], int] = {}
        where, args = ("", []) if namespace is None else (" WHERE namespace=?", [namespace])
        for owner, owned, v, n in self.db.execute(
            f"SELECT owner, owned, visibility, n FROM unvalidated_counts{where}", args
        ):
            key = (str(owner) if owned else None, str(v))
            scope[key] = scope.get(key, 0) + int(n)
        ns = "" if namespace is None else " AND +namespace=?"
        less = (
            "created_at > ? AND NOT (? - created_at >= ?)",
            "expires_at <= ? AND ? - created_at >= ?",
        )
        for test, bound in zip(less, ([now - after_seconds - 1.0], [now]), strict=True):
            for a, v, n in self.db.execute(
                "SELECT agent_id, visibility, count(*) FROM memories WHERE t_invalid IS NULL "
                f"AND last_validated IS NULL AND {test}{ns} GROUP BY 1, 2",
                [*bound, now, after_seconds, *args],
            ):
                scope[(_text(a), str(v))] -= int(n)
        return scope

    def unvalidated(
        self, namespace: str | None, now: float, after_seconds: float
    ) -> Iterator[Memory]:
        """The memories :meth:`unvalidated_counts` counts, oldest first (then by id), read a
        page at a time as the caller goes on."""
        ns, args = self._unvalidated_where(namespace, now, after_seconds)
        last: tuple[float, str] | None = None
        while True:
            after = "" if last is None else " AND (created_at, memory_id) > (?, ?)"
            rows = self._where(
                f"SELECT * FROM memories WHERE {ns}{after} "
                f"ORDER BY created_at, memory_id LIMIT {_PAGE}",
                [*args, *(last or ())],
            )
            yield from rows
            if len(rows) < _PAGE:
                return
            last = (rows[-1].created_at, rows[-1].memory_id)

    @staticmethod
    def _unvalidated_where(
        namespace: str | None, now: float, after_seconds: float
    ) -> tuple[str, list[Any]]:
        # The exact test (``now - created_at >= after``, as Python computes it: both are IEEE
        # doubles) behind an index bound a second wider than any rounding. The range is read
        # from ``memories_unvalidated_scoped`` alone: ``+namespace`` keeps the planner (no
        # statistics) from walking a namespace's every active memory in ``memories_clock``.
        sql = (
            "t_invalid IS NULL AND last_validated IS NULL AND created_at <= ? "
            "AND ? - created_at >= ? AND (expires_at IS NULL OR expires_at > ?)"
        )
        args: list[Any] = [now - after_seconds + 1.0, now, after_seconds, now]
        if namespace is not None:
            sql += " AND +namespace=?"
            args.append(namespace)
        return sql, args

    def latest_active(self, namespace: str | None) -> Iterator[Memory]:
        """Active memories, latest stored first (then by id), a page at a time."""
        ns, args = ("", []) if namespace is None else (" AND namespace=?", [namespace])
        last: tuple[float, str] | None = None
        while True:
            after = (
                ""
                if last is None
                else " AND (created_at < ? OR (created_at = ? AND memory_id > ?))"
            )
            rows = self._where(
                f"SELECT * FROM memories WHERE t_invalid IS NULL{ns}{after} "
                f"ORDER BY created_at DESC, memory_id LIMIT {_PAGE}",
                [*args, *(() if last is None else (last[0], last[0], last[1]))],
            )
            yield from rows
            if len(rows) < _PAGE:
                return
            last = (rows[-1].created_at, rows[-1].memory_id)

    def single_facts(
        self,
        namespace: str | None,
        now: float,
        subjects: Sequence[tuple[str, str]] | None = None,
    ) -> list[FactRow]:
        """The active single-valued facts with a subject and a predicate, not expired at
        ``now`` (of a namespace, or all; of the (namespace, subject key) pairs ``subjects``
        if given), by id: the facts that may contradict one another
        (``ferrex.read.insight.contradictions``), with only what that reads of them."""
        where, args = self._seen_facts_where(namespace, now, None, subjects)
        return [
            FactRow(str(m), str(ns), str(t), ti, bool(multi), s, str(k), p, o, a, str(v))
            for m, ns, t, ti, multi, s, k, p, o, a, v in self.db.execute(
                "SELECT memory_id, namespace, type, t_invalid, multi_valued, subject, "
                "subject_key, predicate_normalized, object, agent_id, visibility "
                f"FROM memories WHERE {where} ORDER BY memory_id",
                args,
            )
        ]

    def fact_groups(
        self,
        namespace: str | None,
        now: float,
        caller: str | None,
        subjects: Sequence[tuple[str, str]] | None = None,
    ) -> list[FactGroup] | None:
        """The facts of :meth:`single_facts` that ``caller`` sees (every one for the
        operator, None), of the (namespace, subject key) pairs ``subjects`` if given, counted
        per namespace, subject key and predicate, with the least and the greatest of their
        object forms (``memories_single_facts``); None when some of them have no form (a
        read model without the rule, or of an older schema)."""
        where, args = self._seen_facts_where(namespace, now, caller, subjects)
        try:
            rows: list[tuple[Any, ...]] = self.db.execute(
                "SELECT namespace, subject_key, predicate_normalized, count(*), "
                "min(object_form), max(object_form), count(object_form) "
                f"FROM memories WHERE {where} "
                "GROUP BY namespace, subject_key, predicate_normalized",
                args,
            ).fetchall()
        except apsw.SQLError:  # an older file opened immutable: no ``object_form`` column
            return None
        if any(row[3] != row[6] for row in rows):
            return None
        return [FactGroup._make(row[:6]) for row in rows]

    def fact_subjects(
        self, namespace: str | None, now: float, caller: str | None
    ) -> list[FactSubject] | None:
        """The groups of :meth:`fact_groups` counted again per namespace and subject key, in
        SQL (``memories_single_facts``, in its order): each key's predicates and how many of
        its groups disagree, one row per subject key rather than per predicate; None when
        some fact has no form."""
        where, args = self._seen_facts_where(namespace, now, caller, None)
        try:
            rows: list[tuple[Any, ...]] = self.db.execute(
                "SELECT namespace, subject_key, json_group_array(p), sum(lo != hi), "
                "sum(n - f) FROM (SELECT namespace, subject_key, predicate_normalized AS p, "
                "min(object_form) AS lo, max(object_form) AS hi, count(*) AS n, "
                f"count(object_form) AS f FROM memories WHERE {where} "
                "GROUP BY namespace, subject_key, predicate_normalized) "
                "GROUP BY namespace, subject_key",
                args,
            ).fetchall()
        except apsw.SQLError:  # an older file opened immutable: no ``object_form`` column
            return None
        if any(row[4] for row in rows):
            return None
        return [FactSubject(ns, key, predicates, n or 0) for ns, key, predicates, n, _ in rows]

    def _seen_facts_where(
        self,
        namespace: str | None,
        now: float,
        caller: str | None,
        subjects: Sequence[tuple[str, str]] | None,
    ) -> tuple[str, list[Any]]:
        where, args = self._facts_where(namespace, now)
        if caller is not None:
            where += f" AND {_seen_by()}"
            args.append(caller)
        if subjects is not None:
            where += (
                " AND (namespace, subject_key) IN (SELECT value ->> 0, value ->> 1 "
                "FROM json_each(?))"
            )
            args.append(json.dumps([list(s) for s in subjects]))
        return where, args

    @staticmethod
    def _facts_where(namespace: str | None, now: float) -> tuple[str, list[Any]]:
        sql = f"{_SINGLE_FACT} AND (expires_at IS NULL OR expires_at > ?)"
        args: list[Any] = [now]
        if namespace is not None:
            sql = "namespace=? AND " + sql
            args.insert(0, namespace)
        return sql, args

    def conflicting_ids(self) -> list[str]:
        """Every memory named in a possible conflict, sorted."""
        return sorted(
            {
                str(m)
                for (m,) in self.db.execute(
                    "SELECT memory_id FROM possible_conflicts UNION "
                    "SELECT other_id FROM possible_conflicts"
                )
            }
        )

    def entity_last_use(
        self, namespace: str | None, now: float, entity_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str | None, str, float]]:
        """(entity id, agent id, visibility, latest event time) of the active memories that
        name each entity (of ``entity_ids`` if given), not expired at ``now``, per scope of
        those memories."""
        args: list[Any] = [now] if namespace is None else [now, namespace]
        ns = "" if namespace is None else " AND m.namespace=?"
        if entity_ids is not None:
            ns += " AND me.entity_id IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(list(entity_ids)))
        return [
            (str(e), _text(a), str(v), float(t))
            for e, a, v, t in self.db.execute(
                "SELECT me.entity_id, m.agent_id, m.visibility, max(m.t_valid) "
                "FROM memory_entities me JOIN memories m ON m.memory_id = me.memory_id "
                "WHERE m.t_invalid IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)"
                f"{ns} GROUP BY me.entity_id, m.agent_id, m.visibility ORDER BY 1, 2, 3",
                args,
            )
        ]

    def entities_used_since(
        self, namespace: str | None, now: float, seconds: float
    ) -> list[tuple[str, str | None, str]]:
        """(entity id, agent id, visibility) of the active memories, not expired at
        ``now``, whose event time is less than ``seconds`` before ``now`` (``now - t_valid <
        seconds``, as Python computes it), per scope of those memories: the entities in use.
        The memories are read first (most are older), then their links."""
        ns, args = ("", [now, now, seconds]) if namespace is None else (
            " AND m.namespace=?", [now, now, seconds, namespace])  # fmt: skip
        return [
            (str(e), _text(a), str(v))
            for e, a, v in self.db.execute(
                "SELECT DISTINCT me.entity_id, m.agent_id, m.visibility "
                "FROM memories m CROSS JOIN memory_entities me ON me.memory_id = m.memory_id "
                "WHERE m.t_invalid IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?) "
                f"AND ? - m.t_valid < ?{ns} ORDER BY 1, 2, 3",
                args,
            )
        ]

    def count(self) -> int:
        """How many memories the read model holds."""
        return int(self.db.execute("SELECT count(*) FROM memories").get or 0)

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every projected table, sorted: what a rebuild must reproduce."""
        return {
            table: sorted(self.db.execute(f"SELECT * FROM {table}"), key=repr) for table in TABLES
        }

    # -- repairs (reconcile --fix) ---------------------------------------------------------

    def differing_keys(self, other: ReadModel) -> list[str]:
        """Keys (memory or entity ids) whose rows differ between this read model and another."""
        keys: set[str] = set()
        for table, _key in _KEYED:
            column = _KEY_COLUMN[table]
            a = set(self.db.execute(f"SELECT * FROM {table}"))
            b = set(other.db.execute(f"SELECT * FROM {table}"))
            keys.update(str(row[column]) for row in a ^ b)
        return sorted(keys)

    def replace_rows(self, source: Path, keys: Sequence[str]) -> None:
        """Put the rows of ``keys`` from the read model file at ``source`` in place of these,
        in one transaction (``reconcile --fix``: the source is a replay of the same journal)."""
        ids = sorted(keys)
        marks = ",".join("?" * len(ids))
        db = self.db
        db.execute("ATTACH DATABASE ? AS scratch", (str(source),))
        try:
            with _immediate(db):
                for table, key in _KEYED:
                    db.execute(f"DELETE FROM main.{table} WHERE {key} IN ({marks})", ids)
                    db.execute(
                        f"INSERT INTO main.{table} SELECT * FROM scratch.{table} "
                        f"WHERE {key} IN ({marks})",
                        ids,
                    )
        finally:
            db.execute("DETACH DATABASE scratch")

    def alias_rows(self) -> list[tuple[str, str, str]]:
        """Every spelling as (namespace, normalized, entity id)."""
        return [
            (str(ns), str(norm), str(entity))
            for ns, norm, entity in self.db.execute(
                "SELECT namespace, normalized, entity_id FROM aliases"
            )
        ]


# The tables a reconcile repair replaces by key, and where each row's key sits.
_KEYED: Final = (
    ("memories", "memory_id"),
    ("memory_entities", "memory_id"),
    ("entities", "entity_id"),
    ("aliases", "entity_id"),
    ("forgotten", "memory_id"),
)
_KEY_COLUMN: Final = {"memories": 0, "memory_entities": 0, "entities": 0, "aliases": 3,
                      "forgotten": 0}  # fmt: skip


def _spelling(row: tuple[Any, ...], kept: Mapping[str, Sequence[str]]) -> Spelling:
    """A spelling from ``SELECT coalesce(e.merged_into, a.entity_id), a.alias, a.normalized,
    a.agent_id, e.merged_into, a.entity_id, e.agent_id`` (aliases joined to entities)."""
    entity, alias, normalized, agent, merged_into, recorded, scope = row
    return Spelling(str(entity), str(alias), str(normalized), _text(agent),
                    None if merged_into is None else str(recorded),
                    viewers(_text(scope), kept.get(str(entity), ())))  # fmt: skip


def _add_aggregates(db: apsw.Connection) -> None:
    """The aggregates and their triggers; counted from the memories already there when the
    file had none (a file an older ferrex wrote, until its rebuild)."""

    def missing(table: str) -> bool:
        return db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).get is None

    counts, unvalidated = missing("memory_counts"), missing("unvalidated_counts")
    columns = {str(row[1]) for row in db.execute("PRAGMA table_info(memories)")}
    if "object_form" not in columns:
        # A file of schema 9 or older (until its rebuild): no fact has a form, so
        # ``fact_groups`` answers None and insight reads the facts themselves.
        db.execute("ALTER TABLE memories ADD COLUMN object_form TEXT")
    if "valid_from_given" not in columns:
        # A file whose rows were folded before the flag existed: NULL, read by the same rule
        # as a ``memory.stored`` without it (``journal.events.given_by_time``), so no rebuild.
        db.execute("ALTER TABLE memories ADD COLUMN valid_from_given INTEGER")
    db.execute(_AGGREGATES)
    db.execute(_UNVALIDATED_COUNTS)
    db.execute(_SPELLING_GENERATION)
    if counts:
        db.execute(
            "INSERT INTO memory_counts SELECT namespace, type, coalesce(agent_id, ''), "
            "agent_id IS NOT NULL, visibility, t_invalid IS NULL, expires_at IS NOT NULL, "
            "count(*) FROM memories GROUP BY 1, 2, 3, 4, 5, 6, 7"
        )
    if unvalidated:
        db.execute(
            "INSERT INTO unvalidated_counts SELECT namespace, coalesce(agent_id, ''), "
            "agent_id IS NOT NULL, visibility, count(*) FROM memories "
            "WHERE t_invalid IS NULL AND last_validated IS NULL GROUP BY 1, 2, 3, 4"
        )


@contextmanager
def _immediate(db: apsw.Connection) -> Iterator[None]:
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
