"""A store's fact: the relation it fills and what becomes of the facts already there (step
3 of a store, :mod:`ferrex.core.decide.store`).

The predicate is normalized (:mod:`ferrex.rules.predicates`),
matched against the subject's known predicates (typos only). The subject's current
single-valued facts under *other* predicates are weighed by :mod:`ferrex.rules.slots`
(object kinds, head words, sibling predicates, the cosine of the two facts' phrases):
a sure match is replaced like a fact of the same relation; a possible one is left
standing and flagged (``facts.possible_conflict``, reason ``relation``), and the answer
names it (``possible_conflict_with``) with the one line that settles it (``confirm``
with ``supersedes`` or ``differs_from``: :func:`ferrex.core.decide.forget.decide_settle`).
A plainly plural fact (:func:`ferrex.rules.slots.plural_fact`, or two objects each scoped
to its own purpose) is stored as multi-valued; the answer names the values it was kept beside
(``kept_beside``) and how to replace one instead, and one stored under a wording that
does not read as plural (``maintained by`` beside ``maintainer``) is flagged.
"The subject's" facts are those of every spelling of its entity the scope may use. The
active single-valued facts of the same relation are compared by object
(:mod:`ferrex.rules.dedup`; objects that agree, ``team Nova`` / ``Nova``, are the
same): the same object again is a *duplicate* (the old fact is re-validated, nothing
new stored), a different object *supersedes* it, an unclear one is refused as
``conflict_ambiguous``.
**Time is bitemporal** (:func:`starts_after`): a fact without ``valid_from`` began at
some unknown moment at or before it was learned, and of two facts the one that began
later is current. Two dated facts are ordered by their dates, whatever order they were
learned in; between a dated and an undated one, or two undated ones, the one learned
later is current unless a date proves otherwise (an older fact dated after the new,
undated one was learned). The fact it replaces ends at the new one's ``valid_from`` when
given, else when it was learned, so ``as_of`` in between answers the old value. A fact
that began before an active one (a late report of history) is stored already ended by
it, at that one's start, with status ``stored_as_history`` and a ``history_reason``, and
ends nothing.
Multi-valued facts (``multi_valued``) never conflict: they sit beside each other. A
later single-valued store states the one current value: it replaces them (a different
object) or confirms one (the same object), and its answer says which it replaced
(``replaced_multi_valued``). Active facts of the same relation on a subject that is
*possibly* the same, with an object that does not agree, or of a relation that may
fill the same slot, are left standing and named in a ``facts.possible_conflict`` event
(the answer's ``possible_conflict``). A fact replaced as its slot's new value is named
in the answer (``replaced_note``) with how to keep both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as replaced
from datetime import datetime
from typing import Any, Final

import msgspec

from ferrex.errors import ConflictAmbiguous
from ferrex.rules.dedup import classify_object_change
from ferrex.rules.entities import normalize_entity, resolve_entity
from ferrex.rules.lifecycle import expired
from ferrex.rules.memory_input import ValidStore
from ferrex.rules.predicates import match_known, normalize_predicate
from ferrex.rules.short_forms import spelled_out
from ferrex.rules.slots import (
    SlotMatch,
    content_words,
    fact_phrase,
    kinds_clash,
    note_names,
    one_kind,
    plural_fact,
    replaces_value,
    restated,
    same_head,
    slot_candidate,
    slot_match,
    told_as_news,
    value_fallback,
    value_predicate,
)
from ferrex.rules.subjects import (
    close_names,
    news_alike,
    objects_agree,
    parts_of_one,
    same_slot_words,
)
from ferrex.rules.visibility import in_scope
from journal import FactsPossiblyConflicting, MemoryBody
from projections.documents import subject_key
from projections.readmodel.predicates import is_current
from projections.rows import RELATION, RESTATES, Memory

from ..settings import StoreSettings
from ..view import View
from .entities import Named, Subject, scoped_candidates
from .shared import Measures, Who, body_of, cosines_with


def _facts_of(view: View, who: Who, keys: Sequence[str]) -> list[Memory]:
    found = {m.memory_id: m for key in keys for m in view.subject_facts(who.namespace, key)}
    return [found[k] for k in sorted(found)]


def normalized_predicate(
    valid: ValidStore, view: View, who: Who, settings: StoreSettings, keys: Sequence[str] = ()
) -> str:
    """The fact's predicate in the form its relation is stored under: normalized, then a
    typo of one of the subject's known predicates corrected to it."""
    assert valid.subject is not None and valid.predicate is not None
    normalized = normalize_predicate(valid.predicate, settings.synonyms_for(who.namespace))
    known = sorted(
        {
            m.predicate_normalized
            for m in _facts_of(view, who, keys or (subject_key(valid.subject),))
            if m.predicate_normalized and who.sees(m)
        }
    )
    if normalized in known:
        return normalized
    return match_known(normalized, known, settings.predicate_fuzzy) or normalized


