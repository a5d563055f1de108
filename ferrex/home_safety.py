"""The data directory's safety: private file modes, a read-only home, a free-space reserve.

Invariants:

- The home and everything ferrex creates under it are its owner's alone: directories 0700,
  files 0600 (see :mod:`journal.files`). A home found with looser modes is tightened when it
  is opened, and the user is told once. Exports (``export git``, ``export jsonl``) are the
  user's own files outside the home and follow the umask.
- Qdrant Edge grows its files through memory maps: a write into a map on a full disk kills
  the process with SIGBUS, after which nothing can be said or cleaned up. So a write command
  first checks that a reserve of free space remains (:func:`check_reserve`) and is refused
  with ``storage_full`` before anything is written. The journal and SQLite fail cleanly on a
  full disk (ENOSPC, SQLITE_FULL); the reserve is for Qdrant's sake. Opening a shard touches
  its maps too: below the reserve, a process opens one only when the disk holds what that
  can take (:func:`check_open_room`).

Sizing the default reserve (``storage.reserve_bytes``): Qdrant Edge (0.9) keeps each shard in
files it creates 32 MiB long and sparse, then fills in page by page: a WAL segment
(``wal/open-N``, two kept ahead), the dense-vector chunk (``chunk_N.mmap``), the sparse-vector
store page and the payload page; its payload indexes use 4 MiB pages. One command rarely
touches more than a few pages, but a batch (an import chunk of 256 memories, an upsert of 512
points) may run through the rest of a file and into the next one. The default keeps room for
four whole 32 MiB files — one of each growing kind — which also covers what the other
stores grow by between two checks: SQLite by 4 KiB pages plus a WAL checkpointed at about
4 MiB, and the journal by one appended record (a new segment starts with a 16-byte header).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ferrex.errors import FerrexError, ReadOnlyHome, StorageFull, UsageError
from journal.files import DIR_MODE, FILE_MODE

DEFAULT_HOME = Path("~/.ferrex")


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``--home``, else ``FERREX_HOME``, else ``~/.ferrex``."""
    raw = home if home is not None else os.environ.get("FERREX_HOME") or DEFAULT_HOME
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"data directory {path} exists and is not a directory",
            hint="pass --home DIR or set FERREX_HOME to a directory",
        )
    return path.absolute()


MIB = 1024 * 1024
QDRANT_FILE_BYTES = 32 * MIB
"""How long Qdrant Edge makes each of its growing files (WAL segment, vector chunk, pages)."""
DEFAULT_RESERVE_BYTES = 4 * QDRANT_FILE_BYTES
"""128 MiB: one whole new file of each kind Qdrant Edge grows (see the module docstring)."""

_OTHERS = 0o077  # group and other permission bits
_REACH = 0o011  # group or other may enter a directory
log = logging.getLogger("ferrex")
_told: set[Path] = set()  # homes whose tightening this process has reported


@dataclass(frozen=True)
class Modes:
    """What a walk of the home found (and, when tightening, changed)."""

    home_mode: int | None
    """The home's own permission bits; None when it does not exist."""
    loose: int
    """Entries (files and directories, the home included) group or others had bits on."""
    exposed: int
    """Of those, the ones others could actually reach: every directory above them let
    group or others in."""
    tightened: int
    """Entries whose modes this walk set to 0700/0600."""
    failed: int
    """Entries whose modes could not be changed (owned by another user, read-only disk)."""
    read_only: bool
    """The home is on a read-only file system (nothing could be written there)."""

    def as_dict(self) -> dict[str, object]:
        return {
            "home_mode": None if self.home_mode is None else f"{self.home_mode:04o}",
            "private": self.loose - self.tightened == 0 and self.home_mode is not None,
            "accessible_to_others": self.loose - self.tightened,
            "tightened": self.tightened,
            "failed": self.failed,
            "read_only": self.read_only,
        }


def inspect_modes(home: Path) -> Modes:
    """Walk ``home`` and count what group or others may access; changes nothing."""
    return _walk(home, tighten=False)


def tighten(home: Path) -> Modes:
    """Set every directory under ``home`` (and ``home``) that group or others could access
    to 0700 and every such file to 0600; already private entries are left as they are.

    Symbolic links are not followed. Entries that vanish during the walk (another process
    rolled a segment) are skipped; entries that cannot be changed are counted as failed.
    """
    return _walk(home, tighten=True)


