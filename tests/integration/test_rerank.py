"""The rerank stage's plumbing with a small cross-encoder built here (no weights ship anywhere).

The test model is a real ONNX graph over the real MiniLM tokenizer: it embeds each token with
a fixed random table, sums the query tokens (segment 0) and the document tokens (segment 1)
separately, and scores the pair by the dot product of the two sums. Shared words therefore
score high, and the score can be recomputed independently with numpy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ferrex.models.bundled import TOKENIZER_DATA
from ferrex.models.rerank import (
    DEFAULT_POOL,
    CrossEncoder,
    RerankStage,
    choose_reranker,
    load_reranker,
)

VOCAB = 30522
WIDTH = 16
SPECIAL_IDS = (0, 100, 101, 102, 103)  # [PAD] [UNK] [CLS] [SEP] [MASK]

QUERY = "which database migration timed out during the deploy"
DOCS = [
    "My grandmother bakes apple pie every Sunday.",
    "The user prefers dark mode in the editor.",
    "Cats sleep most of the day.",
    "The deploy failed: the database migration timed out.",
    "Quarterly revenue grew by twelve percent.",
]


def _token_table() -> NDArray[np.float32]:
    table = np.random.default_rng(20240601).standard_normal((VOCAB, WIDTH)).astype(np.float32)
    table[list(SPECIAL_IDS)] = 0.0
    return table


def _write_cross_encoder(directory: Path, table: NDArray[np.float32]) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def ints(name: str, values: list[int]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["embedded"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["segment"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["mask", "segment"], ["doc_weight"]),
        helper.make_node("Sub", ["mask", "doc_weight"], ["query_weight"]),
        helper.make_node("Unsqueeze", ["query_weight", "last_axis"], ["query_weight3"]),
        helper.make_node("Unsqueeze", ["doc_weight", "last_axis"], ["doc_weight3"]),
        helper.make_node("Mul", ["embedded", "query_weight3"], ["query_tokens"]),
        helper.make_node("Mul", ["embedded", "doc_weight3"], ["doc_tokens"]),
        helper.make_node("ReduceSum", ["query_tokens", "seq_axis"], ["query_sum"], keepdims=0),
        helper.make_node("ReduceSum", ["doc_tokens", "seq_axis"], ["doc_sum"], keepdims=0),
        helper.make_node("Mul", ["query_sum", "doc_sum"], ["product"]),
        helper.make_node("ReduceSum", ["product", "seq_axis"], ["logits"], keepdims=1),
    ]
    token_input = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "bag_of_tokens_cross_encoder",
        inputs=[
            helper.make_tensor_value_info(name, TensorProto.INT64, token_input)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=[
            numpy_helper.from_array(table, "table"),
            ints("last_axis", [-1]),
            ints("seq_axis", [1]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(directory / "model.onnx"))


@pytest.fixture(scope="module")
def table() -> NDArray[np.float32]:
    return _token_table()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory, table: NDArray[np.float32]) -> Path:
    directory = tmp_path_factory.mktemp("tiny-cross-encoder")
    # The default model's tokenizer files, as ferrex ships them (ferrex/models/data/).
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(TOKENIZER_DATA / name, directory / name)
    _write_cross_encoder(directory, table)
    return directory


@pytest.fixture(scope="module")
def stage(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> RerankStage:
    home = tmp_path_factory.mktemp("home")
    return load_reranker(choose_reranker(str(model_dir), {}), home)


def _encoder(stage: RerankStage) -> CrossEncoder:
    assert isinstance(stage.encoder, CrossEncoder), stage.status
    return stage.encoder


def _expected_score(
    model_dir: Path, table: NDArray[np.float32], query: str, document: str
) -> float:
    from tokenizers import Tokenizer

    encoding = Tokenizer.from_file(str(model_dir / "tokenizer.json")).encode(query, document)
    ids = np.array(encoding.ids)
    segments = np.array(encoding.type_ids)
    query_sum = table[ids[segments == 0]].sum(axis=0)
    doc_sum = table[ids[segments == 1]].sum(axis=0)
    return float(query_sum @ doc_sum)


def test_loads_a_cross_encoder_from_a_directory(stage: RerankStage, model_dir: Path) -> None:
    assert stage.state == "ready"
    assert stage.status == "ready"
    encoder = _encoder(stage)
    assert encoder.source == model_dir.resolve()
    assert len(encoder.file_sha256) == 64


def test_scores_each_pair_as_the_model_computes_it(
    stage: RerankStage, model_dir: Path, table: NDArray[np.float32]
) -> None:
    scores = _encoder(stage).rerank(QUERY, DOCS)
    expected = [_expected_score(model_dir, table, QUERY, doc) for doc in DOCS]
    assert scores == pytest.approx(expected, rel=1e-4, abs=1e-3)
    assert len(set(scores)) == len(DOCS)


def test_reorders_candidates_best_first(stage: RerankStage) -> None:
    order = stage.rerank_top(QUERY, DOCS)
    positions = [position for position, _ in order]
    assert positions[0] == 3  # the only document about the failed migration
    assert sorted(positions) == list(range(len(DOCS)))
    scores = [score for _, score in order if score is not None]
    assert len(scores) == len(DOCS)
    assert scores == sorted(scores, reverse=True)


def test_only_the_pool_is_reranked(stage: RerankStage) -> None:
    # The best document sits at position 3, outside a pool of 2: it must keep its place.
    order = stage.rerank_top(QUERY, DOCS, pool=2)
    assert [position for position, _ in order[2:]] == [2, 3, 4]
    assert all(score is None for _, score in order[2:])
    assert all(score is not None for _, score in order[:2])


def test_the_default_pool_is_twenty(stage: RerankStage) -> None:
    order = stage.rerank_top(QUERY, DOCS * 5)
    assert DEFAULT_POOL == 20
    assert [score is not None for _, score in order] == [True] * 20 + [False] * 5
    assert [position for position, _ in order[20:]] == list(range(20, 25))


def test_no_documents_no_scores(stage: RerankStage) -> None:
    assert _encoder(stage).rerank(QUERY, []) == []
    assert stage.rerank_top(QUERY, []) == []


def test_a_missing_builtin_reranker_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    stage = load_reranker(choose_reranker("ms-marco-MiniLM", {}), tmp_path)
    assert stage.state == "unavailable"
    assert stage.status.startswith("unavailable: Xenova/ms-marco-MiniLM-L-6-v2")
    assert "downloads are off" in stage.status
    assert stage.rerank_top(QUERY, DOCS) == [(i, None) for i in range(len(DOCS))]


def test_a_directory_without_a_model_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    stage = load_reranker(choose_reranker(str(tmp_path / "empty"), {}), tmp_path)
    assert stage.state == "unavailable"
    assert "no ONNX model file" in stage.status


def test_a_broken_model_file_is_unavailable(tmp_path: Path, model_dir: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(model_dir, broken)
    (broken / "model.onnx").write_bytes(b"not an onnx graph")
    stage = load_reranker(choose_reranker(str(broken), {}), tmp_path)
    assert stage.state == "unavailable"
    assert "could not be loaded" in stage.status


def test_none_means_off_and_loads_nothing(tmp_path: Path) -> None:
    stage = load_reranker(choose_reranker(None, {}), tmp_path)
    assert (stage.state, stage.encoder) == ("off", None)
    assert not (tmp_path / "models").exists()
