"""The fact marks on a recall result (:meth:`ferrex.read.recall.Reader._result`): whether a
semantic fact is contradicted, by which facts (:func:`contradicted`), and which facts the
store kept beside it as possibly the same subject (:func:`possible_conflict`).

Both read only what the caller sees (:class:`ferrex.read.seen.Sight`). Stats and reflect
count contradictions in the read model's aggregates instead (:mod:`ferrex.read.conflicts`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ferrex.models.remote import ServerDown
from ferrex.read.access import QueryCache
from ferrex.read.seen import Sight
from ferrex.rules.predicates import one_relation, unplaced_neighbour
from ferrex.rules.slots import may_share_slot
from ferrex.rules.subjects import object_form
from ferrex.rules.visibility import sees_scope
from projections.readmodel.predicates import is_current
from projections.rows import Memory
from projections.sqlite import ReadModel


def contradicted(
    rm: ReadModel, memory: Memory, sight: Sight, queries: QueryCache
) -> tuple[list[str], list[str]]:
    """The other active single-valued facts the caller may see that disagree, as
    (contradictions, possible ones): the same subject, however it is spelt (every spelling
    of the entity its subject names, as the caller sees spellings), and the same predicate
    (as stats and reflect count contradictions: one spelled alike, ``match_known``, is the
    same), or else, only possibly, a predicate of the subject that is probably this one in
    other words (:func:`ferrex.rules.predicates.unplaced_neighbour`, the phrases compared by
    the query vectors of ``queries``); objects that agree (``team Nova`` / ``Nova``) do not.
    Multi-valued facts are never contradictions, nor a fact the agent said holds beside
    this one (``facts.differ``)."""
    if (
        not is_current(memory)
        or memory.multi_valued
        or not memory.predicate_normalized
        or not memory.subject_key
    ):
        return [], []
    facts = {
        m.memory_id: m
        for key in _subject_keys(rm, memory.namespace, memory.subject_key, sight)
        for m in rm.subject_facts(memory.namespace, key)
        if m.memory_id != memory.memory_id
        and is_current(m)
        and not m.multi_valued
        and m.predicate_normalized
        and sight.sees(m)
    }
    mine = object_form(memory.object or "")
    predicate = memory.predicate_normalized
    same = sorted(
        i
        for i, m in facts.items()
        if one_relation(predicate, str(m.predicate_normalized))
        and object_form(m.object or "") != mine
    )
    if same:
        return _unsettled(rm, memory.memory_id, same), []
    # Sibling predicates (daily cap / monthly cap) are two slots, whatever the phrases.
    others = sorted(
        {
            str(m.predicate_normalized)
            for m in facts.values()
            if m.predicate_normalized != predicate
            and may_share_slot(predicate, str(m.predicate_normalized))
        }
    )

    def similarity(text: str, texts: Sequence[str]) -> list[float]:
        return _phrase_similarity(queries, text, texts)

    found = unplaced_neighbour(predicate, others, similarity) if others else None
    if found is None:
        return [], []
    return [], _unsettled(
        rm,
        memory.memory_id,
        sorted(i for i, m in facts.items() if m.predicate_normalized == found[0]),
    )


def _unsettled(rm: ReadModel, memory_id: str, ids: list[str]) -> list[str]:
    """``ids`` but those said to both hold beside ``memory_id`` (``facts.differ``, read by
    ``InsightReads.settled_pairs`` as stats and reflect read it)."""
    if not ids:
        return []
    settled = rm.insight.settled_pairs([memory_id, *ids])
    return [i for i in ids if frozenset((memory_id, i)) not in settled]


def possible_conflict(rm: ReadModel, memory: Memory, sight: Sight) -> list[str]:
    """The active facts the caller sees that the store kept beside this one because
    their subjects are possibly the same (``facts.possible_conflict``)."""
    if not is_current(memory):
        return []
    ids = sorted({c.other_id for c in rm.possible_conflicts([memory.memory_id])})
    others = rm.memories(memory_ids=ids) if ids else []
    return sorted(m.memory_id for m in others if is_current(m) and sight.sees(m))


def _subject_keys(rm: ReadModel, namespace: str, key: str, sight: Sight) -> list[str]:
    """Every spelling (normalized) of the entities ``key`` spells, that the caller sees."""
    spellings = [
        s
        for s in rm.recall.entity_spellings(namespace, key)
        if sees_scope(sight.agent_id, s.agent_id, s.viewers)
    ]
    entities = {s.entity_id for s in spellings if s.normalized == key}
    return sorted({key, *(s.normalized for s in spellings if s.entity_id in entities)})


def _phrase_similarity(queries: QueryCache, text: str, texts: Sequence[str]) -> list[float]:
    try:
        vector = queries.vector(text)
        return [float(np.dot(vector, queries.vector(other))) for other in texts]
    except ServerDown:  # no embeddings: only the same predicate counts (checked before)
        return [0.0] * len(texts)
