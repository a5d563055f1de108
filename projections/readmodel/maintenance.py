"""What reconcile reads and repairs (``projections.reconcile``), and the whole-table dump a
rebuild is compared by."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from projections.readmodel.reads import Reads
from projections.readmodel.schema import TABLES
from projections.readmodel.store import immediate


class Maintenance(Reads):
    """Comparisons and repairs of whole tables."""

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every projected table, sorted: what a rebuild must reproduce."""
        return {
            table: sorted(self.db.execute(f"SELECT * FROM {table}"), key=repr) for table in TABLES
        }

    def differing_keys(self, other: Reads) -> list[str]:
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
            with immediate(db):
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
