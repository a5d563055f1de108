"""A period named in the question is evidence, as an ``after``/``before`` window is, over MCP
stdio with the bundled model (issue 44, "Explicit filters are evidence").

Episodes stored on three days; a vague question naming one of those days ("what did we
change yesterday?", "what did we work on on 2026-12-07?" and rewordings) shows that day's
memories without the *nothing relevant* verdict, although they share no word with the
question but the period; a question about something never stored, naming the same day,
still gets the verdict. The clock is fixed by ``as_of`` (yesterday is 8 December).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, stdio_client

AS_OF = "2026-12-09T18:00:00Z"
"""A Wednesday evening: yesterday is Tuesday 8 December."""
DECEMBER_7 = (
    ("Bumped the retry limit of the email sender to 5.", "2026-12-07T09:30:00Z"),
    ("Moved the staging database to a larger instance.", "2026-12-07T14:00:00Z"),
)
DECEMBER_8 = (
    ("Raised the rate limit of the public API to 200 requests per second.", "2026-12-08T10:00:00Z"),
    ("Replaced the cron job for invoice exports with a queue worker.", "2026-12-08T13:00:00Z"),
    ("Turned on gzip compression for the static assets.", "2026-12-08T16:00:00Z"),
)
DECEMBER_9 = (
    ("Renamed the billing dashboards in Grafana.", "2026-12-09T09:00:00Z"),
    ("Dropped the unused index on the sessions table.", "2026-12-09T11:00:00Z"),
)


async def _store(client: Client) -> dict[str, str]:
    ids: dict[str, str] = {}
    for text, at in (*DECEMBER_7, *DECEMBER_8, *DECEMBER_9):
        args: dict[str, Any] = {"content": text, "valid_from": at, "type": "episodic"}
        ids[text] = str((await call(client, "store", args))["id"])
    return ids


async def _recall(client: Client, query: str) -> dict[str, Any]:
    return await call(client, "recall", {"query": query, "limit": 10, "as_of": AS_OF})


def _labels(doc: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["relevance_label"] for r in doc["results"]}


def test_a_vague_question_naming_a_day_is_answered_by_that_days_memories(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            days = {
                "yesterday": {ids[t] for t, _ in DECEMBER_8},
                "2026-12-08": {ids[t] for t, _ in DECEMBER_8},
                "2026-12-07": {ids[t] for t, _ in DECEMBER_7},
                "December 7": {ids[t] for t, _ in DECEMBER_7},
                "7 to 8": {ids[t] for t, _ in (*DECEMBER_7, *DECEMBER_8)},
            }
            questions = (
                ("what did we change yesterday?", "yesterday"),
                ("what changed yesterday", "yesterday"),
                ("what did we change on 2026-12-08?", "2026-12-08"),
                ("what did we work on on 2026-12-07?", "2026-12-07"),
                ("what were we working on on December 7?", "December 7"),
                ("any issues yesterday?", "yesterday"),
                ("what did we change between December 7 and December 8?", "7 to 8"),
            )
            others = set(ids.values())
            for question, day in questions:
                doc = await _recall(client, question)
                labels = _labels(doc)
                assert doc["nothing_relevant"] is False, (question, doc)
                assert days[day] <= set(labels), (question, doc)
                # Each of that day's memories answers; none of another day's gains by it.
                assert all(labels[m] != "none" for m in days[day]), (question, doc)
                assert all(labels[m] == "none" for m in others - days[day] if m in labels), (
                    question,
                    doc,
                )

    anyio.run(main)


def test_a_question_naming_a_day_about_something_never_stored_gets_the_verdict(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            await _store(client)
            for question in (
                "what did we decide about the Kafka partitions yesterday?",
                "what did the CFO say about the marketing budget on 2026-12-08?",
                "which port did the Redis sentinel move to yesterday?",
            ):
                doc = await _recall(client, question)
                assert doc["nothing_relevant"] is True, (question, doc)

    anyio.run(main)
