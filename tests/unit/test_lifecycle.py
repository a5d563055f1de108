"""The lifecycle rules: importance's factor, time-to-live parsing, pinned staleness."""

from __future__ import annotations

import pytest

from ferrex.errors import UsageError
from ferrex.rules.eviction import EvictionCandidate, eviction_reason
from ferrex.rules.freshness import DAY, FreshnessInput, staleness
from ferrex.rules.lifecycle import (
    DEFAULT_IMPORTANCE,
    expired,
    importance_factor,
    marks_doc,
    parse_ttl,
)

NOW = 1_800_000_000.0


def test_the_default_importance_leaves_a_score_exactly_as_it_was() -> None:
    assert importance_factor(DEFAULT_IMPORTANCE) == 1.0
    assert importance_factor(0.5, weight=3.0) == 1.0
    assert importance_factor(1.0) == 1.25 and importance_factor(0.0) == 0.75
    levels = [0.0, 0.1, 0.5, 0.9, 1.0]
    factors = [importance_factor(x) for x in levels]
    assert factors == sorted(factors) and len(set(factors)) == len(levels)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(3600, 3600), ("3600", 3600), ("90s", 90), ("15m", 900), ("2h", 7200), (" 7d ", 604800),
     (None, None)],
)  # fmt: skip
def test_a_ttl_is_seconds_or_a_duration(value: object, seconds: int | None) -> None:
    assert parse_ttl(value) == seconds


@pytest.mark.parametrize("value", ["5x", "h", "2 h", "-5s", "1.5h", True, 1.5, -1, 0, "366d", []])
def test_a_bad_ttl_is_a_usage_error(value: object) -> None:
    with pytest.raises(UsageError) as caught:
        parse_ttl(value)
    assert caught.value.code == "invalid_input" and "ttl" in caught.value.message


def test_expiry_is_inclusive_and_none_never_expires() -> None:
    assert expired(NOW, NOW) and expired(NOW - 1, NOW) and not expired(NOW + 1, NOW)
    assert not expired(None, NOW)


def test_answers_show_marks_only_when_not_at_their_default() -> None:
    assert marks_doc(0.5, False, None) == {}
    assert marks_doc(0.9, True, None) == {"pinned": True, "importance": 0.9}
    assert marks_doc(0.5, False, NOW) == {"expires_at": "2027-01-15T08:00:00Z"}


def _old(pinned: bool, t_invalid: float | None = None) -> FreshnessInput:
    long_ago = NOW - 3000 * DAY
    return FreshnessInput("episodic", long_ago, t_invalid, long_ago, None, None, 0, pinned)


def test_a_pinned_memory_is_never_stale_but_still_superseded() -> None:
    assert staleness(_old(False), NOW).label == "stale"
    held = staleness(_old(True), NOW)
    assert held.label == "fresh" and held.score == staleness(_old(False), NOW).score
    assert staleness(_old(True, t_invalid=NOW - DAY), NOW).label == "superseded"


def test_a_pinned_memory_has_no_eviction_reason_even_when_superseded_long_ago() -> None:
    c = EvictionCandidate("m", "episodic", 100, NOW - 400 * DAY, 0.9, "superseded", 0, None, False)
    assert eviction_reason(c, NOW) == "superseded_past_retention"
    pinned = EvictionCandidate(
        "m", "episodic", 100, NOW - 400 * DAY, 0.9, "superseded", 0, None, False, pinned=True
    )
    assert eviction_reason(pinned, NOW) is None
