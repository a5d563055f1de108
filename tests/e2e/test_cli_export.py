"""`ferrex export git | jsonl`, `journal verify --against` and `import` of dumps and of the
memory server's graph, end to end: through click's CliRunner and as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ferrex.cli import cli
from tests.dumps import comparable_text
from tests.rows import home_rows

EXE = Path(sys.executable).with_name("ferrex")

SOURCE_LINES: list[dict[str, Any]] = [
    {"content": "The nightly backup failed on 2026-11-28: the disk was full",
     "entities": ["backup"], "valid_from": "2026-11-28T03:00:00Z",
     "context": {"ticket": "INC-90312", "hosts": ["db1", "db2"]}},
    {"subject": "api-server", "predicate": "uses", "object": "tokio 1.36", "entities": ["Tokio"]},
    {"subject": "api-server", "predicate": "depends on", "object": "tokio 1.38"},
    {"name": "deploy api-server", "steps": ["cargo build --release", "roll pods"]},
    {"name": "deploy api-server", "steps": ["cargo build --release", "run migrations",
                                            "roll pods"], "conditions": ["a release is tagged"]},
    {"content": "Carol is on call this week", "agent_id": "agent-7", "visibility": "private",
     "confidence": 0.7, "source": "standup notes"},
    {"subject": "web", "predicate": "owned by", "object": "team A", "multi_valued": True},
    {"subject": "web", "predicate": "owned by", "object": "team B", "multi_valued": True},
    {"content": "A temporary note about the coffee machine", "entities": ["office"]},
]  # fmt: skip

GRAPH = [
    {"type": "entity", "name": "John_Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish", "Graduated from MIT in 2019"]},
    {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
    {"type": "relation", "from": "John_Smith", "to": "Acme Corp", "relationType": "works_at"},
]  # fmt: skip


def run(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def proc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "--home", str(home), *args], capture_output=True, text=True, check=False
    )


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def head_position(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with history: a superseded fact, two procedure versions, a private memory,
    multi-valued facts, a forgotten memory, recall accesses and a citation."""
    home = tmp_path_factory.mktemp("export-home") / "home"
    source = write_lines(home.parent / "source.jsonl", SOURCE_LINES)
    code, out, _ = run(home, "import", str(source), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "store", doc
    ids = [line["id"] for line in doc["lines"]]
    assert doc["lines"][2]["superseded"] == [ids[1]]
    code, _, _ = run(home, "forget", ids[-1])
    assert code == 0
    code, out, _ = run(home, "recall", "why did the nightly backup fail", "--json")
    assert code == 0
    code, _, _ = run(home, "store", "--content", "Backups now go to the new NAS",
                     "--source", f"memory:{ids[0]}")  # fmt: skip
    assert code == 0
    return home


# -- export git / verify --against ----------------------------------------------------------


def test_export_git_verify_and_incremental(home: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "audit", tmp_path / "audit-2"
    code, out, err = run(home, "export", "git", str(first), "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert doc["positions"] == [1, head_position(home)] and len(doc["commits"]) == 1
    assert doc["counts"]["forgotten"] == 1 and doc["counts"]["superseded"] == 2
    done = proc(home, "export", "git", str(second), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["commits"] == doc["commits"], "deterministic commit ids"
    for repo in (first, second):
        git(repo, "fsck", "--strict", "--no-dangling")
        assert git(repo, "rev-parse", "HEAD") == doc["commits"][0]

    code, out, _ = run(home, "journal", "verify", "--against", str(first))
    assert code == 0 and "records match the journal" in out
    code, out, _ = run(home, "export", "git", str(first))
    assert code == 0 and "up to date" in out

    code, _, _ = run(home, "store", "--content", "The staging cluster moved to eu-west-3")
    assert code == 0
    code, out, _ = run(home, "journal", "verify", "--against", str(first))
    assert code == 0 and "1 newer records not exported yet" in out
    code, out, _ = run(home, "export", "git", str(first))
    assert code == 0 and "in 1 commit" in out and "1 stored" in out
    assert git(first, "rev-list", "--count", "HEAD") == "2", "exactly one commit more"
    assert git(first, "rev-parse", "HEAD^") == doc["commits"][0]
    done = proc(home, "export", "git", str(second))
    assert done.returncode == 0
    assert git(second, "rev-parse", "HEAD") == git(first, "rev-parse", "HEAD")


def test_an_edited_export_is_detected(home: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    assert run(home, "export", "git", str(audit))[0] == 0
    (records,) = (audit / "records").iterdir()
    text = records.read_text()
    assert "the disk was full" in text
    records.write_text(text.replace("the disk was full", "the disk was fine"))
    position = next(
        json.loads(line)["position"] for line in text.splitlines() if "the disk was full" in line
    )
    code, out, _ = run(home, "journal", "verify", "--against", str(audit))
    assert code == 3 and "EXPORT MISMATCH" in out
    assert f"line {position} position {position}: events" in out and "body.content" in out
    code, out, _ = run(home, "journal", "verify", "--against", str(audit), "--json")
    problems = json.loads(out)["export"]["problems"]
    assert code == 3 and problems[0]["kind"] == "changed" and problems[0]["position"] == position
    done = proc(home, "journal", "verify", "--against", str(audit))
    assert done.returncode == 3 and f"position {position}" in done.stdout
    # Refused while the work tree has changes; nothing is written.
    run(home, "store", "--content", "The office wifi password rotates monthly")
    head = git(audit, "rev-parse", "HEAD")
    code, _, err = run(home, "export", "git", str(audit))
    assert code == 2 and "error [export_dirty]" in err and "hint:" in err
    assert git(audit, "rev-parse", "HEAD") == head


def test_export_git_refuses_bad_targets(home: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "mine.txt").write_text("keep me")
    code, _, err = run(home, "export", "git", str(plain))
    assert code == 2 and "error [export_target]" in err
    assert [p.name for p in plain.iterdir()] == ["mine.txt"]
    code, _, err = run(tmp_path / "no-home", "export", "git", str(tmp_path / "out"))
    assert code == 2 and "no journal" in err and not (tmp_path / "out").exists()
    code, _, err = run(home, "journal", "verify", "--against", str(plain))
    assert code == 2 and "no ferrex export" in err
    code, _, err = run(home, "journal", "verify", "--against", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err


# -- export jsonl / import dump -------------------------------------------------------------


def test_dump_round_trip(home: Path, tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    code, out, _ = run(home, "export", "jsonl", str(dump), "--include-invalidated", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["invalidated"] == 2 and summary["memories"] >= 9
    header, *every = [json.loads(line) for line in dump.read_text().splitlines()]
    assert header["type"] == "ferrex_dump" and header["journal_position"] == head_position(home)
    lines = [line for line in every if line["type"] != "entity"]
    assert len(lines) == summary["memories"] and len(every) - len(lines) == summary["entities"]
    assert sum(1 for line in lines if line.get("multi_valued")) == 2
    assert not any("coffee machine" in line.get("content", "") for line in lines), "forgotten"
    by_content = {line.get("content"): line for line in lines}
    backup = by_content["The nightly backup failed on 2026-11-28: the disk was full"]
    assert backup["t_valid"] == "2026-11-28T03:00:00Z" and backup["entities"] == ["backup"]
    assert backup["context"] == {"ticket": "INC-90312", "hosts": ["db1", "db2"]}
    assert backup["access_count"] >= 1 and "last_validated" in backup
    carol = by_content["Carol is on call this week"]
    assert (carol["agent_id"], carol["visibility"]) == ("agent-7", "private")
    assert carol["confidence"] == 0.7 and carol["source"] == "standup notes"
    old_fact = next(line for line in lines if line.get("object") == "tokio 1.36")
    assert old_fact["superseded_by"] and old_fact["t_invalid"]

    empty = tmp_path / "restored"
    done = proc(empty, "import", str(dump), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["format"] == "dump" and doc["counts"] == {"stored": len(every)}
    assert home_rows(empty) == home_rows(home), "the restored read model is the dumped one"
    again = tmp_path / "again.jsonl"
    code, _, _ = run(empty, "export", "jsonl", str(again), "--include-invalidated")
    assert code == 0
    assert comparable_text(again.read_text()) == comparable_text(dump.read_text())
    restored = [json.loads(line) for line in again.read_text().splitlines()[1:]]
    assert [line["id"] for line in restored] == [line["id"] for line in every]
    # when the home learned each memory comes back (memory.stored's learned_at)
    assert [r.get("created_at") for r in restored] == [o.get("created_at") for o in every]

    head = head_position(empty)
    code, out, _ = run(empty, "import", str(dump), "--json")
    assert code == 0 and json.loads(out)["counts"] == {"skipped": len(every)}
    assert head_position(empty) == head, "importing the same dump again adds nothing"
    # Told as a person reads it: the lines counted by what they restore.
    code, out, _ = run(tmp_path / "told", "import", str(dump))
    held = f"{len(every)} stored ({len(lines)} memories, {len(every) - len(lines)} entities)"
    assert code == 0 and held in out, out

    live = proc(home, "export", "jsonl", "-", "--current-only")
    assert live.returncode == 0 and "exported" in live.stderr
    live_again = proc(empty, "export", "jsonl", "-", "--current-only")
    assert comparable_text(live.stdout) == comparable_text(live_again.stdout)
    live_memories = [json.loads(line) for line in live.stdout.splitlines()[1:]]
    assert sum(m["type"] != "entity" for m in live_memories) == len(lines) - 2, "live only"


def test_dump_bad_input(home: Path, tmp_path: Path) -> None:
    code, _, err = run(tmp_path / "no-home", "export", "jsonl", str(tmp_path / "d.jsonl"))
    assert code == 2 and "no journal" in err and not (tmp_path / "no-home").exists()
    code, _, err = run(home, "export", "jsonl", "-", "--json")
    assert code == 2 and "--json" in err
    code, _, err = run(home, "export", "jsonl", str(tmp_path / "nowhere" / "dump.jsonl"))
    assert code == 2 and "not a directory" in err
    target = tmp_path / "restore"
    good = {
        "id": "mem_x1",
        "type": "episodic",
        "content": "Kept",
        "t_valid": "2026-01-01T00:00:00Z",
    }
    bad = {**good, "id": "mem_x2", "t_valid": "2026-01-01T00:00:00"}
    code, out, _ = run(target, "import", str(write_lines(tmp_path / "d.jsonl", [good, bad])),
                       "--json")  # fmt: skip
    doc = json.loads(out)
    assert code == 2 and [line["status"] for line in doc["lines"]] == ["stored", "invalid"]
    assert doc["lines"][1]["line"] == 2, "the outcome names its line; its message need not"
    assert doc["lines"][1]["message"] == "t_valid 2026-01-01T00:00:00 has no timezone"
    code, out, _ = run(target, "import", str(tmp_path / "d.jsonl"), "--format", "store")
    assert code == 2 and "unknown field 'id'" in out, "a dump is not store requests"


def test_a_dump_to_a_missing_directory_is_refused_before_the_journal_is_opened(
    tmp_path: Path,
) -> None:
    # A journal whose first record is torn: opening it would cut the tail (and keep it in
    # a .corrupt file), so its bytes show whether the export opened it before refusing.
    home = tmp_path / "home"
    code, _, _ = run(home, "store", "--content", "The staging cluster moved to the new rack")
    assert code == 0
    segment = next((home / "journal").glob("*.seg"))
    torn = bytearray(segment.read_bytes())
    torn[20:40] = b"x" * 20
    segment.write_bytes(bytes(torn))
    code, _, err = run(home, "export", "jsonl", str(tmp_path / "nowhere" / "dump.jsonl"))
    assert code == 2 and "not a directory" in err, err
    assert segment.read_bytes() == bytes(torn), "the journal was opened (and repaired)"
    assert not list((home / "journal").glob("*.corrupt*"))


# -- import memory-server -------------------------------------------------------------------


def test_import_memory_server_graph(tmp_path: Path) -> None:
    graph = write_lines(tmp_path / "memory.jsonl", GRAPH)
    home = tmp_path / "home"
    code, out, err = run(home, "import", str(graph), "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert doc["format"] == "memory-server"
    assert doc["counts"] == {"stored": 6}
    assert [(line["line"], line["item"]) for line in doc["lines"]] == [
        (1, "entity type"), (1, "observation 1"), (1, "observation 2"), (2, "entity type"),
        (3, "relation"), (4, "relation"),
    ]  # fmt: skip
    dump = proc(home, "export", "jsonl", "-")
    memories = {
        (m.get("subject"), m.get("predicate"), m.get("object"), m.get("content")): m
        for m in map(json.loads, dump.stdout.splitlines())
    }
    assert ("John_Smith", "is a", "person", None) in memories
    works = [k for k in memories if k[1] == "works_at"]
    assert sorted(k[2] for k in works) == ["Acme Corp", "Anthropic"], "both relations hold"
    spanish = memories[(None, None, None, "John_Smith: Speaks fluent Spanish")]
    assert spanish["entities"] == ["John_Smith"] and spanish["source"] == "memory-server"
    code, out, _ = run(home, "recall", "who speaks Spanish", "--json")
    assert code == 0 and "John_Smith: Speaks fluent Spanish" in out

    other = tmp_path / "other"
    broken = write_lines(tmp_path / "broken.jsonl", [*GRAPH, {"type": "entity", "name": 5}])
    done = proc(other, "import", "--format", "memory-server", str(broken), "--json")
    assert done.returncode == 2
    statuses = [line["status"] for line in json.loads(done.stdout)["lines"]]
    assert statuses == ["stored"] * 6 + ["invalid"]
    done = proc(other, "import", "--format", "memory-server", str(graph))
    assert done.returncode == 0, done.stderr
    assert "4 skipped" in done.stdout and "2 duplicate" in done.stdout


# -- rewrite after a real `journal compact` -------------------------------------------------


def test_rewrite_after_journal_compact_purges_the_export(tmp_path: Path) -> None:
    secret = "The staging root password is hunter2-7781"
    home, audit = tmp_path / "home", tmp_path / "audit"
    lines = write_lines(tmp_path / "in.jsonl", [{"content": secret}, {"content": "Keep me"}])
    code, out, _ = run(home, "import", str(lines), "--json")
    secret_id = json.loads(out)["lines"][0]["id"]
    assert code == 0 and run(home, "export", "git", str(audit))[0] == 0
    assert run(home, "forget", secret_id)[0] == 0
    assert run(home, "export", "git", str(audit))[0] == 0
    code, out, err = run(home, "journal", "compact")
    assert code == 0, out + err
    code, out, _ = run(home, "journal", "verify", "--against", str(audit), "--json")
    problems = json.loads(out)["export"]["problems"]
    assert code == 3 and [p["kind"] for p in problems] == ["unredacted"]
    assert problems[0]["position"] == 1 and "--rewrite" in problems[0]["reason"]

    done = proc(home, "export", "git", "--rewrite", str(audit), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["rewritten"] and len(doc["commits"]) == 2, "the two batches are kept"
    assert doc["counts"]["redacted_bodies"] == 1
    code, out, _ = run(home, "journal", "verify", "--against", str(audit))
    assert code == 0 and "records match" in out
    git(audit, "fsck", "--strict", "--no-dangling")
    objects = subprocess.run(
        ["git", "-C", str(audit), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert secret.encode() not in objects and b"Keep me" in objects
    fresh = tmp_path / "fresh"
    code, out, _ = run(home, "export", "git", str(fresh), "--json")
    assert code == 0 and len(json.loads(out)["commits"]) == 1
    tree = git(fresh, "rev-parse", "HEAD^{tree}")
    assert tree == git(audit, "rev-parse", "HEAD^{tree}"), "same files, whatever the batches"


def test_an_agent_id_does_not_limit_a_backup_and_the_export_says_so(tmp_path: Path) -> None:
    """``ferrex --agent-id alice export jsonl -`` wrote every agent's memories while the global
    flag's help says it limits what is seen. A backup stays whole (a dump short of the other
    agents' memories would restore a smaller home); the export says so on stderr."""
    home = tmp_path / "home"
    for agent, text in (("alice", "Alice's private note on the VPN rollout"),
                        ("bob", "Bob's private note on the billing migration")):  # fmt: skip
        code, _, err = run(home, "--agent-id", agent, "store", "--content", text,
                           "--visibility", "private")  # fmt: skip
        assert code == 0, err
    code, out, err = run(home, "--agent-id", "alice", "export", "jsonl", "-")
    dumped = [json.loads(line) for line in out.splitlines()[1:]]
    assert code == 0 and {m["agent_id"] for m in dumped} == {"alice", "bob"}, out
    assert "--agent-id does not limit an export" in err and "every agent's" in err, err
    code, out, err = run(home, "export", "jsonl", str(tmp_path / "all.jsonl"))
    assert code == 0 and "--agent-id" not in err + out, (out, err)
    code, _, err = run(home, "--agent-id", "alice", "export", "git", str(tmp_path / "audit"))
    assert code == 0 and "--agent-id does not limit an export" in err, err
    code, out, _ = run(home, "--help")
    assert "an export is of the whole home" in " ".join(out.split()), out


def test_a_backup_says_how_many_of_its_memories_are_past_their_time_to_live(
    tmp_path: Path,
) -> None:
    """A scratch note whose time to live ran out before the sweep is still in the journal: the
    dump carries it (restored hidden, then swept) and says so, rather than counting it as one
    of the memories a reader sees (``stats`` said 1 memory, the export "2 memories")."""
    home = tmp_path / "home"
    for args in (("--content", "Deploys frozen until the hotfix ships", "--ttl", "1s"),
                 ("--content", "The api uses Postgres 16",)):  # fmt: skip
        code, _, err = run(home, "store", *args)
        assert code == 0, err
    time.sleep(1.5)
    code, out, _ = run(home, "export", "jsonl", str(tmp_path / "all.jsonl"))
    assert code == 0 and "exported 2 memories (1 past its time to live)" in out, out
    code, out, _ = run(home, "export", "jsonl", str(tmp_path / "all.jsonl"), "--json")
    assert code == 0 and json.loads(out)["expired"] == 1, out
