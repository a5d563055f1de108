"""The change stream (``GET /api/v1/changes``) against a real ``ferrex serve --http``, read by
a real server-sent-events reader (httpx-sse): only what the caller may see, resumable from
``Last-Event-ID``, capped per principal and within ``server.max_connections``, bad input
refused."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import ServerSentEvent, connect_sse

from tests.e2e.api_helpers import ALICE, BOB, Server, serve_http

CHANGES = "/api/v1/changes"


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _store(server: Server, token: str, content: str, visibility: str) -> str:
    answer = httpx.post(f"{server.url}/api/v1/memories", headers=_auth(token), timeout=120,
                        json={"content": content, "visibility": visibility})  # fmt: skip
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def _forget(server: Server, token: str, memory_id: str) -> None:
    answer = httpx.delete(f"{server.url}/api/v1/memories/{memory_id}", headers=_auth(token),
                          timeout=120)  # fmt: skip
    assert answer.status_code == 200, answer.text


def _changes(event: ServerSentEvent) -> list[tuple[str, str]]:
    return [(m["id"], m["change"]) for m in json.loads(event.data)["memories"]]


class Reader:
    """A live stream read on its own thread, its ``change`` events in a queue."""

    def __init__(self, url: str, token: str, headers: dict[str, str] | None = None) -> None:
        self.events: queue.Queue[ServerSentEvent] = queue.Queue()
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.failure: BaseException | None = None
        self._client = httpx.Client(timeout=httpx.Timeout(10, read=None))
        self._thread = threading.Thread(target=self._run, args=(url, token, headers or {}))
        self._thread.start()
        assert self.ready.wait(60) and self.failure is None, self.failure

    def _run(self, url: str, token: str, headers: dict[str, str]) -> None:
        try:
            with connect_sse(
                self._client, "GET", url + CHANGES, headers={**_auth(token), **headers}
            ) as source:
                source.response.raise_for_status()
                self.ready.set()
                for event in source.iter_sse():
                    if self.stop.is_set():
                        return
                    if event.event == "change":
                        self.events.put(event)
        except BaseException as exc:  # reported by the test thread
            if not self.stop.is_set():
                self.failure = exc
            self.ready.set()

    def next(self, timeout: float = 60) -> ServerSentEvent:
        return self.events.get(timeout=timeout)

    def close(self) -> None:
        self.stop.set()
        self._client.close()  # the reader's connection, closed under it
        self._thread.join(timeout=30)
        assert not self._thread.is_alive()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    config = "[server]\nmax_streams_per_principal = 2\nmax_connections = 6\n"
    with serve_http(tmp_path_factory.mktemp("changes") / "home", config=config) as served:
        yield served


def _replay(server: Server, token: str, **params: Any) -> list[ServerSentEvent]:
    """Every change event from ``after`` on, the stream ending once caught up."""
    headers = _auth(token) | params.pop("headers", {})
    with httpx.Client(timeout=120) as client, connect_sse(
        client, "GET", server.url + CHANGES, params={**params, "until_idle": "true"},
        headers=headers,
    ) as source:  # fmt: skip
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [e for e in source.iter_sse() if e.event == "change"]


def test_a_stream_shows_only_what_its_caller_sees_and_resumes_from_last_event_id(
    server: Server,
) -> None:
    bob = Reader(server.url, BOB)
    try:
        private = _store(server, ALICE, "alice's private note: the cellar key is blue", "private")
        shared = _store(server, ALICE, "the team standup moved to 09:30 on Mondays", "shared")
        first = bob.next()
        # The private memory's record came first in the journal; bob hears of the shared only.
        assert _changes(first) == [(shared, "stored")]
        assert first.id == str(json.loads(first.data)["position"])
        _forget(server, ALICE, private)
        _forget(server, ALICE, shared)
        gone = bob.next()
        assert _changes(gone) == [(shared, "forgotten")]
        sentinel = _store(server, BOB, "bob's shared note: the build bot restarts at noon",
                          "shared")  # fmt: skip
        assert _changes(bob.next()) == [(sentinel, "stored")]
        assert bob.events.empty()
    finally:
        bob.close()
    # Resumed from the first event's id: what came after it, not it.
    resumed = _replay(server, BOB, headers={"Last-Event-ID": first.id})
    assert [c for e in resumed for c in _changes(e)] == [(shared, "forgotten"),
                                                         (sentinel, "stored")]  # fmt: skip
    # alice sees her private memory stored and forgotten; the operator sees everything.
    mine = [c for e in _replay(server, ALICE, after=0) for c in _changes(e)]
    assert (private, "stored") in mine and (private, "forgotten") in mine
    every = [c for e in _replay(server, server.operator, after=0) for c in _changes(e)]
    assert mine == every
    # Last-Event-ID wins over after.
    again = _replay(server, BOB, after=0, headers={"Last-Event-ID": first.id})
    assert [e.id for e in again] == [e.id for e in resumed]


def test_a_stream_opened_at_the_head_says_where_it_starts_so_a_reconnect_misses_nothing(
    server: Server,
) -> None:
    """A client that loses the connection before the first change reconnects from the
    position the stream began at: the write made while it was away comes to it."""
    # Read for less than the quiet heartbeat's 15 s: the first event comes at once.
    with httpx.Client(timeout=httpx.Timeout(30, read=10)) as client, connect_sse(
        client, "GET", server.url + CHANGES, headers=_auth(BOB)
    ) as source:  # fmt: skip
        first = next(e for e in source.iter_sse() if e.event != "message")  # not the retry
    assert first.event == "heartbeat" and first.id.isdigit(), first
    assert json.loads(first.data) == {"position": int(first.id)}
    away = _store(server, ALICE, "written while bob's client was away: the VPN moved", "shared")
    back = _replay(server, BOB, headers={"Last-Event-ID": first.id})
    assert [c for e in back for c in _changes(e)] == [(away, "stored")]


def _open(client: httpx.Client, url: str, token: str) -> httpx.Response:
    request = client.build_request("GET", url + CHANGES, headers=_auth(token))
    return client.send(request, stream=True)


def test_streams_are_capped_per_principal_and_within_max_connections(server: Server) -> None:
    # max_streams_per_principal = 2, max_connections = 6: three streams in all.
    held: list[httpx.Response] = []
    with httpx.Client(timeout=httpx.Timeout(30, read=None)) as client:
        try:
            for _ in range(2):
                held.append(_open(client, server.url, ALICE))
                assert held[-1].status_code == 200
            third = httpx.get(server.url + CHANGES, headers=_auth(ALICE), timeout=30)
            assert third.status_code == 429, third.text
            assert third.json()["error"]["code"] == "too_many_streams"
            assert third.headers["Retry-After"]
            held.append(_open(client, server.url, BOB))
            assert held[-1].status_code == 200
            full = httpx.get(server.url + CHANGES, headers=_auth(server.operator), timeout=30)
            assert full.status_code == 429 and "max_connections" in full.json()["error"]["hint"]
            # The other half of the connections still serves requests.
            stats = httpx.get(f"{server.url}/api/v1/stats", headers=_auth(server.operator))
            assert stats.status_code == 200
            held.pop(0).close()  # one of alice's ends: the operator's stream fits again
            deadline = time.monotonic() + 30
            while True:
                again = _open(client, server.url, server.operator)
                if again.status_code == 200:
                    held.append(again)
                    break
                again.close()
                assert time.monotonic() < deadline, "a closed stream was never released"
                time.sleep(0.2)
        finally:
            for response in held:
                response.close()


@pytest.mark.parametrize(
    ("params", "headers", "status", "code"),
    [
        ({"after": "x"}, {}, 400, "invalid_input"),
        ({"after": "-1"}, {}, 400, "invalid_input"),
        ({}, {"Last-Event-ID": "twelve"}, 400, "invalid_input"),
        ({"since": "0"}, {}, 400, "invalid_input"),
        ({"until_idle": "yes"}, {}, 400, "invalid_input"),
        ({}, {"Authorization": "Bearer wrong"}, 401, "unauthorized"),
    ],
)
def test_bad_input_is_refused_before_any_stream(
    server: Server, params: dict[str, str], headers: dict[str, str], status: int, code: str
) -> None:
    answer = httpx.get(server.url + CHANGES, params=params,
                       headers=_auth(ALICE) | headers, timeout=30)  # fmt: skip
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code


def test_a_server_told_to_stop_ends_its_open_streams_first(tmp_path: Path) -> None:
    """SIGTERM with a stream open: the stream ends (as a lost connection, which a client
    resumes from), the process exits 0 and logs no cancelled task or traceback; it waited
    out the graceful-shutdown deadline and cancelled the stream's task."""
    with serve_http(tmp_path / "home") as served:
        reader = Reader(served.url, BOB)
        served.process.terminate()
        _, err = served.process.communicate(timeout=60)
        reader.close()
        assert served.process.returncode == 0, err
        assert "graceful shutdown exceeded" not in err and "Traceback" not in err, err
