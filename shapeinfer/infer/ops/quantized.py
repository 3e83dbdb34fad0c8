"""Quantized ops: the default-domain ones whose dims onnx's own inference loses (ConvInteger and
QLinearConv make spatial dims only from static sizes), and onnxruntime's quantized ops in
``com.microsoft`` (QLinear* elementwise/pool/concat/softmax, QGemm, MatMulNBits,
MatMulIntegerToFloat, DynamicQuantizeMatMul, DynamicQuantizeLSTM, Quantize/DequantizeLinear).

The shape arithmetic is that of the float op each one quantizes (conv.py, linalg.py); what
differs is which inputs carry the operands and which input's type the output takes (the
output zero point's, for the ops that requantize). ``channels_last`` ops (onnxruntime's NHWC
kernels) are read as their NCHW counterparts with the channel dim moved.
"""

from __future__ import annotations

from onnx import TensorProto

from ...symbolic import add
from ..facts import Fact
from ..registry import rule
from ._util import broadcast_shapes, normalize_axis
from .contrib import MS, answer, dtype_of, same_as_input, shape_of
from .conv import conv_shape, pool_facts, pool_shape
from .linalg import gemm_shape, matmul_shape


def _to_channels_first(shape):
    return None if shape is None or len(shape) < 2 else (shape[0], shape[-1]) + tuple(shape[1:-1])


def _to_channels_last(shape):
    return None if shape is None else (shape[0],) + tuple(shape[2:]) + (shape[1],)


def _matmul_of(ctx, a: int, b: int, dtype: int) -> list:
    sa, sb = shape_of(ctx, a), shape_of(ctx, b)
    shape = None if sa is None or sb is None else matmul_shape(ctx, sa, sb)
    return answer(ctx, [Fact(dtype=dtype, shape=shape)])


# -- default domain ---------------------------------------------------------------------------

@rule("ConvInteger", since=10)
def conv_integer(ctx):
    """Conv arithmetic on (x, w, x_zero_point, w_zero_point); the output is int32."""
    return answer(ctx, [Fact(dtype=TensorProto.INT32, shape=conv_shape(ctx, shape_of(ctx, 0), shape_of(ctx, 1)))])


@rule("QLinearConv", since=10)
def qlinear_conv(ctx):
    """(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B]): Conv of x and w, in y_zp's type.
    onnxruntime's com.microsoft QLinearConv adds ``channels_last`` (x and y NHWC; w stays
    [M, C/group, k...])."""
    x = shape_of(ctx, 0)
    channels_last = bool(ctx.attr("channels_last", 0))
    if channels_last:
        x = _to_channels_first(x)
    shape = conv_shape(ctx, x, shape_of(ctx, 3))
    if channels_last and shape is not None:
        shape = _to_channels_last(shape)
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 7, TensorProto.UINT8), shape=shape)])


rule("QLinearConv", since=1, domain=MS)(qlinear_conv)


@rule("MatMulInteger", since=10)
def matmul_integer(ctx):
    return _matmul_of(ctx, 0, 1, TensorProto.INT32)


@rule("QLinearMatMul", since=10)
def qlinear_matmul(ctx):
    """(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): MatMul of a and b, in y_zp's type."""
    return _matmul_of(ctx, 0, 3, dtype_of(ctx, 7, TensorProto.UINT8))


@rule("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(ctx):
    """y (uint8, x's shape), y_scale and y_zero_point (scalars)."""
    x = shape_of(ctx, 0)
    return answer(ctx, [Fact(dtype=TensorProto.UINT8, shape=x), Fact(dtype=TensorProto.FLOAT, shape=()),
                        Fact(dtype=TensorProto.UINT8, shape=())])


# -- com.microsoft ----------------------------------------------------------------------------

@rule("QuantizeLinear", since=1, domain=MS)
def quantize_linear(ctx):
    """y has x's shape, in the zero point's type (uint8 without one)."""
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 2, TensorProto.UINT8), shape=shape_of(ctx, 0))])


@rule("DequantizeLinear", since=1, domain=MS)
def dequantize_linear(ctx):
    """y has x's shape, in the scale's type."""
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 1, TensorProto.FLOAT), shape=shape_of(ctx, 0))])


@rule("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", since=1, domain=MS)
def qlinear_unary(ctx):
    return same_as_input(ctx, 0)


@rule("QLinearAdd", "QLinearMul", since=1, domain=MS)
def qlinear_binary(ctx):
    """(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp): A and B broadcast (NumPy style)."""
    sa, sb = shape_of(ctx, 0), shape_of(ctx, 3)
    shape = None if sa is None or sb is None else broadcast_shapes(ctx, [sa, sb])
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 0), shape=shape)])


@rule("QLinearGlobalAveragePool", since=1, domain=MS)
def qlinear_global_average_pool(ctx):
    x = shape_of(ctx, 0)
    shape = None
    if x is not None and len(x) >= 2:
        if ctx.attr("channels_last", 0):
            shape = (x[0],) + (1,) * (len(x) - 2) + (x[-1],)
        else:
            shape = tuple(x[:2]) + (1,) * (len(x) - 2)
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 0), shape=shape)])


