"""A real ``ferrex`` on stdio driven byte by byte: what a careless client writes, as written."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.e2e.mcp_helpers import FERREX

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def ping(request_id: int) -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "method": "ping"})


class RawServer:
    """``ferrex`` with pipes; stdout is read on a thread so a missing answer fails, not hangs."""

    def __init__(self, home: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [FERREX, "--home", str(home), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr = b""
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]  # fmt: skip
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.answers.put(json.loads(raw))  # anything but JSON on stdout fails here
        self.answers.put(None)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            self.stderr += raw

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        try:
            message = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s; stderr: {self.stderr!r}") from None
        assert message is not None, f"the server closed stdout; stderr: {self.stderr!r}"
        return message

    def initialize(self) -> None:
        self.write(line(INITIALIZE) + line(INITIALIZED))
        assert self.answer()["id"] == 1

    def close(self, timeout: float = 60) -> int:
        """Close stdin and wait for the process to exit (a generous bound, not a timing)."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=timeout)
        self._finish()
        return code

    def kill(self) -> None:
        """Whatever happened, leave no process and no open pipe behind."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._finish()

    def _finish(self) -> None:
        for reader in self._readers:
            reader.join(timeout=60)  # both pipes are at their end once the process is gone
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
