"""The owner's port under connections that are not peers, and a peer's kept connections.

Real sockets to a real owner (a :class:`Hub` that owns a home in this process): a first
frame too large is refused from its header, a connection that says no hello is closed after
the deadline, the waiting room's cap closes the oldest silent connection while a peer is
still served, a peer whose kept connection the owner closed for idling still gets its
answer.
"""

from __future__ import annotations

import errno
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.ownership import Endpoint
from ferrex.server import hub_peer
from ferrex.server.frames import recv_frame, send_frame, versions
from ferrex.server.hub import Hub
from ferrex.server.hub_port import PortLimits
from ferrex.server.service import Caller
from ferrex.server.tool_calls import decode


def _hub(home: Path, embedder: Embedder, **kwargs: Any) -> Hub:
    def open_app() -> App:
        return App(home=home, config=load_config(home, None), _embedder=embedder)

    kwargs.setdefault("flush_every", None)
    return Hub(home, open_app, Caller(), **kwargs)


@pytest.fixture
def owner(tmp_path: Path, shared_embedder: Embedder) -> Iterator[Hub]:
    home = tmp_path / "home"
    hub = _hub(home, shared_embedder)
    try:
        assert hub.call(decode("stats", {}))["total"] == 0 and hub.role == "owner"
        yield hub
    finally:
        hub.close()


def _endpoint(hub: Hub) -> Endpoint:
    endpoint = Endpoint.read(hub.home)
    assert endpoint is not None
    return endpoint


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the owner ends the connection (end of stream or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_a_first_frame_too_large_is_refused_from_its_header(owner: Hub) -> None:
    endpoint = _endpoint(owner)
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as sock:
        # 60 MiB declared, none of it sent: the owner must not wait for it
        sock.sendall(struct.pack(">I", 60 * 1024 * 1024))
        began = time.monotonic()
        sock.settimeout(1.5)  # well inside the 2 s hello deadline
        reply = recv_frame(sock)
        assert reply is not None and reply["error"]["code"] == "hello_refused"
        assert "4096 bytes" in reply["error"]["message"]
        assert _closed_within(sock, 5)
        assert time.monotonic() - began < 1.5
    # After a hello, a frame far larger than a hello is read and answered.
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=30) as sock:
        send_frame(sock, {"token": endpoint.token, **versions()})
        assert recv_frame(sock) == {"ok": {"idle_seconds": PortLimits.idle_seconds}}
        send_frame(sock, {"tool": "stats", "args": {}, "caller": {}, "pad": "x" * 200_000})
        reply = recv_frame(sock)
        assert reply is not None and reply["ok"]["total"] == 0


def test_a_wrong_token_in_the_hello_is_refused(owner: Hub) -> None:
    endpoint = _endpoint(owner)
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as sock:
        send_frame(sock, {"token": "0" * 32, **versions()})
        reply = recv_frame(sock)
        assert reply is not None and reply["error"]["code"] == "invalid_input"
        assert "wrong token" in reply["error"]["message"]
        assert _closed_within(sock, 5)


def test_a_connection_that_says_no_hello_is_closed_after_the_deadline(owner: Hub) -> None:
    endpoint = _endpoint(owner)
    silent = socket.create_connection(("127.0.0.1", endpoint.port), timeout=10)
    trickling = socket.create_connection(("127.0.0.1", endpoint.port), timeout=10)
    try:
        began = time.monotonic()
        trickling.sendall(struct.pack(">I", 100))  # a hello's header, then a byte a while
        for _ in range(5):
            time.sleep(0.5)
            try:
                trickling.sendall(b" ")
            except OSError:
                break
        assert _closed_within(trickling, 10)
        assert _closed_within(silent, 10)
        # hello_seconds is 2: both gone after about that long, not more
        assert time.monotonic() - began < 4.0
    finally:
        silent.close()
        trickling.close()


