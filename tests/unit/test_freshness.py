"""Recency boost, staleness and its labels, per-namespace overrides: the numbers as documented."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.errors import UsageError
from ferrex.rules.freshness import (
    DAY,
    DEFAULT_STALENESS,
    OVERRIDE_KEYS,
    FreshnessInput,
    RecencyParams,
    RecencyRule,
    StalenessConfig,
    StalenessParams,
    StalenessWeights,
    TypeStaleness,
    boosted,
    freshness,
    params_for,
    recency_boost,
    staleness,
)

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
YEAR = 365 * DAY
TYPES = ("episodic", "semantic", "procedural")


def untouched(memory_type: str, age: float, **changes: object) -> FreshnessInput:
    """A memory stored ``age`` seconds before NOW about an event at that time, never touched."""
    m = FreshnessInput(
        type=memory_type,
        t_valid=NOW - age,
        t_invalid=None,
        created_at=NOW - age,
        last_accessed=None,
        last_validated=None,
        access_count=0,
    )
    return replace(m, **changes)  # type: ignore[arg-type]


# --- Recency boost -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory_type", "age", "expected"),
    [
        ("episodic", 0.0, 1.3),
        ("episodic", 30 * DAY, 1.15),
        ("episodic", 180 * DAY, 1 + 0.3 / 64),
        ("episodic", YEAR, 1 + 0.3 * 2 ** (-365 / 30)),
        ("semantic", 0.0, 1.15),
        ("semantic", 30 * DAY, 1 + 0.15 * 2 ** (-1 / 6)),
        ("semantic", 180 * DAY, 1.075),
        ("semantic", YEAR, 1 + 0.15 * 2 ** (-365 / 180)),
        ("procedural", 0.0, 1.0),
        ("procedural", 30 * DAY, 1.0),
        ("procedural", 180 * DAY, 1.0),
        ("procedural", YEAR, 1.0),
    ],
)
def test_recency_boost_at_documented_ages(memory_type: str, age: float, expected: float) -> None:
    assert recency_boost(memory_type, age) == pytest.approx(expected, rel=1e-12)


def test_recency_boost_after_a_year_is_small_but_ordered() -> None:
    assert recency_boost("episodic", YEAR) == pytest.approx(1.0000652, abs=1e-7)
    assert recency_boost("semantic", YEAR) == pytest.approx(1.0367849, abs=1e-7)
    assert recency_boost("episodic", YEAR) < recency_boost("episodic", 364 * DAY)


@pytest.mark.parametrize("memory_type", TYPES)
def test_a_future_event_time_gets_the_boost_of_age_zero(memory_type: str) -> None:
    assert recency_boost(memory_type, -10 * DAY) == recency_boost(memory_type, 0.0)


def test_recency_params_are_used_and_checked() -> None:
    params = RecencyParams(procedural=RecencyRule(0.5, 10.0))
    assert recency_boost("procedural", 10 * DAY, params) == pytest.approx(1.25)
    with pytest.raises(UsageError, match="recency weight"):
        RecencyRule(-0.1, 30.0)
    with pytest.raises(UsageError, match="half-life"):
        RecencyRule(0.3, 0.0)


def test_an_unknown_type_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="'note'") as info:
        recency_boost("note", 0.0)
    assert info.value.hint is not None and "episodic" in info.value.hint
    with pytest.raises(UsageError, match="'note'"):
        staleness(untouched("note", 0.0), NOW)


# --- Boosting a score ----------------------------------------------------------------------


def test_boosting_multiplies_positive_scores_and_divides_negative_ones() -> None:
    assert boosted(2.0, 1.25) == 2.5
    assert boosted(-2.0, 1.25) == -1.6
    assert boosted(0.0, 1.3) == 0.0


@pytest.mark.parametrize("score", [-3.5, -0.01, 0.01, 3.5])
def test_the_recent_memory_wins_for_equal_scores(score: float) -> None:
    recent = boosted(score, recency_boost("episodic", 1 * DAY))
    old = boosted(score, recency_boost("episodic", 200 * DAY))
    assert recent > old


def test_a_boost_never_lowers_a_negative_score() -> None:
    # The rule it replaces: multiplying -2 by 1.3 would give -2.6, below the unboosted score.
    assert boosted(-2.0, 1.3) > -2.0


finite_scores = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
boosts = st.floats(min_value=1.0, max_value=2.0)


@given(score=finite_scores, old=boosts, extra=st.floats(min_value=0.0, max_value=1.0))
def test_boosted_ranks_the_more_recent_at_least_as_high(
    score: float, old: float, extra: float
) -> None:
    recent = old + extra
    assert boosted(score, recent) >= boosted(score, old) >= score


@given(a=finite_scores, b=finite_scores, boost=boosts)
def test_boosted_keeps_the_order_of_scores_for_one_boost(a: float, b: float, boost: float) -> None:
    low, high = sorted((a, b))
    assert boosted(low, boost) <= boosted(high, boost)


# --- Staleness -----------------------------------------------------------------------------


AGES = {"episodic": (30, 90), "semantic": (90, 180), "procedural": (180, 365)}
"""The design's ages: fresh below the first, aging from there, stale from the second."""


