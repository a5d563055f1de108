"""What every benchmark and evaluation in ``tools/`` shares: the checkout's root, timing,
percentiles, the quiet-machine gate, and temporary homes.

Run a tool as a module from the checkout, ``python -m tools.NAME``: ``tools`` is a package and
no tool edits ``sys.path`` to find it (``bench_ab``'s worker puts the tree it is to run first,
which is that tool's point).

**The quiet-machine gate.** Every benchmark calls :func:`begin` right after parsing its
arguments (with :func:`add_arguments` on its parser). It prints the load average and the
usable cores, and refuses to run (exit 3) when the one-minute load is above ``--max-load``
(1.5 by default, for this project's 2-core machines) unless ``--noisy`` is given. At exit it
prints the load again and how much CPU *other* processes used while it ran: the machine's busy
time from ``/proc/stat`` less this process's own and its waited-for children's (``os.times``).
The load average after a run counts the benchmark's own work, so it cannot say whether the run
was disturbed; the others' CPU can. A run that was told ``--noisy``, or beside which other
processes used more than ``--max-others`` cores on average, ends with a ``NOISY`` line, so
figures from it are never mistaken for quiet ones.

**Timing and percentiles.** :func:`timed` runs one call and gives its wall-clock seconds, the
CPU seconds this process spent meanwhile (every thread: on a loaded machine the steadier of
the two) and its answer. :func:`percentile` is the nearest-rank quantile, the one definition
every tool reports p95 (and any other quantile) with; p50 is :func:`statistics.median`.

**Temporary homes.** :func:`scratch` is a working directory removed at the end unless the
caller keeps it; :func:`home_copy` a fresh copy of a built home, so a measurement never
changes the home it was given.

**Generated files.** :func:`write_or_check` is the command line of every tool that writes
files from the code (``reference_docs``, ``sdk_types``): write them, or with ``--check`` say
which are stale (``--diff``: how) and exit 1.
"""

from __future__ import annotations

import argparse
import atexit
import difflib
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Generic, TypeVar

#: The checkout: the directory holding ``tools/``, ``golden_set/`` and ``docs/``.
ROOT: Final = Path(__file__).resolve().parents[1]
#: The ``ferrex`` command beside this interpreter (the checkout's, in its venv).
FERREX: Final = str(Path(sys.executable).with_name("ferrex"))

DEFAULT_MAX_LOAD: Final = 1.5
DEFAULT_MAX_OTHERS: Final = 0.25
REFUSED_EXIT: Final = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--noisy", action="store_true",
        help="run even when the machine is busy; the output is then marked NOISY",
    )  # fmt: skip
    parser.add_argument(
        "--max-load", type=float, default=DEFAULT_MAX_LOAD, metavar="LOAD",
        help=f"refuse to start above this one-minute load average (default {DEFAULT_MAX_LOAD})",
    )  # fmt: skip
    parser.add_argument(
        "--max-others", type=float, default=DEFAULT_MAX_OTHERS, metavar="CORES",
        help="mark the run NOISY when other processes used more than this many cores on average "
        f"while it ran (default {DEFAULT_MAX_OTHERS})",
    )  # fmt: skip


def busy_seconds() -> float | None:
    """CPU seconds the whole machine has been busy since boot (``/proc/stat``), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait
    ticks = [int(x) for x in fields[1:]]
    busy = sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def own_seconds() -> float:
    """CPU seconds of this process and the children it has waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def wall_seconds() -> float:
    return time.monotonic()


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {cores} usable cores"


def begin(args: argparse.Namespace) -> None:
    """Print the load; refuse a busy machine unless told ``--noisy``; report again at exit."""
    bound = float(args.max_load)
    one = os.getloadavg()[0]
    print(f"before: {load_line()}", flush=True)
    if one > bound and not args.noisy:
        print(
            f"refusing to measure: the one-minute load {one:.2f} is above {bound:g}; wait for "
            "a quiet machine, or pass --noisy to run anyway (the output is then marked NOISY)",
            file=sys.stderr,
        )
        raise SystemExit(REFUSED_EXIT)

    started = wall_seconds()
    busy0, own0 = busy_seconds(), own_seconds()
    limit = float(getattr(args, "max_others", DEFAULT_MAX_OTHERS))

    def after() -> None:
        wall = max(wall_seconds() - started, 1e-9)
        busy1 = busy_seconds()
        others: float | None = None
        if busy0 is not None and busy1 is not None:
            others = max(0.0, (busy1 - busy0) - (own_seconds() - own0)) / wall
        said = f"; other processes used {others:.2f} cores on average" if others is not None else ""
        print(f"after: {load_line()}{said}", flush=True)
        if args.noisy or (others is not None and others > limit):
            why = "run with --noisy" if args.noisy else f"other processes used {others:.2f} cores"
            print(f"NOISY: these figures were taken on a busy machine ({why}); not for the README")

    atexit.register(after)


# --- Timing and percentiles ------------------------------------------------------------------

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True)
class Took(Generic[T_co]):
    """One call's wall-clock seconds, the CPU seconds this process spent meanwhile (all its
    threads), and what the call answered."""

    wall: float
    cpu: float
    value: T_co


def timed(call: Callable[[], T]) -> Took[T]:
    """Run ``call`` once and time it, wall clock and this process's CPU."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = call()
    return Took(time.perf_counter() - wall, time.process_time() - cpu, value)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values``: the least value that at
    least a share ``q`` of them do not exceed."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# --- Temporary homes -------------------------------------------------------------------------


class NotEmpty(ValueError):
    """A directory to keep was asked to be new or empty and holds something."""


@contextmanager
def scratch(prefix: str, keep: Path | None = None, *, empty: bool = False) -> Iterator[Path]:
    """A working directory: ``keep`` (made if missing, left in place; with ``empty``, refused
    with :class:`NotEmpty` unless new or empty) when given, otherwise a new temporary one,
    removed at the end."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        if empty and any(keep.iterdir()):
            raise NotEmpty(f"--keep {keep}: the directory must be new or empty")
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def home_copy(home: Path, into: Path, name: str = "home") -> Path:
    """A copy of the built home ``home`` at ``into / name`` (symbolic links kept as links)."""
    if not home.is_dir():
        raise SystemExit(f"no home at {home}: build one first (python -m tools.bench --reuse DIR)")
    copy = into / name
    shutil.copytree(home, copy, symlinks=True)
    return copy


def write_or_check(
    argv: Sequence[str] | None, description: str, files: Callable[[], dict[Path, str]], command: str
) -> int:
    """Write the generated ``files`` (path → text, computed once), or with ``--check`` print
    each stale one (``--diff``: the difference) and return 1 if any is."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="only say which files are stale")
    parser.add_argument("--diff", action="store_true", help="with --check: show the differences")
    args = parser.parse_args(argv)
    wanted = files()
    if args.check:
        out_of_date = stale(wanted)
        for path in out_of_date:
            print(f"{path.relative_to(ROOT)} is not up to date: python -m {command}")
            if args.diff:
                old = path.read_text(encoding="utf-8") if path.exists() else ""
                print("".join(difflib.unified_diff(
                    old.splitlines(True), wanted[path].splitlines(True), "committed", "generated"
                )))  # fmt: skip
        return 1 if out_of_date else 0
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


def stale(files: dict[Path, str]) -> list[Path]:
    """The generated files whose text on disk differs from ``files``."""
    return [
        path
        for path, text in files.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
