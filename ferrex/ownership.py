"""Which process owns a data directory's stores: the owner lock and the endpoint file.

``<home>/run/owner.lock`` is an exclusive ``flock``: the process holding it is the only one
that opens the stores (see :meth:`ferrex.app.App.claim`). An owner that serves others writes
``<home>/run/owner.json`` (port, pid, token; see :mod:`ferrex.server.hub`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from journal.files import make_private_dir, open_private

log = logging.getLogger("ferrex")
_FULL = (errno.ENOSPC, errno.EDQUOT)


def _unpublished(path: Path, exc: OSError) -> None:
    log.warning("cannot write %s (%s): other ferrex processes cannot reach this one until "
                "space is freed", path, exc.strerror)  # fmt: skip


def lock_path(home: Path) -> Path:
    return home / "run" / "owner.lock"


def try_lock(home: Path, *, create: bool = True) -> int | None:
    """The owner lock's file descriptor, held, or None when another process holds it (or,
    with ``create=False``, when there is no lock file). Closing the descriptor releases it."""
    path = lock_path(home)
    if create:
        make_private_dir(path.parent)
    elif not path.exists():
        return None
    try:
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        if exc.errno != errno.EROFS or not path.exists():
            raise
        fd = os.open(path, os.O_RDONLY)  # a read-only home: a read descriptor locks as well
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


def is_held(home: Path) -> bool:
    """Whether some process owns ``home``'s stores right now (looks without keeping it)."""
    if not lock_path(home).exists():
        return False
    fd = try_lock(home, create=False)
    if fd is None:
        return True
    os.close(fd)
    return False


@dataclass(frozen=True)
class Endpoint:
    """Where the owner listens: a loopback port, its pid and the token every call carries."""

    port: int
    pid: int
    token: str

    @staticmethod
    def path(home: Path) -> Path:
        return home / "run" / "owner.json"

    def write(self, home: Path) -> None:
        """Written to a temporary file (mode 0600), fsynced, renamed into place; not at all on a
        read-only home (nobody can write there, so no reader needs to defer to this one), nor
        on a full disk (logged: this process still serves its own calls, reads keep working
        and writes are refused with ``storage_full``; other processes wait for the lock)."""
        path = self.path(home)
        tmp = path.with_name(f".owner.{os.getpid()}.tmp")
        try:
            fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        except OSError as exc:
            if exc.errno == errno.EROFS:
                return  # a read-only home: every reader opens the stores itself
            if exc.errno in _FULL:
                _unpublished(path, exc)
                return
            raise
        try:
            try:
                os.write(fd, json.dumps({"port": self.port, "pid": self.pid,
                                         "token": self.token}).encode())  # fmt: skip
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError as exc:
            if exc.errno not in _FULL:
                raise
            with contextlib.suppress(OSError):
                tmp.unlink()
            _unpublished(path, exc)

    @classmethod
    def read(cls, home: Path) -> Endpoint | None:
        try:
            raw = json.loads(cls.path(home).read_text())
            return cls(int(raw["port"]), int(raw["pid"]), str(raw["token"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
