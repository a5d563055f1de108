"""Facts that change through reworded predicates, over MCP, as an agent words them.

A real server process on stdio, the SDK's client: the current answer and the history must
both be right however the agent phrases the relation (copulas, role nouns, synonyms), while
an inverse relation stays a fact of its own.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, error, ferrex, stdio_client, store_fact


def _facts(doc: dict[str, Any], subject: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in doc["results"] if r.get("subject") == subject}


def test_reworded_facts_keep_one_current_answer_and_the_history(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home, "--agent-id", "planner") as client:

            async def fact(predicate: str, obj: str, **extra: Any) -> dict[str, Any]:
                args = {"subject": "checkout-service", "predicate": predicate, "object": obj,
                        "visibility": "shared", **extra}  # fmt: skip
                return await call(client, "store", args)

            python = await fact("is written in", "Python", valid_from="2025-03-01")
            go = await fact("language", "Go", valid_from="2026-02-01")
            assert go["superseded"] == [python["id"]], "a role noun names the same relation"

            ann = await fact("owner", "Ann Weller", valid_from="2025-01-10")
            bob = await fact("is maintained by", "Bob Okafor", valid_from="2026-05-01")
            assert bob["superseded"] == [ann["id"]]
            again = await fact("owned_by", "bob okafor")
            assert again["status"] == "duplicate" and again["id"] == bob["id"]

            postgres = await fact("uses", "PostgreSQL 15")
            cockroach = await fact("depends on", "CockroachDB 23.2", valid_from="2026-06-01")
            assert cockroach["superseded"] == [postgres["id"]]

            # The inverse relation is another fact: it replaces nothing.
            owns = await call(client, "store", {"subject": "Ann Weller", "predicate": "owns",
                                                "object": "checkout-service"})  # fmt: skip
            assert owns["superseded"] == []

            # A relation no rule places, worded close to one the subject has, with a value
            # of the same kind (two region names): the same slot, replaced.
            region = await fact("located in", "eu-west-1")
            moved = await fact("situated in", "us-east-1")
            assert moved["superseded"] == [region["id"]]

            now = await call(client, "recall", {"query": "checkout-service language written in",
                                                "types": ["semantic"], "limit": 20})  # fmt: skip
            current = _facts(now, "checkout-service")
            assert go["id"] in current and python["id"] not in current
            assert not current[go["id"]]["contradiction"]

            history = await call(client, "recall", {
                "query": "checkout-service language written in", "types": ["semantic"],
                "include_invalidated": True, "limit": 20})  # fmt: skip
            old = _facts(history, "checkout-service")[python["id"]]
            assert old["superseded_by"] == go["id"] and old["invalidated_at"].startswith(
                "2026-02-01"
            )

            then = await call(client, "recall", {
                "query": "checkout-service language written in", "types": ["semantic"],
                "as_of": "2025-06-01", "limit": 20})  # fmt: skip
            back = _facts(then, "checkout-service")
            assert python["id"] in back and go["id"] not in back
            owners_then = {r["object"] for r in back.values()}
            assert "Ann Weller" in owners_then and "Bob Okafor" not in owners_then

            stats = await call(client, "stats", {})
            assert stats["needs_attention"]["conflicts"] == 0

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_time_is_bitemporal_a_dated_change_is_current_and_a_late_report_is_history(
    tmp_path: Path,
) -> None:
    """The orbit-db report and rewordings of it: an undated fact, then a change dated this
    morning (before the first was learned) → the change is current; a dated fact, then an
    older-dated value reported later → stored as history, saying so; ``as_of`` between the
    dates answers the old value."""
    home = tmp_path / "home"
    morning = (datetime.now(UTC) - timedelta(hours=2)).replace(microsecond=0)

    async def main() -> None:
        async with stdio_client(home) as client:

            async def fact(subject: str, predicate: str, obj: str, **extra: Any) -> dict[str, Any]:
                args = {"subject": subject, "predicate": predicate, "object": obj, **extra}
                return await call(client, "store", args)

            async def recall(query: str, **extra: Any) -> dict[str, dict[str, Any]]:
                """The facts about the query's first word (its subject) recall answers."""
                doc = await call(client, "recall", {"query": query, "types": ["semantic"],
                                                    "limit": 20, **extra})  # fmt: skip
                return _facts(doc, query.split()[0])

            old = await fact("orbit-db", "version", "15.4")
            new = await fact("orbit-db", "version", "16.1", valid_from=morning.isoformat())
            assert new["status"] == "stored" and new["superseded"] == [old["id"]]
            assert "superseded_by" not in new and "similar" not in new
            assert list(await recall("orbit-db version")) == [new["id"]]
            then = await recall(
                "orbit-db version", as_of=(morning + timedelta(minutes=30)).isoformat()
            )
            assert list(then) == [new["id"]]

            # Reworded: the current version, then an older one reported late.
            node22 = await fact("ledger-api", "runs on", "Node 22", valid_from="2026-11-01")
            node20 = await fact("ledger-api", "runs on", "Node 20", valid_from="2026-06-01")
            assert node20["status"] == "stored_as_history"
            assert node20["superseded_by"] == node22["id"] and node20["superseded"] == []
            assert node22["id"] in node20["history_reason"]
            assert list(await recall("ledger-api runs on")) == [node22["id"]]
            between = await recall("ledger-api runs on", as_of="2026-08-01")
            assert list(between) == [node20["id"]]
            assert between[node20["id"]]["invalidated_at"].startswith("2026-11-01")

            # A dated change ends the old value at its date, so as_of between the two
            # dates answers the old one; an undated change later is current.
            aws = await fact("billing-db", "hosted on", "AWS", valid_from="2026-01-01")
            gcp = await fact("billing-db", "hosted on", "GCP", valid_from="2026-09-01")
            assert gcp["status"] == "stored" and gcp["superseded"] == [aws["id"]]
            assert list(await recall("billing-db hosted on", as_of="2026-05-01")) == [aws["id"]]
            assert list(await recall("billing-db hosted on", as_of="2026-10-01")) == [gcp["id"]]
            azure = await fact("billing-db", "hosted on", "Azure", content="migrated off GCP")
            assert azure["status"] == "stored" and azure["superseded"] == [gcp["id"]]

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_a_planned_change_is_refused_as_a_fact_and_kept_as_an_event(tmp_path: Path) -> None:
    """An agent records next week's upgrade as a fact dated then: refused, with a hint, and
    today's version stays the one current answer; the plan stored as an event is kept."""
    home = tmp_path / "home"
    next_week = (datetime.now(UTC) + timedelta(days=7)).date().isoformat()

    async def main() -> None:
        async with stdio_client(home) as client:
            today = await store_fact(client, "payments api", "runtime", "Java 17")
            code, text = await error(client, "store", {
                "subject": "payments api", "predicate": "runtime", "object": "Java 21",
                "valid_from": next_week})  # fmt: skip
            assert code == "invalid_input"
            assert "in the future" in text and next_week in text and "episodic" in text
            doc = await call(client, "recall", {"query": "payments api runtime"})
            facts = _facts(doc, "payments api")
            assert list(facts) == [today["id"]] and "invalidated_at" not in facts[today["id"]]
            plan = await call(client, "store", {
                "content": "Planned: the payments api moves to Java 21 in the maintenance window",
                "valid_from": next_week})  # fmt: skip
            assert plan["status"] == "stored"

    anyio.run(main)


