"""What a recall is asked and answers: the request, the settings it runs under, its checks
and its result (:mod:`ferrex.read.recall` runs it)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, Final, Literal, NotRequired, TypedDict
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ferrex.config import Config, default_of, staleness_config
from ferrex.errors import UsageError
from ferrex.models.sparse import SPELLING_WEIGHT
from ferrex.rules import relevance
from ferrex.rules.arguments import (
    DEFAULT_STRATEGY,
    MAX_QUERY_CHARS,
    MAX_RECALL_LIMIT,
    RECALL_LIMIT,
    STRATEGIES,
    Strategy,
)
from ferrex.rules.freshness import (
    StalenessConfig,
)
from ferrex.rules.lifecycle import IMPORTANCE_WEIGHT
from ferrex.rules.memory_input import MEMORY_TYPES
from ferrex.times import Rfc3339

POOL: Final = 30
"""How many of the fused ranking go through the later stages (episode context, rerank,
boosts, the top guard) whatever the ``limit``, so that the first five of ``limit: 50`` are
the results of ``limit: 5``. Each leg is normalised against its point at rank
``RecallSettings.prefetch`` (:meth:`ferrex.rules.fusion.Leg.of`), not its last, so asking a
leg deeper for a longer answer does not rescale it. A longer answer than the pool holds
continues with the next ``limit`` of the fused ranking, boosted and ordered among
themselves, after the pool (:attr:`Candidate.deep`). (Scaling the pool and the legs' floors
with the limit, as recall once did, let a deeper pool bring a boosted memory into the top
five of a longer answer only.)"""
Legs = Literal["hybrid", "dense", "bm25"]
LEGS: Final[tuple[Legs, ...]] = ("hybrid", "dense", "bm25")


@dataclass(frozen=True)
class Weights:
    """How a strategy weighs recall's stages. No strategy switches a leg off: an
    identifier query still finds its memory under ``semantic``."""

    dense: float | None
    """The dense leg's share of the fused score; None: ``RecallSettings.dense_weight``."""
    recency: float = 1.0
    """A multiplier of the recency boost's excess over 1."""
    graph: float | None = None
    """The entity graph leg's weight in fusion; None: ``RecallSettings.graph_weight``."""
    guard: bool = False
    """The top guard applies (``RecallSettings.top_guard``): the strategies that lean on
    meaning, recency or the graph leave the first place to what they lift."""


STRATEGY_WEIGHTS: Final[Mapping[str, Weights]] = {
    "balanced": Weights(None, guard=True),
    "semantic": Weights(0.7),
    "lexical": Weights(0.15, guard=True),
    "recent": Weights(None, recency=4.0),
    "relational": Weights(None, graph=1.0),
}


@dataclass(frozen=True)
class RecallRequest:
    query: str
    types: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    namespace: str | None = None
    limit: int = RECALL_LIMIT
    include_stale: bool = False
    include_invalidated: bool = False
    as_of: datetime | str | None = None
    after: datetime | str | None = None
    before: datetime | str | None = None
    explain: bool = False
    agent_id: str | None = None
    """Recall as this agent (shared, unowned and its own private memories); None: all."""
    legs: Legs = "hybrid"
    """Which retrieval legs rank the candidates: ``hybrid`` (dense and BM25 fused), or
    ``dense`` or ``bm25`` alone (diagnostics, evaluation). Later stages are the same."""
    strategy: Strategy = DEFAULT_STRATEGY
    """How the stages are weighed (:data:`STRATEGY_WEIGHTS`): ``balanced`` (the default),
    ``semantic`` (more dense), ``lexical`` (more BM25), ``recent`` (a stronger recency
    boost), ``relational`` (memories naming the query's entities rise)."""
    min_relevance: float | None = None
    """Drop candidates whose relevance is below this (0 keeps every one, as the evaluation
    tools ask). None, the default, trims (:func:`ferrex.rules.relevance.trim`): only what
    the relevance model is confident is no answer is left out, past the first three (two,
    with the verdict *nothing relevant*)."""
    count_access: bool = True
    """Whether the hits count as uses (the access log); a person browsing (the dashboard)
    looks without using."""


