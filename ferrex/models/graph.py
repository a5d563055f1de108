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

The model is read and written in protobuf's wire format directly (ferrex does not depend on
the ``onnx`` package); only the graph's nodes (and, for the second rewrite, the model's list
of operator sets) are touched, every other byte is kept.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

#: Version of this rewrite, part of the optimised graph's file name: a change to what it does
#: makes the next start optimise again.
REWRITE_VERSION: Final = 3

#: The operator set of ONNX Runtime's own operators (``MatMulIntegerToFloat``).
_MICROSOFT: Final = "com.microsoft"

# Field numbers of onnx.proto3 (ModelProto.graph, .opset_import; GraphProto.node,
# .initializer, .output, .value_info; OperatorSetIdProto; NodeProto; TensorProto;
# AttributeProto), and the element types used.
_MODEL_GRAPH, _MODEL_OPSET = 7, 8
_GRAPH_NODE, _GRAPH_INIT, _GRAPH_OUTPUT, _GRAPH_VALUE_INFO = 1, 5, 12, 13
_OPSET_DOMAIN, _OPSET_VERSION = 1, 2
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_ATTR, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME, _TENSOR_RAW = 1, 2, 8, 9
_ATTR_NAME, _ATTR_INT, _ATTR_INTS, _ATTR_TYPE = 1, 3, 8, 20
_FLOAT, _UINT8, _INT8, _ATTR_TYPE_INT, _ATTR_TYPE_INTS = 1, 2, 3, 2, 7
_VARINT, _LENGTH = 0, 2


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


@dataclass(frozen=True, slots=True)
class _Field:
    number: int
    wire: int
    value: int | bytes  # a varint's value, or a length-delimited field's payload
    raw: bytes  # the whole field as it was written


def _fields(data: bytes) -> list[_Field]:
    """The top-level fields of one protobuf message."""
    fields: list[_Field] = []
    at = 0
    while at < len(data):
        start = at
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, at = _varint(data, at)
        elif wire == _LENGTH:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):  # fixed 64 / 32 bits
            width = 8 if wire == 1 else 4
            value, at = data[at : at + width], at + width
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        fields.append(_Field(number, wire, value, data[start:at]))
    return fields


def _length_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _LENGTH) + _encode_varint(len(payload)) + payload


def _varint_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3 | _VARINT) + _encode_varint(value)


