"""What a question asks for by name or by the shape of its value ("which port", "how many",
"who owns"), and whether a memory states it: the relevance model's *missing attribute*
evidence (:mod:`ferrex.rules.relevance`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Final

_NUMBER_WORDS: Final = frozenset(
    {
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "dozen",
        "hundr",
    }
)


def _is_number(token: str) -> bool:
    return token.isdigit() or token in _NUMBER_WORDS


def _is_port(token: str) -> bool:
    # 80, 5432, 8080: not "01" (the suffix of a name like redis-sess-01)
    return token.isdigit() and 2 <= len(token) <= 5 and token[0] != "0" and int(token) <= 65535


def _is_version(token: str) -> bool:
    # "7.2", "1.29", "3.4.0", "v2.9.0": digits joined by dots (an identifier token); or a
    # major version alone, "16" in "PostgreSQL 14 to 16", "v3": at most three digits (a port
    # or a count of four or more digits is not read as one)
    if "." in token:
        return any(c.isdigit() for c in token) and "/" not in token
    digits = token[1:] if token.startswith("v") else token
    return 0 < len(digits) <= 3 and digits.isdigit()


def _is_domain(token: str) -> bool:
    # "api.juniper.shop", "grafana.internal": letters on both sides of a dot
    parts = token.split(".")
    return len(parts) >= 2 and all(any(c.isalpha() for c in p) for p in parts[:2])


_DURATION: Final = re.compile(r"\d+(?:\.\d+)?(?:ms|s|secs?|m|mins?|h|hrs?|d|w|wks?|mos?|y|yrs?)")


def _is_duration(token: str) -> bool:
    # "3h", "45min", "500ms", "1.5h", "2d": a number written with its unit of time
    return _DURATION.fullmatch(token) is not None


_SHORT_VERSION: Final = re.compile(r"v?\d+\.\d+")


def short_version(token: str) -> bool:
    """Whether a token is a version of two numbers (``7.2``, ``v3.11``): one a longer
    version (``7.2.4``) states too."""
    return _SHORT_VERSION.fullmatch(token) is not None


_GLUED: Final = re.compile(r"(\d+(?:\.\d+)?)([a-z]+)")
_UNIT_WORDS: Final = {
    "s": "second", "sec": "second", "secs": "second", "m": "minut", "min": "minut",
    "mins": "minut", "h": "hour", "hr": "hour", "hrs": "hour", "d": "day", "w": "week",
    "wk": "week", "wks": "week", "ms": "ms", "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb",
}  # fmt: skip
"""Units written glued to a number (``350s``, ``16MB``) and the BM25 stem of their word."""


def same_amount(term: str, document_tokens: Sequence[str]) -> bool:
    """Whether a document states an amount the query writes glued to its unit (``350s``,
    ``16MB``) with a space or the unit's word (``350 seconds``, ``16 MB``), or one the query
    writes as a bare number (``350``) glued to a unit."""
    seq = list(document_tokens)
    glued = _GLUED.fullmatch(term)
    if glued is not None:
        number, unit = glued.groups()
        word = _UNIT_WORDS.get(unit)
        return word is not None and any(a == number and b == word for a, b in pairwise(seq))
    if not term.isdigit():
        return False
    return any(
        (found := _GLUED.fullmatch(t)) is not None
        and found.group(1) == term
        and found.group(2) in _UNIT_WORDS
        for t in seq
    )


def _is_region(token: str) -> bool:
    # "eu-west-1", "us-east-2"
    parts = token.split("-")
    return len(parts) == 3 and parts[0].isalpha() and parts[1].isalpha() and parts[2].isdigit()


ATTRIBUTES: Final[dict[str, tuple[frozenset[str], Callable[[str], bool] | None]]] = {
    "port": (frozenset({"port"}), _is_port),
    "version": (frozenset({"version"}), _is_version),
    "password": (frozenset({"password", "secret", "credenti"}), None),
    "secret": (frozenset({"password", "secret", "credenti"}), None),
    "credenti": (frozenset({"password", "secret", "credenti"}), None),
    "owner": (frozenset({"owner", "own", "lead", "maintain"}), None),
    "manag": (frozenset({"manag", "report"}), None),
    "birthday": (frozenset({"birthday", "born"}), None),
    "timezon": (frozenset({"timezon", "zone"}), None),
    "region": (frozenset({"region"}), _is_region),
    "host": (frozenset({"host", "hostnam"}), _is_domain),
    "hostnam": (frozenset({"host", "hostnam"}), _is_domain),
    "url": (frozenset({"url", "link"}), _is_domain),
    "budget": (frozenset({"budget"}), None),
    "retent": (frozenset({"retent", "kept", "keep"}), None),
    "shard": (frozenset({"shard"}), None),
    "replica": (frozenset({"replica"}), None),
    "long": (
        frozenset({"second", "minut", "hour", "day", "week", "month", "year", "ms"}),
        _is_duration,
    ),
    "mani": (frozenset(), _is_number),
    "much": (frozenset(), _is_number),
}
"""Attributes a question asks for (BM25 stems: "port", "version", "password", "owner",
"manager", "time zone", "region", "host", "retention", "how many", "how long"...), each
with the words and the shape of a value that state it in a memory: a port is a number of
two to five digits, a version digits joined by dots, a host a dotted name, "how many" and
"how much" a number, "how long" a unit of time (a word, or glued to its number: ``3h``).
Kept to attributes whose value has a name or a shape; "what", "how" and "why" ask for no
attribute of their own."""


_COUNTED_UNITS: Final = frozenset(
    {"time", "day", "week", "month", "year", "hour", "minut", "night"}
)
"""Stems of what "how many" counts when it counts occurrences or time between events."""

_TOTALS: Final = frozenset({"total", "altogeth", "combin", "across", "far"})
"""Stems that make "how many"/"how much" a sum ("in total", "so far", "across")."""


def counted_across_memories(query_tokens: Sequence[str]) -> bool:
    """Whether a "how many"/"how much" question asks for a number worked out from several
    memories rather than stated in one: occurrences or time between events ("how many
    times…", "how many days ago…", "how many weeks passed between…") or a sum ("… in
    total", "… so far"). Each memory then holds one event or one date, no number, and
    still answers part of the question."""
    pairs = pairwise(query_tokens)
    if any(term == "mani" and unit in _COUNTED_UNITS for term, unit in pairs):
        return True
    terms = set(query_tokens)
    return bool({"mani", "much"} & terms) and bool(_TOTALS & terms)


def missing_attribute(query_tokens: Sequence[str], document_tokens: Iterable[str]) -> float:
    """1.0 when the query asks for an attribute (:data:`ATTRIBUTES`) that the document
    states neither by name nor by a value of its shape, else 0.0: "which port does the
    orders database listen on" is not answered by a memory about the orders database that
    gives no port, however much of the rest it shares. A count worked out across memories
    (:func:`counted_across_memories`) is not asked of any one of them."""
    present = set(document_tokens)
    counted = counted_across_memories(query_tokens)
    for term in set(query_tokens):
        if term not in ATTRIBUTES or (counted and term in ("mani", "much")):
            continue
        words, shape = ATTRIBUTES[term]
        if present & words:
            continue
        if shape is not None and any(shape(t) for t in present):
            continue
        return 1.0
    return 0.0
