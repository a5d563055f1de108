"""``ferrex hooks`` (install ferrex's hooks into a client's settings, pause them per project)
and ``ferrex hook`` (what the client runs at each event). The clients are Claude Code, Gemini
CLI and Codex CLI (:mod:`ferrex.hooks.claude_code`, :mod:`ferrex.hooks.gemini_cli`,
:mod:`ferrex.hooks.codex_cli`: the brief and prompt hooks only), whose command hooks share one
shape (:mod:`ferrex.hooks.command_hooks`); only a transcript's format differs, which
``ferrex hook capture --client`` names.

A hook never blocks or breaks the client: whatever happens (a failure, a data directory that
is not there, a deadline passed), it exits 0, prints nothing unless it has context to add
(``{}`` for Gemini CLI, which would show stderr otherwise: ``--client gemini-cli``), and writes
one line to ``<home>/logs/hooks.log`` (each run's event, outcome and time; to stderr when the
data directory does not exist, which a hook never creates, except for Gemini CLI). It speaks for
the agent and namespace its command names, which install copies from the client's MCP entry
(``--agent-id``, ``--default-visibility``, ``--namespace``), and reaches the stores through
the hub, as the CLI does: through the server when one runs, never taking its lock; with none,
it owns the data directory for its run.

A project is the git work tree its directory is in, else the directory itself
(:mod:`ferrex.projects`; with ``store.project_namespace`` its name is the namespace, taken
from the ``cwd`` the client gives the hook); ``ferrex hooks pause`` lists it in
``<home>/hooks/paused.json`` and every hook run from it then does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from ferrex.app import App
from ferrex.errors import FerrexError, UsageError
from ferrex.hooks import claude_code, command_hooks, gemini_cli
from ferrex.hooks.command_hooks import Client, HookInput
from ferrex.hooks.lean import (
    CLIENTS,
    DEFAULT_CLIENT,
    hook_namespace,
    log_run,
    paused_file,
    paused_projects,
    print_outcome,
    prompt_hook,
)
from ferrex.projects import project_root
from journal.files import make_private_dir, replace_durably

if TYPE_CHECKING:
    from ferrex.server.tool_calls import ToolRequest

CLIENT_NAMES = click.Choice(list(CLIENTS))
TRANSCRIPTS = click.Choice([claude_code.CLIENT.name, gemini_cli.NAME])
"""The clients whose transcripts ``ferrex hook capture`` reads (Codex CLI's is not documented)."""
DEADLINES: Final = {"session-start": 12.0, "prompt": 8.0, "capture": 55.0}
"""Seconds a hook may work before it gives up and exits 0 (below the timeout install gives
the client for it: ``claude_code.HOOKS``, ``gemini_cli.HOOKS``)."""


# -- where things are ------------------------------------------------------------------------


def _paused(home: Path) -> list[str]:
    return paused_projects(home)


def _hook_homes(app: App, root: Path) -> list[Path]:
    """The data directories whose hooks run in project ``root``: those its installed hooks
    name (``--home``, the project's settings and the user's), else this command's own. A
    hook reads the pause from the home it runs against, so a pause goes there, whatever
    home the shell that pauses has."""
    named: list[str] = []
    for client in CLIENTS.values():
        for path in (_settings_path(str(root), False, client), _settings_path(None, True, client)):
            try:
                named += command_hooks.homes_named(_read_settings(path))
            except UsageError:
                continue  # an unreadable settings file installs nothing here
    return [Path(h) for h in dict.fromkeys(named)] or [app.home]


def _settings_path(project: str | None, user: bool, client: Client) -> Path:
    if user:
        if project is not None:
            raise UsageError("--user and --project name two places", hint="give one")
        return Path.home() / client.user
    return project_root(Path(project or ".")) / client.project


def _ferrex_executable() -> str:
    """This ferrex's console script, by absolute path: a client runs hooks without the
    shell's PATH or virtual environment."""
    beside = Path(sys.executable).with_name("ferrex")
    if beside.exists():
        return str(beside)
    found = shutil.which("ferrex")
    return str(Path(found).resolve()) if found else str(Path(sys.argv[0]).resolve())


def _read_settings(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    try:
        doc = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path} is not JSON ({exc}); nothing was changed",
            hint="fix or move the file, then run the command again",
        ) from exc
    if not isinstance(doc, dict):
        raise UsageError(f"{path} is not a JSON object; nothing was changed")
    return doc