def _same_relation(view: View, who: Who, keys: Sequence[str], predicate: str) -> list[Memory]:
    found = {
        m.memory_id: m
        for key in keys
        for m in view.active_facts(who.namespace, key, predicate)
        if m.object and who.sees(m)
    }
    return [found[k] for k in sorted(found)]


def _other_relations(view: View, who: Who, keys: Sequence[str], predicate: str) -> list[Memory]:
    """The subject's active single-valued facts the caller sees under other predicates."""
    return [
        m
        for m in _facts_of(view, who, keys)
        if is_current(m)
        and not m.multi_valued
        and m.predicate_normalized
        and m.predicate_normalized != predicate
        and who.sees(m)
    ]


def _other_current(
    view: View, who: Who, keys: Sequence[str], predicate: str, now: datetime
) -> list[Memory]:
    """The subject's current single-valued facts under other predicates, with an object
    and not expired: those a new fact may fill the slot of, or restate."""
    return [
        m
        for m in _other_relations(view, who, keys, predicate)
        if m.object and not expired(m.expires_at, now.timestamp())
    ]


def _slot_matches(
    obj: str, predicate: str, others: Sequence[Memory], measures: Measures
) -> list[tuple[Memory, SlotMatch]]:
    """:func:`ferrex.rules.slots.slot_match` of a fact against each of ``others``; the phrase
    cosines asked in one batch, only for the pairs the guards allow."""
    allowed = [
        m
        for m in others
        if m.object is not None
        and slot_candidate(predicate, obj, str(m.predicate_normalized), m.object)
    ]
    if not allowed:
        return []
    mine = fact_phrase(predicate, obj)
    theirs = [fact_phrase(str(m.predicate_normalized), str(m.object)) for m in allowed]
    found: list[tuple[Memory, SlotMatch]] = []
    scores = cosines_with(measures, mine, theirs)
    for m, score in zip(allowed, scores, strict=True):
        match = slot_match(predicate, obj, str(m.predicate_normalized), str(m.object), score)
        if match is not None:
            found.append((m, match))
    best = None if found else value_fallback(predicate, scores)
    if best is not None:
        found.append((allowed[best], SlotMatch("possible", "the closest slot to a bare value",
                                               scores[best])))  # fmt: skip
    return found


def _may_replace(who: Who, old: Memory) -> bool:
    """Whether a fact found to fill the same slot is replaced, not flagged: only one the
    store may change and that is not pinned (a pinned fact yields to ``supersedes`` only)."""
    return who.may_change(old) and not old.pinned


@dataclass(frozen=True)
class FactPlan:
    """What a fact's rules decided beside storing it: the facts it replaces, a newer fact
    that ends it at once (back-dated history), and possible conflicts to flag."""

    body: MemoryBody
    superseded: tuple[str, ...] = ()
    replaced_multi: tuple[str, ...] = ()
    successor: Memory | None = None
    possible: tuple[FactsPossiblyConflicting, ...] = ()


def a_current_value(
    valid: ValidStore,
    view: View,
    who: Who,
    named: Named,
    settings: StoreSettings,
    rule: Callable[[str, str], bool],
) -> bool:
    """Whether ``rule(new object, current object)`` holds for a current value of the new
    fact's relation: its subject's active facts under its predicate that the caller sees
    (``slots.scoped_apart``: each value scoped to a purpose of its own;
    ``slots.versions_of_one``: the same named thing at another version)."""
    if valid.object is None or valid.predicate is None:
        return False
    keys = named.subject.keys
    predicate = normalized_predicate(valid, view, who, settings, keys)
    current = _same_relation(view, who, keys, predicate)
    return any(rule(valid.object, str(m.object)) for m in current)


