"""Predicate normalization: shapes, synonym groups, typo matching that never merges relations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz.distance import JaroWinkler

from ferrex.errors import UsageError
from ferrex.rules.predicates import (
    DEFAULT_SYNONYM_GROUPS,
    DEFAULT_SYNONYMS,
    match_known,
    merge_synonyms,
    normalize_predicate,
    predicate_shape,
    synonym_map,
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


def test_inverse_relations_stay_apart() -> None:
    assert normalize_predicate("maintained by") != normalize_predicate("owns")
    assert normalize_predicate("employs") != normalize_predicate("works at")


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


# --- properties -----------------------------------------------------------------------------

_predicates = st.text(max_size=40) | st.sampled_from(
    ["dependsOn", "HTTPServer", "is an", "Relies-On", "owner's", "ǅemo", "ﬁle", "ß"]
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
