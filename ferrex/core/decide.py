"""The decisions of the write side, as pure functions.

Each ``decide_*`` function takes a validated request, a :class:`~ferrex.core.view.View` of
the committed state (plus what is pending in the batch), the time and an id generator, and
returns a :class:`Decision`: the events to append and the answer to give. It reads no clock,
draws no id, runs no SQL, asks no Qdrant and embeds nothing; so every rule here is
unit-tested with a small in-memory view.

What a store's rules need measured (cosines of names, objects and predicate phrases; the
nearest memories by dense vector) they ask of a :class:`Measures` they are given, at the
moment they need it: the writer answers (and remembers each answer), a test answers from
a table. The command runner (:mod:`ferrex.core.runner`) runs them: decide (measuring as
asked) → append → apply.

The rules of a store, in order:

1. **Entities** are resolved against the spellings the memory's scope may use (shared
   spellings, and the agent's own for its private memory; see :mod:`ferrex.rules.visibility`)
   by :func:`ferrex.rules.entities.resolve_entity`; a new name makes a new entity, a fuzzy or
   embedding match records the new spelling as an alias. Both carry the scope. A fact's
   **subject** is resolved first, the same way but by :func:`ferrex.rules.subjects.
   resolve_subject` (abbreviations spelled out, siblings kept apart, a head word dropped
   only *possibly* the same), and is the first of the memory's entities.
2. **Explicit supersede** (``supersedes``): the memory must exist, be visible, be in the
   same namespace and still be valid.
3. **Facts** (semantic): the predicate is normalized (:mod:`ferrex.rules.predicates`),
   matched against the subject's known predicates (typos only). The subject's current
   single-valued facts under *other* predicates are weighed by :mod:`ferrex.rules.slots`
   (object kinds, head words, sibling predicates, the cosine of the two facts' phrases):
   a sure match is replaced like a fact of the same relation; a possible one is left
   standing and flagged (``facts.possible_conflict``, reason ``relation``), and the answer
   names it (``possible_conflict_with``) with the one line that settles it (``confirm``
   with ``supersedes`` or ``differs_from``: :func:`decide_settle`). A plainly plural
   fact (:func:`ferrex.rules.slots.plural_fact`, or two objects each scoped to its own
   purpose) is stored as multi-valued; the answer names the values it was kept beside
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
4. **Procedures**: the next version of the name; the current version is superseded.
5. **Dedup**: a memory of the same namespace and type whose text is a near copy (dense
   cosine at or above ``dedup_threshold``, or the same words up to case, spacing and
   punctuation among the neighbours the dedup check reads, and no difference of meaning found by
   :func:`ferrex.rules.dedup.meaning_difference`: identifiers, quantities, dates, negation,
   opposite words, names, the order of named things) refuses the store as ``duplicate``.
   An episodic memory that is another *event* is no duplicate (:func:`another_event`): the
   same words with an explicitly given event time (``valid_from``) or a ``source`` that
   differs from the old memory's, or another line of an import (both carry an
   ``import_key`` and the keys differ). A retried plain store is still a duplicate, and so
   is a reworded report of the same event with its own time. A
   memory kept beside a near copy says so in its answer (``similar``: the id, the
   similarity and why it was kept), and so does one merely close to another (at or above
   ``near_threshold``), so the agent can supersede it. An import line whose
   ``import_key`` (its place and text) already stored a memory is refused as ``duplicate``
   with ``imported`` in its details, before any other rule: importing a file twice stores
   nothing new. So is one whose ``former_import_keys`` (a key's older form) stored a memory
   with the same ``context``. When that memory's text is not the line's (a message edited
   under its id), ``changed`` is in the details too: the import reports it and stores
   nothing, so no item silently becomes two memories.
6. **Citations**: ``source = "memory:<id>"`` validates that memory if the caller may see it
   (an invisible id behaves exactly like a nonexistent one).
7. **Derived episodes** (:func:`episode_of`): an episodic memory stored without a
   ``source`` joins the episode of the same agent's previous such store in the same
   namespace and visibility when that store is at most ``StoreSettings.episode_gap``
   seconds old (or decided in the same batch: an import's lines, in file order), and
   starts a new episode otherwise. Only a text that looks like a conversation turn
   (:func:`looks_like_turn`: at most half of ``StoreSettings.episode_max_chars``, or at
   most all of it when it opens with a speaker's label, ``"Sam: ..."``) joins one; any
   other is a document and stands alone (no episode), so a corpus imported in one go does
   not lend scores across unrelated documents. Recall's episode context treats
   an episode like a source. Private and shared stores chain separately, so a private
   store never changes the episodes others see.

8. **Marks** (:mod:`ferrex.rules.lifecycle`): a store whose importance, pin or ttl is not
   the default appends ``memory.marked`` after its ``memory.stored`` (the ttl becomes an
   absolute ``expires_at`` from ``now``); a fact repeated with a pin or an importance
   marks the fact it repeats. A pinned fact is never replaced by a conflict: the store is
   refused as ``conflict_ambiguous`` naming it, and an explicit ``supersedes`` still
   replaces it. :func:`decide_mark` changes marks later; :func:`decide_expiry` forgets
   what has expired (reason ``expired``). Until then an expired memory is already gone
   for the decisions: no duplicate of it, no conflict with it, no supersede or validation
   of it.

Another agent's private memories take no part in any of this, and a private memory changes
nothing another agent sees (:func:`ferrex.rules.visibility.may_change`): it supersedes,
versions and re-validates only its own agent's private memories. It still *reads* shared
ones: a private fact that repeats a shared one is answered as a duplicate, one that
disagrees is stored beside it (the agent's recall then flags the contradiction).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from dataclasses import replace as replaced
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Generic, Literal, Protocol, TypeVar

from ferrex.errors import (
    AlreadySuperseded,
    ConflictAmbiguous,
    Duplicate,
    NotFound,
    Refused,
    UsageError,
)
from ferrex.ids import plausible_id
from ferrex.rules.assess import assess, eviction_candidate, text_bytes
from ferrex.rules.consolidation import Source, Unit, summarize
from ferrex.rules.dedup import (
    classify_object_change,
    meaning_difference,
    near_copy,
    same_text,
)
from ferrex.rules.entities import Candidate, Resolution, normalize_entity, resolve_entity
from ferrex.rules.eviction import eviction_plan
from ferrex.rules.freshness import StalenessParams
from ferrex.rules.fusion import opens_with_speaker
from ferrex.rules.lifecycle import (
    DEFAULT_IMPORTANCE,
    check_importance,
    check_pinned,
    expired,
    marks_doc,
)
from ferrex.rules.memory_input import ValidStore, is_request_key
from ferrex.rules.name_lookup import find_entity
from ferrex.rules.predicates import (
    match_known,
    normalize_predicate,
)
from ferrex.rules.short_forms import spelled_out
from ferrex.rules.slots import (
    SlotMatch,
    content_words,
    fact_phrase,
    kinds_clash,
    one_kind,
    plural_fact,
    same_head,
    scoped_apart,
    slot_candidate,
    slot_match,
    value_fallback,
    value_predicate,
    versions_of_one,
)
from ferrex.rules.subjects import (
    Possible,
    objects_agree,
    resolve_subject,
    same_slot_words,
)
from ferrex.rules.visibility import (
    Mention,
    after_forget,
    all_readers_see,
    in_scope,
    may_change,
    scope_of,
    sees,
    sees_scope,
)
from ferrex.times import rfc3339
from journal import (
    Access,
    EntitiesDiffer,
    EntitiesMerged,
    EntityAliasAdded,
    EntityCreated,
    EntitySplit,
    Event,
    FactsDiffer,
    FactsPossiblyConflicting,
    Fold,
    KeptEntity,
    MemoriesAccessed,
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesUnfolded,
    MemoriesValidated,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
    Relink,
)
from journal.events import AliasMatch, EpisodeRef, SupersedeReason, ValidationSource, Visibility
from projections.documents import memory_text, subject_key
from projections.rows import RELATION, Memory, Spelling

from .settings import StoreSettings
from .view import EpisodeTail, View

NewId = Callable[[str], str]
"""Draws a new id with the given prefix (``mem``, ``ent``)."""

R = TypeVar("R")


@dataclass(frozen=True)
class ResolvedEntity:
    name: str
    entity_id: str
    match: str
    """exact, normalized, fuzzy, embedding, or new."""
    score: float
    matched: str | None
    """The known spelling it matched, if any."""


@dataclass(frozen=True)
class SimilarMemory:
    """A memory the new one is close to, named in the store's answer."""

    id: str
    similarity: float
    kept_because: str | None = None
    """Set when the similarity reached the duplicate threshold: why it is no duplicate."""

    def as_dict(self) -> dict[str, Any]:
        if self.kept_because is not None:
            note = (
                f"near-identical to {self.id} but kept: {self.kept_because}; if it replaces "
                f"that memory, forget it or store with supersedes={self.id}"
            )
        else:
            note = (
                f"similar to {self.id}; if it replaces that memory, store with "
                f"supersedes={self.id} (or forget the older one)"
            )
        return {
            "id": self.id,
            "similarity": round(self.similarity, 4),
            **({"kept_because": self.kept_because} if self.kept_because is not None else {}),
            "note": note,
        }


StoreStatus = Literal["stored", "stored_as_history", "duplicate"]
"""What became of a store (see :class:`StoreResult`)."""
NEW_MEMORY: frozenset[str] = frozenset({"stored", "stored_as_history"})
"""The statuses of a store that wrote a new memory (the rest: ``duplicate``)."""


@dataclass(frozen=True)
class Flagged:
    """A current fact a store kept beside the new one, flagged as a possible conflict."""

    id: str
    fact: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "fact": self.fact, "reason": self.reason}


def _flag_note(new: str, flagged: Sequence[Flagged]) -> str:
    """The one line that tells the agent how to settle the first flagged fact."""
    if not flagged:
        return ""
    first = flagged[0]
    more = f" (and {len(flagged) - 1} more)" if len(flagged) > 1 else ""
    also = "" if first.reason == RELATION else " (or `ferrex entity merge`/`differ`)"
    return (
        f"may replace {first.id} ({first.fact}){more}: if it does, confirm ids=[{new}] "
        f"supersedes={first.id}; if both hold, confirm ids=[{new}] differs_from={first.id}"
        f"{also}"
    )


def _plural_note(new: str, beside: Sequence[Flagged]) -> str:
    """The one line for a value kept beside others of a plainly plural relation: which, and
    how to say it replaces one instead."""
    if not beside:
        return (
            "stored as one value of a relation of many values (multi_valued); a later value "
            "is kept beside it"
        )
    first = beside[0]
    more = f" (and {len(beside) - 1} more)" if len(beside) > 1 else ""
    return (
        f"kept beside {first.id} ({first.fact}){more} as one more value of a relation of many "
        f"values; if it replaces it, confirm ids=[{new}] supersedes={first.id}"
    )


