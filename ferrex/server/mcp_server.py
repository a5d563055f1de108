"""The MCP server: five tools an agent uses to keep and find its memories.

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
import logging
from typing import Annotated, Any, Literal

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AnyHttpUrl, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from ferrex import __version__
from ferrex.errors import FerrexError
from ferrex.rules.memory_input import DEFAULT_LIMITS
from ferrex.rules.spelling import did_you_mean
from ferrex.server.hub import Hub
from ferrex.server.mcp_auth import Grant, TokenTable
from ferrex.server.service import Caller, error_document

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
- Now and then call `reflect` to find stale, contradicted or never-confirmed memories.
Each recalled memory carries a freshness label: fresh, aging, stale (old and unused: verify
before relying on it) or superseded (replaced by a newer memory)."""

MemoryType = Literal["episodic", "semantic", "procedural"]
_L = DEFAULT_LIMITS
Content = Annotated[str, Field(max_length=_L.content_chars)]
Field500 = Annotated[str, Field(max_length=_L.field_chars)]
Step = Annotated[str, Field(max_length=_L.step_chars)]
ShortText = Annotated[str, Field(min_length=1, max_length=_L.field_chars)]
Namespace = Annotated[str, Field(min_length=1, max_length=_L.namespace_chars)]
IsoTime = Annotated[
    str,
    Field(
        max_length=64,
        description="ISO 8601 with a timezone, e.g. 2026-11-28T09:30:00Z or 2026-11-28.",
    ),
]

STORE_DOC = """\
Remember one thing for later conversations. Call it whenever you learn something worth \
keeping: a fact about a project or a person, something that happened, or how a task is done.

Write each memory so it stands alone: name the project, the people and the versions, and \
give dates, because whoever reads it later has none of this conversation. One memory per \
thing learned.

Three kinds, inferred from the fields you fill:
- a fact (semantic): subject + predicate + object, e.g. api-server / uses / tokio 1.36. A \
newer fact about the same subject and predicate replaces the old one automatically (the old \
one stays in history); set multi_valued when several values hold at once.
- an event (episodic): content, e.g. "On 2026-11-28 the nightly backup of billing-db failed: \
disk full". Use valid_from for something that happened earlier.
- a procedure (procedural): name + steps in order (+ conditions when it applies). Storing a \
procedure with an existing name makes a new version.

A near-copy of an existing memory is refused with its id: pass supersedes=ID to replace it, \
or leave it. Answers with the new id, the entities it was linked to and what it superseded."""

RECALL_DOC = """\
Find memories relevant to a question. Call it before answering anything that may depend on \
earlier conversations, decisions, facts about projects or people, or how a task is done.

Ask in plain words or with exact identifiers (INC-4417, a version, a file name); both are \
searched. Results come best first, each with its freshness: fresh, aging, stale (old and not \
used or confirmed lately: check before relying on it; hidden unless include_stale) or \
superseded (replaced by a newer memory; hidden unless include_invalidated or as_of). A \
result flagged contradiction disagrees with another active memory. If a result proved right, \
pass its id in validate_ids to confirm it. By default you see current knowledge; use as_of \
to see what was believed at a past time."""

FORGET_DOC = """\
Remove memories for good from recall. Call it when the user asks you to forget something, \
or when a memory is wrong and should not be replaced (to correct a memory, store the new one \
with supersedes instead). Ids not found, or not yours to see, are reported as not_found. The \
audit journal keeps a record that the memory existed until an operator compacts it."""

REFLECT_DOC = """\
Review the memory's health: stale memories (with reasons), memories never confirmed, active \
contradictions, least-used memories that could be forgotten, and entities nobody mentions \
any more. Call it now and then, e.g. at the end of a long task, and act on what it finds: \
confirm with recall validate_ids, correct with store supersedes, or forget."""

STATS_DOC = """\
A short overview of what is remembered: how many memories, the most recent ones, and how \
many need attention (stale, contradicted, never confirmed). Call it at the start of a \
conversation to know what memory you have. detailed adds counts per type, the staleness \
distribution, storage and models."""


