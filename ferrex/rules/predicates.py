"""Predicate normalization: one spelling per relation, so facts about it can conflict.

Two semantic facts conflict only when they share a subject and a *predicate*; agents write the
same relation many ways (``uses``, ``depends-on``, ``dependsOn``, ``relies on``), so the
predicate is normalized before it is compared, in two steps:

1. **Shape** (:func:`predicate_shape`): Unicode NFKC; camelCase boundaries become separators
   (``dependsOn`` → ``depends_On``, ``HTTPServer`` → ``HTTP_Server``); case-folded; apostrophes
   dropped (``owner's`` → ``owners``); every run of other characters that are not letters or
   digits (space, ``-``, ``_``, ``.``, ``/``, punctuation) becomes one ``_``; leading and
   trailing ``_`` stripped.
2. **Synonyms**: the shaped form is looked up in a synonym map (variant → canonical); a form
   that is not in the map is its own canonical form.

:func:`normalize_predicate` is idempotent for any map built by :func:`synonym_map` or
:func:`merge_synonyms`: every canonical form maps to itself and no chain is left behind.

The default groups (:data:`DEFAULT_SYNONYM_GROUPS`) cover the relations agents state most
often. Inverse relations are never grouped with their relation: ``maintained_by`` is not
``owns``, ``employs`` is not ``works_at``.

Fuzzy matching (:func:`match_known`) corrects a *typo* against the predicates a namespace
already uses; it never merges two different relations. Jaro-Winkler alone cannot tell them
apart, because a shared prefix dominates it: ``created_by``/``created_at`` score 0.920,
``reports_to``/``reports_on`` 0.960, ``parent_of``/``part_of`` 0.948, ``reads``/``leads``
0.867, all above the 0.85 threshold. So a Jaro-Winkler score above the threshold is necessary
but not sufficient; the two forms must also be one of:

- the same once separators are dropped (``dependson`` and ``depends_on``);
- the same number of words, where every word that differs is a one-edit typo (Damerau-style
  optimal string alignment distance 1) of a word at least :data:`TYPO_MIN_WORD` = 6
  characters long and carries no digit. Short words (``at``, ``by``, ``in``, ``to``, ``of``,
  ``owns``, ``reads``) are exactly the ones whose one-letter changes make another relation;
  they must match exactly. ``depnds_on`` → ``depends_on`` (0.977) passes; ``created_by`` →
  ``created_at`` fails on ``by``/``at``; ``parent_of`` → ``part_of`` fails (two edits).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from rapidfuzz.distance import OSA, JaroWinkler

from ferrex.errors import UsageError

#: The shortest word a one-edit typo may be corrected in (see the module docstring).
TYPO_MIN_WORD: Final = 6

#: Canonical predicate → the other ways agents say it. Canonical forms are already shaped.
DEFAULT_SYNONYM_GROUPS: Final[Mapping[str, tuple[str, ...]]] = {
    "depends_on": (
        "uses",
        "use",
        "depends",
        "depends upon",
        "requires",
        "needs",
        "imports",
        "relies on",
        "built on",
        "built with",
    ),
    "is_a": ("is", "is an", "is type of", "is kind of", "kind of", "type of", "instance of"),
    "works_at": (
        "works for",
        "employed by",
        "employed at",
        "employee of",
        "is employed by",
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
    ),
    "located_in": (
        "located at",
        "lives in",
        "lives at",
        "based in",
        "resides in",
        "is located in",
        "is based in",
    ),
    "owns": ("own", "maintains", "is owner of", "owner of", "is maintainer of", "maintainer of"),
    "version": (
        "has version",
        "runs version",
        "is on version",
        "uses version",
        "at version",
        "version is",
        "pinned to version",
    ),
    "created_by": ("authored by", "written by", "made by", "built by", "is created by"),
    "part_of": ("is part of", "belongs to", "component of", "is component of"),
}

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


def normalize_predicate(predicate: str, synonyms: Mapping[str, str] = DEFAULT_SYNONYMS) -> str:
    """The canonical form of ``predicate``: shaped, then mapped through ``synonyms``.

    An empty result means the predicate has no letters or digits; validation rejects those.
    """
    shaped = predicate_shape(predicate)
    return synonyms.get(shaped, shaped)


def match_known(normalized: str, known: Sequence[str], threshold: float = 0.85) -> str | None:
    """The known predicate ``normalized`` is a typo of, or None.

    ``normalized`` itself if it is known. Otherwise the known predicate with the highest
    Jaro-Winkler similarity strictly above ``threshold`` that also passes the typo rule of the
    module docstring; ties go to the alphabetically first. None when nothing qualifies.
    """
    if normalized in known:
        return normalized
    best: tuple[float, str] | None = None
    for candidate in known:
        score = JaroWinkler.normalized_similarity(normalized, candidate)
        if score <= threshold or not _typo_of(normalized, candidate):
            continue
        if best is None or (-score, candidate) < (-best[0], best[1]):
            best = (score, candidate)
    return None if best is None else best[1]


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
    return OSA.distance(a, b) <= 1
