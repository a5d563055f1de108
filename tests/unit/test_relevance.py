"""The relevance rule: coverage, the logistic model, labels, the verdict, bad input."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.models.sparse import tokens
from ferrex.rules.relevance import (
    ANSWER_INPUTS,
    ANSWER_MODEL,
    DEFAULT_MODEL,
    HIDDEN_BELOW,
    NEAREST_WHEN_NOTHING,
    PIECE_CREDIT,
    RANK_DEPTH,
    AnswerModel,
    Evidence,
    Model,
    both_legs,
    check_min_relevance,
    coverage,
    evidence,
    inputs,
    is_compound,
    missing_attribute,
    missing_name,
    missing_named,
    nothing_relevant,
    period_found,
    query_names,
    rank_depth,
    states_term,
    trim,
    vague,
    without_phrase,
)


def test_an_explicit_filter_is_a_term_every_ranked_memory_has() -> None:
    # "what changed?" under a filter: half the question is what the filter named
    assert coverage(tokens("what changed?"), tokens("pg-primary failed over"), None, 1) == 0.5
    assert coverage(tokens("what changed?"), tokens("the schema changed"), None, 1) == 1.0
    assert coverage([], tokens("anything"), None, 1) == 1.0
    assert coverage(tokens("what changed?"), tokens("the schema changed"), None, 0) == 1.0


def cov(query: str, document: str) -> float:
    return coverage(tokens(query), tokens(document))


def test_coverage_counts_the_query_terms_the_document_has() -> None:
    assert cov("nightly backup failed", "The nightly backup job failed at 02:00") == 1.0
    assert cov("nightly backup failed", "The nightly deploy") == pytest.approx(1 / 3)
    assert cov("sourdough bread", "The nightly backup job failed") == 0.0


def test_an_identifier_and_its_pieces_are_one_term() -> None:
    # ledger-api is one term of three, not three of five.
    assert cov("will ledger-api move to CockroachDB", "ledger-api listens on 8080") == (
        pytest.approx(1 / 3)
    )


def test_a_neighbouring_identifier_earns_only_the_piece_credit() -> None:
    assert cov("INC-4417", "INC-4417: the API returned 502") == 1.0
    # INC-4471 shares the piece "inc" (one of two pieces) and the word term "inc" is absorbed.
    assert cov("INC-4417", "INC-4471: the CDN served old code") == pytest.approx(PIECE_CREDIT / 2)


def test_a_query_of_stop_words_covers_nothing() -> None:
    assert coverage(tokens("what is it"), tokens("it is what it is")) == 0.0


@given(
    st.lists(st.sampled_from(["pool", "size", "inc-1", "inc", "1", "redis", "#12"]), max_size=6),
    st.lists(st.sampled_from(["pool", "size", "inc-1", "inc", "1", "redis", "#12"]), max_size=6),
)
def test_coverage_is_a_share(query: list[str], document: list[str]) -> None:
    value = coverage(query, document)
    assert 0.0 <= value <= 1.0
    assert coverage(query, query) == (1.0 if query else 0.0)


def test_a_result_the_dense_leg_missed_gets_the_legs_cut_off() -> None:
    assert evidence(["a"], ["a"], None, 0.31).cosine == 0.31
    assert evidence(["a"], ["a"], 0.8, 0.31).cosine == 0.8
    assert evidence(["a"], ["a"], None, None).cosine == 0.0


def test_relevance_grows_with_each_kind_of_evidence() -> None:
    m = DEFAULT_MODEL
    low = m.relevance(Evidence(0.1, 0.0))
    assert m.relevance(Evidence(0.6, 0.0)) > low
    assert m.relevance(Evidence(0.1, 1.0)) > low
    assert 0.0 < low < m.relevance(Evidence(0.9, 1.0)) < 1.0


def test_default_labels_at_the_calibrated_extremes() -> None:
    # An unrelated memory (low cosine, no shared term) and an exact one (high cosine, every
    # term): the fitted model must put them at the two ends.
    m = DEFAULT_MODEL
    assert m.label(m.relevance(Evidence(0.05, 0.0))) == "none"
    assert m.label(m.relevance(Evidence(0.8, 1.0))) == "strong"


def test_labels_follow_the_thresholds() -> None:
    m = Model(1.0, 1.0, 0.0, weak_from=0.4, strong_from=0.7)
    assert m.label(0.39) == "none"
    assert m.label(0.4) == "weak"
    assert m.label(0.7) == "strong"


def test_thresholds_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="weak_from"):
        Model(weak_from=0.8, strong_from=0.5)


def test_sigmoid_is_stable_far_out() -> None:
    m = Model(1000.0, 0.0, 0.0)
    assert m.relevance(Evidence(1.0, 0.0)) == 1.0
    assert m.relevance(Evidence(-1.0, 0.0)) == 0.0


def test_nothing_relevant_when_no_result_reaches_weak() -> None:
    assert nothing_relevant([])
    assert nothing_relevant(["none", "none"])
    assert not nothing_relevant(["none", "weak"])


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan, "0.5", True, None])
def test_bad_min_relevance_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="min_relevance"):
        check_min_relevance(value)


def test_good_min_relevance_is_a_float() -> None:
    assert check_min_relevance(0) == 0.0
    assert check_min_relevance(1) == 1.0
    assert check_min_relevance(0.46) == 0.46


def test_a_period_the_query_names_is_one_term_found_by_the_memorys_time() -> None:
    query = without_phrase(tokens("what did we decide last Tuesday?"), tokens("last Tuesday"))
    memory = tokens("We decided to freeze the schema")
    assert coverage(tokens("what did we decide last Tuesday?"), memory) < 0.5  # words missing
    assert coverage(query, memory, in_period=True) == 1.0
    assert coverage(query, memory, in_period=False) == pytest.approx(0.5)
    assert coverage(query, tokens("the office plants"), in_period=True) == pytest.approx(0.5)
    # a question that is only a date: the period is all there is to cover
    assert coverage([], [], in_period=True) == 1.0 and coverage([], [], in_period=False) == 0.0
    inside = evidence(query, memory, 0.5, None, in_period=True)
    outside = evidence(query, memory, 0.5, None, in_period=False)
    assert DEFAULT_MODEL.relevance(inside) > DEFAULT_MODEL.relevance(outside)


def test_without_phrase_takes_each_phrase_token_once() -> None:
    assert without_phrase(["a", "b", "a", "c"], ["a", "c", "z"]) == ["b", "a"]


def named(query: str, document: str, in_period: bool | None = None) -> float:
    return missing_named(tokens(query), tokens(document), in_period)


def test_a_missing_identifier_or_number_is_named_missing() -> None:
    assert named("INC-7722", "INC-7721: checkout answered 502") == 1.0
    assert named("INC-7721", "INC-7721: checkout answered 502") == 0.0
    assert named("upgrade Kubernetes to 1.31", "the cluster was upgraded to Kubernetes 1.29") == 1.0
    assert named("error 53300", "sqlx failed with error 53300") == 0.0
    assert named("error 53300", "sqlx failed with error 53301") == 1.0


def test_words_without_identifiers_name_nothing_specific() -> None:
    assert named("why was checkout throwing bad gateway errors", "nginx answered 502") == 0.0
    # one digit is not a number worth naming (top 3, v2 inside v2.9.0 is the identifier's)
    assert named("top 3 incidents", "the incidents of the week") == 0.0
    assert named("v2.9.0", "deploy of v2.9.0 rolled back") == 0.0


def test_a_period_the_memory_is_outside_is_named_missing() -> None:
    assert named("what did we decide", "we decided to freeze schema changes", False) == 1.0
    assert named("what did we decide", "we decided to freeze schema changes", True) == 0.0
    assert named("what did we decide", "we decided to freeze schema changes", None) == 0.0


def test_a_missing_named_thing_lowers_relevance() -> None:
    assert DEFAULT_MODEL.named_weight < 0
    plain = DEFAULT_MODEL.relevance(Evidence(0.5, 0.5, 0.0))
    assert DEFAULT_MODEL.relevance(Evidence(0.5, 0.5, 1.0)) < plain
    ev = evidence(tokens("INC-7722"), tokens("INC-7721: checkout answered 502"), 0.4, 0.1)
    assert ev.missing_named == 1.0


def name_tokens(query: str) -> set[str]:
    return {t for word in query_names(query) for t in tokens(word)}


def test_query_names_are_its_capitalised_words_less_months_and_weekdays() -> None:
    assert query_names("Android TV version of the mobile app") == ["Android", "TV"]
    assert query_names("who is the new CFO") == ["CFO"]
    assert query_names("what did we decide last Tuesday?") == []
    assert query_names("what happened in March 2026?") == []
    assert query_names("how do we sign the build") == []
    # a capitalised stop word has no tokens, so it names nothing
    assert name_tokens("What is the Wi-Fi password in the Berlin office?") == {
        "wi-fi",
        "wi",
        "fi",
        "berlin",
    }
    assert name_tokens("Will ledger-api move to CockroachDB?") == {"cockroachdb"}


def test_a_name_the_memory_lacks_is_missing() -> None:
    memory = tokens("Mobile app release 5.2 added Apple Pay and Google Pay at checkout")
    assert missing_name(name_tokens("Android TV version of the mobile app"), memory) == 1.0
    assert missing_name(name_tokens("does the mobile app support Apple Pay"), memory) == 0.0
    assert missing_name(name_tokens("which wallets does the mobile app support"), memory) == 0.0
    assert missing_name((), memory) == 0.0


def test_an_acronym_is_named_by_its_words_in_a_row() -> None:
    timeout = tokens("The load balancer idle timeout is 350 seconds")
    assert missing_name(name_tokens("what is the LB idle timeout?"), timeout) == 0.0
    assert missing_name(name_tokens("who approved it, the CFO?"),
                        tokens("the chief financial officer signed off")) == 0.0  # fmt: skip
    # The letters must begin words in a row: not "TV" beside "the video" or scattered words.
    assert missing_name(name_tokens("what is the TV idle timeout?"), timeout) == 1.0


def test_a_product_is_named_with_or_without_its_suffix() -> None:
    facts = tokens("ledger api uses database PostgreSQL 16; sessions in MongoDB")
    assert missing_name(name_tokens("which Postgres version does it run?"), facts) == 0.0
    assert missing_name(name_tokens("is Mongo sharded?"), facts) == 0.0
    assert missing_name(name_tokens("does it use PostgreSQL?"), tokens("we run postgres")) == 0.0
    assert missing_name(name_tokens("is Java 21 supported?"), tokens("javascript sdk")) == 1.0


def test_a_missing_name_lowers_relevance() -> None:
    assert DEFAULT_MODEL.name_weight < 0
    assert DEFAULT_MODEL.relevance(Evidence(0.45, 0.6, 0.0, 1.0)) < DEFAULT_MODEL.relevance(
        Evidence(0.45, 0.6, 0.0, 0.0)
    )
    query = "Android TV version of the mobile app"
    memory = tokens("Mobile app release 5.2 added Apple Pay and Google Pay at checkout")
    ev = evidence(tokens(query), memory, 0.45, None, names=name_tokens(query))
    assert ev.missing_name == 1.0 and ev.missing_named == 0.0
    assert evidence(tokens(query), memory, 0.45, None).missing_name == 0.0


def attribute(query: str, document: str) -> float:
    return missing_attribute(tokens(query), tokens(document))


def test_an_attribute_the_memory_does_not_state_is_missing() -> None:
    db = "PgBouncer in transaction mode sits in front of the orders database"
    assert attribute("which port does the orders database listen on", db) == 1.0
    assert attribute("which port does the orders database listen on", db + " on 6432") == 0.0
    assert attribute("what version of RabbitMQ do we run", "Celery with RabbitMQ as broker") == 1.0
    assert attribute("what version of Redis is it", "redis-sess-01 runs Redis 7.2") == 0.0
    # a major version alone states a version; a port does not
    assert attribute("Postgres major version upgrade", "moved from PostgreSQL 14 to 16") == 0.0
    assert attribute("what version of RabbitMQ runs", "RabbitMQ listens on 5672") == 1.0
    assert attribute("where is the password for redis-sess-01 kept", "redis-sess-01: 7.2") == 1.0
    assert attribute("where is the password kept", "the secret is in Vault") == 0.0
    assert attribute("how many shards does the index have", "Dana owns the index job") == 1.0
    assert attribute("how many shards does the index have", "the index has 12 shards") == 0.0
    assert attribute("which host serves the API", "the API is served at api.juniper.shop") == 0.0
    assert attribute("how long does Sentry keep error events", "errors go to Sentry") == 1.0
    assert attribute("how long are backups kept", "backups are kept for 14 days") == 0.0
    # a number glued to its unit of time states a duration; a bare number or size does not
    for took in ("the reindex took 3h", "reindex: 45min", "reindex took 1.5h", "took 500ms"):
        assert attribute("how long does a reindex take", took) == 0.0, took
    for took in ("the reindex ran on 3 nodes", "the reindex index is 3gb"):
        assert attribute("how long does a reindex take", took) == 1.0, took
    # no attribute asked: nothing is missing
    assert attribute("why did we drop LaunchDarkly", "flags moved to Unleash") == 0.0


def test_a_missing_attribute_lowers_relevance() -> None:
    assert DEFAULT_MODEL.attribute_weight < 0
    plain = Evidence(0.5, 0.5)
    assert DEFAULT_MODEL.relevance(Evidence(0.5, 0.5, missing_attribute=1.0)) < (
        DEFAULT_MODEL.relevance(plain)
    )
    query, memory = "which port does the orders database listen on", "the orders database"
    assert evidence(tokens(query), tokens(memory), 0.4, None).missing_attribute == 1.0


def test_a_period_is_found_by_the_event_time_or_by_the_memorys_own_words() -> None:
    review = tokens("The monthly AWS bill came to 41,200 USD in October")
    assert period_found(True, tokens("in October"), [])
    assert period_found(False, tokens("in October"), review)
    assert not period_found(False, tokens("in March 2026"), review)
    assert not period_found(False, tokens("last Tuesday"), review)
    assert not period_found(False, [], review)


MODEL = Model(weak_from=0.5, strong_from=0.8, hidden_below=0.2)


def test_trim_hides_only_what_is_surely_no_answer_past_the_first_three() -> None:
    # labels: strong, none (0.3 is above the line), weak, none, surely none
    assert trim([0.9, 0.3, 0.6, 0.4, 0.1], MODEL) == [0, 1, 2, 3]
    assert trim([0.9, 0.1, 0.1, 0.1, 0.6], MODEL) == [0, 1, 2, 4]
    assert trim([0.9, 0.05], MODEL) == [0, 1]


def test_trim_keeps_the_nearest_two_and_any_doubtful_one_when_nothing_is_relevant() -> None:
    assert NEAREST_WHEN_NOTHING == 2
    assert trim([0.1] * 5, MODEL) == [0, 1]
    assert trim([0.1, 0.1, 0.1, 0.3, 0.1], MODEL) == [0, 1, 3]
    assert trim([0.1], MODEL) == [0]
    assert trim([], MODEL) == []


def test_a_default_recall_hides_only_what_scores_below_one_percent() -> None:
    # Issue 44: a reply ranked 4th that shares no word with the question scores about 0.05
    # and was hidden below the old line (0.1); the line is now where no train or validation
    # answer lies below it (HIDDEN_BELOW).
    assert DEFAULT_MODEL.hidden_below == HIDDEN_BELOW == 0.01
    assert trim([0.95, 0.8, 0.7, 0.05, 0.009]) == [0, 1, 2, 3]
    assert trim([0.3, 0.2, 0.1, 0.05, 0.009]) == [0, 1, 2, 3]


def test_a_hiding_line_above_weak_is_refused() -> None:
    with pytest.raises(ValueError):
        Model(weak_from=0.5, strong_from=0.8, hidden_below=0.6)


@given(st.lists(st.floats(0.0, 1.0), max_size=12))
def test_trim_never_reorders_and_a_longer_answer_begins_with_a_shorter_one(
    values: list[float],
) -> None:
    kept = trim(values, MODEL)
    assert kept == sorted(kept) and len(set(kept)) == len(kept)
    assert all(values[i] >= MODEL.hidden_below for i in kept[3:])
    assert len(kept) >= min(len(values), NEAREST_WHEN_NOTHING)
    if any(v >= MODEL.weak_from for v in values):
        assert kept[:3] == list(range(min(3, len(values))))
    for n in range(len(values)):
        if nothing_relevant([MODEL.label(v) for v in values[:n]]) == nothing_relevant(
            [MODEL.label(v) for v in values]
        ):
            assert trim(values[:n], MODEL) == [i for i in kept if i < n]


# --- What the legs' rankings say (the answer model's inputs) ---


def test_rank_depth_reads_ranks_on_a_log_scale_up_to_the_fewest_points_asked() -> None:
    assert rank_depth(1) == 0.0
    assert 0.0 < rank_depth(2) < rank_depth(5) < rank_depth(RANK_DEPTH - 1) < 1.0
    # deeper than the fewest points a leg is asked for, or not returned: all the same
    assert rank_depth(RANK_DEPTH) == rank_depth(RANK_DEPTH + 50) == rank_depth(None) == 1.0


def test_both_legs_agree_only_when_each_ranks_the_memory_near_the_top() -> None:
    assert both_legs(Evidence(0.5, 0.5, dense_rank=1, sparse_rank=10)) == 1.0
    assert both_legs(Evidence(0.5, 0.5, dense_rank=1, sparse_rank=11)) == 0.0
    assert both_legs(Evidence(0.5, 0.5, dense_rank=3, sparse_rank=None)) == 0.0


def test_evidence_carries_the_ranks_the_gap_to_the_best_cosine_and_the_bm25_share() -> None:
    e = evidence(["port"], ["port"], 0.6, 0.2, ranks=(2, 7), best_cosine=0.75, bm25_share=0.4)
    assert (e.dense_rank, e.sparse_rank) == (2, 7)
    assert e.cosine_gap == pytest.approx(0.15)
    assert e.bm25_share == pytest.approx(0.4)
    # a memory the dense leg did not return sits at its floor; shares are clamped to [0, 1]
    e = evidence(["port"], [], None, 0.2, best_cosine=0.75, bm25_share=1.7)
    assert e.cosine_gap == pytest.approx(0.55) and e.bm25_share == 1.0
    assert evidence(["port"], [], 0.8, 0.2, best_cosine=0.75).cosine_gap == 0.0


def test_evidence_places_the_cosine_in_its_store_by_the_floor_and_the_runner_up() -> None:
    e = evidence(["port"], ["port"], 0.62, 0.31, runner_up=0.48)
    assert e.floor == pytest.approx(0.31) and e.runner_up == pytest.approx(0.48)
    assert e.cosine - e.runner_up == pytest.approx(0.14)  # it stands out of its neighbours
    # without a dense leg, or alone in it, both are 0; out-of-range values are clamped
    alone = evidence(["port"], ["port"], None, None)
    assert (alone.floor, alone.runner_up) == (0.0, 0.0)
    assert evidence(["port"], [], 0.5, -3.0, runner_up=2.0).floor == -1.0
    assert evidence(["port"], [], 0.5, -3.0, runner_up=2.0).runner_up == 1.0


def test_the_floor_and_the_runner_up_change_neither_the_relevance_nor_the_label() -> None:
    e = evidence(["port"], ["port"], 0.62, 0.31, runner_up=0.48)
    plain = replace(e, floor=0.0, runner_up=0.0)
    assert DEFAULT_MODEL.relevance(e) == DEFAULT_MODEL.relevance(plain)


def test_the_answer_model_reads_every_input_and_doubts_a_memory_far_below_the_nearest() -> None:
    near = Evidence(0.5, 0.6, dense_rank=4, sparse_rank=4, cosine_gap=0.01, bm25_share=0.5)
    far = replace(near, cosine_gap=0.15)
    assert len(inputs(near, 0.5)) == len(ANSWER_INPUTS) == len(ANSWER_MODEL.weights)
    assert 0.0 < ANSWER_MODEL.chance(far, 0.5) < ANSWER_MODEL.chance(near, 0.5) < 1.0


def test_an_answer_model_with_the_wrong_shape_or_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="weights"):
        AnswerModel(weights=(1.0, 2.0))
    with pytest.raises(ValueError, match="kept_from"):
        AnswerModel(kept_from=1.5)


def test_past_the_third_trim_reads_the_answer_chance_and_never_hides_weak() -> None:
    answer = AnswerModel(kept_from=0.3)
    values = [0.9, 0.3, 0.6, 0.05, 0.4]
    assert trim(values, MODEL) == [0, 1, 2, 4]
    # a result of low relevance that may hold an answer the first three lack is shown; one
    # labelled none that the model is confident adds no answer is not
    assert trim(values, MODEL, [0.9, 0.1, 0.1, 0.4, 0.1], answer) == [0, 1, 2, 3]
    assert trim(values, MODEL, [0.9, 0.1, 0.1, 0.1, 0.1], answer) == [0, 1, 2]
    # a result labelled weak or strong is shown whatever its chance
    assert trim([0.9, 0.3, 0.6, 0.05, 0.7], MODEL, [0.0] * 5, answer) == [0, 1, 2, 4]


def test_under_the_verdict_trim_reads_the_relevance_alone() -> None:
    answer = AnswerModel(kept_from=0.3)
    values = [0.4, 0.1, 0.3, 0.05, 0.1]  # none reaches weak (0.5): the verdict
    assert trim(values, MODEL, [0.0, 0.0, 0.0, 0.9, 0.0], answer) == trim(values, MODEL)


def test_a_question_is_vague_when_at_most_one_term_is_left() -> None:
    assert vague([]) and vague(["chang"]) and vague(["chang", "chang"])
    assert not vague(["decid", "kafka"])


def test_a_period_taken_as_a_filter_lifts_a_memory_the_period_term_left_none() -> None:
    model = Model()
    query = tokens("what did we change")  # the period's words taken out: "chang"
    memory = tokens("Raised the rate limit of the public API to 200 requests per second.")
    # The vague question's period as a filter the memory passed: at least weak.
    inside = evidence(query, memory, 0.1, None, in_period=None, given=1)
    assert model.label(model.relevance(inside)) != "none"
    # As the period term it was before: one term of two found, no floor.
    as_term = evidence(query, memory, 0.1, None, in_period=True)
    assert model.label(model.relevance(as_term)) == "none"
    assert inside.coverage == as_term.coverage


def test_off_subject_keeps_a_memory_below_weak_even_under_a_filter() -> None:
    sure = Evidence(0.9, 1.0)
    assert DEFAULT_MODEL.label(DEFAULT_MODEL.relevance(sure)) == "strong"
    off = replace(sure, off_subject=1.0)
    value = DEFAULT_MODEL.relevance(off)
    assert DEFAULT_MODEL.label(value) == "none" and value > HIDDEN_BELOW  # shown, not hidden
    assert DEFAULT_MODEL.relevance(replace(off, given=1.0)) == value  # no floor for it


def test_a_compound_is_a_hyphenated_word_of_letters_only() -> None:
    assert is_compound("help-desk") and is_compound("read-only")
    assert not is_compound("prod-eu-2") and not is_compound("max_retries")
    assert not is_compound("config.toml") and not is_compound("desk")


def test_a_memory_states_a_compound_as_two_words_or_one() -> None:
    for text in ("the help desk answers", "the helpdesk answers", "the help-desk answers"):
        assert states_term("help-desk", tokens(text)), text
    assert states_term("on-call", tokens("payments oncall rotation"))
    assert not states_term("help-desk", tokens("the desk needs help"))
    assert not states_term("prod-eu-2", tokens("prod eu 2"))
    # Stated, so found: not missing, and one whole term of the coverage.
    query = tokens("help-desk hours")
    assert missing_named(query, tokens("help desk hours: 8 to 20")) == 0.0
    assert coverage(query, tokens("help desk hours: 8 to 20")) == 1.0
    assert missing_named(query, tokens("support hours: 8 to 20")) == 1.0
    assert missing_named(query, tokens("support hours"), plain={"help-desk"}) == 0.0


def test_a_count_worked_out_across_memories_is_not_asked_of_one() -> None:
    """ "how many times", "how many days ago", "… in total": each memory holds one event or
    one date and answers part of it; a count a thing has is still asked of a memory."""
    outing = "went bouldering at the Castle climbing centre with Priya on Saturday"
    assert attribute("how many times did I go climbing this month", outing) == 0.0
    assert attribute("how many weeks ago was the bouldering trip with Priya", outing) == 0.0
    assert attribute("how much have I spent on climbing in total", outing) == 0.0
    assert attribute("how many climbing gyms have I tried so far", outing) == 0.0
    # a count one memory states
    assert attribute("how many replicas does the search cluster run", "search runs on k8s") == 1.0
    assert attribute("how much disk does the search cluster have", "search runs on k8s") == 1.0
    assert attribute("how many replicas does the search cluster run", "3 replicas") == 0.0
