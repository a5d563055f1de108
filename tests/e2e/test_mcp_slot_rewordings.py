"""Rewordings of one relation over MCP stdio: what is sure is replaced, a bare value is
flagged, plural relations keep every value, and every answer names the fact it may replace
with the one line that settles it.

A real server on stdio, the SDK's client, the bundled model. The issue's examples (where the
auth gateway runs, the orbit-db upgrade with a date) in wordings of our own, and the hard
negatives the slot rules must keep apart (max retries / max connections, memory request /
memory limit, staging / production).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, ferrex, stdio_client, store_fact


def _current(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in doc["results"] if not r.get("superseded_by")}


def test_rewordings_resolve_plural_values_stay_and_every_answer_says_what_to_do(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            # Where it runs, in wordings of our own: each replaces the one before it.
            hosts = [("runs on", "bw-node-3"), ("is hosted on", "bw-node-8"),
                     ("now lives on", "bw-node-9"), ("moved to host", "bw-node-11")]  # fmt: skip
            stored = [await fact("billing worker", p, o) for p, o in hosts]
            for before, later in itertools.pairwise(stored):
                assert later["superseded"] == [before["id"]], later
                assert later["replaced_note"].startswith(f"replaced {before['id']} (")

            # Hard negatives on the same subject: two slots each, nothing replaced or flagged.
            siblings = [("max retries", "5"), ("max connections", "50"),
                        ("memory request", "256Mi"), ("memory limit", "512Mi")]  # fmt: skip
            for predicate, obj in siblings:
                kept = await fact("billing worker", predicate, obj)
                assert kept["superseded"] == [] and "possible_conflict" not in kept, kept
            staging = await fact("billing worker staging", "runs on", "bw-stg-1")
            production = await fact("billing worker production", "runs on", "bw-prod-1")
            assert staging["superseded"] == [] == production["superseded"]
            assert "possible_conflict" not in production

            # orbit-db: undated 15.4, then 16.1 upgraded this morning: 16.1 is current.
            old = await fact("orbit-db", "version", "15.4")
            morning = (datetime.now(UTC) - timedelta(hours=3)).isoformat()
            new = await fact("orbit-db", "version", "16.1", valid_from=morning)
            assert new["status"] == "stored" and new["superseded"] == [old["id"]]
            # Reworded with a date: still a version, still replaced.
            hour = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
            patch = await fact("orbit-db", "running version", "16.2", valid_from=hour)
            assert patch["superseded"] == [new["id"]]
            # Told as a change, a version again: replaced.
            upgrade = await fact("orbit-db", "upgraded to", "17.0")
            assert upgrade["superseded"] == [patch["id"]]
            # A bare value names no slot and may be history: flagged, with what to do.
            bare = await fact("orbit-db", "is", "17.1")
            assert bare["superseded"] == [] and bare["possible_conflict"] == [upgrade["id"]]
            line = bare["possible_conflict_note"]
            assert f"confirm ids=[{bare['id']}] supersedes={upgrade['id']}" in line
            assert f"differs_from={upgrade['id']}" in line

            # Plural relations: every value stays current, the answer names the one beside.
            pg = await fact("ledger-api", "depends on", "Postgres")
            redis = await fact("ledger-api", "depends on", "Redis")
            assert redis["superseded"] == [] and redis["multi_valued"] is True
            assert redis["kept_beside"][0]["id"] == pg["id"]
            assert f"supersedes={pg['id']}" in redis["plural_note"]
            brokers = [await fact("Kafka brokers", "run on", f"kafka-{i}") for i in (1, 2, 3)]
            assert all(b["superseded"] == [] for b in brokers)
            # Two wordings that disagree on many values: both kept and flagged.
            lucia = await fact("llm-gateway", "maintained by", "Lucia Ferri")
            team = await fact("llm-gateway", "maintainer", "ml-infra team")
            assert team["superseded"] == [] and team["possible_conflict"] == [lucia["id"]]

            found = _current(await call(client, "recall", {
                "query": "ledger-api depends on", "types": ["semantic"], "limit": 20,
                "min_relevance": 0}))  # fmt: skip
            assert {pg["id"], redis["id"]} <= set(found)
            kafka = _current(await call(client, "recall", {
                "query": "Kafka brokers run on", "types": ["semantic"], "limit": 20,
                "min_relevance": 0}))  # fmt: skip
            assert {b["id"] for b in brokers} <= set(kafka)
            versions = _current(await call(client, "recall", {
                "query": "orbit-db version", "types": ["semantic"], "limit": 20,
                "min_relevance": 0}))  # fmt: skip
            assert old["id"] not in versions and new["id"] not in versions
            assert patch["id"] not in versions
            assert versions[bare["id"]]["possible_conflict"] == [upgrade["id"]]

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_a_role_told_as_now_someone_else_replaces_its_holder(tmp_path: Path) -> None:
    """``is`` then ``now``: neither names a slot, both hold a person, the second is told as a
    change with its date; the role has one holder, so the first is replaced. An attribute
    named beside it replaces nothing, nor does a second market a product is launched in, nor
    a host of another instance (``prod`` / ``canary``)."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = partial(store_fact, client)
            week_ago = (datetime.now(UTC) - timedelta(days=7)).isoformat()
            first = await fact("release captain", "is", "Jonas Weber")
            now = await fact("Release Captain", "now", "Amara Okoye", valid_from=week_ago)
            assert now["superseded"] == [first["id"]], now
            place = await fact("release captain", "time zone", "Europe/Berlin")
            assert place["superseded"] == [] and "possible_conflict" not in place, place
            # One count written two ways, under a close name told as news: replaced.
            twelve = await fact("prod k8s cluster", "node count", "12")
            nodes = await fact("production cluster", "nodes", "18", valid_from=week_ago,
                               content="scaled up for black friday")  # fmt: skip
            assert nodes["superseded"] == [twelve["id"]], nodes
            # The event told by its verb, then its cadence: one schedule, replaced.
            weekly = await fact("recommendation model", "retrained", "weekly")
            daily = await fact("recommendation model", "retraining cadence", "daily")
            assert daily["superseded"] == [weekly["id"]], daily
            # A product launched in one market, then in another: both hold.
            await fact("Tidewell Stays", "launched in", "Portugal")
            greece = await fact("Tidewell Stays", "launched in", "Greece", valid_from=week_ago)
            assert greece["superseded"] == [] and "possible_conflict" not in greece, greece
            # Two instances named by the predicates: the prod host and the canary host.
            await fact("pricing engine", "prod", "tw-price-01")
            canary = await fact("pricing engine", "canary", "tw-price-05")
            assert canary["superseded"] == [] and "possible_conflict" not in canary, canary

    anyio.run(main)


