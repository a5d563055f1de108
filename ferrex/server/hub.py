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
  "journal"}``: the token and the peer's ferrex version, hub
  :data:`~ferrex.server.frames.PROTOCOL` and journal format. The owner answers ``{"ok":
  {"idle_seconds": …}}``, or an error and closes: a wrong token, or a version triple other
  than its own (``version_mismatch``, naming both, rather than running calls it may read
  wrongly: two ferrex versions side by side during an upgrade). A protocol 1 peer's first
  request (token and versions in every request) is read as a hello, so it too gets
  ``version_mismatch``, if it fits a hello's 4 KiB; a larger one gets ``hello_refused``, which
  names this version as well.
- **Calls.** Then each tool call is one frame, ``{"tool", "args", "caller"}`` (``args``: the
  typed request as JSON, :func:`ferrex.server.tool_calls.encode`, decoded once by the owner's
  port); the answer is ``{"ok": document}`` or ``{"error": {...}}`` carrying the ferrex
  error's kind, code, message and hint. The owner runs every call through the same
  :class:`~ferrex.server.service.Service` as its own, so each agent sees every other's writes.
- **Limits of the port** (:class:`~ferrex.server.hub_port.PortLimits`; any local process can
  connect, token or not). Until its hello is in, a connection costs the owner no thread and at
  most a few KiB: one selector thread reads every hello, a hello may declare at most
  ``hello_bytes`` (4 KiB; a larger length is refused from the header, before a byte of the
  body is read) and must be in within ``hello_seconds`` (2 s). At most ``max_waiting`` (64)
  connections wait for their hello; a new one closes the oldest waiting, so a flood of silent
  connections cannot keep a peer out (a peer sends its hello the moment it connects).
  Connections in all are capped at ``max_connections`` (256) and below what the descriptor
  limit (raised to the hard limit) leaves after ``descriptor_reserve`` (256) for the journal
  and the stores; at the cap a waiting connection, else the oldest idle peer connection, is
  closed to make room, else the new one is refused. An accept that fails for want of
  descriptors or memory backs off (50 ms, doubled up to 1 s) instead of spinning. A served
  connection is a thread; a frame may be up to :data:`ferrex.server.frames.MAX_FRAME` once the
  hello is in, but must arrive within ``frame_seconds`` (60 s) of its first byte, and a
  connection idle for ``idle_seconds`` (300 s) between calls is closed.
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

This module elects, hands over and runs the owner's background passes; the owner's port is
:mod:`ferrex.server.hub_port`, a peer's calls to it :mod:`ferrex.server.hub_peer`, the wire
format :mod:`ferrex.server.frames`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ferrex.app import App
from ferrex.config import Config
from ferrex.errors import BackendUnavailable, FerrexError
from ferrex.ownership import Endpoint, is_held, lock_path
from ferrex.server.caller import Caller
from ferrex.server.hub_peer import OwnerGone, Remote
from ferrex.server.hub_port import GuardedService, Listener, PortLimits, ServiceClosed
from ferrex.server.tool_calls import ToolRequest

log = logging.getLogger("ferrex.hub")


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
        self.listener = Listener(self.service, secrets.token_hex(16), limits or PortLimits())
        # The loop waits at most 50 ms at a time (hub_port._TURN): shutdown() waits for it to
        # notice, and every CLI command that owns the stores pays that wait at exit.
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
        self._remote: Remote | None = None
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

    def call(self, request: ToolRequest, caller: Caller | None = None) -> dict[str, Any]:
        """One tool call, as this process's agent (or ``caller``). Raises FerrexError."""
        who = caller or self.caller
        deadline = time.monotonic() + self.wait_seconds
        while True:
            target = self._settle(deadline)
            try:
                if isinstance(target, _Ownership):
                    return target.service.call(request, who)
                answer = target.call(request, who)
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

    def _settle(self, deadline: float, *, warm: bool = False) -> _Ownership | Remote:
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
                        self._remote = Remote(endpoint, self.call_timeout)
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
