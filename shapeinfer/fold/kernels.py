"""NumPy kernels for the data-movement and shape ops, bit-exact for every element type.

Arrays come from ``onnx.numpy_helper.to_array`` (ml_dtypes for bfloat16, the float8 kinds,
int4/uint4, float4e2m1; object arrays for strings), and these kernels only move elements
(reshape, broadcast, tile, take, concatenate, slice, transpose, pad, select), so the bits of
every element are kept -- NaN payloads and signed zeros included. Each kernel is
``fn(attrs, inputs, version) -> list of arrays``; ``attrs`` is the node's attribute dict
(plain Python values; ``_num_outputs`` holds the node's output count), ``inputs`` the input
arrays (None for an absent optional input). A kernel raises FoldError where the op's rule is
broken, NotFoldable where the result is not defined (or runtimes disagree) for these inputs.

The arithmetic kernels live in ``arith.py``, Cast in ``casts.py``; they register here too.

Where NumPy differs from the spec, the spec wins: Gather/GatherElements/GatherND take
negative indices and refuse out-of-range ones (NumPy would wrap or raise differently),
Concat and Where refuse mixed element types (NumPy would promote), Split with
``num_outputs`` makes the last chunk the smaller one, Pad crops with negative pads and never
reflects more than the dim holds, Slice clamps as the spec says (``semantics.slice_range``).
"""

from __future__ import annotations

import numpy as np

from ..semantics import as_python_slice, slice_range

KERNELS: dict = {}


class FoldError(ValueError):
    """The constant inputs break the op's rule (the message says which)."""


class NotFoldable(Exception):
    """The result is not defined, or not the same on every runtime, for these inputs (the
    message says why): keep the node. No option folds it."""


class Inexact(NotFoldable):
    """The result is float math whose last bits (or NaN payloads, or the sign of a zero) may
    differ between runtimes: kept by default, folded with ``fold_float_math`` (the message
    says what, and names the option)."""

    def __init__(self, message: str):
        super().__init__(f"{message} (--fold-float-math)")


MAX_KERNEL_BYTES = 1 << 30  # an output past this is not computed (the budget keeps far less anyway)


def _within_memory(shape, itemsize: int) -> None:
    """NotFoldable for an output of ``shape`` that would hold more than MAX_KERNEL_BYTES, or
    whose nonzero dims multiply past that (NumPy cannot even describe [2**62, 0]): the caller's
    budget would refuse the first after computing it, and NumPy the second."""
    n = 1
    for d in shape:
        n *= max(int(d), 1)
    if n * max(itemsize, 1) > MAX_KERNEL_BYTES:
        raise NotFoldable(f"the output's dims {list(shape)} are past what is computed here")


def kernel(*ops):
    def register(fn):
        for op in ops:
            KERNELS[op] = fn
        return fn

    return register


def _ints(a) -> list:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axis(axis: int, rank: int, what: str = "axis") -> int:
    """axis made non-negative; FoldError when it is outside [-rank, rank)."""
    if not -rank <= axis < rank:
        raise FoldError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _index_array(idx, what: str = "indices") -> np.ndarray:
    idx = np.asarray(idx)
    if idx.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise FoldError(f"{what} must be int32 or int64, not {idx.dtype}")
    return idx.astype(np.int64)


def _normalised(idx: np.ndarray, n: int, what: str) -> np.ndarray:
    """Indices into a dim of size n with negatives counted from the end (the spec's range
    [-n, n-1]; anything else is an error, not NumPy's wrap-around)."""
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise FoldError(f"an index of {what} is out of range for a dim of size {n}")
    return np.where(idx < 0, idx + n, idx)


