"""How recall judges a result: the question's terms, the evidence a memory offers (the legs'
scores and ranks, coverage of the question's words and names) and the relevance and label
the calibrated model gives it (:mod:`ferrex.rules.relevance`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Final, NotRequired, TypedDict

from ferrex.models.sparse import tokens
from ferrex.read.candidate import Candidate
from ferrex.rules import asked, relevance
from ferrex.rules.attributes import short_version
from ferrex.rules.dates import Period
from ferrex.rules.entities import normalize_entity
from ferrex.rules.fusion import (
    Leg,
)
from projections.documents import memory_text
from projections.rows import Memory, Spelling
from projections.vectors import VectorFilter


class Relevance(TypedDict):
    """A recall result's relevance fields (:meth:`Judgement.fields`)."""

    relevance: float
    relevance_label: relevance.Label
    relevance_evidence: NotRequired[dict[str, Any]]
    answer_chance: NotRequired[float]


@dataclass(frozen=True, slots=True)
class Judgement:
    value: float
    label: relevance.Label
    evidence: relevance.Evidence

    def chance(self) -> float:
        """The chance the result holds an answer the results above it lack
        (:class:`ferrex.rules.relevance.AnswerModel`; shown under explain, not used to trim)."""
        return relevance.ANSWER_MODEL.chance(self.evidence, self.value)

    def fields(self, explain: bool) -> Relevance:
        """The result's relevance fields; with ``explain``, the evidence too."""
        doc: Relevance = {"relevance": round(self.value, 4), "relevance_label": self.label}
        if explain:
            doc["relevance_evidence"] = {
                "cosine": round(self.evidence.cosine, 6),
                "coverage": round(self.evidence.coverage, 6),
                "missing_named": self.evidence.missing_named,
                "missing_name": self.evidence.missing_name,
                "missing_attribute": self.evidence.missing_attribute,
                "given": self.evidence.given,
                "dense_rank": self.evidence.dense_rank,
                "sparse_rank": self.evidence.sparse_rank,
                "cosine_gap": round(self.evidence.cosine_gap, 6),
                "bm25_share": round(self.evidence.bm25_share, 6),
                "off_subject": self.evidence.off_subject,
                "floor": round(self.evidence.floor, 6),
                "runner_up": round(self.evidence.runner_up, 6),
            }
            doc["answer_chance"] = round(self.chance(), 4)
        return doc


