"""The journal's audit export to git: ``ferrex export git DIR``.

``export_git`` writes the records after the export's resume point as canonical JSON lines
(:mod:`ferrex.porting.records`) into a git repository, through ONE ``git fast-import``
process fed a stream we write ourselves: one commit per export batch, whatever its size.

Invariants:

- Deterministic: commit ids depend only on the journal and the batch boundaries. Author
  and committer are fixed, their date is the batch's last ``recorded_at``, every byte of
  every file comes from the records. Two exports of one journal give the same ids.
- Incremental: the resume point (last position and hash) is the committed
  ``ferrex-export.json``, so a fresh clone of an export resumes where it stopped.
- Refusing: a directory that is neither empty nor a ferrex export, an export of another
  journal (its first record hash differs), or an export whose resume point the journal
  does not have (or has with another hash), is refused before anything is written, for a
  rewrite too. So is a working tree with local
  changes to exported files.
- Atomic: fast-import writes to a private ref; the branch moves with a compare-and-swap
  ``git update-ref`` only once every object is written.
- ``rewrite`` regenerates the history from the (compacted) journal in the old batch
  boundaries, moves the branch to it and prunes the old objects from the repository, so
  purged text leaves this repository too (clones and remotes keep theirs; we say which
  local refs still reach it).

Git plumbing (running git, fast-import) is :mod:`ferrex.porting.git`; checking an export
against the journal is :mod:`ferrex.porting.gitverify`.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from ferrex.errors import (
    ExportAhead,
    ExportDirty,
    ExportDiverged,
    ExportForeign,
    ExportTarget,
    UsageError,
)
from ferrex.porting.git import (
    FastImportStream,
    GitFailed,
    Repo,
    find_repo,
    git_env,
    git_error,
    git_missing,
    init_repo,
    on_branch,
)
from ferrex.porting.records import (
    FORMAT,
    README,
    README_FILE,
    RECORDS_PER_FILE,
    STATE_FILE,
    ExportState,
    Summary,
    file_for,
    render,
)
from journal import JournalBackend, Record

AUTHOR: Final = "ferrex <ferrex@localhost>"
INCOMING: Final = "refs/ferrex-export/incoming"
BRANCH: Final = "main"
LOCK: Final = "ferrex-export.lock"
_POSITIONS = re.compile(r"^Ferrex-Positions: (\d+)\.\.(\d+)$", re.MULTILINE)
_PROGRESS_EVERY: Final = 256

Progress = Callable[[int, int], None]


def _no_progress(done: int, total: int) -> None:
    pass


# -- the target directory -------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What an export directory holds now."""

    directory: Path
    repo: Repo | None
    head: str | None
    state: ExportState | None


def inspect_target(directory: Path) -> Target:
    """Classify ``directory``; refuse (UsageError) anything we must not write into."""
    if directory.exists() and not directory.is_dir():
        raise ExportTarget(f"{directory} exists and is not a directory")
    if not directory.exists():
        return Target(directory, None, None, None)
    repo = find_repo(directory)
    if repo is None:
        if any(directory.iterdir()):
            raise not_an_export(directory)
        return Target(directory, None, None, None)
    head = repo.head_commit()
    if head is None:
        others = [p for p in directory.iterdir() if p.name != ".git"]
        if repo.work_tree is not None and others:
            raise not_an_export(directory)
        return Target(directory, repo, None, None)
    raw = repo.read(head, STATE_FILE)
    if raw is None:
        raise not_an_export(directory)
    return Target(directory, repo, head, ExportState.decode(raw, f"{directory}/{STATE_FILE}"))


def not_an_export(directory: Path) -> UsageError:
    return ExportTarget(
        f"{directory} is not empty and holds no ferrex export (no committed {STATE_FILE})",
        hint="export into a new or empty directory, or into an earlier export of this journal",
    )


@dataclass(frozen=True)
class Identity:
    """A journal's name: the position and hash of its first record."""

    position: int
    hash: str


def journal_identity(journal: JournalBackend) -> Identity | None:
    """The journal's first record's position and hash (None when it is empty)."""
    first = journal.first()
    if first is None:
        return None
    assert first.hash is not None  # Journal.first always computes it
    return Identity(first.position, first.hash.hex())


def _check_identity(target: Target, identity: Identity) -> None:
    state = target.state
    if state is not None and state.journal_first_hash != identity.hash:
        raise ExportForeign(
            f"{target.directory} holds the export of another journal: its first record hash "
            f"is {state.journal_first_hash[:16]}…, this journal's is {identity.hash[:16]}…",
            hint="check --home / FERREX_HOME, or export into another directory",
        )


# -- the export -----------------------------------------------------------------------------


