"""The read rules every surface shares (``ferrex/read/seen.py``), through the real service:
one history walk for the memory resource and the dashboard (both kinds of replacement), and
an expired memory hidden on every surface — the tools, the resources and the dashboard's
reads (its pages and ``/api/v1/`` call exactly these entries)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import Refused
from ferrex.porting.dump_read import parse_line
from ferrex.porting.restore import restore_many
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode

OPERATOR, ALICE = Caller(), Caller(agent_id="alice")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    home = tmp_path / "home"
    service = Service(App(home=home, config=load(home, None)))
    try:
        yield service
    finally:
        service.close()


def store(service: Service, caller: Caller = OPERATOR, **fields: object) -> dict[str, Any]:
    answer = service.call(decode("store", fields), caller)
    assert answer["status"] == "stored", answer
    return answer


def resource(service: Service, uri: str, caller: Caller = OPERATOR) -> dict[str, Any]:
    return service.call(decode("resource", {"uri": uri}), caller)


def dashboard(service: Service, caller: Caller = OPERATOR, **args: object) -> dict[str, Any]:
    return service.call(decode("dashboard", args), caller)


def test_one_history_walk_shows_an_automatic_supersede_from_either_end(service: Service) -> None:
    old = store(service, subject="billing-db", predicate="runs on", object="PostgreSQL 15")
    new = store(service, subject="billing-db", predicate="runs on", object="PostgreSQL 16")
    assert new["superseded"] == [old["id"]], "an automatic supersede: no `supersedes` given"
    explicit = store(service, content="billing-db moved to PostgreSQL 17 on the new cluster",
                     supersedes=new["id"])  # fmt: skip
    chain = [old["id"], new["id"], explicit["id"]]
    for memory_id in chain:
        doc = resource(service, f"ferrex://memory/{memory_id}")
        assert [h["id"] for h in doc["history"]] == chain, memory_id
        versions = dashboard(service, view="history", id=memory_id)["versions"]
        assert [v["id"] for v in versions] == chain, memory_id
        assert [v["current"] for v in versions] == [i == memory_id for i in chain]
    doc = resource(service, f"ferrex://memory/{explicit['id']}")
    assert doc["history"][0]["t_invalid"] == doc["history"][1]["t_valid"]


def test_a_history_shows_only_versions_the_caller_sees(service: Service) -> None:
    shared = store(service, content="The release train leaves on Thursdays")
    private = store(service, ALICE, content="The release train leaves on Fridays (my notes)",
                    visibility="private")  # fmt: skip
    assert private["superseded"] == [], "a private memory supersedes nothing shared"
    mine = store(service, ALICE, content="My release notes now say Mondays",
                 visibility="private", supersedes=private["id"])  # fmt: skip
    doc = resource(service, f"ferrex://memory/{mine['id']}", ALICE)
    assert [h["id"] for h in doc["history"]] == [private["id"], mine["id"]]
    with pytest.raises(Refused) as hidden:
        resource(service, f"ferrex://memory/{mine['id']}", Caller(agent_id="bob"))
    assert hidden.value.code == "not_found"
    doc = resource(service, f"ferrex://memory/{shared['id']}", Caller(agent_id="bob"))
    assert [h["id"] for h in doc["history"]] == [shared["id"]]


EXPIRED = "The ghost-printer on floor 3 is being repaired until noon"


def expired_memory(service: Service) -> str:
    """A memory whose time to live ran out before the owner's sweep forgot it: restored from
    a dump with an ``expires_at`` in the past (the sweep runs only in the owner)."""
    line = {"id": "mem_expired_1", "type": "episodic", "content": EXPIRED,
            "entities": ["ghost-printer"], "t_valid": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z"}  # fmt: skip
    (outcome,) = restore_many(service.app.writer(), [parse_line(line, "line 1")])
    assert outcome.status == "stored"
    return outcome.id


def test_an_expired_memory_is_hidden_on_every_surface(service: Service) -> None:
    kept = store(service, content="The main printer on floor 2 works again",
                 entities=["main-printer"])  # fmt: skip
    gone = expired_memory(service)
    everything: list[dict[str, Any]] = []

    def read(doc: dict[str, Any]) -> dict[str, Any]:
        everything.append(doc)
        return doc

    for caller in (OPERATOR, ALICE):
        recall = read(
            service.call(decode("recall", {"query": "ghost-printer repaired floor 3"}), caller)
        )
        assert kept["id"] in {r["id"] for r in recall["results"]} or recall["results"] == []
        assert gone not in {r["id"] for r in recall["results"]}
        stats = read(service.call(decode("stats", {"detailed": True}), caller))
        assert (stats["total"], stats["expiring"], stats["entities"]) == (1, 0, 1)
        read(service.call(decode("reflect", {}), caller))
        recent = read(resource(service, "ferrex://recent", caller))
        assert [m["id"] for m in recent["memories"]] == [kept["id"]]
        for uri in (f"ferrex://memory/{gone}", "ferrex://entity/ghost-printer"):
            with pytest.raises(Refused) as hidden:
                resource(service, uri, caller)
            assert hidden.value.code == "not_found", uri
        # The dashboard's reads (memory page, entity page, entity list, /api/v1/history).
        with pytest.raises(Refused) as hidden:
            dashboard(service, caller, view="history", id=gone)
        assert hidden.value.code == "not_found"
        with pytest.raises(Refused) as hidden:
            dashboard(service, caller, view="entity", name="ghost-printer")
        assert hidden.value.code == "not_found"
        names = read(dashboard(service, caller, view="entities"))
        assert names["names"] == ["main-printer"] and names["total"] == 1
        printer = read(dashboard(service, caller, view="entity", name="main-printer"))
        assert [m["id"] for m in printer["memories"]] == [kept["id"]]
        text = json.dumps(everything).replace("ghost-printer repaired floor 3", "…")
        assert gone not in text and "ghost" not in text, "not even the expired memory's name"
    filtered = service.call(
        decode("recall", {"query": "printer", "entities": ["ghost-printer"]}), OPERATOR
    )
    assert filtered["results"] == [], "an entity only an expired memory names is unknown"


def test_an_expired_fact_contradicts_nothing(service: Service) -> None:
    line = {"id": "mem_expired_fact", "type": "semantic", "subject": "billing-db",
            "predicate": "runs on", "object": "PostgreSQL 15", "t_valid": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z"}  # fmt: skip
    restore_many(service.app.writer(), [parse_line(line, "line 1")])
    new = store(service, subject="billing-db", predicate="runs on", object="PostgreSQL 16")
    assert new["superseded"] == [], "an expired fact is gone: nothing to supersede"
    found = service.call(decode("recall", {"query": "what does billing-db run on"}), OPERATOR)
    (result,) = [r for r in found["results"] if r["id"] == new["id"]]
    assert result["contradiction"] is False
    assert "mem_expired_fact" not in {r["id"] for r in found["results"]}
    assert service.call(decode("reflect", {}), OPERATOR)["contradictions"] == []
