"""NumPy kernels for the data-movement and shape ops, bit-exact for every element type.

Arrays come from ``onnx.numpy_helper.to_array`` (ml_dtypes for bfloat16, the float8 kinds,
int4/uint4, float4e2m1; object arrays for strings), and these kernels only move elements
(reshape, broadcast, tile, take, concatenate, slice, transpose), so the bits of every element
are kept. Each kernel is ``fn(attrs, inputs, version) -> list of arrays``; ``attrs`` is the
node's attribute dict (plain Python values), ``inputs`` the input arrays (None for an absent
optional input). A kernel raises FoldError where the op's rule is broken.
"""

from __future__ import annotations

import numpy as np

from ..semantics import as_python_slice, slice_range

KERNELS: dict = {}


class FoldError(ValueError):
    """The constant inputs break the op's rule (the message says which)."""


class NotFoldable(Exception):
    """The result is not the same on every runtime (the message says why): keep the node."""


def kernel(*ops):
    def register(fn):
        for op in ops:
            KERNELS[op] = fn
        return fn

    return register


def _ints(a) -> list:
    return [int(v) for v in np.asarray(a).reshape(-1)]


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
    x, shape = inputs[0], _ints(inputs[1])
    try:
        target = np.broadcast_shapes(x.shape, tuple(shape))
    except ValueError:
        raise FoldError(f"shapes {list(x.shape)} and {shape} do not broadcast") from None
    return [np.array(np.broadcast_to(x, target))]


@kernel("Tile")
def tile(attrs, inputs, version):
    x = inputs[0]
    if version < 6:
        tiles, axis = _ints(inputs[1])[0], _ints(inputs[2])[0]
        reps = [1] * x.ndim
        reps[axis] = tiles
    else:
        reps = _ints(inputs[1])
        if len(reps) != x.ndim:
            raise FoldError(f"{len(reps)} repeats for rank {x.ndim}")
    if any(r < 0 for r in reps):
        raise FoldError(f"negative repeats {reps}")
    return [np.tile(x, reps) if x.ndim else x.copy()]


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
    axis = attrs.get("axis", 0)
    axis = axis + x.ndim if axis < 0 else axis
    n = x.shape[axis]
    idx = np.asarray(idx).astype(np.int64)
    if np.any(idx < -n) or np.any(idx >= n):
        raise FoldError(f"an index is out of range for axis {axis} of size {n}")
    return [np.take(x, np.where(idx < 0, idx + n, idx), axis=axis)]


@kernel("Concat")
def concat(attrs, inputs, version):
    parts = [a for a in inputs if a is not None]
    axis = attrs.get("axis", 0)
    return [np.concatenate(parts, axis=axis)]


@kernel("Unsqueeze")
def unsqueeze(attrs, inputs, version):
    x = inputs[0]
    axes = attrs["axes"] if version < 13 else _ints(inputs[1])
    r = x.ndim + len(axes)
    out = list(x.shape)
    for a in sorted(a + r if a < 0 else a for a in axes):
        out.insert(a, 1)
    return [x.reshape(out)]


@kernel("Squeeze")
def squeeze(attrs, inputs, version):
    x = inputs[0]
    axes = attrs.get("axes") if version < 13 else (_ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else None)
    if axes is None:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = {a + x.ndim if a < 0 else a for a in axes}
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
    axis = axis + x.ndim if axis < 0 else axis
    lead = int(np.prod(x.shape[:axis], dtype=np.int64))
    rest = int(np.prod(x.shape[axis:], dtype=np.int64))
    return [x.reshape(lead, rest)]


@kernel("ConstantOfShape")
def constant_of_shape(attrs, inputs, version):
    value = attrs.get("value")
    fill = value.reshape(-1)[0] if value is not None else np.float32(0)
    return [np.full(_ints(inputs[0]), fill, dtype=fill.dtype if hasattr(fill, "dtype") else np.float32)]


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
