"""Recall that tells the truth about itself, over MCP stdio, as a new user asks (issue 26).

A real server process, the SDK's client, the bundled model. The four questions of the issue
(and rewordings of them) find their memory first without a *nothing relevant* verdict; a
question nothing stored answers gets the verdict and at most a couple of rows; a default
recall is not padded with the irrelevant, and ``min_relevance: 0`` shows them. Near misses
(a stored thing named beside a topic, name or number never stored) get the verdict too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_types import CallToolResult

from tests.e2e.mcp_helpers import call, stdio_client

NEAREST_WHEN_NOTHING = 2
SHOWN_AT_LEAST = 3
HIDDEN_BELOW = 0.01


def _last_tuesday(now: datetime) -> datetime:
    """The most recent Tuesday before today (never today), at 15:00 UTC."""
    back = (now.weekday() - 1) % 7 or 7
    day = (now - timedelta(days=back)).date()
    return datetime(day.year, day.month, day.day, 15, tzinfo=UTC)


DECISION = (
    "Decision in the architecture review: no schema changes to the orders database until "
    "the table partitioning work has landed."
)
MARCH = (
    ("Payments for EU customers were migrated from Stripe to Adyen; the cutover finished "
     "without failed charges.", "2026-03-03T15:00:00Z"),
    ("The shop-prod Kubernetes cluster was upgraded to 1.29; two CronJobs needed their "
     "manifests rewritten.", "2026-03-17T09:30:00Z"),
)  # fmt: skip
GATEWAY = (
    "INC-7721: the checkout page answered with HTTP 502 from nginx because gunicorn closed "
    "idle upstream connections before nginx did; gunicorn's keepalive was raised to 75 seconds."
)
SESSIONS = (
    "User sessions moved out of the Postgres django_session table into the Redis cluster "
    "redis-sess-01; the old table stays read-only until December."
)
OTHERS = (
    ("All CI jobs run on GitHub Actions with self-hosted runners in the office rack.",
     "2026-01-12T10:00:00Z"),
    ("The team's runbooks live in the Notion space called Ops Handbook, one page per service.",
     "2026-01-20T10:00:00Z"),
    ("The checkout latency dashboards are on Grafana at grafana.internal/d/checkout.",
     "2026-02-06T10:00:00Z"),
    ("VAT for EU orders is calculated by the tax service from the shipping address country.",
     "2026-02-10T10:00:00Z"),
    ("The public API allows 100 requests per minute per token; above that it answers 429.",
     "2026-02-16T10:00:00Z"),
    ("Background jobs run on Celery with RabbitMQ as the broker; order emails are one of them.",
     "2026-02-24T10:00:00Z"),
    ("Dana Whitfield leads the search team and speaks English, Irish and Portuguese.",
     "2026-04-02T10:00:00Z"),
)  # fmt: skip

QUESTIONS = {
    "decision": ("what did we decide last Tuesday?", "which decision was made on Tuesday?"),
    "march": ("what happened in March 2026?", "anything happen in March 2026?"),
    "gateway": (
        "why was the checkout page throwing bad gateway errors?",
        "what made the checkout page return bad gateway?",
    ),
    "sessions": ("where do user sessions live now?", "which store holds user sessions now?"),
}
UNRELATED = "What is the Wi-Fi password in the Berlin office?"
NEAR_MISSES = (
    # a stored person, a fact about another one
    "which languages does Priya speak?",
    # a stored service, a name never stored beside it
    "what is the rate limit of the GraphQL API?",
    # a stored service, an attribute of it never stored
    "what version of RabbitMQ do we run?",
    "how many replicas does the Redis cluster have?",
    "which port does the Redis cluster listen on?",
    # a stored incident, another number
    "what caused INC-7722?",
)


async def _store_all(client: Client) -> dict[str, set[str]]:
    """Every memory of this module; the ids of each topic's answers."""

    async def store(content: str, valid_from: str) -> str:
        done = await call(client, "store", {"content": content, "valid_from": valid_from})
        return str(done["id"])

    ids = {
        "decision": {await store(DECISION, _last_tuesday(datetime.now(UTC)).isoformat())},
        "march": {await store(text, at) for text, at in MARCH},
        "gateway": {await store(GATEWAY, "2026-04-20T09:40:00Z")},
        "sessions": {await store(SESSIONS, "2026-05-08T10:00:00Z")},
    }
    for text, at in OTHERS:
        await store(text, at)
    return ids


async def _recall(client: Client, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    result = await client.call_tool("recall", args)
    assert isinstance(result, CallToolResult) and not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content), result.content[0].text  # type: ignore[union-attr]


