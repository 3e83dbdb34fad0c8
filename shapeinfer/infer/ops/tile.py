"""Tile, every version.

- v1: inputs ``(input, tiles, axis)``: the input is repeated ``tiles`` times along ``axis``.
- v6, v13: ``repeats`` is 1-D int64 with one entry per input dim; each output dim is the input
  dim times its repeat. A wrong length or a negative repeat is an error; 0 gives an empty dim.
"""

from __future__ import annotations

import numpy as np

from ...symbolic import mul, provably_nonneg
from ..facts import Fact
from ..registry import rule
from ._util import nonnegative_entries, normalize_axis, small_shape, value_entries, value_length


@rule("Tile", since=1)
def tile_v1(ctx):
    data, tiles, axis = ctx.input(0), ctx.input(1), ctx.input(2)
    dtype = data.dtype if data is not None else 0
    if data is None or data.shape is None:
        return [Fact(dtype=dtype)]
    shape = list(data.shape)
    t = value_entries(tiles)
    a = value_entries(axis)
    if not a or a[0] is None or not isinstance(a[0], int):
        return [Fact(dtype=dtype, shape=ctx.fresh_shape(len(shape)))]
    k = normalize_axis(ctx, a[0], len(shape))
    if t and t[0] is not None:
        if isinstance(t[0], int) and t[0] < 0:
            raise ctx.error(f"tiles is negative ({t[0]})")
        shape[k] = mul(shape[k], t[0])
    else:
        shape[k] = ctx.fresh()
    return [Fact(dtype=dtype, shape=tuple(shape))]


@rule("Tile", since=6)
def tile(ctx):
    data, reps = ctx.input(0), ctx.shape_input(1, "repeats")
    dtype = data.dtype if data is not None else 0
    in_shape = data.shape if data is not None else None
    spec = value_entries(reps)
    length = value_length(reps)
    if in_shape is not None and length is not None and length != len(in_shape):
        raise ctx.error(f"repeats has {length} entries but the input has rank {len(in_shape)}")
    if spec is not None:
        for r in spec:
            if isinstance(r, int) and r < 0:
                raise ctx.error(f"repeats {[str(e) if e is not None else '?' for e in spec]} has a negative entry")
        nonnegative_entries(ctx, spec, "repeats")
    if in_shape is None:
        return [Fact(dtype=dtype, shape=ctx.fresh_shape(length) if length is not None else None)]
    if spec is None:
        return [Fact(dtype=dtype, shape=tuple(d if d == 0 else ctx.fresh() for d in in_shape))]
    out = []
    for d, r in zip(in_shape, spec):
        if r is None or not provably_nonneg(r):
            out.append(0 if d == 0 else ctx.fresh())
        else:
            out.append(mul(d, r))
    value = None
    if data.value is not None and all(isinstance(r, int) for r in spec) and small_shape(out):
        if 0 in out:  # np.tile would build the copies of the other axes first
            value = np.empty(tuple(out), dtype=data.value.dtype)
        else:
            value = np.tile(data.value, spec)
    return [Fact(dtype=dtype, shape=tuple(out), value=value)]


