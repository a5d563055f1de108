"""The CLI's tool commands (store, recall, forget, reflect, stats) go through the hub.

With an MCP server running on the data directory, the command sends its call to it (the
server owns the stores); with none, this process owns them for the command's duration. The
answers are the documents the MCP tools return, so the CLI and the agents see the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ferrex.app import App

if TYPE_CHECKING:
    from ferrex.server.hub import Hub
    from ferrex.server.tool_calls import ToolRequest


def call_tool(app: App, request: ToolRequest, agent_id: str | None = None) -> dict[str, Any]:
    """One tool call as the configured agent (or ``agent_id``; neither: the operator)."""
    # Imported here: the commands that share this module's options but never call a tool
    # (``import`` among them) do without the server's modules (the tool service, recall,
    # insight).
    from ferrex.server.hub import Hub
    from ferrex.server.service import Caller

    root = click.get_current_context().find_root()
    hub: Hub | None = root.meta.get("ferrex.hub")
    if hub is None:
        hub = Hub(app.home, lambda: app, Caller(), flush_every=None)
        root.meta["ferrex.hub"] = hub
        root.call_on_close(hub.close)
    # no default namespace here: store and recall apply the configured one themselves, and
    # stats and reflect without --namespace cover every namespace, as the operator expects
    caller = Caller(agent_id=agent_id or app.config["store.agent_id"],
                    visibility=app.config["store.default_visibility"])  # fmt: skip
    return hub.call(request, caller=caller)


_F = TypeVar("_F", bound=Callable[..., Any])

AGENT_HELP = (
    "Act as this agent: its private memories and shared ones (default: the global "
    "--agent-id, store.agent_id or FERREX_AGENT_ID; none: the operator, who sees all)."
)
SCOPED_NAMESPACE_HELP = "Default: store.default_namespace of the configuration (`default`)."
OVERVIEW_NAMESPACE_HELP = (
    "Only this namespace. Default: every namespace (an overview is of the whole memory, "
    "unlike store and recall, which use store.default_namespace)."
)


def agent_option(command: _F) -> _F:
    """``--agent-id``, the same on every command that acts as an agent."""
    return click.option("--agent-id", help=AGENT_HELP)(command)
