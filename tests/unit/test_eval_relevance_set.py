"""The relevance set of tools/eval_relevance.py: the shipped files load, bad ones are refused
with a message naming the problem, and the verdict targets count what they say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ferrex.rules.relevance import Evidence, Model
from tools.eval_golden import DEFAULT_SET, GoldenSetError, load_set
from tools.eval_relevance import Judged, Row, load_own, targets


def test_the_shipped_set_loads_with_a_held_out_half() -> None:
    own = load_own(DEFAULT_SET, load_set(DEFAULT_SET))
    answerable = [q for q in own.queries if q.answerable]
    assert len(own.queries) >= 150 and len(answerable) >= 100
    assert {"why", "what", "when", "who", "where", "date", "paraphrase", "identifier"} <= {
        q.category for q in answerable
    }
    assert {q.category for q in own.queries if not q.answerable} == {"unseen", "near_miss"}
    assert all(m.request.namespace == own.namespace for m in own.memories)
    halves = [Judged(q.id, "answer", q.query, ()).calibration for q in own.queries]
    assert 0.35 < sum(halves) / len(halves) < 0.65


def _copy(tmp_path: Path) -> Path:
    for name in ("memories.jsonl", "queries.json", "relevance_memories.jsonl"):
        shutil.copy(DEFAULT_SET / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"id": "x1", "query": "q", "category": "why", "expected": ["nope"]}, "no memory has"),
        ({"id": "x2", "query": "q", "kind": "unseen", "expected": ["c-ci"]}, "either"),
        ({"id": "x3", "query": "q", "kind": "forgotten"}, "unseen or near_miss"),
        ({"id": "x4", "query": "q", "expected": ["c-ci"]}, "category"),
        ({"id": "id-inc-4417", "query": "q", "kind": "unseen"}, "used twice"),
    ],
)
def test_a_bad_query_is_refused(tmp_path: Path, query: dict[str, object], message: str) -> None:
    directory = _copy(tmp_path)
    doc = {"now": "2026-11-20T12:00:00Z", "namespace": "calibration", "queries": [query]}
    (directory / "relevance_queries.json").write_text(json.dumps(doc))
    with pytest.raises(GoldenSetError, match=message):
        load_own(directory, load_set(directory))


def test_the_targets_count_the_verdict_on_the_first_five() -> None:
    model = Model(10.0, 0.0, -5.0, 0.0, 0.5, 0.5)  # relevant from cosine 0.5
    low, high = Evidence(0.1, 0.0), Evidence(0.9, 0.0)
    right = Judged("a", "answer", "q", (Row("k", True, low), *[Row("o", False, low)] * 5,
                                        Row("p", False, high)))  # fmt: skip
    told = Judged("b", "unseen", "q", (Row("o", False, low),))
    missed = Judged("c", "near_miss", "q", (Row("o", False, high),))
    found = targets([right, told, missed], model)
    assert found["false_nothing"] == 1.0 and found["false_nothing_ids"] == ["a"]
    assert found["said_on_unanswerable"] == 0.5 and found["missed_unanswerable_ids"] == ["c"]
