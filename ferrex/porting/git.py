"""Git plumbing for the audit export: running git deterministically, a repository, fast-import.

Every git command runs with the user's and the system's configuration shut out (no
autocrlf, hooks paths or default branch of theirs), so what ferrex writes depends only on
what it is given. A missing git and a failing git command become
:class:`~ferrex.errors.BackendUnavailable` with codes ``git_unavailable`` and ``git_failed``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ferrex.errors import BackendUnavailable, GitFailure, GitUnavailable


def git_env() -> dict[str, str]:
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
        return run_git([*cmd, *args], data=data, check=check, cwd=self.root)

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


class GitFailed(Exception):
    def __init__(self, cmd: Sequence[str], code: int, stderr: bytes) -> None:
        super().__init__(f"{' '.join(cmd[:3])}: exit {code}")
        self.cmd = list(cmd)
        self.code = code
        self.stderr = stderr.decode(errors="replace").strip()


def run_git(cmd: Sequence[str], *, data: bytes | None, check: bool, cwd: Path) -> bytes:
    try:
        done = subprocess.run(
            list(cmd), input=data, capture_output=True, check=False, env=git_env(), cwd=cwd
        )
    except FileNotFoundError as exc:
        raise git_missing() from exc
    if check and done.returncode != 0:
        raise GitFailed(cmd, done.returncode, done.stderr)
    return done.stdout


def git_missing() -> BackendUnavailable:
    return GitUnavailable(
        "git is not installed (the audit export is a git repository)",
        hint="install git, or use `ferrex export jsonl` for a plain dump",
    )


def git_error(exc: GitFailed, what: str) -> BackendUnavailable:
    return GitFailure(
        f"git failed while {what}: {exc.stderr or exc}",
        hint="run the export again: it resumes from what the export's branch holds (the "
        "branch moves only once every new object is written)",
    )


def find_repo(directory: Path) -> Repo | None:
    """The repository rooted exactly at ``directory`` (never one of its parents), or None."""
    env = git_env()
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
        raise git_missing() from exc
    if done.returncode != 0:
        return None
    git_dir, bare = done.stdout.decode().split("\n")[:2]
    return Repo(directory, Path(git_dir), None if bare == "true" else directory)


def init_repo(directory: Path, branch: str) -> Repo:
    """A new repository with a work tree at ``directory``, on ``branch``."""
    directory.mkdir(parents=True, exist_ok=True)
    run_git(["git", "init", "-q", "-b", branch, str(directory)], data=None, check=True,
         cwd=directory)  # fmt: skip
    return Repo(directory, directory / ".git", directory)


def on_branch(repo: Repo) -> bool:
    return bool(repo.git("symbolic-ref", "-q", "HEAD", check=False).strip())


class FastImportStream:
    """Writes one ``git fast-import`` stream: blobs, and commits onto ``ref`` by ``author``."""

    def __init__(self, out: IO[bytes], *, ref: str, author: str) -> None:
        self.out = out
        self.ref = ref.encode()
        self.author = author.encode()
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
        self.out.write(b"commit %s\nmark :%d\n" % (self.ref, mark))
        for role in (b"author", b"committer"):
            self.out.write(b"%s %s %d +0000\n" % (role, self.author, when))
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
