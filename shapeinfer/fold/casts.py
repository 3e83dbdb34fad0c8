"""Cast and CastLike, folded only where the spec fixes every bit of the result.

- **int -> int** (int4/uint4 and bool included) wraps: the high bits are discarded, the rest
  read in two's complement (spec: ``200`` as int8 is ``-56``). int -> bool is ``!= 0``.
- **float -> int** truncates toward zero (C, NumPy, onnx.reference and onnxruntime agree); a
  NaN, an infinity or a value whose truncation is out of the target's range is undefined by
  the spec: not folded. To int4/uint4 only integral values: onnxruntime rounds there (1.5 -> 2).
- **int -> float32/float64** rounds once to nearest even (C, NumPy and onnxruntime agree);
  int -> float16 as well (values beyond float32's 2**24 are infinite in float16 whichever way).
  Any cast to float16 is folded only when every value is exact in float16: onnxruntime's CPU
  provider drops Cast pairs around the float16 ops it runs in float32, the rounding with them.
  int -> bfloat16/float8 only when every value is exact in float32: onnxruntime converts
  through float32, rounding twice, where the spec rounds once.
- **float -> float**: widening is exact. float64 -> float16/bfloat16/float8 only when each
  value is exact in float32 (onnxruntime rounds to float32 first: 1+2**-11+2**-40 becomes
  float16 1.0 there, 1.001 by the spec). A NaN cast to float16 from another float type is
  not folded (onnxruntime gives 0x7E00, NumPy keeps the payload; the spec does not say).
- **float -> float8** follows the spec's tables: with ``saturate=1`` (the default) infinities
  and values that round beyond the largest finite value become +/-FLT_MAX (ml_dtypes alone
  ignores ``saturate`` and gives NaN); with ``saturate=0`` float8e4m3fn/e5m2 are folded only
  in range (onnxruntime departs from the table just above FLT_MAX: 480 gives 448, not NaN;
  63603 gives NaN, not Inf in e5m2). A NaN cast to float8e5m2 is not folded (the spec fixes no
  payload: onnxruntime gives 0x7F, ml_dtypes keeps the top bits), nor a bfloat16 NaN to any
  float8 (onnxruntime drops its sign).
- **float4e2m1**: from it, exact; to it only values it holds exactly (the spec text has no
  rounding table for it).
- **strings**: int -> string is the decimal text; string -> int reads ``-?[0-9]+`` in range.
  Floats and bools as text, and text as floats, are not folded (the spec does not fix the
  format).
- **to bool**: ``x != 0`` (NaN is true); float8 -0.0 is not folded (onnxruntime gives true, the
  spec false).
- float8e8m0, int2/uint2, float6 and complex types are not folded.
"""

from __future__ import annotations

import re

import numpy as np
from onnx import TensorProto, helper

from ..modelio.tensors import np_dtype
from ..semantics import INT_RANGES
from .dtypes import BF16, BOOL, F16, F32, F64, FLOAT4, FLOAT8, IEEE_FLOATS, INT4, INTS, UINT4, name
from .kernels import Inexact, NotFoldable, kernel

OBJECT = np.dtype(object)
INT_LIKE = INTS + (INT4, UINT4, BOOL)
FLOATS = IEEE_FLOATS + tuple(FLOAT8) + (FLOAT4,)
SUPPORTED = INT_LIKE + FLOATS + (OBJECT,)
DECIMAL = re.compile(rb"-?[0-9]+\Z")
FLOAT8_E5M2 = next(dt for dt, spec in FLOAT8.items() if spec[0] == TensorProto.FLOAT8E5M2)


def _range(dt) -> tuple:
    if dt == INT4:
        return -8, 7
    if dt == UINT4:
        return 0, 15
    if dt == BOOL:
        return 0, 1
    return INT_RANGES[helper.np_dtype_to_tensor_dtype(dt)]


def target_dtype(to: int):
    dt = np_dtype(to)
    if dt is None:
        raise NotFoldable(f"Cast to {TensorProto.DataType.Name(to) if to in TensorProto.DataType.values() else to} "
                          "is not folded") from None
    return dt


@kernel("Cast")
def cast(attrs, inputs, version):
    to = attrs.get("to")
    if not isinstance(to, (int, np.integer)):
        raise NotFoldable("Cast with a type name (opset 1) is not folded")
    saturate = bool(attrs.get("saturate", 1)) if version >= 19 else True
    return [cast_array(inputs[0], target_dtype(int(to)), saturate)]


