"""Recall's pure ranking steps: score normalisation, fusion, episode context; text parts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.rules.fusion import (
    Leg,
    adaptive_dense_share,
    bm25_confidence,
    context_shares,
    fuse,
    keep_top,
    lend_to_neighbours,
    lifted_dense_share,
    normalized,
    opens_with_speaker,
)
from projections.documents import text_parts
from projections.vectors import Hit


def hits(*scored: tuple[str, float]) -> list[Hit]:
    return [Hit(f"p-{memory_id}", score, {"memory_id": memory_id}) for memory_id, score in scored]


def leg(*scored: tuple[str, float], asked: int | None = None) -> Leg:
    return Leg.of(hits(*scored), len(scored) if asked is None else asked)


def test_a_cut_off_leg_is_normalised_from_its_last_to_its_best_point() -> None:
    cut = Leg.of(hits(("a", 0.8), ("b", 0.6), ("c", 0.4)), asked=3)
    assert cut.floor == 0.4
    assert normalized([0.8, 0.6, 0.4], cut.floor) == pytest.approx([1.0, 0.5, 0.0])


def test_a_leg_that_returned_fewer_than_asked_has_a_floor_of_zero() -> None:
    # BM25 returns only memories sharing a term: the rest score 0, not "the last one".
    assert Leg.of(hits(("a", 4.0), ("b", 2.0)), asked=40).floor == 0.0
    assert Leg.of(hits(("a", 0.5), ("b", -0.5)), asked=40).floor == -0.5
    assert Leg.of([], asked=40) == Leg({}, 0.0)
    assert normalized([4.0, 2.0], 0.0) == pytest.approx([1.0, 0.5])
    assert normalized([0.7, 0.7], 0.7) == [1.0, 1.0]
    assert normalized([], 0.0) == []


def test_a_memory_is_ranked_by_its_best_part_and_the_floor_by_the_last_point() -> None:
    parts = Leg.of(hits(("a", 0.9), ("b", 0.8), ("a", 0.7), ("c", 0.6)), asked=4)
    assert list(parts.best) == ["a", "b", "c"] and parts.best["a"].score == 0.9
    assert parts.floor == 0.6  # four points asked, four returned: cut off


def test_fusion_is_a_convex_combination_of_normalised_scores() -> None:
    dense = leg(("a", 1.0), ("b", 0.75), ("c", 0.5))
    bm25 = leg(("c", 10.0), ("d", 5.0), asked=40)
    fused = dict(fuse([dense, bm25], (0.5, 0.5)))
    assert fused == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.5, "d": 0.25})
    # Ties are broken by id, best first.
    assert [m for m, _ in fuse([dense, bm25], (0.5, 0.5))] == ["a", "c", "b", "d"]


def test_fusion_weights_shift_the_balance_between_legs() -> None:
    dense = leg(("a", 0.9), ("b", 0.1))
    bm25 = leg(("b", 9.0), ("a", 1.0))
    assert fuse([dense, bm25], (0.7, 0.3))[0][0] == "a"
    assert fuse([dense, bm25], (0.3, 0.7))[0][0] == "b"
    with pytest.raises(ValueError):
        fuse([dense, bm25], (1.0,))


def test_a_memory_found_by_both_legs_beats_one_found_by_one() -> None:
    dense = leg(("both", 0.8), ("dense-only", 0.81), ("x", 0.2))
    bm25 = leg(("both", 3.0), ("bm25-only", 3.1), ("y", 0.5))
    assert fuse([dense, bm25], (0.5, 0.5))[0][0] == "both"


def test_neighbours_get_a_share_of_the_best_lender_and_keep_their_own() -> None:
    fused = [("hit", 1.0), ("other", 0.4), ("near", 0.1)]
    neighbours = {"hit": ["near", "new"], "other": ["near"], "near": ["hit"]}
    ranking, loans = lend_to_neighbours(fused, neighbours, share=0.5)
    scores = dict(ranking)
    assert scores["near"] == pytest.approx(0.1 + 0.5)  # the larger loan, from "hit"
    assert scores["new"] == pytest.approx(0.5)  # not a candidate before: joins
    assert scores["hit"] == pytest.approx(1.0 + 0.05)
    assert scores["other"] == pytest.approx(0.4)
    assert loans["near"] == ("hit", pytest.approx(0.5))
    assert [m for m, _ in ranking] == ["hit", "near", "new", "other"]


@pytest.mark.parametrize(
    ("text", "labelled"),
    [
        ("Caroline: I went to the support group yesterday", True),
        ("Dr. Lee: take two a day", True),
        ("user: how do I rotate the key?", True),
        ("I went to the support group yesterday", False),
        ("Deploy at 10:30 sharp", False),  # a colon inside a sentence is no label
        ("Note: the staging db is full", True),  # a label-like opening counts as one
        ("Ticket INC-4417:", False),  # nothing said after the colon
    ],
)
def test_a_turn_opens_with_a_speakers_label(text: str, labelled: bool) -> None:
    assert opens_with_speaker(text) is labelled


def test_a_labelled_turn_lends_the_dialogue_share_and_a_note_the_note_share() -> None:
    texts = {"q": "Sam: who booked the venue?", "n": "Booked the barn for Friday"}
    assert context_shares(texts, dialogue=0.5, note=0.1) == {"q": 0.5, "n": 0.1}
    fused = [("q", 1.0), ("n", 0.8)]
    neighbours = {"q": ["a"], "n": ["b"]}
    ranking, loans = lend_to_neighbours(fused, neighbours, 0.5, shares={"n": 0.1})
    assert loans == {"a": ("q", pytest.approx(0.5)), "b": ("n", pytest.approx(0.08))}
    # A lender missing from shares lends the common share.
    _, same = lend_to_neighbours(fused, neighbours, 0.5, shares={})
    assert same == lend_to_neighbours(fused, neighbours, 0.5)[1]
    assert dict(ranking)["b"] == pytest.approx(0.08)


def test_without_neighbours_the_ranking_is_unchanged() -> None:
    fused = [("a", 0.9), ("b", 0.3)]
    assert lend_to_neighbours(fused, {}, share=0.5) == (fused, {})


def words_fit(limit: int):  # type: ignore[no-untyped-def]
    return lambda text: len(text.split()) <= limit


def test_a_text_that_fits_is_one_part() -> None:
    assert text_parts("Short. Text.", words_fit(5)) == ["Short. Text."]


def test_long_text_is_packed_into_whole_sentences() -> None:
    text = "One two three. Four five! Six seven eight? Nine."
    assert text_parts(text, words_fit(5)) == ["One two three. Four five!", "Six seven eight? Nine."]


def test_a_sentence_longer_than_the_window_starts_a_part_and_is_cut_between_words() -> None:
    text = "Intro here. a b c d e f g h i j k l. Outro."
    assert text_parts(text, words_fit(5)) == [
        "Intro here.",
        "a b c d e",
        "f g h i j",
        "k l. Outro.",
    ]


@given(st.lists(st.text(alphabet="abc .!?\n", min_size=1, max_size=30), min_size=1, max_size=20))
def test_parts_fit_and_keep_every_word_in_order(chunks: list[str]) -> None:
    text = " ".join(chunks).strip()
    if not text:
        return
    parts = text_parts(text, words_fit(4))
    assert all(len(p.split()) <= 4 or len(p.split()) == 1 for p in parts)
    assert " ".join(parts).split() == text.split()


def test_a_negative_score_lends_nothing() -> None:
    ranking, loans = lend_to_neighbours([("a", 0.2), ("b", -0.4)], {"b": ["a", "c"]}, 0.5)
    assert dict(ranking) == {"a": 0.2, "b": -0.4} and loans == {}


def test_bm25_confidence_is_the_gap_between_its_best_two_scores() -> None:
    assert bm25_confidence([8.0, 2.0, 1.0]) == pytest.approx(0.75)
    assert bm25_confidence([5.0, 5.0]) == 0.0  # a tie: the words cannot choose
    assert bm25_confidence([3.0]) == 1.0  # one memory shares any word at all
    assert bm25_confidence([]) == 0.0
    assert bm25_confidence([0.0, 0.0]) == 0.0


@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=8))
def test_bm25_confidence_stays_in_the_unit_interval(scores: list[float]) -> None:
    assert 0.0 <= bm25_confidence(sorted(scores, reverse=True)) <= 1.0


def test_the_dense_share_falls_as_the_bm25_leg_grows_sure() -> None:
    assert adaptive_dense_share(0.4, 0.0, 0.8) == pytest.approx(0.4)
    assert adaptive_dense_share(0.4, 1.0, 0.8) == pytest.approx(0.08)
    assert adaptive_dense_share(0.4, 0.5, 0.0) == pytest.approx(0.4)  # pull 0: fixed share
    sure = [adaptive_dense_share(0.4, c / 10, 0.5) for c in range(11)]
    assert sure == sorted(sure, reverse=True)
    with pytest.raises(ValueError, match="pull"):
        adaptive_dense_share(0.4, 0.5, 1.5)


def test_a_sure_bm25_leg_keeps_its_top_under_adaptive_fusion() -> None:
    bm25 = leg(("exact", 9.0), ("near", 1.0), ("far", 0.5))
    dense = leg(("near", 0.9), ("exact", 0.6), ("far", 0.55), asked=3)
    fixed = fuse([dense, bm25], (0.6, 0.4))
    assert fixed[0][0] == "near"
    share = adaptive_dense_share(0.6, bm25_confidence([9.0, 1.0, 0.5]), 1.0)
    assert fuse([dense, bm25], (share, 1 - share))[0][0] == "exact"


def test_the_dense_share_rises_only_when_the_lexical_best_holds_under_half_the_question() -> None:
    assert lifted_dense_share(0.4, 0.5, 1.0) == pytest.approx(0.4)  # half: a real match
    assert lifted_dense_share(0.4, 0.9, 1.0) == pytest.approx(0.4)
    assert lifted_dense_share(0.4, 0.25, 0.5) == pytest.approx(0.4 + 0.5 * 0.5 * 0.6)
    assert lifted_dense_share(0.4, 0.0, 1.0) == pytest.approx(1.0)
    assert lifted_dense_share(0.4, 0.1, 0.0) == pytest.approx(0.4)  # off
    # A note the words of a paraphrase miss, which the dense leg ranks first, is no longer
    # outranked by one that shares a word of the question in passing.
    bm25 = leg(("passing", 4.0), ("other", 3.0), ("far", 0.5))
    dense = leg(("meant", 0.62), ("other", 0.40), ("passing", 0.30), ("far", 0.2), asked=4)
    assert fuse([dense, bm25], (0.4, 0.6))[0][0] != "meant"
    share = lifted_dense_share(0.4, 0.2, 0.5)
    assert fuse([dense, bm25], (share, 1 - share))[0][0] == "meant"
    for bad in ((1.2, 0.5, 0.5), (0.4, -0.1, 0.5), (0.4, 0.5, 1.5)):
        with pytest.raises(ValueError):
            lifted_dense_share(*bad)


def test_a_loan_below_the_lender_never_lifts_a_neighbour_above_it() -> None:
    fused = [("q", 1.0), ("a", 0.8), ("x", 0.9)]
    free, _ = lend_to_neighbours(fused, {"q": ["a"]}, 0.5)
    assert free[0] == ("a", pytest.approx(1.3))
    capped, loans = lend_to_neighbours(fused, {"q": ["a"]}, 0.5, below_lender=True)
    assert [m for m, _ in capped] == ["q", "a", "x"]
    assert loans["a"][0] == "q" and loans["a"][1] < 0.5
    # A newcomer joins just below the lender; one already above keeps its own score.
    joined, _ = lend_to_neighbours([("q", 1.0), ("z", 2.0)], {"q": ["n", "z"]}, 0.5, True)
    assert [m for m, _ in joined] == ["z", "q", "n"]
    assert dict(joined)["z"] == 2.0


def test_the_top_guard_moves_the_lexical_best_first_and_keeps_the_rest_in_order() -> None:
    ranking = [(0.9, "a"), (0.8, "b"), (0.7, "c"), (0.6, "d")]
    assert keep_top(ranking, lambda x: x[1], "c") == [(0.7, "c"), (0.9, "a"), (0.8, "b"),
                                                      (0.6, "d")]  # fmt: skip
    assert keep_top(ranking, lambda x: x[1], "a") == ranking
    # Not among the candidates (held back, or no lexical match at all): nothing moves.
    assert keep_top(ranking, lambda x: x[1], "z") == ranking
    assert keep_top(ranking, lambda x: x[1], None) == ranking
    assert keep_top([], lambda x: x, "a") == []


@given(st.lists(st.sampled_from("abcdefgh"), unique=True), st.sampled_from("abcdefgh"))
def test_the_top_guard_is_a_permutation_with_the_top_first(ids: list[str], top: str) -> None:
    guarded = keep_top(ids, lambda x: x, top)
    assert sorted(guarded) == sorted(ids)
    assert guarded[0] == top if top in ids else guarded == ids
    assert [i for i in guarded if i != top] == [i for i in ids if i != top]
