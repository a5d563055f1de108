"""Two ferrex servers on two data directories sharing one journal on PostgreSQL: each
recalls the other's memories, concurrent stores keep the log contiguous and chained, and
conflicting facts stored at once on both resolve the same way on both."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.models import Embedder
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode
from journal.postgres import PostgresJournal
from projections.documents import subject_key

ALICE = Caller(agent_id="alice")
BOB = Caller(agent_id="bob")


def _server(home: Path, url: str, embedder: Embedder) -> Service:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    config = home / "ferrex.toml"
    config.write_text(f'[journal]\nurl = "{url}"\n')
    config.chmod(0o600)  # it holds the database password
    return Service(App(home=home, config=load(home, None), _embedder=embedder))


@pytest.fixture
def servers(tmp_path: Path, pg_url: str, shared_embedder: Embedder) -> Any:
    a = _server(tmp_path / "a", pg_url, shared_embedder)
    b = _server(tmp_path / "b", pg_url, shared_embedder)
    yield a, b
    a.close()
    b.close()


def _recalled(service: Service, query: str, caller: Caller) -> set[str]:
    doc = service.call(decode("recall", {"query": query, "limit": 20}), caller)
    return {r["content"] for r in doc["results"]}


def test_each_server_recalls_the_others_memories(servers: tuple[Service, Service]) -> None:
    a, b = servers
    stored = a.call(
        decode("store", {"content": "The api server deploys on Fridays", "visibility": "shared"}),
        ALICE,
    )
    assert stored["status"] == "stored"
    assert "The api server deploys on Fridays" in _recalled(b, "when does the api deploy", BOB)
    b.call(
        decode("store", {"content": "Postgres migrations run at 03:00", "visibility": "shared"}),
        BOB,
    )
    assert "Postgres migrations run at 03:00" in _recalled(a, "postgres migrations", ALICE)
    # a private memory stays private across servers too
    b.call(decode("store", {"content": "Bob's locker code is 4471", "visibility": "private"}), BOB)
    assert "Bob's locker code is 4471" not in _recalled(a, "locker code", ALICE)
    assert "Bob's locker code is 4471" in _recalled(a, "locker code", BOB)


def test_concurrent_stores_on_both_servers_keep_one_chain(
    servers: tuple[Service, Service], pg_url: str
) -> None:
    a, b = servers
    errors: list[BaseException] = []

    def store(service: Service, who: str) -> None:
        try:
            for i in range(8):
                service.call(
                    decode("store",
                    {"content": f"{who} noted incident INC-{i} on host-{who}-{i * 7}",
                     "visibility": "shared"}),
                    ALICE,
                )  # fmt: skip
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=store, args=(s, w)) for s, w in ((a, "ant"), (b, "bee"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with PostgresJournal.open(pg_url) as journal:
        positions = [r.position for r in journal.read()]
        assert positions == list(range(1, len(positions) + 1)) and len(positions) >= 16
        assert journal.verify().ok
    seen_a, seen_b = (_recalled(s, "incident noted on host", ALICE) for s in (a, b))
    assert seen_a == seen_b and len(seen_a) == 16


def test_conflicting_facts_at_once_resolve_the_same_way_on_both(
    servers: tuple[Service, Service],
) -> None:
    a, b = servers
    results: dict[str, dict[str, Any]] = {}
    start = threading.Barrier(2)

    def fact(service: Service, name: str, obj: str) -> None:
        start.wait()
        results[name] = service.call(
            decode("store",
            {"subject": "checkout-service", "predicate": "postgres version", "object": obj,
             "visibility": "shared"}),
            ALICE,
        )  # fmt: skip

    threads = [
        # Two versions: a value a thing has one of, so the second surely replaces the first.
        threading.Thread(target=fact, args=(a, "a", "15.4")),
        threading.Thread(target=fact, args=(b, "b", "16.2")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = {results["a"]["id"], results["b"]["id"]}
    superseded = [s for r in results.values() for s in r["superseded"]]
    assert len(ids) == 2 and len(superseded) == 1, results  # the second replaced the first

    def facts(service: Service) -> list[tuple[str, float | None, str | None]]:
        service.call(decode("recall", {"query": "checkout-service"}), ALICE)  # catches up
        model = service.app.projections().read_model
        return [
            (m.memory_id, m.t_invalid, m.superseded_by)
            for m in model.subject_facts("default", subject_key("checkout-service"))
        ]

    on_a, on_b = facts(a), facts(b)
    assert on_a == on_b
    assert [m for m, t_invalid, _ in on_a if t_invalid is None] == [
        next(iter(ids - set(superseded)))
    ]
