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


SHARED_WORDS = (
    ("The notification-proxy SLO: 99% of pushes are delivered within 2 seconds.", "slo"),
    ("checkout-engine calls notification-proxy after every paid order; response time "
     "objective of checkout-engine itself is 800 ms.", None),
    ("Nightly backups of support-gateway go to the cold bucket at 01:00.", None),
    ("metrics-gateway snapshots its TSDB every night to s3://ops-backups/metrics.", "backup"),
    ("The notification proxy runs three replicas behind the internal load balancer.", None),
    ("support-gateway forwards tickets to the helpdesk queue.", None),
)  # fmt: skip
ASKED = {
    "slo": ("what is the response-time objective of the notification proxy?",
            "how fast must the notification proxy deliver a push?"),
    "backup": ("how are the metrics gateway's backups done?",
               "where does the metrics gateway back up its data?"),
}  # fmt: skip


def test_a_note_about_the_thing_asked_beats_one_that_shares_its_words(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids: dict[str, str] = {}
            for text, topic in SHARED_WORDS:
                done = await call(client, "store", {"content": text})
                if topic:
                    ids[topic] = str(done["id"])
            for topic, questions in ASKED.items():
                for question in questions:
                    doc = await call(client, "recall", {"query": question})
                    # Among the first two: a note sharing the words "response time objective"
                    # still comes first for the first question (a known gap, issue 44).
                    top = [r["id"] for r in doc["results"][:2]]
                    assert ids[topic] in top, (question, doc["results"][:2])
                    assert doc["nothing_relevant"] is False, question

    anyio.run(main)


TEAM_NOTES = (
    "audit-log-svc keeps audit events 400 days in Loki, plus a WORM copy in GCS for 7 years.",
    "webhook-dispatcher retries failed merchant webhooks with backoff for 48h, then parks them.",
    "image-resizer only serves widths 80, 160, 320, 640, 1280 and 1920 to protect the CDN cache.",
    "pg-primary fails over to pg-replica-1 via Patroni after 30s unreachable.",
    "Postmortem OPS-1449: three support agents saw the wrong customer records for an hour.",
    "Grafana home dashboard now loads in 2s after Hugo added recording rules.",
    "DNS records for search-api in prod-us-2 were finally created after OPS-1438.",
    "Loyalty tier is recalculated on every order.delivered event since Nov 13.",
    "Deploy of checkout-engine 5.2 requested by Priya for Thursday.",
    "The payments team keeps their runbooks in the wiki under /payments/runbooks.",
    "Customers can now request account deletion from the profile page.",
    "Kafka consumer lag alert threshold raised to 50k messages for search-indexer.",
    "export-worker writes CSVs to a bucket with a 7 day lifecycle rule.",
    "The security team rotated the Vault root token on Monday.",
    "tax-calc is owned by Beatriz; no on-call, issues go to #fin-eng.",
    "Admin panel actions of support agents are shown in the support-gateway timeline.",
    "Record retention for chat transcripts is decided by legal, not engineering.",
    "The merchant portal lets shops replay parked webhooks by hand.",
)


def test_a_plain_words_question_finds_the_jargon_note_over_one_sharing_a_word(
    tmp_path: Path,
) -> None:
    """Notes in a team's jargon, and others that share a word of the question in passing
    ("records", "requested", "actions"): when the keyword leg's best holds under half the
    question, meaning weighs more, and the note meant ranks near the top."""

    async def rank(client: Client, question: str, says: str) -> int:
        doc = await call(client, "recall", {"query": question, "min_relevance": 0})
        found = [i for i, r in enumerate(doc["results"]) if says in r["content"]]
        assert found, (question, doc["results"])
        return found[0]

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for note in TEAM_NOTES:
                await call(client, "store", {"content": note})
            sizes = "Which picture sizes can be requested from the thumbnail service?"
            assert await rank(client, sizes, "image-resizer") == 0
            kept = "For how long are records of admin and security-relevant actions retained?"
            assert await rank(client, kept, "audit-log-svc") <= 2
            # A question in the notes' own words keeps its exact match first.
            assert await rank(client, "What was OPS-1449?", "OPS-1449") == 0
            assert await rank(client, "pg-primary failover", "pg-primary") == 0

    anyio.run(main)


def test_a_version_question_finds_a_product_at_a_whole_version(tmp_path: Path) -> None:
    """ "Which Postgres version …" of facts that say ``PostgreSQL 16``: the facts are
    answers (a thing at a whole version states a version, and the keyword leg reads
    Postgres as PostgreSQL), shown in the first five and never told "nothing relevant",
    beside a CI note that shares the question's words (a user trial saw the verdict)."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for args in (
                {"subject": "invoicing service", "predicate": "database",
                 "object": "PostgreSQL 15"},
                {"content": "CI for invoicing-service runs the integration suite against a "
                 "Postgres container on every push; one flaky test quarantined."},
                {"content": "Deployed invoicing-service 3.2 to production at noon."},
                {"subject": "invoicing service", "predicate": "runs on",
                 "object": "k8s-node-09"},
            ):  # fmt: skip
                await call(client, "store", args)
            doc = await call(client, "recall", {
                "query": "what Postgres version is invoicing-service on?"})  # fmt: skip
            assert not doc.get("nothing_relevant"), doc
            hit = next(r for r in doc["results"] if r.get("object") == "PostgreSQL 15")
            assert hit["relevance_label"] != "none", doc

    anyio.run(main)


def test_an_answer_is_never_shown_below_a_row_judged_no_answer(tmp_path: Path) -> None:
    """A CI note shares the question's words and leads the fused ranking; the facts that
    answer it, labelled strong, go first among the first five; the first five are the same
    at limit 5 and limit 50, and at limit 2 they begin the same."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for args in (
                {"subject": "payroll service", "predicate": "database",
                 "object": "PostgreSQL 14"},
                {"subject": "the payroll service", "predicate": "uses database",
                 "object": "PostgreSQL 16"},
                {"content": "CI for payroll-service now runs the integration suite against a "
                 "Postgres container on every push; flaky test_tax_rounding quarantined."},
                {"content": "Deployed payroll-service 2.14 to production at 16:00."},
                {"subject": "payroll service", "predicate": "runs on", "object": "k8s-node-04"},
            ):  # fmt: skip
                await call(client, "store", args)
            question = "which Postgres version does payroll-service run on"
            rows = {}
            for limit in (2, 5, 50):
                doc = await call(client, "recall", {"query": question, "limit": limit,
                                                    "min_relevance": 0})  # fmt: skip
                rows[limit] = doc["results"]
            labels = [r["relevance_label"] for r in rows[5]]
            strong = [i for i, label in enumerate(labels) if label == "strong"]
            assert strong and strong == list(range(len(strong))), labels
            assert {rows[5][i]["object"] for i in strong} >= {"PostgreSQL 16", "PostgreSQL 14"}
            assert [r["id"] for r in rows[50][:5]] == [r["id"] for r in rows[5]]
            assert [r["id"] for r in rows[2]] == [r["id"] for r in rows[5][:2]]

    anyio.run(main)


def test_a_product_named_without_its_suffix_is_named_by_the_memory(tmp_path: Path) -> None:
    """The question says Postgres, the facts PostgreSQL: they name what is asked, so they
    are answers (strong) and come first, above a CI note that says Postgres."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for args in (
                {"subject": "ledger api", "predicate": "database", "object": "PostgreSQL 15"},
                {"subject": "the ledger api", "predicate": "uses database",
                 "object": "PostgreSQL 16"},
                {"content": "CI for ledger-api runs the integration suite against a Postgres "
                 "container on every push; one flaky test quarantined."},
                {"content": "Deployed ledger-api 4.1 to production before lunch."},
                {"subject": "ledger api", "predicate": "runs on", "object": "k8s-node-11"},
            ):  # fmt: skip
                await call(client, "store", args)
            doc = await call(client, "recall", {
                "query": "what Postgres version does ledger-api run on?"})  # fmt: skip
            first = doc["results"][:2]
            assert {r.get("object") for r in first} == {"PostgreSQL 15", "PostgreSQL 16"}, doc
            assert [r["relevance_label"] for r in first] == ["strong", "strong"], doc

    anyio.run(main)
