"""Codex CLI's hooks, as ferrex uses them: the events and the settings files (read and written
as :mod:`ferrex.hooks.command_hooks` says; pure). The brief and the prompt hook only: there is
no capture, because the file ``transcript_path`` names is not a documented format.

What of Codex CLI's hooks this relies on (its documentation, developers.openai.com/codex/hooks,
and openai/codex's source as stored in the reference index: ``codex-rs/config/src/
hook_config.rs``, ``codex-rs/hooks/src/engine/output_parser.rs`` and the generated schemas
``codex-rs/hooks/schema/generated/*.command.{input,output}.schema.json``):

- ``hooks.json`` beside a config layer: ``<repo>/.codex/hooks.json`` of a project,
  ``~/.codex/hooks.json`` of a user, holding ``{"hooks": {EVENT: [{"matcher": "...",
  "hooks": [{"type": "command", "command": "...", "timeout": SECONDS}]}]}}``
  (``HooksFile``, ``MatcherGroup``, ``HookHandlerConfig::Command``); hooks are on unless
  ``config.toml`` has ``[features] hooks = false`` (earlier versions: off unless
  ``codex_hooks = true``), and a hook that is not managed must be reviewed and trusted by
  the user before it runs;
- the events used here: ``SessionStart`` (``source``: startup, resume, clear, compact or
  fork) and ``UserPromptSubmit`` (``prompt``); both get ``session_id``,
  ``transcript_path`` (a string or null), ``cwd``, ``hook_event_name``, ``model`` and
  ``permission_mode`` on stdin;
- exit 0 with ``{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext":
  TEXT}}`` on stdout adds TEXT to the model's context; nothing on stdout is no output.

Left out: ``PreCompact`` and ``Stop`` (at the end of every turn; Codex CLI has no session
end), which could only capture the conversation. ``transcript_path`` is the session's
rollout, JSON lines whose items the documentation does not describe and the source changes
(its reader is Codex's own, ``codex_rollout``; rollouts may be stored compressed).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Final

from ferrex.hooks.command_hooks import Client, HookSpec

NAME: Final = "codex-cli"

HOOKS: Final = (
    HookSpec("SessionStart", "session-start", 15),
    HookSpec("UserPromptSubmit", "prompt", 10),
)
"""Timeouts in seconds, Codex CLI's unit."""

CLIENT: Final = Client(
    NAME,
    HOOKS,
    project=PurePath(".codex", "hooks.json"),
    user=PurePath(".codex", "hooks.json"),
)
