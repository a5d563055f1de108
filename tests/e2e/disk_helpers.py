"""A small tmpfs per test (root only): the real kernel's read-only and full-disk behaviour."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` at ``where`` for the block; skip the test when mounting is
    not permitted (not root, or in a container without the capability)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs these tests as root)")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)


def ferrex(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The ferrex command line as a separate process."""
    return subprocess.run(
        [sys.executable, "-c", "from ferrex.cli import main; main()", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
