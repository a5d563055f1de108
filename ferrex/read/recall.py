"""The read side: recall (hybrid retrieval with freshness), and the access log.

Recall reads the projections only: embed the query → ask Qdrant for the best dense and the
best BM25 candidates under the filters (namespace, types, entities through their aliases,
event-time range, validity or as-of, agent visibility), each leg collapsed to a ranking of
memories (a memory's best part) → fuse the two → episode context → optional cross-encoder
rerank of the top candidates → type-specific recency boost → staleness labels, hiding stale
(and superseded) memories unless asked → top N, each with its freshness and, on request,
the score of every stage.

The stages are :class:`Reader`'s methods in the order :meth:`Reader._recall` calls them
(query, legs, admit, rerank, score, guard, judge, answer), each passing on
:class:`~ferrex.read.candidate.Candidate` records; the explain document is rendered from
the record only when the caller asks for it.

**Fusion** (:func:`fuse`) is a convex combination of the two legs' min-max normalised
scores, ``0.4 · dense + 0.6 · bm25`` by default (``RecallSettings.dense_weight``, the dense
share lowered per query as the BM25 leg grows sure of its best, ``dense_adapt``): each leg
is scaled so that its best candidate is 1 and its cut-off 0 (its point at rank
``RecallSettings.prefetch``, or 0 when it returned fewer, which is everything it scores;
points below the cut-off get 0), and a memory a leg did not return gets 0 from it. A BM25
leg cut off with its best point tied with its cut-off (a word many memories hold alike) is
left out of a hybrid recall: which of the tied points came back is the engine's choice and
the depth's, so a shorter answer would not begin the longer one.
Unlike RRF it keeps how far apart the scores are, so a leg that is sure of one memory is not
outvoted by a memory both legs rank mediocre: on the public benchmarks
(``tools/eval_retrieval.py``) RRF with k = 60 ranked below the better single leg on LoCoMo,
this ranks above both legs on LoCoMo and SciFact. The 0.4 was chosen on half of each
benchmark's queries (0.5 does nearly as well). When the BM25 leg's best memory holds
under half of the question's terms (a question in plain words about a note in jargon, which
shares a word or two with other notes in passing), the dense share rises toward 1 by
``RecallSettings.dense_lift`` (:func:`~ferrex.rules.fusion.lifted_dense_share`): chosen on
the validation splits of LoCoMo and LongMemEval, SciFact and the agent notes' tuning half,
the value that moved no set down by more than 0.01. Fusion happens here rather than inside
Qdrant because Qdrant fuses *points*: a memory with several parts (a text longer than the
model's window) would be scored as several half matches. Ties are broken by memory id, so
every backend ranks alike.

**Episode context** and the **entity graph leg** (:mod:`ferrex.read.reach`): memories reached
through the read model, not the legs' search, admitted by the recall's own filter.

**Strategies** (``RecallRequest.strategy``, :data:`STRATEGY_WEIGHTS`) reweigh the stages
and never switch a leg off: the dense share of fusion, a multiplier of the recency boost,
and for ``relational`` a lift (a share of the best fused score) for candidates naming an
entity the query names through the spellings the caller may see. **Dates in the
question** (:func:`ferrex.rules.dates.when`, relative to ``as_of`` when given, else now)
multiply the score of memories whose event time falls in the named period by
``1 + date_boost``; ``explain`` shows the phrase. Both legs are also asked inside the
period (:mod:`ferrex.read.period`), so its memories are candidates however few words they
share with the question.

**The top guard** (``RecallSettings.top_guard``, under ``balanced`` and ``lexical``): fusion
adds recall further down but used to lose the first place (LoCoMo recall@1 0.328 fused
against 0.358 for the BM25 leg alone), the dense leg's best being a near miss more often
than the lexical one. So once every boost is applied, the BM25 leg's best candidate (by its
own score after the same boosts) is moved first, unless the fused first is more relevant
(the calibrated relevance below, fitted on the golden set, not on the benchmarks), which
keeps a paraphrase the dense leg is sure of ("the capital of France" → "Paris is the
capital city"). ``explain`` marks the memory with ``top_guard``. Its score is its own, so
the first result may score below the second.

**Relevance** (:mod:`ferrex.rules.relevance`): every result also gets a calibrated
``relevance`` in [0, 1] and a label (``strong``, ``weak``, ``none``) from the legs' absolute
evidence (the raw dense cosine, the share of the query's terms the memory contains, whether
it lacks an identifier, number or period the query names), since the fused score is
relative and cannot say that nothing matches. An explicit ``min_relevance`` drops
candidates below it (0 keeps every one: the evaluation tools measure untrimmed); without one
the answer is trimmed of what the model is confident is no answer (relevance below
``HIDDEN_BELOW``), never of its first three results (two when nothing is relevant): a
``none`` label is a guess, and an answer hidden is one the agent never sees. ``explain``
also shows each result's learned ``answer_chance``
(:class:`ferrex.rules.relevance.AnswerModel`), which does not trim yet. Either way what
was left out is counted as ``hidden["irrelevant"]``; when no returned result reaches
``weak`` the answer says ``nothing_relevant`` with a ``note``.

``RecallRequest.legs`` picks ``hybrid`` (the default), ``dense`` or ``bm25``: a single leg
ranks by its own score (cosine, or BM25 with IDF) and goes through every later stage
unchanged, which is how the evaluation tools measure each leg on its own.

**Lifecycle marks** (:mod:`ferrex.rules.lifecycle`): a memory's importance multiplies its
score beside the recency boost (:func:`~ferrex.rules.lifecycle.importance_factor`, exactly 1
at the default 0.5, so unmarked memories rank as before); ``explain`` shows the value and the
factor. A memory whose time to live has run out is hidden (``hidden["expired"]``) until the
owner's sweep forgets it; a pinned one is never labelled stale, so never hidden as stale.
Results carry ``pinned``, ``importance`` and ``expires_at`` only when not at their default.

A recall hit is an *access*, never a validation: hits are counted in an :class:`AccessLog`
and journaled in batches (``memories.accessed``), so a replay reproduces staleness.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from ferrex.errors import UsageError
from ferrex.models import Embedder
from ferrex.models.remote import ServerDown
from ferrex.models.rerank import RerankStage
from ferrex.models.sparse import Bm25Encoder, token_index, tokens
from ferrex.read.access import COSINES, AccessLog, QueryCache, dense_legs
from ferrex.read.candidate import Candidate
from ferrex.read.judgement import (
    Judgement,
    Terms,
    beside_answers,
    evidence_of,
    filters_given,
    plain_compounds,
    relevance_of,
    subjects_named,
    unknown_identifiers,
)
from ferrex.read.marks import contradicted, possible_conflict
from ferrex.read.names import filter_ids, named_entities
from ferrex.read.period import in_period_first, period_legs, period_parts, period_ranking
from ferrex.read.reach import graph_leg, with_context
from ferrex.read.request import (
    POOL,
    STRATEGY_WEIGHTS,
    Legs,
    RecallHit,
    RecallRequest,
    RecallResult,
    RecallSettings,
    Weights,
    check_request,
)
from ferrex.read.seen import Sight, unexpired
from ferrex.rules import asked, relevance
from ferrex.rules.assess import freshness_input
from ferrex.rules.consolidation import summary_of
from ferrex.rules.dates import Period, when
from ferrex.rules.freshness import (
    StalenessParams,
    boosted,
    freshness,
    recency_boost,
    staleness,
)
from ferrex.rules.fusion import (
    Leg,
    adaptive_dense_share,
    bm25_confidence,
    fuse,
    keep_top,
    lifted_dense_share,
)
from ferrex.rules.lifecycle import importance_factor, marks_doc
from ferrex.rules.name_lookup import (
    query_spellings,
)
from ferrex.rules.store_fields import offset_of, parse_time
from ferrex.times import rfc3339
from journal.events import utc_now
from projections.documents import memory_text
from projections.replay import Projections
from projections.rows import Memory, Spelling
from projections.vectors import Hit, SparseVector, VectorFilter

log = logging.getLogger(__name__)


class Reader:
    """Recall over the live projections."""

    def __init__(
        self,
        projections: Projections,
        embedder: Embedder,
        reranker: RerankStage,
        settings: RecallSettings | None = None,
        access: AccessLog | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.projections = projections
        self.settings = settings or RecallSettings()
        self.queries = QueryCache(embedder, adapt=self.settings.query_adapter)
        self.reranker = reranker
        self.access = access if access is not None else AccessLog()
        self.clock = clock
        self.bm25 = Bm25Encoder()

    def recall(self, req: RecallRequest) -> RecallResult:
        # One consistent state of the read model and the vectors, beside other reads and
        # writes (Projections.reading): a vector hit the snapshot does not hold is dropped.
        with self.projections.reading():
            return self._recall(req)

    def _recall(self, req: RecallRequest) -> RecallResult:
        """The pipeline: query → legs → admit → rerank → score → guard → judge → answer."""
        q = self._query(req)
        if req.entities and not q.flt.entity_ids:
            return RecallResult(req.query, q.namespace, [], {}, q.unknown, self.reranker.status,
                                nothing_relevant=True)  # fmt: skip
        legs, degraded = self._legs(req, q.flt, q.prefetch, q.period)
        # The embeddings server is down: the BM25 leg alone ranks, and the answer says so.
        mode: Legs = "bm25" if req.legs != "bm25" and "dense" not in legs else req.legs
        candidates = self._admit(q, legs, mode)
        candidates = self._reranked(q, candidates)
        scored, hidden = self._scored(q, candidates)
        scored = self._ordered(q, mode, legs, scored)
        judged = self._judged(req, q.terms, legs, scored, hidden)
        return self._answer(q, judged, hidden, degraded)

    # --- The stages, in order ---

    def _query(self, req: RecallRequest) -> _Query:
        """The request checked and read: its times, the caller, the namespace, the entities
        it names (through their aliases), the filter every leg applies, the period the
        question names, and the sizes of the stages."""
        check_request(req)
        as_of = parse_time(req.as_of, "as_of")
        after = parse_time(req.after, "after")
        before = parse_time(req.before, "before")
        if after is not None and before is not None and after >= before:
            raise UsageError(
                f"the window is empty: after ({req.after}) is not earlier than "
                f"before ({req.before})",
                hint="after is the earliest event time to include, before the time to stop at",
            )
        now = self.clock()
        sight = Sight(req.agent_id, now.timestamp())
        namespace = req.namespace or self.settings.default_namespace
        spellings = sight.spellings(self.projections.read_model, namespace)
        entity_ids, unknown = filter_ids(self.projections.read_model, req.entities, spellings)
        flt = VectorFilter(
            namespace=namespace,
            types=tuple(dict.fromkeys(req.types)),
            entity_ids=entity_ids,
            t_valid_from=after.timestamp() if after else None,
            t_valid_to=before.timestamp() if before else None,
            valid_at=as_of.timestamp() if as_of else None,
            only_valid=not (req.include_invalidated or as_of is not None),
            agent_id=req.agent_id,
        )
        period = when(req.query, (as_of or now).astimezone(
            offset_of(req.as_of) or self.settings.time_zone))  # fmt: skip
        return _Query(
            req=req,
            namespace=namespace,
            now=now,
            sight=sight,
            spellings=spellings,
            flt=flt,
            unknown=unknown,
            strategy=STRATEGY_WEIGHTS[req.strategy],
            period=period,
            terms=Terms.of(
                req.query,
                period,
                filters_given(flt),
                req.entities if flt.entity_ids else (),
                *self._known(req.query, spellings, flt, period),
            ),
            params=self.settings.staleness.for_namespace(namespace),
            prefetch=max(self.settings.prefetch, 30, req.limit * 4),
            pool=max(self.settings.rerank_pool, POOL),
            asks=asked.asked_kinds(req.query),
            show_invalidated=req.include_invalidated or as_of is not None,
        )

    def _known(
        self, query: str, spellings: Sequence[Spelling], flt: VectorFilter, period: Period | None
    ) -> tuple[list[asked.Subject], bool, frozenset[str]]:
        """What the store knows of the things the question names: the entities it spells
        (:func:`ferrex.read.judgement.subjects_named`), and whether it names an identifier
        no memory the filter admits holds (:func:`ferrex.read.judgement.unknown_identifiers`:
        one BM25 look-up of the identifier alone, one point, per identifier asked)."""
        backend, name = self.projections.backend, self.projections.live.memories

        def held(identifier: str) -> bool:
            sparse = SparseVector((token_index(identifier),), (1.0,))
            return bool(backend.query_sparse(name, sparse, flt, 1))

        unknown = unknown_identifiers(query, spellings, held, period)
        return subjects_named(query, spellings), bool(unknown), plain_compounds(query, spellings)

    def _fused(
        self, q: _Query, legs: dict[str, Leg], mode: Legs
    ) -> tuple[list[tuple[str, float]], dict[str, str], dict[str, list[str]]]:
        """The legs fused into one ranking of memory ids (a single leg: its own scores),
        with the strategy's weights; and, when the entity graph leg ran (added to ``legs``),
        the entities the query names and what reached each memory."""
        if mode != "hybrid":
            return [(mid, hit.score) for mid, hit in legs[mode].best.items()], {}, {}
        s, strategy = self.settings, q.strategy
        if strategy.dense is None:  # a strategy's own share is what it asks for
            sure = bm25_confidence([h.score for h in legs["bm25"].best.values()])
            share = adaptive_dense_share(s.dense_weight, sure, s.dense_adapt)
            if s.dense_lift > 0 and legs["bm25"].best:
                share = lifted_dense_share(share, self._held(q, legs["bm25"]), s.dense_lift)
        else:
            share = strategy.dense
        parts, weights = [legs["dense"], legs["bm25"]], [share, 1.0 - share]
        inside, inside_weights = period_parts(legs, share, s.period_weight)
        named: dict[str, str] = {}
        via: dict[str, list[str]] = {}
        graph_share = s.graph_weight if strategy.graph is None else strategy.graph
        if graph_share > 0:
            named = named_entities(q.req.query, q.spellings)
            if named:
                legs["graph"], via = graph_leg(
                    self.projections.read_model, named, q.flt, q.prefetch
                )
                parts.append(legs["graph"])
                weights.append(graph_share)
        if inside and q.terms.period_first:  # the period is the question: its memories first
            return (
                period_ranking(inside, inside_weights, s.period_weight, parts, weights),
                named,
                via,
            )
        return fuse(parts + inside, weights + inside_weights), named, via

    def _held(self, q: _Query, bm25: Leg) -> float:
        """The share of the question's terms the BM25 leg's best memory holds (1 for a
        question without terms of its own: "what changed last week?" lifts nothing)."""
        if not q.terms.tokens:
            return 1.0
        found = self.projections.read_model.memories(memory_ids=[next(iter(bm25.best))])
        if not found:
            return 1.0
        memory = found[0]
        return relevance.coverage(q.terms.tokens, tokens(memory_text(memory.type, memory.body())))

    def _admit(self, q: _Query, legs: dict[str, Leg], mode: Legs) -> list[Candidate]:
        """The best ``pool`` of the fused ranking that the read model holds, with the
        episode context they lend and the neighbours that join by it, as candidates; then
        the next ``limit`` of the ranking, marked ``deep`` (they go after the pool)."""
        ranking, named, via = self._fused(q, legs, mode)
        rm = self.projections.read_model
        wanted = ranking[: q.pool + q.req.limit]
        memories = {m.memory_id: m for m in rm.memories(memory_ids=[mid for mid, _ in wanted])}
        fused = [(mid, score) for mid, score in ranking[: q.pool] if mid in memories]
        lent: dict[str, tuple[str, float]] = {}
        if self.settings.lends_context:
            fused, lent = with_context(rm, self.settings, fused, memories, q.flt)
            if q.terms.period_first:  # the period's memories stay first after the loans
                fused = in_period_first(fused, legs)
            fused = fused[: q.pool]
        pooled = {mid for mid, _ in fused}
        deep = [(mid, score) for mid, score in ranking[q.pool : q.pool + q.req.limit]
                if mid in memories and mid not in pooled]  # fmt: skip
        empty = Leg({}, 0.0)
        dense, bm25, graph = (legs.get(name, empty).best for name in ("dense", "bm25", "graph"))
        dense_ranks, sparse_ranks = _ranks(dense), _ranks(bm25)
        candidates = []
        for (mid, score), beyond in [*((f, False) for f in fused), *((f, True) for f in deep)]:
            memory = memories[mid]
            candidates.append(Candidate(
                memory, score, dense_ranks.get(mid), sparse_ranks.get(mid),
                _hit_score(dense.get(mid)), _hit_score(bm25.get(mid)),
                _hit_score(graph.get(mid)), tuple(via.get(mid, ())),
                tuple(sorted(named[e] for e in memory.entity_ids if e in named)),
                lent.get(mid), deep=beyond,
            ))  # fmt: skip
        return candidates

    def _reranked(self, q: _Query, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates in the reranker's order, each with its rerank score (the first
        ``rerank_pool``); unchanged without a ready reranker."""
        if self.reranker.state != "ready":
            return candidates
        texts = [memory_text(c.memory.type, c.memory.body()) for c in candidates]
        fused = [c.fused for c in candidates]
        order = self.reranker.rerank_top(q.req.query, texts, self.settings.rerank_pool, fused)
        return [replace(candidates[i], rerank=score) for i, score in order]

    def _scored(
        self, q: _Query, candidates: Sequence[Candidate]
    ) -> tuple[list[Candidate], dict[str, int]]:
        """The candidates shown, boosted and in score order (ties by id); and how many were
        held back, by reason: expired, superseded (unless asked for), stale (unless asked)."""
        hidden: dict[str, int] = {}
        kept: list[Candidate] = []
        for candidate in candidates:
            memory = candidate.memory
            if not unexpired(memory, q.sight.now):
                hidden["expired"] = hidden.get("expired", 0) + 1
                continue
            state = staleness(freshness_input(memory), q.now.timestamp(), q.params)
            why = self._held_back(q, state.label)
            if why is not None:
                hidden[why] = hidden.get(why, 0) + 1
                continue
            kept.append(self._boosted(q, candidate, state.components))
        kept.sort(key=lambda c: (c.deep, -c.score, c.memory_id))
        return kept, hidden

    def _held_back(self, q: _Query, label: str) -> str | None:
        """Why a memory of this staleness label is not shown (None: it is)."""
        if label == "superseded" and not q.show_invalidated:
            return "superseded"
        if label == "stale" and not q.req.include_stale:
            return "stale"
        return None

    def _boosted(
        self, q: _Query, candidate: Candidate, components: Mapping[str, float]
    ) -> Candidate:
        """The candidate with its boosts and final score: the strategy's recency boost, the
        date boost when its event time is in the period the question names, and the
        importance factor (``ferrex/rules/lifecycle.py``: exactly 1 at the default 0.5)."""
        memory = candidate.memory
        age = q.now.timestamp() - memory.t_valid
        boost = 1.0 + q.strategy.recency * (recency_boost(memory.type, age) - 1.0)
        in_period = q.period is not None and q.period.holds(memory.t_valid)
        if in_period:
            boost *= 1.0 + self.settings.date_boost
        if q.asks and self.settings.form_boost > 0:
            text = memory_text(memory.type, memory.body())
            if asked.answers_form(
                q.asks, asked.stated_kinds(text, memory.predicate, memory.object)
            ):
                boost *= 1.0 + self.settings.form_boost
        weight = importance_factor(memory.importance, self.settings.importance_weight)
        base = candidate.fused if candidate.rerank is None else candidate.rerank
        lexical = None if candidate.bm25 is None else boosted(candidate.bm25, boost * weight)
        return replace(
            candidate,
            boost=boost,
            importance=weight,
            in_period=in_period,
            staleness=components,
            score=boosted(base, boost * weight),
            lexical=lexical,
        )

    def _ordered(
        self, q: _Query, mode: Legs, legs: Mapping[str, Leg], scored: list[Candidate]
    ) -> list[Candidate]:
        """The final order: a question that asks for a period and nothing else ("what
        happened last week?") has that period's memories first, in score order, and no
        words for the guard; otherwise the top guard, where it applies."""
        if q.terms.period_first:
            return sorted(scored, key=lambda c: (c.deep, not c.in_period))
        lexical = [(c.lexical, c.memory_id) for c in scored if c.lexical is not None and not c.deep]
        if mode == "hybrid" and self.settings.top_guard and q.strategy.guard and lexical:
            return self._guarded(q.terms, legs, scored, lexical)
        return scored

    def _guarded(
        self,
        terms: Terms,
        legs: Mapping[str, Leg],
        scored: list[Candidate],
        lexical: Sequence[tuple[float, str]],
    ) -> list[Candidate]:
        """The top guard: the BM25 leg's best candidate (by its own score after the same
        boosts) takes the first place unless the fused best is more relevant than it (the
        calibrated relevance of :mod:`ferrex.rules.relevance`, fitted on other data than
        the benchmarks): a paraphrase the dense leg is sure of keeps it."""
        first = min(lexical, key=lambda item: (-item[0], item[1]))[1]
        if scored[0].memory_id == first:
            return scored
        dense = legs.get(COSINES, legs.get("dense"))
        fused_best = relevance_of(terms, scored[0].memory, dense)
        challenger = next(c for c in scored if c.memory_id == first)
        if relevance_of(terms, challenger.memory, dense) < fused_best:
            return scored
        guarded = keep_top(scored, lambda c: c.memory_id, first)
        guarded[0] = replace(guarded[0], top_guard=True)  # first by the guard, not its score
        return guarded

    # --- Relevance (ferrex/rules/relevance.py): absolute evidence → relevance, label, cut ---

    def _flagged(self, kept: Sequence[tuple[Candidate, Judgement]]) -> dict[str, set[str]]:
        """Of the facts judged, each one's possible conflicts among the others (both seen by
        the caller, being results): the pairs :func:`beside_answers` reads."""
        ids = {c.memory.memory_id for c, _ in kept if c.memory.type == "semantic"}
        if len(ids) < 2:
            return {}
        found: dict[str, set[str]] = {}
        for c in self.projections.read_model.possible_conflicts(sorted(ids)):
            if c.memory_id in ids and c.other_id in ids:
                found.setdefault(c.memory_id, set()).add(c.other_id)
        return found

    def _judged(
        self,
        req: RecallRequest,
        terms: Terms,
        legs: Mapping[str, Leg],
        scored: Sequence[Candidate],
        hidden: dict[str, int],
    ) -> list[tuple[Candidate, Judgement]]:
        """Each candidate with its relevance, in order, at most ``req.limit`` of them.

        An explicit ``min_relevance`` drops those below it (counted in
        ``hidden["irrelevant"]``; at 0 nothing is dropped). Without one, the first
        ``req.limit`` are trimmed (:func:`ferrex.rules.relevance.trim`): what is left out
        is counted in ``hidden["irrelevant"]`` too, and ``min_relevance: 0`` shows it.
        With ``recall.label_order``, the first :data:`ORDER_WINDOW` are judged whatever the
        limit and those labelled ``strong`` go first among them."""
        dense = legs.get(COSINES, legs.get("dense"))
        cut = req.min_relevance
        ordered = self.settings.label_order
        # The window is judged whole whatever the limit, so the first five are the same at
        # every limit.
        judge = max(req.limit, ORDER_WINDOW) if ordered else req.limit
        kept: list[tuple[Candidate, Judgement]] = []
        for item in scored:
            if (cut is None or cut <= 0) and len(kept) >= judge:
                break
            evidence = evidence_of(terms, item.memory, dense, item, legs.get("bm25"))
            value = relevance.DEFAULT_MODEL.relevance(evidence)
            if cut is not None and value < cut:
                hidden["irrelevant"] = hidden.get("irrelevant", 0) + 1
                continue
            judgement = Judgement(value, relevance.DEFAULT_MODEL.label(value), evidence)
            kept.append((item, judgement))
        kept = beside_answers(kept, self._flagged(kept))
        if ordered:
            window = sorted(kept[:ORDER_WINDOW], key=lambda k: _TIERS[k[1].label])
            kept = [*window, *kept[ORDER_WINDOW:]]
            if cut is None or cut <= 0:
                kept = kept[: req.limit]
        if cut is None:
            keep = relevance.trim([j.value for _, j in kept])
            if len(keep) < len(kept):
                hidden["irrelevant"] = hidden.get("irrelevant", 0) + len(kept) - len(keep)
            kept = [kept[i] for i in keep]
        return kept

    def _answer(
        self,
        q: _Query,
        judged: Sequence[tuple[Candidate, Judgement]],
        hidden: dict[str, int],
        degraded: str | None,
    ) -> RecallResult:
        """The first ``limit`` judged candidates as results (each explained only when the
        caller asked), counted as accesses unless the caller only looks."""
        req = q.req
        top = judged[: req.limit]
        results: list[RecallHit] = []
        for candidate, judgement in top:
            result = self._result(candidate.memory, candidate.score, q.now, q.params, q.sight)
            if req.explain:
                result["explain"] = candidate.explain(req.legs, req.strategy, q.period)
            results.append({**result, **judgement.fields(req.explain)})
        if req.count_access:
            self.access.record([c.memory_id for c, _ in top], q.now)
        verdict = relevance.nothing_relevant([j.label for _, j in top])
        return RecallResult(
            req.query,
            q.namespace,
            results,
            hidden,
            q.unknown,
            self.reranker.status,
            verdict,
            degraded=degraded,
        )

    def _legs(
        self, req: RecallRequest, flt: VectorFilter, n: int, period: Period | None = None
    ) -> tuple[dict[str, Leg], str | None]:
        """Each leg's best ``n`` points, as a ranking of memories; and, when the embeddings
        server cannot be reached, the BM25 leg alone and a note saying so. A hybrid recall
        whose question names a ``period`` also asks both legs inside it
        (:mod:`ferrex.read.period`)."""
        degraded: str | None = None
        scale = self.settings.prefetch  # the floor's rank, whatever the depth asked for
        backend = self.projections.backend
        name = self.projections.live.memories
        legs: dict[str, Leg] = {}
        if req.legs in ("hybrid", "dense"):
            try:
                legs |= dense_legs(backend, name, self.queries, req.query, flt, n, scale)
            except ServerDown as exc:
                log.warning("recall without the dense leg: %s", exc.message)
                degraded = (
                    f"{exc.message}: these results come from keyword (BM25) matching alone; "
                    "recall by meaning returns when the server answers"
                )
        if req.legs in ("hybrid", "bm25") or "dense" not in legs:
            sparse = self._bm25_query(req.query)
            legs["bm25"] = Leg.of(backend.query_sparse(name, sparse, flt, n), n, scale)
            if legs["bm25"].flat and "dense" in legs:
                # Its words hold alike in more memories than it returned: it cannot tell
                # them apart, and a subset the engine chose (a deeper answer, another) must
                # not outrank the rest. Meaning ranks them.
                legs["bm25"] = Leg({}, 0.0)
        hybrid = req.legs == "hybrid" and "dense" in legs  # the period legs are fused
        if period is not None and self.settings.period_weight > 0 and hybrid:
            legs |= period_legs(backend, name, flt, period, req.query, self._vector,
                                self._bm25_query, n, scale)  # fmt: skip
        return legs, degraded

    def _vector(self, text: str) -> list[float]:
        return [float(x) for x in self.queries.searched(text)]

    def _bm25_query(self, text: str) -> SparseVector:
        """The BM25 query of ``text``, asking at ``spelling_weight`` for other spellings of
        its words too."""
        weight = self.settings.spelling_weight
        spellings = query_spellings(text) if weight > 0 else []
        query = self.bm25.encode_query(text, spellings, weight)
        return SparseVector(query.indices, query.values)

    def _result(
        self, memory: Memory, score: float, now: datetime, params: StalenessParams, sight: Sight
    ) -> RecallHit:
        """A result's document, without its explain and relevance fields; a fact's with its
        marks (:mod:`ferrex.read.marks`)."""
        rm = self.projections.read_model
        names = rm.entity_names(memory.entity_ids)
        result: RecallHit = {
            "id": memory.memory_id,
            "type": memory.type,
            "score": round(score, 6),
            "entities": [names.get(e, e) for e in memory.entity_ids],
            "event_time": rfc3339(memory.t_valid),
            "freshness": freshness(freshness_input(memory), now.timestamp(), params),
        }
        if memory.type == "semantic":
            result.update(
                {"subject": memory.subject, "predicate": memory.predicate, "object": memory.object}
            )
            if memory.content:
                result["content"] = memory.content
            contradicts, maybe = contradicted(rm, memory, sight, self.queries)
            result["contradiction"] = bool(contradicts)
            if contradicts:
                result["contradicts"] = contradicts
            possible = sorted({*possible_conflict(rm, memory, sight), *maybe})
            if possible:
                result["possible_conflict"] = possible
        elif memory.type == "procedural":
            result.update(
                {
                    "name": memory.procedure_name,
                    "version": memory.procedure_version,
                    "conditions": list(memory.conditions),
                    "steps": list(memory.steps),
                }
            )
        else:
            result["content"] = memory.content
            folds = rm.recall.fold_counts([memory.memory_id])
            if folds:  # a consolidation summary: what it stands for, and where they are
                result["summary_of"] = summary_of(memory.memory_id, folds[memory.memory_id])
        if memory.t_invalid is not None:
            result["invalidated_at"] = rfc3339(memory.t_invalid)
            result["superseded_by"] = memory.superseded_by
        return {**result, **marks_doc(memory.importance, memory.pinned, memory.expires_at)}


