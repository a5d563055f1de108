"""What a question asks about, against what a memory is about: the evidence ``off_subject``
of :mod:`ferrex.rules.relevance` (pure functions).

A question names things (an entity the store knows, spelt in its words: "the support
gateway" for ``support-gateway``; an identifier: ``prod-eu-2``) and asks something of them
(their login rate limit, their latency SLO); its form may ask for a value with a shape
(*how long*, *how big*, *which version*, *which port*: :func:`asked_shapes`). A memory that
is about another thing, or about the thing but not what is asked (none of the question's
words, no value of the kind its form asks for, another day than the one it names), or a
question about a thing the store has never heard of, cannot be answered by the memory
however much of its wording it shares (:func:`off_subject`). Recall gathers what the store
knows of the named things (:func:`ferrex.read.judgement.subjects_named`,
:func:`ferrex.read.judgement.unknown_identifiers`).

Ranking reads the question's form too: the kinds of value it asks for
(:func:`asked_kinds`, the kinds of :func:`ferrex.rules.kinds.object_kind`) against those a
memory states (:func:`stated_kinds`), a boost for a memory that answers the form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final

from ferrex.models.sparse import tokens, word_tokens
from ferrex.rules.kinds import ObjectKind, object_kind
from ferrex.rules.predicates import DEFAULT_SYNONYM_GROUPS, PLACE_PREPOSITIONS
from ferrex.rules.relevance import PERIOD_FRAME, compound_forms, is_compound, states_term
from ferrex.rules.slots import (
    named_version,
)


@dataclass(frozen=True, slots=True)
class Subject:
    """A thing the question names that the store knows: an entity one of whose spellings
    occurs in the question as whole words (``support gateway`` for ``support-gateway``)."""

    entity_ids: frozenset[str]
    """The entity and the ids it was known by before a merge."""
    spellings: tuple[tuple[str, ...], ...]
    """Every spelling of it the caller sees, as word sequences (normalized, separators as
    spaces: ``("support", "gateway")``)."""
    tokens: frozenset[str]
    """The BM25 tokens of its spellings: the question's words that name it."""
    siblings: frozenset[str] = frozenset()
    """The other entities the store knows whose spellings share a word with this one's
    (``auth-gateway`` beside ``support-gateway``, ``search-api`` beside
    ``search-indexer``): the things a memory about another one than asked is about."""
    sibling_spellings: tuple[tuple[str, ...], ...] = ()
    """Their spellings, as word sequences."""
    follow: tuple[tuple[str, frozenset[str]], ...] = ()
    """The question's last word when one of its spellings comes right before it, with its
    BM25 tokens ("the ClickHouse analytics *cluster*?"): a memory that follows the thing's
    name with the same word names it so too, and that word is not what the question asks
    of it."""


SPECIFIC_AT_LEAST: Final = 2
"""A question asks for something specific of the thing it names when at least this many
of its terms are left besides the thing's name, its period and the words that frame a
question about one (:data:`PERIOD_FRAME`): "what is the *latency SLO* of the notification
worker?" does, "what happened in OPS-1402?" does not (anything about OPS-1402 answers it)."""


def names_subject(subject: Subject, entity_ids: Iterable[str], words: str) -> bool:
    """Whether a memory is about ``subject``: linked to it, or its text (``words``: the
    normalized text with separators as single spaces, padded with one space each side)
    spells it."""
    if subject.entity_ids & set(entity_ids):
        return True
    return any(f" {' '.join(spelling)} " in words for spelling in subject.spellings)


def may_spell(subject: Subject, words: Sequence[str]) -> bool:
    """Whether ``words`` (a memory's, normalized) may name ``subject`` in a spelling the
    store has not linked to it: as many adjacent words as one of its spellings has, each
    the same word or one a shortening of the other (:func:`shortens`: ``pg`` and
    ``postgres``, ``notif`` and ``notification``, ``k8s`` and ``kubernetes``); or one word
    that is the initials of a spelling of two words or more."""
    for form in subject.spellings:
        size = len(form)
        initials = "".join(w[0] for w in form) if size >= 2 else ""
        for i in range(len(words) - size + 1):
            window = words[i : i + size]
            if all(
                a == b or shortens(a, b) or shortens(b, a)
                for a, b in zip(form, window, strict=True)
            ):
                return True
        if initials and initials in words:
            return True
    return False