def secure_home(home: Path) -> Modes | None:
    """Tighten an existing home when it is opened, saying so once per process on stderr.

    Reports only entries others could reach: files Qdrant Edge created with the umask's mode
    inside a 0700 directory are tightened silently, since nobody else could open them.
    """
    if not home.is_dir():
        return None
    modes = tighten(home)
    if modes.exposed and modes.tightened and home not in _told:
        _told.add(home)
        log.warning(
            "tightened permissions of %d files under %s (were readable by others)",
            modes.exposed,
            home,
        )
    return modes


def _walk(home: Path, *, tighten: bool) -> Modes:
    try:
        home_mode = stat.S_IMODE(os.lstat(home).st_mode)
    except FileNotFoundError:
        return Modes(None, 0, 0, 0, 0, False)
    read_only = _is_read_only(home)
    counts = {"loose": 0, "exposed": 0, "tightened": 0, "failed": 0}
    change = tighten and not read_only

    def visit(path: Path, mode: int, is_dir: bool, reachable: bool) -> None:
        if not mode & _OTHERS:
            return
        counts["loose"] += 1
        if reachable:
            counts["exposed"] += 1
        if not change:
            return
        try:
            os.chmod(path, DIR_MODE if is_dir else FILE_MODE)
        except FileNotFoundError:
            counts["loose"] -= 1
            counts["exposed"] -= int(reachable)
        except OSError:
            counts["failed"] += 1
        else:
            counts["tightened"] += 1

    # The home itself is reachable by others when its mode lets them in (we do not judge
    # the directories above it: the user chose where it lives).
    visit(home, home_mode, True, True)
    open_dirs: dict[str, bool] = {str(home): bool(home_mode & _REACH)}
    for top, dirs, files in os.walk(home):
        reachable = open_dirs.pop(top, False)
        for path, info in _still_there(top, dirs):
            mode = stat.S_IMODE(info.st_mode)
            visit(path, mode, True, reachable)
            open_dirs[str(path)] = reachable and bool(mode & _REACH)
        for path, info in _still_there(top, files):
            if stat.S_ISLNK(info.st_mode):
                continue  # chmod would follow it out of the home
            visit(path, stat.S_IMODE(info.st_mode), False, reachable)
    return Modes(home_mode, counts["loose"], counts["exposed"], counts["tightened"],
                 counts["failed"], read_only)  # fmt: skip


def _still_there(top: str, names: list[str]) -> Iterator[tuple[Path, os.stat_result]]:
    """Each of ``names`` in ``top`` with its ``lstat``, leaving out those gone since the
    walk listed them."""
    for name in names:
        path = Path(top, name)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        yield path, info


def _is_read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


# -- read-only homes ----------------------------------------------------------------------


def is_read_only(home: Path) -> bool:
    """Whether ``home`` (or, when it does not exist yet, its nearest existing parent) is on a
    read-only file system."""
    return _is_read_only(_existing(home))


def read_only_error(home: Path, what: str) -> ReadOnlyHome:
    """The error a writing command gets on a read-only home."""
    return ReadOnlyHome(
        f"the data directory {home} is on a read-only file system: cannot {what}",
        hint="journal verify, journal show and export git work on a read-only home; for the "
        "rest, remount it read-write, or copy it to a writable disk and pass --home DIR",
    )


def from_os_error(exc: OSError) -> FerrexError | None:
    """A read-only or full disk met outside the checks above, as a coded error (None for any
    other OSError): the CLI's last line of defence against a traceback."""
    where = exc.filename if exc.filename is not None else "the data directory"
    if exc.errno == errno.EROFS:
        return ReadOnlyHome(
            f"{where} is on a read-only file system and this command writes there",
            hint="remount it read-write, or copy the data directory to a writable disk and "
            "pass --home DIR",
        )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFull(
            f"the disk holding {where} is full",
            hint="free some space and run the command again; acknowledged writes are safe",
        )
    return None


# -- the free-space reserve ---------------------------------------------------------------


