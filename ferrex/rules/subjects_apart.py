"""What keeps two names or two relations apart although their words overlap, and numbers
written as words (used by :mod:`ferrex.rules.subjects` and :mod:`ferrex.rules.slots`).

- **Another instance** (:data:`INSTANCE_WORDS`): a name extended by a word naming another
  environment, region, copy or add-on of the thing (``MQTT broker (dev)``, ``PHI backups``,
  ``Terraform AWS provider``) names a sibling of the bare name, never possibly the same.
- **Relations apart** (:func:`relations_apart`): a predicate naming another role of the value
  (``fallback LLM`` / ``LLM``) or a relation not in force yet (``to be replaced by``,
  ``will move to``): its value does not compete with the current one.
- **Numbers in words** (:func:`in_digits`): ``season three`` is ``Season 3``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Final

from ferrex.rules.entities import is_product_suffix, is_typo
from ferrex.rules.predicates import FUNCTION_WORDS, PREPOSITIONS

#: Words that name another instance of a thing, not the thing said more fully: an
#: environment other than the main one (``MQTT broker (dev)``, ``prod-eu-canary cluster``),
#: a region, a copy or an alternate (``PHI backups``, ``read replica``, ``fallback``), an
#: add-on made for it (``Terraform AWS provider``, ``redis driver``). A name extended by one
#: is a sibling of the bare name (different), never possibly the same; the same word on
#: both sides pairs as usual (``staging db``/``staging database``). Not ``production`` or
#: ``live``: a bare name usually means the main instance, so ``prod payments db`` may still
#: be ``payments db``. Spelled-out and short forms both (a bracketed ``(dev)`` is not
#: spelled out).
INSTANCE_WORDS: Final[frozenset[str]] = frozenset(
    # environments other than the main one
    # (not ``test`` or ``qa``: an A/B test, a QA lab are things of their own; not
    # ``nightly``: a schedule as often as a build channel)
    {"dev", "development", "stg", "staging", "stage", "uat", "sandbox", "preview"}
    | {"canary", "local", "demo", "beta", "alpha", "preprod"}
    # regions
    | {"eu", "us", "uk", "emea", "apac", "latam"}
    # copies and alternates
    | {"backup", "backups", "replica", "replicas", "mirror", "mirrors", "fallback", "standby"}
    | {"secondary", "failover", "shadow", "fork", "mock", "stub", "snapshot", "snapshots"}
    # add-ons made for another thing (not ``client``, ``plugin``, ``extension``: as often
    # what the thing itself is, ``Starfall game client``, ``Rust extension (speedups)``)
    | {"provider", "providers", "sdk", "driver", "exporter", "bindings"}
)


#: Words in front of a name that set one thing apart from another of its kind (``legacy
#: orders db`` is not ``orders db``): a name extended by one is never
#: :func:`ferrex.rules.subjects.close_names`.
CONTRAST_WORDS: Final[frozenset[str]] = frozenset(
    {"old", "legacy", "new", "next", "previous", "former", "archived", "deprecated"}
    | {"internal", "external", "public", "private", "primary", "secondary", "read", "write"}
    | {"test", "temporary", "temp", "experimental", "other", "second", "third"}
)

#: Trailing words that say what a thing is as deployed or built, not which thing or which
#: part of it (``bastion`` / ``bastion host``, ``Grafana`` / ``Grafana instance``), for
#: :func:`ferrex.rules.subjects.close_names` alone.
THING_WORDS: Final[frozenset[str]] = frozenset(
    {"host", "instance", "bucket", "box", "machine", "vm", "feature", "integration"}
    | {"setup", "deployment", "process", "program", "product", "tooling", "codebase"}
)


#: Words that name a unit of people (``data team``, ``growth squad``). Units nest: a word
#: added to a unit's name before its unit word names a unit within it (``data platform
#: team`` is not ``data team``), for :func:`ferrex.rules.subjects.close_names`.
UNIT_WORDS: Final[frozenset[str]] = frozenset(
    {"team", "squad", "guild", "crew", "tribe", "chapter", "department", "dept", "org"}
    | {"division", "group", "unit", "pod"}
)


#: Words people use for one working team interchangeably (``checkout squad`` / ``checkout
#: team``); not ``org``, ``guild`` or ``department``, which hold several teams.
TEAM_WORDS: Final[frozenset[str]] = frozenset({"team", "squad", "crew"})


@lru_cache(maxsize=1 << 16)
def same_word(a: str, b: str) -> bool:
    """Whether two words of two names are one word: a typo (``kuberentes``), a product
    suffix (``postgres``/``postgresql``), or two words for one team (:data:`TEAM_WORDS`)."""
    return is_typo(a, b) or is_product_suffix([a], [b]) or {a, b} <= TEAM_WORDS


def added_apart(added: Sequence[str], shorter: Sequence[str], longer: Sequence[str]) -> bool:
    """Whether the words a longer name adds to a shorter one set it apart: one naming
    another instance (:data:`INSTANCE_WORDS`) or a contrast (:data:`CONTRAST_WORDS`), or any
    word added to a unit of people's name before its unit word (:data:`UNIT_WORDS`: ``data
    platform team`` is a unit within ``data team``)."""
    if any(instance_word(w) or w in CONTRAST_WORDS for w in added):
        return True
    return bool(added and shorter) and shorter[-1] in UNIT_WORDS and longer[-1:] == [shorter[-1]]


def instance_word(word: str) -> bool:
    """Whether a word (brackets aside: ``(dev)``) is one of :data:`INSTANCE_WORDS`."""
    return word.strip("()[]{}") in INSTANCE_WORDS


def relations_apart(left: str, right: str) -> bool:
    """Whether two normalized predicates name relations whose values do not compete, by
    their words: one is the other with a word naming another instance or role of the
    value (:data:`INSTANCE_WORDS`: ``fallback_llm`` / ``llm``,
    ``backup_provider`` / ``provider``), each names an instance of its own (``prod`` /
    ``canary``, ``primary`` / ``reporting_replica``), or one names a relation not in force yet
    (:func:`future_relation`: ``to_be_replaced_by``, ``will_move_to``, ``planned_db``): the
    current value and the planned one both hold."""
    if future_relation(left) != future_relation(right):
        return True
    a, b = _singular(_content(left)), _singular(_content(right))
    if _opposites(a - b, b - a):
        return True  # the two ends of one span: starts / ends, opens at / closes at
    if a - b and b - a and _instance_named(a - b) and _instance_named(b - a):
        return True  # two instances: prod / canary, primary / reporting replica
    extra = (a - b) or (b - a)
    return bool(a & b) and (a <= b or b <= a) and any(instance_word(w) for w in extra - _VALUE)


#: Pairs of words naming the two ends or the two ways of one thing, each a relation of its
#: own (``starts`` / ``ends``, ``min replicas`` / ``max replicas``, ``inbound`` /
#: ``outbound`` port): plain English opposites, not words of any one domain.
OPPOSITES: Final = frozenset(
    frozenset(pair)
    for pair in (
        ("start", "end"), ("begin", "end"), ("open", "close"), ("min", "max"),
        ("minimum", "maximum"), ("first", "last"), ("upload", "download"),
        ("inbound", "outbound"), ("ingress", "egress"), ("read", "write"),
        ("send", "receive"), ("input", "output"), ("request", "response"),
        ("lower", "upper"), ("floor", "ceiling"), ("login", "logout"), ("import", "export"),
    )
)  # fmt: skip


def _opposites(left: set[str], right: set[str]) -> bool:
    """Whether the words only one predicate has and the words only the other has are one
    word each, opposites (:data:`OPPOSITES`), their endings aside (``starts``, ``opened``)."""
    if len(left) != 1 or len(right) != 1:
        return False
    pairs = {frozenset((a, b)) for a in _forms(*left) for b in _forms(*right)}
    return bool(pairs & OPPOSITES)


def _forms(word: str) -> set[str]:
    """The word and what it may be without an ending (``starts``, ``closed``, ``opening``)."""
    out = {word}
    for ending, back in (("s", ""), ("es", ""), ("d", ""), ("ed", ""), ("ing", ""), ("ing", "e")):
        if len(word) - len(ending) >= 3 and word.endswith(ending):
            out.add(word[: -len(ending)] + back)
    return out


#: Add-on words that, in a predicate, name the slot's value itself (``search`` / ``search
#: provider``: the one who provides it), not another instance of it.
_VALUE: Final = frozenset({"provider"})


#: Words that name an instance by its place among its kind, beside :data:`INSTANCE_WORDS`.
_RANKS: Final = frozenset({"prod", "production", "live", "main", "primary", "secondary"})


def _instance_named(words: set[str]) -> bool:
    return any(instance_word(w) or w in _RANKS for w in words)


#: Words that put a relation in the future: planned, not yet in force.
FUTURE_WORDS: Final[frozenset[str]] = frozenset(
    {"will", "planned", "planning", "upcoming", "future", "proposed", "next"}
)


def future_relation(predicate: str) -> bool:
    """Whether a normalized predicate names a relation not in force yet: a word of
    :data:`FUTURE_WORDS` or an infinitive at its start (``to_be_replaced_by``,
    ``going_to_use``)."""
    words = [w for w in predicate.split("_") if w]
    if any(w in FUTURE_WORDS for w in words):
        return True
    return words[:2] == ["to", "be"] or words[:2] == ["going", "to"]


_NUMBERS: Final = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                   "nine", "ten", "eleven", "twelve")  # fmt: skip
#: Numbers people write in words inside a name (``season three`` / ``Season 3``).
NUMBER_WORDS: Final[Mapping[str, str]] = {w: str(n) for n, w in enumerate(_NUMBERS)}


def in_digits(words: Sequence[str]) -> list[str]:
    """A name's words with a number written as a word put in digits (``season three`` →
    ``season 3``), so the numbers of two spellings compare; a name of that one word alone
    is left as it is (``One`` may be a product)."""
    if len(words) < 2:
        return list(words)
    return [NUMBER_WORDS.get(w, w) for w in words]


def _singular(words: set[str]) -> set[str]:
    """Words with a plural ``s`` dropped, so one word in two numbers is one (``backups
    kept for`` / ``backup retention`` name no two instances)."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words}  # fmt: skip


def _content(predicate: str) -> set[str]:
    return {w for w in predicate.split("_") if w and w not in FUNCTION_WORDS | PREPOSITIONS}


#: Words of a predicate that name what a person is at work (``role``, ``title``): where a
#: person's first name and full name are one subject (:func:`first_name_of`).
PERSON_SLOT_WORDS: Final[frozenset[str]] = frozenset(
    {"role", "title", "position", "level", "seniority", "team", "manager", "employment"}
)


def first_name_of(name: str, other: Sequence[str]) -> bool:
    """Whether ``name`` as written and the normalized words ``other`` are a person's first
    name and full name: one of them a single capitalised word (``Maria``), the other two or
    three words of letters that begin with it (``maria lopez``). Only a hint: it counts for a
    relation of :data:`PERSON_SLOT_WORDS` alone (``Grafana`` / ``Grafana Cloud`` is a product
    and its hosted service)."""
    words = name.split()
    if not words or not all(w[:1].isupper() and w.isalpha() for w in words):
        return False
    mine = [w.casefold() for w in words]
    theirs = list(other)
    short, long = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
    return (
        len(short) == 1
        and 2 <= len(long) <= 3
        and all(w.isalpha() for w in long)
        and long[0] == short[0]
    )