def _replaced_note(replaced: Sequence[Flagged]) -> str:
    """The one line that names a fact replaced as the new value of its slot, and how to keep
    both when both hold."""
    first = replaced[0]
    more = f" (and {len(replaced) - 1} more)" if len(replaced) > 1 else ""
    return (
        f"replaced {first.id} ({first.fact}){more}; if both hold, store that value again "
        "with multi_valued=true"
    )


@dataclass(frozen=True)
class StoreResult:
    status: StoreStatus
    """``stored_as_history``: stored, but already ended by a fact of its relation that began
    later (``superseded_by``; ``history_reason`` says why), so recall answers that one and
    ``as_of`` before it answers this one."""
    id: str
    """The new memory, or for a repeated fact the existing one (re-validated)."""
    type: str
    namespace: str
    entities: tuple[ResolvedEntity, ...]
    superseded: tuple[str, ...]
    validated: tuple[str, ...]
    position: int = 0
    version: int | None = None
    superseded_by: str | None = None
    """Set when a back-dated fact arrived after a newer one: it is kept as history, ended by
    this memory."""
    history_reason: str | None = None
    """Why a fact was stored as history: which memory is current, and since when."""
    replaced_multi_valued: tuple[str, ...] = ()
    """Multi-valued facts of the same relation this single-valued fact replaced: a fact
    stored without ``multi_valued`` states the one current value."""
    multi_valued: bool = False
    importance: float = DEFAULT_IMPORTANCE
    pinned: bool = False
    expires_at: datetime | float | None = None
    possible_conflict: tuple[str, ...] = ()
    """Active facts that may fill the same slot with another object (the same relation on
    a subject possibly the same, or a relation possibly the same on this subject): both are
    kept and flagged."""
    flagged: tuple[Flagged, ...] = ()
    """``possible_conflict`` named: each fact's text and why it was flagged."""
    plural: bool = False
    """Stored beside the relation's other values because the relation is plainly plural."""
    kept_beside: tuple[Flagged, ...] = ()
    """With ``plural``: the relation's current values it was stored beside, named."""
    replaced: tuple[Flagged, ...] = ()
    """The facts this one replaced as the new value of their slot, named."""
    similar: SimilarMemory | None = None
    """A near copy it was kept beside, or a close memory it may replace."""
    warnings: tuple[str, ...] = ()
    redacted: tuple[dict[str, Any], ...] = ()
    """The likely secrets replaced by markers before it was stored (field, kind, at)."""

    @property
    def stored(self) -> bool:
        """Whether a new memory was written (:data:`NEW_MEMORY`)."""
        return self.status in NEW_MEMORY

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "id": self.id,
            "type": self.type,
            "namespace": self.namespace,
            "entities": [e.__dict__ for e in self.entities],
            "superseded": list(self.superseded),
            "validated": list(self.validated),
            "position": self.position,
            **({"version": self.version} if self.version is not None else {}),
            **({"superseded_by": self.superseded_by} if self.superseded_by else {}),
            **({"history_reason": self.history_reason} if self.history_reason else {}),
            **({"multi_valued": True} if self.multi_valued else {}),
            **marks_doc(self.importance, self.pinned, self.expires_at),
            **(
                {
                    "replaced_multi_valued": list(self.replaced_multi_valued),
                    "note": f"replaced {len(self.replaced_multi_valued)} multi-valued fact(s) "
                    "of this relation; store with multi_valued=true to add a value instead",
                }
                if self.replaced_multi_valued
                else {}
            ),
            **(
                {
                    "possible_conflict": list(self.possible_conflict),
                    "possible_conflict_with": [f.as_dict() for f in self.flagged],
                    "possible_conflict_note": _flag_note(self.id, self.flagged),
                }
                if self.possible_conflict
                else {}
            ),
            **({"replaced_note": _replaced_note(self.replaced)} if self.replaced else {}),
            **(
                {
                    **(
                        {"kept_beside": [f.as_dict() for f in self.kept_beside]}
                        if self.kept_beside
                        else {}
                    ),
                    "plural_note": _plural_note(self.id, self.kept_beside),
                }
                if self.plural
                else {}
            ),
            **({"similar": self.similar.as_dict()} if self.similar is not None else {}),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
            **({"redacted": [dict(r) for r in self.redacted]} if self.redacted else {}),
        }


@dataclass(frozen=True)
class ForgetResult:
    forgotten: tuple[str, ...]
    not_found: tuple[str, ...]
    dropped_entities: tuple[str, ...]
    position: int | None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return _answer(self)


@dataclass(frozen=True)
class ValidateResult:
    validated: tuple[str, ...]
    not_found: tuple[str, ...]
    position: int | None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return _answer(self)


@dataclass(frozen=True)
class MarkResult:
    marked: tuple[str, ...]
    not_found: tuple[str, ...]
    position: int | None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return _answer(self)


def _answer(result: ForgetResult | ValidateResult | MarkResult | EntityResult) -> dict[str, Any]:
    """A result as the tools answer it: every field, lists for tuples, warnings only when
    there are some."""
    doc: dict[str, Any] = {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in vars(result).items()
        if name != "warnings"
    }
    if result.warnings:
        doc["warnings"] = list(result.warnings)
    return doc


@dataclass(frozen=True)
class Decision(Generic[R]):
    """The events one command appends (none: nothing to write) and its answer, whose
    ``position`` and ``warnings`` the runner fills in once the record is appended."""

    events: tuple[Event, ...]
    result: R


class Measures(Protocol):
    """What a store's decision asks its caller to measure, at the moment it needs it:
    cosines of short texts (entity names, objects, predicate phrases) and the nearest
    memories by dense vector. Injected like the clock and the ids, so the decision stays
    pure: the writer answers with the embedding model and Qdrant and remembers each answer
    (:class:`ferrex.write.measures.StoreMeasures`); a unit test answers from a table."""

    def cosines(self, pairs: Sequence[tuple[str, str]]) -> Sequence[float]:
        """The cosine similarity of each pair of texts, in the order given."""
        ...

    def neighbours(self) -> Sequence[tuple[str, float]]:
        """(memory id, dense cosine to the new memory's text) for the nearest memories of
        its namespace and type, committed or pending in the batch, in any order."""
        ...


def _scores(measures: Measures, text: str, others: Sequence[str]) -> list[float]:
    """The cosine of ``text`` with each of ``others``; a text is 1 with itself, unasked."""
    asked = [(text, other) for other in others if other != text]
    answers = iter(measures.cosines(asked) if asked else ())
    return [1.0 if other == text else next(answers) for other in others]


def _name_scores(measures: Measures) -> Callable[[str, Sequence[Candidate]], list[float]]:
    """The entity rules' embedding tier, answered by ``measures``."""
    return lambda name, candidates: _scores(measures, name, [c.name for c in candidates])


# -- store -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Who:
    namespace: str
    agent_id: str | None
    visibility: Literal["private", "shared"]

    @property
    def scope(self) -> str | None:
        return scope_of(self.agent_id, self.visibility)

    def sees(self, memory: Memory) -> bool:
        return sees(self.agent_id, memory.agent_id, memory.visibility)

    def may_change(self, memory: Memory) -> bool:
        return may_change(self.agent_id, self.visibility, memory.agent_id, memory.visibility)

    def all_readers_see(self, memory: Memory) -> bool:
        """Whether everyone who will see the new memory sees ``memory`` too."""
        return all_readers_see(self.agent_id, self.visibility, memory.agent_id, memory.visibility)


def _who(valid: ValidStore, settings: StoreSettings) -> _Who:
    # The request carries its caller's identity (None: the operator), never this process's.
    agent_id = valid.agent_id
    # An agent's own memories are private unless it shares them.
    visibility = valid.visibility or ("private" if agent_id else "shared")
    return _Who(valid.namespace or settings.default_namespace, agent_id, visibility)


def _candidates(view: View, who: _Who) -> list[Candidate]:
    scope = who.scope  # once: a namespace may hold tens of thousands of spellings
    return [
        Candidate(s.entity_id, s.alias, s.normalized)
        for s in view.spellings(who.namespace)
        if in_scope(scope, s.agent_id, s.viewers)
    ]


@dataclass(frozen=True)
class _Subject:
    """A fact's subject as resolved: its entity, the normalized spellings of that entity
    the store may use (the subject keys its facts are stored under), and the entities it is
    possibly the same as."""

    entity: ResolvedEntity | None
    keys: tuple[str, ...]
    possible: tuple[Possible, ...] = ()
    related: tuple[str, ...] = ()


def _subject_keys(view: View, who: _Who, name: str, entity_id: str | None) -> tuple[str, ...]:
    keys = {subject_key(name)}
    if entity_id is not None:
        scope = who.scope
        keys |= {
            s.normalized
            for s in view.spellings(who.namespace)
            if s.entity_id == entity_id and in_scope(scope, s.agent_id, s.viewers)
        }
    return tuple(sorted(k for k in keys if k))


def _facts_of(view: View, who: _Who, keys: Sequence[str]) -> list[Memory]:
    found = {m.memory_id: m for key in keys for m in view.subject_facts(who.namespace, key)}
    return [found[k] for k in sorted(found)]


