"""Resize and Upsample: output dims from computed ``sizes`` (followed as dims) or ``scales``.

- Upsample-7: ``scales`` attribute; Upsample-9 and Resize-10: ``scales`` input.
- Resize-11/13/18/19: inputs ``(X, roi, scales, sizes)``, one of scales/sizes; from 18 an
  ``axes`` attribute says which dims they are for, and ``keep_aspect_ratio_policy`` other than
  ``stretch`` scales all of them by one factor (only handled for static dims).

A scale gives ``floor(D * scale)`` -- the exact product in the spec text; onnxruntime multiplies
in float32 (the dim converted to float32, times the float32 scale, rounded), which can land on the
other side of an integer (29 * 0.10344827f: 3, where the exact product floors to 2). A static dim
gets the value only where both agree, else it is unknown. A symbolic dim is kept only for scales
whose float value is a small dyadic fraction (2.0, 0.5, 1.25, ...), where the float32 product is
exact for every dim below 2**24 (larger dims lose bits in float32 already); any other scale of a
symbolic dim gives an unknown dim. The same holds for keep_aspect_ratio_policy's rounding.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ...symbolic import floordiv, mul, provably_positive, to_str
from ..facts import Fact
from ..registry import rule
from ._util import normalize_axis, value_entries


def _scaled(ctx, D, scale):
    if isinstance(D, int):
        s32 = np.float32(scale)
        runtime = math.floor(float(np.float32(np.float32(D) * s32)))
        exact = math.floor(Fraction(float(s32)) * D)
        return runtime if runtime == exact else ctx.fresh()
    f = Fraction(float(np.float32(scale)))
    if f.denominator > 1024 or abs(f.numerator) > 1 << 20 or f < 0:
        return ctx.fresh()
    return floordiv(mul(D, f.numerator), f.denominator) if f.denominator != 1 else mul(D, f.numerator)


def _aspect_kept(ctx, dims, sizes, policy) -> list:
    """Output dims under keep_aspect_ratio_policy: one scale for every axis, the smallest
    (not_larger) or largest (not_smaller) size/dim ratio, and round(scale * dim). Exact in the
    spec text; onnxruntime takes the ratios and the products in float32 -- a dim where the two
    round apart is unknown."""
    if any(d == 0 for d in dims):
        return [ctx.fresh() for _ in dims]
    with np.errstate(all="ignore"):
        ratios32 = [np.float32(s) / np.float32(d) for s, d in zip(sizes, dims)]
    exact_ratios = [Fraction(s, d) for s, d in zip(sizes, dims)]
    pick = min if policy == "not_larger" else max
    s32, exact = pick(ratios32), pick(exact_ratios)
    out = []
    for d in dims:
        runtime = math.floor(float(np.float32(s32 * np.float32(d))) + 0.5)
        want = math.floor(exact * d + Fraction(1, 2))
        out.append(runtime if runtime == want else ctx.fresh())
    return out


def _float_entries(fact):
    if fact is None or fact.value is None or fact.value.dtype == object:
        return None
    return [float(v) for v in fact.value.reshape(-1)]


def _resize(ctx, data, scales, sizes, axes=None, policy="stretch"):
    if data is None or data.shape is None:
        return None
    r = len(data.shape)
    axes = list(range(r)) if axes is None else [normalize_axis(ctx, a, r) for a in axes]
    if len(set(axes)) != len(axes):
        raise ctx.error(f"axes {axes} name an axis twice")
    out = list(data.shape)
    if sizes is not None:
        if len(sizes) != len(axes):
            raise ctx.error(f"sizes has {len(sizes)} entries for {len(axes)} axes")
        if policy != "stretch":
            if not all(isinstance(data.shape[a], int) for a in axes) or not all(isinstance(s, int) for s in sizes):
                return [Fact(dtype=data.dtype, shape=tuple(ctx.fresh() if i in axes else d for i, d in enumerate(out)))]
            for a, d in zip(axes, _aspect_kept(ctx, [data.shape[a] for a in axes], sizes, policy)):
                out[a] = d
            return [Fact(dtype=data.dtype, shape=tuple(out))]
        for a, s in zip(axes, sizes):
            if s is not None and not isinstance(s, int) and not provably_positive(s) and data.shape[a] != s:
                # (a computed size of 0 makes a scale of 0: onnxruntime fails the run)
                ctx.condition(f"valid only when the size {to_str(s)} of axis {a} is 1 or more", "le", 1, s)
            out[a] = s if s is not None else ctx.fresh()
        return [Fact(dtype=data.dtype, shape=tuple(out))]
    if scales is not None:
        if len(scales) != len(axes):
            raise ctx.error(f"scales has {len(scales)} entries for {len(axes)} axes")
        bad = [sc for sc in scales if isinstance(sc, (int, float)) and not sc > 0]
        if bad:  # ("It takes value greater than 0"; onnxruntime refuses it when it loads the model)
            if ctx.in_body:  # (the node may never run: the dims it scales unknown)
                scales = [sc if isinstance(sc, (int, float)) and sc > 0 else None for sc in scales]
            else:
                raise ctx.error(f"scales {list(scales)} hold {bad[0]}: every scale must be greater than 0")
        for a, sc in zip(axes, scales):
            out[a] = _scaled(ctx, out[a], sc) if sc is not None else ctx.fresh()
        return [Fact(dtype=data.dtype, shape=tuple(out))]
    return [Fact(dtype=data.dtype, shape=tuple(ctx.fresh() if i in axes else d for i, d in enumerate(out)))]


def _upsample(ctx, scales):
    """Upsample: every scale "greater than or equal to 1" (onnxruntime refuses a smaller one when
    it creates the kernel, or fails the run where the scales are computed)."""
    if scales is not None and any(not sc >= 1 for sc in scales):
        if ctx.in_body:  # (the node may never run)
            return _resize(ctx, ctx.input(0), [sc if sc >= 1 else None for sc in scales], None)
        raise ctx.error(f"scales {list(scales)} hold a value below 1; Upsample takes scales of 1 or more")
    return _resize(ctx, ctx.input(0), scales, None)


@rule("Upsample", since=7)
def upsample_v7(ctx):
    scales = ctx.attr("scales")
    return _upsample(ctx, list(scales) if scales is not None else None)


@rule("Upsample", since=9)
def upsample_v9(ctx):
    return _upsample(ctx, _float_entries(ctx.input(1)))


@rule("Resize", since=10)
def resize_v10(ctx):
    return _resize(ctx, ctx.input(0), _float_entries(ctx.input(1)), None)


def _given(ctx, i):
    """The fact of optional input i when it is present and not an empty tensor, else None."""
    if not ctx.has_input(i):
        return None
    f = ctx.input(i)
    if f is not None and f.shape is not None and len(f.shape) == 1 and f.shape[0] == 0:
        return None
    return f if f is not None else Fact()


@rule("Resize", since=11)
def resize_v11(ctx):
    scales_fact, sizes_fact = _given(ctx, 2), _given(ctx, 3)
    axes = ctx.attr("axes") if ctx.version >= 18 else None
    policy = ctx.attr("keep_aspect_ratio_policy", b"stretch") if ctx.version >= 18 else b"stretch"
    if isinstance(policy, bytes):
        policy = policy.decode(errors="replace")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise ctx.error(f"keep_aspect_ratio_policy is {policy!r}; it is stretch, not_larger or not_smaller")
    if all(f is not None and f.shape is not None and len(f.shape) == 1 and type(f.shape[0]) is int and f.shape[0] > 0
           for f in (scales_fact, sizes_fact)):
        raise ctx.error("scales and sizes are both given; only one of them may be")
    data = ctx.input(0)
    if data is not None and data.shape is not None:
        if axes is not None:
            named = [normalize_axis(ctx, a, len(data.shape)) for a in axes]
            if len(set(named)) != len(named):
                raise ctx.error(f"axes {named} name an axis twice")
        want = len(axes) if axes is not None else len(data.shape)
        for f, what in ((sizes_fact, "sizes"), (scales_fact, "scales")):
            if f is not None and f.shape is not None and len(f.shape) == 1 and type(f.shape[0]) is int \
                    and f.shape[0] != want:
                raise ctx.error(f"{what} has {f.shape[0]} entries for {want} axes")
    sizes = value_entries(sizes_fact) if sizes_fact is not None else None
    scales = _float_entries(scales_fact) if scales_fact is not None and sizes_fact is None else None
    if sizes is None and scales is None:
        if data is None or data.shape is None:  # (the sizes or scales are computed at run time: keep the rank)
            return None
        return [Fact(dtype=data.dtype, shape=ctx.fresh_shape(len(data.shape)))]
    return _resize(ctx, ctx.input(0), scales, sizes, list(axes) if axes is not None else None, policy)
