"""How recall judges a result (:mod:`ferrex.read.judgement`): a period named in a vague
question is evidence as an explicit window is, for a memory inside it and no other."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from ferrex.models.sparse import tokens
from ferrex.read.judgement import (
    Terms,
    evidence_of,
    identifiers_asked,
    plain_compounds,
    runner_up,
    subjects_named,
    unknown_identifiers,
)
from ferrex.rules import asked
from ferrex.rules.dates import when
from ferrex.rules.fusion import Leg
from ferrex.rules.relevance import DEFAULT_MODEL, states_term
from projections.rows import Memory, Spelling
from projections.vectors import Hit

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


def test_a_memory_holding_the_identifier_asked_about_is_never_a_siblings() -> None:
    # Linked to the auth gateway, but it holds the host the question names: about it.
    question = "is the support gateway still on gw-edge-07?"
    host = _about("auth gateway and its twin run on gw-edge-07", "ent-auth")
    assert _off(question, host) == 0.0
    assert _off("is the support gateway still on the edge hosts?", host) == 1.0
    # A hyphenated word is no identifier: it names nothing of its own.
    assert _off("which help-desk tool does the support gateway page?",
                _about("auth gateway pages the help-desk rota", "ent-auth")) == 1.0  # fmt: skip


def test_words_placing_a_question_in_the_present_are_no_terms() -> None:
    plain = Terms.of("where does the billing database run?", None)
    for question in ("where does the billing database run these days?",
                     "where does the billing database currently run?",
                     "where does the billing database run right now?",
                     "where does the billing database still run nowadays?"):  # fmt: skip
        assert Terms.of(question, None).tokens == plain.tokens, question
    memory = _memory("billing database migrated to the Aurora cluster billing-aurora-1", 2)
    found = evidence_of(Terms.of("where does the billing database run these days?", None),
                        memory, None)  # fmt: skip
    assert found.coverage == evidence_of(plain, memory, None).coverage


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


def test_a_version_of_two_numbers_is_known_and_stated_by_a_longer_one() -> None:
    held = {"7.2.4"}
    assert unknown_identifiers("why are we on redis 7.2?", SPELLINGS, held.__contains__) == []
    assert unknown_identifiers("upgrade redis to 7.4?", SPELLINGS, held.__contains__) == ["7.4"]
    assert unknown_identifiers("is it 7.2.5?", SPELLINGS, held.__contains__) == ["7.2.5"]
    pinned = tokens("Redis is pinned to 7.2.4 because 7.4 changed the license")
    assert states_term("7.2", pinned) and states_term("v7.2", pinned)
    assert not states_term("7.24", pinned) and not states_term("2.4", pinned)


def test_an_amount_glued_to_its_unit_is_the_amount_and_its_word() -> None:
    timeout = tokens("The load balancer idle timeout is 350 seconds, uploads up to 16 MB")
    assert states_term("350s", timeout) and states_term("16mb", timeout)
    assert not states_term("350m", timeout) and not states_term("35s", timeout)
    assert states_term("350", tokens("a 350s idle timeout"))
    assert not states_term("350", tokens("a 350x zoom"))  # no unit of ours


def test_a_date_the_question_names_is_its_period_not_an_unknown_identifier() -> None:
    question = "what did we change on 2026-12-08?"
    period = when(question, NOW)
    assert identifiers_asked(question) == ["2026-12-08"]
    assert unknown_identifiers(question, SPELLINGS, lambda _: False, period) == []


MORE_SPELLINGS = [
    *SPELLINGS,
    Spelling("ent-notif-worker", "notification-worker", "notification worker"),
    Spelling("ent-search", "search-api", "search api"),
    Spelling("ent-redis", "redis-sessions", "redis sessions"),
    Spelling("ent-ledger", "ledger-db", "ledger db"),
    Spelling("ent-ch", "clickhouse-analytics", "clickhouse analytics"),
    Spelling("ent-pg", "pg", "pg"),
    Spelling("ent-tide", "tidewater", "tidewater"),
]


def _off_more(question: str, memory: Memory) -> float:
    subjects = subjects_named(question, MORE_SPELLINGS)
    terms = Terms.of(question, when(question, NOW), subjects=subjects)
    return evidence_of(terms, memory, None).off_subject


def test_a_memory_linked_only_to_other_stored_things_is_about_them() -> None:
    question = "What is the latency SLO for the notification worker?"
    other = _about("search-api SLO: p95 < 150ms and 99.9% availability", "ent-search")
    assert _off_more(question, other) == 1.0
    own = _about("notification-worker SLO: p95 < 300ms", "ent-notif-worker")
    assert _off_more(question, own) == 0.0
    # Not linked to anything: it may name the thing in words the store has not linked.
    assert _off_more(question, _about("search-api SLO: p95 < 150ms")) == 0.0
    # Linked to another thing, but its words may spell the one asked about (a shortening).
    restore = _about("restore the ledger Postgres from backup with pgbackrest", "ent-ledger")
    assert _off_more("bring the pg database back from a backup", restore) == 0.0
    notif = _about("notif worker SLO: p95 < 300ms", "ent-search")
    assert _off_more(question, notif) == 0.0


def test_a_spelling_in_another_order_or_with_a_shortening_names_the_thing() -> None:
    redis = subjects_named("How much memory is the session Redis allowed to use?", MORE_SPELLINGS)
    assert [s.entity_ids for s in redis] == [frozenset({"ent-redis"})]
    ledger = subjects_named("How do we restore the ledger database?", MORE_SPELLINGS)
    assert [s.entity_ids for s in ledger] == [frozenset({"ent-ledger"})]
    # The question's own words for it are the name, not what is asked of it.
    assert "databas" in ledger[0].tokens
    assert subjects_named("What does the ledger team own?", MORE_SPELLINGS) == []


def test_a_memory_about_the_thing_that_states_no_value_of_the_kind_asked_is_off() -> None:
    question = "How much memory is the session Redis allowed to use?"
    assert _off_more(question, _about("redis-sessions maxclients is 20000", "ent-redis")) == 1.0
    sized = _about("redis-sessions memory capped at 8GB per shard", "ent-redis")
    assert _off_more(question, sized) == 0.0
    often = "How is the ledger database backed up, and how often?"
    replica = _about("ledger-db runs on ledger-db-01 with a sync standby", "ent-ledger")
    assert _off_more(often, replica) == 1.0
    nightly = _about("ledger-db is backed up nightly with pgbackrest", "ent-ledger")
    assert _off_more(often, nightly) == 0.0
    port = "Which port does the notification worker listen on?"
    busy = _about("notification-worker queue capacity raised to 20000 at 00:00", "ent-notif-worker")
    assert _off_more(port, busy) == 1.0
    listens = _about("notification-worker listens on port 8443", "ent-notif-worker")
    assert _off_more(port, listens) == 0.0
    # A question that also asks what may have no shape (when, who) is not judged by form.
    when_too = "When did we last restore the ledger database, and how long did it take?"
    assert _off_more(when_too, _about("ledger-db restore drill done", "ent-ledger")) == 0.0


def test_a_fact_whose_relation_names_the_kind_asked_states_a_value_of_it() -> None:
    """``storefront | node version | 20 LTS`` answers "which node version" though "20 LTS" has
    no version's shape: the relation says what its object is."""
    version = frozenset({"version"})
    text = "storefront node version 20 LTS"
    assert asked.states(version, text, "node version", "20 LTS")
    assert not asked.states(version, text, "node runtime", "20 LTS")
    assert asked.states(frozenset({"port"}), "admin ui on 8443 (TLS)", "admin_ports", "8443 (TLS)")