def normalized_predicate(
    valid: ValidStore, view: View, who: _Who, settings: StoreSettings, keys: Sequence[str] = ()
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


def _same_relation(view: View, who: _Who, keys: Sequence[str], predicate: str) -> list[Memory]:
    found = {
        m.memory_id: m
        for key in keys
        for m in view.active_facts(who.namespace, key, predicate)
        if m.object and who.sees(m)
    }
    return [found[k] for k in sorted(found)]


def _other_relations(view: View, who: _Who, keys: Sequence[str], predicate: str) -> list[Memory]:
    """The subject's active single-valued facts the caller sees under other predicates."""
    return [
        m
        for m in _facts_of(view, who, keys)
        if m.t_invalid is None
        and not m.multi_valued
        and m.predicate_normalized
        and m.predicate_normalized != predicate
        and who.sees(m)
    ]


def _other_slots(
    valid: ValidStore,
    view: View,
    who: _Who,
    keys: Sequence[str],
    predicate: str,
    measures: Measures,
    now: datetime,
) -> list[tuple[Memory, SlotMatch]]:
    """The subject's current single-valued facts under other predicates that the new fact
    may fill the slot of (:func:`ferrex.rules.slots.slot_match`: object kinds, head words,
    the cosine of the two facts' phrases), each with how sure that is."""
    assert valid.object is not None
    return _slot_matches(valid.object, predicate, [
        m for m in _other_relations(view, who, keys, predicate)
        if m.object and not expired(m.expires_at, now.timestamp())
    ], measures)  # fmt: skip


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
    scores = _scores(measures, mine, theirs)
    for m, score in zip(allowed, scores, strict=True):
        match = slot_match(predicate, obj, str(m.predicate_normalized), str(m.object), score)
        if match is not None:
            found.append((m, match))
    best = None if found else value_fallback(predicate, scores)
    if best is not None:
        found.append((allowed[best], SlotMatch("possible", "the closest slot to a bare value",
                                               scores[best])))  # fmt: skip
    return found


def _may_replace(who: _Who, old: Memory) -> bool:
    """Whether a fact found to fill the same slot is replaced, not flagged: only one the
    store may change and that is not pinned (a pinned fact yields to ``supersedes`` only)."""
    return who.may_change(old) and not old.pinned


@dataclass(frozen=True)
class _Named:
    """The entities a store names, resolved (a fact's subject first), and the events that
    make the new ones or record new spellings as aliases."""

    entities: tuple[ResolvedEntity, ...]
    subject: _Subject
    events: tuple[Event, ...]


@dataclass(frozen=True)
class _Supersede:
    """An explicit ``supersedes``, checked: the memory it ends (``ended``; the new memory is
    then validated), or, when some of the new memory's readers may not see that memory (a
    shared memory replacing its author's private one), the one ended beside a store decided
    as a plain one (``crossing``), so those readers see a plain memory."""

    asked: str | None = None
    ended: str | None = None
    crossing: Memory | None = None


@dataclass(frozen=True)
class _FactPlan:
    """What a fact's rules decided beside storing it: the facts it replaces, a newer fact
    that ends it at once (back-dated history), and possible conflicts to flag."""

    body: MemoryBody
    superseded: tuple[str, ...] = ()
    replaced_multi: tuple[str, ...] = ()
    successor: Memory | None = None
    possible: tuple[FactsPossiblyConflicting, ...] = ()


@dataclass(frozen=True)
class _Versions:
    """A procedure's version number and the current versions it ends."""

    version: int | None = None
    current: tuple[str, ...] = ()


def decide_store(
    valid: ValidStore,
    view: View,
    measures: Measures,
    *,
    now: datetime,
    new_id: NewId,
    settings: StoreSettings,
    multi_valued: bool = False,
) -> Decision[StoreResult]:
    """The events and answer for one store (see the module docstring). Raises a
    :class:`FerrexError` (nothing to write) when the rules refuse it. ``measures`` is asked
    only for what the rules reach."""
    who = _who(valid, settings)
    if valid.import_key is not None:
        _refuse_imported(valid, valid.import_key, view, who)
    # A second value of a plainly plural relation (members, speaks) is one more value, not
    # a replacement: kept beside the others, and the answer says so.
    plural = (valid.type == "semantic" and not multi_valued and valid.supersedes is None
              and valid.predicate is not None
              and plural_fact(valid.subject or "", valid.predicate,
                              valid.object or ""))  # fmt: skip
    memory_id = new_id("mem")
    named = _name_entities(valid, view, who, measures, settings, new_id)
    # Two values each scoped to its own purpose (``PlayFab for economy`` / ``EOS for
    # lobbies``) both hold: one more value too.
    if plural and _a_current_value(valid, view, who, named, settings, versions_of_one):
        plural = False  # react 18 → react 19: one thing at another version, a change
    scoped = (not plural and valid.type == "semantic" and not multi_valued
              and valid.supersedes is None and " for " in (valid.object or "")
              and _a_current_value(valid, view, who, named, settings, scoped_apart))  # fmt: skip
    plural = plural or scoped
    multi_valued = multi_valued or plural
    supersede = _Supersede()
    if valid.supersedes is not None:
        supersede = _explicit(valid.supersedes, view, who, now)
        if supersede.crossing is not None:  # decided as a plain store, the old one ended
            valid = replaced(valid, supersedes=None)
    fact = _FactPlan(_body(valid))
    if valid.type == "semantic":
        planned = _plan_fact(valid, view, who, named.subject, measures, settings,
                             now=now, memory_id=memory_id, multi_valued=multi_valued,
                             crossing=supersede.crossing)  # fmt: skip
        if isinstance(planned, Memory):  # the same fact again: confirm it
            return _repeated_fact(valid, planned, named, who, now)
        fact = planned
    versions = _plan_procedure(valid, view, who)
    close: SimilarMemory | None = None
    if valid.supersedes is None:
        # The fact a late report of history is ended by is named by its answer already.
        skip = {
            *fact.superseded,
            *versions.current,
            *([fact.successor.memory_id] if fact.successor is not None else []),
        }
        if supersede.crossing is not None:
            skip.add(supersede.crossing.memory_id)
        text = memory_text(valid.type, fact.body)
        close = _refuse_duplicates(valid, text, view, who, measures, skip, settings, now)
    beside: list[Memory] = []
    if plural and named.subject.entity is not None:
        beside, fact = _plural_beside(valid, view, who, named.subject, fact, memory_id,
                                      flag=not scoped)  # fmt: skip
    episode = _plan_episode(valid, view, who, memory_id, now, settings)
    decided = _stored(valid, view, who, memory_id, now, named, supersede, fact, versions,
                      episode, close, multi_valued=multi_valued)  # fmt: skip
    if not plural:
        return decided
    kept = _named(view, [m.memory_id for m in beside], "plural")
    return Decision(decided.events, replaced(decided.result, plural=True, kept_beside=kept))


def _a_current_value(
    valid: ValidStore,
    view: View,
    who: _Who,
    named: _Named,
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


def _plural_beside(
    valid: ValidStore,
    view: View,
    who: _Who,
    subject: _Subject,
    fact: _FactPlan,
    memory_id: str,
    *,
    flag: bool,
) -> tuple[list[Memory], _FactPlan]:
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


def _name_entities(
    valid: ValidStore,
    view: View,
    who: _Who,
    measures: Measures,
    settings: StoreSettings,
    new_id: NewId,
) -> _Named:
    """Resolve a fact's subject, then every name of ``entities``; a later name is compared
    with the spellings the earlier ones added too."""
    known = _candidates(view, who)
    events: list[Event] = []
    subject = _Subject(None, ())
    if valid.type == "semantic" and valid.subject is not None:
        subject, made = _resolve_subject(valid.subject, view, who, known, measures, settings,
                                         new_id)  # fmt: skip
        events += [made] if made is not None else []
    entities = [subject.entity] if subject.entity is not None else []
    for name in valid.entities:
        candidates = [*known, *_spelled(events)]
        found = resolve_entity(
            name,
            candidates,
            fuzzy_threshold=settings.entity_fuzzy,
            embedding_threshold=settings.entity_embedding,
            embedding_scores=_name_scores(measures),
        )
        normalized = normalize_entity(name)
        spelled = found.kind not in ("fuzzy", "embedding") or any(
            c.normalized == normalized for c in candidates
        )
        entity, made = _entity_or_spelling(
            name, found, None if spelled else _alias_match(found), who, new_id
        )
        entities.append(entity)
        events += [made] if made is not None else []
    return _Named(tuple(entities), subject, tuple(events))


def _spelled(events: Sequence[Event]) -> list[Candidate]:
    """The entities and spellings ``events`` add, as candidates for a later name."""
    return [
        Candidate(e.entity_id, e.name if isinstance(e, EntityCreated) else e.alias, e.normalized)
        for e in events
        if isinstance(e, EntityCreated | EntityAliasAdded)
    ]


def _entity_or_spelling(
    name: str, found: Resolution, alias: AliasMatch | None, who: _Who, new_id: NewId
) -> tuple[ResolvedEntity, Event | None]:
    """The entity ``name`` resolved to, with the event it takes: a name that resolved to
    nothing makes a new entity; one that resolved with ``alias`` (how it matched) records
    the spelling as an alias of its entity; a spelling already known takes none. Both events
    carry the store's scope."""
    normalized = normalize_entity(name)
    if found.entity_id is None:
        entity_id = new_id("ent")
        made = EntityCreated(entity_id=entity_id, namespace=who.namespace, name=name,
                             normalized=normalized, agent_id=who.scope)  # fmt: skip
        return ResolvedEntity(name, entity_id, "new", 1.0, None), made
    entity = ResolvedEntity(name, found.entity_id, found.kind, found.score, found.matched)
    if alias is None:
        return entity, None
    added = EntityAliasAdded(entity_id=found.entity_id, namespace=who.namespace, alias=name,
                             normalized=normalized, match=alias, score=round(found.score, 6),
                             agent_id=who.scope)  # fmt: skip
    return entity, added


def _explicit(memory_id: str, view: View, who: _Who, now: datetime) -> _Supersede:
    """``supersedes`` checked (:func:`_supersedable`: refused when it may not be ended)."""
    old = _supersedable(memory_id, who.namespace, view, who, now)
    if who.all_readers_see(old):
        return _Supersede(memory_id, ended=old.memory_id)
    return _Supersede(memory_id, crossing=old)


def _plan_fact(
    valid: ValidStore,
    view: View,
    who: _Who,
    subject: _Subject,
    measures: Measures,
    settings: StoreSettings,
    *,
    now: datetime,
    memory_id: str,
    multi_valued: bool,
    crossing: Memory | None,
) -> _FactPlan | Memory:
    """A fact's relation: its predicate normalized, then (unless it supersedes explicitly
    or is multi-valued) the active facts of the same relation it repeats (that fact is
    returned) or replaces, and the possible conflicts on subjects possibly the same."""
    predicate = normalized_predicate(valid, view, who, settings, subject.keys)
    body = replace_body(_body(valid), predicate_normalized=predicate)
    if valid.supersedes is not None or multi_valued:
        return _FactPlan(body)
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
    # Facts under other predicates that may fill this slot: the sure ones are replaced like
    # the same relation's, the others flagged below (never left as two silent answers).
    slots = _other_slots(valid, view, who, subject.keys, predicate, measures, now)
    # Two slots that each look sure are one too many: which one it fills is the agent's call.
    sure = [m for m, found in slots if found.outcome == "same" and _may_replace(who, m)]
    sure = sure if len([f for _, f in slots if f.outcome == "same"]) == 1 else []
    outcome = [*outcome, *sure]
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
    possible = _possible_conflicts(valid, view, who, subject, predicate, memory_id, now,
                                   measures, settings)  # fmt: skip
    assert valid.object is not None
    maybe = [(m, f) for m, f in slots if m not in sure and not agree(valid.object, str(m.object))]
    if maybe and subject.entity is not None:
        entity_id = subject.entity.entity_id
        possible.append(FactsPossiblyConflicting(
            memory_id=memory_id, namespace=who.namespace,
            others=tuple(m.memory_id for m, _ in maybe), entity_id=entity_id,
            other_entity_id=entity_id, reason=RELATION,
            score=round(max(f.score for _, f in maybe), 6),
        ))  # fmt: skip
    return _FactPlan(
        body,
        superseded=superseded,
        replaced_multi=tuple(m.memory_id for m in outcome
                             if m.multi_valued and m.memory_id in superseded),
        successor=successor,
        possible=tuple(possible),
    )  # fmt: skip


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


def _repeated_fact(
    valid: ValidStore, same: Memory, named: _Named, who: _Who, now: datetime
) -> Decision[StoreResult]:
    """A fact stored again: the old one is re-validated (if the store may change it) and
    takes the repeat's marks; nothing new is stored."""
    events = list(named.events)
    confirmed: tuple[str, ...] = ()
    if who.may_change(same):
        events.append(MemoriesValidated(memory_ids=(same.memory_id,), at=now, source="duplicate"))
        confirmed = (same.memory_id,)
        events += _repeated_marks(valid, same)
    importance, pinned, expires_at = _marks_after(same, events)
    result = StoreResult(
        "duplicate", same.memory_id, "semantic", who.namespace, named.entities, (), confirmed,
        importance=importance, pinned=pinned, expires_at=expires_at,
    )  # fmt: skip
    return Decision(tuple(events), result)


def _plan_procedure(valid: ValidStore, view: View, who: _Who) -> _Versions:
    """A procedure's next version, counted among the versions every reader of the new one
    sees (a shared version after its author's private ones is numbered as if they did not
    exist), and the current versions it ends."""
    if valid.type != "procedural":
        return _Versions()
    assert valid.name is not None
    previous = [m for m in view.procedures(who.namespace, valid.name) if who.sees(m)]
    version = 1 + max(
        (m.procedure_version or 0 for m in previous if who.all_readers_see(m)), default=0
    )
    current = tuple(m.memory_id for m in previous if m.t_invalid is None and who.may_change(m))
    return _Versions(version, current)


def _plan_episode(
    valid: ValidStore, view: View, who: _Who, memory_id: str, now: datetime,
    settings: StoreSettings,
) -> EpisodeRef | None:  # fmt: skip
    """The derived episode of an episodic store without a source that looks like a turn
    (see :func:`episode_of`); None for anything else."""
    if (
        valid.type != "episodic"
        or valid.source
        or not looks_like_turn(valid.content or "", settings.episode_max_chars)
    ):
        return None
    tail = view.episode_tail(who.namespace, who.agent_id, who.visibility)
    return EpisodeRef(*episode_of(tail, memory_id, now, settings.episode_gap))


def _stored(
    valid: ValidStore,
    view: View,
    who: _Who,
    memory_id: str,
    now: datetime,
    named: _Named,
    supersede: _Supersede,
    fact: _FactPlan,
    versions: _Versions,
    episode: EpisodeRef | None,
    similar: SimilarMemory | None,
    *,
    multi_valued: bool,
) -> Decision[StoreResult]:
    """The one event builder of a stored memory: its entities' events, ``memory.stored``,
    its marks, possible conflicts, what it ends, the memory it cites validated."""
    t_valid = valid.t_valid or now
    multi = multi_valued and valid.type == "semantic"
    expires_at = None
    if valid.ttl_seconds is not None:
        expires_at = now + timedelta(seconds=valid.ttl_seconds)
    events: list[Event] = [
        *named.events,
        MemoryStored(
            memory_id=memory_id, namespace=who.namespace, memory_type=valid.type,
            t_valid=t_valid, confidence=valid.confidence,
            entity_ids=tuple(dict.fromkeys(e.entity_id for e in named.entities)),
            supersedes=valid.supersedes, procedure_version=versions.version,
            agent_id=who.agent_id, visibility=who.visibility, body=fact.body,
            multi_valued=multi, episode=episode, valid_from_given=valid.t_valid is not None,
        ),
    ]  # fmt: skip
    if valid.marked:
        events.append(MemoryMarked(memory_id=memory_id, namespace=who.namespace,
                                   importance=valid.importance, pinned=valid.pinned,
                                   expires_at=expires_at))  # fmt: skip
    events += fact.possible
    ended = [*([supersede.ended] if supersede.ended else []), *fact.superseded]
    if supersede.crossing is not None and supersede.crossing.memory_id not in {
        *ended, *versions.current
    }:  # fmt: skip
        ended.append(supersede.crossing.memory_id)
    events += _endings(memory_id, who.namespace, t_valid, ended, supersede.asked, fact.successor,
                       versions.current)  # fmt: skip
    validated = [memory_id] if supersede.ended else []
    cited = _cited_memory(valid, view, who, memory_id)
    if cited is not None:
        events.append(MemoriesValidated(memory_ids=(cited,), at=now, source="citation"))
        validated.append(cited)
    if valid.supersedes is not None:
        events.append(MemoriesValidated(memory_ids=(memory_id,), at=now, source="supersede"))
    successor = fact.successor
    result = StoreResult(
        "stored" if successor is None else "stored_as_history", memory_id, valid.type,
        who.namespace, named.entities, (*ended, *versions.current), tuple(validated),
        version=versions.version,
        superseded_by=successor.memory_id if successor is not None else None,
        history_reason=(_history_reason(valid.t_valid, now, successor)
                        if successor is not None else None),
        replaced_multi_valued=fact.replaced_multi, multi_valued=multi,
        importance=valid.importance, pinned=valid.pinned, expires_at=expires_at,
        possible_conflict=tuple(sorted({o for e in fact.possible for o in e.others})),
        flagged=_flagged(view, fact.possible), similar=similar,
        replaced=_named(view, fact.superseded, "replaced"),
    )  # fmt: skip
    return Decision(tuple(events), result)


def _named(view: View, ids: Sequence[str], reason: str) -> tuple[Flagged, ...]:
    """Facts by id, with their text, for an answer."""
    found = [(i, view.memory(i)) for i in ids]
    return tuple(Flagged(i, f"{m.subject} {m.predicate} {m.object}", reason) for i, m in found if m)


def _flagged(view: View, flags: Sequence[FactsPossiblyConflicting]) -> tuple[Flagged, ...]:
    """The facts a store flagged, named for its answer (the first reason of each)."""
    found: dict[str, Flagged] = {}
    for flag in flags:
        for other in flag.others:
            old = view.memory(other)
            if old is not None and other not in found:
                text = f"{old.subject} {old.predicate} {old.object}"
                found[other] = Flagged(other, text, flag.reason)
    return tuple(found[k] for k in sorted(found))


def _history_reason(start: datetime | None, now: datetime, successor: Memory) -> str:
    """What a fact stored as history says: the fact that stays current, and since when."""
    began = (
        f"valid from {rfc3339(start)}" if start is not None else f"undated (learned {rfc3339(now)})"
    )
    return (
        f"{began}, so it began before {successor.memory_id} ({successor.subject} "
        f"{successor.predicate} {successor.object!r}, valid from {rfc3339(successor.t_valid)}), "
        "which stays current; stored as history ending there: recall with as_of before that "
        "time answers this one"
    )


def _endings(
    memory_id: str,
    namespace: str,
    t_valid: datetime,
    ended: Sequence[str],
    asked: str | None,
    successor: Memory | None,
    versions: Sequence[str],
) -> list[Event]:
    """``memory.superseded`` for each memory a store ends: replaced facts (and the one it
    supersedes explicitly, ``asked``), the store itself when a newer fact outlives it, and
    a procedure's earlier versions."""
    events: list[Event] = []
    for old_id in ended:
        reason: SupersedeReason = "explicit" if old_id == asked else "conflict"
        events.append(MemorySuperseded(memory_id=old_id, namespace=namespace, t_invalid=t_valid,
                                       superseded_by=memory_id, reason=reason))  # fmt: skip
    if successor is not None:
        events.append(MemorySuperseded(
            memory_id=memory_id, namespace=namespace,
            t_invalid=datetime.fromtimestamp(successor.t_valid, UTC),
            superseded_by=successor.memory_id, reason="conflict",
        ))  # fmt: skip
    for old_id in versions:
        events.append(MemorySuperseded(memory_id=old_id, namespace=namespace, t_invalid=t_valid,
                                       superseded_by=memory_id, reason="version"))  # fmt: skip
    return events


def looks_like_turn(text: str, max_chars: int) -> bool:
    """Whether an episodic text is a conversation turn (it may join a derived episode)
    rather than a document (it stands alone): at most half of ``max_chars``, or at most
    ``max_chars`` and opening with a speaker's label. Abstracts or notes imported one
    after the other are not a conversation, and must not lend each other scores."""
    if len(text) <= max_chars // 2:
        return True
    return len(text) <= max_chars and opens_with_speaker(text)


def episode_of(
    tail: EpisodeTail | None, memory_id: str, now: datetime, gap: float
) -> tuple[str, int]:
    """The derived episode of a new episodic memory without a source, and its place in it:
    the next place of ``tail``'s episode (the same agent's last such store in the namespace
    and visibility) when that store is at most ``gap`` seconds before ``now`` or in the
    same batch; else a new episode named by ``memory_id``."""
    if tail is not None and (tail.at is None or 0.0 <= now.timestamp() - tail.at <= gap):
        return tail.episode, tail.index + 1
    return memory_id, 0


def replace_body(body: MemoryBody, **changes: Any) -> MemoryBody:
    fields = {name: getattr(body, name) for name in body.__struct_fields__}
    return MemoryBody(**{**fields, **changes})


def _supersedable(memory_id: str, namespace: str, view: View, who: _Who, now: datetime) -> Memory:
    old = view.memory(memory_id)
    if old is None or not who.sees(old) or expired(old.expires_at, now.timestamp()):
        raise NotFound(
            f"cannot supersede {memory_id}: no such memory",
            hint="check the id (recall shows ids); it may have been forgotten",
            details={"ids": [memory_id]},
        )
    if old.namespace != namespace:
        raise UsageError(
            f"cannot supersede {memory_id}: it is in namespace {old.namespace!r}, "
            f"not {namespace!r}",
            hint="store the replacement in the same namespace",
        )
    if not who.may_change(old):
        raise UsageError(
            f"cannot supersede {memory_id} with a private memory: it is shared, and a "
            "private memory never changes what other agents see",
            hint='store the replacement with visibility "shared"',
        )
    if old.t_invalid is not None:
        raise AlreadySuperseded(
            f"{memory_id} is already superseded by {old.superseded_by}",
            hint=f"supersede the current version, {old.superseded_by}, instead",
            details={"ids": [memory_id], "superseded_by": old.superseded_by},
        )
    return old


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
        (similarity,) = _scores(measures, valid.object, [old.object])
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


def _repeated_marks(valid: ValidStore, old: Memory) -> list[Event]:
    """A fact stored again with a pin or an importance marks the fact it repeats: pinned
    stays pinned (and loses any expiry), an importance other than the default replaces
    the old one; a ttl on a repeat is not applied (the fact is already known for good)."""
    if not valid.pinned and valid.importance == DEFAULT_IMPORTANCE:
        return []
    pinned = old.pinned or valid.pinned
    importance = valid.importance if valid.importance != DEFAULT_IMPORTANCE else old.importance
    expires = None if pinned or old.expires_at is None else old.expires_at
    if (pinned, importance, expires) == (old.pinned, old.importance, old.expires_at):
        return []
    return [
        MemoryMarked(
            memory_id=old.memory_id,
            namespace=old.namespace,
            importance=importance,
            pinned=pinned,
            expires_at=None if expires is None else datetime.fromtimestamp(expires, UTC),
        )
    ]


def _marks_after(old: Memory, events: Sequence[Event]) -> tuple[float, bool, float | None]:
    """The marks ``old`` has once ``events`` apply."""
    for event in reversed(events):
        if isinstance(event, MemoryMarked) and event.memory_id == old.memory_id:
            at = event.expires_at
            return event.importance, event.pinned, None if at is None else at.timestamp()
    return old.importance, old.pinned, old.expires_at


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


def _refuse_imported(valid: ValidStore, key: str, view: View, who: _Who) -> None:
    """An import line that already stored a memory (the same place and text of the same
    file, imported again) stores nothing: refused as ``duplicate``, ``imported`` in the
    details (``ferrex import`` reports it as skipped).

    A memory stored under one of ``valid.former_import_keys`` (the form an older ferrex
    gave the key) counts only when its ``context`` is the line's: the older form may have
    been too coarse (a chat message's id alone, which two conversations may share), and the
    context names the item whole (format, conversation, message, part). A memory found
    whose text is not the line's is an item changed since its import: refused too,
    ``changed`` in the details. Storing the new text beside the old would leave two
    memories for one item, and superseding it would drop what was imported without
    anyone asking; the import reports it instead (forget the old memory and import again
    to take the new text)."""
    done = [m for m in view.imported(who.namespace, key) if who.sees(m)]
    for former in valid.former_import_keys:
        done += [
            m
            for m in view.imported(who.namespace, former)
            if who.sees(m) and m.context == valid.context
        ]
    if not done:
        return
    ids = [m.memory_id for m in done]
    if valid.content is None or any(m.content == valid.content for m in done):
        raise Duplicate(
            f"this import line was already imported as {ids[0]}",
            hint="nothing to do: importing a file again stores only its new lines",
            details={"ids": ids, "imported": True, "similarity": 1.0},
        )
    raise Duplicate(
        f"this import line was imported as {ids[0]} with another text, since changed",
        hint=f"the memory imported then stays; to take the new text, forget {ids[0]} and "
        "import again",
        details={"ids": ids, "imported": True, "changed": True},
    )


def another_event(valid: ValidStore, text: str, old: Memory, old_text: str) -> str | None:
    """Why an episodic store is another event than ``old`` (which has much the same text),
    or None: another line of an import (both carry an import key, and the keys differ); or
    the same words (up to case, spacing and punctuation) with an explicitly given event time
    or a source that differs from the old memory's. A reworded report with its own time is
    still a duplicate (it tells the same event again), and so is a plain retried store (no
    time, no source, no import; an HTTP request's key is no import line)."""
    keys = (valid.import_key, old.import_key)
    if None not in keys and keys[0] != keys[1] and not any(map(is_request_key, keys)):
        return "another event: another line of an import"
    if not same_text(text, old_text):
        return None
    if valid.t_valid is not None and abs(valid.t_valid.timestamp() - old.t_valid) >= 0.001:
        return "another event: the same text at a different event time (valid_from)"
    if valid.source is not None and valid.source != old.source:
        return "another event: the same text from a different source"
    return None


def neighbour_floor(settings: StoreSettings) -> float:
    """The lowest similarity of a neighbour that the dedup check looks at: a measurer may
    leave out the neighbours below it (:meth:`Measures.neighbours`)."""
    return min(settings.near_threshold, settings.dedup_threshold)


def _refuse_duplicates(
    valid: ValidStore,
    text: str,
    view: View,
    who: _Who,
    measures: Measures,
    skip: set[str],
    settings: StoreSettings,
    now: datetime,
) -> SimilarMemory | None:
    """Refuse a near copy of a memory (as ``duplicate``); otherwise the closest memory at or
    above the duplicate threshold it was kept beside (and why), else the closest at or above
    the near threshold, else None."""
    kept: SimilarMemory | None = None
    near: SimilarMemory | None = None
    floor = neighbour_floor(settings)
    for memory_id, score in sorted(measures.neighbours(), key=lambda h: (-h[1], h[0])):
        if not math.isfinite(score):  # it would fail every comparison, silently
            raise ValueError(f"similarity must be a finite number, got {score!r}")
        if memory_id in skip or score < floor:
            continue
        old = view.memory(memory_id)
        if (
            old is None
            or old.t_invalid is not None
            or expired(old.expires_at, now.timestamp())
            or old.namespace != who.namespace
            or old.type != valid.type
            or not who.sees(old)
        ):
            continue
        score = min(score, 1.0)
        old_text = memory_text(old.type, old.body())
        if not near_copy(score, text, old_text, settings.dedup_threshold):
            near = near or SimilarMemory(memory_id, score)
            continue
        why = another_event(valid, text, old, old_text) if valid.type == "episodic" else None
        if why is None:
            why = meaning_difference(text, old_text)
        if why is None:
            raise Duplicate(
                f"a similar memory exists: {memory_id} (similarity {score:.3f})",
                hint=f"pass supersedes={memory_id} to replace it",
                details={"ids": [memory_id], "similarity": round(score, 4)},
            )
        kept = kept or SimilarMemory(memory_id, score, why)
    return kept or near


def _resolve_subject(
    name: str,
    view: View,
    who: _Who,
    known: Sequence[Candidate],
    measures: Measures,
    settings: StoreSettings,
    new_id: NewId,
) -> tuple[_Subject, Event | None]:
    """A fact's subject through entity resolution (:func:`ferrex.rules.subjects.
    resolve_subject`), in the store's scope: the entity it names, made or given the new
    spelling as an alias, like a name in ``entities``."""
    found = resolve_subject(
        name,
        known,
        abbreviations=settings.abbreviations_for(who.namespace),
        fuzzy_threshold=settings.entity_fuzzy,
        embedding_threshold=settings.entity_embedding,
        embedding_scores=_name_scores(measures),
    )
    res = found.resolution
    normalized = normalize_entity(name)
    possible = tuple(p for p in found.possible if res.entity_id is None or
                     not view.entities_differ(res.entity_id, p.entity_id))  # fmt: skip
    alias: AliasMatch | None = None
    if not any(c.normalized == normalized and c.entity_id == res.entity_id for c in known):
        alias = "abbreviation" if res.kind in ("abbreviation", "normalized") else _alias_match(res)
    related = tuple(r for r in found.related if res.entity_id is None or
                    not view.entities_differ(res.entity_id, r))  # fmt: skip
    entity, made = _entity_or_spelling(name, res, alias, who, new_id)
    keys = _subject_keys(view, who, name, res.entity_id)
    return _Subject(entity, keys, possible, related), made


def _agree(view: View, who: _Who) -> Callable[[str, str], bool]:
    """Whether two objects name one thing: the same words (``team Nova`` / ``Nova``), or
    one known entity by the entity rules (no embedding)."""
    candidates = _candidates(view, who)

    def agree(a: str, b: str) -> bool:
        if objects_agree(a, b):
            return True
        left = resolve_entity(a, candidates).entity_id
        return left is not None and left == resolve_entity(b, candidates).entity_id

    return agree


def _possible_conflicts(
    valid: ValidStore,
    view: View,
    who: _Who,
    subject: _Subject,
    predicate: str,
    memory_id: str,
    now: datetime,
    measures: Measures,
    settings: StoreSettings,
) -> list[FactsPossiblyConflicting]:
    """For each entity the subject is possibly the same as: its active single-valued facts
    of the same relation, or of one that may fill the same slot (:func:`_slot_matches`, or
    a word moved between subject and predicate), whose object disagrees; for each entity
    that only shares a word with it (:attr:`ferrex.rules.subjects.SubjectResolution.
    related`), those that name the same slot in other words (:func:`ferrex.rules.subjects.
    same_slot_words`). Nothing is superseded; both are flagged."""
    assert valid.object is not None and valid.subject is not None
    if subject.entity is None:
        return []
    agree = _agree(view, who)
    obj = valid.object
    abbreviations = settings.abbreviations_for(who.namespace)
    mine = _slot_words(valid.subject, predicate, abbreviations)

    # The spellings of every entity weighed, in one pass over the namespace's spellings.
    weighed = {p.entity_id for p in subject.possible} | set(subject.related)
    spelt: dict[str, set[str]] = {}
    if weighed:
        scope = who.scope
        for s in view.spellings(who.namespace):
            if s.entity_id in weighed and s.normalized and in_scope(scope, s.agent_id, s.viewers):
                spelt.setdefault(s.entity_id, set()).add(s.normalized)

    def current_of(entity_id: str) -> list[Memory]:
        keys = sorted(spelt.get(entity_id, ()))
        return [
            m
            for m in _facts_of(view, who, keys)
            if m.t_invalid is None
            and who.sees(m)
            and not m.multi_valued
            and not expired(m.expires_at, now.timestamp())
            and m.object is not None
            and m.predicate_normalized
            and not agree(obj, m.object)
        ]

    def moved(m: Memory) -> bool:
        """A word moved between subject and predicate (:func:`same_slot_words`)."""
        theirs = _slot_words(str(m.subject), str(m.predicate_normalized), abbreviations)
        return not kinds_clash(obj, str(m.object)) and same_slot_words(*mine, *theirs)

    out: list[FactsPossiblyConflicting] = []
    for possible in subject.possible:
        current = current_of(possible.entity_id)
        same = [m for m in current if m.predicate_normalized == predicate]
        slots = _slot_matches(valid.object, predicate, [m for m in current if m not in same],
                              measures)  # fmt: skip
        matched = {m.memory_id for m, _ in slots}
        matched |= {m.memory_id for m in current if m not in same and moved(m)}
        # Two flags: one of the same relation (gone once the subjects are one entity, a
        # contradiction proper then) and one of relations possibly the same (kept).
        for others, reason in (([m.memory_id for m in same], possible.reason),
                               (sorted(matched), RELATION)):  # fmt: skip
            if others:
                out.append(
                    FactsPossiblyConflicting(
                        memory_id=memory_id,
                        namespace=who.namespace,
                        others=tuple(sorted(others)),
                        entity_id=subject.entity.entity_id,
                        other_entity_id=possible.entity_id,
                        reason=reason,
                        score=possible.score,
                    )
                )
    # Entities that only share a word with the subject: flagged where a fact of theirs
    # names the same slot in other words (a word moved between subject and predicate).
    for entity_id in subject.related:
        others = sorted(m.memory_id for m in current_of(entity_id) if moved(m))
        if others:
            out.append(
                FactsPossiblyConflicting(
                    memory_id=memory_id, namespace=who.namespace, others=tuple(others),
                    entity_id=subject.entity.entity_id, other_entity_id=entity_id,
                    reason=SLOT_WORDS, score=1.0,
                )
            )  # fmt: skip
    return out


#: The reason of a possible conflict found by :func:`ferrex.rules.subjects.same_slot_words`
#: between subjects that only share a word.
SLOT_WORDS: Final = "slot words"


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


def _alias_match(found: Resolution) -> Literal["fuzzy", "embedding"]:
    return "embedding" if found.kind == "embedding" else "fuzzy"


def _body(valid: ValidStore) -> MemoryBody:
    return MemoryBody(
        content=valid.content,
        subject=valid.subject,
        predicate=valid.predicate,
        object=valid.object,
        procedure_name=valid.name,
        conditions=valid.conditions,
        steps=valid.steps,
        source=valid.source,
        context=valid.context,
        import_key=valid.import_key,
    )


def store_text(valid: ValidStore) -> str:
    """The text a store embeds (and dedups on)."""
    return memory_text(valid.type, _body(valid))


def _cited_memory(valid: ValidStore, view: View, who: _Who, memory_id: str) -> str | None:
    """The memory a store cites (``source = "memory:<id>"``) when the store may validate it:
    an id the caller cannot see behaves exactly like one that does not exist."""
    cited = _cited(valid.source)
    if cited is None or cited == memory_id:
        return None
    memory = view.memory(cited)
    return cited if memory is not None and who.may_change(memory) else None


def _cited(source: str | None) -> str | None:
    if source and source.startswith("memory:"):
        cited = source.removeprefix("memory:").strip()
        return cited if plausible_id(cited) else None
    return None


# -- forget, validate, access, eviction --------------------------------------------------


# -- entity corrections ------------------------------------------------------------------


def _relinked(memories: Sequence[Memory], old: str, new: str) -> tuple[Relink, ...]:
    """Each memory's entity links with ``old`` replaced by ``new``."""
    return tuple(
        Relink(m.memory_id, tuple(dict.fromkeys(new if e == old else e for e in m.entity_ids)))
        for m in sorted(memories, key=lambda m: m.memory_id)
    )


def _private(spellings: Sequence[Spelling], entity_id: str) -> bool:
    """Whether every spelling of the entity is one agent's own (a private entity)."""
    return all(s.agent_id is not None for s in spellings if s.entity_id == entity_id)


EntityAction = Literal["merge", "split", "differ"]


@dataclass(frozen=True)
class EntityResult:
    action: str
    entity: str
    """The entity acted on (for merge: the one kept), by id."""
    other: str
    """merge: the entity merged into ``entity``; differ: the other entity; split: the new
    entity the spelling became."""
    namespace: str
    position: int | None = None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return _answer(self)


def decide_entity(
    action: EntityAction,
    first: str,
    second: str,
    view: View,
    *,
    namespace: str,
    caller: str | None,
    new_id: NewId,
) -> Decision[EntityResult]:
    """An operator's or agent's correction of entity resolution, as one event:

    - ``merge``: ``second`` is the entity ``first`` (its spellings and links join it);
    - ``split``: the spelling ``second`` of entity ``first`` was a wrong merge: it becomes an
      entity of its own, with the facts whose subject it spells, and the two differ;
    - ``differ``: ``first`` and ``second`` are different things (no possible conflicts
      between their facts).

    Names are resolved through the spellings the caller sees (another agent's private
    spelling is unknown, exactly like a name nobody used); a name that resolves nowhere is
    ``not_found``, and nothing is written."""
    if action not in ("merge", "split", "differ"):
        raise UsageError(
            f"unknown entity action {action!r}", hint="the actions are merge, split and differ"
        )
    spellings = [s for s in view.spellings(namespace) if sees_scope(caller, s.agent_id, s.viewers)]
    kept = _entity_named(first, spellings, namespace)
    if action == "split":
        return _split(kept, first, second, spellings, view, namespace, caller, new_id)
    other = _entity_named(second, spellings, namespace)
    if other == kept:
        raise UsageError(
            f"{first!r} and {second!r} are already one entity",
            hint="to undo a wrong merge, split the spelling: ferrex entity split NAME SPELLING"
            if action == "differ"
            else "nothing to merge",
        )
    event: Event
    if action == "merge":
        if _private(spellings, kept) and not _private(spellings, other):
            # Every caller would lose the shared entity into one only its agent sees.
            raise UsageError(
                f"cannot merge the shared entity {second!r} into the private entity {first!r}",
                hint=f"merge the other way: ferrex entity merge {second!r} {first!r}",
            )
        named = [m for m in (view.memory(i) for i in view.linked(other)) if m is not None]
        event = EntitiesMerged(
            entity_id=other,
            into=kept,
            namespace=namespace,
            relinked=_relinked(named, other, kept),
            agent_id=caller,
        )
        flags = _merged_slots(view, namespace, caller, kept, other)
        return Decision((event, *flags), EntityResult(action, kept, other, namespace))
    else:
        event = EntitiesDiffer(entity_id=kept, other_id=other, namespace=namespace,
                               agent_id=caller)  # fmt: skip
    return Decision((event,), EntityResult(action, kept, other, namespace))


def _merged_slots(
    view: View, namespace: str, caller: str | None, kept: str, other: str
) -> list[FactsPossiblyConflicting]:
    """Facts of two entities just merged that may fill one slot under different predicates
    (same predicates are a contradiction proper, which readers find): flagged, by the
    structural evidence alone (:func:`ferrex.rules.slots.slot_match` without a phrase
    cosine: one object kind, or one head word). Only facts the caller sees, and never a
    pair already said to both hold (``facts.differ``)."""

    def current(entity_id: str) -> list[Memory]:
        found = (view.memory(i) for i in view.linked(entity_id))
        return [
            m for m in found
            if m is not None and m.type == "semantic" and m.t_invalid is None
            and not m.multi_valued and m.object and m.predicate_normalized
            and m.entity_ids[:1] == (entity_id,) and sees(caller, m.agent_id, m.visibility)
        ]  # fmt: skip

    ours, theirs = current(kept), current(other)
    flags: list[FactsPossiblyConflicting] = []
    for m in ours:
        pred, obj = str(m.predicate_normalized), str(m.object)
        others = tuple(
            o.memory_id
            for o in theirs
            if slot_candidate(pred, obj, str(o.predicate_normalized), str(o.object))
            and (one_kind(obj, str(o.object)) or same_head(pred, str(o.predicate_normalized)))
            and not objects_agree(obj, str(o.object))
            and not view.facts_differ(m.memory_id, o.memory_id)
        )
        if others:
            flags.append(FactsPossiblyConflicting(
                memory_id=m.memory_id, namespace=namespace, others=others, entity_id=kept,
                other_entity_id=other, reason=RELATION, score=0.0,
            ))  # fmt: skip
    return flags


def _entity_named(name: str, spellings: Sequence[Spelling], namespace: str) -> str:
    """The entity a caller's ``name`` is, through the spellings it sees; ``not_found``."""
    found = find_entity(name, [Candidate(s.entity_id, s.alias, s.normalized) for s in spellings])
    if found is None:
        raise NotFound(
            f"no entity {name!r} in {namespace}",
            hint="stats or recall show the entities memories name",
            details={"name": name},
        )
    return found


def _split(
    kept: str,
    first: str,
    second: str,
    spellings: Sequence[Spelling],
    view: View,
    namespace: str,
    caller: str | None,
    new_id: NewId,
) -> Decision[EntityResult]:
    """The spelling ``second`` of entity ``kept`` (named ``first``) made an entity of its
    own, with the facts whose subject it spells."""
    normalized = normalize_entity(second)
    spelling = next(
        (s for s in spellings if s.entity_id == kept and s.normalized == normalized), None
    )
    if spelling is None:
        raise NotFound(
            f"{second!r} is not a spelling of the entity {first!r}",
            hint="the entity resource lists its aliases",
            details={"name": second},
        )
    if all(s.normalized == normalized for s in spellings if s.entity_id == kept):
        raise UsageError(
            f"{second!r} is the only spelling of {first!r}: nothing to split",
            hint="split a spelling that was merged into another",
        )
    new_entity = new_id("ent")
    moved = [
        m
        for m in (view.memory(i) for i in view.linked(kept))
        if m is not None and m.type == "semantic" and m.subject_key == normalized
    ]
    event = EntitySplit(
        entity_id=kept,
        new_entity_id=new_entity,
        namespace=namespace,
        name=spelling.alias,
        normalized=normalized,
        entity_agent_id=spelling.agent_id,
        spelling_entity_id=spelling.recorded_under,
        relinked=_relinked(moved, kept, new_entity),
        agent_id=caller,
    )
    return Decision((event,), EntityResult("split", kept, new_entity, namespace))


def checked_ids(ids: Sequence[str]) -> list[str]:
    """Memory ids as given, checked for shape, without repeats (a usage error otherwise)."""
    if isinstance(ids, str) or not ids:
        raise UsageError("give at least one memory id", hint="recall shows memory ids")
    bad = [repr(i) for i in ids if not plausible_id(i)]
    if bad:
        raise UsageError(
            f"not a memory id: {', '.join(bad[:5])}",
            hint="ids are printable, without spaces, at most 64 characters",
        )
    return list(dict.fromkeys(ids))


def confirmable(asked: Sequence[str], shown: Iterable[str]) -> list[str]:
    """The ids a recall's caller confirms as correct (``validate_ids``), which must all be
    ids that recall showed it: a usage error naming the others, and nothing validated."""
    returned = set(shown)
    foreign = [i for i in asked if i not in returned]
    if foreign:
        raise UsageError(
            f"validate_ids must be ids this recall returned; not returned: "
            f"{', '.join(foreign[:5])}",
            hint="confirm only memories you were shown; recall them first",
        )
    return list(asked)


def decide_forget(
    ids: Sequence[str], view: View, *, cascade: bool = False, caller: str | None = None
) -> Decision[ForgetResult]:
    """Forget the memories ``caller`` may see among ``ids``; the others are not found.

    ``cascade``: also drop the entities the forgotten memories named, per viewer
    (:func:`ferrex.rules.visibility.after_forget`): gone for everyone when no remaining
    memory names them, kept only for the agents whose private memories still do when no
    memory everyone sees names them any more. The answer's ``dropped_entities`` are those
    gone for ``caller``, so it is the same whether or not others' private memories exist."""
    wanted_ids = checked_ids(ids)
    found = [m for m in (view.memory(i) for i in wanted_ids) if m is not None]
    found = [m for m in found if sees(caller, m.agent_id, m.visibility)]
    found_ids = {m.memory_id for m in found}
    not_found = tuple(i for i in wanted_ids if i not in found_ids)
    if not found:
        return Decision((), ForgetResult((), not_found, (), None))
    by_namespace: dict[str, list[Memory]] = {}
    for memory in sorted(found, key=lambda m: m.memory_id):
        by_namespace.setdefault(memory.namespace, []).append(memory)
    events: list[Event] = []
    all_dropped: list[str] = []
    for namespace, memories in sorted(by_namespace.items()):
        dropped: list[str] = []
        kept: list[KeptEntity] = []
        if cascade:
            seen_by = {s.entity_id: s.viewers for s in view.spellings(namespace)}
            for entity_id in sorted({e for m in memories for e in m.entity_ids}):
                if entity_id not in seen_by:
                    continue  # dropped already
                fate = after_forget(
                    seen_by[entity_id],
                    [(m.agent_id, m.visibility) for m in memories if entity_id in m.entity_ids],
                    _mentions(view, entity_id, found_ids),
                )
                if fate.dropped:
                    dropped.append(entity_id)
                elif fate.kept_for is not None:
                    kept.append(KeptEntity(entity_id, fate.kept_for))
        all_dropped += dropped
        all_dropped += [
            k.entity_id for k in kept if caller is not None and caller not in k.agent_ids
        ]
        events.append(
            MemoriesForgotten(
                memory_ids=tuple(m.memory_id for m in memories),
                namespace=namespace,
                reason="request",
                dropped_entity_ids=tuple(dropped),
                kept_entities=tuple(kept),
            )
        )
    order = tuple(i for i in wanted_ids if i in found_ids)
    return Decision(tuple(events), ForgetResult(order, not_found, tuple(all_dropped), None))


def _mentions(view: View, entity_id: str, leaving: set[str]) -> list[Mention]:
    """The memories still naming ``entity_id`` once ``leaving`` are gone, as visibility
    sees them."""
    found = (view.memory(i) for i in view.linked(entity_id) if i not in leaving)
    return [(m.agent_id, m.visibility) for m in found if m is not None]


def decide_validate(
    ids: Sequence[str],
    view: View,
    *,
    now: datetime,
    source: ValidationSource = "agent",
    caller: str | None = None,
) -> Decision[ValidateResult]:
    """Mark the memories ``caller`` may see among ``ids`` as confirmed correct ``now``."""
    wanted_ids = checked_ids(ids)
    at = now.timestamp()
    found = {
        m.memory_id
        for m in (view.memory(i) for i in wanted_ids)
        if m is not None
        and sees(caller, m.agent_id, m.visibility)
        and not expired(m.expires_at, at)  # gone the moment it expired
    }
    ok = tuple(i for i in wanted_ids if i in found)
    missing = tuple(i for i in wanted_ids if i not in found)
    if not ok:
        return Decision((), ValidateResult((), missing, None))
    events = (MemoriesValidated(memory_ids=ok, at=now, source=source),)
    return Decision(events, ValidateResult(ok, missing, None))


@dataclass(frozen=True)
class SettleResult:
    """How flagged facts were settled by a confirm: pairs said to both hold (``differ``),
    facts ended by the confirmed one (``superseded``), and ids not found."""

    differ: tuple[tuple[str, str], ...]
    superseded: tuple[str, ...]
    not_found: tuple[str, ...]


def decide_settle(
    ids: Sequence[str],
    view: View,
    *,
    now: datetime,
    differs_from: Sequence[str] = (),
    supersedes: str | None = None,
    caller: str | None = None,
) -> Decision[SettleResult]:
    """An agent settles a possible conflict from the fact it confirms: ``differs_from``
    (each of ``ids`` and each of those both hold: ``facts.differ``, the flag goes) or
    ``supersedes`` (the one confirmed fact replaces it: ``memory.superseded``, as an
    explicit supersede). Ids the caller cannot see, or that expired, are not found, exactly
    like ids that do not exist; a pair across namespaces is a usage error."""
    wanted = checked_ids(ids)
    others = checked_ids(differs_from) if differs_from else []
    at = now.timestamp()

    def visible(memory_id: str) -> Memory | None:
        m = view.memory(memory_id)
        ok = m is not None and sees(caller, m.agent_id, m.visibility)
        return m if ok and m is not None and not expired(m.expires_at, at) else None

    found = {i: m for i in dict.fromkeys([*wanted, *others]) if (m := visible(i)) is not None}
    missing = tuple(i for i in dict.fromkeys([*wanted, *others]) if i not in found)
    events: list[Event] = []
    pairs: list[tuple[str, str]] = []
    for memory_id in (i for i in wanted if i in found):
        for other in (o for o in others if o in found and o != memory_id):
            if found[memory_id].namespace != found[other].namespace:
                raise UsageError(
                    f"{memory_id} and {other} are in different namespaces",
                    hint="facts of different namespaces are never flagged against each other",
                )
            pairs.append((memory_id, other))
            events.append(FactsDiffer(memory_id=memory_id, other_id=other,
                                      namespace=found[memory_id].namespace,
                                      agent_id=caller))  # fmt: skip
    ended: tuple[str, ...] = ()
    if supersedes is not None:
        if len(wanted) != 1 or wanted[0] not in found:
            raise UsageError(
                "supersedes takes exactly one confirmed fact: the one that replaces it",
                hint="confirm ids=[NEW] supersedes=OLD",
            )
        new = found[wanted[0]]
        who = _Who(new.namespace, caller, "private" if new.visibility == "private" else "shared")
        old = _supersedable(supersedes, new.namespace, view, who, now)
        t_invalid = datetime.fromtimestamp(max(new.t_valid, old.t_valid), UTC)
        events.append(MemorySuperseded(memory_id=old.memory_id, namespace=new.namespace,
                                       t_invalid=t_invalid, superseded_by=new.memory_id,
                                       reason="explicit"))  # fmt: skip
        ended = (old.memory_id,)
    return Decision(tuple(events), SettleResult(tuple(pairs), ended, missing))


def decide_mark(
    ids: Sequence[str],
    view: View,
    *,
    now: datetime,
    importance: object = None,
    pinned: object = None,
    caller: str | None = None,
) -> Decision[MarkResult]:
    """Set the lifecycle marks of the memories ``caller`` may see among ``ids`` (None: that
    mark unchanged). Pinning a memory that expires keeps it: its expiry is cleared. A memory
    that has expired counts as not found, like one already swept."""
    wanted_ids = checked_ids(ids)
    if importance is None and pinned is None:
        raise UsageError("say what to mark: importance, pinned or both")
    level = None if importance is None else check_importance(importance)
    pin = None if pinned is None else check_pinned(pinned)
    at = now.timestamp()
    found = [
        m
        for m in (view.memory(i) for i in wanted_ids)
        if m is not None
        and sees(caller, m.agent_id, m.visibility)
        and not expired(m.expires_at, at)
    ]
    found_ids = {m.memory_id for m in found}
    missing = tuple(i for i in wanted_ids if i not in found_ids)
    events: list[Event] = []
    for m in found:
        new_pin = m.pinned if pin is None else pin
        new_level = m.importance if level is None else level
        expires = (
            None if new_pin or m.expires_at is None else datetime.fromtimestamp(m.expires_at, UTC)
        )
        if (new_pin, new_level, expires is None) == (m.pinned, m.importance, m.expires_at is None):
            continue  # nothing changes: nothing to journal
        events.append(
            MemoryMarked(
                memory_id=m.memory_id,
                namespace=m.namespace,
                importance=new_level,
                pinned=new_pin,
                expires_at=expires,
            )
        )
    marked = tuple(i for i in wanted_ids if i in found_ids)
    return Decision(tuple(events), MarkResult(marked, missing, None))


def decide_expiry(memories: Sequence[Memory], *, now: datetime) -> Decision[ForgetResult]:
    """Forget (reason ``expired``) the memories among ``memories`` whose ``expires_at`` has
    passed at ``now``; each forget's ``details`` say when it expired. The caller passes the
    memories that have an expiry (``ReadModel.expiring``); the time is the sweep's, and the
    events carry it, so a replay repeats the outcome without a clock."""
    at = now.timestamp()
    due = sorted(
        (m for m in memories if not m.pinned and expired(m.expires_at, at)),
        key=lambda m: m.memory_id,
    )
    if not due:
        return Decision((), ForgetResult((), (), (), None))
    events: list[Event] = []
    for namespace in sorted({m.namespace for m in due}):
        group = [m for m in due if m.namespace == namespace]
        events.append(
            MemoriesForgotten(
                memory_ids=tuple(m.memory_id for m in group),
                namespace=namespace,
                reason="expired",
                details=tuple(f"expired at {rfc3339(m.expires_at)}" for m in group),
            )
        )
    return Decision(tuple(events), ForgetResult(tuple(m.memory_id for m in due), (), (), None))


def decide_access(
    pending: Mapping[str, tuple[int, datetime]], view: View
) -> Decision[tuple[str, ...]]:
    """Journal recall hits of memories that still exist (one forgotten since its recall is
    dropped); the answer is the ids journaled."""
    accesses = tuple(
        Access(memory_id, last, count)
        for memory_id, (count, last) in sorted(pending.items())
        if view.memory(memory_id) is not None
    )
    if not accesses:
        return Decision((), ())
    return Decision((MemoriesAccessed(accesses=accesses),), tuple(a.memory_id for a in accesses))


def decide_eviction(
    memories: Sequence[Memory],
    *,
    budget: int,
    now: datetime,
    staleness: Callable[[str], StalenessParams],
) -> Decision[ForgetResult]:
    """Forget (reason ``eviction``) what ``budget`` bytes of memory text cannot hold, in the
    priority of :mod:`ferrex.rules.eviction`; active facts and procedures are never evicted.
    ``staleness(namespace)`` is the configured staleness, as recall and reflect use it."""
    sizes = {m.memory_id: text_bytes(m) for m in memories}
    over = sum(sizes.values()) - budget
    empty: Decision[ForgetResult] = Decision((), ForgetResult((), (), (), None))
    if over <= 0:
        return empty
    at = now.timestamp()
    by_namespace: dict[str, list[Memory]] = {}
    for memory in memories:
        by_namespace.setdefault(memory.namespace, []).append(memory)
    candidates = [
        eviction_candidate(a, sizes[a.memory.memory_id])
        for namespace, group in sorted(by_namespace.items())
        for a in assess(group, at, staleness(namespace))
    ]
    plan = eviction_plan(candidates, over, at)
    if not plan:
        return empty
    by_id = {m.memory_id: m for m in memories}
    events: list[Event] = []
    for namespace in sorted({by_id[mid].namespace for mid, _ in plan}):
        chosen = [(mid, why) for mid, why in plan if by_id[mid].namespace == namespace]
        events.append(
            MemoriesForgotten(
                memory_ids=tuple(mid for mid, _ in chosen),
                namespace=namespace,
                reason="eviction",
                details=tuple(why for _, why in chosen),
            )
        )
    return Decision(tuple(events), ForgetResult(tuple(mid for mid, _ in plan), (), (), None))


# -- consolidation -------------------------------------------------------------------------


@dataclass(frozen=True)
class Folding:
    """One summary a consolidation made (or would make, in a dry run)."""

    summary_id: str
    namespace: str
    agent_id: str | None
    group: str
    """``source:NAME`` or ``episode:ID``: what the folded memories had in common."""
    memory_ids: tuple[str, ...]
    visibility: str
    chars: int
    source_chars: int

    def as_dict(self) -> dict[str, Any]:
        return {name: list(v) if isinstance(v, tuple) else v for name, v in vars(self).items()}


@dataclass(frozen=True)
class ConsolidateResult:
    summaries: tuple[Folding, ...]
    position: int | None = None
    warnings: tuple[str, ...] = ()
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "summaries": [f.as_dict() for f in self.summaries],
            "folded": sum(len(f.memory_ids) for f in self.summaries),
            "chars": sum(f.chars for f in self.summaries),
            "source_chars": sum(f.source_chars for f in self.summaries),
            "position": self.position,
            "dry_run": self.dry_run,
        }
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        return doc


@dataclass(frozen=True)
class UnfoldResult:
    summary_id: str
    restored: tuple[str, ...]
    position: int | None = None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "summary_id": self.summary_id,
            "restored": list(self.restored),
            "position": self.position,
        }
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        return doc


