"""Stale and aging memories counted for stats and reflect (:mod:`ferrex.read.insight`).

Counted in SQL from each memory's staleness score (:func:`scoring`, over only the memories
clocked long enough ago to be aging: :func:`clock_bound`), with Python assessing exactly the
memories whose score is too near a threshold, those with pending recall hits, and every
memory that may be among the first of reflect's lists (:func:`count_labels`).

The rule *stale* is Python's (``ferrex.rules.freshness.staleness``); the SQL score is
rendered from the same terms (``projections.readmodel.predicates.STALENESS_SCORE``) and only
sorts memories: it labels a memory only where it is further than :data:`_UNSURE` from a
threshold, and the clock bound leaves out only memories that cannot be aging, so no label
differs from Python's (``tests/integration/test_stale_rule.py`` holds this for generated
times and settings).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from ferrex.read.seen import Sight
from ferrex.rules.assess import Assessed, assess
from ferrex.rules.freshness import DAY, StalenessConfig, StalenessParams
from ferrex.rules.visibility import sees
from projections.readmodel.insight import LabelQuery, Scoring
from projections.readmodel.predicates import is_current
from projections.sqlite import ReadModel

RARELY_RECALLED: Final = 3
"""A forget candidate has been recalled fewer times than this."""


_SCORE_MARGIN: Final = 1e-9
"""Below the aging threshold by more than the staleness rule's own boundary tolerance."""


def clock_bound(
    params: StalenessParams, memory_type: str, now: float, score: float | None = None
) -> float:
    """An oldest clock (see ``projections.readmodel.predicates.CLOCK``) from which on a memory of
    this type cannot be aging or stale at ``now``: only memories clocked before it need
    assessing. ``inf`` when no age rules a memory out.

    A memory's score is at most that of a memory never touched since its oldest clock
    (every component grows with its clock's age, the count component is at most 1), and
    that untouched score only grows with age; so below the largest age whose untouched
    score is still under the aging threshold, nothing is aging. Found by bisection, then a
    day of margin for rounding. With ``score``: the bound before which every memory scoring
    at least that is clocked."""
    aging, _ = params.thresholds(memory_type)
    threshold = (aging if score is None else score) - _SCORE_MARGIN

    def untouched(days: float) -> float:
        return params.untouched_score(memory_type, days * DAY)

    if threshold <= 0 or untouched(0.0) >= threshold:
        return math.inf
    low, high = 0.0, 1.0
    while untouched(high) < threshold and high < _NEVER_DAYS:
        low, high = high, high * 2
    if untouched(high) < threshold:
        low = high
    else:
        for _ in range(60):
            middle = (low + high) / 2
            if untouched(middle) < threshold:
                low = middle
            else:
                high = middle
    return now - low * DAY + DAY


_NEVER_DAYS: Final = 1e7
"""An age (days) past every real memory's: a threshold not reached by then rules out
every memory younger."""


def scoring(params: StalenessParams, memory_type: str) -> Scoring:
    """The staleness score of one type as the read model's label queries compute it."""
    w = params.weights
    aging, stale = params.thresholds(memory_type)
    age, access, validation = params.for_type(memory_type).half_lives()
    return Scoring(
        (w.age, w.access, w.validation, w.count), (age * DAY, access * DAY, validation * DAY),
        params.count_saturation, aging, stale, _UNSURE,
    )  # fmt: skip


_UNSURE: Final = 1e-9
"""How near a threshold the score SQL computes leaves a label unsure (then Python assesses
the memory): far above the difference of the two computations (a few units in the last
place) and the staleness rule's own boundary tolerance (1e-12)."""


@dataclass
class Labels:
    """The labels of the memories a caller sees, as :func:`attention` gathers them: counts
    from SQL, and the memories assessed exactly in Python (unsure bands, pending hits and
    the candidates for reflect's lists), by id."""

    stale: int = 0
    aging: int = 0
    rarely: int = 0
    stale_rarely: int = 0
    exact: dict[str, Assessed] = field(default_factory=dict)

    def count(self, label: str, rarely: bool, n: int) -> None:
        if label == "stale":
            self.stale += n
            self.stale_rarely += n if rarely else 0
        elif label == "aging":
            self.aging += n
        else:
            return
        self.rarely += n if rarely else 0

    def counted(self, assessed: Iterable[Assessed]) -> None:
        for a in assessed:
            self.exact[a.memory.memory_id] = a
            self.count(a.label, a.memory.access_count < RARELY_RECALLED, 1)

    def listed(self, assessed: Iterable[Assessed]) -> None:
        for a in assessed:
            self.exact.setdefault(a.memory.memory_id, a)


@dataclass(frozen=True)
class _Kind:
    """One namespace and type's label query, its staleness, and how many of its memories
    SQL could not label."""

    query: LabelQuery
    params: StalenessParams
    unsure: int


