"""One rewrite of an ONNX graph before ONNX Runtime optimises it: int8 embedding tables stay int8.

The bundled model keeps its weights as int8 with a float scale, each weight read as
``Mul(Cast(int8_table), scale)``. Optimising the graph folds every such pair into a float32
copy, which is what makes it fast for the matrix products, but for the word-embedding table
(30,522 rows of 384, of which a text reads a few dozen) the copy is 47 MB held for nothing.
Looking the rows up first and widening only them gives the same numbers bit for bit (a
gather moves values without arithmetic; the cast and the product are per element, and the
scale is per row, so it is gathered with the rows):

    Gather(Mul(Cast(table), scale), ids)  ==  Mul(Cast(Gather(table, ids)), Gather(scale, ids))

The model is read and written in protobuf's wire format directly (ferrex does not depend on
the ``onnx`` package); only the graph's nodes are touched, every other byte is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

#: Version of this rewrite, part of the optimised graph's file name: a change to what it does
#: makes the next start optimise again.
REWRITE_VERSION: Final = 1

# Field numbers of onnx.proto3 (ModelProto.graph; GraphProto.node, .initializer,
# .output, .value_info; NodeProto; TensorProto; AttributeProto), and the element types used.
_MODEL_GRAPH, _GRAPH_NODE, _GRAPH_INIT, _GRAPH_OUTPUT, _GRAPH_VALUE_INFO = 7, 1, 5, 12, 13
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_ATTR, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME = 1, 2, 8
_ATTR_NAME, _ATTR_INT, _ATTR_TYPE = 1, 3, 20
_FLOAT, _INT8, _ATTR_TYPE_INT = 1, 3, 2
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
    op: str, name: str, inputs: list[str], outputs: list[str], attributes: list[bytes]
) -> bytes:
    body = b"".join(_length_field(_NODE_INPUT, i.encode()) for i in inputs)
    body += b"".join(_length_field(_NODE_OUTPUT, o.encode()) for o in outputs)
    body += _length_field(_NODE_NAME, name.encode()) + _length_field(_NODE_OP, op.encode())
    body += b"".join(_length_field(_NODE_ATTR, a) for a in attributes)
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
        return _rewrite(model)
    except (IndexError, ValueError):  # cut short or not protobuf (UnicodeDecodeError included)
        return model, 0


def _rewrite(model: bytes) -> tuple[bytes, int]:
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
    replaced: dict[int, bytes] = {}  # graph field index → what is written in its place
    for index, gather in nodes.items():
        found = _embedding_pattern(gather, nodes, producer, tensors, uses)
        if found is None:
            continue
        mul_at, cast_at, table, scale = found
        out, ids = gather.outputs[0], gather.inputs[1]
        axis = list(gather.attributes)
        step = gather.name
        replaced[index] = (
            _node("Gather", f"{step}/int8_rows", [table, ids], [f"{out}/int8"], axis)
            + _node("Gather", f"{step}/row_scales", [scale, ids], [f"{out}/scale"], axis)
            + _node("Cast", f"{step}/widen", [f"{out}/int8"], [f"{out}/float"], [_cast_to_float()])
            + _node("Mul", f"{step}/scaled", [f"{out}/float", f"{out}/scale"], [out], [])
        )
        replaced[mul_at] = replaced[cast_at] = b""
    if not replaced:
        return model, 0
    gone = {name for i, written in replaced.items() if not written for name in nodes[i].outputs}
    body = b"".join(
        replaced.get(i, f.raw)
        for i, f in enumerate(graph)
        if not (f.number == _GRAPH_VALUE_INFO and _value_name(f.value) in gone)
    )
    top_bytes = b"".join(
        _length_field(_MODEL_GRAPH, body) if i == graph_at else f.raw for i, f in enumerate(top)
    )
    return top_bytes, sum(1 for b in replaced.values() if b)


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
