"""Ranking that reads the question, over MCP stdio, with the bundled model (issue 44).

A real server process and the SDK's client. A *where* question ranks the memory that says
where a thing runs above one that shares the question's verb and states its version, and
a *what version* question the other way round, whether the memories are facts or notes;
the keyword leg finds a service under the spelling its notes use (``cart service`` and
``cart-svc``), in either direction, also when the question leans on keywords (``lexical``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, stdio_client

NOTES = (
    "The auth gateway runs version 1.9.0 since the Tuesday release.",
    "The auth gateway runs on k8s-node-07 in the eu-west rack.",
    "The billing worker runs every night at 02:00 and retries twice.",
    "The search indexer runs version 4.2.1 and reindexes on Sundays.",
    "The metrics gateway runs on k8s-node-12 next to Prometheus.",
    "cart-svc p99 latency went up to 900 ms after the Redis upgrade.",
    "The checkout service p99 latency is 240 ms on a normal day.",
    "The cart page shows a banner when the shop is closed.",
    "The notification proxy keeps a service latency budget of 300 ms.",
    "The inventory service latency alarms page the on-call engineer.",
)
WHERE = (
    "where does the auth gateway run?",
    "where is the auth gateway deployed?",
    "where's the auth gateway running these days?",
)
VERSION = (
    "what version does the auth gateway run?",
    "which version of the auth gateway is running?",
)
CART = ("cart service latency", "how slow is the cart service?", "cart svc p99")


async def _first(client: Client, args: dict[str, Any]) -> str:
    doc = await call(client, "recall", args | {"min_relevance": 0})
    assert doc["results"], args
    return str(doc["results"][0]["content"])


def test_a_where_question_prefers_where_over_the_shared_verb_in_notes(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for note in NOTES:
                await call(client, "store", {"content": note})
            for question in WHERE:
                assert "k8s-node-07" in await _first(client, {"query": question}), question
            for question in VERSION:
                assert "1.9.0" in await _first(client, {"query": question}), question

    anyio.run(main)


def test_a_where_question_prefers_where_over_the_shared_verb_in_facts(tmp_path: Path) -> None:
    facts = (
        ("auth gateway", "runs version", "1.9.0"),
        ("auth gateway", "runs on", "k8s-node-07"),
        ("auth gateway", "runs with", "two replicas"),
        ("billing worker", "runs on", "k8s-node-03"),
        ("search indexer", "runs version", "4.2.1"),
    )

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for subject, predicate, obj in facts:
                args = {"subject": subject, "predicate": predicate, "object": obj}
                done = await call(client, "store", args)
                assert not done.get("superseded"), (args, done)
            for question in WHERE:
                first = await call(client, "recall", {"query": question, "min_relevance": 0})
                assert first["results"][0]["object"] == "k8s-node-07", (question, first)
            for question in VERSION:
                first = await call(client, "recall", {"query": question, "min_relevance": 0})
                assert first["results"][0]["object"] == "1.9.0", (question, first)

    anyio.run(main)


def test_the_keyword_leg_finds_a_service_as_its_notes_spell_it(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for note in NOTES:
                await call(client, "store", {"content": note})
            for question in CART:
                for strategy in ("balanced", "lexical"):
                    first = await _first(client, {"query": question, "strategy": strategy})
                    assert first.startswith("cart-svc"), (question, strategy, first)
            # The other way round: a question that writes the short form finds the long one.
            await call(client, "store", {"content": "The payment service retries a card twice."})
            args = {"query": "payment-svc retries", "strategy": "lexical"}
            first = await _first(client, args)
            assert first.startswith("The payment service"), first

    anyio.run(main)
