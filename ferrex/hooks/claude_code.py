"""Claude Code's hooks, as ferrex uses them: the events, the settings files, and the input
and output (read and written as :mod:`ferrex.hooks.command_hooks` says; pure).

What of Claude Code's hooks format this relies on:

- settings (``.claude/settings.local.json`` of a project, ``~/.claude/settings.json`` of a
  user) hold ``{"hooks": {EVENT: [{"matcher": "...", "hooks": [{"type": "command",
  "command": "...", "timeout": SECONDS}]}]}}``; ``matcher`` may be left out (every source or
  trigger), and the events used here are ``SessionStart``, ``UserPromptSubmit``,
  ``PreCompact`` and ``SessionEnd``;
- a command hook gets one JSON object on stdin: ``session_id``, ``transcript_path``,
  ``cwd``, ``hook_event_name``, and per event ``source`` (SessionStart), ``prompt``
  (UserPromptSubmit), ``trigger`` (PreCompact);
- exit 0 with ``{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext":
  TEXT}}`` on stdout adds TEXT to the model's context (SessionStart, UserPromptSubmit);
  exit 0 with nothing on stdout changes nothing.

The transcript's format is read by :mod:`ferrex.porting.transcripts`.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Final

from ferrex.hooks.command_hooks import Client, HookSpec

HOOKS: Final = (
    HookSpec("SessionStart", "session-start", 15),
    HookSpec("UserPromptSubmit", "prompt", 10),
    HookSpec("PreCompact", "capture", 60),
    HookSpec("SessionEnd", "capture", 60),
)
"""Timeouts in seconds, Claude Code's unit."""

CLIENT: Final = Client(
    "claude-code",
    HOOKS,
    project=PurePath(".claude", "settings.local.json"),
    user=PurePath(".claude", "settings.json"),
)
