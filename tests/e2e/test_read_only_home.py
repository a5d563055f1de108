"""A data directory on a read-only disk: reading what can be read, a coded error for the rest,
never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.disk_helpers import ferrex, remount_read_only, tmpfs


@pytest.fixture(scope="module")
def read_only_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with tmpfs(tmp_path_factory.mktemp("ro") / "mnt", "256m") as mnt:
        home = mnt / "home"
        for text in ("the deploy moved to Friday", "bananas are rich in potassium"):
            done = ferrex(home, "store", "--content", text)
            assert done.returncode == 0, done.stderr
        remount_read_only(mnt)
        yield home


def test_journal_commands_work(read_only_home: Path) -> None:
    done = ferrex(read_only_home, "journal", "verify")
    assert done.returncode == 0, done.stderr
    done = ferrex(read_only_home, "journal", "show")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["position"] for line in done.stdout.splitlines()] == [1, 2]


def test_export_git_works(read_only_home: Path, tmp_path: Path) -> None:
    done = ferrex(read_only_home, "export", "git", str(tmp_path / "audit"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "audit" / ".git").is_dir()


def test_a_backup_is_taken_from_the_journal(read_only_home: Path, tmp_path: Path) -> None:
    done = ferrex(read_only_home, "export", "jsonl", str(tmp_path / "backup.jsonl"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["memories"] == 2


@pytest.mark.parametrize(
    "args",
    [
        ("store", "--content", "a new memory"),
        ("forget", "mem_01M8RF9DZM5255N8E8XYPY4DRW"),
        ("recall", "deploy"),
        ("stats",),
        ("reflect",),
        ("replay",),
    ],
)
def test_the_rest_say_read_only(
    read_only_home: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = ferrex(read_only_home, *args)
    assert done.returncode == 8, done.stderr
    assert "error [read_only]" in done.stderr and "read-only file system" in done.stderr
    assert "Traceback" not in done.stderr


def test_doctor_reports_the_read_only_disk(read_only_home: Path) -> None:
    done = ferrex(read_only_home, "doctor", "--json")
    assert done.returncode == 0, done.stderr
    perms = json.loads(done.stdout)["permissions"]
    assert perms["read_only"] is True and perms["home_mode"] == "0700"
