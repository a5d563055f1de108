"""Predicate normalization: one spelling per relation, so facts about it can conflict.

Two semantic facts conflict only when they share a subject and a *predicate*; agents write the
same relation many ways (``uses``, ``depends-on``, ``dependsOn``, ``is dependent on``,
``X | dependency | Y``), so the predicate is normalized before it is compared, in steps:

1. **Shape** (:func:`predicate_shape`): Unicode NFKC; camelCase boundaries become separators
   (``dependsOn`` → ``depends_On``, ``HTTPServer`` → ``HTTP_Server``); case-folded; apostrophes
   dropped (``owner's`` → ``owners``); every run of other characters that are not letters or
   digits (space, ``-``, ``_``, ``.``, ``/``, punctuation) becomes one ``_``; leading and
   trailing ``_`` stripped. A shaped form the synonym map names is mapped at once (so a map
   may name ``is_a`` itself).
2. **Wording** (:func:`predicate_wording`): copulas, auxiliaries, articles and words telling
   one value more (``also``) make no relation (:data:`FUNCTION_WORDS`): leading ones are dropped
   while a content word remains (``is owned by`` → ``owned by``, ``is also deployed in`` →
   ``deployed in``), while a bare ``is`` (→ ``is_a``), ``has_a`` and ``is_in`` stay. Negations
   are content: ``does not use`` is ``not_use``, never ``uses``.
3. **Synonyms**: the worded form is looked up in the synonym map (variant → canonical);
   failing that, a *typo* of a form the map names (the rule of :func:`match_known` below,
   ``maintianed by`` → ``owned_by``) maps to that form's canonical; otherwise the worded form
   is its own canonical form.

:func:`normalize_predicate` is idempotent for any map built by :func:`synonym_map` or
:func:`merge_synonyms`: every canonical form maps to itself and no chain is left behind.

The default groups (:data:`DEFAULT_SYNONYM_GROUPS`) are the design's: ``uses``, ``requires``,
``needs`` → ``depends_on``; ``written in``, ``implemented in``, ``built with`` →
``built_with`` (a language or toolkit is not a dependency to conflict with); ``runs version``,
``at version`` → ``version``; ``owned by``, ``maintained by``, ``managed by`` → ``owned_by``;
plus ``is_a``, ``works_at``, ``prefers``, ``located_in``, ``owns``, ``created_by``,
``part_of``. A **role noun** names the relation whose object plays that role:
``X | owner | Y`` says Y owns X, so ``owner``, ``maintainer`` and ``manager`` are
``owned_by``; ``author`` is ``created_by``, ``language`` is ``built_with``, ``employer`` is
``works_at``, ``location`` is ``located_in``, ``dependency`` is ``depends_on``, ``type`` is
``is_a``. Inverse relations are never grouped with their relation: ``owns`` (with
``maintains``, ``owner of``, ``maintainer of``: X owns Y) is not ``owned_by``, ``employs`` is
not ``works_at``, ``created`` and ``created_at`` are not ``created_by``, ``used_by`` is not
``depends_on``. ``golden_set/predicate_pairs.jsonl`` holds these cases and
``tools/eval_pairs.py`` measures them.

Fuzzy matching (:func:`match_known`) corrects a *typo* against the predicates a namespace
already uses; it never merges two different relations. Jaro-Winkler alone cannot tell them
apart, because a shared prefix dominates it: ``created_by``/``created_at`` score 0.920,
``reports_to``/``reports_on`` 0.960, ``parent_of``/``part_of`` 0.948, ``reads``/``leads``
0.867, all above the 0.85 threshold. So a Jaro-Winkler score above the threshold is necessary
but not sufficient; the two forms must also be one of:

- the same once separators are dropped (``dependson`` and ``depends_on``);
- the same number of words, where every word that differs is a one-edit typo (Damerau-style
  optimal string alignment distance 1) of a word at least :data:`TYPO_MIN_WORD` = 6
  characters long, carries no digit and does not differ in its last letter alone. Short
  words (``at``, ``by``, ``in``, ``to``, ``of``, ``owns``, ``reads``) are exactly the ones
  whose one-letter changes make another relation; they must match exactly. A different last
  letter is a different ending: ``manages``/``manager``, ``employee``/``employer``.
  ``depnds_on`` → ``depends_on`` (0.977) passes; ``created_by`` → ``created_at`` fails on
  ``by``/``at``; ``parent_of`` → ``part_of`` fails (two edits).

A relation spelled with a short form or in another word order (:func:`spelled_alike`:
``mem limit``, ``max conns``, ``cfg file``, ``latency budget p99``), or named by the role
noun of its agent phrase (:func:`agent_noun_of`: ``issuer`` / ``issued by``), is placed by
:func:`match_known` on the one known predicate of its subject it is alike.

A count written two ways (:func:`same_count`) is one relation too, placed by
:func:`match_known` against the subject's known predicates: ``replica count``,
``replicas count``, ``number of replicas``, ``num replicas`` and, beside one of those, the bare
plural ``replicas``; never the singular ``replica`` (a member) or two bare plurals.

A relation nothing places (:func:`unplaced_neighbour`): when a new fact's predicate is none of
its subject's known predicates, not even by a typo, the known predicate whose phrase embeds
closest (``X located in Y``, :func:`predicate_phrase`) strictly above
:data:`PREDICATE_EMBEDDING_THRESHOLD` is named, so the caller can refuse the fact as
ambiguous or flag a possible contradiction; it never merges. An embedding scores a relation
and its inverse as near-identical (``owns``/``owned_by`` 0.947, ``deployed_to``/``deployed_by``
0.954 with the bundled model), so :func:`may_reword` first rules out, whatever the score: a
form of function words only (``is_a``/``has_a``); an agent phrase (``..._by``) against one
that is not; a negation on one side only; different numbers; and two forms sharing a word
root whose prepositions differ (``created_by``/``created_at``, ``depends_on``/
``dependency_of``, ``located_in``/``location_of``). The threshold was chosen on the pair set
with the bundled model: above every negative the guard lets through (``parent_of``/
``child_of`` 0.807), below the positives it can find (``situated_in``/``located_in`` 0.880,
``invented_by``/``created_by`` 0.845); most paraphrases score lower than some unrelated pair.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Final

from rapidfuzz import process
from rapidfuzz.distance import OSA, JaroWinkler

from ferrex.errors import UsageError
from ferrex.rules.short_forms import DEFAULT_ABBREVIATIONS, abbreviates

#: The shortest word a one-edit typo may be corrected in (see the module docstring).
TYPO_MIN_WORD: Final = 6

#: The Jaro-Winkler score a typo must beat (the default of :func:`match_known`).
TYPO_THRESHOLD: Final = 0.85

#: Canonical predicate → the other ways agents say it, already shaped; not forms that step 2
#: reduces to a listed one (``is owned by``). Role nouns name the object's role: ``X | owner
#: | Y`` says Y owns X, so ``owner`` is ``owned_by``, and ``owner of`` is ``owns``.
DEFAULT_SYNONYM_GROUPS: Final[Mapping[str, tuple[str, ...]]] = {
    "depends_on": (
        "uses",
        "use",
        "using",
        "depends",
        "depends upon",
        "requires",
        "require",
        "needs",
        "need",
        "imports",
        "relies on",
        "relies upon",
        "dependent on",
        "built on",
        "dependency",
        "dependencies",
        "requirement",
        "requirements",
    ),
    "built_with": (
        "written in",
        "implemented in",
        "coded in",
        "programmed in",
        "developed in",
        "made with",
        "language",
        "languages",
        "programming language",
        "implementation language",
    ),
    "is_a": ("is", "is an", "type of", "kind of", "instance of", "type", "kind"),
    "works_at": (
        "works for",
        "employed by",
        "employed at",
        "employee of",
        "employer",
        "workplace",
    ),
    "prefers": (
        "prefer",
        "likes",
        "like",
        "favours",
        "favors",
        "favour",
        "favor",
        "loves",
        "prefers using",
        "preference",
        "favourite",
        "favorite",
    ),
    "located_in": (
        "located at",
        "lives in",
        "lives at",
        "based in",
        "resides in",
        "location",
    ),
    "owns": ("own", "maintains", "manages", "owner of", "maintainer of"),
    "owned_by": (
        "maintained by",
        "managed by",
        "owner",
        "owners",
        "maintainer",
        "maintainers",
        "manager",
        "property of",
    ),
    "version": (
        "runs version",
        "runs on version",
        "on version",
        "uses version",
        "at version",
        "version is",
        "pinned to version",
        "current version",
        "release",
    ),
    "created_by": (
        "authored by",
        "written by",
        "made by",
        "built by",
        "developed by",
        "author",
        "authors",
        "creator",
        "creators",
    ),
    "part_of": ("belongs to", "component of"),
}

#: Words telling that a value is one more beside those known (``also runs in``).
ADDED_WORDS: Final[frozenset[str]] = frozenset({"also", "additionally"})

#: Leading words that do not make a relation of their own (step 2 of the module docstring).
FUNCTION_WORDS: Final[frozenset[str]] = frozenset(
    {"is", "are", "am", "was", "were", "be", "been", "being"}
    | {"has", "have", "had", "having", "does", "do", "did", "the", "a", "an"}
    | ADDED_WORDS
)

#: Words that carry a relation's direction or argument, never its content.
PREPOSITIONS: Final[frozenset[str]] = frozenset(
    {"in", "on", "at", "by", "of", "to", "for", "from", "with", "into", "onto", "upon", "as", "via"}
)

#: Prepositions that place a thing (``runs on``, ``hosted at``, ``deployed to``): one relation
#: may take any of them. The others give a direction and must agree.
PLACE_PREPOSITIONS: Final[frozenset[str]] = frozenset(
    {"on", "at", "in", "to", "into", "onto", "upon"}
)

_NEGATIONS: Final[frozenset[str]] = frozenset({"not", "no", "never", "non", "without"})

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_APOSTROPHES = re.compile(r"['\u2019]")
_SEPARATORS = re.compile(r"[\W_]+")


def predicate_shape(predicate: str) -> str:
    """The shaped form of ``predicate`` (step 1 of the module docstring), without synonyms."""
    text = unicodedata.normalize("NFKC", predicate)
    text = _CAMEL_BOUNDARY.sub("_", text)
    # NFKC again after case folding: folding can produce sequences NFKC would compose.
    text = unicodedata.normalize("NFKC", text.casefold())
    text = _APOSTROPHES.sub("", text)
    return _SEPARATORS.sub("_", text).strip("_")


def synonym_map(groups: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """A variant → canonical map from config-style groups (canonical → its variants).

    Every form is shaped, and every canonical form maps to itself. A variant listed under two
    canonicals, or a canonical that is another group's variant, is a :class:`UsageError`
    (a configuration mistake): either would make normalization depend on the order of groups.
    """
    mapping: dict[str, str] = {}
    for canonical_text in groups:
        canonical = _shaped_or_fail(canonical_text, canonical_text)
        mapping[canonical] = canonical
    for canonical_text, variants in groups.items():
        canonical = predicate_shape(canonical_text)
        if isinstance(variants, str):
            raise UsageError(
                f"predicate synonyms for {canonical_text!r} must be a list, not a string",
                hint=f'write {canonical_text} = ["{variants}"]',
            )
        for variant_text in variants:
            variant = _shaped_or_fail(variant_text, canonical_text)
            owner = mapping.get(variant)
            if owner is not None and owner != canonical:
                raise UsageError(
                    f"predicate {variant_text!r} is a synonym of both {owner!r} and {canonical!r}",
                    hint="list each predicate under one canonical form only",
                )
            mapping[variant] = canonical
    return mapping


def merge_synonyms(base: Mapping[str, str], override: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``override`` on top (a namespace's own groups over the defaults).

    The override wins for every form it names. A base variant whose canonical form the
    override re-maps follows it: with base ``uses → depends_on`` and override
    ``depends_on → requires``, ``uses`` becomes ``requires``, so the result stays idempotent.
    """
    merged = {**base, **override}
    resolved: dict[str, str] = {}
    for variant in merged:
        target = merged[variant]
        seen = {variant}
        while target in merged and merged[target] != target and target not in seen:
            seen.add(target)
            target = merged[target]
        resolved[variant] = target
    # Every target must be a fixed point, or a second normalization would move it again.
    for target in set(resolved.values()):
        resolved.setdefault(target, target)
    return resolved


