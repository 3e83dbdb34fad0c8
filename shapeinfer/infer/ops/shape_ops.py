"""The ops that compute shapes in exported graphs, with their *values* followed as dims.

Constant, Shape (``start``/``end`` from v15), Size, Gather, Concat, Slice, Unsqueeze/Squeeze
(axes as attribute before v13, as input from v13), Cast, Identity, Range, ConstantOfShape and the
Reduce ops (axes as attribute, or as input from ReduceSum-13 / the others' v18).
"""

from __future__ import annotations

import math

from fractions import Fraction
from math import ceil
from typing import Optional

import numpy as np
from onnx import TensorProto, helper

from ...symbolic import (
    Expr,
    ExpressionTooLarge,
    add,
    bounds,
    dmax,
    dmin,
    fits,
    floordiv,
    iszero,
    mul,
    neg,
    provably_positive,
    sub,
    to_str,
)
from ...errors import CannotDecide
from ...modelio.tensors import np_dtype, read_tensor
from ...fold.folder import exact_value
from ...modelio.external import read_small_tensor
from ...semantics import INT_RANGES, as_python_slice, slice_range, slice_runtimes_differ
from ..facts import (FLOAT_TYPES, INT_TYPES, MAX_VALUE_ELEMENTS, UNKNOWN, Fact, as_dim, elementwise, is_unknown, obj_array,
                     value_from_numpy)
from ..registry import rule
from .indexing import check_indices
from ._util import (dims_value, fit_integer_value, int_entries, nonnegative_entries, normalize_axis, prod, small_shape,
                    value_entries,
                    zero_implies_zero)

INT64 = TensorProto.INT64
# A Slice bound at or beyond this means "to the end": no tensor dim can reach it.
_HUGE = 2**62


def _partial_value(fact: Optional[Fact]) -> Optional[np.ndarray]:
    """The fact's value, or an all-unknown object array when only its (small, static) shape is known."""
    if fact is None:
        return None
    if fact.value is not None:
        return fact.value
    shape = fact.static_shape()
    if shape is None or fact.dtype not in INT_TYPES or math.prod(shape) > MAX_VALUE_ELEMENTS:
        return None
    return obj_array([UNKNOWN] * math.prod(shape), shape)


_CONSTANT_VALUES = ("value", "sparse_value", "value_int", "value_float", "value_ints", "value_floats", "value_string",
                    "value_strings")


@rule("Constant", since=1)
def constant(ctx):
    given = [a.name for a in ctx.node.attribute if a.name in _CONSTANT_VALUES]
    if len(given) != 1:  # (onnxruntime refuses a Constant with none, or more than one)
        raise ctx.error(f"a Constant holds exactly one value attribute; this one has {len(given)}"
                        + (f" ({', '.join(given)})" if given else ""))
    for name in ("value", "sparse_value"):
        a = ctx.attr(name)
        if a is not None:
            if name == "sparse_value":
                return [Fact(dtype=a.values.data_type, shape=tuple(a.dims))]
            arr = None
            if math.prod(a.dims) <= MAX_VALUE_ELEMENTS:
                try:
                    arr = read_tensor(a)
                except CannotDecide:  # (external data, never read; or not what it says)
                    arr = None
            value = value_from_numpy(arr, a.data_type) if arr is not None else None
            if value is not None and value.dtype != object and a.data_type not in FLOAT_TYPES:
                value = None
            return [Fact(dtype=a.data_type, shape=tuple(int(d) for d in a.dims), value=value)]
    for name, dtype in (("value_int", INT64), ("value_float", TensorProto.FLOAT)):
        v = ctx.attr(name)
        if v is not None:
            arr = np.array(v, dtype=np.int64 if dtype == INT64 else np.float32)
            return [Fact(dtype=dtype, shape=(), value=value_from_numpy(arr, dtype))]
    for name, dtype in (("value_ints", INT64), ("value_floats", TensorProto.FLOAT)):
        v = ctx.attr(name)
        if v is not None:
            arr = np.array(list(v), dtype=np.int64 if dtype == INT64 else np.float32)
            return [Fact(dtype=dtype, shape=(len(v),), value=value_from_numpy(arr, dtype))]
    v = ctx.attr("value_string")
    if v is not None:
        return [Fact(dtype=TensorProto.STRING, shape=())]
    v = ctx.attr("value_strings")
    if v is not None:
        return [Fact(dtype=TensorProto.STRING, shape=(len(v),))]
    return None


