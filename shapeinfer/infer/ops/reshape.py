"""Reshape, every version.

- v1: the target shape is the ``shape`` attribute; ``0`` copies the input dim, ``-1`` is solved.
- v5, v13: the target shape is the second input (int64, 1-D); same ``0``/``-1`` meaning.
- v14, v19, v21, v23: as v5, plus ``allowzero``: with ``allowzero=1`` a ``0`` means zero, and a
  shape holding both ``0`` and ``-1`` is invalid. (v19/v21/v23 only add types.)

An empty shape means a scalar. ``-1`` is the exact quotient of the element counts, so
``[B,S,768]`` to ``[0,0,12,-1]`` gives ``64`` and ``[B,S,4]`` to ``[-1,8]`` gives ``B*S/2``.
"""

from __future__ import annotations

import itertools
from typing import Optional

from ...symbolic import (BroadcastError, Dim, Expr, ExpressionTooLarge, add, as_single_atom, at_zero, atom_dim, common_denominator, constant_value, iszero, mul, provably_nonneg, provably_positive, sub, to_str,
                         truediv, zero_factors)
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
    minus = -1 in known
    for e in spec:  # a computed entry below -1 (below 0 beside a -1) is no shape: valid only where it is not
        if isinstance(e, Expr) and not ctx.nonneg(e):
            least = 0 if minus else -1
            ctx.condition(f"valid only when the entry {to_str(e)} of shape {_spec_str(spec)} is {least} or more",
                          "le", least, e)
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
            if ctx.positive(e) or (allowzero and ctx.nonneg(e)):
                out.append(e)
            elif not allowzero and in_shape is not None and i < len(in_shape) and e == in_shape[i]:
                out.append(e)  # the input's own dim (so never negative): a 0 copies itself
            elif not allowzero and in_shape is not None and i < len(in_shape) and zero_implies_zero(e, in_shape[i]):
                out.append(e)  # e > 0 gives e; e == 0 copies the input dim, which is then 0 too
            elif not allowzero and in_shape is not None and i >= len(in_shape) and ctx.nonneg(e):
                out.append(e)  # e == 0 here has no input dim to copy: a valid run has e > 0
            else:
                out.append(None)
                if not allowzero and in_shape is not None and i < len(in_shape):
                    pending.append(i)
    for i in pending:
        if _zero_case_fails(spec, in_shape, i, ctx.nonneg):
            out[i] = spec[i]  # e == 0 would copy the input dim, but then no run succeeds
    pending = [i for i in pending if out[i] is None]
    if pending:
        split = _split_zero_cases(spec, in_shape, out, pending, infer_at, ctx.nonneg)
        direct = _copy_when_zero(spec, in_shape, out, pending, ctx.nonneg)
        if infer_at is not None:
            direct[infer_at] = _solve(in_shape, direct, infer_at)
        # both are exact: the smaller of the two, dim by dim (the split's -1 is plain where
        # its cases simplify, the direct one a single division where they do not)
        out = [_smaller(a, b) for a, b in zip(split, direct)]
    total_in = prod(in_shape) if in_shape is not None else None
    if infer_at is not None and out[infer_at] is not None:  # solved case by case
        if total_in is not None and not _integral(out[infer_at]):
            denom = prod(d for j, d in enumerate(out) if j != infer_at)
            ctx.condition(f"valid only when {_multiple_str(out[infer_at], total_in, denom)} "
                          f"(the -1 of shape {_spec_str(spec)})", "multiple", total_in, denom)
    elif infer_at is not None:
        others = [d for j, d in enumerate(out) if j != infer_at]
        if total_in is not None and all(d is not None for d in others):
            denom = prod(others)
            if denom == 0:  # no size makes the count match uniquely (onnxruntime refuses it too)
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


# At most this many atoms are split into their zero and nonzero cases per node (2**n cases).
MAX_ZERO_SPLITS = 2


def _split_zero_cases(spec, in_shape, out, pending, infer_at, nonneg=provably_nonneg) -> list:
    """out with the pending entries (and the -1) made exact by cases, where that can be done.

    A pending entry e (symbolic, allowzero=0, at an index the input has) may be 0, and then it
    copies the input dim. Where e >= 0 is a positive multiple of a power of one atom a (``seq``,
    ``2*seq``), e == 0 exactly when a == 0: the whole node is computed in each case -- a != 0,
    where e is itself, and a == 0, where every input dim and entry is read with a at 0 and e
    copies the input dim -- and each output dim is ``R1 + iszero(a)*(R0 - R1)``, which the
    algebra reduces to R1 where the two agree. The -1 is solved in each case. A case whose run
    cannot succeed (a -1 beside a zero dim, element counts that never match) takes the value
    of a case that can (R1 alone). At most MAX_ZERO_SPLITS atoms; other entries stay unknown."""
    split: dict = {}  # entry index -> its atom
    order: list = []
    for i in pending:
        factors = zero_factors(spec[i])
        if factors is None or len(factors) != 1 or not nonneg(spec[i]):
            continue
        if factors[0] not in order:
            if len(order) == MAX_ZERO_SPLITS:
                continue
            order.append(factors[0])
        split[i] = factors[0]
    if not split:
        return out
    try:
        cases = []
        for zeros in itertools.product((False, True), repeat=len(order)):
            try:
                dims = _zero_case(spec, in_shape, out, split, [a for a, z in zip(order, zeros) if z], infer_at)
            except (BroadcastError, ZeroDivisionError):
                dims = None  # an input dim has no value in this case: no run reaches the node
            if dims is None:
                continue  # no run succeeds in this case
            weight: Dim = 1
            for a, z in zip(order, zeros):
                ind = iszero(atom_dim(a))
                weight = mul(weight, ind if z else sub(1, ind))
            cases.append((weight, dims))
        if not cases:
            return out
        (_, first), rest = cases[0], cases[1:]
        changed = list(split) + ([infer_at] if infer_at is not None else [])
        combined = list(out)
        for j in changed:
            if first[j] is None or any(dims[j] is None for _, dims in rest):
                continue
            # (a case's value that has none in another case -- X/(X%2) where X%2 == 0 -- is
            # fine: its factor is 0 there, and evaluation reads around it)
            d = first[j]
            for weight, dims in rest:
                d = add(d, mul(weight, sub(dims[j], first[j])))
            combined[j] = d
        return combined
    except ExpressionTooLarge:
        return out


