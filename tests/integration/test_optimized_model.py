"""The fully optimised ONNX graph, saved once in the model cache: built at the first load,
reused after (not rebuilt), rebuilt when stale or torn, and its vectors those of the model
optimised in memory."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

from ferrex.models import choose_embedding_model, load_model
from ferrex.models.bundled import BUNDLED_FILES
from ferrex.models.encoder import OnnxEncoder, SessionSettings, optimized_path
from ferrex.models.identity import INT8_ACTIVATIONS, shared_models_dir
from ferrex.models.loading import OPTIMIZED_DIR_NAME, local_source

WORDS = ("the", "deploy", "failed", "after", "migration", "Priya", "owns", "ledger-api", "東京")


def _texts(count: int) -> list[str]:
    rng = random.Random(11)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 90))) for _ in range(count)]


@pytest.fixture(scope="module")
def source() -> Path:
    found = local_source(choose_embedding_model("small", {}))
    assert found is not None
    return found


def _encoder(source: Path, optimized: Path | None) -> OnnxEncoder:
    settings = SessionSettings.for_machine()
    return OnnxEncoder(source, "model.onnx", mean_pooling=True, settings=settings,
                       optimized=optimized)  # fmt: skip


def test_built_once_then_reused_with_the_same_vectors(source: Path, tmp_path: Path) -> None:
    path = optimized_path(tmp_path, BUNDLED_FILES["model.onnx"])
    texts = _texts(60)
    plain = _encoder(source, None).run(texts)
    assert not path.exists()
    built = _encoder(source, path).run(texts)
    assert path.is_file()
    first = path.stat()
    reused = _encoder(source, path).run(texts)
    again = path.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)  # not rebuilt
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left
    for vectors in (built, reused):
        cosines = np.sum(plain * vectors, axis=1)
        assert float(cosines.min()) >= 1 - 1e-4
    assert float(reused[0] @ reused[1]) < 0.999  # different texts, different vectors


def test_a_stale_or_torn_file_is_rebuilt(source: Path, tmp_path: Path) -> None:
    sha = BUNDLED_FILES["model.onnx"]
    path = optimized_path(tmp_path, sha)
    older = tmp_path / f"{sha[:24]}-ort0.0.1-000000000000.onnx"  # another ONNX Runtime's
    other_model = tmp_path / f"{'0' * 24}-ort0.0.1-000000000000.onnx"
    older.write_bytes(b"old")
    other_model.write_bytes(b"another model's")
    path.write_bytes(b"\x08\x07torn")  # a file cut short: not a model
    texts = _texts(20)
    plain = _encoder(source, None).run(texts)
    vectors = _encoder(source, path).run(texts)
    assert path.stat().st_size > 1_000_000
    assert not older.exists()  # the stale graph of this model is gone
    assert other_model.exists()  # another model's is not this one's to remove
    assert float(np.sum(plain * vectors, axis=1).min()) >= 1 - 1e-4


def test_a_graph_directory_that_cannot_be_written_costs_only_the_saving(
    source: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    path = optimized_path(blocked, BUNDLED_FILES["model.onnx"])
    texts = _texts(5)
    vectors = _encoder(source, path).run(texts)
    assert not path.exists()
    assert float(np.sum(_encoder(source, None).run(texts) * vectors, axis=1).min()) >= 1 - 1e-4


def test_a_graph_that_cannot_be_kept_loads_without_onnx_runtime_s_warnings(
    source: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Where the optimised graph cannot be saved, the default arithmetic's graph is optimised
    in memory at every start; ONNX Runtime's notes on it (initializers its fusions left
    unused) are not the user's to read on every start of a server."""
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    path = optimized_path(blocked, BUNDLED_FILES["model.onnx"], INT8_ACTIVATIONS)
    settings = SessionSettings.for_machine()
    OnnxEncoder(source, "model.onnx", mean_pooling=True, settings=settings, optimized=path,
                int8_activations=True).run(_texts(3))  # fmt: skip
    err = capfd.readouterr().err
    assert "onnxruntime" not in err and "Removing initializer" not in err, err[:2000]


def test_loading_the_default_model_keeps_its_graph_in_the_user_cache(tmp_path: Path) -> None:
    graphs = shared_models_dir(os.environ) / OPTIMIZED_DIR_NAME
    sha = BUNDLED_FILES["model.onnx"]
    quantized = optimized_path(graphs, sha, INT8_ACTIVATIONS)
    in_float = optimized_path(graphs, sha)
    assert quantized.name != in_float.name
    load_model(choose_embedding_model("small", {}), tmp_path)
    assert quantized.is_file()
    # Each variant keeps its own graph: building one does not remove the other's.
    load_model(choose_embedding_model("small-float", {}), tmp_path)
    load_model(choose_embedding_model("small", {}), tmp_path)
    assert {p.name for p in graphs.glob(f"{sha[:24]}*.onnx")} == {quantized.name, in_float.name}
