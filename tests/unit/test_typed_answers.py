"""One typed source for an answer and its schema: ``schemas.typed`` reads the OpenAPI schema
of an answer from the TypedDict the answer is built as (``read/request.RecallAnswer``, which
``RecallResult.as_dict`` returns and mypy checks), and one place for each argument's limits
(``rules/arguments.py``), which the MCP tools' schemas and the API's parameters show."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, get_origin, get_type_hints

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


def test_the_search_forms_numbers_are_read_as_the_routes_are() -> None:
    from ferrex.errors import UsageError
    from ferrex.server.dashboard.web import recall_request

    args = recall_request({"q": "x", "limit": "3", "min_relevance": "0.5"}).args
    assert (args.limit, args.min_relevance) == (3, 0.5)
    with pytest.raises(UsageError, match=r"^min_relevance must be a number, got 'high'$"):
        recall_request({"q": "x", "min_relevance": "high"})
    with pytest.raises(UsageError, match=r"^limit must be a whole number, got '2.5'$"):
        recall_request({"q": "x", "limit": "2.5"})


class _Loose(TypedDict):
    kind: str | None
    ended: Rfc3339 | None
    where: dict[str, Any] | None
    note: NotRequired[str]


def test_a_closer_schema_or_a_description_keeps_the_types_null_and_cannot_go_stale() -> None:
    schema = typed(_Loose, {"kind": {"enum": ["a", "b"]}, "where": {"$ref": "#/x"}},
                   about={"note": "Shown when set.", "ended": "When it ended."})  # fmt: skip
    assert schema["required"] == ["kind", "ended", "where"]
    assert schema["properties"] == {
        "kind": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},
        "ended": {"type": ["string", "null"], "format": "date-time",
                  "description": "When it ended."},
        "where": {"anyOf": [{"$ref": "#/x"}, {"type": "null"}]},
        "note": {"type": "string", "description": "Shown when set."},
    }  # fmt: skip
    with pytest.raises(TypeError, match="_Loose has no field gone"):
        typed(_Loose, about={"gone": "x"})
    with pytest.raises(TypeError, match="_Loose has no field gone"):
        typed(_Loose, {"gone": {}})


def _names(schema: dict[str, Any], kind: type) -> None:
    """``schema`` names every field of ``kind``, requiring exactly its required ones."""
    hints = get_type_hints(kind, include_extras=True)
    assert set(schema["properties"]) == set(hints)
    assert schema["required"] == [n for n, h in hints.items() if get_origin(h) is not NotRequired]


def test_the_forget_and_confirm_answers_are_their_types() -> None:
    from ferrex.core.decide.forget import ConfirmAnswer, ForgetAnswer, ForgetResult, ValidateResult

    forget = ForgetResult(("mem_a",), ("mem_b",), (), 7, ("late",)).as_dict()
    assert forget == {"forgotten": ["mem_a"], "not_found": ["mem_b"], "dropped_entities": [],
                      "position": 7, "warnings": ["late"]}  # fmt: skip
    assert ValidateResult((), ("mem_b",), None).as_dict() == {
        "validated": [], "not_found": ["mem_b"], "position": None}  # fmt: skip
    _names(ANSWERS["ForgetAnswer"], ForgetAnswer)
    _names(ANSWERS["ConfirmAnswer"], ConfirmAnswer)
    for name in ("ForgetAnswer", "ConfirmAnswer"):  # null: nothing was written
        assert ANSWERS[name]["properties"]["position"]["type"] == ["integer", "null"]


def test_the_store_answer_schema_is_its_type() -> None:
    from ferrex.core.decide.store import StoreAnswer

    schema = ANSWERS["StoreAnswer"]
    _names(schema, StoreAnswer)
    assert schema["required"] == ["status", "id"]
    batch_item = ANSWERS["StoreBatchItem"]["properties"]
    assert list(batch_item) == ["index", *schema["properties"], "error"]
    redacted = schema["properties"]["redacted"]["items"]
    assert redacted["required"] == ["field", "kind", "at"]


class _Timed(TypedDict):
    at: Rfc3339
    seen: Rfc3339 | None
    doc: dict[str, Any]
    extra: NotRequired[int]


def test_times_documents_and_conditions_have_their_schemas() -> None:
    schema = typed(_Timed, description="When.")
    assert schema == {
        "type": "object", "description": "When.", "required": ["at", "seen", "doc"],
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "seen": {"type": ["string", "null"], "format": "date-time"},
            "doc": {"type": "object"},
            "extra": {"type": "integer"},
        },
    }  # fmt: skip


def test_the_stats_and_reflect_schemas_are_their_types() -> None:
    from ferrex.read.insight import DormantEntity, ForgetCandidate, ReflectAnswer, StatsAnswer

    stats = ANSWERS["Stats"]
    _names(stats, StatsAnswer)
    # the MCP tool's brief stats have no by_type; the HTTP API always asks detailed ones
    assert "by_type" not in stats["required"]
    reflect = ANSWERS["Reflect"]
    _names(reflect, ReflectAnswer)
    for answer in (stats, reflect):  # null: the operator's, with no namespace given
        assert answer["properties"]["namespace"]["type"] == ["string", "null"]
    candidate = reflect["properties"]["forget_candidates"]["items"]
    _names(candidate, ForgetCandidate)
    assert candidate["properties"]["last_accessed"]["format"] == "date-time"
    assert {"type": "null"} in candidate["properties"]["eviction"]["anyOf"]
    _names(reflect["properties"]["dormant_entities"]["items"], DormantEntity)


def test_the_recall_hit_schema_is_its_type() -> None:
    from ferrex.read.request import RecallHit

    hit = ANSWERS["RecallHit"]
    _names(hit, RecallHit)
    assert hit["required"] == ["id", "type", "score", "entities", "event_time", "freshness"]
    assert hit["properties"]["event_time"] == {"type": "string", "format": "date-time"}
    assert hit["properties"]["invalidated_at"]["format"] == "date-time"
    for name in ("content", "subject", "predicate", "object", "name"):
        assert hit["properties"][name]["type"] == ["string", "null"], name
    assert not {"source", "context", "t_invalid"} & set(hit["properties"])


def test_the_dashboard_answers_are_their_types() -> None:
    """The answers of the dashboard's reads, the memory resource, a batch store and the
    document itself: each schema names its type's fields, requiring exactly the required
    ones."""
    from ferrex.read.seen import Brief, MemoryDetail, MemoryLink
    from ferrex.server.dashboard import reads
    from ferrex.server.dashboard.schemas import PARTS, OpenApiDocument, StoreBatchAnswer

    kinds: dict[str, type] = {
        "MemoryDetail": MemoryDetail, "MemoryVersion": reads.MemoryVersion,
        "MemoryHistory": reads.MemoryHistory, "EntityNames": reads.EntityNames,
        "Entity": reads.EntityAnswer, "ListedMemory": reads.ListedMemory,
        "MemoryPage": reads.MemoryPage, "TagCounts": reads.TagCounts,
        "ChangeEvent": reads.ChangeEvent, "OpenApiDocument": OpenApiDocument,
        "StoreBatchAnswer": StoreBatchAnswer,
    }  # fmt: skip
    for name, kind in kinds.items():
        _names(ANSWERS[name], kind)
    _names(PARTS["Brief"], Brief)
    _names(PARTS["TagCount"], reads.TagCount)
    _names(PARTS["ChangedMemory"], reads.ChangedMemory)
    detail = ANSWERS["MemoryDetail"]
    assert detail["required"][:6] == list(get_type_hints(Brief))
    assert not {"pinned", "importance", "expires_at"} & set(detail["required"])
    assert detail["properties"]["expires_at"]["format"] == "date-time"
    assert detail["properties"]["type"] == PARTS["MemoryType"]
    _names(detail["properties"]["history"]["items"], MemoryLink)
    entity = ANSWERS["Entity"]["properties"]
    assert entity["memories"]["items"] == PARTS["Brief"]
    _names(entity["graph"], reads.Graph)
    _names(entity["aliases"]["items"], reads.AliasMatch)
    page = ANSWERS["MemoryPage"]["properties"]
    assert page["next_cursor"]["type"] == ["string", "null"]
    assert ANSWERS["ListedMemory"]["properties"]["visibility"] == PARTS["Visibility"]


def test_the_conflicts_are_their_type() -> None:
    """A contradiction's facts carry their values, a possible conflict's their subjects and
    relations too: the schema names them (it named only the ids)."""
    from ferrex.read.conflicts import Conflict, ConflictFact
    from ferrex.server.dashboard.schemas import PARTS

    conflict = PARTS["Conflict"]
    _names(conflict, Conflict)
    _names(conflict["properties"]["facts"]["items"], ConflictFact)
    for answer, fields in (("Stats", ("conflicts", "possible_conflicts")),
                           ("Reflect", ("contradictions", "possible_conflicts"))):  # fmt: skip
        for field in fields:
            assert ANSWERS[answer]["properties"][field]["items"] == conflict, (answer, field)


def test_the_store_answers_parts_are_their_types() -> None:
    """The entities, flagged facts, near copy and redactions of a store answer: each read
    from the type its ``as_dict`` builds."""
    from ferrex.core.decide.copies import SimilarAnswer, SimilarMemory
    from ferrex.core.decide.entities import EntityMatch
    from ferrex.core.decide.shared import FlaggedFact
    from ferrex.rules.memory_input import Redaction
    from ferrex.server.dashboard.schemas import PARTS

    parts = {"EntityMatch": EntityMatch, "FlaggedFact": FlaggedFact,
             "SimilarMemory": SimilarAnswer, "Redaction": Redaction}  # fmt: skip
    for name, kind in parts.items():
        _names(PARTS[name], kind)
    store = ANSWERS["StoreAnswer"]["properties"]
    assert store["entities"]["items"] == PARTS["EntityMatch"]
    assert store["kept_beside"]["items"] == store["possible_conflict_with"]["items"]
    assert {**store["similar"], "description": None} == {**PARTS["SimilarMemory"],
                                                        "description": None}  # fmt: skip
    # kept_because (shown only for a near copy) keeps its place before the note
    near = SimilarMemory("mem_a", 0.912345, "another date").as_dict()
    assert list(near) == ["id", "similarity", "kept_because", "note"]
    assert near["similarity"] == 0.9123
    assert list(SimilarMemory("mem_a", 0.5).as_dict()) == ["id", "similarity", "note"]
