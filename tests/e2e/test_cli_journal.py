"""`ferrex journal …` end to end: through click's CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ferrex.cli import cli
from journal import Journal
from journal.segment import list_segments
from tests.strategies import stored


@pytest.fixture
def home(tmp_path: Path) -> Path:
    with Journal.open(tmp_path / "home" / "journal", segment_bytes=2048) as journal:
        journal.append_batch([[stored(i)] for i in range(1, 31)])
    return tmp_path / "home"


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_verify_ok(home: Path) -> None:
    code, out, _ = run(home, "journal", "verify", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["records"] == 30 and doc["problem"] is None
    code, out, _ = run(home, "journal", "verify")
    assert code == 0 and "30 records" in out and "ok" in out


def test_verify_reports_damage_with_exit_code_3(home: Path) -> None:
    _, seg = list_segments(home / "journal")[0]
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF
    seg.write_bytes(bytes(data))
    code, out, _ = run(home, "journal", "verify", "--json")
    doc = json.loads(out)
    assert code == 3 and not doc["ok"]
    assert doc["problem"]["segment"] == seg.name and doc["problem"]["kind"] == "frame"
    code, out, _ = run(home, "journal", "verify")
    assert code == 3 and "DAMAGED" in out and seg.name in out


def test_show_filters_and_limits(home: Path) -> None:
    code, out, _ = run(home, "journal", "show", "--after", "10", "--limit", "3", "--json")
    records = json.loads(out)
    assert code == 0 and [r["position"] for r in records] == [11, 12, 13]
    assert records[0]["events"][0]["body"]["content"] == "memory number 11"
    assert len(records[0]["hash"]) == 64
    code, out, _ = run(home, "journal", "show", "--limit", "2")
    assert code == 0 and [json.loads(line)["position"] for line in out.splitlines()] == [1, 2]
    code, out, _ = run(home, "journal", "show", "--type", "memory.superseded", "--json")
    assert code == 0 and json.loads(out) == []


def test_bad_input_is_a_usage_error_and_changes_nothing(home: Path) -> None:
    before = {p.name: p.read_bytes() for p in (home / "journal").iterdir()}
    code, _, err = run(home, "journal", "show", "--type", "no.such.event")
    assert code == 2 and "unknown event type" in err and "memory.stored" in err
    code, _, err = run(home, "journal", "show", "--after", "-1")
    assert code == 2
    code, _, err = run(home.parent / "nowhere", "journal", "verify")
    assert code == 2 and "no journal" in err
    assert not (home.parent / "nowhere").exists()
    assert {p.name: p.read_bytes() for p in (home / "journal").iterdir()} == before


def test_repair_is_a_dry_run_unless_applied(home: Path) -> None:
    _, seg = list_segments(home / "journal")[0]
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF
    seg.write_bytes(bytes(data))
    code, out, err = run(home, "journal", "repair")
    assert code == 0 and "would set aside" in out and "lost: positions 1..1" in out
    assert "dry run" in err and seg.read_bytes() == bytes(data)
    code, out, _ = run(home, "journal", "repair", "--apply")
    assert code == 0 and "set aside" in out and "positions 1..1" in out
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0 and json.loads(out)["accepted_gaps"] == [2]
    code, out, _ = run(home, "journal", "repair")
    assert code == 0 and "nothing to repair" in out


def test_open_refuses_damage_through_the_cli(home: Path) -> None:
    _, seg = list_segments(home / "journal")[0]
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF
    seg.write_bytes(bytes(data))
    code, _, err = run(home, "journal", "show")
    assert code == 3 and "journal.damaged" in err and seg.name in err and "repair" in err


def test_as_a_subprocess(home: Path) -> None:
    exe = Path(sys.executable).with_name("ferrex")
    done = subprocess.run(
        [str(exe), "--home", str(home), "journal", "verify", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["records"] == 30
    done = subprocess.run(
        [str(exe), "journal", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "verify" in done.stdout and "repair" in done.stdout


def _ferrex(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("ferrex")
    return subprocess.run([str(exe), "--home", str(home), *args], capture_output=True,
                          text=True, check=False)  # fmt: skip


TEXTS = ["The first memory of three", "The damaged memory in the middle",
         "The last memory of three"]  # fmt: skip


def _served_and_damaged(home: Path) -> Path:
    """A home whose projections serve three memories, the middle one's record damaged."""
    for text in TEXTS:
        done = _ferrex(home, "store", "--content", text)
        assert done.returncode == 0, done.stderr
    _, seg = list_segments(home / "journal")[0]
    data = bytearray(seg.read_bytes())
    at = data.find(b"damaged memory")
    assert at > 0
    data[at] ^= 0xFF  # the middle record no longer passes its checksum
    seg.write_bytes(bytes(data))
    return seg


