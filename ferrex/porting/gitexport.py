"""The journal's audit export to git, and its verification against the journal.

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
from typing import IO, Any, Final

import msgspec

from ferrex.errors import BackendUnavailable, JournalFailure, UsageError
from ferrex.porting.records import (
    FORMAT,
    README,
    README_FILE,
    RECORDS_DIR,
    RECORDS_PER_FILE,
    STATE_FILE,
    ExportState,
    Summary,
    difference,
    file_for,
    file_range,
    render,
    unredacted,
)
from journal import Journal, Record
from journal.record import FRAME, FRAME_SIZE, check_frame, head_bytes, record_hash
from journal.segment import HEADER_SIZE, header_problem, list_segments

AUTHOR: Final = "ferrex <ferrex@localhost>"
INCOMING: Final = "refs/ferrex-export/incoming"
BRANCH: Final = "main"
LOCK: Final = "ferrex-export.lock"
_POSITIONS = re.compile(r"^Ferrex-Positions: (\d+)\.\.(\d+)$", re.MULTILINE)
_LINE_POSITION = re.compile(rb'^\{"position":(\d+),')
_PROGRESS_EVERY: Final = 256

Progress = Callable[[int, int], None]


def _no_progress(done: int, total: int) -> None:
    pass


# -- git ------------------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    # The user's and the system's git configuration must not change what we write or how
    # (autocrlf, hooks paths, default branch...): the export is deterministic.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


@dataclass(frozen=True)
class Repo:
    """A git repository at ``root``: its git directory and, unless bare, its work tree."""

    root: Path
    git_dir: Path
    work_tree: Path | None

    def git(self, *args: str, data: bytes | None = None, check: bool = True) -> bytes:
        cmd = ["git", f"--git-dir={self.git_dir}"]
        if self.work_tree is not None:
            cmd.append(f"--work-tree={self.work_tree}")
        return _run([*cmd, *args], data=data, check=check, cwd=self.root)

    def head_commit(self) -> str | None:
        out = self.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
        return out.decode().strip() or None

    def read(self, commit: str, path: str) -> bytes | None:
        """A file's bytes at ``commit``, or None when the commit has no such file."""
        kind = self.git("cat-file", "-t", f"{commit}:{path}", check=False).strip()
        if kind != b"blob":
            return None
        return self.git("cat-file", "blob", f"{commit}:{path}")

    def dirty(self) -> list[str]:
        """Tracked files with changes in the work tree or the index (none when bare)."""
        if self.work_tree is None:
            return []
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=no")
        return [entry[3:].decode() for entry in out.split(b"\0") if entry]


class _GitFailed(Exception):
    def __init__(self, cmd: Sequence[str], code: int, stderr: bytes) -> None:
        super().__init__(f"{' '.join(cmd[:3])}: exit {code}")
        self.cmd = list(cmd)
        self.code = code
        self.stderr = stderr.decode(errors="replace").strip()


def _run(cmd: Sequence[str], *, data: bytes | None, check: bool, cwd: Path) -> bytes:
    try:
        done = subprocess.run(
            list(cmd), input=data, capture_output=True, check=False, env=_git_env(), cwd=cwd
        )
    except FileNotFoundError as exc:
        raise _git_missing() from exc
    if check and done.returncode != 0:
        raise _GitFailed(cmd, done.returncode, done.stderr)
    return done.stdout


def _git_missing() -> BackendUnavailable:
    return BackendUnavailable(
        "git is not installed (the audit export is a git repository)",
        hint="install git, or use `ferrex export jsonl` for a plain dump",
        code="git_unavailable",
    )


def _git_error(exc: _GitFailed, what: str) -> BackendUnavailable:
    return BackendUnavailable(
        f"git failed while {what}: {exc.stderr or exc}",
        hint="run the export again: it resumes from what the export's branch holds (the "
        "branch moves only once every new object is written)",
        code="git_failed",
    )


def find_repo(directory: Path) -> Repo | None:
    """The repository rooted exactly at ``directory`` (never one of its parents), or None."""
    env = _git_env()
    env["GIT_CEILING_DIRECTORIES"] = str(directory.parent)
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--absolute-git-dir", "--is-bare-repository"],
            cwd=directory,
            capture_output=True,
            env=env,
            check=False,
        )
    except FileNotFoundError as exc:
        raise _git_missing() from exc
    if done.returncode != 0:
        return None
    git_dir, bare = done.stdout.decode().split("\n")[:2]
    return Repo(directory, Path(git_dir), None if bare == "true" else directory)


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
        raise UsageError(f"{directory} exists and is not a directory", code="export_target")
    if not directory.exists():
        return Target(directory, None, None, None)
    repo = find_repo(directory)
    if repo is None:
        if any(directory.iterdir()):
            raise _not_an_export(directory)
        return Target(directory, None, None, None)
    head = repo.head_commit()
    if head is None:
        others = [p for p in directory.iterdir() if p.name != ".git"]
        if repo.work_tree is not None and others:
            raise _not_an_export(directory)
        return Target(directory, repo, None, None)
    raw = repo.read(head, STATE_FILE)
    if raw is None:
        raise _not_an_export(directory)
    return Target(directory, repo, head, ExportState.decode(raw, f"{directory}/{STATE_FILE}"))