def _shaped_or_fail(text: str, group: str) -> str:
    shaped = predicate_shape(text) if isinstance(text, str) else ""
    if not shaped:
        raise UsageError(
            f"predicate synonym {text!r} (group {group!r}) has no letters or digits",
            hint="each synonym must be a word or phrase",
        )
    return shaped


# Read-only: it is the default argument of normalize_predicate, shared by every call.
DEFAULT_SYNONYMS: Final[Mapping[str, str]] = MappingProxyType(synonym_map(DEFAULT_SYNONYM_GROUPS))


def predicate_wording(shaped: str) -> str:
    """``shaped`` without its leading :data:`FUNCTION_WORDS` (step 2 of the module docstring).

    A leading word is dropped only while what follows still holds a content word (one that
    is neither a function word, a preposition nor a negation): ``is_owned_by`` → ``owned_by``,
    ``has_been_using`` → ``using``, but ``is``, ``is_a``, ``has_a`` and ``is_in`` stay.
    """
    words = shaped.split("_")
    while len(words) > 1 and words[0] in FUNCTION_WORDS and _has_content(words[1:]):
        words = words[1:]
    return "_".join(words)


def _has_content(words: Sequence[str]) -> bool:
    return any(
        w not in FUNCTION_WORDS and w not in PREPOSITIONS and w not in _NEGATIONS for w in words
    )


