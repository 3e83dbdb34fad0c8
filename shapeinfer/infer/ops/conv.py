"""Convolution and pooling: spatial dims through floor/ceil division of padded sizes.

For a spatial dim D, kernel k, dilation d, stride s and pads (b, e), with K = (k-1)*d + 1:

- explicit pads (``auto_pad`` NOTSET) and VALID (pads 0): ``(D + b + e - K) // s + 1``;
- SAME_UPPER / SAME_LOWER: ``ceil(D / s)``;
- pools with ``ceil_mode=1``: ``ceil((D + b + e - K) / s) + 1``, less one where the last window
  would start inside the end padding (onnxruntime's rule, PyTorch's too). Symbolically that
  correction can be ruled out when ``e + s <= K``; otherwise the dim is left unknown.
- ConvTranspose: ``s*(D-1) + output_padding + K - b - e`` (or ``D*s`` with SAME), unless
  ``output_shape`` is given. With SAME and ``output_padding + K < s`` the spec's total padding is
  negative; onnxruntime clamps it to 0 and makes ``s*(D-1) + output_padding + K``, the spec's
  formula says ``D*s``: that dim is left unknown.
"""

from __future__ import annotations

from ...symbolic import add, dmax, floordiv, mul, neg, provably_nonneg, sub, to_str
from ..facts import Fact
from ..registry import rule


