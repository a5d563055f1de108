"""The MCP server: six tools an agent uses to keep and find its memories, and resources.

Built on the MCP SDK's ``MCPServer``. The tools only shape arguments and answers: what they
do lives in :mod:`ferrex.server.service`, reached through
:class:`~ferrex.server.hub.Hub` (this process owns the data directory, or asks the process
that does). Nothing but protocol is written to
stdout; logs go to stderr.

Errors an agent can act on come back as tool errors (``isError``) whose text starts with the
stable code in brackets and ends with a hint, and whose structured content carries the same
fields. Anything unexpected is logged with its traceback and the agent gets ``[internal]``.

Arguments are exact: an argument the tool does not declare is refused (naming the nearest
declared one), and values are checked strictly, so ``"true"`` is not a boolean, ``"5"`` not a
number and ``"[...]"`` not a list. An agent that sends the wrong shape hears about it instead
of storing something it did not mean.
"""

from __future__ import annotations

import contextvars
import copy
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AnyHttpUrl, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from ferrex import __version__
from ferrex.errors import FerrexError, UsageError
from ferrex.rules.arguments import (
    DEFAULT_STRATEGY,
    MAX_CONFIRM_IDS,
    MAX_FORGET_IDS,
    MAX_MAX_TOKENS,
    MAX_QUERY_CHARS,
    MAX_RECALL_ENTITIES,
    MAX_RECALL_LIMIT,
    MAX_REFLECT_LIMIT,
    MAX_TIME_CHARS,
    MIN_MAX_TOKENS,
    RECALL_LIMIT,
    REFLECT_LIMIT,
    Strategy,
)
from ferrex.rules.lifecycle import DEFAULT_IMPORTANCE, MAX_IMPORTANCE, MIN_IMPORTANCE
from ferrex.rules.memory_input import DEFAULT_LIMITS
from ferrex.rules.spelling import did_you_mean
from ferrex.rules.store_fields import SUPERSEDES_CHARS
from ferrex.server import answers
from ferrex.server.caller import Caller, error_document
from ferrex.server.hub import Hub
from ferrex.server.mcp_auth import Grant, TokenTable
from ferrex.server.mcp_resources import add_resources_and_prompts
from ferrex.server.tool_calls import (
    RESOURCES,
    Confirm,
    Forget,
    Recall,
    RecallArgs,
    Reflect,
    Stats,
    Store,
    StoreArgs,
    ToolRequest,
)
from journal.events import MemoryType, Visibility

log = logging.getLogger("ferrex.mcp")

# The caller of the tool call in progress when its HTTP token names one (None: the hub's).
_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "ferrex_caller", default=None
)

INSTRUCTIONS = """\
ferrex is your long-term memory; it outlives this conversation.
- At the start of a conversation call `stats` to see what is remembered and what needs care.
- Before answering from memory, or when the user refers to earlier work, call `recall`.
- Whenever you learn something worth keeping (a decision, a fact about a project, how a task
  is done, a preference), call `store` with one self-contained memory: name the project,
  people and versions, and give dates; it must make sense to a reader with no context.
- When the user asks you to forget something, or a memory proves wrong, call `forget`.
- When a recalled memory proved right, call `confirm` with its id.
- Pin what must not fade (`pinned`); give scratch notes a `ttl` so they expire.
- Now and then call `reflect` to find stale, contradicted or never-confirmed memories.
Each recalled memory carries a freshness label: fresh, aging, stale (old and unused: verify
before relying on it) or superseded (replaced by a newer memory)."""

_L = DEFAULT_LIMITS
Content = Annotated[str, Field(max_length=_L.content_chars)]
Field500 = Annotated[str, Field(max_length=_L.field_chars)]
Step = Annotated[str, Field(max_length=_L.step_chars)]
ShortText = Annotated[str, Field(min_length=1, max_length=_L.field_chars)]
Namespace = Annotated[str, Field(min_length=1, max_length=_L.namespace_chars)]
IsoTime = Annotated[str, Field(max_length=MAX_TIME_CHARS)]
NamespaceArg = Namespace | None  # omitted: the server's default namespace
MemoryIdArg = Annotated[str, Field(min_length=1, max_length=SUPERSEDES_CHARS)]
Importance = Annotated[float, Field(ge=MIN_IMPORTANCE, le=MAX_IMPORTANCE)]

STORE_DOC = """\
One memory per thing learned, standing alone (name the project, people, versions, \
dates). Its fields set its kind:
- fact: subject+predicate+object; a new value replaces the old if sure, else both are flagged;
- event: content;
- procedure: name+steps; the same name again is a new version.
A near-copy is refused with its id: pass supersedes=ID."""

