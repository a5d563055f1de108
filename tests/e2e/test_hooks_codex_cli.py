"""ferrex's Codex CLI hooks (the brief and the prompt hook), run as the client runs them: the
command install writes into ``.codex/hooks.json``, its JSON input on stdin with the fields
Codex's generated input schemas require (``transcript_path`` null among them); the exit code,
stdout and stderr checked. Each hook runs against a running MCP server and against none."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ferrex.cli.hooks import _token_count
from ferrex.hooks.context import BRIEF_TOKENS, PROMPT_TOKENS
from tests.e2e import hook_helpers
from tests.e2e.hook_helpers import context_of, maybe_server, project_with_a_memory, run_hook
from tests.e2e.mcp_helpers import FERREX, owner_pid

AGENT = ["--agent-id", "codex-cli", "--default-visibility", "shared"]
SESSION = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"
SETTINGS = ".codex/hooks.json"


def installed_commands(home: Path, project: Path, tmp: Path) -> dict[str, list[str]]:
    return hook_helpers.installed_commands(home, project, tmp, "codex-cli", SETTINGS)


def _input(event: str, project: Path, **extra: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": None, "cwd": str(project),
            "hook_event_name": event, "model": "gpt-5-codex", "permission_mode": "default",
            **extra}  # fmt: skip


@pytest.mark.parametrize("with_server", [True, False], ids=["server", "no-server"])
def test_the_brief_and_the_prompt_hook_as_codex_cli_runs_them(
    tmp_path: Path, with_server: bool
) -> None:
    home, project, memory = project_with_a_memory(tmp_path, *AGENT)
    argv = installed_commands(home, project, tmp_path)
    assert set(argv) == {"SessionStart", "UserPromptSubmit"}  # no capture: see codex_cli

    with maybe_server(home, with_server, *AGENT) as owner:
        code, out, err = run_hook(argv["SessionStart"],
                                  _input("SessionStart", project, source="startup"))  # fmt: skip
        assert (code, err) == (0, "")
        brief = context_of(out, "SessionStart")
        assert memory in brief and _token_count()(brief) <= BRIEF_TOKENS
        asked = _input("UserPromptSubmit", project, turn_id="t-1",
                       prompt="Which branch does the billing service deploy from?")  # fmt: skip
        code, out, err = run_hook(argv["UserPromptSubmit"], asked)
        assert (code, err) == (0, "")
        assert memory in context_of(out, "UserPromptSubmit")
        assert _token_count()(context_of(out, "UserPromptSubmit")) <= PROMPT_TOKENS
        unrelated = {**asked, "prompt": "What is the capital city of Mongolia?"}
        assert run_hook(argv["UserPromptSubmit"], unrelated) == (0, "", "")
        assert run_hook(argv["UserPromptSubmit"], "not json at all") == (0, "", "")
        if with_server:
            assert owner() == owner_pid(home)

    log = (home / "logs" / "hooks.log").read_text().splitlines()
    assert [line.split()[1:3] for line in log[:3]] == [
        ["session-start", "context"],
        ["prompt", "context"],
        ["prompt", "nothing"],
    ]
    assert "prompt failed: JSONDecodeError" in log[3]


OTHER_HOOKS: dict[str, Any] = {
    "hooks": {
        "SessionStart": [{"matcher": "startup|resume", "hooks": [
            {"type": "command", "command": "sh .codex/hooks/start.sh",
             "statusMessage": "Loading planning context"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "python3 stop.py", "timeout": 30}]}],
    },
}  # fmt: skip


def test_install_and_uninstall_round_trip_a_hooks_file_with_other_hooks(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    settings = project / SETTINGS
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(OTHER_HOOKS, indent=4))
    original = settings.read_bytes()

    def hooks(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([FERREX, "--home", str(home), "hooks", *args, "codex-cli",
                               "--project", str(project)], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "HOME": str(tmp_path)})  # fmt: skip

    assert hooks("install", "--dry-run").returncode == 0 and settings.read_bytes() == original
    assert hooks("install").returncode == 0
    assert (settings.parent / "hooks.json.ferrex-backup").read_bytes() == original
    installed = json.loads(settings.read_text())
    assert installed["hooks"]["Stop"] == OTHER_HOOKS["hooks"]["Stop"]
    starts = installed["hooks"]["SessionStart"]
    assert starts[0] == OTHER_HOOKS["hooks"]["SessionStart"][0] and len(starts) == 2
    assert starts[1]["hooks"][0]["timeout"] == 15
    ours = starts[1]["hooks"][0]["command"]
    assert ours.endswith(" --agent-id codex-cli --default-visibility shared hook session-start")
    status = json.loads(hooks("status", "--json").stdout)
    assert set(status["project"]["hooks"]) == {"SessionStart", "UserPromptSubmit"}
    assert hooks("install").returncode == 0
    assert json.loads(settings.read_text()) == installed  # replaced, not doubled
    assert hooks("uninstall").returncode == 0
    assert json.loads(settings.read_text()) == OTHER_HOOKS
