"""Stopping the stdio server while it warms up is clean (issue #24, item 12): the end of stdin,
SIGTERM and SIGINT right after ``initialize`` end the process with no native abort on stderr,
and the stores are handed over (another process can own them next)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from ferrex.ownership import is_held
from tests.e2e.stdio_helpers import RawServer, ping

NATIVE_ABORT = b"terminate called"


@pytest.mark.parametrize("run", range(3))
def test_a_client_that_leaves_right_after_initialize(tmp_path: Path, run: int) -> None:
    """The model is still loading on its own thread when stdin closes."""
    home = tmp_path / "home"
    server = RawServer(home)
    try:
        server.initialize()
        assert server.close(timeout=60) == 0  # exits once stdin closes: a hang fails here
    finally:
        server.kill()
    assert NATIVE_ABORT not in server.stderr, server.stderr
    assert b"Traceback" not in server.stderr, server.stderr
    assert not is_held(home)  # handed over


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_signal_during_warm_up_is_a_clean_stop(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    home = tmp_path / "home"
    server = RawServer(home)
    try:
        server.initialize()
        server.process.send_signal(signum)
        assert server.process.wait(timeout=60) == code
    finally:
        server.kill()
    for trouble in (NATIVE_ABORT, b"Aborted", b"Traceback", b"KeyboardInterrupt"):
        assert trouble not in server.stderr, server.stderr
    assert not is_held(home)


def test_the_server_exits_when_stdin_closes_after_serving(tmp_path: Path) -> None:
    """Warm, with a call answered, then the end of input: the process ends by itself."""
    home = tmp_path / "home"
    server = RawServer(home)
    try:
        server.initialize()
        server.write(ping(2))
        assert server.answer() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert server.close(timeout=60) == 0
    finally:
        server.kill()
    assert not is_held(home)
    assert NATIVE_ABORT not in server.stderr, server.stderr


def test_a_signal_while_handing_over_changes_nothing(tmp_path: Path) -> None:
    """What the SDK's client does: close stdin, then SIGTERM. One hand-over, exit 0."""
    home = tmp_path / "home"
    server = RawServer(home)
    try:
        server.initialize()
        assert server.process.stdin is not None
        server.process.stdin.close()
        server.process.send_signal(signal.SIGTERM)
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=60) in (0, 130)  # whichever stop came first
    finally:
        server.kill()
    for trouble in (NATIVE_ABORT, b"Traceback", b"handing over the stores at exit failed"):
        assert trouble not in server.stderr, server.stderr
    assert not is_held(home)
