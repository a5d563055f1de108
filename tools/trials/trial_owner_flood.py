"""Trial of the owner's port under a flood, bounded in count and time, on loopback only.

The issue: the port in ``run/owner.json`` took any number of idle connections without a
token and read a frame of up to 64 MiB before checking one, so with the owner at a low
descriptor limit peers' calls failed, and its expiry thread died on ``EMFILE``. Here:

1. an owner: ``ferrex`` on stdio (started with no client, so it elects itself after a
   moment) on a fresh home, its RLIMIT_NOFILE set to ``--nofile`` (1,024) soft and hard,
   its expiry sweep every second;
2. a peer: another ``ferrex`` on stdio, driven with JSON-RPC lines, called once (a store) so
   it has its connection to the owner, then a store through a fresh ``ferrex store``
   process as a baseline;
3. the flood, for ``--hold`` seconds and the sweep's check after them: ``--idle`` (1,100)
   connections to the owner's port that send nothing (up to 128 connects in flight; those
   the owner closes are noticed every second and opened again), and ``--big`` (8)
   connections that each send one frame declaring ``--frame-mib`` (60) MiB and then the
   whole body (valid JSON, no token), then hold the connection;
4. during it: stores through the peer (each timed) spread over the hold, the last few also
   through fresh ``ferrex store`` processes (timed, process start included); at the end of
   the hold, the flood still on, one store through the peer with a 2 s ttl, then whether the
   owner's sweep forgets it (``memories.forgotten``, reason ``expired``, in ``ferrex journal
   show``) within 30 s; the owner's RSS and open descriptors sampled every 0.25 s;
5. after it: one more store through the peer.

It prints one JSON line per phase and a last line: the pass criteria (peer stores answered
within 5 s, RSS growth ≤ 50 MB, the ttl'd memory swept) and whether each held. To measure
other code, put its source first on ``PYTHONPATH``: the processes are started as ``python
-c 'from ferrex.cli import main; main()'`` with this interpreter.

    nice -n 10 .venv/bin/python -m tools.trials.trial_owner_flood [--idle 1100] [--hold 60]

A thread-per-connection owner with a listen backlog of 5 (the old port) takes silent
connections in slowly on a busy machine: give it ``--hold 240`` to reach its limit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import select
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FERREX = [sys.executable, "-c", "from ferrex.cli import main; main()"]
ANSWER_WITHIN = 5.0
RSS_GROWTH_MB = 50.0
SWEEP_WITHIN = 30.0
_PENDING = 128  # the flood's connects in flight at once
_CONNECT_SECONDS = 10.0  # how long one of them may take (SYN retries at 1, 3 and 7 s)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


@contextlib.contextmanager
def _owner(home: Path, log: Path, nofile: int) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The owner process and its port, once it has written ``run/owner.json``."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    env = {**os.environ, "FERREX_EXPIRY_SWEEP_SECONDS": "1"}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=sink, preexec_fn=limit, env=env,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            with contextlib.suppress(OSError, ValueError, KeyError):
                endpoint = json.loads((home / "run" / "owner.json").read_text())
                if endpoint["pid"] == process.pid:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the owner did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield process, int(endpoint["port"])
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class _Peer:
    """Another ``ferrex`` on stdio: tool calls as JSON-RPC lines, each timed."""

    def __init__(self, home: Path, log: Path) -> None:
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                [*FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=sink,
            )  # fmt: skip
        self.buffer = b""
        self.next_id = 1
        self._send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "trial", "version": "1"}}})  # fmt: skip
        if self._answer(0, 120) is None:
            raise SystemExit("the peer did not answer initialize")
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def _answer(self, want: int, seconds: float) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + seconds
        while True:
            while b"\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\n", 1)
                with contextlib.suppress(ValueError):
                    message = json.loads(raw)
                    if isinstance(message, dict) and message.get("id") == want:
                        return message
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 0.2))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None
                self.buffer += chunk

    def call(self, tool: str, args: dict[str, Any], seconds: float) -> tuple[dict[str, Any], float]:
        """(structured answer, or {"error": why}; seconds taken, ``seconds`` if none came)."""
        ident = self.next_id
        self.next_id += 1
        began = time.monotonic()
        self._send({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                    "params": {"name": tool, "arguments": args}})  # fmt: skip
        message = self._answer(ident, seconds)
        took = time.monotonic() - began
        if message is None:
            return {"error": f"no answer within {seconds:.0f} s"}, took
        result = message.get("result") or {}
        doc = result.get("structuredContent") or {}
        if result.get("isError") or "error" in message:
            return {"error": doc.get("error") or message.get("error")}, took
        return doc, took

    def close(self) -> None:
        _stop(self.process)


def _cli_store(home: Path, content: str, seconds: float) -> tuple[bool, float]:
    began = time.monotonic()
    try:
        done = subprocess.run(
            [*FERREX, "--home", str(home), "store", "--content", content, "--json"],
            capture_output=True, timeout=seconds, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - began
    return done.returncode == 0, time.monotonic() - began


def _probe_often(sock: socket.socket) -> None:
    """TCP keepalive probes after 2 s idle, every second: they carry no data (the connection
    stays silent to the owner) but a connection the owner never took in (its listen backlog
    was full when our handshake ended, and it gave up on it) answers them with a reset, so
    the flood notices it and opens another, as one that the owner closed."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 2)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 2)