SHORT_AT_MOST: Final = 4
"""A shortening made of some of a word's letters (``db`` of ``database``, ``svc`` of
``service``) has at most this many letters; a longer one is a prefix (``notif``)."""


def shortens(short: str, long: str) -> bool:
    """Whether ``short`` may be a shortening of ``long``: the same first letter, fewer
    letters, and either a prefix of it (at least two letters), a numeronym (``k8s``:
    first letter, how many letters between, last letter), or at most
    :data:`SHORT_AT_MOST` letters all found in it in order (``db``, ``svc``, ``gw``)."""
    if len(short) < 2 or len(short) >= len(long) or short[0] != long[0]:
        return False
    if long.startswith(short):
        return True
    if short == f"{long[0]}{len(long) - 2}{long[-1]}":
        return True
    if len(short) > SHORT_AT_MOST or not short.isalpha() or not long.isalpha():
        return False
    rest = iter(long[1:])
    return all(c in rest for c in short[1:])


def names_sibling(subject: Subject, entity_ids: Iterable[str], words: str) -> bool:
    """Whether a memory is about one of ``subject``'s siblings (:attr:`Subject.siblings`)."""
    if subject.siblings & set(entity_ids):
        return True
    return any(f" {' '.join(spelling)} " in words for spelling in subject.sibling_spellings)


def off_subject(
    subjects: Sequence[Subject],
    query_tokens: Iterable[str],
    document_tokens: Sequence[str],
    entity_ids: Iterable[str],
    words: str,
    unknown: bool = False,
    answers_form: bool = True,
    in_period: bool | None = None,
    states_asked: bool = False,
    relation: frozenset[str] = frozenset(),
) -> float:
    """1.0 when the memory cannot be about what the question asks, else 0.0:

    - ``unknown``: the question names an identifier (with a digit: ``prod-eu-2``,
      ``OPS-1433``) that no memory the recall may rank contains and no entity is spelled
      as: the store has never heard of the thing asked about, so nothing in it answers;
    - the question names things the store knows (``subjects``) and the memory is about
      none of them (:func:`names_subject`) but about a sibling of one, another stored
      thing spelt with one of its words (:func:`names_sibling`): a memory about the auth
      gateway's login rate limit does not answer for the support gateway's, however
      alike the rest reads (as :func:`missing_named` for an identifier, here for a thing
      named in plain words); or about neither but linked only to other stored things
      (``entity_ids``) and with no words that may spell one of the things asked about
      (:func:`may_spell`: "Postgres" for ``pg``): the search API's SLO does not answer
      for the notification worker's. Never a memory that holds an identifier the
      question names (:func:`states_identifier`). A memory linked to nothing that names
      neither may be about the thing under a name the store has not linked: not judged
      here;
    - the memory is about the thing named but states no value of the kind the
      question's form asks for (``answers_form`` False, :func:`asked_shapes`,
      :func:`states`: "how much memory may the session Redis use?" is not answered by
      its maxclients), or its event time is outside the period the question names and
      its text does not name it (``in_period`` False: the payments API's outage of
      another day);
    - the memory is about the thing named but shares none of what the question asks of
      it: at least :data:`SPECIFIC_AT_LEAST` terms besides the thing's name (and the
      period's frame and grammar words, :data:`GRAMMAR_TOKENS`), none of them in the
      memory, nor a shortening of one (:data:`SHORTENED_AT_LEAST`: "retro" for
      "retrospectives"). "What is the latency SLO of the fraud scorer?" is not answered
      by the fraud scorer's review threshold:
      the question's name matched, what it asks did not. The thing's name (in the
      memory's words too) is not what is asked, nor the question's last word when the
      memory also follows the name with it (:attr:`Subject.follow`: "the ClickHouse
      analytics *cluster*"). A memory that states a value of the kind the question asks
      for (``states_asked``: a code for "which status code", :func:`asks_code`) shares
      what is asked in the value's own shape ("answers 429"), and a fact whose relation the
      question words and asks nothing more of (``relation``, :func:`relation_named`) states
      it in the relation's own wording. A vague question about the
      thing ("what happened in OPS-1402?") is answered by any memory about it, as under
      an entity filter."""
    if unknown:
        return 1.0
    if not subjects:
        return 0.0
    query_tokens = tuple(query_tokens)
    ids = set(entity_ids)
    if not any(names_subject(s, ids, words) for s in subjects):
        if states_identifier(query_tokens, document_tokens):
            return 0.0
        if any(names_sibling(s, ids, words) for s in subjects):
            return 1.0
        if not ids:
            return 0.0
        spoken = words.split()
        return 0.0 if any(may_spell(s, spoken) for s in subjects) else 1.0
    if not answers_form or in_period is False:
        return 1.0
    named = set().union(*(s.tokens for s in subjects))
    asked = set(query_tokens) - named - PERIOD_FRAME - GRAMMAR_TOKENS
    # The question's spelling of the thing as one token ("cart-svc", "ADR-038" for the
    # entity spelt "cart svc", "adr 038") names it as its words do: not what is asked.
    asked -= {t for t in asked if not t.isalnum() and set(word_tokens(t)) <= named}
    if len(asked) < SPECIFIC_AT_LEAST:
        return 0.0
    # A word that follows the thing's name in the question and in the memory alike is
    # part of how both name it ("the ClickHouse analytics cluster"), not what is asked.
    named |= {
        t
        for s in subjects
        for word, its in s.follow
        if any(f" {' '.join(form)} {word} " in words for form in s.spellings)
        for t in its
    }
    asked -= named
    # A compound asked for ("response-time") is one thing asked, its words part of it: a
    # memory shares it when it states it in some spelling (two words, one, hyphenated).
    compounds = {t for t in asked if is_compound(t)}
    asked -= {w for t in compounds for w in compound_forms(t)[0]}
    # A fact whose relation the question words, and asks nothing besides ("which
    # programming language is it built with?" of ``written in``), states what is asked.
    if not asked or states_asked or not asked - relation:
        return 0.0
    present = set(document_tokens) - named
    return 0.0 if any(
        states_term(term, document_tokens) if term in compounds else _shares_word(term, present)
        for term in asked
    ) else 1.0  # fmt: skip


