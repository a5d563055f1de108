"""The int8 embedding tables of the bundled model stay int8 through optimisation: the rewritten
graph gives the original's outputs bit for bit, the saved graph holds the table as int8, and
graphs without the pattern (or not protobuf at all) pass through untouched. The 8-bit
products keep each row its own; the fused attention and GELU compute what the exported
operators did (float32, padded batches included) and leave anything else as it is."""

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
from ferrex.models.graph import (
    fused_attention,
    fused_gelu,
    int8_embedding_lookups,
    int8_matrix_products,
)
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


def _product_graph(
    *, scale_shape: tuple[int, ...] = (1, 4), weight_kind: int = TensorProto.INT8
) -> bytes:
    rng = np.random.default_rng(11)
    low = 0 if weight_kind == TensorProto.UINT8 else -127
    values = rng.integers(low, low + 255, 24).tolist()
    weight = helper.make_tensor("weight", weight_kind, [6, 4], values)
    count = int(np.prod(scale_shape))
    scale = helper.make_tensor("scale", TensorProto.FLOAT, list(scale_shape), [0.01] * count)
    nodes = [
        helper.make_node("Cast", ["weight"], ["wide"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["wide", "scale"], ["weights"]),
        helper.make_node("MatMul", ["x", "weights"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "product", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[weight, scale],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def test_a_product_on_eight_bit_activations_is_close_and_each_row_stands_alone() -> None:
    original = _product_graph()
    rewritten, turned = int8_matrix_products(original)
    assert turned == 1
    loaded = onnx.load_from_string(rewritten)
    assert "MatMulIntegerToFloat" in [n.op_type for n in loaded.graph.node]
    assert "com.microsoft" in [o.domain for o in loaded.opset_import]
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 6)).astype(np.float32)
    x[1, 2] *= 1000.0  # one loud row must not coarsen the others' steps
    x[0, 1] = 0.0  # a row of zeros gives zeros, not NaN
    exact = _session(original).run(None, {"x": x})[0]
    approx = _session(rewritten).run(None, {"x": x})[0]
    assert np.all(np.isfinite(approx)) and np.array_equal(approx[0, 1], np.zeros(4, np.float32))
    for row in ((0, 0), (0, 2), (1, 0), (1, 1), (1, 2)):
        error = np.abs(approx[row] - exact[row]).max()
        assert error <= 0.02 * np.abs(exact[row]).max() + 1e-6, (row, error)
    assert not np.array_equal(approx, exact)  # quantized, not the float product
    alone = _session(rewritten).run(None, {"x": x[1:, 1:2]})[0]
    assert np.array_equal(alone[0, 0], approx[1, 1])  # a row's numbers are its own


def test_the_bundled_model_on_eight_bit_activations_keeps_each_texts_rows_its_own(
    model_file: Path,
) -> None:
    lookups, _ = int8_embedding_lookups(model_file.read_bytes())
    rewritten, turned = int8_matrix_products(lookups)
    assert turned == 18  # output and two feed-forward products, 6 layers (q, k, v stay float)
    onnx.checker.check_model(onnx.load_from_string(rewritten), full_check=True)
    session = _session(rewritten)
    rng = np.random.default_rng(9)
    ids = rng.integers(1000, 30000, (3, 12)).astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids)}  # fmt: skip
    together = session.run(None, feed)[0]
    one = {k: v[1:2] for k, v in feed.items()}
    assert np.allclose(session.run(None, one)[0][0], together[1], atol=1e-5)
    reference = _session(model_file.read_bytes()).run(None, feed)[0]
    cosine = np.sum(together * reference, axis=-1) / (
        np.linalg.norm(together, axis=-1) * np.linalg.norm(reference, axis=-1)
    )
    assert float(cosine.min()) > 0.97 and float(np.median(cosine)) < 0.99999


@pytest.mark.parametrize(
    "graph",
    [
        _product_graph(scale_shape=(6, 1)),  # one scale per row of the weight: not per column
        _product_graph(weight_kind=TensorProto.UINT8),
        b"\x0a\xff\xff",
        b"",
    ],
    ids=["row-scales", "uint8-weight", "torn", "empty"],
)
def test_other_products_and_bad_bytes_pass_through_unchanged(graph: bytes) -> None:
    assert int8_matrix_products(graph) == (graph, 0)


