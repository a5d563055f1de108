"""The two ends of one span are two relations, over MCP stdio: a sale's start and its end,
a shop's opening and closing hours, the least and the most replicas stand side by side
unflagged, while a new start still replaces the old one.

A real server on stdio, the SDK's client, the bundled model; wording of our own.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import stdio_client, store_fact


def test_the_two_ends_of_one_span_stand_side_by_side(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            fact = partial(store_fact, client)
            await fact("spring sale", "starts", "March 3")
            end = await fact("spring sale", "ends", "March 24")
            assert "possible_conflict" not in end and end["superseded"] == [], end
            await fact("Lisbon office", "opens at", "08:30")
            closes = await fact("Lisbon office", "closes at", "18:00")
            assert "possible_conflict" not in closes, closes
            await fact("render workers", "min replicas", "2")
            most = await fact("render workers", "max replicas", "40")
            assert "possible_conflict" not in most, most
            # One end told again is a change of that end.
            moved = await fact("spring sale", "starts", "March 5")
            assert len(moved["superseded"]) == 1, moved

    anyio.run(main)
