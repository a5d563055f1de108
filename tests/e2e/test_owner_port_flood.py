"""The owner's port flooded while peers work: real processes, real sockets.

An owner (``ferrex`` on stdio, no client, its descriptor limit 1,024 soft and hard, its
expiry sweep every second) is sent 1,100 connections that say nothing (opened again as the
owner closes them) and 8 connections that each send a 60 MiB frame without a token. Meanwhile
a peer that was already connected and a peer started during the flood each store within
5 s, the owner's RSS grows by no more than 50 MB, it never runs out of descriptors, and its
sweep forgets a memory stored with a 2 s ttl.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import FERREX, call, ferrex, owner_pid, stdio_client

NOFILE = 1024
IDLE = 1100
BIG = 8
FRAME = 60 * 1024 * 1024


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class _Flood:
    """Silent connections kept at ``IDLE`` (reopened), big frames sent once each, and the
    owner's RSS and descriptor count sampled throughout."""

    def __init__(self, port: int, pid: int) -> None:
        self.port = port
        self.pid = pid
        self.stop = threading.Event()
        self.socks: list[socket.socket] = []
        self.opened = self.closed_by_owner = 0
        self.peak_rss = 0.0
        self.peak_fds = 0
        self.threads = [threading.Thread(target=self._idle, daemon=True),
                        threading.Thread(target=self._sample, daemon=True)]  # fmt: skip
        self.threads += [threading.Thread(target=self._big, daemon=True) for _ in range(BIG)]

    def _idle(self) -> None:
        """Up to 128 connects in flight (a sequential connect waits a second whenever the
        listen backlog is full), those the owner closes noticed and opened again."""
        pending: dict[socket.socket, float] = {}
        checked = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            while len(self.socks) + len(pending) < IDLE and len(pending) < 128:
                s = socket.socket()
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    s.connect(("127.0.0.1", self.port))
                pending[s] = now
            poller = select.poll()
            by_fd = {s.fileno(): s for s in pending}
            for fd in by_fd:
                poller.register(fd, select.POLLOUT)
            for fd, _ in poller.poll(100):
                s = by_fd[fd]
                del pending[s]
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    self.socks.append(s)
                    self.opened += 1
                else:
                    s.close()
            for s, since in list(pending.items()):
                if now - since > 10:
                    del pending[s]
                    s.close()
            if now - checked >= 0.5:
                checked = now
                kept = []
                for s in self.socks:
                    try:
                        gone = s.recv(1, socket.MSG_PEEK) == b""
                    except BlockingIOError:
                        gone = False
                    except OSError:
                        gone = True
                    if gone:
                        self.closed_by_owner += 1
                        s.close()
                    else:
                        kept.append(s)
                self.socks = kept
            if len(self.socks) >= IDLE:
                self.stop.wait(0.2)
        for s in [*self.socks, *pending]:
            s.close()

    def _big(self) -> None:
        """One frame of FRAME bytes of valid JSON, no token, sent whole unless refused."""
        chunk = b"x" * (1 << 20)
        left = FRAME - 10
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", self.port), timeout=10) as s,
        ):
            s.sendall(struct.pack(">I", FRAME) + b'{"pad":"')
            while left and not self.stop.is_set():
                s.sendall(chunk[: min(left, len(chunk))])
                left -= min(left, len(chunk))
            s.sendall(b'"}')
            self.stop.wait(60)

    def _sample(self) -> None:
        while not self.stop.wait(0.2):
            with contextlib.suppress(OSError, AssertionError):
                self.peak_rss = max(self.peak_rss, _rss_mb(self.pid))
                self.peak_fds = max(self.peak_fds, len(os.listdir(f"/proc/{self.pid}/fd")))

    def __enter__(self) -> _Flood:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


@contextlib.contextmanager
def _descriptors_for_the_flood() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = IDLE + BIG + 512
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, wanted), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _swept(home: Path, memory_id: str) -> bool:
    shown = ferrex(home, "journal", "show")
    assert shown.returncode == 0, shown.stderr
    return any(
        event["event"] == "memories.forgotten" and event["reason"] == "expired"
        and memory_id in event["memory_ids"]
        for line in shown.stdout.splitlines() for event in json.loads(line)["events"]
    )  # fmt: skip


def test_a_flooded_owner_serves_peers_keeps_its_memory_and_sweeps(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "owner.log"

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    env = {**os.environ, "FERREX_EXPIRY_SWEEP_SECONDS": "1"}
    with log.open("wb") as sink:
        owner = subprocess.Popen(
            [FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=sink, preexec_fn=low_limit, env=env,
        )  # fmt: skip
    try:
        assert owner_pid(home) == owner.pid
        port = int(json.loads((home / "run" / "owner.json").read_text())["port"])

        async def main() -> None:
            async with stdio_client(home, "--agent-id", "early") as early:
                await call(early, "store", {"content": "The owner is warm: the first store"})
                rss_before = _rss_mb(owner.pid)
                with _descriptors_for_the_flood(), _Flood(port, owner.pid) as flood:
                    deadline = time.monotonic() + 60
                    while flood.opened < IDLE:  # the flood takes hold
                        assert time.monotonic() < deadline, flood.opened
                        await anyio.sleep(0.2)
                    began = time.monotonic()
                    with anyio.fail_after(5):
                        kept = await call(early, "store", {
                            "content": "Scratch: the canary for build 88 is running",
                            "ttl": "2s"})  # fmt: skip
                    assert time.monotonic() - began < 5
                    async with stdio_client(home, "--agent-id", "late") as late:
                        await call(late, "stats", {})  # started and elected: a peer
                        began = time.monotonic()
                        with anyio.fail_after(5):
                            await call(late, "store", {"content": "Build 88 passed on "
                                                       "the second try",
                                                       "visibility": "shared"})  # fmt: skip
                        assert time.monotonic() - began < 5
                    deadline = time.monotonic() + 30
                    while not _swept(home, kept["id"]):
                        assert time.monotonic() < deadline, "the expiry sweep stopped"
                        await anyio.sleep(1)
                    growth = flood.peak_rss - rss_before
                    assert growth <= 50, f"the owner grew by {growth:.0f} MB"
                    assert 0 < flood.peak_fds < NOFILE - 256, flood.peak_fds
                    # beyond the 64 in its waiting room, and each after 2 s, the owner
                    # closes the silent connections (the flood notices twice a second)
                    deadline = time.monotonic() + 15
                    while flood.closed_by_owner < IDLE - 64:
                        assert time.monotonic() < deadline, flood.closed_by_owner
                        await anyio.sleep(0.2)
                assert (await call(early, "stats", {}))["total"] == 2

        anyio.run(main)
        assert owner.poll() is None
    finally:
        with contextlib.suppress(OSError):
            assert owner.stdin is not None
            owner.stdin.close()
        try:
            owner.wait(timeout=60)
        except subprocess.TimeoutExpired:
            owner.kill()
            owner.wait()
    assert "Too many open files" not in log.read_text(errors="replace")