RECALL_DOC = """\
Find memories relevant to a question; call it before answering from earlier work. Words \
and identifiers both match. One line per memory, best first: id, type, freshness unless \
fresh (stale: verify it), relevance, age, text. Stale and superseded ones are hidden \
unless asked for."""

CONFIRM_DOC = """\
Mark memories that proved right (keeps them fresh); pinned/importance set those. Unseen \
ids count as not_found."""

FORGET_DOC = """\
Remove memories for good: the user asks, or one is wrong (to correct one, store anew with \
supersedes). Unseen ids count as not_found."""

REFLECT_DOC = """\
Memory health: stale, unconfirmed, contradicted, rarely used memories; dormant entities. \
Act with confirm, supersedes or forget."""

STATS_DOC = """\
Overview: counts, the latest, what needs attention. Call it when a conversation starts."""


class FerrexMCP(MCPServer[Any]):
    """MCPServer whose failures all reach the agent as tool errors with a stable code, and
    whose tool calls over HTTP speak for the agent their bearer token names."""

    def __init__(self, hub: Hub, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hub = hub

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        scope = _caller.set(self._caller(context))
        try:
            result = await super().call_tool(name, arguments, context)
            if name in WRITES and not getattr(result, "is_error", False):
                await _notify_changed(context)
            return result
        except UnexpectedToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, FerrexError):
                return tool_error(cause)
            log.error("tool %s failed unexpectedly", name, exc_info=cause or exc)
            return _error_result(
                {"code": "internal", "message": "the memory server failed; the error is in its log"}
            )
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, FerrexError):
                return tool_error(cause)
            if isinstance(cause, ValidationError):
                return _error_result(_invalid_arguments(name, cause, self._argument_names(name)))
            return _error_result({"code": "invalid_input", "message": str(exc)})
        finally:
            _caller.reset(scope)

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        scope = _caller.set(self._caller(context))
        try:
            return await super().read_resource(uri, context)
        finally:
            _caller.reset(scope)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        scope = _caller.set(self._caller(context))
        try:
            return await super().get_prompt(name, arguments, context)
        finally:
            _caller.reset(scope)

    def _caller(self, context: Any) -> Caller | None:
        """The caller a request's token grants (the operator or one agent), if it has one."""
        request = getattr(getattr(context, "request_context", None), "request", None)
        if not isinstance(request, Request):
            return None
        user = request.scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            return None
        grant = Grant.from_client_id(user.access_token.client_id)
        return Caller(agent_id=grant.agent, namespace=self.hub.caller.namespace,
                      visibility=self.hub.caller.visibility)  # fmt: skip

    def _argument_names(self, tool: str) -> list[str]:
        found = self._tool_manager.get_tool(tool)
        return sorted(found.parameters.get("properties", {})) if found is not None else []


#: The tools that change memories: after one succeeds, the resources' readers hear of it.
WRITES = frozenset({"store", "confirm", "forget"})


async def _notify_changed(context: Any) -> None:
    """Tell ``subscriptions/listen`` streams that the overview and the recent list changed
    (the SDK's bus; clients of earlier protocol versions are not subscribed, so none hear)."""
    if context is None:
        return
    try:
        for uri in RESOURCES:
            await context.notify_resource_updated(uri)
    except Exception:  # a notification is a courtesy: never fail the write that caused it
        log.debug("resource update notification failed", exc_info=True)


#: The SDK's own DNS rebinding guard for ``/mcp`` on a loopback address.
_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def transport_security(loopback: bool, public_url: str | None) -> TransportSecuritySettings | None:
    """``/mcp``'s Host and Origin check: on a loopback address the SDK's (loopback names
    only), plus the host and origin of ``server.public_url`` behind a proxy. None: the SDK
    decides (it checks nothing off loopback, where every request needs a token)."""
    if not loopback or public_url is None:
        return None
    parts = urlsplit(public_url)
    host = parts.netloc.lower()
    name = (parts.hostname or "").lower()
    origin = f"{parts.scheme.lower()}://{host}"
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*_LOOPBACK_HOSTS, host, f"{name}:*", name],
        allowed_origins=[*_LOOPBACK_ORIGINS, origin],
    )


def tool_error(exc: FerrexError) -> CallToolResult:
    return _error_result(error_document(exc))


def _error_result(doc: dict[str, Any]) -> CallToolResult:
    text = f"[{doc['code']}] {doc['message']}"
    if doc.get("hint"):
        text += f" — {doc['hint']}"
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"error": doc},
        is_error=True,
    )


