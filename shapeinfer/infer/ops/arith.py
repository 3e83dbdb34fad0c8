"""Elementwise ops: broadcast shapes (n-ary), and values followed through integer arithmetic.

Add/Sub/Mul, Div (integer division truncates toward zero, so it is a floor division only where
both sides are provably non-negative), Mod (``fmod=0`` takes the divisor's sign, as ``//`` does),
Neg, Abs, Min/Max, comparisons, Not/And/Or/Xor and Where -- enough for the
``Where(Equal(shape, -1), ones, shape)`` idiom. Other broadcasting ops get the shape only.

A bool element that depends on the symbols is its indicator, a 0/1 dim: ``Equal(a, b)`` is
``iszero(a-b)``, ``Less(a, b)`` is ``min(1, max(0, b-a))``, ``Not(c)`` is ``1-c``, ``And`` a product, and ``Where(c, x, y)`` is
``c*x + (1-c)*y`` -- so the group count ``Where(Equal(Mod(h, kv), 0), h/kv, 1)`` of an
attention function stays an exact dim. (A Cast of such an element to an integer type is the
same dim; True and False stay Python bools.)
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...symbolic import (
    Expr,
    ExpressionTooLarge,
    add,
    bounds,
    iszero,
    dmax,
    dmin,
    floordiv,
    mod,
    mul,
    neg,
    provably_nonneg,
    provably_positive,
    sub,
)
from ...fold.folder import exact_value
from ...semantics import trunc_div
from ..facts import UNKNOWN, Fact, elementwise, ring_dim
from ..registry import rule
from ._util import broadcast_shapes, fit_integer_value, value_or_none

_DIM = (int, Expr)


def _dims(fn):
    """Lift a function of two dims to elements that may be unknown or bool (or past the
    expression budget: unknown)."""

    def lifted(a, b):
        if isinstance(a, _DIM) and isinstance(b, _DIM) and not isinstance(a, bool) and not isinstance(b, bool):
            try:
                return fn(a, b)
            except ExpressionTooLarge:
                return UNKNOWN
        return UNKNOWN

    return lifted


def _ring(fn):
    """Lift Add, Sub or Mul: like _dims, and on Wrapped operands too (the result is the same
    polynomial of their dims, exact modulo 2**64 as they are; fit_integer_value decides whether
    it is known or Wrapped again)."""

    def lifted(a, b):
        x, y = ring_dim(a), ring_dim(b)
        if x is None or y is None:
            return UNKNOWN
        try:
            return fn(x, y)
        except ExpressionTooLarge:
            return UNKNOWN

    return lifted


def _int_div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return UNKNOWN if b == 0 else trunc_div(a, b)
    if provably_nonneg(a) and provably_nonneg(b):
        return floordiv(a, b)  # b == 0 would fail at run time, so b > 0 here
    if isinstance(b, int) and b > 0:
        lo = bounds(a)[0]
        if lo is not None and lo > -b:
            # -b < a < 0 truncates to 0 where floor gives -1 (height-1 over 2 with height = 0)
            return dmax(floordiv(a, b), 0)
        # truncation toward zero of a value of either sign: max(a,0)//b - max(-a,0)//b
        return sub(floordiv(dmax(a, 0), b), floordiv(dmax(neg(a), 0), b))
    return UNKNOWN


def _mod(a, b):
    if b == 0:
        return UNKNOWN
    if isinstance(b, int) or provably_nonneg(b):
        return mod(a, b)  # b == 0 would fail at run time, so b > 0 here
    return UNKNOWN


def _fmod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        # C's fmod: the dividend's sign; exact in Python ints (onnxruntime's integer fmod goes
        # through double for some types: beyond 2**53 the value is not claimed, as folding does)
        if b == 0 or abs(a) > 2**53 or abs(b) > 2**53:
            return UNKNOWN
        r = abs(a) % abs(b)
        return -r if a < 0 else r
    if provably_nonneg(a) and provably_positive(b):
        return mod(a, b)
    return UNKNOWN


def _indicator(e):
    """A bool element as a 0/1 dim (True 1, False 0, a symbolic one itself), else None."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, Expr):
        return e
    return None


def _as_bool(d):
    """A 0/1 dim as a bool element: a constant gives True/False, a symbolic one stays."""
    if isinstance(d, int):
        return bool(d)
    return d


def _logic_dims(fn):
    """Lift a function of 0/1 dims to bool elements (UNKNOWN where either is unknown)."""
    def lifted(a, b):
        x, y = _indicator(a), _indicator(b)
        if x is None or y is None:
            return UNKNOWN
        try:
            return _as_bool(fn(x, y))
        except ExpressionTooLarge:
            return UNKNOWN

    return lifted


