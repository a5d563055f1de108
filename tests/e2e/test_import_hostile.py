"""`ferrex import` of hostile and odd files through the real command, on a real home.

A conversation whose shape is not its export's is left out and reported as invalid (exit
2, like a bad line) while the others import; a file that cannot be read at all is refused
whole and changes nothing; a time out of range is no time. Import keys are the
conversation's id and the message's: a message id reused by another conversation is
another message, a message whose text changed since its import is reported, and a home
imported under the older message-only keys imports nothing again. Ctrl-C stops an import
with how far it got, and the same command resumes it."""

from __future__ import annotations

import copy
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ferrex.app import App
from ferrex.cli import cli
from ferrex.config import load
from ferrex.porting import chats
from ferrex.rules.memory_input import StoreRequest
from tests.chat_exports import (
    claude_conversation,
    claude_linear,
    claude_message,
    gpt_linear,
)

FERREX = str(Path(sys.executable).with_name("ferrex"))


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return 1, result.stdout, f"traceback: {result.exception!r}"
    return result.exit_code, result.stdout, result.stderr


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def head(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def contents(home: Path) -> list[str]:
    dump = run(home, "export", "jsonl", "-")[1]
    return sorted(line["content"] for line in map(json.loads, dump.splitlines())
                  if line.get("content"))  # fmt: skip


def good_gpt() -> dict[str, Any]:
    return gpt_linear("good", "Fine", [("user", "The boiler was serviced on Tuesday.")])


def gpt_branching() -> dict[str, Any]:
    """A conversation without current_node: its path goes down the children."""
    conv = gpt_linear("bad", "Hostile", [("user", "hostile turn one"), ("user", "two")])
    conv["current_node"] = None
    return conv


def claude_branching() -> dict[str, Any]:
    """A conversation with parent links, so that its path follows them from the leaf."""
    return claude_conversation("bad", "Hostile", [
        claude_message("bad-m1", "human", "hostile turn one", parent=None),
        claude_message("bad-m2", "assistant", "two", parent="bad-m1"),
    ])  # fmt: skip


def good_claude() -> dict[str, Any]:
    return claude_linear("good", "Fine", [("human", "The boiler was serviced on Tuesday.")])


def _gpt_parent_list(conv: dict[str, Any]) -> None:
    conv["mapping"]["bad-m1"]["parent"] = ["bad-sys"]


def _gpt_children_int(conv: dict[str, Any]) -> None:
    conv["mapping"]["bad-root"]["children"] = 3


def _gpt_child_list(conv: dict[str, Any]) -> None:
    conv["mapping"]["bad-sys"]["children"] = [["bad-m1"]]


def _claude_uuid_list(conv: dict[str, Any]) -> None:
    conv["chat_messages"][0]["uuid"] = ["bad-m1"]


def _claude_parent_object(conv: dict[str, Any]) -> None:
    conv["chat_messages"][1]["parent_message_uuid"] = {"uuid": "bad-m1"}


def _claude_leaf_list(conv: dict[str, Any]) -> None:
    conv["current_leaf_message_uuid"] = ["bad-m2"]


def _gpt_children_cycle(conv: dict[str, Any]) -> None:
    conv["mapping"]["bad-m2"]["children"] = ["bad-m1"]  # a loop down the newest children


SHAPES: dict[str, tuple[str, Callable[[], dict[str, Any]], Callable[[dict[str, Any]], None],
                        str]] = {
    "chatgpt parent list": ("chatgpt", gpt_branching, _gpt_parent_list,
                            "has a parent that is an array, not a node id"),
    "chatgpt children integer": ("chatgpt", gpt_branching, _gpt_children_int,
                                 "has children that are not a list of node ids"),
    "chatgpt child list": ("chatgpt", gpt_branching, _gpt_child_list,
                           "has children that are not a list of node ids"),
    "claude uuid list": ("claude", claude_branching, _claude_uuid_list,
                         "message 1's uuid is missing or not a string id (an array)"),
    "claude parent object": ("claude", claude_branching, _claude_parent_object,
                             "parent_message_uuid is missing or not a string id (an object)"),
    "claude leaf list": ("claude", claude_branching, _claude_leaf_list,
                         "current_leaf_message_uuid is an array, not a uuid"),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_malformed_conversation_is_reported_and_the_others_import(
    tmp_path: Path, shape: str
) -> None:
    """Before: a traceback (exit 1) and nothing imported. Now: that conversation is left
    out and named with why, the good one is stored, exit 2 (an invalid conversation, as an
    invalid line)."""
    fmt, build, spoil, says = SHAPES[shape]
    bad = build()
    spoil(bad)
    good = good_gpt() if fmt == "chatgpt" else good_claude()
    export = write(tmp_path / "conversations.json", [good, bad])
    home = tmp_path / "home"
    code, out, err = run(home, "import", str(export), "--json")
    assert code == 2, (out, err)
    doc = json.loads(out)
    assert doc["counts"] == {"stored": 1, "invalid": 1}
    assert doc["conversations"] == 1
    [invalid] = doc["invalid"]
    assert invalid["conversation"] == 2 and invalid["conversation_id"] == "bad"
    assert invalid["code"] == "invalid_input" and says in invalid["message"], invalid
    assert contents(home) == ["user: The boiler was serviced on Tuesday."]
    # The text report names it too; running it again stores nothing more.
    code, out, _ = run(home, "import", str(export))
    assert code == 2
    assert "not imported: invalid [invalid_input] conversation 2 (bad)" in out
    assert out.count("conversation 2") == 1, out  # said once
    assert says in out and "1 invalid, 1 skipped" in out


def test_a_loop_in_the_children_ends(tmp_path: Path) -> None:
    """Children that lead back up (without a current_node the path goes down the newest
    children) looped for ever; the walk down now stops at a node it has seen, and the
    path up through the parents is imported."""
    bad = gpt_branching()
    _gpt_children_cycle(bad)
    export = write(tmp_path / "conversations.json", [bad])
    done = subprocess.run(
        [FERREX, "--home", str(tmp_path / "home"), "import", str(export), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"] == {"stored": 2}


def test_a_message_field_of_another_kind_reads_as_absent(tmp_path: Path) -> None:
    """Found by the unit test that puts a value of every kind everywhere: a role that is a
    list, or parts that are a number, were tracebacks. The message is now left out and
    counted; the conversation's other messages import."""
    conv = gpt_linear("c", "Odd", [("user", "one"), ("user", "two"), ("user", "kept")])
    conv["mapping"]["c-m1"]["message"]["author"]["role"] = ["user"]
    conv["mapping"]["c-m2"]["message"]["content"]["parts"] = 5
    export = write(tmp_path / "conversations.json", [conv])
    code, out, err = run(tmp_path / "home", "import", str(export), "--json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    assert doc["counts"] == {"stored": 1}
    assert doc["skipped"] == {"empty_message": 1, "hidden": 1, "system_message": 1}


def test_a_file_of_malformed_conversations_only_is_refused_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, _, err = run(home, "store", "--content", "a memory before the bad import")
    assert code == 0, err
    position = head(home)
    bad = claude_branching()
    _claude_parent_object(bad)
    code, _, err = run(home, "import", str(write(tmp_path / "c.json", [bad])))
    assert code == 2 and "error [invalid_input]: conversation 1 (bad): message 2's" in err, err
    assert head(home) == position


@pytest.mark.parametrize("where", ["conversation", "message"])
def test_a_time_out_of_range_is_no_time(tmp_path: Path, where: str) -> None:
    """Before: OverflowError (year 1 at +14:00 is before year 1 in UTC). Now: no time; a
    message takes its conversation's (or, failing that, the import's)."""
    hostile = "0001-01-01T00:00:00+14:00"
    conv = claude_linear("k", "Odd times", [("human", "We moved the standup to 9:30.")])
    if where == "conversation":
        conv["created_at"] = hostile
    else:
        conv["chat_messages"][0]["created_at"] = hostile
    home = tmp_path / "home"
    code, out, err = run(home, "import", str(write(tmp_path / "c.json", [conv])), "--json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    assert doc["counts"] == {"stored": 1}
    assert doc["untimed"] == (1 if where == "message" else 0)
    code, out, _ = run(home, "recall", "standup time", "--json")
    [best, *_] = json.loads(out)["results"]
    # The message's own time when the conversation's is out of range; the conversation's
    # (09:59) when the message's is.
    expected = "2024-06-01T10:01:00Z" if where == "conversation" else "2024-06-01T09:59:00Z"
    assert best["event_time"] == expected


def test_deep_nesting_under_auto_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """Before: RecursionError out of the line reader (exit 1). Now: refused, exit 2, with
    why; a home is not even created."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    fresh = tmp_path / "fresh"
    code, _, err = run(fresh, "import", str(deep))
    assert code == 2 and "nested too deeply" in err, err
    assert not (fresh / "journal").exists()
    home = tmp_path / "home"
    assert run(home, "store", "--content", "a memory before the deep file")[0] == 0
    position = head(home)
    for args in ([], ["--format", "chatgpt"], ["--format", "claude"]):
        code, _, err = run(home, "import", str(deep), *args)
        assert code == 2 and "nested too deeply" in err, (args, err)
    # JSON lines: a deep line is an invalid line, the others import.
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"content": "first line"}\n' + "[" * 50_000 + "]" * 50_000 + "\n")
    code, out, err = run(home, "import", str(lines), "--json")
    assert code == 2, err
    report = json.loads(out)["lines"]
    assert [o["status"] for o in report] == ["stored", "invalid"]
    assert "nested too deeply" in report[1]["message"]
    assert head(home) == position + 1


def test_a_message_id_reused_by_another_conversation_is_another_message(
    tmp_path: Path,
) -> None:
    """Before: the second conversation's message was skipped as imported_before (keyed
    by the message id alone). Now both are stored."""
    first = claude_conversation(
        "k-1", "Kitchen", [claude_message("m-1", "human", "The oven runs twenty degrees hot.")]
    )
    second = claude_conversation("k-2", "Garden", [
        claude_message("m-1", "human", "The hedge needs trimming before June.")])  # fmt: skip
    home = tmp_path / "home"
    code, out, err = run(home, "import", str(write(tmp_path / "a.json", [first])), "--json")
    assert code == 0 and json.loads(out)["counts"] == {"stored": 1}, (out, err)
    code, out, err = run(home, "import", str(write(tmp_path / "b.json", [second])), "--json")
    assert code == 0, (out, err)
    assert json.loads(out)["counts"] == {"stored": 1}
    assert contents(home) == ["user: The hedge needs trimming before June.",
                              "user: The oven runs twenty degrees hot."]  # fmt: skip


def test_a_message_changed_since_its_import_is_reported_not_stored(tmp_path: Path) -> None:
    """Before: skipped silently as imported_before. Now: skipped as changed_since_import,
    with a line saying so and how to take the new text."""
    conv = gpt_linear("c", "Trip", [("user", "The train leaves at 8:15."), ("user", "Ok")])
    home = tmp_path / "home"
    export = write(tmp_path / "conversations.json", [conv])
    assert run(home, "import", str(export))[0] == 0
    position = head(home)
    edited = copy.deepcopy(conv)
    edited["mapping"]["c-m1"]["message"]["content"]["parts"] = ["The train leaves at 9:40."]
    export = write(tmp_path / "edited.json", [edited])
    code, out, err = run(home, "import", str(export), "--json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    assert doc["skipped"] == {"changed_since_import": 1, "hidden": 1, "imported_before": 1}
    changed = doc["items"][0]
    assert changed["status"] == "skipped" and changed["reason"] == "changed_since_import"
    assert head(home) == position, "nothing written"
    code, out, _ = run(home, "import", str(export))
    assert "conversation c message c-m1: changed since its import, not stored" in out
    [old_id] = changed["ids"]
    assert f"forget {old_id} and import again" in out
    # Doing what the hint says takes the new text.
    assert run(home, "forget", old_id)[0] == 0
    code, out, _ = run(home, "import", str(export), "--json")
    assert code == 0 and json.loads(out)["counts"] == {"stored": 1, "skipped": 1}
    assert contents(home) == ["user: Ok", "user: The train leaves at 9:40."]


def test_a_home_imported_under_the_message_only_keys_imports_nothing_again(
    tmp_path: Path,
) -> None:
    """Memories stored as an older ferrex stored them (import key ``FORMAT message ID``,
    the same context) are this file's messages: a re-import writes nothing. Another
    conversation's message under the same old key is not one of them."""
    long_answer = " ".join(f"Sentence {i} about the boiler and its pressure." for i in range(40))
    conv = gpt_linear("c", "Boiler", [("user", "The boiler loses pressure."),
                                      ("assistant", long_answer)])  # fmt: skip
    export = write(tmp_path / "conversations.json", [conv])
    parsed = chats.parse([conv], "chatgpt")
    assert len(parsed.items) > 2, "the long answer is split into parts"
    home = tmp_path / "home"
    app = App(home=home, config=load(home, None))
    try:  # what ferrex before this change journaled for the file
        old = []
        for item in parsed.items:
            part = f" part {item.part}" if item.part else ""
            old.append(StoreRequest(
                type="episodic", content=item.request.content, source=item.request.source,
                valid_from=item.request.valid_from, split_long=True,
                context={"import": "chatgpt", "conversation": item.conversation,
                         "message": item.message, **({"part": item.part} if item.part else {})},
                import_key=f"chatgpt message {item.message}{part}",
            ))  # fmt: skip
        results = app.writer().store_many(old)
        assert all(r.status == "stored" for r in results), results  # type: ignore[union-attr]
    finally:
        app.close()
    position = head(home)
    code, out, err = run(home, "import", str(export), "--json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    assert doc["counts"] == {"skipped": len(parsed.items)}
    assert doc["skipped"]["imported_before"] == len(parsed.items)
    assert head(home) == position, "a re-import writes nothing"
    # Another conversation reusing the first message's id: not imported before.
    other = gpt_linear("d", "Other", [("user", "The shed roof leaks.")])
    other["mapping"]["d-m1"]["message"]["id"] = "c-m1"
    code, out, err = run(home, "import", str(write(tmp_path / "d.json", [other])), "--json")
    assert code == 0 and json.loads(out)["counts"] == {"stored": 1}, (out, err)


def _messages(n: int) -> list[tuple[str, str]]:
    places = ["Lisbon", "Porto", "Braga", "Faro", "Évora", "Sintra", "Coimbra", "Aveiro"]
    return [("user" if i % 2 else "assistant",
             f"Day {i}: we walked {i % 17 + 2} km around {places[i % 8]} and saw {i * 31 % 97} "
             f"tiles of pattern {i * 7919 % 10007}.") for i in range(n)]  # fmt: skip


def _ctrl_c_as_at_a_terminal() -> None:
    """In the import's process before it starts: SIGINT does what it does to a command typed
    at a terminal. A test run started in the background by a non-interactive shell (``pytest
    &`` in a script, or CI's runner) ignores SIGINT and SIGQUIT, and an ignored signal stays
    ignored through exec: the import would never see the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_says_how_far_the_import_got_and_a_rerun_resumes(tmp_path: Path) -> None:
    """Before: click's `Aborted!`, exit 1, nothing said. Now: exit 130, how many were
    written, and that the same command resumes; it then stores each message once."""
    count = 3000
    export = write(tmp_path / "conversations.json", [gpt_linear("c", "Walks", _messages(count))])
    home = tmp_path / "home"
    leader, follower = pty.openpty()  # the progress line shows only on a terminal
    shown = b""
    done: list[int] = []
    process: subprocess.Popen[str] | None = None
    try:
        process = subprocess.Popen(
            [FERREX, "--home", str(home), "import", str(export), "--json"],
            stdout=subprocess.PIPE, stderr=follower, text=True,
            preexec_fn=_ctrl_c_as_at_a_terminal,
        )  # fmt: skip
        os.close(follower)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # until a chunk is written, not all of them
            if select.select([leader], [], [], 1)[0]:
                shown += os.read(leader, 65536)
            done = [int(n.replace(b",", b"")) for n in re.findall(rb"([\d,]+)/3,000", shown)]
            if done and done[-1] > 0:
                break
        assert done and 0 < done[-1] < count, shown
        # How the import treats SIGINT (ignored, blocked, caught), for a failure's message:
        # a parallel full run once saw it finish with exit 0 (an inherited disposition?).
        status = Path(f"/proc/{process.pid}/status").read_text().splitlines()
        dispositions = [line for line in status if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=600)
        while select.select([leader], [], [], 0.5)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other end closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
        if process is not None and process.poll() is None:  # the test failed part way
            process.kill()
            process.wait()
    assert process is not None and process.returncode == 130, (dispositions, out, shown[-2000:])
    said = shown.decode().replace("\r", "\n")
    match = re.search(r"interrupted: ([\d,]+) of 3,000 memories were written or skipped", said)
    assert match, said
    assert "run the same command again to resume" in said and "Aborted!" not in said
    written = int(match.group(1).replace(",", ""))
    assert 0 < written < count
    code, out, err = run(home, "import", str(export), "--json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    assert doc["counts"]["stored"] + doc["counts"]["skipped"] == count
    assert doc["skipped"]["imported_before"] >= written
    app = App(home=home, config=load(home, None))
    try:
        assert app.projections().read_model.count() == count, "each message once"
    finally:
        app.close()
