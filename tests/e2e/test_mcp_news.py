"""A change told as news, under a new name for its subject, over MCP stdio: flagged, never
replacing; siblings and things with facts of their own stay unflagged.

A real server on stdio, the SDK's client, the bundled model. Rewordings of our own (not the
scenario set's): a page renamed a UI with a date, a store renamed with a note of change; and
the hard negatives (one head with two words in front, two kinds of one thing, a name that
already holds facts, another agent's private fact).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


def test_news_under_a_new_name_is_flagged_and_siblings_are_not(tmp_path: Path) -> None:
    home = tmp_path / "home"
    week_ago = (datetime.now(UTC) - timedelta(days=7)).isoformat()

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)

            # A dated change under a new name: flagged against the old name's fact, with
            # the line that settles it; nothing replaced.
            old = await fact("checkout page", "owned by", "storefront squad")
            new = await fact("Checkout UI", "owner", "payments crew", valid_from=week_ago)
            assert new["superseded"] == [] and new["possible_conflict"] == [old["id"]], new
            assert f"differs_from={old['id']}" in new["possible_conflict_note"]
            # A note that tells of a change does the same, without a date.
            cache = await fact("session cache", "runs on", "Memcached")
            moved = await fact("session storage", "served from", "Valkey",
                               content="switched off Memcached last sprint")  # fmt: skip
            assert moved["possible_conflict"] == [cache["id"]], moved

            # A note that names the value it replaces tells of the change too.
            squad = await fact("pricing page", "owned by", "growth squad")
            reorg = await fact("Pricing UI", "owner", "monetization crew",
                               content="reorg: the growth squad split up")  # fmt: skip
            assert reorg["possible_conflict"] == [squad["id"]], reorg

            # Without a word of change or a date the new name says nothing of a change.
            plain = await fact("invoice page", "owned by", "billing squad")
            quiet = await fact("Invoice UI", "owner", "ledger crew")
            assert "possible_conflict" not in quiet and plain["id"] != quiet["id"]

            # Siblings, dated: one head with two words in front, two kinds of one thing.
            a = await fact("exports consumer", "log level", "info")
            b = await fact("pricing consumer", "log level", "debug", valid_from=week_ago)
            assert "possible_conflict" not in b and a["id"] != b["id"]
            await fact("refunds api", "region", "eu-west-1")
            db = await fact("refunds database", "region", "us-east-1", valid_from=week_ago)
            assert "possible_conflict" not in db
            # A name that already holds a fact of its own is a thing of its own.
            await fact("search page", "owned by", "discovery squad")
            await fact("Search UI", "framework", "Svelte")
            owned = await fact("Search UI", "owner", "growth crew", valid_from=week_ago)
            assert "possible_conflict" not in owned, owned

            for memory in (old, new, cache, moved):
                assert memory["status"] == "stored"

        # Another agent's private fact is neither flagged nor named.
        async with stdio_client(home, "--agent-id", "ops-bot") as ops:
            args = {"subject": "status page", "predicate": "hosted on",
                    "object": "Statuspage.io", "visibility": "private"}  # fmt: skip
            hidden = await call(ops, "store", args)
        async with stdio_client(home, "--agent-id", "web-bot") as web:
            args = {"subject": "Status UI", "predicate": "hosted on", "object": "Instatus",
                    "valid_from": week_ago}  # fmt: skip
            seen = await call(web, "store", args)
        assert "possible_conflict" not in seen and hidden["id"] not in str(seen), seen

    anyio.run(main)
