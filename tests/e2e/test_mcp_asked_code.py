"""A question asking for a code is answered by a memory that states one, over MCP stdio with
the bundled model (issue 44, "Hide only what cannot be the answer").

"Which status code does the partner API send back to a client over its quota?"
shares no word with "the partner API allows 60 calls per minute per key; beyond that it
replies 429": the answer is the value in its own shape, a status code. The memory is shown
without *nothing relevant*; the same store still says it for a question about a service it
has never heard of.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, stdio_client

NOTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("The partner API allows 60 calls per minute per key; beyond that it replies 429 and "
     "sets a Retry-After header.", ("partner API",)),
    ("The partner API is written in Go and deployed to prod-eu-1 by ArgoCD.", ("partner API",)),
    ("ledger-worker exits with ERR_LEDGER_LOCKED when another run holds the nightly lock.",
     ("ledger-worker",)),
    ("ledger-worker runs at 02:00 UTC and posts a summary to #finance-eng.", ("ledger-worker",)),
)  # fmt: skip

ANSWERED = (
    ("Which status code does the partner API send back to a client over its quota?",
     0),
    ("What error code does the ledger-worker give up with if a second copy is already going?",
     2),
)  # fmt: skip


def test_a_code_asked_for_is_stated_in_its_own_shape(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = [
                str((await call(client, "store", {"content": t, "entities": list(e)}))["id"])
                for t, e in NOTES
            ]
            for question, answer in ANSWERED:
                doc = await call(client, "recall", {"query": question, "limit": 5})
                assert doc["nothing_relevant"] is False, (question, doc)
                assert ids[answer] in [r["id"] for r in doc["results"]], (question, doc)
            never = "Which status code does billing-api return for an expired card?"
            doc = await call(client, "recall", {"query": never})
            assert doc["nothing_relevant"] is True, doc

    anyio.run(main)


def test_a_fact_is_asked_for_by_a_wording_of_its_relation(tmp_path: Path) -> None:
    """ "Which programming language is the ledger worker built with?" shares no word with
    ``ledger worker | written in | Go`` but the name: the question names the fact's relation
    in another of its wordings, so the fact answers and is shown without the verdict (it was
    labelled none, with *nothing relevant*)."""

    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            fact = await call(
                client,
                "store",
                {"subject": "ledger worker", "predicate": "written in", "object": "Go"},
            )
            await call(
                client,
                "store",
                {"content": "The ledger worker runs nightly at 02:00 UTC.",
                 "entities": ["ledger worker"]},
            )  # fmt: skip
            asked = "Which programming language is the ledger worker built with?"
            doc = await call(client, "recall", {"query": asked, "limit": 5})
            assert doc["nothing_relevant"] is False, doc
            shown = {r["id"]: r for r in doc["results"]}
            assert str(fact["id"]) in shown, doc
            assert shown[str(fact["id"])]["relevance_label"] != "none", doc
            # What the fact does not state is still not asked of it.
            never = "Which on-call rotation pages for the ledger worker's failures?"
            doc = await call(client, "recall", {"query": never, "limit": 5})
            assert str(fact["id"]) not in {
                r["id"] for r in doc["results"] if r["relevance_label"] != "none"
            }, doc

    anyio.run(main)
