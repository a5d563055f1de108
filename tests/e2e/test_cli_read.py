"""`ferrex recall`, `stats` and `reflect` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ferrex.cli import cli


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("read-home")
    lines = [
        {
            "content": "INC-4411: the payments webhook retried forever after a 502",
            "entities": ["payments"],
        },
        {"content": "The staging cluster was moved to the new region in October"},
        # A shared fact, and an agent's private fact that disagrees: a private memory never
        # supersedes a shared one, so both stand, and the operator sees the contradiction.
        {"subject": "billing", "predicate": "owned by", "object": "payments team",
         "visibility": "shared"},
        {"subject": "billing", "predicate": "owner", "object": "platform team",
         "agent_id": "ops-bot"},
        # Multi-valued facts hold side by side: never a contradiction.
        {"subject": "search", "predicate": "depends on", "object": "redis", "multi_valued": True},
        {"subject": "search", "predicate": "uses", "object": "kafka", "multi_valued": True},
        {"name": "rotate webhook secret",
         "steps": ["create a new secret", "deploy", "revoke the old one"]},
    ]  # fmt: skip
    file = home / "seed.jsonl"
    file.write_text("\n".join(json.dumps(line) for line in lines))
    code, out, _ = run(home, "import", str(file), "--json")
    assert code == 0, out
    return home


def test_recall_json_and_text(home: Path) -> None:
    code, out, _ = run(home, "recall", "INC-4411 webhook", "--json", "--explain", "--limit", "2")
    doc = json.loads(out)
    assert code == 0 and doc["results"][0]["content"].startswith("INC-4411")
    first = doc["results"][0]
    assert first["freshness"]["label"] == "fresh" and first["entities"] == ["payments"]
    assert {"dense_rank", "sparse_rank", "fused", "boost", "staleness"} <= set(first["explain"])
    code, out, _ = run(home, "recall", "how do I rotate the webhook secret", "--type", "procedural")
    assert code == 0 and "rotate webhook secret (v1)" in out
    code, out, _ = run(home, "recall", "who owns billing", "--type", "semantic")
    assert code == 0 and "CONTRADICTED" in out
    code, out, _ = run(home, "recall", "what does search depend on", "--type", "semantic")
    search = [line for line in out.splitlines() if " search " in line]
    assert code == 0 and len(search) == 2 and not any("CONTRADICTED" in s for s in search)


def test_recall_leaves_out_the_irrelevant_unless_min_relevance_is_0(home: Path) -> None:
    code, out, _ = run(home, "recall", "INC-4411 webhook", "--json", "--min-relevance", "0")
    everything = json.loads(out)
    assert code == 0 and len(everything["results"]) == 5
    code, out, _ = run(home, "recall", "INC-4411 webhook", "--json")
    doc = json.loads(out)
    # past the first three, only what is surely no answer (relevance below 0.1) is left out
    shown = [r["id"] for i, r in enumerate(everything["results"]) if i < 3 or r["relevance"] >= 0.1]
    assert code == 0 and [r["id"] for r in doc["results"]] == shown
    assert doc["hidden"]["irrelevant"] == 5 - len(shown) > 0
    code, out, err = run(home, "recall", "INC-4411 webhook")
    assert code == 0 and "irrelevant" in err and "--min-relevance 0 shows" in err


def test_recall_bad_input(home: Path) -> None:
    assert run(home, "recall", "")[0] == 2
    assert run(home, "recall", "x", "--limit", "0")[0] == 2
    code, _, err = run(home, "recall", "x", "--as-of", "yesterday")
    assert code == 2 and "ISO 8601" in err


def test_stats_and_reflect(home: Path) -> None:
    code, out, _ = run(home, "stats", "--json")
    brief = json.loads(out)
    assert code == 0 and brief["total"] == 7 and len(brief["recent"]) == 3
    # One import stores its lines at one time: the latest are its last lines, the last first.
    summaries = [r["summary"] for r in brief["recent"]]
    assert "rotate webhook secret" in summaries[0], summaries
    assert "kafka" in summaries[1] and "redis" in summaries[2], summaries
    assert brief["needs_attention"]["conflicts"] == 1
    assert len(out) < 1500, "the brief stats stay small enough for every conversation start"
    code, out, _ = run(home, "stats", "--detailed", "--json")
    detailed = json.loads(out)
    assert detailed["by_type"] == {"episodic": 2, "procedural": 1, "semantic": 4}
    assert detailed["journal"]["lag"] == {"sqlite": 0, "qdrant": 0}
    assert detailed["models"]["reranker"] == "off" and detailed["storage_bytes"]["journal"] > 0
    code, out, _ = run(home, "reflect", "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["contradictions"]) == 1
    assert {f["object"] for f in doc["contradictions"][0]["facts"]} == {
        "payments team",
        "platform team",
    }
    code, out, _ = run(home, "reflect")
    assert code == 0 and "contradictions: 1" in out


def test_recall_validate_marks_results_confirmed(home: Path) -> None:
    code, out, _ = run(home, "recall", "staging cluster region", "--json", "--limit", "1")
    memory_id = json.loads(out)["results"][0]["id"]
    code, out, _ = run(home, "recall", "staging cluster region", "--json", "--limit", "1",
                       "--validate", memory_id)  # fmt: skip
    assert code == 0
    code, out, _ = run(home, "recall", "staging cluster region", "--json", "--limit", "1")
    assert json.loads(out)["results"][0]["freshness"]["last_validated"] is not None
    code, _, err = run(home, "recall", "staging cluster region", "--limit", "1",
                       "--validate", "mem_NOT_RETURNED")  # fmt: skip
    assert code == 2 and "not returned" in err and "--validate" in err


def test_recall_hits_are_journaled_by_a_flush_and_at_close(home: Path) -> None:
    """The hits are journaled by ``flush_access`` (what the owner's timer calls) and, the
    last ones, at close."""
    from ferrex.app import App
    from ferrex.config import load
    from ferrex.read.request import RecallRequest

    app = App(home=home, config=load(home, env={}))
    try:
        head = app.journal().refresh().position
        app.reader().recall(RecallRequest(query="payments webhook"))
        assert app.flush_access() >= 1
        assert app.journal().refresh().position == head + 1, "the flush journaled the hits"
        assert app.flush_access() == 0, "nothing new to journal"
        app.reader().recall(RecallRequest(query="payments webhook"))
    finally:
        app.close()  # the last hits are journaled here
    code, out, _ = run(home, "journal", "show", "--after", str(head), "--json")
    records = json.loads(out)
    assert code == 0
    assert [r["events"][0]["event"] for r in records] == ["memories.accessed"] * 2


def test_entity_list_and_show(home: Path) -> None:
    code, out, err = run(home, "entity", "list")
    assert code == 0 and {"billing", "payments", "search"} <= set(out.split("\n"))
    assert "in default" in err
    code, out, _ = run(home, "entity", "list", "PAY")
    assert code == 0 and out.split() == ["payments"]
    code, out, _ = run(home, "entity", "show", "billing", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["name"] == "billing"
    assert {m["summary"] for m in doc["memories"]} >= {"billing owned by payments team"}
    # Another agent sees the shared fact, not ops-bot's private one.
    code, out, _ = run(home, "entity", "show", "billing", "--agent-id", "someone", "--json")
    assert code == 0 and len(json.loads(out)["memories"]) == 1
    code, out, _ = run(home, "entity", "show", "billing")
    assert code == 0 and out.startswith("billing (default)") and "spelling 'billing'" in out
    code, _, err = run(home, "entity", "show", "no such thing")
    assert code == 7 and "not_found" in err
    assert run(home, "entity", "list", "--offset", "-1")[0] == 2


def test_entity_show_marks_what_was_replaced(tmp_path: Path) -> None:
    """The entity's history is listed whole; a replaced fact read as a current one (two
    owners, two hosts) until its line said it ended."""
    home = tmp_path / "home"
    moved = "moved the auth gateway to vm-prod-12"
    facts = (("auth gateway", "runs on", "vm-prod-07", None),
             ("auth gateway", "runs on", "vm-prod-12", moved))  # fmt: skip
    for subject, predicate, obj, note in facts:
        extra = ("--content", f"Tomas {note}") if note else ()
        code, _, err = run(home, "store", "--subject", subject, "--predicate", predicate,
                           "--object", obj, *extra)  # fmt: skip
        assert code == 0, err
    code, out, _ = run(home, "entity", "show", "auth gateway")
    lines = {line.split(": ", 1)[1]: line for line in out.splitlines() if "semantic" in line}
    assert code == 0 and len(lines) == 2, out
    old = lines["auth gateway runs on vm-prod-07"]
    new = next(line for text, line in lines.items() if "vm-prod-12" in text)
    assert "[ended " in old and "[ended" not in new, out
