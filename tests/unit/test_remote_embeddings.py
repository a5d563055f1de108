"""Pure parts of the embeddings-server support: the choice, the fingerprint, the recorded
identity, the mismatch refusal's wording, the settings' validation, the answer's warning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ferrex.config import load
from ferrex.errors import UsageError
from ferrex.models import choose_embedding_model
from ferrex.models.identity import ModelIdentity
from ferrex.models.remote import fingerprint, identity_name, mismatch_error, recorded_identity
from ferrex.server.answers import recall_head


def test_openai_names_a_server_model() -> None:
    choice = choose_embedding_model("openai:nomic-embed-text", {})
    assert choice.kind == "remote" and choice.model_name == "openai:nomic-embed-text"
    assert choose_embedding_model(None, {"FERREX_EMBEDDING_MODEL": "OpenAI:bge-m3"}).kind == (
        "remote"
    )
    with pytest.raises(UsageError, match="names no model"):
        choose_embedding_model("openai:  ", {})


def test_the_fingerprint_ignores_float_noise_and_sees_other_weights() -> None:
    rng = np.random.default_rng(7)
    vector = rng.normal(size=384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    noisy = vector + rng.normal(scale=1e-7, size=384).astype(np.float32)
    assert fingerprint(vector) == fingerprint(noisy)
    assert fingerprint(vector) != fingerprint(np.roll(vector, 1))
    assert len(fingerprint(vector)) == 16


def test_a_passage_prefix_is_part_of_the_name_a_query_prefix_is_not() -> None:
    assert identity_name("e5", "") == "openai:e5"
    assert identity_name("e5", "passage: ") != identity_name("e5", "doc: ")
    assert identity_name("e5", "passage: ").startswith("openai:e5+passage:")
    # Told through a field that texts are passages, a server embeds them otherwise too.
    assert identity_name("e5", "", "input_type") == "openai:e5+input_type=passage"


def test_the_recorded_identity_is_read_back_from_the_generation() -> None:
    identity = ModelIdentity("openai:e5+passage:1a2b3c4d", 768, "probe-0123456789abcdef")
    encoders = f"{identity.key}+bm25-v1;k1=1.2;b=0.75;avgdl=32"
    assert recorded_identity(encoders) == identity
    assert recorded_identity("garbage") is None


def test_the_mismatch_names_both_sides_and_the_command() -> None:
    old = ModelIdentity("openai:m", 384, "probe-aaaa")
    by_dim = mismatch_error(old, ModelIdentity("openai:m", 1024, "probe-bbbb"), "openai:m")
    assert by_dim.code == "model_mismatch" and by_dim.exit_code == 4
    assert "384-dimension" in by_dim.message and "1024 dimensions" in by_dim.message
    assert "ferrex reembed --model openai:m" in str(by_dim.hint)
    by_weights = mismatch_error(old, ModelIdentity("openai:m", 384, "probe-cccc"), "openai:m")
    assert "probe-aaaa -> probe-cccc" in by_weights.message
    by_name = mismatch_error(old, ModelIdentity("openai:n", 384, "probe-aaaa"), "openai:n")
    assert "openai:m" in by_name.message and "openai:n" in by_name.message


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('embedding_url = "localhost:11434"', "http:// or https://"),
        ('embedding_url = "http://h:99999/v1"', "not a URL"),
        ('embedding_key_env = "sk-abc123"', "name of an environment variable"),
        ("embedding_timeout = 0", "more than 0"),
        ("embedding_batch = 0", "1 to 2048"),
        ('embedding_input_type = "input type"', "name of a request field"),
        ('embedding_input_type = "input"', "ferrex sends that field"),
    ],
)
def test_bad_server_settings_are_refused(tmp_path: Path, line: str, words: str) -> None:
    (tmp_path / "ferrex.toml").write_text(f"[models]\n{line}\n")
    with pytest.raises(UsageError, match=words):
        load(tmp_path, env={})


def test_the_url_from_the_environment_is_checked_too(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="http:// or https://"):
        load(tmp_path, env={"FERREX_EMBEDDING_URL": "127.0.0.1:8080"})
    config = load(tmp_path, env={"FERREX_EMBEDDING_URL": "http://127.0.0.1:8080/v1"})
    assert config["models.embedding_url"] == "http://127.0.0.1:8080/v1"
    assert config["models.embedding_key_env"] == "FERREX_EMBEDDING_KEY"


def test_the_text_answer_carries_the_warning() -> None:
    doc = {"results": [{"id": "m"}], "hidden": {}, "warning": "keyword (BM25) matching alone"}
    assert "keyword (BM25) matching alone" in recall_head(doc)