def test_a_memory_about_the_thing_outside_the_period_asked_about_is_off() -> None:
    question = "What was the root cause of the notification worker outage on December 8?"
    outside = _memory("notification-worker outage: root cause a full disk", 2)
    inside = _memory("notification-worker outage: root cause a full disk", 8)
    assert _off_more(question, replace(outside, entity_ids=("ent-notif-worker",))) == 1.0
    assert _off_more(question, replace(inside, entity_ids=("ent-notif-worker",))) == 0.0


def test_the_noun_after_the_name_that_ends_the_question_is_part_of_the_name() -> None:
    question = "What is the backup schedule for the ClickHouse analytics cluster?"
    grew = _about("clickhouse-analytics cluster grew from 3 to 5 shards", "ent-ch")
    assert _off_more(question, grew) == 1.0
    backups = _about("clickhouse-analytics cluster backups run nightly to S3", "ent-ch")
    assert _off_more(question, backups) == 0.0
    # Only where the memory follows the name with the same word: "logo" stays asked.
    logo = _about("tidewater got a new logo from the brand agency", "ent-tide")
    assert _off_more("who designed the tidewater logo", logo) == 0.0


def test_a_hyphenated_plain_word_is_no_name_unless_built_like_the_stores() -> None:
    plain = plain_compounds("Can a help-desk agent reset a sign-in lockout?", SPELLINGS)
    assert plain == frozenset({"help-desk", "sign-in"})
    # Built as the store's names are (``*-gateway``, ``fraud-*``): a name, stored or not.
    assert plain_compounds("What does the media-gateway log?", SPELLINGS) == frozenset()
    assert plain_compounds("Is fraud-rules deployed?", SPELLINGS) == frozenset()
    assert plain_compounds("What does support-gateway log?", SPELLINGS) == frozenset()