def window_attributes(ctx) -> None:
    """The window attributes every convolution and pool must have, whatever its input's shape:
    kernel sizes, strides and dilations above 0, pads not negative -- onnxruntime checks them when
    it creates the kernel, at load, and refuses the model otherwise."""
    for name, least in (("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("pads", 0)):
        values = ctx.attr(name)
        if values and any(v < least for v in values):
            raise ctx.error(f"{name} {list(values)} holds a value below {least}")


def _spatial_params(ctx, n: int, kernel):
    strides = list(ctx.attr("strides") or [1] * n)
    dilations = list(ctx.attr("dilations") or [1] * n)
    pads = list(ctx.attr("pads") or [0] * (2 * n))
    auto_pad = ctx.attr("auto_pad", b"NOTSET")
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode(errors="replace")
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n or len(kernel) != n:
        raise ctx.error(f"kernel, strides, dilations and pads do not match {n} spatial dims")
    return strides, dilations, pads, auto_pad


_TRUNCATING = frozenset({"MaxPool", "AveragePool", "LpPool"})


def _window_out(ctx, D, k, d, s, b, e, auto_pad, ceil_mode):
    K = (k - 1) * d + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if d > 1 and ctx.op_type in _TRUNCATING:
            # onnxruntime's pooling pads for the undilated kernel and then slides the dilated
            # one: not the spec's ceil(n / s) (MaxPool k=2, s=2, d=2 on n=3 makes 1, not 2)
            return None
        return floordiv(add(D, s - 1), s)
    if auto_pad == "VALID":
        b = e = 0
    span = sub(add(D, b + e), K)
    if not ceil_mode:
        if ctx.op_type in _TRUNCATING and s > 1 and not provably_nonneg(span):
            # onnxruntime's pooling divides the span in C, truncating toward zero: a window that
            # does not fit (a span in (-s, 0)) still makes one output, where floor makes none
            if isinstance(span, int):
                return -(-span // s) + 1
            return add(sub(floordiv(dmax(span, 0), s), floordiv(dmax(neg(span), 0), s)), 1)
        return add(floordiv(span, s), 1)
    out = add(floordiv(add(span, s - 1), s), 1)
    if isinstance(D, int):
        if (out - 1) * s >= D + b:
            out -= 1
        return out
    if e + s <= K:
        return out
    return None


def _pool_like(ctx, shape, kernel, ceil_mode=False):
    n = len(shape) - 2
    strides, dilations, pads, auto_pad = _spatial_params(ctx, n, kernel)
    out = list(shape[:2])
    for i in range(n):
        D = shape[2 + i]
        if ctx.op_type not in _TRUNCATING and auto_pad in ("NOTSET", "VALID") and not isinstance(D, int):
            # the spec makes an empty output where the padded input is shorter than the kernel;
            # onnxruntime's convolutions fail there ("Invalid input shape")
            padded = D if auto_pad == "VALID" else add(D, pads[i] + pads[n + i])
            extent = (kernel[i] - 1) * dilations[i] + 1
            if extent > 1 and not provably_nonneg(sub(padded, extent)):
                ctx.condition(f"valid only when the padded input ({to_str(padded)}) spans the kernel ({extent}): "
                              "onnxruntime fails a shorter one (the spec makes it empty)", "le", extent, padded)
        d = _window_out(ctx, D, kernel[i], dilations[i], strides[i], pads[i], pads[n + i], auto_pad, ceil_mode)
        if ctx.op_type in _TRUNCATING and d is not None and not isinstance(d, int) and not provably_nonneg(d):
            ctx.condition(f"valid only when the output dim {to_str(d)} is not negative (a window longer than the "
                          "padded input by more than a stride)", "le", 0, d)
        if isinstance(d, int) and d < 0:
            raise ctx.error(f"spatial dim {i} would be negative ({d}): the kernel is larger than the padded input")
        out.append(d if d is not None else ctx.fresh())
    return out


def conv_shape(ctx, data_shape, weight_shape) -> tuple | None:
    """The output shape of a convolution [N, C, D1...] * [M, C/group, k1...] -> [N, M, E1...];
    None when a rank is unknown or the kernel size is not a plain int. Shared by Conv and its
    quantized and fused variants (ConvInteger, QLinearConv, FusedConv)."""
    window_attributes(ctx)
    if data_shape is None or weight_shape is None:
        return None
    if len(data_shape) < 3 or len(weight_shape) != len(data_shape):
        raise ctx.error(f"{ctx.op_type} needs an input [N, C, ...] and a weight of the same rank")
    kernel = ctx.attr("kernel_shape") or list(weight_shape[2:])
    if not all(isinstance(k, int) for k in kernel):
        return None
    out = _pool_like(ctx, data_shape, list(kernel))
    out[1] = weight_shape[0]
    return tuple(out)


@rule("Conv", since=1)
def conv(ctx):
    data, weight = ctx.input(0), ctx.input(1)
    if data is None or weight is None:
        return None
    shape = conv_shape(ctx, data.shape, weight.shape)
    return None if shape is None else [Fact(dtype=data.dtype, shape=shape)]


@rule("ConvTranspose", since=1)
def conv_transpose(ctx):
    window_attributes(ctx)
    group = ctx.attr("group", 1)
    if group < 1:
        raise ctx.error(f"group is {group}; it must be 1 or more")
    for name in ("output_padding", "output_shape"):
        values = ctx.attr(name)
        if values and any(v < 0 for v in values):
            raise ctx.error(f"{name} {list(values)} holds a negative value")
    data, weight = ctx.input(0), ctx.input(1)
    if data is not None and data.shape is not None and len(data.shape) > 1 and type(data.shape[1]) is int \
            and data.shape[1] % group:
        raise ctx.error(f"the input's {data.shape[1]} channels do not divide into {group} groups")
    if data is None or weight is None or data.shape is None or weight.shape is None:
        return None
    n = len(data.shape) - 2
    kernel = ctx.attr("kernel_shape") or list(weight.shape[2:])
    if not all(isinstance(k, int) for k in kernel) or n < 1:
        return None
    strides, dilations, pads, auto_pad = _spatial_params(ctx, n, list(kernel))
    out = [data.shape[0], mul(weight.shape[1], group)]
    given = ctx.attr("output_shape")
    if given and len(given) != n:  # (onnxruntime: "Attribute output_shape has incorrect size")
        raise ctx.error(f"output_shape {list(given)} has {len(given)} entries for {n} spatial dims")
    if given:
        out.extend(int(v) for v in given)
        return [Fact(dtype=data.dtype, shape=tuple(out))]
    opad = list(ctx.attr("output_padding") or [0] * n)
    for i in range(n):
        D = data.shape[2 + i]
        K = (kernel[i] - 1) * dilations[i] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(mul(D, strides[i]) if opad[i] + K >= strides[i] else ctx.fresh())
        else:
            b, e = (0, 0) if auto_pad == "VALID" else (pads[i], pads[n + i])
            out.append(add(mul(strides[i], sub(D, 1)), opad[i] + K - b - e))
    return [Fact(dtype=data.dtype, shape=tuple(out))]


def pool_shape(ctx, shape, kernel, ceil_mode: bool = False) -> tuple:
    """The output shape of a pooling window over [N, C, D1...] (MaxPool, AveragePool, and
    the quantized QLinearAveragePool)."""
    return tuple(_pool_like(ctx, shape, list(kernel), ceil_mode))


def pool_facts(ctx, facts: list) -> list:
    """A pool's output facts, unsure (Fact.unsure) where a length may be negative in the spec:
    the run fails there, where onnxruntime divides with truncation and runs (length 0 or 1)."""
    for f in facts:
        if f.shape is not None and any(d.__class__ is not int and not provably_nonneg(d) for d in f.shape):
            ctx.unsure(f)
    return facts


@rule("MaxPool", "AveragePool", "LpPool", since=1)
def pool(ctx):
    window_attributes(ctx)
    data = ctx.input(0)
    kernel = ctx.attr("kernel_shape")
    if data is None or data.shape is None or kernel is None or len(data.shape) < 3:
        return None
    ceil_mode = bool(ctx.attr("ceil_mode", 0)) if ctx.version >= 10 else False
    out = pool_shape(ctx, data.shape, kernel, ceil_mode)
    facts = [Fact(dtype=data.dtype, shape=out)]
    if len(ctx.node.output) > 1:
        from onnx import TensorProto

        facts.append(Fact(dtype=TensorProto.INT64, shape=out))
    return pool_facts(ctx, facts)


@rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", since=1)
def global_pool(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None or len(data.shape) < 2:
        return None
    return [Fact(dtype=data.dtype, shape=tuple(data.shape[:2]) + (1,) * (len(data.shape) - 2))]


