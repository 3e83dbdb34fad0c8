"""Rewrites around elementwise ops.

- ``expand-into-broadcast``: an Expand feeding broadcasting elementwise ops is dropped (its
  consumers read its input) when each consumer's own broadcast provably gives the same output
  shape: the op then makes the same copies itself, element for element.
- ``cancel-reshapes``: Reshape -> unary elementwise op -> Reshape back to the first Reshape's
  input shape becomes the op on the original tensor (elementwise ops commute with reshapes).
- ``neutral-elements``: x*1, 1*x, x/1, x-(+0.0), x+(-0.0) -- and x+(+0.0) under
  ``ignore_signed_zero`` -- are bypassed when x already has the output's shape and type. With a
  graph output, x takes the output's name -- unless x is a graph input or another graph output
  (then the op is kept).
"""

from __future__ import annotations

import numpy as np

from ...errors import CannotDecide
from ...symbolic import BroadcastError, bcast
from ..adapter import Constant, clear_outputs, constant_array, replace_uses, set_input
from .base import NO_MATCH, Decline, Match, RewritePass, register
from .graph_ops import bypass, can_bypass, remove_node

BROADCASTING = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Equal", "Less", "LessOrEqual",
    "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Where", "BitShift", "BitwiseAnd", "BitwiseOr",
    "BitwiseXor", "Mod",
})
UNARY = frozenset({
    "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Log", "Erf", "Sin", "Cos",
    "Neg", "Abs", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Not", "Gelu", "Softplus",
    "Softsign", "Elu", "Selu", "Celu", "Mish", "Cast", "IsNaN", "IsInf", "ThresholdedRelu", "Shrink",
})


