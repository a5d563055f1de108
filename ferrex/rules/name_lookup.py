"""The names a reader gives for things: the entity a name finds, and other spellings to match.

A filter by entity, a resource, a page or a keyword query names things the way people do
(``kubernetes cluster`` for the entity spelt ``k8s cluster``, "cart Redis" for
``redis-carts``, ``cart service`` for ``cart-svc``). These rules only read: nothing is
merged, and a fact's subject is still resolved by :func:`ferrex.rules.subjects.resolve_subject`,
precision first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from ferrex.rules.entities import (
    Candidate,
    is_product_suffix,
    normalize_entity,
    product_bases,
    resolve_entity,
)
from ferrex.rules.short_forms import ARTICLES, DEFAULT_ABBREVIATIONS, spelled_out
from ferrex.rules.subjects import COMPONENT_WORDS, compare_words


def find_entity(
    name: str,
    candidates: Sequence[Candidate],
    abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS,
) -> str | None:
    """The entity a name given by a reader (a resource, a filter, a page) refers to: the
    entity rules, or the same spelled-out words as a known spelling (``kubernetes
    cluster`` finds the entity spelt ``k8s cluster``), or the same by :func:`compare_words`
    (``auth-gw`` finds ``auth gateway``). No embedding; None when unknown."""
    found = resolve_entity(name, candidates)
    if found.entity_id is not None:
        return found.entity_id
    spelled = spelled_out(normalize_entity(name), abbreviations)
    words = "".join(spelled)
    same = [
        c
        for c in candidates
        if words and "".join(spelled_out(c.normalized, abbreviations)) == words
    ]
    if not same and words:
        # Short forms the table lacks, where the rest of the name agrees (auth-gw finds
        # "auth gateway"): the words' rule, no embedding.
        same = [
            c
            for c in candidates
            if compare_words(spelled, spelled_out(c.normalized, abbreviations)) == "same"
        ]
    return min(same, key=lambda c: c.entity_id).entity_id if same else None


def spelling_variants(
    name: str, abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS
) -> frozenset[str]:
    """The ways people spell ``name``, as normalized forms (:func:`normalize_entity`), for
    the read side to match on (a filter by entity, a keyword query): joined and spaced
    (``auth gw``, ``authgw``), a leading article dropped, each word spelled out or
    shortened by the table (``billing svc`` / ``billing service``), trailing component
    words dropped (``ci pipeline`` → ``ci``), the acronym of a name of two or more words
    (``continuous integration`` → ``ci``). Recall-minded: merging entities stays with
    :func:`resolve_subject`, precision first."""
    normalized = normalize_entity(name)
    if not normalized:
        return frozenset()
    shorter = {long: short for short, long in abbreviations.items() if " " not in long}
    words = normalized.split(" ")
    if len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    full = tuple(spelled_out(" ".join(words), abbreviations))
    forms = {tuple(words), full, tuple(shorter.get(w, w) for w in full)}
    for form in list(forms):
        cut = list(form)
        while len(cut) > 1 and cut[-1] in COMPONENT_WORDS:
            cut.pop()
            forms.add(tuple(cut))
    if len(full) >= 2 and not set(full) & COMPONENT_WORDS and all(w[:1].isalpha() for w in full):
        forms.add(("".join(w[0] for w in full),))
    out = {normalized}
    for form in forms:
        out |= {" ".join(form), "".join(form)}
    return frozenset(f for f in out if f)


def loosely_named(
    name: str,
    candidates: Sequence[Candidate],
    abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS,
) -> list[str]:
    """The entities a reader's name for a thing may mean when :func:`find_entity` finds
    none, the way people name things in a filter ("cart Redis", "Postgres primary"), by id.

    Both names are normalized (case, ``-``, ``_``, ``.`` and spaces alike) and spelled out
    (:func:`spelled_out`). An entity matches when *every* word of the name matches one of
    its words: the same word (3 points), one a prefix of the other, the shorter of three
    letters or more (``cart``/``carts``, 2 points), or one an abbreviation of the other
    (:func:`_abbreviates`: ``pg``/``postgres``, ``es``/``elasticsearch``, 1 point); the
    entity may have more words (``tokio`` means ``tokio runtime``, ``CDN`` ``cdn-edge``).
    If no entity matches, the name's trailing component words (:data:`COMPONENT_WORDS`:
    "Elasticsearch *cluster*", "US *cluster*") are dropped and the words tried again. Of the
    matches, only those whose weakest word scores best are kept, so "US cluster" means
    ``prod-us-2`` (``us`` exactly), not ``user-profile-svc`` (``us`` as an abbreviation),
    and "Redis" means every ``redis-*`` entity alike. This only reads: nothing is merged,
    and a fact's subject is still resolved by :func:`resolve_subject`."""
    words = spelled_out(normalize_entity(name), abbreviations)
    if not words:
        return []
    forms = [(c.entity_id, spelled_out(c.normalized, abbreviations)) for c in candidates]
    tries = [words]
    core = list(words)
    while len(core) > 1 and core[-1] in COMPONENT_WORDS:
        core.pop()
    if core != words:
        tries.append(core)
    for wanted in tries:
        scored: dict[str, int] = {}
        for entity_id, theirs in forms:
            score = min(max((_word_match(w, t) for t in theirs), default=0) for w in wanted)
            if score > 0:
                scored[entity_id] = max(score, scored.get(entity_id, 0))
        if scored:
            best = max(scored.values())
            return sorted(e for e, s in scored.items() if s == best)
    return []


