"""The SQLite read model (apsw): memories, entities, aliases, links, access and validation.

``ReadModel`` is a façade over the parts of ``projections/readmodel/``, each with one job:

- ``readmodel/schema.py``: tables, indexes, triggers and ``SCHEMA_VERSION``;
- ``readmodel/store.py``: the file, its connections and snapshots, metadata, checkpoints;
- ``readmodel/projector.py``: the only writer of rows from events (``ReadModel.apply``);
- ``readmodel/reads.py``: the reads every consumer shares (the façade's own queries);
- one query object per consumer: ``recall`` (recall and the read rules), ``insight`` (stats
  and reflect), ``dashboard``, ``export`` (a dump), ``decisions`` (the write path),
  ``maintenance`` (reconcile, and the whole-table dump a rebuild is compared by);
- ``readmodel/predicates.py``: the rule predicates in SQL, written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from journal import Record
from projections.readmodel.dashboard import DashboardReads
from projections.readmodel.decisions import DecisionReads
from projections.readmodel.export import ExportReads
from projections.readmodel.insight import InsightReads
from projections.readmodel.maintenance import Maintenance
from projections.readmodel.projector import NO_RULES, Projector, Rules
from projections.readmodel.reads import Reads
from projections.readmodel.recall import RecallReads
from projections.readmodel.store import SQLITE, Store


class ReadModel(Reads):
    """The read model in one SQLite file, composed of its parts. Open with :meth:`open`;
    close when done."""

    def __init__(self, store: Store, rules: Rules = NO_RULES) -> None:
        super().__init__(store)
        self.store = store
        self.path = store.path
        self.projector = Projector(store, rules)
        self.recall = RecallReads(store)
        self.insight = InsightReads(store)
        self.dashboard = DashboardReads(store)
        self.export = ExportReads(store)
        self.decisions = DecisionReads(store)
        self.maintenance = Maintenance(store)

    @classmethod
    def open(
        cls, path: Path, *, rules: Rules = NO_RULES, busy_timeout_ms: int = 10_000
    ) -> ReadModel:
        return cls(Store.open(path, busy_timeout_ms=busy_timeout_ms), rules)

    def close(self) -> None:
        self.store.close()

    def snapshot(self) -> AbstractContextManager[None]:
        """Run this thread's queries on one committed state of the file (re-entrant)."""
        return self.store.snapshot()

    def apply(self, records: Sequence[Record]) -> int:
        """Apply records not yet applied, in one transaction; returns how many were new."""
        return self.projector.apply(records)

    def checkpoint(self, name: str = SQLITE) -> int:
        return self.store.checkpoint(name)

    def set_checkpoint(self, name: str, position: int) -> None:
        """Record another sink's checkpoint (Qdrant's), after its write was acknowledged."""
        self.store.set_checkpoint(name, position)

    @property
    def schema_version(self) -> int:
        return self.store.schema_version

    # What ``projections/reconcile.py`` calls on the façade (its calls move to
    # ``maintenance`` when that module is next edited).

    def differing_keys(self, other: ReadModel) -> list[str]:
        return self.maintenance.differing_keys(other)

    def replace_rows(self, source: Path, keys: Sequence[str]) -> None:
        self.maintenance.replace_rows(source, keys)

    def alias_rows(self) -> list[tuple[str, str, str]]:
        return self.maintenance.alias_rows()
