"""Reading a model: a path, bytes or a ModelProto, with a clear error (never a protobuf
traceback) when it is not one, and its external data checked before anything is read."""

from __future__ import annotations

import os
from typing import Optional

from google.protobuf.message import DecodeError
from onnx import ModelProto

from ..errors import ModelLoadError
from .external import check_external_data, load_external_data as read_external_data

MAX_PROTO_BYTES = 2**31  # protobuf cannot parse a message this large


def load_model(path: str | os.PathLike, load_external_data: bool = False) -> ModelProto:
    """Read an ONNX file; raises ModelLoadError (never a protobuf traceback) when it is not one,
    ExternalDataError (a ModelLoadError) when its external data is unsafe, missing or too short.
    With ``load_external_data`` every external tensor is read into the model (sparse ones,
    attributes, function bodies and training_info too), from the model's folder."""
    p = os.fspath(path)
    if os.path.isdir(p):
        raise ModelLoadError(f"{p}: is a directory, not an ONNX model file")
    try:
        size = os.path.getsize(p)
        if size >= MAX_PROTO_BYTES:
            raise ModelLoadError(f"{p}: the file has {size / 2**30:.1f} GiB; an ONNX file must be under 2 GiB "
                                 "(larger models keep their weights as external data)")
        with open(p, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise ModelLoadError(f"{p}: cannot read: {e.strerror or e}") from None
    if not data:
        raise ModelLoadError(f"{p}: the file is empty, not an ONNX model")
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError:
        raise ModelLoadError(f"{p}: not an ONNX model (the file does not parse as a ModelProto)") from None
    if not model.HasField("graph") or (not model.opset_import and not model.graph.node):
        raise ModelLoadError(f"{p}: not an ONNX model (no graph in it)")
    bad = _not_text(model.graph)
    if bad is not None:
        raise ModelLoadError(f"{p}: not a readable ONNX model ({bad} is not valid UTF-8; the file is corrupt)")
    folder = os.path.dirname(os.path.abspath(p))
    check_external_data(model, folder)  # every tensor, wherever it lives, before any byte is read
    if load_external_data:
        read_external_data(model, folder)
    return model


def _not_text(graph) -> Optional[str]:
    """What among the graph's declared names and dim_params is not text (protobuf hands back
    bytes for a string field holding invalid UTF-8), or None. Node fields are checked where the
    walk reads them."""
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if type(vi.name) is not str:
            return f"the name {vi.name!r}"
        if vi.type.HasField("tensor_type"):
            for d in vi.type.tensor_type.shape.dim:
                if type(d.dim_param) is not str:
                    return f"the dim {d.dim_param!r} of {vi.name!r}"
    for t in graph.initializer:
        if type(t.name) is not str:
            return f"the initializer name {t.name!r}"
    return None


def as_model(model) -> ModelProto:
    if isinstance(model, ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        return load_model(model)
    if isinstance(model, bytes):
        m = ModelProto()
        try:
            m.ParseFromString(model)
        except DecodeError:
            raise ModelLoadError("the bytes given do not parse as an ONNX model") from None
        return m
    raise TypeError(f"expected an onnx.ModelProto, a path or bytes, got {type(model).__name__}")
