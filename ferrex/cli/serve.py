"""``ferrex`` (no subcommand) and ``ferrex serve``: the MCP server.

stdio is what an MCP client launches: stdout carries protocol only, logs go to stderr.
``--http HOST:PORT`` serves Streamable HTTP at ``/mcp`` instead. Either way the process
joins the data directory's hub (see :mod:`ferrex.server.hub`): it owns the stores, or asks the
process that does, and hands them over cleanly when it exits.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import sys
from collections.abc import Callable
from types import FrameType

import click

from ferrex.app import App
from ferrex.config import Config
from ferrex.errors import UsageError
from ferrex.server.service import Caller

log = logging.getLogger("ferrex")


def run_server(app: App, reload: Callable[[], Config], http: str | None = None) -> None:
    """Serve MCP for the configured agent until the client goes away (or a signal).

    ``reload`` reads the configuration again (file, environment, flags): the server follows
    changes to its file while it runs (see ferrex.server.reload).
    """
    from ferrex.server.hub import Hub
    from ferrex.server.mcp_server import build_server
    from ferrex.server.reload import ConfigWatcher

    address = _address(http) if http else None
    caller = Caller.from_config(app.config)
    latest = [app.config]  # the configuration a process taking over the stores starts with
    hub = Hub(app.home, lambda: App(home=app.home, config=latest[0]), caller)

    def apply(config: Config) -> None:
        latest[0] = config
        hub.reconfigure(config)

    watcher = ConfigWatcher(app.config.file, app.config, reload, apply)
    server = build_server(hub)
    _exit_on_terminate()
    hub.start()
    watcher.start()
    try:
        if address is None:
            server.run("stdio")
        else:
            host, port = address
            click.echo(f"ferrex: serving MCP at http://{host}:{port}/mcp", err=True)
            server.run("streamable-http", host=host, port=port, streamable_http_path="/mcp")
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        hub.close()


def _address(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(
            f"--http {value!r} is not HOST:PORT", hint="for example --http 127.0.0.1:8765"
        )
    host = host.strip("[]")
    try:
        if not ipaddress.ip_address(host).is_loopback:
            log.warning("ferrex: serving on %s, which is not a loopback address: any host "
                        "that reaches it can read and change this memory", host)  # fmt: skip
    except ValueError:
        if host != "localhost":
            raise UsageError(
                f"--http host {host!r} must be an IP address or localhost",
                hint="for example --http 127.0.0.1:8765",
            ) from None
    return host, int(port_text)


def _exit_on_terminate() -> None:
    """SIGTERM ends the server like the end of its input: through ``finally``, handing over."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


@click.command()
@click.option(
    "--http",
    metavar="HOST:PORT",
    help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
@click.pass_context
def serve(ctx: click.Context, http: str | None) -> None:
    """Run the MCP server (stdio by default; what `ferrex` with no subcommand does).

    Any number of ferrex servers may share one data directory: the first owns the stores and
    the others send it their calls over a local socket; when it exits another takes over.
    Agent identity and default namespace come from --agent-id / --namespace on `ferrex`
    (or FERREX_AGENT_ID / FERREX_NAMESPACE, or ferrex.toml).
    """
    root = ctx.find_root()
    run_server(ctx.obj, root.meta["ferrex.reload_config"], http)
    sys.stdout.flush()