def plural_beside(
    valid: ValidStore,
    view: View,
    who: Who,
    subject: Subject,
    fact: FactPlan,
    memory_id: str,
    *,
    flag: bool,
) -> tuple[list[Memory], FactPlan]:
    """The current values of a plainly plural relation a new value is kept beside (named in
    the answer, so the agent can say it replaces one instead). One stored as a single value
    under a wording that does not read as plural (``maintained by`` beside ``maintainer``)
    is flagged too: the two wordings disagree on whether the relation holds many values."""
    assert subject.entity is not None
    predicate = str(fact.body.predicate_normalized)
    beside = [m for m in _same_relation(view, who, subject.keys, predicate)
              if m.memory_id != memory_id and m.object != valid.object]  # fmt: skip
    single = [m for m in beside if not m.multi_valued
              and not plural_fact(str(m.subject), str(m.predicate), str(m.object))]  # fmt: skip
    if not single or not flag:
        return beside, fact
    entity_id = subject.entity.entity_id
    flagged = FactsPossiblyConflicting(
        memory_id=memory_id, namespace=who.namespace,
        others=tuple(m.memory_id for m in single), entity_id=entity_id,
        other_entity_id=entity_id, reason=RELATION, score=1.0,
    )  # fmt: skip
    return beside, replaced(fact, possible=(*fact.possible, flagged))


