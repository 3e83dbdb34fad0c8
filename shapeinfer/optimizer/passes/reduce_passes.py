"""Reductions over broadcast copies and over size-1 axes (exact for Max, Min and Prod).

- ``reduce-broadcast``: ReduceMax/ReduceMin reading an Expand or Tile reads the Expand's or
  Tile's input instead, when every axis it does not reduce keeps its size through the
  Expand/Tile, and every reduced axis is empty exactly when the input's is (the same dim, or one
  provably at least 1): along the reduced axes the copies hold no new values, so max and min are
  the same. (Expand of [A,1] to [A,0], or Tile by 0, empties an axis: the reduction of nothing
  is the op's identity, -inf for ReduceMax, where the input would give its values.) Not for
  floats: onnxruntime's max/min of values with a NaN depends on the order it reads them in
  (min(1, NaN) is 1 there, min(NaN, 1) NaN), and the copies change that order; and even copies of
  one NaN reduce to another NaN than the NaN alone in NumPy (onnx.reference: the canonical NaN
  for two or more elements, the element's own bits for one -- adversarial seed 47084).
- ``reduce-size-one``: ReduceMax/ReduceMin/ReduceProd over axes that are all provably of size 1
  keep the element itself: removed with ``keepdims=1``, a Squeeze with ``keepdims=0``.
  (Sum and Mean are left alone: adding to 0 turns -0.0 into +0.0.) Removed with a graph
  output, its input takes the output's name -- unless the input is a graph input, an
  initializer or another graph output (then it is kept).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...symbolic import provably_positive
from ..adapter import Constant, pop_input, set_input
from .base import NO_MATCH, Decline, Match, RewritePass, register
from .graph_ops import bypass, can_bypass, constant_input, shape_constant


_NON_FLOAT = frozenset({TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
                        TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.BOOL})


def _may_hold_nan(ctx, tensor) -> bool:
    """True unless the tensor is known to be of an integer or bool type."""
    if isinstance(tensor, Constant):  # (its dtype, without reading its values: they may be external data)
        return np.dtype(tensor.dtype).kind not in "iub"
    fact = ctx.facts.fact(tensor.name)
    return fact is None or fact.dtype not in _NON_FLOAT


def _axes(ctx, node, rank):
    """The reduced axes (normalised), None when they are not known."""
    if ctx.opsets.get("", 0) >= 18 or (ctx.op(node) == "ReduceSum" and ctx.opsets.get("", 0) >= 13):
        if len(node.inputs) > 1 and not node.inputs[1].is_empty():
            arr = constant_input(node, 1)
            if arr is None:
                return None
            axes = [int(a) for a in arr.reshape(-1)]
        else:
            axes = []
        if not axes and node.attrs.get("noop_with_empty_axes", 0):
            return None
    else:
        axes = list(node.attrs.get("axes", []) or [])
    if not axes:
        return list(range(rank))
    return sorted({a + rank if a < 0 else a for a in axes})


@register
class ReduceBroadcastPass(RewritePass):
    name = "reduce-broadcast"
    description = "ReduceMax/Min over copies made by Expand/Tile reads the original"
    ops = ("ReduceMax", "ReduceMin")

    def check(self, ctx, node):
        if not node.outputs or not node.inputs:
            return NO_MATCH
        src = node.inputs[0]
        if len(src.inputs) != 1 or ctx.op(src.inputs[0]) not in ("Expand", "Tile"):
            return NO_MATCH
        copy = src.inputs[0]
        if _may_hold_nan(ctx, copy.inputs[0]):
            return Decline(f"reads {copy.op} {copy.name} of floats: the max/min of values with a NaN depends "
                           "on the runtime (the order onnxruntime reads them in; NumPy's, onnx.reference's, "
                           "gives a NaN of other bits for copies of one NaN than for the NaN alone)")
        a, b = ctx.shape(copy.inputs[0]), ctx.shape(src)
        if a is None or b is None or len(a) != len(b):
            return NO_MATCH
        axes = _axes(ctx, node, len(b))
        if axes is None:
            return NO_MATCH
        if any(a[i] != b[i] for i in range(len(b)) if i not in axes):
            return Decline(f"reads {copy.op} {copy.name}, which changes a dim it does not reduce")
        if any(a[i] != b[i] and not (isinstance(b[i], int) and b[i] >= 1 or provably_positive(b[i])) for i in axes):
            return Decline(f"reads {copy.op} {copy.name}, whose copies may empty a reduced axis")
        return Match(copy=copy)

    def rewrite(self, ctx, node, match) -> str:
        copy = match.copy
        set_input(node, 0, copy.inputs[0])
        return f"reads the input of {copy.op} {copy.name or ''} (the copies add no values)"


@register
class ReduceSizeOnePass(RewritePass):
    name = "reduce-size-one"
    description = "ReduceMax/Min/Prod over size-1 axes is the element itself"
    ops = ("ReduceMax", "ReduceMin", "ReduceProd")

    def check(self, ctx, node):
        if not node.outputs or not node.inputs:
            return NO_MATCH
        shape = ctx.shape(node.inputs[0])
        if shape is None:
            return NO_MATCH
        axes = _axes(ctx, node, len(shape))
        if axes is None or any(shape[i] != 1 for i in axes):
            return NO_MATCH
        remove = bool(node.attrs.get("keepdims", 1) or not axes)  # (no axis at all: a scalar reduced)
        if remove and not can_bypass(ctx, node, node.inputs[0]):
            return NO_MATCH
        return Match(axes=axes, remove=remove)

    def rewrite(self, ctx, node, match) -> str:
        if match.remove:
            bypass(ctx, node, node.inputs[0])
            return "removed: it reduces only size-1 axes and keeps them"
        axes = match.axes
        node.op = "Squeeze"
        node.attrs.clear()
        ctx.touched(node)
        while len(node.inputs) > 1:
            pop_input(node)
        if ctx.opsets.get("", 0) >= 13:
            node.inputs.append(shape_constant(ctx, f"{node.name or 'Squeeze'}_axes", axes))
        else:
            node.attrs["axes"] = list(axes)
        return f"became Squeeze of axes {axes} (it reduces only size-1 axes)"
