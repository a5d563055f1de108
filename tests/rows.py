"""Every row of a read model, for comparing two homes: a rebuild, or a dump restored."""

from __future__ import annotations

from typing import Any

from projections.sqlite import TABLES, ReadModel

NOT_RESTORED: dict[str, tuple[str, ...]] = {
    "memories": ("position",),
    "entities": ("created_at",),
}
"""Columns a restore cannot keep: the journal records when (and where) the restore happened."""


def read_model_rows(
    read_model: ReadModel, leave_out: dict[str, tuple[str, ...]] = NOT_RESTORED
) -> dict[str, list[dict[str, Any]]]:
    """Every row of every projected table by column name, sorted, without ``leave_out``."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        # the columns from the schema: an empty table's cursor has no description
        names = [str(row[1]) for row in read_model.db.execute(f"PRAGMA table_info({table})")]
        kept = [
            {k: v for k, v in zip(names, row, strict=True) if k not in leave_out.get(table, ())}
            for row in read_model.db.execute(f"SELECT * FROM {table}")
        ]
        rows[table] = sorted(kept, key=repr)
    return rows
