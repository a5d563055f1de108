"""The SDKs as packages, installed the way a user installs them, then used against a real
``ferrex serve --http``: the Python client from its folder and as a wheel (each in a fresh
venv, with its ``py.typed`` and typed answers), the TypeScript client from the file
``npm pack`` makes (ESM and its declarations, compiled against by tsc --strict)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.api_helpers import ALICE, Server, serve_http
from tests.e2e.npm_helpers import node, npm, typescript

SDK = Path(__file__).resolve().parents[2] / "sdk"

#: What a user's program does with the installed Python client.
PYTHON_PROGRAM = """
import json, sys
import ferrex_client
from ferrex_client import Client
from ferrex_client.answers import StoreAnswer
client = Client(sys.argv[1], sys.argv[2])
stored: StoreAnswer = client.store("Packaged: the nightly export runs at 02:00",
                                   context={"tags": ["packaged"]}, visibility="shared")
page = client.list(tag=["packaged"])
client.forget(stored["id"])
print(json.dumps({"file": ferrex_client.__file__, "id": stored["id"],
                  "listed": [m["id"] for m in page["memories"]]}))
"""

#: What a user's ESM program does with the installed TypeScript client.
NODE_PROGRAM = """
import { Client, FerrexError } from "ferrex-client";
const client = new Client(process.env.FERREX_URL, process.env.FERREX_TOKEN);
const stored = await client.store({ content: "Packed: the nightly export runs at 03:00",
                                    context: { tags: ["packed"] }, visibility: "shared" });
const page = await client.list({ tag: ["packed"] });
await client.forget(stored.id);
let code = null;
try { await client.memory(stored.id); }
catch (e) { code = e instanceof FerrexError ? e.code : String(e); }
console.log(JSON.stringify({ id: stored.id, listed: page.memories.map((m) => m.id), code }));
"""

#: A TypeScript program against the installed package's declarations.
TS_PROGRAM = """
import { Client, type MemoryPage, type StoreAnswer } from "ferrex-client";
export async function use(url: string): Promise<string[]> {
  const client = new Client(url, "token");
  const stored: StoreAnswer = await client.store("typed");
  const page: MemoryPage = await client.list({ tag: ["x"] });
  return [stored.id, ...page.memories.map((m) => m.summary)];
}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve_http(tmp_path_factory.mktemp("sdk-packaging") / "home") as served:
        yield served


def _run(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _venv(where: Path) -> Path:
    _run([sys.executable, "-m", "venv", str(where)])
    return where / "bin"


def _use_python_client(python: Path, server: Server) -> dict[str, object]:
    said = _run([str(python), "-c", PYTHON_PROGRAM, server.url, ALICE], cwd=python.parent)
    found: dict[str, object] = json.loads(said.strip().splitlines()[-1])
    assert found["listed"] == [found["id"]]
    return found


def test_the_python_client_installs_from_its_folder_and_as_a_wheel(
    server: Server, tmp_path: Path
) -> None:
    folder = _venv(tmp_path / "from-folder")
    _run([str(folder / "pip"), "install", "-q", str(SDK / "python")])
    used = _use_python_client(folder / "python", server)
    assert str(used["file"]).startswith(str(tmp_path / "from-folder"))  # the installed copy

    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(SDK / "python"),
          "-w", str(tmp_path / "dist")])  # fmt: skip
    [wheel] = (tmp_path / "dist").glob("ferrex_client-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"ferrex_client/__init__.py", "ferrex_client/answers.py",
            "ferrex_client/py.typed"} <= names  # fmt: skip
    wheeled = _venv(tmp_path / "from-wheel")
    _run([str(wheeled / "pip"), "install", "-q", str(wheel)])
    used = _use_python_client(wheeled / "python", server)
    assert str(used["file"]).startswith(str(tmp_path / "from-wheel"))


def test_the_typescript_client_installs_from_npm_pack_output(
    server: Server, tmp_path: Path
) -> None:
    packed = _run([npm(), "pack", "--json", "--pack-destination", str(tmp_path)],
                  cwd=SDK / "typescript")  # fmt: skip
    [info] = json.loads(packed)
    tarball = tmp_path / info["filename"]
    with tarfile.open(tarball) as archive:
        files = sorted(n.removeprefix("package/") for n in archive.getnames())
    assert files == ["ferrex-client.d.mts", "ferrex-client.mjs", "package.json"]
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}\n')
    _run([npm(), "install", "--no-audit", "--no-fund", "--offline", str(tarball)], cwd=app)
    installed = json.loads((app / "node_modules" / "ferrex-client" / "package.json").read_text())
    assert installed["type"] == "module" and installed["exports"]["."]["types"]
    (app / "main.mjs").write_text(NODE_PROGRAM)
    env = {"PATH": str(Path(node()).parent), "FERREX_URL": server.url, "FERREX_TOKEN": ALICE}
    said = json.loads(_run([node(), "main.mjs"], cwd=app, env=env).strip().splitlines()[-1])
    assert said["listed"] == [said["id"]] and said["code"] == "not_found"
    # Its declarations, from the installed package, in a strict TypeScript program.
    (app / "use.ts").write_text(TS_PROGRAM)
    (app / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"strict": True, "noEmit": True, "module": "nodenext",
                            "moduleResolution": "nodenext", "target": "es2022",
                            "lib": ["es2022", "dom"], "types": []},
        "files": ["use.ts"],
    }))  # fmt: skip
    _run([node(), str(typescript()), "-p", "."], cwd=app)