def test_silent_connections_beyond_the_cap_are_closed_while_a_peer_is_served(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    home = tmp_path / "home"
    limits = PortLimits(hello_seconds=30.0)  # only the cap closes them within this test
    owner = _hub(home, shared_embedder, limits=limits)
    peer = _hub(home, shared_embedder)
    silent: list[socket.socket] = []
    try:
        owner.call(decode("store", {"content": "The build farm moved to the rack in room 4"}))
        endpoint = _endpoint(owner)
        for _ in range(300):
            silent.append(socket.create_connection(("127.0.0.1", endpoint.port), timeout=10))
        began = time.monotonic()
        assert peer.call(decode("stats", {}))["total"] == 1 and peer.role == "peer"
        assert time.monotonic() - began < 5
        time.sleep(0.5)
        closed = sum(_closed_within(sock, 0.05) for sock in silent)
        # the owner holds at most max_waiting of them: the oldest were closed for room
        assert closed >= 300 - limits.max_waiting, closed
        assert not any(_closed_within(sock, 0.01) for sock in silent[-limits.max_waiting + 8 :])
        ownership = owner._ownership
        assert ownership is not None
        assert ownership.listener.counts["closed_for_room"] >= 300 - limits.max_waiting
    finally:
        for sock in silent:
            sock.close()
        peer.close()
        owner.close()


@pytest.mark.parametrize("path", ["dropped_by_the_peer", "noticed_closed", "sent_again"])
def test_a_peer_whose_kept_connection_the_owner_closed_gets_its_answer(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Each of the peer's three defences on its own: it drops a kept connection near the
    owner's idle timeout; it notices one the owner closed; and when it could not know
    (``_still_open`` made to say yes), the call is sent again on a new connection."""
    home = tmp_path / "home"
    owner = _hub(home, shared_embedder, limits=PortLimits(idle_seconds=0.4))
    peer = _hub(home, shared_embedder)
    try:
        owner.call(decode("store", {"content": "Deploys to prod-west need two approvals"}))
        assert peer.call(decode("stats", {}))["total"] == 1 and peer.role == "peer"
        remote = peer._remote
        assert remote is not None
        if path != "dropped_by_the_peer":
            remote._keep_for = 3600.0  # as if the owner's timeout were far away
        if path == "sent_again":
            monkeypatch.setattr(hub_peer, "_still_open", lambda sock: True)
        time.sleep(1.2)  # the owner closes the kept connection after 0.4 s idle
        ownership = owner._ownership
        assert ownership is not None
        assert ownership.listener.counts["idle_closed"] >= 1
        for _ in range(3):
            found = peer.call(decode("recall", {"query": "prod-west deploy approvals"}))
            assert found["results"] and peer.role == "peer"
            time.sleep(0.6)
        assert peer._remote is remote  # never taken for the owner gone
    finally:
        peer.close()
        owner.close()


class _RunningOut:
    """The owner's listening socket, whose ``accept`` fails with EMFILE while ``out`` is set
    (as when the process has no descriptor left), counting the tries."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.out = True
        self.tries = 0

    def accept(self) -> tuple[socket.socket, Any]:
        self.tries += 1
        if self.out:
            raise OSError(errno.EMFILE, "Too many open files")
        return self.sock.accept()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def test_the_accept_loop_backs_off_when_out_of_descriptors(owner: Hub) -> None:
    ownership = owner._ownership
    assert ownership is not None
    listener = ownership.listener
    running_out = _RunningOut(listener._socket)
    listener._socket = running_out  # type: ignore[assignment]
    endpoint = _endpoint(owner)
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as sock:
        send_frame(sock, {"token": endpoint.token, **versions()})
        time.sleep(1.5)  # the connection waits in the backlog, the socket stays readable
        # a loop that retried at once would have tried thousands of times by now
        assert 2 <= running_out.tries <= 15, running_out.tries
        assert listener.counts["accept_failed"] == running_out.tries
        running_out.out = False  # descriptors again: the waiting peer is served
        began = time.monotonic()
        sock.settimeout(5)
        assert recv_frame(sock) == {"ok": {"idle_seconds": PortLimits.idle_seconds}}
        assert time.monotonic() - began < 2.0  # the back-off is at most a second
        send_frame(sock, {"tool": "stats", "args": {}, "caller": {}})
        reply = recv_frame(sock)
        assert reply is not None and reply["ok"]["total"] == 0
