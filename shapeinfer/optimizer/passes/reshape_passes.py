"""The Reshape/Expand/Tile rewrites. Each decides from inference facts and says why it declines.

- ``remove-noop``: a Reshape, Expand or Tile whose output shape provably equals its input shape
  (Tile: every repeat 1) is bypassed -- its consumers read its input; so is a reshape-like op
  (Reshape/Squeeze/Unsqueeze/Flatten) whose output shape equals the input of an earlier one in
  an unbroken chain of them (the elements never change order).
- ``constant-shapes``: a Reshape or Expand whose shape is computed at run time gets a constant
  one -- ``0`` where the output dim is the input dim, the int where it is one, at most one
  ``-1`` (only beside dims provably at least 1) -- and the shape subgraph is left dead.
- ``collapse-reshapes``: Reshape/Flatten/Squeeze/Unsqueeze feeding a Reshape (or, when nothing
  else reads it, a Flatten/Squeeze/Unsqueeze) become one Reshape of the first input, its shape resolved against that input (so a ``0`` copies the right dim
  and ``allowzero`` keeps its meaning).
- ``tile-to-expand``: a Tile whose every repeated axis is provably of size 1 becomes an Expand.

A node whose output is a graph output is kept (the output's name must stay).
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from ...fold.folder import constant_array, constant_values
from .base import Pass, PassResult, register, remove_node, replace_uses
from .specs import expand_spec, reshape_spec, same_shape

RESHAPE_LIKE = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _const_input(ctx, node, i):
    if i >= len(node.inputs) or node.inputs[i].is_empty() or not isinstance(node.inputs[i], gs.Constant):
        return None
    return constant_array(node.inputs[i])


def _new_const(ctx, base: str, values) -> gs.Constant:
    """An int64 shape constant; equal ones are shared (one initializer for every [0,0,8,8])."""
    key = tuple(int(v) for v in values)
    made = ctx.shared_constants.get(key)
    if made is None:
        name = ctx.unique_name(base)
        made = ctx.shared_constants[key] = gs.Constant(name, constant_values(np.asarray(key, dtype=np.int64), name))
    return made


def _bypass(ctx, node, result, why, source=None):
    out = node.outputs[0]
    if out.name in ctx.graph_outputs:
        result.decline(node, f"{why}, but its output is a graph output")
        return
    replace_uses(ctx.graph, out, source if source is not None else node.inputs[0])
    remove_node(node)
    result.change(node, f"removed: {why}")


def _reshape_chain_sources(ctx, node):
    """node's input, then the inputs of the reshape-like ops before it (same data order)."""
    t = node.inputs[0]
    out = [t]
    while len(t.inputs) == 1 and ctx.op(t.inputs[0]) in RESHAPE_LIKE and t.inputs[0].inputs:
        t = t.inputs[0].inputs[0]
        out.append(t)
    return out


@register
class RemoveNoopPass(Pass):
    name = "remove-noop"
    description = "bypass Reshape/Expand/Tile (or a reshape chain) that leaves the shape as it was"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if ctx.op(node) not in ("Reshape", "Expand", "Tile") or not node.outputs or not node.inputs:
                continue
            if ctx.op(node) == "Tile":
                reps = _const_input(ctx, node, 1)
                if reps is not None and reps.size and np.all(reps == 1):
                    _bypass(ctx, node, result, "all repeats are 1")
                continue
            a, b = ctx.shape(node.inputs[0]), ctx.shape(node.outputs[0])
            if same_shape(a, b) and not any(ctx.is_unknown(d) for d in b):
                _bypass(ctx, node, result, "the output shape equals the input shape")
        for node in list(ctx.graph.nodes):  # Reshape/Squeeze/Unsqueeze/Flatten undoing earlier ones
            if ctx.op(node) not in RESHAPE_LIKE or not node.outputs or not node.inputs:
                continue
            b = ctx.shape(node.outputs[0])
            if b is None or any(ctx.is_unknown(d) for d in b):
                continue
            for depth, src in enumerate(_reshape_chain_sources(ctx, node)):
                if same_shape(ctx.shape(src), b):
                    why = "the output shape equals the input shape" if depth == 0 else \
                        f"it undoes the {depth} reshape-like op(s) before it"
                    _bypass(ctx, node, result, why, src)
                    break
        return result