def _padded_feed(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Four texts of 3 to 21 tokens in one batch, padded: the mask has zeros."""
    lengths = [21, 3, 14, 9]
    ids = np.zeros((len(lengths), max(lengths)), np.int64)
    mask = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(1000, 30000, length)
        mask[row, :length] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _pooled(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    pooled = (tokens * weights).sum(axis=1) / weights.sum(axis=1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_fused_attention_and_gelu_compute_what_the_exported_operators_did(
    model_file: Path,
) -> None:
    lookups, _ = int8_embedding_lookups(model_file.read_bytes())
    attention, turned = fused_attention(lookups)
    assert turned == 6  # one per layer
    fused, gelus = fused_gelu(attention)
    assert gelus == 6
    onnx.checker.check_model(onnx.load_from_string(fused), full_check=True)
    ops = [n.op_type for n in onnx.load_from_string(fused).graph.node]
    assert ops.count("Attention") == 6 and ops.count("Gelu") == 6
    assert "Softmax" not in ops and "Erf" not in ops  # the old blocks are gone, not beside
    feed = _padded_feed(np.random.default_rng(4))
    before = _session(lookups).run(None, feed)[0]
    after = _session(fused).run(None, feed)[0]
    mask = feed["attention_mask"]
    # Every real token's output, not just the pooled vector: the masked keys carry no weight.
    real = mask.astype(bool)
    assert np.allclose(after[real], before[real], atol=2e-4), np.abs(after - before)[real].max()
    cosines = np.sum(_pooled(after, mask) * _pooled(before, mask), axis=1)
    assert float(cosines.min()) >= 0.99999, cosines


def test_the_default_models_graph_fuses_on_top_of_eight_bit_products(model_file: Path) -> None:
    lookups, _ = int8_embedding_lookups(model_file.read_bytes())
    products, _ = int8_matrix_products(lookups)
    fused, turned = fused_attention(products)
    assert turned == 6  # query, key and value stayed float, so their block still matches
    fused, turned = fused_gelu(fused)
    assert turned == 6
    feed = _padded_feed(np.random.default_rng(8))
    mask = feed["attention_mask"]
    together = _session(fused).run(None, feed)[0]
    unfused = _session(products).run(None, feed)[0]
    cosines = np.sum(_pooled(together, mask) * _pooled(unfused, mask), axis=1)
    assert float(cosines.min()) >= 0.999, cosines  # only the 8-bit rounding moves
    # A text alone gives what it gives in the padded batch: padding is masked, not mixed in.
    for row in range(len(mask)):
        length = int(mask[row].sum())
        alone = {k: v[row : row + 1, :length] for k, v in feed.items()}
        own = _session(fused).run(None, alone)[0][0]
        assert np.allclose(own, together[row, :length], atol=1e-4)


def _with_initializer(model: bytes, name: str, value: float) -> bytes:
    loaded = onnx.load_from_string(model)
    for tensor in loaded.graph.initializer:
        if tensor.name == name:
            tensor.CopyFrom(helper.make_tensor(name, tensor.data_type, list(tensor.dims), [value]))
    return loaded.SerializeToString()


def test_attention_with_another_scale_or_no_mask_input_is_left_as_it_is(
    model_file: Path,
) -> None:
    lookups, _ = int8_embedding_lookups(model_file.read_bytes())
    loaded = onnx.load_from_string(lookups)
    # The export scales query and key each by head_size ** -0.25; any other factor is
    # another attention than ONNX Runtime's operator computes.
    scales = [t.name for t in loaded.graph.initializer
              if not t.dims and t.data_type == TensorProto.FLOAT
              and abs(onnx.numpy_helper.to_array(t).item() - 32**-0.25) < 1e-6]  # fmt: skip
    assert len(scales) == 1
    rescaled = _with_initializer(lookups, scales[0], 0.5)
    assert fused_attention(rescaled) == (rescaled, 0)
    renamed = onnx.load_from_string(lookups)
    for node in renamed.graph.node:
        node.input[:] = ["mask_in" if i == "attention_mask" else i for i in node.input]
    for value in renamed.graph.input:
        if value.name == "attention_mask":
            value.name = "mask_in"
    unnamed = renamed.SerializeToString()
    assert fused_attention(unnamed) == (unnamed, 0)


def _gelu_graph(root: float = 2**0.5, half: float = 0.5) -> bytes:
    constants = [helper.make_tensor(n, TensorProto.FLOAT, [], [v])
                 for n, v in (("root", root), ("one", 1.0), ("half", half))]  # fmt: skip
    nodes = [
        helper.make_node("Div", ["x", "root"], ["scaled"]),
        helper.make_node("Erf", ["scaled"], ["erf"]),
        helper.make_node("Add", ["erf", "one"], ["shifted"]),
        helper.make_node("Mul", ["half", "shifted"], ["halved"]),
        helper.make_node("Mul", ["x", "halved"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=constants,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_gelu_is_fused_only_when_it_is_the_exact_gelu() -> None:
    exact = _gelu_graph()
    fused, turned = fused_gelu(exact)
    assert turned == 1
    assert [n.op_type for n in onnx.load_from_string(fused).graph.node] == ["Gelu"]
    x = np.linspace(-6, 6, 30, dtype=np.float32).reshape(6, 5)
    assert np.allclose(_session(fused).run(None, {"x": x})[0],
                       _session(exact).run(None, {"x": x})[0], atol=1e-6)  # fmt: skip
    for other in (_gelu_graph(root=1.7), _gelu_graph(half=0.6), b"\x0a\xff\xff", b""):
        assert fused_gelu(other) == (other, 0)
        assert fused_attention(other) == (other, 0)