@dataclass(frozen=True)
class Terms:
    """What relevance reads of a query: its BM25 tokens, less the words of the period it
    names, and that period (one term of its own, :func:`ferrex.rules.relevance.coverage`)."""

    tokens: Sequence[str]
    period: Period | None
    names: frozenset[str] = frozenset()
    """The tokens of the query's capitalised names (:func:`ferrex.rules.relevance.query_names`)."""
    given: int = 0
    """The explicit filters (an entity filter, an ``after``/``before`` window): terms every
    ranked memory has (:func:`ferrex.rules.relevance.coverage`)."""
    period_given: bool = False
    """The named period counts as one more explicit filter for a memory whose event time is
    inside it: the question asks for little besides the period
    (:func:`ferrex.rules.relevance.vague`: "what did we change yesterday?")."""
    subjects: tuple[asked.Subject, ...] = ()
    """The things the question names that the store knows (:func:`subjects_named`)."""
    unknown: bool = False
    """The question names an identifier no memory the recall may rank contains and no
    entity is spelled as (:func:`unknown_identifiers`)."""
    shapes: frozenset[str] = frozenset()
    """The kinds of value with a shape the question's form asks for
    (:func:`ferrex.rules.asked.asked_shapes`: a duration, a size, a version, a port)."""
    wants_code: bool = False
    """The question asks for a code (:func:`ferrex.rules.asked.asks_code`: "which status
    code")."""
    plain: frozenset[str] = frozenset()
    """The question's compounds that name nothing the store knows, ordinary hyphenated
    words (``help-desk``, ``sign-in``; :func:`plain_compounds`)."""

    @classmethod
    def of(
        cls,
        query: str,
        period: Period | None,
        given: int = 0,
        filtered: Sequence[str] = (),
        subjects: Sequence[asked.Subject] = (),
        unknown: bool = False,
        plain: frozenset[str] = frozenset(),
    ) -> Terms:
        """``given``: the explicit filters; ``filtered``: the entity names the filter gave,
        whose words in the question are the filter's term, not terms of their own (as a
        period's words are the period's); ``subjects`` and ``unknown``: what the store
        knows of the things the question names (:func:`subjects_named`,
        :func:`unknown_identifiers`); ``plain``: its compounds that are ordinary words
        (:func:`plain_compounds`)."""
        found = tokens(asked.without_now(query))
        names = frozenset(t for word in relevance.query_names(query) for t in tokens(word))
        if period is not None:
            found = relevance.without_phrase(found, tokens(period.phrase))
        shapes = asked.asked_shapes(query)
        code = asked.asks_code(query)
        if period is None and not given:
            return cls(found, None, names, subjects=tuple(subjects), unknown=unknown,
                       shapes=shapes, wants_code=code, plain=plain)  # fmt: skip
        named = {t for name in filtered for t in tokens(name)}
        kept = [t for t in found if t not in relevance.PERIOD_FRAME and t not in named]
        vague = period is not None and relevance.vague(kept)
        return cls(kept, period, names - named, given, vague, tuple(subjects), unknown, shapes,
                   code, plain - named)  # fmt: skip

    @property
    def period_first(self) -> bool:
        """The question asks for a period and little else (:attr:`period_given`): that
        period's memories answer it first, as an ``after``/``before`` window's would."""
        return self.period_given


def plain_compounds(query: str, spellings: Iterable[Spelling]) -> frozenset[str]:
    """The query's hyphenated words of letters only (:func:`ferrex.rules.relevance.is_compound`)
    that are ordinary words, not names (``help-desk``, ``sign-in``, ``read-only``): a memory
    that lacks them lacks nothing the question names
    (:func:`ferrex.rules.relevance.missing_named`). A compound is a name when it is built as
    the store's names of two words or more are (``spellings``: its first word the first
    word of one, ``redis-*``, or its last word the last word of one, ``*-gateway``,
    ``*-svc``): ``media-gateway`` is a name of that family whether the store holds it or
    not (and a question about it may ask about a thing never stored)."""
    found = [t for t in dict.fromkeys(tokens(query)) if relevance.is_compound(t)]
    if not found:
        return frozenset()
    leads: set[str] = set()
    heads: set[str] = set()
    for s in spellings:
        words = _form_of(s.normalized)
        if len(words) >= 2:
            leads.add(words[0])
            heads.add(words[-1])
    return frozenset(
        t for t in found if (parts := t.split("-"))[0] not in leads and parts[-1] not in heads
    )


