"""Idempotency keys of the write API (``Idempotency-Key``; see :mod:`ferrex.server.dashboard.api`).

A write sent again with the same key by the same principal gets the first answer and is not
run again; the same key with another body is refused (``idempotency_key_reused``). The
serving process keeps the keys (:class:`IdempotencyKeys`: :data:`KEY_SECONDS`, at most
:data:`KEY_COUNT` per principal) in memory and in ``<home>/run/api-idempotency.jsonl``
(:data:`KEY_FILE`), so a retry after a restart is answered too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ferrex.errors import KeyReused
from ferrex.server.dashboard.owned import PerOwner
from journal.files import make_private_dir, open_private, replace_durably

log = logging.getLogger("ferrex.api")

#: How long an idempotency key is remembered, how many one principal (the operator, or one
#: agent) keeps at most, and how many all principals keep at most.
KEY_SECONDS = 24 * 3600
KEY_COUNT = 10_000
KEY_TOTAL = 50_000
#: Where the kept answers of idempotency keys live, under the data directory.
KEY_FILE = Path("run") / "api-idempotency.jsonl"
#: The longest idempotency key taken.
MAX_KEY = 200
#: Tests only: when this environment variable is "1", the serving process kills itself
#: (SIGKILL) after a keyed write is done and before its key is saved, as a crash would.
KILL_BEFORE_KEY_SAVED = "FERREX_TEST_KILL_BEFORE_KEY_SAVED"

Answer = tuple[int, dict[str, Any]]


@dataclass
class _Entry:
    fingerprint: str
    expires: float  # wall-clock seconds (kept entries outlive the process)
    principal: str  # a hash of who sent it: its keys are counted against its own cap (owner)
    done: threading.Event = field(default_factory=threading.Event)
    answer: Answer | None = None


class IdempotencyKeys:
    """(principal, key) → the first answer of a write, bounded in time and count.

    Each principal keeps at most :attr:`count` keys (its oldest dropped first), so another
    principal's many keyed requests never push out its keys; beyond :attr:`total` in all,
    the oldest key of the principal holding the most is dropped.

    With ``path`` (``<home>/run/api-idempotency.jsonl``, mode 0600) every kept answer is also
    appended there (fsynced before the answer is sent) and read back at start, so a retry
    after a restart is still answered from it. The file holds a hash of principal and key,
    the request's fingerprint, the expiry and the answer (ids, entity names, error codes: a
    write's answer, never a memory's text); it is rewritten without the expired entries when
    it has grown to twice the keys kept. If it cannot be written (a read-only home),
    the keys stay in memory only.
    """

    def __init__(
        self,
        seconds: float = KEY_SECONDS,
        count: int = KEY_COUNT,
        path: Path | None = None,
        total: int = KEY_TOTAL,
    ) -> None:
        self._lock = threading.Lock()
        self._file_lock = threading.Lock()
        self.seconds = seconds
        self.count = count
        self.total = max(total, count)
        self._entries = PerOwner[_Entry](self.count, self.total)  # by name, oldest first
        self.path = path
        self._lines = 0
        if path is not None:
            self._load(path)

    def __len__(self) -> int:
        return len(self._entries)

    def run(
        self, principal: str, key: str, fingerprint: str, work: Callable[[], Answer]
    ) -> tuple[Answer, bool]:
        """The answer for this key (and whether it is a replay of an earlier one): ``work``
        runs only if no request with the key ran before or is running now."""
        name = hashlib.sha256(f"{principal}\0{key}".encode()).hexdigest()
        who = hashlib.sha256(f"principal\0{principal}".encode()).hexdigest()[:32]
        while True:
            entry, mine = self._claim(name, who, fingerprint)
            if mine:
                break
            entry.done.wait()
            if entry.answer is not None:
                return entry.answer, True
            # The first attempt failed in a way worth retrying (5xx): try it ourselves.
        answer: Answer | None = None
        try:
            answer = work()
            if os.environ.get(KILL_BEFORE_KEY_SAVED) == "1":
                os.kill(os.getpid(), signal.SIGKILL)  # tests only: the write done, no key kept
            return answer, False
        finally:
            kept = answer is not None and answer[0] < 500
            with self._lock:
                if kept:
                    entry.answer = answer
                elif self._entries.get(name) is entry:
                    self._entries.drop(name)
            if kept:
                self._append(name, entry)
            entry.done.set()

    def _claim(self, name: str, who: str, fingerprint: str) -> tuple[_Entry, bool]:
        now = time.time()
        with self._lock:
            self._expire(now)
            entry = self._entries.get(name)
            if entry is not None:
                if entry.fingerprint != fingerprint:
                    raise KeyReused(
                        "this Idempotency-Key was already used for a different request",
                        hint="use a new key for each new write; reuse a key only to retry "
                        "the very same request",
                    )
                return entry, False
            entry = _Entry(fingerprint, now + self.seconds, who)
            self._entries.put(name, who, entry)
            return entry, True

    def _expire(self, now: float) -> None:
        while self._entries:
            name, oldest = next(self._entries.items())
            if oldest.expires > now:
                break
            self._entries.drop(name)

    # -- the file ---------------------------------------------------------------------------

    def _load(self, path: Path) -> None:
        if not path.exists():
            return  # made by the first kept answer
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self._give_up(exc)
            return
        now = time.time()
        for line in text.splitlines():
            try:
                raw = json.loads(line)
                name, fingerprint = str(raw["n"]), str(raw["f"])
                expires, status, doc = float(raw["e"]), int(raw["s"]), dict(raw["a"])
                who = str(raw.get("p", ""))  # "": a line written before keys had owners
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line, or not ours: skipped
            if expires <= now:
                continue
            entry = _Entry(fingerprint, expires, who, answer=(status, doc))
            entry.done.set()
            self._entries.put(name, who, entry)
        self._rewrite()

    def _append(self, name: str, entry: _Entry) -> None:
        assert entry.answer is not None
        line = _line(name, entry)
        with self._file_lock:
            if self.path is None:
                return
            try:
                make_private_dir(self.path.parent)
                fd = open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                try:
                    os.write(fd, line)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                self._give_up(exc)
                return
            self._lines += 1
        if self._lines >= max(2 * len(self._entries), self.count):
            self._rewrite()

    def _rewrite(self) -> None:
        """The file again with only the entries kept now."""
        with self._file_lock:
            if self.path is None:
                return
            with self._lock:
                self._expire(time.time())
                kept = [(n, e) for n, e in self._entries.items() if e.answer is not None]
            try:
                make_private_dir(self.path.parent)
                replace_durably(self.path, b"".join(_line(n, e) for n, e in kept))
            except OSError as exc:
                self._give_up(exc)
                return
            self._lines = len(kept)

    def _give_up(self, exc: Exception) -> None:
        log.warning("idempotency keys stay in memory only: %s cannot be written (%s)",
                    self.path, exc)  # fmt: skip
        self.path = None


def _line(name: str, entry: _Entry) -> bytes:
    assert entry.answer is not None
    status, doc = entry.answer
    raw = {"n": name, "p": entry.principal, "f": entry.fingerprint, "e": entry.expires,
           "s": status, "a": doc}  # fmt: skip
    return (json.dumps(raw, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
