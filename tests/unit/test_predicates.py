"""Predicate normalization: shapes, synonym groups, typo matching that never merges relations."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz.distance import JaroWinkler

from ferrex.errors import UsageError
from ferrex.rules.predicates import (
    DEFAULT_SYNONYM_GROUPS,
    DEFAULT_SYNONYMS,
    PREDICATE_EMBEDDING_THRESHOLD,
    as_worded,
    match_known,
    may_reword,
    merge_synonyms,
    normalize_predicate,
    one_relation,
    placing,
    predicate_phrase,
    predicate_shape,
    predicate_wording,
    relational,
    same_count,
    spelled_alike,
    synonym_map,
    unplaced_neighbour,
)


@pytest.mark.parametrize(
    ("predicate", "shape"),
    [
        ("dependsOn", "depends_on"),
        ("DependsOn", "depends_on"),
        ("depends-on", "depends_on"),
        ("  Depends   On ", "depends_on"),
        ("depends.on", "depends_on"),
        ("depends/on", "depends_on"),
        ("depends__--on", "depends_on"),
        ("HTTPServer", "http_server"),
        ("has2FA", "has2_fa"),
        ("owner's", "owners"),
        ("owner\u2019s", "owners"),
        ("_created_at_", "created_at"),
        ("\uff35\uff33\uff25\uff33", "uses"),  # fullwidth USES, folded by NFKC
        ("---", ""),
    ],
)
def test_shape(predicate: str, shape: str) -> None:
    assert predicate_shape(predicate) == shape


@pytest.mark.parametrize(
    ("predicate", "canonical"),
    [
        ("uses", "depends_on"),
        ("depends-on", "depends_on"),
        ("dependsOn", "depends_on"),
        ("Relies on", "depends_on"),
        ("requires", "depends_on"),
        ("is", "is_a"),
        ("is an", "is_a"),
        ("Works For", "works_at"),
        ("employed-by", "works_at"),
        ("favours", "prefers"),
        ("lives in", "located_in"),
        ("maintains", "owns"),
        ("needs", "depends_on"),
        ("written in", "built_with"),
        ("implemented in", "built_with"),
        ("built with", "built_with"),
        ("built on", "depends_on"),
        ("runs version", "version"),
        ("at_version", "version"),
        ("owned by", "owned_by"),
        ("maintained by", "owned_by"),
        ("managed by", "owned_by"),
        ("is on version", "version"),
        ("authored by", "created_by"),
        ("belongs to", "part_of"),
        ("knows", "knows"),  # in no group: its own canonical form
    ],
)
def test_synonyms_map_to_the_canonical_form(predicate: str, canonical: str) -> None:
    assert normalize_predicate(predicate) == canonical


def test_uses_and_depends_on_are_one_relation_but_owns_is_another() -> None:
    assert normalize_predicate("uses") == normalize_predicate("depends-on")
    assert normalize_predicate("uses") != normalize_predicate("owns")
    assert match_known(normalize_predicate("owns"), ["depends_on"]) is None
    assert match_known(normalize_predicate("uses"), ["owns"]) is None


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("maintained by", "owns"),
        ("employs", "works at"),
        ("owns", "owned by"),
        ("maintains", "maintained by"),
        ("owner", "owner of"),  # X | owner | Y: Y owns X; X is owner of Y: X owns Y
        ("maintainer", "maintains"),
        ("manager", "manages"),
        ("created by", "created at"),
        ("created by", "created"),
        ("uses", "used by"),
        ("depends on", "dependency of"),
        ("written by", "written in"),
        ("built by", "built with"),
        ("employee", "employer"),
    ],
)
def test_inverse_relations_stay_apart(left: str, right: str) -> None:
    a, b = normalize_predicate(left), normalize_predicate(right)
    assert a != b
    assert match_known(a, [b]) is None
    assert match_known(b, [a]) is None


@pytest.mark.parametrize(
    ("predicate", "canonical"),
    [
        ("is owned by", "owned_by"),
        ("is written in", "built_with"),
        ("was written in", "built_with"),
        ("are maintained by", "owned_by"),
        ("has been using", "depends_on"),
        ("does use", "depends_on"),
        ("is the owner of", "owns"),
        ("has version", "version"),
        ("is kind of", "is_a"),
        ("is being used by", "used_by"),
        ("does not use", "not_use"),  # a negation is content: never "uses"
        ("is blocking", "blocking"),  # in no group: the copula still goes
        # one value more is told, the relation is the same
        ("also runs on", "runs_on"),
        ("is also deployed in", "deployed_in"),
        ("additionally uses", "depends_on"),
    ],
)
def test_copulas_auxiliaries_and_articles_do_not_make_a_relation(
    predicate: str, canonical: str
) -> None:
    assert normalize_predicate(predicate) == canonical


@pytest.mark.parametrize(
    "shaped", ["is", "is_a", "has_a", "is_in", "the", "is_not", "has", "is_also"]
)
def test_a_function_word_stays_when_nothing_would_remain(shaped: str) -> None:
    assert predicate_wording(shaped) == shaped


def test_a_bare_is_is_still_is_a_and_has_a_is_not() -> None:
    assert normalize_predicate("is") == "is_a"
    assert normalize_predicate("has a") == "has_a"


@pytest.mark.parametrize(
    ("predicate", "canonical"),
    [
        ("owner", "owned_by"),
        ("the owner", "owned_by"),
        ("has owner", "owned_by"),
        ("maintainer", "owned_by"),
        ("manager", "owned_by"),
        ("language", "built_with"),
        ("programming language", "built_with"),
        ("author", "created_by"),
        ("creator", "created_by"),
        ("employer", "works_at"),
        ("location", "located_in"),
        ("dependency", "depends_on"),
        ("current version", "version"),
        ("type", "is_a"),
        ("database", "database"),  # too broad a role to name one relation
    ],
)
def test_a_role_noun_names_its_relation(predicate: str, canonical: str) -> None:
    assert normalize_predicate(predicate) == canonical


@pytest.mark.parametrize(
    ("typo", "canonical"),
    [
        ("maintianed by", "owned_by"),
        ("implemnted in", "built_with"),
        ("emplyed by", "works_at"),
        ("is maintianed by", "owned_by"),
    ],
)
def test_a_typo_of_a_synonym_maps_to_its_canonical_form(typo: str, canonical: str) -> None:
    assert normalize_predicate(typo) == canonical


def test_a_typo_is_corrected_only_by_the_typo_rule() -> None:
    assert normalize_predicate("employee") == "employee"  # not employer: the last letter
    assert normalize_predicate("relies in") == "relies_in"  # short words must match
    assert normalize_predicate("createdd by", {}) == "createdd_by"  # nothing to correct to


def test_a_user_map_may_name_a_form_with_a_leading_function_word() -> None:
    mapping = synonym_map({"contains": ["has part"]})
    assert normalize_predicate("has part", mapping) == "contains"
    assert normalize_predicate("has part", {}) == "part"


def test_every_default_canonical_form_is_shaped_and_maps_to_itself() -> None:
    for canonical in DEFAULT_SYNONYM_GROUPS:
        assert predicate_shape(canonical) == canonical
        assert DEFAULT_SYNONYMS[canonical] == canonical


def test_an_empty_synonym_map_only_shapes() -> None:
    assert normalize_predicate("Uses", {}) == "uses"


# --- synonym_map and merge_synonyms ---------------------------------------------------------


def test_synonym_map_shapes_variants_and_canonicals() -> None:
    mapping = synonym_map({"Depends On": ["needs", "Relies-On"]})
    assert mapping == {"depends_on": "depends_on", "needs": "depends_on", "relies_on": "depends_on"}


@pytest.mark.parametrize(
    ("groups", "fragment"),
    [
        ({"depends_on": ["uses"], "owns": ["uses"]}, "is a synonym of both"),
        ({"depends_on": ["owns"], "owns": ["maintains"]}, "is a synonym of both"),
        ({"depends_on": "uses"}, "must be a list"),
        ({"depends_on": ["--"]}, "has no letters or digits"),
        ({"": ["uses"]}, "has no letters or digits"),
    ],
)
def test_synonym_map_rejects_ambiguous_groups(groups: dict[str, list[str]], fragment: str) -> None:
    with pytest.raises(UsageError) as caught:
        synonym_map(groups)
    assert caught.value.code == "invalid_input"
    assert fragment in caught.value.message
    assert caught.value.hint


def test_merge_lets_the_override_win() -> None:
    merged = merge_synonyms(DEFAULT_SYNONYMS, synonym_map({"uses": ["utilises"]}))
    assert normalize_predicate("uses", merged) == "uses"
    assert normalize_predicate("utilises", merged) == "uses"
    assert normalize_predicate("requires", merged) == "depends_on"  # untouched


def test_merge_follows_a_renamed_canonical_form() -> None:
    merged = merge_synonyms(DEFAULT_SYNONYMS, synonym_map({"requires": ["depends_on"]}))
    assert normalize_predicate("uses", merged) == "requires"
    assert normalize_predicate("depends on", merged) == "requires"
    assert normalize_predicate("requires", merged) == "requires"


def test_merge_makes_every_target_a_fixed_point() -> None:
    merged = merge_synonyms({}, {"uses": "depends_on"})
    assert merged == {"uses": "depends_on", "depends_on": "depends_on"}


# --- match_known ------------------------------------------------------------------------------


def test_a_typo_matches_the_known_predicate() -> None:
    assert match_known("depnds_on", ["owns", "depends_on"]) == "depends_on"


def test_a_known_predicate_matches_itself() -> None:
    assert match_known("owns", ["owns", "own"]) == "owns"


def test_separators_alone_do_not_make_a_new_predicate() -> None:
    assert match_known("dependson", ["depends_on"]) == "depends_on"


def test_the_threshold_is_strict() -> None:
    score = JaroWinkler.normalized_similarity("depnds_on", "depends_on")
    assert score == pytest.approx(0.9767, abs=1e-4)
    assert match_known("depnds_on", ["depends_on"], threshold=score) is None
    assert match_known("depnds_on", ["depends_on"], threshold=score - 1e-9) == "depends_on"


@pytest.mark.parametrize(
    ("left", "right", "jaro_winkler"),
    [
        # Every pair scores above the 0.85 threshold; only the typo rule keeps them apart.
        ("created_by", "created_at", 0.9200),
        ("reports_to", "reports_on", 0.9600),
        ("located_in", "located_at", 0.9200),
        ("parent_of", "part_of", 0.9481),
        ("born_in", "born_on", 0.9429),
        ("reads", "leads", 0.8667),
        ("works_at", "works_for", 0.8833),
    ],
)
def test_different_relations_never_fuzzy_match(left: str, right: str, jaro_winkler: float) -> None:
    assert JaroWinkler.normalized_similarity(left, right) == pytest.approx(jaro_winkler, abs=1e-4)
    assert match_known(left, [right]) is None
    assert match_known(right, [left]) is None


def test_a_typo_in_a_short_word_is_not_corrected() -> None:
    # "owns" and "owes" are one edit apart and different relations: short words match exactly.
    assert match_known("owes", ["owns"]) is None


def test_a_typo_with_digits_is_not_corrected() -> None:
    assert match_known("version2_of", ["version3_of"]) is None


def test_the_highest_score_wins_over_the_alphabet() -> None:
    known = ["abcdefgh", "mbcdefxh"]
    scores = {k: JaroWinkler.normalized_similarity("mbcdefgh", k) for k in known}
    assert scores["mbcdefxh"] > scores["abcdefgh"] > 0.85
    assert match_known("mbcdefgh", known) == "mbcdefxh"


def test_ties_go_to_the_alphabetically_first() -> None:
    # (A middle letter: a different last letter is never a typo.)
    assert match_known("abcdefgh", ["abcdefyh", "abcdefxh"]) == "abcdefxh"
    assert match_known("abcdefgh", ["abcdefxh", "abcdefyh"]) == "abcdefxh"


def test_nothing_known_matches_nothing() -> None:
    assert match_known("depends_on", []) is None
    assert match_known("", ["depends_on"]) is None


@pytest.mark.parametrize(
    ("new", "known"),
    [
        ("mem limit", "memory limit"),  # a clipped word
        ("max conns", "max connections"),  # clipped, in the plural
        ("cfg file", "config file"),  # the table's short form
        ("dest bucket", "destination bucket"),
        ("TLS cert expiry", "TLS certificate expiry"),
        ("latency budget p99", "p99 latency budget"),  # another order
        ("env", "environment"),  # the table alone, nothing else to vouch
    ],
)
def test_a_relation_spelled_with_a_short_form_is_placed_on_the_known_one(
    new: str, known: str
) -> None:
    assert match_known(normalize_predicate(new), [normalize_predicate(known)]) == (
        normalize_predicate(known)
    )
    assert match_known(normalize_predicate(known), [normalize_predicate(new)]) == (
        normalize_predicate(new)
    )


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("max input tokens", "max output tokens"),
        ("min replicas", "max replicas"),
        ("CPU request", "CPU limit"),
        ("host", "key store host"),
        ("firmware version", "bootloader version"),
        ("max retries", "max idle connections"),
        ("request timeout", "idle connection timeout"),
    ],
)
def test_two_relations_are_never_spelled_alike(left: str, right: str) -> None:
    assert not spelled_alike(normalize_predicate(left), normalize_predicate(right))
    assert match_known(normalize_predicate(left), [normalize_predicate(right)]) is None


def test_a_short_form_of_two_known_relations_places_on_neither() -> None:
    known = ["authentication_provider", "authorization_provider"]
    assert spelled_alike("auth_provider", known[0]) and spelled_alike("auth_provider", known[1])
    assert match_known("auth_provider", known) is None
    assert match_known("auth_provider", known[:1]) == known[0]


@pytest.mark.parametrize(
    ("noun", "phrase"),
    [("issuer", "issued by"), ("provider", "provided by"), ("operator", "operated by"),
     ("publisher", "published by"), ("lead", "led by")],
)  # fmt: skip
def test_a_role_noun_is_the_relation_of_its_agent_phrase(noun: str, phrase: str) -> None:
    assert match_known(normalize_predicate(noun), [normalize_predicate(phrase)]) == (
        normalize_predicate(phrase)
    )
    assert match_known(normalize_predicate(phrase), [normalize_predicate(noun)]) == noun


@pytest.mark.parametrize(
    ("noun", "phrase"),
    [("order", "ordered by"), ("filter", "filtered by"), ("tech lead", "led by")],
)
def test_a_noun_that_is_no_agent_or_names_one_role_of_several_is_not(
    noun: str, phrase: str
) -> None:
    assert match_known(normalize_predicate(noun), [normalize_predicate(phrase)]) is None


# --- properties -----------------------------------------------------------------------------

_predicates = (
    st.text(max_size=40)
    | st.sampled_from(
        ["dependsOn", "HTTPServer", "is an", "Relies-On", "owner's", "ǅemo", "ﬁle", "ß"]
    )
    | st.lists(
        st.sampled_from(
            [
                *("is", "has", "been", "the", "a", "not", "owned", "by", "in", "owner", "of"),
                *("uses", "maintianed", "written", "version", "_", "-", " "),
            ]
        ),
        max_size=6,
    ).map(" ".join)
)


@given(_predicates)
def test_normalize_predicate_is_idempotent(predicate: str) -> None:
    once = normalize_predicate(predicate)
    assert normalize_predicate(once) == once


@given(_predicates)
def test_a_shape_has_single_inner_separators(predicate: str) -> None:
    shape = predicate_shape(predicate)
    assert "__" not in shape
    assert not shape.startswith("_")
    assert not shape.endswith("_")
    assert shape == shape.casefold()


@given(st.dictionaries(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12)))
def test_merged_maps_stay_idempotent(override: dict[str, str]) -> None:
    groups = {canonical: [variant] for variant, canonical in override.items()}
    try:
        mapping = synonym_map(groups)
    except UsageError:
        return  # ambiguous or empty groups are rejected, which is the other half of the rule
    merged = merge_synonyms(DEFAULT_SYNONYMS, mapping)
    for form in [*merged, "uses", "requires", "owns"]:
        once = normalize_predicate(form, merged)
        assert normalize_predicate(once, merged) == once


# --- unplaced_neighbour --------------------------------------------------------------------


def scores(table: dict[str, float]) -> Callable[[str, Sequence[str]], list[float]]:
    """A similarity that looks the candidate's phrase up (pure logic: no model needed)."""

    def similarity(text: str, phrases: Sequence[str]) -> list[float]:
        assert text.startswith("X ")
        return [table[phrase] for phrase in phrases]

    return similarity


