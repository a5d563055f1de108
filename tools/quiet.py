"""A benchmark's guard against a busy machine: figures taken beside other work are noise.

Every benchmark in ``tools/`` calls :func:`begin` right after parsing its arguments (with
:func:`add_arguments` on its parser). It prints the load average and the usable cores, and
refuses to run (exit 3) when the one-minute load is above ``--max-load`` (1.5 by default,
for this project's 2-core machines) unless ``--noisy`` is given. At exit it prints the load
again and how much CPU *other* processes used while it ran: the machine's busy time from
``/proc/stat`` less this process's own and its waited-for children's (``os.times``). The load
average after a run counts the benchmark's own work, so it cannot say whether the run was
disturbed; the others' CPU can. A run that was told ``--noisy``, or beside which other
processes used more than ``--max-others`` cores on average, ends with a ``NOISY`` line, so
figures from it are never mistaken for quiet ones.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import time
from typing import Final

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