def plan_fact(
    valid: ValidStore,
    view: View,
    who: Who,
    subject: Subject,
    measures: Measures,
    settings: StoreSettings,
    *,
    now: datetime,
    memory_id: str,
    multi_valued: bool,
    crossing: Memory | None,
) -> FactPlan | Memory:
    """A fact's relation: its predicate normalized, then (unless it supersedes explicitly
    or is multi-valued) the active facts of the same relation it repeats (that fact is
    returned) or replaces, and the possible conflicts on subjects possibly the same."""
    predicate = normalized_predicate(valid, view, who, settings, subject.keys)
    body = replace_body(body_of(valid), predicate_normalized=predicate)
    if valid.supersedes is not None or multi_valued:
        return FactPlan(body)
    # An expired fact is gone the moment it expires: it neither repeats nor conflicts (the
    # sweep forgets it soon after).
    actives = [
        m
        for m in _same_relation(view, who, subject.keys, predicate)
        if not expired(m.expires_at, now.timestamp())
        and (crossing is None or m.memory_id != crossing.memory_id)
    ]
    agree = _agree(view, who)
    outcome = _fact_conflicts(valid, actives, measures, settings, agree)
    if isinstance(outcome, Memory):
        return outcome
    # Another value of the relation replaces a current one only where that is sure
    # (:func:`ferrex.rules.slots.replaces_value`); otherwise both stand, flagged below.
    # The same value in other words (``90d`` / ``90 days``, ``infra ops`` / ``infra
    # operations``: :func:`ferrex.rules.slots.restated`) is no doubt: the new wording
    # replaces the old one, no value lost.
    doubtful = [m for m in outcome if not m.multi_valued
                and not restated(str(valid.object), str(m.object)) and not replaces_value(
                    predicate, str(valid.object), str(m.object), valid.content,
                    dated=valid.t_valid is not None)]  # fmt: skip
    outcome = [m for m in outcome if m not in doubtful]
    # Facts under other predicates that may fill this slot (:func:`ferrex.rules.slots.
    # slot_match`: object kinds, head words, the cosine of the two facts' phrases): the sure
    # ones are replaced like the same relation's, the others flagged below (never left as
    # two silent answers).
    assert valid.object is not None
    others = _other_current(view, who, subject.keys, predicate, now)
    slots = _slot_matches(valid.object, predicate, others, measures)
    # Two slots that each look sure are one too many: which one it fills is the agent's call.
    sure = [m for m, found in slots if found.outcome == "same" and _may_replace(who, m)]
    sure = sure if len([f for _, f in slots if f.outcome == "same"]) == 1 else []
    # A subject possibly the same whose name is close to this one's (:func:`ferrex.rules.
    # subjects.close_names`: ``VPN`` / ``corporate VPN``): its one value of this slot that
    # is surely replaced is, like the subject's own (the rest are flagged below).
    weighing = (
        None
        if subject.entity is None
        else _Weighing.of(valid, view, who, subject, predicate, memory_id, now, settings)
    )
    close = [] if weighing is None else weighing.close_replaced(measures)
    outcome = [*outcome, *sure, *close]
    # A back-dated fact older than an active one is history, not the new truth: it is stored
    # already ended, where the newer fact began. Only by a fact all its readers see: ended by
    # one some cannot see, it would show them a trace of it. A later fact they cannot see is
    # left standing.
    later = [m for m in outcome if starts_after(m, valid.t_valid, now)]
    successor = min((m for m in later if who.all_readers_see(m)),
                    key=lambda m: (m.t_valid, m.memory_id), default=None)  # fmt: skip
    taken = {m.memory_id for m in later}
    # A fact stored as history ends nothing: a fact still standing beside its successor is
    # not for a report of the past to hide.
    replaced = [] if successor is not None else [m for m in outcome if m.memory_id not in taken]
    _refuse_replacing_pinned(valid, replaced)
    # A private fact leaves shared ones standing (the agent then sees both, flagged as a
    # contradiction): what it keeps to itself changes nothing others see.
    superseded = tuple(m.memory_id for m in replaced if who.may_change(m))
    possible = [] if weighing is None else weighing.flags(measures)
    assert valid.object is not None
    # A slot that may be the same holding the same value (agreeing objects, or the value in
    # other words) is a restatement, named as one below; the others may be a change.
    obj = valid.object
    again = [m for m, _ in slots if m not in sure
             and (agree(obj, str(m.object)) or restated(obj, str(m.object)))]  # fmt: skip
    maybe = [(m, f) for m, f in slots if m not in sure and m not in again]
    maybe += [(m, SlotMatch("possible", "another value of its relation", 1.0))
              for m in doubtful if m not in again]  # fmt: skip
    if maybe and subject.entity is not None:
        entity_id = subject.entity.entity_id
        score = round(max(f.score for _, f in maybe), 6)
        ids = [m.memory_id for m, _ in maybe]
        possible.append(_flag(memory_id, who, ids, entity_id, entity_id, RELATION, score))
    # The same value under another predicate of the subject (in a slot that may be the same,
    # or by the value alone: :func:`ferrex.rules.slots.restated`): the one fact restated in
    # other words, or two slots that hold one value. Flagged, never replaced (no value is
    # lost either way; which it is, is the agent's call).
    taken = {m.memory_id for m, _ in slots}
    again += [m for m in others
              if m.memory_id not in taken and restated(obj, str(m.object))]  # fmt: skip
    if again and subject.entity is not None:
        entity_id = subject.entity.entity_id
        possible.append(_flag(memory_id, who, [m.memory_id for m in again], entity_id,
                              entity_id, RESTATES))  # fmt: skip
    return FactPlan(
        body,
        superseded=superseded,
        replaced_multi=tuple(m.memory_id for m in outcome
                             if m.multi_valued and m.memory_id in superseded),
        successor=successor,
        possible=tuple(possible),
    )  # fmt: skip


def replace_body(body: MemoryBody, **changes: Any) -> MemoryBody:
    fields = {name: getattr(body, name) for name in body.__struct_fields__}
    return MemoryBody(**{**fields, **changes})


def starts_after(old: Memory, start: datetime | None, now: datetime) -> bool:
    """Whether the fact ``old`` is current over a new fact of its relation learned ``now``
    with ``start`` (its ``valid_from``; None: not given). Time is bitemporal: a fact without
    a given start began at some unknown moment at or before it was learned. Of two facts,
    the one that began later is current; the learned order decides when the starts cannot
    be ordered. So ``old`` stays current only when its start was given and is after the new
    one's start, or, the new one undated, after ``now``, the latest its unknown start can
    be: two dated facts by their dates whatever order they were learned in, an undated old
    fact never (its start may be any time before it was learned, so no date proves the new
    one began before it), and an undated new fact only when ``old`` is dated after now."""
    return old.valid_from_given and old.t_valid > (start or now).timestamp()


