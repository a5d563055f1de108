"""A change told in words under another name of the same thing, over MCP stdio.

A real server on stdio, the SDK's client, the bundled model. An agent stores a fact, then
tells a change of it in words (``moved to``, ``upgraded to``, ``replaced with``) under a name
the entity rules find possibly the same (``metrics store`` / ``the metrics data store``).
When that name's one fact in a slot the rules match is the only fact flagged, the new fact
replaces it: one current answer, the replaced fact named in the answer. Without a word of
change, with two candidates, of the subject's own other relations, pinned, or seen by
another agent alone, nothing is replaced.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


def test_a_change_told_in_words_replaces_the_one_fact_of_a_name_possibly_the_same(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            for number, (old, new, dated) in enumerate([
                (("metrics store", "is", "InfluxDB"),
                 ("the metrics data store", "moved to", "VictoriaMetrics"), False),
                (("ML training cluster", "GPU type", "A100"),
                 ("ML training", "upgraded to", "H100"), True),
                (("CI", "runs on", "Jenkins"),
                 ("continuous integration", "moved to", "GitHub Actions"), True),
            ]):  # fmt: skip
                namespace = f"told-{number}"
                first = await store_fact(client, *old, namespace=namespace)
                extra = {"valid_from": "2026-11-30T08:00:00Z"} if dated else {}
                second = await store_fact(client, *new, namespace=namespace, **extra)
                assert second["status"] == "stored", second
                assert second["superseded"] == [first["id"]], second
                assert "possible_conflict" not in second, second
                assert first["id"] in second["replaced_note"], second
                reflect = await call(client, "reflect", {"namespace": namespace})
                assert not reflect["possible_conflicts"], reflect
                asked = {"query": f"{new[0]} {old[1]}", "namespace": namespace, "limit": 5}
                found = await call(client, "recall", asked)
                ids = [r["id"] for r in found["results"]]
                assert second["id"] in ids and first["id"] not in ids, found
            # Two things after all: the note's way back keeps the old fact beside the new.
            again = await store_fact(client, "metrics store", "is", "InfluxDB",
                                     namespace="told-0", multi_valued=True)  # fmt: skip
            assert again["status"] == "stored" and not again["superseded"], again
            reflect = await call(client, "reflect", {"namespace": "told-0"})
            assert not reflect["possible_conflicts"], reflect

    anyio.run(main)


def test_nothing_is_replaced_across_names_without_words_or_a_single_candidate(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            # No word of change: the same slot in other words is only flagged.
            first = await store_fact(client, "metrics store", "is", "InfluxDB", namespace="plain")
            second = await store_fact(client, "the metrics data store", "platform",
                                      "VictoriaMetrics", namespace="plain")  # fmt: skip
            assert not second["superseded"], second
            assert second.get("possible_conflict") == [first["id"]], second
            # The subject's own facts of other relations: a change in words may be of any.
            await store_fact(client, "billing backend", "python version", "3.11",
                             namespace="own")  # fmt: skip
            upgraded = await store_fact(client, "billing backend", "upgraded to", "Django 5.0",
                                        namespace="own")  # fmt: skip
            assert not upgraded["superseded"], upgraded
            # A part of a named thing, named by its name and more: its own change...
            for number, (old, new) in enumerate([
                (("Kafka", "version", "3.6.1"), ("Kafka Connect", "upgraded to", "3.7.0")),
                (("search", "runs on", "search-node-1"),
                 ("search proxy", "now runs on", "proxy-node-2")),
                (("payments service", "runs on", "k8s-prod"),
                 ("payments service worker", "moved to", "k8s-batch")),
                # ... or another of its kind, set apart by a word (internal, legacy, staging)
                (("the billing api", "owner", "team Falcon"),
                 ("the internal billing api", "ownership moved to", "team Heron")),
            ]):  # fmt: skip
                whole = await store_fact(client, *old, namespace=f"part-{number}")
                part = await store_fact(client, *new, namespace=f"part-{number}")
                assert not part["superseded"], part
                assert part.get("possible_conflict") == [whole["id"]], part
            # Two facts it may have changed: which one is the agent's call.
            olds = [await store_fact(client, subject, "is", value, namespace="two")
                    for subject, value in (("metrics store", "InfluxDB"),
                                           ("metrics data", "Prometheus"))]  # fmt: skip
            both = await store_fact(client, "the metrics data store", "moved to",
                                    "VictoriaMetrics", namespace="two")  # fmt: skip
            assert not both["superseded"], both
            assert sorted(both["possible_conflict"]) == sorted(o["id"] for o in olds), both
            # A pinned fact yields to an explicit supersede alone: flagged, not refused.
            pinned = await store_fact(client, "metrics store", "is", "InfluxDB",
                                      namespace="pinned", pinned=True)  # fmt: skip
            moved = await store_fact(client, "the metrics data store", "moved to",
                                     "VictoriaMetrics", namespace="pinned")  # fmt: skip
            assert moved["status"] == "stored" and not moved["superseded"], moved
            assert moved.get("possible_conflict") == [pinned["id"]], moved

        # Another agent's private fact is neither replaced nor named.
        async with stdio_client(home, "--agent-id", "ops-bot") as ops:
            args = {"subject": "metrics store", "predicate": "is", "object": "InfluxDB",
                    "namespace": "agents", "visibility": "private"}  # fmt: skip
            hidden = await call(ops, "store", args)
        async with stdio_client(home, "--agent-id", "web-bot") as web:
            args = {"subject": "the metrics data store", "predicate": "moved to",
                    "object": "VictoriaMetrics", "namespace": "agents"}  # fmt: skip
            seen = await call(web, "store", args)
        assert not seen["superseded"] and hidden["id"] not in str(seen), seen
        async with stdio_client(home, "--agent-id", "ops-bot") as ops:
            mine = await call(ops, "recall", {"query": "metrics store", "namespace": "agents"})
            assert hidden["id"] in [r["id"] for r in mine["results"]], mine

    anyio.run(main)
