"""Bare ``ferrex`` in a terminal: it says what it is and Ctrl-C ends it."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

from tests.e2e.mcp_helpers import FERREX


def test_bare_ferrex_in_a_terminal_explains_itself_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [FERREX, "--home", str(tmp_path / "home")],
        stdin=follower, stdout=follower, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    os.close(follower)
    try:
        assert process.stderr is not None
        ready, _, _ = select.select([process.stderr], [], [], 60)
        assert ready, "nothing was printed"
        line = process.stderr.readline().decode()
        assert "MCP" in line and "stdio" in line and "--help" in line, line
        time.sleep(1)  # Ctrl-C while the server starts up and warms up
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process
        process.wait(timeout=30)  # a hang fails here
        rest = process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode in (0, 130, -signal.SIGINT), rest
    assert "Aborted" not in rest and "terminate called" not in rest and "Traceback" not in rest