def evidence_of(
    terms: Terms,
    memory: Memory,
    dense: Leg | None,
    candidate: Candidate | None = None,
    sparse: Leg | None = None,
) -> relevance.Evidence:
    """The relevance evidence for ``memory``; with its ``candidate`` (and the BM25 leg), also
    what the legs' rankings say of it: its ranks, its cosine's gap to the best, its share
    of the best BM25 score."""
    hit = None if dense is None else dense.best.get(memory.memory_id)
    body = memory_text(memory.type, memory.body())
    text = tokens(body)
    period = terms.period
    holds = period is not None and period.holds(memory.t_valid)
    # A period the question names, and little else, is a filter the memory passed when its
    # event time is inside it: counted among the filters given (one term found, as it was
    # one term found in the period), so it is evidence as an after/before window is.
    as_filter = terms.period_given and holds
    # Below the leg's floor a memory counts as at the floor, as one the leg did not return:
    # the same evidence however deep a longer answer asked the leg.
    found = (
        None
        if period is None or as_filter
        else relevance.period_found(holds, tokens(period.phrase), text)
        # "last month" named by its month: a note of 3 December on November's bill.
        or relevance.period_found(False, tokens(period.month_name() or ""), text)
    )
    return relevance.evidence(
        terms.tokens,
        text,
        None if hit is None or dense is None else max(hit.score, dense.floor),
        None if dense is None else dense.floor,
        found,
        terms.names,
        terms.given + int(as_filter),
        (None, None) if candidate is None else (candidate.dense_rank, candidate.sparse_rank),
        best_of(dense),
        0.0 if candidate is None or candidate.bm25 is None else share_of(candidate.bm25, sparse),
        asked.off_subject(
            terms.subjects, terms.tokens, text, memory.entity_ids, spaced_words(body),
            terms.unknown,
            asked.states(terms.shapes, body, memory.predicate, memory.object),
            None if terms.period_given else found,
            terms.wants_code and asked.states_code(body),
            asked.relation_named(terms.tokens, memory.predicate_normalized),
        ) if terms.subjects or terms.unknown else 0.0,
        terms.plain,
        runner_up(dense, memory.memory_id),
    )  # fmt: skip


def spaced_words(text: str) -> str:
    """``text`` normalized as entity names are (:func:`ferrex.rules.entities.normalize_entity`),
    punctuation and separators as single spaces, padded with a space each side: a spelling
    occurs in it as ``" word word "``."""
    spaced = re.sub(r"[^\w+#]+", " ", normalize_entity(text))
    return f" {' '.join(spaced.split())} "


def subjects_named(query: str, spellings: Iterable[Spelling]) -> list[asked.Subject]:
    """The things ``query`` names that the store knows: each entity one of whose spellings
    (``spellings``: those the caller sees) occurs in the question as whole words, with
    every spelling it has (:func:`_spelt_in`). A spelling that is a stop word alone names
    nothing."""
    asked_words = _Asked(query)
    by_entity: dict[str, list[Spelling]] = {}
    for s in spellings:
        if s.normalized:
            by_entity.setdefault(s.entity_id, []).append(s)
    forms_of = {
        entity_id: {_form_of(s.normalized) for s in spelt} - {()}
        for entity_id, spelt in by_entity.items()
    }
    words_of = {
        entity_id: {w for form in forms for w in form if _spelt_tokens(w)}
        for entity_id, forms in forms_of.items()
    }
    found: list[asked.Subject] = []
    for entity_id, spelt in sorted(by_entity.items()):
        forms = forms_of[entity_id]
        spoken = [w for form in forms for w in _spelt_in(form, asked_words) or ()]
        if not spoken:
            continue
        ids = {entity_id, *(s.recorded_under for s in spelt if s.recorded_under)}
        named = frozenset(t for form in forms for t in _spelt_tokens(" ".join(form)))
        named |= frozenset(tokens(" ".join(spoken)))
        siblings = {
            other for other, its in words_of.items()
            if other != entity_id and its & words_of[entity_id]
        }  # fmt: skip
        sibling_forms = {form for other in siblings for form in forms_of[other]}
        follow = {w: frozenset(tokens(w)) for w in _following(forms, asked_words.words)}
        found.append(
            asked.Subject(
                frozenset(ids),
                tuple(sorted(forms)),
                named,
                frozenset(siblings),
                tuple(sorted(sibling_forms - forms)),
                tuple(sorted((w, t) for w, t in follow.items() if t)),
            )
        )
    return found


@functools.lru_cache(maxsize=1 << 16)
def _spelt_tokens(text: str) -> tuple[str, ...]:
    """The BM25 tokens of a spelling or one of its words, worked out once: every recall
    reads the store's spellings again."""
    return tuple(tokens(text))