def reshape_target(in_shape, spec, allowzero: bool) -> tuple:
    """The output shape of Reshape (0 copies unless allowzero, one -1 is inferred)."""
    out = []
    infer_at = None
    for i, e in enumerate(spec):
        if e == -1:
            if infer_at is not None:
                raise FoldError("more than one -1 in the shape")
            infer_at = i
            out.append(1)
        elif e == 0 and not allowzero:
            if i >= len(in_shape):
                raise FoldError(f"0 at index {i} copies a dim the input does not have")
            out.append(in_shape[i])
        elif e < 0:
            raise FoldError(f"negative entry {e} in the shape")
        else:
            out.append(e)
    total = int(np.prod(in_shape, dtype=np.int64))
    if infer_at is not None:
        if allowzero and 0 in spec:
            raise FoldError("0 and -1 together with allowzero=1")
        rest = int(np.prod(out, dtype=np.int64))
        if rest == 0 or total % rest:
            raise FoldError(f"-1 cannot be inferred: {total} elements, {rest} from the other entries")
        out[infer_at] = total // rest
    if int(np.prod(out, dtype=np.int64)) != total:
        raise FoldError(f"element counts differ: {total} and shape {out}")
    return tuple(out)


@kernel("Reshape")
def reshape(attrs, inputs, version):
    x = inputs[0]
    spec = attrs["shape"] if version < 5 else _ints(inputs[1])
    allowzero = bool(attrs.get("allowzero", 0)) if version >= 14 else False
    return [x.reshape(reshape_target(x.shape, spec, allowzero))]


@kernel("Expand")
def expand(attrs, inputs, version):
    if np.ndim(inputs[1]) != 1:
        raise NotFoldable(f"Expand's shape has rank {np.ndim(inputs[1])}: the spec asks for a 1-D tensor")
    x, shape = inputs[0], _ints(inputs[1])
    try:
        target = np.broadcast_shapes(x.shape, tuple(shape))
    except ValueError:
        raise FoldError(f"shapes {list(x.shape)} and {shape} do not broadcast") from None
    _within_memory(target, x.dtype.itemsize)
    return [np.array(np.broadcast_to(x, target))]


@kernel("Tile")
def tile(attrs, inputs, version):
    x = inputs[0]
    if version < 6:
        tiles, axis = _ints(inputs[1])[0], _ints(inputs[2])[0]
        reps = [1] * x.ndim
        reps[_axis(axis, x.ndim)] = tiles
    else:
        reps = _ints(inputs[1])
        if len(reps) != x.ndim:
            raise FoldError(f"{len(reps)} repeats for rank {x.ndim}")
    if any(r < 0 for r in reps):
        raise FoldError(f"negative repeats {reps}")
    _no_float16_nan("Tile", x)
    if not x.ndim:
        return [x.copy()]
    out = [d * r for d, r in zip(x.shape, reps)]
    _within_memory(out, x.dtype.itemsize)
    if 0 in out:  # np.tile would build the copies of the non-empty axes first (2**40 of them, say)
        return [np.empty(out, dtype=x.dtype)]
    return [np.tile(x, reps)]


@kernel("Identity")
def identity(attrs, inputs, version):
    return [inputs[0]]


@kernel("Shape")
def shape(attrs, inputs, version):
    dims = list(inputs[0].shape)
    if version >= 15:
        r = len(dims)
        start, end = attrs.get("start", 0), attrs.get("end", r)
        start = max(0, min(r, start + r if start < 0 else start))
        end = max(0, min(r, end + r if end < 0 else end))
        dims = dims[start:end]
    return [np.array(dims, dtype=np.int64)]


@kernel("Size")
def size(attrs, inputs, version):
    return [np.array(inputs[0].size, dtype=np.int64)]


@kernel("Gather")
def gather(attrs, inputs, version):
    x, idx = inputs
    axis = _axis(attrs.get("axis", 0), x.ndim)
    idx = _normalised(_index_array(idx), x.shape[axis], f"axis {axis}")
    return [np.take(x, idx, axis=axis)]


@kernel("Concat")
def concat(attrs, inputs, version):
    parts = [a for a in inputs if a is not None]
    if not parts:
        raise FoldError("Concat of nothing")
    if len({p.dtype for p in parts}) > 1:
        raise FoldError(f"Concat of different element types {sorted({str(p.dtype) for p in parts})}")
    if len({p.ndim for p in parts}) > 1 or parts[0].ndim == 0:
        raise FoldError("Concat inputs must have one rank, at least 1")
    axis = _axis(attrs.get("axis", 0) if "axis" in attrs or version >= 4 else 1, parts[0].ndim)
    rest = {tuple(d for i, d in enumerate(p.shape) if i != axis) for p in parts}
    if len(rest) > 1:
        raise FoldError(f"Concat inputs differ outside axis {axis}: {[list(p.shape) for p in parts]}")
    return [np.concatenate(parts, axis=axis)]


