"""The typed request of each tool call, and the one decoder of a call that arrives as JSON.

Every door to the tools builds one of these before :meth:`ferrex.server.service.Service.call`
runs it: the MCP tools and the HTTP API's POST routes from the arguments their strict models
checked (:mod:`ferrex.server.mcp_server`), the CLI and the hooks directly (checked by mypy),
and the owner's port (:mod:`ferrex.server.hub_port`) with :func:`decode` from the frame a
peer process sent. The frame carries :func:`encode`'s JSON object: the tool's own argument
names, so the hub's wire format is the tools' arguments as before.

What an agent may send (``StoreArgs``, ``RecallArgs`` and the other tools' requests) is
kept apart from what only ferrex itself sets: the HTTP API's request key and a capture's
import key beside a store (:class:`Store`), whether a recall counts as a use and the ids it
confirms (:class:`Recall`); the calls that are no tool (:class:`ReadResource`,
:class:`DashboardRead`, :class:`EntityCommand`, :class:`Consolidate`) are never an agent's.

:func:`decode` checks the JSON shape of what the service reads (a flag is a boolean, a list
of names a list of strings, a count a whole number) with the messages the service gave
before; the values are the service's and the core's to judge (a limit's range, a memory's
fields in :func:`ferrex.rules.memory_input.validate_store`, recall's in
:func:`ferrex.read.request.check_request`), whichever door a call came through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ferrex.errors import UsageError
from ferrex.rules.arguments import REFLECT_LIMIT, REQUEST_KEY_PREFIX, is_request_key
from ferrex.rules.spelling import did_you_mean

#: The tools an agent calls (the MCP tools, the HTTP API's writes and recall).
TOOLS = ("store", "recall", "confirm", "forget", "reflect", "stats")


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreArgs:
    """The store tool's arguments (None: not given; the memory's fields are checked by
    ``validate_store``, its defaults are ``StoreRequest``'s)."""

    type: str | None = None
    content: str | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    name: str | None = None
    steps: tuple[str, ...] | None = None
    conditions: tuple[str, ...] | None = None
    entities: tuple[str, ...] | None = None
    supersedes: str | None = None
    source: str | None = None
    confidence: float | None = None
    context: dict[str, Any] | None = None
    namespace: str | None = None
    valid_from: str | None = None
    visibility: str | None = None
    split_long: bool | None = None
    importance: float | None = None
    pinned: bool | None = None
    ttl: int | str | None = None
    multi_valued: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Store:
    tool: ClassVar[str] = "store"
    args: StoreArgs
    request_key: str | None = None
    """The HTTP API's Idempotency-Key (``REQUEST_KEY_PREFIX`` and a hash), journaled as the
    memory's import key."""
    import_key: str | None = None
    """A capture's import key (the hooks' transcript import): the same message again is a
    refused duplicate, as ``ferrex import`` makes it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallArgs:
    """The recall tool's arguments (``limit`` None: the configured default)."""

    query: str
    limit: int | None = None
    types: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    include_stale: bool = False
    include_invalidated: bool = False
    as_of: str | None = None
    after: str | None = None
    before: str | None = None
    max_tokens: int | None = None
    explain: bool = False
    namespace: str | None = None
    strategy: str | None = None
    min_relevance: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recall:
    tool: ClassVar[str] = "recall"
    args: RecallArgs
    count_access: bool = True
    """Whether the hits count as uses (the dashboard's searches are not)."""
    validate_ids: tuple[str, ...] = ()
    """Ids the recall confirms (the CLI's ``--validate``; the MCP tool has ``confirm``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Confirm:
    tool: ClassVar[str] = "confirm"
    ids: tuple[str, ...]
    pinned: bool | None = None
    importance: float | None = None
    differs_from: tuple[str, ...] = ()
    supersedes: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Forget:
    tool: ClassVar[str] = "forget"
    ids: tuple[str, ...]
    cascade: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Reflect:
    tool: ClassVar[str] = "reflect"
    limit: int = REFLECT_LIMIT
    namespace: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Stats:
    tool: ClassVar[str] = "stats"
    detailed: bool = False
    namespace: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResource:
    """A resource's read (``ferrex://stats`` and the others), routed like a tool."""

    tool: ClassVar[str] = "resource"
    uri: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardRead:
    """One of the web dashboard's reads: its view and parameters, which
    :func:`ferrex.server.dashboard.reads.answer` checks."""

    tool: ClassVar[str] = "dashboard"
    query: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityCommand:
    """``ferrex entity merge|split|differ``: a write."""

    tool: ClassVar[str] = "entity"
    action: str
    first: str
    second: str
    namespace: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Consolidate:
    """``ferrex consolidate``: fold (``dry_run``: only plan), undo one (``undo``) or up to
    ``limit`` (``undo_all``), or list the summaries (``list``, one with ``summary_id``)."""

    tool: ClassVar[str] = "consolidate"
    older_than_days: float | None = None
    namespace: str | None = None
    dry_run: bool = False
    max_groups: int | None = None
    undo: str | None = None
    undo_all: bool = False
    limit: int = 64
    list: bool = False
    summary_id: str | None = None


