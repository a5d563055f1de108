"""Consolidation: which episodic memories fold together (:func:`consolidation_groups`),
one group folded into an extractive summary (:func:`decide_consolidate`), a consolidation
undone (:func:`decide_unfold`), and what a forget does to the summaries it touches
(:func:`decide_refold`). The summary's text is :mod:`ferrex.rules.consolidation`'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ferrex.errors import NotFound, Refused
from ferrex.rules.consolidation import Source, Unit, summarize
from ferrex.rules.lifecycle import DEFAULT_IMPORTANCE
from journal import (
    Event,
    Fold,
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesUnfolded,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
)
from journal.events import EpisodeRef, Visibility
from projections.readmodel.predicates import foldable_rule, row_test
from projections.rows import Memory

from ..view import View
from . import Decision, NewId
from .notes import UNFOLD_HINT
from .shared import checked_ids


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


def foldable(created_before: float) -> Callable[[Memory, bool], bool]:
    """Whether consolidation may fold a memory, given whether it is a summary (it folds
    others, which the row does not say): the rule *foldable*,
    ``projections.readmodel.predicates.foldable_rule``, read once, the spec the read model's
    listing is rendered from too. An episodic memory still valid, learned (``created_at``,
    when ferrex recorded it, not its event time) before ``created_before``, not pinned,
    without an expiry, its text there and not empty, not a summary (a summary is not folded
    again)."""
    return row_test(foldable_rule(created_before))


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
    memories: Sequence[Memory],
    *,
    created_before: float,
    summaries: Set[str],
    min_size: int = 2,
) -> list[tuple[str, list[Memory]]]:
    """The groups consolidation folds, each into one summary: the :func:`foldable` memories
    (``summaries``: the ids among them of memories that fold others) of one namespace, one
    agent, one visibility and one source (or one derived episode), at least ``min_size`` of
    them, in episode order; groups ordered by namespace, agent, key and
    visibility. (Per visibility: an agent's shared memories folded with its private ones
    would make a private summary, and what others could see would vanish from their view.)
    Within one source, a group never spans a pause of more than ``SESSION_GAP_SECONDS``
    (:func:`_sessions`) and never holds two memories whose entity sets do not overlap
    (:func:`_by_entities`: observations of different entities imported from one file are
    not one story)."""
    groups: dict[tuple[str, str, str, str], list[Memory]] = {}
    may_fold = foldable(created_before)
    for m in memories:
        key = _group_key(m)
        if key is None or not may_fold(m, m.memory_id in summaries):
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
    summaries: Set[str],
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
    expiring, younger than ``created_before``, already folded, a summary: one of
    ``summaries``) are left out; fewer than two
    left, or a summary that would drop nothing (every turn states something), nothing is
    written."""
    may_fold = foldable(created_before)
    kept = [m for m in members if may_fold(m, m.memory_id in summaries)]
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
            hint=UNFOLD_HINT,
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
