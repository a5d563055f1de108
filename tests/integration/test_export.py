"""The git audit export, its verification, and the dump/restore formats, on real parts:
journals on disk, real git repositories, and (for restores) the real store pipeline."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ferrex.core.decide.restore import RestoredEntity
from ferrex.errors import BackendUnavailable, JournalFailure, UsageError
from ferrex.models import Embedder
from ferrex.porting.dump import dump_line, entity_names, live_memories, write_dump
from ferrex.porting.dump_read import MemoryChecks, parse_dump_line, parse_line
from ferrex.porting.gitexport import export_git
from ferrex.porting.gitverify import verify_against
from ferrex.porting.memory_server import graph_items
from ferrex.porting.records import RECORDS_PER_FILE, file_for, render
from ferrex.porting.restore import restore_many
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreSettings, Writer
from journal import (
    Access,
    EntityCreated,
    Journal,
    MemoriesAccessed,
    MemoriesForgotten,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
)
from journal.record import redact_frame
from journal.segment import HEADER_SIZE, list_segments, scan_frames
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders
from projections.vectors import VectorFilter
from tests.rows import read_model_rows
from tests.strategies import stored

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SECRET = "the root password is hunter2"


class Clock:
    """A journal clock that moves one second per append: reproducible recorded_at."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def make_journal(directory: Path, records: int, *, segment_bytes: int = 64 * 1024) -> None:
    with Journal.open(directory, segment_bytes=segment_bytes, clock=Clock()) as journal:
        journal.append_batch([[stored(i)] for i in range(1, records + 1)])


def append(directory: Path, commands: list[list[object]]) -> None:
    with Journal.open(directory, segment_bytes=64 * 1024, clock=Clock()) as journal:
        journal.append_batch(commands)  # type: ignore[arg-type]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def export(journal_dir: Path, target: Path, *, rewrite: bool = False) -> list[str]:
    with Journal.open(journal_dir) as journal:
        return export_git(journal, target, rewrite=rewrite).commits


def against(journal_dir: Path, target: Path) -> list[tuple[str, int | None]]:
    with Journal.open(journal_dir) as journal:
        report = verify_against(journal, target)
    return [(p.kind, p.position) for p in report.problems]


def redact(journal_dir: Path, memory_ids: set[str]) -> None:
    """What `journal compact` does to the bytes: bodies of these memories become nil,
    heads (so hashes and the chain) untouched."""
    for first, path in list_segments(journal_dir):
        data = path.read_bytes()
        out = bytearray(data[:HEADER_SIZE])
        for info in scan_frames(data, HEADER_SIZE, first).frames:
            new = redact_frame(data, info, memory_ids)
            out += new if new is not None else data[info.offset : info.offset + info.length]
        path.write_bytes(bytes(out))


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        # git status refreshes the index's stat cache; the lock file is ours
        if p.is_file() and p.name not in ("ferrex-export.lock", "index")
    }


@pytest.fixture
def journal_dir(tmp_path: Path) -> Path:
    make_journal(tmp_path / "journal", 2500)
    return tmp_path / "journal"


# -- rendering ------------------------------------------------------------------------------


def test_render_is_canonical_and_shows_redaction(tmp_path: Path) -> None:
    event = MemoryStored(
        memory_id="m1",
        namespace="default",
        memory_type="episodic",
        t_valid=T0,
        body=MemoryBody(content="café ☕", context={"b": 1, "a": {"z": 2, "y": 3}}),
    )
    with Journal.open(tmp_path / "j", clock=Clock()) as journal:
        journal.append_batch([[event], [stored(2)]])
        first, second = list(journal.read(hashes=True))
    line = render(first)
    assert line.startswith(b'{"position":1,"recorded_at":"2026-03-01T09:00:01Z","hash":"')
    assert "café ☕".encode() in line, "text is UTF-8, not escaped"
    view = json.loads(line)
    body = view["events"][0]["body"]
    assert list(body["context"]) == ["a", "b"] and list(body["context"]["a"]) == ["y", "z"]
    assert first.hash is not None and view["hash"] == first.hash.hex()
    assert view["prev_hash"] == "00" * 32
    assert render(first) == line, "the same record renders to the same bytes"
    assert json.loads(render(second))["prev_hash"] == view["hash"]

    redact(tmp_path / "j", {"m1"})
    with Journal.open(tmp_path / "j") as journal:
        redacted = next(iter(journal.read(hashes=True)))
    shown = json.loads(render(redacted))
    assert shown["events"][0]["body"] == {"redacted": True}
    assert shown["events"][0]["body_hash"] == view["events"][0]["body_hash"]
    assert shown["hash"] == view["hash"], "redaction keeps the chain"


