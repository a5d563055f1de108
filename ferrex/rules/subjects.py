"""Subject resolution: whether two facts are about the same thing, possibly, or not.

A semantic fact's subject is an entity (:func:`resolve_subject` places it among the known
spellings of its namespace), and two facts conflict only when their subjects resolve to the
same entity. Subjects are named the way agents write: ``billing service``, ``billing-svc``,
``the billing svc``; ``staging database``, ``staging db``; ``k8s cluster``, ``kubernetes
cluster``. So before names are compared each word is spelled out (:func:`spelled_out`) by a
small table of abbreviations and numeronyms (:data:`DEFAULT_ABBREVIATIONS`: ``db`` →
``database``, ``svc`` → ``service``, ``k8s`` → ``kubernetes``, ``repo`` → ``repository``,
``env`` → ``environment``, ``prod`` → ``production``, ``cfg`` → ``config``, ``i18n`` →
``internationalization``...), extended per namespace in the configuration
(``[subjects.abbreviations]`` and ``[subjects.namespaces.NS]``, ``short = "long"``).
Ambiguous short forms are left out on purpose: ``auth`` (authentication or authorization?),
``pg`` (PostgreSQL or a page?), ``ns`` (a namespace or a DNS name server?), ``conf`` (a
configuration or a conference?), ``ts``, ``js``, ``ui``, ``api`` (already the usual word).

The table is the fast path, not the method: a short form it does not hold is still tried
where people form it (:func:`formed_alike`): a clipped word cut before a vowel
(``auth``/``authentication``), a consonant skeleton keeping the first letter
(``gw``/``gateway``, ``pg``/``postgres``), an acronym of two or more words
(``ci``/``continuous integration``). Each is trusted only where the rest of the name agrees
(a word shared as it is, or an acronym of three letters or more); otherwise the names are
only *possibly* the same (``auth-gw``/``authentication gateway``, ``CI``/``continuous
integration``). The sibling rule still holds after it: ``pg primary``/``pg replica`` stay
apart.

There are three outcomes, because a wrong merge invalidates a true fact (a fact about one
thing supersedes a fact about another), which is worse than a missed one:

- **same**: the spelled-out forms are equal (spaces ignored, a leading article dropped), or
  the entity rules of :mod:`ferrex.rules.entities` match them (a typo of a long word, a
  product suffix: ``mongo``/``mongodb``) *and* no word of one was swapped for another word
  of the other; or, when the names share no word at all, the embedding cosine is above the
  entity threshold (numbers must agree).
- **possible**: one name is the other with trailing component words dropped (a head word:
  ``billing``/``billing service``, ``ledger``/``ledger api``; :data:`COMPONENT_WORDS`), or
  with at most :data:`QUALIFIERS_DROPPED` other words added without a number (``device lab``/
  ``QA device lab``; the price: ``kafka``/``kafka streams`` is flagged too, never merged), or,
  for names sharing no word, an embedding cosine in the band just below the threshold
  (:data:`POSSIBLE_BAND`). Both facts are stored, nothing is superseded, both are flagged.
- **different**: anything else. In particular a *sibling*, where the names share a word and
  each has a word the other lacks (``staging db``/``production db``, ``billing service``/
  ``billing database``, ``k8s cluster``/``k8s namespace``), is always different whatever an
  embedding says, and so is a name extended by a word carrying a number (``api``/``api v2``)
  or two names with different numbers (``api v1``/``api v2``).

Objects are compared for agreement by :func:`objects_agree`: ``team Nova`` and ``Nova`` name
the same team (a leading kind word such as ``team`` is dropped), ``prod db`` and
``production database`` the same thing.

The table and the short forms are :mod:`ferrex.rules.short_forms`; the names a reader gives
(a filter, a page, a question's words) are looked up by :mod:`ferrex.rules.name_lookup`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Final, Literal

from ferrex.rules.entities import (
    NEW,
    Candidate,
    Resolution,
    normalize_entity,
    resolve_entity,
    same_numbers,
)
from ferrex.rules.predicates import PREPOSITIONS
from ferrex.rules.short_forms import (
    ARTICLES,
    DEFAULT_ABBREVIATIONS,
    abbreviates,
    formed_alike,
    spelled_out,
)
from ferrex.rules.subjects_apart import (
    THING_WORDS,
    added_apart,
    in_digits,
    instance_word,
    same_word,
)

#: Trailing words that name a part or a kind of deployment of a thing: ``billing`` may mean
#: ``billing service`` (possibly the same), but ``billing service`` is not ``billing
#: database`` (siblings). Spelled-out forms.
COMPONENT_WORDS: Final[frozenset[str]] = frozenset(
    {
        "service",
        "services",
        "server",
        "database",
        "api",
        "application",
        "app",
        "cluster",
        "system",
        "backend",
        "frontend",
        "repository",
        "project",
        "pipeline",
        "job",
        "worker",
        "queue",
        "team",
        "library",
        "runtime",
        "framework",
        "package",
        "module",
        "platform",
        "tool",
        "site",
        "website",
        "portal",
        "engine",
        "bot",
    }
)

#: At most this many words added to a whole name (``status page`` / ``public status page``)
#: leave the two *possibly* the same: a fact about either is flagged against the other.
QUALIFIERS_DROPPED: Final = 2

#: Leading words of an object that say what kind of thing it is, not which: ``team Nova``
#: agrees with ``Nova``.
OBJECT_KIND_WORDS: Final[frozenset[str]] = frozenset(
    {"team", "squad", "group", "the", "a", "an", "org", "organization", "department", "user"}
)

#: The cosine band below the entity embedding threshold in which two subjects sharing no
#: word are *possibly* the same: (threshold - POSSIBLE_BAND, threshold]. Chosen on
#: ``golden_set/subject_pairs.jsonl`` (``tools/eval_pairs.py`` prints the cosines).
POSSIBLE_BAND: Final = 0.04

_LINK_WORDS: Final = ARTICLES | PREPOSITIONS

_DIGITS: Final = re.compile(r"\d")
_DIGIT_RUNS: Final = re.compile(r"\d+")

Outcome = Literal["same", "possible", "different"]


def subject_form(name: str, abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS) -> str:
    """The comparable form of a subject: normalized, spelled out, spaces removed."""
    return "".join(spelled_out(normalize_entity(name), abbreviations))


def compare_words(left: Sequence[str], right: Sequence[str]) -> Outcome | None:
    """What the words alone say about two spelled-out names: ``same``, ``possible``,
    ``different``, or None when only a similarity score can tell."""
    if "".join(left) == "".join(right):
        return "same"
    if _numbers(left) != _numbers(right) and _numbers(left) and _numbers(right):
        return "different"
    formed = formed_alike(left, right)
    if formed is not None:
        left, right, gated = formed
        found = _compare_spelled(left, right)
        # A short form the table does not hold is trusted only where the rest of the name
        # agrees: a word shared as it is, or an acronym of three letters or more.
        return "possible" if found == "same" and not gated else found
    return _compare_spelled(left, right)


def _compare_spelled(left: Sequence[str], right: Sequence[str]) -> Outcome | None:
    if "".join(left) == "".join(right):
        return "same"
    only_left = [w for w in left if w not in right]
    only_right = [w for w in right if w not in left]
    # A word swapped for its typo or its product-suffixed form is the same word.
    for word in list(only_left):
        twin = next((w for w in only_right if same_word(word, w)), None)
        if twin is not None:
            only_left.remove(word)
            only_right.remove(twin)
    if not only_left and not only_right:
        return "same"
    shared = [w for w in left if w not in only_left]
    if shared and only_left and only_right:
        return "different"  # siblings: one word swapped for another
    extra = only_left or only_right
    if shared and extra:
        if any(_DIGITS.search(w) for w in extra):
            return "different"  # api / api v2
        if any(instance_word(w) for w in extra):
            return "different"  # another instance: MQTT broker / MQTT broker (dev)
        shorter, longer = (left, right) if only_right else (right, left)
        if list(longer[: len(shorter)]) == list(shorter) and all(
            w in COMPONENT_WORDS for w in longer[len(shorter) :]
        ):
            return "possible"  # a head word dropped: billing / billing service
        # Prepositions and articles add no qualifier: "stripe api version used by billing".
        if len([w for w in extra if w not in _LINK_WORDS]) <= QUALIFIERS_DROPPED:
            return "possible"  # words added to the whole name: device lab / QA device lab
        return "different"
    return None


#: Leading words that say whose a thing is, not which: ``our BIC`` is ``BIC``.
_DETERMINERS: Final = ARTICLES | frozenset({"our", "my", "your", "their", "its", "this"})

#: Endings of a word's other forms (``tokenizer``/``tokenization``, ``invoice``/``invoicing``,
#: ``notifier``/``notification``), for :func:`word_twins`.
_FORM_ENDINGS: Final = frozenset(
    {"", "e", "er", "ers", "or", "ors", "ing", "ion", "ions", "ation", "ations", "ed", "es"}
    | {"s", "ment", "ments", "iation", "ization", "ize", "ise", "ic", "cation", "cations"}
)
_BRACKETS: Final = str.maketrans("", "", "()[]{}")
_DOERS: Final = frozenset({"er", "ers", "or", "ors", "ing"})


def name_words(words: Sequence[str]) -> list[str]:
    """A spelled-out name's words as :func:`names_alike` compares them: a handle's ``@``
    and brackets stripped (``@naomi-k``, ``laptop fleet (MDM)``), leading determiners
    (``the``, ``our``) and link words (``for``, ``in``) dropped."""
    out = [w.lstrip("@").translate(_BRACKETS) for w in words]
    out = [w for w in out if w]
    while len(out) > 1 and out[0] in _DETERMINERS:
        out = out[1:]
    kept = [w for w in out if w not in _LINK_WORDS]
    return kept or out


def word_twins(a: str, b: str) -> bool:
    """Whether two words are one word in two forms, as people write a name: the same, a
    plural (``log``/``logs``), two endings of one stem of five letters or more (``tokenizer``/
    ``tokenization``; not ``product``/``production``, one the whole of the other, but for its
    ``-ing``: ``log``/``logging``) or of four for a doer and a doing (``ranker``/``ranking``),
    a short form people make (:func:`abbreviates`), a whole consonant skeleton (``fct``/
    ``fact``), a kind word in a compound (``site``/``website``), a typo or a product suffix."""
    if a == b:
        return True
    if _DIGITS.search(a) or _DIGITS.search(b):
        return False
    short, long = sorted((a, b), key=len)
    if long in (short + "s", short + "es") or (short.endswith("y") and long == short[:-1] + "ies"):
        return len(short) >= 3
    stem = 0
    while stem < len(short) and short[stem] == long[stem]:
        stem += 1
    ends = {short[stem:], long[stem:]}
    if (stem >= 5 and short[stem:] and ends <= _FORM_ENDINGS) or (stem == 4 and ends <= _DOERS):
        return True
    # A thing and its doing (monitor/monitoring, log/logging); not stage/staging (silent e).
    if len(short) >= 3 and long in (short + "ing", short + short[-1] + "ing"):
        return True
    if len(short) >= 3 and short == "".join(c for c in long if c not in "aeiou"):
        return True  # a whole consonant skeleton: fct/fact
    if long.endswith(short) and _kind_word(short) and len(long) - len(short) >= 3:
        return True  # a compound of a kind word is that kind: site/website, app/webapp
    return abbreviates(short, long) or same_word(a, b)


def names_alike(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether two spelled-out names that the rules of :func:`compare_words` keep apart may
    still name one thing, by evidence that generalises (each only *possibly* the same: a
    fact about one is flagged against a fact of the same slot about the other, never
    merged or superseded):

    - once handles, brackets, determiners and link words are set aside (:func:`name_words`)
      and words in two forms paired (:func:`word_twins`; a single letter as a word's
      initial, ``naomi k``/``naomi kowalski``; acronyms and short forms by
      :func:`formed_alike`), one name holds all of the other's words: at most
      :data:`QUALIFIERS_DROPPED` more (``audit logs``/``audit log``, ``DB pool size for
      api``/``tallyboard-api DATABASE_POOL_SIZE``), or any number in front of a name of two
      words or more that ends it (``remote config key onboarding_variant``/
      ``onboarding_variant``);
    - or a trailing kind word (:data:`COMPONENT_WORDS`) names what the other name says by
      one distinctive word (a product's name) in front of a word they share: ``primary
      database``/``Postgres primary``, ``ios app``/``FitPulse iOS``, ``training jobs``/
      ``model training``. Never
      when both have a kind word of their own (``payments api``/``payments worker``), nor
      when the other's extra word is its own head (``ledger api``/``ledger reconciler``).

    Hard negatives stay apart: a word swapped for another in front of a shared head
    (``staging db``/``production db``, ``iOS app``/``Android app``), different numbers
    (``v1``/``v2``, ``T3``/``T4``), or no shared word but a kind word."""
    a, b = name_words(left), name_words(right)
    if not a or not b or _numbers(a) != _numbers(b) or not _may_pair(a, b):
        return False
    formed = formed_alike(a, b)
    if formed is not None:
        a, b = formed[0], formed[1]
    if len(b) < len(a):
        a, b = b, a
    only_a, only_b, shared = _pair_words(a, b)
    if all(_kind_word(w) for w in shared) or any(instance_word(w) for w in only_a + only_b):
        return False
    if not only_a or not only_b:
        # Words in front keep the head (``remote config key onboarding_variant``); words
        # around it, a few at most (``device lab``/``QA device lab``).
        head_kept = len(a) >= 2 and all(
            word_twins(x, y) for x, y in zip(a, b[-len(a) :], strict=True)
        )
        return head_kept or len(only_a or only_b) <= QUALIFIERS_DROPPED
    for one, other, mine, theirs in ((a, b, only_a, only_b), (b, a, only_b, only_a)):
        # one: [... shared, KIND]; other: [X ..., shared] with X a modifier, not a kind.
        if (
            mine == [one[-1]]
            and _kind_word(one[-1])
            and len(theirs) == 1
            and other[-1] not in theirs
            and not _kind_word(theirs[0])
        ):
            return True
    return False


