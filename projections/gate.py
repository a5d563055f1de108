"""A readers-writer gate: many reads at once, or one apply, never both.

The projections hold one: every apply (``Projections.catch_up``) passes it exclusively, every
read (``Projections.reading``) shares it, so a read sees the read model and the vectors at
the same journal position and never half of a record. Writers are preferred (a waiting
apply holds back new reads), so a stream of reads cannot starve the writer; an apply is a few
milliseconds, the rest of a write (deciding, embedding, the journal append) runs beside the
reads.

Both sides are re-entrant in the thread that holds them; a thread that shares the gate and
asks for it exclusively would wait for itself forever, so that raises instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class GateMisuse(RuntimeError):
    """A thread that shares the gate asked for it exclusively (it would deadlock)."""


class Gate:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer: int | None = None  # thread ident
        self._writer_depth = 0
        self._waiting_writers = 0
        self._mine = threading.local()  # this thread's shared depth

    def held_here(self) -> bool:
        """Whether this thread is inside the gate (either side)."""
        return bool(self._shared_depth()) or self._writer == threading.get_ident()

    def writers_waiting(self) -> int:
        """How many applies are waiting for the reads inside to leave."""
        with self._cond:
            return self._waiting_writers

    def _shared_depth(self) -> int:
        return int(getattr(self._mine, "depth", 0))

    @contextmanager
    def shared(self) -> Iterator[None]:
        me = threading.get_ident()
        depth = self._shared_depth()
        if depth or self._writer == me:  # already inside: nothing more to wait for
            self._mine.depth = depth + 1
            try:
                yield
            finally:
                self._mine.depth = depth
            return
        with self._cond:
            while self._writer is not None or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        self._mine.depth = 1
        try:
            yield
        finally:
            self._mine.depth = 0
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._shared_depth():
            raise GateMisuse("a read asked to apply records; apply before reading")
        with self._cond:
            if self._writer == me:
                self._writer_depth += 1
            else:
                self._waiting_writers += 1
                try:
                    while self._writer is not None or self._readers:
                        self._cond.wait()
                finally:
                    self._waiting_writers -= 1
                self._writer, self._writer_depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._writer_depth -= 1
                if not self._writer_depth:
                    self._writer = None
                    self._cond.notify_all()
