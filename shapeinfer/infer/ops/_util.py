"""Helpers shared by the rules: reading shape values, broadcasting, products of dims."""

from __future__ import annotations

from typing import Optional

import numpy as np
from onnx import TensorProto

from ...semantics import INT_RANGES, wrap_int
from ...symbolic import (Bcast, BroadcastError, Dim, Expr, as_single_atom, at_zero, bcast, fits, mul, provably_nonneg, provably_not_one,
                         to_str, zero_factors)
from ..facts import UNKNOWN, Fact, Wrapped, as_dim, obj_array, shape_str


def value_entries(fact: Optional[Fact]) -> Optional[list]:
    """The elements of a 0-D/1-D int value as dims, with None for unknown ones; None if no value."""
    if fact is None or fact.value is None:
        return None
    return [as_dim(e) for e in fact.value.reshape(-1).tolist()]


MAX_RANK = 1024  # a shape longer than this is not tracked dim by dim (no runtime takes such a rank)


def value_length(fact: Optional[Fact]) -> Optional[int]:
    """The number of entries of a 1-D shape input, from its value or its static shape."""
    if fact is None:
        return None
    if fact.value is not None:
        return int(fact.value.size)
    if fact.shape is not None and len(fact.shape) == 1 and isinstance(fact.shape[0], int):
        return fact.shape[0] if fact.shape[0] <= MAX_RANK else None  # no tensor has that rank
    return None


def int_entries(fact: Optional[Fact]) -> Optional[list]:
    """The elements of a value when all are plain ints (attributes given as inputs), else None."""
    return None if fact is None else fact.int_elements()


def prod(dims) -> Dim:
    out: Dim = 1
    for d in dims:
        out = out * d if type(out) is int and type(d) is int else mul(out, d)
    return out


def nonnegative_entries(ctx, entries, what: str) -> None:
    """A condition for each computed entry of a shape or repeats that may be negative
    (``S - 5``): valid only where it is not (a negative size is no size)."""
    for e in entries:
        if isinstance(e, Expr) and not provably_nonneg(e):
            ctx.condition(f"valid only when the entry {to_str(e)} of {what} is not negative", "le", 0, e)


def broadcast_dims(ctx, a: Optional[Dim], b: Optional[Dim], shapes) -> Optional[Dim]:
    """ONNX broadcast of two dims (None: unknown). Raises the node's error if they never match."""
    if a is None and b is None:
        return None
    if a is None or b is None:
        known = a if b is None else b
        # The unknown side must be 1 or equal to the known side, unless the known side is 1.
        return known if provably_not_one(known) else None
    try:
        out = bcast(a, b)
        # a side that won over another it may differ from (implied: a zero case, min(64, seq);
        # or provably not 1: seq against a baked 8): valid only where they broadcast
        if a != b and not (type(a) is int and a == 1) and not (type(b) is int and b == 1) \
                and not isinstance(as_single_atom(out), Bcast):
            ctx.condition(f"valid only when {to_str(a)} and {to_str(b)} broadcast (shapes "
                          f"{', '.join(shape_str(s) for s in shapes)})", "broadcast", a, b)
        return out
    except BroadcastError:
        raise ctx.error(
            f"shapes {', '.join(shape_str(s) for s in shapes)} cannot broadcast: dims {a} and {b} "
            f"differ and neither is 1"
        ) from None


def broadcast_shapes(ctx, shapes: list) -> Optional[tuple]:
    """Multidirectional (NumPy-style) broadcast of several shapes; None if a rank is unknown.

    Unknown dims come back as fresh symbols."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        acc: Optional[Dim] = 1
        for s in shapes:
            i = len(s) - rank + k
            if i < 0:
                continue
            acc = broadcast_dims(ctx, acc, s[i], shapes)
        out.append(acc if acc is not None else ctx.fresh())
    return tuple(out)


def small_shape(shape) -> bool:
    """Whether a value of this shape is worth tracking: every dim a plain int, each dim and the
    element count at most MAX_VALUE_ELEMENTS (an empty tensor with a dim of 2**40 is no small
    array: NumPy cannot even make it)."""
    from ..facts import MAX_VALUE_ELEMENTS

    count = 1
    for d in shape:
        if type(d) is not int or not 0 <= d <= MAX_VALUE_ELEMENTS:
            return False
        count *= d
    return count <= MAX_VALUE_ELEMENTS


def value_or_none(arr) -> Optional[np.ndarray]:
    """Drop a value that holds nothing known."""
    if arr is None:
        return None
    if arr.dtype == object and all(e is UNKNOWN for e in arr.reshape(-1).tolist()):
        return None
    return arr


def dims_value(dims) -> np.ndarray:
    """A 1-D shape value holding the given dims (None entries unknown)."""
    return obj_array(UNKNOWN if d is None else d for d in dims)


def normalize_axis(ctx, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def zero_implies_zero(e, in_dim) -> bool:
    """True when e is never negative and, whenever e == 0, in_dim is 0 too (so an op that
    treats e == 0 specially -- Reshape's copy, Slice's clamp -- gives the same either way)."""
    if not provably_nonneg(e):
        return False
    if e == in_dim:
        return True
    # e is a positive multiple of a product of atoms: it is 0 exactly when one of them is.
    factors = zero_factors(e)
    return factors is not None and all(_zero_at(in_dim, atom) for atom in factors)


def _zero_at(d, atom) -> bool:
    """d is 0 wherever the atom is 0 -- or has no value there (a broadcast that fails, as
    ``bcast(seq, seq+96*iszero(seq))`` at seq = 0): no run has that tensor."""
    try:
        return at_zero(d, atom) == 0
    except (BroadcastError, ZeroDivisionError):
        return True


def fit_integer_value(value: Optional[np.ndarray], dtype: int, wrap: bool = False, ctx=None) -> Optional[np.ndarray]:
    """A value computed in integer type dtype, as the runtime holds it: an element that may not
    fit the type (it would wrap) becomes unknown -- a symbolic one unless it provably fits (see
    symbolic.fits), a concrete one only when ``wrap`` is False; with ``wrap`` (Cast, which the
    spec defines to wrap) a concrete element is computed with the wrap. Concrete overflow of
    other ops is left to the engine, which wraps it and reports it.

    ``ctx``: the value was made by ring operations (Add, Sub, Mul) of
    int64 elements, which a runtime computes modulo 2**64: a symbolic element that may not fit
    is kept as Wrapped, known wherever it is the element count of a tensor of the run (the
    engine's settle_wrapped)."""
    bounds = INT_RANGES.get(dtype)
    if value is None or bounds is None or value.dtype != object:
        return value
    lo, hi = bounds
    flat = value.reshape(-1).tolist()
    changed = wrapped = False
    ring = ctx is not None and dtype == TensorProto.INT64
    for i, e in enumerate(flat):
        if type(e) is int:
            if wrap and not lo <= e <= hi:
                flat[i], changed = wrap_int(e, dtype), True
        elif isinstance(e, Expr) and not fits(e, lo, hi):
            if ring:
                flat[i], changed, wrapped = Wrapped(e), True, True
            else:
                flat[i], changed = UNKNOWN, True
        elif type(e) is Wrapped:  # (read by an op that is no ring op, e.g. a Cast: not known)
            flat[i], changed = UNKNOWN, True
    if wrapped:
        return ctx.engine.settle_wrapped(ctx.scope, obj_array(flat, value.shape))
    return obj_array(flat, value.shape) if changed else value
