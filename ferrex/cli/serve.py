"""``ferrex`` (no subcommand) and ``ferrex serve``: the MCP server.

stdio is what an MCP client launches: stdout carries protocol only, logs go to stderr.
``--http HOST:PORT`` serves Streamable HTTP at ``/mcp`` instead, behind bearer tokens (see
:mod:`ferrex.server.mcp_auth`), with ``/healthz`` open, and the web dashboard at ``/``
(:mod:`ferrex.server.dashboard`, the same tokens; ``ferrex ui`` is this on a free port).
HTTP is stateless by default (the
SDK's stateless mode: every request stands alone, so many clients pin no server state and
each call runs in parallel with the others); ``--sessions`` serves the session-based
transport instead, for clients that need server-to-client streams (resource update
notifications) or that require an ``Mcp-Session-Id``. Either way the process
joins the data directory's hub (see :mod:`ferrex.server.hub`): it owns the stores, or asks the
process that does, and hands them over cleanly when it exits.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import click

from ferrex import heap
from ferrex.app import App
from ferrex.cli.flags import caller_flags, caller_options
from ferrex.config import Config
from ferrex.errors import UsageError
from ferrex.server.caller import Caller

if TYPE_CHECKING:
    from ferrex.server.mcp_auth import TokenTable
    from ferrex.server.mcp_server import FerrexMCP

log = logging.getLogger("ferrex")
_GRACE_SECONDS = 3


def run_server(
    app: App,
    reload: Callable[[], Config],
    http: str | None = None,
    *,
    sessions: bool = False,
    ui: bool = False,
) -> None:
    """Serve MCP for the configured agent until the client goes away (or a signal).

    ``reload`` reads the configuration again (file, environment, flags): the server follows
    changes to its file while it runs (see ferrex.server.reload). ``ui``: serve HTTP on a
    free loopback port and print the dashboard's URL with the operator's token.
    """
    if http is None and not ui:
        stop_on_signals()  # before the slow imports below
    heap.limit_arenas()  # before any worker thread allocates
    heap.map_large_blocks()
    from ferrex.server.hub import Hub
    from ferrex.server.mcp_server import build_server
    from ferrex.server.reload import ConfigWatcher

    listening = _free_loopback_socket() if ui else None
    if listening is not None:
        host, port = listening.getsockname()[:2]
        address: tuple[str, int] | None = (host, port)
    else:
        address = _address(http) if http else None
    bound = listening
    if bound is None and address is not None:
        # Bound before anything else starts: a port in use is refused here, plainly, before
        # the stores open or "serving" is printed.
        bound = _listen(*address)
    caller = Caller.from_config(app.config)
    latest = [app.config]  # the configuration a process taking over the stores starts with
    sweep = app.config["store.expiry_sweep_seconds"]
    index = app.config["qdrant.index_every_seconds"]
    hub = Hub(app.home, lambda: App(home=app.home, config=latest[0]), caller,
              sweep_every=sweep if sweep > 0 else None,
              index_every=index if index > 0 else None)  # fmt: skip
    tokens, file_token = _tokens(app, address)
    if listening is not None and address is not None:
        # The one place the token is shown: the page trades it for a cookie at once.
        query = "" if tokens is None or file_token is None else "/?token=" + file_token
        click.echo(f"http://{address[0]}:{address[1]}{query or '/'}")
        sys.stdout.flush()

    def apply(config: Config) -> None:
        latest[0] = config
        hub.reconfigure(config)
        if tokens is not None:
            from ferrex.server.mcp_auth import grants

            tokens.replace(grants(config["auth.tokens"], file_token))

    watcher = ConfigWatcher(app.config.file, app.config, reload, apply)
    server = build_server(hub, tokens)
    _keep_our_logs_apart()
    if address is None:
        from ferrex.server.mcp_stdio import run_stdio

        def hand_over() -> None:
            watcher.stop(join=False)  # a daemon thread: the exit ends it
            hub.close()
            app.close()

        stopping = stop_on_signals()
        stopping.hand_over = hand_over  # before anything opens: a signal from now on hands over
        watcher.start()
        code = 0
        try:
            # The election and the warm-up wait until the client has its initialize answer.
            run_stdio(server, after_handshake=hub.start)
        except Exception:
            log.exception("the stdio server failed")
            code = 1
        stopping.stop(code)  # hands over and ends the process; does not return
    _exit_on_terminate()
    hub.start()
    watcher.start()
    try:
        _serve_http(server, tokens, *address, listening=bound, stateless=not sessions,
                    config=app.config)  # fmt: skip
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        hub.close()


def _tokens(app: App, address: tuple[str, int] | None) -> tuple[TokenTable | None, str | None]:
    """The HTTP token table (None: stdio, or an open loopback server) and the file token."""
    from ferrex.server.mcp_auth import TokenTable, ensure_token_file, grants, read_token_file

    if address is None:
        return None, None
    if app.config["auth.open_loopback"] and _is_loopback(address[0]):
        log.warning("auth.open_loopback is set: HTTP requests need no token; any local "
                    "process or user can read and change this memory")  # fmt: skip
        return None, None
    path = ensure_token_file(app.home)
    file_token = read_token_file(path)
    click.echo(f"ferrex: HTTP clients need a bearer token; the operator's is in {path}", err=True)
    return TokenTable(grants(app.config["auth.tokens"], file_token)), file_token


def _serve_http(
    server: FerrexMCP,
    tokens: TokenTable | None,
    host: str,
    port: int,
    listening: socket.socket | None = None,
    *,
    stateless: bool = True,
    config: Config,
) -> None:
    import anyio
    import uvicorn

    from ferrex.server.dashboard import mount
    from ferrex.server.http_limits import ACCEPT_BATCH, Limits, filter_repeats, guarded_protocol
    from ferrex.server.mcp_server import tool_inputs, transport_security

    app = server.streamable_http_app(
        streamable_http_path="/mcp", host=host, stateless_http=stateless,
        transport_security=transport_security(_is_loopback(host), config["server.public_url"]),
    )  # fmt: skip
    # the dashboard at / beside /mcp, behind the same tokens
    limits = Limits.from_config(config)
    # Change streams: per token, and in all half of the connections (each is one of them).
    streams = (config["server.max_streams_per_principal"], limits.max_connections // 2)
    mount(app, server.hub, tokens, loopback=_is_loopback(host),
          public_url=config["server.public_url"],
          trusted_proxies=config["server.trusted_proxies"], tools=tool_inputs(server),
          streams=streams)  # fmt: skip
    from ferrex.server.mcp_http_ids import RefusingBadIds

    served = uvicorn.Config(
        RefusingBadIds(app, "/mcp"),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # a forwarded-for header must not change who a request is
        server_header=False,
        # Open streams (a client's SSE GET) would otherwise hold a SIGTERM up indefinitely.
        timeout_graceful_shutdown=_GRACE_SECONDS,
        # Deadlines for heads and bodies, caps on connections, a descriptor reserve
        # (ferrex.server.http_limits); at most one accept batch beyond the caps at once.
        http=guarded_protocol(limits),
        backlog=ACCEPT_BATCH,
    )
    filter_repeats()  # after uvicorn configured its loggers
    mode = "stateless" if stateless else "with sessions"
    click.echo(f"ferrex: serving MCP at http://{host}:{port}/mcp ({mode}) and the dashboard "
               f"at http://{host}:{port}/", err=True)  # fmt: skip
    from ferrex.server.dashboard.stream import stop_streams

    class _Server(uvicorn.Server):
        """Told to stop, it ends the open change streams first: they would hold the graceful
        shutdown up to its deadline."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            stop_streams()
            super().handle_exit(sig, frame)

    anyio.run(_Server(served).serve, None if listening is None else [listening])


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, or a clear refusal (a port in use, an address
    this machine does not have)."""
    from ferrex.server.http_limits import ACCEPT_BATCH

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=ACCEPT_BATCH)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port}: {os.strerror(exc.errno) if exc.errno else exc}",
            hint="another process may be using that port: choose another with --http "
            "HOST:PORT, or stop that process",
        ) from exc


def _free_loopback_socket() -> socket.socket:
    """A socket listening on a port the kernel picked on 127.0.0.1 (no race for the port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def _keep_our_logs_apart() -> None:
    """The SDK gives the root logger a handler of its own (logging.basicConfig); ours already
    print to stderr, so they stop there instead of printing every line twice."""
    for name in ("ferrex", "journal"):
        logger = logging.getLogger(name)
        if logger.handlers:
            logger.propagate = False


def _address(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(
            f"--http {value!r} is not HOST:PORT", hint="for example --http 127.0.0.1:8765"
        )
    host = host.strip("[]")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise UsageError(
                f"--http host {host!r} must be an IP address or localhost",
                hint="for example --http 127.0.0.1:8765",
            ) from None
    if not _is_loopback(host):
        log.warning("serving on %s, which is not a loopback address: whoever reaches it with "
                    "a token can use this memory, and plain HTTP shows the token to the "
                    "network; put a TLS proxy in front", host)  # fmt: skip
    return host, int(port_text)


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Stopping:
    """How the stdio server ends: one hand-over, then the process exits at once.

    The end of stdin, Ctrl-C (SIGINT, exit 130) and SIGTERM (exit 0, like the end of input)
    all come here; the first one hands the stores over and the later ones change nothing. A
    signal hands over on a thread of its own: the transport reads stdin in a thread that an
    interrupt cannot wake, and the main thread may be anywhere (still importing, in the
    SDK's loop). The process then ends with ``os._exit``, after flushing stdout and stderr:
    the stores are closed by then, and what is left (a model still loading on its own
    thread, inside ONNX Runtime) must not meet the interpreter's teardown, where its native
    threads abort the process ("terminate called without an active exception").
    """

    def __init__(self) -> None:
        self.hand_over: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._started = False

    def stop(self, code: int) -> NoReturn:
        """Hand over (once) and exit with ``code``; a later call waits for the first one."""
        with self._lock:
            first, self._started = not self._started, True
        if not first:
            while True:  # the first stop ends the process
                threading.Event().wait()
        try:
            if self.hand_over is not None:
                self.hand_over()
        except BaseException:
            log.exception("handing over the stores at exit failed")
            code = code or 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)

    def signalled(self, signum: int, frame: FrameType | None) -> None:
        code = 130 if signum == signal.SIGINT else 0
        if self._started:  # no lock here: the interrupted thread may hold it
            return
        threading.Thread(target=self.stop, args=(code,), name="ferrex-stop", daemon=True).start()


_stopping: _Stopping | None = None


def stop_on_signals() -> _Stopping:
    """From now on SIGINT and SIGTERM end this stdio server cleanly (see :class:`_Stopping`).

    Called as early as the bare ``ferrex`` knows it will serve, before the slow imports, so a
    Ctrl-C during start-up is a clean stop too, never click's ``Aborted!``."""
    global _stopping
    if _stopping is None:
        _stopping = _Stopping()
        signal.signal(signal.SIGINT, _stopping.signalled)
        signal.signal(signal.SIGTERM, _stopping.signalled)
    return _stopping


def _exit_on_terminate() -> None:
    """SIGTERM ends the HTTP server like Ctrl-C: through ``finally``, handing over."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


@click.command()
@click.option(
    "--http",
    metavar="HOST:PORT",
    help="Serve Streamable HTTP at http://HOST:PORT/mcp, and the dashboard at /, not stdio.",
)
@click.option(
    "--sessions",
    is_flag=True,
    help="With --http: the session-based transport (server-to-client streams, resource "
    "update notifications) instead of the stateless default.",
)
@caller_options(
    agent="The agent this server speaks for: stamps its stores, limits what it sees "
    "(same as `ferrex --agent-id`, store.agent_id, FERREX_AGENT_ID).",
    namespace="Default namespace of this server's calls (same as `ferrex --namespace`, "
    "store.default_namespace, FERREX_NAMESPACE; default `default`).",
    visibility="Visibility of stores that name none (same as `ferrex --default-visibility`, "
    "store.default_visibility, FERREX_DEFAULT_VISIBILITY; default private).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    http: str | None,
    sessions: bool,
    agent_id: str | None,
    namespace: str | None,
    default_visibility: str | None,
) -> None:
    """Run the MCP server (stdio by default; what `ferrex` with no subcommand does).

    Any number of ferrex servers may share one data directory: the first owns the stores and
    the others send it their calls over a local socket; when it exits another takes over.
    Agent identity and default namespace: --agent-id / --namespace here or on `ferrex`
    (or FERREX_AGENT_ID / FERREX_NAMESPACE, or ferrex.toml).
    """
    root = ctx.find_root()
    reload: Callable[[], Config] = root.meta["ferrex.reload_config"]
    flags: dict[str, str | None] = root.meta["ferrex.flags"]
    given = caller_flags(agent_id, namespace, default_visibility)
    if any(value is not None for value in given.values()):
        flags.update({key: value for key, value in given.items() if value is not None})
        ctx.obj.reconfigure(reload())  # nothing is open yet; reloads keep these flags
    if sessions and http is None:
        raise UsageError(
            "--sessions applies to --http", hint="ferrex serve --http HOST:PORT --sessions"
        )
    run_server(ctx.obj, reload, http, sessions=sessions)
    sys.stdout.flush()