def _fact_conflicts(
    valid: ValidStore,
    actives: Sequence[Memory],
    measures: Measures,
    settings: StoreSettings,
    agree: Callable[[str, str], bool] | None = None,
) -> Memory | list[Memory]:
    """The existing same fact (a duplicate), or the active facts the new one replaces.

    Objects that ``agree`` (one entity, or the same words: ``team Nova`` and ``Nova``) are
    the same fact. Raises ``conflict_ambiguous`` when an object is neither clearly the same
    nor clearly different."""
    assert valid.object is not None
    replaced: list[Memory] = []
    for old in actives:
        assert old.object is not None
        if agree is not None and agree(valid.object, old.object):
            return old
        (similarity,) = cosines_with(measures, valid.object, [old.object])
        change = classify_object_change(
            valid.object,
            old.object,
            similarity,
            duplicate=settings.conflict_duplicate,
            different=settings.conflict_different,
        )
        if change == "duplicate":
            return old
        if change == "ambiguous":
            raise ConflictAmbiguous(
                f"{valid.subject} {valid.predicate} {valid.object!r} may or may not replace "
                f"{old.memory_id} ({old.subject} {old.predicate} {old.object!r}); "
                f"object similarity {similarity:.2f}",
                hint=f"pass supersedes={old.memory_id} to replace it, or store it as a "
                "multi-valued fact to keep both",
                details={"ids": [old.memory_id], "similarity": round(similarity, 4)},
            )
        replaced.append(old)
    return replaced


def _refuse_replacing_pinned(valid: ValidStore, replaced: Sequence[Memory]) -> None:
    """A pinned fact yields to an explicit supersede only: a new object for its relation is
    refused (naming it) rather than replacing it silently."""
    pinned = sorted((m for m in replaced if m.pinned), key=lambda m: m.memory_id)
    if not pinned:
        return
    old = pinned[0]
    raise ConflictAmbiguous(
        f"{valid.subject} {valid.predicate} {valid.object!r} would replace the pinned fact "
        f"{old.memory_id} ({old.subject} {old.predicate} {old.object!r})",
        hint=f"pass supersedes={old.memory_id} to replace it, or multi_valued=true to keep both",
        details={"ids": [m.memory_id for m in pinned], "pinned": True},
    )


def _agree(view: View, who: Who) -> Callable[[str, str], bool]:
    """Whether two objects name one thing: the same words (``team Nova`` / ``Nova``), or
    one known entity by the entity rules (no embedding)."""
    candidates = scoped_candidates(view, who)

    def agree(a: str, b: str) -> bool:
        if objects_agree(a, b):
            return True
        left = resolve_entity(a, candidates).entity_id
        return left is not None and left == resolve_entity(b, candidates).entity_id

    return agree


def _flag(
    memory_id: str,
    who: Who,
    others: Sequence[str],
    entity_id: str,
    other_entity_id: str,
    reason: str,
    score: float = 1.0,
) -> FactsPossiblyConflicting:
    """A ``facts.possible_conflict`` of the new fact against ``others`` (their entity
    ``other_entity_id``), for ``reason``."""
    return FactsPossiblyConflicting(
        memory_id=memory_id, namespace=who.namespace, others=tuple(others),
        entity_id=entity_id, other_entity_id=other_entity_id, reason=reason, score=score,
    )  # fmt: skip