@dataclass
class ExportResult:
    directory: Path
    commits: list[str] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)
    head_position: int = 0
    up_to_date: bool = False
    rewritten: bool = False
    still_reachable: list[str] = field(default_factory=list)
    """Local refs that still reach the history a rewrite replaced (e.g. origin/main)."""

    def as_dict(self) -> dict[str, Any]:
        s = self.summary
        return {
            "dir": str(self.directory),
            "commits": self.commits,
            "records": s.records,
            "positions": [s.first, s.last] if s.records else None,
            "head_position": self.head_position,
            "up_to_date": self.up_to_date,
            "rewritten": self.rewritten,
            "counts": s.counts(),
            "files": s.files,
            "still_reachable": self.still_reachable,
        }


def export_git(
    journal: JournalBackend,
    directory: Path,
    *,
    rewrite: bool = False,
    progress: Progress = _no_progress,
) -> ExportResult:
    """Export the records the export in ``directory`` lacks (all of them with ``rewrite``)."""
    target = inspect_target(directory)
    result = ExportResult(directory, rewritten=rewrite)
    head = journal.refresh()
    result.head_position = head.position
    identity = journal_identity(journal)
    if identity is None:
        result.up_to_date = True
        return result
    _check_identity(target, identity)
    state = target.state
    after = 0
    records: Iterator[Record]
    if state is not None:
        # Checked for a rewrite too: replacing an export that has records the journal lacks
        # (or that differ from it) would erase the very evidence an audit trail is for.
        records = iter(journal.read(after=state.position - 1, hashes=True))
        _check_resume_point(next(records, None), target, state, head.position)
        after = state.position
    if state is None or rewrite:
        after = 0
        records = iter(journal.read(hashes=True))
    per_file = state.records_per_file if state is not None else RECORDS_PER_FILE
    if after >= head.position:
        result.up_to_date = True
        return result
    dirty = target.repo.dirty() if target.repo is not None else []
    if dirty:
        raise ExportDirty(
            f"{directory} has local changes to exported files: {', '.join(dirty[:5])}",
            hint=f"the export is written by ferrex only; discard them with "
            f"`git -C {directory} checkout -- .` (or verify with `ferrex journal verify "
            f"--against {directory}` first)",
        )
    ends = _batch_ends(target, head.position) if rewrite else [head.position]
    repo = target.repo or init_repo(directory, BRANCH)
    if not on_branch(repo):
        raise ExportTarget(
            f"HEAD is detached in {directory}",
            hint=f"check out the export's branch first: git -C {directory} checkout {BRANCH}",
        )
    with _locked(repo):
        old = repo.head_commit()
        repo.git("update-ref", "-d", INCOMING, check=False)  # left by an interrupted run
        parent = None if rewrite else old
        try:
            commits = _fast_import(
                repo, records, identity, after, ends, per_file, parent, result, progress
            )
            new = commits[-1]
            branch = repo.git("symbolic-ref", "-q", "HEAD").decode().strip()
            repo.git("update-ref", "-m", "ferrex export", branch, new, old or "0" * 40)
            repo.git("update-ref", "-d", INCOMING)
            if repo.work_tree is not None:
                repo.git("reset", "-q", "--hard", "HEAD")
            if rewrite and old is not None and old != new:
                result.still_reachable = _refs_reaching_replaced(repo, old, new)
                repo.git("reflog", "expire", "--expire=now", "--all")
                repo.git("gc", "-q", "--prune=now")
        except GitFailed as exc:
            raise git_error(exc, "writing the export") from exc
    result.commits = commits
    return result


def _check_resume_point(
    record: Record | None, target: Target, state: ExportState, head: int
) -> None:
    if record is None or record.hash is None or record.position != state.position:
        raise ExportAhead(
            f"{target.directory} is exported up to position {state.position}, which this "
            f"journal does not have (its head is {head})",
            hint="is --home the journal this export was made from?",
        )
    if record.hash.hex() != state.hash:
        raise ExportDiverged(
            f"the export's resume point, position {state.position}, has hash "
            f"{state.hash[:16]}… but the journal's record there has {record.hash.hex()[:16]}…",
            hint=f"run `ferrex journal verify --against {target.directory}` to see what differs",
        )


def _batch_ends(target: Target, head: int) -> list[int]:
    """For a rewrite: the last position of each batch the old history committed (so the
    new history is parallel to it), then the records it had not exported yet."""
    ends: list[int] = []
    if target.repo is not None and target.head is not None:
        log = target.repo.git("log", "--reverse", "--format=%B", target.head).decode()
        for match in _POSITIONS.finditer(log):
            end = int(match.group(2))
            if (not ends or end > ends[-1]) and end <= head:
                ends.append(end)
    if not ends or ends[-1] < head:
        ends.append(head)
    return ends