@rule("Shape", since=1)
def shape(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    dims = list(data.shape)
    if ctx.version >= 15:
        r = len(dims)
        start, end = ctx.attr("start", 0), ctx.attr("end", None)
        start = max(0, min(r, start + r if start < 0 else start))
        end = r if end is None else max(0, min(r, end + r if end < 0 else end))
        dims = dims[start:end]
    return [Fact(dtype=INT64, shape=(len(dims),), value=dims_value(dims))]


@rule("Size", since=1)
def size(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return [Fact(dtype=INT64, shape=())]
    return [Fact(dtype=INT64, shape=(), value=obj_array([prod(data.shape)], ()))]


@rule("Identity", since=1)
def identity(ctx):
    f = ctx.input(0)
    return [f] if f is not None else None


@rule("Gather", since=1)
def gather(ctx):
    data, indices = ctx.input(0), ctx.input(1)
    if data is None or indices is None or data.shape is None or indices.shape is None:
        return None
    r = len(data.shape)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), r)
    out_shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    value = None
    check_indices(ctx, indices, [data.shape[axis]], f"axis {axis}")
    idx = int_entries(indices)
    if data.value is not None and idx is not None:
        n = data.value.shape[axis]
        for i in idx:
            if not -n <= i < n:
                raise ctx.error(f"index {i} is out of range for axis {axis} of size {n}")
        idx_arr = np.array([i + n if i < 0 else i for i in idx], dtype=np.int64).reshape(indices.value.shape)
        value = np.asarray(np.take(data.value, idx_arr, axis=axis), dtype=data.value.dtype)
    return [Fact(dtype=data.dtype, shape=tuple(out_shape), value=value)]


@rule("Concat", since=1)
def concat(ctx):
    facts = [ctx.input(i) for i in range(len(ctx.node.input)) if ctx.has_input(i)]
    if not facts or any(f is None or f.shape is None for f in facts):
        return None
    r = len(facts[0].shape)
    if any(len(f.shape) != r for f in facts):
        raise ctx.error("inputs have different ranks")
    axis = normalize_axis(ctx, ctx.attr("axis", 1 if ctx.version < 4 else None) or 0, r) if r else 0  # (Concat-1: "Default value is 1")
    out = []
    unsure = False
    for k in range(r):
        if k == axis:
            total = 0
            for f in facts:
                total = add(total, f.shape[k])
            out.append(total)
        else:
            dims = [f.shape[k] for f in facts]
            ints = [d for d in dims if isinstance(d, int)]
            if len(set(ints)) > 1:
                raise ctx.error(f"inputs differ in dim {k} ({', '.join(map(str, ints))}), not the concat axis")
            out.append(ints[0] if ints else dims[0])
            first = ints[0] if ints else dims[0]
            for d in dims:
                if d != first:
                    ctx.condition(f"valid only when the inputs' dim {k} agree ({to_str(first)} == {to_str(d)}), "
                                  "not the concat axis", "equal", first, d)
            if any(d != dims[0] for d in dims):
                # (onnxruntime takes the dim from the first non-empty input: a run the spec
                # refuses, where an input is empty, gives another shape)
                unsure = True
    value = None
    parts = [_partial_value(f) for f in facts]
    if all(p is not None for p in parts) and any(f.value is not None for f in facts):
        if all(p.dtype == object for p in parts):
            value = np.concatenate(parts, axis=axis)
        elif all(p.dtype != object for p in parts):
            value = np.concatenate(parts, axis=axis)
    fact = Fact(dtype=facts[0].dtype, shape=tuple(out), value=value)
    return [ctx.unsure(fact) if unsure else fact]


