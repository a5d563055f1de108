"""The prompt hook's lean path, and what the hooks share that loads nothing heavy.

Claude Code runs the ``UserPromptSubmit`` hook (Gemini CLI its ``BeforeAgent`` hook) before
every prompt reaches the model, so its cost is felt on each one. The full command (``ferrex
... hook prompt`` through :mod:`ferrex.cli.hooks`) loads click, the composition root and the
hub before it can ask anything: most of its time when a server runs. So the console script
(:mod:`ferrex.entry`) hands that one command here first. With a server running on the data
directory (its endpoint file, ``<home>/run/owner.json``), this reads the configuration, asks
the owner for recall over a connection of the hub's wire format
(:mod:`ferrex.server.frames`: the hello with the token, then one call as the hook's caller):
once with the evidence the hook judges the prompt by, and when that says inject, once more
for the lines, cut to recall's ``max_tokens`` (:data:`ferrex.hooks.context.RECALL_TOKENS`),
which the owner counts with the bundled tokenizer. It prints the context, loading none of
the stores' code, no model and no tokenizer. When no owner answers (no endpoint, a refused
or closed connection) it does nothing and says so, and the full command runs instead (it
elects, and with no server owns the data directory for its run). Either way the same
requests are made and the same context printed (:func:`prompt_hook`).

The clients (:data:`CLIENTS`), the hooks' namespace (:func:`hook_namespace`), pause list
(:func:`paused_projects`), output (:func:`print_outcome`) and log line (:func:`log_run`) live
here too, so that both paths share them.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ferrex.hooks import claude_code, codex_cli, gemini_cli
from ferrex.hooks.command_hooks import CLIENT_OPTION, Client, HookInput, context_output
from ferrex.projects import project_namespace, project_root
from ferrex.rules import arguments

if TYPE_CHECKING:
    from ferrex.config import Config
    from ferrex.server.tool_calls import Recall

PROMPT_QUERY_CHARS: Final = arguments.MAX_QUERY_CHARS
PROMPT_DEADLINE: Final = 8.0
"""Seconds the prompt hook may work (below the clients' timeouts: ``claude_code.HOOKS``,
``gemini_cli.HOOKS``)."""

_VALUED: Final = {
    "--home": "home",
    "--config": "config",
    "--agent-id": "store.agent_id",
    "--namespace": "store.default_namespace",
    "--default-visibility": "store.default_visibility",
}


# -- shared by both paths --------------------------------------------------------------------

CLIENTS: Final = {c.name: c for c in (claude_code.CLIENT, gemini_cli.CLIENT, codex_cli.CLIENT)}
"""The clients whose hooks ferrex installs, by name (``--client``'s values)."""
DEFAULT_CLIENT: Final = claude_code.CLIENT.name
"""The client a hook run without ``--client`` keeps the rules of."""


def paused_file(home: Path) -> Path:
    return home / "hooks" / "paused.json"


def paused_projects(home: Path) -> list[str]:
    """The projects (their roots) ``ferrex hooks pause`` listed."""
    try:
        listed = json.loads(paused_file(home).read_text())
    except FileNotFoundError:
        return []
    return [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []


def hook_namespace(config: Config, namespace_flag: str | None, cwd: str | None) -> str:
    """The namespace a hook speaks in: ``--namespace`` or the configured default, else (with
    ``store.project_namespace``) the project the client's ``cwd`` is in, as its MCP server
    derives it from its own working directory."""
    namespace: str = config["store.default_namespace"]
    if config["store.project_namespace"] and namespace_flag is None and cwd:
        namespace = project_namespace(Path(cwd)) or namespace
    return namespace


def prompt_request(prompt: str | None) -> Recall | None:
    """The recall the prompt hook judges ``prompt`` by (None: nothing to ask): the prompt as
    the conversation has it (ferrex's own context and the client's reminders cut out), at
    most :data:`PROMPT_QUERY_CHARS` of it; the first
    :data:`~ferrex.hooks.context.PROMPT_CANDIDATES` results whatever their label, with the
    evidence (``explain``) that :func:`ferrex.hooks.context.worth_injecting` reads; not
    counted as uses (the recall that is injected is)."""
    from ferrex.hooks.context import PROMPT_CANDIDATES
    from ferrex.rules.conversation import conversation_text
    from ferrex.server.tool_calls import Recall, RecallArgs

    query = conversation_text(prompt or "")[:PROMPT_QUERY_CHARS].strip()
    if not query:
        return None
    args = RecallArgs(query=query, limit=PROMPT_CANDIDATES, min_relevance=0, explain=True)
    return Recall(args=args, count_access=False)


def context_request(judged: Recall) -> Recall:
    """The recall whose answer the prompt hook injects, once :func:`prompt_request`'s was
    judged worth it: the same query and results, without the evidence, cut by the owner's
    tokenizer to :data:`~ferrex.hooks.context.RECALL_TOKENS` (so that neither path loads a
    tokenizer of its own), counted as uses."""
    from ferrex.hooks.context import PROMPT_CANDIDATES, RECALL_TOKENS
    from ferrex.server.tool_calls import Recall, RecallArgs

    args = RecallArgs(query=judged.args.query, limit=PROMPT_CANDIDATES, min_relevance=0,
                      max_tokens=RECALL_TOKENS)  # fmt: skip
    return Recall(args=args)


Call = Callable[["Recall"], Mapping[str, Any]]
"""One recall by the stores: the typed request in (:mod:`ferrex.server.tool_calls`), its
answer out. Loading the typed requests costs this path about 2 ms of CPU beside the 41 ms
of its other imports (issue 46, measured at a load of 9: the request key's rule moved to
``rules.arguments`` so they load no memory rules, and ``rules.fusion`` no longer loads the
vector protocols for the configuration's defaults); ``test_hook_lean`` holds what it loads."""


def prompt_hook(call: Call, prompt: str | None) -> str:
    """What the prompt hook injects for ``prompt``, through ``call`` (both paths run this):
    nothing unless one of the results of :func:`prompt_request` is relevant enough to the
    prompt (:func:`ferrex.hooks.context.worth_injecting`), else the lines of
    :func:`context_request`'s answer."""
    from ferrex.hooks.context import prompt_context, worth_injecting

    request = prompt_request(prompt)
    if request is None or not worth_injecting(call(request)):
        return ""
    return prompt_context(call(context_request(request)), count=None)


def print_outcome(client: Client, event: str, context: str | None) -> None:
    """What a hook prints on stdout: the document that adds ``context``; else nothing, or
    ``{}`` for a client that reads stderr when stdout is empty (``Client.json_always``)."""
    if context:
        sys.stdout.write(json.dumps(context_output(event, context), ensure_ascii=False) + "\n")
    elif client.json_always:
        sys.stdout.write("{}\n")
    sys.stdout.flush()


def log_run(
    home: Path,
    name: str,
    outcome: Mapping[str, Any],
    seconds: float,
    note: str | None,
    *,
    stderr: bool = True,
) -> None:
    """One line in ``<home>/logs/hooks.log``: when, which hook, what it did, how long (to
    stderr when the data directory is not there, since a hook never creates it, unless
    ``stderr`` is False: a client that shows a hook's stderr to its user)."""
    from journal.files import make_private_dir, private_opener

    if "error" in outcome:
        result = "failed: " + str(outcome["error"])
    elif outcome.get("paused"):
        result = "paused"
    elif name == "capture":  # it adds no context; what it kept is in the note
        result = "captured"
    else:
        result = "context" if outcome.get("context") else "nothing"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} {name} {result} {seconds * 1000:.0f}ms" + (f" {note}" if note else "")
    try:
        if not home.is_dir():
            raise FileNotFoundError(home)
        logs = home / "logs"
        make_private_dir(logs)
        with open(logs / "hooks.log", "a", opener=private_opener) as f:
            f.write(line.replace("\n", " ") + "\n")
    except OSError:
        if stderr:
            sys.stderr.write(f"ferrex hook: {line}\n")


# -- the lean path ---------------------------------------------------------------------------


def prompt_options(argv: Sequence[str]) -> dict[str, str] | None:
    """The global options of ``argv`` when it is exactly ``[OPTIONS] hook prompt`` with
    options this path understands (``--home``, ``--config``, ``--agent-id``, ``--namespace``,
    ``--default-visibility``, each with its value as the next word or after ``=``), and
    ``--client NAME`` after it as install writes it (``client``); None for any other
    command line, which the full command handles."""
    out: dict[str, str] = {}
    if len(argv) >= 4 and argv[-2] == CLIENT_OPTION:
        if argv[-1] not in CLIENTS:
            return None
        out["client"] = argv[-1]
        argv = argv[:-2]
    if len(argv) < 2 or list(argv[-2:]) != ["hook", "prompt"]:
        return None
    words = list(argv[:-2])
    while words:
        word = words.pop(0)
        name, eq, value = word.partition("=")
        if name not in _VALUED:
            return None
        if not eq:
            if not words:
                return None
            value = words.pop(0)
        out[_VALUED[name]] = value
    return out


class _NoOwner(Exception):
    """No server answers on this data directory: the full command runs instead."""


def prompt(options: Mapping[str, str], stdin_text: str) -> bool:
    """Run the prompt hook against the running server; True when it is done (context
    printed or not, one log line written), False when no server answered and the full
    command must run instead (nothing printed, nothing logged)."""
    started = time.monotonic()
    outcome: dict[str, Any] = {}
    home = _home(options.get("home"))
    try:
        if not home.is_dir():
            return False  # the full command reports it
        endpoint = _endpoint(home)
        given = HookInput.from_json(json.loads(stdin_text or "{}"))
        outcome["event"] = given.event
        if given.cwd and str(project_root(Path(given.cwd))) in paused_projects(home):
            outcome["paused"] = True
        else:
            outcome["context"] = _context(home, options, given, endpoint, started)
    except _NoOwner:
        return False
    except Exception as exc:  # a hook must never break the client: logged, not raised
        outcome["error"] = _described(exc)
    client = CLIENTS[options.get("client", DEFAULT_CLIENT)]
    print_outcome(client, outcome.get("event") or "UserPromptSubmit", outcome.get("context"))
    seconds = time.monotonic() - started
    log_run(home, "prompt", outcome, seconds, "lean", stderr=not client.json_always)
    return True


def _home(flag: str | None) -> Path:
    from ferrex.home_safety import resolve_home

    return resolve_home(flag)


def _endpoint(home: Path) -> tuple[int, str]:
    from ferrex.ownership import Endpoint

    found = Endpoint.read(home)
    if found is None:
        raise _NoOwner(f"no readable endpoint file at {Endpoint.path(home)}")
    return found.port, found.token


def _context(
    home: Path,
    options: Mapping[str, str],
    given: HookInput,
    endpoint: tuple[int, str],
    started: float,
) -> str:
    from ferrex.config import load

    flags: dict[str, Any] = {key: options.get(key) for key in
                             ("store.agent_id", "store.default_namespace",
                              "store.default_visibility")}  # fmt: skip
    config_file = options.get("config")
    config = load(home, Path(config_file) if config_file else None, flags=flags)
    namespace_flag = flags["store.default_namespace"]
    namespace = hook_namespace(config, namespace_flag, given.cwd or _cwd_if_no_flag())
    caller = {"agent_id": config["store.agent_id"], "namespace": namespace,
              "visibility": config["store.default_visibility"]}  # fmt: skip

    def call(request: Recall) -> Mapping[str, Any]:
        return _call(endpoint, request, caller, started + PROMPT_DEADLINE)

    return prompt_hook(call, given.prompt)


def _cwd_if_no_flag() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def _call(
    endpoint: tuple[int, str],
    request: Recall,
    caller: Mapping[str, Any],
    deadline: float,
) -> dict[str, Any]:
    """One tool call to the owner on a connection of its own, its request in the frame a peer
    sends (:func:`ferrex.server.tool_calls.encode`); :class:`_NoOwner` when the owner cannot
    be reached or closes before answering the hello (it is gone or going), the owner's error
    raised as a ferrex error, a deadline passed as ``TimeoutError``."""
    from ferrex.server.frames import recv_frame, send_frame, versions
    from ferrex.server.tool_calls import encode

    port, token = endpoint
    left = max(0.05, deadline - time.monotonic())
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=left)
    except OSError as exc:
        raise _NoOwner(str(exc)) from exc
    with sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            send_frame(sock, {"token": token, **versions()})
            hello = recv_frame(sock, limit=1 << 20)
        except (OSError, ValueError) as exc:
            raise _NoOwner(f"no answer to the hello: {exc}") from exc
        if hello is None:
            raise _NoOwner("the owner closed the connection before answering its hello")
        if not isinstance(hello.get("ok"), Mapping):
            raise _owner_error(hello)
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        send_frame(sock, {"tool": request.tool, "args": encode(request), "caller": dict(caller)})
        reply = recv_frame(sock)
    if reply is None:
        raise ConnectionError("the owner closed the connection before answering")
    if isinstance(reply.get("ok"), dict):
        return dict(reply["ok"])
    raise _owner_error(reply)


def _owner_error(reply: Mapping[str, Any]) -> Exception:
    from ferrex.errors import FerrexError

    error = reply.get("error")
    doc = error if isinstance(error, Mapping) else {}
    return FerrexError(str(doc.get("message", "the memory server failed")),
                       code=str(doc.get("code", "error")))  # fmt: skip


def _described(exc: BaseException) -> str:
    from ferrex.errors import FerrexError

    if isinstance(exc, FerrexError):
        return f"[{exc.code}] {exc.message}"
    return f"{type(exc).__name__}: {exc}"
