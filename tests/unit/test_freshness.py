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


def crossing_age(half_life_days: float, threshold: float) -> float:
    """Where an untouched memory with equal half-lives reaches ``threshold``, from its formula.

    score(a) = 0.1 + 0.9 · (1 - 2^(-a/h)) with the default weights (count component 1).
    """
    return half_life_days * DAY * math.log2(0.9 / (1 - threshold))


@pytest.mark.parametrize(
    ("memory_type", "half_life"), [("episodic", 30.0), ("semantic", 180.0), ("procedural", 90.0)]
)
def test_labels_move_fresh_aging_stale_at_the_thresholds(
    memory_type: str, half_life: float
) -> None:
    to_aging = crossing_age(half_life, 0.35)
    to_stale = crossing_age(half_life, 0.60)
    second = 1.0
    assert staleness(untouched(memory_type, 0.0), NOW).label == "fresh"
    assert staleness(untouched(memory_type, to_aging - second), NOW).label == "fresh"
    assert staleness(untouched(memory_type, to_aging + second), NOW).label == "aging"
    assert staleness(untouched(memory_type, to_stale - second), NOW).label == "aging"
    assert staleness(untouched(memory_type, to_stale + second), NOW).label == "stale"
    assert staleness(untouched(memory_type, 10 * YEAR), NOW).label == "stale"


def test_the_documented_crossing_ages() -> None:
    days = {
        t: (round(crossing_age(h, 0.35) / DAY), round(crossing_age(h, 0.60) / DAY))
        for t, h in [("episodic", 30), ("procedural", 90), ("semantic", 180)]
    }
    assert days == {"episodic": (14, 35), "procedural": (42, 105), "semantic": (85, 211)}


def test_an_untouched_memory_scores_the_documented_curve() -> None:
    result = staleness(untouched("episodic", 30 * DAY), NOW)
    assert result.components == pytest.approx(
        {"age": 0.5, "access": 0.5, "validation": 0.5, "count": 1.0}
    )
    assert result.score == pytest.approx(0.1 + 0.9 * 0.5)
    assert staleness(untouched("episodic", 0.0), NOW).score == pytest.approx(0.1)


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
    assert result.score < 0.35


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


def test_a_memory_used_daily_but_never_validated_still_goes_stale() -> None:
    m = untouched("semantic", 20 * YEAR, last_accessed=NOW, access_count=1000)
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
        ({"aging": 0.7, "stale": 0.6}, "aging <= stale"),
        ({"stale": 1.5}, "aging <= stale <= 1"),
        ({"aging": -0.1}, "0 <= aging"),
        ({"age_half_life_days": 0.0}, "age_half_life_days must be a positive"),
        ({"validation_half_life_days": math.inf}, "validation_half_life_days"),
    ],
)
def test_type_parameters_are_checked(kwargs: dict[str, float], message: str) -> None:
    base = {"age_half_life_days": 1.0, "access_half_life_days": 1.0}
    with pytest.raises(UsageError, match=message):
        TypeStaleness(**{**base, "validation_half_life_days": 1.0, **kwargs})


@pytest.mark.parametrize("saturation", [0, True, 2.5])
def test_count_saturation_is_a_positive_integer(saturation: object) -> None:
    with pytest.raises(UsageError, match="count_saturation"):
        StalenessParams(count_saturation=saturation)  # type: ignore[arg-type]


# --- Per-namespace overrides ---------------------------------------------------------------


def test_a_namespace_without_overrides_gets_the_base() -> None:
    overrides = {"work": {"episodic.stale": 0.9}}
    assert params_for("home", overrides) is DEFAULT_STALENESS
    assert params_for("home", {}) is DEFAULT_STALENESS


def test_flat_and_nested_keys_mean_the_same() -> None:
    flat = params_for("work", {"work": {"episodic.stale": 0.9, "semantic.age_half_life_days": 7}})
    nested = params_for(
        "work", {"work": {"episodic": {"stale": 0.9}, "semantic": {"age_half_life_days": 7}}}
    )
    assert flat == nested
    assert flat.episodic == replace(DEFAULT_STALENESS.episodic, stale=0.9)
    assert flat.semantic.age_half_life_days == 7.0
    assert flat.weights == DEFAULT_STALENESS.weights
    assert flat.procedural == DEFAULT_STALENESS.procedural