@pytest.mark.parametrize("memory_type", TYPES)
def test_an_untouched_memory_is_labelled_by_the_design_ages(memory_type: str) -> None:
    fresh, stale = AGES[memory_type]
    expected = {
        0: "fresh",
        fresh - 1: "fresh",
        fresh: "aging",
        fresh + 1: "aging",
        stale - 1: "aging",
        stale: "stale",
        stale + 1: "stale",
        10 * 365: "stale",
    }
    got = {days: staleness(untouched(memory_type, days * DAY), NOW).label for days in expected}
    assert got == expected


@pytest.mark.parametrize(
    ("memory_type", "days", "label"),
    [
        ("episodic", 29, "fresh"), ("episodic", 30, "aging"), ("episodic", 31, "aging"),
        ("episodic", 89, "aging"), ("episodic", 90, "stale"), ("episodic", 91, "stale"),
        ("semantic", 89, "fresh"), ("semantic", 90, "aging"), ("semantic", 91, "aging"),
        ("semantic", 179, "aging"), ("semantic", 180, "stale"), ("semantic", 181, "stale"),
        ("procedural", 179, "fresh"), ("procedural", 180, "aging"), ("procedural", 181, "aging"),
        ("procedural", 364, "aging"), ("procedural", 365, "stale"), ("procedural", 366, "stale"),
    ],
)  # fmt: skip
def test_the_boundaries_day_by_day(memory_type: str, days: int, label: str) -> None:
    assert staleness(untouched(memory_type, days * DAY), NOW).label == label


@pytest.mark.parametrize("memory_type", TYPES)
def test_the_boundaries_hold_to_the_second_at_any_clock_reading(memory_type: str) -> None:
    """Real clocks are not whole seconds: ``now - created_at`` carries a rounding error."""
    fresh, stale = AGES[memory_type]
    for now in (NOW + 0.123456, 1_734_567_890.987654, 2_000_000_000.5):
        for days, before, after in ((fresh, "fresh", "aging"), (stale, "aging", "stale")):
            stored = now - days * DAY
            m = FreshnessInput(memory_type, stored, None, stored, None, None, 0)
            assert staleness(m, now).label == after
            assert staleness(m, now - 1.0).label == before


def test_the_derived_score_thresholds() -> None:
    """An untouched memory scores 0.1 + 0.9 · (1 - 2^(-a/stale)) with the defaults."""
    for memory_type, (fresh, stale) in AGES.items():
        aging_score, stale_score = DEFAULT_STALENESS.thresholds(memory_type)
        assert stale_score == pytest.approx(0.55)
        assert aging_score == pytest.approx(0.1 + 0.9 * (1 - 2 ** (-fresh / stale)))


def test_an_untouched_memory_scores_the_documented_curve() -> None:
    result = staleness(untouched("episodic", 90 * DAY), NOW)
    assert result.components == pytest.approx(
        {"age": 0.5, "access": 0.5, "validation": 0.5, "count": 1.0}
    )
    assert result.score == pytest.approx(0.1 + 0.9 * 0.5)
    assert staleness(untouched("episodic", 0.0), NOW).score == pytest.approx(0.1)


def test_access_keeps_a_memory_fresh_longer_and_validation_too() -> None:
    """The score still orders: used or confirmed memories cross the boundaries later."""
    old = untouched("episodic", 40 * DAY)
    assert staleness(old, NOW).label == "aging"
    recalled = replace(old, last_accessed=NOW - DAY, access_count=3)
    confirmed = replace(old, last_validated=NOW - DAY)
    assert staleness(recalled, NOW).label == "fresh"
    assert staleness(confirmed, NOW).label == "fresh"
    assert staleness(recalled, NOW).score < staleness(old, NOW).score
    stale = untouched("episodic", 100 * DAY)
    assert staleness(stale, NOW).label == "stale"
    assert staleness(replace(stale, last_validated=NOW), NOW).label == "aging"
    assert staleness(replace(stale, last_accessed=NOW, access_count=1), NOW).label == "aging"