def _text(value: int | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else ""


@dataclass(slots=True)
class _Node:
    raw: bytes
    op: str = ""
    domain: str = ""
    name: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attributes: list[bytes] = field(default_factory=list)  # each AttributeProto's payload

    @classmethod
    def parse(cls, raw: bytes) -> _Node:
        node = cls(raw)
        for f in _fields(raw):
            if f.number == _NODE_INPUT:
                node.inputs.append(_text(f.value))
            elif f.number == _NODE_OUTPUT:
                node.outputs.append(_text(f.value))
            elif f.number == _NODE_OP:
                node.op = _text(f.value)
            elif f.number == _NODE_NAME:
                node.name = _text(f.value)
            elif f.number == _NODE_DOMAIN:
                node.domain = _text(f.value)
            elif f.number == _NODE_ATTR and isinstance(f.value, bytes):
                node.attributes.append(f.value)
        return node

    def attribute_int(self, name: str) -> int | None:
        for payload in self.attributes:
            fields = {f.number: f.value for f in _fields(payload)}
            if fields.get(_ATTR_NAME) == name.encode():
                value = fields.get(_ATTR_INT)
                return value if isinstance(value, int) else None
        return None


def _node(
    op: str,
    name: str,
    inputs: list[str],
    outputs: list[str],
    attributes: list[bytes],
    domain: str = "",
) -> bytes:
    body = b"".join(_length_field(_NODE_INPUT, i.encode()) for i in inputs)
    body += b"".join(_length_field(_NODE_OUTPUT, o.encode()) for o in outputs)
    body += _length_field(_NODE_NAME, name.encode()) + _length_field(_NODE_OP, op.encode())
    body += b"".join(_length_field(_NODE_ATTR, a) for a in attributes)
    if domain:
        body += _length_field(_NODE_DOMAIN, domain.encode())
    return _length_field(_GRAPH_NODE, body)


def _cast_to_float() -> bytes:
    return (
        _length_field(_ATTR_NAME, b"to")
        + _varint_field(_ATTR_INT, _FLOAT)
        + _varint_field(_ATTR_TYPE, _ATTR_TYPE_INT)
    )


def _tensor(payload: bytes) -> tuple[str, int, list[int]]:
    """An initializer's name, element type and dimensions (its data is not read)."""
    name, kind, dims = "", 0, []
    for f in _fields(payload):
        if f.number == _TENSOR_NAME:
            name = _text(f.value)
        elif f.number == _TENSOR_TYPE and isinstance(f.value, int):
            kind = f.value
        elif f.number == _TENSOR_DIMS:
            if isinstance(f.value, int):
                dims.append(f.value)
            else:  # packed
                at = 0
                while at < len(f.value):
                    dim, at = _varint(f.value, at)
                    dims.append(dim)
    return name, kind, dims


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


@dataclass(frozen=True, slots=True)
class _Graph:
    nodes: dict[int, _Node]  # graph field index → node
    producer: dict[str, int]  # value name → the field index of the node that makes it
    tensors: dict[str, tuple[int, list[int]]]  # initializer → element type, dimensions
    uses: dict[str, int]  # value name → how many node inputs and graph outputs read it
    done: set[str] = field(default_factory=set)  # constants a turn has already added
    added: list[bytes] = field(default_factory=list)  # initializers a turn adds (whole fields)


#: Given a node's field index and the graph: what to write in its place and the field
#: indices of the nodes it makes unneeded, or None to leave it.
_Turn = Callable[[int, _Graph], tuple[bytes, list[int]] | None]


def _rewrite(model: bytes, turn: _Turn) -> tuple[bytes, int]:
    top = _fields(model)
    graph_at = next((i for i, f in enumerate(top) if f.number == _MODEL_GRAPH), None)
    payload = None if graph_at is None else top[graph_at].value
    if graph_at is None or not isinstance(payload, bytes):
        return model, 0
    graph = _fields(payload)
    tensors: dict[str, tuple[int, list[int]]] = {}
    for f in graph:
        if f.number == _GRAPH_INIT and isinstance(f.value, bytes):
            name, kind, dims = _tensor(f.value)
            tensors[name] = (kind, dims)
    nodes = {i: _Node.parse(f.value) for i, f in enumerate(graph) if f.number == _GRAPH_NODE
             and isinstance(f.value, bytes)}  # fmt: skip
    producer = {out: i for i, n in nodes.items() for out in n.outputs}
    uses: dict[str, int] = {}
    used_by_graph = [_value_name(f.value) for f in graph if f.number == _GRAPH_OUTPUT]
    for name in [name for n in nodes.values() for name in n.inputs] + used_by_graph:
        uses[name] = uses.get(name, 0) + 1
    seen = _Graph(nodes, producer, tensors, uses)
    replaced: dict[int, bytes] = {}  # graph field index → what is written in its place
    for index in nodes:
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
        if not (f.number == _GRAPH_VALUE_INFO and _value_name(f.value) in gone)
    ) + b"".join(seen.added)
    written = b"".join(replaced.values())
    needs_microsoft = _length_field(_NODE_DOMAIN, _MICROSOFT.encode()) in written
    top_bytes = b"".join(
        _length_field(_MODEL_GRAPH, body) if i == graph_at else f.raw for i, f in enumerate(top)
    )
    if needs_microsoft and not _imports_domain(top, _MICROSOFT):
        opset = _length_field(_OPSET_DOMAIN, _MICROSOFT.encode()) + _varint_field(_OPSET_VERSION, 1)
        top_bytes += _length_field(_MODEL_OPSET, opset)
    return top_bytes, sum(1 for b in replaced.values() if b)


def _imports_domain(top: list[_Field], domain: str) -> bool:
    for f in top:
        if f.number == _MODEL_OPSET and isinstance(f.value, bytes):
            names = [g.value for g in _fields(f.value) if g.number == _OPSET_DOMAIN]
            if domain.encode() in names:
                return True
    return False


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
        _node("Gather", f"{step}/int8_rows", [table, ids], [f"{out}/int8"], axis)
        + _node("Gather", f"{step}/row_scales", [scale, ids], [f"{out}/scale"], axis)
        + _node("Cast", f"{step}/widen", [f"{out}/int8"], [f"{out}/float"], [_cast_to_float()])
        + _node("Mul", f"{step}/scaled", [f"{out}/float", f"{out}/scale"], [out], [])
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
    quantized, step = f"{x}/ferrex_u8", f"{x}/ferrex_step"
    written = _quantize_rows(x, quantized, step, graph)
    columns = f"{product.outputs[0]}/ferrex_columns"
    written += _node(
        "MatMulIntegerToFloat", f"{product.name}/int8",
        [quantized, weight, _constant(graph, "one"), scale, _constant(graph, "zero_point")],
        [columns], [], domain=_MICROSOFT,
    )  # fmt: skip
    written += _node("Mul", f"{product.name}/rows", [columns, step], product.outputs, [])
    return written, [mul_at, cast_at]