@register
class ConstantShapesPass(Pass):
    name = "constant-shapes"
    description = "give Reshape/Expand with a computed shape a constant one (0 / -1 form)"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if ctx.op(node) not in ("Reshape", "Expand") or len(node.inputs) < 2 or not node.outputs:
                continue
            if isinstance(node.inputs[1], gs.Constant):
                continue
            a, b = ctx.shape(node.inputs[0]), ctx.shape(node.outputs[0])
            if a is None or b is None or any(ctx.is_unknown(d) for d in b):
                result.decline(node, "its computed shape is kept: the output shape is not known in input dims")
                continue
            if ctx.op(node) == "Reshape":
                spec, why = reshape_spec(a, b)
                if spec is not None and node.attrs.get("allowzero", 0) and 0 in spec:
                    node.attrs["allowzero"] = 0  # the new shape is written for allowzero=0
            else:
                spec, why = expand_spec(a, b)
            if spec is None:
                result.decline(node, f"its computed shape is kept: {why}")
                continue
            node.inputs[1] = _new_const(ctx, f"{node.name or node.op}_shape", list(spec))
            ctx.touched(node)
            result.change(node, f"computed shape replaced by constant {list(spec)}")
        return result


@register
class CollapseReshapesPass(Pass):
    name = "collapse-reshapes"
    description = "merge Reshape/Flatten/Squeeze/Unsqueeze chains into one Reshape"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if ctx.op(node) not in RESHAPE_LIKE or not node.outputs or not node.inputs:
                continue
            inner_out = node.inputs[0]
            if len(inner_out.inputs) != 1:
                continue
            inner = inner_out.inputs[0]
            if ctx.op(inner) not in RESHAPE_LIKE or not inner.inputs:
                continue
            if ctx.op(node) != "Reshape" and (len(inner_out.outputs) != 1 or ctx.opsets.get("", 0) < 5):
                continue  # a Squeeze/Unsqueeze/Flatten becomes a Reshape only when that saves a node
            src = inner.inputs[0]
            a, b = ctx.shape(src), ctx.shape(node.outputs[0])
            if a is None or b is None or any(ctx.is_unknown(d) for d in b):
                result.decline(node, f"kept after {inner.op}: the output shape is not known in input dims")
                continue
            spec, why = reshape_spec(a, b)
            if spec is None:
                result.decline(node, f"kept after {inner.op}: {why}")
                continue
            was = node.op
            node.op, node.attrs = "Reshape", {}
            node.inputs.clear()
            if ctx.opsets.get("", 0) < 5:  # Reshape-1 takes the shape as an attribute
                node.attrs["shape"] = [int(v) for v in spec]
                node.inputs.append(src)
            else:
                node.inputs.extend([src, _new_const(ctx, f"{node.name or 'Reshape'}_shape", list(spec))])
            ctx.touched(node)
            result.change(node, f"merged with {inner.name or inner.op} ({inner.op}): {'' if was == 'Reshape' else was + ' became '}Reshape of its input to {list(spec)}")
        return result


