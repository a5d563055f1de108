"""How names are written: the short forms agents use, spelled out before names are compared.

Subjects are named the way agents write: ``billing-svc``, ``the billing svc``, ``staging db``,
``k8s cluster``. :func:`spelled_out` spells each word out by a small table of abbreviations
and numeronyms (:data:`DEFAULT_ABBREVIATIONS`), extended per namespace in the configuration
(:func:`abbreviation_map`); a short form the table does not hold is still found where people
form it (:func:`abbreviates`: a clipped word or a consonant skeleton; :func:`acronym_of`;
both paired up across two names by :func:`formed_alike`). What the forms mean for two
subjects is :mod:`ferrex.rules.subjects`'s rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Final

from ferrex.errors import UsageError
from ferrex.rules.entities import normalize_entity

#: Per-word short forms agents write, and the word they stand for. Numeronyms (``k8s``)
#: and clipped words (``db``, ``svc``). Only forms with one common meaning in software.
DEFAULT_ABBREVIATIONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "db": "database",
        "dbs": "databases",
        "svc": "service",
        "svcs": "services",
        "srv": "server",
        "k8s": "kubernetes",
        "kube": "kubernetes",
        "repo": "repository",
        "repos": "repositories",
        "docs": "documentation",
        "env": "environment",
        "envs": "environments",
        "prod": "production",
        "stg": "staging",
        "dev": "development",
        "cfg": "config",
        "configuration": "config",
        "authn": "authentication",
        "authz": "authorization",
        "i18n": "internationalization",
        "l10n": "localization",
        "a11y": "accessibility",
        "o11y": "observability",
        "app": "application",
        "apps": "applications",
        "pkg": "package",
        "lib": "library",
        "libs": "libraries",
        "msg": "message",
        "msgs": "messages",
        "var": "variable",
        "vars": "variables",
        "infra": "infrastructure",
        "mgmt": "management",
        "dir": "directory",
        "img": "image",
        "acct": "account",
        "org": "organization",
        "dept": "department",
        "eng": "engineering",
        "cli": "command line",
        "e2e": "end to end",
    }
)

#: Words a name may start with that say nothing of which thing it is (``the billing svc``).
ARTICLES: Final = frozenset({"the", "a", "an"})

#: Trailing words of an organisation's legal form, dropped: ``Acme Inc.`` is ``Acme``.
_LEGAL_FORMS: Final = frozenset({"inc", "corp", "corporation", "ltd", "llc", "gmbh", "co"})


def abbreviation_map(extra: Mapping[str, object]) -> dict[str, str]:
    """The default table with ``extra`` (short → long, from the configuration) over it.

    A short or long form without letters or digits, or a value that is not a string, is a
    :class:`UsageError`: a configuration mistake.
    """
    table = dict(DEFAULT_ABBREVIATIONS)
    for short, long in extra.items():
        if not isinstance(long, str):
            raise UsageError(
                f"subject abbreviation {short!r} must map to a string, not {long!r}",
                hint=f'write {short} = "the word it stands for"',
            )
        key, value = normalize_entity(str(short)), normalize_entity(long)
        if not key or not value:
            raise UsageError(
                f"subject abbreviation {short!r} = {long!r} has no letters or digits",
                hint="each abbreviation and its word must be a word",
            )
        table[key] = value
    return table


def spelled_out(
    normalized: str, abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS
) -> list[str]:
    """The words of a normalized name with abbreviations spelled out, a leading article
    dropped: ``the billing svc`` → ``["billing", "service"]``. A name written inverted round
    one comma is read in its usual order (``tech lead, video platform`` → ``video platform
    tech lead``), a legal form after the comma aside (``acme, inc``)."""
    normalized = uninverted(normalized)
    whole = abbreviations.get(normalized)
    words = (whole if whole is not None else normalized).split(" ")
    if len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    out: list[str] = []
    for word in words:
        out += abbreviations.get(word, word).split(" ")
    out = [w for w in out if w]
    while len(out) > 1 and out[-1] in _LEGAL_FORMS:
        out.pop()
    return out


def uninverted(normalized: str) -> str:
    """``head, tail`` as ``tail head`` (one comma, both sides words, the tail no legal form);
    any other name as it is."""
    head, comma, tail = normalized.partition(", ")
    if not comma or not head.strip() or not tail.strip() or "," in tail:
        return normalized
    if tail.strip(" .") in _LEGAL_FORMS:
        return normalized
    return f"{tail.strip()} {head.strip()}"


@lru_cache(maxsize=1 << 16)
def abbreviates(short: str, long: str) -> bool:
    """Whether ``short`` is a short form people make of the word ``long`` (the table's
    fast path aside): a clipped word, cut before a vowel (``auth``/``authentication``,
    ``prod``/``production``; not ``web``/``webhook``, a word of its own plus another), or a
    consonant skeleton that keeps the first letter (``gw``/``gateway``, ``pg``/``postgres``,
    ``svc``/``service``, ``mgr``/``manager``), each also in the plural (``certs``/
    ``certificates``). No digits, and the long word is clearly longer."""
    if not short.isalpha() or not long.isalpha() or len(long) < len(short) + 3:
        return False
    if short in AMBIGUOUS_SHORT_FORMS:
        return False
    # A clipped word in the plural, of a plural (``certs``/``certificates``): clipped from a
    # stem of four letters or more, so ``logs`` is never ``logistics``.
    if short[-1] == "s" == long[-1] and len(short) >= 5 and abbreviates(short[:-1], long[:-1]):
        return True
    if len(short) >= 3 and long.startswith(short):
        # Clipped well short of the word: "product" is no short form of "production".
        return long[len(short)] in _VOWELS and 2 * len(short) <= len(long) + 1
    if not 2 <= len(short) <= 4 or short[0] != long[0]:
        return False
    if sum(c in _VOWELS for c in short[1:]) > 0:
        return False
    rest = iter(long[1:])
    return all(c in rest for c in short[1:])


def acronym_of(short: str, words: Sequence[str]) -> bool:
    """Whether ``short`` is the initials of ``words`` (two or more): ``ci`` of ``continuous
    integration``, ``aws`` of ``amazon web services``."""
    return len(words) >= 2 and len(short) == len(words) and short == "".join(w[0] for w in words)


def initials_formed(short: str, words: Sequence[str]) -> bool:
    """Whether ``short`` (three letters or more) is formed of the starts of ``words`` (two or
    more) in order, each giving its first letter or its first two: the initials (``ttl`` of
    ``time to live``, ``rps`` of ``requests per second``) or with a word's first two
    (``idp`` of ``identity provider``)."""
    if len(short) < 3 or len(words) < 2 or not short.isalpha():
        return False
    rest = [w for w in words if w]
    return len(rest) == len(words) and _formed(short, rest)


def _formed(short: str, words: Sequence[str]) -> bool:
    if not words:
        return not short
    word = words[0]
    return any(
        short[:n] == word[:n] and len(word) >= n and _formed(short[n:], words[1:])
        for n in (1, 2)
        if len(short) >= n
    )


def formed_alike(
    left: Sequence[str], right: Sequence[str]
) -> tuple[list[str], list[str], bool] | None:
    """Two spelled-out names with each short form people make replaced by the words it
    stands for in the other name (:func:`abbreviates`, :func:`acronym_of`), and whether the
    rest of the name vouches for them (a word shared as it is, or an acronym of three or
    more letters); None when no short form pairs up."""
    a, b = list(left), list(right)
    shared = bool(set(a) & set(b))
    vouched, found = shared, False
    for one, other in ((a, b), (b, a)):
        for i, word in enumerate(one):
            if word in other:
                continue
            # The initials of several words explain more than one word's skeleton: "cm" is
            # "community manager" before it is "community".
            span = _acronym_span(word, other, one)
            if span is not None:
                one[i : i + 1] = span
                found = True
                vouched = vouched or len(word) >= 3
                continue
            twin = next((w for w in other if w not in one and abbreviates(word, w)), None)
            if twin is not None:
                one[i], found = twin, True
                continue
            # Initials with a compound word's second part (``dwh``: data ware-house) vouch
            # for nothing by themselves: the split is a guess.
            span = _compound_span(word, other, one)
            if span is not None:
                one[i : i + 1] = span
                found = True
    return (a, b, vouched) if found else None


def _compound_span(word: str, other: Sequence[str], one: Sequence[str]) -> list[str] | None:
    """The words of ``other`` (none of them in ``one``) whose initials, one of them with the
    initial of its second part, spell ``word`` (three to six letters): ``dwh`` of ``data
    warehouse`` (``ware`` + ``house``). A second part starts three letters or more into its
    word and leaves three or more."""
    size = len(word) - 1  # one letter a word, and one word two letters
    if size < 2 or size > min(len(other), 5) or not word.isalpha():
        return None
    for at in range(len(other) - size + 1):
        span = list(other[at : at + size])
        if span[0][:1] == word[0] and not set(span) & set(one) and _spelled_by_parts(word, span):
            return span
    return None


def _spelled_by_parts(word: str, span: Sequence[str]) -> bool:
    """Whether ``word`` is each word's initial in turn, exactly one word giving two letters
    (its initial, then the initial of its second part: :func:`_compound_span`)."""
    if len(word) != len(span) + 1 or any(not w.isalpha() for w in span):
        return False
    for k, w in enumerate(span):
        if word[:k] + word[k + 2 :] != "".join(x[0] for x in [*span[:k], *span[k + 1 :]]):
            continue
        if word[k] == w[0] and any(w[p] == word[k + 1] for p in range(3, len(w) - 2)):
            return True
    return False


def _acronym_span(word: str, other: Sequence[str], one: Sequence[str]) -> list[str] | None:
    """The words of ``other`` (none of them in ``one``) that ``word`` is the initials of."""
    if len(word) < 2 or len(word) > len(other):
        return None
    initials = "".join(w[:1] for w in other)
    at = initials.find(word)
    while at >= 0:
        span = list(other[at : at + len(word)])
        if acronym_of(word, span) and not set(span) & set(one):
            return span
        at = initials.find(word, at + 1)
    return None


_VOWELS: Final = frozenset("aeiouy")

#: Short forms with two common meanings in software, never expanded by :func:`abbreviates`
#: (``ns``: a namespace or a DNS name server; ``conf``: a configuration or a conference;
#: ``ts``: TypeScript or a timestamp). A namespace's own table may still spell them out.
AMBIGUOUS_SHORT_FORMS: Final = frozenset({"ns", "conf", "ts"})
