"""A value restated: whether two objects state one value in other words (:func:`restated`).

Used by :mod:`ferrex.core.decide.facts`: the same value of one relation in other words is the
new wording of it (no doubt, no value lost); under another relation of a subject that may be
the same, it is flagged ``restates``. The forms: the same letters and digits once case, spaces
and punctuation are dropped (``RevC`` / ``rev C``), initials (``OSC`` / ``Open Source
Collective``), the value inside a longer wording of it (``115200`` / ``115200 baud``), a
duration in other units or in words (``30 days`` / ``30d``, ``300 seconds`` / ``5 min``,
``hourly`` / ``1 hour``, ``half an hour`` / ``30 minutes``), an amount in other units
(``512Mi`` / ``0.5Gi``, ``4096`` / ``4k``), a weekly schedule in another form (``Thu 6-8am
UTC`` / ``Thursday 06:00-08:00 UTC``), an address with or without its scheme
(``bi.example.io`` / ``https://bi.example.io/``), words shortened as people shorten them
(``IT Ops`` / ``IT Operations``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from ferrex.rules.kinds import kinds_clash, object_kind
from ferrex.rules.schedules import same_schedule
from ferrex.rules.short_forms import abbreviates, acronym_of
from ferrex.rules.subjects_apart import NUMBER_WORDS

#: At most this many words around the value in the longer wording of it (``115200`` /
#: ``115200 baud``, ``0.9.0`` / ``hollowctl v0.9.0``, ``Production/Stable`` / ``Development
#: Status :: 5 - Production/Stable``): more, and the longer one says something else too.
RESTATED_EXTRA_WORDS: Final = 3
#: Values that many slots of one thing take at once (a flag, a switch): never a restatement
#: by themselves.
_COMMON_VALUES: Final = frozenset(
    {"true", "false", "yes", "no", "on", "off", "none", "null", "enabled", "disabled", "n/a"}
)
_VALUE_WORDS_RE = re.compile(r"[a-z0-9]+(?:\.[a-z0-9]+)*")


def value_words(text: str) -> list[str]:
    """An object's words as a value compares them: case-folded runs of letters and digits
    (a dotted version kept whole), a ``v`` before a version dropped (``v0.9.0``), a name
    glued to its dotted version parted from it (``UE5.4``, ``python3.11``)."""
    words: list[str] = []
    for w in _VALUE_WORDS_RE.findall(text.casefold()):
        glued = _GLUED_VERSION.fullmatch(w)
        if glued is None:
            words.append(w)
        elif glued.group(1) != "v":
            words += [glued.group(1), glued.group(2)]
        else:
            words.append(glued.group(2))
    return words


_GLUED_VERSION = re.compile(r"([a-z]+)(\d+(?:\.\d+)+)")


def distinctive_value(words: Sequence[str]) -> bool:
    """Whether a value is rare enough that two slots of one thing seldom hold it by chance:
    three letters or digits at least (``115200``, ``lax``; ``5`` is a count, a retry
    limit, a replica number at once) and not a flag word (:data:`_COMMON_VALUES`)."""
    joined = "".join(words)
    return len(joined) >= 3 and joined not in _COMMON_VALUES


def restated(new: str, old: str) -> bool:
    """Whether two objects state one value in other words: equal once case, spaces and
    punctuation are dropped (``RevC`` / ``rev C``, ``40MB`` / ``40 MB``), the one the
    initials of the other's words (``OSC`` / ``Open Source Collective``), or the one's
    words found in a row inside the other's with at most :data:`RESTATED_EXTRA_WORDS`
    around them (``115200`` / ``115200 baud``); the value distinctive
    (:func:`distinctive_value`) and never of two known kinds (:func:`kinds_clash`)."""
    place = _address(new)
    if place is not None and place == _address(old):
        return True  # bi.example.io / https://bi.example.io/
    if kinds_clash(new, old):
        return False
    seconds = _seconds(new)
    if seconds is not None and seconds == _seconds(old):
        return True  # 30 days / 30d, 15 minutes / 15 min, 300 seconds / 5 min, hourly / 1 hour
    if _same_amount(new, old):
        return True  # 512Mi / 0.5Gi, 1024 MB / 1 GB, 4096 / 4k tokens
    if same_schedule(new, old):
        return True  # Thursday 06:00-08:00 UTC / Thu 6-8am UTC, 0 7 * * 2 / Tuesdays 07:00
    a, b = value_words(new), value_words(old)
    if not a or not b:
        return False
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not distinctive_value(short):
        return False
    if "".join(short) == "".join(long):
        return True
    if len(short) == len(long) and _words_shortened(short, long):
        return True  # IT Ops / IT Operations
    if len(short) == 1 and short[0].isalpha() and acronym_of(short[0], long):
        return True  # OSC / Open Source Collective
    if len(long) - len(short) > RESTATED_EXTRA_WORDS:
        return False
    n = len(short)
    return any(long[i : i + n] == short for i in range(len(long) - n + 1))


def _address(text: str) -> str | None:
    """A host name or URL without its scheme, a leading ``www.`` and a trailing slash, for
    :func:`restated` (``https://bi.example.io/`` is ``bi.example.io``); None for another
    kind of value."""
    if object_kind(text) not in ("url", "host"):
        return None
    low = text.strip().strip("`'\"").casefold()
    low = re.sub(r"^[a-z][a-z0-9+.-]*://", "", low)
    low = low.removeprefix("www.").rstrip("/")
    return low or None


_SECONDS_PER: Final[dict[str, float]] = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "wk": 604800, "wks": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_SPAN = re.compile(r"^(?:every\s+)?(\d+(?:\.\d+)?)\s*([a-z]+)$")


#: A period named by one word, as often as a length (``hourly`` / ``every hour``).
_PERIOD_WORDS: Final[dict[str, float]] = {
    "hourly": 3600, "daily": 86400, "nightly": 86400, "weekly": 604800, "fortnightly": 1209600,
}  # fmt: skip


def _seconds(text: str) -> float | None:
    """A duration's length in seconds, by its unit (``30d``, ``15 min``, ``300 seconds``,
    ``every hour``) or a word naming its period (``hourly``, ``daily``); None for anything
    else (months and years vary in length: never equal by this)."""
    low = text.strip().casefold()
    if low in _PERIOD_WORDS:
        return _PERIOD_WORDS[low]
    found = _SPAN.match(low.replace("every ", "every 1 ", 1) if _BARE_EVERY.match(low) else low)
    if found is None or found.group(2) not in _SECONDS_PER:
        return _spoken_seconds(low.split())
    return float(found.group(1)) * _SECONDS_PER[found.group(2)]


def _spoken_seconds(words: list[str]) -> float | None:
    """A duration said in words (``half an hour``, ``an hour``, ``two weeks``, ``a day and
    a half``, ``one and a half hours``) in seconds; None for anything else."""
    if len(words) == 3 and words[0] == "half" and words[1] in ("a", "an"):
        count, unit = 0.5, words[2]
    elif len(words) == 5 and words[-3:] == ["and", "a", "half"]:
        count, unit = _count(words[0]) + 0.5, words[1]  # a day and a half
    elif len(words) == 5 and words[1:4] == ["and", "a", "half"]:
        count, unit = _count(words[0]) + 0.5, words[4]  # one and a half hours
    elif len(words) == 2:
        count, unit = _count(words[0]), words[1]
    else:
        return None
    # NaN: no count; a unit said in words is spelt out (``two h`` is no way to say it)
    if count != count or unit not in _SECONDS_PER or len(unit) < 3:
        return None
    return count * _SECONDS_PER[unit]


def _count(word: str) -> float:
    """A count said as a word (``a``, ``an``, ``one``..``twelve``) or in digits; NaN for
    anything else."""
    if word in ("a", "an"):
        return 1.0
    if word in NUMBER_WORDS:
        return float(NUMBER_WORDS[word])
    return float(word) if word.replace(".", "", 1).isdigit() else float("nan")


_BARE_EVERY: Final = re.compile(r"^every\s+[a-z]+$")

#: Size units by their power of the base: a ``k``, ``M``, ``G`` or ``T`` with or without the
#: ``i`` of a binary unit and a ``B`` (``Mi``, ``MiB``, ``MB``, ``mb``), or a bare ``k`` of a
#: count (``4k tokens``).
_SIZE_POWERS: Final[dict[str, int]] = {"k": 1, "m": 2, "g": 3, "t": 4}
_AMOUNT = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt])?(i)?(b|bytes)?(?:\s+[a-z]+)?$")


def _same_amount(new: str, old: str) -> bool:
    """Whether two amounts, one at least with a size or thousands unit (:func:`_amounts`),
    may stand for one number (``512Mi`` / ``0.5Gi``, ``4096`` / ``4k tokens``). Two plain
    numbers are left to the words (a bare ``5`` is no restatement of another ``5``)."""
    (a, unit_a), (b, unit_b) = _amounts(new), _amounts(old)
    return (unit_a or unit_b) and bool(a & b)


def _amounts(text: str) -> tuple[set[int], bool]:
    """The whole numbers an amount may stand for, and whether it has a unit: a plain number
    (``4096``), or one with a size or thousands unit read both ways people mean it, by 1000
    and by 1024 (``4k`` is 4000 or 4096; ``512Mi`` and ``0.5Gi`` both 536870912), with at
    most one word after it (``4k tokens``). Empty for anything else."""
    found = _AMOUNT.match(text.strip().casefold())
    if found is None:
        return set(), False
    number, prefix, binary, byte = found.groups()
    value = float(number)
    if prefix is None:
        return ({int(value)} if value.is_integer() and not byte else set()), False
    bases = (1024,) if binary else (1000, 1024)
    return {round(value * base ** _SIZE_POWERS[prefix]) for base in bases}, True


def _words_shortened(short: Sequence[str], long: Sequence[str]) -> bool:
    """Whether two values of as many words say the same words, some shortened in one as
    people shorten them (``IT Ops`` / ``IT Operations``: :func:`ferrex.rules.short_forms.
    abbreviates`), with at least one word written alike."""
    pairs = list(zip(short, long, strict=True))
    same = [x == y for x, y in pairs]
    return any(same) and all(x == y or abbreviates(x, y) or abbreviates(y, x) for x, y in pairs)
