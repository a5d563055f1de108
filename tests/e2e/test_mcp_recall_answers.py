"""The right answer is never hidden, over MCP stdio, with the bundled model.

A real server process and the SDK's client. A longer answer begins with the shorter one
(the candidate depth does not follow ``limit``); a default recall hides only what the
relevance model is sure is no answer, and shows a few rows unless nothing is relevant; an
entity filter or a time window is evidence that what it admits is what a vague question is
about; an entity filter finds its entity under the spellings people use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, ferrex, stdio_client

SERVICES = ("billing", "ledger", "invoice", "refund", "tax", "payout", "statement", "search")
WHAT = ("deploy", "rollout", "migration", "restart", "canary", "config change", "rollback")
HOW = (
    "went out to all pods", "paused after an alarm", "was reverted", "locked a table",
    "doubled the p99 latency", "finished without errors", "needed a second attempt",
    "was announced in the team channel", "raised the error rate for ten minutes",
)  # fmt: skip


def _depth_lines() -> list[dict[str, Any]]:
    """A hundred and twenty events about changes to services, January to March 2026, worded
    from a small vocabulary (a fixed pattern, no randomness): many share some of a
    question's words, so each leg returns more than a short answer's depth and the legs
    disagree about their order."""
    lines = []
    for i in range(120):
        service = SERVICES[i % len(SERVICES)]
        what = WHAT[(i * 3) % len(WHAT)]
        how = HOW[(i * 5) % len(HOW)]
        other = SERVICES[(i * 7 + 3) % len(SERVICES)]
        text = f"The {what} of the {service} service {how}; {other} was untouched (#{i})."
        at = f"2026-{1 + i % 3:02d}-{1 + (i * 7) % 27:02d}T10:00:00Z"
        lines.append({"type": "episodic", "content": text, "valid_from": at})
    return lines


async def _ids(client: Client, args: dict[str, Any]) -> list[str]:
    doc = await call(client, "recall", args)
    return [r["id"] for r in doc["results"]]


def test_a_longer_answer_begins_with_the_shorter_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = tmp_path / "deploys.jsonl"
    lines.write_text("".join(json.dumps(x) + "\n" for x in _depth_lines()))
    done = ferrex(home, "import", str(lines), "--json")
    assert done.returncode == 0, done.stderr
    questions = (
        "which service deploys went out in March 2026?",
        "billing rollback that locked a table",
        "what slowed down search after the canary?",
        "which refund changes needed a second attempt?",
    )

    async def main() -> None:
        async with stdio_client(home) as client:
            for question in questions:
                for trimmed in (False, True):
                    args: dict[str, Any] = {"query": question}
                    if not trimmed:
                        args["min_relevance"] = 0
                    short = await _ids(client, args | {"limit": 5})
                    long = await _ids(client, args | {"limit": 50})
                    if not trimmed:
                        assert len(short) == 5, question
                    assert short == long[: len(short)], (question, trimmed, short, long[:5])

    anyio.run(main)
