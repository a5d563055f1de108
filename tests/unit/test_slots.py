"""Slot matching: object kinds, sibling predicates, the three outcomes, plural relations."""

from __future__ import annotations

import pytest

from ferrex.rules.dedup import measure_unit
from ferrex.rules.kinds import kinds_clash, object_kind, shapes_agree
from ferrex.rules.restatements import restated
from ferrex.rules.short_forms import initials_formed
from ferrex.rules.slot_outcomes import slot_match
from ferrex.rules.slots import (
    POSSIBLE_PHRASE,
    SURE_PARTY_PHRASE,
    SURE_PHRASE,
    VALUE_FLOOR,
    counted_alike,
    may_share_slot,
    placed_alike,
    plural_fact,
    plural_relation,
    range_relation,
    reciprocal_relation,
    same_head,
    scoped_apart,
    sibling_predicates,
    slot_candidate,
    slot_words,
    value_fallback,
    versions_of_one,
)
from ferrex.rules.subjects_apart import relations_apart
from ferrex.rules.value_changes import (
    counted,
    counts_of_two,
    names_apart,
    note_names,
    note_tells_change,
    one_of_many_held,
    replaces_value,
    suffixed_versions,
    told_as_news,
)
from tests.outcomes import outcome


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("k8s-node-07", "host"),
        ("bff-1.fitpulse.net", "host"),
        ("10.0.3.7:5432", "host"),
        ("10.0.3.7", "host"),
        ("GPL-3.0", "version"),
        ("16.1", "version"),
        ("v2", "version"),
        ("Postgres 16.1", "version"),
        ("30s", "duration"),
        ("every 15 minutes", "duration"),
        ("512Mi", "size"),
        ("2 MB", "size"),
        ("25 requests/second per seller", "rate"),
        ("$5,000", "money"),
        ("12%", "percent"),
        ("https://status.example.com", "url"),
        ("@priya.n", "party"),
        ("help@fitpulse.app", "party"),
        ("Ann Weller", "party"),
        ("monetization team", "party"),
        ("team-engage", "party"),
        ("data-infra-squad", "party"),  # a team in one hyphenated word, its team word last
        ("red-team-tools", None),  # a team word inside a name is not a team
        ("2026-12-17", "date"),
        ("Vercel", None),
        ("nightly at 02:00 UTC", None),
        ("4096", None),
    ],
)
def test_an_object_kind_is_read_from_its_shape(text: str, kind: str | None) -> None:
    assert object_kind(text) == kind


@pytest.mark.parametrize(
    ("left", "right", "shared"),
    [
        ("runs_on", "hosted_at", True),
        ("deployed_on", "deployed_to", True),  # placing prepositions are one
        ("version", "latest_version", True),
        ("max_retries", "max_connections", False),  # siblings
        ("memory_request", "memory_limit", False),
        ("page_size_on_desktop", "page_size_on_mobile_web", False),
        ("owned_by", "on_call_this_week", False),  # an agent phrase against another
        ("owns", "owned_by", False),  # an inverse
        ("created_by", "created_at", False),
        ("replica_count", "replica", False),  # a count and a member
    ],
)
def test_which_predicates_may_share_a_slot(left: str, right: str, shared: bool) -> None:
    assert may_share_slot(left, right) is shared
    assert may_share_slot(right, left) is shared


def test_two_known_kinds_are_two_slots_whatever_the_words() -> None:
    assert not slot_candidate("latest_version", "v2", "default_timeout", "30s")
    assert slot_candidate("runs_on", "k8s-node-07", "hosted_at", "k8s-node-12")
    assert not slot_candidate("runs_on", "k8s-node-07", "runs_on", "k8s-node-12"), "one relation"


def test_same_needs_one_kind_and_close_phrases_possible_needs_less() -> None:
    sure = slot_match("hosted_at", "k8s-node-12", "runs_on", "k8s-node-07", SURE_PHRASE)
    assert sure is not None and sure.outcome == "same"
    # Close phrases, but values of no known kind: never replaced, only flagged.
    vague = slot_match("hosting", "Cloudflare Pages", "deployed_on", "Vercel", 0.95)
    assert vague is not None and vague.outcome == "possible"
    # Two people or teams need closer phrases to be sure: one person is many things at once.
    party = slot_match("lead", "Ann Weller", "led_by", "Tom Reyes", SURE_PARTY_PHRASE - 0.05)
    assert party is not None and party.outcome == "possible"
    # One kind, phrases apart: two slots (flash 1 MB / ram 512 KB; bom cost / retail price).
    assert slot_match("ram", "512 KB", "flash", "1 MB", POSSIBLE_PHRASE - 0.07) is None
    # The same head word with the same prepositions, whatever the score; with others
    # (reports to / reports on) the score decides.
    head = slot_match("hosting", "Render", "host", "Heroku", 0.1)
    assert head is not None and head.outcome == "possible" and head.why == "the same head word"
    assert slot_match("reports_on", "Q3 revenue", "reports_to", "Dana", 0.1) is None
    # Nothing in common.
    assert (
        slot_match("reads_from", "orders-db", "publishes_to", "events", POSSIBLE_PHRASE - 0.2)
        is None
    )


