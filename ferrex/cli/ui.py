"""``ferrex ui``: the web dashboard on a free loopback port, for the operator.

It is ``ferrex serve --http`` on ``127.0.0.1`` and a port the kernel picks (so ``/mcp`` is
served too, behind the same tokens), printing one URL on stdout that carries the operator's
token (``<home>/run/http.token``). Opening it trades the token for a session cookie and drops
it from the address bar; the URL stays valid as long as the token file does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from ferrex.config import Config


@click.command("ui")
@click.pass_context
def ui(ctx: click.Context) -> None:
    """Open the web dashboard on a free loopback port and print its URL.

    The URL carries the operator's token once; the page keeps a session cookie instead.
    Search, memories with their history, entities, health (confirm, forget) and the
    journal. Ends with Ctrl-C.
    """
    from ferrex.cli.serve import run_server

    root = ctx.find_root()
    reload: Callable[[], Config] = root.meta["ferrex.reload_config"]
    run_server(ctx.obj, reload, ui=True)
    sys.stdout.flush()