def normalize_predicate(predicate: str, synonyms: Mapping[str, str] = DEFAULT_SYNONYMS) -> str:
    """The canonical form of ``predicate``: shaped, worded, then mapped through ``synonyms``.

    The shaped form is looked up before its leading function words are dropped, so a map
    may name ``is_a`` or ``has_part`` itself. An empty result means the predicate has no
    letters or digits; validation rejects those.
    """
    shaped = predicate_shape(predicate)
    if shaped in synonyms:
        return synonyms[shaped]
    worded = predicate_wording(shaped)
    if worded in synonyms:
        return synonyms[worded]
    corrected = _typo_of_known(worded, synonyms.keys())
    return worded if corrected is None else synonyms[corrected]


def match_known(
    normalized: str, known: Sequence[str], threshold: float = TYPO_THRESHOLD
) -> str | None:
    """The known predicate ``normalized`` is a typo of, or None.

    ``normalized`` itself if it is known; then a known predicate that is the same count
    (:func:`same_count`: ``replicas`` and ``replica_count``), the alphabetically first;
    then the one known predicate spelled alike or named by its role noun
    (:func:`one_relation`: ``mem_limit`` and ``memory_limit``, ``issuer`` and ``issued_by``;
    none when two are). Otherwise the known predicate with the highest Jaro-Winkler
    similarity strictly above ``threshold`` that also passes the typo rule of the module
    docstring; ties go to the alphabetically first. None when nothing qualifies.
    """
    if normalized in known:
        return normalized
    counts = sorted(candidate for candidate in known if same_count(normalized, candidate))
    if counts:
        return counts[0]
    alike = [candidate for candidate in known if one_relation(normalized, candidate)]
    if len(alike) == 1:
        return alike[0]
    best: tuple[float, str] | None = None
    for candidate in known:
        score = JaroWinkler.normalized_similarity(normalized, candidate)
        if score <= threshold or not _typo_of(normalized, candidate):
            continue
        if best is None or (-score, candidate) < (-best[0], best[1]):
            best = (score, candidate)
    return None if best is None else best[1]