@functools.lru_cache(maxsize=1 << 16)
def _form_of(normalized: str) -> tuple[str, ...]:
    """A spelling's words, spaced as :func:`spaced_words` spaces a question's."""
    return tuple(spaced_words(normalized).split())


def _spelt_in(form: tuple[str, ...], asked_words: _Asked) -> list[str] | None:
    """The question's words that spell ``form`` (a spelling's words), or None when they do
    not: the question (``asked_words``) holds it as whole words; or, for a spelling of two
    words or more, as many adjacent words with the same BM25 tokens in any order ("the
    session Redis" for ``redis-sessions``), or each the same word or one a shortening of
    the other, one at least the same ("the ledger database" for ``ledger-db``,
    :func:`ferrex.rules.asked.shortens`). A spelling without a token (a stop word alone)
    names nothing."""
    if f" {' '.join(form)} " in asked_words.spaced:
        return list(form) if _spelt_tokens(" ".join(form)) else None
    size = len(form)
    if size < 2 or not any(w[:_STEM_AT_MOST] in asked_words.starts for w in form):
        return None
    own = set(_spelt_tokens(" ".join(form)))
    if len(own) < 2:
        return None
    words = asked_words.words
    for i in range(len(words) - size + 1):
        window = words[i : i + size]
        if asked_words.tokens_of(i, size) == own:
            return list(window)
        pairs = list(zip(form, window, strict=True))
        if any(a == b for a, b in pairs) and all(
            a == b or asked.shortens(a, b) or asked.shortens(b, a) for a, b in pairs
        ):
            return list(window)
    return None


_STEM_AT_MOST: Final = 3
"""A spelling may name a word of the question in another form (``sessions`` for
``session``, ``db`` for ``database``) only when the two begin alike: this many letters."""


class _Asked:
    """A question's words, spaced (:func:`spaced_words`), with the BM25 tokens of its runs
    of adjacent words worked out once each."""

    def __init__(self, query: str) -> None:
        self.spaced = spaced_words(query)
        self.words = self.spaced.split()
        self.starts = {w[:_STEM_AT_MOST] for w in self.words}
        self._tokens: dict[tuple[int, int], set[str]] = {}

    def tokens_of(self, start: int, size: int) -> set[str]:
        key = (start, size)
        if key not in self._tokens:
            self._tokens[key] = set(tokens(" ".join(self.words[start : start + size])))
        return self._tokens[key]


def _following(forms: Iterable[tuple[str, ...]], asked_words: Sequence[str]) -> list[str]:
    """The question's last word when a spelling of the thing comes right before it: the
    noun that says what sort of thing it is ("the ClickHouse analytics *cluster*?"). In a
    memory that follows the thing's name with the same word, that word is part of how both
    name it (:attr:`ferrex.rules.asked.Subject.follow`)."""
    return [
        asked_words[-1]
        for form in forms
        if len(asked_words) > len(form) and tuple(asked_words[-len(form) - 1 : -1]) == form
    ]


def identifiers_asked(query: str) -> list[str]:
    """The query's identifiers that carry a digit (``prod-eu-2``, ``OPS-1433``, ``2.14.1``):
    the names of one thing, which a store either holds or has never heard of."""
    return [
        t for t in dict.fromkeys(tokens(query))
        if not t.isalnum() and any(c.isdigit() for c in t)
    ]  # fmt: skip


def unknown_identifiers(
    query: str,
    spellings: Iterable[Spelling],
    held: Callable[[str], bool],
    period: Period | None = None,
) -> list[str]:
    """The identifiers the query asks about (:func:`identifiers_asked`) that no entity is
    spelled as and that ``held`` (a look-up of the BM25 index under the recall's filter)
    finds in no memory, a version of two numbers in no longer form either
    (:data:`PATCHES_PROBED`); not the words of the ``period`` it names (``2026-12-08`` is a
    day, which a memory's event time answers for, not its text)."""
    dated = set(tokens(period.phrase)) if period is not None else set()
    wanted = [t for t in identifiers_asked(query) if t not in dated]
    if not wanted:
        return []
    spelt = {t for s in spellings for t in _spelt_tokens(s.normalized)}
    spelt |= {t for s in spellings for t in _spelt_tokens(s.alias)}
    return [t for t in wanted if t not in spelt and not held(t) and not _held_longer(t, held)]


