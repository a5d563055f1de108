"""One typed source for an answer and its schema: ``schemas.typed`` reads the OpenAPI schema
of an answer from the TypedDict the answer is built as (``read/request.RecallAnswer``, which
``RecallResult.as_dict`` returns and mypy checks), and one place for each argument's limits
(``rules/arguments.py``), which the MCP tools' schemas and the API's parameters show."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

import pytest

from ferrex.read.request import RecallAnswer, RecallResult
from ferrex.rules import arguments
from ferrex.server.dashboard.params import LIST_QUERY, REFLECT_QUERY, SEARCH_QUERY, TAGS_QUERY
from ferrex.server.dashboard.schemas import ANSWERS, typed
from ferrex.server.mcp_server import build_server, tool_inputs
from ferrex.times import Rfc3339
from tools.sdk_types import published


class _Part(TypedDict):
    count: int


class _Answer(TypedDict):
    name: str
    share: float
    seen: bool
    tags: list[str]
    counts: dict[str, int]
    kind: Literal["a", "b"]
    ended: str | None
    part: _Part
    note: NotRequired[str]


def test_a_typed_dict_gives_its_schema() -> None:
    schema = typed(_Answer, {"tags": {"type": "array", "items": {"$ref": "#/x"}}})
    assert schema["required"] == ["name", "share", "seen", "tags", "counts", "kind", "ended",
                                  "part"]  # fmt: skip
    assert schema["properties"] == {
        "name": {"type": "string"},
        "share": {"type": "number"},
        "seen": {"type": "boolean"},
        "tags": {"type": "array", "items": {"$ref": "#/x"}},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "kind": {"enum": ["a", "b"]},
        "ended": {"type": ["string", "null"]},
        "part": {"type": "object", "required": ["count"],
                 "properties": {"count": {"type": "integer"}}},
        "note": {"type": "string"},
    }  # fmt: skip


def test_a_type_with_no_schema_is_refused() -> None:
    class Odd(TypedDict):
        when: set[str]

    with pytest.raises(TypeError, match="no JSON Schema"):
        typed(Odd)


def test_the_recall_answer_schema_is_its_type() -> None:
    """A field the answer gains (in its TypedDict, which as_dict must then fill) is in the
    document; the optional ones are those the type says may be missing."""
    schema = ANSWERS["RecallAnswer"]
    assert list(schema["properties"]) == list(RecallAnswer.__annotations__)
    assert schema["required"] == ["query", "namespace", "results", "hidden",
                                  "unknown_entities", "reranker", "nothing_relevant"]  # fmt: skip
    assert schema["properties"]["truncated"]["required"] == ["max_tokens", "omitted"]
    answer = RecallResult("q", "default", [], {}, [], "none", nothing_relevant=True).as_dict()
    assert set(answer) <= set(schema["properties"])
    assert set(schema["required"]) <= set(answer)


def _property(tool: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = tool["properties"][name]
    return found


def test_the_tools_and_the_api_show_the_limits_written_once() -> None:
    document = published()
    schemas = document["components"]["schemas"]
    recall = schemas["RecallArguments"]
    assert _property(recall, "query")["maxLength"] == arguments.MAX_QUERY_CHARS
    assert _property(recall, "limit")["maximum"] == arguments.MAX_RECALL_LIMIT
    assert _property(recall, "entities")["maxItems"] == arguments.MAX_RECALL_ENTITIES
    assert _property(recall, "max_tokens")["minimum"] == arguments.MIN_MAX_TOKENS
    assert _property(recall, "max_tokens")["maximum"] == arguments.MAX_MAX_TOKENS
    assert _property(recall, "strategy")["enum"] == list(arguments.STRATEGIES)
    assert _property(schemas["ConfirmArguments"], "ids")["maxItems"] == arguments.MAX_CONFIRM_IDS
    tools = tool_inputs(build_server(_hub()))
    assert _property(tools["forget"].schema, "ids")["maxItems"] == arguments.MAX_FORGET_IDS
    reflect = tools["reflect"].schema
    assert _property(reflect, "limit")["maximum"] == arguments.MAX_REFLECT_LIMIT
    limits = {
        "search": (SEARCH_QUERY, arguments.MAX_RECALL_LIMIT),
        "list": (LIST_QUERY, arguments.PAGE_MAX),
        "tags": (TAGS_QUERY, arguments.TAGS_MAX),
        "reflect": (REFLECT_QUERY, arguments.MAX_REFLECT_LIMIT),
    }
    for route, (params, most) in limits.items():
        (limit,) = [p for p in params if p.name == "limit"]
        assert limit.schema["maximum"] == most, route
    (sort,) = [p for p in LIST_QUERY if p.name == "sort"]
    assert sort.schema["enum"] == list(arguments.SORTS)


def _hub() -> Any:
    from ferrex.server.caller import Caller
    from ferrex.server.hub import Hub

    def closed() -> Any:
        raise AssertionError("nothing is opened")

    return Hub(Path("/nonexistent/ferrex-home"), closed, Caller())


def _request(query: str) -> Any:
    from starlette.requests import Request

    return Request({"type": "http", "method": "GET", "path": "/api/v1/memories",
                    "query_string": query.encode(), "headers": []})  # fmt: skip


def test_a_query_is_decoded_by_its_routes_spec() -> None:
    from ferrex.errors import UsageError
    from ferrex.server.dashboard.params import query_args

    args = query_args(
        _request("types=episodic,%20semantic&types=procedural&tag=a&tag=b&limit=7&sort=&cursor=c"),
        LIST_QUERY,
    )
    assert args == {"cursor": "c", "limit": 7, "types": ["episodic", "semantic", "procedural"],
                    "tags": ["a", "b"]}  # fmt: skip
    # the tags route passes an empty key on, to be refused where it is read
    assert query_args(_request("key=&namespace=x"), TAGS_QUERY) == {"key": "", "namespace": "x"}
    assert query_args(_request("namespace="), REFLECT_QUERY) == {}
    with pytest.raises(UsageError, match=r"^limit must be a whole number, got ''$"):
        query_args(_request("limit="), REFLECT_QUERY)


def test_what_the_document_leaves_unsaid_is_named_and_cannot_go_stale() -> None:
    schema = typed(_Answer, {"ended": {"type": "string"}}, optional=("ended",),
                   hidden=("counts", "note"))  # fmt: skip
    assert "counts" not in schema["properties"] and "note" not in schema["properties"]
    assert schema["required"] == ["name", "share", "seen", "tags", "kind", "part"]
    assert list(schema["properties"])[-1] == "ended"
    assert schema["properties"]["ended"] == {"type": "string"}
    with pytest.raises(TypeError, match="_Answer has no field gone"):
        typed(_Answer, hidden=("gone",))
    with pytest.raises(TypeError, match="_Answer has no field gone"):
        typed(_Answer, {"gone": {}})


def test_the_forget_and_confirm_answers_are_their_types() -> None:
    from ferrex.core.decide.forget import ForgetResult, ValidateResult

    forget = ForgetResult(("mem_a",), ("mem_b",), (), 7, ("late",)).as_dict()
    assert forget == {"forgotten": ["mem_a"], "not_found": ["mem_b"], "dropped_entities": [],
                      "position": 7, "warnings": ["late"]}  # fmt: skip
    assert ValidateResult((), ("mem_b",), None).as_dict() == {
        "validated": [], "not_found": ["mem_b"], "position": None}  # fmt: skip
    assert ANSWERS["ForgetAnswer"]["required"] == ["forgotten", "not_found", "dropped_entities"]
    assert list(ANSWERS["ConfirmAnswer"]["properties"]) == [
        "validated", "not_found", "marked", "position"]  # fmt: skip


def test_the_store_answer_schema_is_its_type() -> None:
    from ferrex.core.decide.store import StoreAnswer

    schema = ANSWERS["StoreAnswer"]
    assert schema["required"] == ["status", "id"]
    assert set(schema["properties"]) < set(StoreAnswer.__annotations__)
    batch_item = ANSWERS["StoreBatchItem"]["properties"]
    assert list(batch_item) == ["index", *schema["properties"], "error"]


class _Timed(TypedDict):
    at: Rfc3339
    seen: Rfc3339 | None
    doc: dict[str, Any]
    extra: NotRequired[int]


def test_times_documents_and_conditions_have_their_schemas() -> None:
    schema = typed(_Timed, required=("extra",), description="When.")
    assert schema == {
        "type": "object", "description": "When.", "required": ["at", "seen", "doc", "extra"],
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "seen": {"type": ["string", "null"], "format": "date-time"},
            "doc": {"type": "object"},
            "extra": {"type": "integer"},
        },
    }  # fmt: skip


def test_the_stats_and_reflect_schemas_are_their_types() -> None:
    from ferrex.read.insight import ReflectAnswer, StatsAnswer

    stats = ANSWERS["Stats"]
    assert list(stats["properties"]) == list(StatsAnswer.__annotations__)
    assert stats["required"] == ["namespace", "total", "recent", "needs_attention", "expiring",
                                 "by_type"]  # fmt: skip
    reflect = ANSWERS["Reflect"]
    assert list(reflect["properties"]) == list(ReflectAnswer.__annotations__)
    assert reflect["required"] == list(ReflectAnswer.__annotations__)
    candidate = reflect["properties"]["forget_candidates"]["items"]
    assert candidate["properties"]["last_accessed"]["format"] == "date-time"
    assert "eviction" not in candidate["required"]


def test_the_recall_hit_schema_is_its_type() -> None:
    from ferrex.read.request import RecallHit

    hit = ANSWERS["RecallHit"]
    assert hit["required"] == ["id", "type", "score", "entities", "event_time"]
    named = [k for k in RecallHit.__annotations__ if k in hit["properties"]]
    assert list(hit["properties"]) == named
    assert hit["properties"]["event_time"] == {"type": "string", "format": "date-time"}
    assert "invalidated_at" not in hit["properties"]
