"""Limits at the HTTP edge: what a client that reaches the port can hold, with or without a token.

uvicorn (on h11) waits for a request head and a body as long as a client cares to send them,
and accepts connections until the process runs out of file descriptors; then nothing works,
the journal and the owner's socket included, and every failed accept is logged with its
traceback. Here:

- a connection has ``server.header_timeout`` seconds to send a whole request head (counted
  again after each response, on a kept-alive connection) and ``server.body_timeout`` seconds
  to send the body once the head is in; past either it is closed;
- open connections are capped per client address (``server.max_connections_per_client``) and
  in all (``server.max_connections``, and never more than the descriptor limit leaves after
  ``server.descriptor_reserve``); at a cap the oldest connection still waiting for its request
  head (a slow one, or an idle kept-alive one) is closed to make room, so a flood of slow
  connections cannot keep a prompt client out; only when every connection is busy with a
  request is the new one refused;
- the accept loop takes at most :data:`ACCEPT_BATCH` connections at a time (uvicorn's
  ``backlog``), so a burst cannot overshoot the reserve before the caps act;
- :class:`RepeatFilter` lets a repeated log line through a few times a minute and counts the
  rest, so no flood of one error can fill the disk.

A request that is running (its head and body in) is never timed out: a slow recall is work.

Why a subclass of uvicorn's ``H11Protocol`` (a private class): uvicorn's own options
(``timeout_keep_alive``, ``limit_concurrency``) neither time a slow request head (0.55's
keep-alive timer starts only after a response; nothing times a new connection) nor cap
connections per client, and ``limit_concurrency`` answers 503 after accepting, so a flood of
slow connections still holds every descriptor. ``tests/e2e/test_mcp_http_limits.py`` holds
what the subclass adds.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ferrex.server.descriptors import descriptor_room, open_descriptors, raise_descriptor_limit

log = logging.getLogger("ferrex.http")

#: Connections the event loop accepts in one go (also the listen backlog).
ACCEPT_BATCH = 32
_NOTE_EVERY = 10.0  # seconds between two notes of connections closed or refused
_FEW = 100  # fewer connections than this, for the descriptor limit, is worth a warning


@dataclass(frozen=True)
class Limits:
    """The ``server.*`` keys of the HTTP edge; their defaults are the configuration's
    (:func:`from_config`), written there alone."""

    header_timeout: float
    body_timeout: float
    max_connections: int
    max_per_client: int

    @classmethod
    def from_config(cls, config: Any) -> Limits:
        """The configured limits, the total capped by what the descriptor limit leaves
        (raised to the hard limit first)."""
        raise_descriptor_limit()
        return cls(
            header_timeout=config["server.header_timeout"],
            body_timeout=config["server.body_timeout"],
            max_connections=descriptor_budget(
                config["server.max_connections"], config["server.descriptor_reserve"]
            ),
            max_per_client=config["server.max_connections_per_client"],
        )


def descriptor_budget(wanted: int, reserve: int) -> int:
    """At most ``wanted`` connections, and no more than the soft RLIMIT_NOFILE leaves after
    the descriptors open now, the reserve and one accept batch (never below 1)."""
    left = descriptor_room(reserve)
    if left is None:
        return wanted
    room = left - ACCEPT_BATCH
    if room < min(wanted, _FEW):
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        log.warning("the descriptor limit (%d, %d open) leaves room for %d HTTP connections "
                    "after a reserve of %d; raise it (ulimit -n) for more", soft,
                    open_descriptors(), max(room, 1), reserve)  # fmt: skip
    return max(1, min(wanted, room))


class Guard:
    """The open connections of one server, oldest first, in all and per client address,
    and those of them waiting for a request head (the ones that may be closed for room)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.open: OrderedDict[GuardedH11Protocol, None] = OrderedDict()
        self.by_client: dict[str, OrderedDict[GuardedH11Protocol, None]] = {}
        self.waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()
        self.waiting_by_client: dict[str, OrderedDict[GuardedH11Protocol, None]] = {}
        self.counts = {"timed_out": 0, "closed_for_room": 0, "refused": 0}
        self._noted = 0.0

    def admit(self, conn: GuardedH11Protocol) -> bool:
        """Room for ``conn`` (closing a waiting connection if a cap is reached), or False."""
        mine = self.by_client.get(conn.peer, OrderedDict())
        if len(mine) >= self.limits.max_per_client and not self._make_room(
            self.waiting_by_client.get(conn.peer)
        ):
            return self._refuse()
        if len(self.open) >= self.limits.max_connections and not self._make_room(self.waiting):
            return self._refuse()
        self.open[conn] = None
        self.by_client.setdefault(conn.peer, OrderedDict())[conn] = None
        return True

    def release(self, conn: GuardedH11Protocol) -> None:
        self.set_waiting(conn, False)
        self.open.pop(conn, None)
        mine = self.by_client.get(conn.peer)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self.by_client[conn.peer]

    def set_waiting(self, conn: GuardedH11Protocol, waiting: bool) -> None:
        mine = self.waiting_by_client.get(conn.peer)
        if waiting:
            self.waiting[conn] = None
            self.waiting_by_client.setdefault(conn.peer, OrderedDict())[conn] = None
        else:
            self.waiting.pop(conn, None)
            if mine is not None:
                mine.pop(conn, None)
                if not mine:
                    del self.waiting_by_client[conn.peer]

    def _make_room(self, waiting: OrderedDict[GuardedH11Protocol, None] | None) -> bool:
        if not waiting:
            return False
        oldest = next(iter(waiting))
        self.release(oldest)
        oldest.close_now()
        self.note("closed_for_room")
        return True

    def _refuse(self) -> bool:
        self.note("refused")
        return False

    def note(self, what: str) -> None:
        """Count a connection closed or refused; say so in the log at most every 10 s."""
        self.counts[what] += 1
        now = time.monotonic()
        if now - self._noted >= _NOTE_EVERY:
            self._noted = now
            log.warning("HTTP connections so far: %d closed for not sending a request in "
                        "time, %d closed to make room, %d refused (%d open, cap %d)",
                        self.counts["timed_out"], self.counts["closed_for_room"],
                        self.counts["refused"], len(self.open),
                        self.limits.max_connections)  # fmt: skip


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines for the request head and body, under a
    :class:`Guard`'s caps (made per server by :func:`guarded_protocol`)."""

    guard: ClassVar[Guard]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.peer = self.client[0] if self.client else ""
        self._timer: asyncio.TimerHandle | None = None
        self._phase: str | None = None
        if not self.guard.admit(self):
            self.close_now()
            return
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.release(self)
        self._cancel()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def close_now(self) -> None:
        self._cancel()
        if not self.transport.is_closing():
            self.transport.abort()  # the descriptor is freed now, not after a flush

    def _cancel(self) -> None:
        timer = getattr(self, "_timer", None)
        if timer is not None:
            timer.cancel()
            self._timer = None

    def _watch(self) -> None:
        """Arm the deadline of the phase the connection is in: waiting for a request head,
        or for the rest of a body; none while a request runs."""
        if self.transport.is_closing():
            self._cancel()
            return
        state = self.conn.their_state
        phase = "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if phase == self._phase:
            return
        self._cancel()
        self._phase = phase
        self.guard.set_waiting(self, phase == "head")
        if phase is not None:
            limits = self.guard.limits
            seconds = limits.header_timeout if phase == "head" else limits.body_timeout
            self._timer = self.loop.call_later(seconds, self._expired)

    def _expired(self) -> None:
        self._timer = None
        if not self.transport.is_closing():
            self.guard.note("timed_out")
            self.close_now()


