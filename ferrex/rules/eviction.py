"""Eviction: which memories to forget, and in what order, when a storage budget is exceeded.

A pure plan over plain values; the caller journals it as forget events (reason
``eviction``), so an eviction is auditable and a replay repeats it. Priority, first to last:

1. ``superseded_past_retention``: a superseded memory (``t_invalid <= now``) whose
   invalidation is at least ``superseded_retention_days`` (90) old, oldest invalidation first.
   Within retention it is kept, so that ``as_of`` can still answer for the recent past.
2. ``stale_unreferenced_episodic``: an active episodic memory labelled ``stale`` that is
   unreferenced: linked to no entity, and never recalled or not recalled for
   ``unused_after_days`` (90). Most stale first.
3. ``stale_episodic``: every other active episodic memory labelled ``stale``. Most stale first.

Never evicted by a budget: pinned memories (``ferrex.rules.lifecycle``), active semantic
facts and procedures (the agent's knowledge; only supersede or an explicit forget removes
them), superseded memories within retention, and episodic memories that are fresh or aging.
Ties are broken by memory id, so one input always gives one plan.

The plan is greedy in priority order: it stops as soon as the freed bytes cover the overshoot,
which may forget one large low-priority memory rather than several small ones further down;
priority is the promise, not the fewest evictions. When the evictable memories cannot cover the
overshoot, the plan holds all of them and the caller reports the shortfall (``bytes_over``
minus the sizes planned): protected memories are not touched to meet a budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ferrex.errors import UsageError
from ferrex.rules.freshness import DAY, StalenessLabel

EvictionReason = Literal[
    "superseded_past_retention", "stale_unreferenced_episodic", "stale_episodic"
]


@dataclass(frozen=True)
class EvictionParams:
    superseded_retention_days: float = 90.0
    unused_after_days: float = 90.0

    def __post_init__(self) -> None:
        for name in ("superseded_retention_days", "unused_after_days"):
            days = getattr(self, name)
            if not (math.isfinite(days) and days >= 0):
                raise UsageError(f"eviction {name} must be a number of days >= 0, got {days!r}")


DEFAULT_EVICTION: Final = EvictionParams()


@dataclass(frozen=True)
class EvictionCandidate:
    """A memory as eviction sees it; ``staleness`` and ``label`` computed at the same ``now``."""

    memory_id: str
    type: str
    size_bytes: int
    t_invalid: float | None
    staleness: float
    label: StalenessLabel
    access_count: int
    last_accessed: float | None
    referenced_by_entities: bool
    pinned: bool = False


def eviction_reason(
    c: EvictionCandidate, now: float, params: EvictionParams = DEFAULT_EVICTION
) -> EvictionReason | None:
    """Why ``c`` may be evicted at ``now``, or ``None`` when a budget must not touch it."""
    if c.pinned:
        return None
    if c.t_invalid is not None and c.t_invalid <= now:
        past_retention = now - c.t_invalid >= params.superseded_retention_days * DAY
        return "superseded_past_retention" if past_retention else None
    if c.type != "episodic" or c.label != "stale":
        return None
    unused = (
        c.access_count == 0
        or c.last_accessed is None
        or now - c.last_accessed >= params.unused_after_days * DAY
    )
    if unused and not c.referenced_by_entities:
        return "stale_unreferenced_episodic"
    return "stale_episodic"


_TIER: Final[dict[EvictionReason, int]] = {
    "superseded_past_retention": 0,
    "stale_unreferenced_episodic": 1,
    "stale_episodic": 2,
}


def eviction_plan(
    memories: Sequence[EvictionCandidate],
    bytes_over: int,
    now: float,
    params: EvictionParams = DEFAULT_EVICTION,
) -> list[tuple[str, EvictionReason]]:
    """(memory id, reason) in eviction order, until their sizes cover ``bytes_over``.

    Empty when nothing is over budget; shorter than needed when the evictable memories do not
    cover the overshoot (see the module docstring).
    """
    if bytes_over <= 0:
        return []
    ranked: list[tuple[tuple[int, float, str], EvictionReason, EvictionCandidate]] = []
    for c in memories:
        reason = eviction_reason(c, now, params)
        if reason is None:
            continue
        # Oldest invalidation first in tier 0 (where t_invalid is set), most stale first after.
        if reason == "superseded_past_retention" and c.t_invalid is not None:
            order = c.t_invalid
        else:
            order = -c.staleness
        ranked.append(((_TIER[reason], order, c.memory_id), reason, c))
    ranked.sort(key=lambda entry: entry[0])
    plan: list[tuple[str, EvictionReason]] = []
    freed = 0
    for _, reason, c in ranked:
        if freed >= bytes_over:
            break
        plan.append((c.memory_id, reason))
        freed += c.size_bytes
    return plan