def test_a_fact_told_as_past_is_history_beside_the_fact_after_it(tmp_path: Path) -> None:
    """ "We used to use Kinesis" beside the message bus the team has used since: the old value
    is stored as history of that fact, ended where it began; told as past beside a fact of
    unknown start, it is only flagged, and never replaces it."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            kafka = await store_fact(client, "ingest pipeline", "message bus", "Kafka",
                                     valid_from="2026-11-20")  # fmt: skip
            kinesis = await store_fact(client, "ingest pipeline", "used to use",
                                       "Amazon Kinesis", valid_from="2025-02-01")  # fmt: skip
            assert kinesis["status"] == "stored_as_history", kinesis
            assert kinesis["superseded_by"] == kafka["id"] and kinesis["superseded"] == []
            doc = await call(client, "recall", {"query": "ingest pipeline message bus",
                                                "types": ["semantic"]})  # fmt: skip
            assert list(_facts(doc, "ingest pipeline")) == [kafka["id"]]
            # no start given for the current fact: flagged, nothing replaced either way
            geo = await store_fact(client, "fleet telematics", "provider", "TrakLine")
            old = await store_fact(client, "fleet telematics", "previously provided by",
                                   "GeoPulse", valid_from="2024-06-01")  # fmt: skip
            assert old["status"] == "stored" and old["superseded"] == []
            assert old["possible_conflict"] == [geo["id"]]
            # a verb whose form is past ("ran MySQL") under a name of the same database
            mysql = await store_fact(client, "reporting-db", "MySQL version", "8.0.36",
                                     valid_from="2026-10-02")  # fmt: skip
            ran = await store_fact(client, "reporting database", "ran MySQL", "5.7.44",
                                   valid_from="2025-08-15")  # fmt: skip
            assert ran["status"] == "stored_as_history", ran
            assert ran["superseded_by"] == mysql["id"] and ran["superseded"] == []

    anyio.run(main)


def test_a_fact_with_a_note_is_found_by_what_it_states(tmp_path: Path) -> None:
    """A fact's note may word it otherwise ("took over" for owner): the fact is still found,
    ranked and shown by its subject, relation and value, not by the note alone."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home, "--agent-id", "planner") as client:
            erin = await call(client, "store", {
                "subject": "ledger", "predicate": "owner", "object": "Erin",
                "content": "Erin took over the ledger service in November."})  # fmt: skip
            await call(
                client, "store", {"subject": "orbit", "predicate": "owner", "object": "Dana"}
            )
            await call(client, "store", {"subject": "ledger", "predicate": "database",
                                         "object": "Postgres 16"})  # fmt: skip
            for query in ("who owns the ledger?", "ledger owner"):
                found = await call(client, "recall", {"query": query, "limit": 3})
                assert found["results"][0]["id"] == erin["id"], (query, found["results"])
            brief = await call(client, "stats", {})
            (shown,) = [m["summary"] for m in brief["recent"] if m["id"] == erin["id"]]
            assert "ledger owner Erin" in shown, shown

    anyio.run(main)