def relation_named(query_tokens: Iterable[str], predicate_normalized: str | None) -> frozenset[str]:
    """The question's tokens that word the relation a fact states, in any of its built-in
    wordings (:data:`ferrex.rules.predicates.DEFAULT_SYNONYM_GROUPS`): "which programming
    language is ferrex built with?" words what ``ferrex | written in | Go`` states, though
    they share no word but the name. A wording of stop words alone ("is") words nothing."""
    if not predicate_normalized:
        return frozenset()
    asked = set(query_tokens)
    named = [wording for wording in _wordings(predicate_normalized) if wording <= asked]
    return frozenset().union(*named)


@cache
def _wordings(canonical: str) -> tuple[frozenset[str], ...]:
    """The BM25 tokens of each wording of relation ``canonical`` (its own name too)."""
    phrases = (canonical.replace("_", " "), *DEFAULT_SYNONYM_GROUPS.get(canonical, ()))
    return tuple(frozenset(t) for t in map(tokens, phrases) if t)


_NOW: Final = "these days|nowadays|currently|presently|right now|at the moment|at present|still"
NOW_WORDS: Final = re.compile(rf"\b(?:{_NOW}|as of now|anymore)\b", re.I)
"""Words that place a question in the present ("where does it run *these days*?", "is it
*still* on 15?"): a memory of the current state never says them (:func:`without_now`)."""


def without_now(query: str) -> str:
    """The query less the words that only place it in the present (:data:`NOW_WORDS`)."""
    return NOW_WORDS.sub(" ", query)


def states_identifier(query_tokens: Iterable[str], document_tokens: Sequence[str]) -> bool:
    """Whether the memory holds an identifier the question names (a name with a digit or
    a joiner other than a hyphen between letters: ``pg-billing-02``, ``max_retries``; not
    ``help-desk``): "is the billing db still on pg-billing-02?" asks of the memory that
    says ``pg-billing-02``, whichever stored thing it is linked to."""
    held = set(document_tokens)
    return any(not t.isalnum() and not is_compound(t) and t in held for t in query_tokens)


GRAMMAR_TOKENS: Final = frozenset(
    {
        "per", "via", "within", "without", "across", "along", "among", "around", "toward",
        "upon", "onto", "sinc", "besid", "near", "insid", "outsid", "everi",
    }
)  # fmt: skip
"""Prepositions and quantifiers (BM25 stems) that the BM25 stop words keep: a closed
class of grammar words, which say nothing of what a question asks ("attempts *per*
minute" is not answered by "EUR 50 *per* ticket")."""


