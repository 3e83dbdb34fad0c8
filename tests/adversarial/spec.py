"""The generator's own model of the ops it emits, written from the spec texts in /work/shared/spec.

Each function takes a node's attributes and its inputs as (shape, value) pairs at ONE binding
(``value`` is a NumPy array when the tensor is small and its elements are known, else None) and
returns one (shape, value) pair per output. ``Invalid`` means the spec rejects the inputs (the
runtime must fail); ``Unknown`` means this model does not know (for instance a value that was not
tracked).

This model *steers* the generator (it builds Reshape targets whose element counts match, keeps
integer divisors away from 0, bounds tensor sizes) and tells where a runtime deviates from the
spec (``deviations.py``). It is never what shapeinfer is judged against when a runtime answer
exists, so a mistake here costs coverage, not a false report.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)


class Invalid(Exception):
    """The spec says the node fails with these inputs."""


class Unknown(Exception):
    """The generator's model cannot tell (an input's value or shape is not tracked)."""


def np_dtype(onnx_dtype: int):
    return helper.tensor_dtype_to_np_dtype(onnx_dtype)


def need(v):
    if v is None:
        raise Unknown()
    return v


def numel(shape) -> int:
    return int(math.prod(shape))


def small(shape) -> bool:
    """Values are tracked for small tensors only (every dim small too: NumPy's tile and
    broadcast of [0, 2**62] would build huge intermediates)."""
    return numel(shape) <= 4096 and all(d <= 4096 for d in shape)


def bcast(*shapes) -> tuple:
    """Multidirectional broadcast (right-aligned; equal dims, or one of them 1)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        ds = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        others = {d for d in ds if d != 1}
        if len(others) > 1:
            raise Invalid(f"dims {ds} do not broadcast")
        out.append(others.pop() if others else 1)
    return tuple(out)