def foldable(memory: Memory, *, created_before: float) -> bool:
    """Whether consolidation may fold ``memory``: an episodic memory still valid, learned
    (``created_at``, when ferrex recorded it, not its event time) before
    ``created_before``, not pinned, without an expiry, its text still there."""
    return (
        memory.type == "episodic"
        and memory.t_invalid is None
        and not memory.pinned
        and memory.expires_at is None
        and not memory.redacted
        and bool(memory.content)
        and memory.created_at < created_before
    )


def _group_key(memory: Memory) -> str | None:
    if memory.source:
        return f"source:{memory.source}"
    if memory.episode:
        return f"episode:{memory.episode}"
    return None  # a memory on its own: nothing to fold it with


def _episode_order(memory: Memory) -> tuple[float, int, int, str]:
    # the journal's order breaks ties of event time (a chat imported in one second)
    return (memory.t_valid, memory.episode_index, memory.position, memory.memory_id)


SESSION_GAP_SECONDS = 6 * 3600.0
"""A pause longer than this between two turns of one conversation (their event times)
ends a session: each session is folded apart."""


def consolidation_groups(
    memories: Sequence[Memory], *, created_before: float, min_size: int = 2
) -> list[tuple[str, list[Memory]]]:
    """The groups consolidation folds, each into one summary: the :func:`foldable` memories
    of one namespace, one agent, one visibility and one source (or one derived episode), at
    least ``min_size`` of them, in episode order; groups ordered by namespace, agent, key and
    visibility. (Per visibility: an agent's shared memories folded with its private ones
    would make a private summary, and what others could see would vanish from their view.)
    Within one source, a group never spans a pause of more than ``SESSION_GAP_SECONDS``
    (:func:`_sessions`) and never holds two memories whose entity sets do not overlap
    (:func:`_by_entities`: observations of different entities imported from one file are
    not one story)."""
    groups: dict[tuple[str, str, str, str], list[Memory]] = {}
    for m in memories:
        key = _group_key(m)
        if key is None or not foldable(m, created_before=created_before):
            continue
        groups.setdefault((m.namespace, m.agent_id or "", key, m.visibility), []).append(m)
    return [
        (key, part)
        for (_ns, _agent, key, _vis), members in sorted(groups.items())
        for session in _sessions(sorted(members, key=_episode_order))
        for part in _by_entities(session)
        if len(part) >= min_size
    ]


