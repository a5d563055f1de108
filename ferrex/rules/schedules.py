"""When something happens, as an object says it (:func:`schedule_value`): ``quarterly``,
``every 15 minutes``, ``0 5 * * *``, ``Mondays 08:00``, ``at 01:00 UTC``. Two schedules under
two relations of one subject may be one slot (:func:`ferrex.rules.slot_outcomes.slot_match`).
"""

from __future__ import annotations

import re
from typing import Final

#: Words that say how often something happens.
CADENCE_WORDS: Final[frozenset[str]] = frozenset(
    {"hourly", "daily", "nightly", "weekly", "biweekly", "fortnightly", "monthly"}
    | {"quarterly", "yearly", "annually", "weekdays", "weekends", "continuously"}
)
_WEEKDAY = re.compile(
    r"\b(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?s?\b", re.IGNORECASE
)
_CRON = re.compile(r"^(?:[\d*/,-]+\s+){4}[\d*/,a-z-]+$", re.IGNORECASE)
_TIME_OF_DAY = re.compile(r"\b\d{1,2}(?::\d{2}|\s*[ap]m)\b", re.IGNORECASE)
_EVERY = re.compile(r"^every\b", re.IGNORECASE)


def schedule_value(text: str) -> bool:
    """Whether an object says when or how often something happens: a cadence word
    (:data:`CADENCE_WORDS`), a cron expression, ``every ...``, a weekday or a time of day."""
    low = text.strip().casefold()
    if not low or len(low.split()) > 8:
        return False
    words = set(re.findall(r"[a-z]+", low))
    return bool(
        words & CADENCE_WORDS
        or _CRON.match(low)
        or _EVERY.match(low)
        or _WEEKDAY.search(low)
        or _TIME_OF_DAY.search(low)
    )


def same_timing(left: str, right: str) -> bool:
    """Whether two schedules say the same part of when: both how often (a cadence word,
    ``every ...``, a weekday, a cron line) or both a time of day. ``daily`` and ``at 02:00``
    are two facts of one job (how often, and when), not one value said twice."""
    return bool(_timing(left) & _timing(right))


def _timing(text: str) -> set[str]:
    low = text.strip().casefold()
    parts = set()
    if set(re.findall(r"[a-z]+", low)) & CADENCE_WORDS or _EVERY.match(low) or _CRON.match(low):
        parts.add("often")
    if _WEEKDAY.search(low) or _CRON.match(low):
        parts.add("often")
    if _TIME_OF_DAY.search(low) or _CRON.match(low):
        parts.add("time")
    return parts
