"""Gemini CLI's hooks, as ferrex uses them: the events, the settings files, and the input and
output (read and written as :mod:`ferrex.hooks.command_hooks` says; pure).

What of Gemini CLI's hooks this relies on, as its repository documents and implements them
(google-gemini/gemini-cli at 5411f113, August 2026: ``docs/hooks/index.md``,
``docs/hooks/reference.md``; ``packages/core/src/hooks/hookRunner.ts``,
``hookEventHandler.ts``, ``types.ts``):

- settings (``.gemini/settings.json`` in the directory Gemini CLI starts in, which its
  ``Storage.getWorkspaceSettingsPath`` reads; ``~/.gemini/settings.json`` of a user) hold
  ``{"hooks": {EVENT: [{"matcher": "...", "hooks": [{"name": "...", "type": "command",
  "command": "...", "timeout": MILLISECONDS}]}]}}``; no ``matcher`` matches every source or
  trigger; hooks are on unless ``hooksConfig.enabled`` is false; a project's hooks are
  fingerprinted and the user is warned before one that is new or changed runs;
- the events used here: ``SessionStart`` (startup, resume, ``/clear``), ``BeforeAgent``
  (after the user submits a prompt, before planning; ``prompt`` on stdin), ``PreCompress``
  (before the history is summarised; advisory) and ``SessionEnd`` (exit or ``/clear``;
  documented as best effort, awaited in the exit clean-up);
- stdin: one JSON object with ``session_id``, ``transcript_path`` (the session's file,
  ``ChatRecordingService.getConversationFilePath``; empty when it records nothing),
  ``cwd``, ``hook_event_name``, ``timestamp``, and per event ``source``, ``prompt``,
  ``trigger`` or ``reason``; the command runs through the shell, in ``cwd``, with the
  environment sanitised (``HOME`` and ``PATH`` kept);
- exit 0 with ``{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext":
  TEXT}}`` on stdout adds TEXT, wrapped in ``<hook_context>`` tags: for ``SessionStart`` as
  the history's first turn, for ``BeforeAgent`` as a part after this turn's prompt. Exit 2
  blocks the turn, any other exit code is a warning; nothing on stdout changes nothing, but
  text on stderr then is read as the output (non-JSON: shown to the user as a
  ``systemMessage``). So each of ferrex's hooks here runs with ``--client gemini-cli`` and
  keeps ``json_always``: ``{}`` on stdout when it has nothing to add (paused, nothing
  relevant, a failure, no data directory), nothing on stderr; what went wrong is in
  ferrex's hook log.

The session file's format is read by :mod:`ferrex.porting.gemini_sessions`.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Final

from ferrex.hooks.command_hooks import CLIENT_OPTION, Client, HookSpec

NAME: Final = "gemini-cli"
_CLIENT: Final = (CLIENT_OPTION, NAME)

HOOKS: Final = (
    HookSpec("SessionStart", "session-start", 15_000, _CLIENT, name="ferrex-session-start"),
    HookSpec("BeforeAgent", "prompt", 10_000, _CLIENT, name="ferrex-prompt"),
    HookSpec("PreCompress", "capture", 60_000, _CLIENT, name="ferrex-capture"),
    HookSpec("SessionEnd", "capture", 60_000, _CLIENT, name="ferrex-capture"),
)
"""Timeouts in milliseconds, Gemini CLI's unit."""

CLIENT: Final = Client(
    NAME,
    HOOKS,
    project=PurePath(".gemini", "settings.json"),
    user=PurePath(".gemini", "settings.json"),
    json_always=True,
)
