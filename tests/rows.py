"""Every row of a read model, for comparing two homes: a rebuild, or a dump restored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ferrex.app import App
from ferrex.config import load
from projections.readmodel.schema import TABLES
from projections.sqlite import ReadModel

NOT_RESTORED: dict[str, tuple[str, ...]] = {
    "memories": ("position",),
    "entities": ("created_at",),
}
"""Columns a restore cannot keep: the journal records when (and where) the restore happened."""

NOT_RESTORED_TABLES: frozenset[str] = frozenset({"forgotten"})
"""Tables a restore does not rebuild: ``forgotten`` records who could see each forgotten memory,
for the change stream's deliveries over this journal's positions; a backup holds what the home
holds, not what it forgot, and a restored home's journal starts its positions afresh."""


def read_model_rows(
    read_model: ReadModel,
    leave_out: dict[str, tuple[str, ...]] = NOT_RESTORED,
    tables_left_out: frozenset[str] = NOT_RESTORED_TABLES,
) -> dict[str, list[dict[str, Any]]]:
    """Every row of every projected table by column name, sorted, without ``leave_out``'s
    columns and ``tables_left_out`` (pass an empty set to compare a rebuild with its home)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        if table in tables_left_out:
            continue
        # the columns from the schema: an empty table's cursor has no description
        names = [str(row[1]) for row in read_model.db.execute(f"PRAGMA table_info({table})")]
        kept = [
            {k: v for k, v in zip(names, row, strict=True) if k not in leave_out.get(table, ())}
            for row in read_model.db.execute(f"SELECT * FROM {table}")
        ]
        rows[table] = sorted(kept, key=repr)
    return rows


def home_rows(home: Path) -> dict[str, list[dict[str, Any]]]:
    """The read model of the data directory ``home``, row by row (:func:`read_model_rows`),
    opened and closed for the reading."""
    app = App(home=home, config=load(home, env={}))
    try:
        return read_model_rows(app.projections().read_model)
    finally:
        app.close()