class FerrexMCP(MCPServer[Any]):
    """MCPServer whose failures all reach the agent as tool errors with a stable code, and
    whose tool calls over HTTP speak for the agent their bearer token names."""

    def __init__(self, hub: Hub, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hub = hub

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        scope = _caller.set(self._caller(context))
        try:
            return await super().call_tool(name, arguments, context)
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

    def _caller(self, context: Any) -> Caller | None:
        """The caller a request's token grants (the operator or one agent), if it has one."""
        request = getattr(getattr(context, "request_context", None), "request", None)
        if not isinstance(request, Request):
            return None
        user = request.scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            return None
        grant = Grant.from_client_id(user.access_token.client_id)
        return Caller(agent_id=grant.agent, namespace=self.hub.caller.namespace)

    def _argument_names(self, tool: str) -> list[str]:
        found = self._tool_manager.get_tool(tool)
        return sorted(found.parameters.get("properties", {})) if found is not None else []


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
        tool.fn_metadata = _ExactArguments(
            arg_model=strict,
            output_schema=loose.output_schema,
            output_model=loose.output_model,
            wrap_output=loose.wrap_output,
        )
        tool.parameters = strict.model_json_schema(by_alias=True)


def build_server(hub: Hub, tokens: TokenTable | None = None) -> FerrexMCP:
    """The server with its five tools, calling through ``hub``.

    With ``tokens``, its HTTP app refuses (401) every request without a token they know, and
    each call speaks for the agent its token names; ``/healthz`` needs none and tells nothing.
    """
    server = FerrexMCP(
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

    def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        # None (an omitted argument) is dropped by the service
        return hub.call(tool, args, _caller.get())

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)  # type: ignore[untyped-decorator]
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    @server.tool(
        description=STORE_DOC,
        annotations=ToolAnnotations(
            title="Store a memory", read_only_hint=False, destructive_hint=False,
            idempotent_hint=False, open_world_hint=False,
        ),
    )  # fmt: skip
    def store(
        content: Annotated[
            Content | None, Field(description="An event or note, self-contained (episodic).")
        ] = None,
        subject: Annotated[
            ShortText | None, Field(description="A fact's subject, e.g. api-server.")
        ] = None,
        predicate: Annotated[
            ShortText | None, Field(description="A fact's relation, e.g. uses, owns, runs on.")
        ] = None,
        object: Annotated[
            Field500 | None, Field(description="A fact's value, e.g. tokio 1.36.")
        ] = None,
        name: Annotated[
            ShortText | None, Field(description="A procedure's name, e.g. deploy api-server.")
        ] = None,
        steps: Annotated[
            list[Step] | None,
            Field(description="A procedure's steps, in order.", max_length=_L.max_steps),
        ] = None,
        conditions: Annotated[
            list[Field500] | None,
            Field(description="When the procedure applies.", max_length=_L.max_conditions),
        ] = None,
        type: Annotated[
            MemoryType | None,
            Field(description="Only to override the type inferred from the fields."),
        ] = None,
        entities: Annotated[
            list[ShortText] | None,
            Field(
                description="Projects, people, services or tools it is about; spelling "
                "variants are matched to known entities.",
                max_length=_L.max_entities,
            ),
        ] = None,
        supersedes: Annotated[
            ShortText | None, Field(description="Id of a memory this one replaces.")
        ] = None,
        multi_valued: Annotated[
            bool,
            Field(description="A fact that holds alongside other values (e.g. languages)."),
        ] = False,
        split_long: Annotated[
            bool,
            Field(
                description="Keep an event longer than the embedding window (an article, a "
                "transcript) as one memory, searched in parts; without it such content is "
                "refused with a hint to split it."
            ),
        ] = False,
        source: Annotated[
            ShortText | None,
            Field(
                description='Where it came from (a URL, a file, "user"); "memory:ID" cites a '
                "memory and confirms it."
            ),
        ] = None,
        context: Annotated[
            dict[str, Any] | None,
            Field(description='Structured details kept with it, e.g. {"ticket": "INC-1"}.'),
        ] = None,
        confidence: Annotated[
            float, Field(ge=0.0, le=1.0, description="How sure, from 0 to 1.")
        ] = 1.0,
        valid_from: Annotated[
            IsoTime | None, Field(description="When it became true or happened, if not now.")
        ] = None,
        visibility: Annotated[
            Literal["private", "shared"] | None,
            Field(
                description="private: only this agent; shared: every agent. Default "
                "private when the server has an agent id."
            ),
        ] = None,
        namespace: Annotated[
            Namespace | None, Field(description="Project namespace; default from the server.")
        ] = None,
    ) -> dict[str, Any]:
        return call(
            "store",
            {"content": content, "subject": subject, "predicate": predicate, "object": object,
             "name": name, "steps": steps, "conditions": conditions, "type": type,
             "entities": entities, "supersedes": supersedes, "multi_valued": multi_valued,
             "split_long": split_long,
             "source": source, "context": context, "confidence": confidence,
             "valid_from": valid_from,
             "visibility": visibility, "namespace": namespace},
        )  # fmt: skip

    @server.tool(
        description=RECALL_DOC,
        annotations=ToolAnnotations(
            title="Recall memories", read_only_hint=True, open_world_hint=False
        ),
    )
    def recall(
        query: Annotated[
            str,
            Field(min_length=1, max_length=2000, description="What to look for, in words."),
        ],
        limit: Annotated[int, Field(ge=1, le=100, description="How many results.")] = 5,
        types: Annotated[
            list[MemoryType] | None, Field(description="Only these memory types.")
        ] = None,
        entities: Annotated[
            list[ShortText] | None,
            Field(description="Only memories about these entities (any spelling).", max_length=20),
        ] = None,
        include_stale: Annotated[bool, Field(description="Also return stale memories.")] = False,
        include_invalidated: Annotated[
            bool, Field(description="Also return superseded memories (history).")
        ] = False,
        as_of: Annotated[IsoTime | None, Field(description="What was valid at this time.")] = None,
        after: Annotated[
            IsoTime | None, Field(description="Only memories from this time on.")
        ] = None,
        before: Annotated[IsoTime | None, Field(description="Only memories before this.")] = None,
        validate_ids: Annotated[
            list[ShortText] | None,
            Field(
                description="Ids from this recall's results that you confirmed are right.",
                max_length=100,
            ),
        ] = None,
        explain: Annotated[
            bool, Field(description="Include the score of every ranking stage.")
        ] = False,
        namespace: Annotated[
            Namespace | None, Field(description="Project namespace; default from the server.")
        ] = None,
        min_relevance: Annotated[
            float,
            Field(ge=0, le=1, description="Drop results less relevant than this (0 keeps all)."),
        ] = 0.0,
    ) -> dict[str, Any]:
        return call(
            "recall",
            {"query": query, "limit": limit, "types": types, "entities": entities,
             "include_stale": include_stale, "include_invalidated": include_invalidated,
             "as_of": as_of, "after": after, "before": before, "validate_ids": validate_ids,
             "explain": explain, "namespace": namespace, "min_relevance": min_relevance},
        )  # fmt: skip

    @server.tool(
        description=FORGET_DOC,
        annotations=ToolAnnotations(
            title="Forget memories", read_only_hint=False, destructive_hint=True,
            idempotent_hint=True, open_world_hint=False,
        ),
    )  # fmt: skip
    def forget(
        ids: Annotated[
            list[ShortText],
            Field(min_length=1, max_length=1000, description="Ids of the memories to forget."),
        ],
        cascade: Annotated[
            bool, Field(description="Also drop entities no remaining memory mentions.")
        ] = False,
    ) -> dict[str, Any]:
        return call("forget", {"ids": ids, "cascade": cascade})

    @server.tool(
        description=REFLECT_DOC,
        annotations=ToolAnnotations(
            title="Review memory health", read_only_hint=True, open_world_hint=False
        ),
    )
    def reflect(
        limit: Annotated[int, Field(ge=1, le=100, description="Items per section.")] = 10,
        namespace: Annotated[
            Namespace | None, Field(description="Project namespace; default from the server.")
        ] = None,
    ) -> dict[str, Any]:
        return call("reflect", {"limit": limit, "namespace": namespace})

    @server.tool(
        description=STATS_DOC,
        annotations=ToolAnnotations(
            title="Memory overview", read_only_hint=True, open_world_hint=False
        ),
    )
    def stats(
        detailed: Annotated[bool, Field(description="Add counts, storage and models.")] = False,
        namespace: Annotated[
            Namespace | None, Field(description="Project namespace; default from the server.")
        ] = None,
    ) -> dict[str, Any]:
        return call("stats", {"detailed": detailed, "namespace": namespace})

    _make_exact(server)
    return server
