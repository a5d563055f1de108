"""The flush thread: vector writes made durable a moment after they were applied.

A store used to flush Qdrant itself when it came a second or more after the last flush: an
agent's store, which comes seconds apart, then waited for the flush every time (10 ms at the
median at 10k memories, up to 120). So :meth:`FlushTimer.request` arranges one flush
:data:`SYNC_SECONDS` later on a thread of its own (``ferrex-vector-sync``), and no command
waits for it; :class:`~projections.replay.Projections` says what the flush does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("ferrex.projections")

SYNC_SECONDS = 1.0
"""Incremental vector writes are made durable (and the Qdrant checkpoint advanced) this long
after the first of them, on a thread of their own (so no command waits for Qdrant's flush),
at close, and before a reconcile. Until then they are served from memory, and a crash
re-applies them from the durable checkpoint (vector writes are idempotent)."""

THREAD_NAME = "ferrex-vector-sync"


class FlushTimer:
    """Runs ``flush`` on a thread of its own :data:`SYNC_SECONDS` after :meth:`request`,
    once however many requests come meanwhile; nothing after :meth:`close`. A failing
    flush is logged: the journal holds the writes (the next flush, or a restart)."""

    def __init__(self, flush: Callable[[], None]) -> None:
        self._flush = flush
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pending(self) -> threading.Timer | None:
        """The flush arranged and not begun, if any."""
        return self._timer

    def request(self) -> None:
        """Have ``flush`` run :data:`SYNC_SECONDS` from now, unless that is arranged already."""
        with self._lock:
            if self._timer is not None or self._closed:
                return
            timer = threading.Timer(SYNC_SECONDS, self._due)
            timer.name, timer.daemon = THREAD_NAME, True
            self._timer = timer
            timer.start()

    def _due(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self._flush()
        except Exception as exc:  # the journal holds them: the next sync, or a restart
            log.warning("making the vector writes durable failed: %s", exc, exc_info=True)

    def close(self) -> None:
        """Cancel the flush arranged and refuse new ones."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
