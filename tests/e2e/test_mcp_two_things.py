"""Two facts about two things are never one changed value, over MCP stdio.

A real server on stdio, the SDK's client, the bundled model. Probes of our own
(``tools/fact_probes.jsonl``), each a pair a sure rule joined before: versions of two named
things on one subject, two libraries a thing depends on, counts of two things, versions of
a range (what a thing supports, is tested on, is compatible with), the acts of many people
(reviewed, approved, works with), a part placed beside the thing itself, the dates of two
events (or of two events of one kind), a migration to a tool beside where the thing is
hosted. Each pair in a namespace of its own; both values stay current.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact

PAIRS = [
    # versions of two things: the value names a thing the other fact does not
    ("backend", ("python version", "3.11"), ("upgraded to", "Django 5.0")),
    ("frontend", ("node version", "20.11.0"), ("bumped to", "React 18.3.1")),
    ("frontend", ("depends on", "react 18.2.0"), ("depends on", "vite 5.0.10")),
    # counts of two things
    ("gpu box", ("has", "2 GPUs"), ("has", "64 cores")),
    # a range of versions at once
    ("mobile app", ("supports", "iOS 16"), ("supports", "iOS 17")),
    ("watch companion", ("supports watchOS", "10"), ("supports watchOS", "11")),
    ("tablet app", ("runs on iPadOS", "17"), ("supports iPadOS", "18")),
    ("sdk ci matrix", ("tests on", "Python 3.11"), ("tests on", "Python 3.12")),
    ("auth library", ("compatible with", "Django 4.2"), ("compatible with", "Django 5.0")),
    # acts many people do
    ("PR 1234", ("reviewed by", "Ana Silva"), ("reviewed by", "Ben Ode")),
    ("design doc", ("approved by", "Karen Wu"), ("approved by", "Omar Haddad")),
    ("Priya Nair", ("works with", "Marco Rossi"), ("works with", "Ana Silva")),
    # a part placed beside the thing; two events' dates; a tool beside a host
    ("orders db", ("hosted on", "db-host-01"), ("replicated to", "db-host-02")),
    ("billing db", ("hosted on", "db-host-07"), ("replica on", "db-host-08")),
    ("ledger db", ("runs on", "db-host-11"), ("read replica on", "db-host-12")),
    ("v1 api", ("launched", "2025-06-01"), ("deprecated on", "2027-01-01")),
    ("payments api", ("had an incident on", "2026-01-05"), ("had an incident on", "2026-01-19")),
    ("docs site", ("hosted on", "Netlify"), ("migrated to", "Docusaurus")),
    # a change naming an attribute of its own beside another attribute of one kind
    ("render worker", ("memory limit", "2Gi"), ("raised cache size to", "512Mi")),
    # a count of a thing the other slot does not name; two acts placed
    ("ingest pipeline", ("batch size", "500"), ("increased to", "8 workers")),
    ("EU user data", ("stored in", "eu-west-1"), ("processed in", "eu-central-1")),
    # people and teams who use, sign off or attend one thing many at a time; two prices
    ("design system", ("used by", "team Web"), ("used by", "team Mobile")),
    ("proposal", ("signed off by", "Karen Wu"), ("signed off by", "Omar Haddad")),
    ("postmortem", ("attended by", "Ana Silva"), ("attended by", "Ben Ode")),
    ("pro plan", ("price", "$10/month"), ("price", "$100/year")),
    # two acts by two teams: the one that keeps it and one that uses it
    ("feature store", ("maintained by", "team Core"), ("used by", "team Edge")),
]


def test_facts_of_two_things_are_never_replaced(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        hidden: list[str] = []
        async with stdio_client(home) as client:
            for number, (subject, first_pair, second_pair) in enumerate(PAIRS):
                namespace = f"probe-{number}"
                first = await store_fact(client, subject, *first_pair, namespace=namespace)
                second = await store_fact(client, subject, *second_pair, namespace=namespace)
                assert second["status"] == "stored", second
                if second.get("superseded"):
                    hidden.append(f"{subject}: {second_pair} hid {first_pair}")
                    continue
                recalled = await call(client, "recall", {"query": subject,
                                                         "namespace": namespace})  # fmt: skip
                ids = {r["id"] for r in recalled["results"]}
                assert {first["id"], second["id"]} <= ids, (subject, recalled)
            # A unit of people within another (a word before the unit word), told with a start.
            data = await store_fact(client, "data team", "manager", "Karen Wu", namespace="units")
            platform = await store_fact(
                client, "data platform team", "manager", "Omar Haddad",
                namespace="units", valid_from="2026-01-10T00:00:00Z",
            )  # fmt: skip
            if platform.get("superseded"):
                hidden.append(f"data platform team hid {data['id']}")
        assert hidden == []

    anyio.run(main)


def test_sure_changes_still_replace(tmp_path: Path) -> None:
    """The evidence that keeps two things apart leaves one thing's change sure: the same
    named thing upgraded, one count's noun, a move of the thing itself."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            for number, (subject, first_pair, second_pair) in enumerate([
                ("gke cluster", ("Kubernetes version", "1.28"), ("upgraded to", "Kubernetes 1.29")),
                ("search cluster", ("Elasticsearch version", "8.11.3"), ("upgraded to", "8.15.1")),
                ("frontend", ("depends on", "react 18.2.0"), ("depends on", "react 19.0.0")),
                ("node group", ("max nodes", "30 nodes"), ("max nodes", "50 nodes")),
                ("auth gateway", ("runs on", "k8s-node-07"), ("moved to", "k8s-node-12")),
            ]):  # fmt: skip
                namespace = f"sure-{number}"
                first = await store_fact(client, subject, *first_pair, namespace=namespace)
                second = await store_fact(client, subject, *second_pair, namespace=namespace)
                assert second["superseded"] == [first["id"]], (subject, second)

    anyio.run(main)