def _word_match(a: str, b: str) -> int:
    """How well one word of a reader's name matches one word of an entity's (see
    :func:`loosely_named`): 3 the same, 2 a prefix, 1 an abbreviation, 0 none."""
    if a == b:
        return 3
    short, long = sorted((a, b), key=len)
    if len(short) >= 3 and long.startswith(short):
        return 2
    return 1 if _abbreviates(short, long) else 0


def _abbreviates(short: str, long: str) -> bool:
    """Whether ``short`` is the kind of clipping people write for ``long``: two to four
    letters, the same first letter, the rest of its letters in ``long`` in order, and
    ``long`` at least twice as long (``pg``/``postgres``, ``es``/``elasticsearch``).
    Words with digits never abbreviate (``v2`` is not ``version``)."""
    if not (2 <= len(short) <= 4 and short.isalpha() and long.isalpha()):
        return False
    if len(long) < 2 * len(short) or short[0] != long[0]:
        return False
    rest = iter(long[1:])
    return all(letter in rest for letter in short[1:])


def product_forms(word: str) -> list[str]:
    """A product's name with its suffix added or taken off (:func:`ferrex.rules.entities.
    is_product_suffix`): ``postgres`` → ``postgresql``, ``postgresql`` → ``postgres``,
    ``mongo`` → ``mongodb``, ``nodejs`` → ``node``. ``js`` is only taken off: a plain word
    before it (``next``, ``express``) is too often meant as a word."""
    if not word.isalpha():
        return []
    added = [word + ("ql" if word.endswith("s") else "sql"), word + "db"]
    return [f for f in added if is_product_suffix([word], [f])] + product_bases(word)


_QUERY_WORD = re.compile(r"[^\W_]+")
_JOINS: Final = ("-", "")
"""How a name's words are written as one token: hyphenated (``cart-svc``), run together."""


def query_spellings(
    query: str, abbreviations: Mapping[str, str] = DEFAULT_ABBREVIATIONS
) -> list[str]:
    """Other spellings of what a question says, for the keyword leg's query side (a memory's
    own text is indexed as written): each word or phrase the table shortens or spells out,
    in its other form (``service`` → ``svc``, ``k8s`` → ``kubernetes``, ``command line`` →
    ``cli``); and two or three neighbouring words written as one name, hyphenated and run
    together, as they are and with those forms swapped in (``cart service`` → ``cart-svc``,
    ``cartsvc``, ``cart-service``); and a product's name with or without its suffix
    (:func:`product_forms`: ``postgres`` → ``postgresql``). In the question's order, without
    repeats, none equal to a word or phrase of the question itself."""
    # The keyword leg's own stop words, read when first asked: importing ``ferrex.models``
    # with this module would load SQLite and NumPy into every pure decision.
    from ferrex.models.sparse import ENGLISH_STOP_WORDS

    words = _QUERY_WORD.findall(query.casefold())
    shorter: dict[str, list[str]] = {}
    for short, long in abbreviations.items():
        shorter.setdefault(long, []).append(short)
    other: dict[int, tuple[int, list[str]]] = {}
    """Where a word or phrase starts: how many words it spans and its other forms."""
    for start in range(len(words)):
        for span in (3, 2, 1):
            if len(words) - start < span:
                continue
            phrase = " ".join(words[start : start + span])
            forms = [f for f in [abbreviations.get(phrase, ""), *shorter.get(phrase, ())]
                     if f and f != phrase]  # fmt: skip
            if forms:
                other[start] = (span, forms)
                break
    out: dict[str, None] = {}
    for start in sorted(other):
        out.update(dict.fromkeys(other[start][1]))
    for word in words:
        if word not in ENGLISH_STOP_WORDS:
            out.update(dict.fromkeys(product_forms(word)))
    for start in range(len(words)):
        for span in (2, 3):
            window = words[start : start + span]
            if len(window) < span or any(w in ENGLISH_STOP_WORDS for w in window):
                continue
            one = [other.get(start + i, (0, [w])) for i, w in enumerate(window)]
            swapped_in = [f[0] if n == 1 else w for w, (n, f) in zip(window, one, strict=True)]
            for form in [window] if swapped_in == window else [window, swapped_in]:
                for join in _JOINS:
                    out[join.join(w.replace(" ", join) for w in form)] = None
    said = set(words) | {" ".join(words[i : i + n]) for n in (2, 3) for i in range(len(words))}
    return [s for s in out if s not in said]
