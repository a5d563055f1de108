"""The answers of ferrex's HTTP API as typed dictionaries (what ``/api/v1/openapi.json``
describes): the fields every answer of a kind has, and the optional ones as ``NotRequired``.
A server may add fields; they are there at run time, untyped."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

MemoryType = Literal["episodic", "semantic", "procedural"]
Visibility = Literal["private", "shared"]


class StoreAnswer(TypedDict):
    status: str
    id: str
    type: NotRequired[MemoryType]
    namespace: NotRequired[str]
    entities: NotRequired[list[Any]]
    superseded: NotRequired[list[str]]
    validated: NotRequired[list[str]]
    position: NotRequired[int]
    version: NotRequired[int]
    superseded_by: NotRequired[str]
    history_reason: NotRequired[str]
    recovered: NotRequired[bool]
    note: NotRequired[str]


class BatchItem(TypedDict):
    """The store answer of one item, or its ``error`` (a refused or invalid item)."""

    index: int
    status: NotRequired[str]
    id: NotRequired[str]
    type: NotRequired[MemoryType]
    error: NotRequired[dict[str, Any]]


class BatchAnswer(TypedDict):
    results: list[BatchItem]
    stored: int
    failed: int


class RecallHit(TypedDict):
    id: str
    type: MemoryType
    score: float
    entities: list[str]
    event_time: str
    content: NotRequired[str]
    subject: NotRequired[str]
    predicate: NotRequired[str]
    object: NotRequired[str]
    name: NotRequired[str]
    steps: NotRequired[list[str]]
    relevance: NotRequired[float]
    relevance_label: NotRequired[str]
    explain: NotRequired[dict[str, Any]]


class RecallAnswer(TypedDict):
    query: str
    namespace: str
    results: list[RecallHit]
    hidden: dict[str, int]
    unknown_entities: list[str]
    reranker: str
    nothing_relevant: bool
    note: NotRequired[str]
    warning: NotRequired[str]
    truncated: NotRequired[dict[str, int]]


class ConfirmAnswer(TypedDict):
    validated: list[str]
    not_found: list[str]
    marked: NotRequired[list[str]]
    position: NotRequired[int]


class ForgetAnswer(TypedDict):
    forgotten: list[str]
    not_found: list[str]
    dropped_entities: list[Any]
    position: NotRequired[int]


class Brief(TypedDict):
    id: str
    type: MemoryType
    event_time: str
    t_invalid: str | None
    created_at: str
    summary: str


class ListedMemory(Brief):
    namespace: str
    visibility: Visibility
    source: str | None
    superseded_by: str | None


class MemoryPage(TypedDict):
    memories: list[ListedMemory]
    next_cursor: str | None


class MemoryDetail(Brief):
    namespace: str
    visibility: Visibility
    entities: list[str]
    body: dict[str, Any]
    confidence: float
    access_count: int
    last_accessed: str | None
    last_validated: str | None
    history: list[dict[str, Any]]
    pinned: NotRequired[bool]
    importance: NotRequired[float]
    expires_at: NotRequired[str]


class MemoryVersion(TypedDict):
    id: str
    type: MemoryType
    summary: str
    t_valid: str
    t_invalid: str | None
    created_at: str
    superseded_by: str | None
    confidence: float
    access_count: int
    last_accessed: str | None
    last_validated: str | None
    position: int
    current: bool


class History(TypedDict):
    id: str
    versions: list[MemoryVersion]


class EntityNames(TypedDict):
    namespace: str
    prefix: str
    names: list[str]
    offset: int
    total: int


class Entity(TypedDict):
    namespace: str
    name: str
    aliases: list[dict[str, Any]]
    memories: list[Brief]
    offset: int
    more: bool
    graph: dict[str, Any]


class Stats(TypedDict):
    namespace: str
    total: int
    recent: list[dict[str, Any]]
    needs_attention: dict[str, int]
    expiring: int
    by_type: dict[str, int]
    staleness: NotRequired[dict[str, int]]
    entities: NotRequired[int]
    journal: NotRequired[dict[str, Any]]


class Reflect(TypedDict):
    namespace: str
    counts: dict[str, int]
    stale: list[dict[str, Any]]
    unvalidated: list[dict[str, Any]]
    contradictions: list[dict[str, Any]]
    possible_conflicts: list[dict[str, Any]]
    forget_candidates: list[dict[str, Any]]
    dormant_entities: list[dict[str, Any]]


class TagCount(TypedDict):
    value: str
    count: int


class TagCounts(TypedDict):
    key: str
    tags: list[TagCount]
    more: bool


class ChangedMemory(TypedDict):
    id: str
    change: Literal["stored", "superseded", "forgotten", "confirmed", "marked",
                    "consolidated", "unfolded"]  # fmt: skip


class ChangeEvent(TypedDict):
    """One record of the change stream: its journal position (the event's id)."""

    position: int
    recorded_at: str
    memories: list[ChangedMemory]
