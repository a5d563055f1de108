"""reflect and stats through the real service: one set of counts, pending recall hits counted
at once, per-namespace staleness, RFC 3339 times, dates as 00:00 UTC."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode

RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
OPERATOR = Caller()

# Episodes are aging from the moment they are stored (fresh below 0 days), except in "ops";
# facts keep the defaults (fresh for 90 days).
CONFIG = """
[staleness.defaults]
episodic = { fresh = 0, aging = 1, stale = 1 }

[staleness.namespaces.ops]
episodic = { fresh = 365, aging = 400, stale = 400 }
"""


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text(CONFIG)
    service = Service(App(home=home, config=load(home, None)))
    try:
        yield service
    finally:
        service.close()


def store(service: Service, **fields: object) -> str:
    return str(service.call(decode("store", fields), OPERATOR)["id"])


def attention(service: Service) -> tuple[dict[str, int], dict[str, object]]:
    stats = service.call(decode("stats", {}), OPERATOR)
    reflect = service.call(decode("reflect", {"limit": 1}), OPERATOR)
    assert stats["needs_attention"] == reflect["counts"], "stats and reflect disagree"
    return stats["needs_attention"], reflect


def test_stats_and_reflect_agree_and_count_pending_recalls(service: Service) -> None:
    rota = store(service, content="The on-call rota moves to Tuesdays from March",
                 entities=["on-call"], valid_from="2026-03-02")  # fmt: skip
    deploy = store(service, content="Friday deploys are frozen until the audit ends")
    store(service, content="The ops team renamed the pager channel", namespace="ops")
    # A shared fact and an agent's private one that disagrees: both stand (a private memory
    # never supersedes a shared one), so the operator sees a contradiction. Multi-valued
    # facts never contradict.
    store(service, subject="billing", predicate="owned by", object="payments team")
    owner = {"subject": "billing", "predicate": "owner", "object": "platform team"}
    service.call(decode("store", owner), Caller(agent_id="ops-bot"))
    store(service, subject="search", predicate="uses", object="redis", multi_valued=True)
    store(service, subject="search", predicate="depends on", object="kafka", multi_valued=True)

    counts, reflect = attention(service)
    # The two default-namespace episodes are aging; the ops one is fresh by its namespace.
    assert counts == {"stale": 0, "aging": 2, "unvalidated": 0, "conflicts": 1,
                      "possible_conflicts": 0, "forget_candidates": 2}  # fmt: skip
    assert len(reflect["forget_candidates"]) == 1  # type: ignore[arg-type]  # limit 1, count 2
    detailed = service.call(decode("stats", {"detailed": True}), OPERATOR)
    assert detailed["staleness"] == {"aging": 2, "fresh": 5, "superseded": 0}

    found = service.call(decode("recall", {"query": "on-call rota Tuesdays", "limit": 1}), OPERATOR)
    assert [r["id"] for r in found["results"]] == [rota]
    assert len(service.app.access) == 1, "the hit is still pending, not journaled"

    counts, reflect = attention(service)
    # Recalled a moment ago: fresh again, so neither aging nor a candidate to forget.
    assert counts["aging"] == 1 and counts["forget_candidates"] == 1
    candidates = reflect["forget_candidates"]
    assert [c["id"] for c in candidates] == [deploy]  # type: ignore[index, union-attr]

    service.flush_access()
    assert len(service.app.access) == 0
    assert attention(service)[0] == counts, "a journaled hit is counted once, not twice"


def test_every_time_in_an_answer_is_rfc3339_utc_in_seconds(service: Service) -> None:
    rota = store(service, content="The on-call rota moves to Tuesdays", entities=["on-call"],
                 valid_from="2026-03-02")  # fmt: skip
    store(service, content="An old note about the pager", entities=["pager"],
          valid_from="2020-01-01T10:11:12.345+02:00")  # fmt: skip
    first = service.call(decode("recall", {"query": "on-call rota", "limit": 1}), OPERATOR)
    service.call(decode("recall", {"query": "on-call rota", "validate_ids": [rota], "limit": 1}),
                 OPERATOR)  # fmt: skip
    service.flush_access()
    again = service.call(decode("recall", {"query": "on-call rota", "limit": 1}), OPERATOR)[
        "results"
    ][0]
    assert first["results"][0]["event_time"] == "2026-03-02T00:00:00Z"
    fresh = again["freshness"]
    assert RFC3339.fullmatch(fresh["last_accessed"]) and RFC3339.fullmatch(fresh["last_validated"])
    reflect = service.call(decode("reflect", {}), OPERATOR)
    dormant = {d["name"]: d["last_referenced"] for d in reflect["dormant_entities"]}
    assert dormant["pager"] == "2020-01-01T08:11:12Z"
    assert all(RFC3339.fullmatch(t) for t in dormant.values())
    for candidate in reflect["forget_candidates"]:
        assert candidate["last_accessed"] is None or RFC3339.fullmatch(candidate["last_accessed"])


def test_dates_alone_bound_a_recall_at_midnight_utc(service: Service) -> None:
    note = store(service, content="The staging cluster moved region", valid_from="2026-11-20")

    def ids(**bounds: str) -> list[str]:
        doc = service.call(
            decode("recall", {"query": "staging cluster region", **bounds}), OPERATOR
        )
        return [r["id"] for r in doc["results"]]

    assert ids(after="2026-11-20") == [note]
    assert ids(before="2026-11-20") == []
    assert ids(before="2026-11-21", as_of="2026-11-21") == [note]
    with pytest.raises(Exception, match="has no timezone"):
        ids(after="2026-11-20T00:00:00")