ToolRequest = (
    Store | Recall | Confirm | Forget | Reflect | Stats
    | ReadResource | DashboardRead | EntityCommand | Consolidate
)  # fmt: skip
"""A call the service runs."""

READ_ONLY = frozenset({"recall", "reflect", "stats", "resource", "dashboard"})
_STORE_FIELDS = frozenset(f.name for f in fields(StoreArgs)) - {"multi_valued"}
_LIST_FIELDS = frozenset({"steps", "conditions", "entities"})
#: The resources every client may list; ``memory/{id}`` and ``entity/{name}`` are templates.
RESOURCES = ("ferrex://stats", "ferrex://recent")
RESOURCE_TEMPLATES = ("ferrex://memory/{id}", "ferrex://entity/{name}")
RESOURCE_HINT = f"resources: {', '.join(RESOURCES + RESOURCE_TEMPLATES)}"


# -- the wire ----------------------------------------------------------------------------------


def encode(request: ToolRequest) -> dict[str, Any]:
    """The JSON object of a request's arguments, as :func:`decode` reads it (None and the
    internal fields' defaults left out)."""
    match request:
        case Store():
            keys = {"request_key": request.request_key, "import_key": request.import_key}
            return _given({**_plain(request.args), **keys})
        case Recall():
            doc = _plain(request.args)
            if not request.count_access:
                doc["count_access"] = False
            if request.validate_ids:
                doc["validate_ids"] = list(request.validate_ids)
            return _given(doc)
        case DashboardRead():
            return dict(request.query)
        case _:
            return _given(_plain(request))


def _plain(value: ToolRequest | StoreArgs | RecallArgs) -> dict[str, Any]:
    return {f.name: _json(getattr(value, f.name)) for f in fields(value)}


