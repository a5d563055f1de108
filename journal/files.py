"""Private files and directories: what ferrex creates is its owner's alone, whatever the umask.

Every directory ferrex creates under a data directory is mode 0700 and every file 0600. The
mode is set explicitly (``fchmod``/``chmod`` after creating), not left to the caller's umask:
a umask of 022 would give 0755/0644 and let any local user read private memories, and an odd
umask such as 0277 would leave a file its owner cannot write.

This module imports nothing of ours, so the journal, the projections and ferrex all use it.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dir(path: Path) -> None:
    """Create ``path`` and any missing parents, each mode 0700; existing ones are left alone.

    Another process may create the same directory at the same moment: that is fine.
    """
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue
        os.chmod(directory, DIR_MODE)


def private_opener(path: str, flags: int) -> int:
    """An ``opener`` for :func:`open` that creates the file with mode 0600.

    ``open(tmp, "wb", opener=private_opener)``: the mode is forced with ``fchmod`` when the
    call may create the file, so the umask cannot loosen (or tighten) it.
    """
    fd = os.open(path, flags, FILE_MODE)
    if flags & os.O_CREAT:
        try:
            os.fchmod(fd, FILE_MODE)
        except BaseException:
            os.close(fd)
            raise
    return fd


def open_private(path: Path, flags: int) -> int:
    """``os.open`` with mode 0600 forced on a file this call may create."""
    return private_opener(str(path), flags)


def create_private_file(path: Path) -> None:
    """Make sure ``path`` exists, mode 0600 if this call creates it (an existing file is kept
    as it is): for files another library creates with the umask's mode, such as SQLite's."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a directory's entries (a create, a rename) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(path: Path, data: bytes, *, suffix: str = ".tmp") -> None:
    """Replace ``path`` by ``data``: write a private temporary file beside it, fsync,
    rename over, fsync the directory. A crash leaves the old file or the new one, whole."""
    tmp = path.with_name(path.name + suffix)
    with open(tmp, "wb", opener=private_opener) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
