"""Dates and periods named in a question, as a pure rule: text and a reference time in,
the period it names out.

``when("What did Sam do on December 4, 2023?", now)`` is the day of December 4, 2023;
``"in May"`` is the most recent May that has begun by ``now`` (this year's, or last year's
before May); ``"last week"`` is the seven days before the Monday of ``now``'s week;
``"yesterday"``, ``"today"``, ``"3 days ago"``, ``"last month"``, ``"this year"``,
``"in 2023"``, ``"2023-12-04"`` and ``"4 Dec 2023"`` work alike. Relative phrases count in
``now``'s own time zone (a question asked at 00:30 in Tokyo means Tokyo's yesterday);
absolute ones are read in it too. The first phrase found wins, and it is returned with the
period so recall can show it (``--explain``).

Nothing here reads a clock: recall passes ``as_of`` when given, else the current time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Final

_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_UNITS: Final = {"day": 1, "week": 7}
_NUMBERS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                   "six": 6, "seven": 7, "ten": 10}  # fmt: skip

_PATTERNS: Final = [
    ("iso", re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")),
    ("month_day", re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b")),
    ("day_month", re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?\b")),
    (
        "ago",
        re.compile(
            r"\b(?P<n>\d+|an?|one|two|three|four|five|six|seven|ten)\s+"
            r"(?P<unit>day|week)s?\s+ago\b"
        ),
    ),
    (
        "named",
        re.compile(
            r"\b(?P<word>yesterday|today|tonight|this morning|"
            r"(?:last|this|past) (?:week|month|year|weekend))\b"
        ),
    ),
    ("month_year", re.compile(rf"\b(?:in\s+|during\s+|of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b")),
    ("year", re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b")),
]
"""In order of precedence: the most specific phrase first."""


@dataclass(frozen=True)
class Period:
    """A period a question names: ``[start, end)``, and the words that named it."""

    phrase: str
    start: datetime
    end: datetime

    def holds(self, timestamp: float) -> bool:
        return self.start.timestamp() <= timestamp < self.end.timestamp()


def when(question: str, now: datetime) -> Period | None:
    """The first date or period ``question`` names, relative to ``now`` (timezone-aware).
    None when it names none, or names an impossible date ("February 30")."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    text = question.lower()
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            period = _period(kind, match, now)
            if period is _IMPOSSIBLE:
                return None  # "February 30": not "some time in February"
            if period is not None:
                start, end = period
                phrase = question[match.start() : match.end()].strip()
                return Period(phrase, start, end)
    return None


_IMPOSSIBLE: Final = (datetime.min.replace(tzinfo=UTC), datetime.min.replace(tzinfo=UTC))
_FULL: Final = {name for name, number in _MONTHS.items() if len(name) > 3 and name != "sept"}
_VERBS: Final = {"may", "march"}
"""Month names that are words far more often, taken as months only with "in", "during",
"of" or a year."""


def _period(kind: str, m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    zone = now.tzinfo or UTC
    today = now.date()
    if kind == "named":
        return _named(m.group("word"), today, zone)
    if kind == "ago":
        raw = m.group("n")
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        days = n * _UNITS[m.group("unit")]
        if m.group("unit") == "day":
            return _days(today - timedelta(days=days), 1, zone)
        # "two weeks ago": the week around that day
        return _days(today - timedelta(days=days + 3), 7, zone)
    if kind == "year":
        year = int(m.group("year"))
        return _at(date(year, 1, 1), zone), _at(date(year + 1, 1, 1), zone)
    month = int(m.group("month")) if m.group("month").isdigit() else _MONTHS[m.group("month")]
    year_text = m.groupdict().get("year")
    if kind == "month_year":
        if year_text is None:
            bare = not m.group(0).startswith(("in", "during", "of"))
            if bare and (m.group("month") in _VERBS or m.group("month") not in _FULL):
                return None  # "may", "march", "jan" alone: not dates often enough
            year = today.year if month <= today.month else today.year - 1
        else:
            year = int(year_text)
        start = date(year, month, 1)
        end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
        return _at(start, zone), _at(end, zone)
    day = int(m.group("day"))
    if year_text is None:
        year = today.year
        if _valid(year, month, day) and date(year, month, day) > today:
            year -= 1  # "on March 3" asked in January: the last one
    else:
        year = int(year_text)
    if not _valid(year, month, day):
        return _IMPOSSIBLE
    return _days(date(year, month, day), 1, zone)


def _named(word: str, today: date, zone: tzinfo) -> tuple[datetime, datetime]:
    if word == "yesterday":
        return _days(today - timedelta(days=1), 1, zone)
    if word in ("today", "tonight", "this morning"):
        return _days(today, 1, zone)
    which, unit = word.split()
    monday = today - timedelta(days=today.weekday())
    if unit == "weekend":  # this week's Saturday and Sunday, or the week before's
        saturday = monday + timedelta(days=5 if which == "this" else -2)
        return _days(saturday, 2, zone)
    if unit == "week":
        if which == "this":
            return _days(monday, 7, zone)
        if which == "past":
            return _days(today - timedelta(days=6), 7, zone)
        return _days(monday - timedelta(days=7), 7, zone)
    if unit == "month":
        first = today.replace(day=1)
        if which == "this":
            return _month(first, zone)
        if which == "past":
            return _days(today - timedelta(days=29), 30, zone)
        return _month((first - timedelta(days=1)).replace(day=1), zone)
    year = today.year - (1 if which == "last" else 0)
    if which == "past":
        return _days(today - timedelta(days=364), 365, zone)
    return _at(date(year, 1, 1), zone), _at(date(year + 1, 1, 1), zone)


def _month(first: date, zone: tzinfo) -> tuple[datetime, datetime]:
    after = (
        date(first.year + 1, 1, 1) if first.month == 12 else first.replace(month=first.month + 1)
    )
    return _at(first, zone), _at(after, zone)


def _days(start: date, days: int, zone: tzinfo) -> tuple[datetime, datetime]:
    return _at(start, zone), _at(start + timedelta(days=days), zone)


def _at(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone)


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True