def _write_settings(path: Path, doc: dict[str, Any]) -> Path | None:
    """Write ``doc`` to ``path`` (whole or not at all, with the replaced file's permissions);
    the file it replaces is kept beside it (:func:`_backup`), whose path is returned. A
    ``path`` that is a symbolic link (settings kept with one's dotfiles) is written through:
    the file it names changes, the link stays."""
    backup, mode = None, None
    if path.exists():
        backup = _backup(path)
        mode = path.stat().st_mode & 0o777
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_durably(target, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
    if mode is not None:
        target.chmod(mode)
    return backup


def _backup(path: Path) -> Path:
    """A copy of ``path`` as ``NAME.ferrex-backup``, or ``NAME.ferrex-backup.N`` when that
    exists: a backup is never overwritten, so the user's own file before a first install
    survives a second install or an uninstall. A copy the same as the newest is not made."""
    taken = [path.with_name(path.name + ".ferrex-backup")]
    while taken[-1].exists():
        taken.append(path.with_name(f"{path.name}.ferrex-backup.{len(taken)}"))
    newest = taken[-2] if len(taken) > 1 else None
    if newest is not None and newest.read_bytes() == path.read_bytes():
        return newest
    shutil.copy2(path, taken[-1])
    return taken[-1]


# -- ferrex hooks ----------------------------------------------------------------------------


@click.group()
def hooks() -> None:
    """Install ferrex's hooks into a client, so it recalls and keeps memory without being
    asked: a brief at session start, relevant memories with each prompt, the conversation
    kept before compaction and at session end."""


_project_option = click.option(
    "--project",
    type=click.Path(file_okay=False, exists=True, path_type=str),
    help="The project (its git work tree; default: the current directory's).",
)


@hooks.command()
@click.argument("client", type=CLIENT_NAMES)
@_project_option
@click.option("--user", is_flag=True, help="Every project of this user (the settings under ~).")
@click.option("--agent-id", help="The agent id its MCP entry gives ferrex (default: CLIENT).")
@click.option("--namespace", help="The namespace its MCP entry gives ferrex, if it gives one.")
@click.option("--default-visibility", type=click.Choice(["private", "shared"]),
              default="shared", show_default=True,
              help="As its MCP entry has it (the README's entries share).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print the settings it would write; write nothing.")
@click.pass_obj
def install(
    app: App,
    client: str,
    project: str | None,
    user: bool,
    agent_id: str | None,
    namespace: str | None,
    default_visibility: str,
    dry_run: bool,
) -> None:
    """Write ferrex's hooks into CLIENT's settings: a project's .claude/settings.local.json
    (claude-code; not committed: no file of the project changes), .gemini/settings.json
    (gemini-cli) or .codex/hooks.json (codex-cli), or with --user the same under your home
    (~/.claude/settings.json, ~/.gemini/settings.json, ~/.codex/hooks.json). Other settings
    and hooks are kept; the file replaced is kept as NAME.ferrex-backup (or
    NAME.ferrex-backup.N: a backup is never overwritten); a settings file that is a symbolic
    link is written through it."""
    chosen = CLIENTS[client]
    path = _settings_path(project, user, chosen)
    base = [_ferrex_executable(), "--home", str(app.home), "--agent-id", agent_id or client,
            "--default-visibility", default_visibility]  # fmt: skip
    if namespace:
        base += ["--namespace", namespace]
    try:
        doc = command_hooks.with_ours(_read_settings(path), base, chosen)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}; nothing was changed") from exc
    if dry_run:
        click.echo(f"# would write {path}")
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    backup = _write_settings(path, doc)
    click.echo(f"installed ferrex hooks for {client} in {path}")
    if backup is not None:
        click.echo(f"the previous file is kept as {backup}")
    if not app.home.is_dir():
        click.echo(f"warning: the data directory {app.home} does not exist yet: the hooks do "
                   "nothing until it does (a store, an import or `ferrex serve` makes it); "
                   "a mistyped --home? install again with the right one", err=True)  # fmt: skip


