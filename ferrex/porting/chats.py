"""Claude and ChatGPT conversation exports, read as ferrex store requests (pure: no I/O).

Both services export a ``conversations.json``: one JSON array, one object per conversation.

**ChatGPT** (Settings → Data controls → Export): a conversation has ``id`` (or
``conversation_id``), ``title``, ``create_time`` (seconds since the epoch) and ``mapping``,
node id → ``{"message": {...} | null, "parent": id | null, "children": [ids]}``, with
``current_node`` the leaf the user last saw. Editing a message or regenerating an answer
starts a sibling branch, so the conversation *as shown* is the path from ``current_node`` up
through the parents, read root first; the other branches are not imported (counted as
``other_branch``). A message has ``id``, ``author.role`` (user, assistant, system, tool),
``create_time`` (may be null), ``recipient`` (``all``, or the tool an assistant message
calls), ``metadata`` and ``content``: ``content_type`` ``text`` or ``multimodal_text`` with
``parts`` (strings, and objects for images, audio and files; a voice conversation's
``audio_transcription`` objects carry the words said, which are kept); other content
types (``code``, ``execution_output``, ``thoughts``, browsing displays, custom
instructions) are not conversation text.

**Claude** (Settings → Privacy → Export data): a conversation has ``uuid``, ``name``,
``created_at`` (ISO 8601) and ``chat_messages``, in order: ``uuid``, ``sender`` (``human``
or ``assistant``), ``text``, ``content`` (blocks: ``{"type": "text", "text"}``,
``tool_use``, ``tool_result``, ``thinking``, ...), ``attachments`` (pasted or uploaded
documents), ``files`` (images and files) and ``created_at``. When messages carry
``parent_message_uuid`` (a conversation with edits or retries), the shown path is followed
back from ``current_leaf_message_uuid``, or else from the last message of the list.

The mapping, the same for both:

- each message on the shown path becomes one *episodic* memory (or several, see
  ``assistant``), its text opened by the speaker, ``"user: ..."`` or ``"assistant: ..."``
  (as ferrex's other conversation imports name speakers; Claude's ``human`` is the user);
- ``source`` names the conversation: ``"chatgpt: TITLE [ID]"`` / ``"claude: TITLE [ID]"``,
  so recall's episode context lends scores between turns of one conversation;
- ``valid_from`` is the message's own time; a message without one takes its
  conversation's time (counted in ``untimed``), and failing that the time of the import;
- ``context`` keeps the provenance: format, conversation id and message id (and the part);
- ``import_key`` is ``FORMAT conversation "CID" message "MID"`` (the ids JSON-quoted, so no
  two pairs give one key; ``" part I/N"`` for a part), so importing the file again, or a
  newer export that still holds the old messages, stores only what is new; a re-run must
  use the same ``assistant`` and ``split_chars`` to recognise parts. A message id alone is
  no key: two conversations may use one id (a conversation copied or shared, a hostile
  file). Before this, the key was ``"FORMAT message MID"``; that form is passed along as
  ``former_import_keys``, so a file imported then still stores nothing again (see
  :func:`ferrex.core.decide.decide_store`). A message whose text changed since its import
  is not stored again but reported (``changed_since_import``); an edit that changes how
  many parts a split message has changes the parts' keys, so those parts are stored beside
  the old ones;
- what is not conversation text is left out and counted by reason (:data:`REASONS`):
  system and tool messages, tool calls, non-text parts (images, code and its output,
  thinking), attachments and files, hidden messages, empty messages and conversations.

A conversation whose shape is not the format's (a node's ``parent`` that is not a node id,
``children`` that are not a list of ids, a ``uuid`` or ``parent_message_uuid`` that is not
a string id, a ``current_node`` or leaf that names no message, parents in a cycle) is left
out whole and listed in :attr:`ChatParse.invalid` with why, like an invalid line of a line
import: nothing of it is stored, the other conversations are. A file none of whose
conversations is of the format is refused whole (UsageError): it is not such an export.
The shapes are checked in one place per format, :func:`_chatgpt_tree` and
:func:`_claude_links`, before a path is followed. A time that cannot be read (not a
number or not ISO 8601, or out of the range of a date: ``0001-01-01T00:00:00+14:00`` is
before year 1 in UTC) is no time: the message takes its conversation's. Inside a message,
a field of an unexpected kind reads as absent, as the formats' optional fields do: an
author's ``role`` that is not a string is another author (left out as a system message),
ChatGPT ``parts`` that are not a list hold no text (an empty message), Claude ``content``
that is not a list leaves the message's ``text``.

Long messages (longer than ``split_chars``): with ``assistant="split"`` (the default) an
assistant message is cut at paragraph, then sentence, then word boundaries into parts of at
most ``split_chars`` characters, each its own memory opened by the speaker; with ``full`` it
is kept whole (embedded in parts downstream, ``split_long``); with ``skip`` assistant
messages are not imported at all (user turns only). A user message is always kept whole. A
message longer than a memory's content limit is split whatever the choice, since it could
not be stored whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from ferrex.errors import UsageError
from ferrex.rules.memory_input import StoreRequest

ChatFormat = Literal["claude", "chatgpt"]
AssistantMode = Literal["full", "skip", "split"]
FORMATS: Final = ("claude", "chatgpt")
ASSISTANT_MODES: Final = ("split", "full", "skip")
DEFAULT_SPLIT_CHARS: Final = 1000
"""Parts of a long assistant message: about a conversation turn each (a derived episode's
``episode_max_chars``) and about the bundled model's window of 256 tokens."""
MIN_SPLIT_CHARS: Final = 200
TITLE_CHARS: Final = 200

