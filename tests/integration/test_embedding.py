"""The dense model for real: files from the installed package and ferrex's own data, pinned
hashes, one assembled copy per user, real vectors, cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ferrex.errors import ModelUnavailable
from ferrex.models import (
    BUNDLED_DIR_NAME,
    BUNDLED_MODEL,
    Embedder,
    EmbeddingCache,
    LoadedModel,
    ModelIdentity,
    assemble_bundled_model,
    cache_path,
    choose_embedding_model,
    load_model,
    models_dir,
    text_key,
)
from ferrex.models.bundled import bundled_sources
from ferrex.models.identity import INT8_ACTIVATIONS, shared_models_dir

MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


@pytest.fixture(scope="session")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ferrex-home")


@pytest.fixture(scope="session")
def embedder(home: Path) -> Iterator[Embedder]:
    embedder = Embedder(home, choose_embedding_model("small", {}))
    embedder.model()
    yield embedder
    embedder.close()


def _unique(text: str) -> str:
    # Cache counts are asserted per test, so each test embeds texts no other test has seen.
    return f"{text} [{uuid.uuid4().hex[:8]}]"


def test_identity_is_minilm_384_pinned(embedder: Embedder, home: Path) -> None:
    assert embedder.identity == ModelIdentity(
        BUNDLED_MODEL, 384, MINILM_ONNX_SHA256, INT8_ACTIVATIONS
    )
    # One copy per user, in the (test) cache directory, none in the data directory.
    assert embedder.model().source == shared_models_dir(os.environ) / BUNDLED_DIR_NAME
    assert not (models_dir(home) / BUNDLED_DIR_NAME).exists()


def test_vectors_are_unit_length_float32(embedder: Embedder) -> None:
    vectors = embedder.embed_many(["a short note", "another, somewhat longer, note about tea"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrases_score_higher_than_unrelated_pairs(embedder: Embedder) -> None:
    a, b, c, d = embedder.embed_many(
        [
            "The deployment failed because the database migration timed out.",
            "A timeout in the DB migration broke the deploy.",
            "My grandmother bakes apple pie every Sunday.",
            "The user prefers dark mode in the editor.",
        ]
    )
    paraphrase = float(a @ b)
    unrelated = max(float(a @ c), float(a @ d), float(b @ c))
    assert paraphrase > 0.6
    assert unrelated < 0.25
    assert paraphrase - unrelated > 0.4


def test_the_window_is_256_tokens(embedder: Embedder) -> None:
    # Past 256 tokens the tail is cut off, so it cannot change the vector; before, it does.
    # 300 one-piece tokens: past the 256 window, within BERT's own 512.
    long_head = " ".join(["apple"] * 300)
    short_head = "a short head"
    tail = " and then something entirely different about volcanoes"
    long_a, long_b, short_a, short_b = embedder.embed_many(
        [long_head, long_head + tail, short_head, short_head + tail]
    )
    assert np.array_equal(long_a, long_b)
    assert not np.array_equal(short_a, short_b)


def test_the_window_is_read_from_the_model_directory_once(embedder: Embedder) -> None:
    # A copy of the model directory, so the tokenizer config can change under the model.
    source = embedder.model().source
    assert source is not None
    copy = source.parent / f"window-copy-{uuid.uuid4().hex[:8]}"
    copy.mkdir()
    config = copy / "tokenizer_config.json"
    config.write_text(json.dumps({"model_max_length": 128}))
    model = LoadedModel(embedder.identity, copy, embedder.model()._engine, 0.0)
    assert model.window == 128
    config.write_text(json.dumps({"model_max_length": 64}))
    assert model.window == 128  # not re-read for every text the sink splits
    assert embedder.model().window == 256


def test_same_text_same_vector_in_another_process(embedder: Embedder, tmp_path: Path) -> None:
    text = "Identical text must give identical vectors, whichever process embeds it."
    here = embedder.model().run([text], batch_size=1)[0]
    script = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        from ferrex.models import Embedder, choose_embedding_model
        embedder = Embedder(Path({str(tmp_path)!r}), choose_embedding_model("small", {{}}),
                            use_cache=False)
        vector = embedder.embed({text!r})
        json.dump({{"hex": vector.tobytes().hex(), "sha": embedder.identity.file_sha256}},
                  sys.stdout)
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    there = json.loads(done.stdout)
    assert there["sha"] == MINILM_ONNX_SHA256
    assert bytes.fromhex(there["hex"]) == here.tobytes()


def test_second_embed_is_a_cache_hit(embedder: Embedder) -> None:
    texts = [_unique("cache me"), _unique("and me too")]
    before = embedder.cache_stats()
    first = embedder.embed_many(texts)
    middle = embedder.cache_stats()
    second = embedder.embed_many(texts)
    after = embedder.cache_stats()
    assert (middle.hits - before.hits, middle.misses - before.misses) == (0, 2)
    assert (after.hits - middle.hits, after.misses - middle.misses) == (2, 0)
    assert np.array_equal(first, second)


def test_cache_persists_for_other_connections(embedder: Embedder, home: Path) -> None:
    text = _unique("persisted across connections")
    vector = embedder.embed(text)
    other = EmbeddingCache(cache_path(home))
    try:
        found = other.get_many(embedder.identity, [text_key(text)])
        assert np.array_equal(found[text_key(text)], vector)
        assert other.stats().hits == 1
        # Another model's identity never sees these vectors.
        stranger = ModelIdentity("someone/else", 384, "0" * 64)
        assert other.get_many(stranger, [text_key(text)]) == {}
        assert other.stats().misses == 1
    finally:
        other.close()


def test_two_processes_share_a_fresh_home_and_its_cache(tmp_path: Path) -> None:
    # Both assemble the model and write the cache at the same time; neither may fail, and
    # the cache ends with one row per distinct text.
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from ferrex.models import Embedder, choose_embedding_model
        start = int(sys.argv[1])
        embedder = Embedder(Path({str(tmp_path)!r}), choose_embedding_model("small", {{}}))
        for round in range(5):
            embedder.embed_many([f"shared text {{i}}" for i in range(start, start + 40)])
        embedder.close()
        """
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-W", "error", "-c", script, start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for start in ("0", "20")
    ]
    # Every worker is reaped (and its pipes closed) before any assertion can fail.
    errors = [worker.communicate(timeout=120)[1] for worker in workers]
    for worker, stderr in zip(workers, errors, strict=True):
        assert worker.returncode == 0, stderr
    cache = EmbeddingCache(cache_path(tmp_path))
    try:
        assert cache.count() == 60
    finally:
        cache.close()