def _may_pair(a: Sequence[str], b: Sequence[str]) -> bool:
    """A quick test that :func:`word_twins` or :func:`formed_alike` may pair a word of
    ``a`` with ``b``'s: two words of one three-letter start (the same word, a plural, a
    stem, a clipped word), or a short word (an abbreviation, a skeleton, an acronym) of a
    first letter a word of the other begins with. Only a long word's typo early in the
    word slips through, and that only makes a possible name a different one."""
    if {w[:3] for w in a} & {w[:3] for w in b}:
        return True
    firsts_a, firsts_b = {w[:1] for w in a}, {w[:1] for w in b}
    return bool(
        {w[:1] for w in a if len(w) <= 5} & firsts_b or {w[:1] for w in b if len(w) <= 5} & firsts_a
    )


def _joined(words: Sequence[str], other: Sequence[str]) -> list[str]:
    """``words`` with two neighbours joined where ``other`` writes them as one word
    (``keep alive``/``keepalive``, ``on call``/``oncall``)."""
    out = list(words)
    i = 0
    while i < len(out) - 1:
        if out[i] + out[i + 1] in other and out[i] not in other:
            out[i : i + 2] = [out[i] + out[i + 1]]
        i += 1
    return out


def _initial_of(letter: str, word: str) -> bool:
    """Whether ``letter`` is the initial of ``word`` (``k``/``kowalski``; not ``i``/``ii``)."""
    return letter.isalpha() and len(word) >= 3 and word.isalpha() and word[0] == letter