def test_a_predicate_that_names_no_slot_is_weighed_by_its_object() -> None:
    # "RN | was | 0.72.10" beside "React Native | version | 0.74.5": a version either way.
    assert slot_candidate("was", "0.72.10", "version", "0.74.5")
    assert not slot_candidate("now", "30s", "version", "0.74.5"), "two kinds"
    # Told as a change (bumped to), one kind, phrases alike: sure. A bare "was": flagged.
    found = slot_match("bumped_to", "1.8.2", "version", "1.7.4", 0.99)
    assert found is not None and found.outcome == "same"
    was = slot_match("was", "0.72.10", "version", "0.74.5", 0.99)
    assert was is not None and was.outcome == "possible"
    # A value of one kind stated without a slot: possible however far apart the phrases.
    stated = slot_match("is_a", "notebooks.ml.internal", "url", "jupyter.ml.internal", 0.1)
    assert stated is not None and stated.why == "a value of no named slot"
    # Told as a move beside the one value of a one-value attribute (a url), the phrases not
    # far apart: that slot, sure; far apart, only possible.
    moved = slot_match("moved_to", "notebooks.ml.internal", "url", "jupyter.ml.internal", 0.5)
    assert moved is not None and moved.outcome == "same"
    far = slot_match("moved_to", "notebooks.ml.internal", "url", "jupyter.ml.internal", 0.1)
    assert far is not None and far.outcome == "possible"
    # Two statements of no slot ("is 16 A100", "now 32 H100") fill the one the subject names.
    both = slot_match("now", "32 H100", "is_a", "16 A100", 0.1)
    assert both is not None and both.outcome == "possible"
    # A doubled consonant is one head word: capped at / monthly spend cap.
    cap = slot_match("capped_at", "$12,000/month", "monthly_spend_cap", "Acme", 0.1)
    assert cap is not None and cap.why == "the same head word"


@pytest.mark.parametrize(
    ("predicate", "plural"),
    [
        ("members", True),
        ("member", True),
        ("speaks", True),
        ("tags", True),
        ("regions", True),
        ("maintainers", True),
        ("includes", True),
        ("runs on", False),
        ("host", False),
        ("owner", False),
        ("uses", False),
        ("replica count", False),
        ("number of members", False),
        ("version", False),
    ],
)
def test_a_plainly_plural_relation(predicate: str, plural: bool) -> None:
    assert plural_relation(predicate) is plural


def test_hard_negatives_are_two_slots_whatever_the_score() -> None:
    # Siblings: a shared word, each with one the other lacks.
    assert not slot_candidate("max_connections", "50", "max_retries", "5")
    assert not slot_candidate("memory_limit", "512Mi", "memory_request", "256Mi")
    assert not slot_candidate("production_host", "pg-prod-1", "staging_host", "pg-stg-1")
    # Two values of one known kind but phrased apart: two slots (flash / ram).
    assert slot_match("ram", "512 KB", "flash", "1 MB", 0.53) is None


def test_one_slot_named_beside_a_word_of_change_is_that_slot() -> None:
    assert slot_words("moved_to_team") == ("team",) == slot_words("team")
    assert slot_candidate("moved_to_team", "billing", "team", "platform")
    same = slot_match("moved_to_team", "billing", "team", "platform", 0.1)
    assert same is not None and same.outcome == "same"
    # The preposition of a relation is kept: reports to someone is not reports on something.
    assert slot_words("reports_on") != slot_words("reports_to")
    assert slot_words("set_to") == ()


def test_a_bare_value_names_the_closest_slot_above_a_floor() -> None:
    assert value_fallback("is_a", [0.1, VALUE_FLOOR + 0.1, 0.15]) == 1
    assert value_fallback("is_a", [VALUE_FLOOR - 0.05]) is None
    assert value_fallback("runs_on", [0.9]) is None, "a named slot is weighed by slot_match"
    assert value_fallback("set_to", []) is None


def test_a_value_without_its_slot_is_never_sure() -> None:
    # "was 0.72.10" beside "version 0.74.5" may be history: flagged, never replaced.
    match = slot_match("was", "0.72.10", "version", "0.74.5", 0.9)
    assert match is not None and match.outcome == "possible"


def test_a_verb_and_the_cadence_of_its_event_are_one_schedule() -> None:
    match = slot_match("retraining_cadence", "daily", "retrained", "weekly", 0.3)
    assert match is not None and match.outcome == "same"
    # Two attributes of one event (a window and a cadence) are not one.
    match = slot_match("deploy_window", "Tuesdays", "deploy_cadence", "weekly", 0.3)
    assert match is None or match.outcome == "possible"


def test_a_word_of_change_beside_the_slot_in_another_form_is_that_slot() -> None:
    for new, old in [("moved_hosting_to", "hosted_on"), ("changed_owner_to", "owned_by"),
                     ("switched_logging_to", "logs")]:  # fmt: skip
        match = slot_match(new, "Cloudflare Pages", old, "Vercel", 0.2)
        assert match is not None and match.outcome == "same", (new, old)
    # Words put in front name another thing's slot; no word of change, no sure slot.
    match = slot_match("moved_backup_host_to", "bk-2", "host", "web-1", 0.2)
    assert match is None or match.outcome == "possible"
    match = slot_match("hosting", "Cloudflare Pages", "hosted_on", "Vercel", 0.2)
    assert match is None or match.outcome == "possible"


def test_a_value_told_as_changed_beside_a_value_of_its_kind_is_its_slot() -> None:
    # "liaison is Hannah Brecht", then "liaison now Femi Adeyemo": two names read unalike,
    # but neither predicate names a slot, so the change is of the one value.
    match = slot_match("now", "Femi Adeyemo", "is", "Hannah Brecht", 0.2)
    assert match is not None and match.outcome == "same"
    # Not told as a change, or values of two kinds: flagged at most.
    match = slot_match("is", "Femi Adeyemo", "is", "Hannah Brecht", 0.2)
    assert match is None or match.outcome == "possible"
    match = slot_match("now", "eu-west-1", "is", "Hannah Brecht", 0.2)
    assert match is None or match.outcome == "possible"


