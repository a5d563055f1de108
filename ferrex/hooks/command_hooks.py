"""What the clients' command hooks have in common, as ferrex uses them (pure: files are read
and written by ``ferrex/cli/hooks.py``): the settings entries ferrex adds and finds, the JSON a
hook reads on stdin and the JSON that adds context on stdout.

Claude Code (:mod:`ferrex.hooks.claude_code`), Gemini CLI (:mod:`ferrex.hooks.gemini_cli`) and
Codex CLI (:mod:`ferrex.hooks.codex_cli`) take the same shapes, each module citing where its
client says so:

- settings hold ``{"hooks": {EVENT: [{"matcher": "...", "hooks": [{"type": "command",
  "command": "...", "timeout": N}]}]}}`` (``matcher`` left out: every source or trigger;
  ``timeout`` in the client's unit);
- a hook gets one JSON object on stdin with ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name``, and ``prompt`` for the prompt's event (:class:`HookInput`);
- exit 0 with ``{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext":
  TEXT}}`` on stdout adds TEXT to the model's context (:func:`context_output`); a client
  that reads stderr when stdout is empty gets ``{}`` instead of nothing (``Client.json_always``).

An entry is ferrex's when its command runs a ``ferrex`` executable's ``hook`` subcommand
(:func:`is_ours`), whichever client's: install replaces ferrex's entries and keeps every other
one as it is; uninstall removes ferrex's entries only.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Final

SUBCOMMANDS: Final = frozenset({"session-start", "prompt", "capture"})
"""The ``ferrex hook`` subcommands a client's settings may run."""
CLIENT_OPTION: Final = "--client"
"""The option a ``ferrex hook`` subcommand takes to name the client that runs it: whose
transcript ``capture`` reads, whose rules for stdout and stderr the hook keeps."""


@dataclass(frozen=True)
class HookSpec:
    """One event's hook: the ``ferrex hook`` subcommand it runs (with ``args`` after it), how
    long the client may let it take (in the client's unit) and, where the client shows hooks
    by name, its ``name``."""

    event: str
    subcommand: str
    timeout: int
    args: tuple[str, ...] = ()
    name: str | None = None


@dataclass(frozen=True)
class Client:
    """A client whose settings take command hooks: its hooks and where its settings are
    (``project``: under a project's root; ``user``: under the user's home)."""

    name: str
    hooks: tuple[HookSpec, ...]
    project: PurePath
    user: PurePath
    json_always: bool = False
    """Whether its hooks print a JSON object on stdout whatever happens (``{}``: nothing to
    add) and never write stderr: a client that shows a hook's stderr to its user when
    stdout is empty (Gemini CLI)."""


def command(base: Sequence[str], spec: HookSpec) -> str:
    """The shell command of ``spec``'s hook: ``base`` (the ferrex executable and its global
    options), ``hook SUBCOMMAND`` and the spec's arguments, each word quoted."""
    return shlex.join([*base, "hook", spec.subcommand, *spec.args])


def is_ours(entry: object) -> bool:
    """Whether a hook entry runs ``ferrex ... hook SUBCOMMAND`` (with or without
    ``--client NAME``)."""
    if not isinstance(entry, Mapping) or entry.get("type") != "command":
        return False
    text = entry.get("command")
    if not isinstance(text, str):
        return False
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    if len(words) >= 5 and words[-2] == CLIENT_OPTION:
        words = words[:-2]
    return (
        len(words) >= 3
        and PurePath(words[0]).name == "ferrex"
        and words[-2] == "hook"
        and words[-1] in SUBCOMMANDS
    )


def without_ours(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with ferrex's hook entries removed (a group left empty goes, an event
    left with no group goes, ``hooks`` left empty goes); everything else as it was."""
    out = copy.deepcopy(dict(settings))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(is_ours(e) for e in inner):
                kept.append(group)
                continue
            rest = [e for e in inner if not is_ours(e)]
            if rest:
                kept.append({**group, "hooks": rest})
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def with_ours(settings: Mapping[str, Any], base: Sequence[str], client: Client) -> dict[str, Any]:
    """``settings`` with ``client``'s ferrex hooks (replacing any earlier ones of ferrex's),
    appended after the entries already there."""
    out = without_ours(settings)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("the settings' hooks is not an object")
    for spec in client.hooks:
        groups = hooks.setdefault(spec.event, [])
        if not isinstance(groups, list):
            raise ValueError(f"the settings' hooks.{spec.event} is not a list")
        entry: dict[str, Any] = {"type": "command", "command": command(base, spec),
                                 "timeout": spec.timeout}  # fmt: skip
        if spec.name is not None:
            entry = {"name": spec.name, **entry}
        groups.append({"hooks": [entry]})
    return out


def installed(settings: Mapping[str, Any]) -> dict[str, list[str]]:
    """Event → the commands of ferrex's hooks in ``settings``."""
    found: dict[str, list[str]] = {}
    hooks = settings.get("hooks")
    if not isinstance(hooks, Mapping):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, Mapping) else None
            for entry in inner if isinstance(inner, list) else []:
                if is_ours(entry):
                    found.setdefault(str(event), []).append(str(entry["command"]))
    return found


def homes_named(settings: Mapping[str, Any]) -> list[str]:
    """The data directories (``--home``) that ferrex's hooks in ``settings`` run against, in
    the order first met: where ``ferrex hooks pause`` must say so for them to hear it."""
    homes: dict[str, None] = {}
    for commands in installed(settings).values():
        for text in commands:
            words = shlex.split(text)
            end = max(at for at, word in enumerate(words) if word == "hook")
            for at, word in enumerate(words[:end]):
                if word == "--home" and at + 1 < end:
                    homes[words[at + 1]] = None
                elif word.startswith("--home="):
                    homes[word.removeprefix("--home=")] = None
    return list(homes)


@dataclass(frozen=True)
class HookInput:
    """What a hook was told on stdin (fields of the wrong kind read as absent)."""

    event: str | None
    session_id: str | None
    transcript_path: str | None
    cwd: str | None
    prompt: str | None

    @classmethod
    def from_json(cls, raw: object) -> HookInput:
        doc = raw if isinstance(raw, Mapping) else {}

        def text(key: str) -> str | None:
            value = doc.get(key)
            return value if isinstance(value, str) and value else None

        return cls(text("hook_event_name"), text("session_id"), text("transcript_path"),
                   text("cwd"), text("prompt"))  # fmt: skip


def context_output(event: str, text: str) -> dict[str, Any]:
    """The stdout document that adds ``text`` to the model's context."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
