"""The MCP resources and prompts: what a client UI shows and an agent starts a task with.

Resources (JSON documents; their reads live in :meth:`ferrex.server.service.Service.resource`,
reached through the hub like a tool call, so they see what the caller may see):

- ``ferrex://stats``: the overview ``stats`` gives;
- ``ferrex://recent``: the latest memories of the caller's namespace;
- ``ferrex://memory/{id}``: one memory with its supersede chain and use; an id the caller
  may not see is not found, exactly like one that does not exist;
- ``ferrex://entity/{name}``: what is known about an entity, found through any spelling.

Prompts: ``session-start`` (the overview and how to use memory in this conversation),
``memory-review`` (reflect's findings, walked through one by one), ``remember-conversation``
(how to keep a conversation as self-contained memories). Their data comes from the tools.
"""

from __future__ import annotations

import contextvars
import json
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from ferrex.errors import FerrexError
from ferrex.server import answers
from ferrex.server.caller import Caller
from ferrex.server.hub import Hub
from ferrex.server.tool_calls import ReadResource, Reflect, Stats, ToolRequest

JSON = "application/json"


def add_resources_and_prompts(
    server: MCPServer[Any], hub: Hub, caller: contextvars.ContextVar[Caller | None]
) -> None:
    """Register the resources and prompts on ``server``; ``caller`` holds who is asking."""

    def read(uri: str) -> str:
        try:
            doc = hub.call(ReadResource(uri=uri), caller.get())
        except FerrexError as exc:
            if exc.code == "not_found":
                raise ResourceNotFoundError(exc.message) from exc
            raise ResourceError(f"[{exc.code}] {exc.message}") from exc
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)

    @server.resource("ferrex://stats", name="stats", title="Memory overview", mime_type=JSON,
                     description="Memory counts, the latest, what needs attention.")  # fmt: skip
    def stats() -> str:
        return read("ferrex://stats")

    @server.resource("ferrex://recent", name="recent", title="Recent memories", mime_type=JSON,
                     description="The latest memories, newest first.")  # fmt: skip
    def recent() -> str:
        return read("ferrex://recent")

    @server.resource("ferrex://memory/{id}", name="memory", title="One memory", mime_type=JSON,
                     description="A memory with its history: what it replaced and what "
                     "replaced it (t_valid, t_invalid), its use and confirmation.")  # fmt: skip
    def memory(id: str) -> str:
        return read(f"ferrex://memory/{quote(id, safe='')}")

    @server.resource("ferrex://entity/{name}", name="entity", title="An entity", mime_type=JSON,
                     description="What is known about a project, person or tool, by any "
                     "of its spellings.")  # fmt: skip
    def entity(name: str) -> str:
        return read(f"ferrex://entity/{quote(name, safe='')}")

    def tool(request: ToolRequest) -> dict[str, Any]:
        return hub.call(request, caller.get())

    @server.prompt(name="session-start", title="Start a session with memory",
                   description="What memory holds; how to use it here.")  # fmt: skip
    def session_start() -> str:
        overview = answers.stats_text(tool(Stats()))
        return (
            "You have a long-term memory (ferrex). What it holds now:\n"
            f"{overview}\n\n"
            "In this conversation: recall before answering anything that may depend on "
            "earlier work; store each thing worth keeping as one self-contained memory; "
            "confirm a recalled memory that proved right; forget what the user asks you to."
        )

    @server.prompt(name="memory-review", title="Review memory health",
                   description="Walk through reflect's findings and act on each.")  # fmt: skip
    def memory_review() -> str:
        findings = answers.reflect_text(tool(Reflect(limit=10)))
        return (
            "Review these findings of the memory's health, one at a time:\n"
            f"{findings}\n\n"
            "For each stale or never-confirmed memory: recall its topic and check it against "
            "what you know now. If it is right, call confirm with its id; if it changed, "
            "store the correct one with supersedes=its id; if it is wrong or useless, forget "
            "it. For each contradiction, find which value holds and store it with supersedes. "
            "Ask the user when you cannot tell. End with a short summary of what you changed."
        )

    @server.prompt(name="remember-conversation", title="Remember this conversation",
                   description="Keep what this conversation taught as self-contained "
                   "memories.")  # fmt: skip
    def remember_conversation(topic: str = "") -> str:
        focus = f" Focus on: {topic}." if topic else ""
        return (
            "Go through this conversation and store what is worth keeping for later "
            f"conversations.{focus} Call store once per thing learned:\n"
            "- a fact as subject + predicate + object (api-server / uses / tokio 1.38);\n"
            "- something that happened as content, with its date (valid_from if earlier);\n"
            "- how a task is done as name + steps (+ conditions).\n"
            "Each memory must stand alone: name the project, people and versions, give "
            "absolute dates, no 'this', 'he' or 'yesterday'. List the entities it is about. "
            "Recall first to avoid duplicates; pass supersedes=ID to replace an older memory. "
            "Do not store secrets, or chatter that will not matter later."
        )