def _not_an_export(directory: Path) -> UsageError:
    return UsageError(
        f"{directory} is not empty and holds no ferrex export (no committed {STATE_FILE})",
        hint="export into a new or empty directory, or into an earlier export of this journal",
        code="export_target",
    )


@dataclass(frozen=True)
class Identity:
    """A journal's name: the position and hash of its first record."""

    position: int
    hash: str


def journal_identity(journal: Journal) -> Identity | None:
    """The journal's first record's position and hash (None when it is empty).

    Read from the first frame alone: decoding the whole first segment to learn one hash
    would cost about a second per 100,000 records.
    """
    segments = list_segments(journal.directory)
    if segments:
        with open(segments[0][1], "rb") as f:
            data = f.read(HEADER_SIZE + FRAME_SIZE)
            if len(data) == HEADER_SIZE + FRAME_SIZE and header_problem(data) is None:
                data += f.read(FRAME.unpack_from(data, HEADER_SIZE)[3])
                info = check_frame(data, HEADER_SIZE, len(data))
                if not isinstance(info, str):
                    digest = record_hash(info.position, info.prev_hash, head_bytes(data, info))
                    return Identity(info.position, digest.hex())
    # An unusual first segment (being created, torn): let the reader decide.
    for record in journal.read(hashes=True):
        assert record.hash is not None
        return Identity(record.position, record.hash.hex())
    return None


