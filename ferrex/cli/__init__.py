"""The ``ferrex`` command line: parses arguments and calls the composition root, nothing more.

Exit codes (stable): 0 ok, 1 unexpected failure, 2 usage or invalid input (``no_home``: a
reading command's data directory does not exist, see :mod:`ferrex.cli.home`), 3 journal damage
or journal refusal, 4 a model is unavailable, 5 a store cannot be reached, 6 reconcile found
drift, 7 the memory rules refused a store (duplicate, ambiguous conflict, unknown target;
``forget`` of an id that names no memory), 8 the data directory is read-only
(``read_only``), 9 the disk is too full to write safely (``storage_full``).
"""

from __future__ import annotations

import importlib
import logging
import sys

import click

from ferrex.app import App
from ferrex.cli.flags import caller_flags, caller_options
from ferrex.config import Config
from ferrex.config import load as load_config
from ferrex.errors import FerrexError
from ferrex.home_safety import from_os_error, resolve_home

#: Every subcommand: its name, and the module of ``ferrex.cli`` and the attribute it is in.
#: A subcommand's module is imported when it is asked for (to run it, or for ``--help``):
#: the bare ``ferrex``, an MCP client's stdio server, imports none of them before it answers.
COMMANDS: dict[str, tuple[str, str]] = {
    "audit": ("projections", "audit"),
    "backfill": ("projections", "backfill"),
    "config": ("config", "config_group"),
    "consolidate": ("consolidate", "consolidate"),
    "differ": ("memory", "differ"),
    "doctor": ("doctor", "doctor"),
    "entity": ("entity", "entity"),
    "export": ("export", "export"),
    "forget": ("memory", "forget"),
    "hook": ("hooks", "hook"),
    "hooks": ("hooks", "hooks"),
    "import": ("memory", "import_"),
    "journal": ("journal", "journal"),
    "mark": ("memory", "mark"),
    "optimize": ("projections", "optimize"),
    "recall": ("recall", "recall"),
    "reconcile": ("projections", "reconcile"),
    "reembed": ("projections", "reembed"),
    "reflect": ("insight", "reflect_cmd"),
    "replay": ("projections", "replay"),
    "secrets": ("secrets", "secrets"),
    "serve": ("serve", "serve"),
    "stats": ("insight", "stats_cmd"),
    "store": ("memory", "store"),
    "ui": ("ui", "ui"),
}


class _Group(click.Group):
    """Maps ferrex errors to their documented exit codes, once, for every subcommand; loads
    a subcommand's module only when the subcommand is asked for (:data:`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"ferrex.cli.{module}"), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            try:
                return super().invoke(ctx)
            except OSError as exc:  # a read-only or full disk the stores did not expect
                error = from_os_error(exc)
                if error is None:
                    raise
                raise error from exc
        except FerrexError as exc:
            click.echo(f"error [{exc.code}]: {exc.message}", err=True)
            if exc.hint:
                click.echo(f"hint: {exc.hint}", err=True)
            ctx.exit(exc.exit_code)


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=str),
    envvar="FERREX_HOME",
    help="Data directory (journal, read model, vectors). Default: $FERREX_HOME or ~/.ferrex.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=str),
    help="Configuration file. Default: ferrex.toml in the data directory.",
)
@click.option("--qdrant-url", help="Use an external Qdrant server at this URL.")
@caller_options(
    agent="The agent every command speaks for: stamps stores, limits what is seen "
    "(config store.agent_id, FERREX_AGENT_ID; an export is of the whole home). Without one: "
    "the operator, who sees all. "
    "Each command's own --agent-id overrides it.",
    namespace="Default namespace (project) of stores and recalls (store.default_namespace). "
    "stats and reflect cover every namespace unless given their own --namespace.",
    visibility="Visibility of this agent's stores that name none (store.default_visibility, "
    "FERREX_DEFAULT_VISIBILITY; default private): shared lets a person's other clients, each "
    "with its own --agent-id, see them.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log progress details on stderr.")
@click.version_option(package_name="ferrex")
@click.pass_context
def cli(
    ctx: click.Context,
    home: str | None,
    config_file: str | None,
    qdrant_url: str | None,
    agent_id: str | None,
    namespace: str | None,
    default_visibility: str | None,
    verbose: bool,
) -> None:
    """ferrex: a local-first memory server for AI agents.

    With no command, serves MCP on stdio (what an MCP client launches). Every change is an
    event in an fsynced journal; everything else is rebuilt from it.
    """
    from pathlib import Path

    _log_to_stderr(logging.INFO if verbose else logging.WARNING)
    resolved = resolve_home(home)
    flags = {"qdrant.url": qdrant_url, **caller_flags(agent_id, namespace, default_visibility)}

    def reload() -> Config:
        file = Path(config_file) if config_file else None
        config = load_config(resolved, file, flags=flags)
        if config["store.project_namespace"] and flags["store.default_namespace"] is None:
            from ferrex.projects import project_namespace

            derived = project_namespace(Path.cwd())
            if derived is not None:
                derived_flags = {**flags, "store.default_namespace": derived}
                config = load_config(resolved, file, flags=derived_flags)
        return config

    app = App(home=resolved, config=reload())
    if sys.stderr.isatty():  # a person waits: say why the first store or recall takes a while
        app.before_model_load = lambda: click.echo("loading model…", err=True)
    ctx.obj = app
    ctx.meta["ferrex.reload_config"] = reload
    ctx.meta["ferrex.flags"] = flags  # `serve --agent-id/--namespace` set them too
    ctx.call_on_close(app.close)
    if ctx.invoked_subcommand is None:
        from ferrex.cli.serve import run_server, stop_on_signals

        stop_on_signals()  # Ctrl-C from here on is a clean stop, even during the start-up
        if sys.stdin.isatty():  # a person, not an MCP client, started it
            click.echo(
                "ferrex: this is an MCP server on stdio, for an MCP client to launch (see the "
                "README); `ferrex --help` lists the commands. Ctrl-C ends it.",
                err=True,
            )
        run_server(app, reload)


class _Prefixed(logging.Formatter):
    """``ferrex: message``; the prefix is the formatter's job, so a message that already
    carries it (older call sites) is not prefixed twice."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if text.startswith("ferrex: ") else f"ferrex: {text}"


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (click's test runner swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # logging must never take a command down
            self.handleError(record)


def _log_to_stderr(level: int) -> None:
    """Our loggers (ferrex.*, journal) go to stderr only: stdout carries results."""
    for name in ("ferrex", "journal"):
        logger = logging.getLogger(name)
        logger.handlers = [h for h in logger.handlers if not isinstance(h, _StderrHandler)]
        handler = _StderrHandler()
        handler.setFormatter(_Prefixed("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(level)


def main() -> None:
    """Console-script entry point."""
    sys.exit(cli.main(standalone_mode=True))
