"""The head line of a recall answer: what was left out, and how to see it."""

from __future__ import annotations

from ferrex.server.answers import recall_head, recall_text


def _result(memory_id: str) -> dict[str, object]:
    return {"id": memory_id, "type": "episodic", "content": "x", "relevance_label": "strong"}


def test_the_head_says_how_many_irrelevant_were_left_out_and_how_to_see_them() -> None:
    doc = {"results": [_result("a"), _result("b")], "hidden": {"irrelevant": 3}}
    assert recall_head(doc) == "2 memories; 3 irrelevant left out (min_relevance: 0 shows them)"


def test_the_head_says_nothing_of_irrelevance_when_nothing_was_left_out() -> None:
    doc = {"results": [_result("a")], "hidden": {}}
    assert recall_head(doc) == "1 memory"


def test_the_verdict_and_the_left_out_count_go_together() -> None:
    doc = {
        "results": [_result("a")],
        "hidden": {"irrelevant": 4, "stale": 1},
        "nothing_relevant": True,
        "note": "nothing relevant: ...",
    }
    head = recall_text(doc).splitlines()[0]
    assert head == (
        "1 memory; 1 stale hidden (include_stale); 4 irrelevant left out (min_relevance: 0 "
        "shows them); nothing relevant: ..."
    )


def test_a_result_that_may_conflict_names_the_other_fact_in_its_line() -> None:
    result = {"id": "mem_b", "type": "semantic", "subject": "api gateway",
              "predicate": "is deployed on", "object": "node-15",
              "contradiction": False, "possible_conflict": ["mem_a", "mem_c"]}  # fmt: skip
    line = recall_text({"results": [result]}).splitlines()[1]
    assert line.endswith("[may conflict with mem_a, mem_c]"), line
    del result["possible_conflict"]
    assert "conflict" not in recall_text({"results": [result]})
