"""Trial of three edges of issue #24, bounded in time and count, on loopback only.

1. **Host probes** (DNS rebinding): an open-loopback ``serve --http`` is asked for
   ``/api/v1/stats`` and a forget action under host names that are not addresses
   (``127.attacker.example`` …) and under real loopback names; counts how many of each get in.
2. **Slow connections under a low descriptor limit**: ``serve --http`` with RLIMIT_NOFILE set
   low (1,024 by default), N (1,000) connections that send a request head a byte now and then
   and never finish it (closed ones are reopened), then another client's MCP call: how long it
   takes (or whether it is answered within 5 s at all) and how much the server's log grew.
3. **Odd JSON-RPC ids** over stdio: requests whose ``id`` is an object, an array, a float or a
   boolean; counts how many get any answer (the README promises -32600 for each).

Every server runs on a fresh temporary home and is stopped at the end. To measure other code,
put its source first on ``PYTHONPATH`` (the servers are started as ``python -c 'from
ferrex.cli import main; main()'`` with this interpreter).

    nice -n 10 .venv/bin/python -m tools.trials.trial_edges [--slow 1000] [--nofile 1024]
        [--hold 20]
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import resource
import socket
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes = b"",
    timeout: float = 30,
) -> tuple[int, bytes]:
    """One HTTP/1.1 request on a fresh connection; (status, body), status 0 if none came."""
    head = [f"{method} {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    head += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall("\r\n".join(head).encode() + body)
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError:
        return 0, b""
    data = b"".join(chunks)
    try:
        status = int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0, data
    return status, data.split(b"\r\n\r\n", 1)[-1]


@contextlib.contextmanager
def _http_server(
    home: Path, log: Path, nofile: int | None = None
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = _free_port()

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, preexec_fn=limit,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while _request(port, "GET", "/healthz", {"Host": f"127.0.0.1:{port}"}, timeout=2)[0] != 200:
            if process.poll() is not None:
                raise SystemExit(f"the server exited: {log.read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start within 180 s")
            time.sleep(0.2)
        yield port, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _mcp_stats(port: int, token: str | None, timeout: float) -> tuple[int, float]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "stats", "arguments": {}}}).encode()  # fmt: skip
    headers = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
    if token:
        headers["Authorization"] = f"Bearer {token}"
    start = time.monotonic()
    status, _ = _request(port, "POST", "/mcp", headers, body, timeout=timeout)
    return status, time.monotonic() - start


# -- 1: host probes ---------------------------------------------------------------------------


def trial_hosts(root: Path) -> dict[str, Any]:
    home = root / "hosts"
    home.mkdir()
    (home / "ferrex.toml").write_text("[auth]\nopen_loopback = true\n")
    with _http_server(home, root / "hosts.log") as (port, _):
        rebound = [f"127.attacker.example:{port}", f"127.0.0.1.nip.io:{port}",
                   f"localhost.attacker.example:{port}", f"attacker.example:{port}",
                   f"127.1.example:{port}", "127.attacker.example"]  # fmt: skip
        local = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
        probes = 0
        let_in = 0
        for host in rebound:
            for method, path, body in (
                ("GET", "/api/v1/stats", b""),
                ("GET", "/api/v1/recall?q=anything", b""),
                ("POST", "/actions/forget", b"ids=mem_00000000000000000000000000&confirmed=yes"),
            ):
                headers = {"Host": host, "Origin": f"http://{host}",
                           "Content-Type": "application/x-www-form-urlencoded"}  # fmt: skip
                status, _ = _request(port, method, path, headers, body)
                probes += 1
                let_in += status not in (0, 403, 421)
        answered_local = sum(
            _request(port, "GET", "/api/v1/stats", {"Host": h})[0] == 200 for h in local
        )
    return {"rebound_probes": probes, "rebound_let_in": let_in,
            "loopback_names": len(local), "loopback_answered": answered_local}  # fmt: skip


# -- 2: slow connections -----------------------------------------------------------------------


class Slowloris:
    """N connections that trickle a request head and never end it; closed ones reopened."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.socks: dict[int, socket.socket] = {}
        self.stop = threading.Event()
        self.opened = 0
        self.closed_by_server = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> None:
        s = socket.socket()
        s.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            s.connect(("127.0.0.1", self.port))
        self.socks[s.fileno()] = s
        self.opened += 1

    def _drop(self, fd: int) -> None:
        s = self.socks.pop(fd)
        with contextlib.suppress(OSError):
            s.close()

    def _run(self) -> None:
        while len(self.socks) < self.count and not self.stop.is_set():
            self._open()
        time.sleep(0.5)
        for s in list(self.socks.values()):
            with contextlib.suppress(OSError):
                s.send(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n".encode())
        while not self.stop.is_set():
            for fd, s in list(self.socks.items()):
                try:
                    if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                        self.closed_by_server += 1
                        self._drop(fd)
                        continue
                except BlockingIOError:
                    pass
                except OSError as exc:
                    if exc.errno == errno.ENOTCONN:  # still connecting (a full backlog)
                        continue
                    self.closed_by_server += 1
                    self._drop(fd)
                    continue
                with contextlib.suppress(OSError):
                    s.send(b"X-a: b\r\n")
            while len(self.socks) < self.count and not self.stop.is_set():
                self._open()
            self.stop.wait(1.0)
        for fd in list(self.socks):
            self._drop(fd)

    def __enter__(self) -> Slowloris:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def trial_slow(root: Path, count: int, nofile: int, hold: float) -> dict[str, Any]:
    home = root / "slow"
    home.mkdir()
    log = root / "slow.log"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 256), hard))
    with _http_server(home, log, nofile=nofile) as (port, process):
        token = (home / "run" / "http.token").read_text().strip()
        before_status, before_seconds = _mcp_stats(port, token, timeout=60)
        log_before = log.stat().st_size
        calls: list[tuple[int, float]] = []
        with Slowloris(port, count) as attack:
            time.sleep(min(hold, 5.0))
            end = time.monotonic() + hold
            while time.monotonic() < end and len(calls) < 10:
                calls.append(_mcp_stats(port, token, timeout=ANSWER_WITHIN * 2))
                time.sleep(1.0)
            held = len(attack.socks)
            opened = attack.opened
            closed = attack.closed_by_server
        log_after = log.stat().st_size
        alive = process.poll() is None
        after_status, after_seconds = _mcp_stats(port, token, timeout=60)
    answered = [s for s, t in calls if s == 200 and t <= ANSWER_WITHIN]
    return {
        "slow_connections": count, "nofile": nofile, "hold_seconds": hold,
        "call_before": [before_status, round(before_seconds, 2)],
        "calls_during": len(calls), "answered_within_5s": len(answered),
        "slowest_seconds": round(max((t for _, t in calls), default=0.0), 2),
        "statuses_during": sorted({s for s, _ in calls}),
        "slow_held_at_end": held, "slow_opened": opened, "slow_closed_by_server": closed,
        "log_growth_bytes": log_after - log_before, "server_alive": alive,
        "call_after": [after_status, round(after_seconds, 2)],
    }  # fmt: skip