SHORTENED_AT_LEAST: Final = 4
"""A word and its shortening (``retro`` for ``retrospective``, ``config`` for
``configuration``) count as one word when the shorter has at least this many letters."""


def _shares_word(term: str, present: set[str]) -> bool:
    """Whether ``term`` or a word it shortens or is shortened from is in ``present``."""
    if term in present:
        return True
    return any(
        len(short) >= SHORTENED_AT_LEAST and long.startswith(short)
        for word in present
        for short, long in ((word, term), (term, word))
        if len(short) < len(long)
    )


# --- What a question's form asks for, and whether a memory states a value of that kind ---

_SHAPED_FORMS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"\bhow (?:long|often)\b"), "duration"),
    (re.compile(r"\bhow (?:big|large|much (?:memory|ram|disk|space|storage))\b"), "size"),
    (re.compile(r"\b(?:what|which) (?:\w+ )?versions?\b"), "version"),
    (re.compile(r"\b(?:what|which) (?:\w+ )?ports?\b"), "port"),
)
"""Question forms that ask for a value with a shape of its own: *how long* or *how often*
a duration or a frequency, *how big* or *how much memory* a size, *which version* a
version, *which port* a port."""

_UNSHAPED_FORMS: Final = re.compile(
    r"\b(?:when|who|whom|whose|where|why)\b"
    r"|\bhow (?:many|much)\b(?! (?:memory|ram|disk|space|storage))"
)
"""Forms whose answer may have no shape in a memory's text (a date is its event time, a
person a plain name, a count a number word): a question that also asks one of them is
not judged by its form."""


def asked_shapes(question: str) -> frozenset[str]:
    """The kinds of value with a shape (:data:`_SHAPED_FORMS`) that ``question``'s form asks
    for; empty when it asks none, or also asks something whose answer may have no shape
    (:data:`_UNSHAPED_FORMS`: "when did we upgrade Redis, and which version?")."""
    low = question.casefold()
    if _UNSHAPED_FORMS.search(low):
        return frozenset()
    return frozenset(kind for pattern, kind in _SHAPED_FORMS if pattern.search(low))


_NUMBER: Final = (
    r"(?:\d+(?:[.,]\d+)?|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|fifteen|twenty|thirty|forty|fifty|sixty|ninety|hundred|few|several)"
)
_SHAPES: Final[dict[str, re.Pattern[str]]] = {
    "duration": re.compile(
        rf"\b{_NUMBER}[\s-]*(?:ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|"
        r"d|days?|w|wks?|weeks?|months?|y|yrs?|years?)\b"
        r"|\b(?:hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually|"
        r"every|each|once|twice|indefinitely|forever)\b"
    ),
    "size": re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:[kmgtp]i?b|[kmgt]i|bytes?)\b"),
    "version": re.compile(r"\bv?\d+\.\d+(?:\.\d+)*\b|\bv\d+\b"),
    "port": re.compile(
        r"\bports?\s+:?\d{2,5}\b|[a-z\]][\w.-]*:\d{2,5}\b|\blisten(?:s|ing)?\s+on\s+:?\d{2,5}\b"
    ),
}
"""How a memory's text states a value of each kind: a number (in digits or words) and a
unit of time, or a frequency (*nightly*, *every*); a number and a unit of size; dotted
digits or ``v`` and digits; a port after the word *port*, a host and a colon, or
*listens on*."""


def states(
    kinds: frozenset[str], text: str, predicate: str | None = None, obj: str | None = None
) -> bool:
    """Whether a memory states a value of one of ``kinds`` (:func:`asked_shapes`): by the
    shapes of :data:`_SHAPES` in its text or its fact's object, or as
    :func:`stated_kinds` reads them."""
    if not kinds:
        return True
    # A fact whose relation is named by the kind asked for (``node version | 20 LTS`` for
    # "which node version"): its object is that value, whatever its shape.
    relation = set(re.split(r"[\s_.-]+", (predicate or "").casefold()))
    if any(kind in relation or f"{kind}s" in relation for kind in kinds):
        return True
    low = " ".join(part for part in (text, predicate or "", obj or "") if part).casefold()
    if any(_SHAPES[kind].search(low) for kind in kinds if kind in _SHAPES):
        return True
    return bool(kinds & stated_kinds(text, predicate, obj))


_ASKS_CODE: Final = re.compile(r"\b(?:status|error|exit|response|return|http|reason)\s+codes?\b")
"""A question asking for a code: a status code, an error code, an exit code."""