def _broadcast(shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for k in range(rank):
        d = 1
        for s in shapes:
            i = len(s) - rank + k
            if i >= 0:
                d = bcast(d, s[i])
        out.append(d)
    return tuple(out)


# Float arithmetic whose result, when two operands are NaN, is one of them: which one (its
# payload bits) follows the operand order of the runtime's loop, and onnxruntime has one loop
# for a scalar operand and another for equal shapes (seen: Mul of NaN payloads 1 and 0 gives
# 0x7fc00001 through Expand, 0x7fc00000 without).
_NAN_PICKING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Mod"})
_FLOAT_TYPES = frozenset({1, 10, 11, 16})  # float, float16, double, bfloat16


def _nan_free_operands(ctx, user, expanded, src) -> bool:
    """True when at most one operand of ``user`` can hold a NaN: not a float op, or every
    operand but one a constant without NaN (one NaN operand gives that NaN whatever the order).
    ``expanded`` (the Expand's output) counts as ``src``, what the Expand copies."""
    fact = ctx.facts.fact(user.outputs[0].name)
    if fact is None or fact.dtype not in _FLOAT_TYPES:
        return fact is not None and bool(fact.dtype)
    may_nan = 0
    for t in user.inputs:
        t = src if t is expanded else t
        if isinstance(t, Constant):
            try:
                arr = constant_array(t)
                if arr.dtype.kind == "f" and not np.isnan(arr).any():
                    continue
            except CannotDecide:  # an unreadable constant (external data) counts as possibly NaN
                pass
        may_nan += 1
    return may_nan <= 1


@register
class ExpandIntoBroadcastPass(RewritePass):
    name = "expand-into-broadcast"
    description = "drop an Expand whose consumers broadcast to the same shape on their own"
    ops = ("Expand",)

    def check(self, ctx, node):
        if not node.outputs or not node.inputs:
            return NO_MATCH
        out = node.outputs[0]
        if out.name in ctx.graph_outputs or not out.outputs:
            return NO_MATCH
        src = node.inputs[0]
        for user in out.outputs:
            if ctx.op(user) not in BROADCASTING or not user.outputs:
                return Decline(f"kept: it feeds {user.op}, which does not broadcast")
            shapes = []
            for t in user.inputs:
                s = ctx.shape(src if t is out else t)
                if s is None:
                    return Decline("kept: an input shape of its consumer is unknown")
                shapes.append(s)
            if ctx.op(user) in _NAN_PICKING and not _nan_free_operands(ctx, user, out, src):
                return Decline(f"kept: {user.op} of floats that may both be NaN -- which NaN's bits a runtime "
                               "returns depends on its broadcast loop, which the Expand decides")
            want = ctx.shape(user.outputs[0])
            try:
                got = _broadcast(shapes)
            except BroadcastError:
                return Decline("kept: without it the consumer's inputs would not broadcast")
            if want is None or len(got) != len(want) or any(a != b for a, b in zip(got, want)):
                return Decline(f"kept: {user.op} would not broadcast to the same shape on its own")
        return Match()

    def rewrite(self, ctx, node, match) -> str:
        replace_uses(ctx.graph, node.outputs[0], node.inputs[0])
        remove_node(node)
        return "removed: its consumers broadcast to the same shape themselves"


@register
class CancelReshapesPass(RewritePass):
    name = "cancel-reshapes"
    description = "Reshape -> elementwise -> Reshape back becomes the elementwise op alone"
    ops = ("Reshape",)

    def check(self, ctx, last):
        if not last.outputs or not last.inputs:
            return NO_MATCH
        mid_out = last.inputs[0]
        if len(mid_out.inputs) != 1 or len(mid_out.outputs) != 1 or mid_out.name in ctx.graph_outputs:
            return NO_MATCH  # (the op's own output disappears in the rewrite: it must feed nothing else)
        mid = mid_out.inputs[0]
        if ctx.op(mid) not in UNARY or len(mid.outputs) != 1 or not mid.inputs:
            return NO_MATCH
        first_out = mid.inputs[0]
        if len(first_out.inputs) != 1 or ctx.op(first_out.inputs[0]) != "Reshape" or len(first_out.outputs) != 1:
            return NO_MATCH
        first = first_out.inputs[0]
        x, out = first.inputs[0], last.outputs[0]
        a, b = ctx.shape(x), ctx.shape(out)
        if a is None or b is None or len(a) != len(b) or any(p != q for p, q in zip(a, b)) or any(ctx.is_unknown(d) for d in b):
            return Decline(f"kept: it does not provably restore the shape before {first.name or 'Reshape'}")
        extra = [t for t in mid.inputs[1:] if not t.is_empty()]
        if any(len(ctx.shape(t) or (0,)) > 0 and any(d != 1 for d in ctx.shape(t)) for t in extra):
            return NO_MATCH  # a non-scalar second operand would broadcast differently
        return Match(first=first, mid=mid, source=x)

    def rewrite(self, ctx, last, match) -> str:
        mid, out = match.mid, last.outputs[0]
        remove_node(last)
        clear_outputs(mid)
        set_input(mid, 0, match.source)
        mid.outputs.append(out)
        return f"cancelled with {match.first.name or 'Reshape'} around {mid.op}"


def _all_equal(arr, value) -> bool:
    """Every element of a numeric constant equals ``value`` (as a number: -0.0 equals 0)."""
    if arr.size == 0 or not (arr.dtype.kind in "biuf" or arr.dtype.name == "bfloat16"):
        return False  # (strings, complex, float8 and int4 kinds: not the neutral constants matched here)
    return bool(np.all(arr == value))


def _neutral_kind(op, arr, position):
    """Why op with constant arr at input `position` returns its other input unchanged, or None.

    Exact bit for bit: x*1, 1*x, x/1, x-0.0 (+0.0), x+(-0.0). x+(+0.0) differs only for x = -0.0
    (it gives +0.0): returned as "signed-zero" for the caller to allow or not."""
    if op == "Mul" and _all_equal(arr, 1):
        return "multiplies by 1"
    if op == "Div" and position == 1 and _all_equal(arr, 1):
        return "divides by 1"
    if arr.dtype.kind in "iub":
        if op in ("Add", "Sub") and _all_equal(arr, 0) and (op == "Add" or position == 1):
            return "adds 0"
        return None
    if arr.dtype.kind not in "f" and str(arr.dtype) not in ("bfloat16",):
        return None
    if not _all_equal(arr, 0):
        return None
    negative = np.signbit(arr.astype(np.float32))
    if op == "Sub" and position == 1 and not negative.any():
        return "subtracts +0.0"
    if op == "Add" and negative.all():
        return "adds -0.0"
    if op == "Add" and not negative.any():
        return "signed-zero"
    return None


@register
class NeutralElementsPass(RewritePass):
    name = "neutral-elements"
    description = "drop x*1, x/1, x-0, x+(-0.0) (and x+0.0 when signed zeros may change)"
    ops = ("Add", "Sub", "Mul", "Div")

    def check(self, ctx, node):
        if len(node.inputs) != 2 or not node.outputs:
            return NO_MATCH
        out = node.outputs[0]
        for position in (1, 0):
            c, x = node.inputs[position], node.inputs[1 - position]
            if not isinstance(c, Constant) or isinstance(x, Constant):
                continue
            try:
                kind = _neutral_kind(node.op, constant_array(c), position)
            except CannotDecide:  # (external data, never read)
                kind = None
            if kind is None or (kind == "signed-zero" and not ctx.ignore_signed_zero):
                continue
            a, b = ctx.shape(x), ctx.shape(out)
            fx, fo = ctx.facts.fact(x.name), ctx.facts.fact(out.name)
            if a is None or b is None or len(a) != len(b) or any(p != q for p, q in zip(a, b)):
                continue  # the constant would broadcast x to a larger shape
            if fx is None or fo is None or fx.dtype != fo.dtype:
                continue
            if not can_bypass(ctx, node, x):
                return NO_MATCH
            return Match(kind=kind, source=x)
        return NO_MATCH

    def rewrite(self, ctx, node, match) -> str:
        bypass(ctx, node, match.source)
        kind = match.kind
        why = "adds +0.0 (only -0.0 inputs change: allowed by --ignore-signed-zero)" if kind == "signed-zero" else kind
        return f"removed: it {why}"