@kernel("Unsqueeze")
def unsqueeze(attrs, inputs, version):
    x = inputs[0]
    axes = attrs["axes"] if version < 13 else _ints(inputs[1])
    r = x.ndim + len(axes)
    norm = sorted(_axis(a, r) for a in axes)
    if len(set(norm)) != len(norm):
        raise FoldError(f"Unsqueeze axes {axes} repeat an axis")
    out = list(x.shape)
    for a in norm:
        out.insert(a, 1)
    return [x.reshape(out)]


@kernel("Squeeze")
def squeeze(attrs, inputs, version):
    x = inputs[0]
    axes = attrs.get("axes") if version < 13 else (_ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else None)
    if axes is None:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = {_axis(a, x.ndim) for a in axes}
    if any(x.shape[a] != 1 for a in axes):
        raise FoldError("squeezing an axis whose size is not 1")
    return [x.reshape([d for i, d in enumerate(x.shape) if i not in axes])]


@kernel("Slice")
def slice_(attrs, inputs, version):
    x = inputs[0]
    if version < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = _ints(inputs[1]), _ints(inputs[2])
        axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else list(range(len(starts)))
        steps = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, k in zip(starts, ends, axes, steps):
        if k == 0:
            raise FoldError("a slice step is 0")
        a = a + x.ndim if a < 0 else a
        taken = slice_range(x.shape[a], s, e, k)
        if taken is None:
            raise NotFoldable("onnxruntime and the spec text slice differently here")
        index[a] = as_python_slice(taken)
    return [np.array(x[tuple(index)])]


@kernel("Transpose")
def transpose(attrs, inputs, version):
    perm = attrs.get("perm")
    return [np.transpose(inputs[0], perm)]


@kernel("Flatten")
def flatten(attrs, inputs, version):
    x = inputs[0]
    axis = attrs.get("axis", 1)
    if not -x.ndim <= axis <= x.ndim:
        raise FoldError(f"axis {axis} is out of range for rank {x.ndim}")
    axis = axis + x.ndim if axis < 0 else axis
    lead = int(np.prod(x.shape[:axis], dtype=np.int64))
    rest = int(np.prod(x.shape[axis:], dtype=np.int64))
    return [x.reshape(lead, rest)]


@kernel("ConstantOfShape")
def constant_of_shape(attrs, inputs, version):
    if np.ndim(inputs[0]) != 1:
        raise NotFoldable(f"ConstantOfShape's shape has rank {np.ndim(inputs[0])}: the spec asks for a 1-D tensor")
    value = attrs.get("value")
    if value is not None:
        value = np.asarray(value)
        if value.size != 1:
            raise FoldError(f"ConstantOfShape's value holds {value.size} elements, not 1")
    else:
        value = np.zeros(1, np.float32)
    shape = _ints(inputs[0])
    if any(d < 0 for d in shape):
        raise FoldError(f"negative dim in shape {shape}")
    _within_memory(shape, value.dtype.itemsize)
    # every element a copy of the value's bits (np.full would convert through Python scalars)
    return [np.broadcast_to(value.reshape(()), shape).copy()]


@kernel("Constant")
def constant(attrs, inputs, version):
    if "value" in attrs:
        return [np.asarray(attrs["value"])]
    for key, dtype in (("value_int", np.int64), ("value_float", np.float32)):
        if key in attrs:
            return [np.array(attrs[key], dtype=dtype)]
    for key, dtype in (("value_ints", np.int64), ("value_floats", np.float32)):
        if key in attrs:
            return [np.array(list(attrs[key]), dtype=dtype)]
    if "value_string" in attrs:
        v = attrs["value_string"]
        return [np.array(v if isinstance(v, bytes) else str(v).encode(), dtype=object)]
    if "value_strings" in attrs:
        return [np.array([v if isinstance(v, bytes) else str(v).encode() for v in attrs["value_strings"]], dtype=object)]
    raise ValueError("a Constant this kernel does not read")


