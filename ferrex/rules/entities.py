"""Entity resolution: decide which known entity a name refers to, or that it is a new one.

Agents name the same thing inconsistently (``Tokio``, ``tokio-runtime``, ``the tokio
runtime``); :func:`resolve_entity` maps a name onto the known spellings (each entity's own
name and its aliases) of one namespace, trying these tiers in order and stopping at the first
that matches:

1. **exact**: the very same spelling (score 1.0);
2. **normalized**: the same :func:`normalize_entity` form, or the same form once its spaces
   are removed (``Node.js`` → ``node js`` and ``NodeJS`` → ``nodejs``), score 1.0;
3. **fuzzy**: Jaro-Winkler similarity of the normalized forms strictly above
   ``fuzzy_threshold`` *and* one of the guards below;
4. **embedding**: the caller's cosine similarity of the name to a candidate, strictly above
   ``embedding_threshold``;
5. otherwise **new**.

Within a tier the highest score wins, then the smallest ``entity_id``, so the same inputs
always give the same answer (a replay records the outcome anyway, never re-runs it).

Why Jaro-Winkler needs guards. It rewards a common prefix, and entity names are short, so
different things score high: ``redis``/``redash`` 0.876, ``mysql``/``mssql`` 0.880,
``tokio``/``tokyo`` 0.907, ``openai``/``openapi`` 0.971, ``graphql``/``graphiql`` 0.975,
``react``/``react native`` 0.883, ``kafka``/``kafka streams`` 0.877; while the pair that
should merge, ``tokio``/``tokio runtime``, scores 0.877, no higher than the wrong ones. No
threshold separates them, so a fuzzy match must also be one of:

- **a typo**: the same number of words, every differing word one edit away (optimal string
  alignment distance 1: an insertion, deletion, substitution or transposition) and at least
  :data:`TYPO_MIN_WORD` = 8 characters long. Below that, one-letter differences are mostly
  different names (all the short pairs above); ``kubernetes``/``kuberentes`` (0.980) is the
  kind of typo this corrects.
- **the same core**: once trailing generic descriptor words (:data:`DESCRIPTOR_WORDS`:
  ``runtime``, ``library``, ``server``, ``database``, ``inc``...) are dropped, the names are
  the same: ``tokio runtime`` is ``tokio``, ``redis server`` is ``redis``, ``Acme Inc.`` is
  ``Acme``. A whole-word prefix alone is not enough: ``react native``, ``kafka streams`` and
  ``rust analyzer`` (0.862 against ``rust``) are other things.
- **a product suffix**: one core is the other plus one of :data:`PRODUCT_SUFFIXES`, spaces
  ignored, on a base of at least :data:`SUFFIX_MIN_BASE` letters: ``MongoDB`` is ``Mongo``,
  ``Node.js`` is ``Node``, and ``PostgreSQL`` is ``Postgres`` (``sql`` after a final ``s`` is
  ``ql``). ``sql`` counts only attached to the word: ``Spark SQL`` is a module of Spark,
  not Spark; ``ql`` alone is no suffix (``graph``/``graphql``). The price, accepted: a word
  that happens to precede ``db`` or ``js`` merges with the product (``duck``/``duckdb``).

A leading article is ignored in this tier (``the tokio runtime`` is compared as ``tokio
runtime``); the stored normalized form keeps it.

And in the fuzzy and embedding tiers, two names that both carry numbers merge only if their
numbers are the same (``python 2``/``python 3``, ``s3``/``s4`` never do): an embedding model
happily scores such pairs as near-identical. A number on one side only is no objection, so
the embedding tier can still see that ``k8s`` is ``kubernetes``.

The bias is deliberate. A missed merge leaves two entities that an operator can alias later;
a wrong merge mixes two entities' facts, and lets a fact about one supersede a fact about the
other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from rapidfuzz.distance import OSA, JaroWinkler

from projections.documents import subject_key

#: The shortest word a one-edit typo may be corrected in (see the module docstring).
TYPO_MIN_WORD: Final = 8

#: Words that name the kind of a thing, not the thing: ``X runtime`` is still ``X``.
DESCRIPTOR_WORDS: Final[frozenset[str]] = frozenset(
    {
        # software
        "runtime",
        "library",
        "lib",
        "crate",
        "package",
        "pkg",
        "module",
        "framework",
        "project",
        "repo",
        "repository",
        "server",
        "service",
        "database",
        "db",
        "language",
        "lang",
        "app",
        "application",
        "tool",
        "platform",
        # organisations
        "inc",
        "corp",
        "corporation",
        "company",
        "co",
        "ltd",
        "llc",
        "gmbh",
    }
)

#: Endings that name a product's kind inside its name: ``MongoDB`` is ``Mongo``, ``Node.js``
#: is ``Node``. ``sql`` only when attached (``PostgreSQL``; ``Spark SQL`` is a module of
#: Spark), and after a final ``s`` as ``ql`` (``Postgres``/``PostgreSQL``).
PRODUCT_SUFFIXES: Final[frozenset[str]] = frozenset({"js", "db", "sql"})

#: The shortest name a product suffix may extend: ``MS``/``MSSQL``, ``my``/``MySQL`` stay apart.
SUFFIX_MIN_BASE: Final = 3

_ARTICLES: Final = frozenset({"the", "a", "an"})

_DIGIT_RUNS = re.compile(r"\d+")

MatchKind = Literal["exact", "normalized", "abbreviation", "fuzzy", "embedding", "new"]


def normalize_entity(name: str) -> str:
    """The comparable form of an entity name: NFKC, case-folded, separators to one space.

    Whitespace, ``-``, ``_`` and ``.`` are separators; other punctuation is kept, so ``c++``
    and ``c#`` stay apart from ``c``.
    """
    # The same comparable form the read model keys facts' subjects by.
    return subject_key(name)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One known spelling (an entity's own name or an alias) in the namespace.

    ``normalized`` is what the read model stored for it, :func:`normalize_entity` of ``name``.
    """

    entity_id: str
    name: str
    normalized: str


