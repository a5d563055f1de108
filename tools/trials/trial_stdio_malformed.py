"""Trial: a request after a malformed line on stdio, under CPU load (issue: "a request after a
malformed line is still lost").

    python -m tools.trials.trial_stdio_malformed [--runs 50] [--burners 3] [--grace 40]
        [--nonblocking] [--each] [--ferrex PATH]

Each run starts ``ferrex`` on a fresh data directory and writes, in one write, ``initialize``,
``notifications/initialized``, ``{not json}`` and a ping with id 2, keeps stdin open and reads
stdout for 20 s; a run whose ping has no answer by then is read ``--grace`` seconds more; then
stdin is closed and the process has 60 s to exit. Beside it run ``--burners`` processes that
spin on the CPU (each stops by itself after a bound that covers the whole trial, and is ended
when the trial ends). ``--nonblocking``: the server's stdin is a pipe whose read end is
O_NONBLOCK (as a client or a parent sharing that open file description may leave it). Prints a
line per lost run (``--each``: per run) with when each answer came, then the counts:

- ``lost``: runs where the ping had no result within 20 s of the write; of them, those that had
  not even the initialize answer by then (a start-up slower than the window), those without
  the -32700, those whose ping was answered in the grace time (late) and those never answered;
- ``leaked``: runs whose process had not exited 60 s after stdin closed (it is killed).

To measure other code, put its source first on ``PYTHONPATH`` (the ``ferrex`` script does not
put the current directory on the path).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools import harness
from tools.trials.trial_stdio import INITIALIZE, INITIALIZED, _line

SEQUENCE = (_line(INITIALIZE) + _line(INITIALIZED) + b"{not json}\n"
            + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')  # fmt: skip
READ_SECONDS = 20.0
EXIT_SECONDS = 60.0
_BURN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def burners(count: int, seconds: float) -> Iterator[None]:
    """``count`` processes that keep a CPU busy; each ends by itself after ``seconds``."""
    code = _BURN.format(seconds=float(seconds))
    processes = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait()


@dataclass(frozen=True)
class Outcome:
    answered: bool  # the ping's answer came within READ_SECONDS
    parse_error: bool  # the -32700 answer to the bad line came within READ_SECONDS
    exited: bool  # the process ended within EXIT_SECONDS of stdin closing
    seen: list[tuple[float, dict[str, object]]]  # each message, seconds after the write
    stderr: bytes

    def at(self, request_id: int | None) -> float | None:
        """When the first answer with this id came (seconds after the write), if it came."""
        return next((at for at, m in self.seen if m.get("id") == request_id), None)


def one_run(ferrex: str, home: Path, grace: float = 0.0, *, nonblocking: bool = False) -> Outcome:
    """One run; a run whose ping is not answered in time is read ``grace`` seconds more
    (stdin still open), to tell an answer that comes late from one that never comes.
    ``nonblocking``: the server's stdin reads non-blocking (O_NONBLOCK on the pipe's read end,
    as a client or a parent sharing that description may leave it)."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, not nonblocking)
    # stderr goes to a file: a pipe nobody reads could fill and stall the server.
    with tempfile.TemporaryFile() as log, open(write_end, "wb") as stdin:
        try:
            process = subprocess.Popen([ferrex, "--home", str(home)], stdin=read_end,
                                       stdout=subprocess.PIPE, stderr=log)  # fmt: skip
        finally:
            os.close(read_end)
        process.stdin = stdin
        assert process.stdout is not None
        try:
            began = time.monotonic()
            process.stdin.write(SEQUENCE)
            process.stdin.flush()
            reader = _Lines(process.stdout.fileno(), began)
            reader.until(2, began + READ_SECONDS)
            answered = any(m.get("id") == 2 and "result" in m for _, m in reader.seen)
            parse_error = reader.has(None)
            if not answered and grace > 0:
                reader.until(2, began + READ_SECONDS + grace)
            process.stdin.close()
            try:
                process.wait(timeout=EXIT_SECONDS)
                exited = True
            except subprocess.TimeoutExpired:
                exited = False
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stdout.close()
        log.seek(0)
        stderr = log.read()
    return Outcome(answered, parse_error, exited, reader.seen, stderr)


class _Lines:
    """The JSON lines a server writes, each with when it was read (seconds after ``began``)."""

    def __init__(self, fd: int, began: float) -> None:
        self.fd = fd
        self.began = began
        self.seen: list[tuple[float, dict[str, object]]] = []
        self._buffer = b""

    def has(self, request_id: int | None) -> bool:
        return any(m.get("id") == request_id for _, m in self.seen)

    def until(self, request_id: int, deadline: float) -> None:
        """Read until the answer to ``request_id`` has come, or the deadline, or the end."""
        while not self.has(request_id) and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return
            *lines, self._buffer = (self._buffer + chunk).split(b"\n")
            now = time.monotonic() - self.began
            self.seen += [(now, json.loads(raw)) for raw in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--burners", type=int, default=3)
    parser.add_argument("--grace", type=float, default=40.0,
                        help="how long a lost run is read more: late or never")  # fmt: skip
    parser.add_argument("--nonblocking", action="store_true",
                        help="the server's stdin reads non-blocking")  # fmt: skip
    parser.add_argument("--each", action="store_true", help="a line for every run")
    parser.add_argument("--ferrex", default=harness.FERREX)
    args = parser.parse_args()
    # SIGTERM ends the trial through the ``finally`` blocks, so no burner or server is left
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    bound = args.runs * (READ_SECONDS + args.grace + EXIT_SECONDS) + 60
    lost = unstarted = no_error = late = leaked = 0
    with tempfile.TemporaryDirectory() as scratch, burners(args.burners, bound):
        for run in range(args.runs):
            home = Path(scratch) / str(run)
            outcome = one_run(args.ferrex, home, args.grace, nonblocking=args.nonblocking)
            leaked += not outcome.exited
            arrivals = ", ".join(f"id {m.get('id')} at {at:.1f} s" for at, m in outcome.seen)
            if args.each:
                print(f"run {run}: {arrivals or 'no answer'}", flush=True)
            if outcome.answered:
                continue
            lost += 1
            initialized = outcome.at(1)
            unstarted += initialized is None or initialized > READ_SECONDS
            no_error += not outcome.parse_error
            late += outcome.at(2) is not None
            print(f"run {run}: lost ({arrivals or 'no answer'}); its stderr ends:", flush=True)
            for text in outcome.stderr.decode(errors="replace").splitlines()[-8:]:
                print("    " + text, flush=True)
    stdin = "non-blocking" if args.nonblocking else "blocking"
    print(f"runs {args.runs}, lost {lost}, leaked {leaked}; {args.burners} burners, {stdin} stdin")
    print(f"of the lost: {unstarted} without even the initialize answer in {READ_SECONDS:.0f} s, "
          f"{no_error} without the -32700, {late} answered within {args.grace:.0f} s more, "
          f"{lost - late} never")  # fmt: skip


if __name__ == "__main__":
    main()