def test_a_repair_rebuilds_the_projections_so_the_lost_memory_is_served_no_more(
    tmp_path: Path,
) -> None:
    home = tmp_path / "served"
    _served_and_damaged(home)

    repaired = _ferrex(home, "journal", "repair", "--apply")
    assert repaired.returncode == 0, repaired.stderr
    assert "set aside" in repaired.stdout and "rebuilt the projections" in repaired.stdout

    stats = _ferrex(home, "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["total"] == 2
    out = tmp_path / "dump.jsonl"
    exported = _ferrex(home, "export", "jsonl", str(out))
    assert exported.returncode == 0, exported.stderr
    contents = {json.loads(line).get("content") for line in out.read_text().splitlines()}
    assert TEXTS[1] not in contents and {TEXTS[0], TEXTS[2]} <= contents
    reconciled = _ferrex(home, "reconcile")
    assert reconciled.returncode == 0, reconciled.stdout + reconciled.stderr


def test_a_cut_acknowledged_record_is_refused_not_rebuilt_away(tmp_path: Path) -> None:
    """Three stores acknowledged, then the last record loses its last bytes: it reads as a
    torn tail, which opening sets aside. The read model applied it, so it was acknowledged:
    verify says it is missing and commands refuse, rather than rebuilding from the shorter
    journal (the memory gone without a word, its position written again by the next record).
    ``ferrex replay`` is the operator's way on without it."""
    home = tmp_path / "served"
    for text in TEXTS:
        done = _ferrex(home, "store", "--content", text)
        assert done.returncode == 0, done.stderr
    _, seg = list_segments(home / "journal")[-1]
    os.truncate(seg, seg.stat().st_size - 3)

    verified = _ferrex(home, "journal", "verify", "--json")
    doc = json.loads(verified.stdout)
    assert verified.returncode == 3 and not doc["ok"] and doc["missing"] == {"from": 3, "to": 3}
    for args in (("stats",), ("recall", "the last memory")):
        refused = _ferrex(home, *args)
        assert refused.returncode == 3, refused.stdout
        assert "[journal.damaged]" in refused.stderr and "1 acknowledged record is missing" in (
            refused.stderr
        ), refused.stderr
    kept = list(seg.parent.glob(f"{seg.name}.corrupt-*"))
    assert len(kept) == 1 and b"last memory" in kept[0].read_bytes()

    replayed = _ferrex(home, "replay")
    assert replayed.returncode == 0, replayed.stderr
    stats = _ferrex(home, "stats", "--json")
    assert stats.returncode == 0 and json.loads(stats.stdout)["total"] == 2, stats.stderr
    verified = _ferrex(home, "journal", "verify")
    assert verified.returncode == 0 and "MISSING" not in verified.stdout


def test_a_rebuild_a_repair_still_owes_happens_at_the_next_open(tmp_path: Path) -> None:
    """The journal was repaired but the rebuild did not run (the process died between the
    two): the replay-needed file makes the next command rebuild before it serves."""
    from ferrex.app import REPLAY_NEEDED
    from journal import repair

    home = tmp_path / "served"
    _served_and_damaged(home)
    (home / REPLAY_NEEDED).touch(mode=0o600)  # what repair_journal makes first
    assert repair(home / "journal") is not None
    stats = _ferrex(home, "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["total"] == 2
    assert "a journal repair removed records" in stats.stderr
    assert not (home / REPLAY_NEEDED).exists()
    assert _ferrex(home, "reconcile").returncode == 0


def test_a_repair_is_refused_while_another_process_owns_the_stores(tmp_path: Path) -> None:
    from ferrex.ownership import try_lock

    home = tmp_path / "served"
    seg = _served_and_damaged(home)
    damaged = seg.read_bytes()
    held = try_lock(home)  # this test process is the owner now, as a server would be
    assert held is not None
    try:
        refused = _ferrex(home, "journal", "repair", "--apply")
    finally:
        os.close(held)
    assert refused.returncode == 5 and "error [busy]" in refused.stderr, refused.stderr
    assert seg.read_bytes() == damaged and not (home / "journal" / "repairs.json").exists()
    assert not (home / "replay-needed").exists()
