"""Claude and ChatGPT exports written in their own shapes, for the import tests.

Each builder returns plain JSON values as the services write them in ``conversations.json``
(only the keys the formats carry; the importer must ignore the many others).
"""

from __future__ import annotations

from typing import Any

T0 = 1_717_200_000.0
"""2024-06-01T00:00:00Z, the first message's time in the builders."""


def gpt_message(
    message_id: str,
    role: str,
    text: str | None = None,
    *,
    time: float | None = None,
    content: dict[str, Any] | None = None,
    recipient: str = "all",
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": message_id,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": time,
        "update_time": None,
        "content": content if content is not None else {"content_type": "text", "parts": [text]},
        "status": "finished_successfully",
        "end_turn": True,
        "weight": 1.0,
        "metadata": metadata or {},
        "recipient": recipient,
    }


def gpt_conversation(
    conv_id: str,
    title: str | None,
    nodes: list[tuple[str, str | None, dict[str, Any] | None]],
    current: str | None,
    *,
    time: float | None = T0,
) -> dict[str, Any]:
    """A ChatGPT conversation from ``(node id, parent id, message)`` triples (children are
    derived from the parents, in the order given)."""
    mapping: dict[str, Any] = {}
    for node_id, parent, message in nodes:
        mapping[node_id] = {"id": node_id, "message": message, "parent": parent, "children": []}
    for node_id, parent, _ in nodes:
        if parent is not None:
            mapping[parent]["children"].append(node_id)
    return {
        "title": title,
        "create_time": time,
        "update_time": time,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": current,
        "plugin_ids": None,
        "conversation_id": conv_id,
        "id": conv_id,
    }


def gpt_linear(
    conv_id: str, title: str, turns: list[tuple[str, str]], *, start: float = T0
) -> dict[str, Any]:
    """A conversation without edits: a hidden system root, then ``(role, text)`` turns a
    minute apart; message ids are ``CONV-m1``, ``CONV-m2``, ..."""
    system = gpt_message(
        f"{conv_id}-sys",
        "system",
        "",
        metadata={"is_visually_hidden_from_conversation": True},
    )
    nodes: list[tuple[str, str | None, dict[str, Any] | None]] = [
        (f"{conv_id}-root", None, None),
        (f"{conv_id}-sys", f"{conv_id}-root", system),
    ]
    parent = f"{conv_id}-sys"
    for i, (role, text) in enumerate(turns, start=1):
        node = f"{conv_id}-m{i}"
        nodes.append((node, parent, gpt_message(node, role, text, time=start + 60 * i)))
        parent = node
    return gpt_conversation(conv_id, title, nodes, parent, time=start)


def claude_message(
    uuid: str,
    sender: str,
    text: str,
    *,
    at: str | None = "2024-06-01T10:00:00.000000Z",
    content: list[dict[str, Any]] | None = None,
    attachments: list[dict[str, Any]] | None = None,
    files: list[dict[str, Any]] | None = None,
    parent: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "uuid": uuid,
        "text": text,
        "content": content
        if content is not None
        else [{"type": "text", "text": text, "citations": []}],
        "sender": sender,
        "created_at": at,
        "updated_at": at,
        "attachments": attachments or [],
        "files": files or [],
    }
    if parent is not None:
        message["parent_message_uuid"] = parent
    return message


def claude_conversation(
    uuid: str,
    name: str,
    messages: list[dict[str, Any]],
    *,
    at: str = "2024-06-01T09:59:00.000000Z",
) -> dict[str, Any]:
    return {
        "uuid": uuid,
        "name": name,
        "created_at": at,
        "updated_at": at,
        "account": {"uuid": "acct-1"},
        "chat_messages": messages,
    }


def claude_linear(uuid: str, name: str, turns: list[tuple[str, str]]) -> dict[str, Any]:
    """``(sender, text)`` turns a minute apart from 10:00; uuids ``UUID-m1``, ..."""
    messages = [
        claude_message(f"{uuid}-m{i}", sender, text, at=f"2024-06-01T10:{i:02d}:00.000000Z")
        for i, (sender, text) in enumerate(turns, start=1)
    ]
    return claude_conversation(uuid, name, messages)
