"""Helpers for the write API's and the SDKs' tests: a real ``ferrex serve --http`` on a free
loopback port, with alice's and bob's tokens beside the operator's token file."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.dashboard_helpers import ALICE, BOB, operator_token, write_tokens
from tests.e2e.mcp_helpers import FERREX
from tests.healthz import stderr_of, wait_healthy
from tests.ports import free_port

__all__ = ["ALICE", "BOB", "Server", "serve_http"]


@dataclass
class Server:
    home: Path
    url: str
    operator: str
    process: subprocess.Popen[str]


@contextmanager
def serve_http(
    home: Path,
    *,
    open_loopback: bool = False,
    env: dict[str, str] | None = None,
    config: str = "",
) -> Iterator[Server]:
    """``ferrex serve --http 127.0.0.1:PORT`` on ``home`` (alice's and bob's tokens
    configured, or no tokens at all with ``open_loopback``; ``env``: more environment
    variables; ``config``: more lines of ferrex.toml), once it answers; terminated
    afterwards."""
    if open_loopback:
        home.mkdir(parents=True, exist_ok=True)
        (home / "ferrex.toml").write_text("[auth]\nopen_loopback = true\n")
    else:
        write_tokens(home)
    if config:
        path = home / "ferrex.toml"
        path.write_text(config + "\n" + path.read_text())
    port = free_port()
    process = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, timeout=120,
                     output=lambda: stderr_of(process) if process.stderr else "exited")  # fmt: skip
        yield Server(home, url, "" if open_loopback else operator_token(home), process)
    finally:
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
