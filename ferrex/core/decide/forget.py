"""The decisions over memories that exist: forget (:func:`decide_forget`, dropping the
entities no memory names any more), confirm (:func:`decide_validate`; a possible conflict
settled, :func:`decide_settle`), the lifecycle marks (:func:`decide_mark`), expiry
(:func:`decide_expiry`), recall hits journaled (:func:`decide_access`) and eviction under a
budget (:func:`decide_eviction`). Ids the caller cannot see, or that expired, are not
found, exactly like ids that do not exist."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, NotRequired, TypedDict

from ferrex.errors import NotFound, UsageError
from ferrex.rules.assess import assess, eviction_candidate, text_bytes
from ferrex.rules.eviction import eviction_plan
from ferrex.rules.freshness import StalenessParams
from ferrex.rules.lifecycle import check_importance, check_pinned, expired
from ferrex.rules.visibility import Mention, after_forget, sees
from ferrex.times import rfc3339
from journal import (
    Access,
    CurrentAgain,
    Event,
    FactsDiffer,
    KeptEntity,
    MemoriesAccessed,
    MemoriesForgotten,
    MemoriesValidated,
    MemoryMarked,
    MemorySuperseded,
)
from journal.events import ValidationSource
from projections.readmodel.predicates import is_current
from projections.rows import Memory

from ..view import View
from . import Decision
from .notes import current_again_note
from .shared import Who, answer_doc, checked_ids, supersedable


class ForgetAnswer(TypedDict):
    """The forget tool's answer (:meth:`ForgetResult.as_dict`); the HTTP API's
    ``ForgetAnswer`` schema is read from it (``server/dashboard/schemas.typed``)."""

    forgotten: list[str]
    not_found: list[str]
    dropped_entities: list[str]
    position: int | None
    """None: nothing was written (none of the ids was found)."""
    current_again: NotRequired[list[CurrentAgainAnswer]]
    """The memories a forgotten one had replaced, current again (absent: none)."""
    warnings: NotRequired[list[str]]


class CurrentAgainAnswer(TypedDict):
    """A memory a forgotten one had replaced, valid again, and a sentence saying so."""

    id: str
    replaced_by: str
    note: str


@dataclass(frozen=True)
class ForgetResult:
    forgotten: tuple[str, ...]
    not_found: tuple[str, ...]
    dropped_entities: tuple[str, ...]
    position: int | None
    warnings: tuple[str, ...] = ()
    current_again: tuple[CurrentAgainAnswer, ...] = ()

    def as_dict(self) -> ForgetAnswer:
        doc: ForgetAnswer = {
            "forgotten": list(self.forgotten),
            "not_found": list(self.not_found),
            "dropped_entities": list(self.dropped_entities),
            "position": self.position,
        }
        if self.current_again:
            doc["current_again"] = list(self.current_again)
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        return doc


class ConfirmAnswer(TypedDict):
    """The confirm tool's answer: :meth:`ValidateResult.as_dict`, to which the service adds
    what a confirm settled (``differ``, ``superseded``) and marked (``marked``, the mark's
    ``position`` and warnings). The HTTP API's ``ConfirmAnswer`` schema is read from it."""

    validated: list[str]
    not_found: list[str]
    marked: NotRequired[list[str]]
    position: int | None
    """None: nothing was written (none of the ids was found)."""
    warnings: NotRequired[list[str]]
    differ: NotRequired[list[list[str]]]
    superseded: NotRequired[list[str]]


@dataclass(frozen=True)
class ValidateResult:
    validated: tuple[str, ...]
    not_found: tuple[str, ...]
    position: int | None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> ConfirmAnswer:
        doc: ConfirmAnswer = {
            "validated": list(self.validated),
            "not_found": list(self.not_found),
            "position": self.position,
        }
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        return doc


@dataclass(frozen=True)
class MarkResult:
    marked: tuple[str, ...]
    not_found: tuple[str, ...]
    position: int | None
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return answer_doc(self)


