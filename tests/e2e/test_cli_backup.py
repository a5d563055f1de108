"""A backup through the real CLI: `ferrex export jsonl` of a home, `ferrex import` of the
dump into a fresh home, and the two read models compared row by row. Each test is one of
the ways a dump used to lose a home (abbreviation spellings, long memories, history,
consolidations, reconcile of folded memories)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ferrex.app import App
from ferrex.cli import cli
from ferrex.config import load
from ferrex.ownership import Endpoint, is_held
from ferrex.porting.dump import FORMAT
from tests.e2e.stdio_helpers import RawServer
from tests.rows import home_rows

GOLDEN = Path(__file__).parent.parent / "golden"
EXE = Path(sys.executable).with_name("ferrex")

LONG = " ".join(
    f"Paragraph {n}: the incident review covered the failover of the payments database, "
    f"the replication lag on replica {n}, and the alert thresholds we agreed to change."
    for n in range(20)
)
"""An episodic text several times longer than the bundled model's 256-token window."""


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def stored(home: Path, *args: str) -> str:
    code, out, err = run(home, "store", *args, "--json")
    assert code == 0, err
    return str(json.loads(out)["id"])


def restored(home: Path, tmp_path: Path, *export: str) -> tuple[Path, list[dict[str, Any]]]:
    """Export ``home``, import the dump into a fresh home; the new home and the import's
    report of each line."""
    tmp_path.mkdir(exist_ok=True)
    dump = tmp_path / "backup.jsonl"
    code, _, err = run(home, "export", "jsonl", str(dump), *export)
    assert code == 0, err
    fresh = tmp_path / "restored"
    code, out, err = run(fresh, "import", str(dump), "--json")
    doc = json.loads(out)
    assert code == 0, (err, [line for line in doc["lines"] if line["status"] != "stored"])
    return fresh, doc["lines"]


def test_abbreviated_subjects_and_long_memories_come_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stored(home, "--subject", "payments repository", "--predicate", "owned by",
           "--object", "team payments")  # fmt: skip
    stored(home, "--subject", "payments repo", "--predicate", "deployed to",
           "--object", "eu-west-1")  # fmt: skip
    long_id = stored(home, "--content", LONG, "--split-long", "--source", "review-7")
    dump = tmp_path / "plain.jsonl"
    assert run(home, "export", "jsonl", str(dump))[0] == 0
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    spelled = [a for line in lines for a in line.get("aliases", ())]
    assert [a["match"] for a in spelled] == ["abbreviation"]
    long_line = next(line for line in lines if line.get("id") == long_id)
    assert long_line["content"] == LONG, "kept whole"

    fresh, _ = restored(home, tmp_path)
    assert home_rows(fresh) == home_rows(home)
    # the flag a store took, written back by hand, is accepted too
    flagged = tmp_path / "flagged.jsonl"
    flagged.write_text(json.dumps({**long_line, "split_long": True}) + "\n")
    code, out, _ = run(tmp_path / "flagged", "import", str(flagged), "--json")
    assert code == 0 and json.loads(out)["counts"] == {"stored": 1}
    code, out, _ = run(fresh, "recall", "who owns the payments repo", "--json")
    assert code == 0 and json.loads(out)["results"][0]["object"] == "team payments"


TURNS = [
    "Caroline: I went to an LGBTQ support group yesterday and it was powerful.",
    "Melanie: That sounds great! I painted a lake sunrise last year.",
    "Caroline: I am researching adoption agencies this month.",
    "Melanie: Wow, that is so lovely to hear! How did it all go?",  # what a summary drops
]


def consolidated(home: Path) -> tuple[list[str], str]:
    """A home whose four turns of one chat are folded into a summary: their ids, its id."""
    ids = [stored(home, "--content", turn, "--source", "chat-1") for turn in TURNS]
    code, out, err = run(home, "consolidate", "--older-than", "0", "--json")
    assert code == 0, err
    (summary,) = json.loads(out)["summaries"]
    return ids, str(summary["summary_id"])


def drop_points(home: Path, memory_ids: list[str]) -> None:
    """Delete the memories' vector points behind ferrex's back."""
    app = App(home=home, config=load(home, env={}))
    try:
        p = app.projections()
        p.backend.delete_by_memory(p.live.memories, memory_ids)
        p.sink.sync()
    finally:
        app.close()


def test_reconcile_fix_converges_on_a_folded_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids, summary = consolidated(home)
    drop_points(home, [ids[0], summary])
    code, out, _ = run(home, "reconcile", "--json")
    doc = json.loads(out)
    assert code == 6 and doc["missing_points"]["examples"] == sorted([ids[0], summary])
    code, out, err = run(home, "reconcile", "--fix", "--json")
    assert code == 0 and json.loads(out)["clean"], (out, err)
    code, out, _ = run(home, "reconcile", "--json")
    assert code == 0 and json.loads(out)["clean"], out
    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    found = [r["id"] for r in json.loads(out)["results"]]
    assert found[0] == summary and ids[0] not in found, "the folded source stays out of recall"


