"""The read model's rule predicates, each written once and rendered to SQL here.

The rules a vector filter also states are specs in the filter's own clauses
(``projections.vectors``: ``vectors.visible``, ``vectors.CURRENT``), which Qdrant reads
(``vectors.filter_clauses``), Python reads (``vectors.passes``) and :func:`to_sql` renders, so
each has one meaning in all three. The others are read-model rules alone, written here once:

- *visible* (:func:`seen_by`): ``ferrex.rules.visibility.sees`` for a caller that is not the
  operator, rendered from ``vectors.visible``;
- *current* (:data:`CURRENT`): rendered from ``vectors.CURRENT``;
- *unexpired* (:func:`unexpired`): no expiry, or one after the time bound;
- *a single fact* (:data:`SINGLE_FACT`): the facts that may contradict one another;
- *the oldest clock* (:data:`CLOCK`): the earliest of the times a memory's staleness counts
  from, as the ``memories_clock`` index keys it;
- *foldable* (:data:`FOLDABLE`): the episodic memories consolidation may fold. It is not
  ``ferrex.core.decide.consolidate.foldable`` word for word: the SQL also leaves out summaries (a
  memory that folds others) and keeps a memory whose text is empty but not NULL, where the
  Python rule asks for non-empty text and cannot see the folds.
"""

from __future__ import annotations

from typing import Final, assert_never

from projections.vectors import CURRENT as CURRENT_SPEC
from projections.vectors import AnyOf, Clause, Either, Range, Unset, visible

_BOUND: Final = "\x00bound"
"""A spec's value bound at run time: rendered as the caller's placeholder."""


def to_sql(clause: Clause, *, table: str = "", bound: str = "?") -> str:
    """SQL true of a row that meets ``clause`` (columns qualified by ``table``, ``"m."``):
    a value that is the bound marker, and a range's bounds, are rendered as the placeholder
    ``bound`` (``?`` or ``:name``), every other value as a literal."""
    match clause:
        case AnyOf(key, values):
            rendered = [bound if v == _BOUND else _literal(v) for v in values]
            if len(rendered) == 1:
                return f"{table}{key}={rendered[0]}"
            return f"{table}{key} IN ({', '.join(rendered)})"
        case Unset(key):
            return f"{table}{key} IS NULL"
        case Range(key, gte, gt, lte, lt):  # each bound set is bound at run time
            ops = ((">=", gte), (">", gt), ("<=", lte), ("<", lt))
            return " AND ".join(f"{table}{key} {op} {bound}" for op, v in ops if v is not None)
        case Either(options):
            return "(" + " OR ".join(to_sql(o, table=table, bound=bound) for o in options) + ")"
    assert_never(clause)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def seen_by(param: str = "?", table: str = "") -> str:
    """SQL true of a row an agent (bound at ``param``) sees, as ``ferrex.rules.visibility.sees``
    decides for a caller that is not the operator (who sees every row, and needs no clause);
    ``table``: the columns' qualifier (``"m."``)."""
    return to_sql(visible(_BOUND), table=table, bound=param)


def current(table: str = "") -> str:
    """SQL true of a current memory (not superseded nor invalidated)."""
    return to_sql(CURRENT_SPEC, table=table)


CURRENT: Final = current()
"""SQL true of a current memory, unqualified."""


def unexpired(param: str = "?", table: str = "") -> str:
    """SQL true of a row with no expiry, or one after the time bound at ``param``."""
    return f"({table}expires_at IS NULL OR {table}expires_at > {param})"


SINGLE_FACT: Final = (
    f"type='semantic' AND {CURRENT} AND multi_valued=0 AND subject IS NOT NULL "
    "AND subject != '' AND predicate_normalized IS NOT NULL AND predicate_normalized != ''"
)
"""The facts that may contradict one another (current, single-valued, with a subject and a
predicate), spelt exactly as ``memories_single_facts`` is restricted."""

CLOCK: Final = (
    "min(max(t_valid, created_at), coalesce(last_accessed, created_at), "
    "coalesce(last_validated, created_at))"
)
"""The oldest clock of a memory, spelt exactly as ``memories_clock`` indexes it."""

FOLDABLE: Final = (
    f"type='episodic' AND {CURRENT} AND pinned=0 AND expires_at IS NULL AND redacted=0 "
    "AND content IS NOT NULL AND memory_id NOT IN (SELECT summary_id FROM folds)"
)
"""The episodic memories consolidation may fold, learned at any time (see the module's note
on how it differs from ``ferrex.core.decide.consolidate.foldable``)."""
