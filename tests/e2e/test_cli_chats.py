"""`ferrex import --format claude|chatgpt` end to end: real exports' shapes, a real home."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ferrex.cli import cli
from tests.chat_exports import claude_linear, claude_message, gpt_linear

FERREX = str(Path(sys.executable).with_name("ferrex"))

TRIP = [
    ("user", "I am flying to Lisbon on 12 May and staying in Alfama."),
    ("assistant", "Alfama is hilly: pack comfortable shoes and a light rain jacket."),
    ("user", "Thanks!"),
]


def ferrex(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `ferrex` command in a process of its own."""
    return subprocess.run(
        [FERREX, "--home", str(home), *args], capture_output=True, text=True, timeout=600
    )


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def head(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def test_chatgpt_export_through_the_real_command(tmp_path: Path) -> None:
    """Import, recall finds a message with its conversation and time, a re-run stores
    nothing, and a newer export holding the old messages stores only the new ones."""
    home = tmp_path / "home"
    first = [gpt_linear("conv-trip", "Lisbon trip", TRIP),
             gpt_linear("conv-empty", "Nothing", [])]  # fmt: skip
    export = write(tmp_path / "conversations.json", first)
    done = ferrex(home, "import", str(export), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["format"] == "chatgpt"  # auto, by the export's shape
    assert doc["counts"] == {"stored": 3}
    assert doc["skipped"] == {"empty_conversation": 1, "hidden": 2}
    assert [o["message_id"] for o in doc["items"]] == ["conv-trip-m1", "conv-trip-m2",
                                                       "conv-trip-m3"]  # fmt: skip

    found = ferrex(home, "recall", "where am I staying in Lisbon", "--json")
    assert found.returncode == 0, found.stderr
    best = json.loads(found.stdout)["results"][0]
    assert best["content"] == "user: I am flying to Lisbon on 12 May and staying in Alfama."
    assert best["event_time"] == "2024-06-01T00:01:00Z"
    shown = ferrex(home, "export", "jsonl", "-")
    lines = [json.loads(line) for line in shown.stdout.splitlines()]
    memories = [line for line in lines if line.get("content")]
    assert {m["source"] for m in memories} == {"chatgpt: Lisbon trip [conv-trip]"}

    position = head(home)
    again = ferrex(home, "import", str(export), "--json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["counts"] == {"skipped": 3}
    assert doc["skipped"]["imported_before"] == 3
    assert head(home) == position, "a re-run writes nothing"

    # A newer export: the same conversation went on, another one began.
    longer = [*TRIP, ("user", "Which tram goes up to the castle?"),
              ("assistant", "Tram 28 passes near São Jorge castle.")]  # fmt: skip
    cake = [("user", "How long do I bake a sponge?")]
    newer = [gpt_linear("conv-trip", "Lisbon trip", longer), gpt_linear("conv-c", "Cake", cake)]
    done = ferrex(home, "import", str(write(tmp_path / "newer.json", newer)), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["counts"] == {"stored": 3, "skipped": 3}
    stored = [o["message_id"] for o in doc["items"] if o["status"] == "stored"]
    assert stored == ["conv-trip-m4", "conv-trip-m5", "conv-c-m1"]
    found = ferrex(home, "recall", "tram to the castle", "--json")
    texts = [r["content"] for r in json.loads(found.stdout)["results"][:3]]
    assert "assistant: Tram 28 passes near São Jorge castle." in texts


def test_claude_export_user_turns_only_and_the_text_report(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conv = claude_linear("k-1", "Garden", [
        ("human", "My tomatoes get blossom end rot."),
        ("assistant", "Water evenly and add calcium."),
        ("human", "The beds are raised and drain fast."),
    ])  # fmt: skip
    conv["chat_messages"].append(
        claude_message("k-1-m4", "assistant", "", content=[
            {"type": "tool_use", "name": "web_search", "input": {"query": "tomato rot"}}],
            attachments=[{"file_name": "bed.jpg"}])
    )  # fmt: skip
    export = write(tmp_path / "conversations.json", [conv])
    code, out, err = run(home, "import", str(export), "--assistant", "skip")
    assert code == 0, err
    assert out.splitlines() == [
        "claude: 1 conversation, 4 messages",
        "2 stored",
        "skipped: 1 assistant_turn, 1 attachment, 1 empty_message, 1 tool_call",
    ]
    code, out, _ = run(home, "recall", "tomatoes", "--json")
    texts = [r["content"] for r in json.loads(out)["results"]]
    assert "user: My tomatoes get blossom end rot." in texts
    assert not any(t.startswith("assistant:") for t in texts)
    # The same export with the assistant's turns: the user turns are not stored twice.
    code, out, err = run(home, "import", str(export), "--format", "claude", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["counts"] == {"stored": 1, "skipped": 2}
    assert doc["skipped"]["imported_before"] == 2


def test_bad_files_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, _, err = run(home, "store", "--content", "a memory before the bad imports")
    assert code == 0, err
    position = head(home)
    cases: list[tuple[str, list[str], str]] = [
        ("{not json", ["--format", "chatgpt"], "not a JSON document"),
        ('"just a string"', ["--format", "claude"], "array of conversations"),
        ('[{"uuid": "k", "name": "x"}]', ["--format", "claude"], "no chat_messages list"),
        ('[{"title": "x"}, {"title": "y"}]', [], "cannot tell the format"),
        (json.dumps([gpt_linear("c", "t", [("user", "hi")])]), ["--format", "claude"],
         "no chat_messages list"),
    ]  # fmt: skip
    for i, (text, args, says) in enumerate(cases):
        path = tmp_path / f"bad{i}.json"
        path.write_text(text, encoding="utf-8")
        code, _, err = run(home, "import", str(path), *args)
        assert code == 2 and "error [invalid_input]" in err and says in err, (text, err)
    assert head(home) == position, "a refused file writes nothing"
    fresh = tmp_path / "fresh"
    code, _, err = run(fresh, "import", str(tmp_path / "bad0.json"), "--format", "chatgpt")
    assert code == 2 and not (fresh / "journal").exists()
    # The chat options belong to the chat formats.
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"content": "x"}\n', encoding="utf-8")
    code, _, err = run(home, "import", str(lines), "--assistant", "skip")
    assert code == 2 and "apply to claude and chatgpt" in err
    assert head(home) == position
    # One conversation of the wrong shape among good ones is left out and reported, as a
    # bad line is; the others are imported.
    mixed = write(tmp_path / "mixed.json", [claude_linear("k", "n", [("human", "hi")]),
                                            {"uuid": "k2", "chat_messages": "oops"},
                                            claude_linear("k3", "m", [("human", "yo")]),
                                            ["not", "a", "conversation"]])  # fmt: skip
    code, out, err = run(home, "import", str(mixed), "--format", "claude")
    assert code == 2, err
    reported = [line for line in out.splitlines() if line.startswith("not imported")]
    assert reported == [
        "not imported: invalid [invalid_input] conversation 2 (k2) has no chat_messages list "
        "(Claude's messages)",
        "not imported: invalid [invalid_input] conversation 4 is an array, not a conversation "
        "object",
    ], out
    for line in reported:  # each conversation once, named once
        assert len(re.findall(r"conversation \d", line)) == 1, line
    assert "claude: 2 conversations, 2 messages" in out and "2 invalid, 2 stored" in out


def test_a_likely_secret_in_a_message_is_redacted_and_reported(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    conv = gpt_linear("c", "Keys", [("user", f"my key is {key} keep it"), ("user", "ok")])
    export = write(tmp_path / "conversations.json", [conv])
    code, out, err = run(home, "import", str(export), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["counts"] == {"stored": 2} and doc["secrets"]["lines"] == 1
    code, out, _ = run(home, "import", str(export))
    assert code == 0 and "imported_before" in out
    dump = run(home, "export", "jsonl", "-")[1]
    assert key not in dump and "[redacted:" in dump


def test_a_terminal_sees_the_progress_line_with_its_eta(tmp_path: Path) -> None:
    """On a terminal, stderr shows done/total, rate and ETA; --json on stdout stays clean."""
    export = write(tmp_path / "conversations.json", [gpt_linear("c", "Trip", TRIP)])
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [FERREX, "--home", str(tmp_path / "home"), "import", str(export), "--json"],
            stdout=subprocess.PIPE, stderr=follower, text=True, timeout=600,
        )  # fmt: skip
        os.close(follower)
        shown = b""
        while select.select([leader], [], [], 0)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    assert json.loads(done.stdout)["counts"] == {"stored": 3}
    line = shown.decode()
    assert "importing  [" in line and "3/3 memories  100.0%" in line and "ETA 0:00" in line, line


def test_an_embeddings_server_that_cannot_be_reached_stores_nothing(tmp_path: Path) -> None:
    """Exit 5 (backend_unavailable), nothing journaled; the import can be run again later."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text(
        '[models]\ndense = "openai:some-model"\nembedding_url = "http://127.0.0.1:9/v1"\n'
        "embedding_timeout = 2.0\n"
    )
    export = write(tmp_path / "conversations.json", [gpt_linear("c", "Trip", TRIP)])
    code, _, err = run(home, "import", str(export))
    assert code == 5 and "backend_unavailable" in err, err
    assert head(home) == 0


def test_an_export_given_a_format_of_lines_is_one_clear_error(tmp_path: Path) -> None:
    """A pretty-printed conversations.json imported with --format dump (or store) answered
    'not JSON' once per line of the file; it is one error naming the format to use."""
    home = tmp_path / "home"
    conv = claude_linear("k-2", "Auth gateway", [
        ("human", "The auth gateway returns 502 after the deploy."),
        ("assistant", "Check the upstream timeout in the ingress."),
    ])  # fmt: skip
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([conv], indent=2), encoding="utf-8")
    for fmt in ("dump", "store"):
        code, out, err = run(home, "import", str(export), "--format", fmt)
        assert code == 2 and "not JSON" not in out + err, (out, err)
        assert len(err.strip().splitlines()) == 2 and "looks like a Claude export" in err, err
        assert "--format claude" in err, err
    assert not (home / "journal").exists() or head(home) == 0, "nothing written"
