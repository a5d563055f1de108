"""Questions about things never stored get *nothing relevant*, over MCP stdio with the
bundled model (issue 44, "Hide only what cannot be the answer": the verdict still comes for
questions about things never stored).

A project's notes name services, a cluster and their facts as an agent stores them (with
``entities``). Asked, in several wordings, about a thing the store knows next to nothing
of, recall says *nothing relevant*: a cluster it has never heard of (``prod-eu-2`` beside
the stored ``prod-eu-1``), the login rate limit of the support gateway (only the auth
gateway's is stored; the support gateway is stored for other things), the latency SLO of
the fraud scorer (its review thresholds are stored, no SLO). The same questions about what
is stored are answered, without the verdict, the right note labelled ``weak`` or better.

Not judged (a known limit, so the notes here store no other service's SLO): a memory
about another stored thing that shares no word with the one asked about (the payments
API's latency SLO, asked for the fraud scorer's) still counts by its wording.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, stdio_client

NOTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("auth-gateway login rate limit: 10 attempts per IP per minute, lockout 15 minutes.",
     ("auth-gateway",)),
    ("auth-gateway rotates its JWT signing key monthly with `authctl keys new`.",
     ("auth-gateway",)),
    ("support-gateway is the bridge between Zendesk and our internal APIs; agents issue "
     "goodwill credits through it.", ("support-gateway", "Zendesk")),
    ("support-gateway credit caps: EUR 50 per ticket, EUR 100 for VIP customers.",
     ("support-gateway",)),
    ("fraud-scorer returns a 0-1000 risk score; above 870 is held for manual review.",
     ("fraud-scorer",)),
    ("fraud-scorer is a Python FastAPI service; the model is XGBoost loaded at startup.",
     ("fraud-scorer",)),
    ("prod-eu-1 is the main GKE cluster in europe-west4; payments-api and cart-svc run there.",
     ("prod-eu-1", "payments-api", "cart-svc")),
    ("Ingrid upgraded prod-eu-1 to Kubernetes 1.31 node pool by node pool.",
     ("prod-eu-1", "Ingrid", "Kubernetes")),
    ("payments-api retries PSP calls twice with a 3 second timeout.", ("payments-api",)),
)  # fmt: skip

NEVER_STORED = (
    "Which services run in the prod-eu-2 cluster?",
    "what is deployed on prod-eu-2?",
    "What is the login rate limit on the support gateway?",
    "How many login attempts per minute does the support gateway allow?",
    "What is the latency SLO of the fraud scorer?",
    "What's the fraud scorer's latency objective?",
)
"""Questions about a thing never stored, reworded (the answer: *nothing relevant*)."""

STORED = (
    ("Which services run in the prod-eu-1 cluster?", 7),
    ("What is the login rate limit on the auth gateway?", 0),
    ("How many login attempts per minute does the auth gateway allow?", 0),
    ("What are the credit caps of the support gateway?", 3),
    ("What score does the fraud scorer hold for manual review?", 4),
)
"""Questions about what is stored, with the note that answers them (by its index)."""


async def _store(client: Client) -> list[str]:
    ids: list[str] = []
    for text, entities in NOTES:
        args: dict[str, Any] = {"content": text, "entities": list(entities)}
        ids.append(str((await call(client, "store", args))["id"]))
    return ids


def test_questions_about_things_never_stored_get_nothing_relevant(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            for question in NEVER_STORED:
                doc = await call(client, "recall", {"query": question})
                assert doc["nothing_relevant"] is True, (question, doc)
                assert all(r["relevance_label"] == "none" for r in doc["results"]), doc
            for question, answer in STORED:
                doc = await call(client, "recall", {"query": question})
                assert doc["nothing_relevant"] is False, (question, doc)
                labels = {r["id"]: r["relevance_label"] for r in doc["results"]}
                assert labels.get(ids[answer]) in ("weak", "strong"), (question, doc)

    anyio.run(main)


def test_explain_says_which_results_are_off_subject(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            doc = await call(
                client,
                "recall",
                {"query": "What is the login rate limit on the support gateway?",
                 "explain": True, "min_relevance": 0},
            )  # fmt: skip
            by_id = {r["id"]: r for r in doc["results"]}
            # The auth gateway's limit: about a sibling of the thing asked about.
            assert by_id[ids[0]]["relevance_evidence"]["off_subject"] == 1.0
            assert by_id[ids[0]]["relevance_label"] == "none"

    anyio.run(main)
