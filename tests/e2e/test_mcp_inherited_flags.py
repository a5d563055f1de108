"""A possible conflict outlives the fact that replaces one of its two sides, over MCP stdio.

Two facts flagged as possibly one slot, then a newer value of one of them: replacing that one
settles nothing, so the newer value is flagged beside the other. Not when the agent said the
two both hold, nor beside a fact the caller does not see.

A real server on stdio, the SDK's client, the bundled model. Our own wording: an exporter
whose host moved twice under three names, a crawler settled as two things.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


def test_the_fact_that_replaces_a_flagged_one_is_flagged_beside_the_other(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home, "--agent-id", "planner") as client:
            fact = partial(store_fact, client, visibility="shared")
            first = await fact("nightly exporter", "runs on", "etl-vm-3.internal")
            moved = await fact("nightly export job", "moved to", "etl-vm-5.internal")
            assert moved["possible_conflict"] == [first["id"]], moved
            latest = await fact("nightly exporter", "host", "etl-vm-8.internal")
            assert latest["superseded"] == [first["id"]], latest
            assert latest["possible_conflict"] == [moved["id"]], latest
            # Recall shows the two current values flagged, not two silent answers.
            doc = await call(client, "recall", {"query": "where does the nightly export run?"})
            shown = {r["id"]: r for r in doc["results"]}
            assert latest["id"] in shown and moved["id"] in shown, doc
            assert moved["id"] in str(shown[latest["id"]]), shown[latest["id"]]

            # Said to both hold: replacing one side brings no flag back.
            crawler = await fact("docs crawler", "runs on", "crawl-1.internal")
            indexer = await fact("docs crawl job", "moved to", "crawl-4.internal")
            assert indexer["possible_conflict"] == [crawler["id"]], indexer
            settled = await call(client, "confirm", {"ids": [indexer["id"]],
                                                     "differs_from": crawler["id"]})  # fmt: skip
            assert settled["differ"], settled
            again = await fact("docs crawler", "host", "crawl-2.internal")
            assert again["superseded"] == [crawler["id"]], again
            assert "possible_conflict" not in again, again

        # Another agent's private fact flagged with a shared one: replacing the shared one
        # flags nothing the replacing agent cannot see.
        async with stdio_client(home, "--agent-id", "ops-bot") as ops:
            shared = await store_fact(ops, "metrics shipper", "runs on", "mon-1.internal",
                                      visibility="shared")  # fmt: skip
            private = await store_fact(ops, "metrics ship job", "moved to", "mon-6.internal",
                                       visibility="private")  # fmt: skip
            assert private["possible_conflict"] == [shared["id"]], private
        async with stdio_client(home, "--agent-id", "web-bot") as web:
            newer = await store_fact(web, "metrics shipper", "host", "mon-2.internal",
                                     visibility="shared")  # fmt: skip
            assert newer["superseded"] == [shared["id"]], newer
            assert "possible_conflict" not in newer and private["id"] not in str(newer), newer

    anyio.run(main)