@dataclass(frozen=True, slots=True)
class _Query:
    """A recall request as the stages read it (:meth:`Reader._query`)."""

    req: RecallRequest
    namespace: str
    now: datetime
    sight: Sight
    spellings: list[Spelling]
    """The entity spellings the caller sees in the namespace, read once for the entity
    filter, the subjects the question names and the entity graph leg
    (:mod:`ferrex.read.names`)."""
    flt: VectorFilter
    """What every leg and every joining neighbour must pass."""
    unknown: list[str]
    """The entity names the request gives that name no entity the caller sees."""
    strategy: Weights
    period: Period | None
    """The period the question names ("last week"), if any."""
    terms: Terms
    params: StalenessParams
    prefetch: int
    """How many points each leg returns."""
    pool: int
    """How many fused candidates go on to the later stages."""
    show_invalidated: bool
    """Superseded memories are shown (``include_invalidated``, or an ``as_of`` view)."""
    asks: frozenset[str]
    """The kinds of value the question's form asks for (:func:`ferrex.rules.asked.asked_kinds`:
    *where* a host, *what version* a version); empty for most questions."""


def _ranks(ranking: dict[str, Hit]) -> dict[str, int]:
    return {memory_id: rank for rank, memory_id in enumerate(ranking, start=1)}


def _hit_score(hit: Hit | None) -> float | None:
    return None if hit is None else hit.score


#: How many of the first results ``recall.label_order`` orders by their label: the answers
#: (``strong``) first. Weak and none keep their order: putting weak above none lowered
#: SciFact's nDCG@10 (.721 → .720).
ORDER_WINDOW: Final = 5
_TIERS: Final = {"strong": 0, "weak": 1, "none": 1}
