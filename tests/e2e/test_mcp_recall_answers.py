"""The right answer is never hidden, over MCP stdio, with the bundled model.

A real server process and the SDK's client. A longer answer begins with the shorter one
(the candidate depth does not follow ``limit``); a default recall hides only what the
relevance model is sure is no answer, and shows a few rows unless nothing is relevant; an
entity filter or a time window is evidence that what it admits is what a vague question is
about; an entity filter finds its entity under the spellings people use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.e2e.mcp_helpers import call, ferrex, stdio_client

SERVICES = ("billing", "ledger", "invoice", "refund", "tax", "payout", "statement", "search")
WHAT = ("deploy", "rollout", "migration", "restart", "canary", "config change", "rollback")
HOW = (
    "went out to all pods", "paused after an alarm", "was reverted", "locked a table",
    "doubled the p99 latency", "finished without errors", "needed a second attempt",
    "was announced in the team channel", "raised the error rate for ten minutes",
)  # fmt: skip


def _depth_lines() -> list[dict[str, Any]]:
    """A hundred and twenty events about changes to services, January to March 2026, worded
    from a small vocabulary (a fixed pattern, no randomness): many share some of a
    question's words, so each leg returns more than a short answer's depth and the legs
    disagree about their order."""
    lines = []
    for i in range(120):
        service = SERVICES[i % len(SERVICES)]
        what = WHAT[(i * 3) % len(WHAT)]
        how = HOW[(i * 5) % len(HOW)]
        other = SERVICES[(i * 7 + 3) % len(SERVICES)]
        text = f"The {what} of the {service} service {how}; {other} was untouched (#{i})."
        at = f"2026-{1 + i % 3:02d}-{1 + (i * 7) % 27:02d}T10:00:00Z"
        lines.append({"type": "episodic", "content": text, "valid_from": at})
    return lines


async def _ids(client: Client, args: dict[str, Any]) -> list[str]:
    doc = await call(client, "recall", args)
    return [r["id"] for r in doc["results"]]


def test_a_longer_answer_begins_with_the_shorter_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = tmp_path / "deploys.jsonl"
    lines.write_text("".join(json.dumps(x) + "\n" for x in _depth_lines()))
    done = ferrex(home, "import", str(lines), "--json")
    assert done.returncode == 0, done.stderr
    questions = (
        "which service deploys went out in March 2026?",
        "billing rollback that locked a table",
        "what slowed down search after the canary?",
        "which refund changes needed a second attempt?",
    )

    async def main() -> None:
        async with stdio_client(home) as client:
            for question in questions:
                for trimmed in (False, True):
                    args: dict[str, Any] = {"query": question}
                    if not trimmed:
                        args["min_relevance"] = 0
                    short = await _ids(client, args | {"limit": 5})
                    long = await _ids(client, args | {"limit": 50})
                    if not trimmed:
                        assert len(short) == 5, question
                    assert short == long[: len(short)], (question, trimmed, short, long[:5])

    anyio.run(main)


POOLS = ("redis", "postgres", "kafka", "nginx", "envoy", "consul", "vault", "etcd")
SITES = ("frankfurt", "dublin", "oregon", "tokyo", "sydney", "virginia", "paris")


def test_a_word_every_memory_holds_alike_does_not_choose_the_answer(tmp_path: Path) -> None:
    """Sixty alarms of one length that hold "latency" once each: BM25 scores them all alike,
    more of them than its leg returns, so which ones it returns is the engine's choice (and
    differs with the depth asked for). Meaning ranks them instead, the same at every limit."""
    home = tmp_path / "home"
    lines = tmp_path / "alarms.jsonl"
    alarms = [
        {"type": "episodic",
         "content": f"Alarm {100 + i}: latency on {POOLS[i % 8]} in {SITES[(i * 3) % 7]}.",
         "valid_from": f"2026-10-{1 + i % 28:02d}T09:00:00Z"}
        for i in range(60)
    ]  # fmt: skip
    lines.write_text("".join(json.dumps(x) + "\n" for x in alarms))
    done = ferrex(home, "import", str(lines), "--json")
    assert done.returncode == 0, done.stderr

    async def main() -> None:
        async with stdio_client(home) as client:
            # The third names a period all of them lie in: its BM25 leg is as flat.
            for question in ("latency trouble with the message broker", "slow cache in Japan",
                             "latency trouble with the message broker in October"):  # fmt: skip
                args: dict[str, Any] = {"query": question, "min_relevance": 0}
                short = await _ids(client, args | {"limit": 5})
                long = await _ids(client, args | {"limit": 50})
                assert len(short) == 5 and len(long) >= 50, question
                assert short == long[:5], question

    anyio.run(main)


# --- A small team's notes: filters, spellings, what a default answer hides --------------

TEAM = (
    ("The session Redis (redis-sessions-eu) was resized to 8 GB after evictions spiked.",
     ["redis-sessions-eu"], "2026-10-02"),
    ("redis-sessions-eu now runs with maxmemory-policy volatile-lru.",
     ["redis-sessions-eu"], "2026-10-09"),
    ("Nightly VACUUM on pg-analytics moved from 02:00 to 04:00 UTC.", ["pg-analytics"],
     "2026-10-03"),
    ("pg-analytics ran out of connections during the quarter-end report; pool raised to 80.",
     ["pg-analytics"], "2026-10-15"),
    ("Kafka brokers got a third rack; partitions were rebalanced over the weekend.",
     ["Kafka"], "2026-10-05"),
    ("dns-resolver pods were pinned to the infra nodes after two restarts.", ["dns-resolver"],
     "2026-10-07"),
    ("The checkout page shows prices with VAT for EU visitors.", ["checkout-web"],
     "2026-09-12"),
    ("Grafana dashboards for the storefront were moved into one folder.", ["Grafana"],
     "2026-09-20"),
    ("Priya is on call for the payments team this week.", ["Priya"], "2026-09-22"),
    ("The mobile app's release train moved to every second Tuesday.", ["mobile-app"],
     "2026-09-25"),
    ("Search relevance tuning: title matches now weigh twice as much as body matches.",
     ["search-api"], "2026-09-28"),
    ("Support macros for refund requests were rewritten by Dana.", ["Dana"], "2026-09-30"),
)  # fmt: skip


def _team_home(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    """A home holding :data:`TEAM`; each entity's memory ids."""
    home = tmp_path / "home"
    lines = [{"type": "episodic", "content": text, "entities": entities,
              "valid_from": f"{day}T12:00:00Z"} for text, entities, day in TEAM]  # fmt: skip
    path = tmp_path / "team.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    done = ferrex(home, "import", str(path), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    ids: dict[str, list[str]] = {}
    for line, outcome in zip(lines, sorted(report["lines"], key=lambda o: o["line"]), strict=True):
        for entity in line["entities"]:
            ids.setdefault(entity, []).append(str(outcome["id"]))
    return home, ids


