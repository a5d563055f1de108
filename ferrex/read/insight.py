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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ferrex.read.conflicts import Conflict, listed_contradictions, possible_conflicts
from ferrex.read.labels import RARELY_RECALLED, count_labels
from ferrex.read.seen import Sight, one_line
from ferrex.rules.assess import Assessed, eviction_candidate, text_bytes
from ferrex.rules.eviction import EvictionReason, eviction_reason
from ferrex.rules.freshness import DAY, StalenessConfig
from ferrex.rules.visibility import sees
from ferrex.times import Rfc3339, rfc3339
from projections.readmodel.predicates import is_current
from projections.rows import Memory, MemoryCount
from projections.sqlite import ReadModel


def directory_bytes(path: Path) -> int:
    """Bytes on disk (allocated blocks: Qdrant's preallocated files are sparse)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    if not path.exists():
        return 0
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


class AttentionCounts(TypedDict):
    """How many memories need attention, by reason."""

    stale: int
    aging: int
    unvalidated: int
    conflicts: int
    possible_conflicts: int
    forget_candidates: int


class RecentMemory(TypedDict):
    id: str
    type: str
    summary: str


class StatsAnswer(TypedDict):
    """The stats tool's answer (:func:`stats`): the totals, and with ``detailed`` (what the
    HTTP API always asks) the rest; the service adds the journal and storage sizes (the
    operator only) and the models. The HTTP API's ``Stats`` schema is read from it."""

    namespace: str | None
    total: int
    recent: list[RecentMemory]
    needs_attention: AttentionCounts
    expiring: int
    by_type: NotRequired[dict[str, int]]
    staleness: NotRequired[dict[str, int]]
    conflicts: NotRequired[list[Conflict]]
    possible_conflicts: NotRequired[list[Conflict]]
    entities: NotRequired[int]
    journal: NotRequired[dict[str, Any]]
    storage_bytes: NotRequired[dict[str, int]]
    models: NotRequired[dict[str, Any]]


class StaleMemory(TypedDict):
    id: str
    summary: str
    staleness: float
    reasons: list[str]


class UnvalidatedMemory(TypedDict):
    id: str
    summary: str
    age_days: float


class ForgetCandidate(TypedDict):
    id: str
    summary: str
    access_count: int
    last_accessed: Rfc3339 | None
    label: str
    eviction: EvictionReason | None


class DormantEntity(TypedDict):
    id: str
    name: str
    last_referenced: Rfc3339 | None


class ReflectAnswer(TypedDict):
    """The reflect tool's answer (:func:`reflect`); the HTTP API's ``Reflect`` schema is
    read from it."""

    namespace: str | None
    counts: AttentionCounts
    stale: list[StaleMemory]
    unvalidated: list[UnvalidatedMemory]
    contradictions: list[Conflict]
    possible_conflicts: list[Conflict]
    forget_candidates: list[ForgetCandidate]
    dormant_entities: list[DormantEntity]


@dataclass(frozen=True)
class Attention:
    """What needs attention among the active memories a caller sees; stats counts it,
    reflect lists it.

    - ``stale_count`` / ``aging_count``: labelled so by the namespace's staleness; ``stale``
      lists the most stale first (the first ``listed``);
    - ``unvalidated``: never validated and stored at least ``unvalidated_after_days`` ago
      (oldest first; the first ``listed`` of ``unvalidated_count``): a memory just stored
      has had no chance to be confirmed;
    - ``contradictions``: groups of active facts that disagree
      (:func:`~ferrex.read.conflicts.contradictions`; the first ``listed`` of
      ``contradiction_count``);
    - ``forget_candidates``: stale or aging and recalled fewer than
      :data:`~ferrex.read.labels.RARELY_RECALLED` times (stale first, then most stale; the
      first ``listed`` of ``forget_count``); a fresh memory never is one.
    """

    stale: list[Assessed]
    unvalidated: list[Memory]
    contradictions: list[Conflict]
    forget_candidates: list[Assessed]
    possible_conflicts: list[Conflict]
    unvalidated_count: int
    stale_count: int
    aging_count: int
    forget_count: int
    contradiction_count: int

    def counts(self) -> AttentionCounts:
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
        if is_current(m):
            total -= 1
            by_type[m.type] -= 1
            expiring -= 1
        else:
            superseded -= 1
    return Tally(total, {t: n for t, n in sorted(by_type.items()) if n}, superseded, expiring)


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
    all), reading only those that may need it: labels counted in SQL
    (:func:`~ferrex.read.labels.count_labels`), facts of the first contradictions, memories
    named in a possible conflict.
    Contradictions group facts by the entity their subject names (through the spellings the
    caller sees); the first ``conflicts_listed`` (else ``listed``) of them are listed."""
    now = sight.now
    kinds = sorted({(c.namespace, c.type) for c in counts if c.active})
    labels = count_labels(rm, sight, staleness_of, kinds, namespace, listed)

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
            if is_current(m) and (namespace is None or m.namespace == namespace)
        ],
    )
    found, contradiction_count = listed_contradictions(
        rm, sight, namespace, listed if conflicts_listed is None else conflicts_listed
    )
    return Attention(
        stale=stale[:listed], unvalidated=unvalidated, contradictions=found,
        forget_candidates=rarely[:listed], possible_conflicts=conflicts,
        unvalidated_count=unvalidated_count, stale_count=labels.stale,
        aging_count=labels.aging, forget_count=labels.rarely,
        contradiction_count=contradiction_count,
    )  # fmt: skip


def stats(
    rm: ReadModel,
    sight: Sight,
    staleness_of: StalenessConfig,
    *,
    namespace: str | None,
    detailed: bool,
    recent: int = 3,
) -> StatsAnswer:
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
        doc: StatsAnswer = {
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
            doc["by_type"] = seen.by_type
            doc["staleness"] = {
                **{k: n for k, n in labels.items() if n},
                "superseded": seen.superseded,
            }
            doc["conflicts"] = needs.contradictions[:10]
            doc["possible_conflicts"] = needs.possible_conflicts[:10]
            doc["entities"] = len(sight.entities(rm, namespace))
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
) -> ReflectAnswer:
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
        dormant: list[DormantEntity] = [
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
