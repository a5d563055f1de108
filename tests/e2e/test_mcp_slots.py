"""A changed fact has one current answer, however the agent words it, over MCP.

A real server on stdio, the SDK's client, the bundled model. The issue's examples: one
subject, five wordings of where it runs; one subject, three spellings of its name; the CI
system under five names; a plural relation. What is sure is replaced; what may be is stored,
flagged on both sides, named in the store's answer with what to do, counted by reflect and
stats, marked in recall; and the agent settles it with ``confirm`` (``supersedes`` or
``differs_from``) or an operator with ``ferrex differ``.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, error, ferrex, journal_head, stdio_client, store_fact


def _current(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in doc["results"] if not r.get("superseded_by")}


def test_five_wordings_of_where_it_runs_leave_no_silent_second_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            hosts = [("runs on", "k8s-node-07"), ("is hosted at", "k8s-node-12"),
                     ("lives on", "k8s-node-03"), ("is deployed on", "k8s-node-21"),
                     ("host", "k8s-node-30")]  # fmt: skip
            stored = [await fact("auth gateway", p, o) for p, o in hosts]
            ids = [s["id"] for s in stored]
            # Two host names, phrases alike: each later wording replaces the host before it,
            # and its answer names the one it replaced.
            for before, later in zip(ids, stored[1:], strict=False):
                assert later["superseded"] == [before], later
                assert later["replaced_note"].startswith(f"replaced {before} (auth gateway ")
            # A bare value (``is``) names no slot: the closest one is flagged, not replaced.
            flagged = await fact("auth gateway", "is", "k8s-node-31")
            assert flagged["superseded"] == [] and flagged["possible_conflict"] == [ids[-1]]
            other = flagged["possible_conflict"][0]
            note = flagged["possible_conflict_note"]
            assert f"supersedes={other}" in note and f"differs_from={other}" in note
            (named,) = [f for f in flagged["possible_conflict_with"] if f["id"] == other]
            assert named["reason"] == "relation" and "auth gateway" in named["fact"]

            # Every current host is either alone or flagged: recall marks it.
            found = await call(client, "recall", {"query": "where does auth gateway run",
                                                  "types": ["semantic"], "limit": 20})  # fmt: skip
            current = _current(found)
            hosts_now = [r for r in current.values() if r["object"].startswith("k8s-node")]
            assert len(hosts_now) >= 2
            assert all(r.get("possible_conflict") for r in hosts_now), hosts_now
            # ... in the text a client shows too, naming the other fact.
            asked = {"query": "which node hosts auth gateway", "types": ["semantic"], "limit": 20}
            shown = await client.call_tool("recall", asked)
            text = shown.content[0].text  # type: ignore[union-attr]
            lines = {ln.split(" ", 1)[0]: ln for ln in text.splitlines()[1:]}
            for r in hosts_now:
                others = ", ".join(r["possible_conflict"])
                assert f"may conflict with {others}" in lines[r["id"]], lines[r["id"]]
            reflect = await call(client, "reflect", {})
            count = reflect["counts"]["possible_conflicts"]
            assert count >= 1 and reflect["possible_conflicts"][0]["what_to_do"].startswith("if ")
            stats = await call(client, "stats", {})
            assert stats["needs_attention"]["possible_conflicts"] == count
            text = (await client.read_resource("ferrex://stats")).contents[0].text  # type: ignore[union-attr]
            assert json.loads(text)["needs_attention"]["possible_conflicts"] == count

            # The agent settles one: the flagged fact replaces the other.
            settled = await call(client, "confirm", {"ids": [flagged["id"]], "supersedes": other})
            assert settled["superseded"] == [other]
            after = await call(client, "reflect", {})
            assert after["counts"]["possible_conflicts"] < count
            query = {"query": "where does auth gateway run", "types": ["semantic"], "limit": 20}
            again = _current(await call(client, "recall", query))
            assert other not in again

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_spellings_of_one_subject_and_a_plural_relation(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            atlas = await fact("auth gateway", "owner", "team Atlas")
            nova = await fact("auth-gw", "owner", "team Nova")
            assert nova["superseded"] == [atlas["id"]], "gw is gateway: the rest agrees"
            ann = await fact("authentication gateway", "owner", "Ann Weller")
            assert ann["superseded"] == [nova["id"]], "auth is authentication here"
            assert len({f["entities"][0]["entity_id"] for f in (atlas, nova, ann)}) == 1

            one = await fact("pg primary", "host", "db-1")
            two = await fact("Postgres primary", "host", "db-2")
            # One entity; two host names told plainly may be a move or a second node: both
            # stand, flagged against each other (a start or a word of change would replace).
            assert two["entities"][0]["entity_id"] == one["entities"][0]["entity_id"]
            assert two["superseded"] == [] and two["possible_conflict"] == [one["id"]]
            replica = await fact("pg replica", "host", "db-9")
            assert replica["superseded"] == [] and "possible_conflict" not in replica

            # The CI system under five names: never two silent current answers.
            names = [
                ("CI pipeline", "Jenkins"),
                ("ci", "GitHub Actions"),
                ("CI", "Buildkite"),
                ("the CI pipeline", "CircleCI"),
                ("continuous integration", "GitLab CI"),
            ]
            ci = [await fact(s, "runs on", o) for s, o in names]
            for later in ci[1:]:
                assert later["superseded"] or later.get("possible_conflict"), later
            # The CI pipeline is CI pipeline: one entity, its two hosts told plainly flagged.
            assert ci[3]["entities"][0]["entity_id"] == ci[0]["entities"][0]["entity_id"]
            assert ci[0]["id"] in ci[3]["possible_conflict"], ci[3]

            # The read side spells names the same ways: a filter by any of them finds them.
            by_filter = await call(client, "recall", {
                "query": "who owns it", "types": ["semantic"], "entities": ["auth gw"],
                "limit": 20, "min_relevance": 0})  # fmt: skip
            assert ann["id"] in {r["id"] for r in by_filter["results"]}
            by_acronym = await call(client, "recall", {
                "query": "what does it run on", "types": ["semantic"],
                "entities": ["continuous integration pipeline"], "limit": 20,
                "min_relevance": 0})  # fmt: skip
            assert ci[3]["id"] in {r["id"] for r in by_acronym["results"]}

            # Members of a team: a second member is one more value, and the answer says so.
            priya = await fact("team-engage", "member", "Priya Nair")
            jonas = await fact("team-engage", "member", "Jonas Berg")
            assert jonas["superseded"] == [] and jonas["multi_valued"] is True
            assert "supersedes" in jonas["plural_note"]
            found = _current(await call(client, "recall", {
                "query": "team-engage members", "types": ["semantic"], "limit": 20}))  # fmt: skip
            assert {priya["id"], jonas["id"]} <= set(found)

            # Two facts that both hold: the operator says so, the flag goes.
            gitlab = ci[4]["id"]
            buildkite, circle = ci[2]["id"], ci[3]["id"]
            assert {buildkite, circle} <= set(ci[4]["possible_conflict"])
            said = ferrex(home, "differ", gitlab, buildkite, "--json")
            assert said.returncode == 0, said.stderr
            assert json.loads(said.stdout)["differ"] == [[gitlab, buildkite]]
            after = _current(await call(client, "recall", {
                "query": "continuous integration CI runs on", "types": ["semantic"],
                "limit": 30}))  # fmt: skip
            assert circle in after[gitlab]["possible_conflict"], "the other flag stays"
            assert gitlab not in after[buildkite].get("possible_conflict", [])
            missing = ferrex(home, "differ", gitlab, "mem_nope")
            assert missing.returncode == 7

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0
    drift = ferrex(home, "reconcile")
    assert drift.returncode == 0, drift.stdout + drift.stderr


def test_a_merge_flags_the_facts_it_puts_in_one_slot(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            box = await fact("search box", "runs on", "k8s-node-07")
            front = await fact("query frontend", "is hosted at", "k8s-node-12")
            owner = await fact("query frontend", "owner", "team Nova")
            assert "possible_conflict" not in front, "two subjects: nothing to compare"
            merged = ferrex(home, "entity", "merge", "search box", "query frontend", "--json")
            assert merged.returncode == 0, merged.stderr
            query = {"query": "search box runs on hosted at", "types": ["semantic"],
                     "limit": 20, "min_relevance": 0}  # fmt: skip
            found = _current(await call(client, "recall", query))
            assert found[box["id"]]["possible_conflict"] == [front["id"]]
            assert found[front["id"]]["possible_conflict"] == [box["id"]]
            assert "possible_conflict" not in found.get(owner["id"], {}), "another slot"
            assert (await call(client, "reflect", {}))["counts"]["possible_conflicts"] == 1

    anyio.run(main)
    # The pair said to both hold is kept by the read model as a replay rebuilds it.
    drift = ferrex(home, "reconcile")
    assert drift.returncode == 0, drift.stdout + drift.stderr


def test_a_merge_does_not_flag_again_facts_said_to_both_hold(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            # Two spellings that may be one subject: flagged, and the agent says both hold.
            gateway = await fact("billing service", "runs on", "k8s-node-07")
            gw = await fact("billing", "lives on", "k8s-node-12")
            assert gw["possible_conflict"] == [gateway["id"]], gw
            settled = await call(
                client, "confirm", {"ids": [gw["id"]], "differs_from": gateway["id"]}
            )
            assert settled["differ"] == [[gw["id"], gateway["id"]]], settled
            assert (await call(client, "reflect", {}))["counts"]["possible_conflicts"] == 0
            # Two subjects never compared: a merge puts their facts in one slot.
            box = await fact("search box", "runs on", "k8s-node-03")
            front = await fact("query frontend", "is hosted at", "k8s-node-21")
            for kept, other in (("billing service", "billing"), ("search box", "query frontend")):
                merged = ferrex(home, "entity", "merge", kept, other, "--json")
                assert merged.returncode == 0, merged.stdout + merged.stderr
            query = {"query": "where does it run hosted on lives on", "types": ["semantic"],
                     "limit": 20, "min_relevance": 0}  # fmt: skip
            found = _current(await call(client, "recall", query))
            assert "possible_conflict" not in found[gateway["id"]], found[gateway["id"]]
            assert "possible_conflict" not in found[gw["id"]], found[gw["id"]]
            assert found[box["id"]]["possible_conflict"] == [front["id"]], "never settled"
            assert found[front["id"]]["possible_conflict"] == [box["id"]]
            assert (await call(client, "reflect", {}))["counts"]["possible_conflicts"] == 1

    anyio.run(main)
    # The pair said to both hold is kept by the read model as a replay rebuilds it.
    drift = ferrex(home, "reconcile")
    assert drift.returncode == 0, drift.stdout + drift.stderr


def test_a_confirm_naming_an_unknown_other_fact_confirms_nothing(tmp_path: Path) -> None:
    """``differs_from`` (or ``supersedes``) naming no memory the agent can see is refused
    whole: the fact in ``ids`` is not validated either, and the journal does not move."""
    home = tmp_path / "home"

    async def stored() -> str:
        async with stdio_client(home) as client:
            return str((await store_fact(client, "payments api", "runs on", "k8s-node-04"))["id"])

    fact_id = anyio.run(stored)
    head = journal_head(home)

    async def main() -> None:
        async with stdio_client(home) as client:
            for other in ("mem_01M9ZZZZZZZZZZZZZZZZZZZZZZ", "mem_01M9ZZZZZZZZZZZZZZZZZZZZZY"):
                for arg in ("differs_from", "supersedes"):
                    code, text = await error(client, "confirm", {"ids": [fact_id], arg: other})
                    assert code == "not_found" and other in text, text

    anyio.run(main)
    assert journal_head(home) == head


def test_a_confirm_replacing_a_fact_with_an_event_is_refused(tmp_path: Path) -> None:
    """Ids mixed up while settling a flag: an event confirmed as replacing a fact retired the
    fact (recall then found no port). A confirm replaces a memory only with one of its kind;
    nothing is written."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = await store_fact(client, "auth gateway", "listens on port", "8443")
            event = await client.call_tool(
                "store", {"content": "Staging was flaky on Monday: the node pool ran out of IPs."}
            )
            assert event.structured_content is not None
            event_id = event.structured_content["id"]
            head = journal_head(home)
            code, text = await error(
                client, "confirm", {"ids": [event_id], "supersedes": fact["id"]}
            )
            assert code == "invalid_input" and "an event" in text and "a fact" in text, text
            assert journal_head(home) == head
            found = await client.call_tool("recall", {"query": "auth gateway port"})
            assert found.structured_content is not None
            assert fact["id"] in [r["id"] for r in found.structured_content["results"]]

    anyio.run(main)