@kernel("CastLike")
def cast_like(attrs, inputs, version):
    saturate = bool(attrs.get("saturate", 1)) if version >= 19 else True
    return [cast_array(inputs[0], inputs[1].dtype, saturate)]


def cast_array(x: np.ndarray, dst, saturate: bool = True) -> np.ndarray:
    """x cast to dst exactly as the spec says, or raises (see the module docstring)."""
    src = x.dtype
    if src not in SUPPORTED or dst not in SUPPORTED:
        raise NotFoldable(f"Cast from {name(src)} to {name(dst)} is not folded")
    if src == dst:
        return np.array(x, copy=True)
    if dst == OBJECT:
        return _to_string(x)
    if src == OBJECT:
        return _from_string(x, dst)
    if dst == BOOL:
        if src in FLOATS:
            wide = x.astype(F64)
            if src in FLOAT8 and np.any((wide == 0) & np.signbit(wide)):
                raise NotFoldable("Cast of float8 -0.0 to bool: onnxruntime gives true, the spec false")
            return wide != 0  # NaN is true
        return x.astype(np.int64 if src != np.uint64 else src) != 0
    if src in INT_LIKE:
        out = _from_int(x, dst, saturate)
    elif dst in INT_LIKE:
        return _float_to_int(x, dst)
    else:
        out = _float_to_float(x, dst, saturate)
    if dst == F16:
        _exact_in_float16(x, out)
    return out


def _exact_in_float16(x: np.ndarray, out: np.ndarray) -> None:
    """Raises unless every value kept its value in float16 (NaN aside: refused before).
    onnxruntime's CPU provider runs float16 Mul, Add, ... in float32 between inserted Casts and
    then drops Cast pairs, the rounding to float16 with them (``Cast(4097 -> float16) * 1.5``
    gives 6145.5 where the spec gives 6144); a folded constant keeps the rounding, so folding an
    inexact Cast to float16 would change what onnxruntime computes."""
    source = x.astype(np.int8) if x.dtype in (INT4, UINT4, BOOL) else x
    if source.dtype == np.uint64 or source.dtype == np.int64:
        kept = out.astype(F64).astype(object) == source.astype(object)
    else:
        with np.errstate(invalid="ignore"):
            kept = (out.astype(F64) == source.astype(F64)) | np.isnan(source.astype(F64))
    if not np.all(kept):
        raise Inexact("Cast to float16 of a value float16 does not hold: onnxruntime's CPU provider "
                      "drops the rounding when the next op runs in float32 between Casts")


# ---------------------------------------------------------------- strings


