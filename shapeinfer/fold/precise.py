"""Float math folded under the opt-in ``fold_float_math``, with a stated bound.

By default float math whose last bits differ between runtimes is not folded (``folder.py``).
Under the opt-in, the folded value is the exact result rounded to the output type, to within
one unit in the last place (ulp), for the ops here -- never "whatever one evaluation order
gives":

* sums and means -- ReduceSum, ReduceMean, ReduceL1, ReduceSumSquare, ReduceL2, ReduceLogSum,
  ReduceLogSumExp, Sum, Mean -- add exactly (``math.fsum``: the exact sum, rounded once to
  float64), so cancellation costs nothing; one more float64 operation (a division, a square
  root, a logarithm) and the rounding to the output type follow. For float16, bfloat16 and
  float32 inputs (whose squares are exact in float64) the result is within one ulp of the
  exact value; for float64 inputs within two.
* ReduceLogSumExp handles the extremes as the formula ``log(sum(exp(x)))`` does: all ``-inf``
  gives ``-inf`` (the sum of the exponentials is 0), a ``+inf`` gives ``+inf`` (no ``inf -
  inf``); a NaN gives NaN.
* elementwise transcendental ops on float16, bfloat16 and float32 (Exp, Log, Tanh, Erf, Sigmoid,
  Softmax, ...) are computed by ``onnx.reference`` in float64 and rounded once: within one ulp
  of the exact value wherever the C library's float64 function is within one float64 ulp.

A runtime computing the original model rounds at every step in its own order: its result may
differ from the exact one by its own rounding error -- for a sum with cancellation, by far more
than a relative tolerance -- and ``--verify`` then reports the difference. Reductions over an
empty set are not folded (the spec leaves them open). Every other op the opt-in folds is
computed by ``onnx.reference`` in its input types, with no bound beyond that evaluator's.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from .arith import reduce_axes
from .dtypes import is_ieee_float
from .kernels import NotFoldable

PRECISE: dict = {}  # op -> fn(attrs, inputs, version) -> list of arrays

# Elementwise float ops computed in float64 by onnx.reference and rounded once (the input
# types' precision is at most float32's: float64 holds their exact values and more).
UPCAST = frozenset({
    "Exp", "Log", "Tanh", "Sigmoid", "HardSigmoid", "Erf", "Softplus", "Softsign", "Sin", "Cos", "Tan",
    "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Elu", "Selu", "Celu", "Gelu",
    "LeakyRelu", "ThresholdedRelu", "HardSwish", "Mish", "Softmax", "LogSoftmax", "Pow",
})
NARROW_FLOATS = frozenset({"float16", "bfloat16", "float32"})


def upcast_inputs(op: str, inputs: list) -> Optional[tuple]:
    """(the inputs as float64, their float type) for an op of UPCAST whose float inputs are all
    of one narrow type; None otherwise (computed as they are)."""
    if op not in UPCAST:
        return None
    kinds = {a.dtype for a in inputs if a is not None and is_ieee_float(a.dtype)}
    if len(kinds) != 1 or next(iter(kinds)).name not in NARROW_FLOATS:
        return None
    wide = [a.astype(np.float64) if a is not None and is_ieee_float(a.dtype) else a for a in inputs]
    return wide, next(iter(kinds))


def _exact_sum(values: np.ndarray) -> float:
    """The exact sum of float64 values, rounded once (inf and NaN as IEEE addition gives them)."""
    if np.isnan(values).any():
        return math.nan
    pos, neg = np.isposinf(values).any(), np.isneginf(values).any()
    if pos or neg:
        return math.nan if pos and neg else (math.inf if pos else -math.inf)
    return math.fsum(values.tolist())


def _rows(x: np.ndarray, axes: tuple) -> tuple:
    """x with the reduced axes moved last and flattened: (2-D array, the kept axes' shape)."""
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes))
    kept_shape = tuple(x.shape[a] for a in kept)
    k = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    return moved.reshape((int(np.prod(kept_shape, dtype=np.int64)), k)), kept_shape


def _reduction(op: str, per_row: Callable[[np.ndarray], float], axes_input_since: int = 18):
    def fold(attrs, inputs, version):
        x = inputs[0]
        if not is_ieee_float(x.dtype):
            return None
        axes = reduce_axes(attrs, inputs, version, axes_input_since, x.ndim)
        if axes is None:
            return None  # over no axis: each element alone (what the exact kernels decide)
        if x.ndim == 0:
            axes = ()
        if any(x.shape[a] == 0 for a in axes) or (x.ndim == 0 and x.size == 0):
            raise NotFoldable(f"{op} over an empty set is not folded (the spec leaves it open)")
        rows, kept_shape = _rows(x.astype(np.float64), axes)
        out = np.array([per_row(r) for r in rows], dtype=np.float64).reshape(kept_shape)
        if bool(attrs.get("keepdims", 1)):
            out = out.reshape(tuple(1 if a in axes else d for a, d in enumerate(x.shape)))
        return [out.astype(x.dtype)]

    return fold


def _mean(r: np.ndarray) -> float:
    return _exact_sum(r) / r.size


def _sum_squares(r: np.ndarray) -> float:
    return _exact_sum(r * r)  # (a float32's square is exact in float64)


def _l2(r: np.ndarray) -> float:
    return math.sqrt(_sum_squares(r))


def _log_sum(r: np.ndarray) -> float:
    s = _exact_sum(r)
    if math.isnan(s) or s < 0:
        return math.nan
    return -math.inf if s == 0 else math.log(s)


def _log_sum_exp(r: np.ndarray) -> float:
    """log(sum(exp(r))) without overflow: m + log(sum(exp(r - m))) for the largest finite m;
    all -inf gives -inf, a +inf gives +inf."""
    if np.isnan(r).any():
        return math.nan
    if np.isposinf(r).any():
        return math.inf
    finite = r[np.isfinite(r)]
    if finite.size == 0:
        return -math.inf  # every term is exp(-inf) = 0
    m = float(finite.max())
    return m + math.log(math.fsum(np.exp(finite - m).tolist()))


PRECISE["ReduceSum"] = _reduction("ReduceSum", _exact_sum, axes_input_since=13)
PRECISE["ReduceMean"] = _reduction("ReduceMean", _mean)
PRECISE["ReduceL1"] = _reduction("ReduceL1", lambda r: _exact_sum(np.abs(r)))
PRECISE["ReduceSumSquare"] = _reduction("ReduceSumSquare", _sum_squares)
PRECISE["ReduceL2"] = _reduction("ReduceL2", _l2)
PRECISE["ReduceLogSum"] = _reduction("ReduceLogSum", _log_sum)
PRECISE["ReduceLogSumExp"] = _reduction("ReduceLogSumExp", _log_sum_exp)


def _variadic(per: Callable[[np.ndarray], float]):
    """Sum or Mean of broadcast inputs, element by element."""
    def fold(attrs, inputs, version):
        arrays = [a for a in inputs if a is not None]
        if not arrays or version < 8 or any(not is_ieee_float(a.dtype) for a in arrays) \
                or len({a.dtype for a in arrays}) != 1:
            return None  # (no broadcasting before opset 8; mixed types are an error left to others)
        stacked = np.stack(np.broadcast_arrays(*[a.astype(np.float64) for a in arrays]), axis=-1)
        flat = stacked.reshape(-1, len(arrays))
        out = np.array([per(r) for r in flat], dtype=np.float64).reshape(stacked.shape[:-1])
        return [out.astype(arrays[0].dtype)]

    return fold


PRECISE["Sum"] = _variadic(_exact_sum)
PRECISE["Mean"] = _variadic(_mean)
