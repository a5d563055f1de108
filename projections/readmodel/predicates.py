"""The read model's rule predicates, each written once: rendered to SQL here, read in Python
by the rule's own module from the same spec.

The rules a vector filter also states are specs in the filter's own clauses
(``projections.vectors``: ``vectors.visible``, ``vectors.CURRENT``), which Qdrant reads
(``vectors.filter_clauses``), Python reads (``vectors.passes``) and :func:`to_sql` renders, so
each has one meaning in all three. The others are read-model rules alone, written here once:

- *visible* (:func:`seen_by`): ``ferrex.rules.visibility.sees`` for a caller that is not the
  operator, rendered from ``vectors.visible``;
- *current* (:data:`CURRENT`): rendered from ``vectors.CURRENT``, which :func:`is_current`
  reads in Python;
- *unexpired* (:func:`unexpired`): no expiry, or one after the time bound;
- *a single fact* (:data:`SINGLE_FACT`): the facts that may contradict one another;
- *stale* (:data:`STALENESS_CLOCKS`): the terms of the staleness score, which
  ``ferrex.rules.freshness.staleness`` reads in Python (:func:`clock_start`) and
  :data:`STALENESS_SCORE` renders to SQL, with :data:`CLOCK`, the earliest of a memory's
  clocks, as the ``memories_clock`` index keys it. The SQL score is exact to a few units
  in the last place; the label near a threshold is always Python's (``readmodel.insight``);
- *foldable* (:func:`foldable_rule`): the episodic memories consolidation may fold, a spec
  of clauses (the vector filter's, and the row-only :class:`Flag`, :class:`Filled` and
  :class:`NotASummary`) that :data:`FOLDABLE` renders to SQL (:func:`row_sql`) and
  ``ferrex.core.decide.consolidate.foldable`` reads in Python (:func:`row_test`); whether a
  memory is a summary (it folds others: the ``folds`` table) is a fact the Python caller
  passes in, as a row does not carry it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, assert_never

from projections.vectors import CURRENT as CURRENT_SPEC
from projections.vectors import All, AnyOf, Clause, Either, Range, Unset, passes, visible

if TYPE_CHECKING:
    from projections.rows import Memory


class Row(Protocol):
    """What the Python reading of a rule looks at: a memory row, or a narrower row of the
    same fields (``InsightReads.single_facts``' ``FactRow``); a field the rule names that the
    row lacks reads as absent."""

    @property
    def t_invalid(self) -> float | None: ...


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
        case All(parts):
            return "(" + " AND ".join(to_sql(o, table=table, bound=bound) for o in parts) + ")"
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


def holds(clause: Clause, row: Row) -> bool:
    """Whether ``row`` meets the vector filter's ``clause``: the spec read in Python as
    ``projections.vectors.passes`` reads a point's payload, for a caller holding the row."""
    return passes((clause,), _Fields(row))


def is_current(row: Row) -> bool:
    """Whether ``row`` is a current memory (not superseded nor invalidated): the rule
    *current* in Python, read from the spec :data:`CURRENT` renders to SQL."""
    return holds(CURRENT_SPEC, row)


def unexpired(param: str = "?", table: str = "") -> str:
    """SQL true of a row with no expiry, or one after the time bound at ``param``."""
    return f"({table}expires_at IS NULL OR {table}expires_at > {param})"


SINGLE_FACT: Final = (
    f"type='semantic' AND {CURRENT} AND multi_valued=0 AND subject IS NOT NULL "
    "AND subject != '' AND predicate_normalized IS NOT NULL AND predicate_normalized != ''"
)
"""The facts that may contradict one another (current, single-valued, with a subject and a
predicate), spelt exactly as ``memories_single_facts`` is restricted."""

# --- The rule *stale*: the terms of the staleness score, and its clocks ---------------------


@dataclass(frozen=True, slots=True)
class Clock:
    """One of the staleness score's clocks, named as its component (``age``, ``access``,
    ``validation``): it started at ``column``, or at ``fallback`` where that is unset; with
    ``later``, at the later of the two (both always set). ``hit``: a recall hit restarts it
    (``column`` is when the last one was)."""

    name: str
    column: str
    fallback: str = "created_at"
    later: bool = False
    hit: bool = False


STALENESS_CLOCKS: Final = (
    Clock("age", "t_valid", later=True),
    Clock("access", "last_accessed", hit=True),
    Clock("validation", "last_validated"),
)
"""The clocks of ``ferrex.rules.freshness.staleness``, in the order its score sums their
components: the age clock starts when ferrex learned the memory (its event time, or the
store if that came later), the access and validation clocks at the last recall hit and the
last confirmation, or the store when there was none. The score's last term counts uses
(:data:`USES`). Python reads them with :func:`clock_start`, SQL with :func:`clock_sql`
(:data:`CLOCK`, :data:`STALENESS_SCORE`)."""

USES: Final = "access_count"
"""The column of the score's count component (how often the memory was recalled)."""


def clock_start(clock: Clock, row: object) -> float:
    """When ``clock`` started for ``row`` (a read-model row or anything with its fields)."""
    at: float | None = getattr(row, clock.column)
    fallback: float = getattr(row, clock.fallback)
    if at is None:
        return fallback
    return max(at, fallback) if clock.later else at


def clock_sql(clock: Clock, table: str = "") -> str:
    """SQL of when ``clock`` started (``table``: the columns' qualifier)."""
    op = "max" if clock.later else "coalesce"
    return f"{op}({table}{clock.column}, {table}{clock.fallback})"


def oldest_clock(table: str = "", *, hit: str | None = None) -> str:
    """SQL of a memory's oldest clock, the earliest start of its :data:`STALENESS_CLOCKS`
    (``table``: the columns' qualifier); with ``hit``, the SQL time of a recall hit not
    journaled yet, counted as the journal will count it (``ferrex.read.seen.with_pending``):
    the clocks a hit restarts start at the later of their last hit and this one."""
    starts = []
    for clock in STALENESS_CLOCKS:
        if clock.hit and hit is not None:
            last = f"{table}{clock.column}"
            starts.append(f"CASE WHEN {last} IS NULL THEN {hit} ELSE max({last}, {hit}) END")
        else:
            starts.append(clock_sql(clock, table))
    return "min(" + ", ".join(starts) + ")"


CLOCK: Final = oldest_clock()
"""The oldest clock of a memory, spelt exactly as ``memories_clock`` indexes it (a file's
index keeps the text it was made with: this must render
``min(max(t_valid, created_at), coalesce(last_accessed, created_at),
coalesce(last_validated, created_at))``)."""


def _decay_sql(clock: Clock) -> str:
    return (f":w_{clock.name} * (1.0 - pow(2.0, -max(0.0, :now - {clock_sql(clock)}) "
            f"/ :h_{clock.name}))")  # fmt: skip


STALENESS_SCORE: Final = (
    "min(1.0, max(0.0, "
    + " + ".join(
        [_decay_sql(c) for c in STALENESS_CLOCKS]
        + [f":w_count * (1.0 - min(1.0, ln(1 + max(0, {USES})) / :ln_saturation))"]
    )
    + "))"
)
"""The staleness score of ``ferrex.rules.freshness.staleness`` as SQLite computes it, from
the same terms in the same order of operations: per clock, its weight times
``1 - 2^(-max(0, now - start) / half-life)``, then the count's weight times
``1 - min(1, ln(1 + uses) / ln(1 + saturation))``, clamped to [0, 1]. Its parameters are
bound by name (``readmodel.insight.Scoring.bindings``). SQLite's ``pow`` and ``ln`` may
differ from Python's ``exp2`` and ``log1p`` in the last bits: this score only sorts the
memories into sure bands and an unsure one near each threshold, whose memories Python
assesses (see ``readmodel.insight``); it never decides a label Python would not give."""


# --- Rules of read-model rows: the vector filter's clauses and three a point has no field for


@dataclass(frozen=True, slots=True)
class Flag:
    """The 0/1 column ``key`` is ``value`` (a row's bool field)."""

    key: str
    value: bool


@dataclass(frozen=True, slots=True)
class Filled:
    """The text column ``key`` is set and not empty."""

    key: str


@dataclass(frozen=True, slots=True)
class NotASummary:
    """The memory folds no others (no ``folds`` row names it the summary). A row does not
    carry this: in Python the caller says whether the memory is a summary."""


RowClause = Clause | Flag | Filled | NotASummary


def row_sql(clauses: Sequence[RowClause], *, table: str = "", bound: str = "?") -> str:
    """SQL true of a ``memories`` row that meets every one of ``clauses`` (a range's bounds
    rendered as the placeholder ``bound``, bound at run time in the clauses' order)."""
    return " AND ".join(_row_sql(c, table, bound) for c in clauses)


def _row_sql(clause: RowClause, table: str, bound: str) -> str:
    match clause:
        case Flag(key, value):
            return f"{table}{key}={int(value)}"
        case Filled(key):
            return f"{table}{key} IS NOT NULL AND {table}{key} != ''"
        case NotASummary():
            return f"{table}memory_id NOT IN (SELECT summary_id FROM folds)"
        case AnyOf() | Unset() | Range() | Either() | All():
            return to_sql(clause, table=table, bound=bound)
    assert_never(clause)


def row_test(clauses: Sequence[RowClause]) -> Callable[[Memory, bool], bool]:
    """Whether a row meets every one of ``clauses``, read as :func:`row_sql` reads them, as
    one function of the row and whether it is a summary (it folds others, which the row
    does not say); the clauses read once: the vector filter's as
    ``projections.vectors.passes`` reads a payload, the row-only ones here."""
    point = tuple(c for c in clauses if isinstance(c, AnyOf | Unset | Range | Either))
    flags = tuple((c.key, c.value) for c in clauses if isinstance(c, Flag))
    filled = tuple(c.key for c in clauses if isinstance(c, Filled))
    no_summary = any(isinstance(c, NotASummary) for c in clauses)

    def test(row: Memory, summary: bool) -> bool:
        return (
            not (no_summary and summary)
            and all(bool(getattr(row, key)) is value for key, value in flags)
            and all(getattr(row, key) for key in filled)
            and passes(point, _Fields(row))
        )

    return test


class _Fields(Mapping[str, Any]):
    """A row's fields as the payload :func:`projections.vectors.passes` reads."""

    __slots__ = ("_row",)

    def __init__(self, row: Row) -> None:
        self._row = row

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self._row, key)
        except AttributeError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return iter(vars(self._row))

    def __len__(self) -> int:
        return len(vars(self._row))


def foldable_rule(created_before: float) -> tuple[RowClause, ...]:
    """The rule *foldable*: an episodic memory consolidation may fold. Current, not pinned,
    with no expiry, its text there (neither purged nor empty), not a summary itself (a
    summary is not folded again), learned (``created_at``, when ferrex recorded it, never its
    event time) before ``created_before``."""
    return (
        AnyOf("type", ("episodic",)),
        CURRENT_SPEC,
        Flag("pinned", False),
        Unset("expires_at"),
        Flag("redacted", False),
        Filled("content"),
        NotASummary(),
        Range("created_at", lt=created_before),
    )


FOLDABLE: Final = row_sql(foldable_rule(0.0))
"""SQL true of a memory consolidation may fold (:func:`foldable_rule`), unqualified; the
learned-before bound is its one placeholder."""