def test_the_closest_allowed_known_predicate_is_named() -> None:
    similarity = scores({"X located in Y": 0.9, "X created by Y": 0.95})
    found = unplaced_neighbour("situated_in", ["located_in", "created_by"], similarity)
    # created_by scores higher, but an agent phrase never rewords one that is not.
    assert found == ("located_in", 0.9)


def test_the_neighbour_threshold_is_strict() -> None:
    at = scores({"X located in Y": PREDICATE_EMBEDDING_THRESHOLD})
    assert unplaced_neighbour("situated_in", ["located_in"], at) is None
    above = scores({"X located in Y": PREDICATE_EMBEDDING_THRESHOLD + 1e-6})
    assert unplaced_neighbour("situated_in", ["located_in"], above) is not None


def test_a_known_or_empty_predicate_is_not_unplaced() -> None:
    def never(text: str, phrases: Sequence[str]) -> list[float]:
        raise AssertionError("no similarity is needed")

    assert unplaced_neighbour("located_in", ["located_in"], never) is None
    assert unplaced_neighbour("", ["located_in"], never) is None
    assert unplaced_neighbour("owns", ["owned_by"], never) is None  # only the inverse is known


def test_ties_go_to_the_alphabetically_first_and_nan_is_ignored() -> None:
    similarity = scores({"X beta in Y": 0.99, "X alpha in Y": 0.99, "X gamma in Y": float("nan")})
    known = ["gamma_in", "beta_in", "alpha_in"]
    assert unplaced_neighbour("zeta_in", known, similarity) == ("alpha_in", 0.99)
    assert unplaced_neighbour("zeta_in", ["gamma_in"], similarity) is None


