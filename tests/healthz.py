"""Waiting for a ``ferrex serve --http`` process the test started to answer ``/healthz``.

``/healthz`` answers once uvicorn runs, after the server has made its token file: the port
itself accepts connections earlier (it is bound first, so that a port in use is refused at
once), so a bare connection is no sign that the token can be read yet."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx


def stderr_of(process: subprocess.Popen[str]) -> str:
    """What an exited process wrote to its standard error ("" when it was not piped)."""
    return process.stderr.read() if process.stderr else ""


def wait_healthy(
    process: subprocess.Popen[str],
    base: str,
    *,
    timeout: float = 60,
    what: str = "the server",
    output: Callable[[], str] | None = None,
) -> None:
    """Poll ``{base}/healthz`` every 0.1 s until it answers 200; fail with the process's
    output (``output``, else its standard error) if it exits first, or when ``timeout``
    seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, output() if output else stderr_of(process)
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{what} did not start"
        time.sleep(0.1)
