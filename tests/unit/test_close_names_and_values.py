"""Issue 43, the evidence a sure change combines: close names of one subject, one-value
attributes, schedules, values restated in another form (pure rules, no store)."""

from __future__ import annotations

import pytest

from ferrex.rules.entities import normalize_entity
from ferrex.rules.restatements import restated
from ferrex.rules.schedules import schedule_value
from ferrex.rules.short_forms import spelled_out
from ferrex.rules.slot_outcomes import (
    places_itself,
    slot_match,
    timing_predicate,
    two_attributes,
)
from ferrex.rules.slots import single_slot
from ferrex.rules.subjects import close_names
from ferrex.rules.subjects_apart import first_name_of, in_digits
from tests.outcomes import outcome


def words(name: str) -> list[str]:
    return in_digits(spelled_out(normalize_entity(name)))


@pytest.mark.parametrize(
    ("left", "right", "close"),
    [
        ("VPN", "the corporate VPN", True),  # a modifier in front, the head kept
        ("churn model", "churn prediction model", True),
        ("access review", "access reviews", True),  # a plural
        ("bastion", "bastion host", True),  # what the thing is as deployed
        ("PHI", "PHI backups", False),  # a head of its own (and another instance)
        ("Terraform", "Terraform AWS provider", False),
        ("chat", "chat messages", False),
        ("orders db", "legacy orders database", False),  # a contrast word
        ("database", "orders database", False),  # only a kind word shared
        ("billing", "billing service", False),  # a part, unless told as news
        ("api v1", "public api v1", False),
    ],
)
def test_close_names_keep_the_head_and_add_no_head_of_their_own(
    left: str, right: str, close: bool
) -> None:
    assert close_both_ways(left, right) is close


def close_both_ways(left: str, right: str) -> bool:
    """``close_names`` of the two, either way round (the same answer), with the words either
    writes with a capital letter as ``named``."""
    named = frozenset(w.casefold() for n in (left, right) for w in n.split() if w != w.casefold())
    close = close_names(words(left), words(right), named=named)
    assert close_names(words(right), words(left), named=named) is close
    return close


@pytest.mark.parametrize(
    ("left", "right", "close"),
    [
        ("Vault", "HashiCorp Vault", True),  # a name of one word, written as a name
        ("cache", "session cache", False),  # a common noun: the word in front names a kind
        ("worker", "image worker", False),
        ("vpn", "the corporate vpn", False),  # not written as a name
    ],
)
def test_a_word_in_front_of_one_word_is_close_only_for_a_name(
    left: str, right: str, close: bool
) -> None:
    assert close_both_ways(left, right) is close


def test_a_part_is_close_only_for_news() -> None:
    assert close_names(words("Kafka"), words("kafka cluster"), parts=True)
    assert not close_names(words("Kafka"), words("kafka cluster"))


def test_a_first_name_is_a_full_name_only_as_written_by_a_person() -> None:
    assert first_name_of("Maria", ["maria", "lopez"])
    assert first_name_of("Maria Lopez", ["maria"])
    assert not first_name_of("maria", ["maria", "lopez"]), "not written as a name"
    assert not first_name_of("Maria", ["mario", "lopez"])
    assert not first_name_of("Maria", ["maria", "lopez", "de", "la", "cruz"])


@pytest.mark.parametrize(
    ("predicate", "single"),
    [("status", True), ("review_status", True), ("request_timeout", True), ("license", True),
     ("region", False), ("statuses", False), ("depends_on", False), ("supported_regions", False)],
)  # fmt: skip
def test_a_one_value_attribute_is_read_from_its_last_noun(predicate: str, single: bool) -> None:
    assert single_slot(predicate) is single


@pytest.mark.parametrize(
    ("text", "schedule"),
    [("quarterly", True), ("every 15 minutes", True), ("0 5 * * *", True),
     ("Mondays 08:00", True), ("at 01:00 UTC", True), ("2027-01-05", False),
     ("Redis", False), ("s3://bucket", False)],
)  # fmt: skip
def test_a_schedule_is_read_from_its_shape(text: str, schedule: bool) -> None:
    assert schedule_value(text) is schedule


def test_sure_slots_by_head_word_change_verb_and_schedule() -> None:
    counts = slot_match("concurrency", "40", "max_concurrent_jobs", "20", 0.1)
    assert counts is not None and counts.outcome == "same"
    upgraded = slot_match("upgraded_to", "1.29", "kubernetes_version", "1.27", 0.1)
    assert upgraded is not None and upgraded.outcome == "same"
    moved = slot_match("moved_to", "Render", "runs_on", "Heroku", 0.1)
    assert moved is not None and moved.outcome == "same"
    resized = slot_match("resized_to", "LARGE", "size", "MEDIUM", 0.5)
    assert resized is not None and resized.outcome == "same"
    status = slot_match("migrated_to", "EKS", "status", "beta", 0.1)
    assert status is None or status.outcome == "possible", "a change must read as the slot"
    cadence = slot_match("cadence", "monthly", "happens", "quarterly", 0.1)
    assert cadence is not None and cadence.outcome == "same"
    # How often and at what time are two facts of one job.
    when = slot_match("schedule", "at 02:00 UTC", "cadence", "daily", 0.1)
    assert when is None or when.outcome == "possible"
    # Siblings never, a bare value never sure, two schedules of no one-value slot flagged.
    # A word in front of the same noun names another thing's value: not sure.
    python = slot_match("python_version", "3.11.4", "version", "2.3.1", 0.1)
    assert python is None or python.outcome == "possible"
    bare = slot_match("is_a", "5", "max", "4", 0.1)
    assert bare is None or bare.outcome == "possible"
    sent = slot_match("is_sent", "daily", "goes_out", "weekly", 0.1)
    assert sent is not None and sent.outcome == "possible"