def test_the_similarity_must_score_every_phrase() -> None:
    with pytest.raises(ValueError, match="1 scores for 2"):
        unplaced_neighbour("zeta_in", ["alpha_in", "beta_in"], lambda text, phrases: [0.9])


def test_the_phrase_embedded_is_the_relation_between_placeholders() -> None:
    assert predicate_phrase("located_in") == "X located in Y"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("owns", "owned_by"),  # an agent phrase against one that is not
        ("depends_on", "used_by"),
        ("created_by", "created_at"),  # one root, other prepositions
        ("reports_to", "reports_on"),
        ("depends_on", "dependency_of"),
        ("located_in", "location_of"),
        ("works_at", "works_on"),
        ("is_a", "has_a"),  # nothing but function words
        ("depends_on", "not_use"),  # a negation on one side only
        ("version2_of", "version3_of"),  # other numbers
        ("located_in", "located_in"),
    ],
)
def test_may_reword_refuses_what_no_score_may_join(left: str, right: str) -> None:
    assert not may_reword(left, right)
    assert not may_reword(right, left)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("situated_in", "located_in"),
        ("invented_by", "created_by"),
        ("utilizes", "depends_on"),
        ("dependent_on", "depends_on"),  # one root, the same preposition
    ],
)
def test_may_reword_lets_a_paraphrase_be_scored(left: str, right: str) -> None:
    assert may_reword(left, right)
    assert may_reword(right, left)


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("replica count", "replicas", True),
        ("number of replicas", "replica count", True),
        ("num replicas", "replicas", True),
        ("total number of shards", "shard count", True),
        ("process count", "processes", True),
        ("count of retries", "retries", True),
        ("instances count", "instance count", True),
        ("replica", "replica count", False),  # a member, not the count
        ("replicas", "workers", False),
        ("replicas", "shards", False),  # two bare plurals are never a count
        ("phone number", "phones", False),  # a trailing number counts nothing
        ("address", "address count", False),  # not a plural
        ("read replica count", "replicas", False),  # the words before the noun differ
    ],
)
def test_a_count_is_one_relation_however_written(left: str, right: str, same: bool) -> None:
    a, b = normalize_predicate(left), normalize_predicate(right)
    assert same_count(a, b) is same
    assert same_count(b, a) is same
    assert (match_known(a, [b]) == b) is same or a == b
    # Between two subjects too (a subject's own predicates are placed by match_known).
    assert one_relation(a, b) is same or a == b


def test_a_count_and_its_member_are_never_rewordings() -> None:
    assert not may_reword("replica_count", "replica")
    assert not may_reword("replica", "number_of_replicas")
    assert may_reword("node_count", "cluster_size")  # another noun: the score decides


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        ("reads from", True),
        ("is hosted on", True),
        ("calls payment gateway", True),
        ("emits events", True),
        ("affected", True),
        ("uses", True),
        ("log level", False),
        ("AWS region", False),
        ("default branch", False),
        ("status", False),
        ("address", False),
        ("speed limit", False),
        ("has", False),
    ],
)
def test_a_relation_by_verb_or_preposition_is_told_from_an_attribute(
    predicate: str, expected: bool
) -> None:
    assert relational(predicate) is expected


def test_a_predicate_as_worded_drops_auxiliaries_and_nothing_else() -> None:
    assert as_worded("is hosted on") == as_worded("Hosted_on") == ["hosted", "on"]
    assert as_worded("lives on") != as_worded("hosted on")


def test_a_place_is_told_by_the_last_preposition() -> None:
    assert all(placing(p) for p in ("runs on", "lives in", "is deployed to", "has depot in"))
    assert not any(placing(p) for p in ("translated into", "reads from", "used by", "log level"))
