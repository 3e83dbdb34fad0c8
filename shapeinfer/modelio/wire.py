"""Protobuf wire encoding of the ValueInfoProto entries that annotation appends.

Building tens of thousands of ValueInfoProto objects through the protobuf API dominates the
time of annotating a large graph; their wire bytes are simple to write directly, and
``MergeFromString`` appends them to the graph's repeated ``value_info`` field in one step.
Field numbers are those of onnx.proto: ModelProto.graph = 7, GraphProto.value_info = 13,
ValueInfoProto.name = 1 / type = 2, TypeProto.tensor_type = 1, Tensor.elem_type = 1 /
shape = 2, TensorShapeProto.dim = 1, Dimension.dim_value = 1 / dim_param = 2.
"""

from __future__ import annotations

from functools import lru_cache

from ..symbolic import to_str


@lru_cache(maxsize=4096)
def _varint(v: int) -> bytes:
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _dim(d) -> bytes:
    if d is None:  # (unknown: a dim with neither field)
        return _field(1, b"")
    if isinstance(d, int):
        inner = _varint(1 << 3 | 0) + _varint(d)
    elif type(d) is str:  # (a dim given as its text)
        inner = _field(2, d.encode())
    else:
        inner = _field(2, to_str(d).encode())
    return _field(1, inner)


@lru_cache(maxsize=65536)
def type_bytes(elem_type: int, shape) -> bytes:
    """TypeProto bytes (field 2 of ValueInfoProto) for a tensor type; shapes repeat, so cached."""
    tensor = _varint(1 << 3 | 0) + _varint(elem_type)
    if shape is not None:
        tensor += _field(2, b"".join(_dim(d) for d in shape))
    return _field(2, _field(1, tensor))


def tensor_value_info(name: str, elem_type: int, shape, typed: bytes = None) -> bytes:
    """The bytes of one GraphProto.value_info entry for a tensor (shape None: rank unknown);
    ``typed``: what type_bytes(elem_type, shape) gives, when the caller has it."""
    n = name.encode()
    inner = _NAME_TAG + (_SMALL[len(n)] if len(n) < 128 else _varint(len(n))) + n \
        + (typed if typed is not None else type_bytes(elem_type, shape))
    return _VALUE_INFO_TAG + (_SMALL[len(inner)] if len(inner) < 128 else _varint(len(inner))) + inner


_SMALL = tuple(bytes((k,)) for k in range(128))  # the varint of a number below 128 is that byte
_NAME_TAG = _varint(1 << 3 | 2)  # ValueInfoProto.name
_VALUE_INFO_TAG = _varint(13 << 3 | 2)  # GraphProto.value_info


def graph_patch(value_infos: list) -> bytes:
    """ModelProto bytes that, merged into a model, append these value_info entries."""
    return _field(7, b"".join(value_infos))
