"""Folding is exact: a folded constant holds the bytes onnxruntime computes for the same node.

For every op on the exact list and every element type it allows, seeded generators make
constant inputs full of edges (+/-0, +/-inf, quiet and signalling NaNs, subnormals, INT_MIN,
-1, overflow); each node is folded (``fold_node``) and run alone in onnxruntime (CPU, graph
optimisations off -- onnxruntime would fold it itself otherwise), and the bytes must be
identical. One tolerance, documented: a signalling NaN may come back quieted (NumPy quiets it
where onnxruntime's Round keeps it, onnxruntime's float16->float64 Cast and float16 Tile quiet
it where NumPy keeps it). Where onnxruntime has no kernel for a type the result is checked
against an independent oracle: Python integers for integer ops (uint16 BitShift, int16
Min/Max, uint32 CumSum...), float64 rounded once for bfloat16 arithmetic, and for data
movement onnxruntime's own placement of the elements' numbers (float8, int4, bfloat16,
strings...).

A node the kernels decline must be declined for a reason that holds for those inputs (two NaN
operands in one element, a NaN the op makes, zeros of both signs...), and float-math refusals
must fold under ``fold_float_math``. Where onnxruntime departs from the spec text (or from
itself across types) the case is declined, and the tests below say so:
- float64 -> float16/bfloat16 and int64 -> bfloat16 casts round twice (through float32);
- float -> int4 rounds half away from zero (other integer types truncate);
- float8 casts with saturate=0 give FLT_MAX or NaN just above FLT_MAX where the table says NaN
  or Inf; float8 -0.0 -> bool gives true; a bfloat16 NaN -> float8 loses its sign;
- integer Mod with fmod=1, ReduceSum and ReduceProd are computed in double: wrong beyond 2**53,
  saturated on overflow;
- float16 arithmetic returns every NaN as 0x7E00, and so do its float16 Where, Pad, Trilu,
  DepthToSpace and SpaceToDepth (data movement!);
- Relu keeps -0.0 and NaN where max(0, x) leaves both open.

``SHAPEINFER_FOLD_CASES=20 python -m pytest tests/test_fold_exactness.py`` draws 20 times as
many cases (about a minute).
"""

from __future__ import annotations

import math
import os
import zlib

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

from shapeinfer.fold.kernels import Inexact, NotFoldable
from tests.fold_values import (
    BF16,
    BF16_FORMAT,
    F16,
    F32,
    F64,
    FLOAT_TYPES,
    INT_TYPES,
    float_pool,
    int_pool,
    round_to,
)
from tests.helpers import fold_one

ort = pytest.importorskip("onnxruntime")
from tests.ort_oracle import OrtRefused, array_bytes, run_node  # noqa: E402

QUIET_BIT = {F16: 1 << 9, BF16: 1 << 6, F32: 1 << 22, F64: 1 << 51}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
CASES = int(os.environ.get("SHAPEINFER_FOLD_CASES", "1"))  # more generated cases per test: a longer run
ORT_OPSET = 22  # Round, IsNaN... take bfloat16 from 22; onnxruntime 1.31 runs up to 26


# ---------------------------------------------------------------- the harness


def _rng(*key):
    """A generator seeded from key (stable across runs, unlike hash() of a str); a longer run
    (SHAPEINFER_FOLD_CASES > 1) draws other cases too."""
    return np.random.default_rng([zlib.crc32(repr(key).encode()), CASES])


def fold(op, inputs, attrs=None, opset=ORT_OPSET, n_out=1, fold_float_math=False):
    """(outputs, None) when folded, (None, the NotFoldable) when declined."""
    try:
        out = fold_one(op, inputs, attrs, opset, n_out, fold_float_math)
    except NotFoldable as e:
        return None, e
    assert out is not None, f"{op}: neither folded nor declined with a reason"
    return out, None


def _not_implemented(e: Exception) -> bool:
    text = str(e)
    return "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text


def same_bits(got: np.ndarray, expected, context: str) -> None:
    """got's bytes equal expected (elem, shape, bytes) -- a signalling NaN may be quieted."""
    g_elem, g_shape, g_raw = array_bytes(np.asarray(got))
    elem, shape, raw = expected
    assert (g_elem, g_shape) == (elem, shape), f"{context}: folded {g_elem}{g_shape}, expected {elem}{shape}"
    if g_raw == raw:
        return
    dt = np.asarray(got).dtype
    assert dt in QUIET_BIT, f"{context}: bytes differ"
    a = np.frombuffer(g_raw, UINT[dt.itemsize])
    b = np.frombuffer(raw, UINT[dt.itemsize])
    quiet = UINT[dt.itemsize](QUIET_BIT[dt])
    for i in np.nonzero(a != b)[0]:
        av, bv = a[i:i + 1].view(dt).astype(F64), b[i:i + 1].view(dt).astype(F64)
        assert np.isnan(av[0]) and np.isnan(bv[0]) and (a[i] | quiet) == (b[i] | quiet), (
            f"{context}: element {i} folded {hex(int(a[i]))}, onnxruntime {hex(int(b[i]))}")


def check(op, inputs, attrs=None, opset=ORT_OPSET, n_out=1, oracle=None):
    """Fold and compare with onnxruntime (or the oracle where onnxruntime has no kernel).
    Returns the NotFoldable when the node was declined, else None."""
    got, declined = fold(op, inputs, attrs, opset, n_out)
    if declined is not None:
        return declined
    context = f"{op}{attrs or ''} on {[str(a.dtype) + str(list(a.shape)) for a in inputs if a is not None]}"
    try:
        expected = run_node(op, inputs, attrs, opset, n_out)
    except OrtRefused as e:
        assert _not_implemented(e), f"{context}: folded, but onnxruntime fails on these inputs: {e}"
        assert oracle is not None, f"{context}: onnxruntime has no kernel ({e}) and the test no oracle"
        expected = [array_bytes(np.asarray(o)) for o in oracle(*inputs)]
    assert len(got) == len(expected), context
    for g, e in zip(got, expected):
        same_bits(g, e, context)
    return None


class Tally:
    """Counts folded and declined cases per test; a test whose cases all declined proves nothing."""

    def __init__(self):
        self.folded = 0
        self.declined = []

    def add(self, declined):
        if declined is None:
            self.folded += 1
        else:
            self.declined.append(str(declined))

    def assert_some_folded(self, at_least=1):
        assert self.folded >= at_least, f"only {self.folded} folded; declined: {self.declined[:5]}"

    def reasons_within(self, *allowed):
        for why in self.declined:
            assert any(a in why for a in allowed), why


def _abs_bits(x):
    """x with every sign bit cleared (Abs, exact)."""
    bits = x.view(UINT[x.dtype.itemsize]) & UINT[x.dtype.itemsize]((1 << (8 * x.dtype.itemsize - 1)) - 1)
    return bits.view(x.dtype)


def _wide(a):
    return np.asarray(a).astype(F64)


def _shapes(k):
    """Operand shapes for case k: equal, broadcast row, scalar."""
    return [((12,), (12,)), ((3, 4), (4,)), ((12,), ())][k % 3]


# ---------------------------------------------------------------- oracles


def _quieted(x):
    """A NaN's bits with the quiet bit set, as the same type."""
    dt = np.asarray(x).dtype
    bits = np.asarray(x).reshape(1).view(UINT[dt.itemsize]) | UINT[dt.itemsize](QUIET_BIT[dt])
    return bits.view(dt)[0]


def _bf16_round(v: float):
    """float64 v rounded once to bfloat16 (ml_dtypes goes through float32: twice)."""
    if math.isnan(v) or math.isinf(v) or v == 0:
        return np.array(v, F64).astype(BF16)  # exact
    from fractions import Fraction

    return np.array(round_to(Fraction(v), *BF16_FORMAT), F64).astype(BF16)  # exact now


