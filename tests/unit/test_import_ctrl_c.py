"""Ctrl-C during an import stops it where a chunk ends, not inside a write (a second Ctrl-C
stops at once); an inherited ``SIG_IGN`` is left alone. Real signals, sent to this process."""

from __future__ import annotations

import os
import signal

import pytest

from ferrex.cli.memory import _Reached


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # the handler runs before the next bytecode


def test_the_first_ctrl_c_waits_for_the_chunks_end_then_stops() -> None:
    reached = _Reached()
    with (
        pytest.raises(KeyboardInterrupt),
        reached.progress("importing", "line", quiet=True) as done,
    ):
        done(10, 100)
        _ctrl_c()  # inside a chunk: nothing is raised here
        assert reached.stopping and reached.done == 10
        done(20, 100)  # the chunk is written: the import stops
    assert (reached.done, reached.total) == (20, 100)
    assert "20 of 100 lines were written" in reached.interrupted()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_stops_at_once() -> None:
    reached = _Reached()
    with (
        pytest.raises(KeyboardInterrupt),
        reached.progress("importing", "line", quiet=True) as done,
    ):
        done(10, 100)
        _ctrl_c()
        _ctrl_c()
        pytest.fail("the second Ctrl-C did not stop the import")
    assert reached.done == 10
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_sigint_stays_ignored() -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        reached = _Reached()
        with reached.progress("importing", "line", quiet=True) as done:
            _ctrl_c()
            done(100, 100)
        assert not reached.stopping
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_the_message_counts_one_line_or_memory_in_the_singular() -> None:
    """Stopped once every chunk was written (the index build after the import), or after the
    first of several: one is never "all 1 lines", nor "1 ... were"."""
    one = _Reached()
    with one.progress("importing", "line", quiet=True) as done:
        done(1, 1)
    said = one.interrupted()
    assert said.startswith("interrupted: the one line was written or skipped, and stays;"), said
    assert "all 1" not in said and "lines" not in said
    memories = _Reached()
    with memories.progress("importing", "memory", "memories", quiet=True) as done:
        done(3, 3)
    assert memories.interrupted().startswith("interrupted: all 3 memories were written")
    first = _Reached()
    with first.progress("importing", "memory", "memories", quiet=True) as done:
        done(1, 4)
    assert "1 of 4 memories was written or skipped by the time" in first.interrupted()
    assert ", and stays;" in first.interrupted()