def test_a_plain_compound_a_memory_lacks_is_not_missing() -> None:
    question = "How many sign-in attempts per minute does auth-gateway allow?"
    subjects = subjects_named(question, SPELLINGS)
    terms = Terms.of(question, None, subjects=subjects, plain=plain_compounds(question, SPELLINGS))
    memory = _about("auth-gateway login rate limit: 10 attempts per IP per minute.", "ent-auth")
    assert evidence_of(terms, memory, None).missing_named == 0.0
    assert evidence_of(Terms.of(question, None), memory, None).missing_named == 1.0


def test_the_questions_one_token_spelling_of_the_thing_is_not_what_it_asks() -> None:
    # "auth-gateway" spells the entity "auth gateway": what is asked is the SLO alone.
    memory = _about("auth-gateway rotates its signing key every month.", "ent-auth")
    assert _off("What is the latency SLO of auth-gateway?", memory) == 1.0
    assert _off("What does auth-gateway do?", memory) == 0.0


def test_a_question_naming_a_facts_relation_in_another_wording_asks_what_it_states() -> None:
    from ferrex.models.sparse import tokens
    from ferrex.rules.asked import relation_named

    asked = tokens("Which programming language is ferrex built with?")
    assert relation_named(asked, "built_with") == {"program", "languag", "built"}
    assert relation_named(tokens("who maintains the billing api?"), "owned_by") == {"maintain"}
    # A wording of stop words alone ("is") words no relation; no relation, nothing worded.
    assert not relation_named(tokens("what is the latency SLO of the fraud scorer?"), "is_a")
    assert not relation_named(tokens("which language is ferrex written in?"), None)


def test_a_fact_whose_relation_is_all_the_question_asks_is_on_subject() -> None:
    # The fact's text is what a fact embeds; its relation is ``built_with``.
    fact = replace(
        _about("fraud-scorer written in Go", "ent-fraud"), predicate_normalized="built_with"
    )
    assert _off("Which programming language is the fraud scorer built with?", fact) == 0.0
    unnamed = replace(fact, predicate_normalized=None)  # no relation known: not worded
    assert _off("Which programming language is the fraud scorer built with?", unnamed) == 1.0
    # Asked more than the relation ("favourite *football team*"): not answered by wording.
    likes = replace(
        _about("fraud-scorer prefers tabs", "ent-fraud"), predicate_normalized="prefers"
    )
    assert _off("What is the fraud scorer's favourite football team?", likes) == 1.0


def _leg(scores: dict[str, float], floor: float) -> Leg:
    return Leg({m: Hit(f"p-{m}", v, {"memory_id": m}) for m, v in scores.items()}, floor)


def test_the_runner_up_is_the_best_cosine_of_any_other_memory() -> None:
    leg = _leg({"mem-8": 0.71, "mem-9": 0.52, "mem-7": 0.40}, 0.25)
    assert runner_up(leg, "mem-8") == 0.52
    assert runner_up(leg, "mem-9") == 0.71
    assert runner_up(leg, "mem-1") == 0.71  # a memory the leg did not return
    assert runner_up(_leg({"mem-8": 0.71}, 0.0), "mem-8") is None
    assert runner_up(None, "mem-8") is None


def test_the_evidence_of_a_memory_carries_its_legs_floor_and_runner_up() -> None:
    memory = _memory("Deployed the checkout service to the new cluster.", 8)
    leg = _leg({"mem-8": 0.71, "mem-9": 0.52}, 0.25)
    terms = Terms.of("what did we deploy?", None)
    e = evidence_of(terms, memory, leg)
    assert (e.cosine, e.floor, e.runner_up) == (0.71, 0.25, 0.52)
    other = evidence_of(terms, replace(memory, memory_id="mem-3"), leg)
    assert (other.cosine, other.floor, other.runner_up) == (0.25, 0.25, 0.71)
