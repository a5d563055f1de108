"""What decisions read (``ferrex.core.view``, ``ferrex.write``): a slot's active facts, the
memories of an import line, a procedure's versions, entities and facts said to differ, the
tail of an agent's episode, what consolidation may fold and what is folded where."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from projections.readmodel.predicates import CURRENT, FOLDABLE
from projections.readmodel.reads import Reads
from projections.rows import Memory


class DecisionReads(Reads):
    """The queries of the write path's decisions."""

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]:
        """Semantic memories still valid for one subject (its :func:`subject_key`) and
        normalized predicate, by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND subject_key=? "
            f"AND predicate_normalized=? AND {CURRENT} AND type='semantic' "
            "ORDER BY memory_id",
            (namespace, key, predicate),
        )

    def imported(self, namespace: str, key: str) -> list[Memory]:
        """The memories an import line with this key stored (valid or not), by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND import_key=? ORDER BY memory_id",
            (namespace, key),
        )

    def procedures(self, namespace: str, name: str) -> list[Memory]:
        """Every version of one named procedure, by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND type='procedural' "
            "AND procedure_name=? ORDER BY memory_id",
            (namespace, name),
        )

    def entities_differ(self, a: str, b: str) -> bool:
        """Whether the two entities were said to differ (or split apart)."""
        return self._pair_recorded("entity_differs", "entity_id", a, b)

    def facts_differ(self, a: str, b: str) -> bool:
        """Whether the two facts were said to both hold (``facts.differ``)."""
        return self._pair_recorded("fact_differs", "memory_id", a, b)

    def _pair_recorded(self, table: str, first: str, a: str, b: str) -> bool:
        """Whether ``table`` holds the pair of ``a`` and ``b``, kept sorted: the smaller id
        in column ``first``, the other in ``other_id``."""
        low, high = sorted((a, b))
        sql = f"SELECT 1 FROM {table} WHERE {first}=? AND other_id=?"
        return self.db.execute(sql, (low, high)).fetchone() is not None

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
        them, never their event time), not pinned, with no expiry, text neither purged nor
        empty, not a summary themselves (the rule ``predicates.foldable_rule``, rendered as
        ``predicates.FOLDABLE``); of one namespace and one agent when given. In episode
        order."""
        sql = f"SELECT * FROM memories WHERE {FOLDABLE}"
        args: list[Any] = [created_before]
        if namespace is not None:
            sql += " AND namespace=?"
            args.append(namespace)
        if agent_id is not None:
            sql += " AND agent_id=?"
            args.append(agent_id)
        sql += " ORDER BY namespace, t_valid, episode_index, position, memory_id"
        return self._where(sql, args)

    def summaries_among(self, memory_ids: Sequence[str]) -> frozenset[str]:
        """Those of ``memory_ids`` that are consolidation summaries (fold other memories)."""
        if not memory_ids:
            return frozenset()
        return frozenset(
            str(s)
            for (s,) in self.db.execute(
                "SELECT DISTINCT summary_id FROM folds "
                "WHERE summary_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(memory_ids)),),
            )
        )

    def folded_into(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """For each of ``memory_ids`` folded into a summary: that summary's id."""
        rows = self._in("SELECT memory_id, summary_id FROM folds", "memory_id", memory_ids)
        return {str(m): str(s) for m, s in rows}
