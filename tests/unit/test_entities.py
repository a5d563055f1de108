"""Entity resolution: the tiers in order, the guards on fuzzy matches, and tie-breaking."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz.distance import JaroWinkler

from ferrex.rules.entities import Candidate, Resolution, normalize_entity, resolve_entity


def known(entity_id: str, name: str) -> Candidate:
    return Candidate(entity_id, name, normalize_entity(name))


def jaro_winkler(left: str, right: str) -> float:
    return JaroWinkler.normalized_similarity(normalize_entity(left), normalize_entity(right))


def no_embeddings(name: str, candidates: Sequence[Candidate]) -> Sequence[float]:
    raise AssertionError("the embedding tier must not run when an earlier tier matched")


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("Tokio", "tokio"),
        ("  Tokio   Runtime ", "tokio runtime"),
        ("tokio-runtime", "tokio runtime"),
        ("tokio_runtime", "tokio runtime"),
        ("Node.js", "node js"),
        ("a\t-_. b", "a b"),
        ("Straße", "strasse"),
        ("\uff34\uff2f\uff2b\uff29\uff2f", "tokio"),  # fullwidth TOKIO, folded by NFKC
        ("C++", "c++"),
        ("C#", "c#"),
        ("...", ""),
    ],
)
def test_normalize_entity(name: str, normalized: str) -> None:
    assert normalize_entity(name) == normalized


@given(st.text(max_size=40))
def test_normalize_entity_is_idempotent(name: str) -> None:
    once = normalize_entity(name)
    assert normalize_entity(once) == once


# --- the tiers -------------------------------------------------------------------------------


def test_the_same_spelling_is_exact() -> None:
    result = resolve_entity("Tokio", [known("e1", "Tokio")], embedding_scores=no_embeddings)
    assert result == Resolution("exact", "e1", 1.0, "Tokio")


def test_exact_beats_a_normalized_match_of_another_entity() -> None:
    candidates = [known("e1", "tokio"), known("e2", "Tokio")]
    assert resolve_entity("Tokio", candidates).entity_id == "e2"


def test_case_and_separators_are_a_normalized_match() -> None:
    result = resolve_entity("TOKIO-Runtime", [known("e1", "tokio runtime")])
    assert result == Resolution("normalized", "e1", 1.0, "tokio runtime")


def test_spacing_alone_is_a_normalized_match() -> None:
    assert resolve_entity("NodeJS", [known("e1", "Node.js")]).kind == "normalized"
    assert resolve_entity("Node.js", [known("e1", "nodejs")]).kind == "normalized"


def test_the_stored_normalized_form_is_what_is_compared() -> None:
    # The read model's normalized column decides, not a recomputation of the name.
    result = resolve_entity("tokio", [Candidate("e1", "Tokio (rt)", "tokio")])
    assert result == Resolution("normalized", "e1", 1.0, "Tokio (rt)")


def test_nothing_known_is_new() -> None:
    assert resolve_entity("tokio", []) == Resolution("new", None, 0.0, None)


def test_a_name_without_letters_is_new_unless_spelled_exactly() -> None:
    assert resolve_entity("...", [known("e1", "-")]).kind == "new"
    assert resolve_entity("...", [known("e1", "...")]).kind == "exact"


# --- fuzzy: the guards --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right"), [("tokio", "tokio runtime"), ("tokio runtime", "tokio")]
)
def test_a_descriptor_word_does_not_make_a_new_entity(left: str, right: str) -> None:
    score = jaro_winkler(left, right)
    assert score == pytest.approx(0.8769, abs=1e-4)
    result = resolve_entity(left, [known("e1", right)])
    assert result.kind == "fuzzy"
    assert result.entity_id == "e1"
    assert result.score == pytest.approx(score)
    assert result.matched == right


@pytest.mark.parametrize(
    ("left", "right"),
    [("Redis", "redis server"), ("Acme", "Acme Inc."), ("postgres", "postgres database")],
)
def test_more_descriptor_extensions(left: str, right: str) -> None:
    assert resolve_entity(left, [known("e1", right)]).kind == "fuzzy"
    assert resolve_entity(right, [known("e1", left)]).kind == "fuzzy"


@pytest.mark.parametrize(
    ("left", "right", "score"),
    [
        # Above the 0.85 threshold, and yet different things: the guards must refuse them.
        ("redis", "redash", 0.8756),
        ("mysql", "mssql", 0.8800),
        ("tokio", "tokyo", 0.9067),
        ("openai", "openapi", 0.9714),
        ("graphql", "graphiql", 0.9750),
        ("react", "react native", 0.8833),
        ("kafka", "kafka streams", 0.8769),
        ("rust", "rust analyzer", 0.8615),
        ("redis", "redis cluster", 0.8769),
        ("python 2", "python 3", 0.9500),
        ("python", "python3", 0.9714),
    ],
)
def test_different_things_do_not_merge_in_either_direction(
    left: str, right: str, score: float
) -> None:
    assert jaro_winkler(left, right) == pytest.approx(score, abs=1e-4)
    assert resolve_entity(left, [known("e1", right)]).kind == "new"
    assert resolve_entity(right, [known("e1", left)]).kind == "new"


@pytest.mark.parametrize(
    ("typo", "name"),
    [("kuberentes", "kubernetes"), ("postgressql", "postgresql"), ("apache kafak", "apache kafak")],
)
def test_a_typo_in_a_long_name_is_corrected(typo: str, name: str) -> None:
    result = resolve_entity(typo, [known("e1", name)])
    assert result.entity_id == "e1"


def test_a_typo_in_a_short_word_is_not() -> None:
    assert resolve_entity("kafak", [known("e1", "kafka")]).kind == "new"


def test_the_fuzzy_threshold_is_strict() -> None:
    score = jaro_winkler("kuberentes", "kubernetes")
    candidates = [known("e1", "kubernetes")]
    assert resolve_entity("kuberentes", candidates, fuzzy_threshold=score).kind == "new"
    just_below = resolve_entity("kuberentes", candidates, fuzzy_threshold=score - 1e-9)
    assert just_below.kind == "fuzzy"


def test_the_best_fuzzy_score_wins() -> None:
    candidates = [known("e1", "tokio runtime"), known("e2", "tokio crate")]
    scores = [jaro_winkler("tokio", c.name) for c in candidates]
    assert scores[1] > scores[0] > 0.85
    assert resolve_entity("tokio", candidates).entity_id == "e2"


def test_fuzzy_ties_go_to_the_smallest_entity_id() -> None:
    candidates = [known("e9", "tokio"), known("e3", "tokio"), known("e5", "tokio")]
    result = resolve_entity("Tokio Runtime", candidates, embedding_scores=no_embeddings)
    assert (result.kind, result.entity_id) == ("fuzzy", "e3")


# --- embedding -------------------------------------------------------------------------------


def test_the_embedding_tier_runs_last_with_the_name_and_every_candidate() -> None:
    candidates = [known("e1", "k8s"), known("e2", "docker")]
    asked: list[tuple[str, Sequence[Candidate]]] = []

    def embedding_scores(name: str, given: Sequence[Candidate]) -> Sequence[float]:
        asked.append((name, given))
        return [0.93, 0.40]

    result = resolve_entity("Kubernetes", candidates, embedding_scores=embedding_scores)
    assert result == Resolution("embedding", "e1", 0.93, "k8s")
    assert asked == [("Kubernetes", candidates)]


def test_the_embedding_threshold_is_strict() -> None:
    candidates = [known("e1", "k8s")]
    at = resolve_entity("kubernetes", candidates, embedding_scores=lambda n, c: [0.92])
    above = resolve_entity("kubernetes", candidates, embedding_scores=lambda n, c: [0.9201])
    assert at.kind == "new"
    assert above.kind == "embedding"


def test_embedding_ties_go_to_the_smallest_entity_id() -> None:
    candidates = [known("e7", "k8s"), known("e2", "kube")]
    result = resolve_entity("kubernetes", candidates, embedding_scores=lambda n, c: [0.95, 0.95])
    assert result.entity_id == "e2"


def test_embeddings_never_merge_different_numbers() -> None:
    candidates = [known("e1", "python 3")]
    result = resolve_entity("python 2", candidates, embedding_scores=lambda n, c: [0.99])
    assert result.kind == "new"
    same = resolve_entity("python 3.0", candidates, embedding_scores=lambda n, c: [0.99])
    assert same.kind == "new"  # 3.0 is not 3: the numbers are compared as written


def test_a_number_on_one_side_only_is_no_objection_to_an_embedding_match() -> None:
    result = resolve_entity(
        "kubernetes", [known("e1", "k8s")], embedding_scores=lambda n, c: [0.95]
    )
    assert result.kind == "embedding"


def test_a_nan_embedding_score_is_ignored() -> None:
    candidates = [known("e1", "k8s"), known("e2", "kube")]
    result = resolve_entity(
        "kubernetes", candidates, embedding_scores=lambda n, c: [float("nan"), 0.93]
    )
    assert result.entity_id == "e2"


def test_embedding_scores_must_match_the_candidates() -> None:
    with pytest.raises(ValueError, match="1 scores for 2"):
        resolve_entity(
            "kubernetes",
            [known("e1", "k8s"), known("e2", "kube")],
            embedding_scores=lambda n, c: [0.5],
        )


def test_the_embedding_model_is_not_asked_without_candidates() -> None:
    assert resolve_entity("kubernetes", [], embedding_scores=no_embeddings).kind == "new"


# --- properties -------------------------------------------------------------------------------


@given(
    st.text(max_size=20),
    st.lists(st.sampled_from(["tokio", "Tokio", "redis", "redash", "tokio runtime"]), max_size=6),
)
def test_resolution_is_order_independent(name: str, names: list[str]) -> None:
    candidates = [known(f"e{i}", n) for i, n in enumerate(names)]
    assert resolve_entity(name, candidates) == resolve_entity(name, candidates[::-1])


# --- product suffixes, cores and articles ----------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("Postgres", "PostgreSQL"),  # sql after a final s is ql
        ("Postgres", "PostgreSQL database"),
        ("Mongo", "MongoDB"),
        ("mongo", "mongo db"),
        ("Node", "Node.js"),
        ("React", "ReactJS"),
        ("Vue", "Vue.js"),
        ("Timescale", "TimescaleDB"),
        ("Tokio", "the tokio runtime"),
        ("Redis", "the redis database"),
    ],
)
def test_a_product_suffix_or_descriptor_does_not_make_a_new_entity(left: str, right: str) -> None:
    assert resolve_entity(left, [known("e1", right)]).kind == "fuzzy"
    assert resolve_entity(right, [known("e1", left)]).kind == "fuzzy"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("graph", "graphql"),  # ql alone is no suffix
        ("spark", "spark sql"),  # sql as a word of its own is a module
        ("my", "mysql"),  # too short a base
        ("ms", "mssql"),
        ("java", "javascript"),
        ("vue", "vuex"),
        ("mongo", "mongoose"),
        ("postgres", "postgis"),
        ("postgres", "postgres 16"),
        ("the redis", "redis cluster"),
    ],
)
def test_what_only_looks_like_a_suffix_stays_apart(left: str, right: str) -> None:
    assert resolve_entity(left, [known("e1", right)]).kind == "new"
    assert resolve_entity(right, [known("e1", left)]).kind == "new"


def test_an_article_alone_is_not_a_name() -> None:
    assert resolve_entity("the", [known("e1", "a")]).kind == "new"