def test_the_count_component_saturates_logarithmically() -> None:
    def count(n: int) -> float:
        return staleness(untouched("semantic", 0.0, access_count=n), NOW).components["count"]

    assert count(0) == 1.0
    assert count(1) == pytest.approx(1 - math.log(2) / math.log(11))
    assert count(3) == pytest.approx(1 - math.log(4) / math.log(11))
    assert count(10) == 0.0
    assert count(1000) == 0.0


def test_each_clock_falls_back_to_created_at() -> None:
    # Stored today about an event a year ago: old by event time, but just learned, so every
    # clock (age included) starts today.
    m = untouched("semantic", 0.0, t_valid=NOW - YEAR)
    result = staleness(m, NOW)
    assert result.components["age"] == 0.0
    assert result.components["access"] == 0.0
    assert result.components["validation"] == 0.0
    assert result.label == "fresh"


def test_a_back_dated_import_ages_like_a_new_memory() -> None:
    """Episodes imported today from two years ago: not stale ten days (or a month) later
    just because they happened long ago; they age from the import, as new memories do."""
    imported = NOW - 10 * DAY
    m = FreshnessInput("episodic", imported - 2 * YEAR, None, imported, None, None, 0)
    fresh = FreshnessInput("episodic", imported, None, imported, None, None, 0)
    assert staleness(m, NOW).score == pytest.approx(staleness(fresh, NOW).score)
    assert staleness(m, NOW).label != "stale"


@pytest.mark.parametrize(
    ("t_invalid", "label"),
    [(NOW - DAY, "superseded"), (NOW, "superseded"), (NOW + DAY, "fresh"), (None, "fresh")],
)
def test_superseded_is_the_label_whatever_the_score(t_invalid: float | None, label: str) -> None:
    m = untouched("semantic", DAY, t_invalid=t_invalid)
    result = staleness(m, NOW)
    assert result.label == label
    assert result.score < DEFAULT_STALENESS.thresholds("semantic")[0]


def test_a_superseded_stale_memory_is_labelled_superseded() -> None:
    m = untouched("episodic", 5 * YEAR, t_invalid=NOW - YEAR)
    assert staleness(m, NOW).label == "superseded"


# --- Access is not validation --------------------------------------------------------------


def test_access_leaves_the_validation_component_alone() -> None:
    never = untouched("semantic", 200 * DAY)
    used = replace(never, last_accessed=NOW, access_count=50)
    before, after = staleness(never, NOW), staleness(used, NOW)
    assert after.components["validation"] == before.components["validation"] > 0.5
    assert after.components["access"] == 0.0 < before.components["access"]
    assert after.components["count"] == 0.0


def test_validation_resets_only_the_validation_component() -> None:
    never = untouched("semantic", 200 * DAY)
    confirmed = replace(never, last_validated=NOW)
    before, after = staleness(never, NOW), staleness(confirmed, NOW)
    assert after.components["validation"] == 0.0
    assert {k: after.components[k] for k in ("age", "access", "count")} == {
        k: before.components[k] for k in ("age", "access", "count")
    }


@pytest.mark.parametrize("memory_type", TYPES)
def test_a_memory_used_daily_but_never_validated_still_goes_stale(memory_type: str) -> None:
    m = untouched(memory_type, 20 * YEAR, last_accessed=NOW, access_count=1000)
    result = staleness(m, NOW)
    assert result.score == pytest.approx(0.65)
    assert result.label == "stale"
    assert staleness(replace(m, last_validated=NOW), NOW).label == "aging"


# --- Parameters ----------------------------------------------------------------------------


