"""The peer's side of the hub (:mod:`ferrex.server.hub`): calls sent to the owner.

A process that does not own the stores sends each call over a connection to the owner's
port (:class:`Remote`), and rebuilds an error the owner reports as the same ferrex error
(:func:`error_from_document`). :class:`OwnerGone` tells the hub to elect again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from ferrex.errors import (
    BackendUnavailable,
    FerrexError,
    JournalFailure,
    ModelUnavailable,
    Refused,
    UsageError,
)
from ferrex.ownership import Endpoint
from ferrex.server.caller import Caller
from ferrex.server.frames import recv_frame, send_frame, versions
from ferrex.server.hub_port import PortLimits
from ferrex.server.tool_calls import ToolRequest, encode

_IDLE_CONNECTIONS = 8  # a peer keeps this many connections to the owner open between calls
_KINDS: dict[str, type[FerrexError]] = {
    cls.__name__: cls
    for cls in (FerrexError, UsageError, JournalFailure, ModelUnavailable, BackendUnavailable,
                Refused)
}  # fmt: skip


class OwnerGone(Exception):
    """The owner closed the connection or cannot be reached: elect again."""


def error_from_document(doc: Mapping[str, Any]) -> FerrexError:
    """Rebuild the ferrex error an owner reported (same class, code, message, hint)."""
    fields = dict(doc)
    cls = _KINDS.get(str(fields.pop("kind", "")), FerrexError)
    code = str(fields.pop("code", "error"))
    message = str(fields.pop("message", "the memory server failed"))
    hint = fields.pop("hint", None)
    return cls(message, hint=hint if isinstance(hint, str) else None, code=code, details=fields)


class Remote:
    """Connections to the owner: one per call in progress (calls from several threads of
    this process run side by side at the owner), up to :data:`_IDLE_CONNECTIONS` kept open
    for the next calls.

    The owner closes a connection idle for its ``idle_seconds`` (told in its answer to the
    hello), or to make room; neither may fail a call. So a kept connection is closed here
    once idle for half that time, one the owner has closed is noticed (a peek) before it is
    used, and a call whose kept connection turns out closed (the owner's close crossing the
    call on the wire) is sent once more on a new connection. The owner's idle timeout and
    its closes for room come only between calls, so that call had not run; a close at a
    hand-over may come after it ran, and then sending it again is what any call cut off
    gets (see the module docstring). A new connection that fails is the owner gone:
    :class:`OwnerGone`, and the hub elects again.
    """

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._keep_for = PortLimits.idle_seconds / 2  # until the owner's hello answer says
        self._lock = threading.Lock()
        self._closed = False
        self._idle: list[tuple[socket.socket, float]] = []
        self._idle.append((self._connect(), time.monotonic()))  # the owner is there now

    def _connect(self) -> socket.socket:
        """A new connection that has said hello; raises OwnerGone if the owner cannot be
        reached, or the owner's refusal (a wrong token, ``version_mismatch``)."""
        try:
            sock = socket.create_connection(("127.0.0.1", self.endpoint.port), timeout=self.timeout)
        except OSError as exc:
            raise OwnerGone(str(exc)) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            send_frame(sock, {"token": self.endpoint.token, **versions()})
            answer = recv_frame(sock)
        except (OSError, ValueError) as exc:
            sock.close()
            raise OwnerGone(f"no answer to the hello: {exc}") from exc
        if answer is None:
            sock.close()
            raise OwnerGone("the owner closed the connection before answering its hello")
        ok = answer.get("ok")
        if not isinstance(ok, Mapping):
            sock.close()
            error = answer.get("error")
            raise error_from_document(error if isinstance(error, Mapping) else {})
        idle = ok.get("idle_seconds")
        if isinstance(idle, int | float) and idle > 0:
            self._keep_for = float(idle) / 2
        return sock

    def _kept(self) -> socket.socket | None:
        """A kept connection still open and not near the owner's idle timeout, or None."""
        now = time.monotonic()
        while True:
            with self._lock:
                if self._closed:
                    raise OwnerGone("the connection to the owner was closed")
                if not self._idle:
                    return None
                sock, since = self._idle.pop()
            if now - since < self._keep_for and _still_open(sock):
                return sock
            sock.close()

    def call(self, call: ToolRequest, caller: Caller) -> dict[str, Any]:
        request = {"tool": call.tool, "args": encode(call), "caller": caller.as_dict()}
        sock = self._kept()
        kept = sock is not None
        while True:
            if sock is None:
                sock = self._connect()
            try:
                send_frame(sock, request)
                reply = recv_frame(sock)
            except TimeoutError as exc:  # the call itself ran too long: not sent again
                sock.close()
                raise OwnerGone(str(exc)) from exc
            except (OSError, ValueError) as exc:
                sock.close()
                if kept:
                    kept, sock = False, None
                    continue
                raise OwnerGone(str(exc)) from exc
            if reply is None:
                sock.close()
                if kept:
                    kept, sock = False, None
                    continue
                raise OwnerGone("the owner closed the connection")
            break
        with self._lock:
            if self._closed or len(self._idle) >= _IDLE_CONNECTIONS:
                sock.close()
            else:
                self._idle.append((sock, time.monotonic()))
        if "ok" in reply and isinstance(reply["ok"], dict):
            return reply["ok"]
        error = reply.get("error")
        raise error_from_document(error if isinstance(error, Mapping) else {})

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sock, _ in idle:
            with contextlib.suppress(OSError):
                sock.close()


def _still_open(sock: socket.socket) -> bool:
    """Whether the other end of an idle connection has not closed it (nothing is waiting to
    be read on a connection between calls: an end of stream or an error means closed).
    Non-blocking for the moment: on a socket with a timeout, Python polls for that long
    before it reads, whatever the flags."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(timeout)
    return False  # an end of stream, or bytes no call asked for
