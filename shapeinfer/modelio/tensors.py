"""Stored tensors: what a TensorProto holds and whether it can be what it says."""

from __future__ import annotations

from typing import Optional

import numpy as np
from onnx import TensorProto, helper

from ..errors import ODD_INPUT_ERRORS

TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
PACKED_4BIT = {getattr(TensorProto, k) for k in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, k)}


def tensor_problem(tensor: TensorProto) -> Optional[str]:
    """Why a stored tensor cannot be what it says (unknown type, negative dim, too few bytes
    or elements for its dims), or None. Cheap: the bytes are measured, never copied."""
    name = TensorProto.DataType.Name
    try:
        name(tensor.data_type)
    except ValueError:
        return f"element type {tensor.data_type} is not an ONNX type"
    if tensor.data_type == TensorProto.UNDEFINED:
        return "element type is undefined"
    n = 1
    for d in tensor.dims:
        if d < 0:
            return f"dims {list(tensor.dims)} hold a negative size"
        n *= d
    if tensor.data_location == TensorProto.EXTERNAL or tensor.HasField("segment"):
        return None  # external: checked against its file by shapeinfer.modelio.external
    if tensor.data_type == TensorProto.STRING:
        have = len(tensor.string_data)
        return None if have == n else f"holds {have} strings, its dims {list(tensor.dims)} need {n}"
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except ODD_INPUT_ERRORS:
        return None
    packed = tensor.data_type in PACKED_4BIT
    need = (n + 1) // 2 if packed else n * itemsize
    if tensor.HasField("raw_data"):
        # ByteSize counts raw_data without copying it: fewer bytes than needed is sure to be short
        if tensor.ByteSize() < need:
            return f"holds fewer than the {need} bytes its dims {list(tensor.dims)} need"
        if need <= 1 << 20 and len(tensor.raw_data) != need:
            return f"holds {len(tensor.raw_data)} bytes, its dims {list(tensor.dims)} need {need}"
        return None
    have = max(len(getattr(tensor, f)) for f in TYPED_FIELDS)
    if tensor.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
        have //= 2
    if packed:
        have *= 2
    if have < n and not (packed and have >= n):
        return f"holds {have} elements, its dims {list(tensor.dims)} need {n}"
    return None
