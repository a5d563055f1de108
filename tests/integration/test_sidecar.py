"""The sidecar's process management: start, reuse, stop only what it started.

No Qdrant server binary can be installed on these machines, so the binary here is a small
stand-in that serves ``/readyz`` the way Qdrant does, configured by the same environment
variables. This verifies ferrex's side (PID file, reuse, readiness, stopping); running a
real Qdrant binary is verified where one is installed.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from projections.sidecar import PID_FILE, Sidecar, _alive
from projections.vectors import StoreUnreachable
from tests.ports import free_port

STAND_IN = """#!{python}
import http.server, os
port = int(os.environ["QDRANT__SERVICE__HTTP_PORT"])
os.makedirs(os.environ["QDRANT__STORAGE__STORAGE_PATH"], exist_ok=True)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/readyz" else 404)
        self.end_headers()
        self.wfile.write(b"all shards are ready")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def make_binary(path: Path, body: str) -> Path:
    path.write_text(body.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_start_reuse_and_stop_only_what_was_started(tmp_path: Path) -> None:
    binary = make_binary(tmp_path / "qdrant", STAND_IN)
    port = free_port()
    first = Sidecar(binary, tmp_path / "storage", tmp_path / "run", port)
    url = first.ensure()
    assert url == f"http://127.0.0.1:{port}" and first.started is not None
    assert (tmp_path / "run" / PID_FILE).exists() and (tmp_path / "storage").is_dir()
    pid = first.started.pid
    # A second ferrex process finds it and reuses it, whatever port it asked for.
    second = Sidecar(binary, tmp_path / "storage", tmp_path / "run", free_port())
    assert second.ensure() == url and second.started is None
    assert second.stop() is False and _alive(pid), "a reused server is not stopped"
    assert first.stop() is True
    assert not (tmp_path / "run" / PID_FILE).exists()
    assert not _alive(pid)


def test_a_stale_pid_file_is_ignored(tmp_path: Path) -> None:
    binary = make_binary(tmp_path / "qdrant", STAND_IN)
    run = tmp_path / "run"
    run.mkdir()
    (run / PID_FILE).write_text('{"pid": 999999, "port": 1, "binary": "x"}')
    sidecar = Sidecar(binary, tmp_path / "storage", run, free_port())
    assert sidecar.running() is None and not (run / PID_FILE).exists()
    sidecar.ensure()
    assert sidecar.stop()


def test_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreUnreachable, match="missing or not executable"):
        Sidecar(tmp_path / "nope", tmp_path / "s", tmp_path / "r").ensure()
    crashing = make_binary(
        tmp_path / "crash", "#!{python}\nimport sys\nprint('bad config')\nsys.exit(3)\n"
    )
    with pytest.raises(StoreUnreachable, match=r"exited with code 3.*bad config"):
        Sidecar(crashing, tmp_path / "s", tmp_path / "r", free_port()).ensure()
    silent = make_binary(tmp_path / "silent", "#!{python}\nimport time\ntime.sleep(60)\n")
    with pytest.raises(StoreUnreachable, match="did not become ready"):
        Sidecar(silent, tmp_path / "s", tmp_path / "r2", free_port()).ensure(timeout=1.0)
