"""A change whose note names the value it ends, under a name that shares nothing with the old
fact's, over MCP stdio.

A real server on stdio, the SDK's client, the bundled model. An agent stores a fact about a
thing under a new name, told as a change (in words or with a start), and says in its note
what it left ("we retired Airflow"): the one current fact holding that value, whatever its
subject, is flagged beside it, so the two are not left as two silent answers. A note naming
a value in passing, under a relation far from the new one, or naming two facts' values,
flags nothing.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


def test_a_note_naming_the_value_left_flags_that_fact(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            for number, (old, new, note, dated) in enumerate([
                (("nightly ETL", "scheduled by", "Airflow 2.7"),
                 ("data pipelines", "orchestrated with", "Dagster"),
                 "we retired Airflow after the upgrade pain", True),
                (("customer emails", "sent through", "Mailgun"),
                 ("transactional mail", "delivered via", "Postmark"),
                 "switched because Mailgun kept landing in spam", False),
            ]):  # fmt: skip
                namespace = f"noted-{number}"
                first = await store_fact(client, *old, namespace=namespace)
                extra = {"valid_from": "2026-11-20T09:00:00Z"} if dated else {}
                second = await store_fact(client, *new, namespace=namespace, content=note,
                                          **extra)  # fmt: skip
                assert second["status"] == "stored" and not second["superseded"], second
                assert second.get("possible_conflict") == [first["id"]], second
                named = second["possible_conflict_with"][0]
                assert named["id"] == first["id"] and old[2] in named["fact"], second
                reflect = await call(client, "reflect", {"namespace": namespace})
                pairs = [{f["id"] for f in group["facts"]}
                         for group in reflect["possible_conflicts"]]  # fmt: skip
                assert {first["id"], second["id"]} in pairs, reflect

    anyio.run(main)


def test_a_note_naming_a_value_in_passing_flags_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            # a relation far from the new one: the note names the bucket in passing
            await store_fact(client, "audit log", "stored in", "S3 bucket audit-logs",
                             namespace="passing")  # fmt: skip
            rebuilt = await store_fact(
                client, "search index", "rebuilt with", "OpenSearch 2.13", namespace="passing",
                content="the audit log bucket was untouched", valid_from="2026-12-01T00:00:00Z",
            )  # fmt: skip
            assert not rebuilt.get("possible_conflict"), rebuilt
            # two facts hold the value the note names: which one it left is not told
            for subject in ("orders queue", "billing queue"):
                await store_fact(client, subject, "broker", "RabbitMQ", namespace="two")
            events = await store_fact(
                client, "event bus", "now runs on", "Kafka", namespace="two",
                content="moved off RabbitMQ last sprint",
            )  # fmt: skip
            assert not events.get("possible_conflict"), events

    anyio.run(main)