def test_plural_facts_by_relation_subject_and_object() -> None:
    for predicate, obj in [("members", "Ann"), ("depends on", "Redis"), ("emits event", "a.b"),
                           ("supported currency", "EUR"), ("ships to", "Austria"),
                           ("sold in", "Canada"), ("node", "crdb-2"), ("maintainer", "@grace"),
                           ("called by", "recs-api"), ("speaks", "Dutch"),
                           ("launched in", "Greece")]:  # fmt: skip
        assert plural_fact("x", predicate, obj), predicate
    assert plural_fact("Kafka brokers", "run on", "kafka-2"), "a plural subject placed"
    for predicate, obj in [("max retries", "5"), ("max connections", "50"),
                           ("supported until", "2027-01-01"), ("node version", "20.11"),
                           ("shipped from", "Berlin"), ("support tier", "gold"),
                           ("maintained by", "Lucia"), ("runs on", "k8s-node-07"),
                           ("node count", "3"), ("replicas", "4"),
                           ("launch date", "2026-05-01")]:  # fmt: skip
        assert not plural_fact("x", predicate, obj), predicate
    assert not plural_fact("legacy Pig jobs", "status", "decommissioned")
    # A schedule of one verb is when the subject does it (one at a time); another event of
    # the subject, named before its verb, is one of many.
    assert not plural_fact("release train", "ships", "weekly")
    assert not plural_fact("release train", "ships", "every two weeks")
    assert plural_fact("release train", "ships", "mobile apps")
    assert plural_fact("build farm", "cleanup runs", "weekly")


@pytest.mark.parametrize(
    ("short", "words", "formed"),
    [("idp", "identity provider", True), ("ttl", "time to live", True),
     ("rps", "requests per second", True), ("mfa", "multi factor auth", True),
     ("ip", "identity provider", False), ("ipp", "identity provider", False),
     ("cdn", "cache", False)],
)  # fmt: skip
def test_initials_formed_of_each_words_first_letter_or_two(
    short: str, words: str, formed: bool
) -> None:
    assert initials_formed(short, words.split()) is formed


def test_a_slot_named_once_by_its_initials_is_one_slot_sure_only_as_news() -> None:
    for new, old in [("identity_provider", "idp"), ("id_p", "identity_provider"),
                     ("time_to_live", "ttl")]:  # fmt: skip
        quiet = slot_match(new, "Entra ID", old, "Okta", 0.3)
        told = slot_match(new, "Entra ID", old, "Okta", 0.3, news=True)
        assert quiet is not None and quiet.outcome == "possible", (new, old)
        assert told is not None and told.outcome == "same", (new, old)
    assert slot_match("time_to_live", "30 minutes", "ttl", "10.0.0.4", 0.3, news=True) is None


def test_a_slot_and_the_one_who_provides_it_are_one_slot() -> None:
    quiet = slot_match("search_provider", "Typesense", "search", "Algolia", 0.37)
    told = slot_match("email", "Postmark", "email_providers", "SendGrid", 0.37, news=True)
    assert quiet is not None and quiet.outcome == "possible"
    assert told is not None and told.outcome == "same"
    assert slot_match("search_provider_region", "eu", "search", "Algolia", 0.2) is None


def test_a_count_marked_or_bare_with_two_numbers_may_be_one_slot() -> None:
    assert counted_alike("prefetch_count", "prefetch")
    assert counted_alike("retry", "number_of_retry")
    assert not counted_alike("prefetch_size", "prefetch")
    assert slot_candidate("prefetch_count", "50", "prefetch", "10")
    assert not slot_candidate("prefetch_count", "50", "prefetch", "on"), "not a count"
    assert not slot_candidate("replica_count", "3", "replica", "db-2"), "a replica's name"
    found = slot_match("prefetch_count", "50", "prefetch", "10", 0.79)
    assert found is not None and found.outcome == "possible"


def test_a_name_in_capitals_beside_a_host_may_be_where_it_runs() -> None:
    assert not kinds_clash("Grafana Cloud", "fl-graf-01")
    assert not kinds_clash("fl-graf-01", "Metabase Cloud")
    assert kinds_clash("team nova", "fl-graf-01"), "a team is no place"
    assert kinds_clash("@dana", "fl-graf-01")
    assert kinds_clash("Dana Kim", "1.4.2"), "a name is no version"
    found = slot_match("now_on", "Grafana Cloud", "host", "fl-graf-01", 0.45)
    assert found is not None and found.outcome == "possible"


@pytest.mark.parametrize(
    ("new", "old", "cosine"),
    [("deployed_to", "hosted_on", 0.39), ("hosted_on", "deployed_to", 0.39),
     ("deployed_to", "runs_on", 0.35), ("deployed_to", "deployed_on", 0.5)],
)  # fmt: skip
def test_placed_by_where_it_went_beside_where_it_is_is_possible_never_sure(
    new: str, old: str, cosine: float
) -> None:
    for news in (False, True):
        found = slot_match(new, "Vercel", old, "Netlify", cosine, news=news)
        assert found is not None and found.outcome == "possible", (new, old, news)
    # Something of the subject sent somewhere is not where the subject is.
    assert slot_match("logs_to", "Loki", "runs_on", "k8s", 0.37) is None


def test_objects_scoped_to_their_own_purposes_both_hold() -> None:
    assert scoped_apart("PlayFab for economy", "EOS for lobbies")
    assert not scoped_apart("Redis for caching", "Memcached for caching"), "one purpose"
    assert not scoped_apart("Redis", "EOS for lobbies")


def test_a_verb_in_the_third_person_is_no_plural_noun() -> None:
    for predicate in ("now lives on", "now runs", "mostly uses", "currently hosts"):
        assert not plural_relation(predicate), predicate
    for predicate in ("supported regions", "target markets", "emits events"):
        assert plural_relation(predicate), predicate