@dataclass(frozen=True, slots=True)
class Resolution:
    """The outcome: which entity (None when new), how it matched, the score and the spelling."""

    kind: MatchKind
    entity_id: str | None
    score: float
    matched: str | None


NEW: Final = Resolution("new", None, 0.0, None)


def resolve_entity(
    name: str,
    candidates: Sequence[Candidate],
    *,
    fuzzy_threshold: float = 0.85,
    embedding_threshold: float = 0.92,
    embedding_scores: Callable[[str, Sequence[Candidate]], Sequence[float]] | None = None,
) -> Resolution:
    """The entity ``name`` refers to among ``candidates``, by the tiers of the module docstring.

    ``embedding_scores(name, candidates)`` returns one cosine similarity per candidate, in
    order; it is called only when no earlier tier matched, so the caller's model runs only
    for names that need it.
    """
    exact = [c for c in candidates if c.name == name]
    if exact:
        return _best("exact", [(1.0, c) for c in exact])

    normalized = normalize_entity(name)
    if not normalized:
        return NEW
    compact = normalized.replace(" ", "")
    same = [
        c
        for c in candidates
        if c.normalized == normalized or c.normalized.replace(" ", "") == compact
    ]
    if same:
        return _best("normalized", [(1.0, c) for c in same])

    fuzzy = []
    bare = _without_article(normalized)
    for candidate in candidates:
        other = _without_article(candidate.normalized)
        if not other:
            continue
        score = JaroWinkler.normalized_similarity(bare, other)
        if score > fuzzy_threshold and _fuzzy_guard(bare, other):
            fuzzy.append((score, candidate))
    if fuzzy:
        return _best("fuzzy", fuzzy)

    if embedding_scores is None or not candidates:
        return NEW
    scores = embedding_scores(name, candidates)
    if len(scores) != len(candidates):
        raise ValueError(f"embedding_scores gave {len(scores)} scores for {len(candidates)}")
    close = [
        (float(score), candidate)
        for score, candidate in zip(scores, candidates, strict=True)
        if math.isfinite(score)
        and score > embedding_threshold
        and same_numbers(normalized, candidate.normalized)
    ]
    return _best("embedding", close) if close else NEW


def _best(kind: MatchKind, scored: Sequence[tuple[float, Candidate]]) -> Resolution:
    score, winner = min(scored, key=lambda pair: (-pair[0], pair[1].entity_id))
    return Resolution(kind, winner.entity_id, score, winner.name)


def _without_article(normalized: str) -> str:
    words = normalized.split(" ")
    return " ".join(words[1:]) if len(words) > 1 and words[0] in _ARTICLES else normalized


def _fuzzy_guard(left: str, right: str) -> bool:
    if not same_numbers(left, right):
        return False
    if is_typo(left, right):
        return True
    left_core, right_core = _core(left), _core(right)
    return left_core == right_core or is_product_suffix(left_core, right_core)


def _core(normalized: str) -> list[str]:
    # The name without its trailing descriptor words, keeping at least one word.
    words = normalized.split(" ")
    while len(words) > 1 and words[-1] in DESCRIPTOR_WORDS:
        words = words[:-1]
    return words


def is_product_suffix(left: list[str], right: list[str]) -> bool:
    shorter, longer = sorted((left, right), key=lambda words: len("".join(words)))
    base, whole = "".join(shorter), "".join(longer)
    if len(base) < SUFFIX_MIN_BASE or not whole.startswith(base):
        return False
    suffix = whole[len(base) :]
    if suffix in PRODUCT_SUFFIXES and suffix != "sql":  # sql: attached only, below
        return True
    last = longer[-1]
    attached = len(last) > 3 and last.endswith("sql")
    return attached and (suffix == "sql" or (suffix == "ql" and base.endswith("s")))


def product_bases(word: str) -> list[str]:
    """The product names ``word`` is with its suffix on (:func:`is_product_suffix`):
    ``postgresql`` → ``postgres`` (and ``postgre``), ``mongodb`` → ``mongo``, ``nodejs`` →
    ``node``; none for a word of no suffix."""
    bases = [word[: -len(end)] for end in _SUFFIX_ENDINGS if word.endswith(end)]
    return [b for b in bases if b.isalpha() and is_product_suffix([b], [word])]


#: The endings :func:`is_product_suffix` takes (``ql``: ``sql`` after a name's final ``s``).
_SUFFIX_ENDINGS: Final = ("sql", "ql", "db", "js")


def same_numbers(left: str, right: str) -> bool:
    """Whether two names carry the same runs of digits, or one carries none."""
    left_numbers, right_numbers = _DIGIT_RUNS.findall(left), _DIGIT_RUNS.findall(right)
    return not left_numbers or not right_numbers or left_numbers == right_numbers


def is_typo(left: str, right: str) -> bool:
    left_words, right_words = left.split(" "), right.split(" ")
    if len(left_words) != len(right_words):
        return False
    return all(
        a == b or (min(len(a), len(b)) >= TYPO_MIN_WORD and OSA.distance(a, b) <= 1)
        for a, b in zip(left_words, right_words, strict=True)
    )
