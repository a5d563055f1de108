"""Values kept beside each other answer together over MCP stdio: a question that one value of
a relation of many answers is answered by the others too, however each was worded; so is a
fact flagged as possibly the same slot as an answer.

A real server on stdio, the SDK's client, the bundled model. The first point of presence is
stored with the words an agent asks in ("point of presence"), the second with the short
form ("PoP"): by its own words the second scores as no answer, yet it is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, stdio_client, store_fact


async def labels_for(client: Client, query: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The untrimmed recall of ``query`` and each result's relevance label by id."""
    found = await call(client, "recall", {"query": query, "min_relevance": 0})
    return found, {r["id"]: r["relevance_label"] for r in found["results"]}


def test_a_value_kept_beside_an_answer_is_labelled_an_answer_too(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            said = "lantern-cdn has a point of presence in Frankfurt"
            first = await store_fact(client, "lantern-cdn", "has PoP in", "Frankfurt", content=said)
            said = "lantern-cdn got a PoP in Singapore"
            second = await store_fact(
                client, "lantern-cdn", "has PoP in", "Singapore", content=said
            )
            assert [k["id"] for k in second["kept_beside"]] == [first["id"]], second
            other = await store_fact(client, "lantern-cdn", "owned by", "edge team")
            query = "Where does lantern-cdn have points of presence?"
            found, labels = await labels_for(client, query)
            assert labels[first["id"]] != "none", found
            assert labels[second["id"]] != "none", found
            # Another relation of the subject gains nothing from it.
            assert labels.get(other["id"], "none") == "none", found

    anyio.run(main)


def test_a_fact_flagged_beside_an_answer_is_labelled_an_answer_too(tmp_path: Path) -> None:
    """Two facts flagged as possibly one slot: until the agent settles it, either may be
    the current answer, so a question the one answers labels the other an answer too (here
    stored in words of a move the question does not use). Another fact of the subject, not
    flagged, gains nothing."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            first = await store_fact(client, "invoice renderer", "runs on", "pdf-vm-2.internal")
            moved = await store_fact(client, "invoice render job", "relocated to",
                                     "pdf-vm-7.internal")  # fmt: skip
            assert moved["possible_conflict"] == [first["id"]], moved
            other = await store_fact(client, "invoice renderer", "written in", "Kotlin")
            found, labels = await labels_for(client, "Which machine runs the invoice renderer?")
            assert labels[first["id"]] != "none", found
            assert labels[moved["id"]] != "none", found
            assert labels.get(other["id"], "none") == "none", found

    anyio.run(main)
