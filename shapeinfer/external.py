"""External data: never loaded, except the few bytes of a small int tensor a shape may need.

Weights stored as external data stay where they are: inference reads a tensor's bytes only when
it is a small integer tensor (shape values), and only from a file inside the model's folder,
within the file's size. Writing a model elsewhere rewrites the *locations* (relative paths), not
the weights.
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np
from onnx import TensorProto, helper

from .infer.facts import INT_TYPES, MAX_VALUE_ELEMENTS


def external_info(tensor: TensorProto) -> dict:
    return {e.key: e.value for e in tensor.external_data}


def resolve_location(base_dir: str, location: str) -> Optional[str]:
    """The real path of an external file if it lies inside base_dir, else None."""
    if not location or os.path.isabs(location) or location.startswith(("/", "\\")):
        return None
    base = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, path]) != base:
        return None
    return path


def read_small_int_tensor(tensor: TensorProto, base_dir: Optional[str]) -> Optional[np.ndarray]:
    """The values of a small external integer tensor, or None (not small, not int, unsafe)."""
    if base_dir is None or tensor.data_type not in INT_TYPES:
        return None
    n = 1
    for d in tensor.dims:
        n *= d
    if n > MAX_VALUE_ELEMENTS:
        return None
    info = external_info(tensor)
    path = resolve_location(base_dir, info.get("location", ""))
    if path is None or not os.path.isfile(path):
        return None
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
    try:
        offset = int(info.get("offset", 0))
        length = int(info.get("length", n * dtype.itemsize))
    except ValueError:
        return None
    if length != n * dtype.itemsize or offset < 0 or offset + length > os.path.getsize(path):
        return None
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(length)
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("=")).reshape(tuple(tensor.dims))


def _external_tensors(model):
    def in_graph(g):
        for t in g.initializer:
            yield t
        for n in g.node:
            for a in n.attribute:
                if a.type == a.TENSOR:
                    yield a.t
                if a.type == a.GRAPH:
                    yield from in_graph(a.g)
                for sub in a.graphs:
                    yield from in_graph(sub)

    for t in in_graph(model.graph):
        if t.data_location == TensorProto.EXTERNAL:
            yield t


def relocate_external_data(model, from_dir: str, to_dir: str) -> None:
    """Point external data locations, written relative to from_dir, at the same files from to_dir."""
    src, dst = os.path.realpath(from_dir), os.path.realpath(to_dir)
    if src == dst:
        return
    for t in _external_tensors(model):
        for e in t.external_data:
            if e.key == "location" and not os.path.isabs(e.value):
                e.value = os.path.relpath(os.path.join(src, e.value), dst)
