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
- ``tile-uniform``: a Tile of a tensor whose elements are all equal (bit for bit) becomes an
  Expand of one element.

When ``remove-noop`` bypasses a node whose output is a graph output, the tensor it reads takes
the output's name instead -- unless that tensor is a graph input, an initializer or another
graph output: then the node is kept, and the decline says so.
"""

from __future__ import annotations

import numpy as np

from ...errors import CannotDecide
from ..adapter import Constant, Node, Variable, clear_inputs, constant, constant_array, set_input
from .base import NO_MATCH, Decline, Match, PassResult, RewritePass, register
from .graph_ops import (EXPAND_ZERO, bypass, bypass_refusal, constant_input, dims_load_safely, expand_zero_hazard,
                        node_name, reshape_data_loads, shape_constant)
from .specs import expand_spec, reshape_spec, same_shape

RESHAPE_LIKE = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _bypassable(ctx, node, why: str, source):
    """The Match for bypassing node (its readers read ``source``), or why it must stay."""
    refusal = bypass_refusal(ctx, node, source)
    if refusal:
        return Decline(f"{why}, but {refusal}")
    return Match(why=why, source=source)


def _reshape_chain_sources(ctx, node):
    """node's input, then the inputs of the reshape-like ops before it (same data order)."""
    t = node.inputs[0]
    out = [t]
    while len(t.inputs) == 1 and ctx.op(t.inputs[0]) in RESHAPE_LIKE and t.inputs[0].inputs:
        t = t.inputs[0].inputs[0]
        out.append(t)
    return out


@register
class RemoveNoopPass(RewritePass):
    name = "remove-noop"
    description = "bypass Reshape/Expand/Tile (or a reshape chain) that leaves the shape as it was"
    ops = ("Reshape", "Expand", "Tile")

    def run(self, ctx) -> PassResult:
        result = PassResult()
        self.rewrite_each(ctx, self.ops, self.check, self.rewrite, result)
        # then Reshape/Squeeze/Unsqueeze/Flatten undoing earlier ones
        self.rewrite_each(ctx, RESHAPE_LIKE, self.check_chain, self.rewrite, result)
        return result

    def check(self, ctx, node):
        if not node.outputs or not node.inputs:
            return NO_MATCH
        if ctx.op(node) == "Tile":
            reps = constant_input(node, 1)
            if reps is None or not reps.size or not np.all(reps == 1):
                return NO_MATCH
            return _bypassable(ctx, node, "all repeats are 1", node.inputs[0])
        a, b = ctx.shape(node.inputs[0]), ctx.shape(node.outputs[0])
        if not same_shape(a, b) or any(ctx.is_unknown(d) for d in b):
            return NO_MATCH
        return _bypassable(ctx, node, "the output shape equals the input shape", node.inputs[0])

    def check_chain(self, ctx, node):
        """A reshape-like op whose output shape is the input shape of an earlier one in its chain."""
        if not node.outputs or not node.inputs:
            return NO_MATCH
        b = ctx.shape(node.outputs[0])
        if b is None or any(ctx.is_unknown(d) for d in b):
            return NO_MATCH
        for depth, src in enumerate(_reshape_chain_sources(ctx, node)):
            if same_shape(ctx.shape(src), b):
                why = "the output shape equals the input shape" if depth == 0 else \
                    f"it undoes the {depth} reshape-like op(s) before it"
                return _bypassable(ctx, node, why, src)
        return NO_MATCH

    def rewrite(self, ctx, node, match) -> str:
        bypass(ctx, node, match.source)
        return f"removed: {match.why}"


