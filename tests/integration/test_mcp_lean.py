"""Lean answers: schema and answer sizes as ceilings (deterministic), max_tokens, resources.

The server runs in-process (the SDK's in-memory client) over a real data directory and the
bundled model, whose tokenizer counts the tokens (``tools/bench_tokens.py`` reports them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.errors import FerrexError
from ferrex.ids import ID_IN_TEXT
from ferrex.models import Embedder
from ferrex.rules.arguments import MIN_MAX_TOKENS
from ferrex.rules.relevance import HIDDEN_BELOW, NEAREST_WHEN_NOTHING, SHOWN_AT_LEAST
from ferrex.server.hub import Hub
from ferrex.server.mcp_server import FerrexMCP, build_server
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode
from tools.bench_tokens import MEMORIES, RECALL

TOOLS_CHARS = 6000
# 2500 until confirm took differs_from and supersedes (an agent settles a possible conflict,
# about 50 tokens) and store's visibility said its default (store.default_visibility, 9).
TOOLS_TOKENS = 2575
RECALL_CHARS = 2000
RECALL_TOKENS = 600
UNRELATED = "What is the Wi-Fi password in the Berlin office?"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder
) -> Iterator[tuple[FerrexMCP, App]]:
    home = tmp_path_factory.mktemp("lean") / "home"
    app = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    hub = Hub(home, lambda: app, Caller(), flush_every=None)
    for memory in MEMORIES:
        hub.call(decode("store", memory))
    yield build_server(hub), app
    hub.close()


def _run(server: FerrexMCP, work: Any) -> Any:
    async def one() -> Any:
        with anyio.fail_after(120):
            async with Client(server) as client:
                return await work(client)

    return anyio.run(one)


def _tokens(app: App, text: str) -> int:
    count = app.embedder().model().count_tokens(text)
    assert count is not None
    return count


def test_tools_list_stays_under_its_ceiling(served: tuple[FerrexMCP, App]) -> None:
    server, app = served

    async def work(client: Client) -> list[dict[str, Any]]:
        return [
            t.model_dump(mode="json", by_alias=True, exclude_none=True)
            for t in (await client.list_tools()).tools
        ]

    tools = _run(server, work)
    text = json.dumps(tools, separators=(",", ":"), ensure_ascii=False)
    assert len(text) <= TOOLS_CHARS, len(text)
    assert _tokens(app, text) <= TOOLS_TOKENS
    assert "anyOf" not in text and '"title"' not in text
    for tool in tools:
        for prop in tool["inputSchema"]["properties"].values():
            assert "title" not in prop and prop.get("default", 0) is not None


def _recall(server: FerrexMCP, args: dict[str, Any]) -> CallToolResult:
    async def work(client: Client) -> CallToolResult:
        result = await client.call_tool("recall", args)
        assert isinstance(result, CallToolResult)
        return result

    result: CallToolResult = _run(server, work)
    assert not result.is_error, result.content
    return result


def test_a_recall_is_one_line_per_memory_under_its_ceiling(
    served: tuple[FerrexMCP, App],
) -> None:
    server, app = served
    # min_relevance 0: the full five (a default recall leaves out the irrelevant ones)
    result = _recall(server, {**RECALL, "min_relevance": 0})
    text = result.content[0].text  # type: ignore[union-attr]
    doc = result.structured_content
    assert doc is not None and len(doc["results"]) == 5
    lines = text.splitlines()
    assert len(lines) == 1 + len(doc["results"])
    for line, item in zip(lines[1:], doc["results"], strict=True):
        assert line.startswith(f"{item['id']} {item['type']} ")
    # the structured content stays complete
    assert {"age_days", "staleness", "label", "access_count"} <= set(doc["results"][0]["freshness"])
    assert "fresh" not in text  # a default says nothing
    assert len(text) <= RECALL_CHARS and _tokens(app, text) <= RECALL_TOKENS


def test_max_tokens_cuts_the_worst_results_and_says_so(served: tuple[FerrexMCP, App]) -> None:
    server, app = served
    full = _recall(server, {**RECALL, "limit": 8, "min_relevance": 0}).structured_content
    assert full is not None and "truncated" not in full
    cut = _recall(server, {**RECALL, "limit": 8, "max_tokens": 120, "min_relevance": 0})
    doc = cut.structured_content
    text = cut.content[0].text  # type: ignore[union-attr]
    assert doc is not None and doc["truncated"]["max_tokens"] == 120
    kept = [r["id"] for r in doc["results"]]
    assert kept == [r["id"] for r in full["results"]][: len(kept)]  # best first
    assert doc["truncated"]["omitted"] == len(full["results"]) - len(kept) > 0
    assert _tokens(app, text) <= 120 and "cut to fit max_tokens=120" in text


def test_one_result_longer_than_max_tokens_is_kept_and_nothing_is_said_cut(
    served: tuple[FerrexMCP, App],
) -> None:
    server, app = served
    asked = {**RECALL, "limit": 1, "min_relevance": 0, "max_tokens": MIN_MAX_TOKENS}
    result = _recall(server, asked)
    doc = result.structured_content
    assert doc is not None and len(doc["results"]) == 1
    assert _tokens(app, result.content[0].text) > MIN_MAX_TOKENS  # type: ignore[union-attr]
    assert "truncated" not in doc  # it said "0 more cut" before


def test_what_max_tokens_cuts_does_not_depend_on_the_random_ids(
    served: tuple[FerrexMCP, App],
) -> None:
    server, app = served
    full = _recall(server, {**RECALL, "limit": 8, "min_relevance": 0}).structured_content
    assert full is not None and len(full["results"]) == 8
    raw = json.dumps(full)
    ids = sorted(set(ID_IN_TEXT.findall(raw)))

    def renamed(letters: str) -> Any:  # the same answer, its ids of other random letters
        text = raw
        for n, old in enumerate(ids):
            text = text.replace(old, f"{old[:4]}{n:02d}{letters}")
        return json.loads(text)

    # In the model's tokenizer an id of one letter repeated is few tokens, this one many.
    short, long = renamed("0" * 24), renamed("Q7XK9WZ3" * 3)
    counts = app.embedder().model().count_tokens
    assert counts(json.dumps(long)) > counts(json.dumps(short)) + 8 * 5  # type: ignore[operator]
    service = Service(app)
    for max_tokens in range(MIN_MAX_TOKENS, 600, 10):
        kept = [len(service._fit(doc, max_tokens)["results"]) for doc in (short, long)]
        assert kept[0] == kept[1], max_tokens


def test_a_default_recall_leaves_out_the_irrelevant_and_says_how_to_see_them(
    served: tuple[FerrexMCP, App],
) -> None:
    server, _ = served
    # An answerable question: past the first three, only what is surely no answer goes
    # (relevance.trim); the rows labelled none above that line are shown (issue 44).
    full = _recall(server, {**RECALL, "min_relevance": 0}).structured_content
    trimmed = _recall(server, RECALL).structured_content
    assert full is not None and trimmed is not None
    assert [r["id"] for r in trimmed["results"]] == [
        r["id"]
        for i, r in enumerate(full["results"])
        if i < SHOWN_AT_LEAST or r["relevance"] >= HIDDEN_BELOW
    ]
    # A question nothing stored answers: the nearest two, the rest left out and counted.
    asked = {"query": UNRELATED}
    full = _recall(server, {**asked, "min_relevance": 0}).structured_content
    result = _recall(server, asked)
    doc, text = result.structured_content, result.content[0].text  # type: ignore[union-attr]
    assert full is not None and doc is not None and doc["nothing_relevant"]
    shown = [
        r["id"]
        for i, r in enumerate(full["results"])
        if i < NEAREST_WHEN_NOTHING or r["relevance"] >= HIDDEN_BELOW
    ]
    assert [r["id"] for r in doc["results"]] == shown
    left_out = len(full["results"]) - len(shown)
    assert left_out > 0 and doc["hidden"]["irrelevant"] == left_out
    assert f"{left_out} irrelevant left out (min_relevance: 0 shows them)" in text.splitlines()[0]
    assert len(text) < len(_recall(server, {**asked, "min_relevance": 0}).content[0].text)  # type: ignore[union-attr]


def test_max_tokens_is_checked(served: tuple[FerrexMCP, App]) -> None:
    _, app = served
    service = Service(app)
    with pytest.raises(FerrexError) as refused:
        service.call(decode("recall", {"query": "backup", "max_tokens": 10}), Caller())
    assert refused.value.code == "invalid_input"


def test_resources_and_prompts_read_through_the_client(served: tuple[FerrexMCP, App]) -> None:
    server, _ = served

    async def work(client: Client) -> dict[str, Any]:
        found = await client.call_tool("recall", {"query": "api-server tokio"})
        assert isinstance(found, CallToolResult) and found.structured_content
        fact = next(r for r in found.structured_content["results"] if r["type"] == "semantic")
        await client.call_tool(
            "store", {"subject": "api-server", "predicate": "uses", "object": "tokio 1.40"}
        )
        memory = await client.read_resource(f"ferrex://memory/{fact['id']}")
        entity = await client.read_resource("ferrex://entity/priya")
        stats = await client.read_resource("ferrex://stats")
        prompt = await client.get_prompt("memory-review")
        return {
            "memory": json.loads(memory.contents[0].text),  # type: ignore[union-attr]
            "entity": json.loads(entity.contents[0].text),  # type: ignore[union-attr]
            "stats": json.loads(stats.contents[0].text),  # type: ignore[union-attr]
            "prompt": prompt.messages[0].content.text,  # type: ignore[union-attr]
            "fact": fact,
        }

    got = _run(server, work)
    history = got["memory"]["history"]
    assert history[0]["id"] == got["fact"]["id"] and len(history) >= 2
    assert history[0]["t_invalid"] is not None and history[-1]["t_invalid"] is None
    assert got["entity"]["name"] == "Priya" and len(got["entity"]["memories"]) == 2
    assert got["stats"]["total"] >= len(MEMORIES)
    assert "confirm" in got["prompt"]


def test_an_invisible_memory_reads_like_a_missing_one(served: tuple[FerrexMCP, App]) -> None:
    _, app = served
    service = Service(app)
    alice, bob = Caller(agent_id="alice"), Caller(agent_id="bob")
    secret = service.call(
        decode(
            "store",
            {"content": "Alice's private note on the Zorblax rollout", "entities": ["Zorblax"]},
        ),
        alice,
    )["id"]
    assert service.resource(f"ferrex://memory/{secret}", alice)["id"] == secret
    assert service.resource("ferrex://entity/zorblax", alice)["name"] == "Zorblax"
    answers = []
    for uri in (f"ferrex://memory/{secret}", "ferrex://memory/mem_00000000000000000000000000"):
        with pytest.raises(FerrexError) as missing:
            service.resource(uri, bob)
        answers.append((missing.value.code, missing.value.message.replace(uri[16:], "ID")))
    assert answers[0] == answers[1] == ("not_found", "no memory 'ID'")
    with pytest.raises(FerrexError) as unknown:
        service.resource("ferrex://entity/zorblax", bob)
    assert unknown.value.code == "not_found"
    assert secret not in json.dumps(service.resource("ferrex://recent", bob))
