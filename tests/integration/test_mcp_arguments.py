"""Tool arguments are taken exactly as sent: unknown names and coercible strings are refused.

The server runs in-process (the SDK's in-memory client) over a real data directory; every
refused call must leave the journal where it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.errors import UsageError
from ferrex.models import Embedder
from ferrex.server.hub import Hub
from ferrex.server.mcp_server import FerrexMCP, build_server
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder
) -> Iterator[tuple[FerrexMCP, App]]:
    home = tmp_path_factory.mktemp("exact") / "home"
    app = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    hub = Hub(home, lambda: app, Caller(), flush_every=None)
    yield build_server(hub), app
    hub.close()


def _call(server: FerrexMCP, tool: str, args: dict[str, Any]) -> CallToolResult:
    async def one() -> CallToolResult:
        with anyio.fail_after(120):
            async with Client(server) as client:
                result = await client.call_tool(tool, args)
                assert isinstance(result, CallToolResult)
                return result

    return anyio.run(one)


def _refused(server: FerrexMCP, app: App, tool: str, args: dict[str, Any]) -> str:
    before = app.journal().refresh().position if app.journal_dir.exists() else 0
    result = _call(server, tool, args)
    assert result.is_error, result.structured_content
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "invalid_input"
    after = app.journal().refresh().position if app.journal_dir.exists() else 0
    assert after == before, "a refused call wrote to the journal"
    return result.content[0].text  # type: ignore[union-attr]


def test_an_unknown_argument_is_named_with_the_nearest_valid_one(
    served: tuple[FerrexMCP, App],
) -> None:
    server, app = served
    text = _refused(server, app, "store", {"contnet": "The build cache lives on cache-01"})
    assert "'contnet'" in text and "did you mean content?" in text
    text = _refused(server, app, "recall", {"query": "cache", "limitt": 3})
    assert "'limitt'" in text and "did you mean limit?" in text
    text = _refused(server, app, "stats", {"zzzz": True})
    assert "'zzzz'" in text and "did you mean" not in text


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("stats", {"detailed": "true"}, "detailed"),
        ("recall", {"query": "cache", "limit": "5"}, "limit"),
        ("recall", {"query": "cache", "include_stale": 1}, "include_stale"),
        ("store", {"content": "A note about cache-01", "confidence": "0.5"}, "confidence"),
        ("store", {"content": "A note about cache-01", "entities": '["cache-01"]'}, "entities"),
        ("reflect", {"limit": 2.0}, "limit"),
    ],
)
def test_no_value_is_coerced(
    served: tuple[FerrexMCP, App], tool: str, args: dict[str, Any], field: str
) -> None:
    server, app = served
    text = _refused(server, app, tool, args)
    assert field in text


def test_null_as_text_is_kept_as_text(served: tuple[FerrexMCP, App]) -> None:
    """The SDK would parse "null" sent for an optional field as JSON null; we keep the text."""
    server, app = served
    result = _call(server, "store", {"subject": "null", "predicate": "means", "object": "nothing"})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    memory = app.projections().read_model.get(result.structured_content["id"])
    assert memory is not None and memory.subject == "null"


def test_context_is_in_the_store_schema_and_kept(served: tuple[FerrexMCP, App]) -> None:
    server, app = served
    tools = {t.name: t for t in anyio.run(server.list_tools)}
    schema = tools["store"].input_schema
    assert "context" in schema["properties"]
    assert schema.get("additionalProperties") is False
    result = _call(server, "store", {"content": "INC-4417: the nightly export timed out",
                                     "context": {"ticket": "INC-4417"}})  # fmt: skip
    assert not result.is_error, result.content
    assert result.structured_content is not None
    memory = app.projections().read_model.get(result.structured_content["id"])
    assert memory is not None and memory.context == {"ticket": "INC-4417"}


def test_a_call_from_another_process_is_checked_as_exactly(
    served: tuple[FerrexMCP, App],
) -> None:
    """Calls that arrive over the hub's socket skip the MCP schema; the service checks again."""
    _, app = served
    service = Service(app)
    with pytest.raises(UsageError) as unknown:
        service.call(decode("store", {"contnet": "The build cache lives on cache-01"}), Caller())
    assert "'contnet'" in unknown.value.message and "did you mean content?" in unknown.value.message
    with pytest.raises(UsageError) as flag:
        service.call(decode("stats", {"detailed": "true"}), Caller())
    assert "detailed must be true or false, got text" in flag.value.message
    with pytest.raises(UsageError) as number:
        service.call(decode("reflect", {"limit": "5"}), Caller())
    assert "limit must be a whole number, got text" in number.value.message
