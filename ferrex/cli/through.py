"""The CLI's tool commands (store, recall, forget, reflect, stats) go through the hub.

With an MCP server running on the data directory, the command sends its call to it (the
server owns the stores); with none, this process owns them for the command's duration. The
answers are the documents the MCP tools return, so the CLI and the agents see the same thing.
"""

from __future__ import annotations

from typing import Any

import click

from ferrex.app import App
from ferrex.server.hub import Hub
from ferrex.server.service import Caller


def call_tool(app: App, tool: str, args: dict[str, Any], agent_id: str | None = None) -> Any:
    """One tool call as the configured agent (or ``agent_id``; neither: the operator)."""
    root = click.get_current_context().find_root()
    hub: Hub | None = root.meta.get("ferrex.hub")
    if hub is None:
        hub = Hub(app.home, lambda: app, Caller(), flush_every=None)
        root.meta["ferrex.hub"] = hub
        root.call_on_close(hub.close)
    # no default namespace here: store and recall apply the configured one themselves, and
    # stats and reflect without --namespace cover every namespace, as the operator expects
    caller = Caller(agent_id=agent_id or app.config["store.agent_id"])
    return hub.call(tool, args, caller=caller)  # the service drops None (not given)
