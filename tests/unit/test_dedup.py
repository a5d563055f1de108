"""Duplicates and conflicts: similarity proposes, identifiers and meaning decide."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.rules.dedup import (
    classify_object_change,
    identifiers,
    is_duplicate,
    meaning_difference,
)


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


def test_the_same_words_up_to_case_spacing_and_punctuation_need_no_threshold() -> None:
    old = "The nightly backup job writes to the s3 bucket ferrex-backups."
    assert is_duplicate(0.9, "the nightly backup job  writes to the S3 bucket ferrex-backups", old)
    assert not is_duplicate(0.9, "The nightly backup job writes to the s3 bucket", old)
    # The same words, but a version's dots are part of it: not the same text, not a duplicate.
    assert not is_duplicate(0.9, "tokio v1.36 in the API", "tokio v136 in the API")


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


# --- meaning_difference -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("new", "old", "why"),
    [
        # The order of named things around a relation.
        ("metrics-gateway calls feature-engine synchronously",
         "feature-engine calls metrics-gateway synchronously", "order"),
        ("The auth service depends on Redis", "Redis depends on the auth service", "order"),
        ("Alice reports to Bob.", "Bob reports to Alice.", "order"),
        ("metrics-gateway is called by feature-engine", "metrics-gateway calls feature-engine",
         "order"),
        # Negation in one and not the other.
        ("Caching is enabled", "Caching is not enabled", "negation"),
        ("Bob prefers dark mode", "Bob doesn't prefer dark mode", "negation"),
        ("Users can delete comments", "Users cannot delete comments", "negation"),
        ("Emails go out with tracking pixels", "Emails go out without tracking pixels",
         "negation"),
        ("The worker is blocking", "The worker is non-blocking", "negation"),
        # Numbers, versions, dates, durations, identifiers.
        ("Retry three times", "Retry five times", "identifiers"),
        ("The cluster runs Kubernetes 1.29", "The cluster runs Kubernetes 1.30", "identifiers"),
        ("Deploys happen on Tuesdays", "Deploys happen on Thursdays", "dates"),
        ("Dave approved it yesterday", "Dave approved it today", "dates"),
        ("Times out after 30 seconds", "Times out after 30 minutes", "quantities"),
        ("Rebuilt nightly at 2 am", "Rebuilt nightly at 2 pm", "quantities"),
        ("Uploads are limited to 25 MB", "Uploads are limited to 25 GB", "quantities"),
        ("Times out after 30s", "Times out after 30 minutes", "quantities"),
        ("Incident INC-4512 was a TLS expiry", "Incident INC-4513 was a TLS expiry",
         "identifiers"),
        # Opposite words and other names.
        ("It calls the engine synchronously", "It calls the engine asynchronously", "opposite"),
        ("The migration runs before the deploy", "The migration runs after the deploy",
         "opposite"),
        ("Alice owns the payments API", "Bob owns the payments API", "names"),
        ("Carol is on call with Dave", "Carol is on call with Erin", "names"),
        ("Deploy the hotfix to staging first", "Deploy the hotfix to production first",
         "names"),
        ("The bucket is ferrex-backups", "The bucket is ferrex-archive", "names"),
        # Periods, seasons, ordinals, bounds and people's relations.
        ("The queue is drained every hour", "The queue is drained every minute", "dates"),
        ("The job runs hourly", "The job runs daily", "dates"),
        ("I visited Paris last summer", "I visited Paris last winter", "dates"),
        ("Starts on the third of the month", "Starts on the fifteenth of the month",
         "identifiers"),
        ("Retries at most twice", "Retries at least twice", "opposite"),
        ("My daughter is allergic to peanuts", "My son is allergic to peanuts", "opposite"),
        ("He approved the plan", "She approved the plan", "opposite"),
        # A passive that keeps the active's order says the opposite.
        ("Jenkins calls the release script", "Jenkins is called by the release script",
         "order"),
    ],
)  # fmt: skip
def test_a_difference_of_meaning_is_found_and_named(new: str, old: str, why: str) -> None:
    for a, b in ((new, old), (old, new)):
        found = meaning_difference(a, b)
        assert found is not None and why in found, (a, b, found)
        assert not is_duplicate(0.999, a, b)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("The deploy failed on Tuesday", "On Tuesday the deploy failed"),
        ("the deploy failed", "THE DEPLOY FAILED"),
        ("Alice said the deploy failed", "The deploy failed, Alice said"),
        ("metrics-gateway calls feature-engine synchronously",
         "feature-engine is called by metrics-gateway synchronously"),
        ("The PR was merged by Alice", "Alice merged the PR"),
        ("Login bug fixed in PR #260", "PR 260 fixed the login bug"),
        ("Retry three times", "Retry 3 times"),
        ("Times out after 30 seconds", "Times out after 30s"),
        ("Uploads are limited to 25 MB", "Uploads are limited to 25MB"),
        # A plural of a number (HTTP statuses) is no unit: the number is the same.
        ("The gateway returned 502s for forty minutes",
         "The gateway returned 502 errors for 40 minutes"),
        ("The cache isn't enabled", "The cache is not enabled"),
        ("Caching is enabled for the catalogue", "Caching's enabled for the catalogue"),
        ("Ana: Thanks!", "Ana: thanks"),
        ("The API key is rotated every month", "The API key is rotated monthly"),
        ("The service restarted at night", "Overnight, the service restarted"),
        ("Jenkins builds the Android app", "The Android app is built by Jenkins"),
        ("Nginx proxies requests to the app", "Requests are proxied to the app by Nginx"),
        ("Second, run the migration", "Then run the migration"),
        ("Use the third replica", "Use the 3rd replica"),
        ("  The   staging cluster\nruns Kubernetes 1.29. ",
         "The staging cluster runs Kubernetes 1.29"),
    ],
)  # fmt: skip
def test_rewordings_spacing_punctuation_and_case_make_no_difference(new: str, old: str) -> None:
    assert meaning_difference(new, old) is None
    assert meaning_difference(old, new) is None
    assert is_duplicate(0.96, new, old)


@given(st.text(max_size=80))
def test_a_text_means_what_it_means(text: str) -> None:
    assert meaning_difference(text, text) is None
    assert meaning_difference(text.upper(), text.upper()) is None