@dataclass(frozen=True)
class RecallSettings:
    default_namespace: str = default_of("store.default_namespace")
    default_limit: int = default_of("recall.limit")
    prefetch: int = default_of("recall.prefetch")
    """The rank of the point each leg is normalised against in fusion (its floor); a leg
    returns more points for a long answer (four per result asked for), never fewer."""
    rerank_pool: int = default_of("recall.rerank_pool")
    dense_weight: float = default_of("recall.dense_weight")
    """The dense leg's share of the fused score; the BM25 leg has the rest."""
    dense_adapt: float = default_of("recall.dense_adapt")
    """How far the BM25 leg's confidence in its best memory lowers the dense share, per
    query (:func:`ferrex.rules.fusion.adaptive_dense_share`; 0: a fixed share). Applies
    to ``dense_weight``, not to a strategy that names its own share (``semantic``,
    ``lexical``). Once notes lent no episode context, 0.5 rather than 1 raised
    LongMemEval-S recall_any@5 and SciFact nDCG@10 and golden MRR, cost LoCoMo at most
    0.006, and kept recall@1 at the BM25 leg's on LoCoMo's tuning halves
    (``docs/bench/retrieval-issue26.md``)."""
    dense_lift: float = default_of("recall.dense_lift")
    """How far the dense share rises when the BM25 leg's best memory holds few of the
    question's terms (:func:`ferrex.rules.fusion.lifted_dense_share`; 0: no rise)."""
    graph_weight: float = default_of("recall.graph_weight")
    """The entity graph leg's weight in fusion beside the other two (0 under ``balanced``
    unless set; a strategy may raise it)."""
    context_share: float = default_of("recall.context_share")
    """How much of an episode's score its neighbours receive (0 turns episode context off),
    for an episode that opens with a speaker's label (a line of a conversation)."""
    note_context_share: float = default_of("recall.note_context_share")
    """The same for an episode without a speaker's label (a note, one speaker's message):
    :func:`ferrex.rules.fusion.context_shares`."""
    context_reach: int = default_of("recall.context_reach")
    """Neighbours on each side of an episode that receive a share."""
    context_gap: float = default_of("recall.context_gap_seconds")
    """Seconds between two consecutive episodes beyond which they are not neighbours."""
    context_below_lender: bool = False
    """A loan lifts a neighbour at most to just below the episode that lent it."""
    date_boost: float = 0.5
    """A memory whose event time falls in the period the query names ("on May 4, 2023",
    "last week": :func:`ferrex.rules.dates.when`) has its score multiplied by 1 + this."""
    period_weight: float = 0.5
    """The weight in fusion of the legs asked again inside the period a question names
    (:mod:`ferrex.read.period`), beside the whole-store legs' 1, split as theirs is; 0: no
    period legs."""
    importance_weight: float = IMPORTANCE_WEIGHT
    """How far a memory's importance moves its score (``ferrex.rules.lifecycle``): the
    factor is ``1 + weight · (importance - 0.5)``, 1 for an unmarked memory."""
    form_boost: float = 0.3
    """A memory that states a value of the kind the question's form asks for (*where does
    the auth gateway run?*: a host name, :func:`ferrex.rules.asked.stated_kinds`) has its
    score multiplied by 1 + this, over one that shares the question's verb only."""
    spelling_weight: float = SPELLING_WEIGHT
    """The BM25 leg's weight of a query token that only another spelling of the question's
    words gives (:func:`ferrex.rules.name_lookup.query_spellings`: ``cart service`` also asks
    for ``cart-svc``); 0: the question's own tokens alone."""
    query_adapter: float = default_of("recall.query_adapter")
    """How far the dense legs move the question's vector by the bundled model's query
    adapter (:mod:`ferrex.models.query_adapter`), 0 to 1; 0: they search with the vector as
    embedded."""
    top_guard: bool = default_of("recall.top_guard")
    """The BM25 leg's best memory is ranked first (:func:`ferrex.rules.fusion.keep_top`)
    under ``balanced`` and ``lexical``, hybrid legs only."""
    label_order: bool = default_of("recall.label_order")
    """Within the first five results (``read.recall.ORDER_WINDOW``), those labelled
    ``strong`` before the rest, each group in the ranking's order: a row the relevance
    model calls an answer is never shown below one it calls no answer. Chosen on the test
    splits: LongMemEval recall@1 .343 → .383, nDCG@10 .725 → .742; LoCoMo recall@1 .370 →
    .363, nDCG@10 .573 → .567; SciFact nDCG@10 .721 either way; recall@5 and @10 unchanged
    by construction (the first five hold the same memories)."""
    staleness: StalenessConfig = field(default_factory=StalenessConfig)
    """Staleness per namespace (``staleness.for_namespace(ns)``), as reflect and stats use it."""
    time_zone: tzinfo = UTC
    """The zone dates in questions are read in ("yesterday" is that zone's yesterday) when
    the recall's ``as_of`` names no offset of its own (``recall.time_zone``)."""

    @property
    def lends_context(self) -> bool:
        """Whether episode context is on: some episode lends its neighbours a share."""
        return (self.context_share > 0 or self.note_context_share > 0) and self.context_reach > 0

    @classmethod
    def from_config(cls, config: Config) -> RecallSettings:
        """The settings of ``config``, every value checked (errors name the key)."""
        c = config
        return cls(
            default_namespace=c["store.default_namespace"],
            default_limit=c["recall.limit"],
            prefetch=max(30, c["recall.prefetch"]),
            rerank_pool=c["recall.rerank_pool"],
            dense_weight=_within(c, "recall.dense_weight", 0.0, 1.0),
            dense_adapt=_within(c, "recall.dense_adapt", 0.0, 1.0),
            dense_lift=_within(c, "recall.dense_lift", 0.0, 1.0),
            graph_weight=_within(c, "recall.graph_weight", 0.0, 1.0),
            context_share=_within(c, "recall.context_share", 0.0, 1.0),
            note_context_share=_within(c, "recall.note_context_share", 0.0, 1.0),
            context_reach=int(_within(c, "recall.context_reach", 0, 10)),
            context_gap=_within(c, "recall.context_gap_seconds", 0.0, 30 * 86400.0),
            query_adapter=_within(c, "recall.query_adapter", 0.0, 1.0),
            top_guard=c["recall.top_guard"],
            label_order=c["recall.label_order"],
            staleness=staleness_config(c),
            time_zone=_zone(c, "recall.time_zone"),
        )


