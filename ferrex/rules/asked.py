"""What a question asks about, against what a memory is about: the evidence ``off_subject``
of :mod:`ferrex.rules.relevance` (pure functions).

A question names things (an entity the store knows, spelt in its words: "the support
gateway" for ``support-gateway``; an identifier: ``prod-eu-2``) and asks something of them
(their login rate limit, their latency SLO). A memory that is about another thing, or about
the thing but not what is asked, or a question about a thing the store has never heard of,
cannot be answered by the memory however much of its wording it shares
(:func:`off_subject`). Recall gathers what the store knows of the named things
(:func:`ferrex.read.judgement.subjects_named`, :func:`ferrex.read.judgement.unknown_identifiers`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from ferrex.rules.relevance import PERIOD_FRAME


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


def names_sibling(subject: Subject, entity_ids: Iterable[str], words: str) -> bool:
    """Whether a memory is about one of ``subject``'s siblings (:attr:`Subject.siblings`)."""
    if subject.siblings & set(entity_ids):
        return True
    return any(f" {' '.join(spelling)} " in words for spelling in subject.sibling_spellings)


def off_subject(
    subjects: Sequence[Subject],
    query_tokens: Iterable[str],
    document_tokens: Iterable[str],
    entity_ids: Iterable[str],
    words: str,
    unknown: bool = False,
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
      named in plain words). A memory that names neither may be about the thing under a
      name the store has not linked to it ("k8s" asked, "Kubernetes" written): not
      judged here;
    - the memory is about the thing named but shares none of what the question asks of
      it: at least :data:`SPECIFIC_AT_LEAST` terms besides the thing's name (and the
      period's frame and grammar words, :data:`GRAMMAR_TOKENS`), none of them in the
      memory, nor a shortening of one (:data:`SHORTENED_AT_LEAST`: "retro" for
      "retrospectives"). "What is the latency SLO of the fraud scorer?" is not answered
      by the fraud scorer's review threshold:
      the question's name matched, what it asks did not. A vague question about the thing ("what
      happened in OPS-1402?") is answered by any memory about it, as under an entity
      filter."""
    if unknown:
        return 1.0
    if not subjects:
        return 0.0
    ids = set(entity_ids)
    if not any(names_subject(s, ids, words) for s in subjects):
        return 1.0 if any(names_sibling(s, ids, words) for s in subjects) else 0.0
    named = set().union(*(s.tokens for s in subjects))
    asked = set(query_tokens) - named - PERIOD_FRAME - GRAMMAR_TOKENS
    if len(asked) < SPECIFIC_AT_LEAST:
        return 0.0
    present = set(document_tokens)
    return 0.0 if any(_shares_word(term, present) for term in asked) else 1.0


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
