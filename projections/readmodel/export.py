"""What a dump carries (``ferrex.porting.dump``): entities merged or not, spellings as
recorded, possible conflicts as their events recorded them, entities said to differ, facts
said to both hold, and folds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import apsw

from projections.readmodel.reads import Reads, optional_text
from projections.rows import AliasMatch, Entity, PossibleConflict

_DUMPED: Final[Mapping[str, tuple[str, str]]] = {
    "entities": (
        "entity_id, namespace, name, agent_id, normalized, kind, merged_into",
        "merged_into IS NOT NULL, entity_id",
    ),
    "aliases": ("entity_id, alias, match, score, agent_id, normalized", "entity_id, alias"),
    "possible_conflicts": (
        "memory_id, other_id, entity_id, other_entity_id, reason, score",
        "memory_id, other_id",
    ),
    "entity_differs": ("namespace, entity_id, other_id", "entity_id, other_id"),
    "fact_differs": ("namespace, memory_id, other_id", "memory_id, other_id"),
    "folds": ("namespace, summary_id, memory_id", "summary_id, memory_id"),
}
"""What a dump reads of each table: its columns, and the order of its rows."""


class ExportReads(Reads):
    """The queries of a dump."""

    def entity_rows(
        self, namespace: str | None = None
    ) -> list[tuple[Entity, str | None, tuple[str, ...]]]:
        """Every entity, merged ones too, each with the entity it was merged into (None: not
        merged) and the agents a cascade kept it for (empty: not kept for some only),
        unmerged ones first, by id: what a dump carries."""
        kept = self._kept_for(namespace or None)
        return [
            (
                Entity(str(e), str(ns), str(n), optional_text(g), str(z), optional_text(k)),
                optional_text(into),
                tuple(sorted(kept.get(str(e), ()))),
            )
            for e, ns, n, g, z, k, into in self._rows("entities", namespace)
        ]

    def spelling_rows(self, namespace: str | None = None) -> list[AliasMatch]:
        """Every spelling as recorded, under the entity it was recorded for (not the one
        that entity was merged into), by entity and alias: what a dump carries."""
        return [
            AliasMatch(str(e), str(a), str(m), float(s), optional_text(g), str(n))
            for e, a, m, s, g, n in self._rows("aliases", namespace)
        ]

    def possible_conflict_rows(self, namespace: str | None = None) -> list[PossibleConflict]:
        """The possible conflicts as their events recorded them (one row a pair and
        direction, merged or differing entities included), by memory and other: what a dump
        carries."""
        return [
            PossibleConflict(str(m), str(o), str(e), str(f), str(r), float(c))
            for m, o, e, f, r, c in self._rows("possible_conflicts", namespace)
        ]

    def differing(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every pair of entities said to differ: (namespace, entity, other), by ids."""
        return self._id_pairs("entity_differs", namespace)

    def facts_differing(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every pair of facts said to both hold: (namespace, memory, other), by ids, the
        pair sorted."""
        return self._id_pairs("fact_differs", namespace)

    def fold_rows(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every memory folded into a summary: (namespace, summary, memory), by ids; what a
        dump carries of the consolidations."""
        return self._id_pairs("folds", namespace)

    def _id_pairs(self, table: str, namespace: str | None) -> list[tuple[str, str, str]]:
        """(namespace, first id, second id) of every row of ``table``, ordered by the two."""
        return [(str(n), str(a), str(b)) for n, a, b in self._rows(table, namespace)]

    def _rows(self, table: str, namespace: str | None) -> apsw.Cursor:
        """The rows of ``table`` (of ``namespace`` when one is given) as a dump reads them
        (:data:`_DUMPED`)."""
        columns, order = _DUMPED[table]
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        return self.db.execute(f"SELECT {columns} FROM {table} {where} ORDER BY {order}", args)