def _sessions(members: Sequence[Memory]) -> list[list[Memory]]:
    """``members`` (in episode order) cut wherever a pause passes ``SESSION_GAP_SECONDS``."""
    runs: list[list[Memory]] = []
    for m in members:
        if runs and m.t_valid - runs[-1][-1].t_valid <= SESSION_GAP_SECONDS:
            runs[-1].append(m)
        else:
            runs.append([m])
    return runs


def _by_entities(members: Sequence[Memory]) -> list[list[Memory]]:
    """``members`` (in order) in groups whose every two memories share an entity (each joins
    the first group it shares one with every member of); memories naming no entity form
    groups of their own kind (a conversation's plain turns). Each group in order."""
    groups: list[tuple[list[Memory], list[frozenset[str]]]] = []
    plain: int | None = None  # the group of the memories naming no entity
    naming: dict[str, list[int]] = {}  # entity → the groups holding it, in order
    for m in members:
        mine = frozenset(m.entity_ids)
        if not mine:
            if plain is None:
                plain = len(groups)
                groups.append(([], []))
            at = plain
        else:
            candidates = sorted({g for e in mine for g in naming.get(e, ())})
            at = next((g for g in candidates if all(mine & o for o in groups[g][1])), len(groups))
            if at == len(groups):
                groups.append(([], []))
            for e in mine:
                if at not in naming.setdefault(e, []):
                    naming[e].append(at)
        groups[at][0].append(m)
        groups[at][1].append(mine)
    return [group for group, _ in groups]