def test_an_entity_filter_finds_its_entity_as_people_name_it(tmp_path: Path) -> None:
    home, ids = _team_home(tmp_path)
    spellings = {
        "session Redis": "redis-sessions-eu",  # words of the name, another order, a plural
        "Postgres analytics": "pg-analytics",  # pg: a clipping of postgres
        "Kafka cluster": "Kafka",  # the kind of thing said as well
        "DNS": "dns-resolver",  # part of the name
    }

    async def main() -> None:
        async with stdio_client(home) as client:
            for said, entity in spellings.items():
                args = {"query": "what was done to it?", "entities": [said], "min_relevance": 0}
                doc = await call(client, "recall", args)
                assert doc["unknown_entities"] == [], said
                assert {r["id"] for r in doc["results"]} == set(ids[entity]), said

    anyio.run(main)


def test_a_vague_question_under_a_filter_is_answered_without_the_verdict(
    tmp_path: Path,
) -> None:
    home, ids = _team_home(tmp_path)
    asked = (
        ({"query": "what changed?", "entities": ["pg-analytics"]}, ids["pg-analytics"]),
        ({"query": "anything go wrong with it?", "entities": ["redis-sessions-eu"]},
         ids["redis-sessions-eu"]),
        ({"query": "any issues?", "after": "2026-10-05T00:00:00Z",
          "before": "2026-10-08T00:00:00Z"}, ids["Kafka"] + ids["dns-resolver"]),
    )  # fmt: skip

    async def main() -> None:
        async with stdio_client(home) as client:
            for args, answers in asked:
                doc = await call(client, "recall", args)
                assert doc["nothing_relevant"] is False, args
                assert {r["id"] for r in doc["results"]} == set(answers), args
                assert "irrelevant" not in doc["hidden"], args

    anyio.run(main)


def test_a_default_answer_hides_only_what_is_surely_no_answer(tmp_path: Path) -> None:
    home, _ = _team_home(tmp_path)
    questions = (
        "how big is the session cache now?",
        "when does the analytics database vacuum run?",
        "who rewrote the refund macros?",
    )

    async def main() -> None:
        async with stdio_client(home) as client:
            for question in questions:
                shown = await call(client, "recall", {"query": question})
                every = await call(client, "recall", {"query": question, "min_relevance": 0})
                ids = [r["id"] for r in shown["results"]]
                assert ids == [r["id"] for r in every["results"] if r["id"] in ids], question
                assert len(ids) >= (2 if shown["nothing_relevant"] else 3), question
                left_out = [r for r in every["results"] if r["id"] not in ids]
                assert all(r["relevance"] < 0.1 for r in left_out), (question, left_out)
                assert shown["hidden"].get("irrelevant", 0) == len(left_out), question

    anyio.run(main)
