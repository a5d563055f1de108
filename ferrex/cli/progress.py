"""A progress line for long work (replay, import, export, re-embed): on a terminal only.

Shows done/total, percent, rate and ETA on stderr, redrawn at most five times a second,
when stderr is a terminal; silent otherwise, so scripts and ``--json`` output stay clean.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO


@contextmanager
def progress(
    label: str, unit: str = "records", stream: TextIO | None = None
) -> Iterator[Callable[[int, int], None]]:
    """Yields an ``update(done, total)`` callback; a no-op when not on a terminal."""
    out = stream if stream is not None else sys.stderr
    if not out.isatty():
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


def line(label: str, unit: str, done: int, total: int, elapsed: float) -> str:
    """One progress line: ``label  done/total  pct  rate  ETA``."""
    rate = done / elapsed if elapsed > 0 else 0.0
    pct = 100.0 * done / total if total else 100.0
    eta = (total - done) / rate if rate > 0 else 0.0
    return (
        f"{label}  {done:,}/{total:,} {unit}  {pct:5.1f}%  {rate:,.0f} {unit}/s  "
        f"ETA {int(eta) // 60:d}:{int(eta) % 60:02d}"
    )