def test_a_relation_written_with_a_short_form_is_one_relation(tmp_path: Path) -> None:
    """An agent writes a relation in full one day and clipped the next (``mem limit``,
    ``max conns``, ``req timeout``) or in another order: one relation, so the new value replaces
    the old one. Two relations that only share words (``CPU request`` / ``CPU limit``) stay
    two current answers."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            for subject, first, second, old, new in (
                ("ledger-worker pods", "memory limit", "mem limit", "768Mi", "2Gi"),
                ("orders replica db", "max connections", "max conns", "150", "300"),
                ("reconciler", "request timeout", "req timeout", "30s", "12s"),
                ("quote api", "p95 latency target", "latency target p95", "120ms", "90ms"),
            ):
                before = await store_fact(client, subject, first, old)
                after = await store_fact(client, subject, second, new)
                assert after["superseded"] == [before["id"]], (subject, after)
                doc = await call(client, "recall", {"query": f"{subject} {first}",
                                                    "types": ["semantic"]})  # fmt: skip
                assert list(_facts(doc, subject)) == [after["id"]], (subject, doc)
            request = await store_fact(client, "render pods", "CPU request", "2")
            limit = await store_fact(client, "render pods", "CPU limit", "4")
            assert limit["superseded"] == [], limit
            doc = await call(client, "recall", {"query": "render pods CPU",
                                                "types": ["semantic"]})  # fmt: skip
            assert set(_facts(doc, "render pods")) == {request["id"], limit["id"]}

    anyio.run(main)


def test_a_role_noun_and_a_clipped_plural_or_squad_name_one_slot(tmp_path: Path) -> None:
    """``issuer`` is who a fact ``issued by`` names, ``certs`` are the ``certificates`` and a
    squad is the team: a new lead replaces the old one, a new issuer is at least flagged
    beside the old one, never two silent answers."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            old = await store_fact(client, "payments squad", "led by", "Ana Souza")
            new = await store_fact(client, "Payments team", "lead", "Bilal Haddad")
            assert new["superseded"] == [old["id"]], new
            first = await store_fact(client, "SSO certificates", "issued by", "Sectigo")
            then = await store_fact(client, "SSO certs", "issuer", "ZeroSSL",
                                    valid_from="2026-11-30")  # fmt: skip
            named = [c["id"] for c in then.get("possible_conflict_with", [])]
            assert then["superseded"] == [first["id"]] or named == [first["id"]], then
            # A team named in one hyphenated word is a team: the new owner replaces the old.
            core = await store_fact(client, "search api", "maintained by", "core-team")
            infra = await store_fact(client, "search api", "maintained by", "search-infra-team")
            assert infra["superseded"] == [core["id"]], infra

    anyio.run(main)