@hooks.command()
@click.argument("client", type=CLIENT_NAMES)
@_project_option
@click.option("--user", is_flag=True, help="From the user's settings (under ~).")
@click.option("--dry-run", is_flag=True, help="Print the settings it would write; write nothing.")
def uninstall(client: str, project: str | None, user: bool, dry_run: bool) -> None:
    """Remove ferrex's hooks from CLIENT's settings; everything else stays as it is."""
    path = _settings_path(project, user, CLIENTS[client])
    before = _read_settings(path)
    doc = command_hooks.without_ours(before)
    if dry_run:
        click.echo(f"# would write {path}")
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    if doc == before:
        click.echo(f"no ferrex hooks in {path}")
        return
    backup = _write_settings(path, doc)
    click.echo(f"removed ferrex hooks for {client} from {path} (the previous file: {backup})")


@hooks.command()
@click.argument("client", type=CLIENT_NAMES, default="claude-code")
@_project_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def status(app: App, client: str, project: str | None, as_json: bool) -> None:
    """Where ferrex's hooks are installed in CLIENT's settings (default: claude-code) and
    whether this project pauses them (for every client)."""
    root = project_root(Path(project or "."))
    chosen = CLIENTS[client]
    places = {"project": _settings_path(str(root), False, chosen),
              "user": _settings_path(None, True, chosen)}  # fmt: skip
    homes = _hook_homes(app, root)
    doc: dict[str, Any] = {
        "project": str(root),
        "paused": any(str(root) in _paused(home) for home in homes),
        "homes": [str(home) for home in homes],
        "missing_homes": [str(home) for home in homes if not home.is_dir()],
    }
    for name, path in places.items():
        try:
            found = command_hooks.installed(_read_settings(path))
        except UsageError as exc:
            found = {"error": [exc.message]}
        doc[name] = {"settings": str(path), "hooks": found}
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"project {root}: {'paused' if doc['paused'] else 'active'}"
               f" (data directory {', '.join(doc['homes'])})")  # fmt: skip
    for home in doc["missing_homes"]:
        click.echo(f"warning: the data directory {home} does not exist: the hooks that name "
                   "it do nothing", err=True)  # fmt: skip
    for name in places:
        events = ", ".join(doc[name]["hooks"]) or "none"
        click.echo(f"{name} settings {doc[name]['settings']}: {events}")


def _set_paused(app: App, project: str | None, paused: bool) -> None:
    root = project_root(Path(project or "."))
    for home in _hook_homes(app, root):
        if not home.is_dir():
            raise UsageError(
                f"the data directory {home} does not exist; nothing was changed",
                hint="pass the --home the hooks were installed with: ferrex --home DIR hooks ...",
            )
        listed = [p for p in _paused(home) if p != str(root)] + ([str(root)] if paused else [])
        make_private_dir(paused_file(home).parent)
        replace_durably(paused_file(home), (json.dumps(sorted(listed), indent=2) + "\n").encode())
        click.echo(
            f"ferrex hooks {'paused' if paused else 'resumed'} for {root} (data directory {home})"
        )


@hooks.command()
@_project_option
@click.pass_obj
def pause(app: App, project: str | None) -> None:
    """Turn ferrex's hooks off for a project (they run and do nothing)."""
    _set_paused(app, project, True)


