"""The read side of /api/v1 over a real ``ferrex serve --http``: a page of memories at a time
(cursor, filters, sort) as each agent may see them, and reflect."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.api_helpers import ALICE, BOB, Server, serve_http


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve_http(tmp_path_factory.mktemp("api-read") / "home") as served:
        memories = [
            {"content": f"Release note {i}: ledger-api build {i} passed on runner-{i % 3}",
             "visibility": "shared", "valid_from": f"2026-11-{i + 1:02d}T09:00:00Z",
             "source": "ci" if i % 2 else "chat", "entities": ["ledger-api"],
             "context": {"tags": ["release", *(["flaky"] if i % 3 == 0 else [])],
                         "team": "ledger"}}
            for i in range(7)
        ]  # fmt: skip
        memories.append({"subject": "ledger-api", "predicate": "runs on", "object": "postgres 15",
                         "visibility": "shared"})  # fmt: skip
        stored = _get_or_post(served, "POST", "/api/v1/memories", ALICE, {"memories": memories})
        assert stored["stored"] == 8, stored
        _get_or_post(served, "POST", "/api/v1/memories", ALICE, {
            "subject": "ledger-api", "predicate": "runs on", "object": "postgres 16",
            "visibility": "shared"})  # fmt: skip
        _get_or_post(served, "POST", "/api/v1/memories", ALICE, {
            "content": "Alice's private draft about the ledger-api migration",
            "context": {"tags": ["secret-plan", "release"], "team": "ledger"}})  # fmt: skip
        yield served


def _get_or_post(
    server: Server, method: str, path: str, token: str, body: Any = None, **params: Any
) -> dict[str, Any]:
    answer = httpx.request(method, server.url + path, json=body, params=params,
                           headers={"Authorization": f"Bearer {token}"}, timeout=120)  # fmt: skip
    assert answer.status_code == 200, answer.text
    doc: dict[str, Any] = answer.json()
    return doc


def _all_pages(server: Server, token: str, **params: Any) -> list[list[dict[str, Any]]]:
    pages, cursor = [], None
    while True:
        extra = {"cursor": cursor} if cursor else {}
        doc = _get_or_post(server, "GET", "/api/v1/memories", token, **params, **extra)
        pages.append(doc["memories"])
        cursor = doc["next_cursor"]
        if cursor is None:
            return pages


def test_pages_follow_the_cursor_without_gaps_or_repeats(server: Server) -> None:
    pages = _all_pages(server, server.operator, limit=3)
    assert [len(p) for p in pages] == [3, 3, 3]  # 9 current: the old postgres fact superseded
    ids = [m["id"] for p in pages for m in p]
    assert len(set(ids)) == 9
    created = [m["created_at"] for p in pages for m in p]
    assert created == sorted(created, reverse=True)
    oldest = _all_pages(server, server.operator, limit=4, sort="created")
    assert [m["id"] for p in oldest for m in p] == ids[::-1]


def test_filters_and_privacy(server: Server) -> None:
    def ids(token: str, **params: Any) -> list[str]:
        return [m["id"] for p in _all_pages(server, token, **params) for m in p]

    assert len(ids(BOB)) == 8  # alice's private draft is not bob's to list
    assert len(ids(ALICE)) == 9
    assert len(ids(ALICE, visibility="private")) == 1
    assert len(ids(BOB, types="semantic")) == 1
    superseded = _all_pages(server, BOB, state="superseded")[0]
    assert [m["superseded_by"] is not None for m in superseded] == [True]
    assert len(ids(BOB, state="all", types="semantic")) == 2
    assert len(ids(BOB, source="ci")) == 3
    window = _all_pages(server, BOB, after="2026-11-03T00:00:00Z", before="2026-11-05T00:00:00Z",
                        sort="valid_from")[0]  # fmt: skip
    assert [m["summary"][:14] for m in window] == ["Release note 2", "Release note 3"]
    assert len(ids(BOB, entity="ledger-api", types="episodic")) == 7
    assert ids(BOB, entity="no-such-thing") == []


def test_bad_parameters_are_invalid_input(server: Server) -> None:
    # A kind or a visibility no memory can have is named, not matched by nothing.
    for params in ({"cursor": "garbage"}, {"sort": "size"}, {"limit": "0"}, {"colour": "red"},
                   {"after": "yesterday"}, {"types": "fact"}, {"types": "semantic,Semantic"},
                   {"visibility": "public"}):  # fmt: skip
        answer = httpx.get(server.url + "/api/v1/memories", params=params, timeout=60,
                           headers={"Authorization": f"Bearer {BOB}"})  # fmt: skip
        assert answer.status_code == 400, (params, answer.text)
        assert answer.json()["error"]["code"] == "invalid_input"


def test_a_cursor_is_refused_under_another_sort(server: Server) -> None:
    # A cursor of a list by event time, sent back with the default sort (newest stored first),
    # gave an empty last page: every memory seemed listed when none of the rest was.
    first = _get_or_post(server, "GET", "/api/v1/memories", BOB, limit=2, sort="valid_from")
    assert first["next_cursor"] is not None
    for sort in ("-created", "created", "-valid_from"):
        answer = httpx.get(server.url + "/api/v1/memories", timeout=60,
                           params={"limit": 2, "sort": sort, "cursor": first["next_cursor"]},
                           headers={"Authorization": f"Bearer {BOB}"})  # fmt: skip
        assert answer.status_code == 400, (sort, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "invalid_input" and "sort=valid_from" in error["message"], error
        assert "cursor" in error["hint"], error
    # The same sort goes on where the first page ended.
    pages = [first["memories"]]
    cursor = first["next_cursor"]
    while cursor is not None:
        doc = _get_or_post(server, "GET", "/api/v1/memories", BOB, limit=2, sort="valid_from",
                           cursor=cursor)  # fmt: skip
        pages.append(doc["memories"])
        cursor = doc["next_cursor"]
    listed = [m["id"] for p in pages for m in p]
    assert listed == [m["id"] for p in _all_pages(server, BOB, sort="valid_from") for m in p]
    assert len(listed) == 8


def test_reflect_over_the_api(server: Server) -> None:
    doc = _get_or_post(server, "GET", "/api/v1/reflect", BOB, limit=2)
    assert set(doc) >= {"counts", "stale", "unvalidated", "contradictions"}
    assert len(doc["unvalidated"]) <= 2
    assert all("private draft" not in item["summary"] for item in doc["unvalidated"])


def test_tags_filter_the_list_and_are_counted_as_each_caller_sees_them(server: Server) -> None:
    # Tags are a convention over context (its "tags" list), not a field of their own.
    flaky = _get_or_post(server, "GET", "/api/v1/memories", BOB, tag="flaky", limit=50)
    assert sorted(m["summary"][:14] for m in flaky["memories"]) == [
        "Release note 0", "Release note 3", "Release note 6"]  # fmt: skip
    both = _get_or_post(server, "GET", "/api/v1/memories", BOB, tag=["flaky", "release"],
                        context="team:ledger", limit=50)  # fmt: skip
    assert [m["id"] for m in both["memories"]] == [m["id"] for m in flaky["memories"]]
    assert _get_or_post(server, "GET", "/api/v1/memories", BOB, tag="secret-plan")[
        "memories"] == []  # fmt: skip
    mine = _get_or_post(server, "GET", "/api/v1/memories", ALICE, tag="secret-plan")
    assert [m["summary"][:15] for m in mine["memories"]] == ["Alice's private"]
    bob = _get_or_post(server, "GET", "/api/v1/tags", BOB)
    assert bob == {"key": "tags", "more": False, "tags": [
        {"value": "release", "count": 7}, {"value": "flaky", "count": 3}]}  # fmt: skip
    alice = _get_or_post(server, "GET", "/api/v1/tags", ALICE)
    assert alice["tags"] == [{"value": "release", "count": 8}, {"value": "flaky", "count": 3},
                             {"value": "secret-plan", "count": 1}]  # fmt: skip
    teams = _get_or_post(server, "GET", "/api/v1/tags", ALICE, key="team", limit=1)
    assert teams == {"key": "team", "more": False, "tags": [{"value": "ledger", "count": 8}]}
    one = _get_or_post(server, "GET", "/api/v1/tags", ALICE, limit=1)
    assert one["more"] is True and len(one["tags"]) == 1


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/memories", {"context": "team"}),
        ("/api/v1/memories", {"context": 'te"am:ledger'}),
        ("/api/v1/memories", {"tag": ""}),
        ("/api/v1/tags", {"key": "a\\b"}),
        ("/api/v1/tags", {"key": ""}),
        ("/api/v1/tags", {"limit": "0"}),
        ("/api/v1/tags", {"state": "old"}),
        ("/api/v1/tags", {"tag": "x"}),
    ],
)
def test_bad_tag_and_context_filters_are_refused(
    server: Server, path: str, params: dict[str, str]
) -> None:
    answer = httpx.get(server.url + path, params=params,
                       headers={"Authorization": f"Bearer {BOB}"}, timeout=60)  # fmt: skip
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_input"


def test_a_time_without_a_timezone_is_refused_as_the_tools_refuse_it(server: Server) -> None:
    """``GET /api/v1/memories?after=2026-11-03T00:00:00`` read the time as UTC while recall
    (the tools, the CLI, ``POST /api/v1/recall``) refuses it: ferrex guesses no timezone."""
    headers = {"Authorization": f"Bearer {BOB}"}
    for name in ("after", "before"):
        naive = {name: "2026-11-03T00:00:00"}
        listed = httpx.get(server.url + "/api/v1/memories", params=naive, headers=headers,
                           timeout=60)  # fmt: skip
        recalled = httpx.post(server.url + "/api/v1/recall", json={"query": "ledger", **naive},
                              headers=headers, timeout=60)  # fmt: skip
        assert listed.status_code == recalled.status_code == 400, (listed.text, recalled.text)
        error = listed.json()["error"]
        assert error == recalled.json()["error"], (error, recalled.text)
        assert error["code"] == "invalid_input"
        assert error["message"] == f"{name} 2026-11-03T00:00:00 has no timezone", error
    # an offset, a Z or a date alone (that day at 00:00 UTC) still reads, as one time
    pages = [
        _get_or_post(server, "GET", "/api/v1/memories", BOB, after=when)["memories"]
        for when in ("2026-11-03T00:00:00Z", "2026-11-03T01:00:00+01:00", "2026-11-03")
    ]
    assert pages[0] and pages[0] == pages[1] == pages[2], pages
    # and the OpenAPI document the server publishes says so, where a client generator reads it
    document = httpx.get(server.url + "/api/v1/openapi.json", timeout=60).json()
    for path in ("/api/v1/memories", "/api/v1/recall"):
        described = {p["name"]: p["description"]
                     for p in document["paths"][path]["get"]["parameters"]}  # fmt: skip
        for name in ("after", "before"):
            assert "with a timezone" in described[name], (path, name, described[name])
            assert "without a timezone is refused" in described[name], (path, name)
    assert all(m["event_time"] >= "2026-11-03" for m in pages[0]), pages[0]
