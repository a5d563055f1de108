"""Duplicates and conflicts: similarity proposes, identifiers decide."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.rules.dedup import classify_object_change, identifiers, is_duplicate


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("retry 3 times, then wait 2.5 seconds", {"3", "2.5"}),
        ("upgraded tokio to v1.38.2", {"1.38.2"}),
        ("tokio 1.36 and V1.38", {"1.36", "1.38"}),
        ("Fixed in PR #260.", {"260"}),
        ("Incident INC-90312 reopened", {"inc-90312"}),
        ("error E1234 on boot", {"e1234"}),
        ("commit a1b2c3d broke it", {"a1b2c3d"}),
        ("see src/app/main.py and /etc/hosts", {"src/app/main.py", "/etc/hosts"}),
        ("edit config.toml, not .env", {"config.toml", ".env"}),
        ("mail ops@example.com in #general", {"ops@example.com", "#general"}),
        ("set MAX_RETRIES and use std::vec", {"max_retries", "std::vec"}),
        ("deploy on 2024-05-01 at 10:30", {"2024-05-01", "10:30"}),
        ("https://github.com/org/repo", {"https://github.com/org/repo"}),
        # Prose, not identifiers: hyphenated words, abbreviations, trailing punctuation.
        ("a well-known, long-running job, e.g. the nightly one...", set()),
        ("The API uses Tokio.", set()),
    ],
)
def test_identifiers(text: str, expected: set[str]) -> None:
    assert identifiers(text) == expected


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Login bug fixed in PR #260", "Login bug fixed in PR #480"),
        ("The API runs tokio v1.36", "The API runs tokio v1.38"),
        ("Outage tracked as INC-90312", "Outage tracked as INC-90313"),
        ("Set the timeout to 30 seconds", "Set the timeout to 60 seconds"),
        ("The bug is in src/auth/login.py", "The bug is in src/auth/logout.py"),
    ],
)
def test_different_identifiers_are_never_duplicates(new: str, old: str) -> None:
    assert not is_duplicate(0.999, new, old)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Login bug fixed in PR #260", "PR 260 fixed the login bug"),
        ("The API runs tokio v1.36", "tokio 1.36 is what the API runs"),
        ("INC-90312: the outage", "The outage was inc-90312"),
        ("The service restarted at night", "Overnight, the service restarted"),
    ],
)
def test_a_rewording_with_the_same_identifiers_is_a_duplicate(new: str, old: str) -> None:
    assert is_duplicate(0.96, new, old)


def test_the_duplicate_threshold_is_inclusive() -> None:
    new, old = "tokio 1.36 in the API", "the API uses tokio 1.36"
    assert is_duplicate(0.95, new, old)
    assert not is_duplicate(0.9499999, new, old)
    assert is_duplicate(0.9, new, old, threshold=0.9)
    assert not is_duplicate(0.8999999, new, old, threshold=0.9)


def test_a_nan_similarity_is_a_bug_not_a_decision() -> None:
    with pytest.raises(ValueError, match="finite"):
        is_duplicate(float("nan"), "a", "a")
    with pytest.raises(ValueError, match="finite"):
        classify_object_change("a", "b", float("inf"))


# --- classify_object_change ------------------------------------------------------------------


def test_a_new_version_supersedes_however_similar() -> None:
    assert classify_object_change("tokio 1.38", "tokio 1.36", 0.99) == "supersede"


def test_equal_objects_up_to_case_and_spacing_are_duplicates_at_any_similarity() -> None:
    assert classify_object_change("  Tokio   1.36 ", "tokio 1.36", 0.0) == "duplicate"
    assert classify_object_change("Postgres", "postgres", 0.1) == "duplicate"


@pytest.mark.parametrize(
    ("similarity", "expected"),
    [
        (1.0, "duplicate"),
        (0.95, "duplicate"),
        (0.9499999, "ambiguous"),
        (0.85, "ambiguous"),
        (0.80, "ambiguous"),
        (0.7999999, "supersede"),
        (0.0, "supersede"),
        (-0.3, "supersede"),
    ],
)
def test_similarity_bands(similarity: float, expected: str) -> None:
    assert classify_object_change("Alice's team", "the platform team", similarity) == expected


def test_custom_bands() -> None:
    assert classify_object_change("a", "b", 0.9, duplicate=0.9, different=0.5) == "duplicate"
    assert classify_object_change("a", "b", 0.5, duplicate=0.9, different=0.5) == "ambiguous"
    assert classify_object_change("a", "b", 0.49, duplicate=0.9, different=0.5) == "supersede"


def test_bands_must_not_cross() -> None:
    with pytest.raises(ValueError, match="must not exceed"):
        classify_object_change("a", "b", 0.9, duplicate=0.8, different=0.9)


# --- properties -------------------------------------------------------------------------------


@given(st.text(max_size=60), st.floats(min_value=-1.0, max_value=1.0))
def test_a_text_is_a_duplicate_of_itself(text: str, similarity: float) -> None:
    assert classify_object_change(text, text, similarity) == "duplicate"
    assert is_duplicate(1.0, text, text)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_identifiers_ignore_ascii_case(text: str) -> None:
    assert identifiers(text.upper()) == identifiers(text) == identifiers(text.lower())


@given(st.text(max_size=60))
def test_identifiers_are_lowercase_tokens(text: str) -> None:
    for token in identifiers(text):
        assert token == token.lower()
        assert token.strip() == token
        assert token