@kernel("Where")
def where(attrs, inputs, version):
    cond, x, y = inputs
    if cond.dtype != np.dtype(bool):
        raise FoldError(f"Where's condition must be bool, not {cond.dtype}")
    if x.dtype != y.dtype:
        raise FoldError(f"Where of different element types {x.dtype} and {y.dtype}")
    _no_float16_nan("Where", x)
    _no_float16_nan("Where", y)
    try:
        cond, x, y = np.broadcast_arrays(cond, x, y)
    except ValueError:
        raise FoldError("Where's inputs do not broadcast") from None
    out = np.array(y, copy=True)
    out[cond] = x[cond]  # element copies (np.where would go through a common type)
    return [out]


@kernel("Split")
def split(attrs, inputs, version):
    x = inputs[0]
    n_out = attrs.get("_num_outputs", 1)
    axis = _axis(attrs.get("axis", 0), x.ndim)
    n = x.shape[axis]
    sizes = None
    if version >= 13 or version < 2:
        if len(inputs) > 1 and inputs[1] is not None:
            sizes = _ints(inputs[1])
    if sizes is None and version < 13 and attrs.get("split") is not None:
        sizes = [int(v) for v in attrs["split"]]
    if sizes is None and version >= 18 and attrs.get("num_outputs") is not None:
        k = int(attrs["num_outputs"])
        if k != n_out or k < 1:
            raise FoldError(f"num_outputs {k} for {n_out} outputs")
        chunk = -(-n // k)
        sizes = [chunk] * (k - 1) + [n - chunk * (k - 1)]
        if sizes[-1] <= 0 and n:
            raise NotFoldable(f"Split of {n} into {k} outputs leaves the last empty or negative "
                              "(the spec's 'last chunk smaller' does not say)")
    if sizes is None:
        if n % n_out:
            raise FoldError(f"dim {n} does not split into {n_out} equal parts")
        sizes = [n // n_out] * n_out
    if len(sizes) != n_out or any(s < 0 for s in sizes) or sum(sizes) != n:
        raise FoldError(f"split sizes {sizes} for a dim of {n} and {n_out} outputs")
    bounds = np.cumsum([0] + sizes)
    index = [slice(None)] * x.ndim
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index[axis] = slice(int(lo), int(hi))
        out.append(np.array(x[tuple(index)]))
    return out


def _pad_value(x, given):
    if given is not None and given.size:
        if given.dtype != x.dtype:
            raise FoldError(f"Pad's constant_value is {given.dtype}, the data {x.dtype}")
        return given.reshape(-1)[:1].reshape(())
    if x.dtype == np.dtype(object):
        return np.array(b"", dtype=object)
    return np.zeros((), x.dtype)


@kernel("Pad")
def pad(attrs, inputs, version):
    x = inputs[0]
    mode = attrs.get("mode", "constant")
    mode = mode.decode(errors="replace") if isinstance(mode, bytes) else mode
    if version < 11:
        pads = [int(v) for v in attrs.get("pads" if version >= 2 else "paddings", [])]
        value = attrs.get("value", 0.0)
        if x.dtype.kind != "f" or x.dtype.itemsize < 2:
            raise NotFoldable("Pad before opset 11 (a float value attribute) is folded on float16/32/64 only")
        given = np.array(value, dtype=np.float32).astype(x.dtype)
        if float(given) != float(value):
            raise NotFoldable("Pad's value attribute is not exact in the data's type")
        axes = list(range(x.ndim))
    else:
        pads = _ints(inputs[1])
        given = inputs[2] if len(inputs) > 2 else None
        axes_in = inputs[3] if len(inputs) > 3 and version >= 18 else None
        axes = [_axis(a, x.ndim) for a in _ints(axes_in)] if axes_in is not None else list(range(x.ndim))
    if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes):
        raise FoldError(f"{len(pads)} pads for {len(axes)} axes")
    if mode not in ("constant", "edge", "reflect", "wrap") or (mode == "wrap" and version < 19):
        raise FoldError(f"unknown Pad mode {mode!r}")
    _no_float16_nan("Pad", x)
    if given is not None:
        _no_float16_nan("Pad", given)
    begin = [0] * x.ndim
    end = [0] * x.ndim
    for k, a in enumerate(axes):
        begin[a], end[a] = pads[k], pads[k + len(axes)]
    if mode != "constant" and any(p < 0 for p in begin + end):
        raise NotFoldable(f"Pad in {mode} mode with negative pads is not folded")
    # negative pads crop first
    crop = tuple(slice(max(-b, 0), x.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(zip(begin, end)))
    if any(max(-b, 0) + max(-e, 0) > x.shape[i] for i, (b, e) in enumerate(zip(begin, end))):
        raise FoldError(f"pads {pads} crop more than the input holds")
    x = x[crop]
    begin = [max(b, 0) for b in begin]
    end = [max(e, 0) for e in end]
    if mode == "constant":
        value = _pad_value(x, given)
        shape = [d + b + e for d, b, e in zip(x.shape, begin, end)]
        _within_memory(shape, x.dtype.itemsize)
        out = np.broadcast_to(value, shape).copy()
        out[tuple(slice(b, b + d) for b, d in zip(begin, x.shape))] = x
        return [out]
    index = []
    for d, b, e in zip(x.shape, begin, end):
        if b == 0 and e == 0:
            index.append(np.arange(d))
            continue
        if d == 0 or (mode == "reflect" and max(b, e) > d - 1) or (mode == "wrap" and max(b, e) > d):
            raise NotFoldable(f"Pad in {mode} mode by more than the dim of {d} is not folded")
        index.append(np.pad(np.arange(d), (b, e), mode=mode))
    return [np.array(x[np.ix_(*index)]) if x.ndim else np.array(x)]


def _depth_space_dims(x, bs):
    if x.ndim != 4:
        raise FoldError(f"rank {x.ndim}, not 4")
    if bs < 1:
        raise FoldError(f"blocksize {bs}")
    _no_float16_nan("DepthToSpace/SpaceToDepth", x)
    return x.shape


def _no_float16_nan(op: str, x) -> None:
    """onnxruntime's DepthToSpace, SpaceToDepth, Trilu, Where, Pad and Tile move float16
    elements through float32 and give a NaN back quieted or as 0x7E00; the spec moves the
    element as it is. Not folded."""
    if x.dtype == np.dtype(np.float16) and np.isnan(x).any():
        raise Inexact(f"{op} of a float16 NaN: onnxruntime returns 0x7E00 for it (the spec moves it as it is)")


@kernel("DepthToSpace")
def depth_to_space(attrs, inputs, version):
    x = inputs[0]
    bs = int(attrs.get("blocksize", 0))
    b, c, h, w = _depth_space_dims(x, bs)
    if c % (bs * bs):
        raise FoldError(f"{c} channels do not divide by blocksize^2 = {bs * bs}")
    mode = attrs.get("mode", "DCR") if version >= 11 else "DCR"
    mode = mode.decode(errors="replace") if isinstance(mode, bytes) else mode
    if mode == "DCR":
        t = x.reshape(b, bs, bs, c // (bs * bs), h, w).transpose(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        t = x.reshape(b, c // (bs * bs), bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise FoldError(f"unknown mode {mode!r}")
    return [np.ascontiguousarray(t).reshape(b, c // (bs * bs), h * bs, w * bs)]


@kernel("SpaceToDepth")
def space_to_depth(attrs, inputs, version):
    x = inputs[0]
    bs = int(attrs.get("blocksize", 0))
    b, c, h, w = _depth_space_dims(x, bs)
    if h % bs or w % bs:
        raise FoldError(f"{h}x{w} does not divide by blocksize {bs}")
    mode = attrs.get("mode", "DCR") if version >= 28 else "DCR"  # (opset 28 adds the mode)
    mode = mode.decode(errors="replace") if isinstance(mode, bytes) else mode
    blocks = x.reshape(b, c, h // bs, bs, w // bs, bs)
    if mode == "DCR":  # depth: the block row, the block column, then the channel
        t = blocks.transpose(0, 3, 5, 1, 2, 4)
    elif mode == "CRD":  # the channel, then the block row and column (DepthToSpace CRD undone)
        t = blocks.transpose(0, 1, 3, 5, 2, 4)
    else:
        raise FoldError(f"unknown mode {mode!r}")
    return [np.ascontiguousarray(t).reshape(b, c * bs * bs, h // bs, w // bs)]


@kernel("Trilu")
def trilu(attrs, inputs, version):
    x = inputs[0]
    if x.ndim < 2:
        raise FoldError(f"Trilu of rank {x.ndim}")
    if x.dtype == np.dtype(object):
        raise NotFoldable("Trilu of strings is not folded")
    _no_float16_nan("Trilu", x)
    k = _ints(inputs[1])[0] if len(inputs) > 1 and inputs[1] is not None else 0
    rows, cols = x.shape[-2:]
    keep = np.triu(np.ones((rows, cols), bool), k) if attrs.get("upper", 1) else np.tril(np.ones((rows, cols), bool), k)
    out = np.zeros(x.shape, x.dtype)
    keep = np.broadcast_to(keep, x.shape)
    out[keep] = x[keep]
    return [out]


@kernel("GatherElements")
def gather_elements(attrs, inputs, version):
    x, idx = inputs
    if x.ndim == 0 or idx.ndim != x.ndim:
        raise FoldError(f"indices of rank {idx.ndim} for data of rank {x.ndim}")
    axis = _axis(attrs.get("axis", 0), x.ndim)
    if any(idx.shape[d] > x.shape[d] for d in range(x.ndim) if d != axis):
        raise FoldError(f"indices {list(idx.shape)} exceed data {list(x.shape)} outside axis {axis}")
    idx = _normalised(_index_array(idx), x.shape[axis], f"axis {axis}")
    grid = list(np.indices(idx.shape, sparse=True)) if idx.ndim else []
    grid[axis] = idx
    return [np.array(x[tuple(grid)])]


@kernel("GatherND")
def gather_nd(attrs, inputs, version):
    x, idx = inputs
    b = int(attrs.get("batch_dims", 0)) if version >= 12 else 0
    idx = _index_array(idx)
    if x.ndim < 1 or idx.ndim < 1 or b < 0 or b >= min(x.ndim, idx.ndim):
        raise FoldError(f"ranks {x.ndim} and {idx.ndim} with batch_dims {b}")
    if x.shape[:b] != idx.shape[:b]:
        raise FoldError(f"batch dims differ: {list(x.shape[:b])} and {list(idx.shape[:b])}")
    last = idx.shape[-1]
    if not 1 <= last <= x.ndim - b:
        raise FoldError(f"index tuples of length {last} for {x.ndim - b} dims")
    batch = int(np.prod(x.shape[:b], dtype=np.int64))
    xb = x.reshape((batch,) + x.shape[b:])
    ib = idx.reshape(batch, -1, last)
    cols = [_normalised(ib[..., k], x.shape[b + k], f"dim {b + k}") for k in range(last)]
    picked = xb[(np.arange(batch)[:, None],) + tuple(cols)]
    return [np.array(picked).reshape(idx.shape[:-1] + x.shape[b + last:])]


@kernel("EyeLike")
def eye_like(attrs, inputs, version):
    x = inputs[0]
    if x.ndim != 2:
        raise FoldError(f"EyeLike of rank {x.ndim}")
    dtype = attrs.get("dtype")
    if dtype is not None:
        from onnx import helper

        dt = np.dtype(helper.tensor_dtype_to_np_dtype(int(dtype)))
    else:
        dt = x.dtype
    if dt == np.dtype(object):
        raise FoldError("EyeLike of strings")
    mask = np.eye(x.shape[0], x.shape[1], int(attrs.get("k", 0)), dtype=bool)
    out = np.zeros(x.shape, dt)
    out[mask] = np.ones((), dt)
    return [out]


@kernel("NonZero")
def non_zero(attrs, inputs, version):
    x = inputs[0]
    if x.ndim == 0:
        raise NotFoldable("NonZero of a scalar is not folded")
    if x.dtype == np.dtype(object):
        raise NotFoldable("NonZero of strings is not folded")
    flags = x != 0 if x.dtype.kind in "biu" else x.astype(np.float64) != 0  # exact for every float type
    return [np.array(np.nonzero(flags), dtype=np.int64).reshape(x.ndim, -1)]


# The kernels above only move elements: they fold any element type, even one the op's type
# constraints omit (the bits land where the op puts them). The value kernels registered later
# (arith.py, casts.py) are held to the op's type constraints at the model's opset.
MOVEMENT_OPS = frozenset(KERNELS)