@register
class TileToExpandPass(Pass):
    name = "tile-to-expand"
    description = "Tile whose every repeated axis has size 1 becomes Expand"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if ctx.op(node) != "Tile" or not node.outputs or len(node.inputs) != 2:
                continue
            if ctx.opsets.get("", 0) < 8:
                result.decline(node, "kept: Expand needs opset 8")
                continue
            reps = _const_input(ctx, node, 1)
            if reps is not None:
                entries = [int(r) for r in reps.reshape(-1)]
            else:  # computed repeats: what inference knows of their value
                fact = ctx.facts.fact(node.inputs[1].name)
                entries = None if fact is None or fact.value is None else [
                    e if isinstance(e, int) else None for e in fact.value.reshape(-1).tolist()]
            a = ctx.shape(node.inputs[0])
            if a is None or entries is None or len(a) != len(entries):
                result.decline(node, "kept: the input rank or the repeats' length is not known")
                continue
            bad = [(i, d) for i, (d, r) in enumerate(zip(a, entries)) if r != 1 and d != 1]
            if bad:
                i, d = bad[0]
                result.decline(node, f"kept: axis {i} is repeated but has size {d}, not provably 1")
                continue
            node.op = "Expand"
            ctx.touched(node)
            if reps is not None:
                node.inputs[1] = _new_const(ctx, f"{node.name or 'Tile'}_expand_shape", entries)
            # (computed repeats serve as the Expand target as they are: 1 keeps a dim)
            result.change(node, "became Expand (every repeated axis has size 1)")
        return result


def _same_bits(arr) -> bool:
    """Every element of arr has the bits of the first (a NaN repeated bit for bit counts)."""
    rows = np.ascontiguousarray(arr).reshape(arr.size, -1).view(np.uint8)
    return bool(np.all(rows == rows[:1]))


def _uniform_value(ctx, t):
    """(scalar array, shape tensor or None) when every element of t is the same value:
    a constant whose elements are all equal, or a ConstantOfShape (then its shape input)."""
    if isinstance(t, gs.Constant):
        try:
            arr = constant_array(t)
        except Exception:
            return None
        if arr.size == 0 or arr.dtype == object or not _same_bits(arr):
            return None  # 0.0 and -0.0 compare equal but are not the same element
        return arr.reshape(-1)[:1], None
    if len(t.inputs) == 1 and ctx.op(t.inputs[0]) == "ConstantOfShape":
        producer = t.inputs[0]
        value = producer.attrs.get("value")
        arr = constant_array(value) if isinstance(value, gs.Constant) else np.zeros(1, np.float32)
        return arr.reshape(-1)[:1], producer.inputs[0]
    return None


@register
class TileUniformPass(Pass):
    name = "tile-uniform"
    description = "Tile of a tensor whose elements are all equal becomes Expand of one element"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        if ctx.opsets.get("", 0) < 8:
            return result
        for node in list(ctx.graph.nodes):
            if ctx.op(node) != "Tile" or not node.outputs or len(node.inputs) != 2:
                continue
            found = _uniform_value(ctx, node.inputs[0])
            if found is None:
                continue
            value, shape_in = found
            rank = len(ctx.shape(node.outputs[0]) or ())
            if ctx.shape(node.outputs[0]) is None:
                continue
            scalar_name = ctx.unique_name(f"{node.name or 'Tile'}_element")
            element = gs.Constant(scalar_name, constant_values(value.reshape([1] * rank), scalar_name))
            reps = node.inputs[1]
            if isinstance(reps, gs.Constant) and shape_in is None:
                target = _new_const(ctx, f"{node.name or 'Tile'}_shape",
                                    [int(d) * int(r) for d, r in zip(ctx.shape(node.inputs[0]), constant_array(reps).reshape(-1))])
            else:
                base = shape_in if shape_in is not None else _new_const(ctx, f"{node.name or 'Tile'}_in_shape", list(ctx.shape(node.inputs[0])))
                target = gs.Variable(ctx.unique_name(f"{node.name or 'Tile'}_out_shape"), dtype=np.int64)
                mul = gs.Node("Mul", name=ctx.unique_name(f"{node.name or 'Tile'}_out_shape_mul"),
                              inputs=[base, reps], outputs=[target])
                ctx.graph.nodes.insert(ctx.graph.nodes.index(node), mul)  # keeps the order topological
            node.op = "Expand"
            node.inputs[0] = element
            node.inputs[1] = target
            ctx.touched(node)
            result.change(node, "became Expand of a single element (its input's elements are all equal)")
        return result