REASONS: Final = {
    "empty_conversation": "conversations without a message to import",
    "other_branch": "messages on an edited or regenerated branch, not the one shown",
    "system_message": "system messages (custom instructions, hidden context), other authors",
    "tool_message": "tool output messages (code interpreter, browsing, plugins)",
    "tool_call": "tool calls (an assistant message to a tool, or a tool_use block)",
    "non_text_part": "non-text parts (images, code and its output, thinking, tool results)",
    "attachment": "attachments and files",
    "hidden": "messages hidden from the conversation",
    "empty_message": "messages without text",
    "assistant_turn": "assistant messages (--assistant skip)",
}
"""Why something of an export was not imported (the keys of :attr:`ChatParse.skipped`)."""

_SPEAKERS: Final = {"user": "user", "human": "user", "assistant": "assistant"}
_CHATGPT_TEXT: Final = ("text", "multimodal_text")


@dataclass(frozen=True)
class ChatItem:
    """One store request made from one message (or one part of a long message)."""

    conversation: str
    message: str
    part: str | None
    """``"I/N"`` for a part of a split message, else None."""
    request: StoreRequest


@dataclass
class ChatParse:
    """What an export holds: the store requests, in conversation and message order, and
    what was left out, counted by reason."""

    format: ChatFormat
    conversations: int = 0
    messages: int = 0
    """Messages on the shown paths (imported or not)."""
    untimed: int = 0
    """Messages without a time of their own (their conversation's time was used)."""
    items: list[ChatItem] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    invalid: list[InvalidConversation] = field(default_factory=list)
    """Conversations left out whole because their shape is not the format's."""

    def skip(self, reason: str, n: int = 1) -> None:
        if n:
            self.skipped[reason] = self.skipped.get(reason, 0) + n

    def add(self, other: ChatParse) -> None:
        """Take in the counts and requests of ``other`` (one conversation's)."""
        self.conversations += other.conversations
        self.messages += other.messages
        self.untimed += other.untimed
        self.items += other.items
        for reason, n in other.skipped.items():
            self.skip(reason, n)


@dataclass(frozen=True)
class InvalidConversation:
    """A conversation of an export that was not imported, and why."""

    index: int
    """Its place in the file, from 1."""
    conversation: str | None
    """Its id, when it has one that reads as an id."""
    error: UsageError
    """Why, its message naming the conversation once: ``conversation 2 (ID) has no ...``."""


def detect(doc: Any) -> ChatFormat | None:
    """Which export ``doc`` (a parsed ``conversations.json``, or one conversation) is, by
    shape: ``mapping`` is ChatGPT's, ``chat_messages`` Claude's; None when neither."""
    conversations = doc if isinstance(doc, list) else [doc]
    for conversation in conversations[:1]:
        if isinstance(conversation, dict):
            if "mapping" in conversation:
                return "chatgpt"
            if "chat_messages" in conversation:
                return "claude"
    return None


