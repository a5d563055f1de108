"""The data directory is its owner's alone: 0700 directories and 0600 files, whatever the umask;
a loose home is tightened on open (and the user told once); exports follow the umask."""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

from ferrex.cli import cli
from ferrex.home_safety import inspect_modes, secure_home, tighten
from journal import Journal, MemoryStored
from projections.sqlite import ReadModel
from tests.healthz import wait_healthy


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _event() -> MemoryStored:
    return MemoryStored(memory_id="mem_1", namespace="default", memory_type="episodic",
                        t_valid=datetime(2025, 1, 1, tzinfo=UTC))  # fmt: skip


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _loose(home: Path, *, skip: str | None = None) -> list[str]:
    found = []
    for top, dirs, files in os.walk(home):
        for name in [*dirs, *files]:
            path = Path(top, name)
            rel = str(path.relative_to(home))
            if skip is not None and rel.startswith(skip):
                continue
            if _mode(path) & 0o077:
                found.append(f"{_mode(path):04o} {rel}")
    return found


def _ferrex(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_journal_creates_private_dirs_and_files(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "home"
    with Journal.open(home / "journal") as journal:
        journal.append([_event()])
        journal.seal()
    assert _mode(home) == 0o700
    assert _mode(home / "journal") == 0o700
    files = sorted((home / "journal").iterdir())
    assert len(files) >= 3  # LOCK and two segments
    assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_read_model_and_its_wal_are_private(tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "home" / "readmodel-1.sqlite"
    model = ReadModel.open(path)
    try:
        model.store.set_meta("x", "1")
        # SQLite creates -wal and -shm with the database file's mode.
        wal = Path(f"{path}-wal")
        assert wal.exists()
        assert (_mode(path), _mode(wal), _mode(Path(f"{path}-shm"))) == (0o600, 0o600, 0o600)
    finally:
        model.close()


def test_the_read_model_writes_no_temporary_files(tmp_path: Path) -> None:
    # SQLite's statement journals and temporary tables would go to a file under /var/tmp
    # (or $TMPDIR), outside the private home; the writer keeps them in memory.
    model = ReadModel.open(tmp_path / "home" / "readmodel-1.sqlite")
    try:
        assert model.store._primary.pragma("temp_store") == 2  # MEMORY
    finally:
        model.close()


def test_an_odd_umask_cannot_loosen_or_lock_out(tmp_path: Path) -> None:
    old = os.umask(0o277)  # would give 0400 files the owner could not write
    try:
        with Journal.open(tmp_path / "home" / "journal") as journal:
            journal.append([_event()])
    finally:
        os.umask(old)
    segment = next((tmp_path / "home" / "journal").glob("*.seg"))
    assert (_mode(tmp_path / "home"), _mode(segment)) == (0o700, 0o600)


def test_a_whole_home_is_private_after_store_and_recall(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "home"
    code, out, err = _ferrex(home, "store", "--content", "the deploy moved to Friday", "--json")
    assert code == 0, err
    code, out, err = _ferrex(home, "recall", "deploy", "--json")
    assert code == 0, err and json.loads(out)["results"]
    assert _mode(home) == 0o700
    assert _mode(home / "qdrant") == 0o700
    for name in ("journal", "cache", "run"):
        assert _mode(home / name) == 0o700, name
    # models/ is made only for a downloaded model (fastembed's cache); the bundled one
    # runs from the per-user copy, so the walk below covers it when it is there.
    # Everything ferrex itself creates is 0600/0700. Qdrant Edge and the model copy make
    # their files with the umask's mode, inside 0700 directories nobody else can enter;
    # the next open tightens them too (silently: they were never reachable).
    assert [e for e in _loose(home, skip="qdrant/") if " models/" not in e] == []
    code, _, err = _ferrex(home, "stats", "--json")
    assert code == 0, err
    assert "tightened" not in err
    assert _loose(home) == []


def test_a_loose_home_is_tightened_once_and_said_so(
    tmp_path: Path, umask_022: None, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    (home / "journal").mkdir(parents=True)
    os.chmod(home, 0o755)
    os.chmod(home / "journal", 0o755)
    (home / "journal" / "00000000000000000001.seg").write_bytes(b"x")
    (home / "ferrex.toml").write_text("")
    os.chmod(home / "ferrex.toml", 0o644)
    assert inspect_modes(home).exposed == 4
    with caplog.at_level(logging.WARNING, logger="ferrex"):
        modes = secure_home(home)
        secure_home(home)  # a second open says nothing more
    assert modes is not None and modes.tightened == 4
    lines = [r.getMessage() for r in caplog.records if "tightened" in r.getMessage()]
    assert lines == [f"tightened permissions of 4 files under {home} (were readable by others)"]
    assert _loose(home) == [] and _mode(home) == 0o700
    assert _mode(home / "journal" / "00000000000000000001.seg") == 0o600


def test_files_unreachable_by_others_are_tightened_silently(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "qdrant").mkdir(parents=True, mode=0o700)
    os.chmod(home, 0o700)
    (home / "qdrant" / "page_0.dat").write_bytes(b"x")
    os.chmod(home / "qdrant" / "page_0.dat", 0o644)
    modes = tighten(home)
    assert (modes.loose, modes.exposed, modes.tightened) == (1, 0, 1)


def test_the_cli_reports_tightening_on_stderr(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o755)
    (home / "ferrex.toml").write_text("")
    os.chmod(home / "ferrex.toml", 0o644)
    _, _, err = _ferrex(home, "journal", "verify")
    assert "ferrex: tightened permissions of 2 files" in err
    assert _mode(home) == 0o700 and _mode(home / "ferrex.toml") == 0o600


def test_doctor_reports_the_modes(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "home"
    code, _, err = _ferrex(home, "store", "--content", "a private memory")
    assert code == 0, err
    code, out, err = _ferrex(home, "doctor", "--json")
    perms = json.loads(out)["permissions"]
    assert perms["home_mode"] == "0700" and perms["private"] is True
    assert perms["accessible_to_others"] == 0 and perms["reserve_bytes"] > 0


def test_exports_keep_their_own_modes(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "home"
    code, _, err = _ferrex(home, "store", "--content", "exported memory")
    assert code == 0, err
    out = tmp_path / "dump.jsonl"
    code, _, err = _ferrex(home, "export", "jsonl", str(out))
    assert code == 0, err
    # Written through a temporary file from mkstemp, so private whatever the umask.
    assert _mode(out) == 0o600
    repo = tmp_path / "audit"
    code, _, err = _ferrex(home, "export", "git", str(repo))
    assert code == 0, err
    # The git repository is the user's own, outside the home: the umask decides.
    assert _mode(repo) == 0o755
    objects = [p for p in (repo / ".git" / "objects").rglob("*") if p.is_file()]
    assert objects and all(_mode(p) & 0o044 for p in objects)


def test_apsw_cannot_create_a_wal_on_a_private_file_loosely(
    tmp_path: Path, umask_022: None
) -> None:
    """Guard on the assumption above: SQLite copies the database file's mode to its -wal."""
    path = tmp_path / "x.sqlite"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    db = apsw.Connection(str(path))
    db.pragma("journal_mode", "wal")
    db.execute("CREATE TABLE t (x)")
    assert _mode(Path(f"{path}-wal")) == 0o600
    db.close()


# Runs the ferrex command line under umask 022 and records every directory Python creates
# under the home with the mode it asks for (the "os.mkdir" audit event): a directory asked
# for with more than 0700 exists, however briefly, with those bits before any tightening.
_RECORD_MKDIRS = """
import os, sys
home, record = os.path.abspath(sys.argv[1]), open(sys.argv[2], "a")

def hook(event, args):
    if event == "os.mkdir" and os.path.abspath(os.fsdecode(args[0])).startswith(home):
        record.write(f"{args[1]:o} {os.fsdecode(args[0])}\\n")
        record.flush()

sys.addaudithook(hook)
os.umask(0o022)
sys.argv = ["ferrex", "--home", home, *sys.argv[3:]]
from ferrex.cli import main
main()
"""


def _made_loose(record: Path) -> list[str]:
    made = [line.split(" ", 1) for line in record.read_text().splitlines()]
    assert made, "no directory was created"
    return [f"{int(mode, 8) & ~0o022:04o} {path}" for mode, path in made
            if int(mode, 8) & ~0o022 & 0o077]  # fmt: skip


def test_a_new_home_served_over_http_is_0700_from_its_first_directory(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    home, record = tmp_path / "new-home", tmp_path / "mkdirs.txt"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-c", _RECORD_MKDIRS, str(home), str(record),
         "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_healthy(server, f"http://127.0.0.1:{port}")
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert _made_loose(record) == []
    assert _loose(home, skip="qdrant/") == []  # Qdrant Edge's own, inside a 0700 directory


def test_a_new_home_made_by_a_store_is_0700_from_its_first_directory(tmp_path: Path) -> None:
    import subprocess
    import sys

    home, record = tmp_path / "a" / "new-home", tmp_path / "mkdirs.txt"
    done = subprocess.run(
        [sys.executable, "-c", _RECORD_MKDIRS, str(home), str(record),
         "store", "--content", "the first memory of a new home"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _made_loose(record) == []
    assert _mode(home) == 0o700 and _loose(home, skip="qdrant/") == []


def test_a_setting_written_back_to_the_configuration_stays_private(
    tmp_path: Path, umask_022: None
) -> None:
    """The configuration may hold journal.url's password: rewriting it (``reembed`` records
    its model there) makes a 0600 file, not one with the umask's mode."""
    from ferrex.config import set_in_file

    file = tmp_path / "home" / "ferrex.toml"
    file.parent.mkdir(mode=0o700)
    file.write_text('[journal]\nurl = "postgresql://ferrex:secret@db/ferrex"\n')
    os.chmod(file, 0o600)
    set_in_file(file, "models.dense", "small")
    assert _mode(file) == 0o600
    assert "secret" in file.read_text() and "small" in file.read_text()


def test_compact_leaves_the_home_private(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "home"
    code, out, err = _ferrex(home, "store", "--content", "a memory to purge", "--json")
    assert code == 0, err
    code, _, err = _ferrex(home, "forget", json.loads(out)["id"])
    assert code == 0, err
    code, _, err = _ferrex(home, "journal", "compact")
    assert code == 0, err
    assert (home / "compact.json").exists()
    assert [e for e in _loose(home, skip="qdrant/") if " models/" not in e] == []