def test_a_note_telling_the_change_from_the_old_value_replaces_it(tmp_path: Path) -> None:
    """``message broker | RabbitMQ`` then ``migrated to | Kafka`` with a note "moved the
    checkout events from RabbitMQ to Kafka": the note tells the change from that value, so
    the broker is replaced, not left beside it, as is ``hosted on`` by ``moved hosting to``;
    a note naming both values in another order leaves the old one flagged, not replaced."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = partial(store_fact, client)
            month_ago = (datetime.now(UTC) - timedelta(days=30)).isoformat()
            broker = await fact("checkout-api", "message broker", "RabbitMQ")
            note = "moved the checkout events from RabbitMQ to Kafka"
            kafka = await fact("checkout api", "migrated to", "Kafka", valid_from=month_ago,
                               content=note)  # fmt: skip
            assert kafka["superseded"] == [broker["id"]], kafka
            # The slot named again in another form beside a word of change: replaced.
            vercel = await fact("web frontend", "hosted on", "Vercel")
            pages = await fact("web-frontend", "moved hosting to", "Cloudflare Pages",
                               valid_from=month_ago)  # fmt: skip
            assert pages["superseded"] == [vercel["id"]], pages
            # A close name told as news, with such a note: replaced too.
            engine = await fact("search", "engine", "Elasticsearch 7.17")
            note = "from Elasticsearch to OpenSearch after the license change"
            opensearch = await fact("search cluster", "migrated to", "OpenSearch 2.11",
                                    valid_from=month_ago, content=note)  # fmt: skip
            assert opensearch["superseded"] == [engine["id"]], opensearch
            # No word of change, no slot named alike, but the note tells the change.
            cdn = await fact("image service", "CDN", "CloudFront")
            fastly = await fact("image-svc", "served via", "Fastly", valid_from=month_ago,
                                content="CloudFront -> Fastly")  # fmt: skip
            assert fastly["superseded"] == [cdn["id"]], fastly
            zendesk = await fact("support desk", "tool", "Zendesk")
            intercom = await fact("support-desk", "runs on", "Intercom", valid_from=month_ago,
                                  content="we dropped Zendesk this sprint")  # fmt: skip
            assert intercom["superseded"] == [zendesk["id"]], intercom
            cache = await fact("cart-api", "cache", "Redis")
            sqs = await fact("cart api", "switched to", "SQS", valid_from=month_ago,
                             content="SQS replaced the Redis-based job queue")  # fmt: skip
            assert sqs["superseded"] == [] and cache["id"] not in sqs["superseded"], sqs

    anyio.run(main)


def test_a_value_told_with_was_and_dated_before_the_current_one_is_its_history(
    tmp_path: Path,
) -> None:
    """``version | Postgres 16`` (ten days ago), then ``was on | Postgres 14`` dated a year
    back: a late report of what it was, stored already ended, one current answer."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = partial(store_fact, client)

            def ago(days: int) -> str:
                return (datetime.now(UTC) - timedelta(days=days)).isoformat()

            pg16 = await fact("orders db", "version", "Postgres 16", valid_from=ago(10))
            pg14 = await fact("orders-db", "was on", "Postgres 14", valid_from=ago(300),
                              content="before the upgrade last year")  # fmt: skip
            assert pg14["superseded"] == [] and "possible_conflict" not in pg14, pg14
            args = {"query": "orders db postgres version", "types": ["semantic"], "limit": 10}
            current = _current(await call(client, "recall", args))
            assert pg16["id"] in current and pg14["id"] not in current, current
            args["include_invalidated"] = True
            every = {r["id"] for r in (await call(client, "recall", args))["results"]}
            assert pg14["id"] in every, "kept as history"

    anyio.run(main)


