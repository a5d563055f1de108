"""The read model's rule predicates in SQL, each written once for every query that needs it.

- *visible* (:func:`seen_by`): ``ferrex.rules.visibility.sees`` for a caller that is not the
  operator;
- *a single fact* (:data:`SINGLE_FACT`): the facts that may contradict one another;
- *the oldest clock* (:data:`CLOCK`): the earliest of the times a memory's staleness counts
  from, as the ``memories_clock`` index keys it.
"""

from __future__ import annotations

from typing import Final


def seen_by(param: str = "?", table: str = "") -> str:
    """SQL true of a row an agent (bound at ``param``) sees, as ``ferrex.rules.visibility.sees``
    decides for a caller that is not the operator (who sees every row, and needs no clause);
    ``table``: the columns' qualifier (``"m."``)."""
    return f"({table}visibility='shared' OR {table}agent_id IS NULL OR {table}agent_id={param})"


SINGLE_FACT: Final = (
    "type='semantic' AND t_invalid IS NULL AND multi_valued=0 AND subject IS NOT NULL "
    "AND subject != '' AND predicate_normalized IS NOT NULL AND predicate_normalized != ''"
)
"""The facts that may contradict one another (active, single-valued, with a subject and a
predicate), spelt exactly as ``memories_single_facts`` is restricted."""

CLOCK: Final = (
    "min(max(t_valid, created_at), coalesce(last_accessed, created_at), "
    "coalesce(last_validated, created_at))"
)
"""The oldest clock of a memory, spelt exactly as ``memories_clock`` indexes it."""
