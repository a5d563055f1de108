"""Dates and periods named in a question, as a pure rule: text and a reference time in,
the period it names out.

``when("What did Sam do on December 4, 2023?", now)`` is the day of December 4, 2023;
``"in May"`` is the most recent May that has begun by ``now`` (this year's, or last year's
before May); ``"last week"`` is the seven days before the Monday of ``now``'s week;
``"yesterday"``, ``"the day before yesterday"``, ``"today"``, ``"3 days ago"``, ``"two
months ago"``, ``"last month"``, ``"earlier this month"``, ``"this year"``, ``"in 2023"``,
``"2023-12-04"``, ``"4 Dec 2023"``, ``"early March"``, ``"late May 2023"`` work alike; ``"the
last two weeks"``, ``"past 3 days"``, ``"the last few days"`` (three), ``"last 48 hours"`` are
the span that ends with today (from that many hours before ``now``). ``"Q3"``, ``"Q1 2025"``,
``"this quarter"``, ``"last quarter"`` are calendar quarters. A date after ``since`` runs to
the end of today (``"since Monday"``, ``"since 2023"``), after ``after`` from its end to the
end of today, after ``before`` from the earliest time up to its start. A range
of days is one period, the last day included: ``"between November 26 and November 30,
2026"``, ``"November 17-18"``, ``"from Dec 28 to Jan 3"``, ``"2026-12-01 to 2026-12-03"``.
A name set off beside a date is part of its phrase: ``"Black Friday, November 27"``,
``"November 27 (Black Friday)"``.

Weekdays: ``"last Tuesday"``, ``"on Monday"``, ``"Friday morning"`` are the most recent such
day *before* today (never today: "what did we decide on Monday?" asked on a Monday means a
week ago); ``"this Friday"`` is the Friday of ``now``'s week (Monday to Sunday). ``"the
weekend"``/``"over the weekend"`` is the most recent Saturday and Sunday that have begun.

Seasons are meteorological and northern: spring March to May, summer June to August, autumn
(fall) September to November, winter December to February. ``"winter 2023"`` is the winter that
begins in December 2023; ``"in the summer"`` the most recent one that has begun, ``"last
summer"`` the one before this year's (``"this summer"``). A season is read as one only with
a preposition, ``last``/``this`` or a year ("spring boot", "fall back" are not dates).

Relative phrases count in ``now``'s own time zone (a question asked at 00:30 in Tokyo
means Tokyo's yesterday); absolute ones are read in it too. Recall passes ``as_of`` (its
offset names the caller's zone) or the current time in ``recall.time_zone`` (UTC unless
configured). The first phrase found wins, and it is returned with the period so recall can
show it (``--explain``).

Nothing here reads a clock: recall passes ``as_of`` when given, else the current time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Final

_MONTH_SPELLINGS: Final = (
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
)
"""Each month's spellings, its full name first, in the calendar's order."""
_MONTH_NAMES: Final = tuple(names[0] for names in _MONTH_SPELLINGS)
_MONTHS: Final = {
    name: number for number, names in enumerate(_MONTH_SPELLINGS, start=1) for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_UNITS: Final = {"day": 1, "week": 7}
_NUMBERS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "a couple of": 2, "couple of": 2,
                   "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                   "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
_WEEKDAYS: Final = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
                    "saturday": 5, "sunday": 6}  # fmt: skip
_SEASONS: Final = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
"""Each season's first month (meteorological, northern hemisphere)."""
_COUNT = (
    r"(?P<n>\d+|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve)"
)
_SPAN_COUNT = _COUNT.replace("(?P<n>", r"(?P<n>(?:a\s+)?few|", 1)
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")"
_PART = r"(?:\s+(?:morning|afternoon|evening|night))?"


def _on(i: int) -> str:
    """A month and day, and maybe a year (groups ``month{i}``, ``day{i}``, ``year{i}``)."""
    months = "|".join(sorted(_MONTHS, key=len, reverse=True))
    return (
        rf"(?P<month{i}>{months})\.?\s+(?P<day{i}>\d{{1,2}})(?:st|nd|rd|th)?"
        rf"(?:,?\s+(?P<year{i}>(?:19|20)\d{{2}}))?"
    )


def _iso(i: int) -> str:
    return rf"(?P<year{i}>\d{{4}})-(?P<month{i}>\d{{2}})-(?P<day{i}>\d{{2}})"