def _sign(x):
    """1 if x >= 0 for every binding, -1 if x < 0 for every binding, else None."""
    lo, hi = bounds(x)
    if lo >= 0:
        return 1
    if hi < 0:
        return -1
    return None


def slice_len(d, s, e, k: int):
    """Length of ``Slice`` along a dim of size d from start s to end e with step k (the spec's
    clamping: see shapeinfer.semantics.slice_range).

    s and e may be symbolic where their sign is known; None when it is not."""
    if isinstance(d, int) and isinstance(s, int) and isinstance(e, int):
        r = slice_range(d, s, e, k)
        return None if r is None else len(r)
    if isinstance(e, int) and slice_runtimes_differ(e, k):
        return None
    if k > 0:

        def clamp(x):
            if isinstance(x, int) and x >= _HUGE:
                return d
            sign = _sign(x)
            if sign is None:
                # x <= 0 where x == 0 only when d == 0 (a start of -seq on a dim of size seq):
                # both readings -- d + x for x < 0, 0 for x == 0 -- give max(d + x, 0)
                if bounds(x)[1] <= 0 and zero_implies_zero(neg(x), d):
                    return dmax(add(d, x), 0)
                return None
            return dmax(add(d, x), 0) if sign < 0 else dmin(x, d)

        lo_end, hi_end = clamp(s), clamp(e)
        if lo_end is None or hi_end is None:
            return None
        return dmax(floordiv(add(sub(hi_end, lo_end), k - 1), k), 0)

    last_index = sub(d, 1)

    def negative(x) -> Optional[int]:
        """-1 if x < 0, 1 if x >= 0, for every binding; -1 also where x is 0 only when d is 0
        (-seq on a dim of size seq): both readings give the same clamp there. None: unknown."""
        sign = _sign(x)
        if sign is None and bounds(x)[1] <= 0 and zero_implies_zero(neg(x), d):
            return -1
        return sign

    def clamp_start(x):  # to [0, d-1]; at d == 0 that is -1 and the slice is empty
        if isinstance(x, int) and x >= _HUGE:
            return last_index
        sign = negative(x)
        if sign is None:
            return None
        return dmin(dmax(add(d, x), 0), last_index) if sign < 0 else dmin(x, last_index)

    def clamp_end(x):  # to [-1, d-1]
        if isinstance(x, int) and x <= -_HUGE:
            return -1
        if isinstance(x, int) and x >= _HUGE:
            return last_index
        sign = negative(x)
        if sign is None:
            return None
        return dmin(dmax(add(d, x), -1), last_index) if sign < 0 else dmin(x, last_index)

    first, last = clamp_start(s), clamp_end(e)
    if first is None or last is None:
        return None
    return dmax(floordiv(add(sub(first, last), -k - 1), -k), 0)


@rule("Slice", since=1)
def slice_v1(ctx):
    starts, ends = ctx.attr("starts"), ctx.attr("ends")
    if starts is None or ends is None:
        return None
    return _slice(ctx, list(starts), list(ends), ctx.attr("axes"), None)


@rule("Slice", since=10)
def slice_v10(ctx):
    """starts/ends may be computed (even symbolic); axes and steps must be known ints."""
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    starts, ends = value_entries(ctx.input(1)), value_entries(ctx.input(2))
    axes = int_entries(ctx.input(3)) if ctx.has_input(3) else None
    steps = int_entries(ctx.input(4)) if ctx.has_input(4) else None
    if (ctx.has_input(3) and axes is None) or (ctx.has_input(4) and steps is None) or starts is None or ends is None:
        r = len(data.shape)
        if axes is not None:
            touched = {a + r if a < 0 else a for a in axes}
        else:
            touched = set(range(r))
        return [Fact(dtype=data.dtype, shape=tuple(ctx.fresh() if i in touched else d for i, d in enumerate(data.shape)))]
    return _slice(ctx, starts, ends, axes, steps)