@hooks.command()
@_project_option
@click.pass_obj
def resume(app: App, project: str | None) -> None:
    """Turn ferrex's hooks on again for a project."""
    _set_paused(app, project, False)


# -- ferrex hook -----------------------------------------------------------------------------


@click.group()
def hook() -> None:
    """What a client's hooks run (``ferrex hooks install`` writes them): JSON on stdin, context
    to add on stdout, exit 0 whatever happens."""


_client_option = click.option(
    "--client", type=CLIENT_NAMES, default=DEFAULT_CLIENT, show_default=True,
    help="The client that runs the hook (gemini-cli: {} on stdout when there is nothing to "
    "add, nothing on stderr).",
)  # fmt: skip


@hook.command("session-start")
@_client_option
@click.pass_obj
def session_start(app: App, client: str) -> None:
    """A brief for the session: what needs attention, current facts, recent memories."""
    _run(app, "session-start", _brief, client)


@hook.command()
@_client_option
@click.pass_obj
def prompt(app: App, client: str) -> None:
    """The memories recall judges relevant to the prompt, with their ids (nothing if none)."""
    _run(app, "prompt", _prompt, client)


@hook.command()
@click.option("--client", type=TRANSCRIPTS, default=DEFAULT_CLIENT, show_default=True,
              help="Whose transcript format transcript_path is in (and, as for the other "
              "hooks, whose stdout rules it keeps).")  # fmt: skip
@click.pass_obj
def capture(app: App, client: str) -> None:
    """Keep the session's conversation (its transcript) as episodes, once per message."""
    _run(app, "capture", lambda run: _capture(run, client), client)


class _Hooked:
    """One hook run: its input, the agent's caller, and the hub it calls through."""

    def __init__(self, app: App, given: HookInput, namespace_flag: str | None) -> None:
        from ferrex.server.caller import Caller
        from ferrex.server.hub import Hub

        self.app = app
        self.given = given
        config = app.config
        self.namespace = hook_namespace(config, namespace_flag, given.cwd)
        self.caller = Caller(agent_id=config["store.agent_id"], namespace=self.namespace,
                             visibility=config["store.default_visibility"])  # fmt: skip
        self.hub = Hub(app.home, lambda: app, self.caller, flush_every=None, sweep_every=None)
        self.note: str | None = None  # what the run did, for its log line

    def call(self, request: ToolRequest) -> dict[str, Any]:
        return self.hub.call(request, self.caller)