PATCHES_PROBED: Final = 20
"""A version of two numbers asked (``7.2``) is held when a memory holds it with a third
number up to this (``7.2.0`` to ``7.2.20``): what a store of ``7.2.4`` has heard of."""


def _held_longer(identifier: str, held: Callable[[str], bool]) -> bool:
    if not short_version(identifier):
        return False
    return any(held(f"{identifier}.{patch}") for patch in range(PATCHES_PROBED + 1))


def best_of(leg: Leg | None) -> float | None:
    """The best score a leg returned (None: it returned nothing)."""
    if leg is None or not leg.best:
        return None
    return max(hit.score for hit in leg.best.values())


def runner_up(leg: Leg | None, memory_id: str) -> float | None:
    """The best score ``leg`` gave a memory other than ``memory_id`` (None: none)."""
    if leg is None:
        return None
    scores = [hit.score for other, hit in leg.best.items() if other != memory_id]
    return max(scores) if scores else None


def share_of(score: float, leg: Leg | None) -> float:
    best = best_of(leg)
    return score / best if best is not None and best > 0 else 0.0


def relevance_of(terms: Terms, memory: Memory, dense: Leg | None) -> float:
    return relevance.DEFAULT_MODEL.relevance(evidence_of(terms, memory, dense))


def filters_given(flt: VectorFilter) -> int:
    """The explicit filters a recall's caller gave that every ranked memory passes: the
    entities (resolved) and the event-time window, one each."""
    window = flt.t_valid_from is not None or flt.t_valid_to is not None
    return int(bool(flt.entity_ids)) + int(window)


def beside_answers(
    judged: Sequence[tuple[Candidate, Judgement]],
    flagged: Mapping[str, Set[str]] | None = None,
) -> list[tuple[Candidate, Judgement]]:
    """``judged`` with each value kept beside another of its relation (two facts of one
    subject and predicate, both multi-valued: ``edge-cache has PoP in Frankfurt`` and ``… in
    Singapore``) labelled at least ``weak`` when that other one is: a question one of them
    answers ("where are the edge cache's PoPs?"), the others answer as much, whatever words
    each was stored with. So is a fact flagged as possibly the same slot as an answer
    among them (``flagged``: memory id -> the ids it is flagged with): until the agent
    settles the flag, either may be the current answer (``nightly export job | moved to``
    beside ``nightly exporter | host`` for "where does the nightly export run?"). The
    relevance rises to the model's ``weak_from``, so the verdict and trimming read it as
    they read any ``weak`` result."""

    def slot(memory: Memory) -> tuple[str, str, str] | None:
        key, predicate = memory.subject_key, memory.predicate_normalized
        if memory.type != "semantic" or not memory.multi_valued or not key or not predicate:
            return None
        return memory.namespace, key, predicate

    answered = {slot(c.memory) for c, j in judged if j.label != "none"} - {None}
    answers = {c.memory.memory_id for c, j in judged if j.label != "none"}
    flagged = flagged or {}
    lifted: list[tuple[Candidate, Judgement]] = []
    for candidate, judgement in judged:
        beside = slot(candidate.memory) in answered
        if judgement.label == "none" and (beside or flagged.get(candidate.memory.memory_id,
                                                                 set()) & answers):  # fmt: skip
            floor = relevance.DEFAULT_MODEL.weak_from
            judgement = Judgement(floor, relevance.DEFAULT_MODEL.label(floor), judgement.evidence)
        lifted.append((candidate, judgement))
    return lifted
