"""A change told in words under a name that only shares a word with the old one, over MCP
stdio: the one fact it may change is flagged; with two to choose from, or told plainly,
or on a name that holds facts of its own, nothing is.

A real server on stdio, the SDK's client, the bundled model. Our own wording: a worker
renamed a resizer, a feed renamed an importer, a report job with two candidate hosts.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


def test_a_change_in_words_flags_the_one_fact_it_may_change(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            # Told as a change in its predicate, under a name with another head.
            worker = await fact("thumbnail worker", "runs on", "batch-vm-02")
            resizer = await fact("thumbnail resizer", "moved to", "Cloud Run service thumbs")
            assert resizer["possible_conflict"] == [worker["id"]], resizer
            assert resizer["superseded"] == []
            # Told as a change in its note.
            feed = await fact("partner price feed", "pulled every", "15 minutes")
            note = "we raised the polling frequency after the outage"
            importer = await fact("price importer", "interval", "5 minutes", content=note)
            assert importer["possible_conflict"] == [feed["id"]], importer

            # Told by a noun of change in its note: a move, a rewrite.
            cache = await fact("main Redis cache", "region", "eu-west-1")
            moved_cache = await fact("prod redis", "sits in", "eu-central-1",
                                     content="the region move wrapped up on Friday")  # fmt: skip
            assert moved_cache["possible_conflict"] == [cache["id"]], moved_cache
            java = await fact("search service", "written in", "Java 17")
            go = await fact("search svc", "written in", "Go", content="the rewrite shipped")
            assert go["superseded"] == [java["id"]], go

            # Things of a plural name placed anew in words of change: where they all are now,
            # not one more place of many (what held them before, the one fact of a name
            # possibly theirs, is replaced).
            flags = await fact("feature flags", "provider", "Unleash")
            moved = await fact("flags", "now managed in", "Flagsmith")
            assert moved["superseded"] == [flags["id"]], moved
            assert not moved.get("multi_valued"), moved
            # A compound written as one word under the new name, as two under the old.
            rota = await fact("on-call rotation", "length", "1 week")
            shifts = await fact("oncall shifts", "last", "2 weeks",
                                content="we changed it after the retro")  # fmt: skip
            assert shifts["possible_conflict"] == [rota["id"]], shifts
            # A doer and a doing of one short stem are one word: ranker / ranking.
            model = await fact("scoring model", "version", "v7")
            serving = await fact("scorer", "now serving", "v8")
            assert serving["possible_conflict"] == [model["id"]] or serving["superseded"] == [
                model["id"]
            ], serving
            # Where things of a plural name are kept is one value of several, until a change
            # told in words under a name possibly theirs: flagged, not replaced.
            banners = await fact("banner images", "stored in", "s3://acme-banners-eu")
            bucket = await fact("banner image bucket", "migrated to", "gs://acme-banners")
            assert banners.get("multi_valued") and bucket["possible_conflict"] == [banners["id"]], (
                bucket
            )
            assert bucket["superseded"] == [], bucket
            # Told plainly: a name of its own, no change told.
            await fact("invoice renderer", "runs on", "batch-vm-07")
            plain = await fact("invoice mailer", "runs on", "batch-vm-09")
            assert "possible_conflict" not in plain, plain
            # Two facts it may change: which one is not for the server to guess.
            await fact("nightly report job", "runs on", "cron-box-1")
            await fact("weekly report job", "runs on", "cron-box-2")
            two = await fact("report builder", "now runs on", "Airflow worker pool reports")
            assert "possible_conflict" not in two, two
            # A name that already holds a fact of its own is a thing of its own.
            await fact("audio transcoder", "runs on", "gpu-node-3")
            await fact("audio normalizer", "version", "2.3.1")
            own = await fact("audio normalizer", "moved to", "gpu-node-5")
            assert "possible_conflict" not in own, (own, own.get("possible_conflict_note"))

        # Another agent's private fact is neither flagged nor named.
        async with stdio_client(home, "--agent-id", "ops-bot") as ops:
            args = {"subject": "backup uploader", "predicate": "runs on",
                    "object": "vault-vm-1", "visibility": "private"}  # fmt: skip
            hidden = await call(ops, "store", args)
        async with stdio_client(home, "--agent-id", "web-bot") as web:
            args = {"subject": "backup shipper", "predicate": "moved to", "object": "vault-vm-4"}
            seen = await call(web, "store", args)
        assert "possible_conflict" not in seen and hidden["id"] not in str(seen), seen

    anyio.run(main)


def test_a_change_in_words_to_a_new_slot_flags_no_value_of_another_shape(
    tmp_path: Path,
) -> None:
    """A change told in words that fits none of its subject's slots is flagged against the
    closest one only when the two values may be one slot's before and after by their
    shapes: a count is not a team, a port not a host."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)
            await fact("ledger service", "owned by", "team Orion")
            scaled = await fact("ledger service", "replicas", "3",
                                content="we changed this during the cleanup")  # fmt: skip
            assert "possible_conflict" not in scaled, scaled
            await fact("ledger service", "runs on", "ip-10-4-7-19")
            port = await fact("ledger service", "listens on port", "9443",
                              content="moved it over last week")  # fmt: skip
            assert "possible_conflict" not in port, port
            # Two names of no known kind need phrases closer than that.
            await fact("ledger service", "written in", "Go")
            queue = await fact("ledger service", "uses", "NATS",
                               content="switched over last sprint")  # fmt: skip
            assert "possible_conflict" not in queue, queue
            # Two names whose phrases are close are: an engine beside what it is built with.
            engine = await fact("arena client", "engine", "Unity 2021 LTS")
            godot = await fact("arena client", "built with", "Godot 4.2",
                               content="we moved the whole client over this quarter")  # fmt: skip
            assert godot["possible_conflict"] == [engine["id"]], godot
            # A note that names a value (here by its initials) names that fact's slot.
            fcm = await fact("ledger service", "sends push via", "Firebase Cloud Messaging")
            push = await fact("ledger service", "push provider", "OneSignal",
                              content="FCM quota issues all week")  # fmt: skip
            assert push["possible_conflict"] == [fcm["id"]], push
            # Two values of one shape still are: a team beside a name in capitals.
            owner = await fact("intake forms service", "owned by", "Patient Access IT")
            now = await fact("intake forms service", "now maintained by",
                             "Digital Front Door team")  # fmt: skip
            assert now["possible_conflict"] == [owner["id"]], now

        # A note naming the value of another agent's private fact names nothing.
        async with stdio_client(home, "--agent-id", "ops-bot") as ops:
            args = {"subject": "pager relay", "predicate": "sends via", "object": "Twilio",
                    "visibility": "private"}  # fmt: skip
            hidden = await call(ops, "store", args)
        async with stdio_client(home, "--agent-id", "web-bot") as web:
            args = {"subject": "pager relay", "predicate": "sms provider", "object": "Vonage",
                    "content": "Twilio outage again"}  # fmt: skip
            seen = await call(web, "store", args)
        assert "possible_conflict" not in seen and hidden["id"] not in str(seen), seen

    anyio.run(main)
