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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ferrex.read.seen import Sight, one_line
from ferrex.rules.assess import Assessed, assess, eviction_candidate, text_bytes
from ferrex.rules.eviction import eviction_reason
from ferrex.rules.freshness import (
    DAY,
    StalenessConfig,
)
from ferrex.rules.predicates import match_known
from ferrex.rules.subjects import object_form
from ferrex.times import rfc3339
from projections.documents import subject_key
from projections.sqlite import Memory, ReadModel

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


def contradictions(
    memories: list[Memory], subject_of: SubjectOf | None = None
) -> list[dict[str, Any]]:
    """Active single-valued facts that disagree: same subject (the entity its spelling
    names in ``subject_of``, else the spelling) and predicate (fuzzy-matched), objects that
    do not agree. Multi-valued facts never contradict anything."""
    by_subject: dict[tuple[str, str], list[Memory]] = defaultdict(list)
    for m in memories:
        if (
            m.type == "semantic"
            and m.t_invalid is None
            and not m.multi_valued
            and m.subject
            and m.predicate_normalized
        ):
            key = subject_key(m.subject)
            entity = (subject_of or {}).get((m.namespace, key))
            by_subject[(m.namespace, entity or key)].append(m)
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
            objects = {object_form(f.object or "") for f in group}
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


def possible_conflicts(rm: ReadModel, active: list[Memory]) -> list[dict[str, Any]]:
    """Pairs of active facts the store kept side by side because their subjects are
    *possibly* the same (``facts.possible_conflict``), both among ``active`` (so both
    visible to the caller), not since merged or said to differ; by ids."""
    by_id = {m.memory_id: m for m in active if m.type == "semantic"}
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for c in rm.possible_conflicts(sorted(by_id)):
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
                "what_to_do": f"if {facts[0].subject!r} and {facts[1].subject!r} are one "
                "thing, store the right value with supersedes (or merge the entities); "
                "if not, say they differ (ferrex entity differ); confirm the one that holds",
            }
        )  # fmt: skip
    return sorted(out, key=lambda d: [f["id"] for f in d["facts"]])


def directory_bytes(path: Path) -> int:
    """Bytes on disk (allocated blocks: Qdrant's preallocated files are sparse)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    if not path.exists():
        return 0
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


RARELY_RECALLED: Final = 3
"""A forget candidate has been recalled fewer times than this."""


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
    possible_conflicts: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "stale": len(self.stale),
            "aging": len(self.aging),
            "unvalidated": len(self.unvalidated),
            "conflicts": len(self.contradictions),
            "possible_conflicts": len(self.possible_conflicts),
            "forget_candidates": len(self.forget_candidates),
        }


def attention(
    active: list[Memory],
    now: float,
    staleness_of: StalenessConfig,
    *,
    unvalidated_after_days: float = 30.0,
    rm: ReadModel | None = None,
    sight: Sight | None = None,
) -> tuple[list[Assessed], Attention]:
    """Every active memory assessed with its own namespace's staleness, and what needs
    attention among them. With ``rm``, contradictions group facts by the entity their
    subject names (through the spellings ``sight`` lets the caller see; all with None),
    and the possible conflicts are listed."""
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
    if rm is None:
        return assessed, Attention(stale, aging, unvalidated, contradictions(active), rarely)
    subject_of = subject_entities(rm, [m.namespace for m in active], sight)
    return assessed, Attention(
        stale, aging, unvalidated, contradictions(active, subject_of), rarely,
        possible_conflicts(rm, active),
    )  # fmt: skip


def _by_namespace(memories: list[Memory]) -> dict[str, list[Memory]]:
    groups: dict[str, list[Memory]] = defaultdict(list)
    for m in memories:
        groups[m.namespace].append(m)
    return groups


def stats(
    rm: ReadModel,
    sight: Sight,
    staleness_of: StalenessConfig,
    *,
    namespace: str | None,
    detailed: bool,
    recent: int = 3,
) -> dict[str, Any]:
    """What an agent reads first: totals, the latest memories, the counts of :class:`Attention`;
    of what ``sight`` sees (visible, unexpired: ``ferrex.read.seen``)."""
    now = sight.now
    memories = sight.shown(rm.memories(namespace=namespace))
    active = [m for m in memories if m.t_invalid is None]
    assessed, needs = attention(active, now, staleness_of, rm=rm, sight=sight)
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
            possible_conflicts=needs.possible_conflicts[:10],
            entities=len(sight.entities(rm, namespace)),
        )
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
) -> dict[str, Any]:
    """What needs attention, listed (``limit`` each) with the same counts as :func:`stats`."""
    now = sight.now
    memories = sight.shown(rm.memories(namespace=namespace))
    active = [m for m in memories if m.t_invalid is None]
    _, needs = attention(
        active, now, staleness_of, unvalidated_after_days=unvalidated_after_days, rm=rm,
        sight=sight,
    )  # fmt: skip
    by_id = {m.memory_id: m for m in memories}
    last_use: dict[str, float] = {}
    for entity_id, memory_id in rm.links():
        m = by_id.get(memory_id)
        if m is not None and m.t_invalid is None:
            last_use[entity_id] = max(last_use.get(entity_id, 0.0), m.t_valid)
    dormant = [
        {"id": e.entity_id, "name": e.name, "last_referenced": rfc3339(last_use.get(e.entity_id))}
        for e in sight.entities(rm, namespace)
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
