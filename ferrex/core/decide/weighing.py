"""A new fact weighed against the facts of other subjects it may be about (step 3 of a store,
beside :mod:`ferrex.core.decide.facts`): the reads both share (a subject's facts, whether two
objects agree; a fact's slot matches are :mod:`ferrex.core.decide.slot_search`'s) and
:class:`Weighing`, which finds, for each entity the subject is possibly the same as or shares a
word with, the facts a new one may conflict with (flagged ``facts.possible_conflict``), restate
(flagged ``restates``), or surely replace (:meth:`Weighing.close_replaced`: a close name,
:func:`ferrex.rules.subjects.close_names`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

import msgspec

from ferrex.rules.entities import normalize_entity, resolve_entity
from ferrex.rules.kinds import kinds_clash, one_kind
from ferrex.rules.lifecycle import expired
from ferrex.rules.memory_input import ValidStore
from ferrex.rules.predicates import as_worded, one_relation
from ferrex.rules.restatements import restated
from ferrex.rules.short_forms import spelled_out
from ferrex.rules.slots import (
    SlotMatch,
    content_words,
    fact_phrase,
    same_head,
    slot_candidate,
    value_predicate,
)
from ferrex.rules.subjects import (
    COMPONENT_WORDS,
    close_names,
    name_words,
    news_alike,
    objects_agree,
    parts_of_one,
    same_slot_words,
)
from ferrex.rules.subjects_apart import (
    PERSON_SLOT_WORDS,
    THING_WORDS,
    added_apart,
    first_name_of,
    relations_apart,
)
from ferrex.rules.value_changes import (
    note_names,
    replaces_value,
    told_as_news,
)
from ferrex.rules.visibility import in_scope, own_private
from journal import FactsPossiblyConflicting
from projections.readmodel.predicates import is_current
from projections.rows import RELATION, RESTATES, Memory

from ..settings import StoreSettings
from ..view import View
from .entities import Subject, scoped_candidates
from .shared import Measures, Who, cosines_with
from .slot_search import NEWS_FLOOR, slot_matches


def facts_of(view: View, who: Who, keys: Sequence[str]) -> list[Memory]:
    found = {m.memory_id: m for key in keys for m in view.subject_facts(who.namespace, key)}
    return [found[k] for k in sorted(found)]


def change_words(valid: ValidStore) -> str | None:
    """What a fact says of a change in words: its predicate as written and its note (the
    old value may be named in either: ``replaced Moment.js with``, "moved off Redux")."""
    return " ".join(x for x in (valid.predicate, valid.content) if x) or None


def own_words(valid: ValidStore) -> list[str]:
    """The words of a new fact's own subject and value, casefolded: a note naming them names
    no other fact (:func:`ferrex.rules.value_changes.note_names`)."""
    return re.findall(r"[a-z][a-z0-9]+", f"{valid.subject or ''} {valid.object or ''}".casefold())


def may_replace(who: Who, old: Memory) -> bool:
    """Whether a fact found to fill the same slot is replaced, not flagged: only one the
    store may change and that is not pinned (a pinned fact yields to ``supersedes`` only)."""
    return who.may_change(old) and not old.pinned


def agree_with(view: View, who: Who) -> Callable[[str, str], bool]:
    """Whether two objects name one thing: the same words (``team Nova`` / ``Nova``), or
    one known entity by the entity rules (no embedding)."""
    candidates = scoped_candidates(view, who)

    def agree(a: str, b: str) -> bool:
        if objects_agree(a, b):
            return True
        left = resolve_entity(a, candidates).entity_id
        return left is not None and left == resolve_entity(b, candidates).entity_id

    return agree


def flag_of(
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
class Weighing:
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
    told: bool
    """Told as news of a change (:func:`ferrex.rules.value_changes.told_as_news`): in words,
    or by a start given."""
    worded: bool
    """Told as news of a change in words (the predicate or the note), not by a start alone."""
    news: bool
    besides: list[str]
    read: dict[str, list[Memory]]
    named: frozenset[str] = frozenset()
    """Words written with a capital letter (``Vault``, ``MDM``) in the subject or a spelling
    of an entity weighed, casefolded: names, not common nouns (:func:`close_names`)."""
    slotted: dict[str, list[tuple[Memory, SlotMatch]]] = field(default_factory=dict)
    replacing: set[str] = field(default_factory=set)
    many: dict[str, bool] = field(default_factory=dict)
    """:meth:`many_values` of each entity asked (read once per store)."""

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
    ) -> Weighing:
        assert valid.object is not None and valid.subject is not None
        assert subject.entity is not None
        agree = agree_with(view, who)
        abbreviations = settings.abbreviations_for(who.namespace)
        mine = _slot_words(valid.subject, predicate, abbreviations)
        # The spellings of every entity weighed, in one pass over the namespace's spellings.
        weighed = {p.entity_id for p in subject.possible} | set(subject.related)
        spelt: dict[str, set[str]] = {}
        named = set(_capitalised(valid.subject))
        if weighed:
            scope = who.scope
            for s in view.spellings(who.namespace):
                if (
                    s.entity_id in weighed
                    and s.normalized
                    and (
                        in_scope(scope, s.agent_id, s.viewers)
                        or own_private(who.agent_id, s.agent_id, s.viewers)
                    )
                ):
                    spelt.setdefault(s.entity_id, set()).add(s.normalized)
                    named.update(_capitalised(s.alias))
        # A fact told as news of a change (:func:`ferrex.rules.value_changes.told_as_news`) may
        # change a fact of a subject possibly or only maybe its own (:func:`_news_slots`).
        # It counts only for a subject named for the first time (no current fact of its own
        # yet): a name already holding facts of its own is a thing of its own.
        # A note that names another fact's value (``dropped redis``) tells of a change to it.
        fresh = not any(is_current(m) and who.sees(m)
                        for m in facts_of(view, who, subject.keys))  # fmt: skip
        told = told_as_news(predicate, valid.content, dated=valid.t_valid is not None)
        worded = told_as_news(predicate, valid.content, dated=False)
        besides = [*mine[0], *valid.subject.casefold().split()]
        return cls(valid, view, who, subject, subject.entity.entity_id, predicate, memory_id,
                   now, agree, valid.object, abbreviations, mine, spelt, fresh, told, worded,
                   fresh and told, besides, {}, frozenset(named))  # fmt: skip

    def flags(self, measures: Measures) -> list[FactsPossiblyConflicting]:
        """For each entity the subject is possibly the same as: its active single-valued
        facts of the same relation, or of one that may fill the same slot
        (:func:`slot_matches`, or a word moved between subject and predicate), whose object
        disagrees; for each entity that only shares a word with it
        (:attr:`ferrex.rules.subjects.SubjectResolution.related`), those that name the same
        slot in other words (:func:`ferrex.rules.subjects.same_slot_words`). Nothing is
        superseded; both are flagged."""
        out = self.possible_flags(measures)
        out += self.related_flags()
        out += self.restating_flags(out)
        if not out:
            out = self.worded_news_flags() or self.noted_flags(measures)
        # A fact replaced as this slot's value (:meth:`close_replaced`) is no conflict.
        if not self.replacing:
            return out
        kept = [msgspec.structs.replace(f, others=tuple(o for o in f.others
                                                        if o not in self.replacing))
                for f in out]  # fmt: skip
        return [f for f in kept if f.others]

    def slots_of(self, entity_id: str, measures: Measures) -> list[tuple[Memory, SlotMatch]]:
        """:func:`slot_matches` of the new fact against the entity's current facts under
        other predicates (asked once per entity)."""
        if entity_id not in self.slotted:
            current = self.current_of(entity_id)
            others = [m for m in current if not self.one_relation(m)]
            told = self.worded or self.valid.t_valid is not None
            self.slotted[entity_id] = slot_matches(self.obj, self.predicate, others, measures,
                                                   news=told, worded=self.worded,
                                                   note=change_words(self.valid),
                                                   besides=own_words(self.valid))  # fmt: skip
        return self.slotted[entity_id]

    def close_replaced(self, measures: Measures) -> list[Memory]:
        """The one current fact of a subject possibly the same, by a close name
        (:func:`ferrex.rules.subjects.close_names`, not an embedding), that the new fact
        surely replaces: of its relation with a value that surely replaces it
        (:func:`ferrex.rules.value_changes.replaces_value`), or of a slot surely the same
        (:func:`ferrex.rules.slot_outcomes.slot_match`). None when more than one is found: which
        one it replaces is then the agent's call (both flagged)."""
        dated = self.valid.t_valid is not None
        found: list[Memory] = []
        for possible in self.subject.possible:
            if possible.reason == "embedding":
                continue
            person = self.person(possible.entity_id)
            if not person and not self.close(possible.entity_id):
                continue
            if self.many_values(possible.entity_id):
                continue  # one value of several its relation holds: not the one it replaces
            same = [m for m in self.current_of(possible.entity_id)
                    if self.one_relation(m)
                    and replaces_value(self.predicate, self.obj, str(m.object),
                                       self.valid.content, dated=dated)]  # fmt: skip
            same += [m for m, f in self.slots_of(possible.entity_id, measures)
                     if f.outcome == "same" and not m.multi_valued]  # fmt: skip
            # A first name for a full name: for what a person is at work alone.
            found += [m for m in same if not person or _person_slot(self.predicate)
                      or _person_slot(str(m.predicate_normalized))]  # fmt: skip
        if len(found) != 1 or not may_replace(self.who, found[0]):
            return []
        return found

    def told_replaced(
        self, flags: Sequence[FactsPossiblyConflicting], measures: Measures
    ) -> Memory | None:
        """The one fact a change told in words as news surely replaces though its name is
        another (``the data warehouse | migrated to | Snowflake`` beside ``warehouse | is |
        Redshift``): every flag of the new fact names that one fact alone, of a subject
        possibly the same by its words (not by an embedding alone), in the same relation or
        a slot the slot rules match (:meth:`slots_of`, not the fallback for news), and the
        fact is single-valued and the store may replace it. The agent said the value
        changed, and there is one value it changed from. None otherwise (flagged: the
        agent's call). Not for the subject's own facts: a change told of a name already
        holding facts of other relations (``backend | upgraded to | Django 5.0`` beside
        ``backend | python version | 3.11``) may be of any of them; nor across a name that is
        the other's and more, or two parts of one thing (:func:`_extends`, :func:`ferrex.rules.
        subjects.parts_of_one`): a part's change is its own."""
        if not self.worded:
            return None
        named = {o for f in flags for o in f.others}
        by_words = {p.entity_id for p in self.subject.possible if p.reason != "embedding"}
        if len(named) != 1 or any(f.reason not in (RELATION, "head word", "name")
                                  or f.other_entity_id not in by_words for f in flags):  # fmt: skip
            return None
        old = self.view.memory(named.pop())
        if old is None or old.multi_valued or not may_replace(self.who, old):
            return None
        # A name the other's words begin, and more (``Kafka`` / ``Kafka Connect``, ``billing
        # api`` / ``billing api client``), or two parts of one thing, names a part of it.
        theirs = [words for f in flags for words in self.names_of(f.other_entity_id)]
        mine = name_words(self.mine[0])
        if any(_extends(mine, name_words(words)) or parts_of_one(self.mine[0], words)
               or _set_apart(mine, name_words(words)) for words in theirs):  # fmt: skip
            return None
        if self.one_relation(old):
            return old
        slotted = {m.memory_id for f in flags for m, _ in self.slots_of(f.other_entity_id,
                                                                         measures)}  # fmt: skip
        return old if old.memory_id in slotted else None

    def many_values(self, entity_id: str) -> bool:
        """Whether the entity's relation of the new fact holds a current value kept beside
        others (multi-valued): the relation holds many, and a value told as news of a
        subject only possibly the same replaces none of them surely."""
        if entity_id not in self.many:
            keys = sorted(self.spelt.get(entity_id, ()))
            self.many[entity_id] = any(
                m.multi_valued and is_current(m) and self.who.sees(m) and self.one_relation(m)
                for m in facts_of(self.view, self.who, keys)
            )
        return self.many[entity_id]

    def one_more(self, entity_id: str, same: Sequence[Memory]) -> bool:
        """Whether the new fact is one value more of a relation of many of an entity
        possibly its subject: the relation holds values kept beside each other there
        (:meth:`many_values`), the new fact words it as they do (``hosted on`` for
        ``hosted on``) and tells no change in words (a start alone is when the one more
        began). Whether the two names are one thing or two, it then conflicts with none."""
        wording = as_worded(str(self.valid.predicate))
        return (
            self.many_values(entity_id)
            and not self.worded
            and all(as_worded(str(m.predicate)) == wording for m in same)
        )

    def one_relation(self, m: Memory) -> bool:
        """Whether a fact of another subject is of the new fact's relation: its predicate, or
        one spelled alike (:func:`ferrex.rules.predicates.spelled_alike`: ``mem limit`` /
        ``memory limit``). A subject's own predicates are placed so when stored; another
        subject's are not its known ones."""
        return one_relation(self.predicate, str(m.predicate_normalized))

    def person(self, entity_id: str) -> bool:
        """Whether the subject and one of the entity's spellings are a person's first name
        and full name (:func:`ferrex.rules.subjects_apart.first_name_of`), and no other full
        name known here begins with that first name (``Dana`` beside ``Dana Whitfield`` is
        not ``Dana Kim``'s)."""
        keys = [k for k in sorted(self.spelt.get(entity_id, ()))
                if first_name_of(str(self.valid.subject), k.split())]  # fmt: skip
        if not keys:
            return False
        full = {*self.subject.keys, *(k for k in keys if len(k.split()) > 1)}
        first = keys[0].split()[0]  # the first name, one word of both (first_name_of)
        scope = self.who.scope  # another agent's private names change nothing here
        return not any(
            in_scope(scope, s.agent_id, s.viewers)
            and s.normalized.split()[:1] == [first]
            and len(s.normalized.split()) > 1
            and s.normalized not in full
            for s in self.view.spellings(self.who.namespace)
        )

    def close(self, entity_id: str) -> bool:
        """Whether one of the entity's spellings is a close name of the subject; a name and
        its part (``Kafka`` / ``Kafka cluster``) only for a fact told as news, and never two
        parts of one thing (:func:`ferrex.rules.subjects.parts_of_one`: ``orders service`` /
        ``orders service worker``)."""
        return any(close_names(self.mine[0], words, parts=self.told, named=self.named)
                   and not parts_of_one(self.mine[0], words)
                   for words in self.names_of(entity_id))  # fmt: skip

    def names_of(self, entity_id: str) -> list[list[str]]:
        """The entity's spellings weighed, each spelled out (short forms in full), in the
        order of their normalized forms."""
        return [spelled_out(key, self.abbreviations)
                for key in sorted(self.spelt.get(entity_id, ()))]  # fmt: skip

    def standing(self, entity_id: str) -> list[Memory]:
        """The entity's active single-valued facts the caller sees, with an object; for a
        fact told in words as a change (``moved to``), its values kept beside others too
        (``product images | stored in | s3://media``): a change said so may end one."""
        if entity_id not in self.read:
            keys = sorted(self.spelt.get(entity_id, ()))
            who, now = self.who, self.now.timestamp()
            self.read[entity_id] = [
                m
                for m in facts_of(self.view, who, keys)
                if is_current(m)
                and who.sees(m)
                and (self.worded or not m.multi_valued)
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
        return flag_of(self.memory_id, self.who, others, self.entity_id, other_entity_id,
                     reason, score)  # fmt: skip

    def possible_flags(self, measures: Measures) -> list[FactsPossiblyConflicting]:
        """The flags against each entity the subject is possibly the same as."""
        out: list[FactsPossiblyConflicting] = []
        for possible in self.subject.possible:
            current = self.current_of(possible.entity_id)
            same = [m for m in current if self.one_relation(m)]
            # One value more of a relation of many, on either name: no conflict.
            more = bool(same) and self.one_more(possible.entity_id, same)
            slots = self.slots_of(possible.entity_id, measures)
            matched = {m.memory_id for m, _ in slots}
            matched |= {m.memory_id for m in current if m not in same and self.moved(m)}
            if not matched:
                matched = {m.memory_id for m in self.news_of(current) if m not in same}
            # Two flags: one of the same relation (gone once the subjects are one entity, a
            # contradiction proper then) and one of relations possibly the same (kept).
            for others, reason in (([] if more else [m.memory_id for m in same], possible.reason),
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
                and any(news_alike(self.mine[0], words) for words in self.names_of(entity_id))
            ):
                others, reason = sorted(m.memory_id for m in self.news_of(current)), NEWS
            if others:
                out.append(self.flag(others, entity_id, reason))
        return out

    def worded_news_flags(self) -> list[FactsPossiblyConflicting]:
        """A fact of a subject named for the first time, told in words as news of a change
        (``now deployed to``, ``raised to``, a note ``moved off Netlify``), that found nothing
        else: the one fact of the entities sharing a word with it whose slot it may fill
        (:func:`_news_slots`) is flagged; none when there are several to choose from."""
        if not self.fresh or not self.worded:
            return []
        found = [
            (entity_id, m)
            for entity_id in self.subject.related
            for m in _news_slots(self.predicate, self.obj, self.current_of(entity_id))
        ]
        if len(found) != 1:
            return []
        entity_id, m = found[0]
        return [self.flag([m.memory_id], entity_id, NEWS)]

    def noted_flags(self, measures: Measures) -> list[FactsPossiblyConflicting]:
        """A fact of a subject named for the first time, told as news of a change (in words
        or by its start) with a note, that found nothing else: the one current fact of the
        namespace, of any subject, whose value the note names (:func:`ferrex.rules.
        value_changes.note_names`, not by a word of the new fact's own subject, relation or value:
        ``sessions | stored in | Postgres`` noted "dropped redis for sessions" beside
        ``session store | backed by | Redis 6``), of a kind that does not clash with the new
        value, a relation not apart from its and a phrase not far from its (the cosine of
        :data:`~ferrex.core.decide.slot_search.NEWS_FLOOR`: a note may name a value in
        passing), is flagged; none when the note names several. Of the fact sets' tuning
        halves and probes, no negative has a note naming one fact's value."""
        note = self.valid.content
        if not self.fresh or not self.told or not note:
            return []
        # Words of its own subject, relation or value name no other fact's value.
        besides = [*self.besides, *own_words(self.valid), *as_worded(str(self.valid.predicate))]
        words = _note_words(note, {w.casefold() for w in besides})
        now = self.now.timestamp()
        found = [m for m in self.view.facts_holding(self.who.namespace, words)
                 if is_current(m) and self.who.sees(m) and not expired(m.expires_at, now)
                 and m.object is not None and m.subject_key not in self.subject.keys
                 and not kinds_clash(self.obj, m.object)
                 and not relations_apart(self.predicate, str(m.predicate_normalized))
                 and note_names(note, m.object, besides=besides)]  # fmt: skip
        if len(found) != 1:
            return []
        theirs = fact_phrase(str(found[0].predicate_normalized), str(found[0].object))
        mine = fact_phrase(self.predicate, self.obj)
        if cosines_with(measures, mine, [theirs])[0] < NEWS_FLOOR:
            return []
        scope = self.who.scope
        owners = {s.entity_id for s in self.view.spellings(self.who.namespace)
                  if s.normalized == found[0].subject_key
                  and in_scope(scope, s.agent_id, s.viewers)}  # fmt: skip
        if len(owners) != 1:
            return []
        return [self.flag([found[0].memory_id], owners.pop(), NOTED)]

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
            if related and any(parts_of_one(self.mine[0], words)
                               for words in self.names_of(entity_id)):  # fmt: skip
                continue
            again = self.restating(entity_id, [*flagged, *out], related=related)
            if again:
                out.append(self.flag(again, entity_id, RESTATES))
        return out

    def restating(
        self, entity_id: str, flagged: Sequence[FactsPossiblyConflicting], *, related: bool
    ) -> list[str]:
        """The entity's facts under another predicate that state the new value in other
        words (:func:`ferrex.rules.restatements.restated`), not flagged already. For an entity
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


#: The reason of a possible conflict between a fact told as news of a change and the fact
#: of another subject whose value its note names (:meth:`Weighing.noted_flags`).
NOTED: Final = "noted"

#: The reason of a possible conflict between a fact told as news of a change
#: (:func:`ferrex.rules.value_changes.told_as_news`) and a fact of a subject that may be its own
#: (:func:`ferrex.rules.subjects.news_alike`).
NEWS: Final = "news"


def _note_words(note: str, skip: set[str]) -> tuple[str, ...]:
    """The words of a note a value it names may hold (:func:`ferrex.rules.value_changes.
    note_names`: four letters or more, not of ``skip``), casefolded; of a long note, the
    :data:`NOTE_WORDS` most like names: written with a capital or a digit, then the longest
    (each is one more pattern the namespace's facts are matched against)."""
    found: dict[str, bool] = {}
    for word in re.findall(r"[A-Za-z][A-Za-z0-9]+", note):
        low = word.casefold()
        if len(low) >= 4 and low not in skip:
            found[low] = found.get(low, False) or word != low or any(c.isdigit() for c in word)
    kept = sorted(found, key=lambda w: (not found[w], -len(w), w))[:NOTE_WORDS]
    return tuple(sorted(kept))


#: The most words of a note :meth:`Weighing.noted_flags` looks for in the namespace's values:
#: a change's note is a sentence; a long text's rarest-looking words are kept (at 10k facts,
#: 20 words take SQLite 14 ms, 214 words 111 ms).
NOTE_WORDS: Final = 12


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


def _extends(longer: Sequence[str], shorter: Sequence[str]) -> bool:
    """Whether a name is another's words and more after them, not all kind words naming
    the thing itself (:data:`ferrex.rules.subjects.COMPONENT_WORDS`, :data:`ferrex.rules.
    subjects_apart.THING_WORDS`: ``catalog sync job`` is the ``catalog sync``, ``grafana
    instance`` is ``Grafana``; ``Kafka Connect`` is a part of ``Kafka``)."""
    added = longer[len(shorter) :]
    return (len(longer) > len(shorter) and list(longer[: len(shorter)]) == list(shorter)
            and not all(w in COMPONENT_WORDS or w in THING_WORDS for w in added))  # fmt: skip


def _set_apart(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether the words one name adds to the other set it apart (:func:`ferrex.rules.
    subjects_apart.added_apart`: ``the api`` / ``the internal api``, another instance)."""
    shorter, longer = sorted((list(left), list(right)), key=len)
    added = [w for w in longer if w not in shorter]
    return bool(added) and added_apart(added, shorter, longer)


def _news_slots(predicate: str, obj: str, current: Sequence[Memory]) -> list[Memory]:
    """Of a subject's current facts, those a fact told as news may change (weighed without
    an embedding): the same relation; else those whose relation may be the same
    (:func:`ferrex.rules.slots.slot_candidate`) with an object of one kind or a predicate
    of one head word; else, on a subject known by that one fact alone, that fact when its
    relation may be the same."""
    same = [m for m in current if one_relation(predicate, str(m.predicate_normalized))]
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


def _person_slot(predicate: str) -> bool:
    return any(w in PERSON_SLOT_WORDS for w in predicate.split("_"))


def _capitalised(name: str) -> list[str]:
    """The words of a name written with a capital letter anywhere, casefolded."""
    return [w.casefold() for w in name.split() if any(c.isupper() for c in w)]