def _fold_events(
    group: str,
    members: Sequence[Memory],
    *,
    summary_id: str,
    now: datetime,
    keep_ratio: float,
    unit: Unit = "sentence",
) -> tuple[list[Event], Folding]:
    first = members[0]
    if any(m.namespace != first.namespace or m.agent_id != first.agent_id for m in members):
        raise Refused(
            "a consolidation folds memories of one namespace and one agent only",
            hint="group by namespace and agent (consolidation_groups does)",
        )
    summary = summarize(
        [Source(m.memory_id, m.content or "", m.entity_ids) for m in members],
        keep_ratio=keep_ratio,
        unit=unit,
    )
    stored = _summary_stored(summary_id, members, summary.text)
    ids = tuple(m.memory_id for m in members)
    events: list[Event] = [stored]
    importance = max(m.importance for m in members)
    if importance != DEFAULT_IMPORTANCE:
        events.append(
            MemoryMarked(memory_id=summary_id, namespace=first.namespace, importance=importance)
        )
    events.append(
        MemoriesConsolidated(
            summary_id=summary_id,
            namespace=first.namespace,
            memory_ids=ids,
            at=now,
            folds=tuple(Fold(p.memory_id, p.start, p.end) for p in summary.pieces),
        )
    )
    folding = Folding(
        summary_id, first.namespace, first.agent_id, group, ids, stored.visibility,
        len(summary.text), summary.source_chars,
    )  # fmt: skip
    return events, folding