def test_the_default_weights() -> None:
    w = DEFAULT_STALENESS.weights
    assert (w.age, w.access, w.validation, w.count) == (0.40, 0.25, 0.25, 0.10)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"age": 0.5}, "must sum to 1, got 1.1"),
        ({"age": 0.3}, "must sum to 1, got 0.9"),
        ({"age": 0.7, "count": -0.2}, "'count' must be a number >= 0"),
        ({"age": math.nan}, "'age' must be a number >= 0"),
    ],
)
def test_weights_are_checked(weights: dict[str, float], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        StalenessWeights(**weights)


def test_weights_that_sum_to_one_in_decimals_are_accepted() -> None:
    w = StalenessWeights(age=0.1, access=0.2, validation=0.3, count=0.4)
    assert math.fsum((w.age, w.access, w.validation, w.count)) == pytest.approx(1.0)


def test_the_score_stays_within_one_when_the_weights_sum_within_tolerance() -> None:
    weights = StalenessWeights(age=0.4 + 5e-10, access=0.25, validation=0.25, count=0.1)
    params = StalenessParams(weights=weights)
    result = staleness(untouched("episodic", 100 * YEAR), NOW, params)
    assert set(result.components.values()) == {1.0}
    assert result.score == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fresh": 100.0}, "fresh <= aging <= stale"),
        ({"aging": 100.0}, "fresh <= aging <= stale"),
        ({"fresh": -1.0}, "fresh must be a number of days >= 0"),
        ({"fresh": 0.0, "aging": 0.0, "stale": 0.0}, "stale must be more than 0 days"),
        ({"stale": math.inf}, "stale must be a number of days"),
        ({"age_half_life_days": 0.0}, "age_half_life_days must be a positive"),
        ({"validation_half_life_days": math.inf}, "validation_half_life_days"),
        ({"aging_score": 1.5}, "aging_score must be a staleness score from 0 to 1"),
        ({"stale_score": -0.1}, "stale_score must be a staleness score"),
    ],
)
def test_type_parameters_are_checked(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        TypeStaleness(**{"fresh": 30.0, "aging": 90.0, "stale": 90.0, **kwargs})


def test_score_thresholds_set_by_hand_must_keep_their_order() -> None:
    with pytest.raises(UsageError, match=r"threshold 0\.7 is above the stale one 0\.55"):
        StalenessParams(episodic=TypeStaleness(30.0, 90.0, 90.0, aging_score=0.7))
    by_hand = StalenessParams(
        episodic=TypeStaleness(30.0, 90.0, 90.0, aging_score=0.2, stale_score=0.9)
    )
    assert by_hand.thresholds("episodic") == (0.2, 0.9)
    assert staleness(untouched("episodic", 100 * DAY), NOW, by_hand).label == "aging"


def test_weights_that_leave_every_clock_out_are_refused() -> None:
    with pytest.raises(UsageError, match="nothing would age"):
        StalenessWeights(age=0.0, access=0.0, validation=0.0, count=1.0)


@pytest.mark.parametrize("saturation", [0, True, 2.5])
def test_count_saturation_is_a_positive_integer(saturation: object) -> None:
    with pytest.raises(UsageError, match="count_saturation"):
        StalenessParams(count_saturation=saturation)  # type: ignore[arg-type]


# --- Per-namespace overrides ---------------------------------------------------------------


def test_a_namespace_without_overrides_gets_the_base() -> None:
    overrides = {"work": {"episodic.stale": 120}}
    assert params_for("home", overrides) is DEFAULT_STALENESS
    assert params_for("home", {}) is DEFAULT_STALENESS


def test_flat_and_nested_keys_mean_the_same() -> None:
    flat = params_for(
        "work", {"work": {"episodic.fresh": 10, "episodic.stale": 120, "semantic.stale": 200}}
    )
    nested = params_for(
        "work", {"work": {"episodic": {"fresh": 10, "stale": 120}, "semantic": {"stale": 200}}}
    )
    assert flat == nested
    assert flat.episodic == replace(DEFAULT_STALENESS.episodic, fresh=10.0, stale=120.0)
    assert flat.semantic.stale == 200.0
    assert flat.weights == DEFAULT_STALENESS.weights
    assert flat.procedural == DEFAULT_STALENESS.procedural


def test_the_design_form_sets_the_boundaries_in_days() -> None:
    """`procedural = { fresh = 7, aging = 14, stale = 30 }` as the design writes it."""
    ci = params_for(
        "ci-infra", {"ci-infra": {"procedural": {"fresh": 7, "aging": 14, "stale": 30}}}
    )
    labels = {d: staleness(untouched("procedural", d * DAY), NOW, ci).label for d in (6, 7, 29, 30)}
    assert labels == {6: "fresh", 7: "aging", 29: "aging", 30: "stale"}
    half_days = params_for("x", {"x": {"episodic": {"fresh": 0.5, "aging": 1.5, "stale": 1.5}}})
    assert staleness(untouched("episodic", 0.5 * DAY - 1), NOW, half_days).label == "fresh"
    assert staleness(untouched("episodic", 0.5 * DAY), NOW, half_days).label == "aging"
    assert staleness(untouched("episodic", 1.5 * DAY), NOW, half_days).label == "stale"


def test_every_documented_key_is_accepted() -> None:
    clocks = ("age", "access", "validation")
    per_type = (
        *(f"{clock}_half_life_days" for clock in clocks),
        *("fresh", "aging", "stale", "aging_score", "stale_score"),
    )
    assert set(OVERRIDE_KEYS) == {
        *(f"weights.{w}" for w in ("age", "access", "validation", "count")),
        *(f"{t}.{leaf}" for t in TYPES for leaf in per_type),
        "count_saturation",
    }
    values = {"fresh": 0.0, "stale": 400.0, "aging_score": 0.0}
    for key in OVERRIDE_KEYS:
        if key.startswith("weights."):
            continue  # one weight alone cannot keep the sum at 1; set together below
        section, _, leaf = key.partition(".")
        value = 12 if key == "count_saturation" else values.get(leaf, 0.95)
        if leaf == "aging":  # between the type's own fresh and stale ages
            value = float(AGES[section][1])
        params = params_for("ns", {"ns": {key: value}})
        got = getattr(getattr(params, section), leaf) if leaf else getattr(params, section)
        assert got == value
    weights = {"weights": {"age": 0.7, "access": 0.1, "validation": 0.2, "count": 0}}
    assert params_for("ns", {"ns": weights}).weights == StalenessWeights(0.7, 0.1, 0.2, 0.0)


def test_an_override_changes_the_label() -> None:
    m = untouched("episodic", 100 * DAY)
    assert staleness(m, NOW).label == "stale"
    lenient = params_for("archive", {"archive": {"episodic": {"stale": 200}}})
    assert staleness(m, NOW, lenient).label == "aging"
    by_score = params_for("archive", {"archive": {"episodic": {"stale_score": 0.95}}})
    assert staleness(m, NOW, by_score).label == "aging"


@pytest.mark.parametrize(
    ("given", "message", "key"),
    [
        ({"episodic.stael": 0.9}, "unknown key 'episodic.stael'", "episodic.stael"),
        ({"thresholds": {"stale": 0.9}}, "unknown key 'thresholds.stale'", "thresholds.stale"),
        ({"weights": 0.5}, "unknown key 'weights'", "weights"),
        ({"episodic.stale": "90"}, "'episodic.stale' must be a number, got str", "episodic.stale"),
        ({"episodic.stale": True}, "'episodic.stale' must be a number, got bool", "episodic.stale"),
        ({"count_saturation": 5.0}, "'count_saturation' must be an integer", "count_saturation"),
        ({"episodic.stale": 0.6}, "'episodic.stale' = 0.6 reads as an old", "episodic.stale"),
        ({"semantic": {"aging": 0.35}}, "'semantic.aging' = 0.35 reads as an old",
         "semantic.aging"),
        ({"procedural": {"fresh": 7, "aging": 20, "stale": 14}}, "fresh <= aging <= stale",
         "procedural"),
    ],
)  # fmt: skip
def test_bad_override_keys_and_types_are_named(
    given: dict[str, object], message: str, key: str
) -> None:
    with pytest.raises(UsageError, match=message) as info:
        params_for("work", {"work": given})
    assert info.value.message.startswith("staleness.namespaces.work: ")
    assert info.value.details == {"namespace": "work", "key": key}


def test_an_old_style_threshold_gets_a_hint_saying_what_it_means_now() -> None:
    with pytest.raises(UsageError) as info:
        params_for("ops", {"ops": {"episodic": {"aging": 0.35, "stale": 0.6}}})
    assert info.value.hint is not None
    assert "episodic.aging_score = 0.35" in info.value.hint
    assert "fresh" in info.value.hint
    # With `fresh`, small numbers are days (a namespace whose episodes age within hours).
    quick = params_for("ops", {"ops": {"episodic": {"fresh": 0.25, "aging": 0.5, "stale": 1}}})
    assert quick.episodic.stale == 1.0


def test_unknown_key_hint_lists_the_known_keys() -> None:
    with pytest.raises(UsageError) as info:
        params_for("work", {"work": {"half_life.episodic": 3}})
    assert info.value.hint is not None
    assert "episodic.age_half_life_days" in info.value.hint


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"weights.age": 0.5}, "weights must sum to 1"),
        ({"semantic.fresh": 200}, "semantic: staleness ages need fresh <= aging <= stale"),
        ({"procedural.access_half_life_days": -1}, "must be a positive number of days"),
        ({"count_saturation": 0}, "count_saturation must be an integer >= 1"),
        ({"episodic.aging_score": 0.9}, "aging score threshold 0.9 is above the stale one"),
    ],
)
def test_overrides_the_parameters_refuse_name_the_table(
    given: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=message) as info:
        params_for("ci-infra", {"ci-infra": given})
    assert info.value.message.startswith("staleness.namespaces.ci-infra: ")


