"""Wall-clock time of each Claude Code hook as the client runs it (a process, JSON on stdin),
with a server running on the data directory and without one.

``python -m tools.bench_hooks [--runs N] [--memories M]``. Cold is each mode's first run
(without a server: the first process to open the home and load the model; with one: the
first call after the server answered its first tool call); warm are the runs after it,
reported as p50/p95. The home holds M memories imported from a store file. Wall clock on a
shared machine: say how loaded it was (the load average is printed).

``prompt`` is the prompt hook as installed (with a server: its lean path, :mod:`ferrex.hooks.lean`);
``prompt-full`` the same prompt run through the full command (``FERREX_HOOK_LEAN=0``), each
run right after the other, so that their ratio holds under a load that moves. Each line
also gives the hook process's own CPU time (p50 of the warm runs), which the load moves less
than the wall clock (the server's share of a call is not in it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tests.e2e.mcp_helpers import FERREX, serving
from tests.e2e.test_hooks_claude_code import SESSION, write_transcript
from tools import harness

AGENT = ["--agent-id", "claude-code", "--default-visibility", "shared"]
PROMPTS = [
    "Which branch does the billing service deploy from?",
    "What did we decide about the cache eviction policy?",
    "What is the capital city of Mongolia?",
]


def _home(root: Path, memories: int) -> Path:
    home = root / "home"
    lines = [
        json.dumps({"content": f"Note {i}: service-{i % 40} uses port {8000 + i} and deploys "
                    f"from branch release-{i % 9} on day {i % 7} of the week"})
        for i in range(memories)
    ]  # fmt: skip
    lines.append(json.dumps({"content": "The billing service deploys from release-7 on Fridays"}))
    data = root / "memories.jsonl"
    data.write_text("\n".join(lines) + "\n")
    subprocess.run([FERREX, "--home", str(home), *AGENT, "import", str(data)], check=True,
                   capture_output=True, timeout=1800)  # fmt: skip
    return home


CPU: dict[str, list[float]] = {}
"""Per hook, the CPU seconds (user and system) of each run's process: what a run costs the
machine, which a load that delays the run in wall time moves less."""


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(home: Path, hook: str, doc: dict[str, object], lean: bool = True) -> float:
    cpu = _cpu()
    started = time.monotonic()
    done = subprocess.run(
        [FERREX, "--home", str(home), *AGENT, "hook", hook],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "FERREX_HOOK_LEAN": "1" if lean else "0"},
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0
    CPU.setdefault(hook if lean else f"{hook}-full", []).append(_cpu() - cpu)
    return seconds


def _series(home: Path, runs: int, transcript: Path) -> dict[str, list[float]]:
    common = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(home)}
    out: dict[str, list[float]] = {"session-start": [], "prompt": [], "prompt-full": [],
                                   "capture": []}  # fmt: skip
    for i in range(runs):
        out["session-start"].append(
            _run(home, "session-start", {**common, "hook_event_name": "SessionStart"})
        )
        out["prompt"].append(
            _run(
                home,
                "prompt",
                {
                    **common,
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": PROMPTS[i % len(PROMPTS)],
                },
            )
        )
        out["prompt-full"].append(
            _run(
                home,
                "prompt",
                {
                    **common,
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": PROMPTS[i % len(PROMPTS)],
                },
                lean=False,
            )
        )
        out["capture"].append(_run(home, "capture", {**common, "hook_event_name": "PreCompact"}))
    return out


def _report(mode: str, series: dict[str, list[float]]) -> None:
    for hook, times in series.items():
        warm = sorted(times[1:])
        p95 = harness.percentile(warm, 0.95)
        cpu = CPU.pop(hook, [])[1:]
        print(
            f"{mode:10} {hook:14} cold {times[0] * 1000:7.0f} ms   warm p50 "
            f"{statistics.median(warm) * 1000:6.0f} ms  p95 {p95 * 1000:6.0f} ms  "
            f"cpu p50 {statistics.median(cpu) * 1000 if cpu else 0:5.0f} ms  (n={len(warm)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--server-only", action="store_true", help="skip the runs without one")
    harness.add_arguments(parser)
    options = parser.parse_args()
    harness.begin(options)  # refuses a busy machine unless --noisy; reports the load at exit
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = _home(root, options.memories)
        transcript = root / "transcript.jsonl"
        write_transcript(transcript)
        if not options.server_only:
            _report("no-server", _series(home, options.runs, transcript))
        with serving(home, *AGENT):
            _report("server", _series(home, options.runs, transcript))


if __name__ == "__main__":
    main()
