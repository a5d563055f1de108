"""A value restated: whether two objects state one value in other words (:func:`restated`).

Used by :mod:`ferrex.core.decide.facts`: the same value of one relation in other words is the
new wording of it (no doubt, no value lost); under another relation of a subject that may be
the same, it is flagged ``restates``. The forms: the same letters and digits once case, spaces
and punctuation are dropped (``RevC`` / ``rev C``), initials (``OSC`` / ``Open Source
Collective``), the value inside a longer wording of it (``115200`` / ``115200 baud``), a
duration in other units (``30 days`` / ``30d``, ``300 seconds`` / ``5 min``), an address with
or without its scheme (``bi.example.io`` / ``https://bi.example.io/``), words shortened as
people shorten them (``IT Ops`` / ``IT Operations``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from ferrex.rules.short_forms import abbreviates, acronym_of
from ferrex.rules.slots import kinds_clash, object_kind

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
    (a dotted version kept whole), a ``v`` before a version dropped (``v0.9.0``)."""
    words = _VALUE_WORDS_RE.findall(text.casefold())
    return [w[1:] if re.fullmatch(r"v\d+(?:\.\d+)+", w) else w for w in words]


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
        return True  # 30 days / 30d, 15 minutes / 15 min, 300 seconds / 5 min
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


def _seconds(text: str) -> float | None:
    """A duration's length in seconds, by its unit (``30d``, ``15 min``, ``300 seconds``);
    None for anything else (months and years vary in length: never equal by this)."""
    found = _SPAN.match(text.strip().casefold())
    if found is None or found.group(2) not in _SECONDS_PER:
        return None
    return float(found.group(1)) * _SECONDS_PER[found.group(2)]


def _words_shortened(short: Sequence[str], long: Sequence[str]) -> bool:
    """Whether two values of as many words say the same words, some shortened in one as
    people shorten them (``IT Ops`` / ``IT Operations``: :func:`ferrex.rules.short_forms.
    abbreviates`), with at least one word written alike."""
    pairs = list(zip(short, long, strict=True))
    same = [x == y for x, y in pairs]
    return any(same) and all(x == y or abbreviates(x, y) or abbreviates(y, x) for x, y in pairs)
