"""Chat import rate: `ferrex import` of a generated ChatGPT (or Claude) export into a fresh
home, then the same file again (nothing new to store), through the real command in its own
process. Prints the outcome counts, messages/s of both runs and the load average beside them
(the rate is reported, never asserted).

The export is deterministic: conversations of user and assistant turns made of words from
``tools.bench_journal.WORDS``, each conversation with one regenerated answer (a branch that
is not shown) and every fifth assistant answer long enough to be split.

    python -m tools.bench_chat_import [--messages 3000] [--format chatgpt] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.chat_exports import (
    T0,
    claude_conversation,
    claude_message,
    gpt_conversation,
    gpt_message,
)
from tools import harness
from tools.bench_journal import WORDS

PER_CONVERSATION = 12


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    return " ".join(words).capitalize() + "."


def turn(rng: random.Random, role: str, index: int) -> str:
    count = 12 if role == "assistant" and index % 5 == 0 else rng.randint(1, 3)
    return " ".join(sentence(rng) for _ in range(count))


def chatgpt_export(messages: int, rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in range((messages + PER_CONVERSATION - 1) // PER_CONVERSATION):
        conv = f"conv-{c:05d}"
        nodes: list[tuple[str, str | None, dict[str, Any] | None]] = [(f"{conv}-root", None, None)]
        parent = f"{conv}-root"
        for i in range(min(PER_CONVERSATION, messages - c * PER_CONVERSATION)):
            role = "user" if i % 2 == 0 else "assistant"
            node = f"{conv}-m{i}"
            when = T0 + c * 3600 + i * 30
            if i == 1:  # a first answer that was regenerated: not on the shown path
                old = f"{conv}-m{i}-old"
                nodes.append((old, parent, gpt_message(old, role, turn(rng, role, i), time=when)))
            nodes.append((node, parent, gpt_message(node, role, turn(rng, role, i), time=when)))
            parent = node
        out.append(gpt_conversation(conv, f"Conversation {c}", nodes, parent, time=T0 + c * 3600))
    return out


def claude_export(messages: int, rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in range((messages + PER_CONVERSATION - 1) // PER_CONVERSATION):
        conv = f"conv-{c:05d}"
        chat = []
        for i in range(min(PER_CONVERSATION, messages - c * PER_CONVERSATION)):
            sender = "human" if i % 2 == 0 else "assistant"
            at = f"2024-06-{1 + c % 28:02d}T{c % 24:02d}:{i:02d}:00Z"
            chat.append(claude_message(f"{conv}-m{i}", sender, turn(rng, sender, i), at=at))
        out.append(claude_conversation(conv, f"Conversation {c}", chat))
    return out


def run(home: Path, export: Path) -> tuple[float, dict[str, Any]]:
    exe = harness.FERREX
    started = time.perf_counter()
    done = subprocess.run(
        [exe, "--home", str(home), "import", str(export), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"import failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--format", choices=("chatgpt", "claude"), default="chatgpt")
    parser.add_argument("--dir", type=Path, help="keep the export and home here")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    rng = random.Random(28)
    base = args.dir or Path(tempfile.mkdtemp(prefix="ferrex-chat-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    build = chatgpt_export if args.format == "chatgpt" else claude_export
    export = base / "conversations.json"
    export.write_text(json.dumps(build(args.messages, rng)), encoding="utf-8")
    home = base / "home"
    shutil.rmtree(home, ignore_errors=True)
    load_before = os.getloadavg()
    first, doc = run(home, export)
    again, doc2 = run(home, export)
    load_after = os.getloadavg()
    print("| export | messages | first import | re-run | load (1, 5, 15 min) |")
    print("|---|---|---|---|---|")
    print(
        f"| {args.format}, {doc['conversations']} conversations | {doc['messages']} "
        f"| {first:.1f} s, {doc['messages'] / first:.0f} msg/s | "
        f"{again:.1f} s, {doc2['messages'] / again:.0f} msg/s | "
        f"{' '.join(f'{x:.1f}' for x in load_before)} → "
        f"{' '.join(f'{x:.1f}' for x in load_after)} |"
    )
    print(f"\nfirst: counts {doc['counts']}, skipped {doc['skipped']}")
    print(f"re-run: counts {doc2['counts']}, skipped {doc2['skipped']}")
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