LONG_TURNS = [
    f"{who}: "
    + " ".join(
        f"On day {n} of the trip {who} wrote about the {topic} in detail, with the names of "
        f"every place and every person met there, and what was eaten at each stop."
        for n in range(6)
    )
    for who, topic in (("Caroline", "museums"), ("Melanie", "mountains"), ("Caroline", "lakes"))
] + ["Melanie: Wow, what a trip, that all sounds so lovely!"]
"""Three turns of one chat, each longer than the window: their summary is too; and one
that states nothing, which the summary drops."""


def head(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def test_a_backup_holds_history_by_default_and_names_its_position(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = stored(home, "--subject", "api-server", "--predicate", "uses", "--object",
                 "tokio 1.36", "--valid-from", "2026-11-03T09:00:00Z")  # fmt: skip
    new = stored(home, "--subject", "api-server", "--predicate", "uses", "--object",
                 "tokio 1.38", "--valid-from", "2026-11-20T09:00:00Z")  # fmt: skip
    whole, current = tmp_path / "whole.jsonl", tmp_path / "current.jsonl"
    code, out, _ = run(home, "export", "jsonl", str(whole), "--json")
    assert code == 0 and json.loads(out)["invalidated"] == 1
    first, *lines = [json.loads(line) for line in whole.read_text().splitlines()]
    assert first == {"type": "ferrex_dump", "format": FORMAT, "journal_position": head(home),
                     "current_only": False}  # fmt: skip
    assert {line["id"] for line in lines if line["type"] == "semantic"} == {old, new}
    assert run(home, "export", "jsonl", str(current), "--current-only")[0] == 0
    first, *lines = [json.loads(line) for line in current.read_text().splitlines()]
    assert first["current_only"] is True
    assert {line["id"] for line in lines if line["type"] == "semantic"} == {new}

    fresh, _ = restored(home, tmp_path)
    assert home_rows(fresh) == home_rows(home)
    code, out, _ = run(fresh, "recall", "what does api-server use", "--as-of",
                       "2026-11-10T00:00:00Z", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["results"][0]["id"] == old, "history answers"


def test_a_consolidated_home_comes_back_and_its_folds_can_be_undone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = [stored(home, "--content", t, "--source", "trip", "--split-long") for t in LONG_TURNS]
    code, out, err = run(home, "consolidate", "--older-than", "0", "--json")
    assert code == 0, err
    (summary,) = json.loads(out)["summaries"]
    summary_id = summary["summary_id"]
    fresh, _ = restored(home, tmp_path)
    assert summary["chars"] > 1500, "a summary longer than the model's window"
    assert home_rows(fresh) == home_rows(home), "summary, superseded sources and folds"
    code, out, _ = run(fresh, "recall", "the museums of the trip", "--json")
    assert json.loads(out)["results"][0]["id"] == summary_id
    code, out, err = run(fresh, "consolidate", "--undo", summary_id)
    assert code == 0 and "4 memories back in recall" in out, err
    code, out, _ = run(fresh, "recall", "the museums of the trip", "--json")
    assert json.loads(out)["results"][0]["id"] == ids[0]


def test_a_backup_is_taken_while_a_server_owns_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    remembered = stored(home, "--content", "The staging cluster moved to eu-west-3")
    server = RawServer(home)
    try:
        deadline = time.monotonic() + 120
        while not (is_held(home) and Endpoint.read(home) is not None):
            assert time.monotonic() < deadline, "the server never took the home"
            time.sleep(0.05)
        dump = tmp_path / "live.jsonl"
        done = subprocess.run([str(EXE), "--home", str(home), "export", "jsonl", str(dump),
                               "--json"], capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["journal_position"] == head(home)
        assert is_held(home), "the server still owns the home"
    finally:
        server.close()
        server.kill()
    fresh = tmp_path / "restored"
    code, out, _ = run(fresh, "import", str(dump), "--json")
    assert code == 0 and [line["id"] for line in json.loads(out)["lines"]] == [remembered]


def test_a_dump_written_before_the_format_had_a_header_still_imports(tmp_path: Path) -> None:
    """``golden/dump-v1.jsonl`` and ``golden/home-v1`` were written by the code before this
    format (``export jsonl --include-invalidated`` of the home whose journal that is): an
    abbreviation, a superseded fact, marks, a ttl, a private memory, a consolidation."""
    fresh = tmp_path / "restored"
    code, out, err = run(fresh, "import", str(GOLDEN / "dump-v1.jsonl"), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {"stored": 14}, (err, doc["lines"])
    old = tmp_path / "old"
    shutil.copytree(GOLDEN / "home-v1", old)
    replayed, restored_rows = home_rows(old), home_rows(fresh)
    # a format 1 dump says nothing of the folds: its sources come back superseded
    assert replayed.pop("folds") and not restored_rows.pop("folds")
    assert restored_rows == replayed
    again, _ = restored(old, tmp_path / "again")
    assert home_rows(again) == home_rows(old), "a home of the old code backs up whole, folds too"


@pytest.mark.parametrize("dump", ["dump-v2.jsonl", "dump-v3.jsonl"])
def test_a_dump_of_an_older_format_still_imports(dump: str, tmp_path: Path) -> None:
    """``golden/dump-v2.jsonl`` and ``dump-v3.jsonl`` are ``export jsonl`` of
    ``golden/home-v1`` by the code of formats 2 and 3 (3 as main wrote it at 45a3e5e, before
    ``facts_differ`` lines). Format 2 wrote ``valid_from_given`` only where ``created_at``
    would misread it: four of its memories were stored with their start and say nothing of
    it."""
    fresh = tmp_path / "restored"
    code, out, err = run(fresh, "import", str(GOLDEN / dump), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {"stored": 15}, (err, doc["lines"])
    old = tmp_path / "old"
    shutil.copytree(GOLDEN / "home-v1", old)
    replayed = home_rows(old)
    assert sum(m["valid_from_given"] for m in replayed["memories"]) == 4
    assert home_rows(fresh) == replayed


def test_importing_into_a_non_empty_home_merges(tmp_path: Path) -> None:
    home, other = tmp_path / "home", tmp_path / "other"
    mine = stored(home, "--content", "Backups now go to the new NAS", "--entity", "NAS")
    theirs = stored(other, "--content", "The NAS is in rack 4", "--entity", "NAS")
    dump = tmp_path / "other.jsonl"
    assert run(other, "export", "jsonl", str(dump))[0] == 0
    before = home_rows(home)
    code, out, _ = run(home, "import", str(dump), "--json")
    statuses = {line["id"]: line["status"] for line in json.loads(out)["lines"]}
    assert code == 0 and statuses[theirs] == "stored"
    assert [s for i, s in statuses.items() if i.startswith("ent_")] == ["skipped"], (
        "the home's own NAS entity takes the dumped one's place"
    )
    after = home_rows(home)
    assert {m["memory_id"] for m in after["memories"]} == {mine, theirs}
    assert [e["name"] for e in after["entities"]] == [e["name"] for e in before["entities"]]
    code, out, _ = run(home, "import", str(dump), "--json")
    assert code == 0 and {line["status"] for line in json.loads(out)["lines"]} == {"skipped"}


def test_a_dump_of_a_newer_format_is_refused_whole(tmp_path: Path) -> None:
    dump = tmp_path / "future.jsonl"
    lines = [{"type": "ferrex_dump", "format": FORMAT + 1, "journal_position": 3},
             {"id": "mem_1", "type": "episodic", "content": "Kept",
              "t_valid": "2026-01-01T00:00:00Z"}]  # fmt: skip
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines))
    home = tmp_path / "home"
    code, _, err = run(home, "import", str(dump))
    assert code == 2 and f"format {FORMAT + 1}, newer than this ferrex reads" in err
    assert not (home / "journal").exists() or head(home) == 0, "nothing written"


def test_a_file_saved_with_a_byte_order_mark_imports_whole(tmp_path: Path) -> None:
    """An editor that saves UTF-8 "with BOM" (Notepad, PowerShell 5's Out-File) puts U+FEFF
    before the first line: that line was "not JSON" (exit 2), so a dump lost its header
    and with it the check of its format, and a file of store lines its first memory."""
    home = tmp_path / "home"
    stored(home, "--subject", "ledger-api", "--predicate", "runs on", "--object", "postgres 15")
    stored(home, "--content", "The staging cluster was rebuilt on 2026-11-30")
    dump = tmp_path / "backup.jsonl"
    assert run(home, "export", "jsonl", str(dump))[0] == 0
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + dump.read_bytes())
    fresh = tmp_path / "restored"
    code, out, err = run(fresh, "import", str(marked), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "dump" and doc["counts"] == {"stored": 3}, (err, doc)
    assert home_rows(fresh) == home_rows(home)
    future = tmp_path / "future.jsonl"
    header = {"type": "ferrex_dump", "format": FORMAT + 1, "journal_position": 3}
    future.write_text("\ufeff" + json.dumps(header) + "\n", encoding="utf-8")
    code, _, err = run(tmp_path / "other", "import", str(future))
    assert code == 2 and "newer than this ferrex reads" in err, err
    lines = '\ufeff{"content": "Deploys freeze on Fridays after 15:00"}\n'
    result = CliRunner().invoke(cli, ["--home", str(fresh), "import", "-", "--json"], input=lines)
    assert result.exit_code == 0 and json.loads(result.stdout)["counts"] == {"stored": 1}, (
        result.stdout,
        result.stderr,
    )


def test_the_export_help_says_what_a_restore_gives_back(tmp_path: Path) -> None:
    """The help said a memory's created_at "becomes the time of the import"; a restore keeps
    it (as ``import --help``, the README and docs/operations.md say): only the journal
    positions and the entities' creation times are the import's."""
    home = tmp_path / "home"
    memory_id = stored(home, "--content", "The VPN config moved to the infra repository")
    time.sleep(0.01)
    fresh, _ = restored(home, tmp_path / "restore")
    (before,) = [m for m in home_rows(home)["memories"] if m["memory_id"] == memory_id]
    (after,) = [m for m in home_rows(fresh)["memories"] if m["memory_id"] == memory_id]
    assert after["created_at"] == before["created_at"]
    code, out, _ = run(home, "export", "jsonl", "--help")
    words = " ".join(out.split())
    assert code == 0 and "becomes the time of the import" not in words, words
    assert "created_at" in words and "entities' creation times" in words, words


def test_an_import_error_names_its_line_once_and_the_field_as_the_file_spells_it(
    tmp_path: Path,
) -> None:
    """A user trial read ``line 2: invalid [invalid_input] line 2: valid_from 'soon' is not an
    ISO 8601 time`` for a dump line: the line twice, and a field the dump has no such name
    for (its start is ``t_valid``). A store line's unknown field named its line twice too."""
    good = {"id": "mem_01M95WD2PADDVHNFGY5YT70SMA", "type": "episodic", "content": "Kept",
            "t_valid": "2026-01-01T00:00:00Z"}  # fmt: skip
    lines = [
        {"type": "ferrex_dump", "format": FORMAT, "journal_position": 3},
        {**good, "id": "mem_01M95WD2PADDVHNFGY5YT70SMB", "t_valid": "soon"},
        {**good, "id": "mem_01M95WD2PADDVHNFGY5YT70SMC", "t_valid": "2026-01-01T10:00:00"},
        {**good, "id": "mem_01M95WD2PADDVHNFGY5YT70SMD", "confidence": "high"},
        {**good, "id": "mem_01M95WD2PADDVHNFGY5YT70SME", "t_invalid": "later"},
        {**good, "id": "mem_01M95WD2PADDVHNFGY5YT70SMF", "type": "semantic"},
    ]
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, _ = run(tmp_path / "home", "import", str(dump))
    reported = [line for line in out.splitlines() if line.startswith("line ")]
    assert code == 2 and len(reported) == 5, out
    for number, line in enumerate(reported, start=2):
        assert line.startswith(f"line {number}: invalid [invalid_input] "), line
        assert line.count(f"line {number}") == 1, line
        assert "valid_from" not in line, line
    assert "t_valid 'soon' is not an ISO 8601 time" in reported[0], reported
    assert "t_valid 2026-01-01T10:00:00 has no timezone" in reported[1], reported
    store = tmp_path / "store.jsonl"
    store.write_text('{"content": "ok"}\n{"content": "ok too", "colour": "blue"}\n')
    code, out, _ = run(tmp_path / "home", "import", str(store))
    (reported,) = [line for line in out.splitlines() if line.startswith("line ")]
    assert code == 2 and "unknown field 'colour'" in reported and reported.count("line 2") == 1


def test_a_dump_imported_as_store_lines_is_refused_with_the_format_to_use(
    tmp_path: Path,
) -> None:
    """``import --format store`` of a dump answered ``unknown field 'format'`` for its header
    and ``unknown field 'id'`` for every memory, with no word of what the file was."""
    home = tmp_path / "home"
    stored(home, "--content", "The staging cluster was rebuilt on 2026-11-30")
    dump = tmp_path / "backup.jsonl"
    assert run(home, "export", "jsonl", str(dump))[0] == 0
    fresh = tmp_path / "fresh"
    code, out, err = run(fresh, "import", "--format", "store", str(dump))
    assert code == 2 and "unknown field" not in out + err, (out, err)
    assert "looks like a dump" in err and "--format dump" in err, err
    assert not (fresh / "journal").exists() or head(fresh) == 0, "nothing written"
    code, out, err = run(fresh, "import", "--format", "dump", str(dump), "--json")
    assert code == 0 and json.loads(out)["counts"] == {"stored": 1}, (out, err)
