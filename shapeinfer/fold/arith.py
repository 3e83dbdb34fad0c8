"""Exact kernels for arithmetic, logic, comparisons and reductions.

Only what the spec defines exactly is computed here; every other case raises, saying why:

- **Integers** wrap (two's complement, as C++ and onnxruntime compute): Add, Sub, Mul, Neg,
  Abs, integer MatMul and CumSum. Integer ReduceSum/Prod/L1/SumSquare are folded only when
  every partial result is below 2**53 and the result in range: onnxruntime accumulates them
  in double and saturates (int32 [2**30]*4 sums to 2147483647 there, 0 wrapping). Div
  truncates toward zero (NumPy floors); a division by zero, and ``INT_MIN / -1`` (it
  overflows; x86 traps), are undefined: not folded. Mod with
  ``fmod=0`` takes the sign of the divisor, with ``fmod=1`` the sign of the dividend (C);
  onnxruntime computes ``fmod=1`` in double, so operands beyond 2**53 are not folded.
- **Floats** (float16, bfloat16, float32, float64): only the correctly rounded operations --
  ``+ - * /``, Sqrt, Reciprocal -- and the exact ones -- Neg, Abs, Floor, Ceil, Round (half to
  even), Min/Max, Relu, Sign, comparisons, IsNaN/IsInf. float16 and bfloat16 are computed in
  float32 and rounded once more: for these operations that double rounding is innocuous. A
  float16 result is folded only where float16 holds the float32 result: onnxruntime's CPU
  provider runs float16 Add, Mul, Div... in float32 between Casts it later drops, so the next
  op may read the unrounded value (x * (-1/3) rounds once there).
- **NaN**: a float16/bfloat16 NaN operand is not folded (computed through float32,
  onnxruntime returns the canonical 0x7E00). A result that is a NaN *made* by the operation
  (``inf - inf``, ``0 * inf``, ``0 / 0``, ``sqrt(-1)``) has the hardware's sign and payload
  (x86 and ARM differ): not folded. Where two operands of one element are NaN, runtimes keep different payloads
  (onnxruntime returns the second operand's for Add and Mul, NumPy the first's): not folded.
  One NaN operand is propagated, its payload kept (quieted).
- **Signed zeros** where the spec leaves the sign open (Min/Max of +0 and -0, Relu of -0,
  Mod of -0): not folded.

``Inexact`` marks float cases: with ``fold_float_math`` the caller computes them anyway.
``NotFoldable`` marks undefined results (division by zero, an overflowing shift before opset
28): never folded.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .dtypes import (
    BF16,
    BOOL,
    F16,
    F32,
    IEEE_FLOATS,
    INTS,
    SIGNED_INTS,
    UNSIGNED_INTS,
    bits_view,
    is_ieee_float,
    is_int,
    is_numeric_float,
    is_signed,
    isnan,
    name,
    sign_mask,
    work_dtype,
)
from .kernels import FoldError, Inexact, NotFoldable, kernel

NUMERIC = INTS + IEEE_FLOATS
TWO_53 = 2**53


# ---------------------------------------------------------------- helpers


def _check_type(op: str, dt, allowed) -> None:
    if dt not in allowed:
        raise NotFoldable(f"{op} on {name(dt)} is not folded")


def _broadcast(op: str, arrays):
    try:
        return np.broadcast_arrays(*arrays)
    except ValueError:
        raise FoldError(f"shapes {[list(a.shape) for a in arrays]} do not broadcast") from None


def _same_type(op: str, arrays) -> None:
    types = {a.dtype for a in arrays}
    if len(types) > 1:
        raise NotFoldable(f"{op} of different types {sorted(name(t) for t in types)}")


def _operands(op: str, inputs, version: int, allowed, since_broadcast: int = 7):
    """The two operands of a binary op, broadcast, of one allowed type."""
    if version < since_broadcast:
        raise NotFoldable(f"{op} before opset {since_broadcast} (legacy broadcast attributes) is not folded")
    a, b = inputs[0], inputs[1]
    _same_type(op, (a, b))
    _check_type(op, a.dtype, allowed)
    return _broadcast(op, (a, b))


def _no_two_nans(op: str, *arrays) -> np.ndarray:
    """The mask of NaN operands; raises where one element has NaN in two operands, and for
    any NaN in float16/bfloat16 (computed through float32: onnxruntime's conversion back
    returns the canonical NaN 0x7E00, NumPy keeps the payload)."""
    masks = [isnan(a) for a in arrays]
    count = np.sum(masks, axis=0) if masks else 0
    if np.any(count >= 2):
        raise Inexact(f"{op} of two NaNs: runtimes keep different NaN payloads")
    if arrays and arrays[0].dtype in (F16, BF16) and np.any(count):
        raise Inexact(f"{op} of a {name(arrays[0].dtype)} NaN: its payload depends on the runtime "
                      "(onnxruntime returns 0x7E00)")
    return np.any(masks, axis=0) if masks else None


def _no_new_nan(op: str, result: np.ndarray, had_nan) -> None:
    made = np.isnan(result) if had_nan is None else (np.isnan(result) & ~had_nan)
    if np.any(made):
        raise Inexact(f"{op} makes a NaN here (inf-inf, 0*inf, 0/0, sqrt of a negative): its sign and "
                      "payload are the hardware's")


def _float_op(op: str, fn, arrays):
    """fn on IEEE float arrays (one type), computed in the work type and rounded to the type."""
    dt = arrays[0].dtype
    had_nan = _no_two_nans(op, *arrays)
    wt = work_dtype(dt)
    with np.errstate(all="ignore"):
        result = np.asarray(fn(*[a.astype(wt) for a in arrays]))
    _no_new_nan(op, result, had_nan)
    out = result.astype(dt)
    if dt == F16:
        with np.errstate(invalid="ignore"):
            kept = (out.astype(wt) == result) | np.isnan(result)
        if not np.all(kept):
            raise Inexact(f"{op} on float16 with a result float16 does not hold: onnxruntime's CPU provider "
                          "runs it in float32 and may pass the float32 value on (it drops the Casts between "
                          "float16 ops)")
    return out


def _as_dtype(result, dt) -> np.ndarray:
    return np.asarray(result).astype(dt, copy=False)


def _is_neg_zero(a: np.ndarray) -> np.ndarray:
    return (a == 0) & ((bits_view(a) & sign_mask(a.dtype)) != 0)


def _scalar(arr, what: str) -> int:
    if arr is None or arr.size != 1:
        raise FoldError(f"{what} must hold one value")
    return int(arr.reshape(-1)[0])


# ---------------------------------------------------------------- + - * /


def _int_div(a, b):
    if np.any(b == 0):
        raise NotFoldable("integer division by zero is undefined")
    if is_signed(a.dtype):
        lo = np.iinfo(a.dtype).min
        if np.any((a == lo) & (b == -1)):
            raise NotFoldable(f"{lo} / -1 overflows (undefined; onnxruntime traps)")
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        if is_signed(a.dtype):
            inexact = (a - q * b) != 0
            q = np.where(inexact & ((a < 0) != (b < 0)), q + np.array(1, a.dtype), q)
    return _as_dtype(q, a.dtype)


_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}


def _binary_kernel(op: str):
    ufunc = _BINARY[op]

    def fold(attrs, inputs, version):
        a, b = _operands(op, inputs, version, NUMERIC)
        if is_int(a.dtype):
            if op == "Div":
                return [_int_div(a, b)]
            with np.errstate(all="ignore"):
                return [_as_dtype(ufunc(a, b), a.dtype)]
        return [_float_op(op, ufunc, (a, b))]

    return fold


for _op in _BINARY:
    kernel(_op)(_binary_kernel(_op))


@kernel("Mod")
def mod(attrs, inputs, version):
    a, b = _operands("Mod", inputs, version, NUMERIC)
    fmod = int(attrs.get("fmod", 0))
    if is_int(a.dtype):
        if np.any(b == 0):
            raise NotFoldable("integer modulo by zero is undefined")
        if is_signed(a.dtype) and np.any((a == np.iinfo(a.dtype).min) & (b == -1)):
            raise NotFoldable("INT_MIN % -1 overflows in C (undefined; onnxruntime traps)")
        if fmod == 0:
            return [_as_dtype(np.remainder(a, b), a.dtype)]
        wide = a.astype(object), b.astype(object)
        if any(np.any(np.abs(w) > TWO_53) for w in wide):
            raise NotFoldable("integer Mod with fmod=1 beyond 2**53: onnxruntime computes it in double and loses bits")
        return [_as_dtype(np.fmod(a, b), a.dtype)]
    if fmod != 1:
        raise NotFoldable("Mod with fmod=0 on floats is not folded (an error before opset 28; onnxruntime refuses it)")
    if np.any(_is_neg_zero(a) & (b > 0)):
        raise Inexact("Mod of -0.0 by a positive number may be +0.0 or -0.0 (the spec allows either)")
    return [_float_op("Mod", np.fmod, (a, b))]


# ---------------------------------------------------------------- unary


def _unary_input(op, inputs, allowed):
    x = inputs[0]
    _check_type(op, x.dtype, allowed)
    return x


@kernel("Neg")
def neg(attrs, inputs, version):
    x = _unary_input("Neg", inputs, SIGNED_INTS + IEEE_FLOATS)
    if is_int(x.dtype):
        with np.errstate(all="ignore"):
            return [_as_dtype(np.negative(x), x.dtype)]
    ubits = bits_view(x)
    return [(ubits ^ ubits.dtype.type(sign_mask(x.dtype))).view(x.dtype)]


@kernel("Abs")
def abs_(attrs, inputs, version):
    x = _unary_input("Abs", inputs, NUMERIC)
    if is_int(x.dtype):
        with np.errstate(all="ignore"):
            return [_as_dtype(np.abs(x), x.dtype)]
    ubits = bits_view(x)
    return [(ubits & ubits.dtype.type(sign_mask(x.dtype) - 1)).view(x.dtype)]


def _float_unary(op: str, fn):
    def fold(attrs, inputs, version):
        x = _unary_input(op, inputs, IEEE_FLOATS)
        return [_float_op(op, fn, (x,))]

    return fold


kernel("Floor")(_float_unary("Floor", np.floor))
kernel("Ceil")(_float_unary("Ceil", np.ceil))
kernel("Round")(_float_unary("Round", np.rint))  # half to even
kernel("Sqrt")(_float_unary("Sqrt", np.sqrt))
kernel("Reciprocal")(_float_unary("Reciprocal", lambda x: np.divide(np.array(1, x.dtype), x)))


@kernel("Relu")
def relu(attrs, inputs, version):
    x = _unary_input("Relu", inputs, SIGNED_INTS + IEEE_FLOATS)
    if is_int(x.dtype):
        return [_as_dtype(np.maximum(x, np.array(0, x.dtype)), x.dtype)]
    if np.any(isnan(x)):
        raise Inexact("Relu of NaN: max(0, NaN) is NaN in onnxruntime, 0 under IEEE maxNum")
    if np.any(_is_neg_zero(x)):
        raise Inexact("Relu of -0.0: max(0, -0.0) may be +0.0 or -0.0 (onnxruntime keeps -0.0)")
    zero = np.zeros((), x.dtype)
    return [np.where(x.astype(work_dtype(x.dtype)) > 0, x, zero).astype(x.dtype)]


@kernel("Sign")
def sign(attrs, inputs, version):
    x = _unary_input("Sign", inputs, NUMERIC)
    if is_numeric_float(x.dtype) and np.any(isnan(x)):
        raise Inexact("Sign of NaN is not defined by the spec")
    w = x.astype(work_dtype(x.dtype)) if not is_int(x.dtype) else x
    one, zero = np.array(1, x.dtype), np.array(0, x.dtype)
    if x.dtype in UNSIGNED_INTS:
        return [np.where(w > 0, one, zero).astype(x.dtype)]
    minus = np.array(-1).astype(x.dtype)
    return [np.where(w > 0, one, np.where(w < 0, minus, zero)).astype(x.dtype)]


@kernel("IsNaN")
def is_nan(attrs, inputs, version):
    x = inputs[0]
    if not is_numeric_float(x.dtype):
        raise NotFoldable(f"IsNaN on {name(x.dtype)} is not folded")
    return [isnan(x)]


@kernel("IsInf")
def is_inf(attrs, inputs, version):
    x = inputs[0]
    if not is_numeric_float(x.dtype):
        raise NotFoldable(f"IsInf on {name(x.dtype)} is not folded")
    w = x.astype(F32) if x.dtype != np.float64 else x
    pos = bool(attrs.get("detect_positive", 1))
    neg_ = bool(attrs.get("detect_negative", 1))
    return [(np.isposinf(w) & pos) | (np.isneginf(w) & neg_)]


# ---------------------------------------------------------------- Min / Max / Clip


def _extreme(op: str, ufunc, arrays, version):
    if not arrays:
        raise FoldError(f"{op} needs at least one input")
    _same_type(op, arrays)
    dt = arrays[0].dtype
    _check_type(op, dt, NUMERIC)
    if version < 8 and len({a.shape for a in arrays}) > 1:
        raise NotFoldable(f"{op} before opset 8 does not broadcast")
    arrays = _broadcast(op, arrays)
    if is_int(dt):
        return _as_dtype(ufunc.reduce(np.stack(arrays)), dt) if len(arrays) > 1 else np.array(arrays[0])
    had_nan = _no_two_nans(op, *arrays)
    zeros = [a == 0 for a in arrays]
    negz = [_is_neg_zero(a) for a in arrays]
    pos = np.any([z & ~n for z, n in zip(zeros, negz)], axis=0)
    neg_ = np.any(negz, axis=0)
    wt = work_dtype(dt)
    # Select, never compute: the result is one of the operands, bit for bit (NumPy's
    # minimum.reduce returns the canonical NaN where onnxruntime passes the operand's payload on).
    result = arrays[0]
    with np.errstate(all="ignore"):
        for a in arrays[1:]:
            x, y = result.astype(wt), a.astype(wt)
            take_a = np.isnan(y) | (~np.isnan(x) & (ufunc(x, y) == y) & (x != y))
            result = np.where(take_a, a, result)
    if np.any(pos & neg_ & (result == 0)):
        raise Inexact(f"{op} of +0.0 and -0.0: runtimes return either")
    _no_new_nan(op, result.astype(wt), had_nan)
    return np.asarray(result).astype(dt)


@kernel("Max")
def max_(attrs, inputs, version):
    return [_extreme("Max", np.maximum, [a for a in inputs if a is not None], version)]


@kernel("Min")
def min_(attrs, inputs, version):
    return [_extreme("Min", np.minimum, [a for a in inputs if a is not None], version)]


@kernel("Clip")
def clip(attrs, inputs, version):
    if version < 11:
        raise NotFoldable("Clip before opset 11 (bounds as attributes) is not folded")
    x = inputs[0]
    _check_type("Clip", x.dtype, NUMERIC)
    lo = inputs[1] if len(inputs) > 1 else None
    hi = inputs[2] if len(inputs) > 2 else None
    for bound in (lo, hi):
        if bound is not None and (bound.size != 1 or bound.dtype != x.dtype):
            raise FoldError("a Clip bound must be a scalar of the input's type")
    if is_numeric_float(x.dtype):
        parts = [a for a in (x, lo, hi) if a is not None]
        if any(np.any(isnan(a)) for a in parts):
            raise Inexact("Clip with a NaN: runtimes differ on which value survives")
        if any(np.any(_is_neg_zero(a)) for a in parts):
            raise Inexact("Clip with -0.0: the sign of a zero result is not defined")
    if lo is not None and hi is not None and lo.reshape(-1)[0] > hi.reshape(-1)[0]:
        raise NotFoldable("Clip with min > max is not folded")
    if is_ieee_float(x.dtype):  # absent bounds are numeric_limits lowest()/max(): inf is clipped
        big = np.array(ml_dtypes.finfo(x.dtype).max, dtype=x.dtype)
        lo = -big if lo is None else lo
        hi = big if hi is None else hi
    out = x
    if lo is not None:
        out = np.where(out < lo.reshape(()), lo.reshape(()), out)
    if hi is not None:
        out = np.where(out > hi.reshape(()), hi.reshape(()), out)
    return [np.asarray(out).astype(x.dtype)]


# ---------------------------------------------------------------- bits and logic


@kernel("BitShift")
def bit_shift(attrs, inputs, version):
    allowed = UNSIGNED_INTS if version < 28 else INTS
    x, y = _operands("BitShift", inputs, version, allowed)
    direction = attrs.get("direction")
    direction = direction.decode(errors="replace") if isinstance(direction, bytes) else direction
    if direction not in ("LEFT", "RIGHT"):
        raise FoldError(f"direction {direction!r} is neither LEFT nor RIGHT")
    bits = 8 * x.dtype.itemsize
    valid = (y >= 0) & (y < bits)
    if not np.all(valid) and version < 28:
        raise NotFoldable(f"a shift by {bits} bits or more is undefined before opset 28")
    safe_y = np.where(valid, y, np.zeros((), y.dtype))
    fn = np.left_shift if direction == "LEFT" else np.right_shift
    with np.errstate(all="ignore"):
        shifted = fn(x, safe_y)
    # opset 28: a shift out of range gives what the sign extension alone gives
    fill = np.where((x < 0) if direction == "RIGHT" else False, np.array(-1).astype(x.dtype), np.zeros((), x.dtype))
    return [_as_dtype(np.where(valid, shifted, fill), x.dtype)]


def _bitwise(op: str, ufunc):
    def fold(attrs, inputs, version):
        a, b = _operands(op, inputs, version, INTS)
        return [_as_dtype(ufunc(a, b), a.dtype)]

    return fold


kernel("BitwiseAnd")(_bitwise("BitwiseAnd", np.bitwise_and))
kernel("BitwiseOr")(_bitwise("BitwiseOr", np.bitwise_or))
kernel("BitwiseXor")(_bitwise("BitwiseXor", np.bitwise_xor))


@kernel("BitwiseNot")
def bitwise_not(attrs, inputs, version):
    x = _unary_input("BitwiseNot", inputs, INTS)
    return [_as_dtype(np.invert(x), x.dtype)]


def _logical(op: str, ufunc):
    def fold(attrs, inputs, version):
        a, b = _operands(op, inputs, version, (BOOL,))
        return [np.asarray(ufunc(a, b), dtype=bool)]

    return fold


kernel("And")(_logical("And", np.logical_and))
kernel("Or")(_logical("Or", np.logical_or))
kernel("Xor")(_logical("Xor", np.logical_xor))


@kernel("Not")
def not_(attrs, inputs, version):
    x = _unary_input("Not", inputs, (BOOL,))
    return [np.logical_not(x)]


# ---------------------------------------------------------------- comparisons


_COMPARE = {"Equal": np.equal, "Less": np.less, "Greater": np.greater,
            "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal}


def _compare_kernel(op: str):
    ufunc = _COMPARE[op]

    def fold(attrs, inputs, version):
        a, b = inputs[0], inputs[1]
        allowed = NUMERIC + ((BOOL,) if op == "Equal" else ())
        if op == "Equal" and a.dtype == object and b.dtype == object:
            a, b = _broadcast(op, (a, b))
            flat = [x == y for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]
            return [np.array(flat, dtype=bool).reshape(a.shape)]
        a, b = _operands(op, (a, b), version, allowed)
        if is_numeric_float(a.dtype):
            wt = work_dtype(a.dtype)
            a, b = a.astype(wt), b.astype(wt)
        return [np.asarray(ufunc(a, b), dtype=bool)]

    return fold


for _op in _COMPARE:
    kernel(_op)(_compare_kernel(_op))


# ---------------------------------------------------------------- reductions


def reduce_axes(attrs, inputs, version, axes_input_since: int, rank: int):
    """The normalised axes to reduce (a tuple), or None for 'return the input unchanged'."""
    if version >= axes_input_since:
        axes_arr = inputs[1] if len(inputs) > 1 else None
        axes = [] if axes_arr is None else [int(v) for v in axes_arr.reshape(-1)]
        noop = bool(attrs.get("noop_with_empty_axes", 0))
    else:
        axes = list(attrs.get("axes") or [])
        noop = False
    if not axes:
        return None if noop else tuple(range(rank))
    out = []
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise FoldError(f"axis {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise FoldError(f"axes {axes} repeat an axis")
    return tuple(out)


_INT_REDUCE = {
    "ReduceSum": lambda x, ax, kd: np.add.reduce(x, axis=ax, dtype=x.dtype, keepdims=kd),
    "ReduceProd": lambda x, ax, kd: np.multiply.reduce(x, axis=ax, dtype=x.dtype, keepdims=kd),
    "ReduceL1": lambda x, ax, kd: np.add.reduce(np.abs(x), axis=ax, dtype=x.dtype, keepdims=kd),
    "ReduceSumSquare": lambda x, ax, kd: np.add.reduce(x * x, axis=ax, dtype=x.dtype, keepdims=kd),
    "ReduceMin": lambda x, ax, kd: np.minimum.reduce(x, axis=ax, keepdims=kd),
    "ReduceMax": lambda x, ax, kd: np.maximum.reduce(x, axis=ax, keepdims=kd),
}


def _reduce_kernel(op: str):
    axes_input_since = 13 if op == "ReduceSum" else 18
    fn = _INT_REDUCE[op]
    extreme = op in ("ReduceMin", "ReduceMax")

    def fold(attrs, inputs, version):
        x = inputs[0]
        keepdims = bool(attrs.get("keepdims", 1))
        axes = reduce_axes(attrs, inputs, version, axes_input_since, x.ndim)
        if axes is None:  # a reduction over no axis: each element alone
            if op in ("ReduceSumSquare", "ReduceL1"):
                raise NotFoldable(f"{op} over no axis still squares or takes |x|: not folded")
            return [np.array(x)]
        if x.ndim == 0:
            axes = None
        empty = x.size == 0 or any(x.shape[a] == 0 for a in (axes or ()))
        if x.dtype == BOOL and extreme:
            if empty:
                raise NotFoldable(f"{op} over an empty set is not folded")
            red = np.logical_and.reduce if op == "ReduceMin" else np.logical_or.reduce
            return [np.asarray(red(x, axis=axes, keepdims=keepdims))]
        if is_int(x.dtype):
            if empty and extreme:
                raise NotFoldable(f"{op} over an empty set is not folded")
            if not extreme:
                _check_double_accumulation(op, x, axes)
            with np.errstate(all="ignore"):
                return [_as_dtype(fn(x, axes, keepdims), x.dtype)]
        if is_ieee_float(x.dtype) and extreme:
            if empty:
                raise NotFoldable(f"{op} over an empty set is not folded")
            if np.any(isnan(x)):
                raise Inexact(f"{op} with a NaN: runtimes differ on which NaN (or whether NaN) comes out")
            if np.any(_is_neg_zero(x)) and np.any((x == 0) & ~_is_neg_zero(x)):
                raise Inexact(f"{op} over +0.0 and -0.0: runtimes return either")
            return [np.asarray(fn(x, axes, keepdims)).astype(x.dtype)]
        if is_ieee_float(x.dtype):
            raise Inexact(f"{op} on floats is not exactly defined across runtimes (summation order)")
        raise NotFoldable(f"{op} on {name(x.dtype)} is not folded")

    return fold


for _op in _INT_REDUCE:
    kernel(_op)(_reduce_kernel(_op))


def _check_double_accumulation(op: str, x: np.ndarray, axes) -> None:
    """onnxruntime sums and multiplies integers in double: exact only while every partial
    result stays below 2**53 (in any order), and it saturates a result out of range."""
    big = x.astype(object)
    mags = np.abs(big)
    if op == "ReduceProd":
        bound = np.multiply.reduce(np.where(mags == 0, 1, mags), axis=axes)
    elif op == "ReduceSumSquare":
        bound = np.add.reduce(mags * mags, axis=axes)
    else:
        bound = np.add.reduce(mags, axis=axes)
    info = np.iinfo(x.dtype)
    limit = min(TWO_53, int(info.max))
    if np.any(np.asarray(bound) > limit):
        raise NotFoldable(f"integer {op} beyond 2**53 or the type's range: onnxruntime accumulates in double "
                          "and saturates")


def _arg_kernel(op: str):
    def fold(attrs, inputs, version):
        x = inputs[0]
        _check_type(op, x.dtype, NUMERIC)
        axis = int(attrs.get("axis", 0))
        keepdims = bool(attrs.get("keepdims", 1))
        last = bool(attrs.get("select_last_index", 0)) if version >= 12 else False
        if not -x.ndim <= axis < max(x.ndim, 1) or x.ndim == 0:
            raise FoldError(f"axis {axis} is out of range for rank {x.ndim}")
        axis = axis + x.ndim if axis < 0 else axis
        if x.shape[axis] == 0:
            raise FoldError(f"{op} over an empty axis")
        if is_numeric_float(x.dtype):
            if np.any(isnan(x)):
                raise Inexact(f"{op} with a NaN: runtimes differ on where NaN ranks")
            x = x.astype(work_dtype(x.dtype))
        fn = np.argmax if op == "ArgMax" else np.argmin
        if last:
            n = x.shape[axis]
            idx = n - 1 - fn(np.flip(x, axis=axis), axis=axis)
        else:
            idx = fn(x, axis=axis)
        idx = np.asarray(idx, dtype=np.int64)
        return [np.expand_dims(idx, axis) if keepdims else idx]

    return fold


kernel("ArgMax")(_arg_kernel("ArgMax"))
kernel("ArgMin")(_arg_kernel("ArgMin"))


@kernel("CumSum")
def cumsum(attrs, inputs, version):
    x = inputs[0]
    if is_ieee_float(x.dtype):
        raise Inexact("CumSum on floats is not exactly defined across runtimes (summation order)")
    _check_type("CumSum", x.dtype, INTS)
    axis = _scalar(inputs[1], "CumSum's axis")
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise FoldError(f"axis {axis} is out of range for rank {x.ndim}")
    axis = axis + x.ndim if axis < 0 else axis
    work = np.flip(x, axis) if attrs.get("reverse", 0) else x
    with np.errstate(all="ignore"):
        out = np.cumsum(work, axis=axis, dtype=x.dtype)
        if attrs.get("exclusive", 0):
            out = out - work
    if attrs.get("reverse", 0):
        out = np.flip(out, axis)
    return [np.ascontiguousarray(out).reshape(out.shape).astype(x.dtype, copy=False)]


@kernel("MatMul")
def matmul(attrs, inputs, version):
    a, b = inputs[0], inputs[1]
    _same_type("MatMul", (a, b))
    if is_ieee_float(a.dtype):
        raise Inexact("MatMul on floats is not exactly defined across runtimes (summation order)")
    _check_type("MatMul", a.dtype, INTS)
    if a.ndim == 0 or b.ndim == 0:
        raise FoldError("MatMul of a scalar")
    try:
        with np.errstate(all="ignore"):
            return [_as_dtype(np.matmul(a, b), a.dtype)]
    except ValueError as e:
        raise FoldError(f"shapes {list(a.shape)} and {list(b.shape)} do not multiply: {e}") from None


@kernel("Range")
def range_(attrs, inputs, version):
    start, limit, delta = inputs[0], inputs[1], inputs[2]
    _same_type("Range", (start, limit, delta))
    if is_ieee_float(start.dtype):
        raise Inexact("Range on floats is not exactly defined across runtimes (rounding of start + i*delta)")
    _check_type("Range", start.dtype, INTS)
    s, lim, d = (_scalar(v, "a Range input") for v in (start, limit, delta))
    if d == 0:
        raise FoldError("Range's delta is 0")
    if abs(lim - s) >= TWO_53:
        raise NotFoldable("Range over 2**53 or more: onnxruntime counts the elements in double")
    n = max(-((s - lim) // d), 0)  # ceil((lim - s) / d)
    return [np.array([s + i * d for i in range(n)], dtype=object).astype(start.dtype)]
