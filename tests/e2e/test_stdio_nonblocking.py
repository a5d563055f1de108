"""A wire whose descriptors read or write non-blocking loses nothing.

An open file description's O_NONBLOCK is shared by every process holding it, so a client (or
whatever handed the descriptor down) may leave ``ferrex``'s stdin or stdout non-blocking. A
read then says EAGAIN whenever the pipe is momentarily empty, and a write whenever it is full;
neither is the end of input nor a client that left.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path
from typing import Any

from tests.e2e.mcp_helpers import FERREX
from tests.e2e.stdio_helpers import INITIALIZE, INITIALIZED, line, ping

F_GETPIPE_SZ = 1032  # Linux; fcntl.F_GETPIPE_SZ from Python 3.10 on, not in every typeshed
ISSUE_SEQUENCE = line(INITIALIZE) + line(INITIALIZED) + b"{not json}\n" + ping(2)


def _messages(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in data.splitlines()]


def _read_until(fd: int, count: int, timeout: float) -> bytes:
    """What ``fd`` gives until ``count`` lines have come (or it ends, or time is up)."""
    got = bytearray()
    done = threading.Event()

    def read() -> None:
        while got.count(b"\n") < count:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            got.extend(chunk)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    done.wait(timeout)
    return bytes(got)


def _until_full(fd: int, timeout: float) -> None:
    """Wait until the pipe read by ``fd`` has no room for another answer and the server has
    stopped adding to it (half a second without a byte more: if the server was only slow,
    the test passes where it should fail, never the other way round)."""
    room = fcntl.fcntl(fd, F_GETPIPE_SZ) - select.PIPE_BUF
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while (pending := _pending(fd)) <= room or time.monotonic() - since < 0.5:
        assert time.monotonic() < deadline, f"the pipe never filled ({pending} bytes)"
        if pending != last:
            last, since = pending, time.monotonic()
        time.sleep(0.05)


def _pending(fd: int) -> int:
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def test_a_non_blocking_stdin_is_no_end_of_input(tmp_path: Path) -> None:
    """The issue's one write, on a stdin that reads non-blocking: once the bytes written are
    read, the next read says EAGAIN; the server must wait for more, not stop."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    process = subprocess.Popen([FERREX, "--home", str(tmp_path / "home")], stdin=read_end,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
    os.close(read_end)
    try:
        assert process.stdout is not None
        os.write(write_end, ISSUE_SEQUENCE)
        answers = _messages(_read_until(process.stdout.fileno(), 3, timeout=60))
        assert [a["id"] for a in answers] == [1, None, 2], answers
        assert answers[1]["error"]["code"] == -32700
        assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert process.poll() is None  # still serving: stdin is open
        os.write(write_end, ping(3))
        assert _messages(_read_until(process.stdout.fileno(), 1, timeout=60)) == [
            {"jsonrpc": "2.0", "id": 3, "result": {}}
        ]
        os.close(write_end)
        write_end = -1
        assert process.wait(timeout=60) == 0
    finally:
        if write_end >= 0:
            os.close(write_end)
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_a_full_non_blocking_stdout_loses_no_answer(tmp_path: Path) -> None:
    """Many pings read only once all are sent: their answers fill the pipe (64 KiB) long
    before, so a non-blocking stdout says EAGAIN; every answer must still come, in order."""
    pings = 3000  # about 110 KiB of answers
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    process = subprocess.Popen([FERREX, "--home", str(tmp_path / "home")],
                               stdin=subprocess.PIPE, stdout=write_end,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    os.close(write_end)
    try:
        assert process.stdin is not None
        data = (
            line(INITIALIZE) + line(INITIALIZED) + b"".join(ping(n) for n in range(10, 10 + pings))
        )
        sending = threading.Thread(target=process.stdin.write, args=(data,), daemon=True)
        sending.start()
        sending.join(timeout=60)  # the server reads on while its answers wait
        assert not sending.is_alive(), "the server stopped reading"
        process.stdin.flush()
        _until_full(read_end, timeout=60)
        answers = _messages(_read_until(read_end, 1 + pings, timeout=120))
        assert [a["id"] for a in answers] == [1, *range(10, 10 + pings)]
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(read_end)
        if process.stdin is not None and not process.stdin.closed:
            process.stdin.close()