TOO_DEEP: Final = "nested too deeply to read (arrays and objects within each other)"
"""Why a JSON text the decoder refused for its depth is not read: the decoder stops at the
interpreter's recursion limit (about a thousand levels) instead of recursing without
bound, and no export or import line comes near that."""


def loads(text: str) -> Any:
    """The JSON document of an export; UsageError when it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"not a JSON document: {exc}",
            hint="pass the conversations.json of the export (unzipped)",
        ) from exc
    except RecursionError as exc:
        raise UsageError(f"not a JSON document: {TOO_DEEP}") from exc


def parse(
    doc: Any,
    fmt: ChatFormat,
    *,
    assistant: AssistantMode = "split",
    split_chars: int = DEFAULT_SPLIT_CHARS,
    content_chars: int = 8000,
) -> ChatParse:
    """The store requests of an export, or UsageError (naming the conversation) when its
    shape is not the format's: nothing is to be stored from a file that is not one."""
    if split_chars < MIN_SPLIT_CHARS:
        raise UsageError(f"split_chars must be at least {MIN_SPLIT_CHARS}, got {split_chars}")
    conversations = [doc] if isinstance(doc, dict) else doc
    if not isinstance(conversations, list):
        raise UsageError(
            f"a {fmt} export is a JSON array of conversations, not {_kind(doc)}",
            hint="pass the conversations.json of the export",
        )
    out = ChatParse(fmt)
    shape = _Shape(fmt, assistant, split_chars, content_chars)
    for index, conversation in enumerate(conversations, start=1):
        cid = _conversation_id(conversation)
        where = f"conversation {index}" + (f" ({cid})" if cid else "")
        try:
            out.add(_conversation(conversation, where, shape))
        except UsageError as exc:  # its message names it: place in the file, and id
            out.invalid.append(InvalidConversation(index, cid, exc))
    if out.invalid and not out.conversations:
        raise out.invalid[0].error  # not one conversation of the format: not its export
    return out


def _conversation(conversation: Any, where: str, shape: _Shape) -> ChatParse:
    """One conversation's requests and counts, or UsageError (nothing of it is kept)."""
    if not isinstance(conversation, dict):
        raise UsageError(f"{where} is {_kind(conversation)}, not a conversation object")
    out = ChatParse(shape.fmt, conversations=1)
    if shape.fmt == "chatgpt":
        messages = _chatgpt_messages(conversation, where, out)
    else:
        messages = _claude_messages(conversation, where, out)
    for message in messages:
        shape.add(message, out)
    if not out.items:
        out.skip("empty_conversation")
    return out


def _conversation_id(conversation: Any) -> str | None:
    if not isinstance(conversation, dict):
        return None
    for key in ("id", "conversation_id", "uuid"):
        value = conversation.get(key)
        if isinstance(value, str) and _readable_id(value):
            return value.strip()
    return None


@dataclass(frozen=True)
class _Message:
    conversation: str
    title: str
    message: str
    speaker: str | None
    """user or assistant; None for a message left out (``reason`` says why)."""
    text: str
    time: datetime | None
    conversation_time: datetime | None
    reason: str | None = None


@dataclass(frozen=True)
class _Shape:
    """How messages become store requests (speaker, source, time, splitting)."""

    fmt: ChatFormat
    assistant: AssistantMode
    split_chars: int
    content_chars: int

    def add(self, m: _Message, out: ChatParse) -> None:
        out.messages += 1
        if m.reason is not None:
            out.skip(m.reason)
            return
        if not m.text:
            out.skip("empty_message")
            return
        if m.speaker == "assistant" and self.assistant == "skip":
            out.skip("assistant_turn")
            return
        time = m.time
        if time is None:
            out.untimed += 1
            time = m.conversation_time
        label = f"{m.speaker}: "
        whole = self.content_chars - len(label)
        if m.speaker == "assistant" and self.assistant == "split":
            limit = min(self.split_chars, whole)
        else:
            limit = whole
        parts = split_text(m.text, limit) if len(m.text) > limit else [m.text]
        source = f"{self.fmt}: {m.title} [{m.conversation}]"
        for i, part in enumerate(parts, start=1):
            numbered = f"{i}/{len(parts)}" if len(parts) > 1 else None
            suffix = f" part {numbered}" if numbered else ""
            context: dict[str, Any] = {
                "import": self.fmt,
                "conversation": m.conversation,
                "message": m.message,
            }
            if numbered is not None:
                context["part"] = numbered
            request = StoreRequest(
                type="episodic",
                content=label + part,
                source=source,
                valid_from=time,
                context=context,
                split_long=True,
                import_key=import_key(self.fmt, m.conversation, m.message) + suffix,
                former_import_keys=(f"{self.fmt} message {m.message}{suffix}",),
            )
            out.items.append(ChatItem(m.conversation, m.message, numbered, request))