def test_two_things_of_one_subject_are_not_flagged(tmp_path: Path) -> None:
    """No possible conflict without evidence of one slot: a part of the subject placed
    beside where the subject runs, a kind of status named by a word in front with a value
    unlike the status's, a plural noun of places, counts of two things."""
    home = tmp_path / "home"

    async def main() -> None:
        flagged: list[str] = []
        async with stdio_client(home) as client:
            for number, (subject, first_pair, second_pair) in enumerate([
                ("billing api", ("runs on", "Fly.io app billing-prod"),
                 ("database on", "Neon project billing-db")),
                ("payroll portal", ("status", "live"),
                 ("security review status", "pen test report filed with vendor")),
                ("Acme", ("offices", "Leeds"), ("offices", "Lisbon")),
                # counts of two things: both hold, kept beside each other
                ("batch cluster", ("has", "3 masters"), ("has", "12 workers")),
            ]):  # fmt: skip
                namespace = f"apart-{number}"
                await store_fact(client, subject, *first_pair, namespace=namespace)
                second = await store_fact(client, subject, *second_pair, namespace=namespace)
                assert second["status"] == "stored" and not second.get("superseded"), second
                recalled = await call(client, "recall", {"query": subject,
                                                         "namespace": namespace})  # fmt: skip
                marked = [r for r in recalled["results"]
                          if r.get("contradicts") or r.get("possible_conflict")]  # fmt: skip
                if second.get("possible_conflict") or marked:
                    flagged.append(f"{subject}: {first_pair} / {second_pair}")
        assert flagged == []

    anyio.run(main)


def test_a_value_told_as_one_more_is_kept_beside_the_other(tmp_path: Path) -> None:
    """``also`` (or ``additionally``) before the relation tells one value more: it is kept
    beside the value known (the answer names it, with how to replace it instead), neither
    replaced nor flagged, and recall shows both unmarked."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            for number, (subject, first_pair, second_pair) in enumerate([
                ("payments-api", ("runs in", "us-east-1"), ("also runs in", "eu-west-1")),
                ("intake service", ("accepts files from", "the SFTP drop"),
                 ("additionally accepts files from", "S3 uploads")),
                ("web app", ("uses", "React 18"), ("also uses", "React 19")),
                ("checkout", ("is deployed in", "us-east-1"),
                 ("is also deployed in", "ap-south-1")),
            ]):  # fmt: skip
                namespace = f"more-{number}"
                first = await store_fact(client, subject, *first_pair, namespace=namespace)
                second = await store_fact(client, subject, *second_pair, namespace=namespace)
                assert second["status"] == "stored" and second.get("multi_valued"), second
                assert not second["superseded"] and not second.get("possible_conflict"), second
                assert [k["id"] for k in second["kept_beside"]] == [first["id"]], second
                recalled = await call(client, "recall", {"query": subject,
                                                         "namespace": namespace})  # fmt: skip
                shown = {r["id"]: r for r in recalled["results"]}
                assert {first["id"], second["id"]} <= shown.keys(), recalled
                assert not any(r.get("contradicts") or r.get("possible_conflict")
                               for r in shown.values()), recalled  # fmt: skip

    anyio.run(main)


def test_a_region_beside_a_verb_placing_the_subject(tmp_path: Path) -> None:
    """A region named as an attribute and another by a verb placing the subject may be one
    slot (flagged); a replica's region never replaces the subject's; a host in the region is
    another slot (nothing flagged)."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            bucket = await store_fact(client, "analytics bucket", "data region", "europe-west1",
                                      namespace="regions-1")  # fmt: skip
            moved = await store_fact(client, "analytics bucket", "now lives in", "us-central1",
                                     namespace="regions-1")  # fmt: skip
            assert moved["possible_conflict"] == [bucket["id"]] or moved["superseded"] == [
                bucket["id"]
            ], moved
            api = await store_fact(client, "orders api", "region", "us-east-1",
                                   namespace="regions-2")  # fmt: skip
            replica = await store_fact(client, "orders api", "replicated to", "us-west-2",
                                       namespace="regions-2")  # fmt: skip
            assert replica["superseded"] == [], replica
            host = await store_fact(client, "orders api", "runs on", "k8s-node-07",
                                    namespace="regions-2")  # fmt: skip
            assert not host.get("possible_conflict") and host["superseded"] == [], host
            shown = await call(client, "recall", {"query": "orders api region",
                                                  "namespace": "regions-2"})  # fmt: skip
            assert api["id"] in {r["id"] for r in shown["results"]}, shown

    anyio.run(main)
