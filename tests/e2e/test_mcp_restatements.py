"""A value restated under another predicate over MCP stdio: flagged ``restates``, never
replaced, never silent; and the values two things merely share stay unflagged.

A real server on stdio, the SDK's client, the bundled model. Wordings of our own: the same
baud rate, the same channel and the same fiscal sponsor told twice in other words, on one
subject and on names possibly or partly the same; against them, two parts of one thing that
share an engine, siblings that share a version, and two counts of one worker that happen to
be equal.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


def test_a_value_restated_in_other_words_is_flagged_and_shared_values_are_not(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            async def restates(first: dict[str, Any], second: dict[str, Any]) -> None:
                assert second["status"] == "stored" and second["superseded"] == [], second
                assert second["possible_conflict"] == [first["id"]], second
                line = second["possible_conflict_note"]
                assert line.startswith(f"restates {first['id']} ("), line
                assert f"confirm ids=[{second['id']}] supersedes={first['id']}" in line
                assert f"differs_from={first['id']}" in line

            # One subject, the value with its unit, under a predicate of other words.
            baud = await fact("gps module uart", "baud rate", "57600")
            speed = await fact("gps module uart", "link speed", "57600 baud")
            await restates(baud, speed)
            # One subject, the value with its punctuation changed.
            cap = await fact("release bot", "slack channel", "#rel-eng-alerts")
            ceiling = await fact("release bot", "posts to", "rel eng alerts")
            await restates(cap, ceiling)
            # One subject, an amount in another unit: the same memory limit.
            limit = await fact("render worker", "memory limit", "512Mi")
            half = await fact("render worker", "max memory", "0.5Gi")
            await restates(limit, half)
            # One subject, a weekly window written two ways under two relations.
            window = await fact("ops maintenance", "window", "Thursday 06:00-08:00 UTC")
            every = await fact("ops maintenance", "happens every", "Thu 6-8am UTC")
            await restates(window, every)
            # A name possibly the same (a head word), the value as its initials.
            host = await fact("lumen", "fiscal host", "Open Collective Europe")
            sponsor = await fact("lumen funding", "fiscal sponsor", "OCE")
            await restates(host, sponsor)

            # Two parts of one thing share an engine: the api's database is the db's engine.
            await fact("invoices api", "database", "CockroachDB")
            engine = await fact("invoices db", "engine", "CockroachDB")
            assert "possible_conflict" not in engine, engine
            # Siblings share a version under one predicate: two things, nothing flagged.
            await fact("staging broker", "kafka version", "3.7.1")
            prod = await fact("production broker", "kafka version", "3.7.1")
            assert "possible_conflict" not in prod, prod
            # Two counts of one worker that happen to be equal: no value of its own.
            await fact("thumbnail worker", "concurrency", "8")
            retries = await fact("thumbnail worker", "max retries", "8")
            assert "possible_conflict" not in retries, retries

            # Both restatements stay current, and reflect names each pair with its reason.
            reflect = await call(client, "reflect", {"limit": 50})
            found = {
                frozenset(f["id"] for f in group["facts"]): group["reason"]
                for group in reflect["possible_conflicts"]
            }
            pairs = ((baud, speed), (cap, ceiling), (limit, half), (window, every), (host, sponsor))
            for first, second in pairs:
                assert found.get(frozenset((first["id"], second["id"]))) == "restates", found
            assert reflect["counts"]["possible_conflicts"] == 5, reflect["counts"]
            # What to do: the entity commands only where the two subjects differ.
            todo = {
                frozenset(f["id"] for f in group["facts"]): group["what_to_do"]
                for group in reflect["possible_conflicts"]
            }
            for first, second in ((baud, speed), (cap, ceiling)):
                assert "entity merge" not in todo[frozenset((first["id"], second["id"]))]
            assert "entity merge" in todo[frozenset((host["id"], sponsor["id"]))]

    anyio.run(main)


def test_a_value_replaced_does_not_pass_its_restatement_flag_on(tmp_path: Path) -> None:
    """A flag says a fact restated another's value; when that value was replaced by a new
    one, the flag was carried to it ("on-call primary Lena, may conflict with payments-gw
    maintained by Rafael: restates"), though nothing restates Rafael any more."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)
            await fact("payments-gw", "maintained by", "Rafael Ortiz")
            rafael = await fact("payments", "on-call primary", "Rafael Ortiz")
            assert rafael["possible_conflict_note"].startswith("restates "), rafael
            lena = await fact("payments", "on-call primary", "Lena Hoffmann")
            assert lena["superseded"] == [rafael["id"]], lena
            assert "possible_conflict" not in lena, lena

    anyio.run(main)
