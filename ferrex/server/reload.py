"""A running server follows its configuration file (watchfiles).

When ``ferrex.toml`` (or the ``--config`` file) changes, it is read again. Keys that can
change on the fly (thresholds, limits, staleness, budget, default namespace, agent id) take
effect for the next call; keys that choose models, stores, the journal layout or the
predicate rules (:data:`~ferrex.config.RESTART_KEYS`) keep their running value, and the
server says on stderr which ones wait for a restart. A file that does not parse, or a value
of the wrong type, is reported and changes nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import watchfiles

from ferrex.config import RESTART_KEYS, Config
from ferrex.errors import FerrexError
from journal.files import make_private_dir

log = logging.getLogger("ferrex")


@dataclass(frozen=True)
class Reload:
    applied: list[str]
    """Keys whose new value is in effect."""
    pending: list[str]
    """Keys that changed in the file but wait for a restart."""


class ConfigWatcher:
    """Watches one configuration file and hands each valid change to ``apply``."""

    def __init__(
        self,
        path: Path,
        current: Config,
        load: Callable[[], Config],
        apply: Callable[[Config], None],
    ) -> None:
        self.path = path.absolute()
        self.current = current
        self.load = load
        self.apply = apply
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="ferrex-config", daemon=True)
        self._thread.start()

    def stop(self, *, join: bool = True) -> None:
        """Stop watching; ``join=False`` does not wait for the thread to notice (it is a
        daemon thread, and a process about to exit need not wait for it)."""
        self._stop.set()
        if join and self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        folder = self.path.parent
        make_private_dir(folder)  # the home, when the configuration lives there
        name = self.path.name
        try:
            for changes in watchfiles.watch(
                folder,
                watch_filter=lambda _change, changed: Path(changed).name == name,
                debounce=300,
                stop_event=self._stop,
                recursive=False,
                raise_interrupt=False,
            ):
                if changes:
                    self.check()
        except Exception:  # the server keeps serving on the configuration it has
            log.exception("stopped watching %s", self.path)

    def check(self) -> Reload:
        """Read the file again and apply what can be applied; returns what happened."""
        try:
            new = self.load()
        except FerrexError as exc:
            log.error("%s: %s; keeping the running configuration", self.path, exc)
            return Reload([], [])
        changed = self.current.changed(new)
        pending = [k for k in changed if k in RESTART_KEYS]
        applied = [k for k in changed if k not in RESTART_KEYS]
        if pending:
            log.warning(
                "%s changed %s; restart the server for %s to take effect",
                self.path.name, ", ".join(pending), "it" if len(pending) == 1 else "them",
            )  # fmt: skip
        if applied:
            log.warning("reloaded %s: %s", self.path.name, ", ".join(applied))
            merged = new.keeping(self.current, pending)
            self.apply(merged)
            self.current = merged
        return Reload(applied, pending)
