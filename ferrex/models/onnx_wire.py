"""ONNX's protobuf wire format, read and written by hand, for :mod:`ferrex.models.graph`.

A model file is a ``ModelProto``; the rewrites read its graph's nodes, initializers' names,
types and shapes (and a few small constants' values) and write nodes, attributes and small
initializers back, keeping every other byte as it was: :func:`parse_fields` splits a
message into its top-level fields, :class:`Node` reads a ``NodeProto``, :func:`node_field`
writes one. Field numbers are those of ``onnx.proto3``.

By hand, measured (issue 46): ``onnx`` adds 33 MB to a 380 MB venv and 1.3 s of import to 0.2 s of
rewrites; ONNX Runtime's transformer optimizer needs sympy too (+85 MB) and fuses 0 of 6 attentions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Field numbers of onnx.proto3 (ModelProto.graph, .opset_import; GraphProto.node,
# .initializer, .output, .value_info; OperatorSetIdProto; NodeProto; TensorProto;
# AttributeProto), and the element types used.
MODEL_GRAPH, MODEL_OPSET = 7, 8
GRAPH_NODE, GRAPH_INIT, GRAPH_INPUT, GRAPH_OUTPUT, GRAPH_VALUE_INFO = 1, 5, 11, 12, 13
OPSET_DOMAIN, OPSET_VERSION = 1, 2
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_ATTR, NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_TENSOR_DIMS, TENSOR_TYPE, TENSOR_FLOATS, TENSOR_INT64S = 1, 2, 4, 7
TENSOR_NAME, TENSOR_RAW = 8, 9
ATTR_NAME, ATTR_INT, ATTR_INTS, ATTR_TYPE = 1, 3, 8, 20
FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7
ATTR_TYPE_INT, ATTR_TYPE_INTS = 2, 7
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


def parse_fields(data: bytes) -> list[_Field]:
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


def length_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _LENGTH) + _encode_varint(len(payload)) + payload


def varint_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3 | _VARINT) + _encode_varint(value)


def _text(value: int | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else ""


@dataclass(slots=True)
class Node:
    raw: bytes
    op: str = ""
    domain: str = ""
    name: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attributes: list[bytes] = field(default_factory=list)  # each AttributeProto's payload

    @classmethod
    def parse(cls, raw: bytes) -> Node:
        node = cls(raw)
        for f in parse_fields(raw):
            if f.number == _NODE_INPUT:
                node.inputs.append(_text(f.value))
            elif f.number == _NODE_OUTPUT:
                node.outputs.append(_text(f.value))
            elif f.number == _NODE_OP:
                node.op = _text(f.value)
            elif f.number == _NODE_NAME:
                node.name = _text(f.value)
            elif f.number == NODE_DOMAIN:
                node.domain = _text(f.value)
            elif f.number == _NODE_ATTR and isinstance(f.value, bytes):
                node.attributes.append(f.value)
        return node

    def attribute_ints(self, name: str) -> list[int] | None:
        """An attribute's list of integers (written packed or one by one), or None."""
        for payload in self.attributes:
            fields = parse_fields(payload)
            if not any(f.number == ATTR_NAME and f.value == name.encode() for f in fields):
                continue
            found: list[int] = []
            for f in fields:
                if f.number == ATTR_INTS:
                    found.extend([f.value] if isinstance(f.value, int) else packed_varints(f.value))
            return [signed(v) for v in found]
        return None

    def attribute_int(self, name: str) -> int | None:
        for payload in self.attributes:
            fields = {f.number: f.value for f in parse_fields(payload)}
            if fields.get(ATTR_NAME) == name.encode():
                value = fields.get(ATTR_INT)
                return signed(value) if isinstance(value, int) else None
        return None


def node_field(
    op: str,
    name: str,
    inputs: list[str],
    outputs: list[str],
    attributes: list[bytes],
    domain: str = "",
) -> bytes:
    body = b"".join(length_field(_NODE_INPUT, i.encode()) for i in inputs)
    body += b"".join(length_field(_NODE_OUTPUT, o.encode()) for o in outputs)
    body += length_field(_NODE_NAME, name.encode()) + length_field(_NODE_OP, op.encode())
    body += b"".join(length_field(_NODE_ATTR, a) for a in attributes)
    if domain:
        body += length_field(NODE_DOMAIN, domain.encode())
    return length_field(GRAPH_NODE, body)


def cast_to_float() -> bytes:
    return (
        length_field(ATTR_NAME, b"to")
        + varint_field(ATTR_INT, FLOAT)
        + varint_field(ATTR_TYPE, ATTR_TYPE_INT)
    )


def tensor_header(payload: bytes) -> tuple[str, int, list[int]]:
    """An initializer's name, element type and dimensions (its data is not read)."""
    name, kind, dims = "", 0, []
    for f in parse_fields(payload):
        if f.number == TENSOR_NAME:
            name = _text(f.value)
        elif f.number == TENSOR_TYPE and isinstance(f.value, int):
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


def value_name(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        return ""
    return next((_text(f.value) for f in parse_fields(value) if f.number == 1), "")


def signed(value: int) -> int:
    """A varint read as protobuf's int64 (negative numbers are written as 2**64 + n)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def packed_varints(data: bytes) -> list[int]:
    values, at = [], 0
    while at < len(data):
        value, at = _varint(data, at)
        values.append(value)
    return values


def int_attribute(name: str, value: int) -> bytes:
    return (
        length_field(ATTR_NAME, name.encode())
        + varint_field(ATTR_INT, value)
        + varint_field(ATTR_TYPE, ATTR_TYPE_INT)
    )


def imports_domain(top: list[_Field], domain: str) -> bool:
    for f in top:
        if f.number == MODEL_OPSET and isinstance(f.value, bytes):
            names = [g.value for g in parse_fields(f.value) if g.number == OPSET_DOMAIN]
            if domain.encode() in names:
                return True
    return False
