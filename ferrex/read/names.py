"""The names a recall reads against the entity spellings the caller sees in its namespace
(:meth:`ferrex.read.seen.Sight.spellings`, read once per recall and carried in its query
state): the entity filter, the ``entities`` a request gives (:func:`filter_ids`), and the
entities the question itself names, for the entity graph leg (:func:`named_entities`).

The subjects the question names, for relevance, are read from the same spellings by
:func:`ferrex.read.judgement.subjects_named`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ferrex.read.judgement import spaced_words
from ferrex.rules.entities import Candidate, normalize_entity
from ferrex.rules.name_lookup import find_entity, loosely_named, spelling_variants
from ferrex.rules.short_forms import spelled_out
from projections.rows import Spelling
from projections.sqlite import ReadModel


def filter_ids(
    rm: ReadModel, names: Sequence[str], spellings: Sequence[Spelling]
) -> tuple[tuple[str, ...], list[str]]:
    """Entity ids for the names, through aliases ("tokio" finds "Tokio runtime") with the
    entities spelt the same once short forms are spelled out ("cart service" finds
    ``cart-svc`` too), else
    by the ways people spell a name (:func:`ferrex.rules.name_lookup.spelling_variants`: a
    dropped word, an acronym) and the looser matches of
    :func:`ferrex.rules.name_lookup.loosely_named` ("cart Redis" finds ``redis-carts``); a
    name may mean several entities, the filter then admits the memories of any of them.
    And the names that mean no entity of ``spellings``."""
    if not names:
        return (), []
    candidates = [Candidate(s.entity_id, s.alias, s.normalized) for s in spellings]
    found: list[str] = []
    unknown: list[str] = []
    for name in names:
        entity_id = find_entity(name, candidates)
        meant: list[str] = []
        if entity_id is not None:
            # And every entity spelt the same once short forms are spelled out (``cart-svc``
            # beside ``cart service``): one thing the store may keep as two entities.
            full = _spelled(normalize_entity(name))
            meant = [entity_id, *sorted({c.entity_id for c in candidates
                                         if c.entity_id != entity_id
                                         and _spelled(c.normalized) == full})]  # fmt: skip
        else:
            # Every entity spelt one of the ways people spell the name (a dropped
            # component word, an acronym), and the looser matches of a name as a person
            # writes it: a filter may be broad, a merge may not.
            variants = spelling_variants(name)
            meant = sorted({c.entity_id for c in candidates if c.normalized in variants})
            meant += [e for e in loosely_named(name, candidates) if e not in meant]
        if not meant:
            unknown.append(name)
            continue
        # Memories stored before a merge name the merged entity by its old id.
        for one in rm.recall.merged_ids(meant):
            if one not in found:
                found.append(one)
    return tuple(found), unknown


@lru_cache(maxsize=1 << 16)
def _spelled(normalized: str) -> tuple[str, ...]:
    """A spelling's words with short forms spelled out, remembered: every filtered recall
    reads the namespace's spellings again (about 13 ms for 5,000 spellings uncached)."""
    return tuple(spelled_out(normalized))


def named_entities(query: str, spellings: Sequence[Spelling]) -> dict[str, str]:
    """The entities the query names, by id (with the spelling found): every one of
    ``spellings`` whose normalized form occurs in the query as whole words."""
    words = spaced_words(query)
    found: dict[str, str] = {}
    for s in spellings:
        if s.normalized and f" {s.normalized} " in words and s.entity_id not in found:
            found[s.entity_id] = s.alias
    return found