def test_a_move_told_in_other_words_is_flagged_beside_where_it_was(tmp_path: Path) -> None:
    """Rewordings that used to leave two current answers in silence: a site ``hosted on``
    one service then ``deployed to`` another, a host name then ``now on`` a service named in
    capitalised words, a release ``cadence`` then ``ships`` on another schedule. Each is
    flagged against the fact it may replace; ``cleanup runs weekly`` stays one event of many."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = partial(store_fact, client)

            def ago(days: int) -> str:
                return (datetime.now(UTC) - timedelta(days=days)).isoformat()

            netlify = await fact("handbook site", "hosted on", "Netlify")
            vercel = await fact("handbook site", "deployed to", "Vercel", valid_from=ago(4))
            assert vercel["possible_conflict"] == [netlify["id"]], vercel
            vm = await fact("Metabase", "host", "mb-vm-02", valid_from=ago(40))
            cloud = await fact("Metabase", "now on", "Metabase Cloud")
            assert cloud["possible_conflict"] == [vm["id"]], cloud
            biweekly = await fact("mobile release train", "cadence", "every two weeks")
            weekly = await fact("mobile release train", "ships", "weekly", valid_from=ago(3))
            assert weekly["possible_conflict"] == [biweekly["id"]], weekly
            assert "multi_valued" not in weekly, "one schedule, not one more value"
            # A slot named once by its initials, told as news: replaced; told plainly: flagged.
            okta = await fact("partner portal", "IdP", "Okta")
            entra = await fact("partner portal", "identity provider", "Entra ID",
                               valid_from=ago(2))  # fmt: skip
            assert entra["superseded"] == [okta["id"]], entra
            ttl = await fact("session cache", "TTL", "15 minutes")
            live = await fact("session cache", "time to live", "30 minutes")
            assert live["possible_conflict"] == [ttl["id"]], live
            # A slot and the one who provides it: one slot.
            algolia = await fact("docs", "search", "Algolia")
            typesense = await fact("docs", "search provider", "Typesense", valid_from=ago(8))
            assert typesense["superseded"] == [algolia["id"]], typesense
            # A count with and without the word that marks it, two numbers: one slot.
            ten = await fact("orders consumer", "prefetch", "10")
            fifty = await fact("orders consumers", "prefetch count", "50", valid_from=ago(1))
            assert fifty["possible_conflict"] == [ten["id"]], fifty
            # Another event of the subject on its own schedule: kept beside, not flagged.
            nightly = await fact("build farm", "schedule", "nightly")
            cleanup = await fact("build farm", "cleanup runs", "weekly")
            assert "possible_conflict" not in cleanup, cleanup
            assert nightly["id"] not in cleanup["superseded"]

    anyio.run(main)


def test_a_duration_said_in_words_is_flagged_as_the_same_value_restated(tmp_path: Path) -> None:
    """``30 minutes`` then ``half an hour`` under another wording of the slot (and of the
    subject): the same value restated, flagged so the agent can keep one wording; nothing
    replaced."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = partial(store_fact, client)
            first = await fact("checkout session", "timeout", "30 minutes")
            again = await fact("checkout session", "expires after", "half an hour")
            assert again["superseded"] == [] and again["possible_conflict"] == [first["id"]]
            held = await fact("waitlist offer expiry", "is", "30 minutes")
            worded = await fact("waitlist slot offers", "expire after", "half an hour")
            assert worded["possible_conflict"] == [held["id"]], worded

    anyio.run(main)


