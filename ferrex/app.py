"""The composition root: resolves the data directory and opens what a command needs.

Both the MCP server and the CLI go through here; neither opens files, models or stores
itself. Everything is opened lazily so that start-up stays fast.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ferrex.errors import UsageError, from_journal_error
from journal import Journal, JournalError

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


@dataclass
class App:
    """Everything a command can use, opened on first use and closed by :meth:`close`."""

    home: Path
    config_file: Path | None = None
    qdrant_url: str | None = None
    _journal: Journal | None = field(default=None, repr=False)

    @property
    def journal_dir(self) -> Path:
        return self.home / "journal"

    def journal(self) -> Journal:
        if self._journal is None:
            try:
                self._journal = Journal.open(self.journal_dir)
            except JournalError as exc:
                raise from_journal_error(exc) from exc
        return self._journal

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
