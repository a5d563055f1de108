"""Facts that disagree, for stats and reflect (:mod:`ferrex.read.insight`).

*Contradictions* are active single-valued facts of one subject (as the entity its spelling
names, through the spellings the caller sees) and predicate (fuzzy-matched among the
subject's predicates) whose objects differ: :func:`contradictions` groups given facts,
:func:`listed_contradictions` counts them all from the read model's aggregates and reads
only the facts of the first ones listed. A group whose every two values the agent said both
hold (``facts.differ``, ``InsightReads.settled_pairs``) is settled, not a contradiction. *Possible
conflicts* are the pairs the store kept side by side (``facts.possible_conflict``):
:func:`possible_conflicts`, each with the line that says how to settle it
(:func:`settle_hint`).
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final, NotRequired, TypedDict

from ferrex.read.seen import Sight
from ferrex.rules.predicates import match_known
from ferrex.rules.subjects import object_form
from ferrex.rules.visibility import sees
from projections.documents import subject_key
from projections.readmodel.insight import FactRow, FactSubject
from projections.readmodel.predicates import is_current
from projections.rows import RELATION, Memory
from projections.sqlite import ReadModel


class ConflictFact(TypedDict):
    """One fact of a :class:`Conflict`: its id and value; of a possible conflict, its
    subject and relation too."""

    id: str
    object: str | None
    subject: NotRequired[str | None]
    predicate: NotRequired[str | None]


class Conflict(TypedDict):
    """Facts that disagree (:func:`contradictions`: their subject and the relation they
    share) or may (:func:`possible_conflicts`: why, and how to settle it), as stats and
    reflect list them. The HTTP API's ``Conflict`` schema is read from it."""

    namespace: str
    facts: list[ConflictFact]
    subject: NotRequired[str | None]
    predicate: NotRequired[str]
    reason: NotRequired[str]
    what_to_do: NotRequired[str]


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
    settled: Collection[frozenset[str]] = frozenset(),
) -> list[Conflict]:
    """Active single-valued facts that disagree: same subject (the entity its spelling
    names in ``subject_of``, else the spelling) and predicate (fuzzy-matched), objects that
    do not agree. Multi-valued facts never contradict anything. ``canonical_of``: per
    subject (namespace, entity or spelling), the :func:`canonical_predicates` of all its
    facts, when ``memories`` are only some of them; else computed from ``memories``.
    ``settled``: pairs of facts said to both hold (``InsightReads.settled_pairs``); a group whose
    every two disagreeing facts are such a pair is no contradiction."""
    by_subject: dict[tuple[str, str], list[Memory | FactRow]] = defaultdict(list)
    # Many facts share a subject or an object: each spelling is normalized once.
    keys: dict[str, str] = {}
    forms: dict[str, str] = {}
    for m in memories:
        if (
            m.type == "semantic"
            and is_current(m)
            and not m.multi_valued
            and m.subject
            and m.predicate_normalized
        ):
            key = keys.get(m.subject)
            if key is None:
                key = keys[m.subject] = subject_key(m.subject)
            entity = (subject_of or {}).get((m.namespace, key))
            by_subject[(m.namespace, entity or key)].append(m)
    found: list[Conflict] = []
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
            if len(objects) > 1 and not _settled(group, forms, settled):
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


def _settled(
    group: Sequence[Memory | FactRow], forms: Mapping[str, str], settled: Collection[frozenset[str]]
) -> bool:
    """Whether every two facts of ``group`` whose objects disagree were said to both hold."""
    if not settled:
        return False
    return all(
        frozenset((f.memory_id, g.memory_id)) in settled
        for i, f in enumerate(group)
        for g in group[i + 1 :]
        if forms[f.object or ""] != forms[g.object or ""]
    )


def possible_conflicts(rm: ReadModel, active: list[Memory]) -> list[Conflict]:
    """Pairs of active facts the store kept side by side because their subjects are
    *possibly* the same (``facts.possible_conflict``), both among ``active`` (so both
    visible to the caller), not since merged or said to differ; by ids."""
    by_id = {m.memory_id: m for m in active if m.type == "semantic"}
    seen: set[tuple[str, str]] = set()
    out: list[Conflict] = []
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
                "what_to_do": settle_hint(
                    facts[1].memory_id,
                    facts[0].memory_id,
                    one_subject=c.reason == RELATION
                    or subject_key(facts[0].subject or "") == subject_key(facts[1].subject or ""),
                ),
            }
        )  # fmt: skip
    return sorted(out, key=lambda d: [f["id"] for f in d["facts"]])


