"""Claude and ChatGPT exports read as store requests (ferrex.porting.chats): pure parsing."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from ferrex.errors import UsageError
from ferrex.porting import chats
from tests.chat_exports import (
    T0,
    claude_conversation,
    claude_linear,
    claude_message,
    gpt_conversation,
    gpt_linear,
    gpt_message,
)


def contents(parsed: chats.ChatParse) -> list[str | None]:
    return [item.request.content for item in parsed.items]


def test_chatgpt_reads_the_shown_path_only() -> None:
    """An edited question and a regenerated answer are sibling branches: only the path up
    from current_node is imported, root first; the other branches are counted."""
    nodes: list[tuple[str, str | None, dict[str, Any] | None]] = [
        ("root", None, None),
        ("q1", "root", gpt_message("q1", "user", "What is the capital of Australia?", time=T0)),
        ("a1", "q1", gpt_message("a1", "assistant", "Sydney.", time=T0 + 1)),
        ("a1b", "q1", gpt_message("a1b", "assistant", "Canberra.", time=T0 + 2)),
        ("q2", "a1b", gpt_message("q2", "user", "And of Canada?", time=T0 + 3)),
        ("q2b", "a1b", gpt_message("q2b", "user", "And of New Zealand?", time=T0 + 4)),
        ("a2b", "q2b", gpt_message("a2b", "assistant", "Wellington.", time=T0 + 5)),
    ]
    parsed = chats.parse([gpt_conversation("c1", "Capitals", nodes, "a2b")], "chatgpt")
    assert contents(parsed) == [
        "user: What is the capital of Australia?",
        "assistant: Canberra.",
        "user: And of New Zealand?",
        "assistant: Wellington.",
    ]
    assert parsed.skipped == {"other_branch": 2}
    assert parsed.messages == 4 and parsed.conversations == 1
    first = parsed.items[0].request
    assert first.source == "chatgpt: Capitals [c1]"
    assert first.import_key == 'chatgpt conversation "c1" message "q1"'
    assert first.former_import_keys == ("chatgpt message q1",)  # before the conversation
    assert first.valid_from == datetime.fromtimestamp(T0, UTC)
    assert first.context == {"import": "chatgpt", "conversation": "c1", "message": "q1"}
    assert first.type == "episodic" and first.split_long


def test_chatgpt_without_current_node_follows_the_newest_children() -> None:
    nodes: list[tuple[str, str | None, dict[str, Any] | None]] = [
        ("root", None, None),
        ("q", "root", gpt_message("q", "user", "Hi", time=T0)),
        ("old", "q", gpt_message("old", "assistant", "Hello (first try)", time=T0 + 1)),
        ("new", "q", gpt_message("new", "assistant", "Hello (regenerated)", time=T0 + 2)),
    ]
    parsed = chats.parse([gpt_conversation("c", "t", nodes, None)], "chatgpt")
    assert contents(parsed) == ["user: Hi", "assistant: Hello (regenerated)"]


def test_chatgpt_non_text_parts_tools_and_attachments_are_counted_not_stored() -> None:
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://f1"}
    nodes: list[tuple[str, str | None, dict[str, Any] | None]] = [
        ("root", None, None),
        ("sys", "root", gpt_message("sys", "system", "You are ChatGPT")),
        ("ctx", "sys", gpt_message("ctx", "user", None, content={
            "content_type": "user_editable_context", "user_profile": "I am a nurse"},
            metadata={"is_visually_hidden_from_conversation": True})),
        ("q", "ctx", gpt_message("q", "user", None, time=T0, content={
            "content_type": "multimodal_text", "parts": [image, "What is in this chart?"]},
            metadata={"attachments": [{"id": "f1", "name": "chart.png"},
                                      {"id": "f2", "name": "data.csv"}]})),
        ("code", "q", gpt_message("code", "assistant", None, time=T0 + 1, recipient="python",
                                  content={"content_type": "code", "language": "python",
                                           "text": "import pandas as pd"})),
        ("out", "code", gpt_message("out", "tool", None, time=T0 + 2, content={
            "content_type": "execution_output", "text": "   a  b\n0  1  2"})),
        ("think", "out", gpt_message("think", "assistant", None, time=T0 + 3, content={
            "content_type": "thoughts", "thoughts": [{"summary": "x", "content": "y"}]})),
        ("img", "think", gpt_message("img", "user", None, time=T0 + 4, content={
            "content_type": "multimodal_text", "parts": [image]})),
        ("a", "img", gpt_message("a", "assistant", "The chart shows sales rising.",
                                 time=T0 + 5)),
    ]  # fmt: skip
    parsed = chats.parse([gpt_conversation("c", "Charts", nodes, "a")], "chatgpt")
    assert contents(parsed) == [
        "user: What is in this chart?",
        "assistant: The chart shows sales rising.",
    ]
    assert parsed.skipped == {
        "system_message": 1,
        "hidden": 1,
        "attachment": 2,
        "non_text_part": 3,  # two images and the thoughts
        "tool_call": 1,
        "tool_message": 1,
        "empty_message": 1,  # the turn that was only an image
    }


def test_chatgpt_voice_turns_keep_their_transcription() -> None:
    audio = {
        "content_type": "real_time_user_audio_video_asset_pointer",
        "frames_asset_pointers": [],
    }
    said = {"content_type": "audio_transcription", "text": "Remind me to call the dentist",
            "direction": "in"}  # fmt: skip
    nodes: list[tuple[str, str | None, dict[str, Any] | None]] = [
        ("root", None, None),
        ("v", "root", gpt_message("v", "user", None, time=T0, content={
            "content_type": "multimodal_text", "parts": [audio, said]})),
        ("ctx", "v", gpt_message("ctx", "user", None, content={
            "content_type": "user_editable_context", "user_instructions": "be brief"})),
    ]  # fmt: skip
    parsed = chats.parse([gpt_conversation("c", "Voice", nodes, "ctx")], "chatgpt")
    assert contents(parsed) == ["user: Remind me to call the dentist"]
    assert parsed.skipped == {"non_text_part": 1, "system_message": 1}


def test_messages_without_a_time_take_their_conversations() -> None:
    nodes: list[tuple[str, str | None, dict[str, Any] | None]] = [
        ("root", None, None),
        ("q", "root", gpt_message("q", "user", "no time here", time=None)),
    ]
    parsed = chats.parse([gpt_conversation("c", "t", nodes, "q", time=T0)], "chatgpt")
    assert parsed.items[0].request.valid_from == datetime.fromtimestamp(T0, UTC)
    assert parsed.untimed == 1
    parsed = chats.parse([gpt_conversation("c", "t", nodes, "q", time=None)], "chatgpt")
    assert parsed.items[0].request.valid_from is None  # then the import's own time
    claude = claude_conversation("k", "n", [claude_message("m", "human", "hi", at=None)])
    parsed = chats.parse([claude], "claude")
    assert parsed.items[0].request.valid_from == datetime(2024, 6, 1, 9, 59, tzinfo=UTC)
    assert parsed.untimed == 1


def test_empty_conversations_are_skipped_and_counted() -> None:
    empty_gpt = gpt_conversation("e1", "Empty", [("root", None, None)], "root")
    only_system = gpt_linear("e2", "System only", [])
    whitespace = gpt_linear("e3", "Blank", [("user", "   \n ")])
    parsed = chats.parse([empty_gpt, only_system, whitespace], "chatgpt")
    assert parsed.items == []
    assert parsed.skipped == {"empty_conversation": 3, "hidden": 2, "empty_message": 1}
    parsed = chats.parse([claude_conversation("k", "Nothing", [])], "claude")
    assert parsed.items == [] and parsed.skipped == {"empty_conversation": 1}
    assert chats.parse([], "claude").items == []


def test_unicode_and_titles() -> None:
    text = "Ça coûte 5 € — 東京で会いましょう 🎉"
    parsed = chats.parse([gpt_linear("c", "  Café\n plans  ", [("user", text)])], "chatgpt")
    assert parsed.items[0].request.content == f"user: {text}"
    assert parsed.items[0].request.source == "chatgpt: Café plans [c]"
    untitled = chats.parse([gpt_linear("c", "", [("user", "x")])], "chatgpt")
    assert untitled.items[0].request.source == "chatgpt: untitled [c]"
    long_title = chats.parse([gpt_linear("c", "t" * 500, [("user", "x")])], "chatgpt")
    source = long_title.items[0].request.source
    assert source is not None and len(source) < 250


def test_claude_messages_blocks_and_attachments() -> None:
    messages = [
        claude_message(
            "m1",
            "human",
            "Summarise this contract",
            attachments=[{"file_name": "contract.pdf", "file_size": 1200, "file_type": "pdf",
                          "extracted_content": "The parties agree ..."}],
            files=[{"file_name": "signature.png"}],
        ),
        claude_message(
            "m2",
            "assistant",
            "ignored when content has blocks",
            at="2024-06-01T10:05:00+02:00",
            content=[
                {"type": "thinking", "thinking": "let me read it"},
                {"type": "tool_use", "name": "web_search", "input": {"query": "x"}},
                {"type": "tool_result", "name": "web_search", "content": [{"type": "text"}]},
                {"type": "text", "text": "The contract runs for two years."},
                {"type": "text", "text": "It renews unless cancelled."},
            ],
        ),
        claude_message("m3", "human", "Thanks", content=[]),  # old exports: text only
    ]  # fmt: skip
    parsed = chats.parse([claude_conversation("k1", "Contract", messages)], "claude")
    assert contents(parsed) == [
        "user: Summarise this contract",
        "assistant: The contract runs for two years.\n\nIt renews unless cancelled.",
        "user: Thanks",
    ]
    assert parsed.skipped == {"attachment": 2, "non_text_part": 2, "tool_call": 1}
    second = parsed.items[1].request
    assert second.valid_from == datetime(2024, 6, 1, 8, 5, tzinfo=UTC)
    assert second.source == "claude: Contract [k1]"
    assert second.import_key == 'claude conversation "k1" message "m2"'
    assert second.former_import_keys == ("claude message m2",)


def test_claude_branches_follow_the_leaf() -> None:
    messages = [
        claude_message("q", "human", "Name a colour", parent="root-id"),
        claude_message("a1", "assistant", "Red", parent="q"),
        claude_message("a2", "assistant", "Blue", parent="q"),
        claude_message("q2", "human", "Another?", parent="a1"),
    ]
    conv = claude_conversation("k", "Colours", messages)
    parsed = chats.parse([conv], "claude")
    assert contents(parsed) == ["user: Name a colour", "assistant: Red", "user: Another?"]
    assert parsed.skipped == {"other_branch": 1}
    conv["current_leaf_message_uuid"] = "a2"
    parsed = chats.parse([conv], "claude")
    assert contents(parsed) == ["user: Name a colour", "assistant: Blue"]
    assert parsed.skipped == {"other_branch": 2}


def long_answer() -> str:
    paragraphs = [
        " ".join(f"Paragraph {p} sentence {s} says something useful." for s in range(12))
        for p in range(4)
    ]
    return "\n\n".join(paragraphs)


def test_assistant_modes() -> None:
    answer = long_answer()
    conv = gpt_linear("c", "Long", [("user", "Explain it all"), ("assistant", answer)])
    split = chats.parse([conv], "chatgpt", split_chars=400)
    parts = split.items[1:]
    assert len(parts) > 1
    for i, item in enumerate(parts, start=1):
        content = item.request.content
        assert content is not None and content.startswith("assistant: ")
        assert len(content) <= 400 + len("assistant: ")
        assert item.part == f"{i}/{len(parts)}"
        key = f'chatgpt conversation "c" message "c-m2" part {i}/{len(parts)}'
        assert item.request.import_key == key
        assert item.request.former_import_keys == (f"chatgpt message c-m2 part {i}/{len(parts)}",)
        assert item.request.context == {"import": "chatgpt", "conversation": "c",
                                        "message": "c-m2", "part": item.part}  # fmt: skip
    joined = " ".join((item.request.content or "")[len("assistant: ") :] for item in parts)
    assert joined.split() == answer.split()
    full = chats.parse([conv], "chatgpt", assistant="full", split_chars=400)
    assert contents(full) == ["user: Explain it all", f"assistant: {answer}"]
    skip = chats.parse([conv], "chatgpt", assistant="skip")
    assert contents(skip) == ["user: Explain it all"]
    assert skip.skipped == {"assistant_turn": 1, "hidden": 1}
    # A user's long message is kept whole under split; beyond a memory's content limit,
    # any message is split, whatever the mode.
    user_long = gpt_linear("u", "Long", [("user", answer)])
    assert len(chats.parse([user_long], "chatgpt", split_chars=400).items) == 1
    capped = chats.parse([user_long], "chatgpt", assistant="full", content_chars=1000)
    assert len(capped.items) > 1
    assert all(len(item.request.content or "") <= 1000 for item in capped.items)


def test_split_text_keeps_every_word_within_the_limit() -> None:
    text = "Short one. " + "x" * 950 + " tail words here.\n\nNext paragraph.\n\n\n  Last."
    parts = chats.split_text(text, 300)
    assert all(0 < len(p) <= 300 for p in parts)
    assert "".join("".join(parts).split()) == "".join(text.split())
    assert chats.split_text("one.\n\ntwo.", 300) == ["one.\n\ntwo."]
    assert chats.split_text("A. B. C.", 4) == ["A.", "B.", "C."]


def test_detect() -> None:
    assert chats.detect([gpt_linear("c", "t", [])]) == "chatgpt"
    assert chats.detect([claude_linear("k", "n", [])]) == "claude"
    assert chats.detect(claude_linear("k", "n", [])) == "claude"  # one conversation
    assert chats.detect([{"content": "a store line"}]) is None
    assert chats.detect([]) is None
    assert chats.detect([1, 2]) is None


@pytest.mark.parametrize(
    ("doc", "fmt", "says"),
    [
        ("a string", "chatgpt", "array of conversations"),
        (3, "claude", "array of conversations"),
        ([1], "chatgpt", "conversation 1 is a number"),
        ([{"title": "x"}], "chatgpt", "conversation 1 has no mapping"),
        ([{"id": "c", "mapping": []}], "chatgpt", "no mapping object"),
        ([{"id": "c", "mapping": {"n": 5}, "current_node": "n"}], "chatgpt", "not an object"),
        ([{"id": "c", "mapping": {}, "current_node": "zz"}], "chatgpt", "current_node 'zz'"),
        ([{"mapping": {}, "current_node": None}], "chatgpt", "id is missing"),
        ([{"id": "c", "current_node": "a", "mapping": {
            "a": {"parent": "b", "message": None}, "b": {"parent": "a", "message": None}}}],
         "chatgpt", "cycle"),
        ([{"uuid": "k", "chat_messages": {}}], "claude", "no chat_messages list"),
        ([{"uuid": "k", "chat_messages": ["hi"]}], "claude", "message 1 is a string"),
        ([{"chat_messages": []}], "claude", "uuid is missing"),
        ([{"uuid": "k", "chat_messages": [{"sender": "human", "text": "x"}]}], "claude",
         "message 1's uuid is missing"),
    ],
)  # fmt: skip
def test_wrong_shapes_are_refused_with_the_conversation_named(
    doc: Any, fmt: chats.ChatFormat, says: str
) -> None:
    with pytest.raises(UsageError, match=says.replace("(", r"\(")):
        chats.parse(doc, fmt)


def test_not_json() -> None:
    with pytest.raises(UsageError, match="not a JSON document"):
        chats.loads("[{'single': 'quotes'}]")


def test_a_conversation_of_the_wrong_shape_is_left_out_and_the_others_parsed() -> None:
    good = gpt_linear("good", "Fine", [("user", "kept")])
    bad = gpt_linear("bad", "Odd", [("user", "left out")])
    bad["mapping"]["bad-m1"]["parent"] = ["bad-sys"]
    parsed = chats.parse([bad, good, 7], "chatgpt")
    assert contents(parsed) == ["user: kept"]
    assert parsed.conversations == 1 and parsed.messages == 2  # the good one's
    assert parsed.skipped == {"hidden": 1}
    assert [(c.index, c.conversation) for c in parsed.invalid] == [(1, "bad"), (3, None)]
    assert "node 'bad-m1' of its mapping has a parent that is an array" in str(
        parsed.invalid[0].error
    )
    assert "conversation 3 is a number" in str(parsed.invalid[1].error)


def test_children_that_loop_back_end_the_walk_down() -> None:
    conv = gpt_linear("c", "Loop", [("user", "one"), ("user", "two")])
    conv["current_node"] = None
    conv["mapping"]["c-m2"]["children"] = ["c-m1"]
    assert contents(chats.parse([conv], "chatgpt")) == ["user: one", "user: two"]


@pytest.mark.parametrize(
    "at", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "not a time", 5]
)
def test_a_time_that_cannot_be_read_is_no_time(at: object) -> None:
    conv = claude_linear("k", "n", [("human", "hi")])
    conv["chat_messages"][0]["created_at"] = at
    [item] = chats.parse([conv], "claude").items
    assert item.request.valid_from == datetime(2024, 6, 1, 9, 59, tzinfo=UTC)


def test_import_keys_quote_the_ids_so_no_two_pairs_give_one_key() -> None:
    one = chats.import_key("claude", "a message b", "c")
    other = chats.import_key("claude", "a", "b message c")
    assert one != other
    assert one == 'claude conversation "a message b" message "c"'


HOSTILE: list[Any] = [[1], {"a": 1}, float("inf"), float("nan"), -1, 10**30, True, None, "",
                      "0001-01-01T00:00:00+14:00", [[[]]]]  # fmt: skip


def _paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value inside ``doc`` (keys and list indexes)."""
    inner = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    found: list[tuple[Any, ...]] = []
    for key, value in inner:
        found += [(*path, key), *_paths(value, (*path, key))]
    return found


