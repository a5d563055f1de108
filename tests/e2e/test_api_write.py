"""The write API under /api/v1 over a real ``ferrex serve --http``: store (one and batches),
recall, forget and confirm with bearer tokens, the tools' error codes, privacy between
agents, Idempotency-Key, and the OpenAPI document checked by a real validator."""

from __future__ import annotations

import signal
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.routing import Route

from ferrex.errors import UsageError
from ferrex.rules.store_fields import SUPERSEDES_CHARS
from ferrex.server.dashboard.edge import STATUS, status_of
from ferrex.server.dashboard.keys import KILL_BEFORE_KEY_SAVED
from ferrex.server.dashboard.openapi import openapi_document
from ferrex.server.dashboard.schemas import for_generators
from ferrex.server.dashboard.web import Dashboard
from ferrex.server.mcp_server import build_server, tool_inputs
from tests.e2e.api_helpers import ALICE, BOB, Server, serve_http


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve_http(tmp_path_factory.mktemp("api") / "home") as served:
        yield served


def _send(
    server: Server,
    method: str,
    path: str,
    token: str | None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    sent = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.request(method, server.url + path, json=body, headers={**sent, **(headers or {})},
                         timeout=120)  # fmt: skip


def _post(
    server: Server, path: str, token: str | None, body: Any, **headers: str
) -> httpx.Response:
    return _send(server, "POST", path, token, body, headers)


def _total(server: Server) -> int:
    answer = _send(server, "GET", "/api/v1/stats", server.operator)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["total"])


