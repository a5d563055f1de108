"""A Qdrant server that ferrex starts itself from a configured binary (the sidecar mode).

Invariants:

- One sidecar per storage directory, recorded in ``<run_dir>/qdrant.pid`` (written
  atomically) with the port it listens on. A second ferrex process finds it alive and
  reuses it instead of starting another.
- ``stop`` stops only a server this process started; a reused one is left running.
- Readiness is Qdrant's ``GET /readyz`` on loopback; a binary that does not become ready in
  time is stopped again and reported with the tail of its log.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from journal.files import make_private_dir, private_opener
from projections.vectors import StoreUnreachable

PID_FILE = "qdrant.pid"
LOG_FILE = "qdrant.log"


@dataclass(frozen=True)
class SidecarState:
    pid: int
    port: int
    binary: str


class Sidecar:
    """Starts (or reuses) ``binary`` serving ``storage`` on 127.0.0.1:``port``."""

    def __init__(self, binary: Path, storage: Path, run_dir: Path, port: int = 6333) -> None:
        self.binary = binary
        self.storage = storage
        self.run_dir = run_dir
        self.port = port
        self.started: SidecarState | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ensure(self, timeout: float = 30.0) -> str:
        """The URL of a ready server: the running sidecar if any, else a new one."""
        running = self.running()
        if running is not None:
            self.port = running.port
            return self.url
        if not self.binary.is_file() or not os.access(self.binary, os.X_OK):
            raise StoreUnreachable(
                f"the configured Qdrant binary {self.binary} is missing or not executable"
            )
        make_private_dir(self.storage)
        make_private_dir(self.run_dir)
        env = {
            **os.environ,
            "QDRANT__STORAGE__STORAGE_PATH": str(self.storage),
            "QDRANT__SERVICE__HOST": "127.0.0.1",
            "QDRANT__SERVICE__HTTP_PORT": str(self.port),
            "QDRANT__SERVICE__GRPC_PORT": str(self.port + 1),
            "QDRANT__TELEMETRY_DISABLED": "true",
        }
        with open(self.run_dir / LOG_FILE, "ab") as log:
            process = subprocess.Popen(
                [str(self.binary)],
                cwd=self.run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # not killed with the terminal of whoever started it
            )
        self._process = process
        state = SidecarState(process.pid, self.port, str(self.binary))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self._process = None
                raise StoreUnreachable(
                    f"Qdrant ({self.binary}) exited with code {process.returncode} at start: "
                    f"{self._log_tail()}"
                )
            if self._ready():
                self._write_pid(state)
                self.started = state
                return self.url
            time.sleep(0.1)
        self._reap(timeout=5.0)
        raise StoreUnreachable(
            f"Qdrant ({self.binary}) did not become ready on port {self.port} within "
            f"{timeout:.0f} s: {self._log_tail()}"
        )

    def running(self) -> SidecarState | None:
        """The sidecar recorded in the PID file, if its process is alive and answers."""
        path = self.run_dir / PID_FILE
        try:
            raw = json.loads(path.read_text())
            state = SidecarState(int(raw["pid"]), int(raw["port"]), str(raw["binary"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not _alive(state.pid):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # a stale record of a server that died
            return None
        probe = Sidecar(self.binary, self.storage, self.run_dir, state.port)
        return state if probe._ready() else None

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop the server if this process started it; True if it did."""
        if self.started is None:
            return False
        self._reap(timeout)
        with contextlib.suppress(FileNotFoundError):
            (self.run_dir / PID_FILE).unlink()
        self.started = None
        return True

    def _reap(self, timeout: float) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=1.0) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _write_pid(self, state: SidecarState) -> None:
        tmp = self.run_dir / (PID_FILE + ".tmp")
        with open(tmp, "w", opener=private_opener) as out:
            out.write(json.dumps(state.__dict__))
        os.replace(tmp, self.run_dir / PID_FILE)

    def _log_tail(self, lines: int = 5) -> str:
        try:
            text = (self.run_dir / LOG_FILE).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
