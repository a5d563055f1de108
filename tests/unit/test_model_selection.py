"""Which models a setting or the environment selects: pure functions, no files, no models."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrex.errors import UsageError
from ferrex.models import (
    BUNDLED_MODEL,
    Embedder,
    ModelIdentity,
    choose_embedding_model,
    downloads_allowed,
)
from ferrex.models.identity import INT8_ACTIVATIONS
from ferrex.models.remote import recorded_identity
from ferrex.models.rerank import RerankerChoice, RerankStage, choose_reranker, rerank_order


def test_default_is_the_bundled_small_model() -> None:
    choice = choose_embedding_model(None, {})
    assert (choice.kind, choice.model_name, choice.expected_dim) == ("bundled", BUNDLED_MODEL, 384)
    assert choice.origin == "default"


@pytest.mark.parametrize(
    ("value", "model", "dim"),
    [
        ("mid", "BAAI/bge-small-en-v1.5", 384),
        ("BEST", "BAAI/bge-base-en-v1.5", 768),
        (" Mid ", "BAAI/bge-small-en-v1.5", 384),
    ],
)
def test_download_tiers(value: str, model: str, dim: int) -> None:
    choice = choose_embedding_model(value, {})
    assert (choice.kind, choice.model_name, choice.expected_dim) == ("download", model, dim)


def test_small_runs_on_eight_bit_activations_and_small_float_does_not() -> None:
    small, in_float = choose_embedding_model("small", {}), choose_embedding_model("Small-Float", {})
    assert (small.kind, in_float.kind) == ("bundled", "bundled")
    assert small.model_name == in_float.model_name and small.expected_dim == 384
    assert (small.variant, in_float.variant) == (INT8_ACTIVATIONS, "")


def test_a_variant_is_part_of_the_identity_and_read_back_from_a_generation() -> None:
    plain = ModelIdentity(BUNDLED_MODEL, 384, "ab" * 32)
    quantized = ModelIdentity(BUNDLED_MODEL, 384, "ab" * 32, INT8_ACTIVATIONS)
    assert plain != quantized and plain.key != quantized.key
    assert plain.key == f"{BUNDLED_MODEL}|384|{'ab' * 32}"  # older homes' keys unchanged
    for identity in (plain, quantized):
        assert recorded_identity(f"{identity.key}+bm25-v1;k1=1.2;b=0.75;avgdl=32") == identity


def test_the_argument_wins_over_the_environment() -> None:
    env = {"FERREX_EMBEDDING_MODEL": "best"}
    assert choose_embedding_model("small", env).kind == "bundled"
    assert choose_embedding_model("small", env).origin == "argument"
    from_env = choose_embedding_model(None, env)
    assert (from_env.model_name, from_env.origin) == (
        "BAAI/bge-base-en-v1.5",
        "FERREX_EMBEDDING_MODEL",
    )


def test_blank_values_fall_through_to_the_default() -> None:
    choice = choose_embedding_model("  ", {"FERREX_EMBEDDING_MODEL": ""})
    assert (choice.kind, choice.origin) == ("bundled", "default")


@pytest.mark.parametrize("value", ["/opt/models/e5", "./mid", "~/models/e5", "models/e5"])
def test_paths_select_a_model_directory(value: str) -> None:
    choice = choose_embedding_model(value, {})
    assert choice.kind == "directory"
    assert choice.directory == Path(value)
    assert choice.expected_dim is None
    assert choice.model_name == Path(value).name


def test_an_unknown_model_name_is_a_usage_error_naming_the_choices() -> None:
    with pytest.raises(UsageError) as raised:
        choose_embedding_model(None, {"FERREX_EMBEDDING_MODEL": "huge"})
    assert "huge" in raised.value.message
    assert "FERREX_EMBEDDING_MODEL" in raised.value.message
    assert raised.value.hint is not None and "small, small-float, mid, best" in raised.value.hint


@pytest.mark.parametrize(
    ("env", "allowed"),
    [
        ({}, False),
        ({"FERREX_ALLOW_DOWNLOAD": "1"}, True),
        ({"FERREX_ALLOW_DOWNLOAD": "yes"}, True),
        ({"FERREX_ALLOW_DOWNLOAD": "0"}, False),
        ({"FERREX_ALLOW_DOWNLOAD": "1", "HF_HUB_OFFLINE": "1"}, False),
    ],
)
def test_downloads_are_off_unless_asked_for(env: dict[str, str], allowed: bool) -> None:
    assert downloads_allowed(env) is allowed


def test_an_embedder_from_the_environment_loads_nothing_until_used(tmp_path: Path) -> None:
    embedder = Embedder.from_env(tmp_path, env={"FERREX_EMBEDDING_MODEL": "best"})
    assert (embedder.choice.model_name, embedder.allow_download) == ("BAAI/bge-base-en-v1.5", False)
    assert not embedder.loaded
    assert list(tmp_path.iterdir()) == []


def test_model_identity_key_separates_models() -> None:
    small = ModelIdentity("m", 384, "aa")
    assert small.key != ModelIdentity("m", 384, "bb").key
    assert small.key != ModelIdentity("m", 768, "aa").key
    assert small == ModelIdentity("m", 384, "aa")


def test_reranker_defaults_to_none() -> None:
    choice = choose_reranker(None, {})
    assert (choice.kind, choice.setting, choice.origin) == ("off", "none", "default")


@pytest.mark.parametrize(
    ("value", "kind", "model"),
    [
        ("ms-marco-MiniLM", "download", "Xenova/ms-marco-MiniLM-L-6-v2"),
        ("bge-reranker-base", "download", "BAAI/bge-reranker-base"),
        ("OFF", "off", None),
        ("/srv/rerankers/tiny", "directory", "tiny"),
    ],
)
def test_reranker_settings(value: str, kind: str, model: str | None) -> None:
    choice = choose_reranker(None, {"FERREX_RERANKER": value})
    assert (choice.kind, choice.model_name, choice.origin) == (kind, model, "FERREX_RERANKER")


def test_an_unknown_reranker_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        choose_reranker("colbert", {})


def test_rerank_order_is_by_descending_score_ties_keep_incoming_order() -> None:
    assert rerank_order([0.1, 0.9, 0.5, 0.9]) == [1, 3, 2, 0]
    assert rerank_order([]) == []


def test_a_stage_without_encoder_keeps_the_order_and_says_why() -> None:
    wanted = RerankerChoice("download", "ms-marco-MiniLM", "default", "x/y")
    stage = RerankStage(wanted, reason="not downloaded")
    assert stage.state == "unavailable"
    assert stage.status == "unavailable: not downloaded"
    assert stage.rerank_top("q", ["a", "b", "c"]) == [(0, None), (1, None), (2, None)]
    assert RerankStage(RerankerChoice("off", "none", "default")).status == "off"
