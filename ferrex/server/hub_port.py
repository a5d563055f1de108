"""The owner's side of the hub (:mod:`ferrex.server.hub`): its loopback port.

One thread (``ferrex-owner``) accepts connections and reads their hellos without blocking,
within the limits of :class:`PortLimits`; each connection that said hello is then served by
a thread of its own (``ferrex-peer``), every call through a :class:`GuardedService`, which
refuses calls once this process has started handing its stores over. The limits, the hello
and the refusals are described in the hub's docstring.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import json
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ferrex import __version__
from ferrex.errors import FerrexError, HelloRefused, UsageError, VersionMismatch
from ferrex.server.caller import Caller, error_document
from ferrex.server.descriptors import descriptor_room, raise_descriptor_limit
from ferrex.server.frames import HEADER, PROTOCOL, recv_frame, send_frame
from ferrex.server.tool_calls import ToolRequest, decode
from journal import FORMAT_VERSION

if TYPE_CHECKING:
    from ferrex.server.service import Service

log = logging.getLogger("ferrex.hub")

_ACCEPT_BATCH = 32  # connections accepted in one turn of the owner's loop (also the backlog)
_TURN = 0.05  # seconds the owner's loop waits at most (shutdown waits for it to notice)
_NOTE_EVERY = 10.0  # seconds between two log lines counting connections closed or refused
_OUT_OF_ROOM = frozenset((errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM))


class ServiceClosed(Exception):
    """This process has handed its stores over; the call must go to the next owner."""


def version_mismatch(request: Mapping[str, Any]) -> FerrexError | None:
    """The error for a request from a peer of another ferrex version or hub protocol."""
    theirs = (request.get("ferrex"), request.get("protocol"), request.get("journal"))
    if theirs == (__version__, PROTOCOL, FORMAT_VERSION):
        return None
    peer = (
        f"ferrex {theirs[0] or 'unknown'} (hub protocol {theirs[1] or 'unknown'}, journal "
        f"format {theirs[2] or 'unknown'})"
    )
    return VersionMismatch(
        f"this data directory is served by ferrex {__version__} (hub protocol {PROTOCOL}, "
        f"journal format {FORMAT_VERSION}); the calling process is {peer}",
        hint="restart every ferrex process on this data directory with the same version",
    )


class GuardedService:
    """A :class:`Service` that refuses calls once this process has started handing over."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._gate = threading.Lock()
        self._closed = False
        self._busy = 0
        self._idle = threading.Condition(self._gate)

    def call(self, request: ToolRequest, caller: Caller) -> dict[str, Any]:
        with self._gate:
            if self._closed:
                raise ServiceClosed()
            self._busy += 1
        try:
            return self.service.call(request, caller)
        finally:
            with self._gate:
                self._busy -= 1
                self._idle.notify_all()

    def close(self) -> None:
        """Refuse new calls, wait for the running ones, then close the stores."""
        with self._gate:
            self._closed = True
            while self._busy:
                self._idle.wait()
        self.service.close()


@dataclass(frozen=True)
class PortLimits:
    """What a connection to the owner's port may hold (see the module docstring); the same
    for every data directory, so no setting: a peer is another ferrex process, and these
    bound only what one that is not could do."""

    hello_bytes: int = 4096
    hello_seconds: float = 2.0
    idle_seconds: float = 300.0
    frame_seconds: float = 60.0
    max_waiting: int = 64
    max_connections: int = 256
    descriptor_reserve: int = 256

    def connection_cap(self) -> int:
        """``max_connections``, or fewer if the descriptor limit (raised to the hard limit
        first) leaves less after the reserve and an accept batch; at least ``max_waiting``
        + 8, so that peers are served however low the limit is (the accept loop's back-off
        then keeps the process alive)."""
        raise_descriptor_limit()
        room = descriptor_room(self.descriptor_reserve)
        if room is None:
            return self.max_connections
        floor = self.max_waiting + 8
        if room - _ACCEPT_BATCH < min(self.max_connections, floor):
            log.warning("the descriptor limit leaves room for %d connections to the owner's "
                        "port after a reserve of %d; raise it (ulimit -n)",
                        max(room - _ACCEPT_BATCH, 0), self.descriptor_reserve)  # fmt: skip
        return max(floor, min(self.max_connections, room - _ACCEPT_BATCH))


@dataclass
class _Waiting:
    """A connection that has not said hello yet: when it must have, what it sent so far."""

    deadline: float
    received: bytearray