@register
class ConstantShapesPass(RewritePass):
    name = "constant-shapes"
    description = "give Reshape/Expand with a computed shape a constant one (0 / -1 form)"
    ops = ("Reshape", "Expand")

    def check(self, ctx, node):
        if len(node.inputs) < 2 or not node.outputs or isinstance(node.inputs[1], Constant):
            return NO_MATCH
        a, b = ctx.shape(node.inputs[0]), ctx.shape(node.outputs[0])
        if a is None or b is None or any(ctx.is_unknown(d) for d in b):
            return Decline("its computed shape is kept: the output shape is not known in input dims")
        spec, why = reshape_spec(a, b) if ctx.op(node) == "Reshape" else expand_spec(a, b)
        if spec is not None and ctx.op(node) == "Reshape" and not reshape_data_loads(ctx, node.inputs[0]):
            spec, why = None, "its input's static dims multiply past int64 (onnxruntime would refuse a constant shape)"
        if spec is None:
            return Decline(f"its computed shape is kept: {why}")
        if ctx.op(node) == "Expand" and expand_zero_hazard(a, list(spec)):
            return Decline(f"its computed shape is kept: {EXPAND_ZERO}")
        if not dims_load_safely(spec):
            return Decline("its computed shape is kept: an entry is too large to be a constant dim (see LOAD_SAFE_DIM)")
        return Match(spec=spec)

    def rewrite(self, ctx, node, match) -> str:
        if ctx.op(node) == "Reshape" and node.attrs.get("allowzero", 0) and 0 in match.spec:
            node.attrs["allowzero"] = 0  # the new shape is written for allowzero=0
        set_input(node, 1, shape_constant(ctx, f"{node.name or node.op}_shape", list(match.spec)))
        ctx.touched(node)
        return f"computed shape replaced by constant {list(match.spec)}"


@register
class CollapseReshapesPass(RewritePass):
    name = "collapse-reshapes"
    description = "merge Reshape/Flatten/Squeeze/Unsqueeze chains into one Reshape"
    ops = RESHAPE_LIKE

    def check(self, ctx, node):
        if not node.outputs or not node.inputs:
            return NO_MATCH
        inner_out = node.inputs[0]
        if len(inner_out.inputs) != 1:
            return NO_MATCH
        inner = inner_out.inputs[0]
        if ctx.op(inner) not in RESHAPE_LIKE or not inner.inputs:
            return NO_MATCH
        if ctx.op(node) != "Reshape" and (len(inner_out.outputs) != 1 or ctx.opsets.get("", 0) < 5):
            return NO_MATCH  # a Squeeze/Unsqueeze/Flatten becomes a Reshape only when that saves a node
        src = inner.inputs[0]
        a, b = ctx.shape(src), ctx.shape(node.outputs[0])
        if a is None or b is None or any(ctx.is_unknown(d) for d in b):
            return Decline(f"kept after {inner.op}: the output shape is not known in input dims")
        spec, why = reshape_spec(a, b)
        if spec is not None and not dims_load_safely(spec):
            spec, why = None, "an entry is too large to be a constant dim (see LOAD_SAFE_DIM)"
        if spec is not None and not reshape_data_loads(ctx, src):
            spec, why = None, "its input's static dims multiply past int64 (onnxruntime would refuse a constant shape)"
        if spec is None:
            if _reads_same_from(ctx, node, src, inner_out):
                return Match(inner=inner, source=src, spec=None)
            return Decline(f"kept after {inner.op}: {why}")
        return Match(inner=inner, source=src, spec=spec)

    def rewrite(self, ctx, node, match) -> str:
        inner, spec = match.inner, match.spec
        if spec is None:  # the computed shape stays, applied to the first input
            set_input(node, 0, match.source)
            ctx.touched(node)
            return f"merged with {inner.name or inner.op} ({inner.op}): its computed shape now reshapes the first input"
        was = node.op
        node.op, node.attrs = "Reshape", {}
        clear_inputs(node)
        if ctx.opsets.get("", 0) < 5:  # Reshape-1 takes the shape as an attribute
            node.attrs["shape"] = [int(v) for v in spec]
            node.inputs.append(match.source)
        else:
            node.inputs.extend([match.source, shape_constant(ctx, f"{node.name or 'Reshape'}_shape", list(spec))])
        ctx.touched(node)
        return (f"merged with {inner.name or inner.op} ({inner.op}): "
                f"{'' if was == 'Reshape' else was + ' became '}Reshape of its input to {list(spec)}")