def norm_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise Invalid(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _wrap(arr, dtype):
    """Python ints (object array) to a fixed-width array, wrapping as two's complement."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        bits = dt.itemsize * 8
        flat = [int(x) & ((1 << bits) - 1) for x in np.asarray(arr, dtype=object).reshape(-1)]
        if dt.kind == "i":
            flat = [x - (1 << bits) if x >= 1 << (bits - 1) else x for x in flat]
        return np.array(flat, dtype=dt).reshape(np.shape(arr))
    return np.asarray(arr).astype(dt)


# ----------------------------------------------------------------------------- shape-computing ops


def shape_op(attrs, ins):
    (s, _), = ins[:1]
    r = len(s)
    start, end = attrs.get("start", 0), attrs.get("end", r)
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    v = np.array(s[start:end], dtype=np.int64).reshape(-1)
    return [(v.shape, v)]


def size_op(attrs, ins):
    (s, _), = ins
    v = np.array(numel(s), dtype=np.int64)
    return [((), v)]


def identity(attrs, ins):
    return [ins[0]]


def gather(attrs, ins):
    (ds, dv), (is_, iv) = ins
    axis = norm_axis(attrs.get("axis", 0), len(ds))
    out_shape = tuple(ds[:axis]) + tuple(is_) + tuple(ds[axis + 1:])
    if iv is None:
        return [(out_shape, None)]
    n = ds[axis]
    idx = np.asarray(iv).astype(np.int64)
    if ((idx < -n) | (idx >= n)).any():
        raise Invalid("index out of range")
    if dv is None or not small(out_shape):
        return [(out_shape, None)]
    return [(out_shape, np.take(dv, np.where(idx < 0, idx + n, idx), axis=axis))]


def concat(attrs, ins):
    shapes = [s for s, _ in ins]
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise Invalid("ranks differ")
    axis = norm_axis(attrs["axis"], rank)
    for i in range(rank):
        if i != axis and len({s[i] for s in shapes}) > 1:
            raise Invalid("dims differ")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    vals = [v for _, v in ins]
    v = None if any(x is None for x in vals) else np.concatenate(vals, axis=axis)
    return [(tuple(out), v)]


def slice_indices(dim: int, start: int, end: int, step: int) -> range:
    """Slice of one axis exactly as the spec text says (clamping differs from Python's)."""
    if step == 0:
        raise Invalid("step 0")
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
    else:
        start = min(max(start, 0), dim - 1)
        end = min(max(end, -1), dim - 1)
    return range(start, end, step)


def slice_op(attrs, ins, version):
    ds, dv = ins[0]
    if version < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = [int(x) for x in need(ins[1][1]).reshape(-1)]
        ends = [int(x) for x in need(ins[2][1]).reshape(-1)]
        axes = [int(x) for x in need(ins[3][1]).reshape(-1)] if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
        steps = [int(x) for x in need(ins[4][1]).reshape(-1)] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    if not (len(starts) == len(ends) == len(axes) == len(steps)):
        raise Invalid("starts/ends/axes/steps lengths differ")
    rank = len(ds)
    axes = [norm_axis(a, rank) for a in axes]
    if len(set(axes)) != len(axes):
        raise Invalid("repeated axis")
    index = [slice(None)] * rank
    out = list(ds)
    for a, s, e, k in zip(axes, starts, ends, steps):
        r = slice_indices(ds[a], s, e, k)
        out[a] = len(r)
        index[a] = r  # a range: the indices are listed only where a value is taken
    v = None
    if dv is not None:
        v = dv
        for a in range(rank):
            if isinstance(index[a], range):
                v = np.take(v, np.arange(index[a].start, index[a].stop, index[a].step, dtype=np.int64), axis=a)
    return [(tuple(out), v)]


def unsqueeze(attrs, ins, version):
    s, v = ins[0]
    axes = list(attrs["axes"]) if version < 13 else [int(x) for x in need(ins[1][1]).reshape(-1)]
    r = len(s) + len(axes)
    axes = sorted(norm_axis(a, r) for a in axes)
    if len(set(axes)) != len(axes):
        raise Invalid("repeated axis")
    out = list(s)
    for a in axes:
        out.insert(a, 1)
    return [(tuple(out), None if v is None else v.reshape(out))]


def squeeze(attrs, ins, version):
    s, v = ins[0]
    if version < 13:
        axes = attrs.get("axes")
    else:
        axes = None if len(ins) < 2 or ins[1] is None else [int(x) for x in need(ins[1][1]).reshape(-1)]
    if axes is None:
        out = [d for d in s if d != 1]
    else:
        axes = [norm_axis(a, len(s)) for a in axes]
        if any(s[a] != 1 for a in axes):
            raise Invalid("squeezed dim is not 1")
        out = [d for i, d in enumerate(s) if i not in axes]
    return [(tuple(out), None if v is None else v.reshape(out))]


def cast(attrs, ins):
    s, v = ins[0]
    to = attrs["to"]
    if v is None:
        return [(s, None)]
    dt = np.dtype(np_dtype(to))
    if to == TensorProto.BOOL:
        return [(s, v != 0)]
    if v.dtype.kind == "f" and dt.kind in "iu":
        if not np.isfinite(v).all() or (np.trunc(v) < np.iinfo(dt).min).any() or (np.trunc(v) > np.iinfo(dt).max).any():
            raise Unknown("float to int out of range is undefined")
        return [(s, np.trunc(v).astype(dt))]
    if v.dtype.kind in "iub" and dt.kind in "iu":
        return [(s, _wrap(v.astype(object) if v.dtype.kind != "b" else v.astype(np.int64), dt))]
    return [(s, v.astype(dt))]


def _int_binary(op, a, b, attrs):
    """Element-wise integer arithmetic, exact (Python ints), wrapped to the input's width."""
    dt = a.dtype
    A, B = np.broadcast_arrays(a.astype(object), b.astype(object))
    out = np.empty(A.shape, dtype=object)
    for idx in np.ndindex(A.shape):
        x, y = int(A[idx]), int(B[idx])
        if op == "Add":
            r = x + y
        elif op == "Sub":
            r = x - y
        elif op == "Mul":
            r = x * y
        elif op == "Div":
            if y == 0:
                raise Invalid("integer division by zero")
            r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        elif op == "Mod":
            if y == 0:
                raise Invalid("integer modulo by zero")
            if attrs.get("fmod", 0):
                r = int(math.fmod(x, y)) if abs(x) < 2**52 and abs(y) < 2**52 else x - y * (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1))
            else:
                r = x % y
        elif op == "Max":
            r = max(x, y)
        elif op == "Min":
            r = min(x, y)
        else:
            raise Unknown(op)
        out[idx] = r
    return _wrap(out, dt)


def binary(op, attrs, ins):
    shape = bcast(*(s for s, _ in ins))
    vals = [v for _, v in ins]
    if any(v is None for v in vals):
        if op in ("Div", "Mod") and ins[0][1] is not None and np.dtype(ins[0][1].dtype).kind in "iu":
            raise Unknown("integer divisor not tracked")
        return [(shape, None)]
    a = vals[0]
    if op in ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"):
        fn = {"Equal": np.equal, "Greater": np.greater, "Less": np.less,
              "GreaterOrEqual": np.greater_equal, "LessOrEqual": np.less_equal}[op]
        return [(shape, np.broadcast_to(fn(*vals), shape).copy() if small(shape) else None)]
    if op in ("And", "Or", "Xor"):
        fn = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}[op]
        return [(shape, np.broadcast_to(fn(*vals), shape).copy())]
    if a.dtype.kind in "iu" and small(shape):
        out = vals[0]
        for b in vals[1:]:
            out = _int_binary(op, out, b, attrs)
        return [(shape, np.broadcast_to(out, shape).copy())]
    return [(shape, None)]  # float values are not tracked