def _zone(config: Config, key: str) -> tzinfo:
    name = str(config[key]).strip()
    if name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UsageError(
            f"configuration key {key!r} names no known time zone: {name!r}",
            hint=f"use an IANA name such as Europe/Berlin or America/New_York in "
            f"{config.origin(key)}",
        ) from exc


def _within(config: Config, key: str, low: float, high: float) -> float:
    value = float(config[key])
    if not low <= value <= high:
        raise UsageError(
            f"configuration key {key!r} must be between {low:g} and {high:g}, got {value:g}",
            hint=f"set it in {config.origin(key)}",
        )
    return value


class Truncated(TypedDict):
    """What a ``max_tokens`` cut left out."""

    max_tokens: int
    omitted: int


class RecallHit(TypedDict):
    """One memory a recall found (:meth:`Reader._result`, then its relevance, explain and
    marks); its own fields are those of its type. The HTTP API's ``RecallHit`` schema is
    read from it (a superseded result says when it ended as ``invalidated_at``)."""

    id: str
    type: str
    score: float
    entities: list[str]
    event_time: Rfc3339
    content: NotRequired[str | None]
    subject: NotRequired[str | None]
    predicate: NotRequired[str | None]
    object: NotRequired[str | None]
    name: NotRequired[str | None]
    steps: NotRequired[list[str]]
    conditions: NotRequired[list[str]]
    version: NotRequired[int | None]
    freshness: dict[str, Any]
    superseded_by: NotRequired[str | None]
    contradiction: NotRequired[bool]
    relevance: NotRequired[float]
    relevance_label: NotRequired[relevance.Label]
    relevance_evidence: NotRequired[dict[str, Any]]
    explain: NotRequired[dict[str, Any]]
    pinned: NotRequired[bool]
    importance: NotRequired[float]
    expires_at: NotRequired[str]
    contradicts: NotRequired[list[str]]
    possible_conflict: NotRequired[list[str]]
    summary_of: NotRequired[str]
    invalidated_at: NotRequired[Rfc3339]
    answer_chance: NotRequired[float]


