"""A Claude Code session transcript, read as ferrex store requests (pure: no I/O).

Claude Code keeps each session as JSON Lines (the ``transcript_path`` its hooks are given):
one object per line. The lines read here have ``type`` ``"user"`` or ``"assistant"``, a
``uuid`` (the line's id), a ``timestamp`` (ISO 8601), a ``sessionId`` and a ``message``
with ``role`` and ``content``: a string, or a list of blocks (``text``, ``tool_use``,
``tool_result``, ``thinking``, images). Other lines (summaries, system lines, snapshots) and
lines that are not JSON objects are skipped; ``isMeta`` lines (text Claude Code adds itself)
and ``isSidechain`` lines (a sub-agent's own conversation) are not the conversation.

The mapping follows the chat export import (:mod:`ferrex.porting.chats`), so the two read
alike in recall:

- each text of a user or assistant line becomes one *episodic* memory (long ones cut into
  parts by :func:`ferrex.porting.chats.split_text`), opened by its speaker, ``"user: "``
  or ``"assistant: "``;
- ``source`` is ``"claude-code: session [SESSION_ID]"``, ``valid_from`` the line's time;
- ``import_key`` is :func:`ferrex.porting.chats.import_key` of (``claude-code``, the
  session id, the line's ``uuid``), ``" part I/N"`` for a part: capturing the same
  transcript again, or a longer one later in the session, stores only the new lines;
- tool calls and tool results (and thinking) are left out, counted by reason;
- ferrex's own context, which the hooks inject between ``context.OPEN`` and
  ``context.CLOSE`` (:mod:`ferrex.hooks.context`), is cut out of any text it shows up in,
  so a recalled memory is never stored again as talk;
  so are the client's ``<system-reminder>`` blocks (and a tag left empty by the cut), and a
  line that is a slash command, a shell command of ``!`` mode or their output
  (``<command-name>``, ``<local-command-stdout>``, ``<bash-input>``, ``<bash-stdout>``...) or
  the client's ``[Request interrupted by user]`` is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from ferrex.porting.chats import import_key, split_text
from ferrex.rules.conversation import conversation_text
from ferrex.rules.memory_input import StoreRequest

FORMAT: Final = "claude-code"
#: A line the client writes for a slash command or a shell command (``!`` mode) and their
#: output: tool output in all but name, never talk.
_COMMAND: Final = re.compile(
    r"\s*<(?:command-name|command-message|local-command-stdout|local-command-stderr"
    r"|bash-input|bash-stdout|bash-stderr)>"
)
#: What the client writes in the user's place when the user stops it.
_INTERRUPTED: Final = re.compile(r"\s*\[Request interrupted by user[^\]]*\]\s*$")
#: A tag left empty (its ferrex block cut out of it).
_EMPTY_TAG: Final = re.compile(r"<([A-Za-z][\w-]*)>\s*</\1>")
PART_CHARS: Final = 1000
"""Parts of a long text, as the chat import cuts an assistant message."""
CONTENT_CHARS: Final = 8000

_SPEAKERS: Final = {"user": "user", "assistant": "assistant"}


@dataclass
class Transcript:
    """What a transcript holds for memory: the requests in line order, what was left out."""

    session: str | None = None
    lines: int = 0
    requests: list[StoreRequest] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def parse(text: str, session: str | None = None) -> Transcript:
    """The store requests of a transcript's JSON Lines (``session``: the hook's session id,
    used when a line names none)."""
    out = Transcript(session=session)
    for line in json_objects(text, out):
        if line.get("type") not in _SPEAKERS:
            out.skip("not_a_message")
            continue
        _line(line, out)
    return out


def json_objects(text: str, out: Transcript) -> Iterator[dict[str, Any]]:
    """The JSON objects of a file of JSON Lines, each line that is not blank counted in
    ``out.lines``; one that is not JSON is skipped as ``not_json``, another value than an
    object as ``not_a_message``."""
    for raw in text.splitlines():
        if not raw.strip():
            continue
        out.lines += 1
        try:
            line = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            out.skip("not_json")
            continue
        if isinstance(line, dict):
            yield line
        else:
            out.skip("not_a_message")


def _line(line: dict[str, Any], out: Transcript) -> None:
    if line.get("isMeta") is True:
        out.skip("meta")
        return
    if line.get("isSidechain") is True:
        out.skip("sidechain")
        return
    uuid, session = line.get("uuid"), line.get("sessionId") or out.session
    if not an_id(uuid) or not an_id(session):
        out.skip("no_id")
        return
    message = line.get("message")
    if not isinstance(message, dict):
        out.skip("no_message")
        return
    speaker = _SPEAKERS.get(str(message.get("role") or line.get("type")))
    if speaker is None:
        out.skip("not_a_message")
        return
    raw = _text(message.get("content"), out)
    if _COMMAND.match(raw):  # a slash or shell command and its output, not talk
        out.skip("command")
        return
    if _INTERRUPTED.match(raw):
        out.skip("interrupted")
        return
    text = _EMPTY_TAG.sub("", conversation_text(raw)).strip()
    add_message(out, FORMAT, str(session), str(uuid), speaker, text, line.get("timestamp"))


def add_message(
    out: Transcript, fmt: str, session: str, message: str, speaker: str, text: str, when: Any
) -> None:
    """The requests of one message's ``text`` (already the conversation's alone), said by
    ``speaker`` (``user`` or ``assistant``) at ``when`` (ISO 8601, else no time), keyed by
    (``fmt``, ``session``, ``message``); an empty text is counted and left out. Every
    client's transcript reader ends here, so their memories read alike."""
    if not text:
        out.skip("empty_message")
        return
    label = f"{speaker}: "
    limit = PART_CHARS if speaker == "assistant" else CONTENT_CHARS - len(label)
    parts = split_text(text, limit) if len(text) > limit else [text]
    key = import_key(fmt, session, message)
    for i, part in enumerate(parts, start=1):
        numbered = f" part {i}/{len(parts)}" if len(parts) > 1 else ""
        out.requests.append(
            StoreRequest(
                type="episodic",
                content=label + part,
                source=f"{fmt}: session [{session}]",
                valid_from=_time(when),
                context={"import": fmt, "session": session, "message": message},
                split_long=True,
                import_key=key + numbered,
            )
        )


def _text(content: Any, out: Transcript) -> str:
    """The text of a message's content: a string, or its text blocks (tool use, tool results,
    thinking and other blocks counted and left out)."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"].strip())
        elif kind == "tool_use":
            out.skip("tool_call")
        elif kind == "tool_result":
            out.skip("tool_result")
        else:
            out.skip("non_text_part")
    return "\n\n".join(t for t in texts if t)


def an_id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value.strip()) <= 100 and value.isprintable()


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except (ValueError, OverflowError):
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
