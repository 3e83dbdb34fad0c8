"""Element types as the folding kernels see them (NumPy and ml_dtypes dtypes).

Arrays come from ``onnx.numpy_helper.to_array``: NumPy's own types for bool, the integers and
float16/32/64, ml_dtypes for bfloat16, the float8 kinds, int4/uint4 and float4e2m1, object
arrays for strings. ml_dtypes kinds are not reliable (float8e5m2 says ``'f'``, the others
``'V'``), so every test here compares dtypes themselves.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

BOOL = np.dtype(np.bool_)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)

# float types whose arithmetic is folded (IEEE binary formats with NaN and infinities)
IEEE_FLOATS = (F16, BF16, F32, F64)

SIGNED_INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
UNSIGNED_INTS = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
INTS = SIGNED_INTS + UNSIGNED_INTS

INT4, UINT4 = np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)
FLOAT4 = np.dtype(ml_dtypes.float4_e2m1fn)

# float8 kinds: (ONNX element type, largest finite value, has infinities, 'fnuz': no -0, one NaN)
FLOAT8 = {
    np.dtype(ml_dtypes.float8_e4m3fn): (TensorProto.FLOAT8E4M3FN, 448.0, False, False),
    np.dtype(ml_dtypes.float8_e4m3fnuz): (TensorProto.FLOAT8E4M3FNUZ, 240.0, False, True),
    np.dtype(ml_dtypes.float8_e5m2): (TensorProto.FLOAT8E5M2, 57344.0, True, False),
    np.dtype(ml_dtypes.float8_e5m2fnuz): (TensorProto.FLOAT8E5M2FNUZ, 57344.0, False, True),
}

_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def is_ieee_float(dt) -> bool:
    return dt in IEEE_FLOATS


def is_int(dt) -> bool:
    return dt in INTS


def is_signed(dt) -> bool:
    return dt in SIGNED_INTS


def is_small_float(dt) -> bool:
    """float8 kinds and float4e2m1: values exact in float32, no arithmetic folded."""
    return dt in FLOAT8 or dt == FLOAT4


def is_numeric_float(dt) -> bool:
    return is_ieee_float(dt) or is_small_float(dt)


def work_dtype(dt):
    """The type an IEEE float op is computed in: float32 for float16 and bfloat16 (the result,
    rounded once more to the narrow type, is the correctly rounded one for + - * / sqrt: float32
    carries more than 2p+2 bits of either), else the type itself."""
    return F32 if dt in (F16, BF16) else dt


def bits_view(arr: np.ndarray) -> np.ndarray:
    """arr's elements as unsigned integers of the same width (the raw bits)."""
    return arr.view(_UINT_OF_SIZE[arr.dtype.itemsize])


def sign_mask(dt) -> int:
    return 1 << (8 * dt.itemsize - 1)


def isnan(arr: np.ndarray) -> np.ndarray:
    """NaN test for every float type (float16/bfloat16/float8 through float32: exact)."""
    if arr.dtype in (F32, F64):
        return np.isnan(arr)
    if is_numeric_float(arr.dtype):
        return np.isnan(arr.astype(F32))
    return np.zeros(arr.shape, dtype=bool)


def name(dt) -> str:
    if dt == np.dtype(object):
        return "string"
    return str(dt)