def test_one_named_thing_at_two_versions_is_a_change_not_two_values() -> None:
    assert versions_of_one("react 18", "react 19")
    assert versions_of_one("PostgreSQL 15", "PostgreSQL 16.2")
    assert versions_of_one("react@18", "react@19")
    assert not versions_of_one("Postgres", "Redis")
    assert not versions_of_one("kafka-1", "kafka-2"), "numbered hosts are siblings"
    assert not versions_of_one("react 18", "react 18")


def test_a_questions_form_asks_for_a_kind_of_value() -> None:
    from ferrex.rules.asked import answers_form, asked_kinds, stated_kinds

    assert asked_kinds("where does the auth gateway run?") == {"host", "url"}
    assert asked_kinds("What version does the auth gateway run?") == {"version"}
    assert asked_kinds("which version of postgres is live, and where?") == {"version"}
    assert asked_kinds("who owns billing?") == {"party"}
    assert asked_kinds("when did we migrate the queue?") == {"date"}
    assert asked_kinds("how long is the session timeout?") == {"duration"}
    assert asked_kinds("why was checkout slow?") == frozenset()
    assert stated_kinds("auth gateway runs on k8s-node-07") == {"host"}
    assert stated_kinds("auth gateway runs version 1.9.0.") == {"version"}
    assert stated_kinds("the timeout is 30 s now") == {"duration"}
    assert stated_kinds("docs at https://wiki.example.org/auth") == {"url"}
    assert stated_kinds("Caroline: Ann Weller went to the group") == set(), "names need a fact"
    assert stated_kinds("", "owned_by", "Ann Weller") == {"party"}
    assert stated_kinds("", "deployed_in", "eu-west") == {"host"}, "a placing predicate"
    where = asked_kinds("where does the auth gateway run?")
    assert answers_form(where, stated_kinds("auth gateway runs on k8s-node-07"))
    assert not answers_form(where, stated_kinds("auth gateway runs version 1.9.0"))


@pytest.mark.parametrize(
    ("predicate", "content", "dated", "news"),
    [
        ("owner", None, True, True),  # a start given
        ("moved_to", None, False, True),  # a word of change in the predicate
        ("hosted_on", "we switched hosts on Monday", False, True),  # in the note
        ("hosted_on", "Migrated off the old VPS", False, True),
        ("lives_in", "BigQuery migration finished", False, True),  # a noun of change
        ("runs_on", "after the cutover to the new cluster", False, True),
        ("sits_in", "the region move wrapped up on Friday", False, True),
        ("owned_by", "after the reorg", False, True),
        ("written_in", "the rewrite shipped last week", False, True),
        ("provider", "after the Change Healthcare outage", False, False),  # a name, no noun
        ("lives_in", "the migrations folder of the repo", False, False),
        ("owner", None, False, False),
        ("hosted_on", "the host for the marketing pages", False, False),
        ("hosted_on", "", False, False),
    ],
)
def test_told_as_news_reads_a_start_or_a_word_of_change(
    predicate: str, content: str | None, dated: bool, news: bool
) -> None:
    assert told_as_news(predicate, content, dated=dated) is news


@pytest.mark.parametrize(
    ("left", "right", "placed"),
    [
        ("runs_on", "deployed_on", True),
        ("is_hosted_at", "lives_on", True),
        ("stationed_at", "located_at", True),
        ("written_in", "runs_on", False),  # in: a language as often as a place
        ("founded_in", "located_in", False),
        ("depends_on", "runs_on", False),  # many values
        ("reads_features_from", "reads_labels_from", False),
    ],
)
def test_placed_alike_is_one_verb_placing_on_or_at(left: str, right: str, placed: bool) -> None:
    assert placed_alike(left, right) is placed


def test_a_thing_at_a_whole_version_states_a_version() -> None:
    from ferrex.rules.asked import asked_shapes, stated_kinds, states

    asked = asked_shapes("which Postgres version does the billing service use?")
    assert asked == frozenset({"version"})
    assert states(asked, "", "uses database", "PostgreSQL 16")
    assert "version" in stated_kinds("", "runtime", "Java 21")
    assert not states(asked, "", "owned by", "payments team")


def test_the_unit_after_per_is_not_the_head_of_a_count() -> None:
    # Threads per replica are counted by replica; they are not the replicas.
    assert not same_head("worker_threads_per_replica", "replicas")
    assert slot_match("worker_threads_per_replica", "8", "replicas", "6", 0.5) is None
    assert same_head("requests_per_second", "request_limit")  # the head before per
    assert same_head("rate_limit_per_user", "per_user_limit")  # both count by a unit


def test_a_re_word_shares_its_head_and_one_head_may_take_a_preposition_on_one_side() -> None:
    assert same_head("relicensed_to", "license") and same_head("rehosted_on", "hosting")
    assert not same_head("reports_to", "ports")  # a short re- word is a word of its own
    assert may_share_slot("capped_at", "monthly_spend_cap")
    assert not may_share_slot("owned_by", "owner_of")  # by gives a direction
    old = ("license", "GPL-3.0")
    assert slot_match("relicensed_to", "Apache-2.0", *old, 0.3) is not None
    assert slot_match("deployed_on", "emqx-cluster", "runs_on", "mosquitto box", 0.3) is not None


def test_note_names_another_facts_value_by_a_word_of_its_own() -> None:
    assert note_names("reorg: growth squad split", "growth squad")
    assert note_names("dropped redis for sessions", "Redis 6 on ElastiCache")
    assert not note_names("OOMKilled twice yesterday", "512Mi")
    assert not note_names(None, "growth squad")
    # The subjects' own words name no value.
    assert not note_names("the billing page moved", "billing squad", besides=["billing", "page"])
    assert not note_names("the new api is out", "the api")  # short and function words


