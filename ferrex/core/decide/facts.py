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
A plainly plural fact (:func:`ferrex.rules.slots.plural_fact`, two objects each scoped
to its own purpose, or a value told plainly in the very words of the current ones:
:func:`repeats_wording`) is stored as multi-valued; the answer names the values it was kept beside
(``kept_beside``) and how to replace one instead, and one stored under a wording that
does not read as plural (``maintained by`` beside ``maintainer``) is flagged.
"The subject's" facts are those of every spelling of its entity the scope may use. The
active single-valued facts of the same relation are compared by object
(:mod:`ferrex.rules.dedup`; objects that agree, ``team Nova`` / ``Nova``, are the
same): the same object again is a *duplicate* (the old fact is re-validated, nothing
new stored), a different object *supersedes* it where that is sure, and an unclear one
(too alike to tell) stands beside it, both flagged, unless it is the value in other words.
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
(``replaced_multi_valued``); where a single-valued value beside them is only flagged, they
are flagged with it, none replaced. Active facts of the same relation on a subject that is
*possibly* the same, with an object that does not agree, or of a relation that may
fill the same slot, are left standing and named in a ``facts.possible_conflict`` event
(the answer's ``possible_conflict``). A fact replaced as its slot's new value is named
in the answer (``replaced_note``) with how to keep both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace as replaced
from datetime import datetime
from typing import Any

from ferrex.errors import ConflictAmbiguous
from ferrex.rules.dedup import classify_object_change
from ferrex.rules.kinds import kinds_clash
from ferrex.rules.lifecycle import expired
from ferrex.rules.memory_input import ValidStore
from ferrex.rules.predicates import as_worded, match_known, normalize_predicate, placing, relational
from ferrex.rules.restatements import restated
from ferrex.rules.slots import (
    SlotMatch,
    one_at_a_time,
    plural_fact,
)
from ferrex.rules.value_changes import (
    note_tells_change,
    one_holder,
    replaces_value,
    suffixed_versions,
    told_as_news,
    told_as_past,
)
from journal import FactsPossiblyConflicting, MemoryBody
from projections.documents import subject_key
from projections.readmodel.predicates import is_current
from projections.rows import RELATION, RESTATES, Memory

from ..settings import StoreSettings
from ..view import View
from .entities import Named, Subject
from .shared import Measures, Who, body_of, cosines_with
from .slot_search import TOLD_AS_PAST, slot_matches
from .weighing import (
    Weighing,
    agree_with,
    change_words,
    facts_of,
    flag_of,
    may_replace,
    own_words,
)


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
            for m in facts_of(view, who, keys or (subject_key(valid.subject),))
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


def _current(view: View, who: Who, keys: Sequence[str], now: datetime) -> list[Memory]:
    """The subject's current facts the caller sees, with an object and not expired (read
    once per store: the slots a new fact may fill, and the value its words may name)."""
    return [
        m
        for m in facts_of(view, who, keys)
        if is_current(m) and who.sees(m) and m.object and not expired(m.expires_at, now.timestamp())
    ]


def _other_current(current: Sequence[Memory], predicate: str) -> list[Memory]:
    """Of the subject's current facts, the single-valued ones under other predicates: those
    a new fact may fill the slot of, or restate."""
    return [
        m
        for m in current
        if not m.multi_valued and m.predicate_normalized and m.predicate_normalized != predicate
    ]


def _told_from(valid: ValidStore, who: Who, current: Sequence[Memory]) -> list[Memory]:
    """The one current fact of the subject whose value the new fact's words tell the
    change from (``replaced Moment.js with | date-fns``, a note "moved off Redux":
    :func:`ferrex.rules.value_changes.note_tells_change`), of a kind the new value may
    replace, single-valued or kept beside others (a relation of many): that value alone is
    replaced; none when the words name more than one."""
    obj, words = valid.object, change_words(valid)
    if obj is None or words is None:
        return []
    told = [m for m in current
            if may_replace(who, m) and not kinds_clash(obj, str(m.object))
            and note_tells_change(words, obj, str(m.object))]  # fmt: skip
    return told if len(told) == 1 else []


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


def repeats_wording(
    valid: ValidStore,
    view: View,
    who: Who,
    named: Named,
    measures: Measures,
    settings: StoreSettings,
) -> bool:
    """Whether a new value told with no word of change is one value more of its relation,
    kept beside the current ones and named, not flagged, when each current value is a
    clearly other one that it does not surely replace
    (:func:`ferrex.rules.value_changes.replaces_value`), does not restate, and is not the
    same name at another version (``payment-gateway-v1`` / ``-v2``,
    :func:`ferrex.rules.value_changes.suffixed_versions`, flagged), and either:

    - the current values are each kept beside the others and worded as the new one, or so
      but for the number of its last word (``politics desk | reporter | Jamal`` beside
      ``reporters | Aoife``): one of them (a start alone is then when one more began); or
    - the relation may hold many values (its predicate a verb or a preposition,
      :func:`ferrex.rules.predicates.relational`, not an attribute such as ``log level``,
      nor a role one holds, :func:`ferrex.rules.value_changes.one_holder`, nor a place,
      where a second value may be a move, :func:`ferrex.rules.predicates.placing`, unless
      it holds many already, and no start given unless so), and the new value is stated in
      the very words of the current ones, subject and predicate alike (``revenue DAG |
      reads from | orders``, then ``revenue DAG | reads from | refunds``), each clearly
      different (:func:`ferrex.rules.dedup.classify_object_change`).

    An agent tells a change as one (a ``valid_from`` on a relation of one value, ``moved
    to``, a note of it). A fact worded otherwise is weighed as before: the subject written
    another way, even in case or by an article (``ci`` / ``CI``, ``CI pipeline`` / ``the CI
    pipeline``: told apart, the two statements may be a correction), or another predicate
    than the same with an auxiliary (``is hosted on``)."""
    if valid.object is None or valid.predicate is None:
        return False
    predicate = normalized_predicate(valid, view, who, settings, named.subject.keys)
    if told_as_news(predicate, valid.content, dated=False):
        return False
    agree = agree_with(view, who)
    others = [m for m in _same_relation(view, who, named.subject.keys, predicate)
              if not agree(valid.object, str(m.object))]  # fmt: skip
    if not others or any(
        restated(valid.object, str(m.object))
        or replaces_value(predicate, valid.object, str(m.object), None, dated=False)
        or suffixed_versions(valid.object, str(m.object))
        for m in others
    ):
        return False
    mine = as_worded(valid.predicate)
    if all(m.multi_valued and _in_other_number(as_worded(str(m.predicate)), mine)
           for m in others):  # fmt: skip
        return True  # one of values kept beside each other
    if not relational(valid.predicate) or one_holder(predicate):
        return False
    # ``rebuild | runs | nightly`` then ``… | runs | Sundays only``: one schedule at a time.
    if one_at_a_time(valid.predicate, valid.object):
        return False
    # A start alone tells a change of one value, and a place told plainly may be a move:
    # neither where the relation holds many already (values kept beside each other), where
    # it says when, or where, this one more is.
    if not any(m.multi_valued for m in others) and (
        valid.t_valid is not None or placing(valid.predicate)
    ):
        return False
    if any(
        as_worded(str(m.predicate)) != mine
        or " ".join(str(m.subject).split()) != " ".join(str(valid.subject).split())
        for m in others
    ):
        return False
    cosines = cosines_with(measures, valid.object, [str(m.object) for m in others])
    return all(
        classify_object_change(
            valid.object, str(m.object), cosine,
            duplicate=settings.conflict_duplicate, different=settings.conflict_different,
        ) == "supersede"
        for m, cosine in zip(others, cosines, strict=True)
    )  # fmt: skip


def _in_other_number(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether two wordings are the same, or differ only by a plural ending of their last
    word."""
    if not left or len(left) != len(right) or left[:-1] != right[:-1]:
        return False
    a, b = sorted((left[-1], right[-1]), key=len)
    return b in (a, a + "s", a + "es")


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
    agree = agree_with(view, who)
    found = _fact_conflicts(valid, actives, measures, settings, agree)
    if isinstance(found, Memory):
        return found
    outcome, unclear = found
    # Another value of the relation replaces a current one only where that is sure
    # (:func:`ferrex.rules.value_changes.replaces_value`), never when the objects are too
    # alike to tell (``unclear``); otherwise both stand, flagged below. The same value in
    # other words (``90d`` / ``90 days``, ``v2.4.0`` / ``2.4.0``, ``infra ops`` / ``infra
    # operations``: :func:`ferrex.rules.restatements.restated`) is no doubt: the new wording
    # replaces the old one, no value lost.
    doubtful = [m for m in outcome if not m.multi_valued
                and not restated(str(valid.object), str(m.object)) and (
                    m.memory_id in unclear or not replaces_value(
                        predicate, str(valid.object), str(m.object), valid.content,
                        dated=valid.t_valid is not None))]  # fmt: skip
    if doubtful:
        # Values kept beside one it may not replace (a relation of many) are replaced no
        # more surely: flagged with it, not some replaced and some left standing.
        doubtful += [m for m in outcome if m.multi_valued
                     and not restated(str(valid.object), str(m.object))]  # fmt: skip
    outcome = [m for m in outcome if m not in doubtful]
    # Facts under other predicates that may fill this slot (:func:`ferrex.rules.slots.
    # slot_match`: object kinds, head words, the cosine of the two facts' phrases): the sure
    # ones are replaced like the same relation's, the others flagged below (never left as
    # two silent answers).
    assert valid.object is not None
    current = _current(view, who, subject.keys, now)
    others = _other_current(current, predicate)
    # Told as news in words (the predicate or the note), or by a start alone.
    worded = told_as_news(predicate, valid.content, dated=False)
    told = worded or valid.t_valid is not None
    slots = slot_matches(valid.object, predicate, others, measures, news=told, worded=worded,
                         note=change_words(valid), besides=own_words(valid))  # fmt: skip
    # Two slots that each look sure are one too many: which one it fills is the agent's call.
    sure = [m for m, found in slots if found.outcome == "same" and may_replace(who, m)]
    sure = sure if len([f for _, f in slots if f.outcome == "same"]) == 1 else []
    # A subject possibly the same whose name is close to this one's (:func:`ferrex.rules.
    # subjects.close_names`: ``VPN`` / ``corporate VPN``): its one value of this slot that
    # is surely replaced is, like the subject's own (the rest are flagged below).
    weighing = (
        None
        if subject.entity is None
        else Weighing.of(valid, view, who, subject, predicate, memory_id, now, settings)
    )
    close = [] if weighing is None else weighing.close_replaced(measures)
    # A fact told as past (``used to use``) beside the subject's fact that began after it is
    # that fact's history, ended where it began; one that did not begin after is only flagged.
    # So is a value told with ``was`` (or as past) in a slot that may be the same, dated
    # before that fact began: a late report of what it was, which replaces nothing.
    before = told_as_past(predicate) or bool({"was", "were"} & set(predicate.split("_")))
    past = [m for m, found in slots if (found.why == TOLD_AS_PAST or before)
            and starts_after(m, valid.t_valid, now)]  # fmt: skip
    # Of values kept beside each other, the one its words tell the change from is replaced,
    # not every one.
    told_from = _told_from(valid, who, current)
    named_ids = {m.memory_id for m in told_from}
    if told_from:
        outcome = [m for m in outcome if not m.multi_valued or m.memory_id in named_ids]
    outcome = [*outcome, *sure, *close, *past]
    taken_ids = {m.memory_id for m in outcome}
    outcome += [m for m in told_from if m.memory_id not in taken_ids]
    # A back-dated fact older than an active one is history, not the new truth: it is stored
    # already ended, where the newer fact began. Only by a fact all its readers see: ended by
    # one some cannot see, it would show them a trace of it. A later fact they cannot see is
    # left standing.
    later = [m for m in outcome if starts_after(m, valid.t_valid, now)]
    successor = min((m for m in later if who.all_readers_see(m)),
                    key=lambda m: (m.t_valid, m.memory_id), default=None)  # fmt: skip
    if successor is None and valid.t_valid is not None:
        # Its relation's history may hold a value dated after it, replaced since: then it
        # was over when that value began, whatever holds now.
        successor = _later_history(view, who, subject.keys, predicate, valid.t_valid, now)
    taken = {m.memory_id for m in later}
    # A fact stored as history ends nothing: a fact still standing beside its successor is
    # not for a report of the past to hide.
    replaced = [] if successor is not None else [m for m in outcome if m.memory_id not in taken]
    _refuse_replacing_pinned(valid, replaced)
    # A private fact leaves shared ones standing (the agent then sees both, flagged as a
    # contradiction): what it keeps to itself changes nothing others see.
    superseded = tuple(m.memory_id for m in replaced if who.may_change(m))
    if weighing is not None:
        # The close subject's fact it replaces, or that ends it (stored as history), is no
        # possible conflict of it; one left standing for another reason still is.
        ended = {successor.memory_id} if successor is not None else set()
        weighing.replacing = {m.memory_id for m in close} & (set(superseded) | ended)
    possible = [] if weighing is None else weighing.flags(measures)
    assert valid.object is not None
    # A slot that may be the same holding the same value (agreeing objects, or the value in
    # other words) is a restatement, named as one below; the others may be a change.
    obj = valid.object
    again = [m for m, _ in slots if m not in sure
             and (agree(obj, str(m.object)) or restated(obj, str(m.object)))]  # fmt: skip
    maybe = [(m, f) for m, f in slots if m not in sure and m not in again and m not in past]
    maybe += [(m, SlotMatch("possible", "another value of its relation", 1.0))
              for m in doubtful if m not in again]  # fmt: skip
    if maybe and subject.entity is not None:
        entity_id = subject.entity.entity_id
        score = round(max(f.score for _, f in maybe), 6)
        ids = [m.memory_id for m, _ in maybe]
        possible.append(flag_of(memory_id, who, ids, entity_id, entity_id, RELATION, score))
    # The same value under another predicate of the subject (in a slot that may be the same,
    # or by the value alone: :func:`ferrex.rules.restatements.restated`): the one fact restated in
    # other words, or two slots that hold one value. Flagged, never replaced (no value is
    # lost either way; which it is, is the agent's call).
    taken = {m.memory_id for m, _ in slots}
    again += [m for m in others
              if m.memory_id not in taken and restated(obj, str(m.object))]  # fmt: skip
    if again and subject.entity is not None:
        entity_id = subject.entity.entity_id
        possible.append(flag_of(memory_id, who, [m.memory_id for m in again], entity_id,
                              entity_id, RESTATES))  # fmt: skip
    # A change told in words as news whose one flagged fact is of a name possibly the same,
    # in a slot the slot rules match (:meth:`Weighing.told_replaced`), replaces it; its own
    # open flags pass to the new fact below, like any replaced fact's.
    told_over = None if weighing is None or superseded or successor is not None else (
        weighing.told_replaced(possible, measures))  # fmt: skip
    if told_over is not None and not starts_after(told_over, valid.t_valid, now):
        superseded = (told_over.memory_id,)
        possible = []
    if subject.entity is not None:
        possible += _inherited(view, who, memory_id, subject.entity.entity_id, superseded,
                               lambda other: agree(obj, other), possible, now)  # fmt: skip
    return FactPlan(
        body,
        superseded=superseded,
        replaced_multi=tuple(m.memory_id for m in outcome
                             if m.multi_valued and m.memory_id in superseded),
        successor=successor,
        possible=tuple(possible),
    )  # fmt: skip


def _inherited(
    view: View,
    who: Who,
    memory_id: str,
    entity_id: str,
    replaced: Sequence[str],
    agrees: Callable[[str], bool],
    flagged: Sequence[FactsPossiblyConflicting],
    now: datetime,
) -> list[FactsPossiblyConflicting]:
    """A possible conflict is not settled by replacing one of its two facts: the new fact
    stands where the replaced one stood, so it is flagged beside the other one (for the same
    reason), while that one is current, seen by the caller and of another value, and the two
    were not said to both hold. Otherwise a flagged pair ``reco widget | moved to | reco-2``
    / ``recommendation widget | served from | reco-1`` would, once ``host | reco-3`` replaces
    reco-1, leave two silent answers. Not a flag that the old fact restated the other's value
    (``restates``): a new value is no restatement of it (the on-call engineer replaced is no
    longer the one a team page names)."""
    named = {o for f in flagged for o in f.others} | set(replaced)
    found: dict[tuple[str, str], list[str]] = {}
    for old in replaced:
        for c in view.flagged_with(old):
            other = view.memory(c.other_id)
            if (
                c.reason == RESTATES
                or other is None
                or c.other_id in named
                or other.object is None
                or not is_current(other)
                or not who.sees(other)
                or expired(other.expires_at, now.timestamp())
                or view.facts_differ(old, c.other_id)
                or agrees(str(other.object))
            ):
                continue
            named.add(c.other_id)
            found.setdefault((c.other_entity_id, c.reason), []).append(c.other_id)
    return [flag_of(memory_id, who, sorted(ids), entity_id, other_entity, reason)
            for (other_entity, reason), ids in sorted(found.items())]  # fmt: skip


def _later_history(
    view: View, who: Who, keys: Sequence[str], predicate: str, start: datetime, now: datetime
) -> Memory | None:
    """The earliest fact of the relation, no longer current, whose given start is after
    ``start`` (:func:`starts_after`), seen by everyone who sees the new fact."""
    history = [m for m in facts_of(view, who, keys)
               if m.predicate_normalized == predicate and m.object is not None
               and not is_current(m) and starts_after(m, start, now)
               and who.sees(m) and who.all_readers_see(m)]  # fmt: skip
    return min(history, key=lambda m: (m.t_valid, m.memory_id), default=None)


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
) -> Memory | tuple[list[Memory], set[str]]:
    """The existing same fact (a duplicate), or the active facts with another object, and
    the ids of those whose object is neither clearly the same nor clearly different (the
    object cosine between ``conflict_different`` and ``conflict_duplicate``: ``Tom Becker``
    / ``Thomas Becker``). Those are no sure change: :func:`plan_fact` keeps them standing
    and flags them, as it does a value it may not replace, rather than refuse the store
    and lose what the agent said.

    Objects that ``agree`` (one entity, or the same words: ``team Nova`` and ``Nova``) are
    the same fact."""
    assert valid.object is not None
    replaced: list[Memory] = []
    unclear: set[str] = set()
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
            unclear.add(old.memory_id)
        replaced.append(old)
    return replaced, unclear


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