#: Leading words that make a predicate the count of what follows (``number_of_replicas``).
_COUNT_LEADS: Final[tuple[tuple[str, ...], ...]] = (
    ("total", "number", "of"),
    ("number", "of"),
    ("count", "of"),
    ("num", "of"),
    ("num",),
)


def same_count(left: str, right: str) -> bool:
    """Whether two normalized predicates are one count written two ways.

    A count is marked by a trailing ``count`` (``replica_count``, ``replicas_count``) or a
    leading ``number of``, ``count of``, ``num`` (``number_of_replicas``, ``num_replicas``);
    a bare plural (``replicas``) is the count of its noun only beside a marked form, since
    alone it may name members (``X | replicas | db-2, db-3``). So ``replicas`` and
    ``replica_count`` are one relation, ``replica`` and ``replica_count`` are not, and two bare
    forms never are. Nouns compare with their last word singular (``processes`` → ``process``,
    ``replies`` → ``reply``); the words before it must be the same.
    """
    left_noun, left_marked = _counted(left)
    right_noun, right_marked = _counted(right)
    if not (left_marked or right_marked) or not left_noun or not right_noun:
        return False
    for noun, marked in ((left_noun, left_marked), (right_noun, right_marked)):
        if not marked and not _plural(noun[-1]):
            return False
    return left_noun[:-1] == right_noun[:-1] and bool(
        _singulars(left_noun[-1]) & _singulars(right_noun[-1])
    )