@dataclass
class _Weighing:
    """The other entities a new fact is weighed against for possible conflicts (:meth:`flags`):
    their spellings, their standing facts (read once each), and how the new fact is told."""

    valid: ValidStore
    view: View
    who: Who
    subject: Subject
    entity_id: str
    predicate: str
    memory_id: str
    now: datetime
    agree: Callable[[str, str], bool]
    obj: str
    abbreviations: Mapping[str, str]
    mine: tuple[list[str], list[str]]
    spelt: dict[str, set[str]]
    fresh: bool
    news: bool
    besides: list[str]
    read: dict[str, list[Memory]]
    slotted: dict[str, list[tuple[Memory, SlotMatch]]] = field(default_factory=dict)
    replacing: set[str] = field(default_factory=set)

    @classmethod
    def of(
        cls,
        valid: ValidStore,
        view: View,
        who: Who,
        subject: Subject,
        predicate: str,
        memory_id: str,
        now: datetime,
        settings: StoreSettings,
    ) -> _Weighing:
        assert valid.object is not None and valid.subject is not None
        assert subject.entity is not None
        agree = _agree(view, who)
        abbreviations = settings.abbreviations_for(who.namespace)
        mine = _slot_words(valid.subject, predicate, abbreviations)
        # The spellings of every entity weighed, in one pass over the namespace's spellings.
        weighed = {p.entity_id for p in subject.possible} | set(subject.related)
        spelt: dict[str, set[str]] = {}
        if weighed:
            scope = who.scope
            for s in view.spellings(who.namespace):
                if s.entity_id in weighed and s.normalized and in_scope(scope, s.agent_id,
                                                                        s.viewers):  # fmt: skip
                    spelt.setdefault(s.entity_id, set()).add(s.normalized)
        # A fact told as news of a change (:func:`ferrex.rules.slots.told_as_news`) may
        # change a fact of a subject possibly or only maybe its own (:func:`_news_slots`).
        # It counts only for a subject named for the first time (no current fact of its own
        # yet): a name already holding facts of its own is a thing of its own.
        # A note that names another fact's value (``dropped redis``) tells of a change to it.
        fresh = not any(is_current(m) and who.sees(m)
                        for m in _facts_of(view, who, subject.keys))  # fmt: skip
        news = fresh and told_as_news(predicate, valid.content, dated=valid.t_valid is not None)
        besides = [*mine[0], *valid.subject.casefold().split()]
        return cls(valid, view, who, subject, subject.entity.entity_id, predicate, memory_id,
                   now, agree, valid.object, abbreviations, mine, spelt, fresh, news,
                   besides, {})  # fmt: skip

    def flags(self, measures: Measures) -> list[FactsPossiblyConflicting]:
        """For each entity the subject is possibly the same as: its active single-valued
        facts of the same relation, or of one that may fill the same slot
        (:func:`_slot_matches`, or a word moved between subject and predicate), whose object
        disagrees; for each entity that only shares a word with it
        (:attr:`ferrex.rules.subjects.SubjectResolution.related`), those that name the same
        slot in other words (:func:`ferrex.rules.subjects.same_slot_words`). Nothing is
        superseded; both are flagged."""
        out = self.possible_flags(measures)
        out += self.related_flags()
        out += self.restating_flags(out)
        # A fact replaced as this slot's value (:meth:`close_replaced`) is no conflict.
        if not self.replacing:
            return out
        kept = [msgspec.structs.replace(f, others=tuple(o for o in f.others
                                                        if o not in self.replacing))
                for f in out]  # fmt: skip
        return [f for f in kept if f.others]

    def slots_of(self, entity_id: str, measures: Measures) -> list[tuple[Memory, SlotMatch]]:
        """:func:`_slot_matches` of the new fact against the entity's current facts under
        other predicates (asked once per entity)."""
        if entity_id not in self.slotted:
            current = self.current_of(entity_id)
            others = [m for m in current if m.predicate_normalized != self.predicate]
            self.slotted[entity_id] = _slot_matches(self.obj, self.predicate, others, measures)
        return self.slotted[entity_id]

    def close_replaced(self, measures: Measures) -> list[Memory]:
        """The one current fact of a subject possibly the same, by a close name
        (:func:`ferrex.rules.subjects.close_names`, not an embedding), that the new fact
        surely replaces: of its relation with a value that surely replaces it
        (:func:`ferrex.rules.slots.replaces_value`), or of a slot surely the same
        (:func:`ferrex.rules.slots.slot_match`). None when more than one is found: which
        one it replaces is then the agent's call (both flagged)."""
        dated = self.valid.t_valid is not None
        found: list[Memory] = []
        for possible in self.subject.possible:
            if possible.reason == "embedding" or not self.close(possible.entity_id):
                continue
            found += [m for m in self.current_of(possible.entity_id)
                      if m.predicate_normalized == self.predicate
                      and replaces_value(self.predicate, self.obj, str(m.object),
                                         self.valid.content, dated=dated)]  # fmt: skip
            found += [m for m, f in self.slots_of(possible.entity_id, measures)
                      if f.outcome == "same"]  # fmt: skip
        if len(found) != 1 or not _may_replace(self.who, found[0]):
            return []
        self.replacing = {found[0].memory_id}
        return found

    def close(self, entity_id: str) -> bool:
        """Whether one of the entity's spellings is a close name of the subject."""
        return any(close_names(self.mine[0], spelled_out(key, self.abbreviations))
                   for key in sorted(self.spelt.get(entity_id, ())))  # fmt: skip

    def standing(self, entity_id: str) -> list[Memory]:
        """The entity's active single-valued facts the caller sees, with an object."""
        if entity_id not in self.read:
            keys = sorted(self.spelt.get(entity_id, ()))
            who, now = self.who, self.now.timestamp()
            self.read[entity_id] = [
                m
                for m in _facts_of(self.view, who, keys)
                if is_current(m)
                and who.sees(m)
                and not m.multi_valued
                and not expired(m.expires_at, now)
                and m.object is not None
                and m.predicate_normalized
            ]
        return self.read[entity_id]

    def current_of(self, entity_id: str) -> list[Memory]:
        return [m for m in self.standing(entity_id) if not self.agree(self.obj, str(m.object))]

    def moved(self, m: Memory) -> bool:
        """A word moved between subject and predicate (:func:`same_slot_words`)."""
        theirs = _slot_words(str(m.subject), str(m.predicate_normalized), self.abbreviations)
        return not kinds_clash(self.obj, str(m.object)) and same_slot_words(*self.mine, *theirs)

    def news_of(self, current: Sequence[Memory]) -> list[Memory]:
        if self.news:
            return _news_slots(self.predicate, self.obj, current)
        if not self.fresh or not self.valid.content:
            return []
        return [m for m in current if not kinds_clash(self.obj, str(m.object))
                and note_names(self.valid.content, str(m.object),
                               besides=self.besides)]  # fmt: skip

    def flag(self, others: Sequence[str], other_entity_id: str, reason: str,
             score: float = 1.0) -> FactsPossiblyConflicting:  # fmt: skip
        return _flag(self.memory_id, self.who, others, self.entity_id, other_entity_id,
                     reason, score)  # fmt: skip

    def possible_flags(self, measures: Measures) -> list[FactsPossiblyConflicting]:
        """The flags against each entity the subject is possibly the same as."""
        out: list[FactsPossiblyConflicting] = []
        for possible in self.subject.possible:
            current = self.current_of(possible.entity_id)
            same = [m for m in current if m.predicate_normalized == self.predicate]
            slots = self.slots_of(possible.entity_id, measures)
            matched = {m.memory_id for m, _ in slots}
            matched |= {m.memory_id for m in current if m not in same and self.moved(m)}
            if not matched:
                matched = {m.memory_id for m in self.news_of(current) if m not in same}
            # Two flags: one of the same relation (gone once the subjects are one entity, a
            # contradiction proper then) and one of relations possibly the same (kept).
            for others, reason in (([m.memory_id for m in same], possible.reason),
                                   (sorted(matched), RELATION)):  # fmt: skip
                if others:
                    out.append(self.flag(sorted(others), possible.entity_id, reason,
                                         possible.score))  # fmt: skip
        return out

    def related_flags(self) -> list[FactsPossiblyConflicting]:
        """Entities that only share a word with the subject: flagged where a fact of theirs
        names the same slot in other words (a word moved between subject and predicate), or,
        for news, one that may fill its slot on a name that may be the same (news_alike)."""
        out: list[FactsPossiblyConflicting] = []
        for entity_id in self.subject.related:
            current = self.current_of(entity_id)
            others, reason = sorted(m.memory_id for m in current if self.moved(m)), SLOT_WORDS
            if (
                not others
                and self.fresh
                and any(
                    news_alike(self.mine[0], spelled_out(key, self.abbreviations))
                    for key in sorted(self.spelt.get(entity_id, ()))
                )
            ):
                others, reason = sorted(m.memory_id for m in self.news_of(current)), NEWS
            if others:
                out.append(self.flag(others, entity_id, reason))
        return out

    def restating_flags(
        self, flagged: Sequence[FactsPossiblyConflicting]
    ) -> list[FactsPossiblyConflicting]:
        """A fact of an entity possibly the same, or sharing a word, that states the new
        value under another predicate: the one fact restated under another name (flagged,
        never merged). Not the same predicate (siblings share values: ``staging db | engine
        | Postgres 16`` / ``prod db | engine | Postgres 16``), nor two parts of one thing
        (:func:`ferrex.rules.subjects.parts_of_one`: ``payments api | database | DynamoDB``
        / ``payments db | engine | DynamoDB``)."""
        subject = self.subject
        possible = {p.entity_id for p in subject.possible}
        out: list[FactsPossiblyConflicting] = []
        for entity_id in dict.fromkeys([*(p.entity_id for p in subject.possible),
                                        *subject.related]):  # fmt: skip
            related = entity_id not in possible
            if related and any(parts_of_one(self.mine[0], spelled_out(key, self.abbreviations))
                               for key in sorted(self.spelt.get(entity_id, ()))):  # fmt: skip
                continue
            again = self.restating(entity_id, [*flagged, *out], related=related)
            if again:
                out.append(self.flag(again, entity_id, RESTATES))
        return out

    def restating(
        self, entity_id: str, flagged: Sequence[FactsPossiblyConflicting], *, related: bool
    ) -> list[str]:
        """The entity's facts under another predicate that state the new value in other
        words (:func:`ferrex.rules.slots.restated`), not flagged already. For an entity
        that only shares a word, not under a predicate of one head word with the new one
        (``schedule`` / ``backup schedule``): each of two things has its own."""
        named = {o for f in flagged for o in f.others}
        predicate = self.predicate
        return sorted(m.memory_id for m in self.standing(entity_id)
                      if m.predicate_normalized != predicate and m.memory_id not in named
                      and not (related and same_head(predicate, str(m.predicate_normalized)))
                      and restated(self.obj, str(m.object)))  # fmt: skip