def unary_int(op, attrs, ins):
    s, v = ins[0]
    if v is None or v.dtype.kind not in "iu":
        return [(s, None)]
    if op == "Neg":
        return [(s, _wrap(-v.astype(object), v.dtype))]
    if op == "Abs":
        return [(s, _wrap(np.abs(v.astype(object)), v.dtype))]
    if op == "Identity":
        return [(s, v)]
    return [(s, None)]


def not_op(attrs, ins):
    s, v = ins[0]
    return [(s, None if v is None else np.logical_not(v))]


def where(attrs, ins):
    (cs, cv), (as_, av), (bs, bv) = ins
    shape = bcast(cs, as_, bs)
    if cv is None or av is None or bv is None or not small(shape):
        return [(shape, None)]
    return [(shape, np.where(cv, av, bv))]


def range_op(attrs, ins):
    (_, sv), (_, lv), (_, dv) = ins
    start, limit, delta = (int(need(x).reshape(-1)[0]) for x in (sv, lv, dv))
    if delta == 0:
        raise Invalid("Range delta 0")
    n = max(math.ceil((limit - start) / delta), 0) if abs(limit - start) < 2**52 else max(-(-(limit - start) // delta), 0)
    dt = need(sv).dtype
    v = np.array([start + i * delta for i in range(n)], dtype=dt) if n <= 4096 else None
    return [((n,), v)]


def constant_of_shape(attrs, ins, value_dtype):
    (_, v), = ins
    shape = tuple(int(x) for x in need(v).reshape(-1))
    if any(d < 0 for d in shape):
        raise Invalid("negative dim")
    fill = attrs.get("value")
    out = None
    if small(shape) and fill is not None:
        out = np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)
    elif small(shape):
        out = np.zeros(shape, dtype=np.float32)
    return [(shape, out if out is not None and out.dtype.kind in "iub" else None)]


def reduce_op(op, attrs, ins, axes_from_input):
    s, v = ins[0]
    rank = len(s)
    if axes_from_input:
        axes = None if len(ins) < 2 or ins[1] is None else [int(x) for x in need(ins[1][1]).reshape(-1)]
    else:
        axes = attrs.get("axes")
    keepdims = attrs.get("keepdims", 1)
    if not axes:
        if attrs.get("noop_with_empty_axes", 0) and axes_from_input:
            # no reduction; the element-wise part of the op still applies
            if v is None or op in ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean"):
                return [(s, v)]
            if op == "ReduceSumSquare":
                return [(s, _wrap(v.astype(object) * v.astype(object), v.dtype))]
            if op == "ReduceL1":
                return [(s, _wrap(np.abs(v.astype(object)), v.dtype))]
            return [(s, None)]
        axes = list(range(rank))
    axes = sorted({norm_axis(a, rank) for a in axes})
    out = [1 if i in axes else d for i, d in enumerate(s)] if keepdims else [d for i, d in enumerate(s) if i not in axes]
    val = None
    if v is not None and v.dtype.kind in "iu":
        fn = {"ReduceSum": np.sum, "ReduceProd": np.prod, "ReduceMax": np.max, "ReduceMin": np.min}.get(op)
        if op == "ReduceSumSquare":
            v, fn = _wrap(v.astype(object) * v.astype(object), v.dtype), np.sum
        elif op == "ReduceL1":
            v, fn = _wrap(np.abs(v.astype(object)), v.dtype), np.sum
        if fn is not None and (op in ("ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1") or all(s[a] > 0 for a in axes)):
            big = fn(v.astype(object), axis=tuple(axes), keepdims=bool(keepdims)) if axes else v.astype(object)
            if op in ("ReduceSum", "ReduceProd") and not isinstance(big, np.ndarray):
                big = np.array(big, dtype=object)
            val = _wrap(np.asarray(big, dtype=object).reshape(out), v.dtype)
    return [(tuple(out), val)]


def argmax(attrs, ins):
    s, _ = ins[0]
    axis = norm_axis(attrs.get("axis", 0), len(s))
    keep = attrs.get("keepdims", 1)
    out = [1 if i == axis else d for i, d in enumerate(s)] if keep else [d for i, d in enumerate(s) if i != axis]
    if s[axis] == 0 and numel(out) > 0:  # (an empty output needs no index: onnxruntime runs it)
        raise Invalid("ArgMax over an empty axis")
    return [(tuple(out), None)]


# ----------------------------------------------------------------------------- the product's ops


def reshape(attrs, ins, version):
    s, v = ins[0]
    if version < 5:
        target = list(attrs["shape"])
    else:
        target = [int(x) for x in need(ins[1][1]).reshape(-1)]
    allowzero = attrs.get("allowzero", 0) if version >= 14 else 0
    if target.count(-1) > 1 or any(t < -1 for t in target):
        raise Invalid("bad entries")
    if allowzero and 0 in target and -1 in target:
        raise Invalid("0 and -1 with allowzero=1")
    out = []
    for i, t in enumerate(target):
        if t == 0 and not allowzero:
            if i >= len(s):
                raise Invalid("0 beyond the input rank")
            out.append(s[i])
        else:
            out.append(t)
    total = numel(s)
    if -1 in out:
        known = numel([d for d in out if d != -1])
        if known == 0 or total % known:
            raise Invalid("cannot infer -1")
        out[out.index(-1)] = total // known
    if numel(out) != total:
        raise Invalid("element counts differ")
    return [(tuple(out), None if v is None or not small(out) else v.reshape(out))]


def expand(attrs, ins):
    s, v = ins[0]
    target = tuple(int(x) for x in need(ins[1][1]).reshape(-1))
    if any(t < 0 for t in target):
        raise Invalid("negative dim")
    out = bcast(s, target)
    return [(out, None if v is None or not small(out) else np.broadcast_to(v, out).copy())]


def tile(attrs, ins, version):
    s, v = ins[0]
    if version < 6:
        tiles = int(need(ins[1][1]).reshape(-1)[0])
        axis = norm_axis(int(need(ins[2][1]).reshape(-1)[0]), len(s))
        out = list(s)
        out[axis] *= tiles
        return [(tuple(out), None)]
    reps = [int(x) for x in need(ins[1][1]).reshape(-1)]
    if len(reps) != len(s) or any(r < 0 for r in reps):
        raise Invalid("bad repeats")
    out = tuple(d * r for d, r in zip(s, reps))
    return [(out, None if v is None or not small(out) else np.tile(v, reps))]


def flatten(attrs, ins):
    s, v = ins[0]
    r = len(s)
    axis = attrs.get("axis", 1)
    if not -r <= axis <= r:
        raise Invalid("axis")
    axis = axis + r if axis < 0 else axis
    out = (numel(s[:axis]), numel(s[axis:]))
    return [(out, None if v is None else v.reshape(out))]


def transpose(attrs, ins):
    s, v = ins[0]
    perm = attrs.get("perm", list(range(len(s)))[::-1])
    return [(tuple(s[p] for p in perm), None if v is None else np.transpose(v, perm))]


def same(attrs, ins):
    return [(ins[0][0], None)]


def split(attrs, ins, version, n_out):
    s, _ = ins[0]
    axis = norm_axis(attrs.get("axis", 0), len(s))
    d = s[axis]
    if version >= 13 and len(ins) > 1 and ins[1] is not None:
        sizes = [int(x) for x in need(ins[1][1]).reshape(-1)]
    elif version < 13 and "split" in attrs:
        sizes = list(attrs["split"])
    else:
        k = n_out
        if version >= 18:
            per = -(-d // k)
            sizes = [per] * (k - 1) + [d - per * (k - 1)]
            if sizes[-1] < 0:
                raise Invalid("uneven split leaves a negative part")
        else:
            if d % k:
                raise Invalid("uneven split")
            sizes = [d // k] * k
    if sum(sizes) != d or any(x < 0 for x in sizes) or len(sizes) != n_out:
        raise Invalid("split sizes")
    outs = []
    for x in sizes:
        o = list(s)
        o[axis] = x
        outs.append((tuple(o), None))
    return outs


def matmul(attrs, ins):
    (a, _), (b, _) = ins
    if len(a) < 1 or len(b) < 1:
        raise Invalid("scalar matmul")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise Invalid("inner dims")
    batch = bcast(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return [(out, None)]


# ----------------------------------------------------------------------------------- dim arithmetic


def window_out(D, k, d, s, pb, pe, auto_pad, ceil_mode):
    """Output size of one spatial axis of a pool/conv (the spec's formulas)."""
    dk = (k - 1) * d + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return -(-D // s)
    if auto_pad == "VALID":
        if D < dk:
            raise Invalid("window larger than the input")
        return (D - dk) // s + 1
    total = D + pb + pe - dk
    if total < 0:
        raise Invalid("window larger than the padded input")
    if ceil_mode:
        out = -(-total // s) + 1
        if (out - 1) * s >= D + pb:  # the last window would start in the right padding
            out -= 1
        return out
    return total // s + 1


def pool(attrs, ins, kernel_from_weight=None):
    s = ins[0][0]
    k = list(attrs["kernel_shape"]) if kernel_from_weight is None else list(kernel_from_weight)
    n = len(k)
    if len(s) != n + 2:
        raise Invalid("rank")
    strides = list(attrs.get("strides", [1] * n))
    dil = list(attrs.get("dilations", [1] * n))
    pads = list(attrs.get("pads", [0] * 2 * n))
    auto = attrs.get("auto_pad", "NOTSET")
    if isinstance(auto, bytes):
        auto = auto.decode()
    ceil_mode = attrs.get("ceil_mode", 0)
    out = [window_out(s[2 + i], k[i], dil[i], strides[i], pads[i], pads[n + i], auto, ceil_mode) for i in range(n)]
    return list(s[:2]) + out


def pad_op(attrs, ins, version):
    s, v = ins[0]
    if version < 11:
        pads = list(attrs["pads"])
        axes = list(range(len(s)))
    else:
        pads = [int(x) for x in need(ins[1][1]).reshape(-1)]
        axes = [int(x) for x in need(ins[3][1]).reshape(-1)] if len(ins) > 3 and ins[3] is not None else list(range(len(s)))
    axes = [norm_axis(a, len(s)) for a in axes]
    n = len(axes)
    if len(pads) != 2 * n:
        raise Invalid("pads length")
    out = list(s)
    for i, a in enumerate(axes):
        out[a] = s[a] + pads[i] + pads[n + i]
        if out[a] < 0:
            raise Invalid("negative size")
    mode = attrs.get("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if mode != "constant" and any(s[a] == 0 and (pads[i] > 0 or pads[n + i] > 0) for i, a in enumerate(axes)):
        raise Invalid("edge/reflect padding of an empty axis")
    if mode == "reflect" and any(max(pads[i], pads[n + i]) >= s[a] and (pads[i] > 0 or pads[n + i] > 0)
                                 for i, a in enumerate(axes)):
        raise Invalid("reflect padding at least the size")
    return [(tuple(out), None)]
