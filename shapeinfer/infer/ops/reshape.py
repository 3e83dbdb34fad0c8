"""Reshape, every version.

- v1: the target shape is the ``shape`` attribute; ``0`` copies the input dim, ``-1`` is solved.
- v5, v13: the target shape is the second input (int64, 1-D); same ``0``/``-1`` meaning.
- v14, v19, v21, v23: as v5, plus ``allowzero``: with ``allowzero=1`` a ``0`` means zero, and a
  shape holding both ``0`` and ``-1`` is invalid. (v19/v21/v23 only add types.)

An empty shape means a scalar. ``-1`` is the exact quotient of the element counts, so
``[B,S,768]`` to ``[0,0,12,-1]`` gives ``64`` and ``[B,S,4]`` to ``[-1,8]`` gives ``B*S/2``.
"""

from __future__ import annotations

from typing import Optional

from ...symbolic import (Expr, at_zero, common_denominator, constant_value, provably_nonneg, provably_positive, sub,
                         to_str, truediv, zero_factors)
from ..facts import Fact
from ..registry import rule
from ._util import prod, value_entries, value_length, zero_implies_zero


def reshape_output(ctx, data: Optional[Fact], spec: Optional[list], length: Optional[int], allowzero: bool) -> Fact:
    dtype = data.dtype if data is not None else 0
    in_shape = data.shape if data is not None else None
    if spec is None:
        if length is None:
            return Fact(dtype=dtype)
        return Fact(dtype=dtype, shape=ctx.fresh_shape(length))
    known = [e for e in spec if isinstance(e, int)]
    if known.count(-1) > 1:
        raise ctx.error(f"shape {_spec_str(spec)} has more than one -1")
    for e in known:
        if e < -1:
            raise ctx.error(f"shape {_spec_str(spec)} has a negative entry {e} (only -1 is allowed)")
    if allowzero and 0 in known and -1 in known:
        raise ctx.error(f"shape {_spec_str(spec)} holds both 0 and -1, invalid with allowzero=1")
    out: list = []
    infer_at = None
    pending: list = []  # symbolic entries that might be 0 (then they copy the input dim)
    for i, e in enumerate(spec):
        if e is None:
            out.append(None)
        elif isinstance(e, int):
            if e == -1:
                infer_at = i
                out.append(None)
            elif e == 0 and not allowzero:
                if in_shape is None:
                    out.append(None)
                elif i >= len(in_shape):
                    raise ctx.error(
                        f"shape {_spec_str(spec)} has 0 at index {i}, which copies an input dim, "
                        f"but the input has rank {len(in_shape)}"
                    )
                else:
                    out.append(in_shape[i])
            else:
                out.append(e)
        else:  # a symbolic entry: safe only where it cannot be 0 (copy) or -1 (infer)
            if ctx.positive(e) or (allowzero and provably_nonneg(e)):
                out.append(e)
            elif not allowzero and in_shape is not None and i < len(in_shape) and zero_implies_zero(e, in_shape[i]):
                out.append(e)  # e > 0 gives e; e == 0 copies the input dim, which is then 0 too
            elif not allowzero and in_shape is not None and i >= len(in_shape) and provably_nonneg(e):
                out.append(e)  # e == 0 here has no input dim to copy: a valid run has e > 0
            else:
                out.append(None)
                if not allowzero and in_shape is not None and i < len(in_shape):
                    pending.append(i)
    for i in pending:
        if _zero_case_fails(spec, in_shape, i):
            out[i] = spec[i]  # e == 0 would copy the input dim, but then no run succeeds
    total_in = prod(in_shape) if in_shape is not None else None
    if infer_at is not None:
        others = [d for j, d in enumerate(out) if j != infer_at]
        if total_in is not None and all(d is not None for d in others):
            denom = prod(others)
            if denom == 0:
                if total_in != 0 and isinstance(total_in, int):
                    raise ctx.error(f"shape {_spec_str(spec)}: -1 cannot be inferred next to a zero dim")
            else:
                q = truediv(total_in, denom)
                if not isinstance(q, int) and constant_value(q) is not None:  # a fraction
                    raise ctx.error(
                        f"element counts cannot match: the input has {to_str(total_in)} elements, "
                        f"not a multiple of {to_str(denom)} from shape {_spec_str(spec)}"
                    )
                if isinstance(q, int) and q < 0:
                    raise ctx.error(f"shape {_spec_str(spec)}: -1 would be negative")
                if not _integral(q):
                    ctx.condition(f"valid only when {_multiple_str(q, total_in, denom)} "
                                  f"(the -1 of shape {_spec_str(spec)})", "multiple", total_in, denom)
                out[infer_at] = q
    elif total_in is not None and all(d is not None for d in out):
        total_out = prod(out)
        diff = sub(total_in, total_out)
        if diff != 0 and _counts_never_match(total_in, total_out):
            raise ctx.error(
                f"element counts cannot match: input has {to_str(total_in)} elements, "
                f"shape {_spec_str(spec)} has {to_str(total_out)}"
            )
        if diff != 0 and _constant_ratio(total_in, total_out):
            ctx.condition(f"valid only for an empty input: its {to_str(total_in)} elements and the "
                          f"{to_str(total_out)} of shape {_spec_str(spec)} differ wherever they are not 0",
                          "equal", total_in, total_out)
        elif diff != 0:
            ctx.condition(f"valid only when {to_str(total_in)} == {to_str(total_out)} "
                          f"(the element counts of the input and of shape {_spec_str(spec)})", "equal", total_in, total_out)
    out = [d if d is not None else ctx.fresh() for d in out]
    value = None
    if data is not None and data.value is not None and all(isinstance(d, int) for d in out):
        try:
            value = data.value.reshape(out)
        except ValueError:
            value = None
    return Fact(dtype=dtype, shape=tuple(out), value=value)


