"""Helpers for the dashboard tests: a real home with a history, a real ``ferrex ui`` process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.server.mcp_auth import token_hash
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode
from tests.e2e.mcp_helpers import FERREX
from tests.healthz import wait_healthy

ALICE, BOB = "alice-dashboard-secret", "bob-dashboard-secret"


@dataclass
class Home:
    path: Path
    ids: dict[str, str] = field(default_factory=dict)


def write_tokens(home: Path) -> None:
    """alice's and bob's tokens (the operator's is the token file the server makes)."""
    home.mkdir(parents=True, exist_ok=True)
    lines = []
    for token, agent in ((ALICE, "alice"), (BOB, "bob")):
        lines += ["[[auth.tokens]]", f'sha256 = "{token_hash(token)}"', f'agent = "{agent}"', ""]
    (home / "ferrex.toml").write_text("\n".join(lines))


def populate(home: Path, embedder: Embedder) -> Home:
    """A small home with a supersede chain, entities spelt two ways, a confirmed memory,
    shared team notes and one private memory of alice's naming an entity only she knows."""
    write_tokens(home)
    app = App(home=home, config=load_config(home, None), _embedder=embedder)
    assert app.claim()
    service = Service(app)
    made = Home(home)

    def store(key: str, agent: str | None, **args: Any) -> None:
        answer = service.call(decode("store", args), Caller(agent_id=agent))
        assert answer["status"] == "stored", answer
        made.ids[key] = answer["id"]

    try:
        store("old", None, subject="api-server", predicate="uses", object="tokio 1.36",
              entities=["api-server", "tokio"], valid_from="2026-03-01T09:00:00Z")  # fmt: skip
        store("new", None, subject="api-server", predicate="uses", object="tokio 1.38",
              entities=["api-server", "Tokio"], valid_from="2026-09-15T09:00:00Z")  # fmt: skip
        store("deploy", None, content="On 2026-11-02 Ana deployed api-server v2.3 to production "
              "after the load test passed", entities=["Ana", "api-server"])  # fmt: skip
        store("runbook", None, name="rollback api-server",
              steps=["freeze deploys", "redeploy the previous tag", "tell #ops"],
              entities=["api-server"])  # fmt: skip
        store("team", "alice", content="Team note: the staging database lives on db-stage-2",
              visibility="shared", entities=["db-stage-2"])  # fmt: skip
        store("secret", "alice", content="Alice's private note: the staging database password "
              "rotates on Fridays; ask Zanzibar-Seven", entities=["Zanzibar-Seven"])  # fmt: skip
        store("scratch", None, content="Scratch idea: try a bigger connection pool for "
              "billing-api next quarter", entities=["billing-api"])  # fmt: skip
        service.call(decode("confirm", {"ids": [made.ids["new"]]}), Caller())
    finally:
        app.flush_access()
        app.close()
    return made


@dataclass
class Served:
    base: str
    login_url: str
    process: subprocess.Popen[str]


@contextmanager
def ferrex_ui(home: Path) -> Iterator[Served]:
    """``ferrex ui`` on ``home``: the URL it prints, once the server answers."""
    process = subprocess.Popen(
        [FERREX, "--home", str(home), "ui"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SE_AVOID_STATS": "true"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:"), line + _stderr(process)
        base = line.split("/?", 1)[0].rstrip("/")
        wait_healthy(process, base, timeout=90, what="the dashboard",
                     output=lambda: _stderr(process))  # fmt: skip
        yield Served(base, line, process)
    finally:
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def _stderr(process: subprocess.Popen[str]) -> str:
    if process.poll() is None or process.stderr is None:
        return ""
    return process.stderr.read()


def operator_token(home: Path) -> str:
    return (home / "run" / "http.token").read_text().strip()