def test_a_note_tells_a_change_from_one_value_to_another_in_that_order() -> None:
    assert note_tells_change("moved checkout events from RabbitMQ to Kafka", "Kafka", "RabbitMQ")
    assert note_tells_change("RabbitMQ -> Kafka for checkout events", "Kafka", "RabbitMQ")
    assert note_tells_change("switched from Sendgrid into Amazon SES", "Amazon SES", "SendGrid")
    # Both named in another order, or the other way round: no change told from the old one.
    assert not note_tells_change("SQS replaced the Redis-based queue", "SQS", "Redis")
    assert not note_tells_change("moved from Kafka to RabbitMQ", "Kafka", "RabbitMQ")
    assert not note_tells_change(None, "Kafka", "RabbitMQ")
    # The old value right after a word of leaving it, an article or two aside.
    assert note_tells_change("moved off Fargate to the shared EKS cluster", "EKS", "ECS Fargate")
    assert note_tells_change("we dropped Zendesk", "Intercom", "Zendesk")
    assert note_tells_change("we left the old Jenkins box", "GitHub Actions", "Jenkins")
    assert not note_tells_change("left it at 30s", "10s", "30s")
    # A dotted name is named by its first part too; a predicate may be such words.
    assert note_tells_change("replaced Moment.js with", "date-fns", "Moment.js")
    assert not note_tells_change("replaced Moment.js with", "date-fns", "Luxon")


@pytest.mark.parametrize(
    ("new", "old", "same"),
    [
        ("57600 baud", "57600", True),  # the value with its unit
        ("rev B", "RevB", True),  # spacing and case
        ("#rel-eng-alerts", "rel eng alerts", True),  # punctuation
        ("lumenctl v1.4.2", "1.4.2", True),  # a version with its name and a v
        ("OCE", "Open Collective Europe", True),  # the initials of the words
        ("Herengracht 40", "Herengracht 40, Utrecht", True),  # one word more
        ("8", "8", False),  # a count: many slots of one thing hold it
        ("true", "True", False),  # a flag word
        ("1.4.2", "1.4.20", False),
        ("eu-west-1", "eu-west-1, eu-west-2, eu-central-1, us-east-1", False),  # many more
        ("30s", "30 days", False),  # two kinds
        ("Postgres 16", "Postgres 15", False),
        ("half an hour", "30 minutes", True),  # a duration said in words
        ("a day and a half", "36 hours", True),
        ("one and a half hours", "90 min", True),
        ("two weeks", "14d", True),
        ("an hour", "2 hours", False),
        ("a few days", "3 days", False),  # no count said
    ],
)
def test_a_value_restated_in_other_words(new: str, old: str, same: bool) -> None:
    assert restated(new, old) is same
    assert restated(old, new) is same


@pytest.mark.parametrize(
    ("predicate", "new", "old", "content", "dated"),
    [
        ("max_replicas", "12", "8", None, False),  # two quantities
        ("max_replicas", "12 pods", "8", None, False),  # a count in one word
        ("version", "3.1.0", "2.9", None, False),  # a kind a thing has one of
        ("timeout", "45s", "30 s", None, False),
        ("uses", "django 5", "django 4", None, False),  # one thing at two versions
        ("owned_by", "team Lumen", "@kira.o", None, False),  # two people or teams
        ("maintained_by", "search-infra-team", "core-team", None, False),  # hyphenated
        ("deployed_in", "Frankfurt", "Dublin", None, True),  # a start given
        ("moved_to", "Frankfurt", "Dublin", None, False),  # a word of change
        ("deployed_in", "Frankfurt", "Dublin", "migrated off Dublin last week", False),
    ],
)
def test_a_value_surely_replaces_one_of_its_relation_with_evidence(
    predicate: str, new: str, old: str, content: str | None, dated: bool
) -> None:
    assert replaces_value(predicate, new, old, content, dated=dated)


@pytest.mark.parametrize(
    ("predicate", "new", "old"),
    [
        ("deployed_in", "Frankfurt", "Dublin"),  # two places: offices, regions, markets
        ("reads_from", "invoices", "payments"),  # two inputs
        ("translated_into", "Korean", "Dutch"),  # two languages
        ("runs_on", "edge-node-4.corp.example", "edge-node-3.corp.example"),  # two nodes
        ("floor", "2nd floor", "4th floor"),  # ordinals are no quantities
    ],
)
def test_a_second_name_of_one_relation_told_plainly_is_no_sure_replacement(
    predicate: str, new: str, old: str
) -> None:
    assert not replaces_value(predicate, new, old, None, dated=False)
    assert not replaces_value(predicate, new, old, "noted while reading the config", dated=False)


@pytest.mark.parametrize(
    ("left", "right", "apart"),
    [
        ("llm", "fallback_llm", True),  # another role of the value
        ("database_host", "standby_database_host", True),
        ("uses", "to_be_replaced_by", True),  # a relation not in force yet
        ("hosted_on", "will_move_to", True),
        ("provider", "next_provider", True),
        ("runs_on", "hosted_at", False),
        ("llm", "model", False),
        ("plan", "tier", False),  # a pricing plan is no plan for the future
        ("fallback_llm", "fallback_model", False),  # both of one role: the usual rules
        ("prod", "canary", True),  # each names an instance of its own
        ("primary", "reporting_replica", True),
        ("prod_url", "staging_url", True),
        ("old_host", "new_host", False),  # a change told as old and new, not two instances
        ("prod_host", "host", False),  # the bare name is the main one
        ("backups_kept_for", "backup_retention", False),  # one word in two numbers
        ("search_provider", "search", False),  # who provides it: the value, no add-on
        ("metrics_exporter", "metrics", True),  # an add-on of its own
        ("replicas_in", "replica_region", False),
    ],
)
def test_relations_whose_values_do_not_compete(left: str, right: str, apart: bool) -> None:
    assert relations_apart(left, right) is apart
    assert relations_apart(right, left) is apart
    if apart:
        assert not slot_candidate(left, "gpt-4o", right, "claude-3")
        assert not may_share_slot(left, right)


