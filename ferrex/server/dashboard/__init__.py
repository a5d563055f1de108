"""The web dashboard: a window onto memory for a person, served beside ``/mcp``.

``web`` (sessions, pages, the JSON API under ``/api/v1/``, actions), ``api`` (the API's
writes: store, recall, forget, confirm, with idempotency keys; its OpenAPI document),
``stream`` (the change stream, server-sent events),
``pages`` (the HTML, pure rendering) and ``reads`` (the reads no tool gives, run in the
owning process as the ``dashboard`` entry of the service). Everything a page shows comes
through the hub with the caller the request's token grants, so it obeys
:mod:`ferrex.rules.visibility` like a tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ferrex.server.hub import Hub
    from ferrex.server.mcp_auth import TokenTable
    from ferrex.server.mcp_server import ToolInput


def mount(
    app: Starlette,
    hub: Hub,
    tokens: TokenTable | None,
    *,
    loopback: bool,
    public_url: str | None = None,
    trusted_proxies: Sequence[str] = (),
    tools: Mapping[str, ToolInput] | None = None,
    streams: tuple[int, int] | None = None,
) -> None:
    """Add the dashboard's routes to the MCP server's HTTP app (``/mcp`` stays as it is);
    ``loopback``: the server listens on a loopback address (only local Host names, or the
    public URL's); ``public_url`` and ``trusted_proxies``: how a TLS proxy reaches it. Not
    found and method not allowed answer with the dashboard's headers too. ``tools``: the MCP
    tools' inputs (:func:`~ferrex.server.mcp_server.tool_inputs`), for the write API under
    ``/api/v1`` (without them only the read routes are served). ``streams``: the change
    streams' caps, per principal and in all (the defaults of
    :mod:`~ferrex.server.dashboard.stream` without)."""
    from ferrex.server.dashboard.web import Dashboard

    dashboard = Dashboard(hub, tokens, loopback=loopback, public_url=public_url,
                          trusted_proxies=trusted_proxies, tools=tools,
                          streams=streams)  # fmt: skip
    app.router.routes.extend(dashboard.routes())
    app.add_exception_handler(404, dashboard.not_found)
    app.add_exception_handler(405, dashboard.not_found)
