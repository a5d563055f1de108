"""One rewrite of an ONNX graph before ONNX Runtime optimises it: int8 embedding tables stay int8.

The bundled model keeps its weights as int8 with a float scale, each weight read as
``Mul(Cast(int8_table), scale)``. Optimising the graph folds every such pair into a float32
copy, which is what makes it fast for the matrix products, but for the word-embedding table
(30,522 rows of 384, of which a text reads a few dozen) the copy is 47 MB held for nothing.
Looking the rows up first and widening only them gives the same numbers bit for bit (a
gather moves values without arithmetic; the cast and the product are per element, and the
scale is per row, so it is gathered with the rows):

    Gather(Mul(Cast(table), scale), ids)  ==  Mul(Cast(Gather(table, ids)), Gather(scale, ids))

A second rewrite, :func:`int8_matrix_products`, changes the numbers on purpose: a matrix
product with such a weight, ``MatMul(x, Mul(Cast(int8 W), scale[1, N]))``, runs on 8-bit
activations against the file's own int8 weights (no second quantization of the weights):
each row of ``x`` is quantized with a scale of its own and multiplied in integers. Products
whose input other products share (attention's query, key and value) stay float32. On a
2-core AMD EPYC (which has AVX-512 VNNI) one short text embeds about 1.3 times as fast and a
batch about 1.3 times (``tools/bench_embed.py``); the AVX2-only cores the project targets
multiply u8 by s8 without VNNI, so their gain is still to be measured. The vectors move a
little (cosine about 0.999 to the float path's), so a model run this way has
an identity of its own (:data:`ferrex.models.identity.INT8_ACTIVATIONS`).

A third, :func:`fused_attention`, writes each layer's self-attention (the query, key and
value products, their heads' scores, the softmax over the unmasked tokens and the weighted
sum, some thirty operators as the model was exported) as ONNX Runtime's one ``Attention``
operator, with the three weights side by side in one product. In float32 it gives the same
vectors (cosine 0.9999999 to the unfused graph's); after it the 8-bit products round a
little differently, so it is part of the default model's variant. One short text embeds in
about 0.8 of the time, a batch in about 0.85 (the EPYC above).

The model is read and written in protobuf's wire format directly
(:mod:`ferrex.models.onnx_wire`; ferrex does not depend on the ``onnx`` package); only the
graph's nodes (and, for the second rewrite, the model's list of operator sets) are touched,
every other byte is kept.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from ferrex.models.onnx_wire import (
    ATTR_INT,
    ATTR_INTS,
    ATTR_NAME,
    ATTR_TYPE,
    ATTR_TYPE_INT,
    ATTR_TYPE_INTS,
    FLOAT,
    GRAPH_INIT,
    GRAPH_INPUT,
    GRAPH_NODE,
    GRAPH_OUTPUT,
    GRAPH_VALUE_INFO,
    INT8,
    INT32,
    INT64,
    MODEL_GRAPH,
    MODEL_OPSET,
    NODE_DOMAIN,
    OPSET_DOMAIN,
    OPSET_VERSION,
    TENSOR_FLOATS,
    TENSOR_INT64S,
    TENSOR_NAME,
    TENSOR_RAW,
    TENSOR_TYPE,
    UINT8,
    Node,
    cast_to_float,
    imports_domain,
    int_attribute,
    length_field,
    node_field,
    packed_varints,
    parse_fields,
    signed,
    tensor_header,
    value_name,
    varint_field,
)

#: Version of this rewrite, part of the optimised graph's file name: a change to what it does
#: makes the next start optimise again.
REWRITE_VERSION: Final = 4

#: The operator set of ONNX Runtime's own operators (``MatMulIntegerToFloat``).
_MICROSOFT: Final = "com.microsoft"


def int8_embedding_lookups(model: bytes) -> tuple[bytes, int]:
    """``model`` with every ``Gather(Mul(Cast(int8 table), per-row scale), ids)`` turned into
    a lookup of int8 rows widened after it, and how many were turned (0: ``model`` as it was).

    Only a cast and a product that feed nothing else are replaced; anything else is left, and
    bytes that do not parse as protobuf are given back as they are (ONNX Runtime says what is
    wrong with them)."""
    try:
        return _rewrite(model, _turn_lookup)
    except (IndexError, ValueError):  # cut short or not protobuf (UnicodeDecodeError included)
        return model, 0


def int8_matrix_products(model: bytes) -> tuple[bytes, int]:
    """``model`` with every ``MatMul(x, Mul(Cast(int8 W[K, N]), scale[1, N] or [N]))`` whose
    ``x`` no other product reads turned into 8-bit activations, one scale per row, against
    the int8 weights (:func:`_turn_product`), and how many were turned (0: ``model`` as it
    was). Not the same numbers: see the module's text. Only a cast and a product that feed
    nothing else are replaced; bytes that do not parse as protobuf are given back as they
    are."""
    try:
        return _rewrite(model, _turn_product)
    except (IndexError, ValueError):
        return model, 0


def fused_attention(model: bytes) -> tuple[bytes, int]:
    """``model`` with every self-attention written as ONNX Runtime's ``Attention`` operator
    (:func:`_turn_attention`), and how many were turned (0: ``model`` as it was). The same
    numbers in float32 up to rounding; a block that does not match the exported pattern
    exactly (query, key and value products of one input, a scale of ``1/sqrt(head size)``,
    a softmax, a mask made from the graph's ``attention_mask``) is left as it is, and bytes
    that do not parse as protobuf are given back as they are."""
    try:
        return _rewrite(model, _turn_attention)
    except (IndexError, ValueError, struct.error):
        return model, 0


def fused_gelu(model: bytes) -> tuple[bytes, int]:
    """``model`` with every exact GELU written out as ``x * (0.5 * (1 + erf(x / sqrt 2)))``
    (five operators as exported) as ONNX Runtime's one ``Gelu``, which its optimiser then
    joins with the bias added before it; and how many were turned. The same function, to
    float32 rounding."""
    try:
        return _rewrite(model, _turn_gelu)
    except (IndexError, ValueError, struct.error):
        return model, 0


@dataclass(frozen=True, slots=True)
class _Graph:
    nodes: dict[int, Node]  # graph field index → node
    producer: dict[str, int]  # value name → the field index of the node that makes it
    tensors: dict[str, tuple[int, list[int]]]  # initializer → element type, dimensions
    uses: dict[str, int]  # value name → how many node inputs and graph outputs read it
    values: dict[str, bytes] = field(default_factory=dict)  # initializer → its TensorProto
    inputs: set[str] = field(default_factory=set)  # the graph's inputs
    done: set[str] = field(default_factory=set)  # constants a turn has already added
    added: list[bytes] = field(default_factory=list)  # initializers a turn adds (whole fields)


#: Given a node's field index and the graph: what to write in its place and the field
#: indices of the nodes it makes unneeded, or None to leave it.
_Turn = Callable[[int, _Graph], tuple[bytes, list[int]] | None]


def _rewrite(model: bytes, turn: _Turn) -> tuple[bytes, int]:
    top = parse_fields(model)
    graph_at = next((i for i, f in enumerate(top) if f.number == MODEL_GRAPH), None)
    payload = None if graph_at is None else top[graph_at].value
    if graph_at is None or not isinstance(payload, bytes):
        return model, 0
    graph = parse_fields(payload)
    tensors: dict[str, tuple[int, list[int]]] = {}
    values: dict[str, bytes] = {}
    for f in graph:
        if f.number == GRAPH_INIT and isinstance(f.value, bytes):
            name, kind, dims = tensor_header(f.value)
            tensors[name] = (kind, dims)
            values[name] = f.value
    inputs = {value_name(f.value) for f in graph if f.number == GRAPH_INPUT}
    nodes = {i: Node.parse(f.value) for i, f in enumerate(graph) if f.number == GRAPH_NODE
             and isinstance(f.value, bytes)}  # fmt: skip
    producer = {out: i for i, n in nodes.items() for out in n.outputs}
    uses: dict[str, int] = {}
    used_by_graph = [value_name(f.value) for f in graph if f.number == GRAPH_OUTPUT]
    for name in [name for n in nodes.values() for name in n.inputs] + used_by_graph:
        uses[name] = uses.get(name, 0) + 1
    seen = _Graph(nodes, producer, tensors, uses, values, inputs)
    replaced: dict[int, bytes] = {}  # graph field index → what is written in its place
    for index in nodes:
        if index in replaced:  # made unneeded by an earlier turn
            continue
        found = turn(index, seen)
        if found is None:
            continue
        replaced[index], unneeded = found
        for other in unneeded:
            replaced[other] = b""
    if not replaced:
        return model, 0
    gone = {name for i, written in replaced.items() if not written for name in nodes[i].outputs}
    body = b"".join(
        replaced.get(i, f.raw)
        for i, f in enumerate(graph)
        if not (f.number == GRAPH_VALUE_INFO and value_name(f.value) in gone)
    ) + b"".join(seen.added)
    written = b"".join(replaced.values())
    needs_microsoft = length_field(NODE_DOMAIN, _MICROSOFT.encode()) in written
    top_bytes = b"".join(
        length_field(MODEL_GRAPH, body) if i == graph_at else f.raw for i, f in enumerate(top)
    )
    if needs_microsoft and not imports_domain(top, _MICROSOFT):
        opset = length_field(OPSET_DOMAIN, _MICROSOFT.encode()) + varint_field(OPSET_VERSION, 1)
        top_bytes += length_field(MODEL_OPSET, opset)
    return top_bytes, sum(1 for b in replaced.values() if b)


def _turn_lookup(index: int, graph: _Graph) -> tuple[bytes, list[int]] | None:
    gather = graph.nodes[index]
    found = _embedding_pattern(gather, graph.nodes, graph.producer, graph.tensors, graph.uses)
    if found is None:
        return None
    mul_at, cast_at, table, scale = found
    out, ids = gather.outputs[0], gather.inputs[1]
    axis = list(gather.attributes)
    step = gather.name
    written = (
        node_field("Gather", f"{step}/int8_rows", [table, ids], [f"{out}/int8"], axis)
        + node_field("Gather", f"{step}/row_scales", [scale, ids], [f"{out}/scale"], axis)
        + node_field("Cast", f"{step}/widen", [f"{out}/int8"], [f"{out}/float"], [cast_to_float()])
        + node_field("Mul", f"{step}/scaled", [f"{out}/float", f"{out}/scale"], [out], [])
    )
    return written, [mul_at, cast_at]


def _turn_product(index: int, graph: _Graph) -> tuple[bytes, list[int]] | None:
    """A matrix product with an int8 weight as 8-bit activations, one scale per row.

    Each row of ``x`` (a token's activations) is scaled by ``step = max|row| / 127``, rounded,
    and shifted by 128 into uint8 (zero point 128: the same as signed symmetric quantization,
    but in the unsigned-by-signed form x86 cores multiply fastest);
    ``MatMulIntegerToFloat`` multiplies it by the int8 weight in integers and scales the
    columns by the weight's scale; the product with ``step`` scales the rows back. A row's
    numbers depend on that row alone, so a text's vector does not depend on the texts or the
    padding batched with it (ONNX Runtime's ``DynamicQuantizeMatMul`` takes one scale for the
    whole batch).

    A product whose input other products read too stays float32: in these encoders that is
    a layer's query, key and value, whose errors attention's scores amplify. Measured on the
    bundled model (mean-pooled vectors of 210 texts against float32's): all 36 products
    quantized, cosine median 0.9980; the 18 query, key and value products kept float, 0.9993,
    for three quarters of the speed (on the EPYC above, one 17-token text 3.6 ms instead of
    2.9-3.5 with all quantized; float 4.3-4.8)."""
    product = graph.nodes[index]
    if product.op != "MatMul" or product.domain or len(product.inputs) != 2:
        return None
    found = _dequantized_weight(product.inputs[1], graph)
    if found is None:
        return None
    mul_at, cast_at, weight, scale = found
    x = product.inputs[0]
    if _products_reading(x, graph) > 1:
        return None
    quantized, inverse = f"{x}/ferrex_u8", f"{x}/ferrex_inverse"
    written = _quantize_rows(x, quantized, inverse, graph)
    columns = f"{product.outputs[0]}/ferrex_columns"
    written += node_field(
        "MatMulIntegerToFloat", f"{product.name}/int8",
        [quantized, weight, _constant(graph, "one"), scale, _constant(graph, "zero_point")],
        [columns], [], domain=_MICROSOFT,
    )  # fmt: skip
    written += node_field("Div", f"{product.name}/rows", [columns, inverse], product.outputs, [])
    return written, [mul_at, cast_at]


#: The scalars the product rewrite reads, by short name: (element type, little-endian bytes).
_CONSTANTS: Final[dict[str, tuple[int, bytes]]] = {
    "tiny": (FLOAT, struct.pack("<f", 1e-12)),  # a row of zeros gets a step, not a 0/0
    "levels": (FLOAT, struct.pack("<f", 127.0)),
    "one": (FLOAT, struct.pack("<f", 1.0)),
    "zero_point": (UINT8, bytes([128])),
}


def _constant(graph: _Graph, short: str) -> str:
    name = f"ferrex_int8/{short}"
    if name not in graph.done:
        kind, raw = _CONSTANTS[short]
        tensor = (
            varint_field(TENSOR_TYPE, kind)
            + length_field(TENSOR_NAME, name.encode())
            + length_field(TENSOR_RAW, raw)
        )
        graph.added.append(length_field(GRAPH_INIT, tensor))
        graph.done.add(name)
    return name


def _quantize_rows(x: str, quantized: str, inverse: str, graph: _Graph) -> bytes:
    """Nodes making ``quantized`` (uint8, ``round(x * inverse) + 128``, saturated) and
    ``inverse`` (float, ``127 / max(max|row|, tiny)`` per row of ``x``, kept as
    ``[..., 1]``): the row's step is ``1 / inverse``."""
    at = f"{x}/ferrex_q"
    last_axis = (
        length_field(ATTR_NAME, b"axes")
        + varint_field(ATTR_INTS, (1 << 64) - 1)  # -1 as an int64
        + varint_field(ATTR_TYPE, ATTR_TYPE_INTS)
    )
    tiny, levels = _constant(graph, "tiny"), _constant(graph, "levels")
    one, zero_point = _constant(graph, "one"), _constant(graph, "zero_point")
    # QuantizeLinear rounds half to even, as Round does, adds the zero point and saturates.
    return (
        node_field("Abs", f"{at}/abs", [x], [f"{at}/abs"], [])
        + node_field("ReduceMax", f"{at}/largest", [f"{at}/abs"], [f"{at}/largest"], [last_axis])
        + node_field("Max", f"{at}/nonzero", [f"{at}/largest", tiny], [f"{at}/nonzero"], [])
        + node_field("Div", f"{at}/inverse", [levels, f"{at}/nonzero"], [inverse], [])
        + node_field("Mul", f"{at}/scaled", [x, inverse], [f"{at}/scaled"], [])
        + node_field(
            "QuantizeLinear", f"{at}/uint8", [f"{at}/scaled", one, zero_point], [quantized], []
        )
    )


def _products_reading(value: str, graph: _Graph) -> int:
    return sum(1 for n in graph.nodes.values() if n.op == "MatMul" and n.inputs[:1] == [value])


def _dequantized_weight(value: str, graph: _Graph) -> tuple[int, int, str, str] | None:
    """(the Mul's and the Cast's field indices, the int8 weight, its scale) when ``value`` is
    made by ``Mul(Cast(int8 W[K, N]), scale)`` with one float scale per column (``[1, N]`` or
    ``[N]``) and neither the Mul's nor the Cast's output is read elsewhere; else None."""
    mul_at = graph.producer.get(value)
    if mul_at is None or graph.uses.get(value) != 1:
        return None
    mul = graph.nodes[mul_at]
    if mul.op != "Mul" or mul.domain or len(mul.inputs) != 2:
        return None
    for cast_input, scale in (mul.inputs, mul.inputs[::-1]):
        cast_at = graph.producer.get(cast_input)
        if cast_at is None or graph.uses.get(cast_input) != 1:
            continue
        cast = graph.nodes[cast_at]
        if cast.op != "Cast" or cast.attribute_int("to") != FLOAT or len(cast.inputs) != 1:
            continue
        weight_kind, weight_dims = graph.tensors.get(cast.inputs[0], (0, []))
        scale_kind, scale_dims = graph.tensors.get(scale, (0, []))
        if (
            weight_kind == INT8
            and len(weight_dims) == 2
            and scale_kind == FLOAT
            and scale_dims in ([1, weight_dims[1]], [weight_dims[1]])
        ):
            return mul_at, cast_at, cast.inputs[0], scale
    return None


def _embedding_pattern(
    gather: Node,
    nodes: dict[int, Node],
    producer: dict[str, int],
    tensors: dict[str, tuple[int, list[int]]],
    uses: dict[str, int],
) -> tuple[int, int, str, str] | None:
    """(the Mul's and the Cast's field indices, the int8 table, the scale) when ``gather``
    looks rows up in ``Mul(Cast(int8 table), scale[rows, 1])`` along axis 0; else None."""
    if gather.op != "Gather" or gather.domain or len(gather.inputs) != 2:
        return None
    if gather.attribute_int("axis") not in (None, 0):
        return None
    mul_at = producer.get(gather.inputs[0])
    if mul_at is None or nodes[mul_at].op != "Mul" or len(nodes[mul_at].inputs) != 2:
        return None
    mul = nodes[mul_at]
    for cast_input, scale in (mul.inputs, mul.inputs[::-1]):
        cast_at = producer.get(cast_input)
        if cast_at is None:
            continue
        cast = nodes[cast_at]
        if cast.op != "Cast" or cast.attribute_int("to") != FLOAT or len(cast.inputs) != 1:
            continue
        table_kind, table_dims = tensors.get(cast.inputs[0], (0, []))
        scale_kind, scale_dims = tensors.get(scale, (0, []))
        if (
            table_kind == INT8
            and len(table_dims) == 2
            and scale_kind == FLOAT
            and scale_dims == [table_dims[0], 1]
            and uses.get(gather.inputs[0]) == 1
            and uses.get(cast_input) == 1
        ):
            return mul_at, cast_at, cast.inputs[0], scale
    return None


def _numbers(graph: _Graph, name: str) -> list[float] | None:
    """The values of a small float32 or int64 initializer, or None for anything else."""
    payload = graph.values.get(name)
    kind = graph.tensors.get(name, (0, []))[0]
    if payload is None or kind not in (FLOAT, INT64):
        return None
    for f in parse_fields(payload):
        if f.number == TENSOR_RAW and isinstance(f.value, bytes):
            width, code = (4, "f") if kind == FLOAT else (8, "q")
            return list(struct.unpack(f"<{len(f.value) // width}{code}", f.value))
        if kind == FLOAT and f.number == TENSOR_FLOATS and isinstance(f.value, bytes):
            return list(struct.unpack(f"<{len(f.value) // 4}f", f.value))
        if kind == INT64 and f.number == TENSOR_INT64S:
            return [signed(v) for v in (packed_varints(f.value) if isinstance(f.value, bytes)
                                         else [f.value])]  # fmt: skip
    return []


def _made_by(graph: _Graph, value: str, op: str) -> Node | None:
    at = graph.producer.get(value)
    node = None if at is None else graph.nodes[at]
    return node if node is not None and node.op == op and not node.domain else None


def _readers(graph: _Graph, value: str) -> list[int]:
    return [i for i, n in graph.nodes.items() if value in n.inputs]


def _projection(graph: _Graph, value: str) -> tuple[int, str, str, str, int] | None:
    """(the product's field index, its input, its weight, the bias, the width N) when
    ``value`` is ``Add(MatMul(x, W), b)`` with ``b`` a float32 initializer of ``[N]``."""
    add = _made_by(graph, value, "Add")
    if add is None or len(add.inputs) != 2:
        return None
    for made, bias in (add.inputs, add.inputs[::-1]):
        kind, dims = graph.tensors.get(bias, (0, []))
        at = graph.producer.get(made)
        if kind != FLOAT or len(dims) != 1 or at is None:
            continue
        product = graph.nodes[at]
        if product.op == "MatMul" and not product.domain and len(product.inputs) == 2:
            return at, product.inputs[0], product.inputs[1], bias, dims[0]
    return None


def _scale_along(graph: _Graph, value: str, start: str) -> float | None:
    """The product of the scalar factors on the way from ``start`` to ``value`` through
    reshapes, transposes and products by a float32 scalar only, or None if it is not such a
    way (at most eight steps)."""
    scale = 1.0
    for _ in range(8):
        if value == start:
            return scale
        at = graph.producer.get(value)
        node = None if at is None else graph.nodes[at]
        if node is None or node.domain:
            return None
        if node.op in ("Reshape", "Transpose"):
            value = node.inputs[0]
        elif node.op == "Mul" and len(node.inputs) == 2:
            for data, factor in (node.inputs, node.inputs[::-1]):
                number = _numbers(graph, factor)
                if number is not None and len(number) == 1:
                    scale, value = scale * number[0], data
                    break
            else:
                return None
        else:
            return None
    return None


def _reaches(graph: _Graph, value: str, target: str, depth: int = 16) -> bool:
    """Whether ``value`` is computed from ``target`` within ``depth`` operators."""
    frontier, seen = {value}, {value}
    for _ in range(depth + 1):
        if target in frontier:
            return True
        after: set[str] = set()
        for name in frontier:
            at = graph.producer.get(name)
            if at is not None:
                after.update(n for n in graph.nodes[at].inputs if n and n not in seen)
        seen |= after
        frontier = after
    return False


def _softmax_before(graph: _Graph, value: str) -> Node | None:
    """The Softmax whose output ``value`` is, or is within two operators of (the export's
    guard against rows with every token masked: ``Where(IsNaN(p), 0, p)``)."""
    frontier = [value]
    for _ in range(3):
        after = []
        for name in frontier:
            at = graph.producer.get(name)
            if at is None:
                continue
            node = graph.nodes[at]
            if node.op == "Softmax" and not node.domain:
                return node
            if node.op not in ("Where", "IsNaN", "Cast"):
                return None
            after.extend(node.inputs)
        frontier = after
    return None


def _drop(graph: _Graph, index: int) -> list[int]:
    """The nodes that nothing reads any more once the node at ``index`` is gone (``uses``
    updated as they go), not counting that node itself."""
    gone, stack = {index}, [index]
    while stack:
        for name in graph.nodes[stack.pop()].inputs:
            graph.uses[name] = graph.uses.get(name, 0) - 1
            at = graph.producer.get(name)
            if (
                at is not None
                and at not in gone
                and all(graph.uses.get(o, 0) <= 0 for o in graph.nodes[at].outputs)
            ):
                gone.add(at)
                stack.append(at)
    return sorted(gone - {index})


#: The graph input a BERT-style export's attention mask comes from.
_MASK_INPUT: Final = "attention_mask"


def _turn_attention(index: int, graph: _Graph) -> tuple[bytes, list[int]] | None:
    """One layer's self-attention, ending at the node ``index``, as
    ``Attention(x, Concat(Wq, Wk, Wv), Concat(bq, bk, bv), mask)``.

    The pattern, from the end back: ``out = Reshape(Transpose(MatMul(p, v')))`` with
    ``v' = Transpose(Reshape(MatMul(x, Wv) + bv))``; exactly three products read ``x``,
    the other two ``q = MatMul(x, Wq) + bq`` and ``k``; ``p`` is (within two operators) a
    ``Softmax`` over the last axis of ``MatMul(q', k') + m``, where ``q'`` and ``k'`` are
    ``q`` and ``k`` through reshapes, transposes and scalar factors whose product is
    ``1/sqrt(head size)``, and ``m`` is computed from the graph's ``attention_mask``. The
    head size is the last number of the shape ``v`` is split into heads with. The two
    concatenations are of constants, which ONNX Runtime folds once when it optimises; the
    mask is the input cast to int32 (one cast for every layer). The nodes that only the old
    block read are removed."""
    out = graph.nodes[index]
    if out.op != "Reshape" or out.domain or _MASK_INPUT not in graph.inputs:
        return None
    heads_first = [0, 2, 1, 3]
    merged = _made_by(graph, out.inputs[0], "Transpose")
    context = None if merged is None else _made_by(graph, merged.inputs[0], "MatMul")
    if merged is None or merged.attribute_ints("perm") != heads_first or context is None:
        return None
    v_heads = _made_by(graph, context.inputs[1], "Transpose")
    v_split = None if v_heads is None else _made_by(graph, v_heads.inputs[0], "Reshape")
    if v_heads is None or v_heads.attribute_ints("perm") != heads_first or v_split is None:
        return None
    v = _projection(graph, v_split.inputs[0])
    if v is None:
        return None
    x = v[1]
    readers = [i for i, n in graph.nodes.items()
               if n.op == "MatMul" and not n.domain and n.inputs[:1] == [x]]  # fmt: skip
    if len(readers) != 3 or v[0] not in readers:
        return None
    others: dict[int, tuple[str, tuple[int, str, str, str, int]]] = {}
    for at in readers:
        if at == v[0]:
            continue
        adds = _readers(graph, graph.nodes[at].outputs[0])
        if len(adds) != 1:
            return None
        added = graph.nodes[adds[0]].outputs[0]
        found = _projection(graph, added)
        if found is None or found[0] != at:
            return None
        others[at] = (added, found)
    softmax = _softmax_before(graph, context.inputs[0])
    if softmax is None or softmax.attribute_int("axis") not in (None, -1, 3):
        return None
    scored = _made_by(graph, softmax.inputs[0], "Add")
    if scored is None or len(scored.inputs) != 2:
        return None
    products = [_made_by(graph, made, "MatMul") for made in scored.inputs]
    score = next((p for p in products if p is not None and len(p.inputs) == 2), None)
    if score is None:
        return None
    mask_term = scored.inputs[1 - products.index(score)]
    if not _reaches(graph, mask_term, _MASK_INPUT):
        return None
    shape = v_split.inputs[1]
    shape_of = _made_by(graph, shape, "Concat")
    last = _numbers(graph, shape_of.inputs[-1]) if shape_of is not None else None
    if shape_of is None:
        last = _numbers(graph, shape)
    if not last or last[-1] <= 0:
        return None
    head_size, width = int(last[-1]), v[4]
    # Which of the other two is the query: the one the scores' left side comes from.
    for q_at, k_at in (tuple(others), tuple(others)[::-1]):
        q_scale = _scale_along(graph, score.inputs[0], others[q_at][0])
        k_scale = _scale_along(graph, score.inputs[1], others[k_at][0])
        if q_scale is not None and k_scale is not None:
            break
    else:
        return None
    q, k = others[q_at][1], others[k_at][1]
    if q[4] != width or k[4] != width or width % head_size:
        return None
    if abs(q_scale * k_scale * head_size**0.5 - 1.0) > 1e-5:
        return None

    step = out.name or out.outputs[0]
    weights, biases = f"{step}/ferrex_qkv_weights", f"{step}/ferrex_qkv_biases"
    mask = "ferrex_attention/mask"
    written = b""
    if mask not in graph.done:
        to_int32 = (
            length_field(ATTR_NAME, b"to")
            + varint_field(ATTR_INT, INT32)
            + varint_field(ATTR_TYPE, ATTR_TYPE_INT)
        )
        written += node_field("Cast", f"{mask}/int32", [_MASK_INPUT], [mask], [to_int32])
        graph.done.add(mask)
        graph.uses[_MASK_INPUT] = graph.uses.get(_MASK_INPUT, 0) + 1
    written += node_field("Concat", f"{step}/ferrex_qkv_weights", [q[2], k[2], v[2]], [weights],
                     [int_attribute("axis", 1)])  # fmt: skip
    written += node_field("Concat", f"{step}/ferrex_qkv_biases", [q[3], k[3], v[3]], [biases],
                     [int_attribute("axis", 0)])  # fmt: skip
    written += node_field(
        "Attention", f"{step}/ferrex_attention", [x, weights, biases, mask], out.outputs,
        [int_attribute("num_heads", width // head_size)], domain=_MICROSOFT,
    )  # fmt: skip
    for name in (x, q[2], k[2], v[2], q[3], k[3], v[3]):
        graph.uses[name] = graph.uses.get(name, 0) + 1
    return written, _drop(graph, index)


def _times_constant(graph: _Graph, node: Node | None, value: float) -> str | None:
    """The other input of ``node`` (a two-input operator) when one input is the float32
    scalar ``value`` (to a relative 1e-6), else None."""
    if node is None or len(node.inputs) != 2:
        return None
    for data, factor in (node.inputs, node.inputs[::-1]):
        number = _numbers(graph, factor)
        if number is not None and len(number) == 1 and abs(number[0] - value) <= 1e-6 * value:
            return data
    return None


def _turn_gelu(index: int, graph: _Graph) -> tuple[bytes, list[int]] | None:
    """``Mul(x, Mul(0.5, Add(Erf(Div(x, sqrt 2)), 1)))`` (either order in each product and
    sum), each intermediate read by the next operator alone, as ``Gelu(x)``."""
    outer = graph.nodes[index]
    if outer.op != "Mul" or outer.domain or len(outer.inputs) != 2:
        return None
    for x, half_of in (outer.inputs, outer.inputs[::-1]):
        halved = _made_by(graph, half_of, "Mul")
        summed_value = _times_constant(graph, halved, 0.5)
        summed = None if summed_value is None else _made_by(graph, summed_value, "Add")
        erf_value = _times_constant(graph, summed, 1.0)
        erf = None if erf_value is None else _made_by(graph, erf_value, "Erf")
        divided = None if erf is None else _made_by(graph, erf.inputs[0], "Div")
        if erf is None or divided is None or len(divided.inputs) != 2 or divided.inputs[0] != x:
            continue
        root = _numbers(graph, divided.inputs[1])
        if root is None or len(root) != 1 or abs(root[0] - 2**0.5) > 1e-6:
            continue
        chain = [half_of, summed_value, erf_value, erf.inputs[0]]
        if any(v is None or graph.uses.get(v) != 1 for v in chain):
            continue
        written = node_field("Gelu", f"{outer.name}/ferrex_gelu", [x], outer.outputs, [],
                        domain=_MICROSOFT)  # fmt: skip
        graph.uses[x] = graph.uses.get(x, 0) + 1
        return written, _drop(graph, index)
    return None