def test_repeated_texts_are_embedded_once_and_returned_in_order(embedder: Embedder) -> None:
    x, y = _unique("x"), _unique("y")
    before = embedder.cache_stats()
    vectors = embedder.embed_many([x, y, x])
    after = embedder.cache_stats()
    assert after.misses - before.misses == 2
    assert np.array_equal(vectors[0], vectors[2])
    assert not np.array_equal(vectors[0], vectors[1])
    assert np.array_equal(vectors[1], embedder.embed(y))


def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed_many([]).shape == (0, 384)


def test_a_model_directory_loads_like_the_bundled_model(embedder: Embedder, home: Path) -> None:
    directory = shared_models_dir(os.environ) / BUNDLED_DIR_NAME
    custom = Embedder(home, choose_embedding_model(str(directory), {}), use_cache=False)
    try:
        identity = custom.identity
        assert (identity.name, identity.dim) == (BUNDLED_DIR_NAME, 384)
        assert identity.file_sha256 == MINILM_ONNX_SHA256
        assert identity.variant == ""  # a directory's model runs as its file says
        text = "mean pooling and normalisation come from the directory's own config"
        in_float = Embedder(home, choose_embedding_model("small-float", {}), use_cache=False)
        try:
            assert np.allclose(custom.embed(text), in_float.embed(text), atol=1e-6)
        finally:
            in_float.close()
    finally:
        custom.close()


def test_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    choice = choose_embedding_model(str(tmp_path / "nowhere"), {})
    with pytest.raises(ModelUnavailable) as raised:
        load_model(choice, tmp_path)
    assert "does not exist" in raised.value.message
    assert str(tmp_path / "nowhere") in raised.value.message


def test_mid_tier_offline_fails_with_a_clear_error(tmp_path: Path) -> None:
    offline_before = os.environ.get("HF_HUB_OFFLINE")
    embedder = Embedder(tmp_path, choose_embedding_model("mid", {}))
    with pytest.raises(ModelUnavailable) as raised:
        embedder.embed("anything")
    error = raised.value
    assert error.code == "model_unavailable"
    assert "BAAI/bge-small-en-v1.5" in error.message
    assert "downloads are off" in error.message
    assert str(models_dir(tmp_path) / "fastembed") in error.message
    assert error.hint is not None and "FERREX_ALLOW_DOWNLOAD=1" in error.hint
    assert os.environ.get("HF_HUB_OFFLINE") == offline_before


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json", "tokenizer_config.json"])
def test_a_tampered_model_file_fails_the_hash_check(tmp_path: Path, name: str) -> None:
    target = assemble_bundled_model(models_dir(tmp_path) / BUNDLED_DIR_NAME)
    _flip_last_byte(target / name)
    with pytest.raises(ModelUnavailable) as raised:
        load_model(choose_embedding_model("small", {}), tmp_path, shared=models_dir(tmp_path))
    message = raised.value.message
    assert str(target / name) in message
    assert "SHA-256" in message
    assert raised.value.hint is not None and str(target) in raised.value.hint


def test_a_tampered_source_file_is_refused_before_assembly(tmp_path: Path) -> None:
    copies = tmp_path / "installed"
    copies.mkdir()
    sources: dict[str, Path] = {}
    for name, path in bundled_sources().items():
        sources[name] = copies / name
        sources[name].write_bytes(path.read_bytes())
    _flip_last_byte(sources["config.json"])
    target = tmp_path / "models" / BUNDLED_DIR_NAME
    with pytest.raises(ModelUnavailable) as raised:
        assemble_bundled_model(target, sources)
    assert str(sources["config.json"]) in raised.value.message
    assert not target.exists()
    assert not any((tmp_path / "models").glob(f".{BUNDLED_DIR_NAME}-*"))


def test_importing_the_model_modules_loads_no_runtime() -> None:
    script = (
        "import sys, ferrex.models, ferrex.models.rerank, ferrex.models.sparse; "
        "print(sorted(m for m in ('fastembed', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
