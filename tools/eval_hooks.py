"""Injection precision and recall of the prompt hook on ``golden_set/hook_prompts/``, the hook
run exactly as Claude Code runs it.

``python -m tools.eval_hooks --half tuning|held-out [--no-server] [--out FILE] [--keep DIR]``

A fresh data directory gets the set's 300 memories through ``ferrex import``, each line a
store request as an agent would make it: its ``content``, ``entities`` and ``namespace``,
stored as the agent ``claude-code``, shared, as the README's Claude Code entry stores. The
set's ``type`` is not passed: a fact needs its subject, predicate and object and a procedure
its name and steps, which the set's notes do not give, so each is stored as the store decides
for a plain text (an episodic memory), as ``tools/eval_agent_notes.py`` does with notes that
lack them. Each project of the set (``shop``,
``mobile``, ``infra``) is a directory holding ``.git``; with ``store.project_namespace`` on
(``FERREX_PROJECT_NAMESPACE=1``), a hook run with that ``cwd`` recalls in that namespace, as
it does for a client working in that git tree. Then, per prompt, the command ``ferrex hooks
install`` writes for ``UserPromptSubmit`` runs as a process with Claude Code's JSON on stdin
(``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``, ``prompt``); its exit code
must be 0, and its stdout is empty or ``hookSpecificOutput.additionalContext``.

Reported, for the half asked (``sha256(id)[0] % 2``: even is tuning, odd held-out, as the
set's README says):

- related prompts whose injected context holds an answering memory (by id; target ≥ 90%);
- unrelated prompts with any context injected (target ≤ 10%);
- tokens per injection (the bundled tokenizer, the count the hook budgets with; p50, max);
- the hook's wall time per prompt (p50, p95; a loaded machine makes these noisy).

With ``--server`` an MCP stdio server (the README's Claude Code entry) runs on the data
directory, and the hook reaches it through the hub; without one each hook process owns the
data directory for its run (and loads the model).

``--out FILE`` writes each prompt's outcome, for the tuning half only: the held-out half's
items are not to be looked at, so it reports totals alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tools import harness
from tools.harness import ROOT, percentile

SET = ROOT / "golden_set" / "hook_prompts"
AGENT = ["--agent-id", "claude-code", "--default-visibility", "shared"]
SESSION = "0d6c2f3e-9a51-4b7e-8c1d-5e2f7a9b3c40"
MEMORY_ID = re.compile(r"\bmem_[0-9A-Za-z]+\b")


def half_of(prompt_id: str) -> str:
    """``tuning`` or ``held-out``: the first byte of the id's SHA-256, even or odd."""
    return "tuning" if hashlib.sha256(prompt_id.encode()).digest()[0] % 2 == 0 else "held-out"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _home(root: Path, memories: list[dict[str, Any]]) -> tuple[Path, dict[str, str]]:
    """A data directory holding ``memories`` stored through ``ferrex import``; the set's id of
    each stored memory's ferrex id."""
    home = root / "home"
    data = root / "memories.jsonl"
    lines = [
        {"content": m["content"], "entities": m["entities"], "namespace": m["namespace"]}
        for m in memories
    ]  # fmt: skip
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = subprocess.run(
        [harness.FERREX, "--home", str(home), *AGENT, "import", str(data)],
        capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"import failed ({done.returncode}): {done.stderr[-2000:]}")
    return home, _ids(home, memories)