def bf16_oracle(fn):
    """Elementwise oracle for bfloat16: fn on float64 values, rounded once; a NaN operand's
    payload propagated (quieted)."""

    def oracle(*arrays):
        arrays = np.broadcast_arrays(*arrays)
        out = np.empty(arrays[0].shape, BF16).reshape(-1)
        for i, xs in enumerate(zip(*[a.reshape(-1) for a in arrays])):
            nans = [x for x in xs if math.isnan(float(x))]
            if nans:
                out[i] = _quieted(nans[0])
                continue
            with np.errstate(all="ignore"):
                out[i] = _bf16_round(float(fn(*[np.float64(float(x)) for x in xs])))
        return [out.reshape(arrays[0].shape)]

    return oracle


def int_oracle(fn, dt=None):
    """Elementwise oracle on Python ints, wrapped to the type."""

    def oracle(*arrays):
        arrays = np.broadcast_arrays(*arrays)
        t = np.dtype(dt) if dt is not None else arrays[0].dtype
        info = np.iinfo(t)
        span = int(info.max) - int(info.min) + 1
        vals = [(fn(*[int(x) for x in xs]) - int(info.min)) % span + int(info.min)
                for xs in zip(*[a.reshape(-1) for a in arrays])]
        return [np.array(vals, dtype=object).astype(t).reshape(arrays[0].shape)]

    return oracle


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# ---------------------------------------------------------------- float arithmetic


FLOAT_BINARY = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
                "Div": lambda a, b: a / b}


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("op", list(FLOAT_BINARY) + ["Max", "Min"])
def test_float_binary_ops_fold_to_onnxruntimes_bits(op, dtype):
    rng = _rng(op, str(dtype))
    fn = FLOAT_BINARY.get(op) or (np.maximum if op == "Max" else np.minimum)
    tally = Tally()
    for k in range(12 * CASES):
        sa, sb = _shapes(k)
        nan_a, nan_b = k % 4 in (1, 3), k % 4 in (2, 3)  # which operands may hold NaNs
        a = float_pool(dtype, rng, int(np.prod(sa)), nan=nan_a).reshape(sa)
        b = float_pool(dtype, rng, int(np.prod(sb)), nan=nan_b).reshape(sb)
        if dtype == F16 and k % 3 == 0:
            # float16 folds only where float16 holds the float32 result (most random values'
            # sums do not): small integers over powers of two give such results
            a = (rng.integers(-64, 64, sa) * 2.0 ** rng.integers(-3, 3, sa)).astype(F16)
            b = (rng.choice([-1, 1], sb) * 2.0 ** rng.integers(-2, 3, sb)).astype(F16)
        declined = check(op, [a, b], oracle=bf16_oracle(fn))
        tally.add(declined)
        if declined is not None:
            _assert_float_decline_is_justified(op, [a, b], declined, fn)
    tally.assert_some_folded(4)


def _assert_float_decline_is_justified(op, arrays, declined, fn):
    why = str(declined)
    assert isinstance(declined, Inexact), why
    wide = np.broadcast_arrays(*[_wide(a) for a in arrays])
    nans = sum(np.isnan(w) for w in wide)
    if "two NaNs" in why:
        assert np.any(nans >= 2), why
    elif "float16 NaN" in why or "bfloat16 NaN" in why:
        assert arrays[0].dtype in (F16, BF16) and np.any(nans), why
    elif "makes a NaN" in why:
        with np.errstate(all="ignore"):
            assert np.any(np.isnan(fn(*wide)) & (nans == 0)), why
    elif "+0.0 and -0.0" in why:
        zeros = [(w == 0) & np.signbit(w) for w in wide], [(w == 0) & ~np.signbit(w) for w in wide]
        assert np.any(np.any(zeros[0], axis=0) & np.any(zeros[1], axis=0)), why
    elif "float16 does not hold" in why:  # the float32 result is not a float16 value
        assert arrays[0].dtype == F16, why
        with np.errstate(all="ignore"):
            w32 = np.asarray(fn(*[w.astype(np.float32) for w in wide]), np.float32)
        assert np.any((w32.astype(F16).astype(np.float32) != w32) & ~np.isnan(w32)), why
    else:
        raise AssertionError(f"unexpected reason: {why}")
    out, still = fold(op, arrays, fold_float_math=True)
    assert still is None and out is not None, f"{why}: not folded with fold_float_math"


FLOAT_UNARY = {
    "Neg": np.negative, "Abs": np.abs, "Floor": np.floor, "Ceil": np.ceil, "Round": np.rint,
    "Sqrt": np.sqrt, "Reciprocal": lambda x: 1 / x, "Relu": lambda x: np.maximum(x, 0.0),
    "Sign": np.sign,
}


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("op", list(FLOAT_UNARY) + ["IsNaN", "IsInf"])
def test_float_unary_ops_fold_to_onnxruntimes_bits(op, dtype):
    rng = _rng(op, str(dtype), 1)
    tally = Tally()
    for k in range(8 * CASES):
        x = float_pool(dtype, rng, 16, nan=k % 2 == 1)
        if op == "Sqrt" and k % 4 < 2:  # sqrt of a negative makes a NaN: some cases without
            x = _abs_bits(x)
        if dtype == F16 and op in ("Sqrt", "Reciprocal") and k % 4 == 0:
            # float16 folds only where float16 holds the float32 result: squares and powers of two
            x = ((rng.integers(1, 16, 16) ** 2) * 4.0 ** rng.integers(-2, 2, 16)).astype(F16)
            if op == "Reciprocal":
                x = (2.0 ** rng.integers(-6, 6, 16) * rng.choice([-1, 1], 16)).astype(F16)
        if op in ("IsNaN", "IsInf"):
            oracle = (lambda v: [np.isnan(_wide(v))]) if op == "IsNaN" else (lambda v: [np.isinf(_wide(v))])
        elif op in ("Neg", "Abs"):  # sign-bit operations: the oracle flips/clears the bit
            def oracle(v, op=op):
                bits = v.view(np.uint16) ^ np.uint16(0x8000) if op == "Neg" else v.view(np.uint16) & np.uint16(0x7FFF)
                return [bits.view(BF16)]
        else:
            oracle = bf16_oracle(FLOAT_UNARY[op])
        tally.add(check(op, [x], oracle=oracle))
    tally.assert_some_folded(2)
    tally.reasons_within("makes a NaN", "Relu of NaN", "Relu of -0.0", "Sign of NaN", "float16 NaN",
                         "float16 does not hold")


def test_isinf_detect_attributes():
    x = np.array([np.inf, -np.inf, 1, np.nan], np.float32)
    for pos, neg in ((1, 0), (0, 1), (0, 0)):
        assert check("IsInf", [x], {"detect_positive": pos, "detect_negative": neg}) is None


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_float_comparisons_fold_to_onnxruntimes_bits(op, dtype):
    rng = _rng(op, str(dtype), 2)
    fn = {"Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
          "GreaterOrEqual": np.greater_equal}[op]
    for k in range(6 * CASES):
        sa, sb = _shapes(k)
        a = float_pool(dtype, rng, int(np.prod(sa))).reshape(sa)
        b = float_pool(dtype, rng, int(np.prod(sb))).reshape(sb)
        if k == 0:
            b = a.copy()  # equal values: -0 == +0, NaN != NaN
        assert check(op, [a, b], oracle=lambda x, y: [fn(_wide(x), _wide(y))]) is None


