"""What stats and reflect read (``ferrex.read.insight``): the kept counts, the labels that
move with time counted and listed in SQL, never-validated memories, the facts that may
contradict one another counted per subject and predicate, and entities in use.

Aggregates are kept by SQLite itself (``projections.readmodel.schema``: ``memory_counts``,
``unvalidated_counts``, the ``memories_clock`` and ``memories_single_facts`` indexes), so
every write path, and a rebuild, derives the same.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import apsw

from projections.readmodel.predicates import (
    CLOCK,
    CURRENT,
    SINGLE_FACT,
    STALENESS_SCORE,
    current,
    oldest_clock,
    seen_by,
    unexpired,
)
from projections.readmodel.reads import PAGE, Reads, optional_text
from projections.rows import Memory, MemoryCount

# The bands the staleness score (``predicates.STALENESS_SCORE``, rendered from the terms
# ``ferrex.rules.freshness.staleness`` reads) sorts memories into: a score further than
# ``:margin`` from a threshold (far above the few units in the last place SQLite's ``pow`` and
# ``ln`` may differ from Python's) gives the label Python would; a score nearer is ``unsure``,
# and those memories are assessed in Python, so every label is Python's.
_BAND = (
    "CASE WHEN s >= :stale + :margin THEN 'stale' WHEN s >= :stale - :margin THEN 'unsure' "
    "WHEN s >= :aging + :margin THEN 'aging' WHEN s >= :aging - :margin THEN 'unsure' "
    "ELSE 'fresh' END"
)
# Keeps a subquery apart (SQLite does not flatten one with a LIMIT), so that its score is
# computed once per row, not again wherever the outer query names it.
_APART = " LIMIT -1"
# The memories whose label moves with time, of one namespace and type: active, not pinned
# (a pinned memory is fresh), unexpired, clocked before ``:before`` (``memories_clock``), and
# not among ``:skip`` (a JSON array of ids: those with recall hits not journaled yet).
_LABELLED = (
    f"namespace=:namespace AND type=:type AND {CURRENT} AND {CLOCK} < :before "
    f"AND pinned=0 AND {unexpired(':now')} "
    "AND memory_id NOT IN (SELECT value FROM json_each(:skip))"
)

# The oldest clock of a memory (``m``) with a recall hit not journaled yet (``h.value``).
_PENDING_CLOCK = oldest_clock("m.", hit="h.value")


@dataclass(frozen=True)
class Scoring:
    """One memory type's staleness score and label thresholds, as the read model's label
    queries compute them (``ferrex.read.insight`` builds it from
    ``ferrex.rules.freshness.StalenessParams``): the weights of the age, access, validation
    and count components, the three clocks' half-lives in seconds, the count saturation,
    the aging and stale score thresholds, and the margin within which a label is unsure."""

    weights: tuple[float, float, float, float]
    half_lives: tuple[float, float, float]
    count_saturation: int
    aging: float
    stale: float
    margin: float

    def bindings(self, now: float) -> dict[str, Any]:
        w_age, w_access, w_validation, w_count = self.weights
        h_age, h_access, h_validation = self.half_lives
        return {
            "now": now, "w_age": w_age, "w_access": w_access, "w_validation": w_validation,
            "w_count": w_count, "h_age": h_age, "h_access": h_access,
            "h_validation": h_validation, "ln_saturation": math.log1p(self.count_saturation),
            "aging": self.aging, "stale": self.stale, "margin": self.margin,
        }  # fmt: skip


@dataclass(frozen=True)
class LabelQuery:
    """Which memories a label query reads (see ``_LABELLED``: of one namespace and type,
    clocked before ``before``, none of ``skip``) and how it scores them at ``now``."""

    namespace: str
    type: str
    scoring: Scoring
    before: float
    now: float
    skip: tuple[str, ...] = ()

    def bindings(self) -> dict[str, Any]:
        return {**self.scoring.bindings(self.now), "namespace": self.namespace,
                "type": self.type, "before": self.before,
                "skip": json.dumps(list(self.skip))}  # fmt: skip


@dataclass(frozen=True, slots=True)
class LabelCount:
    """How many memories of one scope (owner, visibility) a label query puts in one band
    (``stale``, ``aging``, ``fresh``, or ``unsure``: too near a threshold to tell in SQL),
    and whether they were recalled fewer than the given number of times; the unsure ones'
    ids."""

    agent_id: str | None
    visibility: str
    band: str
    rarely: bool
    n: int
    unsure: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FactRow:
    """A fact as contradictions read it (``InsightReads.single_facts``): the fields of
    :class:`Memory` they look at, its subject key and its scope."""

    memory_id: str
    namespace: str
    type: str
    t_invalid: float | None
    multi_valued: bool
    subject: str | None
    subject_key: str
    predicate_normalized: str | None
    object: str | None
    agent_id: str | None
    visibility: str


class FactGroup(NamedTuple):
    """How many facts a caller sees of one namespace, subject key and predicate
    (``InsightReads.fact_groups``), and the least and greatest of their object forms: they
    disagree when these differ. A tuple: tens of thousands are made per call."""

    namespace: str
    subject_key: str
    predicate_normalized: str
    n: int
    least_form: str
    greatest_form: str


class FactSubject(NamedTuple):
    """The facts a caller sees of one namespace and subject key (``InsightReads.fact_subjects``):
    its predicates (a JSON array, the same text for the same list, so that it can key a
    cache) and how many of them have facts that disagree (their least and greatest object
    forms differ). A tuple: thousands are made per call."""

    namespace: str
    subject_key: str
    predicates: str
    disagreeing: int


class InsightReads(Reads):
    """The queries of stats and reflect."""

    def memory_counts(self, namespace: str | None = None) -> list[MemoryCount]:
        """The kept counts of memories (of a namespace, or all), one per key."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace is not None else ("", ())
        return [
            MemoryCount(str(ns), str(t), str(o) if owned else None, str(v), bool(a), bool(x),
                        int(n))
            for ns, t, o, owned, v, a, x, n in self.db.execute(
                "SELECT namespace, type, owner, owned, visibility, active, expiring, n "
                f"FROM memory_counts {where} ORDER BY 1, 2, 3, 4, 5, 6, 7",
                args,
            )
        ]  # fmt: skip

    def label_counts(self, query: LabelQuery, *, rarely_below: int) -> list[LabelCount]:
        """The memories whose label moves with time (see ``_LABELLED``), counted per scope
        and band of their score at ``now`` (see ``_BAND``), and whether recalled fewer than
        ``rarely_below`` times; the ids of the ``unsure`` ones with their count."""
        args = {**query.bindings(), "rarely": rarely_below}
        return [
            LabelCount(optional_text(a), str(v), str(b), bool(r), int(n),
                       tuple(json.loads(ids)) if ids is not None else ())
            for a, v, b, r, n, ids in self.db.execute(
                f"SELECT agent_id, visibility, band, rarely, count(*), CASE band WHEN 'unsure' "
                f"THEN json_group_array(memory_id) END FROM (SELECT agent_id, visibility, "
                f"memory_id, access_count < :rarely AS rarely, {_BAND} AS band FROM (SELECT "
                f"agent_id, visibility, memory_id, access_count, {STALENESS_SCORE} AS s "
                f"FROM memories WHERE {_LABELLED}{_APART})) "
                "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
                args,
            )
        ]  # fmt: skip

    def clocked_before(
        self, queries: Sequence[LabelQuery], last_hits: Mapping[str, float]
    ) -> list[str]:
        """Of the memories with recall hits not journaled yet (id → the latest hit's time),
        the active ones of a query's namespace and type whose oldest clock, counting that
        hit as their last access (as ``ferrex.read.seen.with_pending`` does), is before that
        query's ``before``, by id: the others cannot be aging at its ``now``. In one pass
        over the hits, each memory looked up by id: the cost follows the hits, not the
        memories."""
        if not queries or not last_hits:
            return []
        bounds = [[q.namespace, q.type, q.before] for q in queries]
        return [
            str(m)
            for (m,) in self.db.execute(
                # CROSS JOIN: the hits first, each memory by its key (not every memory of
                # a namespace and type through ``memories_clock``, then each hit).
                "SELECT m.memory_id FROM json_each(:hits) AS h "
                "CROSS JOIN memories AS m ON m.memory_id = h.key "
                "CROSS JOIN json_each(:bounds) AS b "
                "WHERE b.value ->> 0 = m.namespace AND b.value ->> 1 = m.type "
                f"AND {current('m.')} AND {_PENDING_CLOCK} < b.value ->> 2 ORDER BY 1",
                {"hits": json.dumps(dict(last_hits)), "bounds": json.dumps(bounds)},
            )
        ]

    def most_stale(
        self,
        query: LabelQuery,
        *,
        caller: str | None,
        scores: tuple[float, float],
        rarely_below: int | None = None,
        limit: int | None = None,
        oldest: int | None = None,
    ) -> list[tuple[str, float, int]]:
        """(id, SQL score, access count) of the memories a label query reads that
        ``caller`` may see (the rule of ``ferrex.rules.visibility``; None: the operator),
        scored from ``scores[0]`` (inclusive) to ``scores[1]`` (exclusive) at ``now``,
        recalled fewer than ``rarely_below`` times if given: the highest score first (then
        by id), at most ``limit``; with ``oldest``, those among the ``oldest`` first
        clocked (see ``_AGGREGATES``), by clock instead."""
        args = {**query.bindings(), "low": scores[0], "high": scores[1], "caller": caller,
                "rarely": rarely_below}  # fmt: skip
        seen = "" if caller is None else f" AND {seen_by(':caller')}"
        rarely = "" if rarely_below is None else " AND access_count < :rarely"
        cut = "" if limit is None else f" LIMIT {int(limit)}"
        first = _APART if oldest is None else f" ORDER BY {CLOCK} LIMIT {int(oldest)}"
        order = "s DESC, memory_id" if oldest is None else "clock, memory_id"
        return [
            (str(m), float(score), int(n))
            for m, score, n in self.db.execute(
                f"SELECT memory_id, s, access_count FROM (SELECT memory_id, access_count, "
                f"{STALENESS_SCORE} AS s, {CLOCK} AS clock FROM memories "
                f"WHERE {_LABELLED}{seen}{rarely}{first}) WHERE s >= :low AND s < :high "
                f"ORDER BY {order}{cut}",
                args,
            )
        ]

    def unvalidated_counts(
        self, namespace: str | None, now: float, after_seconds: float
    ) -> list[tuple[str | None, str, int]]:
        """(agent id, visibility, how many) of the active memories never validated and
        stored at least ``after_seconds`` before ``now``, not expired at ``now``. Whichever
        side of the store-time bound spans less time (the earliest and latest store times
        of ``memories_unvalidated_scoped``, two index ends) is read: the old ones counted
        directly (the test of :meth:`unvalidated`), or the kept ``unvalidated_counts`` less
        those stored later (the exact test's complement behind an index bound a second
        wider than any rounding) and those expired by ``now``. The same count either way;
        the cost follows the fewer."""
        earliest, latest = self.db.execute(
            f"SELECT (SELECT min(created_at) FROM memories WHERE {CURRENT} "
            "AND last_validated IS NULL), (SELECT max(created_at) FROM memories "
            f"WHERE {CURRENT} AND last_validated IS NULL)"
        ).fetchone() or (None, None)
        if earliest is None or latest is None:
            return []
        bound = now - after_seconds
        scope: dict[tuple[str | None, str], int] = {}
        if bound - float(earliest) <= float(latest) - bound:
            where, args = self._unvalidated_where(namespace, now, after_seconds)
            for a, v, n in self.db.execute(
                f"SELECT agent_id, visibility, count(*) FROM memories WHERE {where} GROUP BY 1, 2",
                args,
            ):
                scope[(optional_text(a), str(v))] = int(n)
        else:
            scope = self._unvalidated_less_recent(namespace, now, after_seconds)
        return sorted(
            ((a, v, n) for (a, v), n in scope.items() if n > 0),
            key=lambda c: (c[0] is not None, c[0] or "", c[1]),
        )

    def _unvalidated_less_recent(
        self, namespace: str | None, now: float, after_seconds: float
    ) -> dict[tuple[str | None, str], int]:
        scope: dict[tuple[str | None, str], int] = {}
        where, args = ("", []) if namespace is None else (" WHERE namespace=?", [namespace])
        for owner, owned, v, n in self.db.execute(
            f"SELECT owner, owned, visibility, n FROM unvalidated_counts{where}", args
        ):
            key = (str(owner) if owned else None, str(v))
            scope[key] = scope.get(key, 0) + int(n)
        ns = "" if namespace is None else " AND +namespace=?"
        less = (
            "created_at > ? AND NOT (? - created_at >= ?)",
            "expires_at <= ? AND ? - created_at >= ?",
        )
        for test, bound in zip(less, ([now - after_seconds - 1.0], [now]), strict=True):
            for a, v, n in self.db.execute(
                f"SELECT agent_id, visibility, count(*) FROM memories WHERE {CURRENT} "
                f"AND last_validated IS NULL AND {test}{ns} GROUP BY 1, 2",
                [*bound, now, after_seconds, *args],
            ):
                scope[(optional_text(a), str(v))] -= int(n)
        return scope

    def unvalidated(
        self, namespace: str | None, now: float, after_seconds: float
    ) -> Iterator[Memory]:
        """The memories :meth:`unvalidated_counts` counts, oldest first (then by id), read a
        page at a time as the caller goes on."""
        ns, args = self._unvalidated_where(namespace, now, after_seconds)
        last: tuple[float, str] | None = None
        while True:
            after = "" if last is None else " AND (created_at, memory_id) > (?, ?)"
            rows = self._where(
                f"SELECT * FROM memories WHERE {ns}{after} "
                f"ORDER BY created_at, memory_id LIMIT {PAGE}",
                [*args, *(last or ())],
            )
            yield from rows
            if len(rows) < PAGE:
                return
            last = (rows[-1].created_at, rows[-1].memory_id)

    @staticmethod
    def _unvalidated_where(
        namespace: str | None, now: float, after_seconds: float
    ) -> tuple[str, list[Any]]:
        # The exact test (``now - created_at >= after``, as Python computes it: both are IEEE
        # doubles) behind an index bound a second wider than any rounding. The range is read
        # from ``memories_unvalidated_scoped`` alone: ``+namespace`` keeps the planner (no
        # statistics) from walking a namespace's every active memory in ``memories_clock``.
        sql = (
            f"{CURRENT} AND last_validated IS NULL AND created_at <= ? "
            f"AND ? - created_at >= ? AND {unexpired()}"
        )
        args: list[Any] = [now - after_seconds + 1.0, now, after_seconds, now]
        if namespace is not None:
            sql += " AND +namespace=?"
            args.append(namespace)
        return sql, args

    def latest_active(self, namespace: str | None) -> Iterator[Memory]:
        """Active memories, latest stored first, a page at a time. Of one time (the lines of
        one import batch share it) the later in the journal comes first: the batch's last
        line, not the order of its random ids; within one journal record, by id."""
        ns, args = ("", []) if namespace is None else (" AND namespace=?", [namespace])
        last: tuple[float, int, str] | None = None
        while True:
            after = (
                ""
                if last is None
                else " AND (created_at < ? OR (created_at = ? AND (position < ? "
                "OR (position = ? AND memory_id > ?))))"
            )
            rows = self._where(
                f"SELECT * FROM memories WHERE {CURRENT}{ns}{after} "
                f"ORDER BY created_at DESC, position DESC, memory_id LIMIT {PAGE}",
                [*args, *(() if last is None else (last[0], last[0], last[1], last[1], last[2]))],
            )
            yield from rows
            if len(rows) < PAGE:
                return
            last = (rows[-1].created_at, rows[-1].position, rows[-1].memory_id)

    def single_facts(
        self,
        namespace: str | None,
        now: float,
        subjects: Sequence[tuple[str, str]] | None = None,
    ) -> list[FactRow]:
        """The active single-valued facts with a subject and a predicate, not expired at
        ``now`` (of a namespace, or all; of the (namespace, subject key) pairs ``subjects``
        if given), by id: the facts that may contradict one another
        (``ferrex.read.insight.contradictions``), with only what that reads of them."""
        where, args = self._seen_facts_where(namespace, now, None, subjects)
        return [
            FactRow(str(m), str(ns), str(t), ti, bool(multi), s, str(k), p, o, a, str(v))
            for m, ns, t, ti, multi, s, k, p, o, a, v in self.db.execute(
                "SELECT memory_id, namespace, type, t_invalid, multi_valued, subject, "
                "subject_key, predicate_normalized, object, agent_id, visibility "
                f"FROM memories WHERE {where} ORDER BY memory_id",
                args,
            )
        ]

    def fact_groups(
        self,
        namespace: str | None,
        now: float,
        caller: str | None,
        subjects: Sequence[tuple[str, str]] | None = None,
    ) -> list[FactGroup] | None:
        """The facts of :meth:`single_facts` that ``caller`` sees (every one for the
        operator, None), of the (namespace, subject key) pairs ``subjects`` if given, counted
        per namespace, subject key and predicate, with the least and the greatest of their
        object forms (``memories_single_facts``); None when some of them have no form (a
        read model without the rule, or of an older schema)."""
        where, args = self._seen_facts_where(namespace, now, caller, subjects)
        try:
            rows: list[tuple[Any, ...]] = self.db.execute(
                "SELECT namespace, subject_key, predicate_normalized, count(*), "
                "min(object_form), max(object_form), count(object_form) "
                f"FROM memories WHERE {where} "
                "GROUP BY namespace, subject_key, predicate_normalized",
                args,
            ).fetchall()
        except apsw.SQLError:  # an older file opened immutable: no ``object_form`` column
            return None
        if any(row[3] != row[6] for row in rows):
            return None
        return [FactGroup._make(row[:6]) for row in rows]

    def fact_subjects(
        self, namespace: str | None, now: float, caller: str | None
    ) -> list[FactSubject] | None:
        """The groups of :meth:`fact_groups` counted again per namespace and subject key, in
        SQL (``memories_single_facts``, in its order): each key's predicates and how many of
        its groups disagree, one row per subject key rather than per predicate; None when
        some fact has no form."""
        where, args = self._seen_facts_where(namespace, now, caller, None)
        try:
            rows: list[tuple[Any, ...]] = self.db.execute(
                "SELECT namespace, subject_key, json_group_array(p), sum(lo != hi), "
                "sum(n - f) FROM (SELECT namespace, subject_key, predicate_normalized AS p, "
                "min(object_form) AS lo, max(object_form) AS hi, count(*) AS n, "
                f"count(object_form) AS f FROM memories WHERE {where} "
                "GROUP BY namespace, subject_key, predicate_normalized) "
                "GROUP BY namespace, subject_key",
                args,
            ).fetchall()
        except apsw.SQLError:  # an older file opened immutable: no ``object_form`` column
            return None
        if any(row[4] for row in rows):
            return None
        return [FactSubject(ns, key, predicates, n or 0) for ns, key, predicates, n, _ in rows]

    def _seen_facts_where(
        self,
        namespace: str | None,
        now: float,
        caller: str | None,
        subjects: Sequence[tuple[str, str]] | None,
    ) -> tuple[str, list[Any]]:
        where, args = self._facts_where(namespace, now)
        if caller is not None:
            where += f" AND {seen_by()}"
            args.append(caller)
        if subjects is not None:
            where += (
                " AND (namespace, subject_key) IN (SELECT value ->> 0, value ->> 1 "
                "FROM json_each(?))"
            )
            args.append(json.dumps([list(s) for s in subjects]))
        return where, args

    @staticmethod
    def _facts_where(namespace: str | None, now: float) -> tuple[str, list[Any]]:
        sql = f"{SINGLE_FACT} AND {unexpired()}"
        args: list[Any] = [now]
        if namespace is not None:
            sql = "namespace=? AND " + sql
            args.insert(0, namespace)
        return sql, args

    def settled_pairs(self, ids: Collection[str]) -> frozenset[frozenset[str]]:
        """The pairs of facts among ``ids`` said to both hold (``facts.differ``): recall's
        contradicts mark leaves each such pair out, stats and reflect a group of facts
        whose every two that disagree are one."""
        return frozenset(
            frozenset((str(a), str(b)))
            for a, b in self.db.execute(
                "SELECT memory_id, other_id FROM fact_differs "
                "WHERE memory_id IN (SELECT value FROM json_each(?1)) "
                "AND other_id IN (SELECT value FROM json_each(?1))",
                (json.dumps(sorted(set(ids))),),
            )
        )

    def settled_subjects(self, namespace: str | None, now: float) -> set[tuple[str, str]]:
        """(namespace, subject key) of the facts of :meth:`single_facts` (of every caller)
        that are one of a pair said to both hold: the subjects whose contradictions stats
        and reflect count from their facts rather than from :meth:`fact_subjects`."""
        where, args = self._facts_where(namespace, now)
        return {
            (str(ns), str(key))
            for ns, key in self.db.execute(
                f"SELECT DISTINCT namespace, subject_key FROM memories WHERE {where} "
                "AND memory_id IN (SELECT memory_id FROM fact_differs "
                "UNION SELECT other_id FROM fact_differs)",
                args,
            )
        }

    def conflicting_ids(self) -> list[str]:
        """Every memory named in a possible conflict, sorted."""
        return sorted(
            {
                str(m)
                for (m,) in self.db.execute(
                    "SELECT memory_id FROM possible_conflicts UNION "
                    "SELECT other_id FROM possible_conflicts"
                )
            }
        )

    def entity_last_use(
        self, namespace: str | None, now: float, entity_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str | None, str, float]]:
        """(entity id, agent id, visibility, latest event time) of the active memories that
        name each entity (of ``entity_ids`` if given), not expired at ``now``, per scope of
        those memories."""
        args: list[Any] = [now] if namespace is None else [now, namespace]
        ns = "" if namespace is None else " AND m.namespace=?"
        if entity_ids is not None:
            ns += " AND me.entity_id IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(list(entity_ids)))
        return [
            (str(e), optional_text(a), str(v), float(t))
            for e, a, v, t in self.db.execute(
                "SELECT me.entity_id, m.agent_id, m.visibility, max(m.t_valid) "
                "FROM memory_entities me JOIN memories m ON m.memory_id = me.memory_id "
                f"WHERE {current('m.')} AND {unexpired(table='m.')}"
                f"{ns} GROUP BY me.entity_id, m.agent_id, m.visibility ORDER BY 1, 2, 3",
                args,
            )
        ]

    def entities_used_since(
        self, namespace: str | None, now: float, seconds: float
    ) -> list[tuple[str, str | None, str]]:
        """(entity id, agent id, visibility) of the active memories, not expired at
        ``now``, whose event time is less than ``seconds`` before ``now`` (``now - t_valid <
        seconds``, as Python computes it), per scope of those memories: the entities in use.
        The memories are read first (most are older), then their links."""
        ns, args = ("", [now, now, seconds]) if namespace is None else (
            " AND m.namespace=?", [now, now, seconds, namespace])  # fmt: skip
        return [
            (str(e), optional_text(a), str(v))
            for e, a, v in self.db.execute(
                "SELECT DISTINCT me.entity_id, m.agent_id, m.visibility "
                "FROM memories m CROSS JOIN memory_entities me ON me.memory_id = m.memory_id "
                f"WHERE {current('m.')} AND {unexpired(table='m.')} "
                f"AND ? - m.t_valid < ?{ns} ORDER BY 1, 2, 3",
                args,
            )
        ]
