"""Expand, every version (8 and 13 differ only in types).

Bidirectional broadcast of the input shape with the target shape, right-aligned: the output rank
is the larger of the two, a target dim of 1 keeps the input dim, and the target may have fewer
dims than the input, so the output can be larger than the target.
"""

from __future__ import annotations

import numpy as np

from ...errors import CannotDecide
from ..facts import Fact
from ..registry import rule
from ._util import broadcast_dims, nonnegative_entries, small_shape, value_entries, value_length


def expand_output(ctx, data, spec, length) -> Fact:
    dtype = data.dtype if data is not None else 0
    in_shape = data.shape if data is not None else None
    if spec is None and length is None:
        return Fact(dtype=dtype)
    if in_shape is None:  # the output rank is at least the target's but may be larger: unknown
        return Fact(dtype=dtype)
    if spec is None:
        spec = [None] * length
    for e in spec:
        if isinstance(e, int) and e < 0:
            raise ctx.error(f"target shape has a negative entry {e}")
    nonnegative_entries(ctx, spec, "the target shape")
    rank = max(len(in_shape), len(spec))
    a_pad = [1] * (rank - len(in_shape)) + list(in_shape)
    b_pad = [1] * (rank - len(spec)) + list(spec)
    out = []
    for a, b in zip(a_pad, b_pad):
        d = broadcast_dims(ctx, a, b, [in_shape, spec])
        out.append(d if d is not None else ctx.fresh())
    value = None
    if data.value is not None and small_shape(out):
        value = np.broadcast_to(data.value, out).copy()
    return Fact(dtype=dtype, shape=tuple(out), value=value)


@rule("Expand", since=8)
def expand(ctx):
    given = ctx.input(1)
    if given is not None and given.shape is not None and len(given.shape) != 1 and given.value is not None:
        # The spec asks for a 1-D shape. onnxruntime refuses another rank at load unless it knows
        # the values (a constant, or a value its data propagation follows), which it then reads
        # in order, as its kernel does; another runtime may refuse: no shape is claimed, check
        # says so. Without values, shape_input's error below is what onnxruntime says.
        raise CannotDecide("off-spec-input", f"the shape (input 1) has rank {len(given.shape)}, not 1")
    shape = ctx.shape_input(1, "the shape")
    return [expand_output(ctx, ctx.input(0), value_entries(shape), value_length(shape))]
