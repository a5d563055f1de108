"""The TypeScript SDK (sdk/typescript, fetch, Node 20+) against a real ``ferrex serve --http``:
Node's own test runner runs sdk/typescript/test/ with the server's address and tokens in its
environment. Node is required (``.ci/run`` installs it); without it this test fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.e2e.api_helpers import ALICE, BOB, serve_http

SDK = Path(__file__).resolve().parents[2] / "sdk" / "typescript"


def test_the_typescript_client_passes_its_node_tests(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None, "Node.js 20+ is needed for the TypeScript SDK's tests"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    assert int(version.stdout.strip().lstrip("v").split(".")[0]) >= 20, version.stdout
    with serve_http(tmp_path / "home") as server:
        env = {**os.environ, "FERREX_URL": server.url, "FERREX_TOKEN": ALICE,
               "FERREX_TOKEN_BOB": BOB, "FERREX_OPERATOR_TOKEN": server.operator}  # fmt: skip
        done = subprocess.run(
            [node, "--test", "test/"], cwd=SDK, env=env, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "# fail 0" in report and "# pass 15" in report, report
