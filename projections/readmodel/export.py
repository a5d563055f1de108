"""What a dump carries (``ferrex.porting.dump``): entities merged or not, spellings as
recorded, possible conflicts as their events recorded them, entities said to differ, facts
said to both hold, and folds."""

from __future__ import annotations

from projections.readmodel.reads import Reads, optional_text
from projections.rows import AliasMatch, Entity, PossibleConflict


class ExportReads(Reads):
    """The queries of a dump."""

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
                Entity(str(e), str(ns), str(n), optional_text(g), str(z), optional_text(k)),
                optional_text(into),
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
            AliasMatch(str(e), str(a), str(m), float(s), optional_text(g), str(n))
            for e, a, m, s, g, n in self.db.execute(
                "SELECT entity_id, alias, match, score, agent_id, normalized FROM aliases "
                f"{where} ORDER BY entity_id, alias",
                args,
            )
        ]

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
        return self._id_pairs("entity_differs", "entity_id", "other_id", namespace)

    def facts_differing(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every pair of facts said to both hold: (namespace, memory, other), by ids, the
        pair sorted."""
        return self._id_pairs("fact_differs", "memory_id", "other_id", namespace)

    def fold_rows(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """Every memory folded into a summary: (namespace, summary, memory), by ids; what a
        dump carries of the consolidations."""
        return self._id_pairs("folds", "summary_id", "memory_id", namespace)

    def _id_pairs(
        self, table: str, first: str, second: str, namespace: str | None
    ) -> list[tuple[str, str, str]]:
        """(namespace, first, second) of every row of ``table`` (of ``namespace`` when one is
        given), ordered by the two ids."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        return [
            (str(n), str(a), str(b))
            for n, a, b in self.db.execute(
                f"SELECT namespace, {first}, {second} FROM {table} {where} "
                f"ORDER BY {first}, {second}",
                args,
            )
        ]
