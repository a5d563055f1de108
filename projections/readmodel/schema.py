"""The read model's schema: its tables, indexes and triggers, and what opening a file of an
older schema adds to it.

``SCHEMA_VERSION`` names what the projector derives: a file recording another version is
rebuilt from the journal at open (``projections.replay``). Columns added since (``object_form``,
``valid_from_given``) are added in place, and the aggregates are counted from the rows there
when a file had none, so an older file stays readable until its rebuild.
"""

from __future__ import annotations

import apsw

from projections.readmodel.predicates import CLOCK, CURRENT, SINGLE_FACT, current

SCHEMA_VERSION = 13
"""Bump when what ``apply`` derives changes: a mismatch at open triggers a rebuild (backfill)."""

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
            f"{current(f'{row}.')}, {row}.expires_at IS NOT NULL, 1) "
            "ON CONFLICT (namespace, type, owner, owned, visibility, active, expiring) "
            "DO UPDATE SET n = n + 1;"
        )
    return (
        f"UPDATE memory_counts SET n = n - 1 WHERE namespace = {row}.namespace "
        f"AND type = {row}.type AND owner = coalesce({row}.agent_id, '') "
        f"AND owned = ({row}.agent_id IS NOT NULL) AND visibility = {row}.visibility "
        f"AND active = ({current(f'{row}.')}) AND expiring = ({row}.expires_at IS NOT NULL); "
        "DELETE FROM memory_counts WHERE n <= 0;"
    )


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
# ``memories_single_facts``: the facts that may contradict one another
# (``predicates.SINGLE_FACT``), by namespace, subject key, predicate and object form, with
# their scope and expiry (and the columns of its own restriction, or SQLite would not take
# it as covering): the
# contradictions of stats and reflect are counted from it per (subject, predicate) group in
# SQL (``InsightReads.fact_groups``), never reading a fact into Python.
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
CREATE INDEX IF NOT EXISTS memories_clock ON memories (namespace, type, {CLOCK})
    WHERE {CURRENT};
DROP INDEX IF EXISTS memories_unvalidated;
CREATE INDEX IF NOT EXISTS memories_unvalidated_scoped ON memories (created_at, memory_id,
    namespace, agent_id, visibility, expires_at, t_invalid, last_validated)
    WHERE {CURRENT} AND last_validated IS NULL;
DROP INDEX IF EXISTS memories_latest;
CREATE INDEX IF NOT EXISTS memories_latest_stored ON memories (created_at DESC, position DESC,
    memory_id) WHERE {CURRENT};
CREATE INDEX IF NOT EXISTS memories_single_facts ON memories (namespace, subject_key,
    predicate_normalized, object_form, agent_id, visibility, expires_at, type, t_invalid,
    multi_valued, subject) WHERE {SINGLE_FACT};
"""


def _unvalidated_triggers() -> str:
    """The ``unvalidated_counts`` table and its triggers: a row of ``memories`` counts while
    active and never validated; an update counts its old row out and its new row in."""
    counted = current("{0}.") + " AND {0}.last_validated IS NULL"
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
            f"agent_id IS NOT NULL, visibility, {CURRENT}, expires_at IS NOT NULL, "
            "count(*) FROM memories GROUP BY 1, 2, 3, 4, 5, 6, 7"
        )
    if unvalidated:
        db.execute(
            "INSERT INTO unvalidated_counts SELECT namespace, coalesce(agent_id, ''), "
            "agent_id IS NOT NULL, visibility, count(*) FROM memories "
            f"WHERE {CURRENT} AND last_validated IS NULL GROUP BY 1, 2, 3, 4"
        )


def create(db: apsw.Connection) -> None:
    """Create what is missing of the schema in ``db`` (inside the caller's transaction), and
    record the schema version of a new file."""
    db.execute(_SCHEMA)
    _add_aggregates(db)
    if db.execute("SELECT value FROM meta WHERE key='schema_version'").get is None:
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )
