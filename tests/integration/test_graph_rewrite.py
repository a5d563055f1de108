"""The int8 embedding tables of the bundled model stay int8 through optimisation: the rewritten
graph gives the original's outputs bit for bit, the saved graph holds the table as int8, and
graphs without the pattern (or not protobuf at all) pass through untouched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
from onnx import TensorProto, helper

from ferrex.models import choose_embedding_model
from ferrex.models.bundled import BUNDLED_FILES
from ferrex.models.encoder import OnnxEncoder, SessionSettings, open_session, optimized_path
from ferrex.models.graph import int8_embedding_lookups
from ferrex.models.loading import local_source


@pytest.fixture(scope="module")
def model_file() -> Path:
    found = local_source(choose_embedding_model("small", {}))
    assert found is not None
    return found / "model.onnx"


def _session(model: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def test_the_rewritten_model_gives_the_same_outputs_bit_for_bit(model_file: Path) -> None:
    original = model_file.read_bytes()
    rewritten, turned = int8_embedding_lookups(original)
    assert turned == 2  # the word and the position embeddings
    before, after = _session(original), _session(rewritten)
    names = {i.name for i in before.get_inputs()}
    rng = np.random.default_rng(3)
    for rows, length in ((1, 1), (1, 30), (5, 17), (64, 32), (2, 256)):
        ids = rng.integers(0, 30522, (rows, length)).astype(np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids)}  # fmt: skip
        feed = {k: v for k, v in feed.items() if k in names}
        assert np.array_equal(before.run(None, feed)[0], after.run(None, feed)[0])


def test_the_saved_optimised_graph_keeps_the_word_table_int8(
    model_file: Path, tmp_path: Path
) -> None:
    path = optimized_path(tmp_path, BUNDLED_FILES["model.onnx"])
    OnnxEncoder(model_file.parent, "model.onnx", mean_pooling=True,
                settings=SessionSettings.for_machine(1), optimized=path)  # fmt: skip
    saved = onnx.load(str(path))
    kinds = {tuple(t.dims): t.data_type for t in saved.graph.initializer}
    assert kinds[(30522, 384)] == TensorProto.INT8
    assert not any(
        dims == (30522, 384) and kind == TensorProto.FLOAT for dims, kind in kinds.items()
    )


def test_sessions_plan_no_memory_patterns(model_file: Path) -> None:
    session = open_session(model_file, SessionSettings(intra_op_threads=1))
    assert session.get_session_options().enable_mem_pattern is False


def _lookup_graph(*, scale_rows: int = 4, axis: int = 0, cast_also_output: bool = False) -> bytes:
    table = helper.make_tensor("table", TensorProto.INT8, [4, 3], list(range(-6, 6)))
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [scale_rows, 1], [0.5] * scale_rows)
    nodes = [
        helper.make_node("Cast", ["table"], ["wide"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["wide", "scale"], ["weights"]),
        helper.make_node("Gather", ["weights", "ids"], ["rows"], axis=axis),
    ]
    outputs = [helper.make_tensor_value_info("rows", TensorProto.FLOAT, None)]
    if cast_also_output:
        outputs.append(helper.make_tensor_value_info("wide", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes, "lookup", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None])],
        outputs, initializer=[table, scale],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def test_a_small_lookup_is_rewritten_and_answers_the_same() -> None:
    original = _lookup_graph()
    rewritten, turned = int8_embedding_lookups(original)
    assert turned == 1
    ops = [n.op_type for n in onnx.load_from_string(rewritten).graph.node]
    assert ops == ["Gather", "Gather", "Cast", "Mul"]
    feed = {"ids": np.array([3, 0, 2], np.int64)}
    expected = _session(original).run(None, feed)[0]
    assert np.array_equal(_session(rewritten).run(None, feed)[0], expected)


@pytest.mark.parametrize(
    "graph",
    [
        _lookup_graph(scale_rows=1),  # one scale for the table: not per row
        _lookup_graph(cast_also_output=True),  # the widened table is used elsewhere
        b"\x0a\xff\xff",  # not a model: cut short
        b"",
    ],
    ids=["scalar-scale", "cast-used-elsewhere", "torn", "empty"],
)
def test_other_graphs_and_bad_bytes_pass_through_unchanged(graph: bytes) -> None:
    assert int8_embedding_lookups(graph) == (graph, 0)
