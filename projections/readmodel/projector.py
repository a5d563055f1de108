"""The projector: the only writer of the read model's rows from events.

Invariants:

- Written only by :meth:`Projector.apply`, inside ``BEGIN IMMEDIATE``, and the checkpoint
  (the last journal position applied) advances in the same transaction. The checkpoint is
  re-read inside that transaction, so when several processes catch up at once each record
  is applied exactly once.
- ``apply`` reads no clock, no randomness, no environment: every value comes from the
  event or its record, so a rebuild from position 0 equals incremental application.
- Each change of the one fold (``projections.fold``) is written as SQL here, by concept;
  the triggers of ``projections.readmodel.schema`` keep the aggregates.
- Times are stored as float seconds since the epoch (UTC), as in the Qdrant payload.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import assert_never

import apsw
import msgspec

from journal import MemoryBody, MemoryStored, Record
from projections import fold
from projections.readmodel.store import SQLITE, Store, immediate
from projections.rows import Memory


@dataclass(frozen=True)
class Rules:
    """Values the read model derives with rules that may change (a change is a backfill).

    ``predicate(namespace, recorded)`` re-normalizes the predicate a fact's event recorded at
    store time with the current rules; None keeps the recorded one. ``object_form(text)`` is
    the comparable form of a fact's object (``ferrex.rules.subjects.object_form``), kept in
    ``memories.object_form`` so that contradictions are counted in SQL; None keeps none (and
    ``InsightReads.fact_groups`` says so). ``identity`` names the rules: the live projection
    records it, and a different one at start rebuilds the read model.
    """

    identity: str = ""
    predicate: Callable[[str, str], str] | None = None
    object_form: Callable[[str], str] | None = None


NO_RULES = Rules()


def _json(value: object) -> str | None:
    if value is None or value == ():
        return None
    return msgspec.json.encode(value).decode()


class Projector:
    """Applies journal records to the read model file of ``store``, with ``rules``."""

    def __init__(self, store: Store, rules: Rules = NO_RULES) -> None:
        self._store = store
        self.rules = rules

    @property
    def db(self) -> apsw.Connection:
        return self._store.db

    def apply(self, records: Sequence[Record]) -> int:
        """Apply records not yet applied, in one transaction; returns how many were new."""
        if not records:
            return 0
        with immediate(self.db):
            done = self._store.checkpoint()
            fresh = [r for r in records if r.position > done]
            for record in fresh:
                for event in record.events:
                    for change in fold.changes(event):
                        self._apply_change(change, record)
            if fresh:
                self._store.write_checkpoint(SQLITE, fresh[-1].position)
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
                     change.kind, record.recorded_at.timestamp(), change.agent_id),
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
                # One row a pair, the later flag's: a pair flagged again from its other
                # side reads as that flag, as the overlay reads it (``Overlay.flagged_with``).
                db.execute(
                    "DELETE FROM possible_conflicts WHERE memory_id=? AND other_id=?",
                    (c.other_id, c.memory_id),
                )
                db.execute(
                    "INSERT OR REPLACE INTO possible_conflicts (namespace, memory_id, "
                    "other_id, entity_id, other_entity_id, reason, score) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (change.namespace, c.memory_id, c.other_id, self._into(c.entity_id),
                     self._into(c.other_entity_id), c.reason, c.score),
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
            created_at=record.recorded_at.timestamp(),
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

    def _into(self, entity_id: str) -> str:
        """The entity an entity was merged into (itself when it was not): a flag naming an
        absorbed entity is kept under the one it went into, as a merge moves the rows
        already there (:meth:`_merge`)."""
        row = self.db.execute(
            "SELECT merged_into FROM entities WHERE entity_id=?", (entity_id,)
        ).fetchone()
        return str(row[0]) if row is not None and row[0] is not None else entity_id

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
