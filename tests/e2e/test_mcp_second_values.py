"""A second value of one relation over MCP stdio: replaced only on evidence that the relation
holds one value at a time; otherwise kept beside the first, named, and flagged unless the
agent wrote the relation in the very words of the first.

A real server on stdio, the SDK's client, the bundled model. Scenarios of our own: a
relation of many values that no word list names (languages a product is translated into,
tables a job pulls from, the nodes a cache runs on, the cities a company has a warehouse
in), each told plainly in the same words twice, must keep both values current and say so
(``kept_beside``, no flag: an agent tells a change as one); told in other words, the two
are flagged for the agent to settle; the same relation told as news (a start, a note of
change), or with values a thing has one of (a count, a version), still replaces.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, ferrex, stdio_client, store_fact


def test_a_second_value_told_plainly_is_kept_and_named_other_words_flagged_news_replaces(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            plainly = [
                ("Orchard reader", "translated into", "Dutch", "Korean"),
                ("nightly-settlement job", "pulls from", "ledger_entries", "chargebacks"),
                (
                    "kestrel cache",
                    "replicates from",
                    "kestrel-a.corp.example",
                    "kestrel-b.corp.example",
                ),
                ("Ferngrove", "buys pallets from", "Ghent Pallet Co", "Tartu Timber"),
            ]
            for subject, predicate, first_value, second_value in plainly:
                first = await fact(subject, predicate, first_value)
                # The relation in the same words (an auxiliary aside): one value more.
                second = await fact(subject, f"is {predicate}", second_value)
                assert second["status"] == "stored", second
                assert second["superseded"] == [], f"{subject}: {second_value} hid {first_value}"
                assert "possible_conflict" not in second, second
                assert second["multi_valued"] is True, second
                assert [f["id"] for f in second["kept_beside"]] == [first["id"]], second
                assert f"supersedes={first['id']}" in second["plural_note"], second
                asked = {"query": f"{subject} {predicate}", "types": ["semantic"], "limit": 20}
                found = await call(client, "recall", asked)
                current = {r["id"]: r for r in found["results"] if not r.get("superseded_by")}
                assert {first["id"], second["id"]} <= set(current), subject
                for mine in (first["id"], second["id"]):
                    assert not current[mine].get("contradicts"), current[mine]
                    assert not current[mine].get("possible_conflict"), current[mine]

            # A value with a start, of a name possibly the same, in the same words: one more
            # of a relation that holds many already, whichever thing it is; no conflict.
            news = await fact("Orchard reader app", "translated into", "Portuguese",
                              valid_from="2026-11-01")  # fmt: skip
            assert news["superseded"] == [] and "possible_conflict" not in news, news

            # A place told twice plainly may be a move (``hosted on``), an attribute names one
            # value (``log level``): both kept and flagged, not one more.
            for subject, predicate, first_value, second_value in (
                ("kestrel cache", "hosted on", "kestrel-a.corp.example", "kestrel-b.corp.example"),
                ("quarry build farm", "runs in", "Leuven", "Narva"),
                ("kestrel cache", "log level", "DEBUG", "WARN"),
            ):
                first = await fact(subject, predicate, first_value)
                second = await fact(subject, predicate, second_value)
                assert second["superseded"] == [] and "kept_beside" not in second, second
                assert second["possible_conflict"] == [first["id"]], second

            # One of several things held and placed (``has a warehouse in``): one more, kept
            # beside and named, no flag.
            leuven = await fact("Ferngrove", "has a warehouse in", "Leuven")
            narva = await fact("Ferngrove", "has a warehouse in", "Narva")
            assert narva["superseded"] == [] and "possible_conflict" not in narva, narva
            assert [k["id"] for k in narva["kept_beside"]] == [leuven["id"]], narva

            # The relation in other words (``based in`` / ``located in``): kept and flagged,
            # the answer says how to settle it.
            ghent = await fact("Ferngrove HQ", "based in", "Ghent")
            tartu = await fact("Ferngrove HQ", "located in", "Tartu")
            assert tartu["superseded"] == [], tartu
            assert tartu["possible_conflict"] == [ghent["id"]], tartu
            note = tartu["possible_conflict_note"]
            assert f"supersedes={ghent['id']}" in note and f"differs_from={ghent['id']}" in note

            # The agent says both hold: the possible-conflict flag goes, both stay, and the
            # two are no contradiction any more: not in recall's marks, not in reflect.
            before = await call(client, "reflect", {"limit": 50})
            settled = await call(client, "confirm", {"ids": [tartu["id"]],
                                                     "differs_from": ghent["id"]})  # fmt: skip
            assert settled, settled
            found = await call(client, "recall", {"query": "Ferngrove HQ located in",
                                                  "types": ["semantic"], "limit": 20})  # fmt: skip
            marks = {r["id"]: r for r in found["results"]}
            for a, b in ((tartu["id"], ghent["id"]), (ghent["id"], tartu["id"])):
                assert b not in marks[a].get("possible_conflict", []), str(marks[a])
                assert b not in marks[a].get("contradicts", []), str(marks[a])
            after = await call(client, "reflect", {"limit": 50})
            pair = {tartu["id"], ghent["id"]}

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
