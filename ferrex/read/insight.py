"""What ferrex tells about the memory as a whole: stats (brief and detailed) and reflect.

Both read the read model only (plus the recall hits not journaled yet, ``pending``, so a
recall counts at once). ``stats`` is what an agent asks at the start of a conversation (a few
hundred bytes), ``reflect`` what needs attention: stale and never validated memories with
reasons, contradictions, forget candidates and dormant entities. Both take their numbers from
one :func:`attention`, so ``stats``' counts are ``reflect``'s ``counts``, whatever ``limit``
cuts from reflect's lists. Times in answers are RFC 3339 UTC (ferrex.times).
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from ferrex.read.seen import Sight, one_line
from ferrex.rules.assess import Assessed, assess, eviction_candidate, text_bytes
from ferrex.rules.eviction import eviction_reason
from ferrex.rules.freshness import DAY, StalenessConfig, StalenessParams
from ferrex.rules.predicates import match_known
from ferrex.rules.subjects import object_form
from ferrex.rules.visibility import sees
from ferrex.times import rfc3339
from projections.documents import subject_key
from projections.readmodel.insight import FactRow, FactSubject, LabelQuery, Scoring
from projections.rows import RELATION, Memory, MemoryCount
from projections.sqlite import ReadModel

SubjectOf = Mapping[tuple[str, str], str]
"""(namespace, normalized spelling) → the entity it names, as the caller sees spellings."""


def subject_entities(
    rm: ReadModel, namespaces: Sequence[str], sight: Sight | None
) -> dict[tuple[str, str], str]:
    """Which entity each spelling the caller may see names (every spelling when ``sight``
    is None), for :func:`contradictions`: facts about one entity, however their subjects
    are spelt, are one subject."""
    out: dict[tuple[str, str], str] = {}
    for namespace in sorted(set(namespaces)):
        spellings = rm.spellings(namespace) if sight is None else sight.spellings(rm, namespace)
        for s in spellings:
            out.setdefault((namespace, s.normalized), s.entity_id)
    return out


def canonical_predicates(predicates: Iterable[str]) -> dict[str, str]:
    """Each of one subject's predicates → the predicate it counts as: a typo of an
    alphabetically earlier one counts as that one (``match_known``)."""
    return dict(_canonical(frozenset(predicates)))


@functools.lru_cache(maxsize=4096)
def _canonical(predicates: frozenset[str]) -> tuple[tuple[str, str], ...]:
    # Kept per set of predicates: most subjects share a few sets (at 100k memories of the
    # bench, ~3,500 subjects asked one set of 9 predicates ~0.3 s of fuzzy matching a call).
    canonical: dict[str, str] = {}
    for p in sorted(predicates):
        canonical[p] = match_known(p, [q for q in canonical.values() if q != p]) or p
    return tuple(canonical.items())


def contradictions(
    memories: Sequence[Memory | FactRow],
    subject_of: SubjectOf | None = None,
    canonical_of: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """Active single-valued facts that disagree: same subject (the entity its spelling
    names in ``subject_of``, else the spelling) and predicate (fuzzy-matched), objects that
    do not agree. Multi-valued facts never contradict anything. ``canonical_of``: per
    subject (namespace, entity or spelling), the :func:`canonical_predicates` of all its
    facts, when ``memories`` are only some of them; else computed from ``memories``."""
    by_subject: dict[tuple[str, str], list[Memory | FactRow]] = defaultdict(list)
    # Many facts share a subject or an object: each spelling is normalized once.
    keys: dict[str, str] = {}
    forms: dict[str, str] = {}
    for m in memories:
        if (
            m.type == "semantic"
            and m.t_invalid is None
            and not m.multi_valued
            and m.subject
            and m.predicate_normalized
        ):
            key = keys.get(m.subject)
            if key is None:
                key = keys[m.subject] = subject_key(m.subject)
            entity = (subject_of or {}).get((m.namespace, key))
            by_subject[(m.namespace, entity or key)].append(m)
    found: list[dict[str, Any]] = []
    for (namespace, subject), facts in sorted(by_subject.items()):
        given = None if canonical_of is None else canonical_of.get((namespace, subject))
        canonical = (
            canonical_predicates(str(f.predicate_normalized) for f in facts)
            if given is None
            else given
        )
        groups: dict[str, list[Memory | FactRow]] = defaultdict(list)
        for f in facts:
            groups[canonical[str(f.predicate_normalized)]].append(f)
        for predicate, group in sorted(groups.items()):
            if len(group) < 2:
                continue
            objects: set[str] = set()
            for f in group:
                text = f.object or ""
                form = forms.get(text)
                if form is None:
                    form = forms[text] = object_form(text)
                objects.add(form)
            if len(objects) > 1:
                found.append(
                    {
                        "namespace": namespace,
                        "subject": group[0].subject,
                        "predicate": predicate,
                        "facts": [
                            {"id": f.memory_id, "object": f.object} for f in sorted(
                                group, key=lambda f: f.memory_id)
                        ],
                    }
                )  # fmt: skip
    return found


def possible_conflicts(rm: ReadModel, active: list[Memory]) -> list[dict[str, Any]]:
    """Pairs of active facts the store kept side by side because their subjects are
    *possibly* the same (``facts.possible_conflict``), both among ``active`` (so both
    visible to the caller), not since merged or said to differ; by ids."""
    by_id = {m.memory_id: m for m in active if m.type == "semantic"}
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    ids = sorted(by_id)
    # In chunks: SQLite refuses a query past 32,766 variables (each id is named twice).
    found = (c for at in range(0, len(ids), _IDS_PER_QUERY)
             for c in rm.possible_conflicts(ids[at : at + _IDS_PER_QUERY]))  # fmt: skip
    for c in found:
        pair = (min(c.memory_id, c.other_id), max(c.memory_id, c.other_id))
        if pair in seen or c.other_id not in by_id or c.memory_id not in by_id:
            continue
        seen.add(pair)
        facts = [by_id[i] for i in pair]
        out.append(
            {
                "namespace": facts[0].namespace,
                "reason": c.reason,
                "facts": [
                    {"id": f.memory_id, "subject": f.subject, "predicate": f.predicate,
                     "object": f.object}
                    for f in facts
                ],
                "what_to_do": settle_hint(facts[1].memory_id, facts[0].memory_id, c.reason),
            }
        )  # fmt: skip
    return sorted(out, key=lambda d: [f["id"] for f in d["facts"]])


def settle_hint(newer: str, older: str, reason: str) -> str:
    """The one line that tells an agent how to settle a possible conflict between two facts:
    the newer replaces the older, or both hold (and, for subjects possibly one thing, the
    entity commands)."""
    entities = "" if reason == RELATION else "; or `ferrex entity merge`/`differ` the subjects"
    return (
        f"if {newer} replaces {older}: confirm ids=[{newer}] supersedes={older}; "
        f"if both hold: confirm ids=[{newer}] differs_from={older}{entities}"
    )


_IDS_PER_QUERY: Final = 8_000


def directory_bytes(path: Path) -> int:
    """Bytes on disk (allocated blocks: Qdrant's preallocated files are sparse)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    if not path.exists():
        return 0
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


RARELY_RECALLED: Final = 3
"""A forget candidate has been recalled fewer times than this."""


@dataclass(frozen=True)
class Attention:
    """What needs attention among the active memories a caller sees; stats counts it,
    reflect lists it.

    - ``stale_count`` / ``aging_count``: labelled so by the namespace's staleness; ``stale``
      lists the most stale first (the first ``listed``);
    - ``unvalidated``: never validated and stored at least ``unvalidated_after_days`` ago
      (oldest first; the first ``listed`` of ``unvalidated_count``): a memory just stored
      has had no chance to be confirmed;
    - ``contradictions``: groups of active facts that disagree (:func:`contradictions`;
      the first ``listed`` of ``contradiction_count``);
    - ``forget_candidates``: stale or aging and recalled fewer than :data:`RARELY_RECALLED`
      times (stale first, then most stale; the first ``listed`` of ``forget_count``); a
      fresh memory never is one.
    """

    stale: list[Assessed]
    unvalidated: list[Memory]
    contradictions: list[dict[str, Any]]
    forget_candidates: list[Assessed]
    possible_conflicts: list[dict[str, Any]]
    unvalidated_count: int
    stale_count: int
    aging_count: int
    forget_count: int
    contradiction_count: int

    def counts(self) -> dict[str, int]:
        return {
            "stale": self.stale_count,
            "aging": self.aging_count,
            "unvalidated": self.unvalidated_count,
            "conflicts": self.contradiction_count,
            "possible_conflicts": len(self.possible_conflicts),
            "forget_candidates": self.forget_count,
        }


@dataclass(frozen=True)
class Tally:
    """How many memories a caller sees now (visible, unexpired): active ones in all and by
    type, superseded ones, and active ones with a time to live."""

    total: int
    by_type: dict[str, int]
    superseded: int
    expiring: int


def tally(rm: ReadModel, sight: Sight, namespace: str | None) -> Tally:
    """From the kept counts (``memory_counts``), those of scopes the caller may see, less
    the memories expired but not swept yet (few, and indexed by ``expires_at``)."""
    total = superseded = expiring = 0
    by_type: dict[str, int] = defaultdict(int)
    for c in rm.insight.memory_counts(namespace):
        if not sees(sight.agent_id, c.agent_id, c.visibility):
            continue
        if c.active:
            total += c.n
            by_type[c.type] += c.n
            expiring += c.n if c.expiring else 0
        else:
            superseded += c.n
    for m in rm.expiring(by=sight.now):
        if namespace is not None and m.namespace != namespace:
            continue
        if not sees(sight.agent_id, m.agent_id, m.visibility):
            continue
        if m.t_invalid is None:
            total -= 1
            by_type[m.type] -= 1
            expiring -= 1
        else:
            superseded -= 1
    return Tally(total, {t: n for t, n in sorted(by_type.items()) if n}, superseded, expiring)


_SCORE_MARGIN: Final = 1e-9
"""Below the aging threshold by more than the staleness rule's own boundary tolerance."""


def clock_bound(
    params: StalenessParams, memory_type: str, now: float, score: float | None = None
) -> float:
    """An oldest clock (see ``projections.readmodel.predicates.CLOCK``) from which on a memory
    of this type cannot be aging or stale at ``now``: only memories clocked before it need
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
class _Labels:
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


def _labels(
    rm: ReadModel,
    sight: Sight,
    staleness_of: StalenessConfig,
    kinds: Sequence[tuple[str, str]],
    namespace: str | None,
    listed: int,
) -> _Labels:
    """Stale and aging memories, counted in SQL from each memory's score (only those
    clocked long enough ago to be aging: :func:`clock_bound`), Python assessing those whose
    score is within :data:`_UNSURE` of a threshold and those with pending recall hits
    (left out of the SQL); with ``listed``, also every memory that may be among the first
    ``listed`` of a list (:func:`_list_candidates`)."""
    now = sight.now
    skip = tuple(sorted(sight.pending))
    labels = _Labels()
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
            if m.t_invalid is None and (m.namespace, m.type) in kinds
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


def attention(
    rm: ReadModel,
    sight: Sight,
    staleness_of: StalenessConfig,
    *,
    namespace: str | None,
    counts: Sequence[MemoryCount],
    unvalidated_after_days: float = 30.0,
    listed: int = 10,
    conflicts_listed: int | None = None,
) -> Attention:
    """What needs attention among the active memories ``sight`` sees (of ``namespace``, or
    all), reading only those that may need it: labels counted in SQL (:func:`_labels`),
    facts of the first contradictions, memories named in a possible conflict.
    Contradictions group facts by the entity their subject names (through the spellings the
    caller sees); the first ``conflicts_listed`` (else ``listed``) of them are listed."""
    now = sight.now
    kinds = sorted({(c.namespace, c.type) for c in counts if c.active})
    labels = _labels(rm, sight, staleness_of, kinds, namespace, listed)

    def most_stale(a: Assessed) -> tuple[float, str]:
        return (-a.score, a.memory.memory_id)

    exact = labels.exact.values()
    stale = sorted((a for a in exact if a.label == "stale"), key=most_stale)
    aging = sorted((a for a in exact if a.label == "aging"), key=most_stale)
    rarely = [a for a in stale + aging if a.memory.access_count < RARELY_RECALLED]
    after = unvalidated_after_days * DAY
    unvalidated_count = sum(
        n
        for agent_id, visibility, n in rm.insight.unvalidated_counts(namespace, now, after)
        if sees(sight.agent_id, agent_id, visibility)
    )
    unvalidated: list[Memory] = []
    if listed > 0:
        for m in rm.insight.unvalidated(namespace, now, after):
            if sight.sees(m):
                unvalidated.append(m)
                if len(unvalidated) >= listed:
                    break
    conflicts = possible_conflicts(
        rm,
        [
            m
            for m in sight.shown(rm.by_ids(rm.insight.conflicting_ids()))
            if m.t_invalid is None and (namespace is None or m.namespace == namespace)
        ],
    )
    found, contradiction_count = _contradictions(
        rm, sight, namespace, listed if conflicts_listed is None else conflicts_listed
    )
    return Attention(
        stale=stale[:listed], unvalidated=unvalidated, contradictions=found,
        forget_candidates=rarely[:listed], possible_conflicts=conflicts,
        unvalidated_count=unvalidated_count, stale_count=labels.stale,
        aging_count=labels.aging, forget_count=labels.rarely,
        contradiction_count=contradiction_count,
    )  # fmt: skip


def _contradictions(
    rm: ReadModel, sight: Sight, namespace: str | None, listed: int
) -> tuple[list[dict[str, Any]], int]:
    """The first ``listed`` :func:`contradictions` of the facts the caller sees, and how
    many there are, from the read model's counts of facts per subject key
    (``ReadModel.fact_subjects``): a subject (as an entity) and predicate (as fuzzy-matched
    among all the subject's predicates) contradicts when its facts' least and greatest
    object forms differ. A subject of one key whose predicates are each their own canonical
    one has as many as SQL counted; only the other subjects (spelt by several keys, or with
    a typo of another predicate) are counted from their groups (``ReadModel.fact_groups``),
    and only the facts of the listed ones' subjects are read. When the read model keeps no
    forms, from every fact (:func:`_contradictions_of_facts`)."""
    keyed = rm.insight.fact_subjects(namespace, sight.now, sight.agent_id)
    if keyed is None:
        every = _contradictions_of_facts(rm, sight, namespace)
        return every[:listed], len(every)
    if not keyed:
        return [], 0
    subject_of = subject_entities(rm, sorted({k.namespace for k in keyed}), sight)
    keys_of: dict[tuple[str, str], list[FactSubject]] = defaultdict(list)
    for k in keyed:
        keys_of[(k.namespace, subject_of.get((k.namespace, k.subject_key)) or k.subject_key)
                ].append(k)  # fmt: skip
    counts: dict[tuple[str, str], int] = {}
    merged: list[tuple[str, str]] = []  # subjects whose groups are merged, counted below
    for s, keys in keys_of.items():
        if len(keys) == 1 and _own_canonical(keys[0].predicates):
            if keys[0].disagreeing:
                counts[s] = keys[0].disagreeing
        else:
            merged.append(s)
    if merged:
        wanted = sorted((k.namespace, k.subject_key) for s in merged for k in keys_of[s])
        groups = rm.insight.fact_groups(namespace, sight.now, sight.agent_id, wanted)
        if groups is None:  # never within one snapshot (fact_subjects saw every form)
            every = _contradictions_of_facts(rm, sight, namespace)
            return every[:listed], len(every)
        canonical_of = {s: _canonical_of(keys_of[s]) for s in merged}
        forms: dict[tuple[tuple[str, str], str], tuple[str, str]] = {}
        for g in groups:
            s = (g.namespace, subject_of.get((g.namespace, g.subject_key)) or g.subject_key)
            key = (s, canonical_of[s][g.predicate_normalized])
            seen = forms.get(key)
            forms[key] = (
                (g.least_form, g.greatest_form) if seen is None
                else (min(seen[0], g.least_form), max(seen[1], g.greatest_form))
            )  # fmt: skip
        for (s, _), (least, greatest) in forms.items():
            if least != greatest:
                counts[s] = counts.get(s, 0) + 1
    total = sum(counts.values())
    # In the order contradictions lists them, by (namespace, subject) then predicate: the
    # first ``listed`` are those of the first subjects with any.
    chosen: list[tuple[str, str]] = []
    taken = 0
    for s in sorted(counts):
        if taken >= listed:
            break
        chosen.append(s)
        taken += counts[s]
    if not chosen:
        return [], total
    # The listed ones' subjects' facts: their contradictions, in the same order, begin
    # with the first ``listed`` of all.
    wanted = sorted((k.namespace, k.subject_key) for s in chosen for k in keys_of[s])
    facts = [
        f for f in rm.insight.single_facts(namespace, sight.now, wanted)
        if sees(sight.agent_id, f.agent_id, f.visibility)
    ]  # fmt: skip
    canonical = {s: _canonical_of(keys_of[s]) for s in chosen}
    return contradictions(facts, subject_of, canonical)[:listed], total


def _canonical_of(keys: Sequence[FactSubject]) -> dict[str, str]:
    """:func:`canonical_predicates` of all the predicates of one subject's keys."""
    return canonical_predicates({p for k in keys for p in _predicates(k.predicates)})


@functools.lru_cache(maxsize=4096)
def _predicates(listed: str) -> frozenset[str]:
    # Kept per JSON text: most subject keys have one of a few lists of predicates.
    return frozenset(str(p) for p in json.loads(listed))


@functools.lru_cache(maxsize=4096)
def _own_canonical(listed: str) -> bool:
    """Whether each predicate of a key's list (``FactSubject.predicates``) is its own
    canonical one (no typo of another), so that its groups are never merged."""
    return all(p == q for p, q in _canonical(_predicates(listed)))


def _contradictions_of_facts(
    rm: ReadModel, sight: Sight, namespace: str | None
) -> list[dict[str, Any]]:
    """:func:`contradictions` of the facts the caller sees (the fields they read, in one
    scan: ``ReadModel.single_facts``), grouping only the facts of a subject (as an entity)
    and predicate (as fuzzy-matched among all the subject's predicates) with at least two
    of them: a group needs two."""
    facts = [
        f for f in rm.insight.single_facts(namespace, sight.now)
        if sees(sight.agent_id, f.agent_id, f.visibility)
    ]  # fmt: skip
    if not facts:
        return []
    rows: dict[tuple[str, str, str], int] = defaultdict(int)
    for f in facts:
        rows[(f.namespace, f.subject_key, str(f.predicate_normalized))] += 1
    subject_of = subject_entities(rm, sorted({ns for ns, _, _ in rows}), sight)

    def subject(ns: str, key: str) -> tuple[str, str]:
        return (ns, subject_of.get((ns, key)) or key)

    predicates: dict[tuple[str, str], set[str]] = defaultdict(set)
    for ns, key, predicate in rows:
        predicates[subject(ns, key)].add(predicate)
    canonical_of = {s: canonical_predicates(ps) for s, ps in predicates.items()}
    per_group: dict[tuple[tuple[str, str], str], int] = defaultdict(int)
    for (ns, key, predicate), n in rows.items():
        s = subject(ns, key)
        per_group[(s, canonical_of[s][predicate])] += n
    chosen = {
        row for row in rows
        if per_group[(subject(row[0], row[1]), canonical_of[subject(row[0], row[1])][row[2]])] > 1
    }  # fmt: skip
    return contradictions(
        [f for f in facts if (f.namespace, f.subject_key, f.predicate_normalized) in chosen],
        subject_of, canonical_of,
    )  # fmt: skip


def stats(
    rm: ReadModel,
    sight: Sight,
    staleness_of: StalenessConfig,
    *,
    namespace: str | None,
    detailed: bool,
    recent: int = 3,
) -> dict[str, Any]:
    """What an agent reads first: totals, the latest memories, the counts of :class:`Attention`;
    of what ``sight`` sees (visible, unexpired: ``ferrex.read.seen``). From the read model's
    aggregates (``memory_counts``, :func:`attention`), never every memory."""
    with rm.snapshot():
        counts = rm.insight.memory_counts(namespace)
        seen = tally(rm, sight, namespace)
        needs = attention(rm, sight, staleness_of, namespace=namespace, counts=counts, listed=0,
                          conflicts_listed=10 if detailed else 0)  # fmt: skip
        latest: list[Memory] = []
        if recent > 0:
            for m in rm.insight.latest_active(namespace):
                if sight.sees(m):
                    latest.append(m)
                    if len(latest) >= recent:
                        break
        doc: dict[str, Any] = {
            "namespace": namespace,
            "total": seen.total,
            "recent": [{"id": m.memory_id, "type": m.type, "summary": one_line(m)} for m in latest],
            "needs_attention": needs.counts(),
            # Working memory: active memories with a time to live, which the sweep will forget.
            "expiring": seen.expiring,
        }
        if detailed:
            labels = {
                "aging": needs.aging_count,
                "fresh": seen.total - needs.aging_count - needs.stale_count,
                "stale": needs.stale_count,
            }
            doc.update(
                by_type=seen.by_type,
                staleness={
                    **{k: n for k, n in labels.items() if n},
                    "superseded": seen.superseded,
                },
                conflicts=needs.contradictions[:10],
                possible_conflicts=needs.possible_conflicts[:10],
                entities=len(sight.entities(rm, namespace)),
            )
    return doc


def reflect(
    rm: ReadModel,
    sight: Sight,
    staleness_of: StalenessConfig,
    *,
    namespace: str | None,
    limit: int = 10,
    unvalidated_after_days: float = 30.0,
    dormant_after_days: float = 90.0,
) -> dict[str, Any]:
    """What needs attention, listed (``limit`` each) with the same counts as :func:`stats`."""
    now = sight.now
    with rm.snapshot():
        needs = attention(
            rm, sight, staleness_of, namespace=namespace,
            counts=rm.insight.memory_counts(namespace),
            unvalidated_after_days=unvalidated_after_days, listed=limit,
        )  # fmt: skip
        # Dormant: no memory the caller sees names it with an event time of the last
        # ``dormant_after_days`` (so ``now`` minus its latest is at least that); only the
        # recent memories are read for it, and the latest use of the listed ones alone.
        after = dormant_after_days * DAY
        used = {
            entity_id
            for entity_id, agent_id, visibility in rm.insight.entities_used_since(
                namespace, now, after
            )
            if sees(sight.agent_id, agent_id, visibility)
        }
        unused = [e for e in sight.entities(rm, namespace) if e.entity_id not in used]
        # An entity no memory names was last used at 0: dormant unless ``now`` is that near.
        listed = unused[:limit] if now - 0.0 >= after else unused
        last_use: dict[str, float] = {}
        if listed:
            ids = [e.entity_id for e in listed]
            for entity_id, agent_id, visibility, t_valid in rm.insight.entity_last_use(
                namespace, now, ids
            ):
                if sees(sight.agent_id, agent_id, visibility):
                    last_use[entity_id] = max(last_use.get(entity_id, 0.0), t_valid)
        dormant = [
            {"id": e.entity_id, "name": e.name,
             "last_referenced": rfc3339(last_use.get(e.entity_id))}
            for e in listed
            if now - last_use.get(e.entity_id, 0.0) >= after
        ]  # fmt: skip
    return {
        "namespace": namespace,
        "counts": needs.counts(),
        "stale": [
            {"id": a.memory.memory_id, "summary": one_line(a.memory),
             "staleness": round(a.score, 4), "reasons": _reasons(a)}
            for a in needs.stale[:limit]
        ],
        "unvalidated": [
            {"id": m.memory_id, "summary": one_line(m),
             "age_days": round((now - m.created_at) / DAY, 1)}
            for m in needs.unvalidated[:limit]
        ],
        "contradictions": needs.contradictions[:limit],
        "possible_conflicts": needs.possible_conflicts[:limit],
        "forget_candidates": [
            {"id": a.memory.memory_id, "summary": one_line(a.memory),
             "access_count": a.memory.access_count,
             "last_accessed": rfc3339(a.memory.last_accessed), "label": a.label,
             "eviction": eviction_reason(eviction_candidate(a, text_bytes(a.memory)), now)}
            for a in needs.forget_candidates[:limit]
        ],
        "dormant_entities": dormant[:limit],
    }  # fmt: skip


def _reasons(a: Assessed) -> list[str]:
    """The components that make a memory stale, in words, largest first."""
    words = {
        "age": "old",
        "access": "not recalled for long",
        "validation": "not confirmed for long",
        "count": "rarely used",
    }
    ranked = sorted(a.components.items(), key=lambda kv: -kv[1])
    return [f"{words[k]} ({v:.2f})" for k, v in ranked if v >= 0.5] or ["overall decay"]