def free_bytes(home: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding ``home``."""
    info = os.statvfs(_existing(home))
    return info.f_bavail * info.f_frsize


def check_reserve(home: Path, reserve: int) -> None:
    """Refuse a write (``storage_full``) when less than ``reserve`` bytes are free where
    ``home`` lives; call it before anything of the write reaches the disk."""
    if reserve <= 0:
        return
    free = free_bytes(home)
    if free < reserve:
        raise StorageFull(
            f"only {_size(free)} free on the disk holding {home}; ferrex keeps {_size(reserve)}"
            " in reserve so that its stores never run out mid-write, so nothing was written",
            hint="free some space on that disk (or move the data directory with --home) and "
            "try again; nothing needs repairing. The reserve is storage.reserve_bytes",
            details={"free_bytes": free, "reserve_bytes": reserve},
        )


def check_rebuild_room(home: Path, reserve: int, reason: str) -> None:
    """Refuse (``storage_full``) to rebuild the projections when less than ``reserve`` bytes
    are free: a rebuild writes the read model and every Qdrant file anew. On a disk with no
    byte free a new process cannot even open the read model (SQLite cannot make its shared
    memory file), which would otherwise look like a broken read model to rebuild."""
    if reserve <= 0:
        return
    free = free_bytes(home)
    if free < reserve:
        raise StorageFull(
            f"the disk holding {home} is full ({_size(free)} free; ferrex keeps "
            f"{_size(reserve)} in reserve): the stores cannot be opened ({reason}) and "
            "nothing was changed",
            hint="free some space on that disk and run the command again; acknowledged "
            "writes are safe. A server that was already running keeps answering recalls",
            details={"free_bytes": free, "reserve_bytes": reserve},
        )


def unallocated_bytes(directory: Path, *, shorter_than: int | None = None) -> int:
    """The most that writes into the files under ``directory`` (those shorter than
    ``shorter_than`` bytes, when given) could still take from the disk: what their lengths
    promise beyond the blocks they hold. Files that vanish during the walk are skipped."""
    return sum(
        max(0, info.st_size - info.st_blocks * 512)
        for info in _regular_files(directory)
        if shorter_than is None or info.st_size < shorter_than
    )


def _regular_files(directory: Path) -> Iterator[os.stat_result]:
    """The status of each regular file under ``directory``; files that vanish during the
    walk are skipped."""
    for root, _dirs, files in os.walk(directory):
        for name in files:
            try:
                info = os.stat(os.path.join(root, name), follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                yield info


def check_open_room(home: Path, reserve: int, shard: Path) -> None:
    """Refuse (``storage_full``) to open a Qdrant Edge shard in this process when less than
    ``reserve`` bytes are free and fewer than opening it could take.

    Opening maps the shard's files, and Edge reads its smaller structures (payload-index
    pages, id trackers, flags) through the maps as it opens: on a tmpfs, touching a sparse
    page allocates it, and with no page left that is a SIGBUS, not an error (measured: the
    first opening of a fresh memories shard allocated 36 MiB there). The 32 MiB growing files
    (vector chunks, payload and sparse-vector pages, WAL segments) are only written by
    updates, which keep the whole reserve (:func:`check_reserve`), so they are not counted.
    A shard this process already holds open (a running server's) keeps answering."""
    if reserve <= 0:
        return
    free = free_bytes(home)
    if free >= reserve:
        return
    wanted = unallocated_bytes(shard, shorter_than=QDRANT_FILE_BYTES // 2) + MIB
    if free < wanted:
        raise StorageFull(
            f"the disk holding {home} is too full to open the vector collection "
            f"{shard.name} ({_size(free)} free; opening it may take up to {_size(wanted)}, "
            "and a write through a memory map that finds the disk full kills the process): "
            "nothing was opened or changed",
            hint="free some space on that disk and run the command again; acknowledged "
            "writes are safe. A server that was already running keeps answering recalls",
            details={"free_bytes": free, "reserve_bytes": reserve, "wanted_bytes": wanted},
        )


def tree_bytes(directory: Path) -> int:
    """The most a copy of the files under ``directory`` takes: their lengths (a copy need
    not keep a sparse file's holes)."""
    return sum(info.st_size for info in _regular_files(directory))


def check_copy_room(home: Path, reserve: int, directories: list[Path]) -> None:
    """Refuse (``storage_full``) to copy ``directories`` when the copy would leave less than
    ``reserve`` bytes free (a server indexes its vector collections on copies)."""
    size = sum(tree_bytes(d) for d in directories)
    free = free_bytes(home)
    if free - size < max(reserve, 0):
        raise StorageFull(
            f"the disk holding {home} has too little room to index the vector collections on "
            f"a copy ({_size(size)} to copy, {_size(free)} free, {_size(reserve)} kept in "
            "reserve): they stay as they are, searched without an index",
            hint="free some space on that disk; or stop the servers and run `ferrex optimize`, "
            "which indexes in place",
            details={"free_bytes": free, "reserve_bytes": reserve, "copy_bytes": size},
        )


def _existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _size(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:.1f} MiB"
    return f"{n / 1024:.0f} KiB"