def import_key(fmt: str, conversation: str, message: str) -> str:
    """A message's import key: its conversation's id and its own, JSON-quoted (an id may
    hold spaces or the word ``message``; quoted, no two pairs of ids give one key). ``fmt``
    is an export's format, or the client of a session transcript: ``claude-code``
    (:mod:`ferrex.porting.transcripts`), ``gemini-cli`` (:mod:`ferrex.porting.gemini_sessions`)."""
    quoted = [json.dumps(x, ensure_ascii=False) for x in (conversation, message)]
    return f"{fmt} conversation {quoted[0]} message {quoted[1]}"


# ---- ChatGPT ---------------------------------------------------------------------------


def _chatgpt_messages(conv: Mapping[str, Any], where: str, out: ChatParse) -> list[_Message]:
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise UsageError(
            f"{where} has no mapping object (ChatGPT's message tree)",
            hint="a ChatGPT conversation has mapping: {node id: {message, parent, children}}",
        )
    conv_id = _id(conv.get("id") or conv.get("conversation_id"), f"{where}'s id")
    title = _title(conv.get("title"))
    conv_time = _epoch(conv.get("create_time"))
    tree = _chatgpt_tree(mapping, where)
    path = _chatgpt_path(tree, conv.get("current_node"), where)
    on_path = set(path)
    out.skip(
        "other_branch",
        sum(1 for k, node in tree.items() if k not in on_path and node.message is not None),
    )
    messages: list[_Message] = []
    for node_id in path:
        raw = tree[node_id].message
        if raw is None:
            continue  # the tree's root carries no message
        messages.append(_chatgpt_message(raw, node_id, conv_id, title, conv_time, out, where))
    return messages


@dataclass(frozen=True)
class _Node:
    """A node of ChatGPT's message tree, its links checked."""

    parent: str | None
    children: tuple[str, ...]
    message: Mapping[str, Any] | None


def _chatgpt_tree(mapping: Mapping[str, Any], where: str) -> dict[str, _Node]:
    """The mapping's nodes, every link of them checked once, here: a node is an object, its
    ``parent`` a node id or null, its ``children`` a list of node ids (or absent), its
    ``message`` an object or null. UsageError names the first node that is not so."""
    tree: dict[str, _Node] = {}
    for node_id, node in mapping.items():
        what = f"{where}: node {node_id!r} of its mapping"
        if not isinstance(node, dict):
            raise UsageError(f"{what} is not an object")
        parent = node.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise UsageError(f"{what} has a parent that is {_kind(parent)}, not a node id")
        children = node.get("children")
        if children is None:
            children = []
        if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
            raise UsageError(f"{what} has children that are not a list of node ids")
        message = node.get("message")
        if message is not None and not isinstance(message, dict):
            raise UsageError(f"{what} has a message that is {_kind(message)}, not an object")
        tree[node_id] = _Node(parent, tuple(children), message)
    return tree


def _chatgpt_path(tree: Mapping[str, _Node], current: Any, where: str) -> list[str]:
    """The node ids from the root down to ``current`` (or, without one, down the last
    child of each node: the newest edit or regeneration)."""
    if current is None:
        roots = [k for k, node in tree.items() if node.parent not in tree]
        if not roots:
            return []
        current = roots[0]
        seen = {current}
        while children := [c for c in tree[current].children if c in tree and c not in seen]:
            current = children[-1]
            seen.add(current)
    if not isinstance(current, str):
        raise UsageError(f"{where}: current_node is {_kind(current)}, not a node id")
    if current not in tree:
        raise UsageError(f"{where}: current_node {current!r} is not a node of its mapping")
    parents = {node_id: node.parent for node_id, node in tree.items()}
    return _down_to(current, parents, f"{where}: its mapping's parents form a cycle")