def guarded_protocol(limits: Limits) -> type[GuardedH11Protocol]:
    """A protocol class of its own for one server (its guard is a class attribute, since
    uvicorn makes each connection's protocol from the class)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": Guard(limits)})


class RepeatFilter(logging.Filter):
    """Lets each distinct log line (logger, level, message template) through ``burst``
    times per ``window`` seconds; the first one let through after some were held back says
    how many."""

    def __init__(
        self,
        burst: int = 5,
        window: float = 60.0,
        keys: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.clock = clock
        self.burst = burst
        self.window = window
        self.keys = keys
        self._seen: OrderedDict[tuple[str, int, str], list[float]] = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg)[:200])
        now = self.clock()
        entry = self._seen.get(key)
        if entry is None or now - entry[0] >= self.window:
            held = int(entry[2]) if entry is not None else 0
            self._seen[key] = [now, 1.0, 0.0]
            self._seen.move_to_end(key)
            while len(self._seen) > self.keys:
                self._seen.popitem(last=False)
            if held:
                record.msg = f"({held} more like the next line were not logged) {record.msg}"
            return True
        if entry[1] < self.burst:
            entry[1] += 1
            return True
        entry[2] += 1
        return False


#: The loggers whose handlers get the repeat filter ("" is the root).
LOGGERS = ("", "uvicorn", "uvicorn.error", "asyncio", "ferrex", "journal", "mcp")


def filter_repeats(loggers: tuple[str, ...] = LOGGERS) -> RepeatFilter:
    """One :class:`RepeatFilter` on every handler of these loggers (the root's included)."""
    repeats = RepeatFilter()
    root = logging.getLogger()
    if not root.handlers:  # else records would reach logging's last resort, unfiltered
        fallback = logging.StreamHandler()
        fallback.setLevel(logging.WARNING)
        root.addHandler(fallback)
    for name in loggers:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, RepeatFilter) for f in handler.filters):
                handler.addFilter(repeats)
    return repeats