def parts_of_one(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether two spelled-out names name two parts of one thing: each ends in a kind word
    (:data:`COMPONENT_WORDS`) and the two differ (``payments api`` / ``payments database``,
    ``fraud service`` / ``fraud web app``). Such parts share values (the api's database is
    the database's engine) without either restating the other."""
    a, b = name_words(left), name_words(right)
    if not a or not b:
        return False
    return _kind_word(a[-1]) and _kind_word(b[-1]) and not word_twins(a[-1], b[-1])


def _kind_word(word: str) -> bool:
    """A word of :data:`COMPONENT_WORDS`, or its plural."""
    return word in COMPONENT_WORDS or (word.endswith("s") and word[:-1] in COMPONENT_WORDS)


def _pair_words(a: Sequence[str], b: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """The words of ``a`` and ``b`` left unpaired by :func:`word_twins` (a single letter of one
    pairs with a word it begins in the other, once another is paired), and ``a``'s paired."""
    only_a, only_b, shared = _joined(a, b), _joined(b, a), []
    for word in list(only_a):
        twin = next((w for w in only_b if w == word), None) or next(
            (w for w in only_b if word_twins(word, w)), None
        )
        if twin is not None:
            only_a.remove(word)
            only_b.remove(twin)
            shared.append(word)
    if shared:
        for word in [w for w in only_a if len(w) == 1]:
            twin = next((w for w in only_b if _initial_of(word, w)), None)
            if twin is not None:
                only_a.remove(word)
                only_b.remove(twin)
        for word in [w for w in only_b if len(w) == 1]:
            twin = next((w for w in only_a if _initial_of(word, w)), None)
            if twin is not None:
                only_b.remove(word)
                only_a.remove(twin)
    return only_a, only_b, shared


@dataclass(frozen=True, slots=True)
class Possible:
    """An entity the subject is possibly the same as, and why."""

    entity_id: str
    reason: Literal["head word", "embedding", "name"]
    score: float


@dataclass(frozen=True, slots=True)
class SubjectResolution:
    """Where a subject landed (an existing entity, or ``new``) and the entities it is
    possibly the same as (never the one it resolved to), by entity id."""

    resolution: Resolution
    possible: tuple[Possible, ...]
    related: tuple[str, ...] = ()
    """Other entities whose names share a distinctive word (or a short form) with the
    subject, most shared first, at most :data:`RELATED_LIMIT`: not possibly the same by the
    name alone, but a fact of theirs may name the same slot in other words."""


#: At most this many related entities are weighed per store (:attr:`SubjectResolution.
#: related`), the ones sharing the most words.
RELATED_LIMIT: Final = 12


def resolve_subject(
    name: str,
    candidates: Sequence[Candidate],
    *,
    abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS,
    fuzzy_threshold: float = 0.85,
    embedding_threshold: float = 0.92,
    embedding_scores: Callable[[str, Sequence[Candidate]], Sequence[float]] | None = None,
) -> SubjectResolution:
    """The entity a fact's subject ``name`` refers to among ``candidates`` (the module
    docstring's rules), and the entities it possibly refers to.

    ``embedding_scores`` is called at most once, with the candidates that share no word
    with ``name`` (only those may be decided by a score), and only when no candidate is
    the same by its words or the entity rules.
    """
    normalized = normalize_entity(name)
    if not normalized:
        return SubjectResolution(NEW, ())
    words = in_digits(spelled_out(normalized, abbreviations))
    spelled = {c: in_digits(spelled_out(c.normalized, abbreviations)) for c in candidates}
    verdicts = {c: compare_words(words, spelled[c]) for c in candidates}
    heads = {c.entity_id for c in candidates if verdicts[c] == "possible"}
    # Names the words keep apart that may still name one thing (never merged: flagged).
    alike = {
        c.entity_id
        for c in candidates
        if verdicts[c] != "same" and c.entity_id not in heads and names_alike(words, spelled[c])
    }

    def answer(found: Resolution, scored: Sequence[Possible] = ()) -> SubjectResolution:
        possible = {p.entity_id: p for p in scored}
        for entity_id in heads:
            possible.setdefault(entity_id, Possible(entity_id, "head word", 1.0))
        for entity_id in alike:
            possible.setdefault(entity_id, Possible(entity_id, "name", 1.0))
        possible.pop(found.entity_id or "", None)
        return SubjectResolution(
            found,
            tuple(possible[k] for k in sorted(possible)),
            _related(words, spelled, {found.entity_id, *possible}),
        )

    exact = [c for c in candidates if c.name == name]
    if exact:
        return answer(_best("exact", exact))
    same = [c for c in candidates if verdicts[c] == "same"]
    if same:
        plain = [c for c in same if c.normalized == normalized]
        return answer(_best("normalized" if plain else "abbreviation", plain or same))
    # The entity rules (typos, product suffixes) among names the words leave open; their
    # same-core rule is the words' "possible" here, so names that only differ by
    # descriptors never reach it.
    open_ = [c for c in candidates if verdicts[c] is None]
    fuzzy = resolve_entity(name, open_, fuzzy_threshold=fuzzy_threshold)
    if fuzzy.entity_id is not None:
        return answer(fuzzy)
    scored = [c for c in open_ if not set(words) & set(spelled[c])]
    if embedding_scores is None or not scored:
        return answer(NEW)
    scores = embedding_scores(name, scored)
    if len(scores) != len(scored):
        raise ValueError(f"embedding_scores gave {len(scores)} scores for {len(scored)}")
    best: tuple[float, Candidate] | None = None
    near: list[Possible] = []
    for raw, c in zip(scores, scored, strict=True):
        score = float(raw)
        if not math.isfinite(score) or not same_numbers(normalized, c.normalized):
            continue
        if score > embedding_threshold:
            if best is None or (-score, c.entity_id) < (-best[0], best[1].entity_id):
                best = (score, c)
        elif score > embedding_threshold - POSSIBLE_BAND:
            near.append(Possible(c.entity_id, "embedding", round(score, 6)))
    if best is None:
        return answer(NEW, near)
    score, winner = best
    return answer(Resolution("embedding", winner.entity_id, score, winner.name), near)


def _related(
    words: Sequence[str], spelled: Mapping[Candidate, list[str]], known: Set[str | None]
) -> tuple[str, ...]:
    """The entities (not in ``known``) whose spellings share a distinctive word with
    ``words`` (a compound in one word or two, ``on call``/``oncall``, one word) or pair a
    short form with them (:attr:`SubjectResolution.related`)."""
    if all(_kind_word(w) for w in name_words(words)):
        return ()
    shared: dict[str, int] = {}
    for c, theirs in spelled.items():
        if c.entity_id in known:
            continue
        mine = {w for w in name_words(_joined(words, theirs)) if not _kind_word(w)}
        count = len(mine & set(name_words(_joined(theirs, words))))
        if not count and _may_pair(words, name_words(theirs)) and formed_alike(words, theirs):
            count = 1
        if count:
            shared[c.entity_id] = max(count, shared.get(c.entity_id, 0))
    ranked = sorted(shared, key=lambda e: (-shared[e], e))
    return tuple(ranked[:RELATED_LIMIT])


def same_slot_words(
    subject: Sequence[str],
    predicate: Sequence[str],
    other_subject: Sequence[str],
    other_predicate: Sequence[str],
) -> bool:
    """Whether two facts of two differently named subjects name one slot in other words,
    a word moved between subject and predicate: ``Vault | default lease TTL`` and ``vault
    default_lease_ttl | is``; ``Airflow | parallelism`` and ``Airflow parallelism | is``;
    ``patient portal session | idle timeout`` and ``portal session timeout | is``; ``DR
    region | is`` and ``disaster recovery site | region``.

    The subjects are spelled-out words (:func:`spelled_out`), the predicates their content
    words, empty for one that only states a value (``is``, ``set to``). The slot's words
    are a subject's and its predicate's together; the rule, with words paired as
    :func:`names_alike` pairs them (forms, short forms, acronyms):

    - the two subjects share a distinctive word (not a kind word), so one thing is named;
    - the numbers agree, and one slot's words (two or more) are all among the other's;
    - each word only the larger slot has is a word in front of its subject's head (``the
      patient`` portal session), a kind word (``site``), or, when the smaller fact's
      predicate names nothing, a word of the larger's predicate (``conversion rate``).
      So ``customer PII | stored in`` and ``customer PII backups | stored in`` are two
      slots (``backups`` is the head), and so are sibling predicates.

    Only a flag follows, never a supersede."""
    mine, theirs = name_words(subject), name_words(other_subject)
    left, right = [*mine, *predicate], [*theirs, *other_predicate]
    # One word written as two (keep-alive / keepalive), joined within subject or predicate.
    mine, predicate = _joined(mine, right), _joined(predicate, right)
    theirs, other_predicate = _joined(theirs, left), _joined(other_predicate, left)
    left, right = [*mine, *predicate], [*theirs, *other_predicate]
    if len(left) < 2 or len(right) < 2 or _numbers(left) != _numbers(right):
        return False
    _, _, anchors = _pair_words(mine, theirs)
    formed = formed_alike(mine, theirs)
    if formed is not None:
        _, _, more = _pair_words(formed[0], formed[1])
        anchors = anchors + more
    if all(_kind_word(w) for w in anchors):
        return False
    formed = formed_alike(left, right)
    if formed is not None:
        left, right = formed[0], formed[1]
        # Expanded in place: where each subject ends, in its slot's words.
        mine = left[: len(left) - len(predicate)]
        theirs = right[: len(right) - len(other_predicate)]
    only_left, only_right, _ = _pair_words(left, right)
    if only_left and only_right:
        return False
    if only_left:
        extra, words, head, pred, smaller_pred = (
            only_left,
            left,
            len(mine),
            predicate,
            other_predicate,
        )
    else:
        extra, words, head, pred, smaller_pred = (
            only_right,
            right,
            len(theirs),
            other_predicate,
            predicate,
        )
    for word in extra:
        if instance_word(word):
            return False  # another instance: prod-eu cluster / prod-eu-canary cluster
        at = words.index(word)
        if at < head - 1 or (at < head and _kind_word(word)):
            continue  # a word in front of the subject's head, or a kind word
        if at >= head and not smaller_pred and word in pred:
            continue  # the slot named more closely
        return False
    return True


def subject_outcome(
    a: str,
    b: str,
    *,
    abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS,
    embedding_threshold: float = 0.92,
    cosine: Callable[[str, str], float] | None = None,
) -> Outcome:
    """The outcome of :func:`resolve_subject` for ``a`` against ``b`` as the one known
    spelling (what ``tools/eval_pairs.py`` measures)."""
    candidate = Candidate("e1", b, normalize_entity(b))
    scores = None if cosine is None else (lambda n, cs: [cosine(n, c.name) for c in cs])
    found = resolve_subject(
        a,
        [candidate],
        abbreviations=abbreviations,
        embedding_threshold=embedding_threshold,
        embedding_scores=scores,
    )
    if found.resolution.entity_id is not None:
        return "same"
    return "possible" if found.possible else "different"


def objects_agree(a: str, b: str, abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS) -> bool:
    """Whether two objects name one thing by their words: the same spelled-out form, once
    leading kind words (:data:`OBJECT_KIND_WORDS`: ``team Nova`` / ``Nova``) are dropped."""
    return object_form(a, abbreviations) == object_form(b, abbreviations) != ""


def object_form(text: str, abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS) -> str:
    """The comparable form of an object (see :func:`objects_agree`)."""
    words = spelled_out(normalize_entity(text), abbreviations)
    while len(words) > 1 and words[0] in OBJECT_KIND_WORDS:
        words = words[1:]
    return "".join(words)


def _best(
    kind: Literal["exact", "normalized", "abbreviation"], found: Sequence[Candidate]
) -> Resolution:
    winner = min(found, key=lambda c: c.entity_id)
    return Resolution(kind, winner.entity_id, 1.0, winner.name)


def _numbers(words: Sequence[str]) -> list[str]:
    return _DIGIT_RUNS.findall(" ".join(words))


def news_alike(left: Sequence[str], right: Sequence[str]) -> bool:
    """Whether two spelled-out names that share a distinctive word may name one thing when
    a fact about one is told as news of a change (:func:`ferrex.rules.value_changes.told_as_news`):
    ``billing page``/``Billing UI``, ``session store``/``sessions``. Weaker than
    :func:`names_alike`, so only a flag follows, and only for a fact told as news.

    The shared words must be in front of two different heads (the last words), neither of
    them a kind word (:data:`COMPONENT_WORDS`). Hard negatives stay apart: one head with
    two words in front (``staging db``/``production db``, ``exports consumer``/``pricing
    consumer``: siblings), two kinds of one thing (``billing api``/``billing database``),
    different numbers (``T3``/``T4``, ``v1``/``v2``)."""
    a, b = name_words(left), name_words(right)
    if not a or not b or _numbers(a) != _numbers(b):
        return False
    if word_twins(a[-1], b[-1]) or _kind_word(a[-1]) or _kind_word(b[-1]):
        return False
    only_a, only_b, shared = _pair_words(a, b)
    if any(instance_word(w) for w in only_a + only_b):
        return False  # another instance of it: MQTT broker / MQTT broker (dev)
    return any(not _kind_word(w) for w in shared)


def close_names(
    left: Sequence[str], right: Sequence[str], *, parts: bool = False, named: Collection[str] = ()
) -> bool:
    """Whether two spelled-out names that are possibly the same (:func:`compare_words`'s
    ``possible``, :func:`names_alike`) name one thing closely enough for a change told of one
    to replace the other's value: once words in two forms are paired (:func:`word_twins`:
    ``access review``/``access reviews``), the shorter name's words are all in the longer,
    the longer adds at most :data:`QUALIFIERS_DROPPED` words, none after its last shared
    word but a word of what a thing is as deployed (:data:`THING_WORDS`: ``bastion``/
    ``bastion host``; not ``PHI``/``PHI backups``, ``Terraform``/``Terraform AWS provider``,
    whose last word is a head of its own; a kind word, ``billing``/``billing service``, only
    with ``parts``, when the fact is told as news: a bare head may as well be ``billing
    database``), none naming another instance (:data:`INSTANCE_WORDS`), a number or a
    contrast (``legacy``, ``internal``) or a unit within (:func:`added_apart`), and a shared
    word that is
    not a kind word (``churn model``/``churn prediction model``, ``VPN``/``corporate VPN``).
    A name of one word with words put in front is close only when it is written as a name
    (``named``: words written with a capital letter): ``Vault``/``HashiCorp Vault``, not
    ``cache``/``session cache``, whose added word names a kind of cache."""
    a, b = name_words(left), name_words(right)
    if not a or not b or _numbers(a) != _numbers(b):
        return False
    if len(b) < len(a):
        a, b = b, a
    only_a, only_b, shared = _pair_words(a, b)
    if only_a or not shared or all(_kind_word(w) for w in shared):
        return False
    if len(only_b) > QUALIFIERS_DROPPED:
        return False
    if any(_DIGITS.search(w) for w in only_b) or added_apart(only_b, a, b):
        return False
    joined = _joined(b, a)
    last = max((i for i, w in enumerate(joined) if w not in only_b), default=-1)
    if len(a) == 1 and a[0] not in named and any(w in only_b for w in joined[:last]):
        return False
    return all(w in THING_WORDS or (parts and _kind_word(w)) for w in joined[last + 1 :])