def _compare(kind):
    def cmp(a, b):
        if isinstance(a, bool) and isinstance(b, bool) and kind == "eq":
            return a == b
        if kind == "eq" and (isinstance(a, bool) or isinstance(b, bool)):
            return _logic_dims(lambda x, y: iszero(sub(x, y)))(a, b)  # a bool tensor's indicators
        if not (isinstance(a, _DIM) and isinstance(b, _DIM)) or isinstance(a, bool) or isinstance(b, bool):
            return UNKNOWN
        if kind == "eq" and a == b:
            return True
        lo, hi = bounds(sub(b, a))  # b - a
        if kind == "eq":
            if lo > 0 or hi < 0:
                return False
            try:
                return _as_bool(iszero(sub(a, b)))
            except ExpressionTooLarge:
                return UNKNOWN
        if kind == "lt":  # a < b
            decided = True if lo > 0 else (False if hi <= 0 else None)
            margin = (b, a, 0)
        elif kind == "le":
            decided = True if lo >= 0 else (False if hi < 0 else None)
            margin = (b, a, 1)
        elif kind == "gt":
            decided = True if hi < 0 else (False if lo >= 0 else None)
            margin = (a, b, 0)
        else:  # ge
            decided = True if hi <= 0 else (False if lo > 0 else None)
            margin = (a, b, 1)
        if decided is not None:
            return decided
        return _less_indicator(*margin)

    return cmp


def _less_indicator(big, small, extra):
    """The 0/1 indicator of ``small < big + extra`` for integer dims: ``min(1, max(0, big -
    small + extra))`` (the difference is an integer, so it is >= 1 exactly when the comparison
    holds)."""
    try:
        return _as_bool(dmin(1, dmax(0, add(sub(big, small), extra))))
    except ExpressionTooLarge:
        return UNKNOWN


def _logic(fn, on_dims):
    def lifted(a, b):
        if isinstance(a, bool) and isinstance(b, bool):
            return fn(a, b)
        # Short-circuits that hold whatever the unknown side is.
        if fn is _and and (a is False or b is False):
            return False
        if fn is _or and (a is True or b is True):
            return True
        return _logic_dims(on_dims)(a, b)

    return lifted


def _and(a, b):
    return a and b


def _or(a, b):
    return a or b


_BINARY = {
    "Add": _ring(add),
    "Sub": _ring(sub),
    "Mul": _ring(mul),
    "Div": _dims(_int_div),
    "Equal": _compare("eq"),
    "Less": _compare("lt"),
    "LessOrEqual": _compare("le"),
    "Greater": _compare("gt"),
    "GreaterOrEqual": _compare("ge"),
    "And": _logic(_and, mul),
    "Or": _logic(_or, lambda x, y: sub(add(x, y), mul(x, y))),
    "Xor": _logic(lambda a, b: a != b, lambda x, y: sub(add(x, y), mul(2, mul(x, y)))),
}
_RING = frozenset({"Add", "Sub", "Mul"})
_BOOL_OUT = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"}




def _binary_value(ctx, a, b, fn):
    """Dims and bools by the algebra; numeric (float) values by the exact folding kernels, which
    leave unknown what runtimes compute differently (NaN payloads, signed zeros)."""
    if a.value is None or b.value is None:
        return None
    va, vb = a.value, b.value
    if va.dtype == object and vb.dtype == object:
        return value_or_none(elementwise(fn, va, vb))
    if va.dtype != object and vb.dtype != object:
        return _exact(ctx, [va, vb])
    return None


def _exact(ctx, arrays, attrs=None):
    """The op's value on numeric arrays, as every runtime computes it, or None."""
    got = exact_value(ctx.op_type, attrs or {}, arrays, ctx.version)
    if got is None:
        return None
    out = np.asarray(got[0])
    return elementwise(bool, out) if out.dtype == bool else out


def _out_dtype(op, facts):
    if op in _BOOL_OUT:
        return TensorProto.BOOL
    return facts[0].dtype


def _broadcast_rule(ctx, facts, value=None):
    shape = broadcast_shapes(ctx, [f.shape for f in facts])
    if value is not None and shape is not None and tuple(value.shape) != tuple(shape):
        value = None
    dtype = _out_dtype(ctx.op_type, facts)
    return Fact(dtype=dtype, shape=shape, value=fit_integer_value(value, dtype, ctx=ctx if ctx.op_type in _RING else None))


def _present(ctx):
    facts = [ctx.input(i) for i in range(len(ctx.node.input)) if ctx.has_input(i)]
    return None if not facts or any(f is None for f in facts) else facts


@rule(*_BINARY, since=1)
def binary(ctx):
    facts = _present(ctx)
    if facts is None or len(facts) != 2:
        return None
    if ctx.version < 7 and ctx.attr("broadcast", 0):
        return None  # legacy limited broadcast: onnx's inference handles it
    a, b = facts
    value = _binary_value(ctx, a, b, _BINARY[ctx.op_type])
    return [_broadcast_rule(ctx, facts, value)]


@rule("Mod", since=10)
def mod_op(ctx):
    facts = _present(ctx)
    if facts is None or len(facts) != 2:
        return None
    fn = _dims(_fmod if ctx.attr("fmod", 0) else _mod)
    a, b = facts
    value = None
    if a.value is not None and b.value is not None and a.value.dtype == object and b.value.dtype == object:
        value = value_or_none(elementwise(fn, a.value, b.value))
    return [_broadcast_rule(ctx, facts, value)]


