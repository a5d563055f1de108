"""Helpers for the client hooks' end-to-end tests: install with ferrex's own command, run a
hook as the client does (its command, JSON on stdin), read the context it printed, and keep
an MCP server running on the data directory while a block runs."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import FERREX, call, owner_pid, stdio_client


def installed_commands(
    home: Path, project: Path, tmp: Path, client: str, settings: str
) -> dict[str, list[str]]:
    """Install ``client``'s hooks into ``project`` with ferrex's own command (the user's
    home at ``tmp``); the argv of each event's hook, read from ``settings`` (the project's
    settings file, relative to it)."""
    done = subprocess.run(
        [FERREX, "--home", str(home), "hooks", "install", client, "--project", str(project)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads((project / settings).read_text())
    return {
        event: shlex.split(groups[-1]["hooks"][0]["command"])
        for event, groups in doc["hooks"].items()
    }


def run_hook(argv: list[str], doc: dict[str, Any] | str) -> tuple[int, str, str]:
    """One hook run, ``doc`` as JSON (a string as it is) on stdin: its exit code, stdout and
    stderr."""
    text = doc if isinstance(doc, str) else json.dumps(doc)
    done = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def context_of(stdout: str, event: str) -> str:
    doc = json.loads(stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == event
    return str(doc["hookSpecificOutput"]["additionalContext"])


@contextmanager
def maybe_server(home: Path, with_server: bool, *agent: str) -> Iterator[Callable[[], int | None]]:
    """With a server: an MCP stdio server (``agent``: its agent options) running on ``home``
    while the block runs; yields a function giving the owner's pid."""
    if not with_server:
        yield lambda: None
        return
    stop = threading.Event()
    up = threading.Event()

    async def serve() -> None:
        async with stdio_client(home, *agent) as client:
            await call(client, "stats", {})  # elected and open
            up.set()
            while not stop.is_set():
                await anyio.sleep(0.05)

    thread = threading.Thread(target=lambda: anyio.run(serve), daemon=True)
    thread.start()
    assert up.wait(120), "the server did not start"
    server = owner_pid(home)
    try:
        yield lambda: server
    finally:
        stop.set()
        thread.join(60)


def project_with_a_memory(tmp: Path, *agent: str) -> tuple[Path, Path, str]:
    """A data directory (``tmp/home``) holding one note about the billing service's deploys,
    stored by the CLI with ``agent``'s options, and a project beside it (``tmp/project``, a
    git tree): the two paths and the note's id."""
    home, project = tmp / "home", tmp / "project"
    (project / ".git").mkdir(parents=True)
    stored = subprocess.run(
        [FERREX, "--home", str(home), *agent, "store", "--json", "--content",
         "The billing service deploys from the release-7 branch on Fridays"],
        capture_output=True, text=True, timeout=300)  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    return home, project, str(json.loads(stored.stdout)["id"])


def captured_session_log(home: Path, with_server: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Check ``hooks.log`` after a session of a client with capture: the brief, a prompt
    with context and one with nothing (both on the lean path with a server: no stores' code,
    one call to the owner; without one the full command, owning the data directory for its
    run), then two captures. The two captures' outcomes."""
    log = (home / "logs" / "hooks.log").read_text().splitlines()
    assert [line.split()[1:3] for line in log] == [
        ["session-start", "context"],
        ["prompt", "context"],
        ["prompt", "nothing"],
        ["capture", "captured"],
        ["capture", "captured"],
    ]
    assert [line.endswith(" lean") for line in log[1:3]] == [with_server] * 2
    first, second = (json.loads(line.split(" ", 4)[4]) for line in log[3:5])
    return first, second