@pytest.mark.parametrize("dtype", [F16, F32, F64], ids=str)
def test_float_mod_fmod1_is_c_fmod(dtype):
    rng = np.random.default_rng(5)
    tally = Tally()
    for k in range(8 * CASES):
        a = float_pool(dtype, rng, 12, nan=k % 4 == 1)
        b = float_pool(dtype, rng, 12, nan=k % 4 == 2)
        tally.add(check("Mod", [a, b], {"fmod": 1}))
    tally.assert_some_folded(2)
    tally.reasons_within("makes a NaN", "Mod of -0.0", "two NaNs", "float16 NaN")
    _, declined = fold("Mod", [np.array([1.5], np.float32), np.array([1.0], np.float32)], {"fmod": 0})
    assert declined is not None and "fmod=0 on floats" in str(declined)


def test_bfloat16_arithmetic_is_rounded_once():
    """bfloat16 through float32 and back is the float64 result rounded once, for + - * / sqrt
    (float32 carries more than 2p+2 bits of bfloat16's p = 8): checked on ties."""
    # 1 + 2**-8 is halfway between bfloat16 1 and 1+2**-7: ties to even (1); with a tiny extra
    # it must round up
    one = np.array([1.0], BF16)
    tiny = np.array([2.0**-8], BF16)
    out, _ = fold("Add", [one, tiny])
    assert out[0].view(np.uint16)[0] == 0x3F80
    rng = np.random.default_rng(11)
    for op, fn in list(FLOAT_BINARY.items()) + [("Sqrt", np.sqrt)]:
        for _ in range(4 * CASES):
            arrays = [float_pool(BF16, rng, 64, nan=False) for _ in range(1 if op == "Sqrt" else 2)]
            got, declined = fold(op, arrays)
            if declined is None:
                want = bf16_oracle(fn)(*arrays)[0]
                assert got[0].view(np.uint16).tolist() == want.view(np.uint16).tolist(), op


# ---------------------------------------------------------------- integers


INT_BINARY = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "Div": _trunc_div, "Max": max, "Min": min,
    "BitwiseAnd": lambda a, b: a & b, "BitwiseOr": lambda a, b: a | b, "BitwiseXor": lambda a, b: a ^ b,
}


@pytest.mark.parametrize("dtype", INT_TYPES, ids=str)
@pytest.mark.parametrize("op", list(INT_BINARY))
def test_integer_binary_ops_wrap_like_onnxruntime(op, dtype):
    rng = _rng(op, str(dtype), 3)
    tally = Tally()
    for k in range(8 * CASES):
        sa, sb = _shapes(k)
        a = int_pool(dtype, rng, int(np.prod(sa))).reshape(sa)
        b = int_pool(dtype, rng, int(np.prod(sb))).reshape(sb)
        if op == "Div" and k % 2:
            b = np.where(b == 0, np.array(3, dtype), b).astype(dtype)  # some cases without a zero divisor
            if np.iinfo(dtype).min < 0:
                b = np.where(b == -1, np.array(-2, dtype), b).astype(dtype)
        tally.add(check(op, [a, b], oracle=int_oracle(INT_BINARY[op])))
    tally.assert_some_folded(3)
    tally.reasons_within("division by zero", "/ -1 overflows")


@pytest.mark.parametrize("dtype", INT_TYPES, ids=str)
@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_follows_the_sign_rules(dtype, fmod):
    """fmod=0: the sign of the divisor (Python %); fmod=1: the sign of the dividend (C %).
    onnxruntime computes fmod=1 in double: beyond 2**53 it is wrong (INT64_MIN+1 fmod 10 is
    -8 there, -7 by the spec), so those are declined."""
    rng = _rng(str(dtype), fmod)
    fn = (lambda a, b: a % b) if fmod == 0 else (lambda a, b: a - b * _trunc_div(a, b))
    tally = Tally()
    for k in range(8 * CASES):
        a = int_pool(dtype, rng, 12)
        b = int_pool(dtype, rng, 12)
        if k % 2:
            b = np.where(b == 0, np.array(5, dtype), b).astype(dtype)
            if k % 4 == 1:  # magnitudes within 2**53 (beyond, onnxruntime's double loses bits)
                a = (a.astype(object) % min(100000, int(np.iinfo(dtype).max))).astype(dtype)
                b = (b.astype(object) % min(1000, int(np.iinfo(dtype).max)) + 1).astype(dtype)
            if np.iinfo(dtype).min < 0:
                b = np.where(b == -1, np.array(7, dtype), b).astype(dtype)
        tally.add(check("Mod", [a, b], {"fmod": fmod}, oracle=int_oracle(fn)))
    tally.assert_some_folded(2)
    tally.reasons_within("modulo by zero", "% -1 overflows", "beyond 2**53")
    if dtype == np.int64 and fmod == 1:
        _, declined = fold("Mod", [np.array([-2**63 + 1], np.int64), np.array([10], np.int64)], {"fmod": 1})
        assert "2**53" in str(declined)


def test_integer_division_truncates_and_declines_what_is_undefined():
    a = np.array([7, -7, 7, -7, -128, 0], np.int8)
    b = np.array([2, 2, -2, -2, 3, -5], np.int8)
    out, _ = fold("Div", [a, b])
    assert out[0].tolist() == [3, -3, -3, 3, -42, 0]  # NumPy's // gives -4, -4, 3 ...
    for a, b, says in ((np.array([5], np.int32), np.array([0], np.int32), "division by zero"),
                       (np.array([-2**31], np.int32), np.array([-1], np.int32), "overflows"),
                       (np.array([-128], np.int8), np.array([-1], np.int8), "overflows")):
        _, declined = fold("Div", [a, b])
        assert says in str(declined) and not isinstance(declined, Inexact)
        _, still = fold("Div", [a, b], fold_float_math=True)
        assert still is not None  # undefined stays unfolded with the opt-in too


@pytest.mark.parametrize("dtype", INT_TYPES, ids=str)
@pytest.mark.parametrize("op", ["Neg", "Abs", "Sign", "Relu", "BitwiseNot"])
def test_integer_unary_ops(op, dtype):
    signed = np.iinfo(dtype).min < 0
    if (op in ("Neg", "Relu") and not signed):
        _, declined = fold(op, [np.array([1], dtype)])
        assert declined is not None  # not in the op's types
        return
    rng = _rng(op, str(dtype))
    fn = {"Neg": lambda a: -a, "Abs": abs, "Sign": lambda a: (a > 0) - (a < 0), "Relu": lambda a: max(a, 0),
          "BitwiseNot": lambda a: ~a}[op]
    for _ in range(4 * CASES):
        assert check(op, [int_pool(dtype, rng, 16)], oracle=int_oracle(fn)) is None


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)], ids=str)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(dtype, direction):
    """Before opset 28 a shift by the width or more is undefined (C++ UB; x86 masks the count):
    declined. From opset 28 the spec defines it (0, or -1 for a negative X shifted right)."""
    rng = _rng(str(dtype), direction)
    bits = 8 * dtype.itemsize
    shift = (lambda a, b: a << b) if direction == "LEFT" else (lambda a, b: a >> b)
    x = int_pool(dtype, rng, 16)
    y = rng.integers(0, bits, 16).astype(dtype)
    assert check("BitShift", [x, y], {"direction": direction}, oracle=int_oracle(shift)) is None
    y[3] = bits
    _, declined = fold("BitShift", [x, y], {"direction": direction})
    assert "undefined before opset 28" in str(declined)
    got, _ = fold("BitShift", [x, y], {"direction": direction}, opset=28)
    assert got[0][3] == 0