#: The scalars the product rewrite reads, by short name: (element type, little-endian bytes).
_CONSTANTS: Final[dict[str, tuple[int, bytes]]] = {
    "tiny": (_FLOAT, struct.pack("<f", 1e-12)),  # a row of zeros gets a step, not a 0/0
    "levels": (_FLOAT, struct.pack("<f", 127.0)),
    "shift": (_FLOAT, struct.pack("<f", 128.0)),
    "one": (_FLOAT, struct.pack("<f", 1.0)),
    "zero_point": (_UINT8, bytes([128])),
}


def _constant(graph: _Graph, short: str) -> str:
    name = f"ferrex_int8/{short}"
    if name not in graph.done:
        kind, raw = _CONSTANTS[short]
        tensor = (
            _varint_field(_TENSOR_TYPE, kind)
            + _length_field(_TENSOR_NAME, name.encode())
            + _length_field(_TENSOR_RAW, raw)
        )
        graph.added.append(_length_field(_GRAPH_INIT, tensor))
        graph.done.add(name)
    return name


def _quantize_rows(x: str, quantized: str, step: str, graph: _Graph) -> bytes:
    """Nodes making ``quantized`` (uint8, ``round(x / step) + 128``) and ``step`` (float,
    ``max(max|row|, tiny) / 127`` per row of ``x``, kept as ``[..., 1]``)."""
    at = f"{x}/ferrex_q"
    last_axis = (
        _length_field(_ATTR_NAME, b"axes")
        + _varint_field(_ATTR_INTS, (1 << 64) - 1)  # -1 as an int64
        + _varint_field(_ATTR_TYPE, _ATTR_TYPE_INTS)
    )
    to_uint8 = (
        _length_field(_ATTR_NAME, b"to")
        + _varint_field(_ATTR_INT, _UINT8)
        + _varint_field(_ATTR_TYPE, _ATTR_TYPE_INT)
    )
    tiny, levels, shift = (_constant(graph, c) for c in ("tiny", "levels", "shift"))
    return (
        _node("Abs", f"{at}/abs", [x], [f"{at}/abs"], [])
        + _node("ReduceMax", f"{at}/largest", [f"{at}/abs"], [f"{at}/largest"], [last_axis])
        + _node("Max", f"{at}/nonzero", [f"{at}/largest", tiny], [f"{at}/nonzero"], [])
        + _node("Div", f"{at}/step", [f"{at}/nonzero", levels], [step], [])
        + _node("Div", f"{at}/scaled", [x, step], [f"{at}/scaled"], [])
        + _node("Round", f"{at}/rounded", [f"{at}/scaled"], [f"{at}/rounded"], [])
        + _node("Add", f"{at}/shifted", [f"{at}/rounded", shift], [f"{at}/shifted"], [])
        + _node("Cast", f"{at}/uint8", [f"{at}/shifted"], [quantized], [to_uint8])
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
        if cast.op != "Cast" or cast.attribute_int("to") != _FLOAT or len(cast.inputs) != 1:
            continue
        weight_kind, weight_dims = graph.tensors.get(cast.inputs[0], (0, []))
        scale_kind, scale_dims = graph.tensors.get(scale, (0, []))
        if (
            weight_kind == _INT8
            and len(weight_dims) == 2
            and scale_kind == _FLOAT
            and scale_dims in ([1, weight_dims[1]], [weight_dims[1]])
        ):
            return mul_at, cast_at, cast.inputs[0], scale
    return None


def _value_name(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        return ""
    return next((_text(f.value) for f in _fields(value) if f.number == 1), "")


def _embedding_pattern(
    gather: _Node,
    nodes: dict[int, _Node],
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
        if cast.op != "Cast" or cast.attribute_int("to") != _FLOAT or len(cast.inputs) != 1:
            continue
        table_kind, table_dims = tensors.get(cast.inputs[0], (0, []))
        scale_kind, scale_dims = tensors.get(scale, (0, []))
        if (
            table_kind == _INT8
            and len(table_dims) == 2
            and scale_kind == _FLOAT
            and scale_dims == [table_dims[0], 1]
            and uses.get(gather.inputs[0]) == 1
            and uses.get(cast_input) == 1
        ):
            return mul_at, cast_at, cast.inputs[0], scale
    return None
