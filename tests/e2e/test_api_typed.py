"""Every ``/api/v1`` route's real answers, from a running ``ferrex serve --http``, checked
against the answer schema its OpenAPI document gives (jsonschema, Draft 2020-12): the types
a generated client is built from hold what the server sends, optional fields included.

Twice: as published (objects open, so a later server may add a field), and closed
(:func:`_closed`): no key the schema does not name and no null it does not allow, so the
document says everything the server sends. The answers are driven to carry their optional
parts (marks, a possible conflict, a plural relation, a redaction, a superseded result,
explain, a confirm that wrote nothing, the operator's stats, a contradiction and a possible
conflict in stats and reflect)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from tests.e2e.api_helpers import ALICE, BOB, Server, serve_http

# A GitHub token's shape (not a real one): redacted, not refused, with this config.
GITHUB = "ghp_Q7vK2mXp9LzR4tWc8NbY3hJf6GdS1aEuAb12"


@dataclass(frozen=True)
class Answer:
    method: str
    path: str
    route: str
    doc: Any


@dataclass(frozen=True)
class Driven:
    document: dict[str, Any]
    answers: list[Answer]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("api-typed") / "home"
    with serve_http(home, config='[store]\nsecrets = "redact"\n') as served:
        yield served


@pytest.fixture(scope="module")
def driven(server: Server) -> Driven:
    document = httpx.get(server.url + "/api/v1/openapi.json", timeout=60).json()
    answers: list[Answer] = []

    def call(method: str, path: str, route: str | None = None, *, token: str = ALICE,
             **kwargs: Any) -> Any:  # fmt: skip
        headers = {"Authorization": f"Bearer {token}"}
        answer = httpx.request(method, server.url + path, headers=headers, timeout=120, **kwargs)
        assert answer.status_code == 200, answer.text
        doc = answer.json()
        answers.append(Answer(method.lower(), path, route or path, doc))
        return doc

    memories = "/api/v1/memories"

    def fact(subject: str, predicate: str, obj: str, **more: Any) -> Any:
        body = {"subject": subject, "predicate": predicate, "object": obj, **more}
        return call("POST", memories, json=body)

    event = call("POST", memories, json={
        "content": "On 2026-11-02 Ana deployed api-server v2.3", "entities": ["Ana", "api-server"],
        "context": {"tags": ["deploy"]}, "importance": 0.9, "ttl": "30d"})  # fmt: skip
    assert {"importance", "expires_at"} <= set(event)
    pinned = call("POST", memories, json={"content": "Releases freeze on Fridays", "pinned": True})
    assert pinned["pinned"] is True
    old = fact("api-server", "uses", "tokio 1.36")
    new = fact("api-server", "uses", "tokio 1.38")
    assert new["superseded"] == [old["id"]]
    fact("billing-worker", "runs on", "Python 3.12", valid_from="2026-10-01")
    history = fact("billing-worker", "runs on", "Python 3.11", valid_from="2026-03-01")
    assert history["status"] == "stored_as_history" and history["history_reason"]
    hosts = [fact("auth gateway", "runs on", "k8s-node-07"),
             fact("auth gateway", "is hosted at", "k8s-node-12")]  # fmt: skip
    assert "replaced_note" in hosts[1]
    flagged = fact("auth gateway", "is", "k8s-node-31")
    assert flagged["possible_conflict_with"] and flagged["possible_conflict_note"]
    # Stats and reflect list the flagged pair (until a confirm below tells the two apart).
    assert call("GET", "/api/v1/reflect")["possible_conflicts"]
    assert call("GET", "/api/v1/stats")["possible_conflicts"]
    ledger = fact("ledger-api", "depends on", "Postgres")
    plural = fact("ledger-api", "depends on", "Redis")
    assert plural["kept_beside"] and plural["plural_note"]
    fact("web", "depends on", "redis", multi_valued=True)
    many = fact("web", "requires", "kafka", multi_valued=True)
    assert many["multi_valued"] is True
    one = fact("web", "needs", "nginx")
    assert one["replaced_multi_valued"] and one["note"]
    secret = call("POST", memories, json={
        "content": f"CI pushes releases with {GITHUB} (rotate monthly)"})  # fmt: skip
    assert secret["redacted"] and secret["warnings"]
    call("POST", memories, json={"name": "deploy", "steps": ["build", "ship"],
                                 "conditions": ["on main"]})  # fmt: skip
    batch = call("POST", memories, json={"memories": [
        {"content": "The cache warms at 06:00"}, {"contnt": "a typo"}]})  # fmt: skip
    assert batch["failed"] == 1 and "error" in batch["results"][1]
    recalls = [
        {"query": "what does api-server use", "limit": 3},
        {"query": "api-server", "explain": True, "max_tokens": 50},
        {"query": "zebra unicorn quasar", "min_relevance": 0.9},
        {"query": "tokio", "include_invalidated": True, "strategy": "lexical"},
        {"query": "where does auth gateway run", "explain": True},
        {"query": "deploy procedure steps"},
    ]
    hits = [h for body in recalls for h in call("POST", "/api/v1/recall", json=body)["results"]]
    assert any("invalidated_at" in h for h in hits) and any("possible_conflict" in h for h in hits)
    assert any("answer_chance" in h.get("explain", {}) or "answer_chance" in h for h in hits)
    call("GET", "/api/v1/recall", params={"q": "api-server", "limit": 2})
    call("POST", "/api/v1/confirm", json={"ids": [event["id"], "mem_nothing"], "pinned": True})
    nothing = call("POST", "/api/v1/confirm", json={"ids": ["mem_nothing"]})
    assert nothing["position"] is None
    call("POST", "/api/v1/confirm", json={"ids": [flagged["id"]], "differs_from": hosts[1]["id"]})
    call("POST", "/api/v1/confirm", json={"ids": [plural["id"]], "supersedes": ledger["id"]})
    call("GET", f"/api/v1/memory/{event['id']}", "/api/v1/memory/{id}")
    call("GET", f"/api/v1/memory/{old['id']}", "/api/v1/memory/{id}")
    call("GET", f"/api/v1/history/{new['id']}", "/api/v1/history/{id}")
    call("GET", "/api/v1/entities")
    call("GET", "/api/v1/entities", params={"name": "Ana"})
    call("GET", "/api/v1/stats")
    call("GET", "/api/v1/reflect", params={"limit": 5})
    # A shared fact and another agent's private one that disagrees: both stand (a private
    # memory never supersedes a shared one), and the operator sees the contradiction.
    fact("billing", "owned by", "payments team", visibility="shared")
    call("POST", memories, token=BOB,
         json={"subject": "billing", "predicate": "owner", "object": "platform team"})  # fmt: skip
    operator = call("GET", "/api/v1/stats", token=server.operator)
    assert {"journal", "storage_bytes", "models"} <= set(operator), operator
    assert operator["conflicts"], operator
    assert call("GET", "/api/v1/reflect", token=server.operator)["contradictions"]
    call("GET", memories, params={"limit": 2, "state": "all"})
    call("GET", "/api/v1/tags")
    call("DELETE", f"/api/v1/memories/{old['id']}", "/api/v1/memories/{id}",
         params={"cascade": "true"})  # fmt: skip
    call("GET", "/api/v1/openapi.json")
    return Driven(document, answers)


def _checker(document: dict[str, Any], route: str, method: str) -> Draft202012Validator:
    schema = document["paths"][route][method]["responses"]["200"]["content"]
    root = {**schema["application/json"]["schema"], "components": document["components"]}
    return Draft202012Validator(root)


def _closed(schema: Any) -> Any:
    """``schema`` with every object that names its properties closed to others."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    found = {key: _closed(value) for key, value in schema.items()}
    if isinstance(schema.get("properties"), dict):
        found["properties"] = {k: _closed(v) for k, v in schema["properties"].items()}
        found.setdefault("additionalProperties", False)
    return found