def _reads_same_from(ctx, node, src, mid) -> bool:
    """Reshape(mid, s) gives what Reshape(src, s) does, for a mid that is a reshape of src read by
    this node alone, at every size: the elements keep their order and count, so only the
    entries of s that copy an input dim matter -- an entry that may be 0 (allowzero = 0) must
    find mid's dim equal to src's there (``batch`` at index 0 of both), wherever it is 0."""
    if ctx.op(node) != "Reshape" or len(node.inputs) != 2 or len(mid.outputs) != 1 or ctx.opsets.get("", 0) < 5:
        return False
    x, m = ctx.shape(src), ctx.shape(mid)
    fact = ctx.facts.fact(node.inputs[1].name)
    if x is None or m is None or fact is None or fact.value is None or fact.value.ndim != 1:
        return False
    from ...symbolic import BroadcastError, Expr, as_single_atom, at_zero, iszero, provably_positive, sub, zero_factors

    if node.attrs.get("allowzero", 0):
        # 0 means 0: nothing is copied. But where a 0 stands beside a -1 (invalid in the spec),
        # onnxruntime runs it, the -1 being the quotient of the input's and the shape's dims that
        # are not 0 -- which depends on the input's own dims, not only its count.
        entries = fact.value.tolist()
        return -1 not in entries or all(e == -1 or (isinstance(e, int) and not isinstance(e, bool) and e > 0)
                                        or (isinstance(e, Expr) and provably_positive(e)) for e in entries)

    for i, e in enumerate(fact.value.tolist()):
        if isinstance(e, int) and not isinstance(e, bool) and e != 0:
            continue  # a size or the -1
        if isinstance(e, Expr) and provably_positive(e):
            continue
        if i >= len(x) or i >= len(m):
            return False
        if x[i] == m[i]:
            continue
        if not isinstance(e, Expr):
            return False  # a literal 0 (or unknown) copying dims that differ
        factors = zero_factors(e)  # e is 0 exactly where one of them is
        if factors is None:
            ind = as_single_atom(iszero(e))
            zero = as_single_atom(ind.args[0]) if ind is not None else None
            factors = (zero,) if zero is not None else None
        try:
            if factors is None or any(at_zero(sub(m[i], x[i]), a) != 0 for a in factors):
                return False
        except (BroadcastError, ZeroDivisionError):
            return False
    return True


@register
class TileToExpandPass(RewritePass):
    name = "tile-to-expand"
    description = "Tile whose every repeated axis has size 1 becomes Expand"
    ops = ("Tile",)

    def check(self, ctx, node):
        if not node.outputs or len(node.inputs) != 2:
            return NO_MATCH
        if ctx.opsets.get("", 0) < 8:
            return Decline("kept: Expand needs opset 8")
        reps = constant_input(node, 1)
        if reps is not None:
            entries = [int(r) for r in reps.reshape(-1)]
        else:  # computed repeats: what inference knows of their value
            fact = ctx.facts.fact(node.inputs[1].name)
            entries = None if fact is None or fact.value is None else [
                e if isinstance(e, int) else None for e in fact.value.reshape(-1).tolist()]
        a = ctx.shape(node.inputs[0])
        if a is None or entries is None or len(a) != len(entries):
            return Decline("kept: the input rank or the repeats' length is not known")
        bad = [(i, d) for i, (d, r) in enumerate(zip(a, entries)) if r != 1 and d != 1]
        if bad:
            i, d = bad[0]
            return Decline(f"kept: axis {i} is repeated but has size {d}, not provably 1")
        if expand_zero_hazard(a, [1 if r is None else r for r in entries]):
            return Decline(f"kept: a repeat of 0 -- as Expand, {EXPAND_ZERO}")
        return Match(entries=entries, constant_repeats=reps is not None)

    def rewrite(self, ctx, node, match) -> str:
        node.op = "Expand"
        ctx.touched(node)
        if match.constant_repeats:
            set_input(node, 1, shape_constant(ctx, f"{node.name or 'Tile'}_expand_shape", match.entries))
        # (computed repeats serve as the Expand target as they are: 1 keeps a dim)
        return "became Expand (every repeated axis has size 1)"