def _invalid_arguments(tool: str, exc: ValidationError, known: list[str]) -> dict[str, Any]:
    errors = exc.errors()
    # Unknown arguments first: a misspelt name is the likeliest mistake and the easiest fix.
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    problems = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r}{did_you_mean(where, known)}")
        else:
            problems.append(f"{where}: {err['msg']}")
    return {
        "code": "invalid_input",
        "message": f"invalid arguments for {tool}: " + "; ".join(problems),
        "hint": f"{tool} takes: {', '.join(known)}",
        "fields": sorted({".".join(str(p) for p in e["loc"]) for e in errors}),
    }


@dataclass(frozen=True)
class ToolInput:
    """One tool's input as the MCP server takes it: its JSON Schema (what ``tools/list``
    shows), the same strict argument model and the request built from what it accepted,
    for other doors to the tools (the HTTP API) that must refuse exactly what the tool
    refuses."""

    name: str
    description: str
    schema: dict[str, Any]
    model: type[ArgModelBase]
    build: Callable[..., ToolRequest]

    def decode(self, args: object) -> ToolRequest:
        """The tool's request from a JSON object of arguments, or ``invalid_input`` (the
        tool's own message, hint and ``fields``) unless the tool accepts them."""
        if not isinstance(args, dict):
            raise UsageError(f"the arguments of {self.name} must be a JSON object")
        try:
            accepted = self.model.model_validate(args)
        except ValidationError as exc:
            known = sorted(self.schema.get("properties", {}))
            doc = _invalid_arguments(self.name, exc, known)
            raise UsageError(doc["message"], hint=doc["hint"],
                             details={"fields": doc["fields"]}) from None  # fmt: skip
        # As the SDK calls a tool: its function with the model's fields, one level deep.
        return self.build(**accepted.model_dump_one_level())


def tool_inputs(server: MCPServer[Any]) -> dict[str, ToolInput]:
    """Every tool's input (after :func:`build_server` made the arguments exact)."""
    return {
        tool.name: ToolInput(
            tool.name,
            tool.description or "",
            copy.deepcopy(tool.parameters),
            tool.fn_metadata.arg_model,
            _BUILDERS[tool.name][2],
        )
        for tool in server._tool_manager.list_tools()
    }


class _ExactArguments(FuncMetadata):
    """The SDK's argument metadata without its JSON-in-a-string rescue.

    The SDK parses a string sent for a list (or an optional) field as JSON, so ``"null"`` as
    a content would vanish and ``"[1]"`` would pass as a list; ferrex takes values as sent.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)


def _make_exact(server: MCPServer[Any]) -> None:
    """Every tool refuses undeclared arguments and coerces no value (pydantic strict)."""
    for tool in server._tool_manager.list_tools():
        loose = tool.fn_metadata
        strict: type[ArgModelBase] = type(
            loose.arg_model.__name__,
            (loose.arg_model,),
            {"model_config": ConfigDict(strict=True, extra="forbid",
                                        arbitrary_types_allowed=True)},
        )  # fmt: skip
        # Answers are JSON objects sent as structured content beside their text rendering;
        # an output schema of {"type": "object"} would tell a client nothing more.
        tool.fn_metadata = _ExactArguments(arg_model=strict)
        tool.parameters = lean_schema(strict.model_json_schema(by_alias=True))


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema without what says nothing to an agent: titles, and the
    ``anyOf: [T, null]`` with ``default: null`` of an optional argument (omitting it is how
    an agent leaves it out). Validation is the argument model's, unchanged: strict, exact."""
    schema.pop("title", None)
    properties: dict[str, Any] = schema.get("properties", {})
    for name, prop in list(properties.items()):
        prop.pop("title", None)
        alternatives = prop.get("anyOf")
        if alternatives and "default" in prop and prop["default"] is None:
            kept = [a for a in alternatives if a != {"type": "null"}]
            outer = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
            if len(kept) == 1:
                properties[name] = {**kept[0], **outer}
            elif all(set(a) == {"type"} for a in kept):  # int | str: one list of types
                properties[name] = {"type": [a["type"] for a in kept], **outer}
        if properties[name].get("additionalProperties") is True:  # JSON Schema's default
            del properties[name]["additionalProperties"]
    return schema


def build_server(hub: Hub, tokens: TokenTable | None = None) -> FerrexMCP:
    """The server with its six tools, resources and prompts, calling through ``hub``.

    With ``tokens``, its HTTP app refuses (401) every request without a token they know, and
    each call speaks for the agent its token names; ``/healthz`` needs none and tells nothing.
    """
    server = _new_server(hub, tokens)
    call = _calls_through(hub)
    _add_healthz(server)
    _add_tools(server, call)
    _make_exact(server)
    _describe_visibility(server, hub.caller.visibility or "private")
    add_resources_and_prompts(server, hub, _caller)
    return server


