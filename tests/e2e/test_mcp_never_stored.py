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

Questions about a stored thing asking what no memory states get the verdict too
(:func:`test_questions_asking_what_no_memory_states_get_nothing_relevant`): the
notification worker's SLO when only the search API's is stored (a memory linked only to
another stored thing is about it), the memory limit of "the session Redis"
(``redis-sessions``, spelt in another order) when only its maxclients and version are, how
often "the ledger database" (``ledger-db``) is backed up when only its hosts are, an outage
on a day when the stored outage was on another.

Not judged (a known limit): a memory linked to no stored thing that shares no word with
the one asked about may name it in words the store has not linked, so it counts by its
wording.
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
    ("Which services run in the prod-eu-1 cluster?", 6),
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


SERVICE_NOTES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("notification-worker is a Node.js service consuming notif.outbound with 24 partitions.",
     ("notification-worker",), "2026-09-02"),
    ("notification-worker lag drained in 11 minutes after the Black Friday peak.",
     ("notification-worker",), "2026-11-28"),
    ("search-api SLO: p95 under 150ms and 99.9% availability over 28 days.",
     ("search-api",), "2026-09-14"),
    ("redis-sessions maxclients is 20000 since OPS-1470.", ("redis-sessions",), "2026-11-20"),
    ("redis-sessions runs Redis 7.2 as a 3-shard cluster.", ("redis-sessions",), "2026-10-14"),
    ("ledger-db runs on ledger-db-01 (primary) and ledger-db-02 (sync standby).",
     ("ledger-db",), "2026-11-17"),
    ("payments-api outage: root cause was the PSP's EU endpoint returning 503s for 9 minutes.",
     ("payments-api",), "2026-09-11"),
)  # fmt: skip
"""A team's notes about its services, each linked to the service it is about, with the day
it happened."""

NOT_STATED = (
    # The worker is stored, its SLO is not; another service's SLO is (linked to it).
    "What is the latency SLO for the notification worker?",
    "What's the notification worker's response-time objective?",
    # Redis for sessions is stored (spelt in another order), no memory limit is.
    "How much memory is the session Redis allowed to use?",
    # The ledger database is stored (its shortening), how often it is backed up is not.
    "How is the ledger database backed up, and how often?",
    # An outage of the payments API is stored, on another day.
    "What was the root cause of the payments-api outage on October 3, 2026?",
)
"""Questions about stored things, asking what no memory states (the answer: *nothing
relevant*)."""

STATED = (
    ("What is the latency SLO of the search API?", 2),
    ("What is the maxclients setting of redis-sessions?", 3),
    ("Where does the ledger database run?", 5),
    ("What was the root cause of the payments-api outage on September 11, 2026?", 6),
)
"""The same things asked for what is stored, with the note that answers (its index)."""


def test_questions_asking_what_no_memory_states_get_nothing_relevant(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids: list[str] = []
            for text, entities, day in SERVICE_NOTES:
                args = {"content": text, "entities": list(entities),
                        "valid_from": f"{day}T12:00:00Z"}  # fmt: skip
                ids.append(str((await call(client, "store", args))["id"]))
            for question in NOT_STATED:
                doc = await call(client, "recall", {"query": question})
                assert doc["nothing_relevant"] is True, (question, doc)
                assert doc["results"], "the nearest memories are still shown"
            for question, answer in STATED:
                doc = await call(client, "recall", {"query": question})
                assert doc["nothing_relevant"] is False, (question, doc)
                labels = {r["id"]: r["relevance_label"] for r in doc["results"]}
                assert labels.get(ids[answer]) in ("weak", "strong"), (question, doc)

    anyio.run(main)
