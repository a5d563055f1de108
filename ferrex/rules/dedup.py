"""Duplicate and conflict decisions: is a new memory a repeat, or does it replace an old one?

Embedding similarity says two texts *say much the same*; it cannot say they state the same
*fact*. "Fixed in PR #260" and "Fixed in PR #480" embed almost identically, and so do "tokio
1.36" and "tokio 1.38". What sets such facts apart is their identifiers, so every decision here
pairs a similarity with :func:`identifiers`:

- :func:`is_duplicate`: similar enough *and* the same identifiers;
- :func:`classify_object_change`: for a semantic fact whose subject and predicate match an
  existing one, whether the new object repeats, replaces, or cannot be told apart from the
  old.

The similarity comes in as a number (the caller's model computed it); nothing here loads a
model.

Identifiers. :func:`identifiers` scans the text (lowercased) for runs of letters and digits
joined by ``- . / \\ _ : # @``, optionally led by ``# @ ~ . / \\``, and keeps a run when it

- contains a digit: numbers and decimals (``3``, ``0.95``), versions (``v1.36``,
  ``1.38.2``), references (``#260``, ``INC-90312``, ``E1234``), ids and hashes (``a1b2c3d``),
  dates and times (``2024-05-01``, ``10:30``);
- or contains one of ``_ / \\ @ #`` or ``::``: paths (``src/app/main.py``), URLs, e-mail
  addresses, code identifiers (``max_retries``, ``std::vec``), channels (``#general``);
- or looks like a file name: a dot followed by a short extension (``config.toml``,
  ``.env``).

Plain hyphenated words (``well-known``) are not identifiers: prose rewords them freely.
Two spellings of one identifier compare equal: a ``#`` before a bare number is dropped
(``#260`` = ``260``) and so is a ``v`` before a version (``v1.36`` = ``1.36``).

Meaning. Two texts can embed above the duplicate threshold and still say different things.
Before it calls them duplicates, :func:`meaning_difference` looks for a difference that
changes meaning, in this order, and names the first it finds (the store answer carries it):

- *identifiers* differ (above; a number glued to a unit, ``30s``, counts as the number);
- *quantities*: a number with a different unit (``30 seconds`` / ``30 minutes``, ``10 am`` /
  ``10 pm``); unit spellings are folded (``s``, ``sec``, ``seconds``), and number words up to
  twenty and the tens are read as numbers (``three retries`` = ``3 retries``); a quantity
  whose number the other text writes with no unit is none (``returned 502s`` / ``returned
  502 errors``: a plural, not seconds);
- *dates*: weekday and month names, and the relative days (``today``, ``yesterday``, ...);
- *negation*: a different count of negations (``not``, ``never``, ``no``, ``n't``, ``non-``,
  ``without``, ...), so "X is enabled" / "X is not enabled";
- *opposite words*: one text has a word of a small table of opposites
  (:data:`OPPOSITES`: enabled/disabled, synchronous/asynchronous, before/after, ...) that
  the other lacks, while the other has its opposite;
- *names*: a named thing in one text and not the other. A word is a name when it is written
  capitalized inside a sentence, in CamelCase or all capitals, or is a compound of letters
  joined by ``- _ .`` (``metrics-gateway``), or an environment's name (``staging``,
  ``production``); case alone never makes a difference (each text's words are compared
  lowercased);
- *order*: the same named things in another order around a relation. The content words of
  one text are aligned with the other's (stop words dropped, a light suffix stemming); a
  decreasing run of three aligned words (``A calls B`` / ``B calls A``) is a reversal around
  a relation, which a moved phrase (``on Tuesday the deploy failed``) never makes. A passive
  (``B is called by A``) in exactly one of the texts turns the test around: there a reversal
  is the same statement, and only a passive that keeps every aligned word in the active's
  order (``A is called by B``) says the opposite; a participle before a
  preposition in exactly one (``bug fixed in PR 260`` / ``PR 260 fixed the bug``) silences
  the test (either reading is possible).

Each test is a plain comparison of the two texts, deterministic and cheap; any of them
keeps both memories.

The bias is towards keeping both memories: a missed duplicate costs a near-copy in recall; a
false one loses a fact.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, Final, Literal

_TOKEN = re.compile(r"[#@~./\\]*[^\W_]+(?:[-./\\_:#@]+[^\W_]+)*")
_DIGIT = re.compile(r"\d")
_CODE_MARK = re.compile(r"[_/\\@#]|::")
_FILE_NAME = re.compile(r"(?:^|[^\W_]{2,})\.[a-z][a-z0-9]{0,7}$")
_HASH_NUMBER = re.compile(r"#(\d+)")
_VERSION = re.compile(r"v(\d+(?:\.\d+)*)")
_WHITESPACE = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[\W_]+")

ObjectChange = Literal["duplicate", "supersede", "ambiguous"]

DUPLICATE_THRESHOLD: Final = 0.95
NEAR_THRESHOLD: Final = 0.88
"""Below the duplicate threshold and at or above this, a new memory is kept but its answer
names the similar one (chosen on ``golden_set/dedup_pairs.jsonl``: ``tools/eval_dedup.py``)."""
DIFFERENT_THRESHOLD: Final = 0.80


def identifiers(text: str) -> frozenset[str]:
    """The identifier tokens of ``text``, lowercased and canonical (see the module docstring)."""
    found = set()
    for match in _TOKEN.finditer(text.lower()):
        token = match.group()
        if _DIGIT.search(token) or _CODE_MARK.search(token) or _FILE_NAME.search(token):
            found.add(_canonical(token))
    return frozenset(found)


def _canonical(token: str) -> str:
    for pattern in (_HASH_NUMBER, _VERSION):
        plain = pattern.fullmatch(token)
        if plain:
            return plain.group(1)
    return token


def is_duplicate(
    similarity: float, new_text: str, old_text: str, threshold: float = DUPLICATE_THRESHOLD
) -> bool:
    """True when ``new_text`` repeats ``old_text``: similar enough, or the same words (up to
    case, spacing and punctuation: :func:`same_text`, whatever the model's cosine of the two),
    and no difference that changes meaning (:func:`meaning_difference`)."""
    _check_similarity(similarity)
    close = near_copy(similarity, new_text, old_text, threshold)
    return close and meaning_difference(new_text, old_text) is None


def near_copy(similarity: float, new_text: str, old_text: str, threshold: float) -> bool:
    """Whether two texts are close enough to be the same statement, before their meaning is
    compared: ``similarity >= threshold``, or the same words up to case, spacing and
    punctuation (:func:`same_text`), whatever the model makes of a dropped full stop (0.945
    for one such pair on 8-bit activations)."""
    return similarity >= threshold or same_text(new_text, old_text)


def classify_object_change(
    new_object: str,
    old_object: str,
    similarity: float,
    *,
    duplicate: float = DUPLICATE_THRESHOLD,
    different: float = DIFFERENT_THRESHOLD,
) -> ObjectChange:
    """What a new object for the same subject and predicate does to the old one.

    In order: objects equal up to case and spacing → ``duplicate``; different identifiers
    (``1.36`` → ``1.38``) → ``supersede``; ``similarity >= duplicate`` → ``duplicate``;
    ``similarity < different`` → ``supersede``; in between → ``ambiguous`` (the caller keeps
    both and lets the agent say which holds).
    """
    _check_similarity(similarity)
    if different > duplicate:
        raise ValueError(f"different ({different}) must not exceed duplicate ({duplicate})")
    if _plain(new_object) == _plain(old_object):
        return "duplicate"
    if identifiers(new_object) != identifiers(old_object):
        return "supersede"
    if similarity >= duplicate:
        return "duplicate"
    if similarity < different:
        return "supersede"
    return "ambiguous"


def same_text(a: str, b: str) -> bool:
    """Whether two texts are the same words, up to case, spacing and punctuation."""
    return _bare(a) == _bare(b)


def _bare(text: str) -> str:
    return _NOT_WORD.sub(" ", _plain(text)).strip()


def _plain(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WHITESPACE.sub(" ", folded).strip()


def _check_similarity(similarity: float) -> None:
    # A NaN would fail every comparison and silently read as "not a duplicate".
    if not math.isfinite(similarity):
        raise ValueError(f"similarity must be a finite number, got {similarity!r}")


# -- meaning -----------------------------------------------------------------------------------


def _listed(text: str) -> list[str]:
    return text.split()


def _words(text: str) -> frozenset[str]:
    return frozenset(_listed(text))


_UNITS: Final = {
    "ms": "ms", "msec": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "d": "d", "day": "d", "days": "d",
    "w": "wk", "wk": "wk", "wks": "wk", "week": "wk", "weeks": "wk",
    "mo": "mo", "month": "mo", "months": "mo",
    "y": "yr", "yr": "yr", "yrs": "yr", "year": "yr", "years": "yr",
    "b": "b", "byte": "b", "bytes": "b", "kb": "kb", "kib": "kb", "mb": "mb", "mib": "mb",
    "gb": "gb", "gib": "gb", "tb": "tb", "tib": "tb",
    "%": "%", "percent": "%", "am": "am", "pm": "pm",
    "x": "x", "times": "x", "k": "k", "thousand": "k", "million": "m", "billion": "bn",
}  # fmt: skip
"""Unit spellings after a number, folded to one name each."""
_MEASURES: Final = frozenset(
    {"ms", "s", "min", "h", "d", "wk", "mo", "yr", "b", "kb", "mb", "gb", "tb"}
)


def measure_unit(word: str) -> bool:
    """Whether a word is a unit of time or size (``minutes``, ``days``, ``GB``): a number
    with it is a quantity (``30 minutes`` is ``1800 seconds``), not a count of things."""
    return _UNITS.get(word.casefold()) in _MEASURES


_CARDINALS: Final = {
    word: str(value)
    for value, word in enumerate(
        _listed(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
     "eighty": "80", "ninety": "90", "hundred": "100", "dozen": "12"}  # fmt: skip
_ORDINALS: Final = {
    word: f"{value}{'rd' if value == 3 else 'th'}"
    for value, word in enumerate(
        _listed(
            "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
            "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
            "nineteenth twentieth"
        )
    )
    if value > 2  # "first" is also "at first", "second" also a unit
} | {"thirtieth": "30th"}
_NUMBER_WORDS: Final = _CARDINALS | _ORDINALS
"""Number words read as numbers (``three retries`` = ``3 retries``)."""

_WEEKDAYS: Final = _words("monday tuesday wednesday thursday friday saturday sunday")
_DATE_WORDS: Final = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs "
    "fri sat sun january february march april june july august september october november "
    "december jan feb mar apr jun jul aug sep sept oct nov dec today yesterday tomorrow "
    "tonight weekend morning afternoon evening midnight noon summer winter spring autumn"
) | frozenset(day + "s" for day in _WEEKDAYS)
"""Words that name a day, a month, a season or a part of a day (``may`` and ``fall`` are
left out: verbs too)."""

_PERIODS: Final = {
    "minute": "minute", "minutes": "minute", "overnight": "night",
    "hour": "hour", "hours": "hour", "hourly": "hour", "day": "day", "days": "day",
    "daily": "day", "night": "night", "nights": "night", "nightly": "night", "week": "week",
    "weeks": "week", "weekly": "week", "month": "month", "months": "month",
    "monthly": "month", "quarter": "quarter", "quarterly": "quarter", "year": "year",
    "years": "year", "yearly": "year", "annual": "year", "annually": "year",
}  # fmt: skip
"""Words that name a period (``every hour`` / ``every minute``, ``hourly`` = ``every hour``;
not ``second``, which is also an ordinal)."""

_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|cannot|without|"
    r"non(?=-)|isnt|arent|wasnt|werent|dont|doesnt|didnt|wont|cant|shouldnt|couldnt)\b"
    r"|n[\u2019']t\b"
)

OPPOSITES: Final = (
    ("enabled", "disabled"), ("enable", "disable"), ("enables", "disables"),
    ("synchronous", "asynchronous"), ("synchronously", "asynchronously"),
    ("sync", "async"), ("blocking", "nonblocking"),
    ("allow", "deny"), ("allowed", "denied"), ("allows", "denies"),
    ("accept", "reject"), ("accepted", "rejected"), ("accepts", "rejects"),
    ("pass", "fail"), ("passed", "failed"), ("passes", "fails"), ("passing", "failing"),
    ("succeeded", "failed"), ("success", "failure"), ("successful", "failed"),
    ("true", "false"), ("yes", "no"), ("on", "off"), ("up", "down"),
    ("before", "after"), ("above", "below"), ("over", "under"),
    ("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"),
    ("raise", "lower"), ("raised", "lowered"), ("higher", "lower"), ("more", "less"),
    ("more", "fewer"), ("faster", "slower"), ("larger", "smaller"), ("bigger", "smaller"),
    ("min", "max"), ("minimum", "maximum"), ("first", "last"), ("earliest", "latest"),
    ("older", "newer"), ("oldest", "newest"), ("start", "stop"), ("started", "stopped"),
    ("starts", "stops"), ("open", "closed"), ("opened", "closed"),
    ("public", "private"), ("inbound", "outbound"), ("input", "output"),
    ("upstream", "downstream"), ("include", "exclude"), ("included", "excluded"),
    ("includes", "excludes"), ("add", "remove"), ("added", "removed"), ("adds", "removes"),
    ("valid", "invalid"), ("available", "unavailable"), ("required", "optional"),
    ("internal", "external"), ("encrypted", "unencrypted"), ("always", "never"),
    ("read", "write"), ("reads", "writes"), ("client", "server"), ("most", "least"),
    ("last", "next"), ("he", "she"), ("him", "her"), ("his", "her"), ("son", "daughter"),
    ("sons", "daughters"), ("brother", "sister"), ("father", "mother"), ("dad", "mom"),
    ("husband", "wife"), ("boyfriend", "girlfriend"), ("uncle", "aunt"), ("nephew", "niece"),
    ("boy", "girl"), ("man", "woman"), ("men", "women"),
    ("like", "dislike"), ("likes", "dislikes"), ("love", "hate"), ("loves", "hates"),
    ("win", "lose"), ("won", "lost"), ("wins", "loses"), ("good", "bad"),
    ("best", "worst"), ("better", "worse"), ("easy", "hard"), ("easier", "harder"),
    ("cheap", "expensive"), ("cheaper", "pricier"), ("early", "late"), ("earlier", "later"),
    ("lock", "unlock"), ("locked", "unlocked"), ("mount", "unmount"),
    ("installed", "uninstalled"), ("install", "uninstall"), ("join", "leave"),
    ("joined", "left"), ("buy", "sell"), ("bought", "sold"), ("push", "pull"),
    ("send", "receive"), ("sends", "receives"), ("sent", "received"),
    ("import", "export"), ("imports", "exports"), ("imported", "exported"),
)  # fmt: skip
"""Pairs of words of opposite meaning, compared as whole words."""

_ENVIRONMENTS: Final = _words(
    "staging stage production prod dev development qa sandbox canary preprod"
)
"""Environment names, which are names though written in lower case."""

_STOP_WORDS: Final = _words(
    "a an the this that these those it its is are was were be been being am do does did "
    "has have had having will would shall should can could may might must to of in on at "
    "by for from with as into onto about and or but so then than also just very really "
    "i me my we our us you your he him his she her they them their there here which who "
    "whom whose what when where why how all any each every some such only own same "
    "again still now please okay ok oh well yeah hey hi thanks thank"
)

_WORD = re.compile(r"[#@~./\\]*[^\W_]+(?:[-'\u2019./\\_:#@]+[^\W_]+)*|%")
_QUANTITY = re.compile(r"(\d+(?:[.,]\d+)*)\s*(%|[a-z]+\b)?")
_GLUED_UNIT = re.compile(r"(\d+(?:\.\d+)*)([a-z%]+)")
_COMPOUND = re.compile(r"[^\W_]+(?:[-_.][^\W_]+)+")
_CAMEL = re.compile(r"[a-z]+[A-Z]\w*|[A-Z]{2,}\w*|[A-Z][a-z]+[A-Z]\w*")
_SENTENCE_MARKS: Final = frozenset('.!?:;"\u201c(\n')
_PASSIVE = re.compile(
    r"\b(?:is|are|was|were|be|been|being|get|gets|got|gotten)\s+(?:\w+\s+){1,6}?by\b"
)
_REDUCED_PASSIVE = re.compile(
    r"\b\w+(?:ed|en|wn)\s+(?:in|by|at|on|from|with|via|through|into|under)\b"
)
_APOSTROPHE = re.compile(r"[\u2019']")
_CLITIC = re.compile(r"[\u2019'](?:s|re|ve|ll|d|m)$")


def meaning_difference(new_text: str, old_text: str) -> str | None:
    """The first difference between two texts that changes what they say, worded for the
    store answer ("negation in one and not the other"), or None when none is found (see the
    module docstring for the tests and their order)."""
    a, b = _Text(new_text), _Text(old_text)
    if a.identifiers != b.identifiers:
        return _differ("identifiers", a.identifiers, b.identifiers)
    if _unit_differs(a, b) or _unit_differs(b, a):
        return _differ("quantities", set(a.quantities), set(b.quantities))
    if a.dates != b.dates:
        return _differ("dates", a.dates, b.dates)
    if a.negations != b.negations:
        return "negation in one and not the other"
    for x, y in OPPOSITES:
        if (x in a.words and y in b.words and y not in a.words and x not in b.words) or (
            y in a.words and x in b.words and x not in a.words and y not in b.words
        ):
            return f"opposite words: {x!r} / {y!r}"
    vocabulary = a.names | b.names
    names_a, names_b = a.words & vocabulary, b.words & vocabulary
    if names_a != names_b:
        return _differ("names", names_a, names_b)
    # A sentence's first word is capitalized anyway: it is a name that changed only when
    # each text opens a sentence with a word the other lacks ("Alice owns" / "Bob owns").
    opened_a, opened_b = a.initials - b.words, b.initials - a.words
    if opened_a and opened_b:
        return _differ("names", opened_a, opened_b)
    if _reversed(a, b):
        return "the same named things in another order around a relation"
    return None


def _unit_differs(a: _Text, b: _Text) -> bool:
    """Whether ``a`` holds a quantity ``b`` lacks, other than one whose number ``b`` writes
    bare, with no unit at all: ``returned 502s`` / ``returned 502 errors`` is one number (a
    plural read as seconds), ``30 seconds`` / ``30 minutes`` two quantities."""
    measured = {number for number, _ in b.quantities}
    return any(
        number not in b.words or number in measured
        for number, unit in set(a.quantities) - set(b.quantities)
    )


def _differ(what: str, a: set[Any] | frozenset[Any], b: set[Any] | frozenset[Any]) -> str:
    def show(items: set[Any] | frozenset[Any]) -> str:
        return ", ".join(sorted(" ".join(i) if isinstance(i, tuple) else str(i) for i in items))

    only_a, only_b = set(a) - set(b), set(b) - set(a)
    return f"different {what}: {show(only_a) or '-'} / {show(only_b) or '-'}"


class _Text:
    """What :func:`meaning_difference` compares of one text."""

    def __init__(self, text: str) -> None:
        plain = unicodedata.normalize("NFKC", text)
        lower = plain.lower()
        tokens = [_number_word(_CLITIC.sub("", t)) for t in _WORD.findall(lower)]
        self.words = frozenset(tokens) | frozenset(_APOSTROPHE.sub("", t) for t in tokens)
        self.identifiers = frozenset(_unglued(i) for i in identifiers(" ".join(tokens)))
        self.quantities = _quantities(" ".join(tokens))
        # A period word after a number is a quantity's unit (compared above), not a period.
        self.dates = frozenset(t for t in tokens if t in _DATE_WORDS) | frozenset(
            _PERIODS[t]
            for i, t in enumerate(tokens)
            if t in _PERIODS and not (i and _QUANTITY.fullmatch(tokens[i - 1]))
        )
        self.negations = len(_NEGATION.findall(_APOSTROPHE.sub("'", lower)))
        named, self.initials = _names(plain)
        self.names = named | {t for t in tokens if t in _ENVIRONMENTS}
        self.passive = bool(_PASSIVE.search(lower))
        self.participle = self.passive or bool(_REDUCED_PASSIVE.search(lower))
        self.content = [_stem(t) for t in tokens if t not in _STOP_WORDS and len(t) > 1]


def _number_word(token: str) -> str:
    return _NUMBER_WORDS.get(token, token)


def _unglued(token: str) -> str:
    glued = _GLUED_UNIT.fullmatch(token)
    if glued and glued.group(2) in _UNITS:
        return glued.group(1)
    return token


def _quantities(text: str) -> tuple[tuple[str, str], ...]:
    found = []
    for match in _QUANTITY.finditer(text):
        unit = _UNITS.get(match.group(2) or "")
        if unit is not None:
            found.append((match.group(1), unit))
    return tuple(sorted(found))


def _names(text: str) -> tuple[set[str], set[str]]:
    """Words written as names: capitalized inside a sentence, CamelCase or capitals, or
    compounds (``metrics-gateway``); and the capitalized words that open a sentence (not
    stop words). Both lowercased."""
    found: set[str] = set()
    initials: set[str] = set()
    for match in _WORD.finditer(text):
        token = _CLITIC.sub("", match.group())
        if token.lower() in _UNITS:
            continue
        if (_COMPOUND.fullmatch(token) and not _DIGIT.search(token)) or _CAMEL.fullmatch(token):
            found.add(token.lower())
        elif token[:1].isupper():
            if not _opens_sentence(text, match.start()):
                found.add(token.lower())
            elif token.lower() not in _STOP_WORDS:
                initials.add(_number_word(token.lower()))
    return found, initials


def _opens_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence (or a line, or a quote): only spaces
    between it and the start of the text or a sentence mark (looked up backwards, so a long
    text is not rescanned for every word)."""
    at = start - 1
    while at >= 0 and text[at].isspace() and text[at] != "\n":
        at -= 1
    return at < 0 or text[at] in _SENTENCE_MARKS


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _reversed(a: _Text, b: _Text) -> bool:
    """Whether the content words shared by the two texts run in another order around a
    relation (a decreasing run of three when one text is aligned with the other), with a
    passive in exactly one of them turning the test around."""
    places: dict[str, list[int]] = {}
    for index, word in enumerate(b.content):
        places.setdefault(word, []).append(index)
    aligned = []
    for word in a.content:
        free = places.get(word)
        if free:
            aligned.append(free.pop(0))
    if len(aligned) < 3:
        return False
    decreasing = _longest_decreasing(aligned)
    if a.passive != b.passive:
        # "B is called by A" is "A calls B" turned round; only a passive that kept every
        # word in the active's order ("A is called by B") says the opposite.
        return decreasing == 1
    reversal = decreasing >= 3
    if a.participle != b.participle:  # "bug fixed in PR 260": cannot tell, keep the rule quiet
        return False
    return reversal


def _longest_decreasing(sequence: list[int]) -> int:
    """The length of the longest strictly decreasing subsequence (patience sorting)."""
    tails: list[int] = []
    for value in (-v for v in sequence):
        low, high = 0, len(tails)
        while low < high:
            middle = (low + high) // 2
            if tails[middle] < value:
                low = middle + 1
            else:
                high = middle
        if low == len(tails):
            tails.append(value)
        else:
            tails[low] = value
    return len(tails)
