"""Float math folded under ``fold_float_math`` (shapeinfer/fold/precise.py) is within its stated
bound of the exact result: sums and means (and the norms and logarithms built on them) within
one unit in the last place of the output type for float16/bfloat16/float32 inputs, with the
exact value computed here in rational arithmetic (``fractions.Fraction``), whatever the
cancellation; ReduceLogSumExp's extremes as the formula gives them; transcendental ops within
one ulp of the float64 value.

The inputs are generated families: random values of every magnitude, cancelling pairs
(``x, -x`` around a small remainder), infinities of both signs, NaNs, all ``-inf`` rows, and
values whose float32 squares overflow. onnxruntime is not the oracle here: a runtime rounds at
every step (its float32 sum of ``[1e8, 1, -1e8, 1]`` may be 0 or 2); the exact value is.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from shapeinfer.fold.kernels import NotFoldable
from tests.helpers import fold_one

F16, F32, BF16 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)
CASES = 60  # generated inputs per op and type


def _fold(op, inputs, attrs, opset=18):
    return fold_one(op, inputs, attrs, opset, fold_float_math=True)


def _ulp(value: float, dt) -> float:
    """One unit in the last place of dt at value (its spacing there)."""
    x = np.array(abs(value) if math.isfinite(value) else 0.0, dtype=np.float64).astype(dt)
    up = np.nextafter(x.astype(np.float32), np.float32(np.inf)) if dt != np.float64 else np.nextafter(x, np.inf)
    if dt == F16 or dt == BF16:
        bits = x.view(np.uint16)
        up = (bits + np.uint16(1)).view(dt)
    return float(np.float64(up) - np.float64(x)) or float(np.finfo(np.float32).tiny)


def _within_ulp(got, exact: float, dt, ulps: float = 1.0) -> str:
    g = float(np.asarray(got).astype(np.float64))
    if math.isnan(exact):
        return "" if math.isnan(g) else f"{g} where the exact value is NaN"
    max_finite = float(np.finfo(np.float32).max) if dt == F32 else float(np.finfo(dt).max)
    if math.isinf(exact) or abs(exact) > max_finite * (1 + 2.0 ** -24):
        return "" if math.isinf(g) and (g > 0) == (exact > 0) else f"{g} where the exact value is {exact}"
    if not math.isfinite(g):
        return f"{g} where the exact value is {exact}"
    err = abs(g - exact)
    bound = ulps * max(_ulp(exact, dt), _ulp(g, dt))
    return "" if err <= bound else f"{g} is {err:g} from the exact {exact!r} (bound {bound:g})"


def _exact_sum(values) -> float:
    """The exact sum of finite floats, as a float64 (one rounding of the rational value)."""
    return float(sum((Fraction(float(v)) for v in values), Fraction(0)))


def _special_sum(values):
    vals = [float(v) for v in values]
    if any(math.isnan(v) for v in vals):
        return math.nan
    pos, neg = any(v == math.inf for v in vals), any(v == -math.inf for v in vals)
    if pos and neg:
        return math.nan
    if pos or neg:
        return math.inf if pos else -math.inf
    return None


def _oracle(op: str, row) -> float:
    vals = [float(v) for v in row]
    if op == "ReduceLogSumExp":
        if any(math.isnan(v) for v in vals):
            return math.nan
        if any(v == math.inf for v in vals):
            return math.inf
        finite = [v for v in vals if math.isfinite(v)]
        if not finite:
            return -math.inf
        m = max(finite)
        return m + math.log(float(sum(Fraction(math.exp(v - m)) for v in finite)))
    if op in ("ReduceL1", "ReduceSumSquare", "ReduceL2"):
        vals = [abs(v) for v in vals] if op == "ReduceL1" else [v * v for v in vals]  # (exact for narrow floats)
    special = _special_sum(vals)
    total = special if special is not None else _exact_sum(vals)
    if op == "ReduceMean":
        return total / len(vals) if special is None else total
    if op == "ReduceL2":
        return math.sqrt(total) if not math.isnan(total) else total
    if op == "ReduceLogSum":
        if math.isnan(total) or total < 0:
            return math.nan
        return -math.inf if total == 0 else math.log(total)
    return total


def _family(rng, dt, n) -> np.ndarray:
    """One row of n values of a kind drawn at random."""
    kind = rng.integers(0, 7)
    if kind == 0:  # cancellation: big values and their negatives around a small remainder
        big = rng.choice([1e4, 3e7, 1e8, 6e4 if dt == F16 else 1e30]) * rng.random(n // 2 + 1)
        vals = np.concatenate([big, -big[: n - len(big) - 1], rng.random(1)])[:n]
        rng.shuffle(vals)
    elif kind == 1:
        vals = np.full(n, -np.inf)
    elif kind == 2:  # infinities mixed in
        vals = rng.normal(size=n) * 10
        vals[rng.integers(0, n)] = rng.choice([np.inf, -np.inf])
    elif kind == 3:
        vals = rng.normal(size=n) * 10
        vals[rng.integers(0, n)] = np.nan
    elif kind == 4:  # squares past float32's range
        vals = rng.choice([-1.0, 1.0], size=n) * rng.uniform(1e19, 3e20, size=n)
    elif kind == 5:  # every magnitude
        vals = rng.normal(size=n) * np.exp2(rng.integers(-30, 30, size=n))
    else:
        vals = rng.normal(size=n)
    return vals.astype(dt)


REDUCTIONS = ["ReduceSum", "ReduceMean", "ReduceL1", "ReduceSumSquare", "ReduceL2", "ReduceLogSum",
              "ReduceLogSumExp"]


@pytest.mark.parametrize("dt", [F32, F16, BF16], ids=lambda d: d.name)
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_are_within_one_ulp_of_the_exact_value(op, dt):
    rng = np.random.default_rng(abs(hash((op, dt.name))) % 2**32)
    for case in range(CASES):
        rows, n = int(rng.integers(1, 4)), int(rng.integers(1, 9))
        x = np.stack([_family(rng, dt, n) for _ in range(rows)])
        axes = np.array([1], dtype=np.int64)
        got = _fold(op, [x, axes], {"keepdims": 0}, opset=18)[0]
        assert got.dtype == dt and got.shape == (rows,)
        for r in range(rows):
            exact = _oracle(op, x[r])
            # one rounding to float64 of the exact sum, one float64 operation, one rounding to dt
            why = _within_ulp(got[r], exact, dt, ulps=1.0)
            assert not why, f"{op} {dt.name} of {x[r].tolist()}: {why}"


@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_variadic_sum_and_mean_are_exact_with_broadcasting(op):
    rng = np.random.default_rng(7 if op == "Sum" else 8)
    for case in range(CASES):
        k = int(rng.integers(1, 5))
        arrays = [_family(rng, F32, 3) if i % 2 == 0 else _family(rng, F32, 1) for i in range(k)]
        got = _fold(op, arrays, {}, opset=13)[0]
        assert got.shape == (3,) and got.dtype == F32
        b = np.broadcast_arrays(*arrays)
        for j in range(3):
            column = [a[j] for a in b]
            special = _special_sum(column)
            exact = special if special is not None else _exact_sum(column)
            if op == "Mean" and special is None:
                exact = exact / k
            why = _within_ulp(got[j], exact, F32)
            assert not why, f"{op} of {column}: {why}"


def test_log_sum_exp_extremes():
    neg = np.full((1, 4), -np.inf, dtype=np.float32)
    assert np.isneginf(_fold("ReduceLogSumExp", [neg, np.array([1])], {"keepdims": 0})[0]).all()
    pos = np.array([[np.inf, 1, 2, 3]], dtype=np.float32)
    assert np.isposinf(_fold("ReduceLogSumExp", [pos, np.array([1])], {"keepdims": 0})[0]).all()
    big = np.array([[1000, 1000, 1, 2]], dtype=np.float32)
    assert float(_fold("ReduceLogSumExp", [big, np.array([1])], {"keepdims": 0})[0][0]) == \
        pytest.approx(1000 + math.log(2), rel=1e-7)


def test_empty_reductions_are_not_folded():
    with pytest.raises(NotFoldable):
        _fold("ReduceSum", [np.zeros((2, 0), np.float32), np.array([1])], {"keepdims": 0})


@pytest.mark.parametrize("op", ["Exp", "Log", "Tanh", "Sigmoid", "Erf", "Softplus", "Sin"])
@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
def test_transcendental_ops_are_computed_in_float64_and_rounded_once(op, dt):
    rng = np.random.default_rng(len(op) * 31 + dt.itemsize)
    x = (rng.normal(size=64) * 4).astype(dt)
    if op == "Log":
        x = np.abs(x) + dt.type(0.01)
    got = _fold(op, [x], {}, opset=18)[0]
    assert got.dtype == dt
    fns = {"Exp": np.exp, "Log": np.log, "Tanh": np.tanh, "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
           "Sin": np.sin, "Softplus": lambda v: np.log1p(np.exp(v)), "Erf": None}
    fn = fns[op]
    if fn is None:
        exact = np.array([math.erf(float(v)) for v in x])
    else:
        exact = fn(x.astype(np.float64))
    for g, e, v in zip(got, exact, x):
        why = _within_ulp(g, float(e), dt, ulps=1.0)
        assert not why, f"{op}({float(v)!r}) as {dt.name}: {why}"