def count_labels(
    rm: ReadModel,
    sight: Sight,
    staleness_of: StalenessConfig,
    kinds: Sequence[tuple[str, str]],
    namespace: str | None,
    listed: int,
) -> Labels:
    """Stale and aging memories, counted in SQL from each memory's score (only those
    clocked long enough ago to be aging: :func:`clock_bound`), Python assessing those whose
    score is within :data:`_UNSURE` of a threshold and those with pending recall hits
    (left out of the SQL); with ``listed``, also every memory that may be among the first
    ``listed`` of a list (:func:`_list_candidates`)."""
    now = sight.now
    skip = tuple(sorted(sight.pending))
    labels = Labels()
    plans: list[_Kind] = []
    for ns, memory_type in kinds:
        params = staleness_of.for_namespace(ns)
        before = clock_bound(params, memory_type, now)
        query = LabelQuery(ns, memory_type, scoring(params, memory_type), before, now, skip)
        unsure: list[str] = []
        for c in rm.insight.label_counts(query, rarely_below=RARELY_RECALLED):
            unsure += c.unsure
            if sees(sight.agent_id, c.agent_id, c.visibility):
                labels.count(c.band, c.rarely, c.n)
        if unsure:
            labels.counted(assess(sight.shown(rm.by_ids(unsure)), now, params))
        plans.append(_Kind(query, params, len(unsure)))
    if skip:
        # Only those clocked long enough ago to be aging, hits counted (most memories just
        # recalled are recent): the others are fresh, the rest of the count.
        last_hits = {memory_id: last for memory_id, (_, last) in sight.pending.items()}
        aged = rm.insight.clocked_before([kind.query for kind in plans], last_hits)
        hit = [
            m for m in sight.shown(rm.by_ids(aged))
            if is_current(m) and (m.namespace, m.type) in kinds
            and (namespace is None or m.namespace == namespace)
        ]  # fmt: skip
        for ns in sorted({m.namespace for m in hit}):
            params = staleness_of.for_namespace(ns)
            labels.counted(assess([m for m in hit if m.namespace == ns], now, params))
    if listed > 0:
        aging_too = labels.stale_rarely < listed and labels.rarely > labels.stale_rarely
        for kind in plans:
            ids = _list_candidates(rm, sight, kind, listed, stale=labels.stale > 0,
                                   aging=aging_too)  # fmt: skip
            if ids:
                labels.listed(assess(sight.shown(rm.by_ids(ids)), now, kind.params))
    return labels


_OLDEST: Final = 4
"""How many times the rows a list needs are read first among the oldest clocked."""

_SLACK: Final = 16
"""Rows fetched past the ones a list needs, so that one query usually also holds every row
whose exact score may order it among them."""


def _list_candidates(
    rm: ReadModel, sight: Sight, kind: _Kind, listed: int, *, stale: bool, aging: bool
) -> list[str]:
    """The memories of one kind that may be among the first ``listed`` of reflect's lists
    (stale; stale and rarely recalled; aging and rarely recalled), by their SQL score.

    In each list's band of scores (a margin wider), take the ``first`` highest, ``listed``
    plus the kind's unsure ones (which may belong to another band), so that ``listed`` of
    them surely belong; and every other scored within twice the margin of the last of them
    (their exact scores may order them otherwise): nothing else can be among the first.
    The stale and rarely recalled ones usually are among the stale ones fetched."""
    query = kind.query
    rule = query.scoring
    margin = rule.margin
    first = listed + kind.unsure
    caller = sight.agent_id

    def top(
        scores: tuple[float, float], rarely: int | None
    ) -> tuple[list[tuple[str, float, int]], float]:
        """The rows needed and a score above which the rows hold every one of the band."""
        # The highest scores are usually among the oldest clocked: when the oldest hold
        # enough of the band, only the memories clocked before any that score as high as
        # the least of those (less the margins) are read.
        oldest = rm.insight.most_stale(query, caller=caller, scores=scores, rarely_below=rarely,
                               oldest=_OLDEST * first)  # fmt: skip
        if len(oldest) >= first:
            low = max(scores[0], sorted((s for _, s, _ in oldest), reverse=True)[first - 1]
                      - 2 * margin)  # fmt: skip
            cut = min(query.before, clock_bound(kind.params, query.type, query.now, low))
            rows = rm.insight.most_stale(replace(query, before=cut), caller=caller,
                                 scores=(low, scores[1]), rarely_below=rarely)  # fmt: skip
            return rows, low
        rows = rm.insight.most_stale(query, caller=caller, scores=scores, rarely_below=rarely,
                             limit=first + _SLACK)  # fmt: skip
        if len(rows) < first + _SLACK:
            return rows, -math.inf
        if rows[-1][1] < rows[first - 1][1] - 2 * margin:
            return rows, rows[-1][1]
        low = max(scores[0], rows[first - 1][1] - 2 * margin)
        rows = rm.insight.most_stale(
            query, caller=caller, scores=(low, scores[1]), rarely_below=rarely
        )
        return rows, low

    def covered(rows: list[tuple[str, float, int]], above: float) -> bool:
        return len(rows) >= first and rows[first - 1][1] - 2 * margin > above

    ids: set[str] = set()
    if stale:
        band = (rule.stale - margin, math.inf)
        rows, above = top(band, None)
        ids.update(m for m, _, _ in rows)
        rarely = [r for r in rows if r[2] < RARELY_RECALLED]
        if not (above == -math.inf or covered(rarely, above)):
            ids.update(m for m, _, _ in top(band, RARELY_RECALLED)[0])
    if aging:
        band = (rule.aging - margin, rule.stale + margin)
        ids.update(m for m, _, _ in top(band, RARELY_RECALLED)[0])
    return sorted(ids)
