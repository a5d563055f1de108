"""A progress line for long work (replay, import, export, re-embed): on a terminal only.

Shows a bar, done/total, percent, rate and ETA on stderr, redrawn at most five times a
second, when stderr is a terminal; silent otherwise, and when the command was asked for
``--json`` (``quiet``), so scripts and machine-read output stay clean.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO


@contextmanager
def progress(
    label: str, unit: str = "records", stream: TextIO | None = None, *, quiet: bool = False
) -> Iterator[Callable[[int, int], None]]:
    """Yields an ``update(done, total)`` callback; a no-op when not on a terminal or
    ``quiet``."""
    out = stream if stream is not None else sys.stderr
    if quiet or not out.isatty():
        yield lambda done, total: None
        return
    started = time.monotonic()
    last = [0.0, -1]

    def update(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] < 0.2 and done < total:
            return
        last[0], last[1] = now, done
        out.write("\r" + line(label, unit, done, total, now - started))
        out.flush()

    try:
        yield update
    finally:
        if last[1] >= 0:
            out.write("\n")
            out.flush()


#: Characters of the bar between its brackets.
BAR_WIDTH = 24


def line(label: str, unit: str, done: int, total: int, elapsed: float) -> str:
    """One progress line: ``label  [bar]  done/total  pct  rate  ETA`` (the ETA from the
    rate so far; ``--:--`` until there is one)."""
    done = max(0, min(done, total)) if total > 0 else done
    rate = done / elapsed if elapsed > 0 else 0.0
    fraction = done / total if total > 0 else 1.0
    filled = round(BAR_WIDTH * fraction)
    bar = "#" * filled + "-" * (BAR_WIDTH - filled)
    if rate > 0:
        eta = round((total - done) / rate)
        left = (
            f"{eta // 3600:d}:{eta // 60 % 60:02d}:{eta % 60:02d}"
            if eta >= 3600
            else (f"{eta // 60:d}:{eta % 60:02d}")
        )
    else:
        left = "--:--" if done < total else "0:00"
    return (
        f"{label}  [{bar}]  {done:,}/{total:,} {unit}  {100.0 * fraction:5.1f}%  "
        f"{rate:,.0f} {unit}/s  ETA {left}"
    )