def test_a_namespace_entry_must_be_a_table() -> None:
    with pytest.raises(UsageError, match="must be a table"):
        params_for("work", {"work": 0.5})  # type: ignore[dict-item]


def test_one_configuration_for_every_namespace() -> None:
    config = StalenessConfig.from_tables(
        {"episodic": {"fresh": 10, "aging": 40, "stale": 40}},
        {"ci-infra": {"procedural": {"fresh": 7, "aging": 14, "stale": 30}}},
    )
    assert config.for_namespace(None) is config.base
    assert config.for_namespace("home") is config.base
    assert config.base.episodic.fresh == 10.0
    ci = config.for_namespace("ci-infra")
    assert ci.procedural.stale == 30.0 and ci.episodic.fresh == 10.0  # over the defaults
    assert StalenessConfig.from_tables({}, {}).base is DEFAULT_STALENESS
    with pytest.raises(UsageError, match=r"^staleness.defaults: unknown key 'episodic.old'"):
        StalenessConfig.from_tables({"episodic": {"old": 1}}, {})


# --- The freshness block of a result -------------------------------------------------------


def test_freshness_block() -> None:
    m = FreshnessInput(
        type="semantic",
        t_valid=NOW - 10.5 * DAY,
        t_invalid=None,
        created_at=NOW - 10.5 * DAY,
        last_accessed=NOW - 3600,
        last_validated=None,
        access_count=3,
    )
    block = freshness(m, NOW)
    assert block == {
        "age_days": 10.5,
        "last_accessed": "2027-01-15T07:00:00Z",
        "last_validated": None,
        "access_count": 3,
        "staleness": round(staleness(m, NOW).score, 4),
        "label": "fresh",
    }
    assert 0 < block["staleness"] < DEFAULT_STALENESS.thresholds("semantic")[0]


