"""The retrieval evaluation's pure parts: metrics and the LoCoMo data clean-up."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tools.eval_retrieval import (
    Scores,
    ndcg_at,
    normalize_evidence,
    parse_session_time,
    recall_at,
)


def test_ndcg_is_one_for_an_ideal_ranking_and_zero_without_hits() -> None:
    assert ndcg_at(["a", "b", "x"], {"a", "b"}) == pytest.approx(1.0)
    assert ndcg_at(["x", "y"], {"a"}) == 0.0
    assert ndcg_at(["a"], set()) == 0.0


def test_ndcg_discounts_by_log_rank_and_ideal_counts_at_most_k() -> None:
    # One relevant at rank 2 (0-based 1): (1/log2(3)) / 1.
    assert ndcg_at(["x", "a"], {"a"}) == pytest.approx(1 / math.log2(3))
    # Twelve relevant, two found at the top: the ideal is ten hits, not twelve.
    relevant = {f"r{i}" for i in range(12)}
    ideal = sum(1 / math.log2(r + 2) for r in range(10))
    assert ndcg_at(["r0", "r1"], relevant) == pytest.approx((1 + 1 / math.log2(3)) / ideal)
    # Hits beyond k do not count.
    assert ndcg_at([*"xxxxxxxxxx", "a"], {"a"}, 10) == 0.0


def test_recall_is_the_share_of_relevant_found_within_k() -> None:
    ranked = ["a", "x", "b", "y", "z", "c"]
    assert recall_at(ranked, {"a", "b", "c", "d"}, 5) == pytest.approx(0.5)
    assert recall_at(ranked, {"a", "b", "c", "d"}, 10) == pytest.approx(0.75)
    assert recall_at(ranked, set(), 5) == 0.0
    assert recall_at(["a", "a"], {"a", "b"}, 2) == pytest.approx(0.5)  # a repeat counts once


def test_scores_average_over_queries() -> None:
    scores = Scores()

    def session(turn: str) -> str:
        return turn.split(":")[0]

    scores.add(["s1:a"], {"s1:a"}, session)
    scores.add(["s1:x"], {"s1:a"}, session)  # the right session, not the right turn
    mean = scores.mean()
    assert mean["n"] == 2
    assert mean["ndcg@10"] == pytest.approx(0.5)
    assert mean["recall@1"] == pytest.approx(0.5)
    assert mean["recall@5"] == pytest.approx(0.5) and mean["recall@10"] == pytest.approx(0.5)
    assert mean["session@10"] == pytest.approx(1.0)
    assert math.isnan(Scores().mean()["ndcg@10"])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:3"], ["D1:3"]),
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"]),
        (["D30:05"], ["D30:5"]),
        (["D:11:26"], ["D11:26"]),
        (["D"], []),
        (["D1:3", "D1:03"], ["D1:3"]),
    ],
)
def test_locomo_evidence_ids_are_normalised(raw: list[str], expected: list[str]) -> None:
    assert normalize_evidence(raw) == expected


def test_locomo_session_times_are_read_as_utc() -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_time("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=UTC
    )


def test_longmemeval_times_and_the_haystack_of_each_question(tmp_path: Path) -> None:
    import gzip
    import json

    from tools.eval_retrieval import (
        longmemeval_haystacks,
        longmemeval_session,
        parse_longmemeval_time,
    )

    assert parse_longmemeval_time("2023/05/30 (Tue) 23:40") == datetime(
        2023, 5, 30, 23, 40, tzinfo=UTC
    )
    assert longmemeval_session("answer_3a6f1e82_1/4") == "answer_3a6f1e82_1"
    sessions = [
        {"session_id": "answer_q1_1", "date": "2023/05/01 (Mon) 10:00",
         "user_turns": [{"turn": 1, "content": "I moved to Lisbon"},
                        {"turn": 3, "content": "It is sunny", "has_answer": True}]},
        {"session_id": "s2", "date": "2023/05/02 (Tue) 10:00",
         "user_turns": [{"turn": 1, "content": "Unrelated", "has_answer": True}]},
    ]  # fmt: skip
    with gzip.open(tmp_path / "sessions.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write("\n".join(json.dumps(s) for s in sessions) + "\n")
    questions = [
        {"question_id": "q1", "question_type": "temporal-reasoning", "question": "Where?",
         "question_date": "2023/06/01 (Thu) 09:00", "answer": "Lisbon",
         "answer_session_ids": ["answer_q1_1"], "haystack_session_ids": ["s2", "answer_q1_1"]},
        {"question_id": "q2", "question_type": "multi-session", "question": "What?",
         "question_date": "2023/06/01 (Thu) 09:00", "answer": "x",
         "answer_session_ids": ["s2"], "haystack_session_ids": ["s2"]},  # no "answer" session
    ]  # fmt: skip
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions))
    plain = longmemeval_haystacks(tmp_path)
    assert [h.question_id for h in plain] == ["q1"]  # q2 has no relevant turn
    (stack,) = plain
    assert [d.key for d in stack.docs] == ["s2/1", "answer_q1_1/1", "answer_q1_1/3"]
    assert stack.query.relevant == {"answer_q1_1/3"} and stack.query.group == "temporal-reasoning"
    assert stack.docs[2].request.valid_from is None and stack.docs[2].request.source is None
    dated = longmemeval_haystacks(tmp_path, plain=False)[0]
    assert dated.docs[2].request.valid_from == datetime(2023, 5, 1, 10, 3, tzinfo=UTC)
    assert dated.docs[2].request.source == "longmemeval/answer_q1_1"
    assert dated.asked_at == datetime(2023, 6, 1, 9, tzinfo=UTC)
    assert longmemeval_haystacks(tmp_path, every=2, offset=1) == []  # q2 only, dropped


def test_recall_any_at_five() -> None:
    s = Scores()
    s.add(["x", "x", "x", "x", "a"], {"a", "b"}, None)
    s.add(["x", "x", "x", "x", "x", "a"], {"a"}, None)
    assert s.mean()["recall_any@5"] == pytest.approx(0.5)


def test_a_home_config_is_every_evaluated_home_s_configuration(tmp_path: Path) -> None:
    """``--home-config`` measures another model: every data directory the run prepares
    reads that file (and only then has one); the model and cache links stay shared."""
    from ferrex.config import load
    from ferrex.home_safety import inspect_modes
    from tools import eval_retrieval

    plain = tmp_path / "plain"
    eval_retrieval.prepare_home(plain, tmp_path / "cache")
    assert not (plain / "ferrex.toml").exists()
    toml = '[models]\ndense = "openai:e5"\nembedding_url = "http://127.0.0.1:9/v1"\n'
    eval_retrieval.HOME_CONFIG[:] = [toml]
    try:
        home = tmp_path / "home"
        eval_retrieval.prepare_home(home, tmp_path / "cache")
        config = load(home, env={})
        assert config["models.dense"] == "openai:e5"
        assert (home / "models").resolve() == (tmp_path / "cache" / "models").resolve()
        # private from the start: ferrex finds nothing others could read to tighten
        assert inspect_modes(home).exposed == 0 and inspect_modes(plain).exposed == 0
    finally:
        eval_retrieval.HOME_CONFIG.clear()


def test_a_home_config_that_cannot_be_read_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools import eval_retrieval

    with pytest.raises(SystemExit) as stop:
        eval_retrieval.main(["beir", "--home-config", str(tmp_path / "missing.toml")])
    assert stop.value.code == 2
    assert "--home-config" in capsys.readouterr().err
    assert eval_retrieval.HOME_CONFIG == []
