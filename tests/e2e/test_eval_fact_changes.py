"""``tools/eval_fact_changes.py`` runs end to end and classifies cases whose outcome is known.

The tool is run as a process on a small hand-made set (its own ferrex stdio server, the SDK's
client): a plain change of one slot is resolved, two facts of unrelated slots labelled as a
change are silent, a repeat is resolved as a duplicate, a back-dated value labelled as the
winner is wrong (ferrex keeps it as history), and two unrelated facts are a clean negative.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tools.eval_fact_changes import (
    DEFAULT_SET,
    Outcome,
    StoreOutcome,
    half_of,
    load_set,
    main,
    report,
)

ROOT = Path(__file__).resolve().parents[2]


def _scenario(id: str, kind: str, steps: list[dict[str, Any]], expect: list[str]) -> str:
    return json.dumps({"id": id, "kind": kind, "category": "other", "steps": steps,
                       "expect_current": expect, "note": "hand-made"})  # fmt: skip


def test_the_tool_classifies_known_cases(tmp_path: Path) -> None:
    version = {"subject": "ledger-api", "predicate": "version"}
    lines = [
        _scenario("t-resolved", "change", [{**version, "object": "1.2.0"},
                                           {**version, "object": "1.3.0"}], ["1.3.0"]),
        _scenario("t-silent-2", "change", [
            {"subject": "alpha-svc", "predicate": "listens on port", "object": "8080"},
            {"subject": "zeta reporting db", "predicate": "backup retention",
             "object": "30 days"}], ["30 days"]),
        _scenario("t-duplicate", "restatement", [{**version, "object": "2.0.1"},
                                                 {**version, "object": "2.0.1"}], ["2.0.1"]),
        # Deliberately mislabelled: the older-dated value stored last is history, not current.
        _scenario("t-wrong-1", "change", [
            {**version, "object": "4.0.0", "valid_from_days_ago": 1},
            {**version, "object": "3.0.0", "valid_from_days_ago": 30}], ["3.0.0"]),
        _scenario("t-negative", "negative", [
            {"subject": "payments-api", "predicate": "log level", "object": "debug"},
            {"subject": "Sven Olsen", "predicate": "timezone", "object": "CET"}],
            ["debug", "CET"]),
    ]  # fmt: skip
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "tools.eval_fact_changes", "--set", str(path),
         "--half", "both", "--limit", "6", "--json"],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    halves = doc["halves"]
    outcomes: dict[str, str] = {}
    for h in halves.values():
        for o in h.get("outcomes", []):
            outcomes[o["id"]] = o["outcome"]
    # Four of the ids fall in the tuning half, t-negative in the held-out one.
    assert outcomes == {"t-resolved": "resolved", "t-silent-2": "silent",
                        "t-duplicate": "resolved", "t-wrong-1": "wrong"}  # fmt: skip
    held_out = halves["held-out"]
    assert "outcomes" not in held_out and "per_category" not in held_out, "totals only"
    assert held_out["negative"]["n"] == 1 and held_out["negative"]["clean"] == 1
    statuses = Counter[str]()
    for h in halves.values():
        statuses.update(h["store statuses"])
    assert statuses["duplicate"] == 1 and statuses["stored_as_history"] == 1, statuses


def test_the_set_splits_into_its_two_halves() -> None:
    scenarios = load_set(DEFAULT_SET)
    halves = Counter((s.half, s.kind) for s in scenarios)
    assert len(scenarios) == 595
    assert sum(n for (h, _), n in halves.items() if h == "tuning") == 306
    assert halves[("held-out", "negative")] == 91
    assert half_of("fc-0004") == "tuning" and half_of("t-negative") == "held-out"


def _outcomes(tmp_path: Path) -> list[Outcome]:
    """Made-up outcomes (no server) of a small set read by ``load_set`` from a file: the
    change in the tuning half wrong, the negative in the held-out half clean."""
    version = {"subject": "ledger-api", "predicate": "version"}
    lines = [
        _scenario("t-resolved", "change", [{**version, "object": "1.2.0"},
                                           {**version, "object": "1.3.0"}], ["1.3.0"]),
        _scenario("t-negative", "negative", [
            {"subject": "payments-api", "predicate": "log level", "object": "debug"},
            {"subject": "Sven Olsen", "predicate": "timezone", "object": "CET"}],
            ["debug", "CET"]),
    ]  # fmt: skip
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(lines) + "\n")
    outcomes = []
    for scenario in load_set(path):
        stores = [StoreOutcome(i, "stored", f"m{i}", {}) for i in range(len(scenario.steps))]
        done = "clean" if scenario.kind == "negative" else "wrong"
        outcomes.append(Outcome(scenario, stores, {}, {}, done, "made up"))
    return outcomes


@pytest.mark.parametrize("totals_only", [False, True])
def test_totals_only_reports_no_scenario_nor_category(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], totals_only: bool
) -> None:
    outcomes = _outcomes(tmp_path)
    assert {o.scenario.half for o in outcomes} == {"tuning", "held-out"}
    args = argparse.Namespace(set=tmp_path / "set.jsonl", json=True, only=None, show=5,
                              totals_only=totals_only)  # fmt: skip
    report(args, outcomes, ["tuning", "held-out"], 1.0)
    halves = json.loads(capsys.readouterr().out)["halves"]
    assert halves["tuning"]["change"]["wrong"] == 1
    assert halves["held-out"]["negative"]["clean"] == 1
    listed = [key for h in halves.values() for key in ("outcomes", "per_category") if key in h]
    assert listed == ([] if totals_only else ["outcomes", "per_category"])
    args.json = False
    report(args, outcomes, ["tuning", "held-out"], 1.0)
    text = capsys.readouterr().out
    assert "## tuning half" in text and "## held-out half" in text
    assert ("| category |" in text) is not totals_only
    assert ("### t-resolved" in text) is not totals_only  # the failing scenario, --show 5


def test_totals_only_refuses_to_show_scenarios(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--set", str(tmp_path / "absent.jsonl"), "--totals-only", "--show", "3"])
    assert stopped.value.code == 2
    assert "--totals-only reports totals only" in capsys.readouterr().err


def test_unrelated_facts_with_a_share_dated(tmp_path: Path) -> None:
    """``--dated-share`` stores that share of the unrelated facts with a start; a share out of
    range, or beside ``--dated``, is a usage error that runs nothing."""
    run = [sys.executable, "-m", "tools.eval_fact_changes", "--unrelated", "30"]
    for bad in (["--dated-share", "1.5"], ["--dated-share", "0.5", "--dated"]):
        done = subprocess.run([*run, *bad], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 2 and "--dated" in done.stderr, (bad, done.stderr)
        assert "unrelated" not in done.stdout
    done = subprocess.run([*run, "--dated-share", "0.5", "--json"], capture_output=True,
                          text=True, timeout=240, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["dated"] == 0.5 and doc["stores"] == 30
    assert sum(doc["statuses"].values()) == 30