def _summary_stored(summary_id: str, members: Sequence[Memory], text: str) -> MemoryStored:
    """The summary of ``members`` as a memory: their earliest time and lowest confidence,
    all their entities, shared only when every one is, their source or derived episode
    when they have one."""
    first = members[0]
    shared = all(m.visibility == "shared" for m in members)
    visibility: Visibility = "shared" if shared else "private"
    sources = {m.source for m in members}
    episodes = {m.episode for m in members}
    source = first.source if len(sources) == 1 else None
    episode = (
        EpisodeRef(first.episode, min(m.episode_index for m in members))
        if source is None and len(episodes) == 1 and first.episode is not None
        else None
    )
    return MemoryStored(
        memory_id=summary_id,
        namespace=first.namespace,
        memory_type="episodic",
        t_valid=datetime.fromtimestamp(min(m.t_valid for m in members), UTC),
        valid_from_given=min(members, key=lambda m: m.t_valid).valid_from_given,
        confidence=min(m.confidence for m in members),
        entity_ids=tuple(sorted({e for m in members for e in m.entity_ids})),
        agent_id=first.agent_id,
        visibility=visibility,
        body=MemoryBody(content=text, source=source),
        episode=episode,
    )


def decide_consolidate(
    group: str,
    members: Sequence[Memory],
    *,
    created_before: float,
    now: datetime,
    summary_id: str,
    keep_ratio: float,
    unit: Unit = "sentence",
) -> Decision[ConsolidateResult]:
    """Fold one group (see :func:`consolidation_groups`) into a summary: a new episodic
    memory whose text is the extractive summary (:mod:`ferrex.rules.consolidation`) of the
    group, with the sources' entities, the highest importance among them, shared only when
    every source is; the sources become invalid at ``now`` with the summary as what
    replaced them (``memories.consolidated``). Members that may no longer be folded (pinned,
    expiring, younger than ``created_before``, already folded) are left out; fewer than two
    left, or a summary that would drop nothing (every turn states something), nothing is
    written."""
    kept = [m for m in members if foldable(m, created_before=created_before)]
    if len(kept) < 2:
        return Decision((), ConsolidateResult(()))
    events, folding = _fold_events(
        group, sorted(kept, key=_episode_order), summary_id=summary_id, now=now,
        keep_ratio=keep_ratio, unit=unit,
    )  # fmt: skip
    if folding.chars >= folding.source_chars:
        return Decision((), ConsolidateResult(()))  # every turn states something: none goes
    return Decision(tuple(events), ConsolidateResult((folding,)))