def test_the_issues_questions_find_their_memory_and_an_unrelated_one_gets_the_verdict(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store_all(client)
            for topic, questions in QUESTIONS.items():
                for question in questions:
                    doc, text = await _recall(client, {"query": question})
                    assert doc["results"], question
                    assert doc["results"][0]["id"] in ids[topic], (question, doc["results"][0])
                    assert doc["nothing_relevant"] is False, (question, doc["results"][0])
                    assert "nothing relevant" not in text.splitlines()[0], question
                    assert doc["results"][0]["relevance_label"] != "none", question
                    every, _ = await _recall(client, {"query": question, "min_relevance": 0})
                    assert [r["id"] for r in doc["results"]] == [
                        r["id"]
                        for i, r in enumerate(every["results"])
                        if i < SHOWN_AT_LEAST or r["relevance"] >= HIDDEN_BELOW
                    ], (question, "a default recall hides only what is surely no answer")

            doc, text = await _recall(client, {"query": UNRELATED})
            assert doc["nothing_relevant"] is True
            everything, _ = await _recall(client, {"query": UNRELATED, "min_relevance": 0})
            assert [r["id"] for r in doc["results"]] == [
                r["id"]
                for i, r in enumerate(everything["results"])
                if i < NEAREST_WHEN_NOTHING or r["relevance"] >= HIDDEN_BELOW
            ]
            head = text.splitlines()[0]
            assert "nothing relevant" in head and "min_relevance: 0 shows them" in head
            assert len(everything["results"]) == 5, "min_relevance 0 keeps the nearest five"
            assert doc["hidden"].get("irrelevant", 0) == 5 - len(doc["results"])

    anyio.run(main)


def test_near_misses_get_the_verdict(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            await _store_all(client)
            for question in NEAR_MISSES:
                doc, text = await _recall(client, {"query": question})
                top = doc["results"][0] if doc["results"] else None
                assert doc["nothing_relevant"] is True, (question, top)
                assert len(doc["results"]) >= NEAREST_WHEN_NOTHING, question
                assert "nothing relevant" in text.splitlines()[0], question

    anyio.run(main)


CONVERSATION = (
    "Maya: I finally booked the flight to Lisbon for the design conference.",
    "Tom: Nice! When do you leave?",
    "Maya: Tuesday morning, six o'clock, ugh.",
    "Tom: That's brutal. Are you presenting this year?",
    "Maya: Yes, a talk about accessible color palettes.",
    "Tom: I remember you practicing it at the studio last month.",
    "Maya: The slides still need a lot of polish though.",
    "Tom: My sister lives in Porto, she could show you around.",
    "Maya: That would be lovely, I might take the train up on Friday.",
    "Tom: I'll text her tonight.",
    "Maya: My cat is staying with my neighbour while I'm away.",
    "Tom: The grey one who knocks plants off shelves?",
    "Maya: That's him, Biscuit, a tiny menace.",
)
REPLY = "Tom: The grey one who knocks plants off shelves?"


def test_a_reply_that_shares_no_word_with_the_question_is_not_hidden(tmp_path: Path) -> None:
    """Issue 44, "hide only what cannot be the answer": the turn that answers "what colour
    is Maya's cat?" is a reply that names neither Maya nor the cat, ranked 4th and scored
    below the relevance the trim once hid (0.1). A default recall shows it, as an
    untrimmed one does; it hides only what scores below ``HIDDEN_BELOW``."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = {}
            for line in CONVERSATION:
                ids[str((await call(client, "store", {"content": line}))["id"])] = line
            question = "What colour is Maya's cat?"
            every, _ = await _recall(client, {"query": question, "min_relevance": 0})
            shown = [ids[r["id"]] for r in every["results"]]
            assert REPLY in shown, shown
            reply = every["results"][shown.index(REPLY)]
            assert shown.index(REPLY) >= SHOWN_AT_LEAST, "past the rows a trim never hides"
            assert HIDDEN_BELOW <= reply["relevance"] < 0.1, reply["relevance"]
            doc, _ = await _recall(client, {"query": question})
            assert REPLY in [ids[r["id"]] for r in doc["results"]]
            assert [r["id"] for r in doc["results"]] == [
                r["id"]
                for i, r in enumerate(every["results"])
                if i < SHOWN_AT_LEAST or r["relevance"] >= HIDDEN_BELOW
            ]

    anyio.run(main)


def test_explain_places_each_cosine_in_its_store(tmp_path: Path) -> None:
    """Issue 44, "unanswerable that generalises": an explained recall shows, beside each
    result's cosine, the dense leg's floor (what a memory of this store that is not about
    the question scores) and the runner-up (the best cosine of any other memory), the
    per-store calibration a learned verdict reads (``tools/learn_relevance.py verdict``).
    The answer to a reworded question stands out of its neighbours; none of the others
    does."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store_all(client)
            question = "in which datastore are the login sessions of users kept nowadays?"
            doc, _ = await _recall(client, {"query": question, "explain": True,
                                            "min_relevance": 0, "limit": 8})  # fmt: skip
            first = doc["results"][0]
            assert first["id"] in ids["sessions"], first
            evidence = {r["id"]: r["relevance_evidence"] for r in doc["results"]}
            top = evidence[first["id"]]
            assert top["dense_rank"] == 1
            assert top["runner_up"] < top["cosine"], top
            returned = [e for e in evidence.values() if e["dense_rank"] is not None]
            assert len(returned) >= 2
            for e in returned:
                assert e["floor"] <= e["cosine"]
                if e is not top:
                    assert e["runner_up"] == top["cosine"] and e["cosine"] <= e["runner_up"]
            assert max(e["cosine"] for e in returned if e is not top) == top["runner_up"]

    anyio.run(main)


DIARY = (
    ("user: Went bouldering at the Castle climbing centre with Priya, my fingers hurt.",
     "2026-11-07T18:00:00Z"),
    ("user: Back at the climbing wall after work, finally sent the orange route.",
     "2026-11-14T19:00:00Z"),
    ("user: Took my nephew to the climbing gym for his birthday.", "2026-11-28T11:00:00Z"),
    ("user: Booked a pottery class for December with my sister.", "2026-11-20T10:00:00Z"),
    ("user: Finished reading Piranesi on the train.", "2026-11-22T10:00:00Z"),
)  # fmt: skip
COUNTS = (
    "how many times did I go climbing in November?",
    "how many days ago was my nephew's birthday climbing trip?",
    "how many climbing sessions have I done in total?",
)


def test_a_count_over_several_memories_is_not_told_nothing_relevant(tmp_path: Path) -> None:
    """A "how many times / days ago / in total" question is answered by adding up or dating
    events, each memory one of them and none stating a number: the memories are shown
    without the *nothing relevant* verdict (before, every one lacked the number the
    question asks and the verdict came)."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            climbs = set()
            for text, at in DIARY:
                done = await call(client, "store", {"content": text, "valid_from": at})
                if "climbing" in text or "bouldering" in text:
                    climbs.add(str(done["id"]))
            for question in COUNTS:
                doc, text = await _recall(client, {"query": question})
                assert doc["nothing_relevant"] is False, (question, doc["results"][:2])
                assert doc["results"][0]["id"] in climbs, (question, doc["results"][0])
                assert "nothing relevant" not in text.splitlines()[0], question

    anyio.run(main)


def test_a_duration_written_with_its_unit_answers_how_long(tmp_path: Path) -> None:
    """A memory that says "took 3h" states how long something took, as "three hours"
    does: "how long did the catalog reindex take?" is answered by it, not told *nothing
    relevant*."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            reindex = "Reindexed the product catalog after the synonym dictionary change; took 3h"
            took = await call(client, "store", {"content": reindex})
            for line in (
                "OpenSearch cluster upgraded to 2.13 over the weekend",
                "Search API p99 went from 180ms to 95ms with the request cache on",
            ):
                await call(client, "store", {"content": line})
            doc, _ = await _recall(client, {"query": "how long did the catalog reindex take?"})
            assert not doc["nothing_relevant"], doc
            first = doc["results"][0]
            assert first["id"] == took["id"] and first["relevance_label"] != "none", first

    anyio.run(main)


def test_a_version_asked_in_two_numbers_is_answered_by_its_longer_form(tmp_path: Path) -> None:
    """ "Why are we stuck on redis 7.2?" is about the memory that pins Redis to 7.2.4: the
    store has heard of 7.2, so no *nothing relevant*; a version it holds in no form
    (Kubernetes 1.31 beside 1.29) still gets the verdict."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            pinned = await call(client, "store", {
                "content": "Redis is pinned to 7.2.4 because 7.4 changed the license"})  # fmt: skip
            for line in (
                "The shop-prod Kubernetes cluster was upgraded to 1.29",
                "Grafana dashboards are provisioned from infra/grafana via the sidecar",
            ):
                await call(client, "store", {"content": line})  # fmt: skip
            doc, _ = await _recall(client, {"query": "why are we stuck on redis 7.2?"})
            assert not doc["nothing_relevant"], doc
            first = doc["results"][0]
            assert first["id"] == pinned["id"] and first["relevance_label"] != "none", first
            doc, _ = await _recall(client, {"query": "when do we upgrade Kubernetes to 1.31?"})
            assert doc["nothing_relevant"], doc

    anyio.run(main)


def test_an_amount_asked_with_its_unit_glued_is_the_one_written_out(tmp_path: Path) -> None:
    """ "Why is the LB idle timeout 350s?" asks of the memory that says "350 seconds"."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            timeout = await call(client, "store", {"content": (
                "The load balancer idle timeout is 350 seconds to match the websocket "
                "keepalive")})  # fmt: skip
            await call(client, "store", {"content": "Deploys to prod need two approvals"})
            for question in ("why is the LB idle timeout 350s?", "is the LB timeout 350 s?"):
                doc, _ = await _recall(client, {"query": question})
                assert not doc["nothing_relevant"], doc
                first = doc["results"][0]
                assert first["id"] == timeout["id"] and first["relevance_label"] != "none", first

    anyio.run(main)