@rule("QLinearAveragePool", since=1, domain=MS)
def qlinear_average_pool(ctx):
    x = shape_of(ctx, 0)
    kernel = ctx.attr("kernel_shape")
    channels_last = bool(ctx.attr("channels_last", 0))
    shape = None
    if x is not None and kernel is not None and len(x) >= 3:
        shape = pool_shape(ctx, _to_channels_first(x) if channels_last else x, kernel, bool(ctx.attr("ceil_mode", 0)))
        if channels_last:
            shape = _to_channels_last(shape)
    return answer(ctx, pool_facts(ctx, [Fact(dtype=dtype_of(ctx, 0), shape=shape)]))


@rule("QLinearConcat", since=1, domain=MS)
def qlinear_concat(ctx):
    """(Y_scale, Y_zp, then (tensor, scale, zp) for each input): Concat along ``axis``."""
    dtype = dtype_of(ctx, 1)
    shapes = [shape_of(ctx, i) for i in range(2, len(ctx.node.input), 3)]
    if not shapes or any(s is None for s in shapes):
        return answer(ctx, [Fact(dtype=dtype)])
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise ctx.error("QLinearConcat inputs must have the same rank")
    axis = normalize_axis(ctx, ctx.attr("axis", 0), rank)
    out = list(shapes[0])
    for s in shapes[1:]:
        out[axis] = add(out[axis], s[axis])
        for k in range(rank):
            if k != axis and isinstance(out[k], int) and isinstance(s[k], int) and out[k] != s[k]:
                raise ctx.error(f"QLinearConcat inputs differ in dim {k}: {out[k]} and {s[k]}")
    return answer(ctx, [Fact(dtype=dtype, shape=tuple(out))])


@rule("QGemm", since=1, domain=MS)
def qgemm(ctx):
    """(A, a_scale, a_zp, B, b_scale, b_zp[, C, y_scale, y_zp]): [M, N], float unless y_scale is
    given (then requantized to y_zp's type)."""
    dtype = dtype_of(ctx, 8, TensorProto.UINT8) if ctx.has_input(7) else TensorProto.FLOAT
    shape = gemm_shape(ctx, shape_of(ctx, 0), shape_of(ctx, 3), ctx.attr("transA", 0), ctx.attr("transB", 0))
    return answer(ctx, [Fact(dtype=dtype, shape=shape)])


@rule("MatMulIntegerToFloat", since=1, domain=MS)
def matmul_integer_to_float(ctx):
    """MatMul of the integer A and B, in the scales' type."""
    return _matmul_of(ctx, 0, 1, dtype_of(ctx, 2, TensorProto.FLOAT))


@rule("DynamicQuantizeMatMul", since=1, domain=MS)
def dynamic_quantize_matmul(ctx):
    """MatMul of the float A and the quantized B, in A's type."""
    return _matmul_of(ctx, 0, 1, dtype_of(ctx, 0, TensorProto.FLOAT))


@rule("MatMulNBits", since=1, domain=MS)
def matmul_nbits(ctx):
    """A [..., K] times the packed [K, N] weight (attributes K and N): [..., N]."""
    a = shape_of(ctx, 0)
    dtype = dtype_of(ctx, 0)
    k, n = ctx.attr("K"), ctx.attr("N")
    if a is None or not isinstance(n, int):
        return answer(ctx, [Fact(dtype=dtype)])
    if not a:
        raise ctx.error("MatMulNBits input A must have rank 1 or more")
    if isinstance(k, int) and isinstance(a[-1], int) and a[-1] != k:
        raise ctx.error(f"contracted dims differ: {a[-1]} and K={k}")
    return answer(ctx, [Fact(dtype=dtype, shape=tuple(a[:-1]) + (n,))])


@rule("DynamicQuantizeLSTM", since=1, domain=MS)
def dynamic_quantize_lstm(ctx):
    """X [S, B, I]: Y [S, D, B, H], Y_h and Y_c [D, B, H], D = 2 when bidirectional; H is
    ``hidden_size`` (or R's dim 1)."""
    x = shape_of(ctx, 0)
    dtype = dtype_of(ctx, 0)
    direction = ctx.attr("direction", b"forward")
    if isinstance(direction, bytes):
        direction = direction.decode(errors="replace")
    dirs = 2 if direction == "bidirectional" else 1
    hidden = ctx.attr("hidden_size")
    if not isinstance(hidden, int):
        r = shape_of(ctx, 2)
        hidden = r[1] if r is not None and len(r) == 3 else ctx.fresh()
    if x is None or len(x) != 3:
        return answer(ctx, [Fact(dtype=dtype)] * 3)
    seq, batch = x[0], x[1]
    state = (dirs, batch, hidden)
    return answer(ctx, [Fact(dtype=dtype, shape=(seq, dirs, batch, hidden)), Fact(dtype=dtype, shape=state),
                        Fact(dtype=dtype, shape=state)])