def settle_hint(newer: str, older: str, *, one_subject: bool) -> str:
    """The one line that tells an agent how to settle a possible conflict between two facts:
    the newer replaces the older, or both hold (and, for two subjects possibly one thing, the
    entity commands; not for two relations or a restated value of one subject)."""
    entities = "" if one_subject else "; or `ferrex entity merge`/`differ` the subjects"
    return (
        f"if {newer} replaces {older}: confirm ids=[{newer}] supersedes={older}; "
        f"if both hold: confirm ids=[{newer}] differs_from={older}{entities}"
    )


_IDS_PER_QUERY: Final = 8_000


def listed_contradictions(
    rm: ReadModel, sight: Sight, namespace: str | None, listed: int
) -> tuple[list[Conflict], int]:
    """The first ``listed`` :func:`contradictions` of the facts the caller sees, and how
    many there are, from the read model's counts of facts per subject key
    (``InsightReads.fact_subjects``): a subject (as an entity) and predicate (as fuzzy-matched
    among all the subject's predicates) contradicts when its facts' least and greatest
    object forms differ. A subject of one key whose predicates are each their own canonical
    one has as many as SQL counted; only the other subjects (spelt by several keys, or with
    a typo of another predicate) are counted from their groups (``InsightReads.fact_groups``),
    and only the facts of the listed ones' subjects are read. When the read model keeps no
    forms, from every fact (:func:`contradictions_of_facts`)."""
    keyed = rm.insight.fact_subjects(namespace, sight.now, sight.agent_id)
    if keyed is None:
        every = contradictions_of_facts(rm, sight, namespace)
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
    recount = {
        (ns, subject_of.get((ns, key)) or key)
        for ns, key in rm.insight.settled_subjects(namespace, sight.now)
    } & set(keys_of)
    for s, keys in keys_of.items():
        if s in recount:
            continue  # counted from its facts below: a settled pair is no contradiction
        if len(keys) == 1 and _own_canonical(keys[0].predicates):
            if keys[0].disagreeing:
                counts[s] = keys[0].disagreeing
        else:
            merged.append(s)
    if merged:
        wanted = sorted((k.namespace, k.subject_key) for s in merged for k in keys_of[s])
        groups = rm.insight.fact_groups(namespace, sight.now, sight.agent_id, wanted)
        if groups is None:  # never within one snapshot (fact_subjects saw every form)
            every = contradictions_of_facts(rm, sight, namespace)
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
    if recount:
        wanted = sorted((k.namespace, k.subject_key) for s in recount for k in keys_of[s])
        facts = _seen_facts(rm, sight, namespace, wanted)
        canonical = {s: _canonical_of(keys_of[s]) for s in recount}
        for c in _unsettled_contradictions(rm, facts, subject_of, canonical):
            s = (c["namespace"], _subject_of_conflict(c, facts, subject_of))
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
    facts = _seen_facts(rm, sight, namespace, wanted)
    canonical = {s: _canonical_of(keys_of[s]) for s in chosen}
    return _unsettled_contradictions(rm, facts, subject_of, canonical)[:listed], total


def _seen_facts(
    rm: ReadModel,
    sight: Sight,
    namespace: str | None,
    subjects: Sequence[tuple[str, str]] | None = None,
) -> list[FactRow]:
    """The active single-valued facts the caller sees (of ``subjects``: namespace and
    subject key, when given)."""
    return [
        f for f in rm.insight.single_facts(namespace, sight.now, subjects)
        if sees(sight.agent_id, f.agent_id, f.visibility)
    ]  # fmt: skip


def _unsettled_contradictions(
    rm: ReadModel,
    facts: Sequence[FactRow],
    subject_of: SubjectOf,
    canonical_of: Mapping[tuple[str, str], Mapping[str, str]],
) -> list[Conflict]:
    """:func:`contradictions` of ``facts``, but a group whose every two disagreeing facts
    were said to both hold (``InsightReads.settled_pairs`` among them)."""
    settled = rm.insight.settled_pairs([f.memory_id for f in facts])
    return contradictions(facts, subject_of, canonical_of, settled)


def _subject_of_conflict(c: Conflict, facts: Sequence[FactRow], subject_of: SubjectOf) -> str:
    """The subject (entity or key) a conflict of :func:`contradictions` groups its facts by."""
    first = c["facts"][0]["id"]
    row = next(f for f in facts if f.memory_id == first)
    return subject_of.get((row.namespace, row.subject_key)) or row.subject_key


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


def contradictions_of_facts(rm: ReadModel, sight: Sight, namespace: str | None) -> list[Conflict]:
    """:func:`contradictions` of the facts the caller sees (the fields they read, in one
    scan: ``InsightReads.single_facts``), grouping only the facts of a subject (as an entity)
    and predicate (as fuzzy-matched among all the subject's predicates) with at least two
    of them: a group needs two."""
    facts = _seen_facts(rm, sight, namespace)
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
    grouped = [f for f in facts if (f.namespace, f.subject_key, f.predicate_normalized) in chosen]
    return _unsettled_contradictions(rm, grouped, subject_of, canonical_of)
