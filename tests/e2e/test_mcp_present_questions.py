"""Questions about the present and the last days, and a subject named in another form of
its word, over MCP.

A real server on stdio, the SDK's client, the bundled model; wording of our own, as an agent
would put it. "Where does the billing database run these days?" is answered by the fact that
says where it moved (the words that place a question in the present are no terms a memory
lacks); a question that names a host is answered by the memory holding that host, whichever
stored thing it is linked to; and a retry limit told of the "notification fan-out worker"
is flagged beside the "notifier worker"'s (notifier and notification are one word's forms).
"What changed in the last two weeks?" and "since December 2" are periods: what happened in
them answers.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


def _ago(days: int) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).isoformat()


def test_present_questions_and_a_worker_named_by_another_form(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            async def recall(query: str) -> dict[str, Any]:
                return await call(client, "recall", {"query": query, "limit": 3})

            host = await fact("billing postgres", "host", "pg-billing-02",
                              content="Billing's Postgres lives on pg-billing-02")  # fmt: skip
            moved = await fact("billing DB", "migrated to", "Aurora cluster billing-aurora-1",
                               content="we moved the billing db to Aurora last week",
                               valid_from=_ago(6))  # fmt: skip
            await fact("billing service", "owner", "Maya Okafor")

            for query in ("where does the billing database run these days?",
                          "where does the billing database currently run?"):  # fmt: skip
                doc = await recall(query)
                assert not doc["nothing_relevant"], (query, doc)
                labels = {r["id"]: r["relevance_label"] for r in doc["results"]}
                assert labels[moved["id"]] != "none", (query, labels)

            doc = await recall("is the billing db still on pg-billing-02?")
            assert not doc["nothing_relevant"], doc
            first = doc["results"][0]
            assert first["id"] == host["id"] and first["relevance_label"] != "none", first

            # One thing named by two forms of a word, a limit told as changed: flagged.
            old = await fact("notifier worker", "max retries", "5")
            new = await fact("notification fan-out worker", "retry limit", "8",
                             content="bumped notif fanout retries", valid_from=_ago(2))  # fmt: skip
            assert new["superseded"] == [] and new["possible_conflict"] == [old["id"]], new
            # Another worker of another word keeps its own limit, unflagged.
            other = await fact("invoice worker", "retry limit", "3")
            assert "possible_conflict" not in other and other["superseded"] == [], other

    anyio.run(main)


def test_the_last_two_weeks_is_a_period_of_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:

            async def store(content: str, days: int) -> str:
                doc = await call(client, "store", {"content": content, "valid_from": _ago(days)})
                return str(doc["id"])

            crash = await store("Fixed the Android 14 crash on launch by targeting SDK 34", 3)
            gradle = await store("Moved the Android build from Gradle 7.6 to 8.5", 12)
            old = await store("Set up the Play Console internal testing track", 40)
            for query in ("what changed in the last two weeks?",
                          "anything new over the past 14 days?"):  # fmt: skip
                doc = await call(client, "recall", {"query": query, "limit": 3})
                assert not doc["nothing_relevant"], (query, doc)
                labels = {r["id"]: r["relevance_label"] for r in doc["results"]}
                assert labels.get(crash) not in (None, "none"), (query, labels)
                assert labels.get(gradle) not in (None, "none"), (query, labels)
                assert labels.get(old, "none") == "none", (query, labels)
            # "since" a date runs to today: the crash fix is in it, the Gradle move is not.
            day = datetime.now(UTC) - timedelta(days=5)
            query = f"what did we change since {day:%B} {day.day}?"
            doc = await call(client, "recall", {"query": query, "limit": 3})
            labels = {r["id"]: r["relevance_label"] for r in doc["results"]}
            assert not doc["nothing_relevant"] and labels[crash] != "none", (query, labels)
            assert labels.get(gradle, "none") == "none", (query, labels)

    anyio.run(main)