def _solve(in_shape, out, infer_at):
    """The -1 as the input's element count over the other dims (None where one is unknown, the
    product is 0 or past the budget)."""
    others = [d for j, d in enumerate(out) if j != infer_at]
    if any(d is None for d in others):
        return None
    try:
        denom = prod(others)
        return None if constant_value(denom) is not None else truediv(prod(in_shape), denom)
    except (ExpressionTooLarge, ZeroDivisionError):
        return None


def _smaller(a, b):
    if a is None or b is None:
        return b if a is None else a
    size = lambda d: d.size if isinstance(d, Expr) else 1  # noqa: E731
    return b if size(b) < size(a) else a


def _copy_when_zero(spec, in_shape, out, pending, nonneg=provably_nonneg) -> list:
    """out with each pending entry the case split left unknown written ``e + iszero(e)*d``:
    e where it is not 0, the input dim d where it is (e provably >= 0, so never the -1 that
    means "infer"). Each entry copies its own input dim, so the dims need no cases between
    them: a node with any number of such entries stays exact, and the -1 (solved after) is the
    element count over their product -- an exact division wherever the run succeeds."""
    out = list(out)
    for i in pending:
        if out[i] is not None or not (spec[i] in in_shape or nonneg(spec[i])):
            continue  # (an entry that is a dim of the input is never negative)
        d = in_shape[i]
        if d is None:
            continue
        try:
            ind = iszero(spec[i])
            rest = d  # (e*iszero(e) is 0 for every binding: the copy alone is added)
            inner = as_single_atom(ind)
            if inner is not None and as_single_atom(inner.args[0]) is not None:
                try:  # the copy is read where the entry is 0: its atom at 0 in it too
                    rest = at_zero(rest, as_single_atom(inner.args[0]))
                except (BroadcastError, ZeroDivisionError):
                    pass
            out[i] = add(spec[i], mul(ind, rest))
        except ExpressionTooLarge:
            continue
    return out


def _zero_case(spec, in_shape, out, split, zeros, infer_at) -> Optional[list]:
    """The output dims in the case where the atoms ``zeros`` are 0 and the other split atoms
    are not (None where unknown), or None when no run succeeds in that case. (BroadcastError
    when a dim has no value in that case -- ``bcast(seq, seq+96*iszero(seq))`` at seq = 0 --
    which also means no run gets here.)"""
    def at(d):
        for a in zeros:
            if isinstance(d, Expr):
                d = at_zero(d, a)
        return d

    ins = [at(d) for d in in_shape]
    dims: list = []
    for j, d in enumerate(out):
        if j in split:
            if split[j] in zeros:
                d = ins[j]  # e == 0 copies the input dim
            else:
                d = at(spec[j])  # e != 0: itself
                if d == 0:
                    return None  # (its atom is not 0 here, yet e is: a case no binding has)
        elif j != infer_at and d is not None:
            d = at(d)
        dims.append(d)
    total = prod(ins)
    if infer_at is not None:
        others = [d for j, d in enumerate(dims) if j != infer_at]
        if any(d is None for d in others):
            return dims
        denom = prod(others)
        if denom == 0:
            return None  # a -1 beside a zero dim cannot be inferred: the run fails
        q = truediv(total, denom)
        if constant_value(q) is not None and (not isinstance(q, int) or q < 0):
            return None  # counts that never match here
        dims[infer_at] = q
    elif all(d is not None for d in dims) and _never_equal(total, prod(dims)):
        return None
    return dims


def _zero_case_fails(spec, in_shape, i, nonneg=provably_nonneg) -> bool:
    """True when entry i (a symbolic e >= 0, allowzero=0) can be 0 only in runs that fail.

    e is a positive multiple of a product of atoms, so e == 0 exactly when one atom is 0. For
    each atom, the whole node is re-read with that atom at 0 -- every entry and input dim, the 0
    entries copying input dims -- and the element counts must then differ for every value of
    the other symbols. (A -1 or an entry that might still be 0 there: not decided.)"""
    e = spec[i]
    factors = zero_factors(e)
    if factors is None or -1 in spec or not nonneg(e):
        return False
    for atom in factors:
        def zero(d, atom=atom):
            return at_zero(d, atom) if isinstance(d, Expr) else d

        try:
            ins = [zero(d) for d in in_shape]
            zeroed = [zero(entry) for entry in spec]
        except (BroadcastError, ZeroDivisionError):
            continue  # a dim that has no value with the atom at 0 (a failed broadcast): no run
        outs = []
        for j, v in enumerate(zeroed):
            if v is None:  # (an entry not known: not decided)
                return False
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
