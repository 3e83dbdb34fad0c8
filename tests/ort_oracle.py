"""Run one ONNX node with onnxruntime (CPU, graph optimisations off) and return its outputs'
exact bytes -- for every element type, bfloat16, float8, int4 and float4 included, which
onnxruntime's NumPy bridge cannot return.

``run_node`` feeds NumPy-native arrays as graph inputs and the odd types (ml_dtypes arrays) as
initializers; with ``ORT_DISABLE_ALL`` onnxruntime folds nothing itself, so the node's kernel
computes every output. An output comes back as ``(elem_type, shape, bytes)`` (strings as a list
of bytes). onnxruntime refusing the node (no kernel for that type, a failed check) raises
``OrtRefused``.
"""

from __future__ import annotations

import ctypes

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NATIVE_KINDS = "biuf"  # NumPy dtypes onnxruntime reads directly (float16 included)


class OrtRefused(Exception):
    """onnxruntime could not build or run the node."""


def _elem_type(arr: np.ndarray) -> int:
    if arr.dtype == object:
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(arr.dtype)


def _is_native(arr: np.ndarray) -> bool:
    return arr.dtype != object and arr.dtype.kind in NATIVE_KINDS and arr.dtype.type.__module__ == "numpy"


def node_model(op, inputs, attrs=None, opset=21, n_out=1, feed_native=True):
    """A one-node model computing op on the given arrays; returns (model, feeds)."""
    names = [f"in{k}" for k in range(len(inputs))]
    graph_inputs, inits, feeds = [], [], {}
    for name, arr in zip(names, inputs):
        if arr is None:
            continue
        if arr.dtype != object and _is_native(arr) and feed_native:
            graph_inputs.append(helper.make_tensor_value_info(name, _elem_type(arr), list(arr.shape)))
            feeds[name] = arr
        else:
            inits.append(numpy_helper.from_array(arr, name))
    node = helper.make_node(op, [n if a is not None else "" for n, a in zip(names, inputs)],
                            [f"out{k}" for k in range(n_out)], **(attrs or {}))
    outputs = [helper.make_empty_tensor_value_info(f"out{k}") for k in range(n_out)]
    graph = helper.make_graph([node], "node", graph_inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    types = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in model.graph.output:
        t = types.get(out.name)
        if t is not None and t.tensor_type.elem_type:
            out.type.tensor_type.elem_type = t.tensor_type.elem_type
    return model, feeds


_SESSION_CACHE: dict = {}


def run_node(op, inputs, attrs=None, opset=21, n_out=1):
    """onnxruntime's outputs of op on inputs: a list of (elem_type, shape, raw bytes or list)."""
    import onnxruntime as ort

    model, feeds = node_model(op, inputs, attrs, opset, n_out)
    for out in model.graph.output:
        if not out.type.tensor_type.elem_type:
            raise OrtRefused("onnx inference gives no output type")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        values = sess.run_with_ort_values(None, {k: ort.OrtValue.ortvalue_from_numpy(v) for k, v in feeds.items()})
    except Exception as e:  # noqa: BLE001 - any refusal of onnxruntime's
        raise OrtRefused(str(e).splitlines()[0][:300]) from None
    result = []
    for out, value in zip(model.graph.output, values):
        elem = out.type.tensor_type.elem_type
        shape = tuple(value.shape())
        if elem == TensorProto.STRING:
            result.append((elem, shape, [v if isinstance(v, bytes) else str(v).encode() for v in value.numpy().reshape(-1)]))
            continue
        size = value.tensor_size_in_bytes()
        raw = ctypes.string_at(value.data_ptr(), size) if size else b""
        result.append((elem, shape, raw))
    return result


def array_bytes(arr: np.ndarray):
    """(elem_type, shape, bytes) of a folded array in the layout onnxruntime holds it (int4,
    uint4 and float4e2m1 packed two to a byte, low nibble first; strings as a list of bytes)."""
    elem = _elem_type(arr)
    shape = tuple(arr.shape)
    if elem == TensorProto.STRING:
        return elem, shape, [v if isinstance(v, bytes) else str(v).encode() for v in arr.reshape(-1)]
    if elem in (TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT4E2M1):
        return elem, shape, bytes(numpy_helper.from_array(arr).raw_data)
    return elem, shape, np.ascontiguousarray(arr).tobytes()
