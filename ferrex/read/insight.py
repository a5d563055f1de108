"""What ferrex tells about the memory as a whole: stats (brief and detailed) and reflect.

Both read the read model only (plus the recall hits not journaled yet, ``pending``, so a
recall counts at once). ``stats`` is what an agent asks at the start of a conversation (a few
hundred bytes), ``reflect`` what needs attention: stale and never validated memories with
reasons, contradictions, forget candidates and dormant entities. Both take their numbers from
one :func:`attention`, so ``stats``' counts are ``reflect``'s ``counts``, whatever ``limit``
cuts from reflect's lists. Times in answers are RFC 3339 UTC (ferrex.times).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from ferrex.rules.eviction import EvictionCandidate, eviction_reason
from ferrex.rules.freshness import (
    DAY,
    FreshnessInput,
    StalenessConfig,
    StalenessParams,
    staleness,
)
from ferrex.rules.lifecycle import expired
from ferrex.rules.predicates import match_known
from ferrex.times import rfc3339
from projections.documents import memory_text, subject_key
from projections.sqlite import Entity, Memory, ReadModel


@dataclass(frozen=True)
class Assessed:
    memory: Memory
    score: float
    label: str
    components: dict[str, float]


def freshness_input(m: Memory) -> FreshnessInput:
    """What staleness reads of a read-model row."""
    return FreshnessInput(
        type=m.type,
        t_valid=m.t_valid,
        t_invalid=m.t_invalid,
        created_at=m.created_at,
        last_accessed=m.last_accessed,
        last_validated=m.last_validated,
        access_count=m.access_count,
        pinned=m.pinned,
    )


def assess(memories: list[Memory], now: float, params: StalenessParams) -> list[Assessed]:
    out = []
    for m in memories:
        state = staleness(freshness_input(m), now, params)
        out.append(Assessed(m, state.score, state.label, state.components))
    return out


def text_bytes(m: Memory) -> int:
    """A memory's size for the storage budget: its text, UTF-8."""
    return len(memory_text(m.type, m.body()).encode())