def test_a_value_dated_before_a_replaced_one_is_history_of_its_relation(tmp_path: Path) -> None:
    """A relation's value was replaced under another wording of the subject (PostgreSQL 14
    by 16); then a value older than 14 is reported: it is history, ended where 14 began,
    never a second current value beside 16 (a user trial found both current)."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            v14 = await store_fact(client, "quota service", "database", "PostgreSQL 14",
                                   valid_from="2026-11-01")  # fmt: skip
            v16 = await store_fact(client, "the quota service", "uses database",
                                   "PostgreSQL 16", valid_from="2026-12-03")  # fmt: skip
            await call(client, "confirm", {"ids": [v16["id"]], "supersedes": v14["id"]})
            v12 = await store_fact(client, "quota service", "database", "PostgreSQL 12",
                                   valid_from="2025-01-01")  # fmt: skip
            assert v12["status"] == "stored_as_history", v12
            assert v12["superseded_by"] == v14["id"] and v12["superseded"] == [], v12
            doc = await call(client, "recall", {"query": "quota service database",
                                                "types": ["semantic"]})  # fmt: skip
            current = [r["id"] for r in doc["results"] if not r.get("superseded_by")]
            assert v16["id"] in current and v12["id"] not in current, doc
            then = await call(client, "recall", {"query": "quota service database",
                                                 "types": ["semantic"],
                                                 "as_of": "2025-06-01"})  # fmt: skip
            assert [r["id"] for r in then["results"]] == [v12["id"]], then

    anyio.run(main)


def test_a_change_told_in_words_is_flagged_beside_the_fact_it_may_change(tmp_path: Path) -> None:
    """A change said in words ("we migrated it off Netlify") under a relation worded as no
    other is flagged against the subject's closest fact, never left as a second silent
    answer; a change of a part of the subject ("backups moved to") leaves the subject's own
    slots alone."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            netlify = await store_fact(client, "search frontend", "served from", "Netlify")
            render = await store_fact(client, "search frontend", "deploys to", "Render",
                                      content="We migrated the search frontend off Netlify "
                                      "last sprint.")  # fmt: skip
            assert render["status"] == "stored" and render["superseded"] == []
            assert render["possible_conflict"] == [netlify["id"]], render
            doc = await call(client, "reflect", {"limit": 10})
            flagged = {f["id"] for g in doc["possible_conflicts"] for f in g["facts"]}
            assert flagged == {netlify["id"], render["id"]}, doc["possible_conflicts"]

            bugsnag = await store_fact(client, "mobile crash tracking", "tool", "Bugsnag")
            sentry = await store_fact(client, "mobile crash tracking", "switched over to",
                                      "Sentry")  # fmt: skip
            assert sentry["possible_conflict"] == [bugsnag["id"]], sentry
            node = await store_fact(client, "image resizer", "language", "Node.js")
            rust = await store_fact(client, "image resizer", "rewritten in", "Rust")
            assert rust["possible_conflict"] == [node["id"]], rust

            host = await store_fact(client, "ledger worker", "runs on", "worker-vm-04")
            backups = await store_fact(client, "ledger worker", "backups moved to",
                                       "s3://ledger-dumps")  # fmt: skip
            assert backups["status"] == "stored", backups
            assert host["id"] not in backups.get("possible_conflict", []), backups

    anyio.run(main)


#: (subject, the fact stored first, the fact stored then, whether the second is flagged)
VIA_PAIRS = [
    ("mobile checkout", ("handled by", "Braintree"), ("via", "Adyen"), True),
    ("order alerts", ("paging tool", "PagerDuty"), ("page via", "incident.io"), True),
    ("report mailer", ("sends via", "SendGrid"), ("runs on", "cron-box-4"), False),
]


def test_a_relation_named_by_via_alone_is_weighed_by_its_value(tmp_path: Path) -> None:
    """``via`` says how, not which slot: ``mobile checkout | via | Adyen`` beside ``handled by
    | Braintree`` is flagged as possibly that slot, as is ``page via`` beside ``paging tool``;
    a fact of another relation beside a ``via`` one is not."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            for subject, first, then, flagged in VIA_PAIRS:
                old = await store_fact(client, subject, *first)
                new = await store_fact(client, subject, *then)
                assert new["superseded"] == [], new
                assert new.get("possible_conflict") == ([old["id"]] if flagged else None), new

    anyio.run(main)
