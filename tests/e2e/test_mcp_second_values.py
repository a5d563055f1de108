"""A second value of one relation over MCP stdio: replaced only on evidence that the relation
holds one value at a time, otherwise kept beside the first and flagged.

A real server on stdio, the SDK's client, the bundled model. Scenarios of our own: a
relation of many values that no word list names (languages a product is translated into,
tables a job pulls from, the nodes a cache runs on, the cities a company has a warehouse
in), each told plainly, must keep both values current (on ``main`` the second replaced the
first, hiding a true fact); the same relation told as news (a start, a note of change), or
with values a thing has one of (a count, a version), still replaces.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, ferrex, stdio_client, store_fact


def test_a_second_value_told_plainly_is_kept_and_flagged_and_news_replaces(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            plainly = [
                ("Orchard reader", "translated into", "Dutch", "Korean"),
                ("nightly-settlement job", "pulls from", "ledger_entries", "chargebacks"),
                ("kestrel cache", "hosted on", "kestrel-a.corp.example", "kestrel-b.corp.example"),
                ("Ferngrove", "has a warehouse in", "Ghent", "Tartu"),
            ]
            for subject, predicate, first_value, second_value in plainly:
                first = await fact(subject, predicate, first_value)
                second = await fact(subject, predicate, second_value)
                assert second["status"] == "stored", second
                assert second["superseded"] == [], f"{subject}: {second_value} hid {first_value}"
                assert second["possible_conflict"] == [first["id"]], second
                note = second["possible_conflict_note"]
                assert f"supersedes={first['id']}" in note and f"differs_from={first['id']}" in note
                asked = {"query": f"{subject} {predicate}", "types": ["semantic"], "limit": 20}
                found = await call(client, "recall", asked)
                current = {r["id"] for r in found["results"] if not r.get("superseded_by")}
                assert {first["id"], second["id"]} <= current, subject

            # The agent says both hold: the possible-conflict flag goes, both stay, and the
            # two are no contradiction any more: not in recall's marks, not in reflect.
            before = await call(client, "reflect", {"limit": 50})
            dutch = await fact("Orchard reader", "translated into", "Dutch")
            korean = await fact("Orchard reader", "translated into", "Korean")
            assert dutch["status"] == korean["status"] == "duplicate"
            settled = await call(client, "confirm", {"ids": [korean["id"]],
                                                     "differs_from": dutch["id"]})  # fmt: skip
            assert settled, settled
            found = await call(client, "recall", {"query": "Orchard reader translated into",
                                                  "types": ["semantic"], "limit": 20})  # fmt: skip
            marks = {r["id"]: r for r in found["results"]}
            for a, b in ((korean["id"], dutch["id"]), (dutch["id"], korean["id"])):
                assert b not in marks[a].get("possible_conflict", []), str(marks[a])
                assert b not in marks[a].get("contradicts", []), str(marks[a])
            after = await call(client, "reflect", {"limit": 50})
            pair = {korean["id"], dutch["id"]}

            def listed(doc: dict[str, Any]) -> list[set[str]]:
                return [{f["id"] for f in c["facts"]} for c in doc["contradictions"]]

            assert pair in listed(before), before["contradictions"]
            assert pair not in listed(after), after["contradictions"]
            assert after["counts"]["conflicts"] == before["counts"]["conflicts"] - 1, after

            # Told as news, the same kind of relation is replaced: a start given, or a note
            # that says it changed.
            old = await fact("Ferngrove returns desk", "based in", "Ghent")
            moved = await fact("Ferngrove returns desk", "based in", "Tartu",
                               valid_from="2026-03-01")  # fmt: skip
            assert moved["superseded"] == [old["id"]], moved
            relay = await fact("billing webhook relay", "hosted on", "relay-1.corp.example")
            again = await fact("billing webhook relay", "hosted on", "relay-7.corp.example",
                               content="migrated to the new pool")  # fmt: skip
            assert again["superseded"] == [relay["id"]], again
            # Values a thing has one of: a count, a version.
            eight = await fact("kestrel cache", "shard count", "8")
            twelve = await fact("kestrel cache", "shard count", "12 shards")
            assert twelve["superseded"] == [eight["id"]], twelve
            v3 = await fact("Orchard reader", "min supported OS", "iOS 16.4")
            v4 = await fact("Orchard reader", "min supported OS", "iOS 17.2")
            assert v4["superseded"] == [v3["id"]], v4

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0