def one_line(m: Memory, width: int = 80) -> str:
    text = " ".join(memory_text(m.type, m.body()).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def contradictions(memories: list[Memory]) -> list[dict[str, Any]]:
    """Active single-valued facts that disagree: same subject and predicate (fuzzy-matched),
    different objects. Multi-valued facts never contradict anything."""
    by_subject: dict[tuple[str, str], list[Memory]] = defaultdict(list)
    for m in memories:
        if (
            m.type == "semantic"
            and m.t_invalid is None
            and not m.multi_valued
            and m.subject
            and m.predicate_normalized
        ):
            by_subject[(m.namespace, subject_key(m.subject))].append(m)
    found: list[dict[str, Any]] = []
    for (namespace, _), facts in sorted(by_subject.items()):
        predicates = sorted({str(f.predicate_normalized) for f in facts})
        canonical: dict[str, str] = {}
        for p in predicates:
            # A typo of an earlier predicate of the subject counts as that predicate.
            canonical[p] = match_known(p, [q for q in canonical.values() if q != p]) or p
        groups: dict[str, list[Memory]] = defaultdict(list)
        for f in facts:
            groups[canonical[str(f.predicate_normalized)]].append(f)
        for predicate, group in sorted(groups.items()):
            objects = {" ".join((f.object or "").casefold().split()) for f in group}
            if len(group) > 1 and len(objects) > 1:
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


Visible = Callable[[str | None, str], bool]
"""Whether a caller may see a memory, from its owning agent and its visibility."""


def _memories(
    rm: ReadModel,
    namespace: str | None,
    visible: Visible | None,
    pending: Pending | None,
    now: float,
) -> list[Memory]:
    # An expired memory is gone the moment it expires, before the owner's sweep forgets it.
    memories = [m for m in rm.memories(namespace=namespace) if not expired(m.expires_at, now)]
    if visible is not None:
        memories = [m for m in memories if visible(m.agent_id, m.visibility)]
    if pending:
        memories = [with_pending(m, pending) for m in memories]
    return memories


def _entities(rm: ReadModel, namespace: str | None, visible: Visible | None) -> list[Entity]:
    """The entities a caller may see: shared ones, and those an agent's own private memory
    introduced (an entity's scope is the agent of the private memory that named it first);
    an entity a cascade kept for some agents only, if the caller is one of them."""
    entities = rm.entities(namespace)
    if visible is None:
        return entities
    return [
        e
        for e in entities
        if visible(e.agent_id, "private")
        and (e.viewers is None or any(visible(v, "private") for v in e.viewers))
    ]


def directory_bytes(path: Path) -> int:
    """Bytes on disk (allocated blocks: Qdrant's preallocated files are sparse)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    if not path.exists():
        return 0
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


Pending = Mapping[str, tuple[int, float]]
"""Recall hits not journaled yet, by memory id: (count, last access as float epoch seconds)."""

RARELY_RECALLED: Final = 3
"""A forget candidate has been recalled fewer times than this."""


def with_pending(m: Memory, pending: Pending) -> Memory:
    """``m`` with the recall hits still waiting in the access log counted, as the journal will."""
    hits = pending.get(m.memory_id)
    if hits is None:
        return m
    count, last = hits
    last_accessed = last if m.last_accessed is None else max(m.last_accessed, last)
    return replace(m, access_count=m.access_count + count, last_accessed=last_accessed)


@dataclass(frozen=True)
class Attention:
    """What needs attention among active memories; stats counts it, reflect lists it.

    - ``stale`` / ``aging``: labelled so by the namespace's staleness (most stale first);
    - ``unvalidated``: never validated and stored at least ``unvalidated_after_days`` ago
      (oldest first): a memory just stored has had no chance to be confirmed;
    - ``contradictions``: groups of active facts that disagree (:func:`contradictions`);
    - ``forget_candidates``: stale or aging and recalled fewer than :data:`RARELY_RECALLED`
      times (stale first, then most stale); a fresh memory never is one.
    """

    stale: list[Assessed]
    aging: list[Assessed]
    unvalidated: list[Memory]
    contradictions: list[dict[str, Any]]
    forget_candidates: list[Assessed]

    def counts(self) -> dict[str, int]:
        return {
            "stale": len(self.stale),
            "aging": len(self.aging),
            "unvalidated": len(self.unvalidated),
            "conflicts": len(self.contradictions),
            "forget_candidates": len(self.forget_candidates),
        }


def attention(
    active: list[Memory],
    now: float,
    staleness_of: StalenessConfig,
    *,
    unvalidated_after_days: float = 30.0,
) -> tuple[list[Assessed], Attention]:
    """Every active memory assessed with its own namespace's staleness, and what needs
    attention among them."""
    assessed = [
        a
        for namespace, group in _by_namespace(active).items()
        for a in assess(group, now, staleness_of.for_namespace(namespace))
    ]

    def most_stale(a: Assessed) -> tuple[float, str]:
        return (-a.score, a.memory.memory_id)

    stale = sorted((a for a in assessed if a.label == "stale"), key=most_stale)
    aging = sorted((a for a in assessed if a.label == "aging"), key=most_stale)
    unvalidated = sorted(
        (m for m in active if m.last_validated is None
         and now - m.created_at >= unvalidated_after_days * DAY),
        key=lambda m: (m.created_at, m.memory_id),
    )  # fmt: skip
    rarely = [a for a in stale + aging if a.memory.access_count < RARELY_RECALLED]
    return assessed, Attention(stale, aging, unvalidated, contradictions(active), rarely)


def _by_namespace(memories: list[Memory]) -> dict[str, list[Memory]]:
    groups: dict[str, list[Memory]] = defaultdict(list)
    for m in memories:
        groups[m.namespace].append(m)
    return groups


def stats(
    rm: ReadModel,
    now: float,
    staleness_of: StalenessConfig,
    *,
    namespace: str | None,
    detailed: bool,
    recent: int = 3,
    visible: Visible | None = None,
    pending: Pending | None = None,
) -> dict[str, Any]:
    """What an agent reads first: totals, the latest memories, the counts of :class:`Attention`."""
    memories = _memories(rm, namespace, visible, pending, now)
    active = [m for m in memories if m.t_invalid is None]
    assessed, needs = attention(active, now, staleness_of)
    latest = sorted(active, key=lambda m: (-m.created_at, m.memory_id))[:recent]
    doc: dict[str, Any] = {
        "namespace": namespace,
        "total": len(active),
        "recent": [{"id": m.memory_id, "type": m.type, "summary": one_line(m)} for m in latest],
        "needs_attention": needs.counts(),
        # Working memory: active memories with a time to live, which the sweep will forget.
        "expiring": sum(1 for m in active if m.expires_at is not None),
    }
    if detailed:
        by_type: dict[str, int] = defaultdict(int)
        labels: dict[str, int] = defaultdict(int)
        for a in assessed:
            by_type[a.memory.type] += 1
            labels[a.label] += 1
        labels["superseded"] = len(memories) - len(active)
        doc.update(
            by_type=dict(sorted(by_type.items())),
            staleness=dict(sorted(labels.items())),
            conflicts=needs.contradictions[:10],
            entities=len(_entities(rm, namespace, visible)),
        )
    return doc


def reflect(
    rm: ReadModel,
    now: float,
    staleness_of: StalenessConfig,
    *,
    namespace: str | None,
    limit: int = 10,
    unvalidated_after_days: float = 30.0,
    dormant_after_days: float = 90.0,
    visible: Visible | None = None,
    pending: Pending | None = None,
) -> dict[str, Any]:
    """What needs attention, listed (``limit`` each) with the same counts as :func:`stats`."""
    memories = _memories(rm, namespace, visible, pending, now)
    active = [m for m in memories if m.t_invalid is None]
    _, needs = attention(active, now, staleness_of, unvalidated_after_days=unvalidated_after_days)
    by_id = {m.memory_id: m for m in memories}
    last_use: dict[str, float] = {}
    for entity_id, memory_id in rm.links():
        m = by_id.get(memory_id)
        if m is not None and m.t_invalid is None:
            last_use[entity_id] = max(last_use.get(entity_id, 0.0), m.t_valid)
    dormant = [
        {"id": e.entity_id, "name": e.name, "last_referenced": rfc3339(last_use.get(e.entity_id))}
        for e in _entities(rm, namespace, visible)
        if now - last_use.get(e.entity_id, 0.0) >= dormant_after_days * DAY
    ]
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


def eviction_candidate(a: Assessed, size_bytes: int) -> EvictionCandidate:
    """An assessed memory as the eviction rules see it."""
    m = a.memory
    return EvictionCandidate(
        memory_id=m.memory_id,
        type=m.type,
        size_bytes=size_bytes,
        t_invalid=m.t_invalid,
        staleness=a.score,
        label=a.label,  # type: ignore[arg-type]
        access_count=m.access_count,
        last_accessed=m.last_accessed,
        referenced_by_entities=bool(m.entity_ids),
        pinned=m.pinned,
    )
