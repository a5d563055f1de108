"""Another instance of a thing, or a value that does not compete, over MCP stdio: no flag.

A real server on stdio, the SDK's client, the bundled model. Scenarios of our own, worded
apart from the scenario sets: a name extended by a word naming another environment, copy
or add-on of the thing (``(staging)``, ``-preview``, ``replica``, ``exporter``), and a
predicate naming another role of the value (``backup embedding model``) or a relation not
in force yet (``to be migrated to``, ``next provider``). On ``main`` each second fact was
flagged as a possible conflict with the first (a false flag the agent had to settle); both
must stay current, unflagged (in the store's answer and in recall's marks), nothing
superseded. A name extended by a plain descriptive word is still
flagged (the control).
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact

APART = [
    # (first subject, first predicate, first object, second subject, predicate, object)
    ("notification worker", "queue", "sqs-notify-main",
     "notification worker (staging)", "queue", "sqs-notify-stg"),
    ("ingest-eu gateway", "status", "serving",
     "ingest-eu-preview gateway", "status", "draining"),
    ("audit logs", "kept in", "Azure West Europe",
     "audit logs replica", "kept in", "Azure North Europe"),
    ("Prometheus", "version", "2.51.0",
     "Prometheus node exporter", "version", "1.7.0"),
    ("search api", "embedding model", "text-embedding-3-small",
     "search api", "backup embedding model", "bge-small-en"),
    ("docs site", "hosted on", "Netlify",
     "docs site", "to be migrated to", "Cloudflare Pages"),
    ("status page", "provider", "Statuspage",
     "status page", "next provider", "Instatus"),
]  # fmt: skip


def test_another_instance_or_a_non_competing_value_is_not_flagged(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            wrong: list[str] = []
            for subject, predicate, obj, other, other_predicate, other_obj in APART:
                first = await store_fact(client, subject, predicate, obj)
                second = await store_fact(client, other, other_predicate, other_obj)
                assert second["status"] == "stored", second
                if second["superseded"] or second.get("possible_conflict"):
                    wrong.append(f"{other} | {other_predicate}: {second}")
                asked = {"query": f"{subject} {predicate}", "types": ["semantic"], "limit": 20}
                found = await call(client, "recall", asked)
                current = {r["id"]: r for r in found["results"] if not r.get("superseded_by")}
                if first["id"] not in current:
                    wrong.append(f"{subject} | {predicate} is no longer current")
                    continue
                marked = current[first["id"]]
                if second["id"] in [*marked.get("possible_conflict", []),
                                    *marked.get("contradicts", [])]:  # fmt: skip
                    wrong.append(f"recall marks {subject} | {predicate}: {marked}")
            assert wrong == [], "\n".join(wrong)

            # The control: a plain descriptive word added keeps the two possibly one thing.
            warehouse = "reporting warehouse"
            first = await store_fact(client, warehouse, "region", "westeurope")
            second = await store_fact(client, f"{warehouse} cluster", "region", "northeurope")
            assert second["possible_conflict"] == [first["id"]], second

    anyio.run(main)


def test_a_number_in_words_and_a_word_in_two_forms_name_one_slot(tmp_path: Path) -> None:
    """``sprint four`` is ``Sprint 4``: a dated change of its status replaces the old one
    (on ``main`` the two names were two things, both current, silent). ``max concurrent
    resizes`` / ``concurrency``, ``authentication`` / ``authenticates with`` share a long
    stem: two counts are a sure change (replaced), two names are flagged (once silent)."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            old = await store_fact(client, "Sprint 4", "status", "planning")
            new = await store_fact(client, "sprint four", "status", "in progress",
                                   valid_from="2026-01-05T09:00:00Z")  # fmt: skip
            assert new["superseded"] == [old["id"]], new

            # One long stem and two counts (one value at a time): a sure change.
            four = await store_fact(client, "image pipeline", "max concurrent resizes", "4")
            twelve = await store_fact(client, "image pipeline", "concurrency", "12")
            assert twelve["superseded"] == [four["id"]], twelve
            first = await store_fact(client, "mail relay", "authentication", "SASL PLAIN")
            second = await store_fact(client, "mail relay", "authenticates with", "OAuth2 tokens")
            assert second["superseded"] == [], second
            assert second["possible_conflict"] == [first["id"]], second

    anyio.run(main)
