"""Trial: a request after a malformed line on stdio, under CPU load (issue: "a request after a
malformed line is still lost").

    python -m tools.trials.trial_stdio_malformed [--runs 50] [--burners 3] [--ferrex PATH]

Each run starts ``ferrex`` on a fresh data directory and writes, in one write, ``initialize``,
``notifications/initialized``, ``{not json}`` and a ping with id 2, keeps stdin open and reads
stdout for up to 20 s; then closes stdin and waits up to 60 s for the process to exit. Beside
it run ``--burners`` processes that spin on the CPU (each stops by itself after
``--burn-seconds``, and is ended when the trial ends). Prints one line per lost run and then
the counts:

- ``lost``: runs where the ping's answer never came (of them, ``no -32700``: runs where the
  error answer to the bad line did not come either);
- ``leaked``: runs whose process had not exited 60 s after stdin closed (it is killed).
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

from tools.trial_stdio import INITIALIZE, INITIALIZED, _line

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


def one_run(ferrex: str, home: Path, grace: float = 0.0) -> Outcome:
    """One run; a run whose ping is not answered in time is read ``grace`` seconds more
    (stdin still open), to tell an answer that comes late from one that never comes."""
    # stderr goes to a file: a pipe nobody reads could fill and stall the server.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([ferrex, "--home", str(home)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=log)  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        try:
            began = time.monotonic()
            process.stdin.write(SEQUENCE)
            process.stdin.flush()
            reader = _Lines(process.stdout.fileno(), began)
            reader.until(2, began + READ_SECONDS)
            answered = reader.has(2)
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
    parser.add_argument("--each", action="store_true", help="a line for every run")
    parser.add_argument("--ferrex", default=str(Path(sys.executable).with_name("ferrex")))
    args = parser.parse_args()
    # SIGTERM ends the trial through the ``finally`` blocks, so no burner or server is left
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    bound = args.runs * (READ_SECONDS + args.grace + EXIT_SECONDS) + 60
    lost = unstarted = no_error = late = leaked = 0
    with tempfile.TemporaryDirectory() as scratch, burners(args.burners, bound):
        for run in range(args.runs):
            outcome = one_run(args.ferrex, Path(scratch) / str(run), args.grace)
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
    print(f"runs {args.runs}, lost {lost}, leaked {leaked}; {args.burners} burners")
    print(f"of the lost: {unstarted} without even the initialize answer in {READ_SECONDS:.0f} s, "
          f"{no_error} without the -32700, {late} answered within {args.grace:.0f} s more, "
          f"{lost - late} never")  # fmt: skip


if __name__ == "__main__":
    main()