# -- export ---------------------------------------------------------------------------------


def test_export_is_deterministic_complete_and_fsck_clean(journal_dir: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    commits = export(journal_dir, a)
    assert len(commits) == 1
    assert export(journal_dir, b) == commits, "the same journal gives the same commit ids"
    git(a, "fsck", "--strict", "--no-dangling")
    files = sorted(p.name for p in (a / "records").iterdir())
    assert files == [
        "000000000001-000000001000.jsonl",
        "000000001001-000000002000.jsonl",
        "000000002001-000000003000.jsonl",
    ]
    lines = (a / "records" / files[2]).read_text().splitlines()
    assert len(lines) == 500 and json.loads(lines[-1])["position"] == 2500
    state = json.loads((a / "ferrex-export.json").read_text())
    assert state["position"] == 2500 and state["records_per_file"] == RECORDS_PER_FILE
    with Journal.open(journal_dir) as journal:
        head = journal.head
    assert state["hash"] == head.hash.hex() and head.recorded_at is not None
    message = git(a, "log", "-1", "--format=%B")
    assert message.startswith("journal 1..2500: 2500 stored, 0 superseded")
    assert "Ferrex-Positions: 1..2500" in message
    when = int(head.recorded_at.timestamp())
    assert git(a, "log", "-1", "--format=%an <%ae> %at %cn %ct") == (
        f"ferrex <ferrex@localhost> {when} ferrex {when}"
    ), "author and committer are fixed; the date is the batch's last recorded_at"
    assert git(a, "status", "--porcelain") == "", "the work tree is checked out"
    assert against(journal_dir, a) == []


def test_incremental_export_adds_one_commit_and_a_clone_resumes(
    journal_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "export"
    (first,) = export(journal_dir, target)
    assert export(journal_dir, target) == [], "up to date: no commit"
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(target), str(clone)], check=True)
    append(journal_dir, [
        [MemorySuperseded(memory_id="m1", namespace="default", t_invalid=T0, superseded_by="m2")],
        [MemoriesForgotten(memory_ids=("m3", "m4"), namespace="default")],
        [MemoriesValidated(memory_ids=("m5",), at=T0)],
    ])  # fmt: skip
    (second,) = export(journal_dir, target)
    assert git(target, "rev-list", "--count", "HEAD") == "2"
    assert git(target, "rev-parse", "HEAD^") == first
    message = git(target, "log", "-1", "--format=%s")
    assert message == "journal 2501..2503: 0 stored, 1 superseded, 2 forgotten, 1 validated"
    # Only the last records file changed, by three appended lines.
    changed = git(target, "diff", "--numstat", "HEAD^", "HEAD", "--", "records").split()
    assert changed == ["3", "0", "records/000000002001-000000003000.jsonl"]
    assert export(journal_dir, clone) == [second], "a fresh clone resumes to the same commit"
    git(target, "fsck", "--strict", "--no-dangling")
    assert against(journal_dir, target) == [] and against(journal_dir, clone) == []