# -- 11: odd ids over stdio --------------------------------------------------------------------


def trial_ids(root: Path, wait: float) -> dict[str, Any]:
    home = root / "ids"
    process = subprocess.Popen(
        [*FERREX, "--home", str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with contextlib.suppress(ValueError), lock:
                answers.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def send(doc: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps(doc) + "\n").encode())
        process.stdin.flush()

    odd: list[Any] = [{"a": 1}, [1], 1.5, True, False]
    try:
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "trial", "version": "0"}}})  # fmt: skip
        deadline = time.monotonic() + 120
        while not any(a.get("id") == 0 for a in answers) and time.monotonic() < deadline:
            time.sleep(0.1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for bad in odd:
            send({"jsonrpc": "2.0", "id": bad, "method": "tools/list"})
        send({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with lock:
                if any(a.get("id") == 99 for a in answers):
                    break
            time.sleep(0.1)
        time.sleep(1.0)  # answers to the odd ids may come after the good one
    finally:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    with lock:
        seen = list(answers)
    # an answer to an odd id carries it back, or (for an id that cannot be echoed) id null
    # (compared with their types: in Python True == 1 and False == 0, the control ids)
    to_odd = [
        a for a in seen
        if ("id" in a and a["id"] is None)
        or any(type(a.get("id")) is type(o) and a.get("id") == o for o in odd)
    ]  # fmt: skip
    return {"odd_ids_sent": len(odd), "odd_ids_answered": len(to_odd),
            "control_answered": any(a.get("id") == 99 for a in seen)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=1000, help="slow connections (item 2)")
    parser.add_argument("--nofile", type=int, default=1024, help="the server's RLIMIT_NOFILE")
    parser.add_argument("--hold", type=float, default=20.0, help="seconds the attack lasts")
    parser.add_argument("--only", choices=("hosts", "slow", "ids"), action="append")
    args = parser.parse_args()
    wanted = args.only or ["hosts", "slow", "ids"]
    if args.slow > 5000 or args.hold > 120:
        raise SystemExit("bounded: at most 5000 slow connections and 120 s")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ferrex-trial-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o700)
        if "hosts" in wanted:
            results["1_hosts"] = trial_hosts(root)
            print(json.dumps({"1_hosts": results["1_hosts"]}), flush=True)
        if "slow" in wanted:
            results["2_slow"] = trial_slow(root, args.slow, args.nofile, args.hold)
            print(json.dumps({"2_slow": results["2_slow"]}), flush=True)
        if "ids" in wanted:
            results["11_ids"] = trial_ids(root, wait=30.0)
            print(json.dumps({"11_ids": results["11_ids"]}), flush=True)


if __name__ == "__main__":
    main()
