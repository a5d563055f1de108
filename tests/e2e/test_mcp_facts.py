"""Facts that change through reworded predicates, over MCP, as an agent words them.

A real server process on stdio, the SDK's client: the current answer and the history must
both be right however the agent phrases the relation (copulas, role nouns, synonyms), while
an inverse relation stays a fact of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, ferrex, stdio_client


def _facts(doc: dict[str, Any], subject: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in doc["results"] if r.get("subject") == subject}


def test_reworded_facts_keep_one_current_answer_and_the_history(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home, "--agent-id", "planner") as client:

            async def fact(predicate: str, obj: str, **extra: Any) -> dict[str, Any]:
                args = {"subject": "checkout-service", "predicate": predicate, "object": obj,
                        "visibility": "shared", **extra}  # fmt: skip
                return await call(client, "store", args)

            python = await fact("is written in", "Python", valid_from="2025-03-01")
            go = await fact("language", "Go", valid_from="2026-02-01")
            assert go["superseded"] == [python["id"]], "a role noun names the same relation"

            ann = await fact("owner", "Ann Weller", valid_from="2025-01-10")
            bob = await fact("is maintained by", "Bob Okafor", valid_from="2026-05-01")
            assert bob["superseded"] == [ann["id"]]
            again = await fact("owned_by", "bob okafor")
            assert again["status"] == "duplicate" and again["id"] == bob["id"]

            postgres = await fact("uses", "PostgreSQL 15")
            cockroach = await fact("depends on", "CockroachDB 23.2")
            assert cockroach["superseded"] == [postgres["id"]]

            # The inverse relation is another fact: it replaces nothing.
            owns = await call(client, "store", {"subject": "Ann Weller", "predicate": "owns",
                                                "object": "checkout-service"})  # fmt: skip
            assert owns["superseded"] == []

            # A relation no rule places, worded close to one the subject has, with a value
            # of the same kind (two region names): the same slot, replaced.
            region = await fact("located in", "eu-west-1")
            moved = await fact("situated in", "us-east-1")
            assert moved["superseded"] == [region["id"]]

            now = await call(client, "recall", {"query": "checkout-service language written in",
                                                "types": ["semantic"], "limit": 20})  # fmt: skip
            current = _facts(now, "checkout-service")
            assert go["id"] in current and python["id"] not in current
            assert not current[go["id"]]["contradiction"]

            history = await call(client, "recall", {
                "query": "checkout-service language written in", "types": ["semantic"],
                "include_invalidated": True, "limit": 20})  # fmt: skip
            old = _facts(history, "checkout-service")[python["id"]]
            assert old["superseded_by"] == go["id"] and old["invalidated_at"].startswith(
                "2026-02-01"
            )

            then = await call(client, "recall", {
                "query": "checkout-service language written in", "types": ["semantic"],
                "as_of": "2025-06-01", "limit": 20})  # fmt: skip
            back = _facts(then, "checkout-service")
            assert python["id"] in back and go["id"] not in back
            owners_then = {r["object"] for r in back.values()}
            assert "Ann Weller" in owners_then and "Bob Okafor" not in owners_then

            stats = await call(client, "stats", {})
            assert stats["needs_attention"]["conflicts"] == 0

    anyio.run(main)
    assert ferrex(home, "journal", "verify").returncode == 0