class _Flood:
    """Idle connections (reopened when closed) and a few connections sending one big frame."""

    def __init__(self, port: int, idle: int, big: int, frame_mib: int) -> None:
        self.port = port
        self.idle = idle
        self.frame = frame_mib * 1024 * 1024
        self.socks: list[socket.socket] = []
        self.stop = threading.Event()
        self.opened = 0
        self.open_failed = 0
        self.closed_by_owner = 0
        self.big_bytes_sent = [0] * big
        self.big_closed_by_owner = [False] * big
        self.threads = [threading.Thread(target=self._hold, daemon=True)]
        self.threads += [
            threading.Thread(target=self._send_big, args=(i,), daemon=True) for i in range(big)
        ]

    def _hold(self) -> None:
        """Keep ``idle`` connections established: up to :data:`_PENDING` connects in flight at
        once (each given :data:`_CONNECT_SECONDS`, through SYN retries behind a full listen
        backlog), those the owner closes noticed every second and opened again."""
        pending: dict[socket.socket, float] = {}
        checked = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            while len(self.socks) + len(pending) < self.idle and len(pending) < _PENDING:
                s = socket.socket()
                s.setblocking(False)
                try:
                    s.connect(("127.0.0.1", self.port))
                except BlockingIOError:
                    pass
                except OSError:
                    self.open_failed += 1
                    s.close()
                    break
                pending[s] = now
            by_fd = {s.fileno(): s for s in pending}
            poller = select.poll()  # select() takes no descriptor above 1,023
            for fd in by_fd:
                poller.register(fd, select.POLLOUT)
            for fd, _ in poller.poll(100):
                s = by_fd[fd]
                del pending[s]
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    _probe_often(s)
                    self.socks.append(s)
                    self.opened += 1
                else:
                    self.open_failed += 1
                    s.close()
            for s, since in list(pending.items()):
                if now - since > _CONNECT_SECONDS:
                    del pending[s]
                    self.open_failed += 1
                    s.close()
            if now - checked >= 1.0:
                checked = now
                kept: list[socket.socket] = []
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
            if len(self.socks) >= self.idle:
                self.stop.wait(0.2)
        for s in [*self.socks, *pending]:
            s.close()

    def _send_big(self, index: int) -> None:
        body_head, body_tail = b'{"pad":"', b'"}'
        filler = self.frame - len(body_head) - len(body_tail)
        chunk = b"x" * (1 << 20)
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
                s.sendall(struct.pack(">I", self.frame) + body_head)
                sent = 4 + len(body_head)
                left = filler
                while left and not self.stop.is_set():
                    piece = chunk[: min(left, len(chunk))]
                    s.sendall(piece)
                    sent += len(piece)
                    left -= len(piece)
                    self.big_bytes_sent[index] = sent  # what the owner's buffers took
                if not left:
                    s.sendall(body_tail)
                    self.big_bytes_sent[index] = sent + len(body_tail)
                s.settimeout(0.5)
                while not self.stop.is_set():  # hold it; note whether the owner closes it
                    with contextlib.suppress(TimeoutError):
                        if s.recv(65536) == b"":
                            break
                self.big_closed_by_owner[index] = not self.stop.is_set()
        except OSError:
            self.big_closed_by_owner[index] = True

    def __enter__(self) -> _Flood:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