def test_refusals_change_nothing(journal_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "export"
    export(journal_dir, target)
    before = snapshot(target)

    other = tmp_path / "other-journal"
    make_journal(other, 3)
    with pytest.raises(UsageError) as foreign:
        export(other, target)
    assert foreign.value.code == "export_foreign" and "another journal" in foreign.value.message
    with pytest.raises(UsageError) as foreign:
        export(other, target, rewrite=True)
    assert foreign.value.code == "export_foreign"

    shorter = tmp_path / "shorter"
    shutil.copytree(journal_dir, shorter)
    append(journal_dir, [[stored(9001)]])
    export(journal_dir, target)
    before = snapshot(target)
    with pytest.raises(JournalFailure) as ahead:
        export(shorter, target)
    assert ahead.value.code == "export_ahead" and "2501" in ahead.value.message
    assert ahead.value.exit_code == 3
    with pytest.raises(JournalFailure) as ahead:
        export(shorter, target, rewrite=True)
    assert ahead.value.code == "export_ahead", "a rewrite must not drop exported records"
    assert snapshot(target) == before

    path = target / "records" / "000000002001-000000003000.jsonl"
    path.write_text(path.read_text().replace("memory number 2001", "memory number 0"))
    append(journal_dir, [[stored(9002)]])
    with pytest.raises(UsageError) as dirty:
        export(journal_dir, target)
    assert dirty.value.code == "export_dirty" and "000000002001" in dirty.value.message
    git(target, "checkout", "--", ".")
    assert snapshot(target) == before

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    with pytest.raises(UsageError) as not_export:
        export(journal_dir, plain)
    assert not_export.value.code == "export_target"
    assert [p.name for p in plain.iterdir()] == ["notes.txt"]
    foreign_repo = tmp_path / "repo"
    foreign_repo.mkdir()
    git(foreign_repo, "init", "-q")
    (foreign_repo / "a.txt").write_text("x")
    git(foreign_repo, "add", "a.txt")
    git(foreign_repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    with pytest.raises(UsageError, match="holds no ferrex export"):
        export(journal_dir, foreign_repo)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        export(journal_dir, tmp_path / "file")


def test_a_journal_that_diverged_from_its_export_is_refused(tmp_path: Path) -> None:
    ours, theirs, target = tmp_path / "ours", tmp_path / "theirs", tmp_path / "export"
    make_journal(ours, 1)
    shutil.copytree(ours, theirs)  # the same first record: the same journal identity
    append(ours, [[stored(2)], [stored(3)]])
    append(theirs, [[stored(2, "something else")], [stored(3)]])
    export(ours, target)
    before = snapshot(target)
    for rewrite in (False, True):
        with pytest.raises(JournalFailure) as diverged:
            export(theirs, target, rewrite=rewrite)
        assert diverged.value.code == "export_diverged" and "position 3" in diverged.value.message
    assert snapshot(target) == before
    assert against(theirs, target) == [("changed", 2), ("changed", 3), ("state", None)]


def test_empty_journal_exports_nothing(tmp_path: Path) -> None:
    Journal.open(tmp_path / "journal").close()
    assert export(tmp_path / "journal", tmp_path / "export") == []
    assert not (tmp_path / "export").exists()


# -- verify --against -----------------------------------------------------------------------


def test_verify_against_names_what_differs(journal_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "export"
    export(journal_dir, target)
    path = target / "records" / "000000001001-000000002000.jsonl"
    original = path.read_bytes()
    lines = original.split(b"\n")

    path.write_bytes(original.replace(b"memory number 1017", b"memory number 1018"))
    assert against(journal_dir, target) == [("changed", 1017), ("uncommitted", None)]
    with Journal.open(journal_dir) as journal:
        report = verify_against(journal, target)
    changed = report.problems[0]
    assert changed.file == "records/000000001001-000000002000.jsonl" and changed.line == 17
    assert "events[0].body.content" in changed.reason

    path.write_bytes(b"\n".join(lines[:4] + lines[5:]))  # position 1005 deleted
    assert against(journal_dir, target)[0] == ("missing", 1005)

    forged = json.loads(lines[0])
    forged["position"] = 999_999
    path.write_bytes(original + json.dumps(forged).encode() + b"\n")
    assert ("extra", 999_999) in against(journal_dir, target)

    path.write_bytes(original.replace(b'"position":1003,', b'"position": 1003, ', 1))
    assert against(journal_dir, target) == [("uncommitted", None)], "formatting is not content"

    path.unlink()
    problems = against(journal_dir, target)
    assert ("missing", 1001) in problems
    path.write_bytes(original)

    state = target / "ferrex-export.json"
    text = state.read_text()
    state.write_text(text.replace('"position": 2500', '"position": 2400'))
    assert ("missing", None) not in against(journal_dir, target)
    assert "state" in {kind for kind, _ in against(journal_dir, target)}
    state.write_text(text)
    assert against(journal_dir, target) == []

    other = tmp_path / "other"
    make_journal(other, 5)
    assert against(other, target) == [("foreign", None)]


def test_verify_against_a_bare_clone_and_a_plain_copy(journal_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "export"
    export(journal_dir, target)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(target), str(bare)], check=True)
    copy = tmp_path / "copy"
    shutil.copytree(target, copy, ignore=shutil.ignore_patterns(".git"))
    assert against(journal_dir, bare) == [] and against(journal_dir, copy) == []
    append(journal_dir, [[stored(9001)]])
    (commit,) = export(journal_dir, bare)
    assert export(journal_dir, target) == [commit], "a bare repository is exported into too"
    git(bare, "fsck", "--strict", "--no-dangling")
    with pytest.raises(UsageError, match="no ferrex export"):
        against(journal_dir, tmp_path)


# -- rewrite after compaction ---------------------------------------------------------------


def test_rewrite_purges_redacted_text_and_keeps_batches(tmp_path: Path) -> None:
    journal_dir, target = tmp_path / "journal", tmp_path / "export"
    make_journal(journal_dir, 10)
    append(journal_dir, [[stored(11, SECRET)], [stored(12)]])
    first_batch = export(journal_dir, target)
    append(journal_dir, [[MemoriesForgotten(memory_ids=("m11",), namespace="default")]])
    export(journal_dir, target)
    append(journal_dir, [[stored(14)]])  # not exported before the rewrite
    redact(journal_dir, {"m11"})
    assert ("unredacted", 11) in against(journal_dir, target)
    assert SECRET in (target / "records" / file_for(11).split("/")[1]).read_text()

    rewritten = export(journal_dir, target, rewrite=True)
    assert len(rewritten) == 3, "the old batches (1..12, 13..13) and then 14"
    subjects = git(target, "log", "--reverse", "--format=%s").splitlines()
    assert [s.split(":")[0] for s in subjects] == ["journal 1..12", "journal 13..13",
                                                   "journal 14..14"]  # fmt: skip
    assert rewritten[0] != first_batch[0]
    assert against(journal_dir, target) == []
    git(target, "fsck", "--strict", "--no-dangling")
    everything = subprocess.run(
        ["git", "-C", str(target), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert SECRET.encode() not in everything, "the old history's objects are pruned"
    assert b'"body":{"redacted":true}' in everything
    assert export(journal_dir, target, rewrite=True) == rewritten, "rewriting is deterministic"


def test_rewrite_of_a_fresh_directory_is_a_plain_export(journal_dir: Path, tmp_path: Path) -> None:
    assert export(journal_dir, tmp_path / "a", rewrite=True) == export(journal_dir, tmp_path / "b")


def test_git_missing_is_a_clear_error(
    journal_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(BackendUnavailable) as missing:
        export(journal_dir, tmp_path / "export")
    assert missing.value.code == "git_unavailable" and missing.value.exit_code == 5


# -- the dump format ------------------------------------------------------------------------


def test_dump_lines_are_checked_like_stores() -> None:
    good: dict[str, Any] = {
        "id": "mem_1",
        "type": "episodic",
        "content": "ok",
        "t_valid": "2026-01-01T00:00:00Z",
    }
    restored = parse_line(good, "line 1")
    assert restored.memory_id == "mem_1"
    assert restored.valid.t_valid == datetime(2026, 1, 1, tzinfo=UTC)
    cases: dict[str, dict[str, Any]] = {
        "unknown field 'colour'": {**good, "colour": "blue"},
        "not a memory id": {**good, "id": "two words"},
        "has no t_valid": {k: v for k, v in good.items() if k != "t_valid"},
        "has no timezone": {**good, "t_valid": "2026-01-01T00:00:00"},
        "only for procedural": {**good, "version": 2},
        "superseded_by but no t_invalid": {**good, "superseded_by": "mem_2"},
        "access_count but no last_accessed": {**good, "access_count": 3},
        "needs subject, predicate and object": {**good, "type": "semantic"},
        "t_invalid": {**good, "t_invalid": "soon"},
        "entities in line 1 must be a list": {**good, "entities": "x"},
    }
    for expected, raw in cases.items():
        with pytest.raises(UsageError) as bad:
            parse_line(raw, "line 1")
        assert expected in bad.value.message and "line 1" in bad.value.message, expected


def test_a_dump_line_says_whether_its_start_was_given_or_its_times_do() -> None:
    line: dict[str, Any] = {"id": "mem_1", "type": "semantic", "subject": "api",
                            "predicate": "version", "object": "2",
                            "t_valid": "2026-01-01T00:00:00Z"}  # fmt: skip
    learned_then = {**line, "created_at": "2026-01-01T00:00:02Z"}
    learned_later = {**line, "created_at": "2026-03-01T00:00:00Z"}
    # format 3 says it whatever created_at is: without it, not given
    for unsaid in (line, learned_then, learned_later):
        assert not parse_line(unsaid, "line 1").valid_from_given
    # a line of an older dump without it is read by its times
    two, one = MemoryChecks(dump_format=2), MemoryChecks(dump_format=1)
    assert parse_line(line, "line 1", two).valid_from_given  # no created_at: given
    assert not parse_line(learned_then, "line 1", two).valid_from_given
    assert parse_line(learned_later, "line 1", one).valid_from_given
    said = {**learned_then, "valid_from_given": True}
    assert parse_line(said, "line 1").valid_from_given
    assert parse_line(said, "line 1", two).valid_from_given
    with pytest.raises(UsageError, match="valid_from_given"):
        parse_line({**line, "valid_from_given": "yes"}, "line 1")


def test_memory_server_lines_map_to_stores() -> None:
    entity = {"type": "entity", "name": "John_Smith", "entityType": "person",
              "observations": ["Speaks fluent Spanish"], "createdAt": "ignored"}  # fmt: skip
    items = graph_items(entity, 1)
    assert [i.what for i in items] == ["entity type", "observation 1"]
    assert items[0].request == StoreRequest(subject="John_Smith", predicate="is a",
        object="person", entities=("John_Smith",), source="memory-server")  # fmt: skip
    assert items[1].request.content == "John_Smith: Speaks fluent Spanish"
    (relation,) = graph_items({"type": "relation", "from": "a", "to": "b",
                               "relationType": "works_at"}, 2)  # fmt: skip
    assert relation.multi_valued and relation.request.entities == ("a", "b")
    assert relation.request.predicate == "works_at"
    bad_lines: list[tuple[dict[str, Any], str]] = [
        ({"type": "node"}, "neither an entity nor a relation"),
        ({"type": "entity", "name": " "}, "needs name"),
        ({"type": "entity", "name": "x", "observations": "one"}, "must be a list"),
        ({"type": "entity", "name": "x", "observations": [3]}, "observation 1"),
        ({"type": "relation", "from": "a", "to": "b"}, "needs relationType"),
    ]
    for raw, message in bad_lines:
        with pytest.raises(UsageError, match=message):
            graph_items(raw, 3)


# -- restore --------------------------------------------------------------------------------


@pytest.fixture
def writer_at(
    tmp_path: Path, encoders: Encoders, shared_embedder: Embedder
) -> Iterator[tuple[Writer, Path]]:
    journal = Journal.open(tmp_path / "home" / "journal")
    backend = EdgeBackend(tmp_path / "home" / "qdrant")
    projections = Projections.open(tmp_path / "home", journal, backend, encoders)
    yield Writer(journal, projections, shared_embedder, StoreSettings()), tmp_path / "home"
    projections.close()
    backend.close()
    journal.close()


def test_restore_keeps_ids_times_history_and_skips_what_exists(
    writer_at: tuple[Writer, Path],
) -> None:
    writer, _ = writer_at
    lines: list[dict[str, Any]] = [
        {"id": "mem_old", "type": "semantic", "subject": "api", "predicate": "uses",
         "object": "tokio 1.36", "entities": ["Tokio", "api"], "t_valid": "2025-01-01T00:00:00Z",
         "t_invalid": "2025-06-01T00:00:00Z", "superseded_by": "mem_new"},
        {"id": "mem_new", "type": "semantic", "subject": "api", "predicate": "uses",
         "object": "tokio 1.38", "entities": ["tokio"], "t_valid": "2025-06-01T00:00:00Z",
         "last_validated": "2025-07-01T00:00:00Z", "last_accessed": "2025-08-01T00:00:00Z",
         "access_count": 4, "confidence": 0.5, "agent_id": "a1", "visibility": "private"},
        {"id": "mem_proc", "type": "procedural", "name": "deploy", "version": 3,
         "steps": ["build", "ship"], "t_valid": "2025-02-01T00:00:00Z"},
    ]  # fmt: skip
    items = [parse_line(raw, f"line {i}") for i, raw in enumerate(lines, 1)]
    outcomes = restore_many(writer, items)
    assert [o.status for o in outcomes] == ["stored"] * 3
    assert [o.position for o in outcomes] == [1, 2, 3]
    rm = writer.projections.read_model
    old, new, proc = (rm.get(i) for i in ("mem_old", "mem_new", "mem_proc"))
    assert old is not None and new is not None and proc is not None
    assert old.t_invalid == datetime(2025, 6, 1, tzinfo=UTC).timestamp()
    assert old.superseded_by == "mem_new" and new.t_invalid is None
    names = entity_names(rm)
    by_name = {name: entity_id for entity_id, name in names.items()}
    assert sorted(names.values()) == ["Tokio", "api"], "'tokio' is the entity 'Tokio'"
    assert new.entity_ids == (by_name["Tokio"],)
    assert set(old.entity_ids) == {by_name["Tokio"], by_name["api"]}
    assert new.access_count == 4
    assert new.last_accessed == datetime(2025, 8, 1, tzinfo=UTC).timestamp()
    assert new.last_validated == datetime(2025, 7, 1, tzinfo=UTC).timestamp()
    assert (new.confidence, new.agent_id, new.visibility) == (0.5, "a1", "private")
    assert new.predicate_normalized == "depends_on"
    assert proc.procedure_version == 3 and proc.steps == ("build", "ship")
    memories, _ = live_memories(rm, include_invalidated=True)
    first = [dump_line(m, names) for m in memories]
    assert json.loads(first[0])["id"] == "mem_old", "journal order"

    head = writer.journal.refresh().position
    again = restore_many(writer, items + items[:1])
    assert [o.status for o in again] == ["skipped"] * 4
    assert writer.journal.refresh().position == head, "importing twice adds nothing"
    hits = writer.projections.backend.query_dense(
        writer.projections.live.memories,
        [float(x) for x in writer.embedder.embed("api uses tokio 1.38")],
        VectorFilter(namespace="default", only_valid=True),
        5,
    )
    assert [h.payload["memory_id"] for h in hits][:1] == ["mem_new"], "vectors are there"


def test_restore_records_are_ordinary_events(writer_at: tuple[Writer, Path]) -> None:
    writer, _ = writer_at
    item = parse_line(
        {"id": "mem_a", "type": "episodic", "content": "Backup failed", "entities": ["backup"],
         "t_valid": "2025-01-01T00:00:00Z", "last_accessed": "2025-01-02T00:00:00Z",
         "access_count": 2, "last_validated": "2025-01-03T00:00:00Z"},
        "line 1",
    )  # fmt: skip
    restore_many(writer, [item])
    (record,) = list(writer.journal.read(hashes=True))
    kinds = [type(e) for e in record.events]
    assert kinds == [EntityCreated, MemoryStored, MemoriesValidated, MemoriesAccessed]
    accessed = record.events[3]
    assert isinstance(accessed, MemoriesAccessed)
    assert accessed.accesses == (Access("mem_a", datetime(2025, 1, 2, tzinfo=UTC), 2),)
    validated = record.events[2]
    assert isinstance(validated, MemoriesValidated) and validated.source == "operator"
    assert msgspec.json.decode(render(record))["events"][1]["memory_id"] == "mem_a"


# -- export jsonl → import: the read model comes back whole ---------------------------------


@pytest.fixture
def two_homes(
    tmp_path: Path, encoders: Encoders, shared_embedder: Embedder
) -> Iterator[tuple[Writer, Writer]]:
    opened: list[tuple[Journal, EdgeBackend, Projections]] = []
    writers = []
    for name in ("source", "restored"):
        journal = Journal.open(tmp_path / name / "journal")
        backend = EdgeBackend(tmp_path / name / "qdrant")
        projections = Projections.open(tmp_path / name, journal, backend, encoders)
        opened.append((journal, backend, projections))
        writers.append(Writer(journal, projections, shared_embedder, StoreSettings()))
    yield writers[0], writers[1]
    for journal, backend, projections in opened:
        projections.close()
        backend.close()
        journal.close()


def fill(writer: Writer) -> None:
    """One of everything a dump must carry."""
    plain = [
        StoreRequest(subject="api-server", predicate="uses", object="tokio 1.36",
                     entities=("Tokio",), importance=0.9),
        StoreRequest(subject="api-server", predicate="depends on", object="tokio 1.38",
                     entities=("tokio runtime",), pinned=True),  # an alias; a supersede
        StoreRequest(content="Alice: the deploy is stuck", entities=("deploy",)),
        StoreRequest(content="Bob: retry it after lunch"),  # the same derived episode
        StoreRequest(content="Carol is on call this week", agent_id="agent-7",
                     visibility="private", entities=("Carol",), ttl="30d"),
        StoreRequest(name="deploy api-server", steps=("build", "roll pods")),
        StoreRequest(name="deploy api-server", steps=("build", "migrate", "roll pods")),
        StoreRequest(subject="api-server", predicate="runs on", object="k8s",
                     valid_from="2026-01-01T00:00:00Z"),  # a start given
    ]  # fmt: skip
    owners = [
        StoreRequest(subject="web", predicate="owned by", object="team A"),
        StoreRequest(subject="web", predicate="owned by", object="team B"),
    ]
    for results in (writer.store_many(plain), writer.store_many(owners, multi_valued=True)):
        assert all(not isinstance(r, Exception) and r.status == "stored" for r in results)


def test_export_then_import_keeps_every_field_of_the_read_model(
    two_homes: tuple[Writer, Writer],
) -> None:
    source, restored = two_homes
    fill(source)
    rows = read_model_rows(source.projections.read_model)
    memories = rows["memories"]
    assert sum(m["multi_valued"] for m in memories) == 2
    assert sorted(m["episode_index"] for m in memories if m["episode"]) == [0, 0, 1]
    assert any(a["match"] in ("fuzzy", "embedding") for a in rows["aliases"])
    assert [e["agent_id"] for e in rows["entities"] if e["name"] == "Carol"] == ["agent-7"]
    assert {(m["importance"], m["pinned"]) for m in memories} >= {(0.9, 0), (0.5, 1)}
    assert sum(m["expires_at"] is not None for m in memories) == 1
    assert sorted(m["valid_from_given"] for m in memories) == [0] * (len(memories) - 1) + [1]

    out = io.BytesIO()
    write_dump(source.projections.read_model, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()[1:]]  # past the header
    items = [parse_dump_line(raw, f"line {n}") for n, raw in enumerate(lines, 1)]
    outcomes = restore_many(restored, items)
    assert {o.status for o in outcomes} == {"stored"}

    assert read_model_rows(restored.projections.read_model) == rows
    again = restore_many(restored, items)
    assert {o.status for o in again} == {"skipped"}, "importing the same dump twice adds nothing"
    assert read_model_rows(restored.projections.read_model) == rows


def test_a_dumped_entity_the_home_already_holds_merges_into_it(
    two_homes: tuple[Writer, Writer],
) -> None:
    source, restored = two_homes
    fill(source)
    here = restored.store(StoreRequest(content="Tokio is the async runtime", entities=("tokio",)))
    (mine,) = here.entities
    out = io.BytesIO()
    write_dump(source.projections.read_model, out, current_only=True)
    items = [parse_dump_line(json.loads(line), "line") for line in out.getvalue().splitlines()[1:]]
    outcomes = {o.id: o.status for o in restore_many(restored, items)}
    rm = restored.projections.read_model
    tokio = next(e for e in source.projections.read_model.entities() if e.name == "Tokio")
    assert outcomes[tokio.entity_id] == "skipped", "merged into the home's own entity"
    assert tokio.entity_id not in entity_names(rm)
    new_fact = next(m for m in rm.memories() if m.object == "tokio 1.38")
    # its subject's entity first (a fact's subject is an entity), then the one it names
    assert new_fact.entity_ids[1:] == (mine.entity_id,)
    assert entity_names(rm)[new_fact.entity_ids[0]] == "api-server"
    spellings = {a.alias for a in rm.dashboard.alias_matches([mine.entity_id])}
    assert spellings == {"tokio", "tokio runtime"}, "the dumped spelling joins the entity"
    carol = next(e for e in rm.entities() if e.name == "Carol")
    assert carol.agent_id == "agent-7", "a private entity keeps its scope"


def test_bad_entity_and_episode_fields_are_refused() -> None:
    entity: dict[str, Any] = {"id": "ent_1", "type": "entity", "namespace": "default",
                              "name": "Tokio"}  # fmt: skip
    parsed = parse_dump_line(entity, "line 1")
    assert isinstance(parsed, RestoredEntity) and parsed.normalized == "tokio"
    memory: dict[str, Any] = {"id": "mem_1", "type": "episodic", "content": "ok",
                              "t_valid": "2026-01-01T00:00:00Z"}  # fmt: skip
    cases: dict[str, dict[str, Any]] = {
        "unknown field 'colour'": {**entity, "colour": "blue"},
        "has no name": {k: v for k, v in entity.items() if k != "name"},
        "not an entity id": {**entity, "id": "two words"},
        "aliases in line 1 must be a list": {**entity, "aliases": "tokio"},
        "match in alias 1 of line 1": {**entity, "aliases": [{"alias": "t", "match": "guess"}]},
        "score in alias 1 of line 1": {**entity, "aliases": [{"alias": "t", "score": 2}]},
        "alias 1 of line 1 has no alias": {**entity, "aliases": [{"match": "fuzzy"}]},
        "multi_valued in line 1 is only for semantic": {**memory, "multi_valued": True},
        "multi_valued in line 1 must be true or false": {**memory, "multi_valued": "yes"},
        "episode_index but no episode": {**memory, "episode_index": 2},
        "entity_ids in line 1 must be a list": {**memory, "entity_ids": "ent_1"},
        "episode in line 1 is only for episodic": {
            **memory,
            "type": "procedural",
            "name": "x",
            "steps": ["a"],
            "episode": "mem_0",
        },
    }
    for expected, raw in cases.items():
        with pytest.raises(UsageError) as bad:
            parse_dump_line(raw, "line 1")
        assert expected in bad.value.message and bad.value.code == "invalid_input", expected


def test_a_live_dump_leaves_out_entities_only_superseded_memories_name(
    two_homes: tuple[Writer, Writer],
) -> None:
    source, _ = two_homes
    old = source.store(StoreRequest(subject="ledger", predicate="uses", object="libfoo 1",
                                    entities=("libfoo",)))  # fmt: skip
    source.store(StoreRequest(subject="ledger", predicate="uses", object="libbar 2",
                              entities=("libbar",), supersedes=old.id))  # fmt: skip

    def entity_names_in(include_invalidated: bool) -> list[str]:
        out = io.BytesIO()
        result = write_dump(
            source.projections.read_model, out, current_only=not include_invalidated
        )
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        assert result.entities == sum(line["type"] == "entity" for line in lines)
        return sorted(line["name"] for line in lines if line["type"] == "entity")

    # "ledger" is the subject's entity, which the live fact names too
    assert entity_names_in(False) == ["ledger", "libbar"]
    assert entity_names_in(True) == ["ledger", "libbar", "libfoo"]


def test_possible_conflicts_and_differences_come_back_whole(
    two_homes: tuple[Writer, Writer],
) -> None:
    source, restored = two_homes
    facts = [
        StoreRequest(subject="billing service", predicate="is owned by", object="team Atlas"),
        StoreRequest(subject="billing", predicate="owned by", object="team Nova"),  # possibly
        StoreRequest(subject="staging db", predicate="hosted on", object="pg-stage-02"),
        StoreRequest(subject="production db", predicate="hosted on", object="pg-prod-01"),
    ]
    for request in facts:
        result = source.store(request)
        assert result.status == "stored"
    source.entity("differ", "staging db", "production db")
    rows = read_model_rows(source.projections.read_model)
    assert rows["possible_conflicts"] and rows["entity_differs"]

    out = io.BytesIO()
    write_dump(source.projections.read_model, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()[1:]]  # past the header
    assert {line["type"] for line in lines} >= {"possible_conflict", "entities_differ"}
    items = [parse_dump_line(raw, f"line {n}") for n, raw in enumerate(lines, 1)]
    assert {o.status for o in restore_many(restored, items)} == {"stored"}
    assert read_model_rows(restored.projections.read_model) == rows
    head = restored.journal.refresh().position
    assert {o.status for o in restore_many(restored, items)} == {"skipped"}
    assert restored.journal.refresh().position == head, "a second import adds nothing"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"type": "possible_conflict", "id": "mem_1", "namespace": "default"},
         "line 1 has no other_id"),
        ({"type": "possible_conflict", "id": "mem_1", "other_id": "mem_2", "namespace": "default"},
         "entity_id in line 1 is not an id"),
        ({"type": "facts_differ", "id": "mem_1", "other_id": 7, "namespace": "default"},
         "other_id in line 1 must be a non-empty string"),
        ({"type": "possible_conflict", "id": "mem_1", "other_id": "mem_2", "entity_id": "ent_1",
          "other_entity_id": "ent_2", "namespace": "default", "score": 3}, "score in line 1"),
        ({"type": "entities_differ", "id": "ent_1", "other_id": "ent_2"},
         "line 1 has no namespace"),
        ({"type": "entities_differ", "id": "ent_1", "other_id": "ent_2", "namespace": " "},
         "namespace in line 1 must be a namespace name"),
        ({"type": "entities_differ", "id": "ent_1", "other_id": "ent_2", "namespace": "default",
          "colour": "blue"}, "unknown field 'colour'"),
    ],
)  # fmt: skip
def test_bad_flag_lines_are_refused(line: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_dump_line(line, "line 1")