def _to_string(x):
    if x.dtype not in INTS + (INT4, UINT4):
        raise NotFoldable(f"Cast of {name(x.dtype)} to string is not folded (the spec does not fix the text)")
    values = x.astype(np.int64) if x.dtype in (INT4, UINT4) else x
    flat = [str(int(v)).encode() for v in values.reshape(-1)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(x.shape)


def _from_string(x, dst):
    if dst not in INTS + (INT4, UINT4):
        raise NotFoldable(f"Cast of string to {name(dst)} is not folded (only decimal integers are)")
    lo, hi = _range(dst)
    values = []
    for v in x.reshape(-1):
        text = v if isinstance(v, bytes) else str(v).encode()
        if not DECIMAL.match(text):
            raise NotFoldable(f"Cast of string {text[:20]!r} to an integer is not folded (not a plain decimal)")
        n = int(text)
        if not lo <= n <= hi:
            raise NotFoldable(f"Cast of string {text[:20]!r} to {name(dst)} is out of range")
        values.append(n)
    return _ints_to(np.array(values, dtype=object).reshape(x.shape), dst)


# ---------------------------------------------------------------- from integers


def _ints_to(values: np.ndarray, dst) -> np.ndarray:
    """Python ints (an object array) wrapped to the integer type dst."""
    lo, hi = _range(dst)
    span = hi - lo + 1
    wrapped = [(int(v) - lo) % span + lo for v in values.reshape(-1)]
    if dst in (INT4, UINT4):
        return np.array(wrapped, dtype=np.int8).astype(dst).reshape(values.shape)
    return np.array(wrapped, dtype=dst).reshape(values.shape)


def _from_int(x, dst, saturate: bool):
    values = x.astype(np.int8) if x.dtype in (INT4, UINT4, BOOL) else x
    if dst in INT_LIKE:
        if dst in INTS and values.dtype in INTS:
            return values.astype(dst)  # C conversion: modulo 2**bits, two's complement
        return _ints_to(values.astype(object), dst)
    if dst in (F32, F64, F16):
        return values.astype(dst)
    as_f32 = values.astype(F32)
    if values.dtype == np.uint64:
        exact = as_f32.astype(object) == values.astype(object)
    else:
        exact = as_f32.astype(F64) == values.astype(F64)
    if not np.all(exact):
        raise Inexact(f"Cast of an integer not exact in float32 to {name(dst)}: onnxruntime rounds twice "
                      "(through float32), the spec once")
    return _float_to_float(as_f32, dst, saturate)


# ---------------------------------------------------------------- from floats


def _float_to_int(x, dst):
    f = x.astype(F64)  # exact for every float type
    if not np.all(np.isfinite(f)):
        raise NotFoldable(f"Cast of NaN or infinity to {name(dst)} is undefined")
    t = np.trunc(f)
    lo, hi = _range(dst)
    # lo and hi + 1 are powers of two (or 0): exact in float64
    if np.any(t < float(lo)) or np.any(t >= float(hi + 1)):
        bad = float(f[(t < float(lo)) | (t >= float(hi + 1))].reshape(-1)[0])
        raise NotFoldable(f"Cast of {bad!r} to {name(dst)} is out of range: undefined by the spec")
    if dst in (INT4, UINT4):
        if np.any(t != f):
            raise NotFoldable(f"Cast of a fraction to {name(dst)}: onnxruntime rounds (half away from zero) "
                              "where it truncates for the other integer types")
        return t.astype(np.int8).astype(dst)
    return t.astype(dst)


def _float_to_float(x, dst, saturate: bool):
    src = x.dtype
    if src == F64:
        with np.errstate(all="ignore"):
            as_f32 = x.astype(F32)
        if dst == F32:
            return as_f32
        exact = ~np.isfinite(x) | ~np.isfinite(as_f32) | (as_f32.astype(F64) == x)
        if not np.all(exact):
            raise Inexact(f"Cast of float64 to {name(dst)}: onnxruntime rounds twice (through float32), "
                          "the spec once")
        x, src = as_f32, F32
    if dst in (F32, F64):
        return x.astype(dst)  # widening: exact
    wide = x.astype(F32)  # exact for every source left
    if dst == F16:
        if src in (F32, BF16) and np.any(np.isnan(wide)):
            raise Inexact("Cast of NaN to float16: the spec fixes no payload (onnxruntime gives 0x7E00, "
                          "NumPy keeps the payload)")
        with np.errstate(all="ignore"):
            return wide.astype(F16)
    if dst == BF16:
        return wide.astype(BF16)
    if dst in FLOAT8:
        if src == BF16 and np.any(np.isnan(wide)):
            raise Inexact("Cast of a bfloat16 NaN to float8: onnxruntime drops its sign (the spec keeps it)")
        return _to_float8(wide, dst, saturate)
    if dst == FLOAT4:
        out = wide.astype(FLOAT4)
        if not np.all(out.astype(F32) == wide):
            raise NotFoldable("Cast to float4e2m1 of a value it does not hold exactly is not folded "
                              "(the spec gives no rounding table for it)")
        if np.any((wide == 0) & np.signbit(wide) != np.signbit(out.astype(F32))):
            raise NotFoldable("Cast of -0.0 to float4e2m1 is not folded")
        return out
    raise NotFoldable(f"Cast from {name(src)} to {name(dst)} is not folded")


def _to_float8(w: np.ndarray, dst, saturate: bool):
    """float32 values (exact) to a float8 kind by the spec's tables."""
    _, fmax, _has_inf, fnuz = FLOAT8[dst]
    if dst == FLOAT8_E5M2 and np.any(np.isnan(w)):
        raise Inexact("Cast of NaN to float8e5m2: the spec fixes no payload (onnxruntime gives 0x7F)")
    with np.errstate(all="ignore"):
        rounded = w.astype(dst)  # ml_dtypes: round to nearest even, but ignores saturate
        over = np.isfinite(w) & ~np.isfinite(rounded.astype(F32))
    if saturate:
        clamp = over | np.isinf(w)
        if np.any(clamp):
            return np.where(clamp, np.copysign(np.float32(fmax), w), w).astype(dst)
        return rounded
    if np.any(over) and not fnuz:
        raise NotFoldable(f"Cast to {name(dst)} with saturate=0 of a value beyond its largest: onnxruntime "
                          "departs from the spec there (FLT_MAX or NaN for the table's NaN or Inf)")
    return rounded