class _RssSampler:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self.peak_fds = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.25):
            self.peak = max(self.peak, _rss_mb(self.pid))
            self.peak_fds = max(self.peak_fds, _open_fds(self.pid))

    def __enter__(self) -> _RssSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def _swept(home: Path, memory_id: str) -> bool:
    shown = subprocess.run([*FERREX, "--home", str(home), "journal", "show"],
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    for line in shown.stdout.splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            for event in json.loads(line)["events"]:
                if (event["event"] == "memories.forgotten" and event["reason"] == "expired"
                        and memory_id in event["memory_ids"]):  # fmt: skip
                    return True
    return False


def _seconds(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"median": round(statistics.median(values), 2), "max": round(max(values), 2)}


def trial(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    home = root / "home"
    with _owner(home, root / "owner.log", args.nofile) as (owner, port):
        peer = _Peer(home, root / "peer.log")
        try:
            warm, warm_took = peer.call("store", {"content": "The trial's first memory: the "
                                                  "owner is warm"}, 120)  # fmt: skip
            cli_ok, cli_took = _cli_store(home, "A baseline store through a fresh process", 120)
            before = {"peer_store": [warm.get("status", warm.get("error")), round(warm_took, 2)],
                      "cli_store": [cli_ok, round(cli_took, 2)],
                      "owner_rss_mb": round(_rss_mb(owner.pid), 1),
                      "owner_fds": _open_fds(owner.pid)}  # fmt: skip
            print(json.dumps({"before": before}), flush=True)
            rss_before = _rss_mb(owner.pid)
            peer_times: list[float] = []
            peer_failures: list[str] = []
            cli_times: list[float] = []
            cli_failures = 0
            with (
                _RssSampler(owner.pid) as rss,
                _Flood(port, args.idle, args.big, args.frame_mib) as flood,
            ):
                began = time.monotonic()
                time.sleep(min(5.0, args.hold / 4))  # the flood takes hold
                # the stores spread over the hold (an old owner fills its descriptors slowly)
                every = (args.hold - (time.monotonic() - began)) / max(args.stores, 1)
                for i in range(args.stores):
                    slot = time.monotonic() + every
                    doc, took = peer.call("store", {"content": f"Flood trial store {i}: ticket "
                                                    f"FT-{4000 + i} was closed"}, 30)  # fmt: skip
                    peer_times.append(took)
                    if "error" in doc:
                        peer_failures.append(str(doc["error"])[:200])
                    if i >= args.stores - args.cli_stores:
                        ok, took = _cli_store(home, f"Flood trial CLI store {i}: FC-{i}", 60)
                        cli_times.append(took)
                        cli_failures += not ok
                    time.sleep(max(0.0, slot - time.monotonic()))
                # at the end of the hold, the flood still on: does the sweep still run?
                ttl_doc, ttl_took = peer.call("store", {"content": "Scratch: the flood trial's "
                                              "short-lived note", "ttl": "2s"}, 30)  # fmt: skip
                peer_times.append(ttl_took)
                if "error" in ttl_doc:
                    peer_failures.append(str(ttl_doc["error"])[:200])
                swept = False
                if "id" in ttl_doc:
                    deadline = time.monotonic() + SWEEP_WITHIN
                    while not swept and time.monotonic() < deadline:
                        time.sleep(1.0)
                        swept = _swept(home, ttl_doc["id"])
                during = {
                    "idle_connections": args.idle, "idle_opened": flood.opened,
                    "idle_open_failed": flood.open_failed,
                    "idle_closed_by_owner": flood.closed_by_owner,
                    "idle_held_at_end": len(flood.socks),
                    "big_frames": args.big, "big_frame_mib": args.frame_mib,
                    "big_mib_sent": [round(b / 2**20, 1) for b in flood.big_bytes_sent],
                    "big_closed_by_owner": sum(flood.big_closed_by_owner),
                    "peer_stores": len(peer_times), "peer_failures": len(peer_failures),
                    "peer_failure_examples": peer_failures[:3],
                    "peer_seconds": _seconds(peer_times),
                    "peer_answered_within_5s": sum(t <= ANSWER_WITHIN for t in peer_times),
                    "cli_stores": len(cli_times), "cli_failures": cli_failures,
                    "cli_seconds": _seconds(cli_times),
                    "ttl_store_swept": swept,
                    "owner_rss_mb_peak": round(rss.peak, 1), "owner_fds_peak": rss.peak_fds,
                }  # fmt: skip
            print(json.dumps({"during": during}), flush=True)
            time.sleep(1.0)
            doc, took = peer.call("store", {"content": "After the flood: the owner serves"}, 60)
            after = {"peer_store": [doc.get("status", doc.get("error")), round(took, 2)],
                     "owner_rss_mb": round(_rss_mb(owner.pid), 1),
                     "owner_fds": _open_fds(owner.pid),
                     "owner_alive": owner.poll() is None}  # fmt: skip
            print(json.dumps({"after": after}), flush=True)
        finally:
            peer.close()
        log = (root / "owner.log").read_text(errors="replace")
    growth = rss.peak - rss_before
    verdict = {
        "peer_stores_within_5s": not peer_failures and all(t <= ANSWER_WITHIN for t in peer_times),
        "rss_growth_mb": round(growth, 1),
        "rss_growth_within_50mb": growth <= RSS_GROWTH_MB,
        "ttl_swept": swept,
        "owner_log_too_many_open_files": log.count("Too many open files"),
        "owner_log_tracebacks": log.count("Traceback"),
        "owner_log_last_errors": [line[:160] for line in log.splitlines()
                                  if "Error" in line or "error" in line][-3:],
    }  # fmt: skip
    verdict["pass"] = bool(verdict["peer_stores_within_5s"] and verdict["rss_growth_within_50mb"]
                           and swept)  # fmt: skip
    print(json.dumps({"verdict": verdict}), flush=True)
    return verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=1100, help="idle connections held")
    parser.add_argument("--big", type=int, default=8, help="connections sending a big frame")
    parser.add_argument("--frame-mib", type=int, default=60, help="each big frame's size")
    parser.add_argument("--nofile", type=int, default=1024, help="the owner's RLIMIT_NOFILE")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds the flood lasts")
    parser.add_argument("--stores", type=int, default=8, help="stores through the peer")
    parser.add_argument("--cli-stores", type=int, default=2, help="of them also via the CLI")
    parser.add_argument("--keep-logs", type=Path, help="copy the owner's and peer's logs here")
    args = parser.parse_args()
    if args.idle > 5000 or args.big > 16 or args.frame_mib > 64 or args.hold > 300:
        raise SystemExit("bounded: at most 5000 idle connections, 16 frames of 64 MiB, 300 s")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.idle + args.big + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.idle + args.big + 512), hard))
    with tempfile.TemporaryDirectory(prefix="ferrex-flood-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o700)
        try:
            trial(root, args)
        finally:
            if args.keep_logs is not None:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for name in ("owner.log", "peer.log"):
                    with contextlib.suppress(OSError):
                        shutil.copy(root / name, args.keep_logs / name)


if __name__ == "__main__":
    main()
