"""A change told in other words over MCP stdio: replaced where the evidence is sure, flagged
where it is only possible, and never silent.

A real server on stdio, the SDK's client, the bundled model. Wordings of our own:

- a subject named more or less fully (``mail relay`` / ``outbound mail relay``), the same
  relation, a value that surely replaces (a start given, a one-value attribute such as a
  status): replaced; a name extended by a head of its own (``billing`` / ``billing
  backups``) or a contrast (``legacy``) is never replaced;
- one subject, two wordings of one slot: a status told twice, a change verb beside the one
  value of its kind (``upgraded to`` beside ``Elasticsearch version``), one head word with two
  counts (``parallelism`` / ``max parallel uploads``), a move beside where it is placed, a
  value done again (``resized to`` / ``size``), two schedules of one cadence;
- two relations with two schedules or two URLs: flagged, not silent;
- the same value in another form (``90 days`` / ``90d``, an address with its scheme):
  flagged as a restatement, not left as two silent answers.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import ferrex, stdio_client, store_fact


def test_sure_changes_replace_across_close_names_and_wordings(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            async def replaces(first: dict[str, Any], second: dict[str, Any]) -> None:
                assert second["status"] == "stored", second
                assert second["superseded"] == [first["id"]], second
                assert "possible_conflict" not in second, second

            # A close name, one relation: a status, then an owner told with a start.
            up = await fact("mail relay", "status", "healthy")
            drained = await fact("outbound mail relay", "status", "drained for maintenance")
            await replaces(up, drained)
            heron = await fact("ledger reconciler", "owner", "team Heron")
            ibis = await fact("nightly ledger reconciler", "owner", "team Ibis",
                              valid_from="2026-02-01T00:00:00Z")  # fmt: skip
            await replaces(heron, ibis)
            # A plural and a singular of one name: the same thing.
            weekly = await fact("quota audit", "status", "scheduled")
            done = await fact("quota audits", "status", "completed")
            await replaces(weekly, done)

            # A first name for a full name, for what a person is at work.
            staff = await fact("Tomasz Wrona", "role", "staff engineer")
            em = await fact("Tomasz", "role", "engineering manager")
            await replaces(staff, em)

            # One subject: a status again, a change verb beside the one version it holds,
            # one head word with two counts, a move beside where it runs.
            draft = await fact("docs portal", "status", "draft")
            live = await fact("docs portal", "status", "published")
            await replaces(draft, live)
            es = await fact("search cluster", "Elasticsearch version", "8.11.3")
            await fact("search cluster", "owner", "team Wren")
            upgraded = await fact("search cluster", "upgraded to", "8.15.1")
            await replaces(es, upgraded)
            ten = await fact("upload workers", "max parallel uploads", "10")
            sixteen = await fact("upload workers", "parallelism", "16")
            await replaces(ten, sixteen)
            dyno = await fact("status dashboard", "runs on", "an old Heroku dyno")
            render = await fact("status dashboard", "moved to", "Render web service")
            await replaces(dyno, render)
            # A value done again names its slot (resized to / size); two schedules, one of a
            # one-value attribute (happens / cadence).
            # A new place told as news (a start given) beside where it ran.
            pi = await fact("mqtt bridge", "runs on", "a Raspberry Pi in the lab")
            k3s = await fact("mqtt bridge", "deployed on", "the shared k3s cluster",
                             valid_from="2026-02-10T00:00:00Z")  # fmt: skip
            await replaces(pi, k3s)
            small = await fact("runner pool", "size", "small")
            xlarge = await fact("runner pool", "resized to", "xlarge")
            await replaces(small, xlarge)
            weekly = await fact("backup verification", "happens", "weekly")
            daily = await fact("backup verification", "cadence", "daily")
            await replaces(weekly, daily)

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0


def test_names_with_a_head_or_a_contrast_of_their_own_are_never_replaced(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)
            # A head word of its own (backups of the thing, an add-on for it), a contrast
            # word in front: another thing, even told with a start.
            pairs = [
                ("customer ledger", "customer ledger snapshots", "stored in", "eu-north-1",
                 "eu-south-2"),
                ("Nomad", "Nomad autoscaler plugin", "version", "1.8.4", "0.4.3"),
                ("orders queue", "legacy orders queue", "status", "active", "draining"),
                # A first word of a name, not a person's relation: a product and its service.
                ("Harbor", "Harbor Satellite", "version", "2.9.1", "0.4.0"),
                # A common noun with a word in front: a kind of it, not the thing in full.
                ("cache", "session cache", "eviction policy", "allkeys-lru", "volatile-ttl"),
                ("scheduler", "job scheduler", "status", "healthy", "degraded"),
            ]  # fmt: skip
            for subject, other, predicate, first_value, second_value in pairs:
                first = await fact(subject, predicate, first_value)
                second = await fact(other, predicate, second_value,
                                    valid_from="2026-01-10T00:00:00Z")  # fmt: skip
                assert second["superseded"] == [], f"{other} hid {first['id']}: {second}"
            # One subject, a word in front of the same noun: another thing's version.
            for subject, first_pair, second_pair in (
                ("billing api", ("version", "2.3.1"), ("python version", "3.11.4")),
                ("sync worker", ("timeout", "30s"), ("idle timeout", "5 min")),
                # an event of its own with a schedule of its own beside the subject's cadence
                ("mobile release train", ("cadence", "biweekly"), ("code freeze", "every Monday")),
                # something else placed on something, told with a date: not where it runs
                ("build pipeline", ("runs on", "Buildkite"), ("caches on", "R2")),
                # two attributes of one kind of value, read alike: both hold at once
                ("release build", ("duration", "25 min"), ("timeout", "45 min")),
            ):
                first = await fact(subject, *first_pair)
                second = await fact(subject, *second_pair, valid_from="2026-01-10T00:00:00Z")
                assert second["superseded"] == [], f"{second_pair} hid {first['id']}: {second}"
            # A first name two known people share is neither one's for sure.
            await fact("Ines Duarte", "team", "payments")
            ines = await fact("Ines", "title", "staff engineer")
            other = await fact("Ines Moreau", "title", "designer",
                               valid_from="2026-01-10T00:00:00Z")  # fmt: skip
            assert other["superseded"] == [], f"Ines Moreau hid {ines['id']}: {other}"

    anyio.run(main)


def test_schedules_urls_and_restated_values_are_flagged_not_silent(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            async def flagged(first: dict[str, Any], second: dict[str, Any]) -> str:
                assert second["status"] == "stored" and second["superseded"] == [], second
                assert second["possible_conflict"] == [first["id"]], second
                return str(second["possible_conflict_note"])

            # Two relations, two schedules: possibly one slot.
            weekly = await fact("report mailer", "goes out", "weekly")
            daily = await fact("report mailer", "is sent", "daily at 07:00")
            await flagged(weekly, daily)
            cron = await fact("invoice sweep", "kicks off", "at 04:30 UTC")
            cron2 = await fact("invoice sweep", "crontab", "15 6 * * *")
            await flagged(cron, cron2)
            # Two relations, two URLs.
            s3 = await fact("scan uploads", "lands files in", "s3://scan-uploads-eu")
            gcs = await fact("scan uploads", "bucket", "gs://scan-uploads-new")
            await flagged(s3, gcs)

            # The same value in another form: a duration in other units, an address with
            # and without its scheme, a word shortened.
            ninety = await fact("audit trail", "purged after", "90 days")
            short = await fact("audit trail", "max age", "90d")
            assert (await flagged(ninety, short)).startswith(f"restates {ninety['id']} (")
            bare = await fact("wiki", "served from", "kb.corp.example")
            full = await fact("wiki", "homepage", "https://kb.corp.example/")
            assert (await flagged(bare, full)).startswith(f"restates {bare['id']} (")
            # One relation, the value with a word shortened: the new wording replaces it.
            ops = await fact("laptop refresh", "run by", "desktop ops")
            spelled = await fact("laptop refresh", "run by", "desktop operations")
            assert spelled["superseded"] == [ops["id"]], spelled
            assert "possible_conflict" not in spelled, spelled

    anyio.run(main)