def test_two_forms_of_one_long_word_share_a_head() -> None:
    assert same_head("max_concurrent_jobs", "concurrency")
    assert same_head("max_parallel_builds", "parallelism")
    assert same_head("configured_with", "configuration")
    # Long words that only start alike are two words.
    assert not same_head("conversion_rate", "conversation_model")
    assert not same_head("permission_set", "permanent_address")


def test_values_that_name_two_things_are_never_surely_one_slot() -> None:
    # A version naming a thing the other fact does not name: two things' versions.
    assert names_apart("upgraded_to", "Django 5.0", "python_version", "3.11")
    assert names_apart("bumped_to", "React 18.3.1", "node_version", "20.11.0")
    assert not names_apart("upgraded_to", "Kubernetes 1.29", "kubernetes_version", "1.28")
    assert not names_apart("upgraded_to", "8.15.1", "elasticsearch_version", "8.11.3")
    assert not names_apart("bumped_to", "3.12", "runtime", "Python 3.11")
    assert counts_of_two("2 GPUs", "64 cores")
    assert not counts_of_two("30 nodes", "50 nodes")
    assert not counts_of_two("30", "50 nodes")
    assert not counts_of_two("2 approvals", "1 approval")
    # a unit of time or size counts no thing: one quantity in two units, or a change
    assert not counts_of_two("30 minutes", "1800 seconds")
    assert not counts_of_two("500 GB", "2 TB")
    assert not counts_of_two("3 days", "12 workers")
    assert measure_unit("minutes") and measure_unit("GB") and not measure_unit("workers")
    # one of several things held, placed or set up
    assert one_of_many_held("has depot in", "Duisburg")
    assert one_of_many_held("has a PoP in", "Singapore")
    assert one_of_many_held("has extension installed", "postgis")
    assert not one_of_many_held("has HQ in", "Lisbon")
    assert not one_of_many_held("has its main office in", "Porto")
    assert not one_of_many_held("has version installed", "3.11")  # a version: one at a time
    assert not one_of_many_held("has owner", "Dana") and not one_of_many_held("hosted on", "x")
    # one name with another version written onto it
    assert suffixed_versions("payment-gateway-v1", "payment-gateway-v2")
    assert suffixed_versions("api_v2", "API_v3") and suffixed_versions("orders v1", "orders-v1.1")
    assert not suffixed_versions("kafka-b1", "kafka-b2")  # not a version
    assert not suffixed_versions("search-v2", "billing-v2")  # two names
    assert not suffixed_versions("orders-v1", "orders-v1") and not suffixed_versions("v1", "v2")
    assert counted("12 workers") and not counted("12") and not counted("4k")
    # sure by every other rule, possible only
    found = slot_match("upgraded_to", "Django 5.0", "python_version", "3.11", 0.9)
    assert found is not None and found.outcome == "possible"
    found = slot_match("upgraded_to", "8.15.1", "elasticsearch_version", "8.11.3", 0.9)
    assert found is not None and found.outcome == "same"
    # the same relation: two named things, two counts of two things
    assert not replaces_value("depends_on", "vite 5.0.10", "react 18.2.0", None, dated=False)
    assert replaces_value("depends_on", "react 19.0.0", "react 18.2.0", None, dated=False)
    assert not replaces_value("has", "64 cores", "2 GPUs", None, dated=False)
    assert replaces_value("max_nodes", "50 nodes", "30 nodes", None, dated=False)


def test_a_range_of_versions_and_the_acts_of_many_people_are_plural() -> None:
    assert range_relation("supports") and range_relation("tests on")
    assert range_relation("compatible with") and range_relation("tested against")
    assert not range_relation("support tier") and not range_relation("test command")
    for split in ("supports_i_os", "supports_mac_os", "supports_i_pad_os", "tested_on_watch_os"):
        assert range_relation(split), split
    assert plural_fact("mobile app", "supports", "iOS 16")
    assert plural_fact("sdk", "tests on", "Python 3.11")
    assert not plural_fact("sdk", "supported until", "2027-01-01")
    assert not replaces_value("tests_on", "Python 3.12", "Python 3.11", None, dated=False)
    assert plural_relation("reviewed by") and plural_relation("approved by")
    assert not plural_relation("review status") and not plural_relation("approval threshold")
    assert reciprocal_relation("works with") and not reciprocal_relation("works at")
    assert plural_fact("Priya Nair", "works with", "Marco Rossi")
    # one event of many told in the past: another date is another event
    assert plural_fact("payments api", "had an incident on", "2026-01-05")
    assert not plural_fact("payments api", "launch date", "2026-01-05")


def test_a_part_placed_and_two_events_dated_are_not_the_things_place_or_date() -> None:
    # hosted on / replicated to: the second places its replica, not the database
    assert outcome("replicated_to", "db-host-02", "hosted_on", "db-host-01", 0.9) == "possible"
    assert outcome("is_hosted_at", "db-host-02", "hosted_on", "db-host-01", 0.9) == "same"
    # a level (throttled at) beside a noun is neither placing
    assert outcome("throttled_at", "600 req/min", "rate_limit", "300 req/min", 0.9) == "same"
    dated = outcome("deprecated_on", "2027-01-01", "launched", "2025-06-01", 0.9)
    assert dated in (None, "possible"), "two events' dates"
    assert outcome("deadline", "2026-12-17", "deadline_is", "2026-12-10", 0.9) == "same"
    # a migration to a tool, far from where it is hosted: not a move of the thing
    assert outcome("migrated_to", "Docusaurus", "hosted_on", "Netlify", 0.3) in (None, "possible")
    assert outcome("moved_to", "Render web service", "runs_on", "a Heroku dyno", 0.1) == "same"


