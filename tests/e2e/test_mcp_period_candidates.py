"""A day's memories reach the answer to "what happened on that day?" although the legs over
every memory never return them, over MCP stdio with the bundled model (issue 44, "Explicit
filters are evidence").

Ninety-odd notes on other days talk about what *happened* in *September* *2026* (the
question's own words) and outrank, in both the dense and the BM25 leg, the three plain
events of September 1, which share no word with the question. Recall also asks both legs
inside the period the question names (``ferrex/read/period.py``), so those three are
candidates, and a question that names only a period ranks them first. A question about
a thing that names a day ("what did the Kafka review decide on September 2?") still finds
the Kafka memory of another day: nothing outside the period is lost. The clock is fixed
by ``as_of``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, stdio_client

AS_OF = "2026-12-09T12:00:00Z"
SEPTEMBER_1 = (
    ("Priya took over as tech lead of the checkout engine from Marco.", "2026-09-01T09:00:00Z"),
    ("Dana finished the Postgres upgrade; eleven minutes of write downtime.",
     "2026-09-01T11:00:00Z"),
    ("Architecture review agreed that ADRs need two reviewers from different teams.",
     "2026-09-01T15:00:00Z"),
)  # fmt: skip
SERVICES = (
    "search-api", "cart-svc", "auth-gateway", "email-sender", "pricing-svc", "geo-lookup",
    "image-resizer", "fraud-scorer", "tax-calc", "export-worker", "recs-svc", "sms-relay",
)  # fmt: skip
TEMPLATES = (
    "What happened to {s} in September 2026: its error budget burned {n}% in one week.",
    "The {s} incident that happened on a September 2026 weekend paged the on-call {n} times.",
    "In September 2026 {s} happened to hit its memory limit {n} times during batch runs.",
    "Retro notes: what happened with {s} latency in September 2026, p99 up by {n} ms.",
    "{s} September 2026 capacity report: {n} pods at peak, nothing unusual happened.",
    "The September 2026 migration of {s} happened in {n} steps over two weekends.",
    "Something happened to {s} dashboards in September 2026; {n} panels were rebuilt.",
    "September 2026 cost review: {s} spend rose {n}% after what happened with autoscaling.",
)
KAFKA = ("The Kafka review decided to keep twelve partitions per topic.", "2026-09-03T10:00:00Z")


def _noise() -> list[tuple[str, str]]:
    """Notes on days other than September 1, each using the question's words."""
    notes = []
    for i, service in enumerate(SERVICES):
        for j, template in enumerate(TEMPLATES):
            day = 2 + (i * len(TEMPLATES) + j) % 28  # September 2 to 29
            text = template.format(s=service, n=3 + 7 * i + j)
            notes.append((text, f"2026-09-{day:02d}T10:00:00Z"))
    return notes


async def _store(client: Client) -> dict[str, str]:
    ids: dict[str, str] = {}
    for text, at in (*SEPTEMBER_1, KAFKA, *_noise()):
        args: dict[str, Any] = {"content": text, "valid_from": at, "type": "episodic"}
        answer = await call(client, "store", args)
        if answer.get("id"):
            ids[text] = str(answer["id"])
    return ids


def test_what_happened_on_a_day_shows_that_days_memories(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            day = {ids[text] for text, _ in SEPTEMBER_1}
            assert len(ids) > 60, "the noise was stored"
            for question in (
                "What happened on September 1, 2026?",
                "what happened on 2026-09-01?",
                "What happened on Sep 1?",
            ):
                doc = await call(client, "recall", {"query": question, "limit": 5, "as_of": AS_OF})
                shown = [r["id"] for r in doc["results"]]
                assert doc["nothing_relevant"] is False, (question, doc)
                assert set(shown[:3]) == day, (question, doc)

    anyio.run(main)


def test_a_question_about_a_thing_keeps_its_answer_from_another_day(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            doc = await call(
                client,
                "recall",
                {"query": "what did the Kafka review decide on September 2?", "limit": 5,
                 "as_of": AS_OF},
            )  # fmt: skip
            assert ids[KAFKA[0]] in [r["id"] for r in doc["results"]], doc

    anyio.run(main)
