"""What recall and the read rules read (``ferrex.read.recall``, ``ferrex.read.seen``): a
memory's history, the spellings of a named entity, merged entities, episode neighbours and
fold counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projections.readmodel.predicates import seen_by
from projections.readmodel.reads import Reads, spelling_of
from projections.rows import Memory, Spelling


class RecallReads(Reads):
    """The queries of recall and of the read rules."""

    def replaced_by(self, memory_id: str) -> list[Memory]:
        """The memories ``memory_id`` superseded (an explicit ``supersedes`` or a newer value
        of a fact), by id: a history walks back through them."""
        return self._where(
            "SELECT * FROM memories WHERE superseded_by=? ORDER BY memory_id", (memory_id,)
        )

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
            spelling_of(row, kept)
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

    def merged_ids(self, entity_ids: Sequence[str]) -> list[str]:
        """The given entity ids and every entity merged into one of them, sorted."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self.db.execute(
            f"SELECT entity_id FROM entities WHERE merged_into IN ({marks})", list(entity_ids)
        )
        return sorted({*entity_ids, *(str(e) for (e,) in rows)})

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
        seen = "" if agent_id is None else f" AND {seen_by()}"
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

    def fold_counts(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """For each of ``memory_ids`` that is a summary: how many memories it folds."""
        select = "SELECT summary_id, count(*) FROM folds"
        rows = self._in(select, "summary_id", memory_ids, " GROUP BY summary_id")
        return {str(s): int(n) for s, n in rows}