def test_bitshift_opset_28_signed_follows_the_text():
    x = np.array([-8, 8, -1, 64, -128], np.int8)
    got, _ = fold("BitShift", [x, np.array([1, 9, 8, 1, -1], np.int8)], {"direction": "RIGHT"}, opset=28)
    assert got[0].tolist() == [-4, 0, -1, 32, -1]
    got, _ = fold("BitShift", [x, np.array([1, 9, 8, 1, 1], np.int8)], {"direction": "LEFT"}, opset=28)
    assert got[0].tolist() == [-16, 0, 0, -128, 0]


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Not"])
def test_boolean_ops(op):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2, (3, 4)).astype(bool)
    b = rng.integers(0, 2, (4,)).astype(bool)
    assert check(op, [a] if op == "Not" else [a, b]) is None


@pytest.mark.parametrize("dtype", INT_TYPES + [np.dtype(bool)], ids=str)
@pytest.mark.parametrize("op", ["Equal", "Less", "GreaterOrEqual"])
def test_integer_and_bool_comparisons(op, dtype):
    rng = np.random.default_rng(8)
    if dtype == bool:
        if op != "Equal":
            return
        a, b = rng.integers(0, 2, 12).astype(bool), rng.integers(0, 2, 12).astype(bool)
    else:
        a, b = int_pool(dtype, rng, 12), int_pool(dtype, rng, 12)
    fn = {"Equal": np.equal, "Less": np.less, "GreaterOrEqual": np.greater_equal}[op]
    assert check(op, [a, b], oracle=lambda x, y: [fn(x.astype(object), y.astype(object)).astype(bool)]) is None


def test_string_equal():
    a = np.array([b"a", b"", b"xy", b"\xff"], dtype=object)
    b = np.array([b"a", b"b", b"xy", b"\xfe"], dtype=object)
    assert check("Equal", [a, b], opset=21) is None


REDUCE = {"ReduceSum": sum, "ReduceProd": math.prod, "ReduceMin": min, "ReduceMax": max,
          "ReduceL1": lambda xs: sum(abs(x) for x in xs), "ReduceSumSquare": lambda xs: sum(x * x for x in xs)}


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64)], ids=str)
@pytest.mark.parametrize("op", list(REDUCE))
def test_integer_reductions(op, dtype):
    """onnxruntime sums and multiplies integers in double and saturates (int32 [2**30]*4 sums
    to 2147483647 there; wrapping gives 0): folded only while every partial result is below
    2**53 and the result in range, where every order and every runtime agree."""
    if dtype.itemsize == 1 and op not in ("ReduceMin", "ReduceMax"):
        _, declined = fold(op, [np.zeros((2, 3), dtype), np.array([1], np.int64)], opset=18)
        assert "does not take" in str(declined)  # not in ReduceSum's types at opset 18
        return
    rng = _rng(op, str(dtype))
    x = int_pool(dtype, rng, 24).reshape(2, 3, 4)
    if op not in ("ReduceMin", "ReduceMax"):
        _, declined = fold(op, [x, np.array([1], np.int64)], opset=18)
        assert declined is None or "2**53" in str(declined)
        x = (x.astype(object) % (3 if op == "ReduceProd" else 50)).astype(dtype)  # every partial result exact
    for axes, keepdims in (([1], 1), ([0, 2], 0), ([-1], 1), ([], 0)):
        inputs = [x, np.array(axes, np.int64)] if axes else [x]

        def oracle(data, *_, axes=axes, keepdims=keepdims):
            ax = tuple(a % 3 for a in axes) if axes else (0, 1, 2)
            info = np.iinfo(data.dtype)
            span = int(info.max) - int(info.min) + 1
            moved = np.moveaxis(data.astype(object), ax, tuple(range(-len(ax), 0)))
            flat = moved.reshape(moved.shape[:moved.ndim - len(ax)] + (-1,))
            vals = np.empty(flat.shape[:-1], dtype=object)
            for idx in np.ndindex(vals.shape):
                vals[idx] = (REDUCE[op](list(flat[idx])) - int(info.min)) % span + int(info.min)
            out = vals.astype(data.dtype)
            if keepdims:
                out = np.expand_dims(out, ax)
            return [out]

        assert check(op, inputs, {"keepdims": keepdims}, opset=18, oracle=oracle) is None


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.int64), F32, F64, F16], ids=str)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_argmax_argmin(op, dtype):
    rng = np.random.default_rng(9)
    for last in (0, 1):
        if dtype.kind == "f":
            x = np.array(rng.integers(-3, 4, (3, 5)), dtype=dtype)  # ties, and -0.0 next to 0.0
            x[0, 0], x[0, 1] = -0.0, 0.0
        else:
            x = int_pool(dtype, rng, 15).reshape(3, 5)
        for axis in (0, 1, -1):
            assert check(op, [x], {"axis": axis, "select_last_index": last, "keepdims": axis % 2}) is None


@pytest.mark.parametrize("dtype", [F16, F32, F64], ids=str)
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_float_min_max_reductions_fold_without_nan_and_mixed_zeros(op, dtype):
    rng = np.random.default_rng(10)
    x = float_pool(dtype, rng, 24, nan=False).reshape(4, 6)
    x = np.where(x == 0, np.array(1, dtype), x).astype(dtype)
    assert check(op, [x, np.array([1], np.int64)], {"keepdims": 0}, opset=18) is None
    x[0, 0] = np.nan
    _, declined = fold(op, [x, np.array([1], np.int64)], {"keepdims": 0}, opset=18)
    assert isinstance(declined, Inexact)


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64)], ids=str)
def test_integer_cumsum_and_matmul_wrap(dtype):
    rng = np.random.default_rng(12)
    x = int_pool(dtype, rng, 12).reshape(3, 4)
    for exclusive in (0, 1):
        for reverse in (0, 1):
            def oracle(data, _axis, exclusive=exclusive, reverse=reverse):
                rows = data.astype(object)[:, ::-1] if reverse else data.astype(object)
                sums = np.cumsum(rows, axis=1) - (rows if exclusive else 0)
                sums = sums[:, ::-1] if reverse else sums
                return int_oracle(lambda v: v, data.dtype)(sums)

            assert check("CumSum", [x, np.array(1, np.int64)], {"exclusive": exclusive, "reverse": reverse},
                         oracle=oracle) is None
    a = int_pool(dtype, rng, 12).reshape(3, 4)
    b = int_pool(dtype, rng, 8).reshape(4, 2)
    assert check("MatMul", [a, b]) is None
    assert check("MatMul", [a[0].copy(), b]) is None  # 1-D promotion


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.int16, np.int32, np.int64)], ids=str)
def test_integer_range(dtype):
    for start, limit, delta in ((0, 10, 3), (10, 4, -2), (5, 5, 1), (-7, 8, 4), (3, -3, 1)):
        ins = [np.array(v, dtype) for v in (start, limit, delta)]
        assert check("Range", ins) is None


def test_clip_integers_and_floats():
    x = np.array([-5, 0, 3, 9, 127, -128], np.int8)
    assert check("Clip", [x, np.array(-2, np.int8), np.array(4, np.int8)], opset=13) is None
    f = np.array([-5.5, 0.5, 3.25, np.inf, -np.inf], np.float32)
    assert check("Clip", [f, np.array(-2, np.float32), None], opset=13) is None
    _, declined = fold("Clip", [np.array([-0.0, 1.0], np.float32), np.array(0, np.float32)], opset=13)
    assert isinstance(declined, Inexact)


# ---------------------------------------------------------------- casts


CAST_TYPES = {
    "bool": np.dtype(bool), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8), "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16), "int32": np.dtype(np.int32), "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64), "uint64": np.dtype(np.uint64), "float16": F16, "bfloat16": BF16, "float": F32,
    "double": F64, "float8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz), "float8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float8e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz), "int4": np.dtype(ml_dtypes.int4),
    "uint4": np.dtype(ml_dtypes.uint4), "string": np.dtype(object),
}
ELEM = {k: (helper.np_dtype_to_tensor_dtype(v) if k != "string" else TensorProto.STRING) for k, v in CAST_TYPES.items()}


