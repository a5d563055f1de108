"""How recall judges a result (:mod:`ferrex.read.judgement`): a period named in a vague
question is evidence as an explicit window is, for a memory inside it and no other."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from ferrex.read.judgement import (
    Terms,
    evidence_of,
    identifiers_asked,
    subjects_named,
    unknown_identifiers,
)
from ferrex.rules.dates import when
from ferrex.rules.relevance import DEFAULT_MODEL
from projections.rows import Memory, Spelling

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


SPELLINGS = [
    Spelling("ent-auth", "auth-gateway", "auth gateway"),
    Spelling("ent-support", "support-gateway", "support gateway"),
    Spelling("ent-fraud", "fraud-scorer", "fraud scorer"),
    Spelling("ent-k8s", "k8s", "k8s"),
    Spelling("ent-kube", "Kubernetes", "kubernetes"),
]


def _about(text: str, *entities: str) -> Memory:
    return replace(_memory(text, 8), entity_ids=tuple(entities))


def _off(question: str, memory: Memory, unknown: bool = False) -> float:
    subjects = subjects_named(question, SPELLINGS)
    terms = Terms.of(question, None, subjects=subjects, unknown=unknown)
    return evidence_of(terms, memory, None).off_subject


def test_the_things_a_question_names_are_the_stored_spellings_it_contains() -> None:
    subjects = subjects_named("What is the login rate limit on the support gateway?", SPELLINGS)
    assert [s.entity_ids for s in subjects] == [frozenset({"ent-support"})]
    # The auth gateway shares a word with it: a sibling, what a wrong memory is about.
    assert subjects[0].siblings == frozenset({"ent-auth"})
    assert subjects_named("How do I rotate the signing key?", SPELLINGS) == []


def test_a_memory_about_a_sibling_of_the_thing_asked_about_is_off_subject() -> None:
    question = "What is the login rate limit on the support gateway?"
    limit = "auth-gateway login rate limit: 10 attempts per IP per minute"
    assert _off(question, _about(limit, "ent-auth")) == 1.0
    assert _off(question, _about(limit)) == 1.0  # spelt in its text, not linked
    assert _off(question, _about("support-gateway login rate limit: 5 per minute")) == 0.0
    assert _off(question, _about("login limits", "ent-support")) == 0.0  # linked to it
    # The verdict follows: off subject is below weak, however much of the wording matches.
    terms = Terms.of(question, None, subjects=subjects_named(question, SPELLINGS))
    value = DEFAULT_MODEL.relevance(evidence_of(terms, _about(limit, "ent-auth"), None))
    assert DEFAULT_MODEL.label(value) == "none"


def test_a_memory_naming_neither_the_thing_nor_a_sibling_is_not_judged() -> None:
    # "k8s" asked, "Kubernetes" written: the store has not linked them; not off subject.
    memory = _about("prod-eu-1 was upgraded to Kubernetes 1.31", "ent-kube")
    assert _off("k8s version upgrade of the production cluster", memory) == 0.0


def test_a_memory_that_only_names_the_thing_does_not_answer_a_specific_question() -> None:
    thresholds = _about("fraud-scorer holds scores above 870 for review", "ent-fraud")
    assert _off("What is the latency SLO of the fraud scorer?", thresholds) == 1.0
    slo = _about("fraud-scorer SLO: p95 latency under 80ms", "ent-fraud")
    assert _off("What is the latency SLO of the fraud scorer?", slo) == 0.0
    # A vague question about the thing is answered by any memory about it.
    assert _off("what happened to the fraud scorer?", thresholds) == 0.0
    assert _off("what changed in the fraud scorer?", thresholds) == 0.0
    # A shortening is the word: "retro" answers for "retrospectives".
    retro = _about("fraud-scorer retro: review queue sized for the peak", "ent-fraud")
    assert _off("What did the fraud scorer retrospectives conclude?", retro) == 0.0


def test_an_identifier_the_store_never_heard_of_is_off_subject_everywhere() -> None:
    assert identifiers_asked("Which services run in the prod-eu-2 cluster?") == ["prod-eu-2"]
    assert identifiers_asked("What did billing-worker fix?") == []  # no digit: a name
    held = {"prod-eu-1"}
    assert unknown_identifiers("what runs on prod-eu-2?", SPELLINGS, held.__contains__) == [
        "prod-eu-2"
    ]
    assert unknown_identifiers("what runs on prod-eu-1?", SPELLINGS, held.__contains__) == []
    # An entity spelt so is known, even when no memory the filter admits holds the word.
    spelt = [*SPELLINGS, Spelling("ent-redis", "redis-sess-01", "redis sess 01")]
    assert unknown_identifiers("what is redis-sess-01?", spelt, lambda _: False) == []
    assert unknown_identifiers("what is redis-sess-02?", spelt, lambda _: False) != []
    memory = _about("prod-eu-1 is the main cluster")
    assert _off("Which services run in the prod-eu-2 cluster?", memory, unknown=True) == 1.0


def test_a_date_the_question_names_is_its_period_not_an_unknown_identifier() -> None:
    question = "what did we change on 2026-12-08?"
    period = when(question, NOW)
    assert identifiers_asked(question) == ["2026-12-08"]
    assert unknown_identifiers(question, SPELLINGS, lambda _: False, period) == []