_UNTIL = r"(?:and|to|until|till|through|thru)"
_DASH = r"\s*[-\u2013\u2014]\s*"
_LAST_DAY = r"(?P<day2>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<year2>(?:19|20)\d{2}))?"
_RANGES: Final = (
    rf"(?:between|from)\s+{_on(1)}\s+{_UNTIL}\s+{_on(2)}",
    rf"(?:between|from)\s+{_on(1)}\s+{_UNTIL}\s+{_LAST_DAY}",
    rf"{_on(1)}(?:{_DASH}|\s+(?:to|until|till|through|thru)\s+){_on(2)}",
    rf"{_on(1)}{_DASH}{_LAST_DAY}",
    rf"(?:(?:between|from)\s+)?{_iso(1)}\s+{_UNTIL}\s+{_iso(2)}",
)
"""Two days and the days between ("between November 26 and November 30, 2026", "November
17-18", "Dec 28 to Jan 3", "2026-12-01 to 2026-12-03"): more specific than either day."""

_PATTERNS: Final = [
    *(("range", re.compile(rf"\b{pattern}\b")) for pattern in _RANGES),
    ("iso", re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")),
    ("month_day", re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b")),
    ("day_month", re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?\b")),
    ("before_yesterday", re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b")),
    ("ago", re.compile(rf"\b{_COUNT}\s+(?P<unit>day|week|month|year)s?\s+ago\b")),
    (
        "span",
        re.compile(
            rf"\b(?:the\s+)?(?:last|past|previous)\s+{_SPAN_COUNT}\s+"
            r"(?P<unit>hour|day|week|month|year)s?\b(?!\s+(?:of|in|before|after)\b)"
        ),
    ),
    ("weekday", re.compile(rf"\b(?:(?P<which>last|this|past|on)\s+)?{_WEEKDAY}{_PART}\b")),
    ("earlier", re.compile(r"\b(?:earlier|so far)\s+this\s+(?P<unit>week|month|year)\b")),
    ("weekend", re.compile(r"\b(?:over|during|at|on)\s+the\s+weekend\b")),
    (
        "quarter",
        re.compile(
            r"\b(?:(?P<which>this|last|past|previous)\s+quarter|q(?P<q>[1-4])"
            rf"(?:,?\s+{_YEAR})?)\b"
        ),
    ),
    (
        "named",
        re.compile(
            r"\b(?P<word>yesterday|today|tonight|this morning|"
            r"(?:last|this|past) (?:week|month|year|weekend))\b"
        ),
    ),
    (
        "season",
        re.compile(
            r"\b(?:(?P<which>last|this|in|during|over)\s+(?:the\s+)?)?"
            r"(?P<season>spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?" + _YEAR + r")?\b"
        ),
    ),
    (
        "part_of_month",
        re.compile(rf"\b(?P<part>early|mid|late)[\s-]+{_MONTH}(?:,?\s+{_YEAR})?\b"),
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

    def month_name(self) -> str | None:
        """The name of the calendar month the period is, when it is one whole month ("last
        month" in December is "november"): a text may name it so."""
        start, end = self.start, self.end
        months = (end.year * 12 + end.month) - (start.year * 12 + start.month)
        whole = start.day == end.day == 1 and start.time() == end.time() and months == 1
        return _MONTH_NAMES[start.month - 1] if whole else None


def when(question: str, now: datetime) -> Period | None:
    """The first date or period ``question`` names, relative to ``now`` (timezone-aware).
    None when it names none, or names an impossible date ("February 30")."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    text = question.lower()
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if kind == "weekday" and _ANY_SUCH_DAY.search(text[: match.start()]):
                continue  # "on a Friday", "every Monday", "it's Friday": no day past
            period = _period(kind, match, now)
            if period is _IMPOSSIBLE:
                return None  # "February 30": not "some time in February"
            if period is not None:
                first, last = _with_its_name(question, match.start(), match.end())
                lead = _LEAD.search(text[:first])
                if lead is not None and not _COUNTED.search(text[: lead.start()]):
                    start, end = _opened(lead.group(1), period, now)
                    first = lead.start(1)
                elif match.group(0).startswith("since"):  # "since 2023"
                    start, end = _opened("since", period, now)
                else:
                    start, end = period
                return Period(question[first:last].strip(), start, end)
    return None


_ANY_SUCH_DAY: Final = re.compile(r"\b(?:a|an|any|each|every|it['\u2019]s|it\s+is|today\s+is)\s+$")
"""Words before a weekday that make it no day past: any such day ("deploy *on a* Friday",
"*every* Monday") or today as the asker says it is ("*it's* Friday afternoon")."""
_LEAD: Final = re.compile(r"\b(since|after|before)\s+$")
_COUNTED: Final = re.compile(r"(?:days?|weeks?|weekend|months?|years?|night|morning)\s+$")
"""A word before a date that opens its period: "*since* Monday" runs to the end of today,
"*after* November 20" from the day after to the end of today, "*before* December 1" from
the earliest time up to it. Not after a unit ("the Sunday before July 24", "two weeks
after May 3": a day counted from the date, not every day on that side of it)."""
_EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)


def _opened(
    word: str, period: tuple[datetime, datetime], now: datetime
) -> tuple[datetime, datetime]:
    """The period a date names opened by the word before it (:data:`_LEAD`)."""
    start, end = period
    if word == "before":
        return _EARLIEST, start
    later = _at(now.date() + timedelta(days=1), now.tzinfo or UTC)
    if word == "since":
        return start, max(end, later)
    return (end, later) if end < later else period


_NAME_BEFORE: Final = re.compile(r"(?:^|(?<=\s))((?:[A-Z][\w'-]*\s+){0,2}[A-Z][\w'-]*),\s*$")
_NAME_AFTER: Final = re.compile(r"^\s*\(((?:[A-Z][\w'-]*\s+){0,2}[A-Z][\w'-]*)\)")


def _with_its_name(question: str, start: int, end: int) -> tuple[int, int]:
    """The span of a date phrase with the name a question gives the day beside it, set off
    as an appositive: capitalised words and a comma before it ("on *Black Friday,* November
    27"), or in brackets after it ("on November 27 *(Black Friday)*"). The name is the
    date's, not a term of the question's own."""
    before = _NAME_BEFORE.search(question[:start])
    if before is not None:
        return before.start(1), end
    after = _NAME_AFTER.match(question[end:])
    if after is not None:
        return start, end + after.end()
    return start, end


_IMPOSSIBLE: Final = (datetime.min.replace(tzinfo=UTC), datetime.min.replace(tzinfo=UTC))
_FULL: Final = {name for name, number in _MONTHS.items() if len(name) > 3 and name != "sept"}
_VERBS: Final = {"may", "march"}
"""Month names that are words far more often, taken as months only with "in", "during",
"of" or a year."""


def _period(kind: str, m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    zone = now.tzinfo or UTC
    today = now.date()
    if kind == "range":
        return _range(m, today, zone)
    if kind == "named":
        return _named(m.group("word"), today, zone)
    if kind == "before_yesterday":
        return _days(today - timedelta(days=2), 1, zone)
    if kind == "ago":
        return _ago(m, today, zone)
    if kind == "span":
        return _span(m, now, zone)
    if kind == "weekday":
        return _weekday(m.group("which"), _WEEKDAYS[m.group("weekday")], today, zone)
    if kind == "earlier":
        start = {
            "week": today - timedelta(days=today.weekday()),
            "month": today.replace(day=1),
            "year": today.replace(month=1, day=1),
        }[m.group("unit")]
        return _at(start, zone), _at(today + timedelta(days=1), zone)
    if kind == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        return _days(saturday, 2, zone)
    if kind == "season":
        return _season(m, today, zone)
    if kind == "quarter":
        return _quarter(m, today, zone)
    if kind == "year":
        year = int(m.group("year"))
        return _at(date(year, 1, 1), zone), _at(date(year + 1, 1, 1), zone)
    month = int(m.group("month")) if m.group("month").isdigit() else _MONTHS[m.group("month")]
    year_text = m.groupdict().get("year")
    if kind == "part_of_month":
        year = int(year_text) if year_text else (
            today.year if month <= today.month else today.year - 1
        )  # fmt: skip
        first, after = _month(date(year, month, 1), zone)
        part = m.group("part")
        start = first + timedelta(days={"early": 0, "mid": 10, "late": 20}[part])
        return start, (first + timedelta(days=10 if part == "early" else 20)
                       if part != "late" else after)  # fmt: skip
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


def _range(m: re.Match[str], today: date, zone: tzinfo) -> tuple[datetime, datetime] | None:
    """From the first day to the last, both included ("between November 26 and November 30,
    2026", "November 17-18", "2026-12-01 to 2026-12-03"). A year written once holds for
    both ends; with none, the last day is the most recent such day (as for one day), and the
    first day the one before it. None when the first day is after the last."""
    parts = m.groupdict()

    def month_of(text: str) -> int:
        return int(text) if text.isdigit() else _MONTHS[text]

    first_month = month_of(parts["month1"])
    last_month = month_of(parts["month2"]) if parts.get("month2") else first_month
    first_day, last_day = int(parts["day1"]), int(parts["day2"])
    year_text = parts.get("year2") or parts.get("year1")
    if year_text is None:
        last_year = today.year
        if (
            _valid(last_year, last_month, last_day)
            and date(last_year, last_month, last_day) > today
        ):
            last_year -= 1
    else:
        last_year = int(year_text)
    if parts.get("year1"):
        first_year = int(parts["year1"])
    else:
        first_year = last_year - (1 if first_month > last_month else 0)  # Dec 28 to Jan 3
    if not (_valid(first_year, first_month, first_day) and _valid(last_year, last_month, last_day)):
        return _IMPOSSIBLE
    first, last = date(first_year, first_month, first_day), date(last_year, last_month, last_day)
    if first > last:
        return None
    return _at(first, zone), _at(last + timedelta(days=1), zone)


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


def _ago(m: re.Match[str], today: date, zone: tzinfo) -> tuple[datetime, datetime]:
    raw = m.group("n")
    n = int(raw) if raw.isdigit() else _NUMBERS[raw]
    unit = m.group("unit")
    if unit == "month":  # "two months ago": that calendar month
        index = today.year * 12 + today.month - 1 - n
        return _month(date(index // 12, index % 12 + 1, 1), zone)
    if unit == "year":  # "a year ago": that calendar year
        return _at(date(today.year - n, 1, 1), zone), _at(date(today.year - n + 1, 1, 1), zone)
    days = n * _UNITS[unit]
    if unit == "day":
        return _days(today - timedelta(days=days), 1, zone)
    # "two weeks ago": the week around that day
    return _days(today - timedelta(days=days + 3), 7, zone)


_SPAN_DAYS: Final = {"day": 1, "week": 7, "month": 30, "year": 365}
"""Days in each unit of a span ("the past month" is thirty days, as "past month" is)."""


def _span(m: re.Match[str], now: datetime, zone: tzinfo) -> tuple[datetime, datetime]:
    """The last ``n`` units up to the end of today ("the last two weeks": the fourteen days
    ending today; "the last 48 hours": from 48 hours before ``now``)."""
    raw = m.group("n")
    n = int(raw) if raw.isdigit() else 3 if raw.endswith("few") else _NUMBERS[raw]
    today = now.date()
    end = _at(today + timedelta(days=1), zone)
    if m.group("unit") == "hour":
        return now - timedelta(hours=n), end
    return end - timedelta(days=n * _SPAN_DAYS[m.group("unit")]), end


def _weekday(
    which: str | None, weekday: int, today: date, zone: tzinfo
) -> tuple[datetime, datetime]:
    if which == "this":  # that day of this week, Monday to Sunday
        return _days(today - timedelta(days=today.weekday() - weekday), 1, zone)
    back = (today.weekday() - weekday) % 7 or 7  # the most recent one before today
    return _days(today - timedelta(days=back), 1, zone)


def _season(m: re.Match[str], today: date, zone: tzinfo) -> tuple[datetime, datetime] | None:
    which, year_text = m.group("which"), m.group("year")
    if which is None and year_text is None:
        return None  # "spring boot", "servers fall over": not seasons
    first_month = _SEASONS[m.group("season")]
    if year_text is not None:
        year = int(year_text)
    elif which in ("this", "last"):
        # this year's season (in January and February, this winter began last December);
        # "last" is the one before it
        year = today.year - (1 if first_month == 12 and today.month < 3 else 0)
        year -= 1 if which == "last" else 0
    else:  # "in the summer": the most recent one that has begun
        year = today.year if today.month >= first_month else today.year - 1
    start = _season_start(year, first_month)
    return _at(start, zone), _at(_season_end(year, first_month), zone)


def _quarter(m: re.Match[str], today: date, zone: tzinfo) -> tuple[datetime, datetime]:
    """A calendar quarter: "Q3 2025"; "Q3" the most recent one that has begun; "this
    quarter" the one ``today`` is in, "last"/"previous quarter" the one before; "the past
    quarter" the 91 days that end with today (as "past month" is thirty)."""
    current = (today.month - 1) // 3
    which = m.group("which")
    if which == "past":
        return _days(today - timedelta(days=90), 91, zone)
    if which is not None:
        index = today.year * 4 + current - (0 if which == "this" else 1)
    elif m.group("year") is not None:
        index = int(m.group("year")) * 4 + int(m.group("q")) - 1
    else:
        q = int(m.group("q")) - 1
        index = today.year * 4 + q - (0 if q <= current else 4)
    first = date(index // 4, index % 4 * 3 + 1, 1)
    return _at(first, zone), _at(_months_after(first, 3), zone)


def _months_after(first: date, months: int) -> date:
    index = first.year * 12 + first.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _season_start(year: int, first_month: int) -> date:
    return date(year, first_month, 1)


def _season_end(year: int, first_month: int) -> date:
    index = year * 12 + first_month - 1 + 3
    return date(index // 12, index % 12 + 1, 1)


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
