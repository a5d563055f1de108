"""``GET /api/v1/changes``: the change stream, server-sent events of journal positions and
the ids of the memories each record changed, only those the caller may see.

Each event is one journal record (``event: change``, ``id:`` its position, ``data:`` a JSON
``{"position", "recorded_at", "memories": [{"id", "change"}]}``, ``change`` one of
``stored``, ``superseded``, ``forgotten``, ``confirmed``, ``marked``, ``consolidated``,
``unfolded``). What a caller may see is the read rules' (:mod:`ferrex.read.seen`), read by
the owner as the ``changes`` view of :mod:`ferrex.server.dashboard.reads`: a memory it sees
now, or one it could see before a forget took it; records with none are not sent. The
stream carries ids, never text: a client reads a memory it is told of through the other
routes, which apply the same rules again.

Where it starts: after the position of ``Last-Event-ID`` (what an EventSource sends when it
reconnects), else of ``?after=``, else at the journal's head now (only what comes next).
A stream that opens with nothing to send sends a ``heartbeat`` at once, with the position it
starts after (as its ``id``): a client that loses the connection before the first change
resumes from there, so nothing written while it was away is skipped. When nothing has changed
for :data:`HEARTBEAT_SECONDS` a ``heartbeat`` event carries the position read so far, so a
client that reconnects does not read the quiet records again and a proxy does not close a
silent connection. ``?until_idle=true`` ends the
stream once it has caught up (a client that polls).

Caps: each stream is an HTTP connection, so it counts against ``server.max_connections``
like any other (:mod:`ferrex.server.http_limits`); besides, one principal (the operator, or
one agent) holds at most ``server.max_streams_per_principal`` at once, and all streams
together at most half of ``server.max_connections``, so streams never crowd out requests.
Beyond either, ``too_many_streams`` (429, ``Retry-After``).

The serving process reads by polling the owner through the hub every
:data:`POLL_SECONDS` (each read is one call, as a tool call is), so it works the same in a
process that owns the stores and in one that does not.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ferrex.errors import FerrexError, TooManyStreams, UsageError
from ferrex.server.dashboard.api import INTERNAL, principal_of
from ferrex.server.dashboard.edge import HEADERS, Gate, error_body, error_headers, status_of
from ferrex.server.dashboard.params import CHANGES_QUERY, check_query
from ferrex.server.service import Caller
from ferrex.server.tool_calls import DashboardRead

#: Seconds between two reads of the journal while a stream has caught up.
POLL_SECONDS = 0.5
#: Seconds of quiet before a heartbeat event.
HEARTBEAT_SECONDS = 15.0
#: What a client's EventSource waits before it reconnects (milliseconds).
RETRY_MS = 2000
#: The default cap of streams per principal (``server.max_streams_per_principal``).
STREAMS_PER_PRINCIPAL = 4

#: Set when the serving process is told to stop (:func:`stop_streams`): each open stream
#: ends at its next poll, so the server's graceful shutdown does not wait out its deadline
#: on them (and cancel them with a traceback). No ``error`` event: the server is not failing,
#: and a client resumes from its last position once it is back.
_STOPPING = threading.Event()


def stop_streams() -> None:
    """Tell every open change stream of this process to end (the server is stopping)."""
    _STOPPING.set()


class Streams:
    """The open change streams, counted per principal and in all."""

    def __init__(self, per_principal: int, total: int) -> None:
        self.per_principal = per_principal
        self.total = max(total, 1)
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}

    def claim(self, principal: str) -> None:
        with self._lock:
            mine = self._open.get(principal, 0)
            if mine >= self.per_principal:
                raise TooManyStreams(
                    f"this token already holds {mine} change streams, the most one may",
                    hint="close one (or reuse it) before opening another; "
                    "server.max_streams_per_principal sets the cap",
                )
            if sum(self._open.values()) >= self.total:
                raise TooManyStreams(
                    f"the server holds {self.total} change streams, the most it serves",
                    hint="retry later; the cap is half of server.max_connections",
                )
            self._open[principal] = mine + 1

    def release(self, principal: str) -> None:
        """One stream of ``principal`` closed (call once per :meth:`claim`)."""
        with self._lock:
            left = self._open.get(principal, 0) - 1
            if left > 0:
                self._open[principal] = left
            else:
                self._open.pop(principal, None)

    def count(self) -> int:
        with self._lock:
            return sum(self._open.values())


class ChangeStream:
    """The endpoint of ``GET /api/v1/changes`` over a dashboard's checks and hub."""

    def __init__(self, dashboard: Gate, streams: Streams) -> None:
        self.dashboard = dashboard
        self.streams = streams

    def _read(self, caller: Caller, after: int | None) -> dict[str, Any]:
        query = {"view": "changes"} if after is None else {"view": "changes", "after": after}
        return self.dashboard.hub.call(DashboardRead(query=query), caller)

    async def endpoint(self, request: Request) -> Response:
        try:
            caller = self.dashboard.caller(request)
            check_query(request, CHANGES_QUERY)
            after = _start(request)
            principal = principal_of(caller)
            self.streams.claim(principal)
        except FerrexError as exc:
            return _refusal(exc)
        try:
            # The first read before the answer: a refusal (the owner away) is a status code.
            first = await run_in_threadpool(self._read, caller, after)
        except Exception as exc:
            self.streams.release(principal)
            return _refusal(exc if isinstance(exc, FerrexError) else INTERNAL)
        until_idle = request.query_params.get("until_idle") == "true"
        headers = {**HEADERS, "X-Accel-Buffering": "no"}
        slot = _Slot(self.streams, principal)
        events = self._events(caller, slot, first, until_idle)
        # A stream cancelled before its first event never runs its finally: the slot is
        # also released when the generator is collected.
        weakref.finalize(events, slot.release)
        return StreamingResponse(events, media_type="text/event-stream", headers=headers)

    async def _events(
        self, caller: Caller, slot: _Slot, doc: dict[str, Any], until_idle: bool
    ) -> AsyncIterator[str]:
        try:
            yield f"retry: {RETRY_MS}\n\n"
            if not doc["changes"] and not until_idle:
                # Where it starts, at once: a client that reconnects before the first change
                # resumes from here, not from the head then (which would skip what was
                # written while it was away).
                position = int(doc["position"])
                yield _event("heartbeat", position, {"position": position})
            quiet_since = time.monotonic()
            while True:
                for change in doc["changes"]:
                    yield _event("change", change["position"], change)
                    quiet_since = time.monotonic()
                position = int(doc["position"])
                if not doc["more"]:
                    if until_idle:
                        yield _event("heartbeat", position, {"position": position})
                        return
                    if time.monotonic() - quiet_since >= HEARTBEAT_SECONDS:
                        yield _event("heartbeat", position, {"position": position})
                        quiet_since = time.monotonic()
                    await asyncio.sleep(POLL_SECONDS)
                if _STOPPING.is_set():
                    return  # ended as a lost connection is: the client resumes when back
                try:
                    doc = await run_in_threadpool(self._read, caller, position)
                except FerrexError as exc:
                    yield _event("error", position, {"error": error_body(exc)})
                    return
        finally:
            slot.release()


class _Slot:
    """One claimed stream, released once however often asked."""

    def __init__(self, streams: Streams, principal: str) -> None:
        self._streams = streams
        self._principal = principal
        self._lock = threading.Lock()
        self._held = True

    def release(self) -> None:
        with self._lock:
            held, self._held = self._held, False
        if held:
            self._streams.release(self._principal)


def _start(request: Request) -> int | None:
    """The position after which the stream starts: Last-Event-ID, else ``after``, else None
    (the head now)."""
    for name, value in (
        ("Last-Event-ID", request.headers.get("last-event-id")),
        ("after", request.query_params.get("after")),
    ):
        if value is None:
            continue
        text = value.strip()
        if not text.isdigit() or not text.isascii():
            raise UsageError(
                f"{name} must be a journal position (a whole number ≥ 0), got {value!r}",
                hint="send the id of the last event read",
            )
        return int(text)
    return None


def _event(name: str, position: int, data: dict[str, Any]) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"event: {name}\nid: {position}\ndata: {text}\n\n"


def _refusal(exc: FerrexError) -> Response:
    status = status_of(exc.code)
    return JSONResponse(
        {"error": error_body(exc)}, status_code=status, headers=error_headers(status)
    )