def test_freshness_of_a_future_event_has_age_zero() -> None:
    assert freshness(untouched("episodic", -DAY), NOW)["age_days"] == 0.0


# --- Properties ----------------------------------------------------------------------------

spans = st.floats(min_value=-10 * YEAR, max_value=50 * YEAR, allow_nan=False)
optional_spans = st.none() | spans


@st.composite
def memories(draw: st.DrawFn) -> FreshnessInput:
    return FreshnessInput(
        type=draw(st.sampled_from(TYPES)),
        t_valid=NOW - draw(spans),
        t_invalid=None,
        created_at=NOW - draw(spans),
        last_accessed=None if (a := draw(optional_spans)) is None else NOW - a,
        last_validated=None if (v := draw(optional_spans)) is None else NOW - v,
        access_count=draw(st.integers(min_value=0, max_value=10**6)),
    )


@given(m=memories())
def test_staleness_is_within_zero_and_one(m: FreshnessInput) -> None:
    result = staleness(m, NOW)
    assert 0.0 <= result.score <= 1.0
    assert all(0.0 <= c <= 1.0 for c in result.components.values())


@given(m=memories(), older_by=st.floats(min_value=0.0, max_value=20 * YEAR))
def test_staleness_never_falls_as_the_event_time_recedes(
    m: FreshnessInput, older_by: float
) -> None:
    older = replace(m, t_valid=m.t_valid - older_by)
    assert staleness(older, NOW).score >= staleness(m, NOW).score


@given(m=memories(), later_by=st.floats(min_value=0.0, max_value=20 * YEAR))
def test_staleness_never_falls_as_time_passes(m: FreshnessInput, later_by: float) -> None:
    assert staleness(m, NOW + later_by).score >= staleness(m, NOW).score


def test_an_age_under_a_day_is_kept_fine_enough_for_minutes() -> None:
    """7.7 minutes is 0.0053 days: at hundredths it was 0.01 (14.4 minutes) and showed as
    "14m"; 6.7 minutes rounded to 0 and showed as "now"."""
    from ferrex.server.answers import age

    for minutes, shown in ((7.7, "7m"), (6.7, "6m"), (90, "1h"), (0.5, "now")):
        memory = untouched("episodic", minutes * 60)
        assert age(freshness(memory, NOW)["age_days"]) == shown, minutes
    assert freshness(untouched("episodic", 3.456 * DAY), NOW)["age_days"] == 3.46