#: The reason of a possible conflict found by :func:`ferrex.rules.subjects.same_slot_words`
#: between subjects that only share a word.
SLOT_WORDS: Final = "slot words"
#: The reason of a possible conflict between a fact told as news of a change
#: (:func:`ferrex.rules.slots.told_as_news`) and a fact of a subject that may be its own
#: (:func:`ferrex.rules.subjects.news_alike`).
NEWS: Final = "news"


def _slot_words(
    subject: str, predicate: str, abbreviations: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """A fact's subject spelled out and its predicate's content words (none for a
    predicate that only states a value), as :func:`ferrex.rules.subjects.same_slot_words`
    compares them."""
    words = spelled_out(normalize_entity(subject), abbreviations)
    if value_predicate(predicate):
        return words, []
    return words, [w for part in content_words(predicate) for w in spelled_out(part, abbreviations)]


def _news_slots(predicate: str, obj: str, current: Sequence[Memory]) -> list[Memory]:
    """Of a subject's current facts, those a fact told as news may change (weighed without
    an embedding): the same relation; else those whose relation may be the same
    (:func:`ferrex.rules.slots.slot_candidate`) with an object of one kind or a predicate
    of one head word; else, on a subject known by that one fact alone, that fact when its
    relation may be the same."""
    same = [m for m in current if m.predicate_normalized == predicate]
    if same:
        return same
    allowed = [
        m
        for m in current
        if slot_candidate(predicate, obj, str(m.predicate_normalized), str(m.object))
    ]
    close = [
        m
        for m in allowed
        if one_kind(obj, str(m.object)) or same_head(predicate, str(m.predicate_normalized))
    ]
    return close or (allowed if len(current) == 1 else [])