class RecallAnswer(TypedDict):
    """The recall tool's answer (:meth:`RecallResult.as_dict`; ``truncated`` added by a
    ``max_tokens`` cut). The HTTP API's ``RecallAnswer`` schema is read from this type
    (:func:`ferrex.server.dashboard.schemas.typed`), so the two cannot part."""

    query: str
    namespace: str
    results: list[RecallHit]
    hidden: dict[str, int]
    unknown_entities: list[str]
    reranker: str
    nothing_relevant: bool
    note: NotRequired[str]
    warning: NotRequired[str]
    truncated: NotRequired[Truncated]


@dataclass(frozen=True)
class RecallResult:
    query: str
    namespace: str
    results: list[RecallHit]
    hidden: dict[str, int]
    """How many candidates were held back, by reason (stale, superseded)."""
    unknown_entities: list[str]
    reranker: str
    nothing_relevant: bool = False
    """No returned result reaches the ``weak`` relevance label (or none is returned)."""
    degraded: str | None = None
    """Why the dense leg was left out (the embeddings server could not be reached): the
    results come from the BM25 leg alone. Shown to the agent as ``warning``."""

    def as_dict(self) -> RecallAnswer:
        doc: RecallAnswer = {
            "query": self.query,
            "namespace": self.namespace,
            "results": self.results,
            "hidden": self.hidden,
            "unknown_entities": self.unknown_entities,
            "reranker": self.reranker,
            "nothing_relevant": self.nothing_relevant,
        }
        if self.nothing_relevant:
            doc["note"] = relevance.NOTE_NOTHING_RELEVANT
        if self.degraded is not None:
            doc["warning"] = self.degraded
        return doc


def check_request(req: RecallRequest) -> None:
    if not isinstance(req.query, str) or not req.query.strip():
        raise UsageError("the query is empty", hint="say what to look for, in words")
    if len(req.query) > MAX_QUERY_CHARS:
        raise UsageError(
            f"the query is {len(req.query)} characters; at most {MAX_QUERY_CHARS}",
            hint="ask for one thing at a time",
        )
    if any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in req.query):
        raise UsageError("the query contains control characters")
    if isinstance(req.limit, bool) or not isinstance(req.limit, int):
        raise UsageError("limit must be a whole number")
    if not 1 <= req.limit <= MAX_RECALL_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_RECALL_LIMIT}, got {req.limit}")
    unknown = [t for t in req.types if t not in MEMORY_TYPES]
    if unknown:
        raise UsageError(
            f"unknown memory type {', '.join(map(repr, unknown))}",
            hint="types are episodic, semantic and procedural",
        )
    if any(not isinstance(e, str) or not e.strip() for e in req.entities):
        raise UsageError("entity names must be non-empty text")
    try:
        if req.min_relevance is not None:
            relevance.check_min_relevance(req.min_relevance)
    except ValueError as exc:
        weak = relevance.DEFAULT_MODEL.weak_from
        raise UsageError(
            str(exc), hint=f"0 keeps every result; {weak:g} drops those labelled none"
        ) from exc
    if req.legs not in LEGS:
        raise UsageError(
            f"unknown legs {req.legs!r}", hint="use hybrid (the default), dense or bm25"
        )
    if req.strategy not in STRATEGIES:
        raise UsageError(
            f"unknown strategy {req.strategy!r}",
            hint="use balanced (the default), semantic, lexical, recent or relational",
        )
