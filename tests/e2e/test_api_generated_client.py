"""A client generated from the OpenAPI document by a mainstream generator, against a real
``ferrex serve --http``: openapi-typescript makes the types from the served
``/api/v1/openapi.json``, openapi-fetch makes the calls, tsc (strict) builds
``tests/e2e/openapi_client/client.ts`` against them, and Node runs it: store, list (by tag),
recall, forget. npm installs the three packages once into the test cache
(``tests/e2e/npm_helpers.py``: skipped only when the registry is unreachable off CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx

from tests.e2e.api_helpers import ALICE, serve_http
from tests.e2e.npm_helpers import node, npm_packages

PROGRAM = Path(__file__).resolve().parent / "openapi_client" / "client.ts"
PACKAGES = ["openapi-typescript@7", "openapi-fetch@0.17", "typescript@5"]
TSCONFIG = {
    "compilerOptions": {
        "strict": True, "module": "nodenext", "moduleResolution": "nodenext",
        "target": "es2022", "lib": ["es2022", "dom"], "types": [], "outDir": "out",
        "skipLibCheck": False,
    },
    "files": ["client.ts", "schema.d.ts"],
}  # fmt: skip


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})  # fmt: skip
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_generated_typescript_client_stores_lists_recalls_and_forgets(tmp_path: Path) -> None:
    modules = npm_packages("openapi-client", PACKAGES, "openapi-typescript")
    work = tmp_path / "client"
    work.mkdir()
    (work / "node_modules").symlink_to(modules, target_is_directory=True)
    (work / "package.json").write_text('{"type": "module", "private": true}\n')
    (work / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    shutil.copy(PROGRAM, work / "client.ts")
    with serve_http(tmp_path / "home") as server:
        document = httpx.get(server.url + "/api/v1/openapi.json", timeout=60)
        assert document.status_code == 200
        (work / "openapi.json").write_text(document.text)
        _run([node(), str(modules / ".bin" / "openapi-typescript"), "openapi.json",
              "-o", "schema.d.ts"], work)  # fmt: skip
        schema = (work / "schema.d.ts").read_text()
        assert "ListedMemory" in schema and "RecallHit" in schema
        _run([node(), str(modules / ".bin" / "tsc"), "-p", "."], work)
        said = _run([node(), "out/client.js"], work,
                    {"FERREX_URL": server.url, "FERREX_TOKEN": ALICE})  # fmt: skip
    result = json.loads(said.strip().splitlines()[-1])
    assert result["ok"] is True and result["id"].startswith("mem_")