def test_a_part_placed_or_a_kind_of_an_attribute_is_no_possible_slot() -> None:
    from ferrex.rules.slot_outcomes import part_placed

    assert part_placed("database_on", "runs_on") and part_placed("storage_in", "deployed_in")
    assert not part_placed("caches_on", "runs_on"), "maybe a verb of its own"
    assert not part_placed("run_on", "runs_on"), "one verb in two forms"
    assert not part_placed("hosted_on", "runs_on") and not part_placed("lives_on", "runs_on")
    assert slot_match("database_on", "Azure SQL db-1", "runs_on", "App Service app-1", 0.8) is None
    # a word in front names a kind of status; the values read apart
    assert slot_match("compliance_status", "BAA signed", "status", "live", 0.3) is None
    found = slot_match("compliance_status", "BAA signed", "status", "live", 0.5)
    assert found is not None and found.outcome == "possible"
    assert plural_relation("offices in") and plural_relation("services")


def test_two_people_replace_one_another_only_in_a_role_one_holds() -> None:
    from ferrex.rules.value_changes import one_holder, per_apart

    for predicate in ("owner", "owned_by", "maintained_by", "tech_lead", "reports_to",
                      "on_call", "manager", "assigned_to", "point_of_contact"):  # fmt: skip
        assert one_holder(predicate), predicate
    for predicate in ("used_by", "signed_off_by", "attended_by", "reported_by", "email"):
        assert not one_holder(predicate), predicate
    assert replaces_value("owner", "team Heron", "team Falcon", None, dated=False)
    assert not replaces_value("used_by", "team Mobile", "team Web", None, dated=False)
    assert replaces_value("used_by", "team Mobile", "team Web", None, dated=True), "news"
    assert per_apart("$10/month", "$100/year") and not per_apart("$10/month", "$12/month")
    assert not replaces_value("price", "$100/year", "$10/month", None, dated=False)
    assert replaces_value("price", "$12/month", "$10/month", None, dated=False)


def test_a_word_of_change_is_no_word_of_a_sibling_slot() -> None:
    # per-user limit raised to / rate limit per user: one slot, the change said beside it
    assert not sibling_predicates("per_user_limit_raised_to", "rate_limit_per_user")
    assert slot_candidate("per_user_limit_raised_to", "120 req/min", "rate_limit_per_user",
                          "60 req/min")  # fmt: skip
    assert sibling_predicates("max_retries", "max_connections")
    assert sibling_predicates("memory_request_raised_to", "memory_limit"), "request, limit"


def test_a_relation_told_as_past() -> None:
    from ferrex.rules.value_changes import told_as_past

    for past in ("used_to_use", "previously_provided_by", "formerly_hosted_on", "former_owner",
                 "we_used_to_run_on", "originally_hosted_on", "initially_set_to",
                 "ran_postgres", "ran_on", "had_replicas"):  # fmt: skip
        assert told_as_past(past), past
    for present in ("used_by", "depends_on", "refused_to", "caused_to", "provider", "runs_on",
                    "hosted_on", "owned_by", "was", "running_on", "random_seed"):  # fmt: skip
        assert not told_as_past(present), present


def test_two_acts_by_two_parties_are_never_surely_one_slot() -> None:
    from ferrex.rules.slot_outcomes import slot_match, two_acts_by

    assert two_acts_by("owned_by", "used_by") and two_acts_by("run_by", "owned_by")
    assert not two_acts_by("reviewed_by", "reviewed_by"), "one verb"
    assert not two_acts_by("owned_by", "owner"), "one side names no act by"
    found = slot_match("used_by", "team Edge", "owned_by", "team Core", 0.70)
    assert found is None or found.outcome == "possible", found


def test_a_region_named_beside_a_verb_placing() -> None:
    from ferrex.rules.slot_outcomes import cloud_regions, placed_apart, slot_match

    assert cloud_regions("us-east-1", "europe-west4")
    assert cloud_regions("Frankfurt (eu-central-1)", "ap-southeast-2")
    assert not cloud_regions("us-east-1", "k8s-node-07"), "a host in a region"
    assert not cloud_regions("ecs-node-3", "us-east-1")
    # where the subject is, as an attribute and by a verb: possibly one slot, never surely
    found = slot_match("stored_in", "europe-west4", "bucket_region", "us-central1", 0.42)
    assert found is not None and found.outcome == "possible", found
    assert slot_match("runs_on", "k8s-node-07", "region", "us-east-1", 0.40) is None
    # a part named and placed is another thing's place, however alike the phrases
    for part in ("replica_on", "read_replica_on"):
        found = slot_match(part, "db-host-02", "hosted_on", "db-host-01", 0.9)
        assert found is None or found.outcome == "possible", (part, found)
    # a replica's region is not the service's: never replaced by it
    assert placed_apart("replicated_to", "region")
    found = slot_match("replicated_to", "us-west-2", "region", "us-east-1", 0.63)
    assert found is not None and found.outcome == "possible", found


def test_a_value_told_as_one_more() -> None:
    from ferrex.rules.value_changes import told_as_added

    for added in ("also runs in", "is also deployed in", "additionally accepts files from",
                  "also_known_as", "Also serves"):  # fmt: skip
        assert told_as_added(added), added
    # no word of one more; only function words; one more told as a change
    for other in ("runs in", "is also", "also moved to", "also now uses", "also switched to",
                  "also migrated to", "Alsop version"):  # fmt: skip
        assert not told_as_added(other), other