def _error(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["code"] == code, error
    assert error["message"]
    return error


def test_store_answers_as_the_tool_and_recall_finds_it(server: Server) -> None:
    answer = _post(server, "/api/v1/memories", ALICE, {
        "content": "On 2026-11-02 Ana deployed ledger-api v4.1 to production",
        "entities": ["Ana", "ledger-api"], "visibility": "shared"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    stored = answer.json()
    assert stored["status"] == "stored" and stored["id"].startswith("mem_")
    assert {e["name"] for e in stored["entities"]} >= {"Ana", "ledger-api"}
    found = _post(server, "/api/v1/recall", BOB, {"query": "who deployed ledger-api?", "limit": 3})
    assert found.status_code == 200, found.text
    assert found.json()["results"][0]["id"] == stored["id"]


def test_bad_input_is_the_tools_invalid_input_and_stores_nothing(server: Server) -> None:
    before = _total(server)
    missing = _error(_post(server, "/api/v1/memories", ALICE, {"entities": ["x"]}),
                     400, "invalid_input")  # fmt: skip
    assert "content" in missing["message"]
    wrong = _error(_post(server, "/api/v1/memories", ALICE, {"content": 5}), 400, "invalid_input")
    assert wrong["fields"] == ["content"]
    typo = _error(_post(server, "/api/v1/memories", ALICE, {"content": "x y", "entites": ["a"]}),
                  400, "invalid_input")  # fmt: skip
    assert "unknown argument 'entites'" in typo["message"] and "entities" in typo["message"]
    # "true" is not a boolean and "0.5" not a number, exactly as for the MCP tool
    _error(_post(server, "/api/v1/memories", ALICE, {"content": "a b c", "pinned": "true"}),
           400, "invalid_input")  # fmt: skip
    _error(_post(server, "/api/v1/recall", ALICE, {"query": "x", "limit": "5"}),
           400, "invalid_input")  # fmt: skip
    _error(_post(server, "/api/v1/recall", ALICE, {}), 400, "invalid_input")
    _error(_post(server, "/api/v1/confirm", ALICE, {"ids": []}), 400, "invalid_input")
    _error(_post(server, "/api/v1/memories", ALICE, ["not", "an", "object"]), 400, "invalid_input")
    not_json = httpx.post(server.url + "/api/v1/memories", content=b"{content:",
                          headers={"Authorization": f"Bearer {ALICE}",
                                   "Content-Type": "application/json"}, timeout=60)  # fmt: skip
    assert "not JSON" in _error(not_json, 400, "invalid_input")["message"]
    form = httpx.post(server.url + "/api/v1/memories", data={"content": "a form post"},
                      headers={"Authorization": f"Bearer {ALICE}"}, timeout=60)  # fmt: skip
    assert "application/json" in _error(form, 400, "invalid_input")["message"]
    query = _post(server, "/api/v1/memories?visibility=shared", ALICE, {"content": "q p r"})
    _error(query, 400, "invalid_input")
    assert _total(server) == before


def test_a_wrong_token_is_told_apart_from_none(server: Server) -> None:
    # A script that sends a token with a typo in it was told "this dashboard needs a token":
    # it had sent one, and it was not asking the dashboard.
    body = {"query": "nightly backup"}
    wrong = _error(_post(server, "/api/v1/recall", "typo-token", body), 401, "unauthorized")
    assert "not known" in wrong["message"] and "dashboard" not in wrong["message"], wrong
    assert "run/http.token" in wrong["hint"] and "[[auth.tokens]]" in wrong["hint"], wrong
    for path in ("/api/v1/stats", "/api/v1/memories?limit=1"):
        listed = _error(_send(server, "GET", path, "typo-token"), 401, "unauthorized")
        assert "not known" in listed["message"], listed
    none = _error(_post(server, "/api/v1/recall", None, body), 401, "unauthorized")
    assert "needs a bearer token" in none["message"] and "dashboard" not in none["message"]
    assert "Authorization: Bearer" in none["hint"] and "run/http.token" in none["hint"], none
    # The dashboard's pages still tell a browser how to sign in.
    page = httpx.get(server.url + "/", timeout=60)
    assert page.status_code == 401 and "ferrex ui" in page.text


def test_tokens_decide_who_writes(server: Server) -> None:
    body = {"content": "Token check: the nightly backup runs at 02:00 UTC"}
    _error(_post(server, "/api/v1/memories", None, body), 401, "unauthorized")
    _error(_post(server, "/api/v1/memories", "not-a-token", body), 401, "unauthorized")
    _error(_send(server, "DELETE", "/api/v1/memories/mem_x", None), 401, "unauthorized")
    _error(_post(server, "/api/v1/confirm", None, {"ids": ["mem_x"]}), 401, "unauthorized")
    _error(_post(server, "/api/v1/recall", None, {"query": "backup"}), 401, "unauthorized")
    # a dashboard session cookie is not enough for a write: only a bearer token is
    login = httpx.get(f"{server.url}/?token={server.operator}", timeout=60)
    assert login.status_code == 303
    with httpx.Client(base_url=server.url, cookies=login.cookies, timeout=60) as browser:
        assert browser.get("/api/v1/stats").status_code == 200  # the session reads
        refused = browser.post("/api/v1/memories", json=body,
                               headers={"Origin": server.url})  # fmt: skip
        assert "bearer" in _error(refused, 401, "unauthorized")["message"]
    # alice's token acts as alice (her memory is private to her by default); the operator's
    # token sees it, bob's does not; the operator's own memory is unowned, seen by all
    mine = _post(server, "/api/v1/memories", ALICE, body)
    assert mine.status_code == 200, mine.text
    memory_id = mine.json()["id"]
    seen = _send(server, "GET", f"/api/v1/memory/{memory_id}", server.operator)
    assert seen.status_code == 200 and seen.json()["visibility"] == "private", seen.text
    _error(_send(server, "GET", f"/api/v1/memory/{memory_id}", BOB), 404, "not_found")
    operator = _post(server, "/api/v1/memories", server.operator,
                     {"content": "Operator note: the on-call rota changes on Mondays"})  # fmt: skip
    assert operator.status_code == 200, operator.text
    by_bob = _send(server, "GET", f"/api/v1/memory/{operator.json()['id']}", BOB)
    assert by_bob.status_code == 200, by_bob.text


def test_a_private_memory_is_invisible_to_another_agent(server: Server) -> None:
    secret = "Alice's private note: the vault key for project Quokka-Nine rotates on Fridays"
    stored = _post(server, "/api/v1/memories", ALICE, {"content": secret,
                                                       "entities": ["Quokka-Nine"]})  # fmt: skip
    assert stored.status_code == 200, stored.text
    memory_id = stored.json()["id"]
    for token, sees in ((ALICE, True), (BOB, False), (server.operator, True)):
        found = _post(server, "/api/v1/recall", token, {"query": "Quokka-Nine vault key"})
        assert found.status_code == 200, found.text
        ids = [r["id"] for r in found.json()["results"]]
        assert (memory_id in ids) is sees, (token, ids)
        assert (secret in found.text) is sees
    # bob cannot forget it (told exactly what he would hear for an unknown id) nor confirm it
    unknown = _error(_send(server, "DELETE", "/api/v1/memories/mem_00000000000000000000000000",
                           BOB), 404, "not_found")  # fmt: skip
    refused = _error(_send(server, "DELETE", f"/api/v1/memories/{memory_id}", BOB),
                     404, "not_found")  # fmt: skip
    assert refused["message"].replace(memory_id, "ID") == unknown["message"].replace(
        "mem_00000000000000000000000000", "ID")  # fmt: skip
    confirmed = _post(server, "/api/v1/confirm", BOB, {"ids": [memory_id]})
    assert confirmed.status_code == 200 and confirmed.json()["not_found"] == [memory_id]
    still = _send(server, "GET", f"/api/v1/memory/{memory_id}", ALICE)
    assert still.status_code == 200 and secret in still.text
    # alice can
    gone = _send(server, "DELETE", f"/api/v1/memories/{memory_id}", ALICE)
    assert gone.status_code == 200 and gone.json()["forgotten"] == [memory_id], gone.text
    _error(_send(server, "GET", f"/api/v1/memory/{memory_id}", ALICE), 404, "not_found")


def test_an_idempotency_key_stores_once(server: Server) -> None:
    key = str(uuid.uuid4())
    body = {"content": "Idempotent: the billing-api cache TTL is 90 seconds"}
    before = _total(server)
    first = _post(server, "/api/v1/memories", ALICE, body, **{"Idempotency-Key": key})
    again = _post(server, "/api/v1/memories", ALICE, body, **{"Idempotency-Key": key})
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert again.json() == first.json() and first.json()["status"] == "stored"
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert _total(server) == before + 1
    # the same key with another body is refused, and stores nothing
    other = _post(server, "/api/v1/memories", ALICE, {"content": "something else entirely"},
                  **{"Idempotency-Key": key})  # fmt: skip
    assert "different request" in _error(other, 422, "idempotency_key_reused")["message"]
    # keys are per principal: bob's request with alice's key is his own
    bobs = _post(server, "/api/v1/memories", BOB, {"content": "Bob's: staging deploys at 17:00"},
                 **{"Idempotency-Key": key})  # fmt: skip
    assert bobs.status_code == 200 and "idempotent-replayed" not in bobs.headers, bobs.text
    assert _total(server) == before + 2
    # a refusal is an answer too: replayed, not decided again
    dup_key = str(uuid.uuid4())
    dup = _post(server, "/api/v1/memories", ALICE, body, **{"Idempotency-Key": dup_key})
    _error(dup, 409, "duplicate")
    replay = _post(server, "/api/v1/memories", ALICE, body, **{"Idempotency-Key": dup_key})
    assert replay.headers["idempotent-replayed"] == "true"
    forget_key = str(uuid.uuid4())
    deleted = _send(server, "DELETE", f"/api/v1/memories/{first.json()['id']}", ALICE,
                    headers={"Idempotency-Key": forget_key})  # fmt: skip
    assert deleted.status_code == 200, deleted.text
    redo = _send(server, "DELETE", f"/api/v1/memories/{first.json()['id']}", ALICE,
                 headers={"Idempotency-Key": forget_key})  # fmt: skip
    assert redo.status_code == 200 and redo.json() == deleted.json()  # not a 404 the 2nd time
    _error(_post(server, "/api/v1/memories", ALICE, body, **{"Idempotency-Key": "k" * 201}),
           400, "invalid_input")  # fmt: skip


def test_a_retry_after_a_restart_is_still_answered_once(tmp_path: Path) -> None:
    home = tmp_path / "restart"
    body = {"content": "Restart: the invoice job runs at 03:15 UTC", "visibility": "shared"}
    key = {"Idempotency-Key": str(uuid.uuid4())}
    with serve_http(home) as first:
        stored = _post(first, "/api/v1/memories", ALICE, body, **key)
        assert stored.status_code == 200, stored.text
        # a recall takes no key: run each time, its answer (memories' text) never kept
        looked = _post(first, "/api/v1/recall", ALICE, {"query": "invoice job"}, **key)
        assert looked.status_code == 200 and "idempotent-replayed" not in looked.headers
    kept = home / "run" / "api-idempotency.jsonl"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert key["Idempotency-Key"] not in kept.read_text() and "invoice" not in kept.read_text()
    with serve_http(home) as second:
        again = _post(second, "/api/v1/memories", ALICE, body, **key)
        assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
        assert again.json() == stored.json()
        assert _total(second) == 1


def test_a_store_killed_before_its_key_was_saved_is_answered_stored_on_retry(
    tmp_path: Path,
) -> None:
    home = tmp_path / "crash"
    body = {"content": "Crash: the nightly backup goes to vault-7", "visibility": "shared"}
    key = {"Idempotency-Key": str(uuid.uuid4())}
    # the process dies (SIGKILL) after the journal append, before the key file has the key
    with serve_http(home, env={KILL_BEFORE_KEY_SAVED: "1"}) as dying:
        with pytest.raises(httpx.HTTPError):  # no answer: the connection drops
            _post(dying, "/api/v1/memories", ALICE, body, **key)
        assert dying.process.wait(timeout=60) == -signal.SIGKILL
    with serve_http(home) as second:
        assert _total(second) == 1  # the write was acknowledged to the journal
        again = _post(second, "/api/v1/memories", ALICE, body, **key)
        assert again.status_code == 200, again.text  # not 409 duplicate
        assert again.json()["status"] == "stored" and again.json()["recovered"] is True
        assert again.headers["idempotent-replayed"] == "true"
        memory_id = again.json()["id"]
        assert _send(second, "GET", f"/api/v1/memory/{memory_id}", ALICE).status_code == 200
        assert _post(second, "/api/v1/memories", ALICE, body, **key).json() == again.json()
        assert _total(second) == 1
        # the key is no import line: the same text again is a duplicate, with or without a key
        _error(_post(second, "/api/v1/memories", ALICE, body), 409, "duplicate")
        fresh = {"Idempotency-Key": str(uuid.uuid4())}
        _error(_post(second, "/api/v1/memories", ALICE, body, **fresh), 409, "duplicate")
        # another agent's same key is its own request
        bobs = _post(second, "/api/v1/memories", BOB,
                     {"content": "Crash: bob's own note about vault-8"}, **key)  # fmt: skip
        assert bobs.status_code == 200 and "recovered" not in bobs.json(), bobs.text
        assert _total(second) == 2


def test_a_batch_stores_every_good_item_and_reports_the_bad_one(server: Server) -> None:
    before = _total(server)
    batch = {"memories": [
        {"content": "Batch one: the search cluster has 6 nodes", "visibility": "shared"},
        {"content": 17},
        {"subject": "search-cluster", "predicate": "runs", "object": "OpenSearch 2.13"},
        {"content": "Batch one: the search cluster has 6 nodes"},  # a duplicate of the first
    ]}  # fmt: skip
    answer = _post(server, "/api/v1/memories", ALICE, batch)
    assert answer.status_code == 200, answer.text
    doc = answer.json()
    assert [r["index"] for r in doc["results"]] == [0, 1, 2, 3]
    assert doc["results"][0]["status"] == "stored" and doc["results"][2]["status"] == "stored"
    assert doc["results"][1]["error"]["code"] == "invalid_input"
    assert doc["results"][3]["error"]["code"] == "duplicate"
    assert doc["results"][3]["error"]["ids"] == [doc["results"][0]["id"]]
    assert (doc["stored"], doc["failed"]) == (2, 2)
    assert _total(server) == before + 2
    empty = _error(_post(server, "/api/v1/memories", ALICE, {"memories": []}), 400,
                   "invalid_input")  # fmt: skip
    assert "at least one" in empty["hint"], empty  # not "send a longer list in several"
    _error(_post(server, "/api/v1/memories", ALICE, {"memories": [{"content": "a b"}],
                                                      "visibility": "shared"}),
           400, "invalid_input")  # fmt: skip
    too_many = {"memories": [{"content": f"item {i}"} for i in range(101)]}
    over = _error(_post(server, "/api/v1/memories", ALICE, too_many), 400, "invalid_input")
    assert "not a list of 101" in over["message"] and "at most 100" in over["hint"], over
    text = _error(_post(server, "/api/v1/memories", ALICE, {"memories": "x"}), 400,
                  "invalid_input")  # fmt: skip
    assert "not a str" in text["message"] and "a list of store arguments" in text["hint"], text
    assert _total(server) == before + 2


def test_a_late_report_of_history_answers_stored_as_history_and_counts_as_stored(
    server: Server,
) -> None:
    fact = {"subject": "billing-worker", "predicate": "runs on", "visibility": "shared"}
    newer = {**fact, "object": "Python 3.12", "valid_from": "2026-10-01"}
    older = {**fact, "object": "Python 3.11", "valid_from": "2026-03-01"}  # reported later
    batch = {"memories": [newer, older]}
    answer = _post(server, "/api/v1/memories", ALICE, batch)
    assert answer.status_code == 200, answer.text
    doc = answer.json()
    current, history = doc["results"]
    assert current["status"] == "stored" and history["status"] == "stored_as_history"
    assert history["superseded_by"] == current["id"] and current["id"] in history["history_reason"]
    assert (doc["stored"], doc["failed"]) == (2, 0)


def test_forget_takes_cascade_and_confirm_takes_marks(server: Server) -> None:
    stored = _post(server, "/api/v1/memories", server.operator,
                   {"content": "Cascade: Zebulon-Prime hosts the build cache",
                    "entities": ["Zebulon-Prime"]})  # fmt: skip
    memory_id = stored.json()["id"]
    marked = _post(server, "/api/v1/confirm", server.operator,
                   {"ids": [memory_id], "pinned": True, "importance": 0.9})  # fmt: skip
    assert marked.status_code == 200, marked.text
    assert marked.json()["validated"] == [memory_id] and marked.json()["marked"] == [memory_id]
    _error(_post(server, "/api/v1/confirm", server.operator,
                 {"ids": [memory_id], "importance": 3}), 400, "invalid_input")  # fmt: skip
    _error(_send(server, "DELETE", f"/api/v1/memories/{memory_id}?cascade=yes", server.operator),
           400, "invalid_input")  # fmt: skip
    _error(_send(server, "DELETE", f"/api/v1/memories/{memory_id}?cascde=true", server.operator),
           400, "invalid_input")  # fmt: skip
    gone = _send(server, "DELETE", f"/api/v1/memories/{memory_id}?cascade=true", server.operator)
    assert gone.status_code == 200, gone.text
    assert gone.json()["forgotten"] == [memory_id]
    assert len(gone.json()["dropped_entities"]) == 1  # Zebulon-Prime, named nowhere else


def test_the_openapi_document_is_valid_and_covers_every_route(server: Server) -> None:
    answer = httpx.get(server.url + "/api/v1/openapi.json", timeout=60)  # no token needed
    assert answer.status_code == 200
    doc = answer.json()
    validate(doc)  # openapi-spec-validator: raises on an invalid OpenAPI 3.1 document
    assert doc["openapi"].startswith("3.1")
    tools = tool_inputs(build_server(_NoHub()))  # type: ignore[arg-type]
    routes = Dashboard(_NoHub(), None, tools=tools).routes()  # type: ignore[arg-type]
    served = {
        (r.path.replace("{memory_id:path}", "{id}"), m.lower())
        for r in routes if isinstance(r, Route) and r.path.startswith("/api/v1/")
        for m in (r.methods or ()) if m != "HEAD"
    }  # fmt: skip
    described = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    assert described == served
    schemas = doc["components"]["schemas"]
    for tool, name in (("store", "StoreArguments"), ("recall", "RecallArguments"),
                       ("confirm", "ConfirmArguments")):  # fmt: skip
        # the tool's own schema as generators need it: its defaults said in words (a
        # generator would make them required), its bare objects open
        assert schemas[name]["properties"] == for_generators(tools[tool].schema["properties"])
    assert openapi_document(tools) == doc
    # a foreign Host is refused here too
    _error(httpx.get(server.url + "/api/v1/openapi.json", headers={"Host": "evil.example"},
                     timeout=60), 403, "forbidden")  # fmt: skip


def test_unknown_api_paths_and_methods_are_json_errors(server: Server) -> None:
    missing = _send(server, "GET", "/api/v1/nothing", server.operator)
    assert "openapi" in _error(missing, 404, "not_found")["hint"]
    assert missing.headers["x-content-type-options"] == "nosniff"
    put = _send(server, "PUT", "/api/v1/memories", server.operator, {})
    _error(put, 405, "method_not_allowed")
    assert set(put.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}, put.headers
    confirm = _send(server, "GET", "/api/v1/confirm", server.operator)
    _error(confirm, 405, "method_not_allowed")
    assert "POST" in confirm.headers["allow"]


def test_every_error_code_has_a_fitting_status() -> None:
    assert status_of("invalid_input") == 400
    assert status_of("not_found") == 404
    assert status_of("duplicate") == status_of("conflict_ambiguous") == 409
    assert status_of("backend_unavailable") == status_of("journal.unavailable") == 503
    assert status_of("storage_full") == 507
    assert status_of("idempotency_key_reused") == 422
    assert status_of("something_new") == 500
    assert all(400 <= s < 600 for s in STATUS.values())


def test_refusals_answer_4xx_with_their_kind_not_500(server: Server) -> None:
    secret = {"content": "CI uploads with the access key AKIAQ7VK2MXP9LZR4TWC and its secret"}
    refused = _error(_post(server, "/api/v1/memories", ALICE, secret), 422, "secret_refused")
    assert refused["kind"] == "UsageError" and refused["hint"]
    assert "AKIAQ7VK2MXP9LZR4TWC" not in str(refused)
    nothing = {"content": "Supersedes: the cache is warm", "supersedes": "mem_nowhere"}
    assert _error(_post(server, "/api/v1/memories", ALICE, nothing), 404,
                  "not_found")["kind"] == "Refused"  # fmt: skip


def test_the_schemas_bound_what_the_server_takes() -> None:
    tools = tool_inputs(build_server(_NoHub()))  # type: ignore[arg-type]
    supersedes = tools["store"].schema["properties"]["supersedes"]
    assert supersedes["maxLength"] == SUPERSEDES_CHARS
    for tool in ("store", "confirm"):
        importance = tools[tool].schema["properties"]["importance"]
        assert (importance["minimum"], importance["maximum"]) == (0, 1), tool
    with pytest.raises(UsageError):
        tools["store"].decode({"content": "x", "supersedes": "m" * (SUPERSEDES_CHARS + 1)})
    with pytest.raises(UsageError):
        tools["confirm"].decode({"ids": ["m"], "importance": 7})


def test_query_booleans_are_true_or_false_and_unknown_parameters_refused(
    server: Server,
) -> None:
    fact = {"subject": "strict-svc", "predicate": "runs on", "visibility": "shared"}
    old = _post(server, "/api/v1/memories", server.operator, {**fact, "object": "port 7001"})
    new = _post(server, "/api/v1/memories", server.operator, {**fact, "object": "port 7002"})
    assert old.status_code == new.status_code == 200, (old.text, new.text)
    search = "/api/v1/recall?q=strict-svc+runs+on&min_relevance=0"
    # what Python's requests sends for False: refused, not taken as true
    for flag in ("False", "True", "0", "1", "yes", ""):
        answer = _send(server, "GET", f"{search}&include_invalidated={flag}", server.operator)
        assert "true or false" in _error(answer, 400, "invalid_input")["message"], flag
    found = _send(server, "GET", f"{search}&include_invalidated=false", server.operator)
    assert found.status_code == 200, found.text
    ids = [r["id"] for r in found.json()["results"]]
    assert new.json()["id"] in ids and old.json()["id"] not in ids
    both = _send(server, "GET", f"{search}&include_invalidated=true", server.operator)
    assert old.json()["id"] in [r["id"] for r in both.json()["results"]]
    one = f"/api/v1/memory/{new.json()['id']}?full=1"
    for path in (f"{search}&include_invalidatd=true", "/api/v1/stats?detail=1", one,
                 "/api/v1/entities?limit=3"):  # fmt: skip
        error = _error(_send(server, "GET", path, server.operator), 400, "invalid_input")
        assert "unknown query parameter" in error["message"], path
    # One value given twice is refused (the last one used to win); a list may repeat.
    for path in ("/api/v1/memories?limit=5&limit=6", "/api/v1/memories?state=current&state=all",
                 f"{search}&namespace=a&namespace=b"):  # fmt: skip
        error = _error(_send(server, "GET", path, server.operator), 400, "invalid_input")
        assert "given twice" in error["message"], path
    listed = _send(server, "GET", "/api/v1/memories?types=semantic&types=episodic",
                   server.operator)  # fmt: skip
    assert listed.status_code == 200, listed.text
    both = _send(server, "GET", "/api/v1/entities?name=strict-svc&prefix=s", server.operator)
    assert "name and prefix" in _error(both, 400, "invalid_input")["message"]


def test_bodies_nested_too_deep_or_not_utf8_are_json_400s(server: Server) -> None:
    def raw(body: bytes) -> httpx.Response:
        return httpx.post(server.url + "/api/v1/memories", content=body, timeout=120,
                          headers={"Authorization": f"Bearer {ALICE}",
                                   "Content-Type": "application/json"})  # fmt: skip

    deep = raw(b"[" * 100_000)
    assert "deeper" in _error(deep, 400, "invalid_input")["message"]
    assert deep.headers["content-type"] == "application/json"
    nested: Any = "leaf"
    for _ in range(60):
        nested = {"k": nested}
    _error(_post(server, "/api/v1/memories", ALICE, {"content": "deep", "context": nested}),
           400, "invalid_input")  # fmt: skip
    text = '{"content": "Encoding: the wiki moved to wiki.internal"}'
    for body in (text.encode("utf-16"), text.encode("utf-16-le"), text.encode("utf-32"),
                 text.encode("latin-1").replace(b"wiki.", b"wiki\xe9.")):  # fmt: skip
        assert "UTF" in _error(raw(body), 400, "invalid_input")["message"], body[:8]
    assert raw(b"\xef\xbb\xbf" + text.encode()).status_code == 200  # UTF-8, with a BOM
    # A field named twice: which was meant? (A JSON reader keeps the last one silently.)
    twice = b'{"content": "the wiki moved", "content": "the wiki stayed"}'
    assert "'content' twice" in _error(raw(twice), 400, "invalid_input")["message"]
    nested = b'{"content": "x", "context": {"ticket": "A-1", "ticket": "A-2"}}'
    assert "'ticket' twice" in _error(raw(nested), 400, "invalid_input")["message"]


def test_an_open_loopback_server_refuses_a_foreign_origin(tmp_path: Path) -> None:
    with serve_http(tmp_path / "open", open_loopback=True) as server:
        body = {"content": "Open server: the printer is on floor 3"}
        foreign = _post(server, "/api/v1/memories", None, body, Origin="http://evil.example")
        _error(foreign, 403, "forbidden")
        plain = _post(server, "/api/v1/memories", None, body)  # no browser, no Origin
        assert plain.status_code == 200 and plain.json()["status"] == "stored", plain.text
        own = _post(server, "/api/v1/recall", None, {"query": "printer"}, Origin=server.url)
        assert own.status_code == 200 and own.json()["results"], own.text


class _NoHub:
    """Only what building the routes reads (nothing is called)."""

    home = Path("/nonexistent/ferrex-home")  # never written: nothing is called

    class caller:
        namespace = None
        visibility = None
