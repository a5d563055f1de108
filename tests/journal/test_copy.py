"""`ferrex journal copy` files → PostgreSQL → files, through the CLI: the same head hash on
every side, resumable, and a target holding another journal refused. And the journal
commands on a home whose journal is on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ferrex.cli import cli
from journal import Journal, verify
from journal.postgres import PostgresJournal
from tests.strategies import stored


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    with Journal.open(tmp_path / "home" / "journal", segment_bytes=2048) as journal:
        journal.append_batch([[stored(i)] for i in range(1, 41)])
    return tmp_path / "home"


def _pg_home(tmp_path: Path, url: str) -> Path:
    home = tmp_path / "pg-home"
    home.mkdir(mode=0o700)
    (home / "ferrex.toml").write_text(f'[journal]\nurl = "{url}"\n')
    (home / "ferrex.toml").chmod(0o600)
    return home


def test_copy_round_trip_keeps_the_head_hash(home: Path, tmp_path: Path, pg_url: str) -> None:
    files_head = verify(home / "journal")
    code, out, err = run(home, "journal", "copy", "--to", pg_url, "--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["copied"] == 40 and doc["head_hash"] == files_head.head_hash.hex()
    assert "ferrex-test" not in out  # the password is not echoed

    pg_home = _pg_home(tmp_path, pg_url)
    code, out, _ = run(pg_home, "journal", "verify", "--json")
    assert code == 0 and json.loads(out)["head_hash"] == files_head.head_hash.hex()
    code, out, _ = run(pg_home, "journal", "show", "--after", "38", "--json")
    assert [r["position"] for r in json.loads(out)] == [39, 40]

    back = tmp_path / "back"
    code, out, err = run(pg_home, "journal", "copy", "--to", str(back))
    assert code == 0, out + err
    assert "copied 40 records" in out and "verified" in out
    again = verify(back)
    assert again.ok and again.head_hash == files_head.head_hash
    with Journal.open(home / "journal") as original, Journal.open(back) as copied:
        assert list(copied.frames()) == list(original.frames())  # byte for byte


def test_an_interrupted_copy_resumes(home: Path, pg_url: str) -> None:
    with Journal.open(home / "journal") as files, PostgresJournal.open(pg_url) as pg:
        pg.append_frames([f for p, f in files.frames() if p <= 15])  # as if cut at 15
    code, out, _ = run(home, "journal", "copy", "--to", pg_url)
    assert code == 0 and "copied 25 records" in out and "resumed after position 15" in out
    code, out, _ = run(home, "journal", "copy", "--to", pg_url)  # nothing left to do
    assert code == 0 and "copied 0 records" in out


def test_a_target_holding_another_journal_is_refused(home: Path, pg_url: str) -> None:
    with PostgresJournal.open(pg_url) as pg:
        pg.append([stored(999)])
        before = pg.head
    code, _, err = run(home, "journal", "copy", "--to", pg_url)
    assert code == 3 and "another journal" in err
    with PostgresJournal.open(pg_url) as pg:
        assert pg.head == before


def test_repair_and_compact_on_postgres(tmp_path: Path, pg_url: str) -> None:
    import psycopg

    from journal import MemoriesForgotten

    pg_home = _pg_home(tmp_path, pg_url)
    with PostgresJournal.open(pg_url) as pg:
        pg.append_batch([[stored(i)] for i in range(1, 4)])
        pg.append([MemoriesForgotten(memory_ids=("m2",), namespace="default")])
    code, out, _ = run(pg_home, "journal", "compact", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["would_redact_positions"] == [2]
    code, out, _ = run(pg_home, "journal", "compact")
    assert code == 0 and "redacted forgotten bodies in 1 record" in out
    assert "ferrex replay" in out  # what each server must do with its own projections
    code, out, _ = run(pg_home, "journal", "verify", "--json")
    assert code == 0 and json.loads(out)["redacted_bodies"] == 1

    code, out, _ = run(pg_home, "journal", "repair")
    assert code == 0 and "nothing to repair" in out
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # Flipped, not written: in a memory.stored record that byte is 0x00 (a map16 header).
        conn.execute(
            "UPDATE ferrex_journal_records SET frame = set_byte(frame, 69, "
            "get_byte(frame, 69) # 255) WHERE position = 2"
        )
    code, out, _ = run(pg_home, "journal", "repair")
    assert code == 3 and "DAMAGED: position 2" in out
    code, _, err = run(pg_home, "journal", "repair", "--apply")
    assert code == 2 and "backup" in err


def test_export_git_and_verify_against_work_on_postgres(
    home: Path, tmp_path: Path, pg_url: str
) -> None:
    code, _, _ = run(home, "journal", "copy", "--to", pg_url)
    assert code == 0
    pg_home = _pg_home(tmp_path, pg_url)
    target = tmp_path / "audit"
    code, out, err = run(pg_home, "export", "git", str(target))
    assert code == 0, out + err
    code, out, err = run(pg_home, "journal", "verify", "--against", str(target), "--json")
    assert code == 0, out + err
    assert json.loads(out)["export"]["records_checked"] == 40
    # and the export of the files journal is the same audit trail
    code, out, err = run(home, "journal", "verify", "--against", str(target), "--json")
    assert code == 0 and json.loads(out)["export"]["ok"], out + err


def test_config_show_never_prints_the_database_password(tmp_path: Path, pg_url: str) -> None:
    pg_home = _pg_home(tmp_path, pg_url + "?sslmode=disable")
    code, out, _ = run(pg_home, "config", "show", "--json")
    assert code == 0
    shown = {r["key"]: r["value"] for r in json.loads(out)["settings"]}["journal.url"]
    assert "ferrex-test" not in out and shown.startswith("postgresql://postgres:***@127.0.0.1:")
    assert shown.endswith("?sslmode=disable")


def test_a_home_with_another_file_journal_refuses_the_postgres_one(home: Path, pg_url: str) -> None:
    """Setting journal.url on a data directory whose projections come from its file journal:
    refused until that journal was copied there."""
    from ferrex.app import App
    from ferrex.config import load
    from ferrex.errors import UsageError

    (home / "ferrex.toml").write_text(f'[journal]\nurl = "{pg_url}"\n')
    (home / "ferrex.toml").chmod(0o600)
    with pytest.raises(UsageError, match=r"not the start of the journal at journal\.url"):
        App(home=home, config=load(home, None)).journal()
    with Journal.open(home / "journal") as files, PostgresJournal.open(pg_url) as pg:
        from journal.copy import copy

        copy(files, pg)
        pg.append([stored(100)])  # others have appended since
    app = App(home=home, config=load(home, None))
    try:
        assert app.journal().refresh().position == 41
    finally:
        app.close()
