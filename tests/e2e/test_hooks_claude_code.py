"""ferrex's Claude Code hooks, run exactly as the client runs them: the command install
writes into the settings, its JSON input on stdin, a transcript JSONL on disk; the exit code
and stdout checked. Each hook runs against a running MCP server (through its hub: the server
stays the owner) and against none (the hook owns the data directory for its run)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

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
from tests.e2e.mcp_helpers import FERREX, call, owner_pid, server_params

AGENT = ["--agent-id", "claude-code", "--default-visibility", "shared"]
SESSION = "5f1c9a52-6d0e-4c43-9a43-0c9fd1c0ab01"


def _line(kind: str, uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": uuid, "sessionId": SESSION, "parentUuid": None,
            "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/tmp/x",
            "message": {"role": kind, "content": content}, **extra}  # fmt: skip


def write_transcript(path: Path) -> list[dict[str, Any]]:
    """A Claude Code session transcript: prose turns, a tool call and its result, ferrex's
    own injected context, a meta line and a summary line."""
    lines = [
        {"type": "summary", "summary": "Billing deploys", "leafUuid": "u-4"},
        _line(
            "user",
            "u-1",
            "The billing service now deploys from the release-9 branch."
            " <ferrex-memory>\nmem_X episodic: injected by ferrex\n</ferrex-memory>",
        ),
        _line(
            "assistant",
            "a-1",
            [
                {"type": "thinking", "thinking": "let me check"},
                {"type": "text", "text": "Noted: billing deploys from release-9 on Thursdays."},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            ],
        ),
        _line(
            "user",
            "u-2",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "deploy.sh README.md"}],
        ),
        _line("user", "u-3", "<command-name>/clear</command-name>", isMeta=True),
        _line("user", "u-4", "The staging password is hunter2-Zq8v!pLm3#rT, keep it."),
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    return lines


def installed_commands(home: Path, project: Path, tmp: Path) -> dict[str, list[str]]:
    """Install into ``project`` with ferrex's own command; the argv of each event's hook."""
    return hook_helpers.installed_commands(
        home, project, tmp, "claude-code", ".claude/settings.local.json"
    )


@pytest.mark.parametrize("with_server", [True, False], ids=["server", "no-server"])
def test_each_hook_as_claude_code_runs_it(tmp_path: Path, with_server: bool) -> None:
    home, project, memory = project_with_a_memory(tmp_path, *AGENT)
    (project / "src").mkdir()
    argv = installed_commands(home, project, tmp_path)
    assert set(argv) == {"SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"}
    transcript = tmp_path / "transcript.jsonl"
    write_transcript(transcript)
    common = {"session_id": SESSION, "transcript_path": str(transcript),
              "cwd": str(project / "src")}  # fmt: skip

    with maybe_server(home, with_server, *AGENT) as owner:
        code, out, _ = run_hook(
            argv["SessionStart"], {**common, "hook_event_name": "SessionStart", "source": "startup"}
        )
        assert code == 0
        brief = context_of(out, "SessionStart")
        assert memory in brief and _token_count()(brief) <= BRIEF_TOKENS
        code, out, _ = run_hook(argv["UserPromptSubmit"], {
            **common, "hook_event_name": "UserPromptSubmit",
            "prompt": "Which branch does the billing service deploy from?"})  # fmt: skip
        assert code == 0 and memory in context_of(out, "UserPromptSubmit")
        assert _token_count()(context_of(out, "UserPromptSubmit")) <= PROMPT_TOKENS
        code, out, _ = run_hook(argv["UserPromptSubmit"], {
            **common, "hook_event_name": "UserPromptSubmit",
            "prompt": "What is the capital city of Mongolia?"})  # fmt: skip
        assert (code, out) == (0, "")  # nothing relevant: nothing injected
        code, out, _ = run_hook(
            argv["PreCompact"], {**common, "hook_event_name": "PreCompact", "trigger": "auto"}
        )
        assert (code, out) == (0, "")
        code, out, _ = run_hook(
            argv["SessionEnd"], {**common, "hook_event_name": "SessionEnd", "reason": "exit"}
        )
        assert (code, out) == (0, "")
        if with_server:
            assert owner() == owner_pid(home)  # the server stayed the owner throughout

    first, second = captured_session_log(home, with_server)
    assert first["stored"] == 3 and first["refused"] == 0
    assert first["skipped"] == {"not_a_message": 1, "non_text_part": 1, "tool_call": 1,
                                "tool_result": 1, "empty_message": 1, "meta": 1,
                                "not_json": 1}  # fmt: skip
    assert second["stored"] == 0 and second["already"] == 3  # idempotent by message
    kept = subprocess.run(
        [FERREX, "--home", str(home), "recall", "--json", "--limit", "10",
         "--min-relevance", "0", "billing deploys release-9 staging password"],
        capture_output=True, text=True, timeout=300)  # fmt: skip
    texts = [r.get("content", "") for r in json.loads(kept.stdout)["results"]]
    assert any(t.startswith("user: The billing service now deploys") for t in texts)
    assert not any("injected by ferrex" in t for t in texts)
    assert not any("hunter2" in t for t in texts)
    assert any("[redacted:" in t for t in texts)


def test_the_brief_keeps_the_current_facts_after_a_long_captured_session(tmp_path: Path) -> None:
    """A captured session's turns are the latest memories: the brief's current facts are
    read on their own, not picked from the few latest memories."""
    home, project, _ = project_with_a_memory(tmp_path, *AGENT)
    fact = subprocess.run(
        [FERREX, "--home", str(home), *AGENT, "store", "--json", "--subject", "api-server",
         "--predicate", "uses", "--object", "tokio 1.38"],
        capture_output=True, text=True, timeout=300)  # fmt: skip
    assert fact.returncode == 0, fact.stderr
    fact_id = json.loads(fact.stdout)["id"]
    argv = installed_commands(home, project, tmp_path)
    transcript = tmp_path / "long.jsonl"
    talk = [_line("user" if i % 2 == 0 else "assistant", f"m-{i}",
                  f"Step {i} of moving the search indexer to the new queue, checked again")
            for i in range(14)]  # fmt: skip
    transcript.write_text("\n".join(json.dumps(x) for x in talk) + "\n")
    common = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(project)}
    code, out, _ = run_hook(argv["PreCompact"], {**common, "hook_event_name": "PreCompact"})
    assert (code, out) == (0, "")
    code, out, _ = run_hook(argv["SessionStart"], {**common, "hook_event_name": "SessionStart"})
    brief = context_of(out, "SessionStart")
    assert code == 0 and "current facts:" in brief and fact_id in brief, brief
    assert "recent:" in brief and _token_count()(brief) <= BRIEF_TOKENS


@pytest.mark.parametrize("with_server", [True, False], ids=["server", "no-server"])
def test_a_task_about_a_stored_thing_gets_its_memory_and_an_unrelated_one_nothing(
    tmp_path: Path, with_server: bool
) -> None:
    """A prompt is most often a task, not a question, and pastes what no memory holds (an
    exit code and a class name here): recall's calibrated label, which reads a question,
    calls the memory about the pod it names no answer ("nothing relevant"), and the hook
    injected nothing (it fails so on the code before).
    The hook judges by the memory's closeness to the prompt (``prompt_relevance``); a
    coding question about nothing stored still gets nothing."""
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    stored = subprocess.run(
        [FERREX, "--home", str(home), *AGENT, "store", "--json", "--content",
         "catalog-svc pods were OOM-killed during the nightly reindex; the reindex now "
         "streams products in batches of 500 and the memory limit is 2Gi"],
        capture_output=True, text=True, timeout=300)  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    memory = json.loads(stored.stdout)["id"]
    argv = installed_commands(home, project, tmp_path)["UserPromptSubmit"]
    common = {"session_id": SESSION, "transcript_path": str(tmp_path / "t.jsonl"),
              "cwd": str(project), "hook_event_name": "UserPromptSubmit"}  # fmt: skip
    with maybe_server(home, with_server, *AGENT):
        task = (
            "catalog-svc pod keeps restarting during the reindex, exit code 137 from CatalogIndexer"
        )
        code, out, _ = run_hook(argv, {**common, "prompt": task})
        assert code == 0 and out, "the memory about the task's pod was not injected"
        shown = context_of(out, "UserPromptSubmit")
        assert memory in shown and " none " not in shown  # recall's label is left out
        code, out, _ = run_hook(argv, {
            **common, "prompt": "js function that chunks an array into groups of n"})  # fmt: skip
        assert (code, out) == (0, "")


def test_a_failing_hook_exits_0_with_nothing_and_a_log_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    base = [FERREX, "--home", str(home), *AGENT, "hook"]
    for argv, doc in (
        ([*base, "capture"], {"transcript_path": str(tmp_path / "missing.jsonl")}),
        ([*base, "prompt"], "not json at all"),
    ):
        done = subprocess.run(argv, input=doc if isinstance(doc, str) else json.dumps(doc),
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert (done.returncode, done.stdout) == (0, "")
    log = (home / "logs" / "hooks.log").read_text().splitlines()
    assert "capture failed: FileNotFoundError" in log[0]
    assert "prompt failed: JSONDecodeError" in log[1]
    # a data directory that is not there is not created, and said on stderr
    done = subprocess.run([FERREX, "--home", str(tmp_path / "nowhere"), "hook", "prompt"],
                          input="{}", capture_output=True, text=True, timeout=120)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    assert "no data directory" in done.stderr and not (tmp_path / "nowhere").exists()


def test_a_paused_project_gets_nothing(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    subprocess.run([FERREX, "--home", str(home), *AGENT, "store", "--content",
                    "The billing service deploys on Fridays"], check=True, timeout=300)  # fmt: skip
    argv = installed_commands(home, project, tmp_path)
    doc = {"hook_event_name": "SessionStart", "cwd": str(project), "session_id": SESSION}
    assert context_of(run_hook(argv["SessionStart"], doc)[1], "SessionStart")
    paused = subprocess.run([FERREX, "--home", str(home), "hooks", "pause", "--project",
                             str(project)], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert paused.returncode == 0, paused.stderr
    assert run_hook(argv["SessionStart"], doc)[:2] == (0, "")
    status = subprocess.run([FERREX, "--home", str(home), "hooks", "status", "--json",
                             "--project", str(project)], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "HOME": str(tmp_path)})  # fmt: skip
    found = json.loads(status.stdout)
    assert found["paused"] is True and set(found["project"]["hooks"]) >= {"SessionStart"}
    subprocess.run([FERREX, "--home", str(home), "hooks", "resume", "--project",
                    str(project)], check=True, timeout=60)  # fmt: skip
    assert context_of(run_hook(argv["SessionStart"], doc)[1], "SessionStart")


def test_pause_reaches_the_home_the_hooks_were_installed_with(tmp_path: Path) -> None:
    """A shell whose ferrex has another home (no --home, no FERREX_HOME) still pauses,
    reports and resumes the hooks of the project's own data directory, and creates no
    other home."""
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    subprocess.run([FERREX, "--home", str(home), *AGENT, "store", "--content",
                    "The billing service deploys on Fridays"], check=True, timeout=300)  # fmt: skip
    argv = installed_commands(home, project, tmp_path)
    doc = {"hook_event_name": "SessionStart", "cwd": str(project), "session_id": SESSION}
    env = {k: v for k, v in os.environ.items() if k != "FERREX_HOME"} | {"HOME": str(tmp_path)}

    def hooks(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([FERREX, "hooks", *args, "--project", str(project)], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    paused = hooks("pause")
    assert paused.returncode == 0 and str(home) in paused.stdout, paused.stderr
    assert run_hook(argv["SessionStart"], doc)[:2] == (0, "")
    found = json.loads(hooks("status", "--json").stdout)
    assert found["paused"] is True and found["homes"] == [str(home)]
    assert hooks("resume").returncode == 0
    assert context_of(run_hook(argv["SessionStart"], doc)[1], "SessionStart")
    assert not (tmp_path / ".ferrex").exists()


OTHER_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/lint-prompt"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 check_bash.py", "timeout": 5}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "notify-send bye"},
                                  {"type": "command", "command": "ferrex-backup hook capture"}]}],
    },
}  # fmt: skip


def test_install_and_uninstall_round_trip_a_settings_file_with_other_hooks(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(OTHER_SETTINGS, indent=4))
    settings.chmod(0o644)
    original = settings.read_bytes()

    def hooks(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([FERREX, "--home", str(home), "hooks", *args, "claude-code",
                               "--project", str(project)], capture_output=True, text=True,
                              timeout=60)  # fmt: skip

    dry = hooks("install", "--dry-run")
    assert dry.returncode == 0 and settings.read_bytes() == original  # nothing written
    assert hooks("install").returncode == 0
    assert (settings.parent / "settings.local.json.ferrex-backup").read_bytes() == original
    installed = json.loads(settings.read_text())
    assert installed["permissions"] == OTHER_SETTINGS["permissions"]
    assert installed["hooks"]["PreToolUse"] == OTHER_SETTINGS["hooks"]["PreToolUse"]
    prompts = installed["hooks"]["UserPromptSubmit"]
    assert prompts[0] == OTHER_SETTINGS["hooks"]["UserPromptSubmit"][0] and len(prompts) == 2
    assert prompts[1]["hooks"][0]["command"].endswith(" hook prompt")
    assert hooks("install").returncode == 0  # again: replaced, not doubled
    assert json.loads(settings.read_text()) == installed
    assert hooks("uninstall").returncode == 0
    assert json.loads(settings.read_text()) == OTHER_SETTINGS  # as it was, value for value
    assert settings.stat().st_mode & 0o777 == 0o644  # its permissions kept
    # The user's own file before the first install is still there after two installs and
    # an uninstall; each later state is kept beside it, never over it.
    backups = sorted(settings.parent.glob("settings.local.json.ferrex-backup*"))
    assert backups[0].read_bytes() == original and len(backups) == 2, backups
    again = hooks("uninstall")
    assert again.returncode == 0 and "no ferrex hooks" in again.stdout
    settings.write_text("{broken")
    refused = hooks("install")
    assert refused.returncode == 2 and settings.read_text() == "{broken"


def test_a_linked_settings_file_is_written_through_and_a_missing_home_is_told(
    tmp_path: Path,
) -> None:
    """Settings kept with one's dotfiles (the file a symbolic link) change where they live,
    the link stays; installing for a data directory that does not exist says so."""
    home, project = tmp_path / "home", tmp_path / "project"
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps(OTHER_SETTINGS))
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    settings.symlink_to(dotfiles)

    def hooks(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([FERREX, "--home", str(home), "hooks", *args, "--project",
                               str(project)], capture_output=True, text=True,
                              timeout=60)  # fmt: skip

    done = hooks("install", "claude-code")
    assert done.returncode == 0 and settings.is_symlink()
    assert "hook prompt" in dotfiles.read_text()
    assert f"the data directory {home} does not exist yet" in done.stderr
    told = hooks("status", "claude-code", "--json")
    assert told.returncode == 0 and json.loads(told.stdout)["missing_homes"] == [str(home)]
    assert hooks("uninstall", "claude-code").returncode == 0 and settings.is_symlink()
    assert json.loads(dotfiles.read_text()) == OTHER_SETTINGS


def test_with_project_namespaces_the_server_and_the_hooks_share_the_project_namespace(
    tmp_path: Path,
) -> None:
    """``store.project_namespace``: the MCP server, started in a subdirectory of a git work
    tree, stores in the tree's name; the hook, given that cwd, reads the same namespace."""
    home, project = tmp_path / "home", tmp_path / "billing-api"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    env = {**os.environ, "FERREX_PROJECT_NAMESPACE": "true"}

    async def main() -> str:
        params = server_params(home, *AGENT)
        params.cwd = str(project / "src")
        params.env = env
        async with Client(params, read_timeout_seconds=120) as client:
            stored = await call(client, "store", {"content": "Deploys go out from release-7"})
            assert stored["namespace"] == "billing-api"
            return str(stored["id"])

    memory = anyio.run(main)
    argv = installed_commands(home, project, tmp_path)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    doc = {"hook_event_name": "SessionStart", "session_id": SESSION, "cwd": str(project)}
    done = subprocess.run(argv["SessionStart"], input=json.dumps(doc), capture_output=True,
                          text=True, timeout=120, cwd=elsewhere, env=env)  # fmt: skip
    brief = context_of(done.stdout, "SessionStart")
    assert "namespace billing-api" in brief and memory in brief
    other = {**doc, "cwd": str(elsewhere)}
    done = subprocess.run(argv["SessionStart"], input=json.dumps(other), capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")  # another project: nothing of billing-api