_T = TypeVar("_T")

_Call = Callable[[ToolRequest], CallToolResult]
"""A tool call handed to the hub: the tool's typed request."""


def _new_server(hub: Hub, tokens: TokenTable | None) -> FerrexMCP:
    """The server, with no tools yet; with ``tokens``, checking every HTTP request's."""
    return FerrexMCP(
        hub,
        token_verifier=tokens,
        # The SDK's resource-server mode: tokens checked by our verifier, no OAuth server
        # (the issuer URL is required by its settings but serves nothing here).
        auth=AuthSettings(issuer_url=AnyHttpUrl("http://localhost"), resource_server_url=None)
        if tokens is not None
        else None,
        name="ferrex",
        title="ferrex memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )


def _calls_through(hub: Hub) -> _Call:
    """How a tool calls: through ``hub``, as the caller of the request in progress; the
    answer as its text rendering beside the structured document."""

    def call(request: ToolRequest) -> CallToolResult:
        doc = hub.call(request, _caller.get())
        return CallToolResult(
            content=[TextContent(type="text", text=answers.text(request.tool, doc))],
            structured_content=doc,
        )

    return call


def _writes(*, idempotent: bool, destructive: bool = False) -> ToolAnnotations:
    """The annotations of a tool that changes memories (never the open world)."""
    return ToolAnnotations(read_only_hint=False, destructive_hint=destructive,
                           idempotent_hint=idempotent, open_world_hint=False)  # fmt: skip


def _reads() -> ToolAnnotations:
    """The annotations of a tool that only reads."""
    return ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _add_healthz(server: FerrexMCP) -> None:
    """``/healthz``: needs no token and tells nothing but that the server answers."""

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)  # type: ignore[untyped-decorator]
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})


VISIBILITY_DOCS: Final = {
    "private": "Unset: private (this agent only); shared: every agent.",
    "shared": "Unset: shared (every agent); private: this agent only.",
}
"""The store's ``visibility`` argument as a server whose default (store.default_visibility)
is each value describes it: the agent reads what it gets without saying."""


def _describe_visibility(server: FerrexMCP, default: str) -> None:
    """The store's ``visibility`` as this server's default has it. The tool's annotations are
    read in the module's namespace, so the default is written into the finished schema."""
    tool = server._tool_manager.get_tool("store")
    assert tool is not None
    tool.parameters["properties"]["visibility"]["description"] = VISIBILITY_DOCS[default]


def store(
    content: Content | None = None,
    subject: ShortText | None = None,
    predicate: ShortText | None = None,
    object: Field500 | None = None,
    name: ShortText | None = None,
    steps: Annotated[list[Step] | None, Field(max_length=_L.max_steps)] = None,
    conditions: Annotated[list[Field500] | None, Field(max_length=_L.max_conditions)] = None,
    type: MemoryType | None = None,
    entities: Annotated[
        list[ShortText] | None,
        Field(
            description="What it is about (any spelling).",
            max_length=_L.max_entities,
        ),
    ] = None,
    supersedes: Annotated[
        MemoryIdArg | None, Field(description="Id of the memory this replaces.")
    ] = None,
    multi_valued: Annotated[bool, Field(description="Keeps other values too.")] = False,
    split_long: Annotated[
        bool,
        Field(description="Keep a long event whole."),
    ] = False,
    source: Annotated[
        ShortText | None,
        Field(description="Origin; memory:ID cites a memory."),
    ] = None,
    context: dict[str, Any] | None = None,
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0,
    valid_from: Annotated[
        IsoTime | None,
        Field(description="When it became true (ISO 8601, past)."),
    ] = None,
    visibility: Annotated[
        Visibility | None,
        Field(description=VISIBILITY_DOCS["private"]),
    ] = None,
    namespace: NamespaceArg = None,
    importance: Importance = DEFAULT_IMPORTANCE,
    pinned: Annotated[bool, Field(description="Never stale or evicted.")] = False,
    ttl: Annotated[
        int | str | None,
        Field(description="Forget it after N seconds, or 90s, 2h, 7d."),
    ] = None,
) -> Store:
    return Store(args=StoreArgs(
        content=content, subject=subject, predicate=predicate, object=object, name=name,
        steps=_tuple(steps), conditions=_tuple(conditions), type=type,
        entities=_tuple(entities), supersedes=supersedes, multi_valued=multi_valued,
        split_long=split_long, source=source, context=context, confidence=confidence,
        valid_from=valid_from, visibility=visibility, namespace=namespace,
        importance=importance, pinned=pinned, ttl=ttl,
    ))  # fmt: skip


