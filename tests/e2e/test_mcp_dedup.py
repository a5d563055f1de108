"""Near copies that say something else, and repeated events, over MCP stdio.

A real server process and the SDK's client, the real bundled model: the dedup rule refuses a
memory only when it repeats one (issue #30), and a repeated text that is another event is
stored (issue #23).
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, error, stdio_client

FIRST = "feature-engine calls metrics-gateway synchronously for every chat message it scores."
SECOND = "metrics-gateway calls feature-engine synchronously for every chat message it scores."


def test_a_reversed_relation_is_stored_and_a_repeat_still_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            first = await call(client, "store", {"content": FIRST})
            second = await call(client, "store", {"content": SECOND})
            assert second["status"] == "stored" and second["id"] != first["id"]
            # The answer says which memory it is close to, and why it was kept.
            similar = second["similar"]
            assert similar["id"] == first["id"] and similar["similarity"] >= 0.95
            assert "order" in similar["kept_because"]
            assert f"supersedes={first['id']}" in similar["note"]

            code, text = await error(client, "store", {"content": FIRST})
            assert code == "duplicate" and first["id"] in text
            code, _ = await error(client, "store", {"content": SECOND.upper()})
            assert code == "duplicate"

            pref = await call(
                client, "store", {"content": "Bob prefers dark mode in the dashboard."}
            )
            negated = "Bob doesn't prefer dark mode in the dashboard."
            no = await call(client, "store", {"content": negated})
            assert no["status"] == "stored" and no["similar"]["id"] == pref["id"]
            assert "negation" in no["similar"]["kept_because"]

            both = await call(client, "recall", {"query": "what does metrics-gateway call",
                                                 "limit": 10})  # fmt: skip
            found = {r["id"] for r in both["results"]}
            assert {first["id"], second["id"]} <= found

    anyio.run(main)


def test_the_same_text_at_another_time_or_source_is_another_event(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            text = "Nightly backup of the orders database finished."
            monday = await call(
                client, "store", {"content": text, "valid_from": "2026-11-02T03:00:00Z"}
            )
            tuesday = await call(
                client, "store", {"content": text, "valid_from": "2026-11-03T03:00:00Z"}
            )
            assert tuesday["status"] == "stored"
            assert tuesday["similar"]["id"] == monday["id"]
            assert "event time" in tuesday["similar"]["kept_because"]
            other = await call(client, "store", {"content": text, "source": "ops-log",
                                                 "valid_from": "2026-11-03T03:00:00Z"})  # fmt: skip
            assert other["status"] == "stored"
            assert other["similar"]["kept_because"].startswith("another event")
            # A retried store is still a duplicate: the same time again, or no time at all.
            code, _ = await error(
                client, "store", {"content": text, "valid_from": "2026-11-03T03:00:00Z"}
            )
            assert code == "duplicate"
            code, _ = await error(client, "store", {"content": text})
            assert code == "duplicate"

    anyio.run(main)