def test_a_member_told_in_the_singular_joins_the_members_told_in_the_plural(
    tmp_path: Path,
) -> None:
    """``reporters | Aoife``, then ``reporter | Jamal``, then ``Reporter | Ines`` dated two
    days back: three reporters, none replaced (each answer names those kept beside); a new
    version of one name under the same words is not one more (replaced or flagged)."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = partial(store_fact, client)
            ago = (datetime.now(UTC) - timedelta(days=2)).isoformat()
            aoife = await fact("politics desk", "reporters", "Aoife Brennan")
            jamal = await fact("politics desk", "reporter", "Jamal Okoro")
            ines = await fact("Politics desk", "reporter", "Ines Carvalho", valid_from=ago)
            for kept in (jamal, ines):
                assert kept["superseded"] == [] and kept["multi_valued"] is True, kept
            assert aoife["id"] in {k["id"] for k in ines["kept_beside"]}
            args = {"query": "politics desk reporters", "types": ["semantic"], "limit": 10}
            current = _current(await call(client, "recall", args))
            assert {aoife["id"], jamal["id"], ines["id"]} <= set(current), current
            v1 = await fact("checkout", "calls payment gateway", "payment-gateway-v1")
            v2 = await fact("checkout", "calls payment gateway", "payment-gateway-v2")
            assert v1["id"] in [*v2.get("possible_conflict", []), *v2["superseded"]], v2

    anyio.run(main)


def test_the_words_of_a_change_replace_the_one_value_they_name(tmp_path: Path) -> None:
    """The old value named in the predicate (``replaced Moment.js with``) or the note
    ("migrated off Redux"): that one value is replaced, a value kept beside it stays,
    whether the relation holds one value or many."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = partial(store_fact, client)
            ago = (datetime.now(UTC) - timedelta(days=2)).isoformat()
            moment = await fact("web app", "depends on", "Moment.js")
            react = await fact("web app", "depends on", "React")
            fns = await fact("web app", "replaced Moment.js with", "date-fns")
            assert fns["superseded"] == [moment["id"]], fns
            dates = await fact("storefront", "date library", "Moment.js")
            luxon = await fact("storefront", "replaced Moment.js with", "Luxon")
            assert luxon["superseded"] == [dates["id"]], luxon
            redux = await fact("frontend", "uses", "Redux")
            query = await fact("frontend", "uses", "React Query")
            zustand = await fact("frontend", "uses", "Zustand", valid_from=ago,
                                 content="migrated off Redux last sprint")  # fmt: skip
            assert zustand["superseded"] == [redux["id"]], zustand
            # A noun of change in the note tells the change as well as a verb does.
            bq = await fact("analytics warehouse", "lives in", "BigQuery project acme-prod")
            snow = await fact("analytics warehouse", "lives in", "Snowflake account acme",
                              content="BigQuery migration finished last week")  # fmt: skip
            assert snow["superseded"] == [bq["id"]], snow
            args = {"query": "frontend web app libraries", "types": ["semantic"], "limit": 20}
            current = _current(await call(client, "recall", args))
            assert {react["id"], query["id"], fns["id"], zustand["id"]} <= set(current)

    anyio.run(main)
