"""A benchmark's guard against a busy machine: figures taken beside other work are noise.

Every benchmark in ``tools/`` calls :func:`begin` right after parsing its arguments (with
:func:`add_arguments` on its parser). It prints the load average and the usable cores, and
refuses to run (exit 3) when the one-minute load is above ``--max-load`` (1.5 by default,
for this project's 2-core machines) unless ``--noisy`` is given. At exit it prints the load
again; a run that was told ``--noisy``, or whose load rose past the bound while it ran,
ends with a ``NOISY`` line, so figures from it are never mistaken for quiet ones.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from typing import Final

DEFAULT_MAX_LOAD: Final = 1.5
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

    def after() -> None:
        now = os.getloadavg()[0]
        print(f"after: {load_line()}", flush=True)
        if args.noisy or now > bound:
            why = "run with --noisy" if args.noisy else f"the load rose to {now:.2f}"
            print(f"NOISY: these figures were taken on a busy machine ({why}); not for the README")

    atexit.register(after)
