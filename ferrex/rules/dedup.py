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

The bias is towards keeping both memories: a missed duplicate costs a near-copy in recall; a
false one loses a fact.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Final, Literal

_TOKEN = re.compile(r"[#@~./\\]*[^\W_]+(?:[-./\\_:#@]+[^\W_]+)*")
_DIGIT = re.compile(r"\d")
_CODE_MARK = re.compile(r"[_/\\@#]|::")
_FILE_NAME = re.compile(r"(?:^|[^\W_]{2,})\.[a-z][a-z0-9]{0,7}$")
_HASH_NUMBER = re.compile(r"#(\d+)")
_VERSION = re.compile(r"v(\d+(?:\.\d+)*)")
_WHITESPACE = re.compile(r"\s+")

ObjectChange = Literal["duplicate", "supersede", "ambiguous"]

DUPLICATE_THRESHOLD: Final = 0.95
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
    """True when ``new_text`` repeats ``old_text``: similar enough and the same identifiers."""
    _check_similarity(similarity)
    return similarity >= threshold and identifiers(new_text) == identifiers(old_text)


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


def _plain(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WHITESPACE.sub(" ", folded).strip()


def _check_similarity(similarity: float) -> None:
    # A NaN would fail every comparison and silently read as "not a duplicate".
    if not math.isfinite(similarity):
        raise ValueError(f"similarity must be a finite number, got {similarity!r}")