def _counted(form: str) -> tuple[list[str], bool]:
    # The counted noun's words, and whether a count word marks the form as a count.
    words = form.split("_")
    if len(words) > 1 and words[-1] == "count":
        return words[:-1], True
    for lead in _COUNT_LEADS:
        if len(words) > len(lead) and tuple(words[: len(lead)]) == lead:
            return words[len(lead) :], True
    return words, False


def _count_and_member(count: str, other: str) -> bool:
    noun, marked = _counted(count)
    words = other.split("_")
    return marked and bool(noun) and words[:-1] == noun[:-1] and words[-1] in _singulars(noun[-1])


def _plural(word: str) -> bool:
    return len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _singulars(word: str) -> set[str]:
    # Every singular an English plural ending allows; a wrong guess only widens the set a
    # second form must share, and both forms come from one subject's predicates.
    forms = {word}
    if _plural(word):
        forms.add(word[:-1])
        if word.endswith("es"):
            forms.add(word[:-2])
        if word.endswith("ies"):
            forms.add(word[:-3] + "y")
    return forms


def _typo_of_known(normalized: str, known: Iterable[str]) -> str | None:
    # match_known's rule over many forms; the Jaro-Winkler prefilter runs at C speed.
    # (Keys, not a mapping: rapidfuzz would score a mapping's values.)
    best: tuple[float, str] | None = None
    for candidate, score, _ in process.extract_iter(
        normalized, known, scorer=JaroWinkler.normalized_similarity, score_cutoff=TYPO_THRESHOLD
    ):
        if score <= TYPO_THRESHOLD or not _typo_of(normalized, candidate):
            continue
        if best is None or (-score, candidate) < (-best[0], best[1]):
            best = (score, candidate)
    return None if best is None else best[1]


def spelled_alike(left: str, right: str) -> bool:
    """Whether two normalized predicates are one relation spelled two ways: the same words
    once short forms are spelled out (the table's, ``cfg``/``config``, or one people make,
    a clipped word or a consonant skeleton: ``mem``/``memory``, ``conns``/``connections``,
    ``dest``/``destination``), in any order (``p99_latency_budget``/``latency_budget_p99``),
    with at least one word the same as written (the rest of the relation vouches for the
    short form). A word spelled out by the table alone needs no such word (``env`` /
    ``environment``). Never two different relations: every word of each side must be
    paired, so ``max_input_tokens``/``max_output_tokens`` or ``min_replicas``/
    ``max_replicas`` are not alike."""
    if left == right or not left or not right:
        return False
    a = [w for part in left.split("_") for w in DEFAULT_ABBREVIATIONS.get(part, part).split()]
    b = [w for part in right.split("_") for w in DEFAULT_ABBREVIATIONS.get(part, part).split()]
    if len(a) != len(b):
        return False
    if sorted(a) == sorted(b):
        return True
    vouched = bool(set(left.split("_")) & set(right.split("_")))
    rest = [w for w in b if w not in a]
    unpaired = [w for w in a if w not in b]
    if not vouched or len(rest) != len(unpaired):
        return False
    for word in unpaired:
        twin = next((w for w in rest if _short_of(word, w) or _short_of(w, word)), None)
        if twin is None:
            return False
        rest.remove(twin)
    return True


def phrase_words(text: str) -> list[str]:
    """A phrase's casefolded words, split at anything not a letter or a digit (``Runs_On``,
    ``runs-on``: ``["runs", "on"]``)."""
    return [w for w in re.split(r"[\W_]+", text.casefold()) if w]


def as_worded(predicate: str) -> list[str]:
    """A predicate's words as the agent wrote them, auxiliaries and articles aside (``is
    hosted on`` is ``hosted on``), not normalized: ``lives on`` is not ``hosted on``."""
    return [w for w in phrase_words(predicate) if w not in FUNCTION_WORDS]


