"""A fact's subject is an entity, over MCP, spelt the ways agents spell it.

A real server process on stdio and the SDK's client. The same subject under another
spelling (an abbreviation, a numeronym, hyphens) has one current answer, the older one
superseded; a subject that is only *possibly* the same (a head word dropped) keeps both
facts, flagged on each side; siblings (``staging db`` / ``production db``) are untouched;
reflect and stats list what is flagged, and an operator's ``ferrex entity differ`` clears it.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, ferrex, stdio_client, store_fact


def _by_id(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in doc["results"]}


async def _recall(client: Any, query: str, **extra: Any) -> dict[str, dict[str, Any]]:
    args = {"query": query, "types": ["semantic"], "limit": 30, **extra}
    return _by_id(await call(client, "recall", args))


def test_one_subject_however_spelt_has_one_current_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            # The scenario: three spellings of the billing service's owner.
            atlas = await fact("billing service", "is owned by", "team Atlas")
            nova = await fact("billing", "owned by", "team Nova")
            assert nova["superseded"] == []
            assert nova["possible_conflict"] == [atlas["id"]], "a head word dropped"
            svc = await fact("billing-svc", "owner", "Nova")
            assert svc["superseded"] == [atlas["id"]], "svc is service: the same subject"
            assert "possible_conflict" not in svc, "team Nova and Nova agree"
            assert svc["entities"][0]["match"] == "abbreviation"

            owners = await _recall(client, "who owns billing-svc?")
            current = {r["object"] for r in owners.values() if r.get("predicate") in
                       ("is owned by", "owned by", "owner")}  # fmt: skip
            assert current == {"team Nova", "Nova"}, "Atlas is no current answer"
            assert atlas["id"] not in owners
            assert not owners[svc["id"]]["contradiction"]
            assert "possible_conflict" not in owners.get(nova["id"], {}), "its other is gone"

            # staging database / staging db; k8s cluster / kubernetes cluster.
            host2 = await fact("staging database", "hosted on", "pg-stage-02")
            host3 = await fact("staging db", "hosted on", "pg-stage-03")
            # One subject; two host names told plainly may be a move or a second node:
            # both stand, flagged against each other.
            assert host3["entities"][0]["entity_id"] == host2["entities"][0]["entity_id"]
            assert host3["superseded"] == [] and host3["possible_conflict"] == [host2["id"]]
            v129 = await fact("k8s cluster", "version", "1.29")
            v130 = await fact("kubernetes cluster", "version", "1.30")
            assert v130["superseded"] == [v129["id"]]

            # Reworded ones of our own.
            lena = await fact("payments svc", "maintained by", "Lena Fischer")
            marcus = await fact("Payments Service", "owner", "Marcus Oyelaran")
            assert marcus["superseded"] == [lena["id"]]
            eu = await fact("prod env", "located in", "eu-west-1")
            us = await fact("production environment", "location", "us-east-1",
                            valid_from="2026-03-01")  # fmt: skip
            assert us["superseded"] == [eu["id"]]

            # Hard negatives: siblings and versions change nothing, flag nothing.
            for subject, obj in (("production db", "pg-prod-01"), ("staging cache", "redis-2")):
                other = await fact(subject, "hosted on", obj)
                assert other["superseded"] == [] and "possible_conflict" not in other
            dba = await fact("billing database", "owned by", "team DBA")
            assert dba["superseded"] == []
            # Never against the billing service's facts (siblings); bare "billing" may be it.
            assert dba["possible_conflict"] == [nova["id"]]
            ns = await fact("k8s namespace", "version", "2")
            assert ns["superseded"] == [] and "possible_conflict" not in ns
            v1 = await fact("api v1", "owned by", "team Atlas")
            v2 = await fact("api v2", "owned by", "team Nova")
            assert v2["superseded"] == [] and "possible_conflict" not in v2
            assert v1["id"] != v2["id"]

            hosts = await _recall(client, "what is the staging db hosted on?")
            assert host3["id"] in hosts and host2["id"] in hosts, "both stand, flagged"

            # Every surface that finds entities finds the subject by any spelling.
            for name in ("billing-svc", "billing service", "k8s", "kubernetes cluster"):
                if name == "k8s":
                    continue  # k8s alone names no subject here (k8s cluster does)
                text = (await client.read_resource(f"ferrex://entity/{name}")).contents[0].text  # type: ignore[union-attr]
                doc = json.loads(text)
                assert doc["memories"], name
            entity = json.loads(
                (await client.read_resource("ferrex://entity/kubernetes%20cluster"))
                .contents[0]
                .text  # type: ignore[union-attr]
            )
            assert {"k8s cluster", "kubernetes cluster"} <= set(entity["aliases"])
            by_filter = await _recall(client, "version", entities=["kubernetes cluster"])
            assert v130["id"] in by_filter and ns["id"] not in by_filter

            # One contradiction: the staging db's two hosts told plainly (flagged, kept); every
            # other change superseded its older value. The bare "billing" against the billing
            # database is a possible conflict.
            reflect = await call(client, "reflect", {})
            assert reflect["counts"]["conflicts"] == 1, reflect["contradictions"]
            (both,) = reflect["contradictions"]
            assert {f["id"] for f in both["facts"]} == {host2["id"], host3["id"]}
            possible = [{f["id"] for f in p["facts"]} for p in reflect["possible_conflicts"]]
            assert {nova["id"], dba["id"]} in possible, possible

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_a_count_written_two_ways_has_one_current_answer(tmp_path: Path) -> None:
    # Found by hand: "billing worker | replica count | 12" then "billing-worker | replicas |
    # 16" left two current answers (the subject resolved, the predicates did not).
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            args = {"subject": "billing worker", "predicate": "replica count", "object": "12"}
            twelve = await call(client, "store", args)
            args = {"subject": "Billing-Worker", "predicate": "replicas", "object": "16"}
            sixteen = await call(client, "store", args)
            assert sixteen["superseded"] == [twelve["id"]]
            args = {"subject": "billing worker", "predicate": "number of replicas", "object": "20"}
            twenty = await call(client, "store", args)
            assert twenty["superseded"] == [sixteen["id"]]
            # A replica named in the singular is a member, not the count: stored beside it.
            args = {"subject": "billing worker", "predicate": "replica", "object": "bw-east"}
            member = await call(client, "store", args)
            assert member["superseded"] == [] and "possible_conflict" not in member

            found = await _recall(client, "how many replicas does the billing worker run?")
            assert twenty["id"] in found
            assert twelve["id"] not in found and sixteen["id"] not in found
            assert not found[twenty["id"]]["contradiction"]

    anyio.run(main)


def test_a_possible_conflict_is_flagged_listed_and_cleared(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            ann = await fact("checkout", "owner", "Ann Weller")
            bob = await fact("checkout service", "maintained by", "Bob Okafor")
            assert bob["superseded"] == [] and bob["possible_conflict"] == [ann["id"]]

            found = await _recall(client, "who owns checkout service")
            assert found[ann["id"]]["possible_conflict"] == [bob["id"]]
            assert found[bob["id"]]["possible_conflict"] == [ann["id"]]
            assert not found[bob["id"]]["contradiction"]

            reflect = await call(client, "reflect", {})
            assert reflect["counts"]["possible_conflicts"] == 1
            (listed,) = reflect["possible_conflicts"]
            assert {f["id"] for f in listed["facts"]} == {ann["id"], bob["id"]}
            assert "supersedes" in listed["what_to_do"]
            stats = await call(client, "stats", {"detailed": True})
            assert stats["needs_attention"]["possible_conflicts"] == 1
            assert len(stats["possible_conflicts"]) == 1
            text = (await client.read_resource("ferrex://stats")).contents[0].text  # type: ignore[union-attr]
            assert "possible_conflicts" in text

            # The operator says they are different things: the flags go.
            said = ferrex(home, "entity", "differ", "checkout", "checkout service", "--json")
            assert said.returncode == 0, said.stderr
            assert json.loads(said.stdout)["action"] == "differ"
            after = await _recall(client, "who owns checkout service")
            assert "possible_conflict" not in after[ann["id"]]
            assert (await call(client, "reflect", {}))["counts"]["possible_conflicts"] == 0

            # A wrong merge undone: "search api" and "search svc" were one entity by hand.
            one = await fact("search svc", "owned by", "team Atlas")
            merged = ferrex(home, "entity", "merge", "search svc", "search api", "--json")
            assert merged.returncode != 0, "an unknown entity is refused, nothing written"
            two = await fact("search api", "owned by", "team Nova")
            assert two["superseded"] == [], "siblings: kept apart"
            merged = ferrex(home, "entity", "merge", "search svc", "search api", "--json")
            assert merged.returncode == 0, merged.stderr
            now = await _recall(client, "who owns search svc")
            assert now[one["id"]]["contradiction"] and now[one["id"]]["contradicts"] == [two["id"]]
            split = ferrex(home, "entity", "split", "search svc", "search api", "--json")
            assert split.returncode == 0, split.stderr
            apart = await _recall(client, "who owns search svc")
            assert not apart[one["id"]]["contradiction"]
            listed = ferrex(home, "reflect")
            assert listed.returncode == 0 and "possible conflicts: 0" in listed.stdout

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0
    drift = ferrex(home, "reconcile")
    assert drift.returncode == 0, drift.stdout + drift.stderr  # the split moved its point


def test_a_split_settles_the_flags_its_spelling_had_as_one_subject(tmp_path: Path) -> None:
    """Two facts flagged as one subject's (a short form resolved to the name) are told apart
    by a split of that spelling: the subjects differ, so both hold; a flag with a third
    subject stays."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client, visibility="shared")
            owner = await fact("auth gateway", "owned by", "team Falcon")
            keeper = await fact("auth-gw", "maintainer", "team Osprey")
            assert keeper["entities"][0]["entity_id"] == owner["entities"][0]["entity_id"]
            assert owner["id"] in keeper.get("possible_conflict", []), keeper
            apart = await fact("gateway for auth", "owner", "team Heron")
            before = await _recall(client, "auth gateway owner maintainer")
            flags = {c["id"]: set(c.get("possible_conflict", [])) for c in before.values()}
            assert owner["id"] in flags[keeper["id"]], flags

            split = ferrex(home, "entity", "split", "auth gateway", "auth-gw", "--json")
            assert split.returncode == 0, split.stdout + split.stderr
            after = await _recall(client, "auth gateway owner maintainer")
            assert owner["id"] not in after[keeper["id"]].get("possible_conflict", [])
            assert keeper["id"] not in after[owner["id"]].get("possible_conflict", [])
            left = {f["id"] for c in (await call(client, "reflect", {"limit": 20}))
                    .get("possible_conflicts", []) for f in c["facts"]}  # fmt: skip
            assert not {owner["id"], keeper["id"]} <= left, left
            if apart["id"] in flags.get(owner["id"], set()):  # a flag of another subject stays
                assert apart["id"] in after[owner["id"]].get("possible_conflict", [])

    anyio.run(main)
    drift = ferrex(home, "reconcile")
    assert drift.returncode == 0, drift.stdout + drift.stderr


