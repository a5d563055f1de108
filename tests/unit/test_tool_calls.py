"""The typed requests (ferrex.server.tool_calls): what crosses the hub's wire comes back as it
left, the agent's argument types hold exactly what the MCP tools declare (so a field only
ferrex sets cannot come from an agent), and the JSON decoder refuses a wrong shape by name."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from ferrex.errors import UsageError
from ferrex.server.caller import Caller
from ferrex.server.hub import Hub
from ferrex.server.mcp_server import build_server, tool_inputs
from ferrex.server.tool_calls import (
    Confirm,
    Consolidate,
    DashboardRead,
    EntityCommand,
    Forget,
    ReadResource,
    Recall,
    RecallArgs,
    Reflect,
    Stats,
    Store,
    StoreArgs,
    ToolRequest,
    decode,
    encode,
)

WIRE: list[ToolRequest] = [
    Store(
        args=StoreArgs(
            content="The nightly export runs at 02:00",
            entities=("export",),
            pinned=True,
            ttl="2h",
            context={"ticket": "INC-1"},
            multi_valued=True,
        ),
        request_key="request abc",
    ),
    Store(
        args=StoreArgs(subject="billing", predicate="owned by", object="payments"),
        import_key="transcript:s1:4",
    ),
    Recall(
        args=RecallArgs(
            query="who owns billing",
            limit=3,
            types=("semantic",),
            max_tokens=400,
            strategy="recent",
            min_relevance=0.0,
        ),
        count_access=False,
        validate_ids=("m1", "m2"),
    ),
    Recall(args=RecallArgs(query="export")),
    Confirm(ids=("m1",), pinned=False, importance=0.9, differs_from=("m2", "m3")),
    Forget(ids=("m1", "m2"), cascade=True),
    Reflect(limit=20, namespace="ops"),
    Stats(detailed=True),
    ReadResource(uri="ferrex://memory/m1"),
    DashboardRead(query={"view": "memories", "limit": 5}),
    EntityCommand(action="merge", first="k8s", second="kubernetes", namespace="ops"),
    Consolidate(older_than_days=30.0, namespace="ops", dry_run=True, max_groups=8),
    Consolidate(undo="m9"),
    Consolidate(undo_all=True, limit=16),
    Consolidate(list=True, summary_id="m9"),
]


@pytest.mark.parametrize("request_", WIRE, ids=lambda r: r.tool)
def test_a_request_crosses_the_wire_unchanged(request_: ToolRequest) -> None:
    assert decode(request_.tool, encode(request_)) == request_


def test_the_agent_arguments_are_the_tools_declared_arguments() -> None:
    """StoreArgs and RecallArgs hold what the MCP tools declare, nothing more or less: the
    fields only ferrex sets (request_key, import_key, count_access, validate_ids) live on the
    call beside them, where no agent argument reaches."""
    tools = tool_inputs(build_server(Hub(Path("/nonexistent/ferrex"), _closed, Caller())))
    for name, agent in (("store", StoreArgs), ("recall", RecallArgs)):
        assert set(tools[name].schema["properties"]) == {f.name for f in fields(agent)}, name
    for name, call in (("confirm", Confirm), ("forget", Forget), ("reflect", Reflect),
                       ("stats", Stats)):  # fmt: skip
        assert set(tools[name].schema["properties"]) == {f.name for f in fields(call)}, name
    for internal in ("request_key", "import_key"):
        with pytest.raises(UsageError, match=f"unknown argument '{internal}'"):
            tools["store"].decode({"content": "x", internal: "request abc"})
    for internal in ("count_access", "validate_ids"):
        with pytest.raises(UsageError, match=f"unknown argument '{internal}'"):
            tools["recall"].decode({"query": "x", internal: False})


def test_the_http_decoder_builds_what_the_tool_builds() -> None:
    tools = tool_inputs(build_server(Hub(Path("/nonexistent/ferrex"), _closed, Caller())))
    store = tools["store"].decode({"content": "Deploys freeze on Fridays", "entities": ["ci"]})
    assert store == Store(args=StoreArgs(content="Deploys freeze on Fridays", entities=("ci",),
                                         multi_valued=False, split_long=False, confidence=1.0,
                                         importance=0.5, pinned=False))  # fmt: skip
    confirm = tools["confirm"].decode({"ids": ["m1"], "differs_from": "m2"})
    assert confirm == Confirm(ids=("m1",), differs_from=("m2",))


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("nope", {}, "unknown tool 'nope'"),
        ("stats", ["detailed"], "tool arguments must be a JSON object"),
        ("store", {"contnet": "x"}, "unknown argument 'contnet' for store (did you mean content?)"),
        ("store", {"content": "x", "pinned": "true"}, "pinned must be true or false, got text"),
        ("store", {"entities": "tokio"}, "entities must be a list of strings"),
        ("store", {"content": "x", "request_key": "abc"}, "request_key must start with 'request '"),
        ("store", {"content": "x", "import_key": "request abc"}, "import_key must be a string"),
        ("recall", {"limit": 3}, "query is required"),
        ("recall", {"query": "x", "types": [1]}, "every item of types must be a string"),
        ("recall", {"query": "x", "max_tokens": 1.5}, "max_tokens must be a whole number"),
        ("recall", {"query": "x", "as_of": 5}, "as_of must be text"),
        ("confirm", {"ids": "m1"}, "ids must be a list of strings"),
        ("forget", {"ids": ["m1"], "cascade": 1}, "cascade must be true or false, got a number"),
        ("reflect", {"limit": "5"}, "limit must be a whole number, got text"),
        ("resource", {"uri": 5}, "a resource URI starts with ferrex://"),
        ("entity", {"action": "merge", "first": "a"}, "an entity action takes two names"),
        ("consolidate", {"undo": 5}, "undo takes a summary's memory id"),
        ("consolidate", {"older_than_days": True}, "give the age of what to fold, in days"),
    ],
)
def test_a_wrong_shape_is_refused_by_name(tool: str, args: Any, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        decode(tool, args)
    assert refused.value.code == "invalid_input"
    assert message in refused.value.message


def test_null_is_not_given() -> None:
    assert decode("stats", {"detailed": None, "namespace": None}) == Stats()
    assert decode("store", {"content": "x", "pinned": None}) == Store(args=StoreArgs(content="x"))


def _closed() -> Any:
    raise AssertionError("building the tools opens nothing")
