"""Many ferrex processes on one data directory: one owns the stores, the others ask it.

MCP clients start one server process per session, so several ``ferrex`` processes on one
data directory is the normal case. The embedded Qdrant can be opened by one process only,
and one writer applying the journal to the projections keeps them simple, so:

- **Election.** ``<home>/run/owner.lock`` is an exclusive ``flock`` (taken by
  :meth:`App.claim`, which every opening of the stores requires). The process that holds it
  is the *owner*: it opens the journal, the projections and the models, and listens on a
  loopback TCP port. The kernel drops the lock when the owner exits, however it exits.
- **Endpoint.** Once listening, the owner writes ``<home>/run/owner.json`` (port, pid and a
  random token; mode 0600, written to a temporary file and renamed). Only a process that can
  read the data directory knows the token, and a connection is served only once it has shown
  it (below), so only such a process can talk to the owner.
- **Frames.** Everything on a connection is a frame: a 4-byte big-endian length, then that
  many bytes of JSON holding an object.
- **Hello.** A connection opens with a *hello* frame, ``{"token", "ferrex", "protocol",
  "journal"}``: the token and the peer's ferrex version, hub :data:`PROTOCOL` and journal
  format. The owner answers ``{"ok": {"idle_seconds": …}}``, or an error and closes: a wrong
  token, or a version triple other than its own (``version_mismatch``, naming both, rather
  than running calls it may read wrongly: two ferrex versions side by side during an
  upgrade). A protocol 1 peer's first request (token and versions in every request) is read
  as a hello, so it too gets ``version_mismatch``, if it fits a hello's 4 KiB; a larger one
  gets ``hello_refused``, which names this version as well.
- **Calls.** Then each tool call is one frame, ``{"tool", "args", "caller"}``; the answer is
  ``{"ok": document}`` or ``{"error": {...}}`` carrying the ferrex error's kind, code,
  message and hint. The owner runs every call through the same
  :class:`~ferrex.server.service.Service` as its own, so each agent sees every other's writes.
- **Limits of the port** (:class:`PortLimits`; any local process can connect, token or not).
  Until its hello is in, a connection costs the owner no thread and at most a few KiB: one
  selector thread reads every hello, a hello may declare at most ``hello_bytes`` (4 KiB; a
  larger length is refused from the header, before a byte of the body is read) and must be
  in within ``hello_seconds`` (2 s). At most ``max_waiting`` (64) connections wait for
  their hello; a new one closes the oldest waiting, so a flood of silent connections cannot
  keep a peer out (a peer sends its hello the moment it connects). Connections in all are
  capped at ``max_connections`` (256) and below what the descriptor limit (raised to the hard
  limit) leaves after ``descriptor_reserve`` (256) for the journal and the stores; at the cap
  a waiting connection, else the oldest idle peer connection, is closed to make room, else
  the new one is refused. An accept that fails for want of descriptors or memory backs off
  (50 ms, doubled up to 1 s) instead of spinning. A served connection is a thread; a frame
  may be up to :data:`ferrex.server.frames.MAX_FRAME` once the hello is in, but must arrive within
  ``frame_seconds`` (60 s) of its first byte, and a connection idle for ``idle_seconds``
  (300 s) between calls is closed.
- **Peers.** A process that does not get the lock connects to the owner (one connection per
  call in progress, so a peer's concurrent calls run side by side, up to 8 kept open between
  calls). A kept connection idle for half the owner's ``idle_seconds`` is closed by the peer
  itself, one the owner closed is noticed before it is used, and a call on a kept
  connection that finds it closed is sent once more on a new one: an owner's idle timeout
  is never a failed call.
- **Background passes.** The owner's access flush, expiry sweep (and consolidation) and
  index builds each run on a thread of their own that logs any failure, an ``OSError`` such
  as running out of descriptors included, and tries again at its next turn: they end only
  with the ownership.
- **Hand-over.** When the owner exits cleanly it stops taking calls, finishes the one in
  progress, closes its stores (flushing the access log), removes the endpoint and releases the
  lock, in that order. Peers see their connection close and elect again: one becomes the new
  owner (catching its projections up from the journal), the others connect to it. If the owner
  is killed, the kernel closes its sockets and releases both locks, and the same happens.
- **Warm peers.** After a peer's first answered call it loads the models in the background
  into a spare App (unclaimed: it opens no store but the journal, which any process may
  read), so a takeover is only opening the projections and catching up, not loading models
  or checking the whole journal. A peer that is never called loads nothing; one that
  is costs a model's memory (see docs/performance.md; ``server.warm_peers = false`` turns
  it off).
- **A call cut off.** A call whose connection drops before the answer arrives is sent again
  to the next owner. Reads are safe to repeat; a forget repeated reports the ids as not found;
  a store repeated after it had landed is recognised by dedup, and the agent is told the
  existing id. Nothing acknowledged is lost: an answer is only sent after the journal append
  was fsynced.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import json
import logging
import os
import secrets
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ferrex import __version__
from ferrex.app import App
from ferrex.config import Config
from ferrex.errors import (
    BackendUnavailable,
    FerrexError,
    HelloRefused,
    JournalFailure,
    ModelUnavailable,
    Refused,
    UsageError,
    VersionMismatch,
)
from ferrex.ownership import Endpoint, is_held, lock_path
from ferrex.server.caller import Caller, error_document
from ferrex.server.descriptors import descriptor_room, raise_descriptor_limit
from ferrex.server.frames import (  # the wire format; re-exported for the hub's users
    HEADER,
    PROTOCOL,
    recv_frame,
    send_frame,
    versions,
)
from journal import FORMAT_VERSION

if TYPE_CHECKING:
    from ferrex.server.service import Service

log = logging.getLogger("ferrex.hub")

_IDLE_CONNECTIONS = 8  # a peer keeps this many connections to the owner open between calls
_ACCEPT_BATCH = 32  # connections accepted in one turn of the owner's loop (also the backlog)
_TURN = 0.05  # seconds the owner's loop waits at most (shutdown waits for it to notice)
_NOTE_EVERY = 10.0  # seconds between two log lines counting connections closed or refused
_OUT_OF_ROOM = frozenset((errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM))
_KINDS: dict[str, type[FerrexError]] = {
    cls.__name__: cls
    for cls in (FerrexError, UsageError, JournalFailure, ModelUnavailable, BackendUnavailable,
                Refused)
}  # fmt: skip


class OwnerGone(Exception):
    """The owner closed the connection or cannot be reached: elect again."""


class ServiceClosed(Exception):
    """This process has handed its stores over; the call must go to the next owner."""


def error_from_document(doc: Mapping[str, Any]) -> FerrexError:
    """Rebuild the ferrex error an owner reported (same class, code, message, hint)."""
    fields = dict(doc)
    cls = _KINDS.get(str(fields.pop("kind", "")), FerrexError)
    code = str(fields.pop("code", "error"))
    message = str(fields.pop("message", "the memory server failed"))
    hint = fields.pop("hint", None)
    return cls(message, hint=hint if isinstance(hint, str) else None, code=code, details=fields)


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


# -- the owner's side -------------------------------------------------------------------


class GuardedService:
    """A :class:`Service` that refuses calls once this process has started handing over."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._gate = threading.Lock()
        self._closed = False
        self._busy = 0
        self._idle = threading.Condition(self._gate)

    def call(self, tool: str, args: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        with self._gate:
            if self._closed:
                raise ServiceClosed()
            self._busy += 1
        try:
            return self.service.call(tool, args, caller)
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


class _Listener:
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
            return {"ok": self.service.call(tool, args, Caller.from_dict(request.get("caller")))}
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


def _survive(what: str, step: Callable[[], object]) -> None:
    """Run one turn of a background pass; whatever it raises is logged, not raised, so the
    pass's thread tries again at its next turn. A ferrex error (a lock, a full disk) is a
    warning; anything else, such as an ``OSError`` when the process is out of descriptors,
    is logged with its traceback (the log's repeat filter keeps a storm of them short)."""
    try:
        step()
    except FerrexError as exc:
        log.warning("could not %s (will retry): %s", what, exc)
    except Exception:
        log.exception("could not %s (will retry)", what)


class _Ownership:
    """What this process holds while it is the owner."""

    def __init__(
        self,
        home: Path,
        app: App,
        flush_every: float | None,
        sweep_every: float | None = None,
        index_every: float | None = None,
        limits: PortLimits | None = None,
    ) -> None:
        from ferrex.server.service import Service  # the tools: loaded once this process owns

        self.home = home
        self.service = GuardedService(Service(app))
        self._stop = threading.Event()
        if flush_every is not None:
            threading.Thread(
                target=self._flush_access, args=(flush_every,), name="ferrex-access",
                daemon=True,
            ).start()  # fmt: skip
        if sweep_every is not None:
            threading.Thread(
                target=self._sweep_expired, args=(sweep_every,), name="ferrex-expiry",
                daemon=True,
            ).start()  # fmt: skip
        if index_every is not None:
            threading.Thread(
                target=self._index, args=(index_every,), name="ferrex-index", daemon=True,
            ).start()  # fmt: skip
        self.listener = _Listener(self.service, secrets.token_hex(16), limits or PortLimits())
        # The loop waits at most _TURN (50 ms) at a time: shutdown() waits for it to notice,
        # and every CLI command that owns the stores pays that wait at exit.
        self.listener.start()
        self.endpoint = Endpoint(self.listener.port, os.getpid(), self.listener.token)
        self.endpoint.write(home)

    def _flush_access(self, every: float) -> None:
        """Journal recall hits every few seconds, so staleness survives even a kill."""
        while not self._stop.wait(every):
            _survive("journal recall accesses", self.service.service.flush_access)

    def _sweep_expired(self, every: float) -> None:
        """Forget expired memories every few seconds (``memories.forgotten``, reason
        ``expired``); recall already hides them from the moment they expire."""
        while not self._stop.wait(every):
            _survive("forget expired memories", self.service.service.sweep_expired)
            # off unless consolidation.after_days is set; at most hourly by default
            _survive("consolidate old episodes", self.service.service.consolidate_due)

    def _index(self, every: float) -> None:
        """Every so often, index what the embedded vector collections gained (on copies, in
        a child process: see ``Service.index_due``), so that recall and store stay fast as
        an agent's memories grow, without `ferrex optimize`."""
        wait = every
        while not self._stop.wait(wait):
            try:
                switched = self.service.service.index_due()
            except Exception as exc:
                if self._stop.is_set():
                    return  # closing: the build was cancelled
                # A build that fails costs a copy and minutes of CPU: the next try waits
                # twice as long each time, up to an hour.
                wait = min(wait * 2, max(every, 3600.0))
                if isinstance(exc, FerrexError):
                    log.warning("could not index the vector collections (next try in %.0f s):"
                                " %s", wait, exc)  # fmt: skip
                else:
                    log.exception("indexing the vector collections failed (next try in %.0f s)",
                                  wait)  # fmt: skip
            else:
                wait = every
                if switched:
                    log.info("vector indexes built and switched in: %s", ", ".join(switched))

    def close(self) -> None:
        self._stop.set()
        self.listener.shutdown()
        with contextlib.suppress(OSError):
            if Endpoint.read(self.home) == self.endpoint:
                Endpoint.path(self.home).unlink()
        try:
            self.service.close()  # closing the App releases the owner lock: a peer takes over
        finally:
            self.listener.drop_connections()


# -- the peer's side --------------------------------------------------------------------


class _Remote:
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

    def call(self, tool: str, args: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        request = {"tool": tool, "args": dict(args), "caller": caller.as_dict()}
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


def owner_status(home: Path) -> dict[str, Any]:
    """Whether a process owns ``home``'s stores now, and which (for ``ferrex doctor``)."""
    if not is_held(home):
        return {"running": False}
    endpoint = Endpoint.read(home)
    if endpoint is None:  # an owner that serves no one (a CLI command), or one starting
        return {"running": True, "pid": None, "port": None}
    return {"running": True, "pid": endpoint.pid, "port": endpoint.port}


# -- the hub ----------------------------------------------------------------------------


class Hub:
    """Routes this process's tool calls to the stores, wherever they are open.

    ``open_app`` builds the App when this process becomes the owner. ``start()`` runs the
    first election (and, as owner, loads the models) in the background; the stdio server
    calls it once the client has its ``initialize`` answer (so that answer waits for none of
    it), the HTTP server before it listens. A call before it, or before it is done, elects
    (or waits for the election) itself.
    """

    def __init__(
        self,
        home: Path,
        open_app: Callable[[], App],
        caller: Caller,
        *,
        wait_seconds: float = 120.0,
        call_timeout: float = 600.0,
        flush_every: float | None = 5.0,
        sweep_every: float | None = 30.0,
        index_every: float | None = None,
        limits: PortLimits | None = None,
    ) -> None:
        self.home = home
        self.open_app = open_app
        self.caller = caller
        self.wait_seconds = wait_seconds
        self.call_timeout = call_timeout
        self.flush_every = flush_every
        self.sweep_every = sweep_every
        self.index_every = index_every  # servers only: a CLI command owns for a moment
        self.limits = limits  # of the owner's port, when this process owns (tests)
        self._elect_lock = threading.Lock()
        self._ownership: _Ownership | None = None
        self._remote: _Remote | None = None
        self._closed = False
        self._started: threading.Thread | None = None
        self._spare: App | None = None  # a peer's App with its models loaded, no stores open
        self._warming = False

    @property
    def role(self) -> str:
        if self._ownership is not None:
            return "owner"
        return "peer" if self._remote is not None else "none"

    def start(self) -> None:
        """Elect (and, as owner, warm up) in the background."""

        def run() -> None:
            if self._closed:  # handed over before the handshake ended: nothing to start
                return
            try:
                self._settle(time.monotonic() + self.wait_seconds, warm=True)
                if self._ownership is not None:
                    self._ownership.service.service.warm()
            except FerrexError as exc:  # the first tool call reports it to the agent
                log.warning("%s", exc)
            except Exception:
                log.exception("start-up failed; the first tool call will retry")

        self._started = threading.Thread(target=run, name="ferrex-start", daemon=True)
        self._started.start()

    def call(
        self, tool: str, args: Mapping[str, Any], caller: Caller | None = None
    ) -> dict[str, Any]:
        """One tool call, as this process's agent (or ``caller``). Raises FerrexError."""
        who = caller or self.caller
        deadline = time.monotonic() + self.wait_seconds
        while True:
            target = self._settle(deadline)
            try:
                if isinstance(target, _Ownership):
                    return target.service.call(tool, args, who)
                answer = target.call(tool, args, who)
                self._warm_spare()
                return answer
            except (OwnerGone, ServiceClosed) as exc:
                log.info("the owner went away (%s); electing again", exc)
                self._forget_remote(target)
                if time.monotonic() > deadline:
                    raise BackendUnavailable(
                        "the process serving this data directory went away and no other "
                        "took over in time",
                        hint="check `ferrex doctor`; a stuck ferrex process may hold "
                        f"{lock_path(self.home)}",
                    ) from exc

    def _settle(self, deadline: float, *, warm: bool = False) -> _Ownership | _Remote:
        """Become the owner or connect to it, waiting while another process starts up;
        ``warm``: as the owner, start loading the model the moment the lock is taken."""
        delay = 0.02
        while True:
            with self._elect_lock:
                if self._closed:
                    raise BackendUnavailable("this ferrex process is shutting down")
                if self._ownership is not None:
                    return self._ownership
                if self._remote is not None:
                    return self._remote
                owned = self._try_own(warm)
                if owned is not None:
                    return owned
                endpoint = Endpoint.read(self.home)
                if endpoint is not None:
                    with contextlib.suppress(OwnerGone):
                        self._remote = _Remote(endpoint, self.call_timeout)
                        log.info("serving through the owner process %d", endpoint.pid)
                        return self._remote
            if time.monotonic() > deadline:
                raise BackendUnavailable(
                    f"another process holds {lock_path(self.home)} but does not answer",
                    hint="a ferrex process may be stuck starting; check `ferrex doctor`",
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def _warm_spare(self) -> None:
        """As a peer that has been called, load the models once, in the background."""
        with self._elect_lock:
            if self._warming or self._closed:
                return
            self._warming = True

        def run() -> None:
            try:
                spare = self.open_app()
                if not spare.config["server.warm_peers"]:
                    return  # nothing was opened: the App is dropped
                began = time.monotonic()
                spare.embedder().model()
                spare.reranker()
                # Reading the journal is open to every process; opening it now checks every
                # record once, so a takeover reads only what was appended since.
                spare.journal()
                log.info("models warm for a takeover (%.2f s)", time.monotonic() - began)
            except Exception as exc:  # a cold takeover still works: it loads them then
                log.warning("could not keep the models warm for a takeover: %s", exc)
                return
            drop: App | None
            with self._elect_lock:
                if self._closed or self._ownership is not None:
                    drop = spare
                else:
                    drop, self._spare = self._spare, spare
            if drop is not None:
                drop.close()

        threading.Thread(target=run, name="ferrex-warm", daemon=True).start()

    def _try_own(self, warm: bool = False) -> _Ownership | None:
        app = self._spare if self._spare is not None else self.open_app()
        if not app.claim():
            return None  # nothing was opened (a spare keeps only its models)
        self._spare = None
        try:
            if warm:  # the model loads on its own thread while the tools are set up
                app.embedder().load_in_background()
            self._ownership = _Ownership(
                self.home, app, self.flush_every, self.sweep_every, self.index_every,
                self.limits,
            )  # fmt: skip
        except BaseException:
            app.close()
            raise
        log.info("this process owns %s", self.home)
        return self._ownership

    def reconfigure(self, config: Config) -> None:
        """A new configuration (see ferrex.server.reload): this process's agent and namespace, and
        the owner's settings if this process is the owner."""
        self.caller = Caller.from_config(config)
        with self._elect_lock:
            ownership = self._ownership
        if ownership is not None:
            ownership.service.service.reconfigure(config)
        with self._elect_lock:
            spare, self._spare = self._spare, None
            self._warming = False  # warmed again, with the new configuration, at the next call
        if spare is not None:
            spare.close()

    def _forget_remote(self, target: object) -> None:
        with self._elect_lock:
            if self._remote is not None and self._remote is target:
                self._remote.close()
                self._remote = None

    def close(self) -> None:
        """Hand over: stop serving, close the stores, let a peer take over."""
        with self._elect_lock:
            self._closed = True
            ownership, self._ownership = self._ownership, None
            remote, self._remote = self._remote, None
            spare, self._spare = self._spare, None
        if remote is not None:
            remote.close()
        if spare is not None:
            spare.close()
        if ownership is not None:
            ownership.close()