def _cast_source(name, rng, in_range_of=None, nan=True):
    dt = CAST_TYPES[name]
    if name == "bool":
        return rng.integers(0, 2, 24).astype(bool)
    if name == "string":
        return np.array([str(v).encode() for v in rng.integers(-100, 100, 24)], dtype=object)
    if name in ("int4", "uint4"):
        lo, hi = (-8, 7) if name == "int4" else (0, 15)
        return rng.integers(lo, hi + 1, 24).astype(np.int8).astype(dt)
    if dt in INT_TYPES:
        return int_pool(dt, rng, 24)
    if dt in FLOAT_TYPES:
        values = float_pool(dt, rng, 24, nan=nan and in_range_of is None)
    else:  # float8: every bit pattern is a value
        values = rng.integers(0, 256, 24).astype(np.uint8).view(dt)
    if in_range_of is not None:  # into the target's range (float -> int is undefined outside)
        special = {"int4": (-8, 7), "uint4": (0, 15), "bool": (0, 1)}
        info = None if in_range_of in special else np.iinfo(CAST_TYPES[in_range_of])
        lo, hi = special.get(in_range_of) or (int(info.min), int(info.max))
        wide = values.astype(F64)
        wide = np.where(np.isfinite(wide), wide, 0.0)
        wide = np.clip(np.trunc(wide) % (hi - lo + 1) + lo + (wide - np.trunc(wide)) * 0.99, lo, hi)
        values = wide.astype(dt) if dt != BF16 else wide.astype(F32).astype(BF16)
    return values


@pytest.mark.parametrize("src", list(CAST_TYPES))
def test_cast_matches_onnxruntime_for_every_pair(src):
    """Every (source, target) pair: folded bytes equal onnxruntime's, or declined for a
    reason the module documents (undefined by the spec, or onnxruntime departs from it)."""
    rng = _rng(src)
    allowed = ("out of range", "NaN or infinity", "rounds twice", "Cast of NaN to float16",
               "Cast of NaN to float8e5m2", "saturate=0", "does not fix the text", "only decimal integers",
               "float4e2m1", "rounds (half away from zero)", "-0.0 to bool",
               "bfloat16 NaN to float8", "float16 does not hold")
    folded = 0
    for dst in CAST_TYPES:
        if dst == src:
            continue
        int_target = dst in ("int4", "uint4", "bool") or CAST_TYPES[dst] in INT_TYPES
        float_source = CAST_TYPES[src] in FLOAT_TYPES or src.startswith("float8")
        for k in range(2 * CASES):
            x = _cast_source(src, rng, in_range_of=dst if (int_target and float_source and k == 0) else None,
                             nan=k % 2 == 1)
            for saturate in ((1, 0) if dst.startswith("float8") else (None,)):
                attrs = {"to": ELEM[dst]} if saturate is None else {"to": ELEM[dst], "saturate": saturate}
                declined = check("Cast", [x], attrs)
                if declined is None:
                    folded += 1
                else:
                    assert any(a in str(declined) for a in allowed), f"{src} -> {dst}: {declined}"
    assert folded >= (5 if src == "string" else 10)


def test_cast_float_to_float8_saturates_as_the_spec_says():
    """3e9 to float8e4m3fn is 448 with saturate=1 (onnxruntime too); ml_dtypes gives NaN."""
    x = np.array([3e9, -3e9, np.inf, 465.0, 448.0, -np.inf], np.float32)
    got, _ = fold("Cast", [x], {"to": TensorProto.FLOAT8E4M3FN})
    assert got[0].astype(np.float32).tolist() == [448, -448, 448, 448, 448, -448]
    assert check("Cast", [x], {"to": TensorProto.FLOAT8E4M3FN}) is None
    # saturate=0: the spec says NaN above FLT_MAX; onnxruntime gives 448 for 465..: declined
    _, declined = fold("Cast", [x], {"to": TensorProto.FLOAT8E4M3FN, "saturate": 0})
    assert "saturate=0" in str(declined)
    got, _ = fold("Cast", [np.array([1e6, np.inf], np.float32)], {"to": TensorProto.FLOAT8E4M3FNUZ, "saturate": 0})
    assert np.isnan(got[0].astype(np.float32)).all()


def test_onnxruntime_rounds_float64_twice_so_those_casts_are_declined():
    """1 + 2**-11 + 2**-40 is above the halfway point between float16 1.0 and 1.0009765625:
    the spec rounds it up; onnxruntime rounds to float32 first (1 + 2**-11, a tie) and then to
    even (1.0)."""
    x = np.array([1 + 2.0**-11 + 2.0**-40], np.float64)
    (elem, shape, raw), = run_node("Cast", [x], {"to": TensorProto.FLOAT16})
    assert np.frombuffer(raw, np.uint16)[0] == 0x3C00  # onnxruntime: 1.0
    _, declined = fold("Cast", [x], {"to": TensorProto.FLOAT16})
    assert "rounds twice" in str(declined) and isinstance(declined, Inexact)
    # exact in float16: folded
    assert check("Cast", [np.array([1 + 2.0**-10, 65504.0, 2.0**-20, -0.0], np.float64)], {"to": TensorProto.FLOAT16}) is None
    # exact in float32 but rounded to float16: one rounding either way, yet onnxruntime may skip
    # it (Cast pairs around float16 ops it runs in float32), so declined as well
    _, declined = fold("Cast", [np.array([1 + 2.0**-11, 65519.0], np.float64)], {"to": TensorProto.FLOAT16})
    assert "float16 does not hold" in str(declined) and isinstance(declined, Inexact)
    _, declined = fold("Cast", [np.array([2**30 + 2**22 + 1], np.int64)], {"to": TensorProto.BFLOAT16})
    assert "rounds twice" in str(declined)


def test_cast_float_to_int_out_of_range_is_never_folded():
    for x, to in ((np.array([3e9], np.float32), TensorProto.INT32), (np.array([-1.0], np.float32), TensorProto.UINT8),
                  (np.array([np.nan], np.float32), TensorProto.INT64), (np.array([9.5], np.float32), TensorProto.INT4),
                  (np.array([2.0**63], np.float64), TensorProto.INT64)):
        for opt_in in (False, True):
            _, declined = fold("Cast", [x], {"to": to}, fold_float_math=opt_in)
            assert declined is not None and not isinstance(declined, Inexact), (x, to)
    # -0.99 truncates to 0: in range of uint8, folded
    assert check("Cast", [np.array([-0.99, 255.9], np.float32)], {"to": TensorProto.UINT8}) is None
    # to int4, onnxruntime rounds half away from zero (1.5 -> 2) where other integers truncate:
    # only integral values fold
    (elem, shape, raw), = run_node("Cast", [np.array([1.5, -2.5], np.float32)], {"to": TensorProto.INT4})
    assert raw == bytes([0xD2])  # 2, -3
    _, declined = fold("Cast", [np.array([1.5, -2.5], np.float32)], {"to": TensorProto.INT4})
    assert "rounds" in str(declined)
    assert check("Cast", [np.array([7.0, -8.0, -0.0, 3.0], np.float32)], {"to": TensorProto.INT4}) is None


def test_cast_int_wraps_and_strings_are_decimal():
    x = np.array([200, -9, 8, 2**40 + 3, -2**63], np.int64)
    for to in (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT4, TensorProto.UINT4, TensorProto.UINT64, TensorProto.STRING):
        assert check("Cast", [x], {"to": to}) is None
    s = np.array([b"12", b"-3", b"0"], dtype=object)
    assert check("Cast", [s], {"to": TensorProto.INT8}) is None
    for text in (b" 4", b"1e3", b"2.5", b"300", b"0x10"):
        _, declined = fold("Cast", [np.array([text], dtype=object)], {"to": TensorProto.INT8})
        assert declined is not None, text


