"""Dates and periods in questions (ferrex.rules.dates): many phrasings, time zones, bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ferrex.rules.dates import Period, when

NOW = datetime(2024, 3, 13, 15, 0, tzinfo=UTC)  # a Wednesday


def span(question: str, now: datetime = NOW) -> tuple[str, str, str]:
    found = when(question, now)
    assert found is not None, question
    return found.phrase, found.start.date().isoformat(), found.end.date().isoformat()


@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("What was Sam doing on December 4, 2023?", "December 4, 2023", "2023-12-04", "2023-12-05"),
        ("what happened on dec. 4th 2023", "dec. 4th 2023", "2023-12-04", "2023-12-05"),
        ("Where was she on 4 December 2023?", "4 December 2023", "2023-12-04", "2023-12-05"),
        ("the 7th of May, 2022 party", "7th of May, 2022", "2022-05-07", "2022-05-08"),
        ("log of 2023-12-04", "2023-12-04", "2023-12-04", "2023-12-05"),
        ("What did we ship on March 3?", "March 3", "2024-03-03", "2024-03-04"),
        ("notes from June 9", "June 9", "2023-06-09", "2023-06-10"),  # the last June 9
        ("What did Caroline do in May 2023?", "in May 2023", "2023-05-01", "2023-06-01"),
        ("Who visited in May?", "in May", "2023-05-01", "2023-06-01"),
        ("plans for February", "February", "2024-02-01", "2024-03-01"),
        ("trip in July", "in July", "2023-07-01", "2023-08-01"),
        ("June party photos", "June", "2023-06-01", "2023-07-01"),
        ("the December trip", "December", "2023-12-01", "2024-01-01"),
        ("What did I do yesterday?", "yesterday", "2024-03-12", "2024-03-13"),
        ("what broke today", "today", "2024-03-13", "2024-03-14"),
        ("decisions from last week", "last week", "2024-03-04", "2024-03-11"),
        ("this week's incidents", "this week", "2024-03-11", "2024-03-18"),
        ("over the past week", "past week", "2024-03-07", "2024-03-14"),
        ("last weekend hike", "last weekend", "2024-03-09", "2024-03-11"),
        ("budget last month", "last month", "2024-02-01", "2024-03-01"),
        ("this month so far", "this month", "2024-03-01", "2024-04-01"),
        ("goals last year", "last year", "2023-01-01", "2024-01-01"),
        ("What happened 3 days ago?", "3 days ago", "2024-03-10", "2024-03-11"),
        ("a week ago at the gym", "a week ago", "2024-03-03", "2024-03-10"),
        ("moved in 2019", "in 2019", "2019-01-01", "2020-01-01"),
    ],
)
def test_phrasings(question: str, phrase: str, start: str, end: str) -> None:
    assert span(question) == (phrase, start, end)


def test_the_most_specific_phrase_wins_and_case_is_kept_in_the_phrase() -> None:
    assert span("In May, on May 7, 2023, what happened?")[0] == "May 7, 2023"


def test_relative_phrases_count_in_the_reference_times_own_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    late = datetime(2024, 3, 13, 16, 30, tzinfo=UTC)  # already the 14th in Tokyo
    found = when("yesterday", late.astimezone(tokyo))
    assert found is not None
    assert found.start == datetime(2024, 3, 13, tzinfo=tokyo)
    assert found.start.astimezone(UTC) == datetime(2024, 3, 12, 15, tzinfo=UTC)
    assert found.holds(datetime(2024, 3, 13, 12, tzinfo=UTC).timestamp())
    assert not found.holds(datetime(2024, 3, 13, 16, tzinfo=UTC).timestamp())
    assert span("yesterday", late)[1] == "2024-03-12"  # UTC's yesterday


def test_as_of_moves_relative_phrases() -> None:
    then = datetime(2023, 5, 25, 9, tzinfo=UTC)
    assert span("what happened last week?", then)[1:] == ("2023-05-15", "2023-05-22")
    assert span("in May", then)[1:] == ("2023-05-01", "2023-06-01")


@pytest.mark.parametrize(
    "question",
    [
        "How may I help?",  # "may" as a verb
        "What does Sam like?",
        "on February 30, 2023",  # no such day
        "2023-13-45",
        "room 1204 on floor 3",
        "",
        "I decided to march on",
    ],
)
def test_no_date_or_an_impossible_one_names_no_period(question: str) -> None:
    assert when(question, NOW) is None


def test_a_naive_reference_time_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        when("yesterday", datetime(2024, 3, 13))


def test_a_period_is_half_open() -> None:
    p = Period("x", datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC))
    assert p.holds(p.start.timestamp()) and not p.holds(p.end.timestamp())


# NOW is Wednesday 2024-03-13.
@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("what did we decide last Tuesday?", "last Tuesday", "2024-03-12", "2024-03-13"),
        ("notes from last Wednesday", "last Wednesday", "2024-03-06", "2024-03-07"),  # not today
        ("what did we decide on Monday", "on Monday", "2024-03-11", "2024-03-12"),
        ("the Friday morning standup", "Friday morning", "2024-03-08", "2024-03-09"),
        ("Sunday evening deploy", "Sunday evening", "2024-03-10", "2024-03-11"),
        ("plans for this Friday", "this Friday", "2024-03-15", "2024-03-16"),
        ("what broke the day before yesterday", "the day before yesterday",
         "2024-03-11", "2024-03-12"),
        ("two weeks ago", "two weeks ago", "2024-02-25", "2024-03-03"),
        ("a couple of days ago", "a couple of days ago", "2024-03-11", "2024-03-12"),
        ("two months ago", "two months ago", "2024-01-01", "2024-02-01"),
        ("a year ago", "a year ago", "2023-01-01", "2024-01-01"),
        ("what did we ship earlier this month?", "earlier this month", "2024-03-01", "2024-03-14"),
        ("earlier this week", "earlier this week", "2024-03-11", "2024-03-14"),
        ("what happened over the weekend", "over the weekend", "2024-03-09", "2024-03-11"),
        ("the outage last summer", "last summer", "2023-06-01", "2023-09-01"),
        ("trips in the summer", "in the summer", "2023-06-01", "2023-09-01"),
        ("in winter", "in winter", "2023-12-01", "2024-03-01"),
        ("during the fall", "during the fall", "2023-09-01", "2023-12-01"),
        ("the winter 2022 freeze", "winter 2022", "2022-12-01", "2023-03-01"),
        ("autumn of 2021", "autumn of 2021", "2021-09-01", "2021-12-01"),
        ("late February", "late February", "2024-02-21", "2024-03-01"),
        ("mid-March 2023", "mid-March 2023", "2023-03-11", "2023-03-21"),
        ("early May", "early May", "2023-05-01", "2023-05-11"),
        ("what happened in March 2026?", "in March 2026", "2026-03-01", "2026-04-01"),
    ],
)  # fmt: skip
def test_phrasings_people_use(question: str, phrase: str, start: str, end: str) -> None:
    assert span(question) == (phrase, start, end)


@pytest.mark.parametrize(
    "question",
    [
        "spring boot config",
        "the servers fall over under load",
        "Mondays are busy",
        "summer",
        # Any such day, or today as the asker says it is: no day past to search.
        "can I deploy on a Friday?",
        "every Monday we rotate the keys",
        "it's Friday afternoon, can I ship it?",
        "It is Tuesday, what is left to do?",
    ],
)
def test_words_that_only_look_like_dates_name_no_period(question: str) -> None:
    assert when(question, NOW) is None


def test_weekdays_count_back_from_the_reference_day_in_its_zone() -> None:
    sunday = datetime(2024, 3, 17, 9, tzinfo=UTC)
    assert span("last Monday", sunday)[1:] == ("2024-03-11", "2024-03-12")
    assert span("on Sunday", sunday)[1:] == ("2024-03-10", "2024-03-11")  # a week ago
    assert span("over the weekend", sunday)[1:] == ("2024-03-16", "2024-03-18")  # this one
    # 23:30 on Monday in New York is already Tuesday in UTC: "yesterday" follows the zone
    new_york = timezone(timedelta(hours=-4))
    late = datetime(2024, 3, 19, 3, 30, tzinfo=UTC).astimezone(new_york)
    assert span("yesterday", late)[1] == "2024-03-17"
    assert span("last Tuesday", late)[1] == "2024-03-12"


def test_this_and_last_season_in_january() -> None:
    january = datetime(2024, 1, 10, tzinfo=UTC)
    assert span("this winter", january)[1:] == ("2023-12-01", "2024-03-01")
    assert span("last winter", january)[1:] == ("2022-12-01", "2023-03-01")
    assert span("this summer", january)[1:] == ("2024-06-01", "2024-09-01")


# NOW is Wednesday 2024-03-13.
@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("what broke between March 4 and March 6, 2024?", "between March 4 and March 6, 2024",
         "2024-03-04", "2024-03-07"),
        ("escalations on February 17\u201318, 2024", "February 17\u201318, 2024",
         "2024-02-17", "2024-02-19"),
        ("retros held on March 1-2", "March 1-2", "2024-03-01", "2024-03-03"),
        ("load tests from Feb 28 to March 2", "from Feb 28 to March 2", "2024-02-28", "2024-03-03"),
        ("between October 5 and 7", "between October 5 and 7", "2023-10-05", "2023-10-08"),
        ("the freeze from Dec 28 to Jan 3", "from Dec 28 to Jan 3", "2023-12-28", "2024-01-04"),
        ("November 28 - December 2, 2023", "November 28 - December 2, 2023",
         "2023-11-28", "2023-12-03"),
        ("between 2024-03-01 and 2024-03-03", "between 2024-03-01 and 2024-03-03",
         "2024-03-01", "2024-03-04"),
    ],
)  # fmt: skip
def test_a_range_of_days_is_one_period_from_the_first_to_the_last(
    question: str, phrase: str, start: str, end: str
) -> None:
    assert span(question) == (phrase, start, end)


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("between May 5 and May 1", "May 5"),  # backwards: not a range, the first day
        ("version 2.1 to 3", None),
        ("pages 12-14", None),
    ],
)
def test_what_is_not_a_range_of_days(question: str, phrase: str | None) -> None:
    found = when(question, NOW)
    assert (None if found is None else found.phrase) == phrase
    assert when("between February 30 and March 2", NOW) is None  # an impossible day


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("Which incidents occurred on Black Friday, November 27, 2023?",
         "Black Friday, November 27, 2023"),
        ("what broke on November 24 (Black Friday)?", "November 24 (Black Friday)"),
        ("Cyber Monday, Nov 27: what broke?", "Cyber Monday, Nov 27"),
        # no comma or brackets: the capitalised words are the question's own
        ("what did Priya ship on November 27?", "November 27"),
        ("what did we do, on the 4th of December?", "4th of December"),
    ],
)  # fmt: skip
def test_a_name_set_off_beside_a_date_is_the_dates(question: str, phrase: str) -> None:
    found = when(question, NOW)
    assert found is not None and found.phrase == phrase


@pytest.mark.parametrize(
    ("question", "phrase", "start"),
    [
        ("what changed in the last two weeks?", "the last two weeks", "2024-02-29"),
        ("incidents over the past 3 days", "the past 3 days", "2024-03-11"),
        ("anything new in the last few days?", "the last few days", "2024-03-11"),
        ("deploys in the previous couple of weeks", "the previous couple of weeks", "2024-02-29"),
        ("what did we decide in the past 2 months", "the past 2 months", "2024-01-14"),
    ],
)
def test_the_last_n_units_is_the_span_that_ends_with_today(
    question: str, phrase: str, start: str
) -> None:
    assert span(question) == (phrase, start, "2024-03-14")


def test_the_last_n_hours_begins_that_many_hours_before_now() -> None:
    found = when("what broke in the last 48 hours?", NOW)
    assert found is not None and found.phrase == "the last 48 hours"
    assert found.start == NOW - timedelta(hours=48)
    assert found.end == datetime(2024, 3, 14, tzinfo=UTC)
    # A count of things is no span, and "a few days ago" is no day we can name.
    assert when("the last two releases", NOW) is None
    assert when("what did we fix a few days ago?", NOW) is None
    # The last weeks of a month named are in that month, not the last weeks up to today.
    assert span("Where was Dave in the last two weeks of August 2023?") == (
        "of August 2023", "2023-08-01", "2023-09-01")  # fmt: skip


@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("what changed since Monday?", "since Monday", "2024-03-11", "2024-03-14"),
        ("what did we ship since March 1?", "since March 1", "2024-03-01", "2024-03-14"),
        ("anything new since last week?", "since last week", "2024-03-04", "2024-03-14"),
        ("every incident since 2023", "since 2023", "2023-01-01", "2024-03-14"),
        ("what changed after March 8?", "after March 8", "2024-03-09", "2024-03-14"),
        ("what did we decide before March 1", "before March 1", "1970-01-01", "2024-03-01"),
        ("what did we ship this quarter?", "this quarter", "2024-01-01", "2024-04-01"),
        ("goals of last quarter", "last quarter", "2023-10-01", "2024-01-01"),
        ("what did we decide in Q3?", "Q3", "2023-07-01", "2023-10-01"),  # the last Q3 begun
        ("the Q1 2022 roadmap", "Q1 2022", "2022-01-01", "2022-04-01"),
    ],
)
def test_since_after_before_and_quarters(question: str, phrase: str, start: str, end: str) -> None:
    assert span(question) == (phrase, start, end)
    # "the day before yesterday" is a day of its own, and "since the outage on March 8" is
    # that day: "since" opens only the date it stands before.
    assert span("the day before yesterday")[1:] == ("2024-03-11", "2024-03-12")
    assert span("since the outage on March 8")[1:] == ("2024-03-08", "2024-03-09")
    # A day counted from a date is no side of it: the date is still what is named.
    assert span("the Sunday before March 10")[1:] == ("2024-03-10", "2024-03-11")
    assert span("two weeks after March 1")[1:] == ("2024-03-01", "2024-03-02")


def test_a_period_of_one_whole_month_has_that_months_name() -> None:
    """A note of early December on "the November bill" answers "last month" asked then: the
    period's month name is what its text may say."""
    now = datetime(2026, 12, 7, 23, 0, tzinfo=UTC)
    month = when("why was the AWS bill so high last month?", now)
    assert month is not None and month.month_name() == "november"
    october = when("what happened in October?", now)
    assert october is not None and october.month_name() == "october"
    for question in ("what broke last week?", "what happened yesterday?", "anything in Q3?"):
        period = when(question, now)
        assert period is not None and period.month_name() is None, question