def _rich(fmt: chats.ChatFormat, leaf: bool) -> dict[str, Any]:
    """A conversation using most of the format's keys (parts, attachments, tool blocks)."""
    if fmt == "chatgpt":
        conv = gpt_linear("c", "t", [("user", "hi"), ("assistant", "yo")])
        conv["mapping"]["c-m1"]["message"]["content"] = {"content_type": "multimodal_text",
            "parts": ["a", {"content_type": "audio_transcription", "text": "b"}]}  # fmt: skip
        conv["mapping"]["c-m1"]["message"]["metadata"] = {"attachments": [{"name": "f"}]}
        conv["current_node"] = conv["current_node"] if leaf else None
        return conv
    return claude_conversation("k", "n", [
        claude_message("a", "human", "hi", attachments=[{"f": 1}], files=[{"g": 2}]),
        claude_message("b", "assistant", "yo", parent="a", content=[
            {"type": "text", "text": "yo"}, {"type": "tool_use", "name": "x"}]),
    ]) | ({"current_leaf_message_uuid": "b"} if leaf else {})  # fmt: skip


@pytest.mark.parametrize("fmt", chats.FORMATS)
@pytest.mark.parametrize("leaf", [True, False])
def test_any_value_of_any_kind_anywhere_is_parsed_or_refused_never_a_crash(
    fmt: chats.ChatFormat, leaf: bool
) -> None:
    """Each value of an export, in turn, replaced by one of another kind: the conversation
    is parsed (a field read as absent, a time as no time) or refused with a UsageError,
    never another exception."""
    base = _rich(fmt, leaf)
    for path in _paths(base):
        for value in HOSTILE:
            doc = copy.deepcopy(base)
            node = doc
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
            try:
                chats.parse([doc], fmt)
            except UsageError:
                pass
            except Exception as exc:  # pragma: no cover - the failure names the case
                raise AssertionError(f"{path} = {value!r}: {exc!r}") from exc