def _check(document: dict[str, Any], driven: Driven) -> list[str]:
    errors = []
    for answer in driven.answers:
        checker = _checker(document, answer.route, answer.method)
        for error in checker.iter_errors(answer.doc):
            where = "/".join(str(p) for p in error.absolute_path)
            errors.append(f"{answer.method} {answer.path} at /{where}: {error.message}")
    return errors


def test_every_answer_matches_its_documented_type(driven: Driven) -> None:
    assert _check(driven.document, driven) == []
    checked = {(a.route, a.method) for a in driven.answers}
    every = {(p, m) for p, ops in driven.document["paths"].items() for m in ops}
    # The change stream is an event stream (test_api_changes.py reads it).
    assert every - checked == {("/api/v1/changes", "get")}


def test_the_document_names_every_key_and_null_an_answer_has(driven: Driven) -> None:
    """A key an answer carries that its schema does not name, or a null where the schema
    does not allow one, is an error: the document says all the server sends."""
    document = driven.document
    closed = {**document, "components": _closed(document["components"])}
    assert _check(closed, driven) == []


def test_a_key_or_null_the_document_does_not_name_is_found(driven: Driven) -> None:
    """The closed check can fail: an answer with a key more, or a null in a string field."""
    forget = next(a for a in driven.answers if a.route == "/api/v1/memories/{id}")
    document = driven.document
    closed = {**document, "components": _closed(document["components"])}
    odd = Driven(document, [Answer(forget.method, forget.path, forget.route,
                                   {**forget.doc, "unnamed": 1, "forgotten": [None]})])  # fmt: skip
    errors = _check(closed, odd)
    assert len(errors) == 2 and any("'unnamed'" in e for e in errors), errors
    # open, as published: a later server's new key is read, a null in a string list is not
    (published,) = _check(document, odd)
    assert "None is not of type 'string'" in published