@pytest.mark.parametrize(
    ("new", "old", "same"),
    [("30d", "30 days", True), ("15 min", "15 minutes", True), ("5 min", "300 seconds", True),
     ("https://bi.example.io/", "bi.example.io", True), ("IT Operations", "IT Ops", True),
     ("hourly", "1 hour", True), ("every day", "daily", True), ("512Mi", "0.5Gi", True),
     ("1 GB", "1024 MB", True), ("4k tokens", "4096", True), ("2000 MB", "2 GB", True),
     ("30s", "60s", False), ("12 months", "1 year", False), ("8", "8", False),
     ("64 GB", "64", False), ("4k", "4100", False), ("1Gi", "1000Mi", False),
     ("weekly", "daily", False), ("Thu 6-8am UTC", "Thursday 06:00-08:00 UTC", True),
     ("0 7 * * 2", "Tuesdays 07:00", True), ("UE5.4", "5.4", True), ("python3.11", "3.11", True),
     ("go1.22", "Go 1.23", False), ("Mondays 08:00 UTC", "0 7 * * 2", False),
     ("Sun 3am CET", "Sunday 03:00 UTC", False), ("Mon 10:00", "Tue 10am", False),
     ("https://a.example.io", "b.example.io", False),
     ("IT Ops", "HR Ops", False)],
)  # fmt: skip
def test_a_value_in_another_form_is_restated(new: str, old: str, same: bool) -> None:
    assert restated(new, old) is same


def test_a_schedule_of_an_event_of_its_own_is_not_the_subjects_cadence() -> None:
    assert timing_predicate("cadence") and timing_predicate("runs_at")
    assert timing_predicate("happens") and not timing_predicate("code_freeze")
    assert not timing_predicate("deploys")  # an activity of its own, not the subject's cadence
    same = slot_match("happens", "weekly", "cadence", "every two weeks", 0.5)
    assert same is not None and same.outcome == "same"
    other = slot_match("code_freeze", "every Thursday", "cadence", "weekly", 0.5)
    assert other is None or other.outcome != "same"


def test_only_a_verb_that_places_the_thing_itself_is_sure_of_where_it_runs() -> None:
    assert places_itself("runs_on") and places_itself("deployed_on")
    assert not places_itself("caches_on") and not places_itself("logs_to")
    moved = slot_match("deployed_on", "the k3s cluster", "runs_on", "a Pi", 0.2, news=True)
    assert moved is not None and moved.outcome == "same"
    cache = slot_match("caches_on", "S3", "runs_on", "GitHub Actions", 0.2, news=True)
    assert cache is not None and cache.outcome == "possible"


def test_two_attribute_nouns_read_alike_are_possible_not_sure() -> None:
    assert two_attributes("timeout", "duration") and two_attributes("retention", "batch_size")
    assert not two_attributes("deployed", "version") and not two_attributes("runs_on", "host")
    found = slot_match("timeout", "60 min", "duration", "40 min", 0.8)
    assert found is not None and found.outcome == "possible"


def test_a_unit_of_people_within_another_is_no_close_name() -> None:
    from ferrex.rules.subjects import close_names

    assert not close_names(["data", "team"], ["data", "platform", "team"])
    assert not close_names(["growth", "squad"], ["growth", "checkout", "squad"], parts=True)
    assert close_names(["churn", "model"], ["churn", "prediction", "model"])


def test_a_change_naming_its_own_attribute_is_another_attribute() -> None:
    assert two_attributes("raised_cache_size_to", "memory_limit")
    assert not two_attributes("minor_upgraded_to", "version"), "no attribute named"
    assert not two_attributes("upgraded_to", "version")
    assert outcome("raised_cache_size_to", "512Mi", "memory_limit", "2Gi", 0.8) == "possible"


def test_a_count_of_another_thing_and_two_acts_placed_are_not_sure() -> None:
    from ferrex.rules.value_changes import count_named_apart

    assert count_named_apart("increased_to", "8 workers", "batch_size", "500")
    assert not count_named_apart("increased_to", "8 workers", "workers", "4")
    assert not count_named_apart("max_nodes", "50 nodes", "max_size", "50")
    assert outcome("increased_to", "8 workers", "batch_size", "500", 0.8) == "possible"
    assert outcome("processed_in", "eu-central-1", "stored_in", "eu-west-1", 0.8) == "possible"
    assert outcome("is_hosted_at", "db-2", "runs_on", "db-1", 0.8) == "same"
