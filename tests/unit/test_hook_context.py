"""The pure parts of the hooks: a transcript read as store requests, and what is injected
within its budget."""

from __future__ import annotations

import json

from ferrex.hooks import context
from ferrex.hooks.claude_code import CLIENT
from ferrex.hooks.command_hooks import installed, with_ours, without_ours
from ferrex.hooks.context import BRIEF_TOKENS, PROMPT_TOKENS, prompt_context, session_brief
from ferrex.porting import transcripts
from ferrex.rules import conversation


def _line(uuid: str, content: object, kind: str = "user") -> str:
    return json.dumps({"type": kind, "uuid": uuid, "sessionId": "s", "message": {
        "role": kind, "content": content}, "timestamp": "2026-12-01T10:00:00Z"})  # fmt: skip


def test_a_transcript_keys_each_message_by_session_and_uuid_and_cuts_long_ones() -> None:
    long = "word " * 600  # 3,000 characters of an assistant: parts of at most 1,000
    parsed = transcripts.parse("\n".join([_line("u1", "hello"), _line("a1", long, "assistant")]))
    keys = [r.import_key for r in parsed.requests]
    assert keys[0] == 'claude-code conversation "s" message "u1"'
    assert keys[1].endswith('message "a1" part 1/3') and len(keys) == 4
    assert all(len(r.content or "") <= 1000 + len("assistant: ") for r in parsed.requests[1:])
    assert parsed.requests[0].content == "user: hello"


def test_ferrex_context_is_cut_out_even_unclosed() -> None:
    text = "before <ferrex-memory>\nx\n</ferrex-memory> after <ferrex-memory> never closed"
    assert conversation.without_ours(text) == "before  after"


def test_results_fit_the_budget_without_recalls_label() -> None:
    hit = {"id": "mem_1", "type": "episodic", "content": "x " * 500, "relevance_label": "none",
           "freshness": {"label": "fresh", "age_days": 1}}  # fmt: skip
    assert prompt_context({"results": []}) == ""
    shown = prompt_context({"results": [hit] * 10})
    assert "mem_1" in shown and -(-len(shown) // 4) <= PROMPT_TOKENS and " none " not in shown
    words = prompt_context({"results": [hit] * 10}, count=lambda t: len(t.split()))
    assert len(words.split()) <= PROMPT_TOKENS and words.count("mem_1") < 10


def _judged(cosine: float, coverage: float, **missing: float) -> dict[str, object]:
    return {"id": "mem_1", "relevance_label": "none", "relevance_evidence": {
        "cosine": cosine, "coverage": coverage, "missing_named": 0.0, "missing_name": 0.0,
        "missing_attribute": 0.0, **missing}}  # fmt: skip


def test_a_prompt_is_judged_by_closeness_not_by_a_questions_named_specifics() -> None:
    """A task that pastes an exit code and a class name no memory holds: recall's model
    (the penalties for a question's specifics) says no answer; the hook injects. Far from
    every memory, or with no evidence at all, it injects nothing."""
    pasted = _judged(0.65, 0.33, missing_named=1.0, missing_name=1.0)
    from ferrex.rules import relevance

    evidence = relevance.Evidence(0.65, 0.33, 1.0, 1.0)
    assert relevance.DEFAULT_MODEL.label(relevance.DEFAULT_MODEL.relevance(evidence)) == "none"
    assert context.prompt_relevance(pasted) >= context.INJECT_FROM
    assert context.worth_injecting({"results": [_judged(0.2, 0.1), pasted]})
    assert not context.worth_injecting({"results": [_judged(0.3, 0.2)] * 3})
    assert not context.worth_injecting({"results": [{"id": "mem_1"}]})  # no evidence
    beyond = [_judged(0.2, 0.1)] * context.PROMPT_CANDIDATES + [pasted]
    assert not context.worth_injecting({"results": beyond})


def test_a_brief_fits_its_budget_and_an_empty_memory_gives_none() -> None:
    assert session_brief("p", {}, {"memories": []}) == ""
    many = [{"id": f"mem_{i}", "type": "semantic" if i % 2 else "episodic",
             "summary": "y " * 150} for i in range(10)]  # fmt: skip
    reflect = {"counts": {"stale": 2}, "stale": [{"id": "mem_s", "summary": "old"}]}
    brief = session_brief("p", reflect, {"memories": many})
    assert -(-len(brief) // 4) <= BRIEF_TOKENS and "mem_s (stale, verify)" in brief
    by_words = session_brief("p", reflect, {"memories": many}, count=lambda t: len(t.split()))
    assert len(by_words.split()) <= BRIEF_TOKENS
    assert not brief.rstrip().removesuffix("</ferrex-memory>").rstrip().endswith(":")


def test_settings_merge_keeps_other_hooks_and_finds_only_ferrex_ones() -> None:
    other = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    merged = with_ours(other, ["/venv/bin/ferrex", "--home", "/h b"], CLIENT)
    assert set(installed(merged)) == {"SessionStart", "UserPromptSubmit", "PreCompact",
                                      "SessionEnd"}  # fmt: skip
    command = "/venv/bin/ferrex --home '/h b' hook session-start"
    assert installed(merged)["SessionStart"] == [command]
    assert without_ours(merged) == other


def test_reminders_and_slash_commands_are_not_conversation() -> None:
    text = "\n".join([
        _line("u1", "Fix the build <system-reminder>\nfiles changed\n</system-reminder>"),
        _line("u2", "<command-name>/clear</command-name>\n<command-args></command-args>"),
        _line("u3", [{"type": "text", "text": "<local-command-stdout>ok</local-command-stdout>"}]),
    ])  # fmt: skip
    parsed = transcripts.parse(text)
    assert [r.content for r in parsed.requests] == ["user: Fix the build"]
    assert parsed.skipped == {"command": 2}


def test_shell_commands_interruptions_and_emptied_tags_are_not_conversation() -> None:
    """``!`` mode's command and output (an .env printed there is tool output, whatever the
    secret scan catches), the client's interruption marker, a tag emptied of ferrex's block."""
    text = "\n".join([
        _line("u1", "<bash-input>cat .env</bash-input>"),
        _line("u2", "<bash-stdout>DATABASE_URL=postgres://app@db:5432/orbit</bash-stdout>"
                    "<bash-stderr></bash-stderr>"),
        _line("u3", "<local-command-stderr>Error: unknown command</local-command-stderr>"),
        _line("u4", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
        _line("u5", "[Request interrupted by user]"),
        _line("u6", "<user-prompt-submit-hook><ferrex-memory>\nmem_1 a note\n</ferrex-memory>"
                    "</user-prompt-submit-hook>"),
        _line("u7", "why did [Request interrupted by user] show up in the log?"),
    ])  # fmt: skip
    parsed = transcripts.parse(text)
    assert [r.content for r in parsed.requests] == [
        "user: why did [Request interrupted by user] show up in the log?"
    ]
    assert parsed.skipped == {"command": 3, "interrupted": 2, "empty_message": 1}


def test_the_hooks_count_tokens_unpadded() -> None:
    from ferrex.cli.hooks import _token_count

    count = _token_count()
    assert (count(""), count("hello world")) == (0, 2)  # the shipped file pads to 128