def relational(predicate: str) -> bool:
    """Whether a predicate as written relates its subject to its object by a verb or a
    preposition (``reads from``, ``hosted on``, ``calls``, ``emits events``, ``affected``)
    rather than naming an attribute of it (``log level``, ``AWS region``, ``default
    branch``, ``status``): a relation may hold many values at once; an attribute names the
    one value the subject has. A verb is told by its form alone: a first word in the third
    person (``-s``, not a noun's ``-ss``, ``-us``, ``-is``, ``-os``, ``-as``) or in ``-ed``
    (not ``-eed``: ``speed``, ``feed``)."""
    words = as_worded(predicate)
    if not words:
        return False
    if any(w in PREPOSITIONS for w in words):
        return True
    first = words[0]
    if len(first) > 4 and first.endswith("ed") and not first.endswith("eed"):
        return True
    return len(first) > 3 and first.endswith("s") and not first.endswith(_NOUN_ENDINGS_IN_S)


def placing(predicate: str) -> bool:
    """Whether a predicate as written places its subject (its last preposition ``in``,
    ``on``, ``at``, ``to``: ``runs on``, ``lives in``, ``deployed to``, ``happens on``): a
    thing is usually in one place at a time, though some are in many (``available in``),
    so a second place told plainly may as well be a move. Not ``into`` (``translated
    into``), ``from``, ``by``, ``with``."""
    found = [w for w in as_worded(predicate) if w in PREPOSITIONS]
    return bool(found) and found[-1] in PLACE_PREPOSITIONS and found[-1] != "into"


#: Endings of a word in ``-s`` that is no verb in the third person (``address``, ``status``,
#: ``analysis``, ``kudos``, ``alias``), for :func:`relational`.
_NOUN_ENDINGS_IN_S: Final = ("ss", "us", "is", "os", "as")


def one_relation(left: str, right: str) -> bool:
    """Two normalized predicates of one relation: the same, spelled alike, one count two ways
    (``nodes`` / ``node_count``), or a role noun and its agent phrase (:func:`agent_noun_of`)."""
    return (left == right or spelled_alike(left, right) or same_count(left, right)
            or agent_noun_of(left, right) or agent_noun_of(right, left))  # fmt: skip


def agent_noun_of(noun: str, phrase: str) -> bool:
    """Whether a one-word predicate names the role of the one who does what a ``<verb>ed
    by`` phrase says: ``issuer`` / ``issued_by``, ``provider`` / ``provided_by``,
    ``operator`` / ``operated_by``, ``lead`` / ``led_by``. Both say the object does it to
    the subject (a role noun names the object's role: ``X | issuer | Y``), so they are one
    relation. A noun with words in front (``tech lead``) names one role of several."""
    words = phrase.split("_")
    if "_" in noun or len(words) != 2 or words[1] != "by":
        return False
    done = words[0]
    if _IRREGULAR_AGENTS.get(noun) == done:
        return True
    stems = {noun[:-2]} if noun.endswith(("er", "or")) else set()
    stems |= {noun[:-1]} if noun.endswith("er") else set()
    made = {done[:-2]} if done.endswith("ed") else set()
    made |= {done[:-1]} if done.endswith("d") else set()
    return any(len(stem) >= 3 for stem in stems & made)


#: Role nouns whose verb is irregular, and that verb's participle.
_IRREGULAR_AGENTS: Final = MappingProxyType({"lead": "led", "leader": "led"})


def _short_of(short: str, long: str) -> bool:
    """``short`` a short form of ``long`` (:func:`ferrex.rules.short_forms.abbreviates`), a
    plural one of a plural (``conns``/``connections``) too."""
    if abbreviates(short, long):
        return True
    return _plural(short) and _plural(long) and abbreviates(short[:-1], long[:-1])


def _typo_of(left: str, right: str) -> bool:
    if not left or not right:
        return False
    if left.replace("_", "") == right.replace("_", ""):
        return True
    left_words, right_words = left.split("_"), right.split("_")
    if len(left_words) != len(right_words):
        return False
    return all(a == b or _one_word_typo(a, b) for a, b in zip(left_words, right_words, strict=True))


def _one_word_typo(a: str, b: str) -> bool:
    if min(len(a), len(b)) < TYPO_MIN_WORD:
        return False
    if any(char.isdigit() for char in a + b):
        return False
    if len(a) == len(b) and a[:-1] == b[:-1]:
        # A different last letter is a different ending, not a slip: manages/manager,
        # employee/employer, followed/follower name other relations (often the inverse).
        return False
    return OSA.distance(a, b) <= 1


