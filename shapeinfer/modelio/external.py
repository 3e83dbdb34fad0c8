"""External data: never loaded, except the few bytes of a small int tensor a shape may need.

Weights stored as external data stay where they are: inference reads a tensor's bytes only when
it is a small integer tensor (shape values), and only from a file inside the model's folder,
within the file's size. Writing a model elsewhere puts its external data beside it (see
shapeinfer.modelio.writer): a location is always relative to the folder of the model that names it.

Every tensor of the model counts, wherever it lives (``tensors.stored_tensors``: initializers,
sparse initializers, tensor attributes of the main graph, of bodies at any depth, of model-local
functions, training_info): each is vetted before anything is read, each data file any of them
reads is protected from being overwritten, and each is copied when a model is written elsewhere.
Nothing here reads a location relative to the working directory (onnx's ``numpy_helper.to_array``
does, for an external tensor: callers must not hand it one).
"""

from __future__ import annotations

import os
from typing import Iterator, Optional

import numpy as np
from onnx import TensorProto, helper

from ..errors import ExternalDataError
from .tensors import StoredTensor, np_dtype, stored_tensors


def external_info(tensor: TensorProto) -> dict:
    return {e.key: e.value for e in tensor.external_data}


def resolve_location(base_dir: str, location: str) -> Optional[str]:
    """The real path of an external file if it lies inside base_dir, else None."""
    if not location or type(location) is not str or "\0" in location or os.path.isabs(location) \
            or location.startswith(("/", "\\")):
        return None
    base = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, path]) != base:
        return None
    return path


def read_small_tensor(tensor: TensorProto, base_dir: Optional[str], max_elements: int) -> Optional[np.ndarray]:
    """The values of an external tensor of at most max_elements, or None (larger, unsafe, not
    the bytes its dims need). The caller decides which tensors are worth reading and passes only
    types with a fixed NumPy layout (inference: small integer tensors)."""
    if base_dir is None:
        return None
    n = 1
    for d in tensor.dims:
        n *= d
    if n > max_elements:
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


def external_places(model) -> Iterator[StoredTensor]:
    """Every tensor of the model stored as external data, and where it lives (see
    ``tensors.stored_tensors``: every place a tensor can be)."""
    for place in stored_tensors(model):
        if place.tensor.data_location == TensorProto.EXTERNAL:
            yield place


def external_tensors(model) -> Iterator[TensorProto]:
    """Every TensorProto of the model stored as external data (the messages themselves)."""
    for place in external_places(model):
        yield place.tensor


def tensor_elements(t: TensorProto) -> int:
    """The number of elements a stored tensor's dims say it has."""
    n = 1
    for d in t.dims:
        n *= int(d)
    return n


def tensor_nbytes(t: TensorProto) -> Optional[int]:
    """The bytes a tensor's elements take in raw form, or None (strings, unknown types)."""
    if t.data_type in (0, TensorProto.STRING, TensorProto.UNDEFINED):
        return None
    n = tensor_elements(t)
    if t.data_type in (TensorProto.INT4, TensorProto.UINT4) or t.data_type == getattr(TensorProto, "FLOAT4E2M1", -1):
        return (n + 1) // 2
    dt = np_dtype(t.data_type)
    return None if dt is None else n * dt.itemsize  # (None: a type number onnx does not know)


def external_range(t: TensorProto, path: str) -> tuple:
    """(offset, length) of an external tensor's bytes in its file (at ``path``): the length
    given, else the bytes its elements take, else the rest of the file."""
    info = external_info(t)
    offset = int(info.get("offset", 0) or 0)
    if info.get("length"):
        return offset, int(info["length"])
    needed = tensor_nbytes(t)
    return offset, needed if needed is not None else max(os.path.getsize(path) - offset, 0)


def external_data_files(model, base_dir: str) -> list:
    """The real paths of the files the model's external tensors read (those inside base_dir),
    each once, in the order first named."""
    out = []
    for t in external_tensors(model):
        path = resolve_location(base_dir, external_info(t).get("location", ""))
        if path is not None and path not in out:
            out.append(path)
    return out


def _escapes(location: str) -> bool:
    if not location or "\0" in location or os.path.isabs(location) or location.startswith(("/", "\\")) \
            or ":" in location[:3]:
        return True
    parts = location.replace("\\", "/").split("/")
    return ".." in parts


def check_external_data(model, base_dir: Optional[str]) -> None:
    """Refuse a model whose external data is unsafe, missing or too short -- before reading any.

    Every external tensor, wherever it lives (external_places), is vetted: its location must be
    a relative path that stays inside base_dir (the model's folder) once symlinks are resolved;
    the file must exist and hold offset + length bytes. Without base_dir (a model given in
    memory) only the locations themselves are checked. The message names the tensor's place
    (the node and its op, the attribute, the body or function it is in)."""
    sizes: dict = {}
    for place in external_places(model):
        t = place.tensor
        info = external_info(t)
        location = info.get("location", "")
        if type(location) is not str:  # (protobuf hands over a string that is not UTF-8 as bytes)
            raise ExternalDataError(f"{place.describe()}: external data location {location!r} is not valid UTF-8; "
                                    "the file is corrupt")
        what = f"{place.describe()}: external data location {location!r}"
        if _escapes(location):
            raise ExternalDataError(f"{what} is not a relative path inside the model's folder; refused")
        try:  # (the entries are strings: int() of one that is no number)
            offset = int(info.get("offset", 0) or 0)
            length = int(info["length"]) if info.get("length") else None
        except ValueError:
            raise ExternalDataError(f"{what}: offset/length are not integers") from None
        if offset < 0 or (length is not None and length < 0):
            raise ExternalDataError(f"{what}: negative offset or length")
        needed = tensor_nbytes(t)
        if length is not None and needed is not None and length < needed:
            raise ExternalDataError(f"{what}: length {length} is less than the {needed} bytes of its {list(t.dims)} elements")
        if base_dir is None:
            continue
        if location not in sizes:
            path = resolve_location(base_dir, location)
            if path is None:
                raise ExternalDataError(f"{what} leads outside the model's folder (through a symlink); refused")
            sizes[location] = os.path.getsize(path) if os.path.isfile(path) else None
        size = sizes[location]
        if size is None:
            raise ExternalDataError(f"{what}: the file does not exist beside the model")
        end = offset + (length if length is not None else (needed or 0))
        if end > size:
            raise ExternalDataError(f"{what}: the file has {size} bytes, the tensor needs bytes {offset}..{end}")


def load_external_data(model, base_dir: str, sparse_only: bool = False) -> None:
    """Read every external tensor of the model (wherever it lives: external_places) into the
    model, from base_dir -- after check_external_data has vetted every location (call it first;
    load.load_model does). Unlike onnx's loader, tensors of sparse initializers, SPARSE_TENSOR
    attributes and training_info are read too, and nothing is resolved against the working
    directory. ``sparse_only``: the values and indices of sparse tensors only (onnx.checker
    reads those, and cannot from a file)."""
    for place in list(external_places(model)):
        if sparse_only and place.sparse is None:
            continue
        t = place.tensor
        path = resolve_location(base_dir, external_info(t).get("location", ""))
        if path is None or not os.path.isfile(path):
            raise ExternalDataError(f"{place.describe()}: its external data is not a file inside the model's folder")
        offset, length = external_range(t, path)
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(length)
        if len(data) != length:
            raise ExternalDataError(f"{place.describe()}: its external data file has fewer bytes than it needs")
        del t.external_data[:]
        t.data_location = TensorProto.DEFAULT
        t.raw_data = data