def test_castlike():
    x = np.array([1.5, -2.5, 300.0], np.float32)
    assert check("CastLike", [x, np.array([0], np.float16)], opset=21) is None
    assert check("CastLike", [x, np.array([0], np.int32)], opset=21) is None


# ---------------------------------------------------------------- data movement, every dtype


MOVE_TYPES = {
    "float": F32, "float16": F16, "double": F64, "bfloat16": BF16, "int8": np.dtype(np.int8),
    "int64": np.dtype(np.int64), "uint16": np.dtype(np.uint16), "bool": np.dtype(bool),
    "float8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "float8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "int4": np.dtype(ml_dtypes.int4), "uint4": np.dtype(ml_dtypes.uint4),
    "float4e2m1": np.dtype(ml_dtypes.float4_e2m1fn), "string": np.dtype(object),
}


def _data(name, shape, rng):
    dt = MOVE_TYPES[name]
    n = int(np.prod(shape))
    if name == "string":
        return np.array([f"s{v}".encode() for v in rng.integers(0, 99, n)], dtype=object).reshape(shape)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if name == "int4":
        return rng.integers(-8, 8, n).astype(np.int8).astype(dt).reshape(shape)
    if name == "uint4":
        return rng.integers(0, 16, n).astype(np.uint8).astype(dt).reshape(shape)
    if name == "float4e2m1":  # every 4-bit pattern is a value
        return rng.integers(0, 16, n).astype(np.uint8).view(dt).reshape(shape)
    if dt in FLOAT_TYPES:
        return float_pool(dt, rng, n).reshape(shape)  # NaN payloads and -0.0 must survive
    if dt in INT_TYPES:
        return int_pool(dt, rng, n).reshape(shape)
    return rng.integers(0, 256, n).astype(np.uint8).view(dt).reshape(shape)


DATA_INPUTS = {"Where": (1, 2), "Concat": (0, 1)}


def _ort_data_movement(op, inputs, attrs, opset):
    """onnxruntime's output for a data-movement node. Where onnxruntime has no kernel for the
    element type, it runs the node on the elements' numbers (1, 2, ... as float32, then
    int64; 0 stands for the zero a Pad or Trilu writes) and the elements are put where their
    numbers went: the oracle is onnxruntime's placement, the bits are the elements' own."""
    data = DATA_INPUTS.get(op, (0,))
    try:
        return run_node(op, inputs, attrs, opset)[0]
    except OrtRefused as e:
        assert _not_implemented(e) or "Type Error" in str(e), e
        last = e
    like = inputs[data[0]]
    pool = [v for k in data for v in inputs[k].reshape(-1)]
    zero = b"" if like.dtype == np.dtype(object) else np.zeros((), like.dtype)
    for carrier in (np.float32, np.int64):
        carried, offset = list(inputs), 1
        for k in data:
            n = inputs[k].size
            carried[k] = np.arange(offset, offset + n).astype(carrier).reshape(inputs[k].shape)
            offset += n
        try:
            (elem, shape, raw), = run_node(op, carried, attrs, opset)
        except OrtRefused as e:
            last = e
            continue
        if op in ("Shape", "Size"):
            return elem, shape, raw
        codes = np.frombuffer(raw, carrier).astype(np.int64)
        out = np.empty(len(codes), dtype=like.dtype)
        for i, c in enumerate(codes):
            out[i] = pool[c - 1] if c else zero
        return array_bytes(out.reshape(shape))
    raise AssertionError(f"onnxruntime runs {op} on no carrier: {last}")


MOVES = [
    ("Reshape", lambda d: [d, np.array([3, -1], np.int64)], {}),
    ("Expand", lambda d: [d[:1], np.array([2, 3, 4], np.int64)], {}),
    ("Expand", lambda d: [d[:, :1], np.array([1, 5], np.int64)], {}),  # two-way: [3,1] and [1,5] give [3,5]
    ("Tile", lambda d: [d, np.array([2, 1], np.int64)], {}),
    ("Transpose", lambda d: [d], {"perm": [1, 0]}),
    ("Gather", lambda d: [d, np.array([[-1, 0], [2, -3]], np.int64)], {"axis": 1}),
    ("GatherElements", lambda d: [d, np.array([[0, -1], [2, 1], [-3, 0]], np.int64)], {"axis": 1}),
    ("GatherND", lambda d: [d, np.array([[0, -1], [2, 1]], np.int64)], {}),
    ("Concat", lambda d: [d, d[:1]], {"axis": 0}),
    ("Slice", lambda d: [d, np.array([-1, 3], np.int64), np.array([-10, 0], np.int64), np.array([0, 1], np.int64),
                         np.array([-1, -2], np.int64)], {}),
    ("Squeeze", lambda d: [d[:1], np.array([0], np.int64)], {}),
    ("Unsqueeze", lambda d: [d, np.array([-1, 0], np.int64)], {}),
    ("Flatten", lambda d: [d], {"axis": 0}),
    ("Identity", lambda d: [d], {}),
    ("Where", lambda d: [np.array([True, False, False, True]), d, d[::-1].copy()], {}),
    ("Pad", lambda d: [d, np.array([1, -1, 0, 2], np.int64)], {"mode": "constant"}),
    ("Pad", lambda d: [d, np.array([1, 2, 2, 1], np.int64)], {"mode": "edge"}),
    ("Pad", lambda d: [d, np.array([1, 2, 2, 3], np.int64)], {"mode": "reflect"}),
    ("Pad", lambda d: [d, np.array([2, 4, 1, 3], np.int64)], {"mode": "wrap"}),
    ("Trilu", lambda d: [d, np.array(1, np.int64)], {"upper": 0}),
    ("DepthToSpace", lambda d: [d.reshape(1, 4, 1, 3)], {"blocksize": 2, "mode": "CRD"}),
    ("DepthToSpace", lambda d: [d.reshape(1, 4, 1, 3)], {"blocksize": 2}),
    ("SpaceToDepth", lambda d: [d.reshape(1, 1, 2, 6)], {"blocksize": 2}),
    ("Shape", lambda d: [d], {"start": -1}),
    ("Size", lambda d: [d], {}),
]


@pytest.mark.parametrize("dtype", list(MOVE_TYPES))
@pytest.mark.parametrize("op,make,attrs", MOVES, ids=[f"{m[0]}{'-' + m[2]['mode'] if 'mode' in m[2] else ''}"
                                                      + ("-CRD" if m[2].get("mode") == "CRD" else "") for m in MOVES])
def test_data_movement_keeps_every_bit(op, make, attrs, dtype):
    """The bits go where onnxruntime puts them, for every element type: onnxruntime runs the
    op on the same bits as unsigned integers where it has no kernel for the type."""
    rng = _rng(op, dtype)
    data = _data(dtype, (3, 4), rng)
    if op == "Where":
        data = data.reshape(-1)[:4].copy()
    inputs = make(data)
    got, declined = fold(op, inputs, attrs, opset=ORT_OPSET if op != "Pad" else 19, n_out=1)
    if op == "Trilu" and dtype == "string":
        assert declined is not None
        return
    if op in ("DepthToSpace", "SpaceToDepth", "Trilu", "Where", "Pad", "Tile") and dtype == "float16" \
            and declined is not None:
        # onnxruntime moves float16 NaNs there through float32 and returns 0x7E00: declined
        assert "NaN" in str(declined) and np.isnan(_wide(data)).any()
        return
    assert declined is None, declined
    expected = _ort_data_movement(op, inputs, attrs, ORT_OPSET if op != "Pad" else 19)
    same_bits(got[0], expected, f"{op} on {dtype}")