# --- a relation we cannot place ---------------------------------------------------------------

#: The cosine (bundled model, phrases of the normalized forms) above which
#: :func:`unplaced_neighbour` names a known predicate; chosen on our pair set.
PREDICATE_EMBEDDING_THRESHOLD: Final = 0.83

#: ``similarity(phrase, phrases)``: one cosine per phrase, in order.
PhraseSimilarity = Callable[[str, Sequence[str]], Sequence[float]]


def predicate_phrase(normalized: str) -> str:
    """The text :func:`unplaced_neighbour` embeds for a normalized predicate: ``X located in Y``.

    Its words between two placeholder arguments. Bare, a phrase embeds as a topic; between
    arguments the bundled model reads it as a relation, and on our pair set the positives
    score higher against the negatives (``tools/eval_pairs.py`` shows both).
    """
    return f"X {normalized.replace('_', ' ')} Y"


def unplaced_neighbour(
    normalized: str,
    known: Sequence[str],
    similarity: PhraseSimilarity,
    threshold: float = PREDICATE_EMBEDDING_THRESHOLD,
) -> tuple[str, float] | None:
    """The known predicate ``normalized`` probably rewords, with its score, or None.

    For a predicate that normalization and :func:`match_known` could not place among the
    subject's ``known`` predicates: the known one whose phrase embeds closest, strictly above
    ``threshold``, among those :func:`may_reword` allows. ``similarity`` gets the phrase of
    ``normalized`` and those of the allowed candidates only (none: it is not called). Ties
    go to the alphabetically first. None when ``normalized`` is known, or nothing qualifies.

    It never merges: the caller refuses or flags, because an embedding cannot tell a
    relation from its neighbour for certain.
    """
    if not normalized or normalized in known:
        return None
    allowed = sorted({k for k in known if k and may_reword(normalized, k)})
    if not allowed:
        return None
    scores = similarity(predicate_phrase(normalized), [predicate_phrase(k) for k in allowed])
    if len(scores) != len(allowed):
        raise ValueError(f"similarity gave {len(scores)} scores for {len(allowed)} phrases")
    best: tuple[float, str] | None = None
    for raw, candidate in zip(scores, allowed, strict=True):
        score = float(raw)
        if not math.isfinite(score) or score <= threshold:
            continue
        if best is None or score > best[0]:
            best = (score, candidate)
    return None if best is None else (best[1], best[0])


def may_reword(left: str, right: str) -> bool:
    """Whether two different normalized predicates may be one relation in other words.

    False for the pairs no similarity score may join (see the module docstring): a side made
    of function words and prepositions only; one side an agent phrase (ends in ``by``) and
    the other not; a negation on one side only; different numbers; or a shared word root
    with different prepositions; or a count beside its noun in the singular (``replica_count``
    and ``replica``: a count and a member).
    """
    if left == right:
        return False
    left_words, right_words = left.split("_"), right.split("_")
    if not _has_content(left_words) or not _has_content(right_words):
        return False  # is_a, has_a, is_in: too little said to reword
    if (left_words[-1] == "by") != (right_words[-1] == "by"):
        return False
    if _negated(left_words) != _negated(right_words):
        return False
    if _DIGITS.findall(left) != _DIGITS.findall(right):
        return False
    if _count_and_member(left, right) or _count_and_member(right, left):
        return False
    left_content = [w for w in left_words if w not in PREPOSITIONS]
    right_content = [w for w in right_words if w not in PREPOSITIONS]
    shared_root = any(_same_root(a, b) for a in left_content for b in right_content)
    return not shared_root or _prepositions(left_words) == _prepositions(right_words)


_DIGITS = re.compile(r"\d+")


def _negated(words: Sequence[str]) -> bool:
    return any(w in _NEGATIONS for w in words)


def _prepositions(words: Sequence[str]) -> list[str]:
    return [w for w in words if w in PREPOSITIONS]


def _same_root(a: str, b: str) -> bool:
    # A crude stem: the words agree on all but their endings (owns/owned, depends/dependency,
    # created/creator). Short words must agree on all but one letter.
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= 3 and common >= min(len(a), len(b)) - 2
