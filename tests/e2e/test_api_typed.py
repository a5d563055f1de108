"""Every ``/api/v1`` route's real answers, from a running ``ferrex serve --http``, checked
against the answer schema its OpenAPI document gives (jsonschema, Draft 2020-12): the types
a generated client is built from hold what the server sends, optional fields included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from tests.e2e.api_helpers import ALICE, Server, serve_http


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve_http(tmp_path_factory.mktemp("api-typed") / "home") as served:
        yield served


def _checker(document: dict[str, Any], path: str, method: str) -> Draft202012Validator:
    schema = document["paths"][path][method]["responses"]["200"]["content"]
    root = {**schema["application/json"]["schema"], "components": document["components"]}
    return Draft202012Validator(root)


def test_every_answer_matches_its_documented_type(server: Server) -> None:
    document = httpx.get(server.url + "/api/v1/openapi.json", timeout=60).json()
    headers = {"Authorization": f"Bearer {ALICE}"}
    checked: set[tuple[str, str]] = set()

    def call(method: str, path: str, route: str | None = None, **kwargs: Any) -> Any:
        answer = httpx.request(method, server.url + path, headers=headers, timeout=120, **kwargs)
        assert answer.status_code == 200, answer.text
        doc = answer.json()
        route = route or path
        errors = [e.message for e in _checker(document, route, method.lower()).iter_errors(doc)]
        assert errors == [], (method, path, doc)
        checked.add((route, method.lower()))
        return doc

    memories = "/api/v1/memories"
    event = call("POST", memories, json={
        "content": "On 2026-11-02 Ana deployed api-server v2.3", "entities": ["Ana", "api-server"],
        "context": {"tags": ["deploy"]}, "importance": 0.9, "ttl": "30d"})  # fmt: skip
    old = call("POST", memories, json={"subject": "api-server", "predicate": "uses",
                                       "object": "tokio 1.36"})  # fmt: skip
    new = call("POST", memories, json={"subject": "api-server", "predicate": "uses",
                                       "object": "tokio 1.38"})  # fmt: skip
    history = call("POST", memories, json={
        "subject": "api-server", "predicate": "uses", "object": "tokio 1.20",
        "valid_from": "2020-01-01T00:00:00Z"})  # fmt: skip
    call("POST", memories, json={"name": "deploy", "steps": ["build", "ship"],
                                 "conditions": ["on main"]})  # fmt: skip
    batch = call("POST", memories, json={"memories": [
        {"content": "The cache warms at 06:00"}, {"contnt": "a typo"}]})  # fmt: skip
    assert batch["failed"] == 1 and "error" in batch["results"][1]
    assert history["id"]
    recalls = [
        {"query": "what does api-server use", "limit": 3},
        {"query": "api-server", "explain": True, "max_tokens": 50},
        {"query": "zebra unicorn quasar", "min_relevance": 0.9},
        {"query": "tokio", "include_invalidated": True, "strategy": "lexical"},
    ]
    for body in recalls:
        call("POST", "/api/v1/recall", json=body)
    call("GET", "/api/v1/recall", params={"q": "api-server", "limit": 2})
    call("POST", "/api/v1/confirm", json={"ids": [event["id"], "mem_nothing"], "pinned": True})
    call("GET", f"/api/v1/memory/{event['id']}", "/api/v1/memory/{id}")
    call("GET", f"/api/v1/memory/{old['id']}", "/api/v1/memory/{id}")
    call("GET", f"/api/v1/history/{new['id']}", "/api/v1/history/{id}")
    call("GET", "/api/v1/entities")
    call("GET", "/api/v1/entities", params={"name": "Ana"})
    call("GET", "/api/v1/stats")
    call("GET", "/api/v1/reflect", params={"limit": 5})
    call("GET", memories, params={"limit": 2, "state": "all"})
    call("GET", "/api/v1/tags")
    call("DELETE", f"/api/v1/memories/{old['id']}", "/api/v1/memories/{id}",
         params={"cascade": "true"})  # fmt: skip
    openapi = httpx.get(server.url + "/api/v1/openapi.json", timeout=60).json()
    assert not list(_checker(document, "/api/v1/openapi.json", "get").iter_errors(openapi))
    checked.add(("/api/v1/openapi.json", "get"))
    every = {(p, m) for p, ops in document["paths"].items() for m in ops}
    # The change stream is an event stream (test_api_changes.py reads it).
    assert every - checked == {("/api/v1/changes", "get")}
