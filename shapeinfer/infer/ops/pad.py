"""Pad: each padded dim grows by its begin and end pads (negative pads crop).

- v1: ``paddings`` attribute; v2: ``pads`` attribute.
- v11, v13: ``pads`` as the second input (its value may be computed, even symbolic).
- v18, v19, v21+: an optional ``axes`` input says which dims the pads are for.
"""

from __future__ import annotations

from ...symbolic import add, provably_positive, to_str
from ..facts import Fact
from ..registry import rule
from ._util import int_entries, nonnegative_entries, normalize_axis, value_entries


def _pad_output(ctx, data, pads, axes):
    mode = ctx.attr("mode", b"constant")
    mode = mode.decode(errors="replace") if isinstance(mode, bytes) else mode
    if data is None or data.shape is None:
        return None
    r = len(data.shape)
    if axes is None:
        axes = list(range(r))
    else:
        axes = [normalize_axis(ctx, a, r) for a in axes]
    if pads is None:
        touched = set(axes)
        return [Fact(dtype=data.dtype, shape=tuple(ctx.fresh() if i in touched else d for i, d in enumerate(data.shape)))]
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads has {len(pads)} entries, expected {2 * len(axes)} (begin and end for each axis)")
    out = list(data.shape)
    n = len(axes)
    for k, a in enumerate(axes):
        begin, end = pads[k], pads[k + n]
        if begin is None or end is None:
            out[a] = ctx.fresh()
            continue
        d = add(add(out[a], begin), end)
        if isinstance(d, int) and d < 0:
            raise ctx.error(f"pads crop axis {a} below zero")
        nonnegative_entries(ctx, [d], f"the output (axis {a}, cropped by negative pads)")
        if mode == "reflect" and not isinstance(out[a], int):
            # a reflection mirrors inside the axis it pads: each pad at most the cropped extent less one
            # (onnxruntime fails past it, and on an extent of 0)
            extent = add(add(out[a], min(begin, 0) if type(begin) is int else 0), min(end, 0) if type(end) is int else 0)
            if not provably_positive(extent):
                ctx.condition(f"valid only when the extent {to_str(extent)} of axis {a} left after cropping is 1 or "
                              "more (reflect)", "le", 1, extent)
            for p in (begin, end):
                if type(p) is int and p >= 0:
                    ctx.condition(f"valid only when the pad {p} of axis {a} is less than its extent "
                                  f"{to_str(extent)} (reflect)", "le", p + 1, extent)
        out[a] = d
    return [Fact(dtype=data.dtype, shape=tuple(out))]


@rule("Pad", since=1)
def pad_v1(ctx):
    pads = ctx.attr("paddings" if ctx.version < 2 else "pads")
    if pads is not None:
        half = len(pads) // 2
        for k in range(half):
            if not -2 ** 63 <= pads[k] + pads[k + half] < 2 ** 63:
                # onnxruntime's load adds each axis's two pads in int64 and refuses the model
                raise ctx.error(f"pads {pads[k]} and {pads[k + half]} of axis {k} add up past int64")
    return _pad_output(ctx, ctx.input(0), list(pads) if pads is not None else None, None)


@rule("Pad", since=11)
def pad_v11(ctx):
    axes = None
    if ctx.version >= 18 and ctx.has_input(3):
        axes = int_entries(ctx.input(3))
        if axes is None:
            return None
    return _pad_output(ctx, ctx.input(0), value_entries(ctx.input(1)), axes)
