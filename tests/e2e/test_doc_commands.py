"""Every shell command shown in the code blocks of README.md and the pages under docs/ runs here.

A command is one line of a ``sh``/``bash``/``shell``/``console`` block (a line ending in ``\\``
continues on the next), its ``# comment`` removed. How it runs:

- a ferrex command written out in full runs as written, as a process of this checkout's
  ``ferrex``, against a temporary home (``FERREX_HOME``), in a temporary project directory
  with a temporary ``HOME``, in the order the docs show them (the guide stores before it
  recalls), and must exit 0; the files it names (``memories.jsonl``, ``conversations.json``)
  are made in the project directory first, in the format the line asks for;
- a synopsis (a line with ``[...]``, ``a | b``, ``ID...`` or a placeholder such as ``FILE``)
  runs as ``--help`` of its command, and every option the line names must be in that help;
  so does a ``python -m tools.NAME`` line (a benchmark or evaluation: never run by the suite);
- any other line runs in bash in a temporary directory (a block's lines as one script) and
  must exit 0.

Only the lines in :data:`EXEMPT` are not run, each with its reason: they need a running
service elsewhere, another client, or the package registries. The HTTP API's examples
(``serve --http`` and the two ``curl`` lines) run against a server this test starts.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.api_helpers import ALICE, serve_http
from tools.bench_chat_import import chatgpt_export, claude_export

ROOT = Path(__file__).resolve().parents[2]
#: The README and every page under docs/ (the benchmark logs' commands too).
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
FERREX = str(Path(sys.executable).with_name("ferrex"))
SHELL_FENCES = frozenset({"sh", "bash", "shell", "console"})

#: Lines shown but not run, as written in the doc (comment removed), and why.
EXEMPT: dict[str, str] = {
    "python3 -m venv .venv && .venv/bin/pip install -c .ci/constraints.txt -e . && "
    ".venv/bin/ferrex doctor": "installs ferrex and its dependencies from the package index "
    "(CI's own set-up does); its last part, `ferrex doctor`, runs here from configuration.md",
    "python3 -m venv .venv && .venv/bin/pip install -c .ci/constraints.txt -e '.[dev]' && "
    ".venv/bin/python -m pytest": "installs from the package index and runs the whole suite, "
    "this test included",
    "claude mcp add ferrex -- /path/to/ferrex/.venv/bin/ferrex --agent-id claude-code "
    "--default-visibility shared": "needs the Claude Code client, another program",
    "claude mcp add ferrex -- uvx --from /path/to/ferrex ferrex --agent-id claude-code "
    "--default-visibility shared": "needs the Claude Code client and uv, other programs",
    "pipx install /path/to/ferrex && claude mcp add ferrex -- ferrex --agent-id claude-code "
    "--default-visibility shared": "needs pipx, the package index and the Claude Code client",
    "pip install ./sdk/python": "installs into the running environment, fetching the SDK's "
    "build backend from the package index",
    "(cd sdk/typescript && npm pack) && npm install ./sdk/typescript/ferrex-client-0.1.0.tgz": (
        "needs Node, npm and its registry"
    ),
    "(cd sdk/typescript && npm pack)": "needs Node and npm",
    "npm install ./sdk/typescript/ferrex-client-0.1.0.tgz": "needs npm and its registry",
}

#: The HTTP API's examples: run against a real ``ferrex serve --http`` (the first line, on a
#: temporary home and a free port) by :func:`test_the_http_examples_run_against_a_served_home`.
SERVE = "ferrex --home /srv/ferrex serve --http 127.0.0.1:8765"
POST = (
    'curl -X POST http://127.0.0.1:8765/api/v1/memories -H "Authorization: Bearer $TOKEN" '
    "-H 'Content-Type: application/json' -H \"Idempotency-Key: $(uuidgen)\" "
    '-d \'{"content": "On 2026-11-02 Ana deployed api-server v2.3", "entities": ["Ana"]}\''
)
CHANGES = 'curl -N "http://127.0.0.1:8765/api/v1/changes?after=0" -H "Authorization: Bearer $TOKEN"'

_FERREX_LINE = re.compile(r"^(?:cd \S+ && )?(?:\S*/)?ferrex(?: |$)")
_TOOLS_LINE = re.compile(r"^(?:nice -n \d+ )?(?:\S*/)?python3? -m (tools(?:\.\w+)+)(?: |$)")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_SYNOPSIS = re.compile(r"\[|\s\|\s|\.\.\.|…|\|-|(?<![\w./-])[A-Z][A-Z_]*(?![\w-])")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_COMMENT = re.compile(r"\s+#\s.*$")


@dataclass(frozen=True)
class Shown:
    doc: str
    block: int  # the line of the block's opening fence
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"

    @property
    def synopsis(self) -> bool:
        return bool(_SYNOPSIS.search(_QUOTED.sub('""', self.text)))

    @property
    def options(self) -> list[str]:
        return _OPTION.findall(_QUOTED.sub('""', self.text))


def shown_commands() -> list[Shown]:
    """Every command line of the docs' shell blocks, in the docs' order."""
    out: list[Shown] = []
    for doc in DOCS:
        fence: str | None = None
        pending, start, block = "", 0, 0
        for number, raw in enumerate(doc.read_text("utf-8").splitlines(), start=1):
            stripped = raw.strip()
            if stripped.startswith("```"):
                fence = None if fence is not None else stripped[3:].strip()
                block = number
                continue
            if fence not in SHELL_FENCES or not stripped:
                continue
            if not pending:
                start = number
            if stripped.endswith("\\"):
                pending += stripped[:-1].rstrip() + " "
                continue
            text = _COMMENT.sub("", pending + stripped).strip()
            pending = ""
            if text:
                out.append(Shown(str(doc.relative_to(ROOT)), block, start, text))
    return out


SHOWN = shown_commands()
RUN = [s for s in SHOWN if s.text not in EXEMPT and s.text not in (SERVE, POST, CHANGES)]
LITERAL = [s for s in RUN if _FERREX_LINE.match(s.text) and not s.synopsis]
HELP = [s for s in RUN if (_FERREX_LINE.match(s.text) and s.synopsis) or _TOOLS_LINE.match(s.text)]
#: The other lines, by block: a block's lines are one script (a variable set on one line is
#: read on the next).
SHELL: dict[str, list[Shown]] = {}
for _shown in RUN:
    if _shown not in LITERAL and _shown not in HELP:
        SHELL.setdefault(f"{_shown.doc}:{_shown.block}", []).append(_shown)


def test_the_docs_show_commands_and_every_exemption_is_still_shown() -> None:
    assert len(SHOWN) > 50 and len(LITERAL) > 20 and len(HELP) > 15
    texts = {s.text for s in SHOWN}
    assert not [t for t in EXEMPT if t not in texts], "exempt commands no doc shows any more"
    assert {SERVE, POST, CHANGES} <= texts, "the HTTP examples this test runs are not shown"


def _help_argv(shown: Shown) -> tuple[list[str], Path | None]:
    """The ``--help`` command of a synopsis or a tools line, and its working directory."""
    tools = _TOOLS_LINE.match(shown.text)
    if tools is not None:
        return [sys.executable, "-m", tools.group(1), "--help"], ROOT
    words = shlex.split(shown.text.split(" && ")[-1])[1:]
    path: list[str] = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        path.append(word)
    return [FERREX, *path, "--help"], None


@pytest.mark.parametrize("shown", HELP, ids=str)
def test_a_synopsis_or_a_tool_names_only_options_its_help_lists(
    shown: Shown, tmp_path: Path
) -> None:
    argv, cwd = _help_argv(shown)
    env = {**os.environ, "FERREX_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    done = subprocess.run(
        argv, capture_output=True, text=True, cwd=cwd or tmp_path, env=env, timeout=120
    )
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr}"
    unknown = [o for o in shown.options if o not in done.stdout]
    assert not unknown, f"{shown}: options not in `{' '.join(argv[1:])}`: {unknown}"


def _files_for(shown: Shown, project: Path) -> None:
    """Make the files a command names, in the format it asks for."""
    if "memories.jsonl" in shown.text:
        lines = [{"content": "The staging database moved to db-stage-2 on 2026-10-04"}]
        (project / "memories.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    if "conversations.json" in shown.text:
        make = claude_export if "--format claude" in shown.text else chatgpt_export
        (project / "conversations.json").write_text(json.dumps(make(24, random.Random(7))))


def test_every_ferrex_command_shown_in_full_runs_against_a_fresh_home(tmp_path: Path) -> None:
    project = tmp_path / "your-project"
    project.mkdir()
    env = {**os.environ, "FERREX_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    env = {k: v for k, v in env.items() if not k.startswith("FERREX_") or k == "FERREX_HOME"}
    failed: list[str] = []
    for shown in LITERAL:
        _files_for(shown, project)
        argv = shlex.split(shown.text.split(" && ")[-1])
        done = subprocess.run(
            [FERREX, *argv[1:]], capture_output=True, text=True, cwd=project, env=env,
            stdin=subprocess.DEVNULL, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            failed.append(f"{shown} -> exit {done.returncode}: {done.stderr.strip()[-400:]}")
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("block", sorted(SHELL))
def test_every_other_shell_line_runs(block: str, tmp_path: Path) -> None:
    script = "\n".join(s.text for s in SHELL[block])
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True,
        cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)}, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, f"{block}: {script}\n{done.stderr}"


def test_the_http_examples_run_against_a_served_home(tmp_path: Path) -> None:
    """The guide's ``serve --http`` (a temporary home, a free port: ``serve_http`` starts
    ``ferrex --home HOME serve --http 127.0.0.1:PORT``), then http-api.md's two curl lines
    with a token of that home: the POST stores, the change stream shows the stored memory."""
    assert shlex.split(SERVE)[1:] == ["--home", "/srv/ferrex", "serve", "--http", "127.0.0.1:8765"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if shutil.which("uuidgen") is None:  # util-linux's, absent from slim images: a stand-in
        shim = bin_dir / "uuidgen"
        shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import uuid; print(uuid.uuid4())'\n")
        shim.chmod(0o755)
    env = {
        **os.environ,
        "TOKEN": ALICE,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
    }
    with serve_http(tmp_path / "home") as server:
        post = POST.replace("http://127.0.0.1:8765", server.url)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", post], capture_output=True, text=True, env=env,
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        stored = json.loads(done.stdout)
        assert stored["status"] == "stored", stored
        changes = CHANGES.replace("http://127.0.0.1:8765", server.url)
        stream = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", changes], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True,
        )  # fmt: skip
        out: list[str] = []
        reader = threading.Thread(target=_read_until, args=(stream, stored["id"], out))
        reader.start()
        reader.join(60)
        os.killpg(stream.pid, signal.SIGTERM)  # the stream runs until stopped
        stream.wait(timeout=30)
        reader.join(30)
        assert stream.stdout is not None
        stream.stdout.close()
        seen = "".join(out)
        assert stored["id"] in seen, seen


def _read_until(process: subprocess.Popen[str], wanted: str, out: list[str]) -> None:
    """Keep what ``process`` prints in ``out`` until a line holds ``wanted`` or it ends."""
    assert process.stdout is not None
    for line in process.stdout:
        out.append(line)
        if wanted in line:
            return
