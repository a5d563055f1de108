"""What a stdio client meets first: the server's CPU before its ``initialize`` answer, and the
first recall after it.

    python -m tools.bench_startup [--runs 5] [--memories 200] [--home DIR] [--ferrex PATH]
                                  [--baseline PATH]

Each run, alternating the two sides so both see the same load:

- ``sdk``: a fresh ``python -c "import mcp.server.lowlevel"``, its CPU seconds (user + system,
  from ``/proc/PID/stat`` once the import is done): the MCP SDK's own import, which no server
  built on it can avoid;
- ``server``: a fresh ``ferrex --home DIR`` on a home holding ``--memories`` memories (built
  once through the import path, or reused with ``--home``). The client writes ``initialize``
  and, the moment the answer is read, takes the server's CPU seconds from
  ``/proc/PID/stat`` (utime + stime, every thread) and which heavy native libraries its
  ``/proc/PID/maps`` holds then (ONNX Runtime, Qdrant Edge, apsw, numpy) and whether the data
  directory's owner lock is taken. Then ``notifications/initialized``, ``tools/list`` and
  one ``recall``: the wall seconds from the ``initialize`` answer to the recall's, and the
  server's CPU by then.

With ``--baseline PATH`` (another ``ferrex`` executable, say one built from an earlier
commit), each run measures it too, right after the first, on the same home: an A/B in one run.

``extra`` is the server's CPU at its answer minus the SDK import's in the same run (the goal
is at most 0.3 s). Wall times move with the load printed beside them; CPU seconds move less.
Nothing is asserted: the benchmark prints.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools import harness

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
QUERY = "what did we decide about the release"
RECALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "recall", "arguments": {"query": QUERY}}}  # fmt: skip
NATIVE = ("onnxruntime", "qdrant_edge", "apsw", "numpy")
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of every thread of a live process, from ``/proc/PID/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15)


def loaded(pid: int) -> list[str]:
    """Which of the heavy native libraries the process has mapped."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return sorted(name for name in NATIVE if f"/{name}/" in maps)


def sdk_import() -> float:
    """CPU seconds of a fresh interpreter once it has imported the MCP SDK's low-level server,
    read from ``/proc`` while it waits, as the server's are (its exit is not counted)."""
    script = "import sys, mcp.server.lowlevel; print('ready', flush=True); sys.stdin.read()"
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        if process.stdout.readline() != b"ready\n":
            raise SystemExit("importing mcp.server.lowlevel failed")
        return cpu_seconds(process.pid)
    finally:
        process.stdin.close()
        process.wait(timeout=120)
        process.stdout.close()


class _Pipe:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.fd = process.stdout.fileno()
        self.buffer = b""

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.process.stdin.flush()

    def answer(self, want: int, seconds: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while True:
            while b"\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(raw)
                if message.get("id") == want:
                    if "result" not in message:
                        raise SystemExit(f"request {want} failed: {message}")
                    return dict(message)
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"no answer to request {want} within {seconds} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    raise SystemExit("the server closed stdout")
                self.buffer += chunk


def server_run(ferrex: str, home: Path) -> dict[str, Any]:
    began = time.perf_counter()
    process = subprocess.Popen(
        [ferrex, "--home", str(home)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pipe = _Pipe(process)
    try:
        pipe.send(INITIALIZE)
        pipe.answer(1)
        answered = time.perf_counter()
        at_init = cpu_seconds(process.pid)
        libraries = loaded(process.pid)
        owned = _lock_held(home)
        pipe.send(INITIALIZED, TOOLS_LIST)
        pipe.answer(2)
        pipe.send(RECALL)
        recall = pipe.answer(3)
        recalled = time.perf_counter()
        at_recall = cpu_seconds(process.pid)
        if recall["result"].get("isError"):
            raise SystemExit(f"the recall failed: {recall['result']}")
    finally:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        process.wait(timeout=120)
        process.stdout.close()
    return {"init_wall": answered - began, "init_cpu": at_init, "loaded": libraries,
            "owner_lock": owned, "recall_wall": recalled - answered,
            "recall_cpu": at_recall}  # fmt: skip


def _medians(rows: list[dict[str, Any]]) -> Callable[[str], float]:
    return lambda key: statistics.median(float(r[key]) for r in rows)


def _lock_held(home: Path) -> bool:
    from ferrex.ownership import is_held

    return is_held(home)


def _build(home: Path, memories: int) -> None:
    from tools.bench_recall import build

    print(f"building a home of {memories} memories in {home} …", flush=True)
    build(home, memories, random.Random(7))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--home", type=Path, help="reuse this home (built when empty)")
    parser.add_argument("--ferrex", default=harness.FERREX, help="the ferrex executable to start")
    parser.add_argument("--baseline", help="another ferrex executable, measured alternately")
    harness.add_arguments(parser)
    options = parser.parse_args()
    harness.begin(options)
    with tempfile.TemporaryDirectory(prefix="ferrex-startup-") as scratch:
        home = options.home or Path(scratch) / "home"
        if not (home / "journal").exists():
            _build(home, options.memories)
        server_run(options.ferrex, home)  # the model cache and the page cache warm, unmeasured
        sides = {"ferrex": options.ferrex}
        if options.baseline:
            sides["baseline"] = options.baseline
            server_run(options.baseline, home)
        rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for run in range(options.runs):
            sdk = sdk_import()
            print(f"run {run + 1}: sdk import {sdk:.2f} s CPU", flush=True)
            for side, executable in sides.items():
                row = server_run(executable, home)
                row["sdk_cpu"] = sdk
                row["extra"] = row["init_cpu"] - sdk
                rows[side].append(row)
                print(f"  {side}: initialize answered after {row['init_wall']:.2f} s wall, "
                      f"{row['init_cpu']:.2f} s CPU (extra {row['extra']:+.2f} s), native "
                      f"libraries then: {', '.join(row['loaded']) or 'none'}, owner lock "
                      f"{'taken' if row['owner_lock'] else 'free'}; first recall "
                      f"{row['recall_wall']:.2f} s wall after it, {row['recall_cpu']:.2f} s "
                      f"CPU by then; {harness.load_line()}", flush=True)  # fmt: skip
        for side, measured in rows.items():
            median = _medians(measured)
            print(f"{side}, median of {len(measured)}: sdk import {median('sdk_cpu'):.2f} s "
                  f"CPU; at initialize {median('init_cpu'):.2f} s CPU (extra "
                  f"{median('extra'):+.2f} s), {median('init_wall'):.2f} s wall; first recall "
                  f"{median('recall_wall'):.2f} s wall after initialize, "
                  f"{median('recall_cpu'):.2f} s CPU in all")  # fmt: skip


if __name__ == "__main__":
    main()
