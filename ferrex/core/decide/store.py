"""The decision of one store (:func:`decide_store`).

The rules of a store, in order:

1. **Entities** are resolved (:mod:`ferrex.core.decide.entities`): a fact's **subject**
   first, then every name of ``entities``; a new name makes a new entity, a close one
   records the new spelling as an alias, in the memory's scope.
2. **Explicit supersede** (``supersedes``): the memory must exist, be visible, be in the
   same namespace and still be valid.
3. **Facts** (semantic; :mod:`ferrex.core.decide.facts`): the relation a fact fills, the
   facts of its slot it repeats, replaces or is kept beside (multi-valued, plural),
   possible conflicts flagged, and time read bitemporally (a back-dated fact is stored
   as history).
4. **Procedures**: the next version of the name; the current version is superseded.
5. **Dedup** (:mod:`ferrex.core.decide.copies`): a near copy of a memory is refused as
   ``duplicate`` unless a difference of meaning, or another event, keeps it; a memory
   kept beside a near copy, or close to one, says so (``similar``); an import line
   already imported stores nothing.
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
   replaces it. :mod:`ferrex.core.decide.forget` changes marks later and forgets
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

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace as replaced
from datetime import UTC, datetime, timedelta
from typing import Literal, NotRequired

from ferrex.ids import plausible_id
from ferrex.rules.fusion import opens_with_speaker
from ferrex.rules.lifecycle import DEFAULT_IMPORTANCE, Marks, marks_doc
from ferrex.rules.memory_input import Redaction, ValidStore
from ferrex.rules.slots import plural_fact, range_relation, scoped_apart, versions_of_one
from ferrex.rules.store_fields import check_not_ahead
from ferrex.rules.value_changes import (
    counted,
    counts_of_two,
    one_of_many_held,
    suffixed_versions,
    told_as_added,
)
from journal import (
    Event,
    FactsPossiblyConflicting,
    MemoriesValidated,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
)
from journal.events import EpisodeRef, SupersedeReason
from projections.documents import memory_text
from projections.readmodel.predicates import is_current
from projections.rows import Memory

from ..settings import StoreSettings
from ..view import EpisodeTail, View
from . import Decision, NewId
from .copies import SimilarAnswer, SimilarMemory, refuse_duplicates, refuse_imported
from .entities import EntityMatch, Named, ResolvedEntity, name_entities
from .facts import FactPlan, a_current_value, plan_fact, plural_beside, repeats_wording
from .notes import flag_note, history_note, plural_note, replaced_multi_note, replaced_note
from .shared import Flagged, FlaggedFact, Measures, Who, body_of, supersedable

StoreStatus = Literal["stored", "stored_as_history", "duplicate"]
"""What became of a store (see :class:`StoreResult`)."""


NEW_MEMORY: frozenset[str] = frozenset({"stored", "stored_as_history"})
"""The statuses of a store that wrote a new memory (the rest: ``duplicate``)."""


class StoreAnswer(Marks):
    """The store tool's answer (:meth:`StoreResult.as_dict`; the HTTP API's answer of a
    store whose first answer was lost has only ``status``, ``id``, ``recovered`` and
    ``note``). The HTTP API's ``StoreAnswer`` schema is read from it
    (``server/dashboard/schemas.typed``); the marks (:class:`Marks`) only when set."""

    status: StoreStatus
    id: str
    type: NotRequired[str]
    namespace: NotRequired[str]
    entities: NotRequired[list[EntityMatch]]
    superseded: NotRequired[list[str]]
    validated: NotRequired[list[str]]
    position: NotRequired[int]
    version: NotRequired[int]
    superseded_by: NotRequired[str]
    history_reason: NotRequired[str]
    recovered: NotRequired[bool]
    note: NotRequired[str]
    multi_valued: NotRequired[bool]
    replaced_multi_valued: NotRequired[list[str]]
    possible_conflict: NotRequired[list[str]]
    possible_conflict_with: NotRequired[list[FlaggedFact]]
    possible_conflict_note: NotRequired[str]
    replaced_note: NotRequired[str]
    kept_beside: NotRequired[list[FlaggedFact]]
    plural_note: NotRequired[str]
    similar: NotRequired[SimilarAnswer]
    warnings: NotRequired[list[str]]
    redacted: NotRequired[list[Redaction]]


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
    redacted: tuple[Redaction, ...] = ()
    """The likely secrets replaced by markers before it was stored (field, kind, at)."""

    @property
    def stored(self) -> bool:
        """Whether a new memory was written (:data:`NEW_MEMORY`)."""
        return self.status in NEW_MEMORY

    def as_dict(self) -> StoreAnswer:
        doc: StoreAnswer = {
            "status": self.status,
            "id": self.id,
            "type": self.type,
            "namespace": self.namespace,
            "entities": [e.as_dict() for e in self.entities],
            "superseded": list(self.superseded),
            "validated": list(self.validated),
            "position": self.position,
        }
        if self.version is not None:
            doc["version"] = self.version
        if self.superseded_by:
            doc["superseded_by"] = self.superseded_by
        if self.history_reason:
            doc["history_reason"] = self.history_reason
        if self.multi_valued:
            doc["multi_valued"] = True
        doc = {**doc, **marks_doc(self.importance, self.pinned, self.expires_at)}
        if self.replaced_multi_valued:
            doc["replaced_multi_valued"] = list(self.replaced_multi_valued)
            doc["note"] = replaced_multi_note(len(self.replaced_multi_valued))
        if self.possible_conflict:
            doc["possible_conflict"] = list(self.possible_conflict)
            doc["possible_conflict_with"] = [f.as_dict() for f in self.flagged]
            doc["possible_conflict_note"] = flag_note(self.id, self.flagged)
        if self.replaced:
            doc["replaced_note"] = replaced_note(self.replaced)
        if self.plural:
            if self.kept_beside:
                doc["kept_beside"] = [f.as_dict() for f in self.kept_beside]
            doc["plural_note"] = plural_note(self.id, self.kept_beside)
        if self.similar is not None:
            doc["similar"] = self.similar.as_dict()
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        if self.redacted:
            doc["redacted"] = [{**r} for r in self.redacted]
        return doc


def _who(valid: ValidStore, settings: StoreSettings) -> Who:
    # The request carries its caller's identity (None: the operator), never this process's.
    agent_id = valid.agent_id
    # An agent's own memories are private unless it shares them.
    visibility = valid.visibility or ("private" if agent_id else "shared")
    return Who(valid.namespace or settings.default_namespace, agent_id, visibility)


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
    check_not_ahead(valid.type, valid.t_valid, now)
    if valid.import_key is not None:
        refuse_imported(valid, valid.import_key, view, who)
    # A second value of a plainly plural relation (members, speaks) is one more value, not
    # a replacement: kept beside the others, and the answer says so.
    plural = (valid.type == "semantic" and not multi_valued and valid.supersedes is None
              and valid.predicate is not None
              and (plural_fact(valid.subject or "", valid.predicate, valid.object or "")
                   or one_of_many_held(valid.predicate, valid.object or "")))  # fmt: skip
    memory_id = new_id("mem")
    named = name_entities(valid, view, who, measures, settings, new_id)
    # Two values each scoped to its own purpose (``PlayFab for economy`` / ``EOS for
    # lobbies``) both hold: one more value too.
    if (
        plural
        and not range_relation(valid.predicate or "")
        and a_current_value(valid, view, who, named, settings, _one_at_two_versions)
    ):
        # react 18 → react 19: one thing at another version, a change (not iOS 16 → iOS 17
        # under ``supports``: a range holds both); payment-gateway-v1 → -v2 may be one,
        # flagged (:func:`ferrex.rules.value_changes.suffixed_versions`)
        plural = False
    # A value told as one more (``also runs in``) is kept beside the others, whatever they are.
    added = (valid.type == "semantic" and valid.supersedes is None
             and told_as_added(valid.predicate or ""))  # fmt: skip
    # Counts of two things (``has 3 masters`` / ``has 12 workers``) both hold too.
    obj = valid.object or ""
    single = (not plural and not added and valid.type == "semantic" and not multi_valued
              and valid.supersedes is None)  # fmt: skip
    scoped = single and (
        (" for " in obj and a_current_value(valid, view, who, named, settings, scoped_apart))
        or (counted(obj) and a_current_value(valid, view, who, named, settings, counts_of_two))
    )
    # The relation in the very words of its current values (or but for the number of its
    # last word, where they are many), no word of change: one more.
    repeated = (
        single and not scoped and repeats_wording(valid, view, who, named, measures, settings)
    )
    plural = plural or scoped or repeated or added
    multi_valued = multi_valued or plural
    supersede = _Supersede()
    if valid.supersedes is not None:
        supersede = _explicit(valid.supersedes, view, who, now)
        if supersede.crossing is not None:  # decided as a plain store, the old one ended
            valid = replaced(valid, supersedes=None)
    fact = FactPlan(body_of(valid))
    if valid.type == "semantic":
        planned = plan_fact(valid, view, who, named.subject, measures, settings,
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
        close = refuse_duplicates(valid, text, view, who, measures, skip, settings, now)
    beside: list[Memory] = []
    if plural and named.subject.entity is not None:
        beside, fact = plural_beside(valid, view, who, named.subject, fact, memory_id,
                                      flag=not (scoped or repeated or added))  # fmt: skip
    episode = _plan_episode(valid, view, who, memory_id, now, settings)
    decided = _stored(valid, view, who, memory_id, now, named, supersede, fact, versions,
                      episode, close, multi_valued=multi_valued)  # fmt: skip
    if not plural:
        return decided
    kept = _named(view, [m.memory_id for m in beside], "plural")
    return Decision(decided.events, replaced(decided.result, plural=True, kept_beside=kept))


def _explicit(memory_id: str, view: View, who: Who, now: datetime) -> _Supersede:
    """``supersedes`` checked (:func:`supersedable`: refused when it may not be ended)."""
    old = supersedable(memory_id, who.namespace, view, who, now)
    if who.all_readers_see(old):
        return _Supersede(memory_id, ended=old.memory_id)
    return _Supersede(memory_id, crossing=old)


def _repeated_fact(
    valid: ValidStore, same: Memory, named: Named, who: Who, now: datetime
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


def _plan_procedure(valid: ValidStore, view: View, who: Who) -> _Versions:
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
    current = tuple(m.memory_id for m in previous if is_current(m) and who.may_change(m))
    return _Versions(version, current)


def _plan_episode(
    valid: ValidStore, view: View, who: Who, memory_id: str, now: datetime,
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
    who: Who,
    memory_id: str,
    now: datetime,
    named: Named,
    supersede: _Supersede,
    fact: FactPlan,
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
        history_reason=(history_note(valid.t_valid, now, successor)
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


def store_text(valid: ValidStore) -> str:
    """The text a store embeds (and dedups on)."""
    return memory_text(valid.type, body_of(valid))


def _cited_memory(valid: ValidStore, view: View, who: Who, memory_id: str) -> str | None:
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


def _one_at_two_versions(new: str, old: str) -> bool:
    return versions_of_one(new, old) or suffixed_versions(new, old)
