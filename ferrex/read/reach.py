"""Memories a recall reaches through the read model rather than by the legs' search in
Qdrant: the entity graph leg (:func:`graph_leg`) and episode context (:func:`with_context`).
Both admit a memory that was not a candidate by the recall's own filter, judged on its
read-model row (:func:`admitted`), not by another Qdrant query.

**Episode context** (:func:`ferrex.rules.fusion.lend_to_neighbours`): a conversation turn
that holds an answer often shares no words with the question ("Sure, I'll send it
tomorrow"), while the turn before it does. So every candidate episode lends half its fused
score (``context_share``) to its neighbours: the episodic memories of the same namespace and
the same ``source``, consecutive in event time, up to two on each side (``context_reach``)
and at most 30 minutes apart step by step (``context_gap``). Episodes stored without a
source have a *derived episode* instead (``ferrex.core.decide.episode_of``: one agent's
consecutive episodic stores in a namespace, an import's lines in file order) and their
neighbours are the episode's, in arrival order. A neighbour keeps its own score plus the
largest loan, and joins the candidates if it was not one, provided the recall's filter
admits it. Semantic and procedural memories have no neighbours.

**The entity graph leg** (under the ``relational`` strategy, or at ``recall.graph_weight``):
memories naming an entity the question names (:func:`ferrex.read.names.named_entities`), and
one hop out, memories naming an entity co-mentioned with one of those; fused beside the
dense and BM25 legs (:meth:`ferrex.read.recall.Reader._fused`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ferrex.read.request import RecallSettings
from ferrex.rules.fusion import Leg, context_shares, lend_to_neighbours
from projections.documents import memory_text
from projections.rows import Memory
from projections.sqlite import ReadModel
from projections.vector_sink import payload_of
from projections.vectors import Hit, VectorFilter, filter_clauses, passes

GRAPH_HOP: Final = 0.5
"""A memory one hop away (naming an entity co-mentioned with the query's) scores this much
of one naming the query's entity itself."""
GRAPH_CO_ENTITIES: Final = 32


def graph_leg(
    rm: ReadModel, named: Mapping[str, str], flt: VectorFilter, n: int
) -> tuple[Leg, dict[str, list[str]]]:
    """The entity graph leg: memories the caller may see (under the recall's filter)
    that name the query's entities (``named``, resolved through the caller's visible
    spellings), scored by the share of those entities they name; and one hop out,
    memories naming an entity co-mentioned with one of them in a memory the caller may
    see, at :data:`GRAPH_HOP` of that. Best ``n``, ties newest first; with, for each
    memory, the names it was reached through (``co-mention`` marks the hop)."""
    query_ids = sorted(named)
    agent, valid, cap = flt.agent_id, flt.only_valid, 4 * n
    direct: dict[str, set[str]] = {}
    for memory_id, entity_id in rm.entity_links(
        flt.namespace or "", query_ids, agent_id=agent, only_valid=valid, limit=cap
    ):
        direct.setdefault(memory_id, set()).add(entity_id)  # fmt: skip
    rows = admitted(rm.memories(memory_ids=sorted(direct)), flt)
    direct = {m.memory_id: direct[m.memory_id] for m in rows}
    co: dict[str, set[str]] = {}
    for memory in rows:
        for entity_id in memory.entity_ids:
            if entity_id not in named:
                co.setdefault(entity_id, set()).update(direct[memory.memory_id])
    common = sorted(co, key=lambda e: (-len(co[e]), e))[:GRAPH_CO_ENTITIES]
    hop: dict[str, set[str]] = {}
    for memory_id, entity_id in rm.entity_links(
        flt.namespace or "", common, agent_id=agent, only_valid=valid, limit=cap
    ):
        if memory_id not in direct:
            hop.setdefault(memory_id, set()).update(co[entity_id])  # fmt: skip
    hop = {m.memory_id: hop[m.memory_id]
           for m in admitted(rm.memories(memory_ids=sorted(hop)), flt)}  # fmt: skip
    k = len(named)
    scores = {m: len(e) / k for m, e in direct.items()}
    scores |= {m: GRAPH_HOP * len(e) / k for m, e in hop.items()}
    best = sorted(scores, key=lambda m: (-scores[m], tuple(-ord(c) for c in m)))[:n]
    hits = {m: Hit(m, scores[m], {"memory_id": m}) for m in best}
    via = {m: sorted(named[e] for e in direct[m]) if m in direct
           else [*sorted(named[e] for e in hop[m]), "co-mention"] for m in best}  # fmt: skip
    return Leg(hits, 0.0), via


def admitted(memories: Sequence[Memory], flt: VectorFilter) -> list[Memory]:
    """Those of ``memories`` the recall's filter admits (visibility, validity, types,
    entities, times), judged on their read-model rows by the rule both vector backends
    apply to a point's payload (:func:`projections.vectors.passes`; the payload is the
    row's, as ``reconcile`` checks), instead of asking the backend once more."""
    clauses = filter_clauses(flt)
    return [m for m in memories if not m.redacted and passes(clauses, payload_of(m))]


def with_context(
    rm: ReadModel,
    settings: RecallSettings,
    fused: list[tuple[str, float]],
    memories: dict[str, Memory],
    flt: VectorFilter,
) -> tuple[list[tuple[str, float]], dict[str, tuple[str, float]]]:
    """Episode context: every episode among the candidates lends a share of its score
    to its neighbours (:func:`lend_to_neighbours`); neighbours that were not candidates
    join, if the recall's filter admits them. Adds them to ``memories``. A lender whose
    share is 0 (a note, by default) has its neighbours left unread."""
    texts = {mid: memory_text(memories[mid].type, memories[mid].body()) for mid, _ in fused}
    shares = context_shares(texts, settings.context_share, settings.note_context_share)
    neighbours = {
        mid: _neighbours(
            rm, memories[mid], settings.context_reach, settings.context_gap, flt.agent_id
        )
        for mid, _ in fused
        if shares[mid] > 0
    }
    new = sorted({n for ns in neighbours.values() for n in ns} - memories.keys())
    if new:
        rows = rm.memories(memory_ids=new)
        memories.update((m.memory_id, m) for m in admitted(rows, flt))
        neighbours = {mid: [n for n in ns if n in memories] for mid, ns in neighbours.items()}
    return lend_to_neighbours(
        fused, neighbours, settings.context_share, settings.context_below_lender, shares
    )


def _neighbours(
    rm: ReadModel, memory: Memory, reach: int, gap: float, agent_id: str | None
) -> list[str]:
    """The episodes of ``memory``'s source (or derived episode) just before and after it
    that the caller may see, nearest first, up to ``reach`` on each side; with a source,
    each at most ``gap`` seconds from the one before it (a derived episode had its gap
    applied when it was stored: ``ferrex.core.decide.episode_of``)."""
    if memory.type != "episodic" or not (memory.source or memory.episode):
        return []
    found: list[str] = []
    for side in rm.recall.episode_neighbours(memory, reach, agent_id=agent_id):
        previous = memory.t_valid
        for memory_id, t_valid in side:
            if memory.source and abs(t_valid - previous) > gap:
                break
            found.append(memory_id)
            previous = t_valid
    return found