_CODE: Final = re.compile(
    r"(?<![\w.:/-])[1-5]\d\d(?![\w.:/-])"  # an HTTP status: 429, 503
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"  # a constant: ERR_CART_LOCKED, E_TIMEOUT
    r"|\b[A-Z]{1,5}-?\d{2,}\b"  # a coded error: E1234, ERR-42
)
"""How a memory's text states a code, in its own case: a status of three digits standing
alone (not part of a version, an address or a time), a constant in capitals joined by
underscores, or capitals and digits."""


def asks_code(question: str) -> bool:
    """Whether ``question`` asks for a code (:data:`_ASKS_CODE`: "which status code",
    "what error code")."""
    return bool(_ASKS_CODE.search(question.casefold()))


def states_code(text: str) -> bool:
    """Whether a memory's text states a code (:data:`_CODE`): "answers 429",
    "ERR_CART_LOCKED is returned"."""
    return bool(_CODE.search(text))


# --- What a question asks for, and what a memory states (ranking that reads the question) ---

_ASKS: Final[tuple[tuple[re.Pattern[str], frozenset[ObjectKind]], ...]] = (
    (re.compile(r"\b(?:what|which) (?:\w+ )?versions?\b|\bversions? of\b"),
     frozenset({"version"})),
    (re.compile(r"\bwhere(?:'s)?\b"), frozenset({"host", "url"})),
    (re.compile(r"\bwho(?:se|m|'s)?\b"), frozenset({"party"})),
    (re.compile(r"\bwhen\b|\b(?:what|which) (?:date|day)\b"), frozenset({"date"})),
    (re.compile(r"\bhow (?:long|often)\b"), frozenset({"duration"})),
    (re.compile(r"\bhow (?:big|large|much (?:memory|disk|space|storage))\b"),
     frozenset({"size"})),
)  # fmt: skip
"""A question's form and the kinds of value that answer it: *what version* a version,
*where* a host or an address, *who* a person or a team, *when* a date, *how long* or *how
often* a duration, *how big* a size. The form that comes first in the question counts."""

_VALUE_TOKEN = re.compile(r"[^\s,;()\[\]{}<>\"'`]+")
_MAY_BE_VALUE = re.compile(r"\d|@|\w\.\w")


def asked_kinds(question: str) -> frozenset[ObjectKind]:
    """The kinds of value (:func:`object_kind`) that answer ``question`` by its form (see
    :data:`_ASKS`); empty when its form asks for none (*why*, *what happened*)."""
    low = question.casefold()
    found = [(m.start(), kinds) for pattern, kinds in _ASKS if (m := pattern.search(low))]
    return min(found, key=lambda item: item[0])[1] if found else frozenset()


def stated_kinds(text: str, predicate: str | None = None, obj: str | None = None) -> set[str]:
    """The kinds of value a memory states: its object's (a fact; a thing at a whole version
    is a version), and those of the words of its text that are values by their shape alone
    (a host name, a version, a URL, a date, a handle; a number with its unit as two words,
    ``30 s``). A fact whose predicate places its subject (``runs on``, ``hosted at``,
    ``lives in``) states where, whatever its object."""
    kinds: set[str] = set()
    if obj:
        kind = object_kind(obj)
        if kind is not None:
            kinds.add(kind)
        elif named_version(obj):
            kinds.add("version")  # a thing at a whole version: PostgreSQL 16
    if predicate and predicate.replace(" ", "_").split("_")[-1] in PLACE_PREPOSITIONS:
        kinds.add("host")
    words = [w.rstrip(".:!?") for w in _VALUE_TOKEN.findall(text)]
    for i, word in enumerate(words):
        if not (_MAY_BE_VALUE.search(word)):
            continue  # every kind but a name has a digit, a dot inside, ``@`` or ``://``
        kind = object_kind(word)
        if kind is None and i + 1 < len(words) and word[:1].isdigit():
            kind = object_kind(f"{word} {words[i + 1]}")  # a number and its unit
        if kind == "party" and not word.startswith("@"):
            continue  # a capitalised word of a text is no name by its shape alone
        if kind is not None:
            kinds.add(kind)
    return kinds


def answers_form(question_kinds: frozenset[str], stated: set[str]) -> bool:
    """Whether a memory states a value of a kind the question's form asks for."""
    return bool(question_kinds & stated)
