"""The OpenAPI document of ``/api/v1`` as a client generator reads it: valid OpenAPI 3.1, a
``servers`` entry, a typed answer for every route (never a bare object), no ``default``
anywhere (openapi-typescript makes a property with a default required), and every required
property described. What the answers really hold is checked against a running server in
``tests/e2e/test_api_typed.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from ferrex.server.dashboard.openapi import openapi_document
from ferrex.server.mcp_server import build_server, tool_inputs


class _NoHub:
    """Only what building the tools reads (nothing is called)."""

    home = Path("/nonexistent/ferrex-home")

    class caller:
        namespace = None
        agent_id = None
        visibility = None

    def call(self, request: Any, caller: Any) -> Any:
        raise AssertionError("nothing is called")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return openapi_document(tool_inputs(build_server(_NoHub())))  # type: ignore[arg-type]


def _schemas(node: Any, at: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object under ``node`` (properties' names are not schemas)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _schemas(item, f"{at}[{i}]")
    elif isinstance(node, dict):
        yield at, node
        for key, value in node.items():
            if key in ("properties", "patternProperties", "$defs") and isinstance(value, dict):
                for name, sub in value.items():
                    yield from _schemas(sub, f"{at}.{key}.{name}")
            else:
                yield from _schemas(value, f"{at}.{key}")


def test_the_document_is_valid_openapi_3_1_with_a_servers_entry(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert document["servers"] and document["servers"][0]["url"]


def test_no_schema_carries_a_default(document: dict[str, Any]) -> None:
    found = [at for at, s in _schemas(document["components"]) if "default" in s]
    found += [at for at, s in _schemas(document["paths"]) if "default" in s]
    assert found == []
    # the default is still told, in words
    limit = document["components"]["schemas"]["RecallArguments"]["properties"]["limit"]
    assert "Default:" in limit.get("description", "")


def test_an_object_without_properties_is_open_to_any(document: dict[str, Any]) -> None:
    # openapi-typescript types a bare {"type": "object"} as an object that holds nothing, so
    # a context of {"tags": [...]} would not compile in a generated client
    for at, schema in [*_schemas(document["components"]), *_schemas(document["paths"])]:
        if schema.get("type") == "object" and "properties" not in schema:
            assert "additionalProperties" in schema, at
    context = document["components"]["schemas"]["StoreArguments"]["properties"]["context"]
    assert context["additionalProperties"] is True


def test_every_required_property_is_described(document: dict[str, Any]) -> None:
    for at, schema in _schemas(document["components"]):
        for name in schema.get("required", []):
            assert name in schema.get("properties", {}), (at, name)


def _typed(schema: dict[str, Any], components: dict[str, Any]) -> bool:
    """An answer schema a generator makes a real type of: a reference (or a choice of
    references) to a component with properties."""
    if "oneOf" in schema:
        return all(_typed(s, components) for s in schema["oneOf"])
    ref = schema.get("$ref", "")
    if not ref.startswith("#/components/schemas/"):
        return False
    target = components[ref.rsplit("/", 1)[1]]
    return bool(target.get("properties")) and target.get("type") == "object"


def test_every_route_has_a_typed_answer(document: dict[str, Any]) -> None:
    components = document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation["responses"]["200"]["content"]
            if "text/event-stream" in content:  # the change stream: events, in words
                assert path == "/api/v1/changes"
                assert "ChangeEvent" in operation["responses"]["200"]["description"]
                continue
            schema = content["application/json"]["schema"]
            assert _typed(schema, components), (method, path, schema)
            for status, answer in operation["responses"].items():
                if status != "200":
                    assert answer["content"]["application/json"]["schema"] == {
                        "$ref": "#/components/schemas/Error"
                    }


def test_a_429_or_503_documents_retry_after(document: dict[str, Any]) -> None:
    changes = document["paths"]["/api/v1/changes"]["get"]["responses"]
    assert "too_many_streams" in changes["429"]["description"]
    assert "Retry-After" in changes["429"]["headers"] and "Retry-After" in changes["503"]["headers"]
