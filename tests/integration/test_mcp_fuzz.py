"""Fuzz the MCP tools' inputs: every call ends in a valid answer or a tool error with a code.

The server runs in-process (the SDK's in-memory client) over a real data directory, the real
model and Qdrant Edge; arguments come from the tools' own schemas, bent out of shape: wrong
types, huge and control-character strings, unicode, negative and enormous numbers, unknown
fields. A rejected call must leave the journal exactly where it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp_types import CallToolResult

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.server.hub import Hub
from ferrex.server.mcp_server import FerrexMCP, build_server
from ferrex.server.service import Caller
from ferrex.server.tool_calls import decode

KNOWN_CODES = {"invalid_input", "duplicate", "conflict_ambiguous", "not_found", "refused"}

weird_text = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.text(alphabet=st.sampled_from("\x00\x07\x1b\r\n\t\u200b\u202e\ufeff é漢🙂"), max_size=20),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=8), st.integers(1000, 40_000)),
)
plain_text = st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), min_size=1,
                     max_size=60)  # fmt: skip
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-5, 200),
    st.floats(allow_nan=True, allow_infinity=True),
)
anything: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | numbers | weird_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=10,
)  # fmt: skip


@st.composite
def _arguments(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that fit the schema, or fit but for one field, or anything at all."""
    props: dict[str, Any] = schema["properties"]
    required = set(schema.get("required", []))
    names = sorted(props)
    chosen = draw(st.sets(st.sampled_from(names), max_size=4)) | required
    if "content" in props and draw(st.booleans()):  # a store with something to remember
        chosen.add("content")
    args = {name: draw(_fitting(props[name])) for name in sorted(chosen)}
    mode = draw(st.sampled_from(["fit", "fit", "bent", "wild"]))
    if mode == "bent":
        args[draw(st.sampled_from(names))] = draw(anything)
    elif mode == "wild":
        args = draw(st.dictionaries(st.sampled_from([*names, "extra", ""]), anything,
                                    max_size=5))  # fmt: skip
    return args


def _fitting(prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    options = prop.get("anyOf", [prop])
    found: list[st.SearchStrategy[Any]] = []
    for option in options:
        kind = option.get("type")
        if kind == "string":
            found.append(st.sampled_from(option["enum"]) if "enum" in option
                         else st.one_of(plain_text, weird_text))  # fmt: skip
        elif kind == "integer":
            found.append(st.integers(option.get("minimum", -10), option.get("maximum", 10**6)))
        elif kind == "number":
            found.append(st.floats(option.get("minimum", 0.0), option.get("maximum", 1.0)))
        elif kind == "boolean":
            found.append(st.booleans())
        elif kind == "array":
            item = _fitting(option["items"])
            found.append(st.lists(item, max_size=4))
        elif kind == "null":
            found.append(st.none())
    return st.one_of(found) if found else anything


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder
) -> Iterator[tuple[FerrexMCP, App, dict[str, dict[str, Any]]]]:
    home = tmp_path_factory.mktemp("fuzz") / "home"
    app = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    hub = Hub(home, lambda: app, Caller(agent_id="fuzzer"), flush_every=None)
    server = build_server(hub)

    async def schemas() -> dict[str, dict[str, Any]]:
        return {t.name: t.input_schema for t in await server.list_tools()}

    tools = anyio.run(schemas)
    hub.call(decode("store", {"content": "Seed memory: the fuzz target stores the build cache on "
                       "disk cache-01"}))  # fmt: skip
    yield server, app, tools
    hub.close()


def _position(app: App) -> int:
    return app.journal().refresh().position


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])  # fmt: skip
@given(data=st.data())
def test_any_input_gets_an_answer_or_a_coded_tool_error(
    served: tuple[FerrexMCP, App, dict[str, dict[str, Any]]], data: st.DataObject
) -> None:
    server, app, tools = served
    tool = data.draw(st.sampled_from(sorted(tools)))
    args = data.draw(_arguments(tools[tool]))
    before = _position(app)

    async def one() -> CallToolResult:
        with anyio.fail_after(120):  # a hung server fails the test
            async with Client(server) as client:
                result = await client.call_tool(tool, args)
                assert isinstance(result, CallToolResult)
                return result

    result = anyio.run(one)
    if result.is_error:
        assert result.structured_content is not None, result.content
        code = result.structured_content["error"]["code"]
        assert code in KNOWN_CODES, (tool, args, result.content)
        assert _position(app) == before, f"a rejected {tool} call wrote to the journal"
    else:
        assert isinstance(result.structured_content, dict)
        json.dumps(result.structured_content)  # a valid JSON document


def test_fuzz_setup_is_real(served: tuple[FerrexMCP, App, dict[str, dict[str, Any]]]) -> None:
    """The fuzzed server stores into a real journal under a real data directory."""
    _, app, tools = served
    assert sorted(tools) == ["confirm", "forget", "recall", "reflect", "stats", "store"]
    assert _position(app) >= 1 and Path(app.journal_dir).is_dir()