def _down_to(leaf: str, parents: Mapping[str, object], cycle: str) -> list[str]:
    """The ids from the root down to ``leaf``, found going up from it through ``parents``
    until an id it does not hold (a root's parent, or none); UsageError ``cycle`` (the id
    named) where the parents loop."""
    path: list[str] = []
    on_path: set[str] = set()
    node: object = leaf
    while isinstance(node, str) and node in parents:
        if node in on_path:
            raise UsageError(f"{cycle} at {node!r}")
        on_path.add(node)
        path.append(node)
        node = parents[node]
    path.reverse()
    return path


def _chatgpt_message(
    raw: Mapping[str, Any],
    node_id: str,
    conv_id: str,
    title: str,
    conv_time: datetime | None,
    out: ChatParse,
    where: str,
) -> _Message:
    message_id = _id(raw.get("id") or node_id, f"{where}: a message's id")
    author = raw.get("author")
    role = _string(author.get("role")) if isinstance(author, dict) else None
    metadata: Mapping[str, Any] = _object(raw.get("metadata"))
    content: Mapping[str, Any] = _object(raw.get("content"))
    attachments = metadata.get("attachments")
    if isinstance(attachments, list):
        out.skip("attachment", len(attachments))
    base = _Message(conv_id, title, message_id, None, "", _epoch(raw.get("create_time")),
                    conv_time)  # fmt: skip

    def left_out(reason: str) -> _Message:
        return replace(base, reason=reason)

    if metadata.get("is_visually_hidden_from_conversation"):
        return left_out("hidden")
    if role == "system":
        return left_out("system_message")
    if role == "tool":
        return left_out("tool_message")
    if role not in _SPEAKERS:  # another author than the user and the assistant
        return left_out("system_message")
    recipient = raw.get("recipient")
    if role == "assistant" and recipient not in (None, "all"):
        return left_out("tool_call")
    if content.get("content_type") == "user_editable_context":  # custom instructions
        return left_out("system_message")
    if content.get("content_type", "text") not in _CHATGPT_TEXT:
        return left_out("non_text_part")
    texts: list[str] = []
    parts = content.get("parts")
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict) and part.get("content_type") == "audio_transcription":
            part = part.get("text")  # what was said in a voice conversation
        if isinstance(part, str):
            if part.strip():
                texts.append(part.strip())
        else:  # an image, an audio clip, a file pointer
            out.skip("non_text_part")
    return replace(base, speaker=_SPEAKERS[role], text="\n\n".join(texts))


# ---- Claude ----------------------------------------------------------------------------


def _claude_messages(conv: Mapping[str, Any], where: str, out: ChatParse) -> list[_Message]:
    raw_messages = conv.get("chat_messages")
    if not isinstance(raw_messages, list):
        raise UsageError(
            f"{where} has no chat_messages list (Claude's messages)",
            hint="a Claude conversation has chat_messages: [{uuid, sender, text, content}]",
        )
    conv_id = _id(conv.get("uuid"), f"{where}'s uuid")
    title = _title(conv.get("name"))
    conv_time = _iso(conv.get("created_at"))
    links = _claude_links(raw_messages, where)
    shown = _claude_path(links, conv.get("current_leaf_message_uuid"), where)
    out.skip("other_branch", len(raw_messages) - len(shown))
    messages: list[_Message] = []
    for i in shown:
        raw = raw_messages[i]
        message_id = links[i][0]
        for key in ("attachments", "files"):
            if isinstance(raw.get(key), list):
                out.skip("attachment", len(raw[key]))
        speaker = _SPEAKERS.get(str(raw.get("sender")))
        time = _iso(raw.get("created_at"))
        if speaker is None:
            messages.append(_Message(conv_id, title, message_id, None, "", time, conv_time,
                                     reason="system_message"))  # fmt: skip
            continue
        text = _claude_text(raw, out)
        messages.append(_Message(conv_id, title, message_id, speaker, text, time, conv_time))
    return messages


_NO_PARENT: Final = object()
"""A message without ``parent_message_uuid`` (a list in order, no branches)."""