@pytest.mark.parametrize("dtype", ["float", "bfloat16", "int8", "string", "float8e4m3fn", "int4"])
def test_split_uneven_and_constant_of_shape(dtype):
    rng = np.random.default_rng(13)
    data = _data(dtype, (5, 2), rng)
    got, _ = fold("Split", [data], {"axis": 0, "num_outputs": 3}, opset=18, n_out=3)
    assert [g.shape[0] for g in got] == [2, 2, 1]  # the last chunk is the smaller
    same_bits(np.concatenate(got), array_bytes(data), "Split")
    if dtype in ("float", "int8", "string"):
        expected = run_node("Split", [data], {"axis": 0, "num_outputs": 3}, opset=18, n_out=3)
        for g, e in zip(got, expected):
            same_bits(g, e, "Split")
        expected = run_node("Split", [data, np.array([1, 4], np.int64)], {}, opset=18, n_out=2)
        got, _ = fold("Split", [data, np.array([1, 4], np.int64)], {}, opset=18, n_out=2)
        for g, e in zip(got, expected):
            same_bits(g, e, "Split")
    value = data.reshape(-1)[:1].copy()
    if dtype in ("float", "bfloat16", "int8", "float8e4m3fn", "int4"):
        got, _ = fold("ConstantOfShape", [np.array([2, 3], np.int64)], {"value": value})
        assert got[0].dtype == value.dtype and got[0].shape == (2, 3)
        assert set(array_bytes(got[0].reshape(-1)[:1])[2]) <= set(array_bytes(value)[2]) | {0}
        if dtype in ("float", "int8"):
            same_bits(got[0], run_node("ConstantOfShape", [np.array([2, 3], np.int64)],
                                       {"value": helper.make_tensor("v", helper.np_dtype_to_tensor_dtype(value.dtype),
                                                                    [1], value.tobytes(), raw=True)})[0], "ConstantOfShape")


def test_gather_refuses_out_of_range_indices():
    from shapeinfer.fold.kernels import FoldError

    with pytest.raises(FoldError):
        fold("Gather", [np.arange(4, dtype=np.float32), np.array([4], np.int64)])
    with pytest.raises(FoldError):
        fold("Gather", [np.arange(4, dtype=np.float32), np.array([-5], np.int64)])


def test_concat_and_where_refuse_mixed_types():
    from shapeinfer.fold.kernels import FoldError

    with pytest.raises(FoldError):
        fold("Concat", [np.zeros(2, np.float32), np.zeros(2, np.float16)], {"axis": 0})
    with pytest.raises(FoldError):
        fold("Where", [np.array([True, False]), np.zeros(2, np.float32), np.zeros(2, np.float64)])


def test_nonzero_eyelike_range_fold_exactly():
    x = np.array([[0, -0.0, np.nan], [1e-45, 0, 2]], np.float32)
    assert check("NonZero", [x]) is None
    assert check("EyeLike", [np.zeros((3, 4), np.int32)], {"k": 1, "dtype": TensorProto.FLOAT16},
                 oracle=lambda x: [np.eye(3, 4, 1, dtype=np.float16)]) is None
    assert check("EyeLike", [np.zeros((3, 2), np.float32)], {"k": -1}) is None


# ---------------------------------------------------------------- the opt-in


OFF_LIST = [
    ("Exp", lambda: [np.array([0.5, 1.0, -3.0], np.float32)], {}),
    ("Log", lambda: [np.array([0.5, 2.0], np.float32)], {}),
    ("Tanh", lambda: [np.array([0.5], np.float32)], {}),
    ("Sigmoid", lambda: [np.array([0.5], np.float32)], {}),
    ("Erf", lambda: [np.array([0.5], np.float32)], {}),
    ("Pow", lambda: [np.array([2.0], np.float32), np.array([0.5], np.float32)], {}),
    ("Softmax", lambda: [np.array([[0.5, 1.0]], np.float32)], {}),
    ("ReduceSum", lambda: [np.array([0.1, 0.2, 0.3], np.float32)], {}),
    ("ReduceMean", lambda: [np.array([1, 2], np.int64)], {}),
    ("MatMul", lambda: [np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)], {}),
    ("Gemm", lambda: [np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)], {}),
    ("Range", lambda: [np.array(0, np.float32), np.array(1, np.float32), np.array(0.1, np.float32)], {}),
    ("CumSum", lambda: [np.array([0.1, 0.2], np.float32), np.array(0, np.int64)], {}),
    ("TopK", lambda: [np.array([3, 1, 2], np.int64), np.array([2], np.int64)], {}),
]


@pytest.mark.parametrize("op,make,attrs", OFF_LIST, ids=[m[0] for m in OFF_LIST])
def test_ops_off_the_list_fold_only_with_fold_float_math(op, make, attrs):
    n_out = 2 if op == "TopK" else 1
    _, declined = fold(op, make(), attrs, n_out=n_out)
    assert isinstance(declined, Inexact), declined
    assert str(declined).endswith("(--fold-float-math)")
    got, still = fold(op, make(), attrs, n_out=n_out, fold_float_math=True)
    assert still is None and got is not None


def test_decline_reason_names_the_op_and_the_option():
    _, declined = fold("Exp", [np.array([1.0], np.float32)])
    assert str(declined) == "Exp is not exactly defined across runtimes (--fold-float-math)"


@pytest.mark.parametrize("op", ["RandomNormal", "RandomUniformLike", "Multinomial", "Bernoulli"])
def test_nondeterministic_ops_never_fold(op):
    inputs = [] if op == "RandomNormal" else [np.array([[0.5, 0.5]], np.float32)]
    attrs = {"shape": [2]} if op == "RandomNormal" else {}
    for opt_in in (False, True):
        _, declined = fold(op, inputs, attrs, fold_float_math=opt_in)
        assert declined is not None and "non-deterministic" in str(declined)