class Listener:
    """The owner's loopback port: one thread (``ferrex-owner``) accepts connections and reads
    their hellos without blocking; each connection that said hello is then served by a
    thread of its own (``ferrex-peer``) until it closes, idles out or the owner hands over."""

    def __init__(self, service: GuardedService, token: str, limits: PortLimits) -> None:
        self.service = service
        self.token = token
        self.limits = limits
        self.cap = limits.connection_cap()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._socket.bind(("127.0.0.1", 0))
            self._socket.listen(_ACCEPT_BATCH)
            self._socket.setblocking(False)
            self._selector = selectors.DefaultSelector()
            self._selector.register(self._socket, selectors.EVENT_READ, None)
        except BaseException:
            self._socket.close()
            raise
        self.port: int = self._socket.getsockname()[1]
        self._waiting: OrderedDict[socket.socket, _Waiting] = OrderedDict()  # loop only
        self._served: OrderedDict[socket.socket, bool] = OrderedDict()  # -> idle; _lock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._accept_after = 0.0  # a back-off after an accept failed for want of room
        self._backoff = 0.0
        self.counts = {"refused_hello": 0, "hello_timed_out": 0, "closed_for_room": 0,
                       "refused": 0, "idle_closed": 0, "accept_failed": 0}  # fmt: skip
        self._noted = 0.0
        self._thread = threading.Thread(target=self._run, name="ferrex-owner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # -- the loop: accepts and hellos ------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._turn()
            except Exception:  # the port must outlive any one connection's surprise
                log.exception("the owner's port loop failed a turn; going on")
                self._stop.wait(_TURN)
        for sock in list(self._waiting):
            self._drop_waiting(sock)

    def _turn(self) -> None:
        now = time.monotonic()
        if self._accept_after and now >= self._accept_after:
            self._accept_after = 0.0
            self._selector.register(self._socket, selectors.EVENT_READ, None)
        wait = _TURN
        if self._waiting:
            wait = min(wait, max(next(iter(self._waiting.values())).deadline - now, 0.0))
        ready = self._selector.select(wait)
        # hellos first: a peer whose hello is in is served before more accepts can push
        # its connection out of the waiting room
        listening = False
        for key, _ in ready:
            if key.data is None:
                listening = True
            else:
                self._read_hello(key.fileobj)  # type: ignore[arg-type]
        if listening:
            self._accept_some()
        now = time.monotonic()
        while self._waiting:
            sock, waiting = next(iter(self._waiting.items()))
            if waiting.deadline > now:
                break
            self._note("hello_timed_out")
            self._drop_waiting(sock)

    def _accept_some(self) -> None:
        for _ in range(_ACCEPT_BATCH):
            try:
                sock, _ = self._socket.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno not in _OUT_OF_ROOM:
                    continue  # that connection is gone already (ECONNABORTED …)
                # Out of descriptors (or buffers): the listening socket stays readable, so
                # trying again at once would spin. Give back what a silent connection holds
                # and stop accepting for a moment, doubling the wait while it lasts.
                self._note("accept_failed")
                if self._waiting:
                    self._drop_waiting(next(iter(self._waiting)))
                self._backoff = min(max(self._backoff * 2, _TURN), 1.0)
                self._accept_after = time.monotonic() + self._backoff
                self._selector.unregister(self._socket)
                return
            self._backoff = 0.0
            self._admit(sock)

    def _admit(self, sock: socket.socket) -> None:
        if len(self._waiting) >= self.limits.max_waiting:
            self._note("closed_for_room")
            self._drop_waiting(next(iter(self._waiting)))
        with self._lock:
            served = len(self._served)
        if len(self._waiting) + served >= self.cap and not self._make_room():
            self._note("refused")
            sock.close()
            return
        sock.setblocking(False)
        deadline = time.monotonic() + self.limits.hello_seconds
        self._waiting[sock] = _Waiting(deadline, bytearray())
        self._selector.register(sock, selectors.EVENT_READ, sock)

    def _make_room(self) -> bool:
        """Close the oldest connection still waiting for its hello, else the oldest served
        connection that is idle between calls (its peer sends its next call on a new
        connection); False if every one is busy."""
        if self._waiting:
            self._note("closed_for_room")
            self._drop_waiting(next(iter(self._waiting)))
            return True
        with self._lock:
            idle = next((sock for sock, free in self._served.items() if free), None)
            if idle is None:
                return False
            # Out of the table under the lock: its thread will neither start a call on it
            # nor answer one (see _serve); the shutdown wakes that thread's read.
            del self._served[idle]
        with contextlib.suppress(OSError):
            idle.shutdown(socket.SHUT_RDWR)
        self._note("closed_for_room")
        return True

    def _drop_waiting(self, sock: socket.socket) -> None:
        self._waiting.pop(sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(sock)
        sock.close()

    def _read_hello(self, sock: socket.socket) -> None:
        waiting = self._waiting.get(sock)
        if waiting is None:
            return
        got = waiting.received
        # Never more than the frame needs: the header, then the length it declares.
        need = HEADER.size - len(got)
        if need <= 0:
            need = HEADER.size + HEADER.unpack_from(got)[0] - len(got)
        try:
            chunk = sock.recv(need)
        except BlockingIOError:
            return
        except OSError:
            self._drop_waiting(sock)
            return
        if not chunk:
            self._drop_waiting(sock)
            return
        got += chunk
        if len(got) < HEADER.size:
            return
        (size,) = HEADER.unpack_from(got)
        if size > self.limits.hello_bytes:
            self._refuse_hello(sock, HelloRefused(
                f"a connection's first frame (its hello) may hold {self.limits.hello_bytes} "
                f"bytes, not {size}; this data directory is served by ferrex {__version__}, "
                f"hub protocol {PROTOCOL}",
                hint="restart every ferrex process on this data directory with the same "
                "version",
            ))  # fmt: skip
            return
        if len(got) < HEADER.size + size:
            return
        try:
            hello = json.loads(bytes(got[HEADER.size :]))
        except ValueError:
            hello = None
        if not isinstance(hello, dict):
            self._refuse_hello(sock, HelloRefused("a connection's hello must be a JSON object"))
            return
        refusal = self.refusal(hello)
        if refusal is not None:
            self._refuse_hello(sock, refusal)
            return
        del self._waiting[sock]
        self._selector.unregister(sock)
        if not self._reply_now(sock, {"ok": {"idle_seconds": self.limits.idle_seconds}}):
            sock.close()
            return
        with self._lock:
            self._served[sock] = False
        sock.setblocking(True)
        try:
            threading.Thread(target=self._serve, args=(sock,), name="ferrex-peer",
                             daemon=True).start()  # fmt: skip
        except RuntimeError:  # no thread to be had: the peer will try again
            with self._lock:
                self._served.pop(sock, None)
            sock.close()

    def refusal(self, hello: Mapping[str, Any]) -> FerrexError | None:
        """Why a hello is refused (a wrong token, another version), or None."""
        token = hello.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token, self.token):
            return UsageError("wrong token for this data directory")
        return version_mismatch(hello)

    def _refuse_hello(self, sock: socket.socket, error: FerrexError) -> None:
        self._note("refused_hello")
        self._reply_now(sock, {"error": error_document(error)})
        self._drop_waiting(sock)

    @staticmethod
    def _reply_now(sock: socket.socket, doc: Mapping[str, Any]) -> bool:
        """A small frame written without blocking (a fresh connection's send buffer takes
        it whole); False if it could not be."""
        payload = json.dumps(doc, separators=(",", ":")).encode()
        frame = HEADER.pack(len(payload)) + payload
        try:
            return sock.send(frame) == len(frame)
        except OSError:
            return False

    def _note(self, what: str) -> None:
        """Count a connection closed or refused; say so in the log at most every 10 s."""
        with self._lock:
            self.counts[what] += 1
            served = len(self._served)
        now = time.monotonic()
        if now - self._noted >= _NOTE_EVERY:
            self._noted = now
            log.warning("owner's port so far: %s (%d waiting for a hello, %d served, cap %d)",
                        ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in self.counts.items()
                                  if n), len(self._waiting), served, self.cap)  # fmt: skip

    # -- a served connection ---------------------------------------------------------------

    def _serve(self, sock: socket.socket) -> None:
        limits = self.limits
        try:
            while True:
                with self._lock:
                    if sock not in self._served:
                        return  # closed to make room
                    self._served[sock] = True  # idle: may be closed to make room
                try:
                    request = recv_frame(sock, idle=limits.idle_seconds,
                                         within=limits.frame_seconds)  # fmt: skip
                except TimeoutError:
                    with self._lock:
                        self.counts["idle_closed"] += 1
                    return
                except (OSError, ValueError) as exc:
                    log.debug("peer connection dropped: %s", exc)
                    return
                with self._lock:
                    if request is None or sock not in self._served:
                        return
                    self._served[sock] = False
                reply = self.answer(request)
                if reply is None:  # handing over: close, the peer will elect again
                    return
                try:
                    sock.settimeout(limits.frame_seconds)
                    send_frame(sock, reply)
                except OSError:
                    return
        finally:
            with self._lock:
                self._served.pop(sock, None)
            sock.close()

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        tool, args = request.get("tool"), request.get("args")
        if not isinstance(tool, str) or not isinstance(args, Mapping):
            return {"error": error_document(UsageError("a request needs a tool and arguments"))}
        try:
            # Where a peer's call enters this process: decoded once, here.
            call = decode(tool, args)
            return {"ok": self.service.call(call, Caller.from_dict(request.get("caller")))}
        except ServiceClosed:
            return None
        except FerrexError as exc:
            return {"error": error_document(exc)}
        except Exception:
            log.exception("a tool call from another process failed")
            internal = "the memory server failed; the error is in its log"
            return {"error": {"kind": "FerrexError", "code": "internal", "message": internal}}

    # -- closing ---------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop accepting: the loop ends (closing the connections that said no hello) and
        the listening socket is closed."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._selector.close()
        self._socket.close()

    def drop_connections(self) -> None:
        """Wake every served connection's thread: each sees its connection end, and closes."""
        with self._lock:
            served = list(self._served)
        for sock in served:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