def _claude_links(messages: list[Any], where: str) -> list[tuple[str, object]]:
    """Each message's ``(uuid, parent)``, every link checked once, here: a message is an
    object, its ``uuid`` a string id, its ``parent_message_uuid`` a string id, null
    (a root) or absent (:data:`_NO_PARENT`). UsageError names the first that is not so."""
    links: list[tuple[str, object]] = []
    for i, raw in enumerate(messages, start=1):
        if not isinstance(raw, dict):
            raise UsageError(f"{where}: message {i} is {_kind(raw)}, not an object")
        uuid = _id(raw.get("uuid"), f"{where}: message {i}'s uuid")
        parent: object = _NO_PARENT
        if "parent_message_uuid" in raw:
            value = raw["parent_message_uuid"]
            what = f"{where}: message {i}'s parent_message_uuid"
            parent = None if value is None else _id(value, what)
        links.append((uuid, parent))
    return links


def _claude_path(links: list[tuple[str, object]], leaf: Any, where: str) -> list[int]:
    """The indexes of the shown messages: all of them, in order, when none names a parent;
    else the chain of parents from the leaf back, read in order."""
    if all(parent is _NO_PARENT for _, parent in links):
        return list(range(len(links)))
    index = {uuid: i for i, (uuid, _) in enumerate(links)}
    if leaf is None:
        leaf = links[-1][0]
    elif not isinstance(leaf, str):
        raise UsageError(f"{where}: current_leaf_message_uuid is {_kind(leaf)}, not a uuid")
    if leaf not in index:
        raise UsageError(f"{where}: current_leaf_message_uuid {leaf!r} names no message")
    parents = dict(links)
    cycle = f"{where}: its messages' parents form a cycle"
    return [index[uuid] for uuid in _down_to(leaf, parents, cycle)]


def _claude_text(raw: Mapping[str, Any], out: ChatParse) -> str:
    """The text blocks of a message's content (tool use, tool results, thinking and other
    blocks counted and left out); ``text`` when it has no content blocks."""
    blocks = raw.get("content")
    if isinstance(blocks, list) and blocks:
        texts: list[str] = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                if block["text"].strip():
                    texts.append(block["text"].strip())
            elif kind == "tool_use":
                out.skip("tool_call")
            else:
                out.skip("non_text_part")
        return "\n\n".join(texts)
    text = raw.get("text")
    return text.strip() if isinstance(text, str) else ""


# ---- shared ----------------------------------------------------------------------------

_PARAGRAPHS: Final = re.compile(r"\n\s*\n")
_SENTENCES: Final = re.compile(r"(?<=[.!?…])\s+")


def split_text(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut at paragraph breaks, else at
    sentence ends, else between words (a word longer than ``limit`` is cut). The parts
    hold every word, in order; whitespace at a cut is dropped, paragraphs joined in a part
    keep their blank line."""
    pieces: list[tuple[str, str]] = []  # (the glue before it, a piece within the limit)
    for paragraph in _PARAGRAPHS.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        glue = "\n\n"
        for sentence in _SENTENCES.split(paragraph) if len(paragraph) > limit else [paragraph]:
            words = sentence.split() if len(sentence) > limit else [sentence]
            for word in words:
                while len(word) > limit:
                    pieces.append((glue, word[:limit]))
                    word, glue = word[limit:], ""
                pieces.append((glue, word))
                glue = " "
    parts: list[str] = []
    current = ""
    for glue, piece in pieces:
        if current and len(current) + len(glue) + len(piece) <= limit:
            current += glue + piece
        else:
            if current:
                parts.append(current)
            current = piece
    if current:
        parts.append(current)
    return parts


def _id(value: Any, what: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _readable_id(value):
        raise UsageError(f"{what} is missing or not a string id ({_kind(value)})")
    return value.strip()


def _readable_id(value: str) -> bool:
    """An id of at most 100 printable characters (one line: it goes into an import key)."""
    return bool(value.strip()) and len(value) <= 100 and value.strip().isprintable()


def _title(value: Any) -> str:
    title = " ".join(value.split()) if isinstance(value, str) else ""
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1].rstrip() + "…"
    return title or "untitled"


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _iso(value: Any) -> datetime | None:
    """An ISO 8601 time; one without an offset is read as UTC (Claude writes UTC)."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # not a time, or one out of range in UTC
        return None


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )
