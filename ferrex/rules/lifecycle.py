"""A memory's lifecycle marks: importance, pin and time to live, as pure rules.

- **Importance** is a number from 0 to 1, :data:`DEFAULT_IMPORTANCE` (0.5) unless an agent
  says otherwise. Recall multiplies a candidate's score by :func:`importance_factor`, beside
  the recency boost; the factor of 0.5 is exactly 1, so a memory nobody marked ranks as it
  did before importance existed.
- **Pinned**: the agent asked to keep it. A pinned memory is never labelled stale or aging
  (``ferrex.rules.freshness.staleness``), so it is never hidden as stale, never a forget
  candidate and never evicted; an explicit ``supersedes`` (or forget) still replaces
  (or removes) it, but an automatic conflict does not: the agent is asked to say so.
- **Time to live**: a store may say how long a memory is scratch state, in seconds or as a
  duration ``\\d+[smhd]`` (``90s``, ``2h``). The store turns it into an absolute
  ``expires_at`` carried by the ``memory.marked`` event, so a replay never reads a clock.
  Recall hides a memory from the moment :func:`expired`; the owner's periodic sweep then
  forgets it (``ferrex.core.decide.decide_expiry``). A pinned memory has no time to live.

Nothing here reads a clock: every function takes ``now`` when it needs one.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Final, NotRequired, TypedDict

from ferrex.errors import UsageError
from ferrex.times import rfc3339

DEFAULT_IMPORTANCE: Final = 0.5
#: The range of importance (the tools' schemas say so too).
MIN_IMPORTANCE: Final = 0.0
MAX_IMPORTANCE: Final = 1.0
IMPORTANCE_WEIGHT: Final = 0.5
"""How far importance moves a recall score: the factor runs from 0.75 (importance 0) to
1.25 (importance 1)."""
MAX_TTL_SECONDS: Final = 365 * 86400
_DURATION = re.compile(r"(\d{1,9})([smhd])")
_UNIT: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def importance_factor(importance: float, weight: float = IMPORTANCE_WEIGHT) -> float:
    """The multiplier of a recall score for ``importance``; exactly 1.0 at the default."""
    if importance == DEFAULT_IMPORTANCE:
        return 1.0
    return 1.0 + weight * (importance - DEFAULT_IMPORTANCE)


def check_importance(value: object) -> float:
    """An importance as given (a finite number from 0 to 1), or a usage error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(
            f"importance must be a number, got {type(value).__name__}",
            hint="give a number from 0 (trivial) to 1 (essential); 0.5 is the default",
        )
    if not MIN_IMPORTANCE <= value <= MAX_IMPORTANCE or not math.isfinite(value):
        raise UsageError(
            f"importance {value!r} is not a number from 0 to 1",
            hint="give a number from 0 (trivial) to 1 (essential); 0.5 is the default",
        )
    return float(value)


def check_pinned(value: object) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"pinned must be true or false, got {type(value).__name__}")
    return value


def parse_ttl(value: object) -> int | None:
    """A time to live in whole seconds: a positive integer, or ``\\d+[smhd]`` (``90s``,
    ``15m``, ``2h``, ``7d``); None when not given. At most a year."""
    if value is None:
        return None
    seconds: int
    if isinstance(value, bool):
        raise UsageError("ttl must be seconds or a duration such as 90s, 15m, 2h or 7d")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str):
        text = value.strip()
        found = _DURATION.fullmatch(text)
        if text.isdigit():
            seconds = int(text)
        elif found is not None:
            seconds = int(found.group(1)) * _UNIT[found.group(2)]
        else:
            raise UsageError(
                f"ttl {value[:40]!r} is not a duration",
                hint="give seconds (3600) or a number and a unit: 90s, 15m, 2h, 7d",
            )
    else:
        raise UsageError("ttl must be seconds or a duration such as 90s, 15m, 2h or 7d")
    if not 0 < seconds <= MAX_TTL_SECONDS:
        raise UsageError(
            f"ttl must be between 1 second and 365 days, got {seconds} seconds",
            hint="leave ttl out for a memory that does not expire",
        )
    return seconds


def check_marks(pinned: bool, ttl: int | None) -> None:
    """A pinned memory is kept; one with a time to live is scratch: not both."""
    if pinned and ttl is not None:
        raise UsageError(
            "a memory cannot be both pinned and expiring (ttl)",
            hint="leave ttl out to keep it pinned, or pinned out to let it expire",
        )


def expired(expires_at: float | None, now: float) -> bool:
    """Whether a memory with this expiry (epoch seconds; None: never) has expired at ``now``."""
    return expires_at is not None and expires_at <= now


class Marks(TypedDict):
    """A memory's marks in an answer (:func:`marks_doc`): each only when not at its default."""

    pinned: NotRequired[bool]
    importance: NotRequired[float]
    expires_at: NotRequired[str]


def marks_doc(importance: float, pinned: bool, expires_at: datetime | float | None) -> Marks:
    """A memory's marks as answers show them: only those not at their default (importance
    0.5, not pinned, no expiry), so the answer about an unmarked memory is unchanged."""
    doc: Marks = {}
    if pinned:
        doc["pinned"] = True
    if importance != DEFAULT_IMPORTANCE:
        doc["importance"] = importance
    if expires_at is not None:
        doc["expires_at"] = rfc3339(expires_at)
    return doc
