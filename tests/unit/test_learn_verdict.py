"""The learned verdict of ``tools/learn_relevance.py`` (pure parts): the rows' evidence as
recall explained it, the verdict's inputs, its veto and its threshold."""

from __future__ import annotations

import math

from ferrex.rules.relevance import DEFAULT_MODEL, Evidence
from tools.learn_relevance import (
    VERDICT_INPUTS,
    Question,
    Verdict,
    _evidence,
    choose_below,
    rules_verdict,
    verdict_inputs,
)

EXPLAINED = {
    "cosine": 0.61, "coverage": 0.5, "missing_named": 0.0, "missing_name": 0.0,
    "missing_attribute": 0.0, "given": 0, "dense_rank": 1, "sparse_rank": 2,
    "cosine_gap": 0.0, "bm25_share": 1.0, "off_subject": 1.0, "floor": 0.3, "runner_up": 0.5,
}  # fmt: skip


def test_a_row_keeps_every_piece_of_evidence_recall_explained() -> None:
    e = _evidence(EXPLAINED)
    assert (e.off_subject, e.floor, e.runner_up) == (1.0, 0.3, 0.5)
    # off the subject, the rules keep it below weak, as recall did
    assert DEFAULT_MODEL.label(DEFAULT_MODEL.relevance(e)) == "none"
    older = {k: v for k, v in EXPLAINED.items() if k not in ("floor", "runner_up")}
    assert (_evidence(older).floor, _evidence(older).runner_up) == (0.0, 0.0)


def test_the_verdicts_inputs_read_the_margin_and_the_lead() -> None:
    e = _evidence(EXPLAINED)
    x = dict(zip(VERDICT_INPUTS, verdict_inputs(e), strict=True))
    assert abs(x["margin"] - 0.31) < 1e-9 and abs(x["lead"] - 0.11) < 1e-9
    value = DEFAULT_MODEL.relevance(e)  # the rules' relevance, on a logit scale
    assert abs(x["rules"] - math.log(value / (1 - value))) < 1e-9


def _question(kind: str, cosines: list[float], answers: list[bool]) -> Question:
    evidence = tuple(Evidence(c, 0.5, dense_rank=i + 1) for i, c in enumerate(cosines))
    return Question("s", "validation", kind, "g", evidence, tuple(answers), (0,) * len(answers))


def test_a_veto_says_nothing_relevant_only_where_the_rules_say_it() -> None:
    sure = _question("answer", [0.9, 0.2], [True, False])
    doubtful = _question("unanswerable", [0.05, 0.04], [False, False])
    assert not rules_verdict(sure) and rules_verdict(doubtful)
    always = Verdict((0.0,) * len(VERDICT_INPUTS), -10.0, 0.5)
    assert always.says(sure) and always.says(doubtful)
    assert not Verdict(always.weights, always.bias, 0.5, veto=True).says(sure)


def test_the_threshold_says_the_most_verdicts_with_few_false_ones() -> None:
    # the chance is the cosine's (weight on "cosine" only): answers near 0.9, others lower
    weights = tuple(8.0 if name == "cosine" else 0.0 for name in VERDICT_INPUTS)
    bias = -4.0
    validation = [_question("answer", [0.9], [True]) for _ in range(20)]
    validation += [_question("unanswerable", [c], [False]) for c in (0.1, 0.2, 0.3, 0.6)]
    chosen = choose_below(weights, bias, validation, veto=False)
    said = [chosen.says(q) for q in validation]
    assert not any(said[:20])
    assert said[20:] == [True, True, True, True]
