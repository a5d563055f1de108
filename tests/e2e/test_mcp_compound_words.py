"""Hyphenated words are not all names, over MCP stdio with the bundled model (issue 44, "Hide
only what cannot be the answer").

A question that says "help-desk", "sign-in" or "on-call" in plain English is answered by a
note that never writes the word, or writes it as two words or as one: the right note is
shown without *nothing relevant*. A hyphenated word built like the store's names
(``*-gateway``, ``*-svc``) is still a name: a question about a gateway the store has never
heard of still gets the verdict, and so does a question asking a stored service for what no
note states ("response-time objective"), whose words a note may share one at a time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, stdio_client

NOTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("auth-gateway caps logins at 12 attempts per client IP per minute; an account is locked "
     "for 20 minutes after that.", ("auth-gateway",)),
    ("support-gateway lets agents grant a goodwill refund of at most EUR 40 per ticket; "
     "more needs a finance approver.", ("support-gateway", "Zendesk")),
    ("Payments oncall rotation hands over every Monday at 10:00 CET.", ("payments-api",)),
    ("The help desk team answers tickets from 08:00 to 20:00 CET on weekdays.", ()),
    ("cart-svc keeps a customer's cart for 30 days; the price shown at add time is kept.",
     ("cart-svc",)),
    ("checkout-engine calls cart-svc over gRPC with a 300ms deadline.",
     ("checkout-engine", "cart-svc")),
    ("metrics-gateway keeps raw samples for 30 days in the Thanos bucket.",
     ("metrics-gateway",)),
)  # fmt: skip

ANSWERED = (
    ("How many sign-in tries per minute may a single IP make?", 0),
    ("What is the largest goodwill refund a help-desk agent can give on one ticket?", 1),
    ("When does the payments on-call hand over?", 2),
    ("What hours is the help-desk staffed?", 3),
)
"""Questions in words of their own, with the note that answers them (by its index)."""

NEVER_STORED = (
    "What upload rate limit does the media-gateway apply?",
    "What is the response-time objective of cart-svc?",
)
"""A gateway never stored, and what no note states of a stored service: *nothing relevant*."""


async def _store(client: Client) -> list[str]:
    ids: list[str] = []
    for text, entities in NOTES:
        args: dict[str, Any] = {"content": text}
        if entities:
            args["entities"] = list(entities)
        ids.append(str((await call(client, "store", args))["id"]))
    return ids


def test_hyphenated_plain_words_do_not_hide_the_answer(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            ids = await _store(client)
            for question, answer in ANSWERED:
                doc = await call(client, "recall", {"query": question, "limit": 5})
                assert doc["nothing_relevant"] is False, (question, doc)
                shown = [r["id"] for r in doc["results"]]
                assert ids[answer] in shown, (question, doc)

    anyio.run(main)


def test_names_built_like_the_stores_still_get_the_verdict(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(tmp_path / "home") as client:
            await _store(client)
            for question in NEVER_STORED:
                doc = await call(client, "recall", {"query": question})
                assert doc["nothing_relevant"] is True, (question, doc)

    anyio.run(main)
