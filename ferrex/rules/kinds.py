"""The kind of value a fact's object is, when its shape says so plainly
(:func:`object_kind`: a host name, a version, a duration, a person or team...), and whether
two objects are of one kind or of two (:func:`one_kind`, :func:`kinds_clash`): evidence
:mod:`ferrex.rules.slots` weighs for whether two facts fill one slot.
"""

from __future__ import annotations

import re
from typing import Final, Literal

ObjectKind = Literal[
    "host", "version", "duration", "size", "rate", "money", "percent", "url", "party", "date"
]

_UNIT_NUMBER = r"(?:\d+(?:[.,]\d+)*)\s*"
_DURATION = re.compile(
    rf"^(?:every\s+)?{_UNIT_NUMBER}(?:ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|"
    r"hours?|d|days?|w|wks?|weeks?|months?|y|yrs?|years?)$"
)
_SIZE = re.compile(rf"^{_UNIT_NUMBER}(?:b|bytes?|kb|kib|ki|mb|mib|mi|gb|gib|gi|tb|tib|ti|pb)$")
_RATE = re.compile(
    rf"^{_UNIT_NUMBER}(?:rps|qps|tps|(?:req(?:uest)?s?|messages|msgs|calls|ops|events)?\s*"
    r"(?:/|per\s+)\s*(?:s|sec|second|min|minute|h|hour|day))\b"
)
_MONEY = re.compile(r"^(?:[$€£¥]\s*\d[\d,.]*[km]?|\d[\d,.]*\s*(?:usd|eur|gbp|chf))\b")
_PERCENT = re.compile(rf"^{_UNIT_NUMBER}(?:%|percent)$")
_VERSION = re.compile(
    r"^(?:[a-z][\w+-]*\s+)?v?\d+(?:\.\d+){1,3}(?:[-+.]?[a-z][\w.]*)?$|^v\d+$"
    # A name and its dotted version in one token: gpl-3.0, python-3.11, ue5.4 (no host name).
    r"|^[a-z][a-z+]*-?v?\d+(?:\.\d+)+$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[t ][\d:]+z?)?$")
_URL = re.compile(r"^(?:https?|s3|gs|ftp)://\S+$")
_IP = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$")
# A machine's name: one token of letters and digits joined by hyphens or dots, holding a
# digit (k8s-node-07, pg-prod-1) or ending in a domain (bff-1.fitpulse.net).
_HOSTNAME = re.compile(r"^(?=[^ ]*\d)[a-z][a-z0-9]*(?:[-.][a-z0-9]+)+$")
_DOMAIN = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?(?:/\S*)?$")
_HANDLE = re.compile(r"^@[\w.-]+(?:/[\w.-]+)?$")
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_TEAM_WORDS: Final = frozenset(
    {"team", "squad", "guild", "crew", "tribe", "chapter", "department", "dept", "org"}
)
NAME_WORD = re.compile(r"^[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?$")


def object_kind(text: str) -> ObjectKind | None:
    """The kind of value an object is, when its shape says so plainly; None otherwise.

    ``party`` is a person or a team (ownership moves between them): an ``@handle``, an email
    address, a name of two or three capitalised words, or words holding ``team``, ``squad``...
    (``platform-team`` too).
    """
    raw = text.strip().strip("`'\"")
    low = raw.casefold()
    if not low:
        return None
    if _URL.match(low):
        return "url"
    if _EMAIL.match(low) or _HANDLE.match(low):
        return "party"
    if _DATE.match(low):
        return "date"
    if _PERCENT.match(low):
        return "percent"
    if _MONEY.match(low):
        return "money"
    if _RATE.match(low):
        return "rate"
    if _DURATION.match(low):
        return "duration"
    if _SIZE.match(low):
        return "size"
    if _IP.match(low):
        return "host"
    if _VERSION.match(low):
        return "version"
    if _HOSTNAME.match(low) or _DOMAIN.match(low):
        return "host"
    words = re.split(r"[\s_]+", low)
    # A team named in one hyphenated word, the team word first or last: ``team-engage``,
    # ``platform-team``, ``data-infra-squad``.
    parts = low.split("-") if len(words) == 1 else []
    if (
        any(w.strip("-") in _TEAM_WORDS for w in words)
        or re.match(r"^team[-_]", low)
        or (len(parts) > 1 and parts[-1] in _TEAM_WORDS)
    ):
        return "party"
    if name_shaped(raw):
        return "party"
    return None


def name_shaped(text: str) -> bool:
    """Whether an object is two or three capitalised words (``Dana Whitfield``), read as a
    person's name: a product's or a service's as often (``Grafana Cloud``)."""
    names = text.strip().strip("`'\"").split()
    return 2 <= len(names) <= 3 and all(NAME_WORD.match(w) for w in names)


def kinds_clash(left: str, right: str) -> bool:
    """Whether two objects are values of two different known kinds (a version, a duration).
    A name of capitalised words beside a host name is none: it may be a service the thing
    now runs on (``host fl-graf-01`` / ``now on Grafana Cloud``)."""
    a, b = object_kind(left), object_kind(right)
    if a is None or b is None or a == b:
        return False
    return not ({a, b} == {"party", "host"} and (name_shaped(left) or name_shaped(right)))


def one_kind(left: str, right: str) -> bool:
    """Whether two objects are values of one known kind (two host names, two versions)."""
    kind = object_kind(left)
    return kind is not None and kind == object_kind(right)


_BARE_NUMBER: Final = re.compile(r"^\d+(?:[.,]\d+)?$")


def shapes_agree(left: str, right: str) -> bool:
    """Whether two values may be one slot's before and after by their shapes alone: of one
    known kind, or both of none (two names); a bare number only beside a number; a value of
    a known kind beside one of none only for a person or team beside a name of capitalised
    words (``Patient Access IT``), or a name at a version (``Godot 4.2``) beside a name
    (``Unity 2021 LTS``). Weaker than :func:`one_kind`, stronger than no clash
    (:func:`kinds_clash`): ``replicas 2`` beside ``owned by team Nova``, ``built with Java
    21`` beside ``version 3.25.1`` disagree."""
    a, b = object_kind(left), object_kind(right)
    if a is not None and b is not None:
        return a == b
    if bool(_BARE_NUMBER.match(left.strip())) != bool(_BARE_NUMBER.match(right.strip())):
        return False
    if a is None and b is None:
        return True
    if (a or b) == "version" and left.strip()[:1].isalpha() and right.strip()[:1].isalpha():
        return True  # a named thing at a version beside another name: Godot 4.2 / Unity LTS
    words = (right if a is not None else left).split()
    return (a or b) == "party" and len(words) >= 2 and all(w[:1].isupper() for w in words)
