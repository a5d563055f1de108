"""Trials of the stdio server's edges (issues #29 and #24 items 11-12), bounded in count and time.

    python -m tools.trials.trial_stdio [--runs N] [--ferrex PATH]

Each run starts a fresh ``ferrex`` on a new data directory and prints one line per trial:

- ``one-write``: initialize, initialized, ``{not json}`` and a ping in one write; counts
  pings never answered (within 20 s, stdin held open);
- ``bad-id``: requests whose id is an object, array, float, boolean or null; counts those
  with no -32600 answer;
- ``exit``: a client that leaves right after ``initialize`` (a fresh data directory, so the
  model is still loading, then the same directory again): seconds from stdin closing to the
  process's exit, and how many runs printed ``terminate called`` on stderr.

Times are wall-clock on whatever else the machine is doing; they are the trial's figures, not
a benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from tools import harness

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "trial", "version": "1"}}}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
BAD_IDS = ["{}", "[1]", "1.5", "true", "null"]


def _line(message: Mapping[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class _Server:
    def __init__(self, ferrex: str, home: Path) -> None:
        self.process = subprocess.Popen(
            [ferrex, "--home", str(home)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.buffer = b""

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def until(self, want: object, seconds: float) -> list[dict[str, object]]:
        """Messages read until one with ``id == want`` (or the time is up)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        seen: list[dict[str, object]] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            while b"\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(raw)
                seen.append(message)
                if message.get("id") == want and ("result" in message or want is None):
                    return seen
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self.buffer += chunk
        return seen

    def close(self) -> tuple[float, bytes]:
        assert self.process.stdin is not None and self.process.stderr is not None
        began = time.monotonic()
        self.process.stdin.close()
        self.process.wait(timeout=120)
        took = time.monotonic() - began
        err = self.process.stderr.read()
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        return took, err


def _one_write(ferrex: str, home: Path) -> bool:
    server = _Server(ferrex, home)
    server.write(_line(INITIALIZE) + _line(INITIALIZED) + b"{not json}\n"
                 + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')  # fmt: skip
    answered = any(m.get("id") == 2 for m in server.until(2, 20))
    server.close()
    return answered


def _bad_ids(ferrex: str, home: Path) -> int:
    server = _Server(ferrex, home)
    server.write(_line(INITIALIZE) + _line(INITIALIZED))
    server.until(1, 60)
    missing = 0
    for number, bad in enumerate(BAD_IDS, start=10):
        server.write(b'{"jsonrpc":"2.0","id":' + bad.encode() + b',"method":"ping"}\n'
                     + b'{"jsonrpc":"2.0","id":' + str(number).encode()
                     + b',"method":"ping"}\n')  # fmt: skip
        seen = server.until(number, 20)
        if not any(m.get("id") is None and "error" in m for m in seen):
            missing += 1
    server.close()
    return missing


def _exit_after_initialize(ferrex: str, home: Path) -> tuple[float, bool]:
    server = _Server(ferrex, home)
    server.write(_line(INITIALIZE))
    server.until(1, 60)
    took, err = server.close()
    return took, b"terminate called" in err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ferrex", default=harness.FERREX)
    args = parser.parse_args()
    lost = bad = aborts = 0
    fresh: list[float] = []
    again: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.runs):
            root = Path(scratch) / str(run)
            lost += not _one_write(args.ferrex, root / "a")
            bad += _bad_ids(args.ferrex, root / "b")
            for seconds_list, home in ((fresh, root / "c"), (again, root / "c")):
                took, aborted = _exit_after_initialize(args.ferrex, home)
                seconds_list.append(took)
                aborts += aborted
    print(f"one-write: {lost} of {args.runs} pings never answered")
    print(f"bad-id: {bad} of {args.runs * len(BAD_IDS)} requests with a bad id unanswered")
    for name, times in (("fresh", fresh), ("existing", again)):
        print(f"exit ({name} data directory): median {statistics.median(times):.2f} s, "
              f"max {max(times):.2f} s after stdin closed")  # fmt: skip
    print(f"exit: {aborts} of {2 * args.runs} runs printed 'terminate called'")


if __name__ == "__main__":
    main()