def _check_identity(target: Target, identity: Identity) -> None:
    state = target.state
    if state is not None and state.journal_first_hash != identity.hash:
        raise UsageError(
            f"{target.directory} holds the export of another journal: its first record hash "
            f"is {state.journal_first_hash[:16]}…, this journal's is {identity.hash[:16]}…",
            hint="check --home / FERREX_HOME, or export into another directory",
            code="export_foreign",
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
    journal: Journal,
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
        raise UsageError(
            f"{directory} has local changes to exported files: {', '.join(dirty[:5])}",
            hint=f"the export is written by ferrex only; discard them with "
            f"`git -C {directory} checkout -- .` (or verify with `ferrex journal verify "
            f"--against {directory}` first)",
            code="export_dirty",
        )
    ends = _batch_ends(target, head.position) if rewrite else [head.position]
    repo = target.repo or _init(directory)
    if not _on_branch(repo):
        raise UsageError(
            f"HEAD is detached in {directory}",
            hint=f"check out the export's branch first: git -C {directory} checkout {BRANCH}",
            code="export_target",
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
        except _GitFailed as exc:
            raise _git_error(exc, "writing the export") from exc
    result.commits = commits
    return result


def _check_resume_point(
    record: Record | None, target: Target, state: ExportState, head: int
) -> None:
    if record is None or record.hash is None or record.position != state.position:
        raise JournalFailure(
            f"{target.directory} is exported up to position {state.position}, which this "
            f"journal does not have (its head is {head})",
            hint="is --home the journal this export was made from?",
            code="export_ahead",
        )
    if record.hash.hex() != state.hash:
        raise JournalFailure(
            f"the export's resume point, position {state.position}, has hash "
            f"{state.hash[:16]}… but the journal's record there has {record.hash.hex()[:16]}…",
            hint=f"run `ferrex journal verify --against {target.directory}` to see what differs",
            code="export_diverged",
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


def _init(directory: Path) -> Repo:
    directory.mkdir(parents=True, exist_ok=True)
    _run(["git", "init", "-q", "-b", BRANCH, str(directory)], data=None, check=True,
         cwd=directory)  # fmt: skip
    return Repo(directory, directory / ".git", directory)


def _on_branch(repo: Repo) -> bool:
    return bool(repo.git("symbolic-ref", "-q", "HEAD", check=False).strip())


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


class _Stream:
    """Writes one fast-import stream: blobs as record files fill up, a commit per batch."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.marks = 0

    def mark(self) -> int:
        self.marks += 1
        return self.marks

    def data(self, payload: bytes) -> None:
        self.out.write(b"data %d\n" % len(payload))
        self.out.write(payload)
        self.out.write(b"\n")

    def blob(self, payload: bytes) -> int:
        mark = self.mark()
        self.out.write(b"blob\nmark :%d\n" % mark)
        self.data(payload)
        return mark

    def commit(
        self, when: int, message: str, parent: str | None, files: dict[str, int | bytes]
    ) -> int:
        mark = self.mark()
        self.out.write(b"commit %s\nmark :%d\n" % (INCOMING.encode(), mark))
        for role in (b"author", b"committer"):
            self.out.write(b"%s %s %d +0000\n" % (role, AUTHOR.encode(), when))
        self.data(message.encode())
        if parent is not None:
            self.out.write(b"from %s\n" % parent.encode())
        for path in sorted(files):
            content = files[path]
            if isinstance(content, int):
                self.out.write(b"M 100644 :%d %s\n" % (content, path.encode()))
            else:
                self.out.write(b"M 100644 inline %s\n" % path.encode())
                self.data(content)
        self.out.write(b"\n")
        return mark


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
                env=_git_env(),
                cwd=repo.root,
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise _git_missing() from exc
        assert proc.stdin is not None
        stream = _Stream(proc.stdin)
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
            raise _GitFailed(["git", "fast-import"], code, errors.read()[-2000:])
    summary.files = sorted(changed)
    # Marks are private to fast-import; the commit ids are read back from the ref.
    tip = repo.git("rev-parse", INCOMING).decode().strip()
    ids = repo.git("rev-list", f"--max-count={len(commit_marks)}", tip).decode().split()
    return list(reversed(ids))


def _commit(
    stream: _Stream,
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


# -- verification against the journal ------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    kind: str
    """changed, unredacted, missing, extra, misplaced, unreadable, unexpected_file, state,
    foreign, ahead, uncommitted."""
    reason: str
    file: str | None = None
    line: int | None = None
    position: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def describe(self) -> str:
        where = [f"position {self.position}"] if self.position is not None else []
        if self.file is not None:
            where.insert(0, self.file if self.line is None else f"{self.file} line {self.line}")
        return f"{' '.join(where)}: {self.reason}" if where else self.reason


@dataclass
class AgainstReport:
    directory: Path
    position: int = 0
    """The last position the export claims (its state file)."""
    checked: int = 0
    journal_head: int = 0
    problems: list[Mismatch] = field(default_factory=list)
    problem_count: int = 0

    @property
    def ok(self) -> bool:
        return self.problem_count == 0

    def add(self, problem: Mismatch, keep: int = 100) -> None:
        self.problem_count += 1
        if len(self.problems) < keep:
            self.problems.append(problem)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dir": str(self.directory),
            "ok": self.ok,
            "exported_position": self.position,
            "records_checked": self.checked,
            "not_yet_exported": max(0, self.journal_head - self.position),
            "problem_count": self.problem_count,
            "problems": [p.as_dict() for p in self.problems],
        }


def verify_against(journal: Journal, directory: Path) -> AgainstReport:
    """Compare every record the export in ``directory`` holds with the journal's.

    Reads the files as they are in ``directory`` (its work tree, or any copy of one);
    for a bare repository, the files of HEAD.
    """
    report = AgainstReport(directory)
    source = _ExportFiles.at(directory)
    state = ExportState.decode(source.read(STATE_FILE) or b"", f"{directory}/{STATE_FILE}")
    report.position = state.position
    report.journal_head = journal.refresh().position
    identity = journal_identity(journal)
    if identity is None or identity.hash != state.journal_first_hash:
        report.add(
            Mismatch(
                "foreign",
                f"the export is of another journal (first record hash "
                f"{state.journal_first_hash[:16]}…, this journal's "
                f"{identity.hash[:16] + '…' if identity else 'none: it is empty'})",
            )
        )
        return report
    if state.position > report.journal_head:
        report.add(
            Mismatch(
                "ahead",
                f"the export claims positions up to {state.position}, the journal ends at "
                f"{report.journal_head}",
            )
        )
    records = iter(journal.read(hashes=True))
    pending = next(records, None)
    missing: list[int] = []
    last_position = 0
    last_hash: str | None = None
    for path, number, raw in source.lines(state.records_per_file, report):
        match = _LINE_POSITION.match(raw)
        position = int(match.group(1)) if match else _position_of(raw)
        if position is None:
            report.add(Mismatch("unreadable", "not a record line", path, number))
            continue
        if position <= last_position:
            report.add(
                Mismatch("extra", "repeats or reorders an earlier position", path, number, position)
            )
            continue
        while pending is not None and pending.position < position:
            missing.append(pending.position)
            pending = next(records, None)
        _flush_missing(missing, report)
        last_position = position
        if file_for(position, state.records_per_file) != path:
            report.add(Mismatch("misplaced", "this position belongs in another file", path,
                                number, position))  # fmt: skip
        if pending is None or pending.position != position:
            report.add(
                Mismatch("extra", "the journal has no record at this position", path, number,
                         position)
            )  # fmt: skip
            continue
        rendered = render(pending)
        reason = difference(raw, rendered)
        if reason is not None:
            if unredacted(raw, pending, rendered):
                report.add(
                    Mismatch(
                        "unredacted",
                        "still holds memory text that `ferrex journal compact` purged from "
                        "the journal; regenerate the export with `ferrex export git --rewrite`",
                        path,
                        number,
                        position,
                    )
                )
            else:
                report.add(Mismatch("changed", reason, path, number, position))
        report.checked += 1
        assert pending.hash is not None
        last_hash = pending.hash.hex()
        pending = next(records, None)
    while pending is not None and pending.position <= state.position:
        missing.append(pending.position)
        pending = next(records, None)
    _flush_missing(missing, report)
    if last_position != state.position:
        report.add(
            Mismatch(
                "state",
                f"{STATE_FILE} says the export ends at position {state.position}, but its "
                f"records end at {last_position or 'no position: there are none'}",
                STATE_FILE,
            )
        )
    elif last_hash is not None and last_hash != state.hash:
        report.add(
            Mismatch(
                "state",
                f"{STATE_FILE} names hash {state.hash[:16]}… for position {state.position}, "
                f"the journal's record there has {last_hash[:16]}…",
                STATE_FILE,
            )
        )
    for path in source.dirty():
        report.add(Mismatch("uncommitted", "changed in the work tree, not committed", path))
    return report


def _position_of(raw: bytes) -> int | None:
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    position = value.get("position") if isinstance(value, dict) else None
    return position if isinstance(position, int) and position > 0 else None


def _flush_missing(missing: list[int], report: AgainstReport) -> None:
    if not missing:
        return
    start = prev = missing[0]
    for position in [*missing[1:], None]:
        if position is not None and position == prev + 1:
            prev = position
            continue
        shown = f"position {start}" if start == prev else f"positions {start}..{prev}"
        report.add(Mismatch("missing", f"{shown} of the journal are not in the export",
                            position=start))  # fmt: skip
        if position is not None:
            start = prev = position
    missing.clear()


class _ExportFiles:
    """The files of an export: from a directory (work tree or copy), or from a bare
    repository's HEAD."""

    def __init__(self, directory: Path, repo: Repo | None, commit: str | None) -> None:
        self.directory = directory
        self.repo = repo
        self.commit = commit

    @classmethod
    def at(cls, directory: Path) -> _ExportFiles:
        if not directory.is_dir():
            raise UsageError(f"{directory} is not a directory", code="export_target")
        repo = find_repo(directory)
        if (directory / STATE_FILE).is_file():
            return cls(directory, repo, None)
        if repo is not None and repo.work_tree is None:
            commit = repo.head_commit()
            if commit is not None:
                return cls(directory, repo, commit)
        raise _not_an_export(directory)

    def read(self, path: str) -> bytes | None:
        if self.commit is not None:
            assert self.repo is not None
            return self.repo.read(self.commit, path)
        file = self.directory / path
        return file.read_bytes() if file.is_file() else None

    def names(self) -> list[str]:
        if self.commit is not None:
            assert self.repo is not None
            out = self.repo.git("ls-tree", "-r", "-z", "--name-only", self.commit, RECORDS_DIR)
            return sorted(n.decode() for n in out.split(b"\0") if n)
        folder = self.directory / RECORDS_DIR
        if not folder.is_dir():
            return []
        return sorted(f"{RECORDS_DIR}/{p.name}" for p in folder.iterdir())

    def lines(self, per_file: int, report: AgainstReport) -> Iterator[tuple[str, int, bytes]]:
        """(file, line number, line) of every record line, files in position order."""
        ranged: list[tuple[int, str]] = []
        for name in self.names():
            span = file_range(name)
            if span is None or span[1] - span[0] + 1 != per_file or (span[0] - 1) % per_file:
                report.add(Mismatch("unexpected_file", "not a records file of this export", name))
                continue
            ranged.append((span[0], name))
        for _, name in sorted(ranged):
            data = self.read(name) or b""
            for number, raw in enumerate(data.split(b"\n"), start=1):
                if raw:
                    yield name, number, raw

    def dirty(self) -> list[str]:
        if self.commit is not None or self.repo is None:
            return []
        return self.repo.dirty()
