"""Operator semantics as the ONNX spec text states them, for concrete values.

Inference (shape values), folding (kernels) and the passes all need the same few rules where the
spec differs from Python or NumPy; they live here once:

- **Slice** clamps as the spec says: a negative start/end has the dim added; with a positive
  step both are clamped to ``[0, dim]``; with a negative step the start is clamped to
  ``[0, dim-1]`` and the end to ``[-1, dim-1]`` (Python clamps a negative-step start below
  ``-dim`` to ``-1``, which selects nothing; ONNX selects element 0). At dim 0 the slice is empty.
  onnxruntime departs from the text in one case: an end of exactly INT32_MAX or INT64_MAX with a
  negative step runs down to index 0 there (the text clamps it to ``dim-1``: an empty slice, as
  onnx's own inference says). Where runtimes disagree no answer is right for all of them, so
  :func:`slice_range` gives None (unknown, never folded).
- **Integer casts** wrap: the value is reduced modulo ``2**bits`` and read in two's complement
  for signed types (``200`` as int8 is ``-56``); bool is ``value != 0``.
- **Integer Div** truncates toward zero (C), it does not floor.
- **Cast from float to an integer** truncates toward zero; a NaN, an infinity or a value whose
  truncation is out of the target's range is undefined (runtimes give different integers:
  x86 gives INT_MIN, NumPy warns): :func:`float_to_int` gives None there, never a value.
- **Flag attributes** (``keepdims``, ``ceil_mode``, ``allowzero``, ...) are defined for 0 and 1;
  runtimes read other values differently (onnxruntime's ReduceMax tests ``== 1``, others read
  any non-zero as true): :func:`odd_flag` names such an attribute, and nothing is decided from
  it (the shape unknown, the node not folded).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from onnx import TensorProto

# The range of each integer element type (bool as 0/1).
INT_RANGES = {
    TensorProto.INT8: (-(2**7), 2**7 - 1),
    TensorProto.INT16: (-(2**15), 2**15 - 1),
    TensorProto.INT32: (-(2**31), 2**31 - 1),
    TensorProto.INT64: (-(2**63), 2**63 - 1),
    TensorProto.UINT8: (0, 2**8 - 1),
    TensorProto.UINT16: (0, 2**16 - 1),
    TensorProto.UINT32: (0, 2**32 - 1),
    TensorProto.UINT64: (0, 2**64 - 1),
}


# onnxruntime runs onnx's shape inference when it loads a model. A static dim past this (the
# tensor is empty, or it could not exist) can make it refuse a model that runs: its checked
# products pass int64, and some ops' rules miscount such dims (Split). Values this large stay
# computed (optimizer/passes/graph_ops.py), no bypass makes a node read a tensor with such a dim,
# and written shapes (value_info, graph outputs) leave such a dim unknown.
LOAD_SAFE_DIM = 2**31 - 1


def shape_loads(shape) -> bool:
    """Whether onnxruntime's load-time inference may see ``shape`` (ints and symbols): no static
    dim past LOAD_SAFE_DIM, and the static dims other than 0 multiply to at most INT64_MAX (onnx
    multiplies a Reshape's input dims in order, checked, before it meets a 0). A tensor whose
    shape fails this is empty or could not exist."""
    total = 1
    for d in shape:
        if d.__class__ is int and d:
            if d > LOAD_SAFE_DIM:
                return False
            total *= d
    return total <= 2**63 - 1

# Ends that onnxruntime reads as "to the beginning" when the step is negative.
RUNTIME_SPECIAL_ENDS = frozenset({2**31 - 1, 2**63 - 1})


def slice_runtimes_differ(end, step) -> bool:
    """True where onnxruntime and the spec text give different slices (a dim above 0)."""
    return step < 0 and end in RUNTIME_SPECIAL_ENDS


def slice_range(dim: int, start: int, end: int, step: int) -> Optional[range]:
    """The indices ``Slice`` takes along an axis of size ``dim`` (spec clamping; step != 0), or
    None where runtimes disagree (see the module docstring)."""
    if step == 0:
        raise ValueError("a slice step is 0")
    if dim > 0 and slice_runtimes_differ(end, step):
        return None
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
    else:
        start = min(max(start, 0), dim - 1)  # dim 0: -1, and the range is empty
        end = min(max(end, -1), dim - 1)
    return range(start, end, step)


def as_python_slice(r: range) -> slice:
    """A Python slice selecting exactly the indices of r (a range from :func:`slice_range`)."""
    if len(r) == 0:
        return slice(0, 0, 1)
    if r.step < 0 and r.stop < 0:
        return slice(r.start, None, r.step)  # down to and including index 0
    return slice(r.start, r.stop, r.step)


def wrap_int(value: int, dtype: int) -> int:
    """value as the integer type dtype holds it (modulo 2**bits, two's complement if signed)."""
    if dtype == TensorProto.BOOL:
        return int(value != 0)
    lo, hi = INT_RANGES[dtype]
    if lo <= value <= hi:
        return value
    span = hi - lo + 1
    return (value - lo) % span + lo


def float_to_int(value: float, dtype: int) -> Optional[int]:
    """A float cast to the integer type dtype (bool: ``value != 0``), or None where the spec
    leaves it undefined (NaN, infinity, out of range once truncated)."""
    if dtype == TensorProto.BOOL:
        return int(value != 0)
    if math.isnan(value) or math.isinf(value):
        return None
    t = math.trunc(value)
    lo, hi = INT_RANGES[dtype]
    return t if lo <= t <= hi else None


def trunc_div(a: int, b: int) -> int:
    """Integer division rounding toward zero (b != 0)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# INT attributes the spec defines as a 0/1 flag.
FLAG_ATTRIBUTES = ("keepdims", "ceil_mode", "noop_with_empty_axes", "allowzero", "select_last_index",
                   "count_include_pad", "exclusive", "reverse", "onesided", "inverse", "transA", "transB",
                   "upper", "largest", "sorted", "center", "align_corners", "time_major", "layout",
                   "input_forget", "detect_negative", "detect_positive", "fmod", "periodic")


def is_odd_flag(name: str, value) -> bool:
    """Whether ``name`` is a flag attribute (FLAG_ATTRIBUTES) given an integer other than 0 and 1."""
    return name in FLAG_ATTRIBUTES and isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
        and int(value) not in (0, 1)


def odd_flag(attrs: dict) -> Optional[str]:
    """The name of a flag attribute in ``attrs`` (name -> value) given another value than 0 or
    1, or None."""
    return next((name for name in FLAG_ATTRIBUTES if is_odd_flag(name, attrs.get(name))), None)
