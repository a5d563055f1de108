"""A Gemini CLI session file, read as ferrex store requests (pure: no I/O).

The file a Gemini CLI hook's ``transcript_path`` names is the session's recording, as
google-gemini/gemini-cli writes and reads it at 5411f113 (August 2026:
``packages/core/src/services/chatRecordingService.ts`` and ``chatRecordingTypes.ts``):
JSON Lines, one record per line, read in order (a line that is not JSON is passed over):

- the session's metadata, ``sessionId`` and ``projectHash`` (with ``startTime``, ``kind``…);
  a whole legacy ``.json`` file is one such object with its ``messages`` in it;
- a message, any object with a string ``id``: ``timestamp`` (ISO 8601), ``type`` (``user``,
  ``gemini``, or the client's own ``info``, ``error``, ``warning``), ``content`` and, for a
  user message that differs from what the model was sent (``@file`` expanded),
  ``displayContent``: a string, a part, or a list of strings and parts (``text``, with
  ``thought`` true for a thought; ``functionCall``, ``functionResponse``, ``inlineData``…);
  a ``gemini`` message also has ``toolCalls`` and ``thoughts``. A message is written again,
  whole, each time it changes (its tokens, its tool calls): the last one of an id counts,
  in the place of its first;
- ``{"$rewindTo": ID}``: that message and every later one are gone (all, for an id not
  there);
- ``{"$set": {...}}``: metadata; with ``messages``, the messages are those from then on.

How the messages read as memory follows the Claude Code transcript's reader
(:func:`ferrex.porting.transcripts.add_message`: one episodic memory per message,
``"user: "`` or ``"assistant: "``, keyed by ``gemini-cli``, the session id and the
message's ``id``, so a second capture stores only what is new). Left out: tool calls and
their responses (a ``user`` message of ``functionResponse`` parts), thoughts, images and
files, the client's own notices; a user message the client ignores on resume
(``sessionUtils.isIgnoredUserContent``: a slash command, ``/...``, ``?`` for help, or
opened by ``<session_context>`` or ``<hook_context>``); context hooks added
(``<hook_context>`` blocks: ferrex's own included) and ferrex's context, cut out of any text;
the summary compression puts in place of the history (a user message with a
``<state_snapshot>``) and the model's acknowledgement after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from ferrex.porting.transcripts import Transcript, add_message, an_id, json_objects
from ferrex.rules.conversation import conversation_text

FORMAT: Final = "gemini-cli"
_HOOK_CONTEXT: Final = re.compile(r"<hook_context>.*?(?:</hook_context>|\Z)", re.S)
_COMMANDS: Final = ("/", "?")
_CLIENT_CONTEXT: Final = ("<session_context>", "<hook_context>")
_SNAPSHOT: Final = "<state_snapshot>"
_SPEAKERS: Final = {"user": "user", "gemini": "assistant"}


def parse(text: str, session: str | None = None) -> Transcript:
    """The store requests of a session file's text (``session``: the hook's session id,
    used when the file names none)."""
    out = Transcript(session=session)
    messages: dict[str, dict[str, Any]] = {}
    named: str | None = None
    for record in _records(text, out):
        if isinstance(record.get("$rewindTo"), str):
            _rewind(messages, record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), Mapping):
            update = record["$set"]
            if isinstance(update.get("messages"), list):
                messages = _indexed(update["messages"])
            named = _text_field(update, "sessionId") or named
        elif _text_field(record, "sessionId") and _text_field(record, "projectHash"):
            named = _text_field(record, "sessionId") or named
            if isinstance(record.get("messages"), list):
                messages.update(_indexed(record["messages"]))
        else:
            out.skip("not_a_message")
    session_id = named or session
    if not an_id(session_id):
        out.skip("no_id")
        return out
    out.session = session_id
    after_snapshot = False
    for message in messages.values():
        after_snapshot = _message(message, str(session_id), after_snapshot, out)
    return out


def _records(text: str, out: Transcript) -> list[dict[str, Any]]:
    """The file's records: its lines, or the one object of a legacy ``.json`` file."""
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        out.lines = 1
        return [whole]
    return list(json_objects(text, out))


def _rewind(messages: dict[str, dict[str, Any]], to: str) -> None:
    ids = list(messages)
    for gone in ids[ids.index(to) :] if to in messages else ids:
        del messages[gone]


def _indexed(listed: list[Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)}


def _text_field(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) and value else None


def _message(message: dict[str, Any], session: str, after_snapshot: bool, out: Transcript) -> bool:
    """Add one message's requests; whether it was the summary compression left (so that
    the model's acknowledgement after it is left out too)."""
    speaker = _SPEAKERS.get(str(message.get("type")))
    if speaker is None:
        out.skip("client_notice")
        return False
    if not an_id(message["id"]):
        out.skip("no_id")
        return False
    if speaker == "assistant" and after_snapshot:
        out.skip("summary")
        return False
    shown = message.get("displayContent") if speaker == "user" else None
    raw = _text(shown if shown else message.get("content"), out)
    if speaker == "assistant":
        for _ in message.get("toolCalls") or []:
            out.skip("tool_call")
    if speaker == "user" and _SNAPSHOT in raw:
        out.skip("summary")
        return True
    if speaker == "user" and raw.lstrip().startswith(_COMMANDS):
        out.skip("command")
        return False
    if speaker == "user" and raw.lstrip().startswith(_CLIENT_CONTEXT):
        out.skip("client_context")
        return False
    text = conversation_text(_HOOK_CONTEXT.sub("", raw))
    add_message(out, FORMAT, session, message["id"], speaker, text, message.get("timestamp"))
    return False


def _text(content: Any, out: Transcript) -> str:
    """The text of a message's content (a string, a part, or a list of them): its text parts
    that are not thoughts; other parts counted and left out."""
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part.strip())
        elif not isinstance(part, dict):
            continue
        elif part.get("thought") is True:
            out.skip("thought")
        elif isinstance(part.get("text"), str):
            texts.append(part["text"].strip())
        elif "functionCall" in part:
            out.skip("tool_call")
        elif "functionResponse" in part:
            out.skip("tool_result")
        else:
            out.skip("non_text_part")
    return "\n\n".join(t for t in texts if t)