def confirmable(asked: Sequence[str], shown: Iterable[str]) -> list[str]:
    """The ids a recall's caller confirms as correct (``validate_ids``), which must all be
    ids that recall showed it: a usage error naming the others, and nothing validated."""
    returned = set(shown)
    foreign = [i for i in asked if i not in returned]
    if foreign:
        raise UsageError(
            f"the ids to confirm (validate_ids; --validate on the command line) must be ids "
            f"this recall returned; not returned: "
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
    gone for ``caller``, so it is the same whether or not others' private memories exist.

    A memory that a forgotten one had replaced (its ``superseded_by``) is current again
    (``current_again`` of the event and the answer): forgetting the newer value says it should
    not be believed, so the slot falls back to the value before it rather than to nothing.
    Forgetting both (for privacy, say) forgets both; the answer names each memory made current
    again, so a caller who wanted the slot empty forgets that one too."""
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
    revived: list[CurrentAgainAnswer] = []
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
        again = _current_again(view, memories, found_ids)
        revived += [
            _current_again_answer(older, newer)
            for older, newer in again
            if sees(caller, older.agent_id, older.visibility)
        ]
        events.append(
            MemoriesForgotten(
                memory_ids=tuple(m.memory_id for m in memories),
                namespace=namespace,
                reason="request",
                dropped_entity_ids=tuple(dropped),
                kept_entities=tuple(kept),
                current_again=tuple(CurrentAgain(o.memory_id, n.memory_id) for o, n in again),
            )
        )
    order = tuple(i for i in wanted_ids if i in found_ids)
    result = ForgetResult(order, not_found, tuple(all_dropped), None, current_again=tuple(revived))
    return Decision(tuple(events), result)


def _current_again(
    view: View, forgotten: Sequence[Memory], leaving: set[str]
) -> list[tuple[Memory, Memory]]:
    """The memories (each with the forgotten one that had replaced it) that forgetting
    ``forgotten`` makes current again: superseded by one of them, not forgotten themselves.
    They are looked for where a replacement lives: the memory a store named in ``supersedes``,
    the facts of the same subject under any of its spellings (a slot's older value, or one a
    confirm superseded) and the
    versions of the same procedure. A summary's sources are not among them (undoing a
    consolidation is ``consolidate --undo``)."""
    by_id = {m.memory_id: m for m in forgotten}
    found: dict[str, tuple[Memory, Memory]] = {}
    for newer in forgotten:
        candidates: list[Memory] = []
        if newer.supersedes is not None and (named := view.memory(newer.supersedes)) is not None:
            candidates.append(named)
        if newer.type == "semantic" and newer.subject_key is not None:
            for key in _spellings_of(view, newer.namespace, newer.subject_key):
                candidates += view.subject_facts(newer.namespace, key)
        if newer.type == "procedural" and newer.procedure_name:
            candidates += view.procedures(newer.namespace, newer.procedure_name)
        for older in candidates:
            if older.superseded_by == newer.memory_id and older.memory_id not in leaving:
                found[older.memory_id] = (older, by_id[newer.memory_id])
    return [found[k] for k in sorted(found)]


def _spellings_of(view: View, namespace: str, key: str) -> list[str]:
    """A subject's key and every other spelling of the entities spelled so: a fact that
    replaced another may name its subject otherwise (``the ledger service`` / ``ledger
    service``)."""
    spellings = view.spellings(namespace)
    entities = {s.entity_id for s in spellings if s.normalized == key}
    return sorted({key} | {s.normalized for s in spellings if s.entity_id in entities})


def _current_again_answer(older: Memory, newer: Memory) -> CurrentAgainAnswer:
    return {
        "id": older.memory_id,
        "replaced_by": newer.memory_id,
        "note": current_again_note(older, newer.memory_id),
    }


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
    if others and set(others) == set(wanted) and len(wanted) == 1:
        raise UsageError(
            f"{wanted[0]} cannot differ from itself",
            hint="confirm ids=[NEW] differs_from=OLD names two facts that both hold",
        )
    at = now.timestamp()

    def visible(memory_id: str) -> Memory | None:
        m = view.memory(memory_id)
        ok = m is not None and sees(caller, m.agent_id, m.visibility)
        return m if ok and m is not None and not expired(m.expires_at, at) else None

    found = {i: m for i in dict.fromkeys([*wanted, *others]) if (m := visible(i)) is not None}
    missing = tuple(i for i in dict.fromkeys([*wanted, *others]) if i not in found)
    if others and not any(o in found for o in others):
        # Nothing to tell apart: the confirm it came with is refused whole, not half done.
        raise NotFound(
            f"differs_from names no memory you can see: {', '.join(others)}; nothing was confirmed",
            hint="differs_from takes the id of the other fact (the possible_conflict named it)",
        )
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
        if supersedes == new.memory_id:
            raise UsageError(
                f"{new.memory_id} cannot supersede itself",
                hint="confirm ids=[NEW] supersedes=OLD names two facts: the new one and the one "
                "it replaces",
            )
        if not is_current(new):
            raise UsageError(
                f"{new.memory_id} is already superseded by {new.superseded_by}: a replaced "
                "fact replaces nothing",
                hint=f"confirm the current version, {new.superseded_by}, or store the value "
                "again if it holds once more",
            )
        who = Who(new.namespace, caller, "private" if new.visibility == "private" else "shared")
        old = supersedable(supersedes, new.namespace, view, who, now)
        if old.type != new.type:
            # Most likely ids mixed up while settling a flag: an event confirmed would retire
            # a fact it may not even be about.
            raise UsageError(
                f"{new.memory_id} is {_A_TYPE[new.type]} and {old.memory_id} "
                f"{_A_TYPE[old.type]}: a confirm replaces a memory only with one of its kind",
                hint="check the ids (the possible_conflict named the pair); to replace it with "
                "other text, store that with supersedes",
            )
        t_invalid = datetime.fromtimestamp(max(new.t_valid, old.t_valid), UTC)
        events.append(MemorySuperseded(memory_id=old.memory_id, namespace=new.namespace,
                                       t_invalid=t_invalid, superseded_by=new.memory_id,
                                       reason="explicit"))  # fmt: skip
        ended = (old.memory_id,)
    return Decision(tuple(events), SettleResult(tuple(pairs), ended, missing))


_A_TYPE: Final = {"episodic": "an event", "semantic": "a fact", "procedural": "a procedure"}


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
