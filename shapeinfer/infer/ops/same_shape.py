"""Ops whose output has the input's shape: activations, normalizations, Softmax, CumSum, Trilu...

Handled here rather than by onnx's inference so that the dims are passed on as they are (and
without a protobuf round trip per node)."""

from __future__ import annotations

from onnx import TensorProto

from ..facts import Fact
from ..registry import rule
from ._util import int_entries, normalize_axis

SAME_SHAPE = (
    "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Log",
    "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Gelu", "Softplus", "Softsign", "Elu", "Selu", "Celu", "Mish", "Sign", "Round", "Clip", "Shrink",
    "ThresholdedRelu", "BitwiseNot", "Softmax", "LogSoftmax", "Hardmax", "LpNormalization",
    "MeanVarianceNormalization", "InstanceNormalization", "CumSum", "Trilu", "Swish",
)
_BOOL_OUT = ("IsNaN", "IsInf")


def _same(ctx, dtype=None):
    data = ctx.input(0)
    if data is None:
        return None
    return Fact(dtype=dtype if dtype is not None else data.dtype, shape=data.shape)


# Ops of SAME_SHAPE that read an axis of their input (the default, by opset): it must be one of
# its axes -- a scalar has none, and onnxruntime refuses a Softmax of one at load.
_AXIS = {"Softmax": (13, 1, -1), "LogSoftmax": (13, 1, -1), "Hardmax": (13, 1, -1), "LpNormalization": (1, -1, -1)}


@rule(*SAME_SHAPE, since=1)
def same_shape(ctx):
    out = _same(ctx)
    if out is None:
        return None
    if ctx.op_type == "Trilu" and out.shape is not None and len(out.shape) < 2:
        raise ctx.error(f"the input has rank {len(out.shape)}; Trilu takes a matrix or a batch of them (rank 2 at least)")
    axis_rule = _AXIS.get(ctx.op_type)
    if axis_rule is not None and out.shape is not None:
        since, before, after = axis_rule
        normalize_axis(ctx, ctx.attr("axis", after if ctx.version >= since else before), len(out.shape))
    if ctx.op_type == "CumSum" and out.shape is not None:
        axis = int_entries(ctx.input(1))
        if axis is not None and len(axis) == 1:  # (the same in every run: outside the axes, every run fails)
            normalize_axis(ctx, axis[0], len(out.shape))
    return [out]


def check_scale_shape(ctx, data, k: int, what: str) -> None:
    """Every run fails where input ``k`` (a normalization's scale or bias) of static dims does
    not broadcast to the data's static shape (onnxruntime: "Scale and (optional) bias must match
    X.shape[axis:] or be broadcastable to it")."""
    param = ctx.input(k) if ctx.has_input(k) else None
    if data is None or data.shape is None or param is None or param.shape is None:
        return
    if len(param.shape) > len(data.shape):
        raise ctx.error(f"the {what} has rank {len(param.shape)}, more than the input's {len(data.shape)}")
    for p, d in zip(reversed(param.shape), reversed(data.shape)):
        if type(p) is int and type(d) is int and p != 1 and p != d:
            raise ctx.error(f"the {what} {list(param.shape)} does not broadcast to the input {list(data.shape)}")


@rule(*_BOOL_OUT, since=9)
def bool_same_shape(ctx):
    out = _same(ctx, TensorProto.BOOL)
    return None if out is None else [out]


@rule("Dropout", since=1)
def dropout(ctx):
    data = ctx.input(0)
    if data is None:
        return None
    outs = [Fact(dtype=data.dtype, shape=data.shape)]
    if len(ctx.node.output) > 1:
        mask = TensorProto.BOOL if ctx.version >= 12 else data.dtype
        outs.append(Fact(dtype=mask, shape=data.shape))
    return outs


@rule("BatchNormalization", since=1)
def batch_norm(ctx):
    data = ctx.input(0)
    # (the spec's input is [N, C, ...]; onnxruntime also runs a rank-1 input [N], as one channel)
    if data is not None and data.shape is not None and not data.shape:
        raise ctx.error("the input is a scalar; BatchNormalization normalizes [N, C, ...]")
    if ctx.version >= 9:  # (before, spatial=0 gives scale and the others the shape [C, D1, ...])
        channels = None
        if data is not None and data.shape is not None:
            channels = data.shape[1] if len(data.shape) > 1 else 1
        for k, what in ((1, "scale"), (2, "B"), (3, "mean"), (4, "var")):
            f = ctx.input(k)
            if f is None or f.shape is None:
                continue
            if len(f.shape) != 1:
                raise ctx.error(f"{what} (input {k}) has rank {len(f.shape)}; it must be 1-D, one entry per channel")
            if type(channels) is int and type(f.shape[0]) is int and f.shape[0] != channels:
                raise ctx.error(f"{what} (input {k}) has {f.shape[0]} entries for {channels} channels")
    if data is None or len(ctx.node.output) > 1:
        return None  # training-mode outputs: onnx's inference knows their shapes
    return [Fact(dtype=data.dtype, shape=data.shape)]


@rule("LayerNormalization", since=17)
def layer_norm(ctx):
    data = ctx.input(0)
    if data is None:
        return None
    check_scale_shape(ctx, data, 1, "scale")
    check_scale_shape(ctx, data, 2, "bias")
    outs = [Fact(dtype=data.dtype, shape=data.shape)]
    if len(ctx.node.output) > 1:
        stash = ctx.attr("stash_type", TensorProto.FLOAT)
        if data.shape is None:
            reduced = None
        else:
            r = len(data.shape)
            axis = normalize_axis(ctx, ctx.attr("axis", -1), r)
            reduced = tuple(data.shape[:axis]) + (1,) * (r - axis)
        outs.extend(Fact(dtype=stash, shape=reduced) for _ in ctx.node.output[1:])
    return outs


@rule("RMSNormalization", since=23)
def rms_norm(ctx):
    """As LayerNormalization's: one output, a scale and no bias."""
    return layer_norm(ctx)
