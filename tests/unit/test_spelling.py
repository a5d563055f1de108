"""The nearest declared name for a misspelt argument."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ferrex.rules.spelling import did_you_mean, edit_distance, nearest

STORE = ["content", "context", "subject", "predicate", "object", "name", "steps", "entities",
         "supersedes", "source", "confidence", "namespace", "valid_from", "visibility"]  # fmt: skip


def test_a_swap_is_one_edit() -> None:
    assert edit_distance("contnet", "content") == 1
    assert edit_distance("contnet", "context") == 2
    assert edit_distance("", "abc") == 3
    assert edit_distance("kitten", "sitting") == 3


def test_nearest_prefers_the_transposition() -> None:
    assert nearest("contnet", STORE) == "content"
    assert nearest("Subjcet", STORE) == "subject"
    assert nearest("namespcae", STORE) == "namespace"
    assert nearest("valid_form", STORE) == "valid_from"


def test_nothing_close_gives_no_hint() -> None:
    assert nearest("zzzz", STORE) is None
    assert did_you_mean("banana", STORE) == ""
    assert did_you_mean("entites", STORE) == " (did you mean entities?)"


@given(st.text(max_size=8), st.text(max_size=8))
def test_distance_is_symmetric_and_zero_only_for_equal(a: str, b: str) -> None:
    assert edit_distance(a, b) == edit_distance(b, a)
    assert (edit_distance(a, b) == 0) == (a == b)
