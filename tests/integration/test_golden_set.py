"""The golden set gate: ferrex's own memories and queries, through the real store and recall.

The numbers come from ``tools/eval_golden.py`` (the same functions); run it with
``--verbose`` to see which queries miss and why. The gate is deliberately below the target
(0.9 for the defaults) so that retrieval work can move individual queries without every
change tripping it; a drop below it means recall broke, not that it got a little worse.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ferrex.models import Embedder
from tools.eval_golden import GoldenSetError, Report, evaluate, load_set, render

GATE = 0.7


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder) -> Report:
    home = tmp_path_factory.mktemp("golden-home")
    return evaluate(load_set(), home, embedder=shared_embedder)


def test_recall_at_3_meets_the_gate(report: Report) -> None:
    assert report.overall.recall_at_3 >= GATE, render(report, verbose=True)


def test_every_line_is_stored_as_the_set_expects(report: Report) -> None:
    # The set's premises: facts superseded in turn, repeats refused or recognised. If these
    # fail, the "current", "history" and "as_of" queries no longer measure what they say.
    assert report.store_surprises == []


def test_no_superseded_or_future_memory_answers_a_current_question(report: Report) -> None:
    violations = {o.id: o.violations for o in report.violations()}
    assert violations == {}


def test_a_query_naming_an_unknown_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "memories.jsonl").write_text(
        json.dumps({"key": "a", "content": "The cache was warmed at 06:00"}) + "\n"
    )
    (tmp_path / "queries.json").write_text(
        json.dumps(
            {
                "now": "2026-01-01T00:00:00Z",
                "queries": [{"id": "q", "category": "c", "query": "cache", "expected": ["b"]}],
            }
        )
    )
    with pytest.raises(GoldenSetError, match="no memory has the key b"):
        load_set(tmp_path)