def test_a_subject_named_in_other_words_is_never_a_silent_second_answer(tmp_path: Path) -> None:
    """Issue 43's subjects and rewordings of our own: a subject that resolves to another
    entity, but may be the same thing, has its fact flagged against the current fact of
    the same slot (never merged, never superseded); siblings stay apart and unflagged."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            def flagged(new: dict[str, Any], old: dict[str, Any]) -> None:
                assert new["status"] == "stored" and new["superseded"] == [], new
                assert old["id"] in new.get("possible_conflict", []), new
                assert new["possible_conflict_with"] and new["possible_conflict_note"]

            # A product name standing for its kind: the Postgres primary, the primary db.
            one = await fact("pg primary", "host", "db-1")
            two = await fact("Postgres primary", "host", "db-2")
            flagged(two, one)  # one subject; two host names told plainly
            assert two["entities"][0]["entity_id"] == one["entities"][0]["entity_id"]
            three = await fact("primary database", "host", "db-3")
            flagged(three, two)
            assert three["entities"][0]["entity_id"] != two["entities"][0]["entity_id"]
            mysql = await fact("MySQL replica", "version", "8.0.35")
            replica = await fact("the replica db", "version", "8.4.1")
            flagged(replica, mysql)

            # The CI system: the acronym, the words it stands for, a descriptive word.
            jenkins = await fact("CI pipeline", "runs on", "Jenkins")
            gha = await fact("continuous integration", "runs on", "GitHub Actions")
            flagged(gha, jenkins)
            nightly = await fact("the nightly CI job", "schedule", "02:00 UTC")
            earlier = await fact("nightly continuous integration job", "schedule", "01:00 UTC")
            assert earlier["superseded"] == [nightly["id"]], "the rest of the name agrees"

            # Dropped words, determiners, a handle, a plural, a word in another form.
            chicago = await fact("Naomi Kowalski", "lives in", "Chicago")
            flagged(await fact("@naomi-k", "lives in", "Denver"), chicago)
            # A plural of one name (a close name), a value a thing has one of at a time: the
            # change is sure and replaces it.
            year = await fact("audit log", "retention", "1 year")
            logs = await fact("our audit logs", "retention", "6 years")
            assert logs["superseded"] == [year["id"]], logs
            vpc = await fact("card tokenization service", "runs in", "vpc-pci-1")
            flagged(await fact("tokenizer", "runs in", "vpc-pci-2"), vpc)
            # Initials with a compound's second part (data ware-house): possibly one.
            redshift = await fact("the data warehouse", "platform", "Redshift")
            flagged(await fact("DWH", "platform", "Snowflake"), redshift)
            # A thing and its doing (log / logging): possibly one, flagged.
            datadog = await fact("log pipeline", "backend", "Datadog")
            flagged(await fact("logging pipeline", "backend", "Grafana Loki"), datadog)

            # A word moved between subject and predicate names the same slot.
            ttl = await fact("Vault", "default lease TTL", "768h")
            flagged(await fact("vault default_lease_ttl", "is", "24h"), ttl)
            idle = await fact("patient portal session", "idle timeout", "30 min")
            flagged(await fact("portal session timeout", "is", "15 min"), idle)

            # Hard negatives: siblings, numbered things, a kind word for a kind word.
            for first, second, predicate, a, b in (
                ("ledger-api", "ledger-reconciler", "version", "3.8.0", "3.8.2"),
                ("T3 thermostat firmware", "T4 thermostat firmware", "owner", "team A", "team B"),
                ("iOS app builds", "Android app builds", "built on", "Xcode Cloud", "Bitrise"),
                ("staging database", "production database", "hosted on", "pg-s-1", "pg-p-1"),
                ("eu cluster", "us cluster", "region", "eu-west-1", "us-east-1"),
                ("payments-api", "payments-worker", "runs on", "node-01", "node-02"),
                ("quillparse 1.x", "quillparse 2.x", "support status", "end of life", "active"),
            ):
                await fact(first, predicate, a)
                other = await fact(second, predicate, b)
                assert other["superseded"] == [] and "possible_conflict" not in other, other

            reflect = await call(client, "reflect", {"limit": 50})
            assert reflect["counts"]["possible_conflicts"] >= 8

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_a_shared_fact_spelt_otherwise_than_the_agents_private_one_is_flagged_to_it_alone(
    tmp_path: Path,
) -> None:
    """An agent's private fact, then its shared one of the same subject in another spelling:
    a shared store resolves among shared names only, so it was a new entity with two current
    owners and no flag. The agent's own private spellings are weighed too: flagged, and the
    flag, naming its private fact, is seen by it alone."""
    home = tmp_path / "home"
    question = "who owns the nightjar auth gateway"

    async def alice() -> None:
        async with stdio_client(home, "--agent-id", "alice") as client:
            private = await store_fact(client, "Nightjar auth gateway", "owner", "Priya",
                                       visibility="private")  # fmt: skip
            shared = await store_fact(client, "nightjar auth-gw", "owned by", "Marcus",
                                      visibility="shared")  # fmt: skip
            assert shared["possible_conflict"] == [private["id"]], shared
            found = await _recall(client, question)
            assert found[shared["id"]]["possible_conflict"] == [private["id"]]
            assert found[private["id"]]["possible_conflict"] == [shared["id"]]
            stats = await call(client, "stats", {})
            assert stats["needs_attention"]["possible_conflicts"] == 1, stats

    async def bob() -> None:
        async with stdio_client(home, "--agent-id", "bob") as client:
            found = await _recall(client, question)
            assert [r["object"] for r in found.values()] == ["Marcus"], found
            assert all("possible_conflict" not in r for r in found.values()), found
            stats = await call(client, "stats", {})
            assert stats["needs_attention"]["possible_conflicts"] == 0, stats

    anyio.run(alice)
    anyio.run(bob)