def _nary(fn):
    def reduce_values(values):
        out = values[0]
        for v in values[1:]:
            out = elementwise(_dims(fn), out, v)
        return value_or_none(out)

    return reduce_values


_NARY = {"Max": _nary(dmax), "Min": _nary(dmin), "Sum": _nary(add), "Mean": None}


@rule("Max", "Min", "Sum", "Mean", since=1)
def nary(ctx):
    facts = _present(ctx)
    if facts is None:
        return None
    if ctx.version < 8:
        return None  # no broadcasting before opset 8: onnx's inference handles it
    value = None
    fn = _NARY[ctx.op_type]
    if fn is not None and all(f.value is not None and f.value.dtype == object for f in facts):
        value = fn([f.value for f in facts])
    return [_broadcast_rule(ctx, facts, value)]


_BROADCAST_ONLY = ("BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "PRelu")


@rule(*_BROADCAST_ONLY, since=7)
def broadcast_only(ctx):
    facts = _present(ctx)
    if facts is None:
        return None
    return [_broadcast_rule(ctx, facts)]


@rule("Pow", since=1)
def pow_(ctx):
    """Pow-1 without ``broadcast`` wants equal shapes (then broadcasting changes nothing);
    onnxruntime broadcasts them multidirectionally as from opset 7, so that is the shape."""
    if ctx.version < 7 and ctx.attr("broadcast", 0):
        return None  # legacy limited broadcast: onnx's inference handles it
    return broadcast_only(ctx)


@rule("Where", since=9)
def where(ctx):
    facts = _present(ctx)
    if facts is None or len(facts) != 3:
        return None
    cond, x, y = facts
    value = None
    if cond.value is not None and x.value is not None and y.value is not None:
        if x.value.dtype == object and y.value.dtype == object and cond.value.dtype == object:

            def pick(c, a, b):
                if c is True:
                    return a
                if c is False:
                    return b
                if a is not UNKNOWN and a is b or (isinstance(a, (int, Expr)) and a == b):
                    return a
                return _select(c, a, b)

            value = value_or_none(elementwise(pick, cond.value, x.value, y.value))
        elif x.value.dtype != object and y.value.dtype != object:
            flat = cond.value.reshape(-1).tolist()
            if all(isinstance(c, bool) for c in flat):
                value = np.where(np.array(flat, dtype=bool).reshape(cond.value.shape), x.value, y.value)
    shape = broadcast_shapes(ctx, [f.shape for f in facts])
    if value is not None and shape is not None and tuple(value.shape) != tuple(shape):
        value = None
    return [Fact(dtype=x.dtype or y.dtype, shape=shape, value=value)]


def _select(c, a, b):
    """``Where`` of a symbolic condition c (a 0/1 dim): ``c*a + (1-c)*b`` -- of dims, or of bool
    elements as their indicators."""
    if not isinstance(c, Expr):
        return UNKNOWN
    bools = isinstance(a, bool) or isinstance(b, bool)
    x, y = (_indicator(a), _indicator(b)) if bools else (a, b)
    if not isinstance(x, (int, Expr)) or not isinstance(y, (int, Expr)):
        return UNKNOWN
    try:
        d = add(mul(c, x), mul(sub(1, c), y))
    except ExpressionTooLarge:
        return UNKNOWN
    return _as_bool(d) if bools else d


def _unary_value(fn):
    def lifted(a):
        if isinstance(a, (int, Expr)) and not isinstance(a, bool):
            return fn(a)
        return UNKNOWN

    return lifted


def _not(e):
    if isinstance(e, bool):
        return not e
    if isinstance(e, Expr):
        return _as_bool(sub(1, e))  # an indicator
    return UNKNOWN


def _abs(a):
    if provably_nonneg(a):
        return a
    if provably_nonneg(neg(a)):
        return neg(a)
    return UNKNOWN


@rule("Neg", "Abs", "Not", since=1)
def unary(ctx):
    data = ctx.input(0)
    if data is None:
        return None
    value = None
    if data.value is not None:
        if data.value.dtype == object:
            if ctx.op_type == "Not":
                fn = _not
            else:
                fn = _unary_value(neg if ctx.op_type == "Neg" else _abs)
            value = value_or_none(elementwise(fn, data.value).reshape(data.value.shape))
            value = fit_integer_value(value, data.dtype)  # -INT_MIN wraps
        else:
            value = _exact(ctx, [data.value])
    return [Fact(dtype=data.dtype, shape=data.shape, value=value)]


@rule("Floor", "Ceil", "Sqrt", "Reciprocal", "Relu", since=6)
def same_shape_float(ctx):
    data = ctx.input(0)
    if data is None:
        return None
    value = None
    if data.value is not None and data.value.dtype != object:
        value = _exact(ctx, [data.value])  # Relu of -0.0 or NaN is left unknown, as are NaN payloads
    return [Fact(dtype=data.dtype, shape=data.shape, value=value)]