def test_optimize_keeps_float_math_by_default_and_says_why():
    import onnx
    from onnx import numpy_helper

    import shapeinfer
    from shapeinfer.optimizer.manager import OptimizeReport

    graph = helper.make_graph(
        [helper.make_node("Exp", ["c"], ["e"], name="exp"), helper.make_node("Add", ["x", "e"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array([0.5, 1.5], np.float32), "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report)
    assert "Exp" in [n.op_type for n in out.graph.node]
    assert ("exp", "Exp", "not folded: Exp is not exactly defined across runtimes (--fold-float-math)") in report.declined
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report, fold_float_math=True)
    assert "Exp" not in [n.op_type for n in out.graph.node]
    assert any("fold-float-math" in a for a in report.assumptions)
    onnx.checker.check_model(out, full_check=True)


def test_inference_values_of_a_cast_out_of_range_do_not_become_constants():
    """Inference knows Mul's value [2e19, 3e19]; its Cast to int64 is undefined (out of range):
    with the fold itself declined (budget 0: the Cast doubles the bytes), the value inference
    computed for the Cast must not become a constant either."""
    from onnx import parser

    import shapeinfer
    from shapeinfer.optimizer.manager import OptimizeReport

    model = parser.parse_model('''<ir_version: 9, opset_import: ["" : 18]>
g (float[2,3] x) => (int64[2] y) <float c = {10000000000000000000.0}> {
  s = Shape(x)
  f = Cast<to=1>(s)
  m = Mul(f, c)
  y = Cast<to=7>(m)
}''')
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report, fold_budget=0)
    assert [n.op_type for n in out.graph.node] == ["Cast"]
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report)
    assert [n.op_type for n in out.graph.node] == ["Cast"]
    assert any("out of range" in why for _, op, why in report.declined if op == "Cast")


def test_optimize_folds_exact_float_math_bit_for_bit():
    """Sqrt(Cast(shape)) -- the attention scale of many exports -- folds, and to onnxruntime's bits."""
    import onnx
    from onnx import numpy_helper

    import shapeinfer

    graph = helper.make_graph(
        [helper.make_node("Cast", ["d"], ["f"], to=TensorProto.FLOAT), helper.make_node("Sqrt", ["f"], ["s"]),
         helper.make_node("Div", ["one", "s"], ["r"]), helper.make_node("Mul", ["x", "r"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array(96, np.int64), "d"), numpy_helper.from_array(np.array(1.0, np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    out = shapeinfer.optimize(model)
    assert [n.op_type for n in out.graph.node] == ["Mul"]
    folded = next(numpy_helper.to_array(t) for t in out.graph.initializer if t.name == "r")
    (elem, shape, raw), = run_node("Div", [np.array(1.0, np.float32), np.array(np.sqrt(np.float32(96)), np.float32)])
    assert folded.tobytes() == raw
    onnx.checker.check_model(out, full_check=True)


# ---------------------------------------------------------------- more forms


def test_legacy_attribute_forms_fold_like_onnxruntime():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases = [
        ("Pad", [x], {"pads": [0, 1, 0, 0, 2, 1], "mode": "constant", "value": 1.5}, 2),
        ("Pad", [x], {"pads": [0, 1, 1, 0, 1, 2], "mode": "edge"}, 2),
        ("Split", [x], {"axis": 2, "split": [1, 3]}, 11),
        ("Split", [x, np.array([2, 2], np.int64)], {"axis": -1}, 13),
        ("Split", [x], {"axis": 2}, 13),
        ("Squeeze", [x[:1]], {"axes": [0]}, 11),
        ("Unsqueeze", [x], {"axes": [0, -1]}, 11),
        ("Slice", [x], {"starts": [1, -2], "ends": [100, -1], "axes": [1, 2]}, 9),
        ("ReduceSum", [np.arange(24, dtype=np.int64).reshape(2, 3, 4)], {"axes": [0, 2], "keepdims": 0}, 11),
        ("ReduceMax", [np.arange(24, dtype=np.int32).reshape(2, 3, 4)], {"axes": [1]}, 13),
        ("Concat", [x, x], {"axis": -1}, 11),
        ("Cast", [np.array([1.7, -1.7, 300.0], np.float32)], {"to": TensorProto.INT32}, 6),
        ("Gather", [x, np.array(-1, np.int64)], {"axis": 1}, 11),
        ("GatherND", [x, np.array([[[1], [0]], [[-1], [2]]], np.int64)], {"batch_dims": 1}, 13),
        ("GatherElements", [x, np.array([[[0, 3]], [[-1, 1]]], np.int64)], {"axis": 2}, 13),
        ("Trilu", [x], {"upper": 1}, 14),
        ("Tile", [x, np.array([1, 2, 1], np.int64)], {}, 13),
    ]
    for op, inputs, attrs, opset in cases:
        n_out = 2 if op == "Split" else 1
        got, declined = fold(op, inputs, attrs, opset=opset, n_out=n_out)
        assert declined is None, (op, opset, declined)
        expected = run_node(op, inputs, attrs, opset, n_out)
        for g, e in zip(got, expected):
            same_bits(g, e, f"{op}-{opset}")


def test_split_num_outputs_that_leaves_nothing_is_declined():
    # 5 into 4: ceil gives chunks of 2, 2, 2 and -1
    _, declined = fold("Split", [np.arange(5, dtype=np.float32)], {"num_outputs": 4}, opset=18, n_out=4)
    assert declined is not None


def test_float_to_int_rule_in_semantics_agrees_with_the_cast_kernel():
    from shapeinfer.semantics import float_to_int

    rng = _rng("float_to_int")
    values = np.concatenate([float_pool(F64, rng, 200), rng.uniform(-3e9, 3e9, 200), [2.0**63, -2.0**63, 2.0**31 - 0.5]])
    for to, dt in ((TensorProto.INT32, np.int32), (TensorProto.UINT8, np.uint8), (TensorProto.INT64, np.int64)):
        for v in values:
            got, declined = fold("Cast", [np.array([v], np.float64)], {"to": to})
            rule = float_to_int(float(v), to)
            assert (declined is None) == (rule is not None), (v, to)
            if rule is not None:
                assert int(got[0][0]) == rule


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(data=st.data(), op=st.sampled_from(["Div", "Mod0", "Mod1", "Mul", "Sub"]),
       dtype=st.sampled_from([np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint32)]))
def test_integer_arithmetic_property(data, dtype, op):
    """Hypothesis picks the integers (it favours the ends of the range): folded Div/Mod/Mul/Sub
    equal onnxruntime's, or are declined for a reason that holds."""
    a = data.draw(hnp.arrays(dtype, st.integers(1, 6)))
    b = data.draw(hnp.arrays(dtype, a.shape))
    attrs = {"fmod": int(op[-1])} if op.startswith("Mod") else None
    onnx_op = op[:3] if op.startswith("Mod") else op
    fn = {"Div": _trunc_div, "Mod0": lambda x, y: x % y, "Mod1": lambda x, y: x - y * _trunc_div(x, y),
          "Mul": lambda x, y: x * y, "Sub": lambda x, y: x - y}[op]
    declined = check(onnx_op, [a, b], attrs, oracle=int_oracle(fn))
    if declined is not None:
        why = str(declined)
        zero = np.any(b == 0)
        overflow = np.iinfo(dtype).min < 0 and np.any((a == np.iinfo(dtype).min) & (b == -1))
        beyond = np.any(np.abs(a.astype(object)) > 2**53) or np.any(np.abs(b.astype(object)) > 2**53)
        assert ("by zero" in why and zero) or ("overflows" in why and overflow) or ("2**53" in why and beyond), why
    else:
        got, _ = fold(onnx_op, [a, b], attrs)
        assert got[0].tolist() == int_oracle(fn)(a, b)[0].tolist()


def test_space_to_depth_28_crd_mode_is_folded_as_crd():
    """SpaceToDepth-28 added ``mode``; its kernel ignored it, and the backend case
    test_spacetodepth_crd_mode_example folded to the DCR order. The kernel now takes the mode."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = next(c for c in collect_testcases(None) if c.name == "test_spacetodepth_crd_mode_example")
    (x,), (want,) = case.data_sets[0]
    assert case.model.opset_import[0].version == 28
    got, declined = fold("SpaceToDepth", [x], {"blocksize": 2, "mode": "CRD"}, opset=28)
    assert declined is None and got[0].shape == want.shape and got[0].tobytes() == want.tobytes()
    dcr, _ = fold("SpaceToDepth", [x], {"blocksize": 2}, opset=28)
    assert dcr[0].tobytes() != want.tobytes()  # (the default DCR order is another one)


def test_a_node_newer_than_its_kernel_is_not_folded(monkeypatch):
    """A kernel folds the op versions it was written for (folder.KERNEL_VERSIONS): an onnx that
    defines a newer version may have changed its meaning, so such a node is left as it is."""
    from shapeinfer.fold import folder

    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert fold("SpaceToDepth", [x], {"blocksize": 2}, opset=28)[0] is not None
    monkeypatch.setitem(folder.KERNEL_VERSIONS, "SpaceToDepth", 13)
    got, declined = fold("SpaceToDepth", [x], {"blocksize": 2}, opset=28)
    assert got is None and "newer than its kernel" in str(declined)
    assert fold("SpaceToDepth", [x], {"blocksize": 2}, opset=13)[0] is not None
    assert folder.exact_value("SpaceToDepth", {"blocksize": 2}, [x], 28) is None  # (inference's values too)
