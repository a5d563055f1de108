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


_DAY_NAMES: Final = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CLOCK_RANGE = re.compile(
    r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*(?:-|\u2013|to)\s*(\d{1,2})(?::(\d{2}))?\s*(am|pm)?)?"
)
_DAILY: Final = frozenset({"daily", "nightly"})
_ZONES: Final = frozenset({"utc", "gmt", "cet", "cest", "pst", "pdt", "est", "edt", "ist", "jst"})


def schedule_form(text: str) -> tuple[frozenset[str], tuple[str, ...], frozenset[str]] | None:
    """A weekly schedule in one form, however written: its weekdays (``Thu``, ``Thursdays``,
    a cron line's day field; none: every day), its times of day as ``HH:MM`` (``6-8am`` is
    ``06:00``, ``08:00``; ``0 7 * * 2`` is Tuesday ``07:00``) and its time zone words
    (``UTC``). None when the text names neither a weekday nor a time of day, or holds more
    than that (a cron line with a day of the month, a cadence longer than a day: ``every 2
    weeks``, ``monthly``; a number of three digits or more)."""
    low = text.strip().casefold()
    if _CRON.match(low):
        return _cron_form(low)
    words = re.findall(r"[a-z]+", low)
    # A day's cadence says no more than a time of day alone; a longer one says more. A
    # number of three digits or more is no clock (a year, a port, an amount).
    if set(words) & (CADENCE_WORDS - _DAILY) or re.search(r"\d{3}", low):
        return None
    days = frozenset(m.group(0)[:3] for m in _WEEKDAY.finditer(low))
    times: list[str] = []
    for m in _CLOCK_RANGE.finditer(_WEEKDAY.sub(" ", low)):
        start_h, start_m, start_half, end_h, end_m, end_half = m.groups()
        if start_m is None and start_half is None and end_half is None:
            continue  # a bare number: a count, not a time
        times.append(_clock(start_h, start_m, start_half or end_half))
        if end_h is not None:
            times.append(_clock(end_h, end_m, end_half or start_half))
    if not days and not times:
        return None
    return days, tuple(times), frozenset(w for w in words if w in _ZONES)


def _clock(hour: str, minute: str | None, half: str | None) -> str:
    h = int(hour) % 12 + (12 if half == "pm" else 0) if half else int(hour)
    return f"{h:02d}:{int(minute or 0):02d}"


def _cron_form(line: str) -> tuple[frozenset[str], tuple[str, ...], frozenset[str]] | None:
    minute, hour, dom, month, dow = line.split()
    if dom != "*" or month != "*" or not minute.isdigit() or not hour.isdigit():
        return None
    days: set[str] = set()
    for part in dow.split(","):
        if part == "*":
            continue
        low_high = part.split("-")
        if not all(p.isdigit() for p in low_high) or len(low_high) > 2:
            return None
        first, last = int(low_high[0]), int(low_high[-1])
        days |= {_DAY_NAMES[d % 7] for d in range(first, last + 1)}
    return frozenset(days), (f"{int(hour):02d}:{int(minute):02d}",), frozenset()


def same_schedule(left: str, right: str) -> bool:
    """Whether two objects state one weekly schedule in other words (:func:`schedule_form`):
    the same weekdays and times of day, and the same zone where both name one
    (``Thursday 06:00-08:00 UTC`` / ``Thu 6-8am UTC``, ``0 7 * * 2`` / ``Tuesdays 07:00``)."""
    a, b = schedule_form(left), schedule_form(right)
    if a is None or b is None or a[:2] != b[:2]:
        return False
    return not (a[2] and b[2]) or a[2] == b[2]