def decide_unfold(summary_id: str, view: View, folded: Sequence[str]) -> Decision[UnfoldResult]:
    """Undo a consolidation: the memories folded into ``summary_id`` (``folded``, as the read
    model lists them) are valid again and the summary is forgotten. An id that is not a
    summary is refused (``not_found``), and nothing is written."""
    (summary_id,) = checked_ids([summary_id])
    summary = view.memory(summary_id)
    if summary is None or not folded:
        raise NotFound(
            f"no consolidation summary {summary_id!r}",
            hint="`ferrex consolidate --dry-run` and recall show summaries; their ids start mem_",
        )
    restored = _still_folded(view, summary_id, folded)
    events: tuple[Event, ...] = (
        MemoriesUnfolded(summary_id=summary_id, namespace=summary.namespace, memory_ids=restored),
        _summary_forgotten(summary, "consolidation undone"),
    )
    return Decision(events, UnfoldResult(summary_id, restored))


def _still_folded(
    view: View, summary_id: str, members: Sequence[str], leaving: Set[str] = frozenset()
) -> tuple[str, ...]:
    """The ``members`` (in id order) still folded into ``summary_id``, but those leaving."""
    return tuple(
        i for i in sorted(members)
        if i not in leaving and (m := view.memory(i)) is not None
        and m.superseded_by == summary_id
    )  # fmt: skip


def _summary_forgotten(summary: Memory, why: str) -> MemoriesForgotten:
    return MemoriesForgotten(memory_ids=(summary.memory_id,), namespace=summary.namespace,
                             reason="consolidation", details=(why,))  # fmt: skip


def decide_refold(
    forgotten: Sequence[str],
    view: View,
    folds: Mapping[str, Sequence[str]],
    *,
    now: datetime,
    new_id: NewId,
    keep_ratio: float,
    unit: Unit = "sentence",
) -> list[Event]:
    """What a forget does to summaries, appended after its ``memories.forgotten``.

    ``folds``: every summary touched (a forgotten memory is one, or was folded into one)
    → the memories folded into it. A forgotten **source** must not live on in its summary's
    text: the summary is made again from the sources left (a new summary, the old one
    forgotten with reason ``consolidation``, so compaction purges its text too); none left,
    the summary is only forgotten. A forgotten **summary** gives its sources back (valid
    again), as an undo would."""
    gone = set(forgotten)
    events: list[Event] = []
    for summary_id in sorted(folds):
        summary = view.memory(summary_id)
        members = list(folds[summary_id])
        if summary is None:
            continue
        if summary_id in gone:
            back = _still_folded(view, summary_id, members, gone)
            events.append(
                MemoriesUnfolded(
                    summary_id=summary_id, namespace=summary.namespace, memory_ids=back
                )
            )
        elif gone.intersection(members):
            events += _refolded(summary, members, gone, view, now=now, new_id=new_id,
                                keep_ratio=keep_ratio, unit=unit)  # fmt: skip
    return events


def _refolded(
    summary: Memory,
    members: Sequence[str],
    gone: Set[str],
    view: View,
    *,
    now: datetime,
    new_id: NewId,
    keep_ratio: float,
    unit: Unit,
) -> list[Event]:
    """A summary one of whose sources is forgotten: made again from the sources left (a new
    summary), then forgotten."""
    events: list[Event] = []
    left = sorted(
        (m for i in members if i not in gone and (m := view.memory(i)) is not None),
        key=_episode_order,
    )
    if left:
        group = _group_key(left[0]) or "episode:"
        refolded, _ = _fold_events(group, left, summary_id=new_id("mem"), now=now,
                                   keep_ratio=keep_ratio, unit=unit)  # fmt: skip
        events.extend(refolded)
    events.append(
        _summary_forgotten(summary, "a folded memory was forgotten: summary made again without it")
    )
    return events
