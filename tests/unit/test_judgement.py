"""How recall judges a result (:mod:`ferrex.read.judgement`): a period named in a vague
question is evidence as an explicit window is, for a memory inside it and no other."""

from __future__ import annotations

from datetime import UTC, datetime

from ferrex.read.judgement import Terms, evidence_of
from ferrex.rules.dates import when
from ferrex.rules.relevance import DEFAULT_MODEL
from projections.rows import Memory

NOW = datetime(2026, 12, 9, 18, 0, tzinfo=UTC)
"""A Wednesday evening: yesterday is Tuesday 8 December."""


def _memory(text: str, day: int) -> Memory:
    at = datetime(2026, 12, day, 12, 0, tzinfo=UTC).timestamp()
    return Memory(
        f"mem-{day}", "default", "episodic", text, None, None, None, None, None, None, (), (),
        None, None, 1.0, None, "shared", None, at, None, None, at, 0, False, 0, None, None,
    )  # fmt: skip


def test_a_vague_question_naming_a_period_takes_it_as_a_filter() -> None:
    for question in (
        "what did we change yesterday?",
        "what changed yesterday",
        "what did we work on on 2026-12-07?",
        "any issues last week?",
        "what happened on December 2?",
    ):
        terms = Terms.of(question, when(question, NOW))
        assert terms.period is not None and terms.period_given, (question, terms)
    for question in (
        "what did we decide about the Kafka partitions yesterday?",
        "which port did the Redis sentinel move to yesterday?",
        "what did we change",  # no period: nothing to take as a filter
    ):
        terms = Terms.of(question, when(question, NOW))
        assert not terms.period_given, (question, terms)


def test_only_a_memory_inside_the_period_gains() -> None:
    question = "what did we change yesterday?"
    terms = Terms.of(question, when(question, NOW))
    text = "Raised the rate limit of the public API to 200 requests per second."
    inside = evidence_of(terms, _memory(text, 8), None)
    outside = evidence_of(terms, _memory(text, 7), None)
    assert inside.given == 1 and outside.given == 0
    assert outside.missing_named == 1.0
    assert DEFAULT_MODEL.label(DEFAULT_MODEL.relevance(inside)) != "none"
    assert DEFAULT_MODEL.label(DEFAULT_MODEL.relevance(outside)) == "none"
    # Its words name it, not only its time: found as the period term, no filter.
    review = _memory("We changed the alert routing yesterday.", 7)
    assert evidence_of(terms, review, None).given == 0


def test_a_specific_question_naming_a_period_gains_nothing_from_it() -> None:
    question = "what did we decide about the Kafka partitions yesterday?"
    terms = Terms.of(question, when(question, NOW))
    memory = _memory("Raised the rate limit of the public API to 200 requests per second.", 8)
    found = evidence_of(terms, memory, None)
    assert found.given == 0
    assert DEFAULT_MODEL.label(DEFAULT_MODEL.relevance(found)) == "none"
