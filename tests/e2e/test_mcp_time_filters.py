"""Time and filters answer vague questions, over MCP stdio, with the bundled model (issue 44).

A real server process and the SDK's client. The issue's examples and rewordings of them: a
question naming a period ("what changed last week?", "what did we work on on December 2?")
shows every memory of that period without the *nothing relevant* verdict; an ``after``
window makes "what changed?" answerable by every memory inside it; an entity filter makes
"what happened to it?" answerable by that entity's memories, also when the filter names the
entity by part of its name (``tokio`` for ``tokio runtime``) or with its short forms
(``cart service`` for ``cart-svc``). The clock is fixed by
``as_of`` so that "last week" is always the same week.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, stdio_client

AS_OF = "2026-12-09T12:00:00Z"
"""A Wednesday: last week is Monday 30 November to Sunday 6 December."""
LAST_WEEK = (
    ("Raised the connection pool of orders-db from 40 to 80.", "2026-11-30T10:00:00Z", []),
    ("Switched the CDN for static assets to Fastly.", "2026-12-01T10:00:00Z", []),
    ("Rotated the API keys of the payment provider.", "2026-12-03T10:00:00Z", []),
    ("Moved the nightly backups of metrics-gateway to 03:00.", "2026-12-04T10:00:00Z", []),
    ("Upgraded Node to 20 in the web build.", "2026-12-05T10:00:00Z", []),
)
DECEMBER_2 = (
    "Pairing session: fixed the flaky checkout test by retrying the payment mock.",
    "2026-12-02T15:00:00Z",
    [],
)
POSTGRES = (
    ("Failover of the primary database to its standby took 40 seconds.", "2026-11-12T10:00:00Z",
     ["Postgres primary"]),
    ("Disk usage on the primary database grew to 85 percent.", "2026-11-20T10:00:00Z",
     ["Postgres primary"]),
)  # fmt: skip
TOKIO = ("Tuned worker threads for the scheduler.", "2026-11-18T10:00:00Z", ["tokio runtime"])
OLDER = (
    ("The on-call rotation moved to weekly shifts.", "2026-10-05T10:00:00Z", []),
    ("Search results now rank exact title matches first.", "2026-10-14T10:00:00Z", []),
    ("The mobile release train ships every second Tuesday.", "2026-10-21T10:00:00Z", []),
    ("Support macros for refunds were rewritten.", "2026-11-03T10:00:00Z", []),
    ("Grafana dashboards for checkout moved into one folder.", "2026-11-25T10:00:00Z", []),
)


async def _store(client: Client) -> dict[str, str]:
    ids: dict[str, str] = {}
    for text, at, entities in (*LAST_WEEK, DECEMBER_2, *POSTGRES, TOKIO, *OLDER):
        args: dict[str, Any] = {"content": text, "valid_from": at, "type": "episodic"}
        if entities:
            args["entities"] = entities
        ids[text] = str((await call(client, "store", args))["id"])
    return ids


async def _answers(client: Client, args: dict[str, Any]) -> tuple[set[str], dict[str, Any]]:
    doc = await call(client, "recall", {"limit": 10, "as_of": AS_OF} | args)
    return {r["id"] for r in doc["results"]}, doc


def test_a_named_period_or_window_answers_a_vague_question(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            week = {ids[t] for t, _, _ in LAST_WEEK}
            for question in ("what changed last week?", "what did we change last week?"):
                shown, doc = await _answers(client, {"query": question})
                assert week <= shown, (question, doc)
                assert doc["nothing_relevant"] is False, question
            for question in ("what did we work on on December 2?", "what happened on Dec 2?"):
                shown, doc = await _answers(client, {"query": question})
                assert ids[DECEMBER_2[0]] in shown, (question, doc)
                assert doc["nothing_relevant"] is False, question
            after = {ids[t] for t, at, _ in (*LAST_WEEK, DECEMBER_2) if at >= "2026-12-01"}
            for question in ("what changed?", "anything new?"):
                args = {"query": question, "after": "2026-12-01T00:00:00Z"}
                shown, doc = await _answers(client, args)
                assert shown == after, (question, doc)
                assert doc["nothing_relevant"] is False, question

    anyio.run(main)


def test_an_entity_filter_answers_a_vague_question_about_it(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            postgres = {ids[t] for t, _, _ in POSTGRES}
            for question in ("what happened to it?", "any issues with it?"):
                args = {"query": question, "entities": ["Postgres primary"]}
                shown, doc = await _answers(client, args)
                assert shown == postgres, (question, doc)
                assert doc["nothing_relevant"] is False, question
            for question in ("runtime changes", "what was tuned?"):
                shown, doc = await _answers(client, {"query": question, "entities": ["tokio"]})
                assert doc["unknown_entities"] == [], question
                assert shown == {ids[TOKIO[0]]}, (question, doc)
                assert doc["nothing_relevant"] is False, question

    anyio.run(main)


def test_an_entity_filter_admits_the_entity_spelt_with_its_short_forms(tmp_path: Path) -> None:
    """Two memories name the cart service as ``cart-svc`` and as ``cart service``: the store
    keeps two entities (an ``entities`` name is merged more carefully than a subject), but
    a filter by either spelling admits both memories."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            retries = await call(client, "store", {
                "content": "cart-svc now retries inventory lookups twice with 200ms backoff",
                "entities": ["cart-svc"]})  # fmt: skip
            latency = await call(client, "store", {
                "content": "Cart service p95 latency regressed to 450ms after the promo launch",
                "entities": ["cart service"]})  # fmt: skip
            both = {retries["id"], latency["id"]}
            for name in ("cart service", "cart-svc", "Cart Svc"):
                shown, doc = await _answers(client, {"query": "what changed?", "entities": [name]})
                assert shown == both, (name, doc)
                assert doc["nothing_relevant"] is False, name

    anyio.run(main)


def test_as_of_before_a_change_dated_before_the_old_fact_was_learned_finds_the_old_value(
    tmp_path: Path,
) -> None:
    """The agent read the version (no date), then heard it was upgraded at a time before
    that: the old fact ends at the change's date, before it was learned. Its start is
    unknown, so an as_of before the change finds it (no as_of found it: it began, by its
    t_valid, after it ended)."""
    from datetime import UTC, datetime, timedelta

    home = tmp_path / "home"
    now = datetime.now(UTC)
    upgraded = now - timedelta(hours=10)

    def at(t: datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")

    async def main() -> None:
        async with stdio_client(home) as client:
            old = await call(client, "store", {"subject": "ledger service", "predicate": "version",
                                               "object": "2.3.0"})  # fmt: skip
            new = await call(client, "store", {
                "subject": "ledger service", "predicate": "version", "object": "2.4.1",
                "valid_from": at(upgraded), "content": "ledger was upgraded to 2.4.1 at dawn",
            })  # fmt: skip
            assert new["superseded"] == [old["id"]], new
            asked = {"query": "ledger service version", "min_relevance": 0}
            before, _ = await _answers(client, asked | {"as_of": at(upgraded - timedelta(hours=1))})
            after, _ = await _answers(client, asked | {"as_of": at(now)})
            doc = await call(client, "recall", asked)
            current = {r["id"] for r in doc["results"]}
            assert old["id"] in before and new["id"] not in before, before
            assert new["id"] in after and old["id"] not in after, after
            assert current == {new["id"]}, current

    anyio.run(main)
