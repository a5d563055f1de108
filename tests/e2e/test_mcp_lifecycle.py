"""Pins, importance and working memory that expires, over MCP, as an agent uses them.

A real server process on stdio (the SDK's client), with the owner's expiry sweep every
second (``FERREX_EXPIRY_SWEEP_SECONDS``): marks on store and through ``confirm``, their
effect on recall, ``stats``' count of what will expire, the sweep's ``memories.forgotten``
with reason ``expired`` in the journal, and bad marks refused with nothing written.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.e2e.mcp_helpers import FERREX, call, error, ferrex, journal_head


@contextmanager
def _sweeping_every_second() -> Iterator[None]:
    old = os.environ.get("FERREX_EXPIRY_SWEEP_SECONDS")
    os.environ["FERREX_EXPIRY_SWEEP_SECONDS"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["FERREX_EXPIRY_SWEEP_SECONDS"]
        else:
            os.environ["FERREX_EXPIRY_SWEEP_SECONDS"] = old


def _client(home: Path, *extra: str) -> Client:
    params = StdioServerParameters(
        command=FERREX, args=["--home", str(home), *extra], env=dict(os.environ)
    )
    return Client(params, read_timeout_seconds=120)


def _tags_after(home: Path, position: int) -> set[str]:
    shown = ferrex(home, "journal", "show", "--after", str(position))
    assert shown.returncode == 0, shown.stderr
    return {e["event"] for line in shown.stdout.splitlines() for e in json.loads(line)["events"]}


def _result(doc: dict[str, Any], memory_id: str) -> dict[str, Any] | None:
    return next((r for r in doc["results"] if r["id"] == memory_id), None)


def test_pins_importance_and_expiry_over_mcp(tmp_path: Path) -> None:
    home = tmp_path / "home"
    swept: list[str] = []

    async def main() -> None:
        async with _client(home, "--agent-id", "planner") as client:
            plain = await call(client, "store", {"content": "Deploy checklist for billing-api"})
            assert not {"pinned", "importance", "expires_at"} & set(plain)
            pinned = await call(client, "store", {
                "content": "Billing-api deploys need the payments team's approval",
                "pinned": True, "importance": 0.9})  # fmt: skip
            assert pinned["pinned"] is True and pinned["importance"] == 0.9
            scratch = await call(client, "store", {
                "content": "Scratch: billing-api deploy attempt 3 runs", "ttl": "8s"})  # fmt: skip
            assert scratch["expires_at"].endswith("Z")
            swept.append(scratch["id"])

            stats = await call(client, "stats", {})
            assert stats["expiring"] == 1 and stats["total"] == 3

            found = await call(client, "recall", {"query": "billing-api deploy", "limit": 10,
                                                  "explain": True})  # fmt: skip
            hit = _result(found, pinned["id"])
            assert hit is not None and hit["pinned"] is True and hit["importance"] == 0.9
            assert hit["explain"]["importance"] == {"value": 0.9, "factor": 1.2}
            other = _result(found, plain["id"])
            assert other is not None and "pinned" not in other and "importance" not in other
            assert other["explain"]["importance"] == {"value": 0.5, "factor": 1.0}
            assert _result(found, scratch["id"]) is not None

            # Marks change later, as events, through confirm.
            marked = await call(client, "confirm", {"ids": [plain["id"]], "importance": 0.1})
            assert marked["marked"] == [plain["id"]] and marked["validated"] == [plain["id"]]
            again = await call(client, "recall", {"query": "billing-api deploy", "limit": 10})
            low = _result(again, plain["id"])
            assert low is not None and low["importance"] == 0.1

            # Bad marks: a clear error, and nothing is written.
            head = journal_head(home)
            for args in (
                {"content": "x1", "importance": 1.5},
                {"content": "x2", "ttl": "5x"},
                {"content": "x3", "ttl": "90s", "pinned": True},
                {"content": "x4", "ttl": -3},
                {"content": "x5", "pinned": "true"},
            ):
                code, text = await error(client, "store", args)
                assert code == "invalid_input", text
            code, text = await error(client, "store", {"content": "x", "ttl": "5x"})
            assert "not a duration" in text
            code, text = await error(client, "store", {"content": "y", "ttl": "9s",
                                                       "pinned": True})  # fmt: skip
            assert "pinned and expiring" in text
            code, _ = await error(client, "confirm", {"ids": [plain["id"]], "importance": 2})
            assert code == "invalid_input"
            # Only the owner's background writes may have come since (recall hits, the sweep).
            assert _tags_after(home, head) <= {"memories.accessed", "memories.forgotten"}

            # The moment it expires recall hides it; the owner's sweep then forgets it.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                gone = await call(client, "recall", {"query": "billing-api deploy attempt",
                                                     "limit": 10})  # fmt: skip
                if _result(gone, scratch["id"]) is None:
                    break
                await anyio.sleep(0.5)
            assert _result(gone, scratch["id"]) is None
            while time.monotonic() < deadline:
                stats = await call(client, "stats", {})
                if "memories.forgotten" in _tags_after(home, head):
                    break
                await anyio.sleep(0.5)
            assert stats["expiring"] == 0 and stats["total"] == 2

    with _sweeping_every_second():
        anyio.run(main)

    shown = ferrex(home, "journal", "show")
    assert shown.returncode == 0, shown.stderr
    forgets = [
        event
        for line in shown.stdout.splitlines()
        for event in json.loads(line)["events"]
        if event["event"] == "memories.forgotten"
    ]
    assert [(f["memory_ids"], f["reason"]) for f in forgets] == [(swept, "expired")]
    assert forgets[0]["details"][0].startswith("expired at ")
