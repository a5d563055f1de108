"""Verifying an audit export against the journal: ``ferrex journal verify --against DIR``.

Reads the export's files as they are in the directory (its work tree, or any copy of one; for
a bare repository, the files of HEAD), compares every record line with the journal's
record at that position and reports each difference: changed, unredacted, missing, extra,
misplaced, unreadable, unexpected files, a state file that does not match, a foreign export,
uncommitted changes. It never writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ferrex.errors import ExportTarget
from ferrex.porting.git import Repo, find_repo
from ferrex.porting.gitexport import journal_identity, not_an_export
from ferrex.porting.records import (
    RECORDS_DIR,
    STATE_FILE,
    ExportState,
    difference,
    file_for,
    file_range,
    render,
    unredacted,
)
from journal import JournalBackend

_LINE_POSITION = re.compile(rb'^\{"position":(\d+),')


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


def verify_against(journal: JournalBackend, directory: Path) -> AgainstReport:
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
            raise ExportTarget(f"{directory} is not a directory")
        repo = find_repo(directory)
        if (directory / STATE_FILE).is_file():
            return cls(directory, repo, None)
        if repo is not None and repo.work_tree is None:
            commit = repo.head_commit()
            if commit is not None:
                return cls(directory, repo, commit)
        raise not_an_export(directory)

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
