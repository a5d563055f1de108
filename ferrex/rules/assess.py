"""A read-model row as the freshness and eviction rules see it, for both sides: the
write side's decisions (eviction, ``ferrex.core.decide``) and the read side (stats, reflect,
recall's staleness labels). Pure: attribute reads of a row and the rules, no I/O; the row
type is only named for typing, so importing this loads no store library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ferrex.rules.eviction import EvictionCandidate
from ferrex.rules.freshness import FreshnessInput, StalenessParams, staleness
from projections.documents import memory_text

if TYPE_CHECKING:
    from projections.rows import Memory


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