def _same_bits(arr) -> bool:
    """Every element of arr has the bits of the first (a NaN repeated bit for bit counts)."""
    rows = np.ascontiguousarray(arr).reshape(arr.size, -1).view(np.uint8)
    return bool(np.all(rows == rows[:1]))


def _uniform_value(ctx, t):
    """(scalar array, shape tensor or None) when every element of t is the same value:
    a constant whose elements are all equal, or a ConstantOfShape (then its shape input)."""
    if isinstance(t, Constant):
        try:
            arr = constant_array(t)
        except CannotDecide:  # (external data, never read)
            return None
        if arr.size == 0 or arr.dtype == object or not _same_bits(arr):
            return None  # 0.0 and -0.0 compare equal but are not the same element
        return arr.reshape(-1)[:1], None
    if len(t.inputs) == 1 and ctx.op(t.inputs[0]) == "ConstantOfShape":
        producer = t.inputs[0]
        value = producer.attrs.get("value")
        arr = constant_array(value) if isinstance(value, Constant) else np.zeros(1, np.float32)
        return arr.reshape(-1)[:1], producer.inputs[0]
    return None


@register
class TileUniformPass(RewritePass):
    name = "tile-uniform"
    description = "Tile of a tensor whose elements are all equal becomes Expand of one element"
    ops = ("Tile",)

    def check(self, ctx, node):
        if ctx.opsets.get("", 0) < 8 or not node.outputs or len(node.inputs) != 2:
            return NO_MATCH
        found = _uniform_value(ctx, node.inputs[0])
        if found is None or ctx.shape(node.outputs[0]) is None:
            return NO_MATCH
        value, shape_in = found
        return Match(value=value, shape_in=shape_in)

    def rewrite(self, ctx, node, match) -> str:
        rank = len(ctx.shape(node.outputs[0]))
        scalar_name = ctx.unique_name(f"{node.name or 'Tile'}_element")
        element = constant(scalar_name, match.value.reshape([1] * rank))
        reps, shape_in = node.inputs[1], match.shape_in
        dims = None
        if isinstance(reps, Constant) and shape_in is None:
            dims = [int(d) * int(r) for d, r in zip(ctx.shape(node.inputs[0]), constant_array(reps).reshape(-1))]
        if dims is not None and dims_load_safely(dims) and not expand_zero_hazard([1] * len(dims), dims):
            target = shape_constant(ctx, f"{node.name or 'Tile'}_shape", dims)
        else:
            base = shape_in if shape_in is not None else shape_constant(ctx, f"{node.name or 'Tile'}_in_shape", list(ctx.shape(node.inputs[0])))
            target = Variable(ctx.unique_name(f"{node.name or 'Tile'}_out_shape"), dtype=np.int64)
            mul = Node("Mul", name=node_name(ctx, ctx.graph, f"{node.name or 'Tile'}_out_shape_mul"),
                          inputs=[base, reps], outputs=[target])
            # before node, which keeps the order topological (found by identity: list.index
            # compares nodes field by field, and an unnamed copy may look equal)
            at = next(k for k, n in enumerate(ctx.graph.nodes) if n is node)
            ctx.graph.nodes.insert(at, mul)
        node.op = "Expand"
        set_input(node, 0, element)
        set_input(node, 1, target)
        ctx.touched(node)
        return "became Expand of a single element (its input's elements are all equal)"