def test_a_change_in_words_is_apart_from_slots_it_leaves_alone() -> None:
    from ferrex.rules.slot_outcomes import news_apart

    # a part of the subject changed, two attributes of their own, a part placed
    for new, old in [
        ("logs_moved_to", "runs_on"),
        ("upgraded_its_sdk_to", "version"),
        ("moved_its_database_to", "deployed_on"),
        ("retry_delay", "timeout"),
        ("cached_at", "hosted_on"),
        ("cache_moved_to", "runs_on"),
    ]:
        assert news_apart(new, old), (new, old)
    # the change may be of the other's slot: flagged, the agent settles it
    for new, old in [
        ("go_toolchain_upgraded_to", "go_version"),
        ("deploys_to", "served_from"),
        ("migrated_to", "engine"),
        ("led_by", "tech_lead"),
        ("switched_over_to", "tool"),
        ("now_triggered_from", "scheduled_on"),
    ]:
        assert not news_apart(new, old), (new, old)


def test_verbs_that_pass_a_value_on_tell_a_change() -> None:
    from ferrex.rules.slots import value_predicate
    from ferrex.rules.value_changes import told_as_news

    for predicate in ("rewritten_in", "handed_over_to", "transferred_to", "converted_to"):
        assert told_as_news(predicate, None, dated=False), predicate
    assert value_predicate("transferred_to") and value_predicate("converted_to")
    # one value more as often as a new one, or an amount of no named slot: no word of change
    for predicate in ("written_in", "ported_to", "extended_to", "scaled_to"):
        assert not told_as_news(predicate, None, dated=False), predicate


def test_via_is_a_preposition() -> None:
    """``via`` names no slot by itself (``IAP | via | RevenueCat`` is weighed by its value,
    like ``is``), and in ``page_via`` it is the preposition beside the head word."""
    from ferrex.rules.slots import prepositions_in, value_predicate

    assert value_predicate("via")
    assert prepositions_in("page_via") == ["via"] and prepositions_in("sent_via") == ["via"]
    assert not value_predicate("sent_via")


def test_a_weekly_schedule_in_one_form() -> None:
    from ferrex.rules.schedules import schedule_form

    assert schedule_form("Tue/Thu 10:00") == schedule_form("Tuesday and Thursday 10am")
    assert schedule_form("0 9 * * 1-5") == (
        frozenset({"mon", "tue", "wed", "thu", "fri"}),
        ("09:00",),
        frozenset(),
    )
    every_day = (frozenset[str](), ("09:30",), frozenset[str]())
    assert schedule_form("daily at 9:30") == schedule_form("30 9 * * *") == every_day
    # more than a week's schedule, or no clock at all
    for text in ("every 2 weeks", "monthly at 02:00", "0 2 1 * *", "port 8080", "3 replicas"):
        assert schedule_form(text) is None, text


def test_a_name_glued_to_its_dotted_version_is_a_version_not_a_host() -> None:
    from ferrex.rules.slots import object_kind

    for text in ("UE5.4", "python3.11", "go1.22", "gpl-3.0"):
        assert object_kind(text) == "version", text
    for text in ("db1.internal", "bff-1.fitpulse.net", "k8s-node-07", "ch-01.dp.internal"):
        assert object_kind(text) == "host", text


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("2.4.1", "2.3.0"),  # one known kind
        ("Unreal Engine 5.4", "Unity 2022 LTS"),  # two names of no known kind
        ("12", "8"),  # two bare numbers
        ("Digital Front Door team", "Patient Access IT"),  # a team beside a name in capitals
        ("Godot 4.2", "Unity 2021 LTS"),  # a name at a version beside a name
    ],
)
def test_values_whose_shapes_agree(left: str, right: str) -> None:
    assert shapes_agree(left, right) and shapes_agree(right, left)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("2", "team Nova"),  # a count beside a team
        ("50051", "ip-10-2-80-4"),  # a port beside a host
        ("Java 21", "3.25.1"),  # a language beside a version
        ("OpenTelemetry", "Chen Wei"),  # one word in capitals is no person
        ("15s", "ecs cluster shipping-prod"),  # a duration beside a name
    ],
)
def test_values_whose_shapes_disagree(left: str, right: str) -> None:
    assert not shapes_agree(left, right) and not shapes_agree(right, left)


def test_a_plural_subject_placed_anew_in_words_of_change_is_one_value() -> None:
    assert plural_fact("Kafka brokers", "run on", "kafka-2"), "one more broker's place"
    assert plural_fact("feature flags", "managed in", "Flagsmith")
    assert not plural_fact("feature flags", "now managed in", "Flagsmith"), "where all are now"
    assert not plural_fact("build runners", "moved to", "Buildkite hosted agents")


@pytest.mark.parametrize(
    ("left", "right"),
    [("ends", "starts"), ("end_date", "start_date"), ("closes_at", "opens_at"),
     ("min_replicas", "max_replicas"), ("inbound_port", "outbound_port"),
     ("closing_time", "opening_time"), ("exports_to", "imports_from")],
)  # fmt: skip
def test_the_two_ends_of_one_span_are_two_relations(left: str, right: str) -> None:
    assert relations_apart(left, right) and relations_apart(right, left)
    assert not slot_candidate(left, "10:00", right, "09:00")


def test_words_that_only_look_opposite_keep_one_relation() -> None:
    assert not relations_apart("starts_at", "start_time"), "one end, two wordings"
    assert not relations_apart("endpoint", "startpoint"), "one word each, not the pair"
    assert not relations_apart("runs_on", "hosted_on")


def test_note_names_a_value_of_three_capitalised_words_by_its_initials() -> None:
    assert note_names("FCM quota issues", "Firebase Cloud Messaging")
    assert note_names("left GKE for cost", "Google Kubernetes Engine")
    assert not note_names("fcm quota issues", "Firebase Cloud Messaging"), "in capitals only"
    assert not note_names("CM quota issues", "Firebase Cloud Messaging")
    assert not note_names("AB test", "Apple Business"), "two words are too few"
    assert not note_names("FCM quota", "Firebase Cloud Messaging", besides=["fcm"])