@contextmanager
def _locked(repo: Repo) -> Iterator[None]:
    """One export at a time per repository."""
    fd = os.open(repo.git_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _refs_reaching_replaced(repo: Repo, old: str, new: str) -> list[str]:
    """Refs that still reach a commit of the old history that the new one replaced."""
    replaced = repo.git("rev-list", "--reverse", old, f"^{new}").decode().split()
    if not replaced:
        return []
    out = repo.git("for-each-ref", "--contains", replaced[0], "--format=%(refname)")
    return [line for line in out.decode().splitlines() if line]


_FAST_IMPORT: Final = (
    # Record files are large and unlike each other: deltas would cost time and save little
    # (a later `git gc` finds them anyway). Compression never changes object ids.
    "-c", "core.bigFileThreshold=256k", "-c", "pack.compression=1",
)  # fmt: skip


def _fast_import(
    repo: Repo,
    records: Iterator[Record],
    identity: Identity,
    after: int,
    ends: Sequence[int],
    per_file: int,
    parent: str | None,
    result: ExportResult,
    progress: Progress,
) -> list[str]:
    """Stream ``records`` (those after ``after``) in batches ending at ``ends``; returns the
    new commit ids, oldest first. The last commit is left at the private INCOMING ref."""
    total = ends[-1] - after
    summary = result.summary
    # The file the resume point is in already has lines: new ones are appended to them.
    current = file_for(after + 1, per_file)
    current_last = after // per_file * per_file + per_file
    changed = {current}
    lines: list[bytes] = []
    if parent is not None and after % per_file:
        lines.append(repo.read(parent, current) or b"")
    files: dict[str, int | bytes] = {}
    commit_marks: list[int] = []
    previous = parent
    batch = Summary()
    end_index = 0
    done = 0
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                ["git", *_FAST_IMPORT, f"--git-dir={repo.git_dir}", "fast-import", "--quiet",
                 "--force"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=git_env(),
                cwd=repo.root,
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise git_missing() from exc
        assert proc.stdin is not None
        stream = FastImportStream(proc.stdin, ref=INCOMING, author=AUTHOR)
        try:
            proc.stdin.write(b"feature done\n")
            for record in records:
                if record.position > ends[-1]:
                    break
                if record.position > current_last:
                    if lines:
                        files[current] = stream.blob(b"".join(lines))
                    current, lines = file_for(record.position, per_file), []
                    current_last = (record.position - 1) // per_file * per_file + per_file
                    changed.add(current)
                lines.append(render(record) + b"\n")
                batch.add(record)
                done += 1
                if record.position >= ends[end_index]:
                    files[current] = stream.blob(b"".join(lines))
                    commit_marks.append(_commit(stream, batch, record, identity, per_file,
                                                files, previous))  # fmt: skip
                    previous = f":{commit_marks[-1]}"
                    summary.merge(batch)
                    files, batch = {}, Summary()
                    while end_index < len(ends) - 1 and ends[end_index] <= record.position:
                        end_index += 1
                if done % _PROGRESS_EVERY == 0:
                    progress(done, total)
            if batch.records and batch.last_record is not None:
                files[current] = stream.blob(b"".join(lines))
                commit_marks.append(_commit(stream, batch, batch.last_record, identity,
                                            per_file, files, previous))  # fmt: skip
                summary.merge(batch)
            proc.stdin.write(b"done\n")
            proc.stdin.close()
        except BrokenPipeError:
            pass  # fast-import stopped early; its exit status and stderr say why
        finally:
            code = proc.wait()
        progress(done, total)
        if code != 0:
            errors.seek(0)
            raise GitFailed(["git", "fast-import"], code, errors.read()[-2000:])
    summary.files = sorted(changed)
    # Marks are private to fast-import; the commit ids are read back from the ref.
    tip = repo.git("rev-parse", INCOMING).decode().strip()
    ids = repo.git("rev-list", f"--max-count={len(commit_marks)}", tip).decode().split()
    return list(reversed(ids))


def _commit(
    stream: FastImportStream,
    batch: Summary,
    last: Record,
    identity: Identity,
    per_file: int,
    files: dict[str, int | bytes],
    parent: str | None,
) -> int:
    assert last.hash is not None
    state = ExportState(
        format=FORMAT,
        journal_first_position=identity.position,
        journal_first_hash=identity.hash,
        records_per_file=per_file,
        position=last.position,
        hash=last.hash.hex(),
        recorded_at=str(msgspec.to_builtins(last.recorded_at)),
    )
    files = {**files, STATE_FILE: state.encode(), README_FILE: README.encode()}
    when = int(last.recorded_at.timestamp())
    return stream.commit(when, batch.message(identity.hash, last.hash.hex()), parent, files)
