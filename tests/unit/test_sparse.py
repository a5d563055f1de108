"""BM25 sparse vectors: the recipe, identifiers, determinism, and parity with Qdrant's own."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.models import sparse
from ferrex.models.sparse import (
    Bm25Encoder,
    SparseVector,
    encode_document,
    encode_query,
    token_index,
)


def _dot(query: SparseVector, document: SparseVector) -> float:
    weights = document.as_dict()
    return sum(value * weights.get(index, 0.0) for index, value in query.as_dict().items())


def _ids(*tokens: str) -> set[int]:
    return {token_index(token) for token in tokens}


def test_same_text_gives_the_same_vector_every_time() -> None:
    text = "Deploy INC-90312 to prod-eu after the v2.3.1 release; ping @ops."
    first = encode_document(text)
    assert first == encode_document(text)
    assert first == Bm25Encoder().encode_document(text)
    assert encode_query(text) == encode_query(text)


def test_token_index_is_the_absolute_signed_murmur3_hash() -> None:
    # Indices Qdrant Edge's Bm25 gives these stems (MurmurHash3 x86_32, seed 0, signed, abs).
    assert token_index("") == 0
    assert token_index("cat") == 1751422759
    assert token_index("run") == 243905464


def test_stop_words_are_dropped() -> None:
    assert sparse.word_tokens("The cat and the hat are on it") == ["cat", "hat"]
    assert encode_document("the and of is it") == SparseVector((), ())


def test_words_are_stemmed_so_inflections_match() -> None:
    assert sparse.word_tokens("running runs") == ["run", "run"]
    document = encode_document("The organizations were running meetings")
    query = encode_query("organization meeting run")
    assert set(query.indices) <= set(document.indices)


def test_punctuation_and_underscore_split_words() -> None:
    assert sparse.word_tokens("snake_case, CamelCase!") == ["snake", "case", "camelcas"]


@pytest.mark.parametrize(
    ("text", "identifier"),
    [
        ("Incident INC-90312 reopened", "inc-90312"),
        ("Release v2.3.1.", "v2.3.1"),
        ("see src/app/main.py for details", "src/app/main.py"),
        ("see src/app/main.py for details", "main.py"),
        ("merged PR #260 today", "#260"),
        ("call parse_config_file()", "parse_config_file"),
        ("mail ops@example.com", "ops@example.com"),
    ],
)
def test_identifiers_are_kept_whole(text: str, identifier: str) -> None:
    assert identifier in sparse.identifier_tokens(text)
    assert token_index(identifier) in encode_document(text).indices
    assert token_index(identifier) in encode_query(identifier).indices


def test_identifier_tokens_are_neither_stemmed_nor_stop_words() -> None:
    # "a" is a stop word and "running" would stem to "run"; inside an identifier both survive.
    assert sparse.identifier_tokens("A-1 running-tests") == ["a-1", "running-tests"]


def test_plain_runs_with_digits_stay_whole_as_words() -> None:
    assert "e1234" in sparse.word_tokens("error E1234 again")
    assert sparse.identifier_tokens("error E1234 again") == []


def test_a_trailing_joiner_is_not_part_of_an_identifier() -> None:
    assert sparse.identifier_tokens("shipped v2.3.1. Then INC-1-") == ["v2.3.1", "inc-1"]


def test_path_segments_that_are_not_identifiers_are_not_emitted() -> None:
    assert sparse.identifier_tokens("https://example.com/a") == [
        "https://example.com/a",
        "example.com",
    ]


def test_exact_identifier_query_prefers_its_own_document() -> None:
    exact = encode_document("Outage INC-90312: the payment queue stalled")
    neighbour = encode_document("Outage INC-90313: the payment queue stalled")
    query = encode_query("INC-90312")
    assert _dot(query, exact) > _dot(query, neighbour)
    # The identifier token itself is what separates them: it is absent from the neighbour.
    assert token_index("inc-90312") not in neighbour.indices
    assert token_index("inc-90313") not in exact.indices


@pytest.mark.parametrize(
    "identifier", ["INC-90312", "E1234", "v2.3.1", "src/app/main.py", "PR #260"]
)
def test_identifier_queries_match_every_token_of_their_document(identifier: str) -> None:
    document = encode_document(f"The fix for {identifier} landed yesterday.")
    query = encode_query(identifier)
    assert len(query) > 0
    assert set(query.indices) <= set(document.indices)


def test_query_and_document_sides_produce_the_same_tokens() -> None:
    text = "Rotate the API keys for billing-svc before v4.0; see docs/security.md"
    assert set(encode_query(text).indices) == set(encode_document(text).indices)


def test_empty_text_gives_an_empty_vector() -> None:
    assert encode_document("") == SparseVector((), ())
    assert encode_query("") == SparseVector((), ())
    assert encode_query("  \n\t ") == SparseVector((), ())


def test_query_weights_are_one_per_distinct_token() -> None:
    query = encode_query("cat cat cat dog")
    assert query.indices == tuple(sorted(_ids("cat", "dog")))
    assert query.values == (1.0, 1.0)


def test_document_weights_follow_the_bm25_formula() -> None:
    encoder = Bm25Encoder(avg_doc_len=10.0)
    document = encoder.encode_document("cat cat dog")  # |d| = 3: cat twice, dog once
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 10.0)
    expected = {
        token_index("cat"): 2 * 2.2 / (2 + norm),
        token_index("dog"): 1 * 2.2 / (1 + norm),
    }
    assert document.as_dict() == pytest.approx(expected)


def test_longer_documents_weigh_each_term_less() -> None:
    short = encode_document("kubernetes upgrade")
    long = encode_document("kubernetes upgrade " + "planning review notes meeting " * 5)
    kubernetes = token_index("kubernet")
    assert short.as_dict()[kubernetes] > long.as_dict()[kubernetes]


def test_identity_names_every_parameter_that_shapes_the_weights() -> None:
    assert Bm25Encoder().identity == "bm25-v1;k1=1.2;b=0.75;avgdl=32"
    assert Bm25Encoder(avg_doc_len=256).identity != Bm25Encoder().identity


@pytest.mark.parametrize("kwargs", [{"avg_doc_len": 0.0}, {"k1": -1.0}, {"b": 1.5}])
def test_invalid_parameters_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Bm25Encoder(**kwargs)


@given(st.text(max_size=200))
def test_any_text_gives_a_well_formed_vector(text: str) -> None:
    document = encode_document(text)
    query = encode_query(text)
    assert list(document.indices) == sorted(set(document.indices))
    assert all(0 <= index < 2**32 for index in document.indices)
    assert all(value > 0 and math.isfinite(value) for value in document.values)
    assert set(query.indices) == set(document.indices)
    assert set(query.values) <= {1.0}


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown foxes were jumping over the lazy dogs",
        "Organizations kept running their weekly meetings, didn't they? Yes: twice!",
        "Naïve café owners in Zürich prefer strong espresso at 7 am",
        "it is what it is",
        "",
    ],
)
def test_without_identifiers_vectors_equal_qdrant_edge_bm25(text: str) -> None:
    from qdrant_edge import Bm25, Bm25Config

    assert sparse.identifier_tokens(text) == []
    qdrant = Bm25(Bm25Config(avg_len=sparse.DEFAULT_AVG_DOC_LEN))
    ours = encode_document(text)
    theirs = qdrant.embed_document(text)
    assert list(ours.indices) == list(theirs.indices)
    assert list(ours.values) == pytest.approx(list(theirs.values), rel=1e-6)
    assert list(encode_query(text).indices) == list(qdrant.embed_query(text).indices)


def test_with_identifiers_ferrex_adds_tokens_to_qdrants() -> None:
    from qdrant_edge import Bm25

    text = "INC-90312 broke src/app/main.py in v2.3.1"
    qdrant_tokens = set(Bm25().embed_query(text).indices)
    extra = _ids("inc-90312", "src/app/main.py", "main.py", "v2.3.1")
    assert set(encode_query(text).indices) == qdrant_tokens | extra


def test_stop_word_list_matches_qdrant_edge() -> None:
    from qdrant_edge import Bm25

    qdrant = Bm25()
    not_dropped_by_qdrant = [
        word for word in sorted(sparse.ENGLISH_STOP_WORDS) if list(qdrant.embed_query(word).indices)
    ]
    assert not_dropped_by_qdrant == []


_TRICKY = st.text(
    alphabet=st.sampled_from(list("aZé9٣_-./\\:#@ ßİ\u0301x1TheIs")) | st.characters(), max_size=120
)


def _reference_document(encoder: Bm25Encoder, text: str) -> dict[int, float]:
    """The recipe of the module docstring, spelled out token by token."""
    counts: dict[int, int] = {}
    for token in sparse.tokens(text):
        counts[token_index(token)] = counts.get(token_index(token), 0) + 1
    norm = encoder.k1 * (1 - encoder.b + encoder.b * sum(counts.values()) / encoder.avg_doc_len)
    return {i: tf * (encoder.k1 + 1) / (tf + norm) for i, tf in counts.items()}


def _reference_identifiers(text: str) -> list[str]:
    found = []
    for match in sparse._IDENTIFIER.finditer(text.lower()):
        candidate = match.group()
        if any(char in "-./\\_:#@" for char in candidate):
            found.append(candidate)
            parts = sparse._PATH_SEPARATOR.split(candidate)
            if len(parts) > 1:
                found.extend(
                    p
                    for p in parts
                    if any(c in "-./\\_:#@" for c in p) and sparse._IDENTIFIER.fullmatch(p)
                )
    return found


@given(_TRICKY)
def test_identifier_tokens_are_the_runs_holding_a_joiner(text: str) -> None:
    assert sparse.identifier_tokens(text) == _reference_identifiers(text)


@given(st.lists(_TRICKY, min_size=1, max_size=4))
def test_remembered_word_indices_give_the_recipes_vectors(texts: list[str]) -> None:
    """The encoder's memo of words (full, or holding nothing) changes no vector."""
    encoder = Bm25Encoder()
    for limit in (0, 65_536):
        terms = sparse._TermIndices(limit)
        for text in texts + texts:  # the second time from the memo
            assert sorted(terms.indices(text)) == sorted(
                token_index(t) for t in sparse.tokens(text)
            )
        for text in texts:
            document = encoder.encode_document(text)
            assert list(document.indices) == sorted(_reference_document(encoder, text))
            assert document.as_dict() == _reference_document(encoder, text)
            assert encoder.encode_query(text).indices == tuple(sorted(document.indices))


def test_a_query_asks_for_other_spellings_at_their_own_weight() -> None:
    encoder = Bm25Encoder()
    plain = encoder.encode_query("cart service").as_dict()
    spelled = encoder.encode_query("cart service", ["svc", "cart-svc"], 0.5).as_dict()
    assert set(plain.items()) <= set(spelled.items()), "the question's own tokens keep 1.0"
    extra = {i: w for i, w in spelled.items() if i not in plain}
    assert set(extra) == {sparse.token_index("svc"), sparse.token_index("cart-svc")}
    assert set(extra.values()) == {0.5}
    # A spelling's token the question already has keeps its full weight.
    assert (
        encoder.encode_query("cart svc", ["svc"], 0.5).as_dict()
        == encoder.encode_query("cart svc").as_dict()
    )
    assert encoder.encode_query("cart service", ["svc"], 0.0).as_dict() == plain
    with pytest.raises(ValueError, match="within"):
        encoder.encode_query("cart service", ["svc"], 1.5)
