"""Gemini CLI's session file read as store requests (``ferrex.porting.gemini_sessions``), and
its hooks' settings entries beside Claude Code's."""

from __future__ import annotations

import json
from typing import Any

from ferrex.hooks import claude_code, gemini_cli
from ferrex.hooks.command_hooks import homes_named, installed, is_ours, with_ours, without_ours
from ferrex.porting import gemini_sessions

SESSION = "0c1d2e3f-4a5b-4c6d-8e9f-a0b1c2d3e4f5"
META = {
    "sessionId": SESSION,
    "projectHash": "9f86d081884c7d65",
    "kind": "main",
    "startTime": "2026-12-01T10:00:00.000Z",
    "lastUpdated": "2026-12-01T10:00:00.000Z",
}


def _msg(mid: str, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "timestamp": "2026-12-01T10:01:00.000Z",
        "type": kind,
        "content": content,
        **extra,
    }


def _jsonl(*records: Any) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def _contents(text: str) -> list[str]:
    return [r.content for r in gemini_sessions.parse(text).requests]


def test_the_last_write_of_a_message_counts_in_its_first_place() -> None:
    text = _jsonl(
        META,
        _msg("u1", "user", [{"text": "Where do the nightly backups go?"}]),
        _msg("g1", "gemini", "They go", model="gemini-2.5-pro"),
        {"$set": {"lastUpdated": "2026-12-01T10:02:00.000Z"}},
        _msg("u2", "user", [{"text": "And how long are they kept?"}]),
        _msg("g1", "gemini", "They go to the cold-storage bucket.", tokens={"total": 9}),
    )
    parsed = gemini_sessions.parse(text)
    assert [r.content for r in parsed.requests] == [
        "user: Where do the nightly backups go?",
        "assistant: They go to the cold-storage bucket.",
        "user: And how long are they kept?",
    ]
    first = parsed.requests[1]
    assert first.source == f"gemini-cli: session [{SESSION}]"
    assert first.import_key == f'gemini-cli conversation "{SESSION}" message "g1"'
    assert first.valid_from is not None and first.valid_from.isoformat().startswith("2026-12-01")


def test_a_rewind_drops_the_message_and_what_follows_and_a_checkpoint_replaces_all() -> None:
    kept, gone = _msg("u1", "user", "Keep this one"), _msg("u2", "user", "Rewound away")
    assert _contents(
        _jsonl(META, kept, gone, _msg("g2", "gemini", "gone too"), {"$rewindTo": "u2"})
    ) == ["user: Keep this one"]
    assert _contents(_jsonl(META, kept, {"$rewindTo": "not-there"})) == []
    checkpoint = {"$set": {"messages": [_msg("u9", "user", "After the checkpoint")]}}
    assert _contents(_jsonl(META, kept, checkpoint)) == ["user: After the checkpoint"]


def test_a_legacy_json_file_reads_as_one_record_with_its_messages() -> None:
    legacy = {
        **META,
        "messages": [
            _msg("u1", "user", [{"text": "Legacy question"}]),
            _msg("g1", "gemini", "Legacy answer"),
        ],
    }
    assert _contents(json.dumps(legacy, indent=2)) == [
        "user: Legacy question",
        "assistant: Legacy answer",
    ]


def test_what_is_not_the_conversation_is_left_out_and_counted() -> None:
    text = (
        _jsonl(
            META,
            _msg(
                "c0",
                "user",
                [{"text": "<hook_context><ferrex-memory>\nbrief\n</ferrex-memory></hook_context>"}],
            ),
            _msg(
                "u1",
                "user",
                [
                    {"text": "Summarise @notes.md"},
                    {"text": "--- Content from referenced files ---\nsecret plans"},
                ],
                displayContent=[{"text": "Summarise @notes.md"}],
            ),
            _msg(
                "g1",
                "gemini",
                [
                    {"text": "planning", "thought": True},
                    {"functionCall": {"name": "read_file", "args": {}}},
                ],
                toolCalls=[
                    {
                        "id": "t1",
                        "name": "read_file",
                        "args": {},
                        "status": "success",
                        "timestamp": "2026-12-01T10:01:00.000Z",
                    }
                ],
            ),
            _msg(
                "u2",
                "user",
                [
                    {
                        "functionResponse": {
                            "id": "t1",
                            "name": "read_file",
                            "response": {"output": "x"},
                        }
                    }
                ],
            ),
            _msg("i1", "info", "Request cancelled."),
            _msg("u3", "user", "/memory show"),
            _msg("u4", "user", [{"text": "Deploy it <hook_context>other hook</hook_context>"}]),
            _msg("s1", "user", [{"text": "<state_snapshot>\nthe summary\n</state_snapshot>"}]),
            _msg("s2", "gemini", [{"text": "Got it. Thanks for the additional context!"}]),
            ["not", "an", "object"],
        )
        + "{not json\n"
    )
    parsed = gemini_sessions.parse(text)
    assert [r.content for r in parsed.requests] == ["user: Summarise @notes.md", "user: Deploy it"]
    assert parsed.skipped == {
        "client_context": 1,
        "thought": 1,
        "tool_call": 2,
        "tool_result": 1,
        "empty_message": 2,
        "client_notice": 1,
        "command": 1,
        "summary": 2,
        "not_a_message": 1,
        "not_json": 1,
    }


def test_a_file_without_a_session_id_uses_the_hooks() -> None:
    text = _jsonl(_msg("u1", "user", "Hello there"))
    assert gemini_sessions.parse(text).requests == []
    assert [r.content for r in gemini_sessions.parse(text, "s-1").requests] == ["user: Hello there"]


def test_gemini_entries_are_found_beside_claude_codes_and_removed_alone() -> None:
    other = {
        "hooksConfig": {"enabled": True},
        "hooks": {
            "BeforeTool": [
                {"matcher": "write_file", "hooks": [{"type": "command", "command": "./guard.sh"}]}
            ]
        },
    }
    merged = with_ours(other, ["/venv/bin/ferrex", "--home", "/h b"], gemini_cli.CLIENT)
    assert set(installed(merged)) == {"SessionStart", "BeforeAgent", "PreCompress", "SessionEnd"}
    capture = merged["hooks"]["SessionEnd"][0]["hooks"][0]
    assert capture == {
        "name": "ferrex-capture",
        "type": "command",
        "timeout": 60000,
        "command": "/venv/bin/ferrex --home '/h b' hook capture --client gemini-cli",
    }
    assert homes_named(merged) == ["/h b"]
    assert without_ours(merged) == other
    assert not is_ours({"type": "command", "command": "ferrex hook capture --client"})
    assert not is_ours({"type": "command", "command": "ferrex hook capture --other gemini-cli"})
    claude = with_ours({}, ["ferrex"], claude_code.CLIENT)
    assert claude["hooks"]["PreCompact"] == [
        {"hooks": [{"type": "command", "timeout": 60, "command": "ferrex hook capture"}]}
    ]