def _token_count() -> Callable[[str], int]:
    """Tokens as the bundled model's tokenizer counts them (recall's ``max_tokens`` does
    too): its shipped tokenizer file alone, no model."""
    from tokenizers import Tokenizer

    from ferrex.models.bundled import TOKENIZER_DATA

    tokenizer = Tokenizer.from_file(str(TOKENIZER_DATA / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()  # the shipped file pads every text to 128
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def _brief(run: _Hooked) -> str:
    from ferrex.hooks.context import ATTENTION_ITEMS, RECENT_ITEMS, session_brief
    from ferrex.server.tool_calls import DashboardRead, ReadResource, Reflect

    reflect = run.call(Reflect(limit=ATTENTION_ITEMS, namespace=run.namespace))
    recent = run.call(ReadResource(uri="ferrex://recent"))
    # The current facts are read on their own: a captured session's turns are the latest
    # memories and would leave none among the recent ones.
    facts = run.call(DashboardRead(query={
        "view": "memories", "types": ["semantic"], "state": "current",
        "limit": RECENT_ITEMS, "namespace": run.namespace}))  # fmt: skip
    latest = [m for m in recent.get("memories") or [] if m.get("type") != "semantic"]
    memories = [*(facts.get("memories") or []), *latest]
    return session_brief(run.namespace, reflect, {"memories": memories}, _token_count())


def _prompt(run: _Hooked) -> str:
    """What the lean path does (:mod:`ferrex.hooks.lean`), through the hub: this runs when
    no server answered it, and with the hook's ``FERREX_HOOK_LEAN=0``."""
    return prompt_hook(run.call, run.given.prompt)


def _capture(run: _Hooked, client: str) -> str:
    from ferrex.porting import gemini_sessions, transcripts
    from ferrex.rules.memory_input import validate
    from ferrex.server.tool_calls import Store, StoreArgs

    if run.given.transcript_path is None:
        raise UsageError("no transcript_path in the hook's input")
    text = Path(run.given.transcript_path).read_text(encoding="utf-8", errors="replace")
    reader = gemini_sessions if client == gemini_cli.NAME else transcripts
    parsed = reader.parse(text, run.given.session_id)
    counts = {"stored": 0, "already": 0, "refused": 0}
    for request in parsed.requests:
        try:
            # The chat import's redaction, here, before the text leaves this process.
            valid = validate(request, secrets="redact")
            t_valid = None if valid.t_valid is None else valid.t_valid.isoformat()
            args = StoreArgs(type="episodic", content=valid.content, source=valid.source,
                             context=valid.context, split_long=True,
                             namespace=run.namespace, valid_from=t_valid)  # fmt: skip
            run.call(Store(args=args, import_key=valid.import_key))
            counts["stored"] += 1
        except FerrexError as exc:
            counts["already" if exc.code == "duplicate" else "refused"] += 1
    run.note = json.dumps({**counts, "skipped": parsed.skipped}, separators=(",", ":"))
    return ""


def _run(app: App, name: str, work: Callable[[_Hooked], str], client: str) -> None:
    """Run one hook within its deadline; print its context, if any, as the client's JSON
    document (``{}`` when there is none, for a client that reads stderr then); exit 0
    whatever happened."""
    started = time.monotonic()
    outcome: dict[str, Any] = {}
    flags = click.get_current_context().find_root().meta.get("ferrex.flags") or {}
    namespace_flag = flags.get("store.default_namespace")

    def body() -> None:
        try:
            given = HookInput.from_json(json.loads(sys.stdin.read() or "{}"))
            outcome["event"] = given.event
            if not app.home.is_dir():
                outcome["error"] = f"no data directory {app.home}"
                return
            if given.cwd and str(project_root(Path(given.cwd))) in _paused(app.home):
                outcome["paused"] = True
                return
            run = _Hooked(app, given, namespace_flag)
            outcome["run"] = run
            outcome["context"] = work(run)
        except FerrexError as exc:
            outcome["error"] = f"[{exc.code}] {exc.message}"
        except Exception as exc:  # a hook must never break the client: logged, not raised
            outcome["error"] = f"{type(exc).__name__}: {exc}"

    worker = threading.Thread(target=body, name=f"ferrex-hook-{name}", daemon=True)
    worker.start()
    worker.join(DEADLINES[name])
    done = not worker.is_alive()
    context = outcome.get("context") if done else None
    event = outcome.get("event") or (
        "SessionStart" if name == "session-start" else "UserPromptSubmit"
    )
    chosen = CLIENTS[client]
    print_outcome(chosen, event, context)
    run = outcome.get("run")
    if done and run is not None:
        try:
            run.hub.close()
            app.close()
        except Exception as exc:
            outcome.setdefault("error", f"closing: {type(exc).__name__}: {exc}")
    if not done:
        outcome["error"] = f"gave up after {DEADLINES[name]:g} s"
    seconds = time.monotonic() - started
    log_run(app.home, name, outcome, seconds, getattr(run, "note", None),
            stderr=not chosen.json_always)  # fmt: skip
    # Nothing of this process is needed any more; a model thread or a stuck call must not
    # keep the client waiting in the interpreter's teardown.
    os._exit(0)