def test_every_documented_key_is_accepted() -> None:
    clocks = ("age", "access", "validation")
    per_type = (*(f"{clock}_half_life_days" for clock in clocks), "aging", "stale")
    assert set(OVERRIDE_KEYS) == {
        *(f"weights.{w}" for w in ("age", "access", "validation", "count")),
        *(f"{t}.{leaf}" for t in TYPES for leaf in per_type),
        "count_saturation",
    }
    for key in OVERRIDE_KEYS:
        if key.startswith("weights."):
            continue  # one weight alone cannot keep the sum at 1; set together below
        # A value every non-weight field accepts (aging may equal stale).
        value = 12 if key == "count_saturation" else 0.6
        params = params_for("ns", {"ns": {key: value}})
        section, _, leaf = key.partition(".")
        got = getattr(getattr(params, section), leaf) if leaf else getattr(params, section)
        assert got == value
    weights = {"weights": {"age": 0.7, "access": 0.1, "validation": 0.2, "count": 0}}
    assert params_for("ns", {"ns": weights}).weights == StalenessWeights(0.7, 0.1, 0.2, 0.0)


def test_an_override_changes_the_label() -> None:
    m = untouched("episodic", 60 * DAY)
    assert staleness(m, NOW).label == "stale"
    lenient = params_for("archive", {"archive": {"episodic": {"stale": 0.95}}})
    assert staleness(m, NOW, lenient).label == "aging"


@pytest.mark.parametrize(
    ("given", "message", "key"),
    [
        ({"episodic.stael": 0.9}, "unknown key 'episodic.stael'", "episodic.stael"),
        ({"thresholds": {"stale": 0.9}}, "unknown key 'thresholds.stale'", "thresholds.stale"),
        ({"weights": 0.5}, "unknown key 'weights'", "weights"),
        ({"episodic.stale": "0.9"}, "'episodic.stale' must be a number, got str", "episodic.stale"),
        ({"episodic.stale": True}, "'episodic.stale' must be a number, got bool", "episodic.stale"),
        ({"count_saturation": 5.0}, "'count_saturation' must be an integer", "count_saturation"),
    ],
)
def test_bad_override_keys_and_types_are_named(
    given: dict[str, object], message: str, key: str
) -> None:
    with pytest.raises(UsageError, match=message) as info:
        params_for("work", {"work": given})
    assert "namespace 'work'" in info.value.message
    assert info.value.details == {"namespace": "work", "key": key}


def test_unknown_key_hint_lists_the_known_keys() -> None:
    with pytest.raises(UsageError) as info:
        params_for("work", {"work": {"half_life.episodic": 3}})
    assert info.value.hint is not None
    assert "episodic.age_half_life_days" in info.value.hint


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"weights.age": 0.5}, "weights must sum to 1"),
        ({"semantic.aging": 0.8}, "aging <= stale"),
        ({"procedural.access_half_life_days": -1}, "must be a positive number of days"),
        ({"count_saturation": 0}, "count_saturation must be an integer >= 1"),
    ],
)
def test_overrides_the_parameters_refuse_name_the_namespace(
    given: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=message) as info:
        params_for("work", {"work": given})
    assert info.value.message.startswith("staleness overrides for namespace 'work': ")


def test_a_namespace_entry_must_be_a_table() -> None:
    with pytest.raises(UsageError, match="must be a table"):
        params_for("work", {"work": 0.5})  # type: ignore[dict-item]


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
        "last_accessed": "2027-01-15T07:00:00+00:00",
        "last_validated": None,
        "access_count": 3,
        "staleness": round(staleness(m, NOW).score, 4),
        "label": "fresh",
    }
    assert 0 < block["staleness"] < 0.35


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
