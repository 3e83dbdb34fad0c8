"""Cleanups that make room for the other rewrites.

- ``dedupe``: small constants with the same type, shape and bytes become one; then ONNX nodes
  with the same op, inputs and attributes -- equal bit for bit: a float attribute of 0.0 is not
  one of -0.0, nor a NaN one of another NaN -- (common subexpressions) become one -- never a
  non-deterministic op, a node with a subgraph, or a call of a model-local function or of
  another domain's op (either may draw random numbers inside).
- ``remove-identity``: Identity, and Cast to the type its input already has, are bypassed.
  When its output is a graph output, the input takes the output's name instead -- unless the
  input is a graph input, an initializer or another graph output (then it is kept).

Dedupe keeps a node whose output is a graph output (the output's name must stay).
"""

from __future__ import annotations

import math
import struct
import sys

import numpy as np
import onnx
from onnx import helper

from ...errors import CannotDecide
from ...modelio.tensors import onnx_type
from ...fold.folder import NONDETERMINISTIC
from ..adapter import Constant, Graph, constant_array, replace_uses, set_input, stored_proto
from .base import NO_MATCH, Match, Pass, PassResult, RewritePass, register
from .graph_ops import bypass, can_bypass, remove_node

SMALL = 64  # elements: constants up to this size are compared by value
# Types whose raw_data is exactly what numpy_helper.to_array(...).tobytes() gives (one element
# per item, little-endian): their value key is read off the TensorProto. (Not int4 and the
# other packed types, strings, or a big-endian machine.)
_RAW_AS_ARRAY = {} if sys.byteorder != "little" else {
    dt: str(np.dtype(helper.tensor_dtype_to_np_dtype(dt)))
    for dt in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.INT8,
               onnx.TensorProto.UINT8, onnx.TensorProto.INT16, onnx.TensorProto.UINT16, onnx.TensorProto.INT32,
               onnx.TensorProto.UINT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT64, onnx.TensorProto.BOOL)}


def _attr_key(v):
    """What tells an attribute value apart, bit for bit: a float by its bits (0.0 and -0.0 are
    equal as numbers, yet Clip(min=-0.0) and Clip(min=0.0) -- or LeakyRelu's alpha -- give zeros of
    other signs; a NaN is not even equal to itself), a tensor by its type, shape and bytes."""
    if isinstance(v, Graph):
        raise CannotDecide("attribute-form", "a subgraph")
    if isinstance(v, float):  # (onnx-graphsurgeon holds a FLOAT attribute as a Python float)
        return ("float", struct.pack("<d", v))
    if isinstance(v, np.generic):
        return ("np", str(v.dtype), v.tobytes())
    if isinstance(v, Constant):
        arr = constant_array(v)  # (CannotDecide for one not read: the node is then left alone)
        return ("T", str(arr.dtype), arr.shape, arr.tobytes() if arr.dtype != object else repr(arr.tolist()))
    if isinstance(v, np.ndarray):
        return ("A", str(v.dtype), v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    return (type(v).__name__, v if isinstance(v, (int, float, str, bytes, bool, type(None))) else repr(v))


def _value_key(t):
    """(dtype, shape, bytes) of a small constant; False for a large or unreadable one."""
    if math.prod(int(d) for d in t.shape) > SMALL:  # (exact: a product past int64 is large, not negative)
        return False
    proto = stored_proto(t)  # (the TensorProto itself, as the model stores it)
    if isinstance(proto, onnx.SparseTensorProto):
        return False  # (a sparse initializer: left as it is)
    if proto is not None and proto.HasField("raw_data") and proto.data_type in _RAW_AS_ARRAY \
            and proto.data_location != onnx.TensorProto.EXTERNAL:
        # the little-endian raw bytes are the array's bytes: the same key, without converting
        return (_RAW_AS_ARRAY[proto.data_type], tuple(int(d) for d in proto.dims), proto.raw_data)
    try:
        arr = constant_array(t)
    except CannotDecide:  # (external data, never read; or a tensor numpy cannot hold)
        return False
    return (str(arr.dtype), arr.shape, arr.tobytes() if arr.dtype != object else repr(arr.tolist()))


@register
class DedupePass(Pass):
    name = "dedupe"
    description = "merge equal small constants, then equal nodes (common subexpressions)"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        value_keys = ctx.memo.setdefault("dedupe-values", {})  # id(constant) -> value key
        attr_keys = ctx.memo.setdefault("dedupe-attrs", {})  # id(node) -> attribute key
        by_value: dict = {}
        for node in ctx.graph.nodes:
            for i, t in enumerate(node.inputs):
                if not isinstance(t, Constant) or t.name in ctx.graph_outputs:
                    continue
                key = value_keys.get(id(t))
                if key is None:
                    key = value_keys[id(t)] = _value_key(t)
                if key is False:
                    continue
                keep = by_value.setdefault(key, t)
                if keep is not t:
                    set_input(node, i, keep)
                    result.quiet += 1
        seen: dict = {}
        for node in list(ctx.graph.nodes):
            key = _node_key(ctx, node, attr_keys)
            if key is None:
                continue
            first = seen.setdefault(key, node)
            if first is node:
                continue
            if any(t.name in ctx.graph_outputs for t in node.outputs):
                continue
            for mine, theirs in zip(node.outputs, first.outputs):
                replace_uses(ctx.graph, mine, theirs)
            remove_node(node)
            result.change(node, f"same as {first.name or first.op}: merged")
        return result


def _node_key(ctx, node, attr_keys: dict):
    """What makes two nodes the same computation (op, domain, input tensors, attributes,
    number of outputs); None for a node dedupe leaves alone: removed, not an ONNX op (a
    model-local function or another domain's op may draw random numbers), non-deterministic,
    or with a subgraph."""
    if not node.outputs:
        return None
    op = ctx.op(node)
    if not op or op in NONDETERMINISTIC:
        return None
    attrs = attr_keys.get(id(node)) if node.attrs else ()
    if attrs is None:
        try:
            attrs = tuple(sorted((k, _attr_key(v)) for k, v in node.attrs.items()))
        except CannotDecide:  # (a tensor attribute not read: external data, or not what it says)
            attrs = False
        attr_keys[id(node)] = attrs
    if attrs is False:
        return None
    return (op, node.domain or "", tuple(map(id, node.inputs)), attrs, len(node.outputs))


@register
class RemoveIdentityPass(RewritePass):
    name = "remove-identity"
    description = "bypass Identity and Cast to the input's own type"
    ops = ("Identity", "Cast")

    def check(self, ctx, node):
        if not node.outputs or not node.inputs or node.inputs[0].is_empty():
            return NO_MATCH
        if ctx.op(node) == "Identity":
            why = "Identity"
        else:
            fact = ctx.facts.fact(node.inputs[0].name)
            dtype = fact.dtype if fact is not None else None
            if isinstance(node.inputs[0], Constant):
                try:
                    dtype = onnx_type(constant_array(node.inputs[0]).dtype)
                except CannotDecide:  # (not read: its type is its fact's, which is enough)
                    pass
            if not dtype or node.attrs.get("to") != dtype or node.attrs.get("saturate", 1) != 1:
                return NO_MATCH
            why = "Cast to the type its input has"
        if not can_bypass(ctx, node, node.inputs[0]):
            return NO_MATCH
        return Match(why=why)

    def rewrite(self, ctx, node, match) -> str:
        bypass(ctx, node, node.inputs[0])
        return f"removed: {match.why}"