def recall(
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)],
    limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT)] = RECALL_LIMIT,
    types: list[MemoryType] | None = None,
    entities: Annotated[
        list[ShortText] | None,
        Field(
            description="Only memories about these (any spelling).",
            max_length=MAX_RECALL_ENTITIES,
        ),
    ] = None,
    include_stale: bool = False,
    include_invalidated: Annotated[bool, Field(description="Superseded too.")] = False,
    as_of: Annotated[IsoTime | None, Field(description="What was valid then.")] = None,
    after: IsoTime | None = None,
    before: IsoTime | None = None,
    max_tokens: Annotated[
        int | None,
        Field(ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS, description="Cut the answer to fit."),
    ] = None,
    explain: bool = False,
    namespace: NamespaceArg = None,
    strategy: Annotated[
        Strategy, Field(description="Favour meaning, words, recency or entities.")
    ] = DEFAULT_STRATEGY,
    min_relevance: Annotated[
        float | None, Field(ge=0, le=1, description="Unset: drop irrelevant; 0: keep all.")
    ] = None,
) -> Recall:
    return Recall(args=RecallArgs(
        query=query, limit=limit, types=tuple(types or ()), entities=tuple(entities or ()),
        include_stale=include_stale, include_invalidated=include_invalidated, as_of=as_of,
        after=after, before=before, max_tokens=max_tokens, explain=explain,
        namespace=namespace, strategy=strategy, min_relevance=min_relevance,
    ))  # fmt: skip


def confirm(
    ids: Annotated[list[ShortText], Field(min_length=1, max_length=MAX_CONFIRM_IDS)],
    pinned: bool | None = None,
    importance: Importance | None = None,
    differs_from: MemoryIdArg | None = None,
    supersedes: MemoryIdArg | None = None,
) -> Confirm:
    differs = () if differs_from is None else (differs_from,)
    return Confirm(ids=tuple(ids), pinned=pinned, importance=importance,
                   differs_from=differs, supersedes=supersedes)  # fmt: skip


def forget(
    ids: Annotated[list[ShortText], Field(min_length=1, max_length=MAX_FORGET_IDS)],
    cascade: Annotated[bool, Field(description="Also drop entities no longer mentioned.")] = False,
) -> Forget:
    return Forget(ids=tuple(ids), cascade=cascade)


def reflect(
    limit: Annotated[
        int, Field(ge=1, le=MAX_REFLECT_LIMIT, description="Items per section.")
    ] = REFLECT_LIMIT,
    namespace: NamespaceArg = None,
) -> Reflect:
    return Reflect(limit=limit, namespace=namespace)


def stats(
    detailed: Annotated[bool, Field(description="By type and staleness; storage, models.")] = False,
    namespace: NamespaceArg = None,
) -> Stats:
    return Stats(detailed=detailed, namespace=namespace)


def _tuple(given: list[_T] | None) -> tuple[_T, ...] | None:
    return None if given is None else tuple(given)


#: Each tool's request from its arguments: the signature is the tool's input (its schema),
#: the body the typed request (:mod:`ferrex.server.tool_calls`) the service runs.
_BUILDERS: Final[dict[str, tuple[str, ToolAnnotations, Callable[..., ToolRequest]]]] = {
    "store": (STORE_DOC, _writes(idempotent=False), store),
    "recall": (RECALL_DOC, _reads(), recall),
    "confirm": (CONFIRM_DOC, _writes(idempotent=True), confirm),
    "forget": (FORGET_DOC, _writes(idempotent=True, destructive=True), forget),
    "reflect": (REFLECT_DOC, _reads(), reflect),
    "stats": (STATS_DOC, _reads(), stats),
}


def _add_tools(server: FerrexMCP, call: _Call) -> None:
    """The six tools: each takes its builder's arguments, builds its request, calls it."""
    for name, (doc, hints, build) in _BUILDERS.items():
        server.add_tool(_tool(build, call), name=name, description=doc, annotations=hints)


def _tool(build: Callable[..., ToolRequest], call: _Call) -> Callable[..., CallToolResult]:
    """A tool's function: ``build``'s signature (the SDK reads the input schema and the
    argument model from it), answering with the call of the request ``build`` makes."""

    def tool(**arguments: Any) -> CallToolResult:
        return call(build(**arguments))

    signature = inspect.signature(build, eval_str=True)
    setattr(tool, "__signature__", signature.replace(return_annotation=CallToolResult))  # noqa: B010
    tool.__name__ = build.__name__
    return tool