def _zero_case_fails(spec, in_shape, i) -> bool:
    """True when entry i (a symbolic e >= 0, allowzero=0) can be 0 only in runs that fail.

    e is a positive multiple of a product of atoms, so e == 0 exactly when one atom is 0. For
    each atom, the whole node is re-read with that atom at 0 -- every entry and input dim, the 0
    entries copying input dims -- and the element counts must then differ for every value of
    the other symbols. (A -1 or an entry that might still be 0 there: not decided.)"""
    e = spec[i]
    factors = zero_factors(e)
    if factors is None or -1 in spec or not provably_nonneg(e):
        return False
    for atom in factors:
        def zero(d, atom=atom):
            return at_zero(d, atom) if isinstance(d, Expr) else d

        ins = [zero(d) for d in in_shape]
        outs = []
        for j, entry in enumerate(spec):
            v = zero(entry)
            if v == 0:
                if j >= len(ins):
                    return False
                v = ins[j]
            elif not (isinstance(v, int) and v > 0) and not provably_positive(v):
                return False
            outs.append(v)
        if not _never_equal(prod(ins), prod(outs)):
            return False
    return True


def _never_equal(a, b) -> bool:
    if a == b:
        return False
    diff = sub(a, b)
    if isinstance(diff, int):
        return diff != 0
    return provably_positive(diff) or provably_positive(sub(0, diff)) or _counts_never_match(a, b)


def _multiple_str(q, total, denom) -> str:
    """The condition for q = total/denom to be whole, said simply: for q = P/c (P with integer
    coefficients, c an integer) "P is a multiple of c" -- [B,S] to [0,-1,4] needs "S is a
    multiple of 4"; otherwise in full."""
    c = common_denominator(q)
    if c is not None and c > 1:
        return f"{to_str(q * c)} is a multiple of {c}"
    return f"{to_str(total)} is a multiple of {to_str(denom)}"


def _integral(q) -> bool:
    """True when q is an integer for every binding: integer coefficients, no exact division."""
    return common_denominator(q) == 1


def _counts_never_match(total_in, total_out) -> bool:
    """True when two element counts differ for every binding, 0 included: counts in a constant
    ratio other than 1 (3*b and 2*b) differ wherever they are not both 0, so only when one of
    them is provably positive ([3,b] to [2,0,1] runs at b = 0, where both are 0)."""
    if isinstance(total_in, int) and isinstance(total_out, int):
        return total_in != total_out
    if not _constant_ratio(total_in, total_out):
        return False
    return provably_positive(total_in) or provably_positive(total_out)


def _constant_ratio(total_in, total_out) -> bool:
    """True when total_in / total_out is a constant other than 1 (3*b against 2*b)."""
    if total_out == 0 or total_in == 0:
        return False
    ratio = truediv(total_in, total_out)
    return constant_value(ratio) is not None and ratio != 1


def _spec_str(spec) -> str:
    return "[" + ",".join("?" if e is None else to_str(e) for e in spec) + "]"


@rule("Reshape", since=1)
def reshape_v1(ctx):
    spec = ctx.attr("shape")
    if spec is None:
        return None
    spec = [int(e) for e in spec]
    return [reshape_output(ctx, ctx.input(0), spec, len(spec), False)]


@rule("Reshape", since=5)
def reshape_v5(ctx):
    shape = ctx.shape_input(1, "the shape")
    return [reshape_output(ctx, ctx.input(0), value_entries(shape), value_length(shape), False)]


@rule("Reshape", since=14)
def reshape_v14(ctx):
    shape = ctx.shape_input(1, "the shape")
    allowzero = bool(ctx.attr("allowzero", 0))
    return [reshape_output(ctx, ctx.input(0), value_entries(shape), value_length(shape), allowzero)]