def _json(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def _given(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if v is not None}


def decode(tool: str, args: object) -> ToolRequest:
    """The request a JSON call names (a peer process's frame; tests), or ``invalid_input``
    naming the first argument of the wrong shape. An argument given as null is not given."""
    if tool not in _DECODERS:
        raise UsageError(f"unknown tool {tool!r}", hint=f"tools: {', '.join(TOOLS)}")
    if not isinstance(args, Mapping):
        raise UsageError("tool arguments must be a JSON object")
    return _DECODERS[tool]({k: v for k, v in args.items() if v is not None})


def _store(args: dict[str, Any]) -> Store:
    multi_valued = _flag(args.pop("multi_valued", False), "multi_valued")
    request_key = args.pop("request_key", None)
    if request_key is not None and not is_request_key(request_key):
        raise UsageError(f"request_key must start with {REQUEST_KEY_PREFIX!r}")
    import_key = args.pop("import_key", None)
    if import_key is not None and (
        not isinstance(import_key, str) or is_request_key(import_key) or request_key
    ):
        raise UsageError("import_key must be a string, not a request key")
    unknown = sorted(set(args) - _STORE_FIELDS)
    if unknown:
        known = sorted(_STORE_FIELDS | {"multi_valued"})
        raise UsageError(
            f"unknown argument {unknown[0]!r} for store{did_you_mean(unknown[0], known)}",
            hint=f"store takes: {', '.join(known)}",
        )
    given: dict[str, Any] = {}
    for key, value in args.items():
        if key in _LIST_FIELDS:
            value = _texts(value, key)
        elif key in ("split_long", "pinned"):
            value = _flag(value, key)
        given[key] = value
    # The memory's other fields go on as sent: validate_store checks them (their kind too).
    return Store(args=StoreArgs(**given, multi_valued=multi_valued),
                 request_key=request_key, import_key=import_key)  # fmt: skip


def _recall(args: dict[str, Any]) -> Recall:
    query = args.get("query")
    if not isinstance(query, str):
        raise UsageError("query is required: the words to look for")
    types = _texts(args.get("types", []), "types")
    entities = _texts(args.get("entities", []), "entities")
    namespace = optional_text(args.get("namespace"), "namespace")
    include_stale = _flag(args.get("include_stale", False), "include_stale")
    include_invalidated = _flag(args.get("include_invalidated", False), "include_invalidated")
    as_of = optional_text(args.get("as_of"), "as_of")
    after = optional_text(args.get("after"), "after")
    before = optional_text(args.get("before"), "before")
    explain = _flag(args.get("explain", False), "explain")
    strategy = optional_text(args.get("strategy"), "strategy")
    count_access = _flag(args.get("count_access", True), "count_access")
    max_tokens = args.get("max_tokens")
    if max_tokens is not None:
        max_tokens = whole(max_tokens, "max_tokens")
    validate_ids = _texts(args.get("validate_ids", []), "validate_ids")
    # limit and min_relevance go on as sent: check_request judges them (their kind too).
    recall = RecallArgs(
        query=query, limit=args.get("limit"), types=types, entities=entities,
        include_stale=include_stale, include_invalidated=include_invalidated,
        as_of=as_of, after=after, before=before, max_tokens=max_tokens, explain=explain,
        namespace=namespace, strategy=strategy, min_relevance=args.get("min_relevance"),
    )  # fmt: skip
    return Recall(args=recall, count_access=count_access, validate_ids=validate_ids)


def _confirm(args: dict[str, Any]) -> Confirm:
    ids = _texts(args.get("ids", []), "ids")
    pinned = args.get("pinned")
    if pinned is not None:
        pinned = _flag(pinned, "pinned")
    # One fact (as the MCP tool takes it) or several (the CLI, the HTTP API).
    given = args.get("differs_from", [])
    differs_from = _texts([given] if isinstance(given, str) else given, "differs_from")
    supersedes = optional_text(args.get("supersedes"), "supersedes")
    # importance goes on as sent: check_importance judges it (its kind too).
    return Confirm(ids=ids, pinned=pinned, importance=args.get("importance"),
                   differs_from=differs_from, supersedes=supersedes)  # fmt: skip


def _forget(args: dict[str, Any]) -> Forget:
    ids = _texts(args.get("ids", []), "ids")
    return Forget(ids=ids, cascade=_flag(args.get("cascade", False), "cascade"))


def _reflect(args: dict[str, Any]) -> Reflect:
    namespace = optional_text(args.get("namespace"), "namespace")
    return Reflect(limit=whole(args.get("limit", REFLECT_LIMIT), "limit"), namespace=namespace)


def _stats(args: dict[str, Any]) -> Stats:
    namespace = optional_text(args.get("namespace"), "namespace")
    return Stats(detailed=_flag(args.get("detailed", False), "detailed"), namespace=namespace)


def _resource(args: dict[str, Any]) -> ReadResource:
    uri = args.get("uri")
    if not isinstance(uri, str):
        raise UsageError("a resource URI starts with ferrex://", hint=RESOURCE_HINT)
    return ReadResource(uri=uri)


def _dashboard(args: dict[str, Any]) -> DashboardRead:
    return DashboardRead(query=args)


def _entity(args: dict[str, Any]) -> EntityCommand:
    action = args.get("action")
    if not isinstance(action, str):
        raise UsageError(f"unknown entity action {action!r}", hint="merge, split or differ")
    first, second = args.get("first"), args.get("second")
    if not isinstance(first, str) or not isinstance(second, str):
        raise UsageError("an entity action takes two names", hint="first and second")
    namespace = optional_text(args.get("namespace"), "namespace")
    return EntityCommand(action=action, first=first, second=second, namespace=namespace)


def _consolidate(args: dict[str, Any]) -> Consolidate:
    # In the order the service read them (an argument a path does not read is not checked).
    undo = args.get("undo")
    namespace = optional_text(args.get("namespace"), "namespace")
    if _flag(args.get("list", False), "list"):
        summary_id = optional_text(args.get("summary_id"), "summary_id")
        return Consolidate(list=True, summary_id=summary_id, namespace=namespace)
    if _flag(args.get("undo_all", False), "undo_all"):
        limit = whole(args.get("limit", 64), "limit")
        return Consolidate(undo_all=True, limit=limit, namespace=namespace)
    if undo is not None:
        if not isinstance(undo, str):
            raise UsageError("undo takes a summary's memory id")
        return Consolidate(undo=undo, namespace=namespace)
    days = args.get("older_than_days")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int | float)):
        raise UsageError(
            "give the age of what to fold, in days",
            hint="--older-than DAYS, or set consolidation.after_days",
        )
    most = args.get("max_groups")
    return Consolidate(
        older_than_days=None if days is None else float(days), namespace=namespace,
        max_groups=None if most is None else whole(most, "max_groups"),
        dry_run=_flag(args.get("dry_run", False), "dry_run"),
    )  # fmt: skip


_DECODERS: dict[str, Callable[[dict[str, Any]], ToolRequest]] = {
    "store": _store, "recall": _recall, "confirm": _confirm, "forget": _forget,
    "reflect": _reflect, "stats": _stats, "resource": _resource, "dashboard": _dashboard,
    "entity": _entity, "consolidate": _consolidate,
}  # fmt: skip


# -- the shapes --------------------------------------------------------------------------------


def _flag(value: object, name: str) -> bool:
    """A JSON boolean; the text "true" is not one."""
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be true or false, got {_kind(value)}")
    return value


def whole(value: object, name: str) -> int:
    """A JSON integer; a boolean, a float or the text "5" is not one."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number, got {_kind(value)}")
    return value


def within(value: int, name: str, low: int, high: int) -> int:
    """A whole number in [low, high]."""
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _kind(value: object) -> str:
    """The JSON kind of a value, for an error message (the value itself may be private)."""
    match value:
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "text"
        case list() | tuple():
            return "a list"
        case None:
            return "null"
        case _:
            return "an object"


def optional_text(value: object, name: str) -> str | None:
    """``value`` as text, or None when absent; anything else is ``invalid_input``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{name} must be text")
    return value


def _texts(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise UsageError(f"{name} must be a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise UsageError(f"every item of {name} must be a string")
    return tuple(value)
