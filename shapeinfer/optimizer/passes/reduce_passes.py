"""Reductions over broadcast copies and over size-1 axes (exact for Max, Min and Prod).

- ``reduce-broadcast``: ReduceMax/ReduceMin reading an Expand or Tile reads the Expand's or
  Tile's input instead, when every axis it does not reduce keeps its size through the
  Expand/Tile, and every reduced axis is empty exactly when the input's is (the same dim, or one
  provably at least 1): along the reduced axes the copies hold no new values, so max and min are
  the same. (Expand of [A,1] to [A,0], or Tile by 0, empties an axis: the reduction of nothing
  is the op's identity, -inf for ReduceMax, where the input would give its values.)
- ``reduce-size-one``: ReduceMax/ReduceMin/ReduceProd over axes that are all provably of size 1
  keep the element itself: removed with ``keepdims=1``, a Squeeze with ``keepdims=0``.
  (Sum and Mean are left alone: adding to 0 turns -0.0 into +0.0.)
"""

from __future__ import annotations

from ...symbolic import provably_positive
from .base import Pass, PassResult, register, remove_node, replace_uses
from .reshape_passes import _const_input, _new_const


def _axes(ctx, node, rank):
    """The reduced axes (normalised), None when they are not known."""
    if ctx.opsets.get("", 0) >= 18 or (ctx.op(node) == "ReduceSum" and ctx.opsets.get("", 0) >= 13):
        if len(node.inputs) > 1 and not node.inputs[1].is_empty():
            arr = _const_input(ctx, node, 1)
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
class ReduceBroadcastPass(Pass):
    name = "reduce-broadcast"
    description = "ReduceMax/Min over copies made by Expand/Tile reads the original"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if ctx.op(node) not in ("ReduceMax", "ReduceMin") or not node.outputs or not node.inputs:
                continue
            src = node.inputs[0]
            if len(src.inputs) != 1 or ctx.op(src.inputs[0]) not in ("Expand", "Tile"):
                continue
            copy = src.inputs[0]
            a, b = ctx.shape(copy.inputs[0]), ctx.shape(src)
            if a is None or b is None or len(a) != len(b):
                continue
            axes = _axes(ctx, node, len(b))
            if axes is None:
                continue
            if any(a[i] != b[i] for i in range(len(b)) if i not in axes):
                result.decline(node, f"reads {copy.op} {copy.name}, which changes a dim it does not reduce")
                continue
            if any(a[i] != b[i] and not (isinstance(b[i], int) and b[i] >= 1 or provably_positive(b[i])) for i in axes):
                result.decline(node, f"reads {copy.op} {copy.name}, whose copies may empty a reduced axis")
                continue
            node.inputs[0] = copy.inputs[0]
            result.change(node, f"reads the input of {copy.op} {copy.name or ''} (the copies add no values)")
        return result


@register
class ReduceSizeOnePass(Pass):
    name = "reduce-size-one"
    description = "ReduceMax/Min/Prod over size-1 axes is the element itself"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if ctx.op(node) not in ("ReduceMax", "ReduceMin", "ReduceProd") or not node.outputs or not node.inputs:
                continue
            shape = ctx.shape(node.inputs[0])
            if shape is None:
                continue
            axes = _axes(ctx, node, len(shape))
            if axes is None or any(shape[i] != 1 for i in axes):
                continue
            out = node.outputs[0]
            if node.attrs.get("keepdims", 1) or not axes:  # (no axis at all: a scalar reduced)
                if out.name in ctx.graph_outputs:
                    continue
                replace_uses(ctx.graph, out, node.inputs[0])
                remove_node(node)
                result.change(node, "removed: it reduces only size-1 axes and keeps them")
                continue
            node.op = "Squeeze"
            node.attrs.clear()
            ctx.touched(node)
            while len(node.inputs) > 1:
                node.inputs.pop()
            if ctx.opsets.get("", 0) >= 13:
                node.inputs.append(_new_const(ctx, f"{node.name or 'Squeeze'}_axes", axes))
            else:
                node.attrs["axes"] = list(axes)
            result.change(node, f"became Squeeze of axes {axes} (it reduces only size-1 axes)")
        return result