def _ids(home: Path, memories: list[dict[str, Any]]) -> dict[str, str]:
    """ferrex id → the set's id, matched by text from an export of the home."""
    done = subprocess.run(
        [harness.FERREX, "--home", str(home), "export", "jsonl", "-"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"export failed: {done.stderr[-2000:]}")
    by_text = {m["content"]: m["id"] for m in memories}
    out: dict[str, str] = {}
    for line in done.stdout.splitlines():
        doc = json.loads(line)
        text = doc.get("content")
        if isinstance(doc.get("id"), str) and text in by_text:
            out[doc["id"]] = by_text[text]
    missing = set(by_text.values()) - set(out.values())
    if missing:
        raise SystemExit(f"{len(missing)} memories of the set are not in the home: "
                         f"{sorted(missing)[:5]}")  # fmt: skip
    return out


def _projects(root: Path, names: set[str]) -> dict[str, Path]:
    """A git work tree (a directory holding ``.git``) per namespace, named after it."""
    out = {}
    for name in sorted(names):
        tree = root / "projects" / name
        (tree / ".git").mkdir(parents=True, exist_ok=True)
        (tree / "src").mkdir(exist_ok=True)
        out[name] = tree
    return out


def _hook_argv(home: Path) -> list[str]:
    """The ``UserPromptSubmit`` command ``ferrex hooks install claude-code`` writes."""
    import shlex

    project = home.parent / "install-probe"
    project.mkdir(exist_ok=True)
    done = subprocess.run(
        [harness.FERREX, "--home", str(home), "hooks", "install", "claude-code", "--project",
         str(project), "--dry-run"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"hooks install failed: {done.stderr}")
    doc = json.loads(done.stdout.split("\n", 1)[1])
    return shlex.split(doc["hooks"]["UserPromptSubmit"][-1]["hooks"][0]["command"])


def _token_count() -> Any:
    from ferrex.cli.hooks import _token_count as count

    return count()


@contextmanager
def _server(home: Path, on: bool) -> Iterator[None]:
    """An MCP stdio server on ``home`` (the README's Claude Code entry) while the block runs."""
    if not on:
        yield
        return
    from tests.e2e.mcp_helpers import serving

    with serving(home, *AGENT):
        yield


def _run(argv: list[str], doc: dict[str, Any], env: dict[str, str]) -> tuple[str, float]:
    started = time.monotonic()
    done = subprocess.run(argv, input=json.dumps(doc), capture_output=True, text=True,
                          timeout=120, env=env, cwd=doc["cwd"])  # fmt: skip
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the hook exited {done.returncode}: {done.stderr[-2000:]}")
    if not done.stdout.strip():
        return "", seconds
    out = json.loads(done.stdout)["hookSpecificOutput"]
    if out["hookEventName"] != "UserPromptSubmit":
        raise SystemExit(f"the hook answered for {out['hookEventName']}")
    return str(out["additionalContext"]), seconds


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} = {100 * part / whole:.1f}%" if whole else "0/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=["tuning", "held-out", "both"], required=True)
    parser.add_argument("--server", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--out", type=Path, help="each prompt's outcome (tuning half only)")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="import into DIR/home and keep it; a later run reuses it",
    )
    options = parser.parse_args()
    if options.out is not None and options.half != "tuning":
        parser.error("--out writes items of the tuning half only")
    memories = _jsonl(SET / "memories.jsonl")
    prompts = [p for p in _jsonl(SET / "prompts.jsonl")
               if options.half == "both" or half_of(p["id"]) == options.half]  # fmt: skip
    count = _token_count()
    with tempfile.TemporaryDirectory(prefix="ferrex-eval-hooks-") as tmp:
        root = Path(tmp)
        keep = options.keep or root
        if (keep / "home" / "journal").exists():  # imported by an earlier run with --keep
            home, ids = keep / "home", _ids(keep / "home", memories)
        else:
            keep.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            home, ids = _home(keep, memories)
            print(f"imported {len(ids)} memories in {time.monotonic() - started:.0f} s")
        trees = _projects(root, {m["namespace"] for m in memories})
        argv = _hook_argv(home)
        env = {**os.environ, "FERREX_PROJECT_NAMESPACE": "1"}
        transcript = root / "transcript.jsonl"
        transcript.write_text("")
        rows = []
        with _server(home, options.server):
            for p in prompts:
                doc = {"session_id": SESSION, "transcript_path": str(transcript),
                       "cwd": str(trees[p["namespace"]] / "src"),
                       "hook_event_name": "UserPromptSubmit", "prompt": p["prompt"]}  # fmt: skip
                context, seconds = _run(argv, doc, env)
                shown = [ids.get(i, i) for i in MEMORY_ID.findall(context)]
                rows.append({"id": p["id"], "related": p["related"], "answers": p["answers"],
                             "shown": shown, "tokens": count(context) if context else 0,
                             "seconds": seconds, "context": context})  # fmt: skip
    related = [r for r in rows if r["related"]]
    unrelated = [r for r in rows if not r["related"]]
    hit = sum(1 for r in related if set(r["answers"]) & set(r["shown"]))
    injected_related = sum(1 for r in related if r["context"])
    noise = sum(1 for r in unrelated if r["context"])
    tokens = [r["tokens"] for r in rows if r["context"]]
    times = [r["seconds"] for r in rows]
    mode = "server" if options.server else "no server"
    print(f"half {options.half}, {mode}, {len(rows)} prompts; load {os.getloadavg()[0]:.1f}")
    print(f"related with an answering memory injected: {_pct(hit, len(related))} (target >= 90%)")
    print(f"related with any context: {_pct(injected_related, len(related))}")
    print(f"unrelated with any context injected: {_pct(noise, len(unrelated))} (target <= 10%)")
    if tokens:
        print(f"tokens per injection: p50 {statistics.median(tokens):.0f}, max {max(tokens)}, "
              f"n {len(tokens)}")  # fmt: skip
    print(f"hook wall time: p50 {statistics.median(times) * 1000:.0f} ms, "
          f"p95 {percentile(times, 0.95) * 1000:.0f} ms")  # fmt: skip
    if options.out is not None:
        options.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
