"""ferrex's Gemini CLI hooks, run exactly as the client runs them: the command install
writes into ``.gemini/settings.json``, its JSON input on stdin (the fields
``hookEventHandler.createBaseInput`` sends, and each event's own), a session file in the
client's JSON Lines recording format on disk; the exit code, stdout and stderr checked
(Gemini CLI reads stderr as the output when stdout is empty, and shows it to the user: so a
hook with nothing to add prints ``{}`` and nothing on stderr). Each hook runs against a
running MCP server and against none, as the Claude Code hooks' tests do."""

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
from tests.e2e.hook_helpers import (
    captured_session_log,
    context_of,
    maybe_server,
    project_with_a_memory,
    run_hook,
)
from tests.e2e.mcp_helpers import FERREX, owner_pid

AGENT = ["--agent-id", "gemini-cli", "--default-visibility", "shared"]
SESSION = "8d3e1f70-2b4c-4a1d-9e6f-5c7b9a0d1e23"
SETTINGS = ".gemini/settings.json"


def _message(mid: str, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-12-01T10:00:00.000Z", "type": kind,
            "content": content, **extra}  # fmt: skip


def write_session(path: Path) -> None:
    """A Gemini CLI session recording: the metadata line, the brief a SessionStart hook
    added, a prompt with a BeforeAgent hook's context after it, a model reply written twice
    (its tool call added), the tool's response, a notice, a slash command, a rewound
    exchange, metadata updates, a secret, and a line that is not JSON."""
    records: list[Any] = [
        {"sessionId": SESSION, "projectHash": "5e884898da28047151d0e56f8dc62927",
         "startTime": "2026-12-01T09:59:00.000Z", "lastUpdated": "2026-12-01T09:59:00.000Z",
         "kind": "main"},
        _message("m-0", "user", [{"text": "<hook_context><ferrex-memory>\nmem_Y: brief\n"
                                          "</ferrex-memory></hook_context>"}]),
        _message("m-1", "user", [
            {"text": "The billing service now deploys from the release-9 branch."},
            {"text": "<hook_context><ferrex-memory>\nmem_X episodic: injected by ferrex\n"
                     "</ferrex-memory></hook_context>"}]),
        {"$set": {"lastUpdated": "2026-12-01T10:00:01.000Z"}},
        _message("m-2", "gemini", "Noted", model="gemini-2.5-pro", thoughts=[]),
        _message("m-2", "gemini", "Noted: billing deploys from release-9 on Thursdays.",
                 model="gemini-2.5-pro", toolCalls=[
                     {"id": "t1", "name": "run_shell_command", "args": {"command": "ls"},
                      "status": "success", "timestamp": "2026-12-01T10:00:02.000Z"}]),
        _message("m-3", "user", [{"functionResponse": {
            "id": "t1", "name": "run_shell_command", "response": {"output": "deploy.sh"}}}]),
        _message("m-4", "info", "Request cancelled."),
        _message("m-5", "user", [{"text": "/stats"}]),
        _message("m-6", "user", [{"text": "Forget that, deploy from main."}]),
        _message("m-7", "gemini", "Deploying from main."),
        {"$rewindTo": "m-6"},
        _message("m-8", "user", [{"text": "The staging password is hunter2-Zq8v!pLm3#rT."}]),
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n{not json\n")


def installed_commands(home: Path, project: Path, tmp: Path) -> dict[str, list[str]]:
    return hook_helpers.installed_commands(home, project, tmp, "gemini-cli", SETTINGS)


def _base(event: str, common: dict[str, Any]) -> dict[str, Any]:
    return {**common, "hook_event_name": event, "timestamp": "2026-12-01T10:00:05.000Z"}


def nothing_added(ran: tuple[int, str, str]) -> bool:
    """A run that adds nothing and shows the user nothing: exit 0, an empty JSON object on
    stdout (not nothing, or Gemini CLI reads stderr), stderr empty."""
    code, out, err = ran
    return code == 0 and err == "" and json.loads(out) == {}


@pytest.mark.parametrize("with_server", [True, False], ids=["server", "no-server"])
def test_each_hook_as_gemini_cli_runs_it(tmp_path: Path, with_server: bool) -> None:
    home, project, memory = project_with_a_memory(tmp_path, *AGENT)
    argv = installed_commands(home, project, tmp_path)
    assert set(argv) == {"SessionStart", "BeforeAgent", "PreCompress", "SessionEnd"}
    assert argv["SessionEnd"][-4:] == ["hook", "capture", "--client", "gemini-cli"]
    session = tmp_path / "chats" / "session-2026-12-01T09-59-8d3e1f70.jsonl"
    session.parent.mkdir()
    write_session(session)
    common = {"session_id": SESSION, "transcript_path": str(session), "cwd": str(project)}

    with maybe_server(home, with_server, *AGENT) as owner:
        start = {**_base("SessionStart", common), "source": "startup"}
        code, out, err = run_hook(argv["SessionStart"], start)
        assert (code, err) == (0, "")
        brief = context_of(out, "SessionStart")
        assert memory in brief and _token_count()(brief) <= BRIEF_TOKENS
        prompt = {**_base("BeforeAgent", common),
                  "prompt": "Which branch does the billing service deploy from?"}  # fmt: skip
        code, out, err = run_hook(argv["BeforeAgent"], prompt)
        assert (code, err) == (0, "")
        assert memory in context_of(out, "BeforeAgent")
        assert _token_count()(context_of(out, "BeforeAgent")) <= PROMPT_TOKENS
        unrelated = {**prompt, "prompt": "What is the capital city of Mongolia?"}
        assert nothing_added(run_hook(argv["BeforeAgent"], unrelated))  # nothing relevant
        compress = {**_base("PreCompress", common), "trigger": "auto"}
        assert nothing_added(run_hook(argv["PreCompress"], compress))
        end = {**_base("SessionEnd", common), "reason": "exit"}
        assert nothing_added(run_hook(argv["SessionEnd"], end))
        if with_server:
            assert owner() == owner_pid(home)  # the server stayed the owner throughout

    first, second = captured_session_log(home, with_server)
    assert first["stored"] == 3 and first["refused"] == 0
    assert first["skipped"] == {"client_context": 1, "tool_call": 1, "tool_result": 1,
                                "empty_message": 1, "client_notice": 1, "command": 1,
                                "not_json": 1}  # fmt: skip
    assert second["stored"] == 0 and second["already"] == 3  # idempotent by message id
    kept = subprocess.run(
        [FERREX, "--home", str(home), "recall", "--json", "--limit", "10",
         "--min-relevance", "0", "billing deploys release-9 staging password main"],
        capture_output=True, text=True, timeout=300)  # fmt: skip
    results = json.loads(kept.stdout)["results"]
    texts = [r.get("content", "") for r in results]
    assert any(t.startswith("user: The billing service now deploys") for t in texts)
    assert any(t.startswith("assistant: Noted: billing deploys from release-9") for t in texts)
    assert not any("injected by ferrex" in t or "hook_context" in t for t in texts)
    assert not any("deploy from main" in t for t in texts)  # rewound away
    assert not any("hunter2" in t for t in texts)
    assert any("[redacted:" in t for t in texts)


def test_bad_input_exits_0_with_nothing_and_a_log_line(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    argv = installed_commands(home, project, tmp_path)
    common = {"session_id": SESSION, "cwd": str(project)}
    for event, doc in (
        ("SessionEnd", {**_base("SessionEnd", common), "reason": "exit",
                        "transcript_path": str(tmp_path / "missing.jsonl")}),
        ("PreCompress", {**_base("PreCompress", common), "trigger": "manual",
                         "transcript_path": ""}),  # Gemini CLI recording nothing
        ("BeforeAgent", "not json at all"),
    ):  # fmt: skip
        assert nothing_added(run_hook(argv[event], doc)), event
    log = (home / "logs" / "hooks.log").read_text().splitlines()
    assert "capture failed: FileNotFoundError" in log[0]
    assert "capture failed:" in log[1] and "no transcript_path" in log[1]
    assert "prompt failed: JSONDecodeError" in log[2]


def test_a_data_directory_that_is_not_there_shows_the_user_nothing(tmp_path: Path) -> None:
    """Each hook run against a data directory that does not exist (moved, a typo in --home):
    before, nothing on stdout and a line on stderr, which Gemini CLI showed the user; now
    ``{}`` and an empty stderr, and the directory is still not created."""
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    argv = installed_commands(home, project, tmp_path)
    nowhere = tmp_path / "nowhere"
    common = {"session_id": SESSION, "cwd": str(project),
              "transcript_path": str(tmp_path / "missing.jsonl")}  # fmt: skip
    for event, more in (("SessionStart", {"source": "startup"}),
                        ("BeforeAgent", {"prompt": "Which branch does billing deploy from?"}),
                        ("PreCompress", {"trigger": "auto"}),
                        ("SessionEnd", {"reason": "exit"})):  # fmt: skip
        command = [str(nowhere) if word == str(home) else word for word in argv[event]]
        assert str(nowhere) in command, command
        ran = run_hook(command, {**_base(event, common), **more})
        assert nothing_added(ran), (event, ran)
    assert not nowhere.exists()


OTHER_SETTINGS: dict[str, Any] = {
    "general": {"vimMode": True},
    "hooksConfig": {"enabled": True, "disabled": ["notify"]},
    "hooks": {
        "BeforeAgent": [{"hooks": [{"name": "lint", "type": "command",
                                    "command": "~/bin/lint-prompt", "timeout": 5000}]}],
        "BeforeTool": [{"matcher": "write_file|replace", "hooks": [
            {"name": "guard", "type": "command", "command": "$GEMINI_PROJECT_DIR/guard.sh"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "notify-send bye"},
                                  {"type": "command", "command": "ferrex-backup hook capture"}]}],
    },
}  # fmt: skip


def test_install_and_uninstall_round_trip_a_settings_file_with_other_hooks(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    settings = project / SETTINGS
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(OTHER_SETTINGS, indent=4))
    original = settings.read_bytes()
    claude = project / ".claude" / "settings.local.json"
    env = {**os.environ, "HOME": str(tmp_path)}

    def hooks(*args: str, client: str = "gemini-cli") -> subprocess.CompletedProcess[str]:
        return subprocess.run([FERREX, "--home", str(home), "hooks", *args, client,
                               "--project", str(project)], capture_output=True, text=True,
                              timeout=60, env=env)  # fmt: skip

    dry = hooks("install", "--dry-run")
    assert dry.returncode == 0 and settings.read_bytes() == original  # nothing written
    assert hooks("install").returncode == 0
    assert hooks("install", client="claude-code").returncode == 0  # both clients, one project
    assert (settings.parent / "settings.json.ferrex-backup").read_bytes() == original
    installed = json.loads(settings.read_text())
    for key in ("general", "hooksConfig"):
        assert installed[key] == OTHER_SETTINGS[key]
    assert installed["hooks"]["BeforeTool"] == OTHER_SETTINGS["hooks"]["BeforeTool"]
    prompts = installed["hooks"]["BeforeAgent"]
    assert prompts[0] == OTHER_SETTINGS["hooks"]["BeforeAgent"][0] and len(prompts) == 2
    ours = prompts[1]["hooks"][0]
    assert ours["name"] == "ferrex-prompt" and ours["timeout"] == 10000
    assert ours["command"].endswith(
        " --agent-id gemini-cli --default-visibility shared hook prompt --client gemini-cli"
    )
    assert "token" not in settings.read_text().lower()
    status = json.loads(hooks("status", "--json").stdout)
    assert set(status["project"]["hooks"]) == {"SessionStart", "BeforeAgent", "PreCompress",
                                               "SessionEnd"}  # fmt: skip
    assert status["homes"] == [str(home)]
    assert hooks("install").returncode == 0  # again: replaced, not doubled
    assert json.loads(settings.read_text()) == installed
    assert hooks("uninstall").returncode == 0
    assert json.loads(settings.read_text()) == OTHER_SETTINGS  # as it was, value for value
    assert "PreCompact" in json.loads(claude.read_text())["hooks"]  # Claude Code's stay
    again = hooks("uninstall")
    assert again.returncode == 0 and "no ferrex hooks" in again.stdout
    user = hooks("install", "--dry-run", "--user")
    assert user.returncode == 2  # --user and --project name two places
    settings.write_text("{broken")
    refused = hooks("install")
    assert refused.returncode == 2 and settings.read_text() == "{broken"


def test_a_paused_project_gets_nothing_from_gemini_hooks(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    subprocess.run([FERREX, "--home", str(home), *AGENT, "store", "--content",
                    "The billing service deploys on Fridays"], check=True, timeout=300)  # fmt: skip
    argv = installed_commands(home, project, tmp_path)
    doc = {**_base("SessionStart", {"session_id": SESSION, "cwd": str(project)}),
           "source": "startup"}  # fmt: skip
    assert context_of(run_hook(argv["SessionStart"], doc)[1], "SessionStart")
    env = {k: v for k, v in os.environ.items() if k != "FERREX_HOME"} | {"HOME": str(tmp_path)}
    paused = subprocess.run([FERREX, "hooks", "pause", "--project", str(project)], env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert paused.returncode == 0 and str(home) in paused.stdout, paused.stderr
    assert nothing_added(run_hook(argv["SessionStart"], doc))
    subprocess.run([FERREX, "hooks", "resume", "--project", str(project)], env=env, check=True,
                   timeout=60)  # fmt: skip
    assert context_of(run_hook(argv["SessionStart"], doc)[1], "SessionStart")