def _slice(ctx, starts, ends, axes, steps):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    r = len(data.shape)
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    if not (len(starts) == len(ends) == len(axes) == len(steps)):
        raise ctx.error("starts, ends, axes and steps have different lengths")
    out = list(data.shape)
    index = [slice(None)] * r
    concrete = data.value is not None
    named = [normalize_axis(ctx, a, r) for a in axes]
    if len(set(named)) != len(named):  # ("an axis may not be repeated"; onnxruntime refuses it at load)
        if ctx.in_body:  # (the node may never run: its output unknown)
            return [Fact(dtype=data.dtype, shape=tuple(ctx.fresh() if i in named else d for i, d in enumerate(data.shape)))]
        raise ctx.error(f"axes {list(axes)} name an axis twice")
    for s, e, a, k in zip(starts, ends, named, steps):
        if k == 0:
            raise ctx.error("a slice step is 0")
        n = slice_len(data.shape[a], s, e, k) if s is not None and e is not None else None
        out[a] = n if n is not None else ctx.fresh()
        taken = slice_range(data.value.shape[a], s, e, k) if concrete and isinstance(s, int) and isinstance(e, int) else None
        if taken is not None:
            index[a] = as_python_slice(taken)
        else:
            concrete = False
    value = None
    if concrete:
        value = np.asarray(data.value[tuple(index)], dtype=data.value.dtype)
    return [Fact(dtype=data.dtype, shape=tuple(out), value=value)]


def _axes(ctx, attr_before: int, input_index: int):
    if ctx.version < attr_before:
        a = ctx.attr("axes")
        return list(a) if a is not None else None, True
    if not ctx.has_input(input_index):
        return None, True
    return int_entries(ctx.input(input_index)), False


@rule("Unsqueeze", since=1)
def unsqueeze(ctx):
    data = ctx.input(0)
    axes, known = _axes(ctx, 13, 1)
    if data is None or data.shape is None or axes is None:
        return None
    r = len(data.shape) + len(axes)
    axes = sorted(normalize_axis(ctx, a, r) for a in axes)
    if len(set(axes)) != len(axes):
        raise ctx.error("axes has duplicates")
    out = list(data.shape)
    for a in axes:
        out.insert(a, 1)
    value = data.value.reshape(out) if data.value is not None else None
    return [Fact(dtype=data.dtype, shape=tuple(out), value=value)]


@rule("Squeeze", since=1)
def squeeze(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    axes, _ = _axes(ctx, 13, 1)
    r = len(data.shape)
    if axes is not None and not len(axes) and ctx.version >= 13 and ctx.has_input(1):
        # an empty axes tensor: the spec does not say; onnxruntime squeezes every dim of size 1
        # with optimisations off, and nothing where its optimizer folds a static input first
        raise CannotDecide("off-spec-input", "the axes (input 1) are an empty tensor, which runtimes read differently")
    if axes is None:
        if (ctx.version >= 13 and ctx.has_input(1)) or not all(isinstance(d, int) for d in data.shape):
            return None
        axes = [i for i, d in enumerate(data.shape) if d == 1]
    axes = {normalize_axis(ctx, a, r) for a in axes}
    for a in axes:
        d = data.shape[a]
        if isinstance(d, int) and d != 1:
            raise ctx.error(f"cannot squeeze axis {a} of size {d}")
        if not isinstance(d, int):
            ctx.condition(f"valid only when axis {a} ({to_str(d)}) is 1, to be squeezed", "equal", d, 1)
    out = [d for i, d in enumerate(data.shape) if i not in axes]
    value = data.value.reshape(out) if data.value is not None else None
    return [Fact(dtype=data.dtype, shape=tuple(out), value=value)]


def _cast_value(ctx, value, src: int, dst: int):
    """The value of Cast(value) from src to dst as every runtime computes it, or None.

    Integer dims stay symbolic through a cast to an integer type (wrapping where they may not
    fit: see fit_integer_value) or to bool; concrete values go through the exact Cast kernel of
    folding, which leaves unknown what the spec leaves undefined (a float out of an integer
    type's range) or runtimes compute differently (double rounding to float16, saturation)."""
    if value is None:
        return None
    bool_t = TensorProto.BOOL
    if value.dtype == object:  # elements of an integer or bool tensor: ints, bools, dims, UNKNOWN
        if src not in INT_TYPES and src != bool_t:
            return None
        flat = value.reshape(-1).tolist()
        if not all(type(e) in (int, bool) for e in flat):
            if dst in INT_TYPES:
                if src == bool_t:
                    value = elementwise(lambda e: int(e) if isinstance(e, bool) else e, value)
                return fit_integer_value(value, dst, wrap=True)  # to a narrower type: wraps
            if dst == bool_t:
                return elementwise(_nonzero, value)
            return None
        dt = np_dtype(src)
        if dt is None:
            return None
        try:
            value = np.array(flat, dtype=dt).reshape(value.shape)
        except OverflowError:  # (an int past the source type's range: not what the tensor holds)
            return None
    if dst not in INT_TYPES and dst != bool_t and dst not in FLOAT_TYPES:
        return None
    got = exact_value("Cast", {"to": dst, "saturate": ctx.attr("saturate", 1)}, [value], ctx.version)
    return None if got is None else value_from_numpy(np.asarray(got[0]), dst)


def _nonzero(e):
    if isinstance(e, bool):
        return e
    if is_unknown(e):  # (UNKNOWN, or a Wrapped element: whether it is 0 is not known)
        return UNKNOWN
    if isinstance(e, int):
        return e != 0
    if provably_positive(e) or provably_positive(neg(e)):
        return True
    try:
        return sub(1, iszero(e))  # the indicator of e != 0
    except ExpressionTooLarge:
        return UNKNOWN


@rule("Cast", since=1)
def cast(ctx):
    data = ctx.input(0)
    to = ctx.attr("to")
    if data is None or to is None or isinstance(to, (bytes, str)):
        return None
    return [Fact(dtype=to, shape=data.shape, value=_cast_value(ctx, data.value, data.dtype, to))]


@rule("CastLike", since=15)
def cast_like(ctx):
    data, like = ctx.input(0), ctx.input(1)
    if data is None or like is None or not like.dtype:
        return None
    return [Fact(dtype=like.dtype, shape=data.shape, value=_cast_value(ctx, data.value, data.dtype, like.dtype))]


@rule("Range", since=11)
def range_(ctx):
    """Range: the spec's count max(ceil((limit - start) / delta), 0), exact, and its values
    start + i*delta (accumulated in the element type, as the spec's function body does).

    onnxruntime computes the count in double -- ceil((double(limit) - double(start)) / delta) --
    which is the exact count only while the bounds are small enough (|start|, |limit| <= 2**52
    keeps every step exact); beyond, or where a float division lands on the other side of an
    integer, runtimes may differ and the count is unknown."""
    facts = [ctx.input(i) for i in range(3)]
    dtype = facts[0].dtype if facts[0] is not None else 0
    vals = [f.value.reshape(-1)[0] if f is not None and f.value is not None and f.value.size == 1 else None for f in facts]
    if any(v is None or v is UNKNOWN for v in vals):
        return [Fact(dtype=dtype, shape=(ctx.fresh("range"),))]
    if all(isinstance(v, (np.floating, float)) for v in vals) and dtype in FLOAT_TYPES:
        if vals[2] == 0:
            raise ctx.error("delta is 0")
        return [_float_range(ctx, dtype, vals)]
    dims = [as_dim(v) for v in vals]
    if any(d is None for d in dims) or dtype not in INT_RANGES:
        return [Fact(dtype=dtype, shape=(ctx.fresh("range"),))]
    start, limit, delta = dims
    if not isinstance(delta, int):
        return [Fact(dtype=dtype, shape=(ctx.fresh("range"),))]
    if delta == 0:
        raise ctx.error("delta is 0")
    if not (fits(start, -(2**52), 2**52) and fits(limit, -(2**52), 2**52)):
        return [Fact(dtype=dtype, shape=(ctx.fresh("range"),))]
    diff = sub(limit, start)
    if delta > 0:
        n = dmax(floordiv(add(diff, delta - 1), delta), 0)
    else:
        n = dmax(floordiv(add(neg(diff), -delta - 1), -delta), 0)
    value = None
    if isinstance(n, int) and n <= MAX_VALUE_ELEMENTS:
        value = obj_array(add(start, mul(i, delta)) for i in range(n))  # within [start, limit): fits
    return [Fact(dtype=dtype, shape=(n,), value=value)]


def _float_range(ctx, dtype, vals) -> Fact:
    t = helper.tensor_dtype_to_np_dtype(dtype)
    start, limit, delta = (t.type(v) for v in vals)
    if delta == 0:
        raise ctx.error("delta is 0")
    if not all(np.isfinite(x) for x in (start, limit, delta)):
        return Fact(dtype=dtype, shape=(ctx.fresh("range"),))
    with np.errstate(all="ignore"):
        counted = max(ceil((float(limit) - float(start)) / float(delta)), 0)  # in double, as onnxruntime
    exact = max(ceil((Fraction(float(limit)) - Fraction(float(start))) / Fraction(float(delta))), 0)
    if counted != exact:
        return Fact(dtype=dtype, shape=(ctx.fresh("range"),))
    value = None
    if counted <= MAX_VALUE_ELEMENTS:
        out, v = [], start
        with np.errstate(all="ignore"):
            for _ in range(counted):
                out.append(v)
                v = t.type(v + delta)
        value = np.array(out, dtype=t)
    return Fact(dtype=dtype, shape=(counted,), value=value)


@rule("ConstantOfShape", since=9)
def constant_of_shape(ctx):
    given = ctx.input(0)
    if given is not None and given.shape is not None and len(given.shape) != 1:
        if len(given.shape) > 1 and given.value is not None:
            # (as Expand's shape: onnxruntime reads known values of any rank in order)
            raise CannotDecide("off-spec-input", f"the shape (input 0) has rank {len(given.shape)}, not 1")
        raise ctx.error(f"the shape (input 0) has rank {len(given.shape)}; it must be a 1-D tensor")
    spec = value_entries(given)
    attr = ctx.attr("value")
    dtype = attr.data_type if attr is not None else TensorProto.FLOAT
    if attr is not None and math.prod(attr.dims) != 1:
        raise ctx.error(f"value holds {math.prod(attr.dims)} elements; ConstantOfShape fills with one")
    if spec is None:
        f = ctx.input(0)
        if f is not None and f.shape is not None and len(f.shape) == 1 and isinstance(f.shape[0], int):
            return [Fact(dtype=dtype, shape=ctx.fresh_shape(f.shape[0]))]
        return [Fact(dtype=dtype)]
    for e in spec:
        if isinstance(e, int) and e < 0:
            raise ctx.error(f"shape has a negative entry {e}")
    nonnegative_entries(ctx, spec, "the shape")
    out = tuple(d if d is not None else ctx.fresh() for d in spec)
    value = None
    fill = np.float32(0)
    if attr is not None and small_shape(out):
        if attr.data_location == TensorProto.EXTERNAL:  # read only from the model's folder, never the working one
            stored = read_small_tensor(attr, ctx.engine.base_dir, 1)
        else:
            try:
                stored = read_tensor(attr)
            except CannotDecide:  # (not what it says: the structure check reports it)
                stored = None
        fill = stored.reshape(-1)[0] if stored is not None and stored.size == 1 else None
    if small_shape(out) and fill is not None and np_dtype(dtype) is not None:
        arr = np.full(out, fill, dtype=np_dtype(dtype))
        value = value_from_numpy(arr, dtype)
        if value is not None and value.dtype != object and dtype not in FLOAT_TYPES:
            value = None
    return [Fact(dtype=dtype, shape=out, value=value)]


_REDUCE_VALUE = {
    "ReduceProd": lambda xs: prod(xs),
    "ReduceSum": lambda xs: _sum(xs),
    "ReduceMax": lambda xs: _fold(dmax, xs),
    "ReduceMin": lambda xs: _fold(dmin, xs),
}


def _sum(xs):
    out = 0
    for x in xs:
        out = add(out, x)
    return out


def _fold(fn, xs):
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


def _reduce(ctx, axes_from_input: bool):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    r = len(data.shape)
    keepdims = bool(ctx.attr("keepdims", 1))
    if axes_from_input:
        if ctx.has_input(1):
            axes = int_entries(ctx.input(1))
            if axes is None:
                return None
        else:
            axes = []
    else:
        axes = list(ctx.attr("axes", []) or [])
    if not axes:
        if axes_from_input and ctx.attr("noop_with_empty_axes", 0):
            # a reduction over no axis: each element alone -- itself for Sum/Prod/Max/Min/Mean,
            # but squared, abs'd or logged for SumSquare/L1/L2/LogSum(Exp)
            keeps = ctx.op_type in ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean")
            return [Fact(dtype=data.dtype, shape=data.shape, value=data.value if keeps else None)]
        axes = list(range(r))
    axes = {normalize_axis(ctx, a, r) for a in axes}
    out = [1 if i in axes else d for i, d in enumerate(data.shape) if keepdims or i not in axes]
    value = None
    fn = _REDUCE_VALUE.get(ctx.op_type)
    if fn is not None and data.value is not None and data.value.dtype == object and r <= 1:
        flat = [as_dim(e) for e in data.value.reshape(-1).tolist()]
        if flat and all(e is not None for e in flat):
            value = fit_integer_value(obj_array([fn(flat)], tuple(out)), data.dtype)
    return [Fact(dtype=data.dtype, shape=tuple(out), value=value)]


_REDUCE_OPS = ("ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceL1", "ReduceL2",
               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


@rule(*_REDUCE_OPS, since=1)
def reduce_attr_axes(ctx):
    return _reduce(ctx, False)


@rule(*_REDUCE_OPS, since=18)
def reduce_input_axes(ctx):
    return _reduce(ctx, True)


@rule("ReduceSum", since=13)
def reduce_sum_13(ctx):
    return _reduce(ctx, True)


@rule("Flatten", since=1)
def flatten(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    r = len(data.shape)
    axis = ctx.attr("axis", 1)
    axis = axis + r if axis < 0 else axis
    if not 0 <= axis <= r:
        raise ctx.error(f"axis {ctx.attr('axis', 1)} is out of range for rank {r}")
    out = (prod(data.shape[:axis]), prod(data.shape[axis:]))
    value = data.value.reshape([d for d in out]) if data.value is not None and all(isinstance(d, int) for d in out) else None
    return [Fact(dtype=data.dtype, shape=out, value=value)]


@rule("Transpose", since=1)
def transpose(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    r = len(data.shape)
    perm = ctx.attr("perm")
    perm = list(range(r))[::-1] if perm is None else [normalize_axis(ctx, p, r) for p in perm]
    if sorted(perm) != list(range(r)):
        raise ctx.error(f"perm {list(perm)} is not a permutation of the {r} axes")
    value = np.transpose(data.value, perm) if data.value is not None else None
    return [Fact(dtype=data.dtype, shape=tuple(data.shape[p] for p in perm), value=value)]


@rule("Split", since=1)
def split(ctx):
    """Split: sizes from the ``split`` attribute (before v13) or input (v13 on); without them,
    equal parts (exact division before v18; from v18 ``num_outputs`` parts of ceil(d/n), the
    last one smaller)."""
    data = ctx.input(0)
    n = len(ctx.node.output)
    parts = ctx.attr("num_outputs") if ctx.version >= 18 else None
    if parts is not None and parts < 1:
        raise ctx.error(f"num_outputs is {parts}; it must be 1 or more")
    if parts is not None and parts != n:  # (onnxruntime's kernel fails on every run)
        raise ctx.error(f"num_outputs is {parts} and the node has {n} outputs")
    if ctx.version >= 18 and parts is None and not ctx.has_input(1):
        raise ctx.error("neither split sizes (input 1) nor num_outputs are given; Split-18 needs one of them")
    if data is None or data.shape is None:
        return None
    r = len(data.shape)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), r)
    d = data.shape[axis]
    sizes = ctx.attr("split") if ctx.version < 13 else None
    sizes = list(sizes) if sizes else None
    if sizes is None and (ctx.version < 2 or ctx.version >= 13) and ctx.has_input(1):
        sizes = value_entries(ctx.input(1))
        if sizes is not None and not sizes:
            # an empty split tensor: not the spec's lengths. onnxruntime's load refuses it where
            # it knows the split dim; else its kernel reads it as absent (equal parts)
            if type(d) is int:
                raise ctx.error(f"the split sizes (input 1) are an empty tensor, for {n} outputs")
            raise CannotDecide("off-spec-input", "the split sizes (input 1) are an empty tensor, which onnxruntime "
                                                 "reads as no sizes (equal parts)")
        if sizes is None:  # sizes computed at run time: each part's dim along the axis unknown
            sizes = [None] * n
    if sizes is None:
        if ctx.version >= 18 and ctx.attr("num_outputs") is not None:
            chunk = floordiv(add(d, n - 1), n)
            sizes = [chunk] * (n - 1) + [sub(d, mul(n - 1, chunk))]
            nonnegative_entries(ctx, sizes[-1:], "the split sizes (the last, the rest of the axis)")
        else:
            from ...symbolic import truediv

            if isinstance(d, int) and d % n:
                raise ctx.error(f"axis {axis} of size {d} does not split into {n} equal parts")
            if not isinstance(d, int) and n > 1:
                ctx.condition(f"valid only when axis {axis} ({to_str(d)}) splits into {n} equal parts", "multiple", d, n)
            sizes = [truediv(d, n)] * n
    if len(sizes) != n:
        raise ctx.error(f"split has {len(sizes)} sizes for {n} outputs")
    if all(v is not None for v in sizes) and not isinstance(d, int) or any(isinstance(v, Expr) for v in sizes if v):
        total = 0
        for v in sizes:
            total = add(total, v) if v is not None else None
            if total is None:
                break
        if total is not None and total != d:  # (sizes given for a symbolic axis: they must add up to it)
            ctx.condition(f"valid only when the split sizes add up to axis {axis} ({to_str(d)})", "equal", total, d)
    if all(type(v) is int for v in sizes) and (any(v < 0 for v in sizes) or type(d) is int and sum(sizes) != d):
        why = f"split sizes {list(sizes)} " + ("hold a negative size" if any(v < 0 for v in sizes)
                                               else f"sum to {sum(sizes)}, not to the size {d} of axis {axis}")
        if not ctx.in_body:  # (in a body the node may never run: its outputs unknown)
            raise ctx.error(why)
        sizes = [None] * n
    # a shape value split into its entries (onnxruntime's optimizer turns Gathers into a Split)
    cuts = None
    if data.value is not None and all(type(s) is int and s >= 0 for s in sizes) and sum(sizes) == data.value.shape[axis]:
        cuts = np.cumsum([0] + sizes).tolist()
    outs = []
    for i, s in enumerate(sizes):
        dims = list(data.shape)
        dims[axis] = s if s is not None else ctx.fresh()
        value = np.take(data.value, range(cuts[i], cuts[i + 1]), axis=axis) if cuts is not None else None
        outs.append(Fact(dtype=data.dtype, shape=tuple(dims), value=value))
    return outs
