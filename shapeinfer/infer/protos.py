"""Conversions between protobuf types and facts. A ``dim_param`` is written here
(:func:`fill_shape_proto`) and read by the symbol table (symbols.py), which the readers here are
given as ``param``."""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
from onnx import AttributeProto, TensorProto, TypeProto, numpy_helper

from ..errors import CannotDecide
from ..modelio.tensors import np_dtype, onnx_type, read_tensor
from ..symbolic import Dim, to_str
from ..modelio.external import read_small_tensor
from .facts import INT_TYPES, MAX_VALUE_ELEMENTS, UNKNOWN, Fact, value_from_numpy

# metadata_props entry of a model shapeinfer wrote: its dim_params use the printed syntax.
DIM_SYNTAX_KEY = "shapeinfer.dim_syntax"
DIM_SYNTAX_VALUE = "expressions-1"


def written_by_shapeinfer(model) -> bool:
    """True when the model says its dim_params use shapeinfer's printed syntax. Anyone can set
    the marker: what such dims say is a claim to check, never a fact that overrides inference."""
    return any(p.key == DIM_SYNTAX_KEY and p.value == DIM_SYNTAX_VALUE for p in model.metadata_props)


def mark_written_by_shapeinfer(model) -> None:
    """Record in the model that its dim_params use the printed syntax (see above)."""
    for p in model.metadata_props:
        if p.key == DIM_SYNTAX_KEY:
            p.value = DIM_SYNTAX_VALUE
            return
    entry = model.metadata_props.add()
    entry.key, entry.value = DIM_SYNTAX_KEY, DIM_SYNTAX_VALUE


def declared_size(d) -> Optional[int]:
    """A TensorShapeProto dim's size, or None: a name, nothing, or a negative dim_value (some
    exporters write -1 for a dynamic dim; onnx.checker and onnxruntime read it so)."""
    return int(d.dim_value) if d.HasField("dim_value") and d.dim_value >= 0 else None


def value_infos(graph, subgraphs: bool = True):
    """Every ValueInfoProto of graph -- its inputs first, then outputs and value_info -- and,
    with ``subgraphs``, of the graphs of its If/Loop/Scan bodies after it."""
    stack = [graph]
    while stack:
        g = stack.pop()
        yield from g.input
        yield from g.output
        yield from g.value_info
        if subgraphs:
            for node in g.node:
                for a in node.attribute:
                    if a.type == AttributeProto.GRAPH:
                        stack.append(a.g)
                    elif a.type == AttributeProto.GRAPHS:
                        stack.extend(a.graphs)


def clear_negative_dims(graph, subgraphs: bool = False) -> None:
    """Write a declared dim_value -1 (a dynamic dim, to onnx.checker and onnxruntime; some
    exporters write it so) as an unnamed dim, which every tool reads the same way (onnx's own
    inference takes -1 for a size). ``subgraphs``: in the graphs of If/Loop/Scan bodies too."""
    for vi in value_infos(graph, subgraphs):
        if vi.type.HasField("tensor_type"):
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_value") and d.dim_value < 0:
                    d.Clear()


def dims_from_shape_proto(shape_proto, mint: Callable[[], Dim], param: Callable[[str], Dim]) -> tuple:
    out = []
    for d in shape_proto.dim:
        size = declared_size(d)
        if size is not None:
            out.append(size)
        elif d.HasField("dim_param") and d.dim_param:
            out.append(param(d.dim_param))
        else:
            out.append(mint())
    return tuple(out)


def nested_tensor_types(tp: TypeProto):
    """The tensor (and sparse tensor) types in a type: itself, or those its sequences, optionals
    and maps hold."""
    stack = [tp]
    while stack:
        t = stack.pop()
        kind = t.WhichOneof("value")
        if kind in ("tensor_type", "sparse_tensor_type"):
            yield getattr(t, kind)
        elif kind == "sequence_type":
            stack.append(t.sequence_type.elem_type)
        elif kind == "optional_type":
            stack.append(t.optional_type.elem_type)
        elif kind == "map_type":
            stack.append(t.map_type.value_type)


def fact_from_type(tp: TypeProto, mint: Callable[[], Dim], param: Callable[[str], Dim]) -> Fact:
    if tp.HasField("tensor_type"):
        tt = tp.tensor_type
        shape = dims_from_shape_proto(tt.shape, mint, param) if tt.HasField("shape") else None
        return Fact(dtype=tt.elem_type, shape=shape)
    if tp.HasField("sparse_tensor_type"):
        tt = tp.sparse_tensor_type
        shape = dims_from_shape_proto(tt.shape, mint, param) if tt.HasField("shape") else None
        return Fact(dtype=tt.elem_type, shape=shape, type_proto=tp)
    return Fact(type_proto=tp)


def fill_shape_proto(shape_proto, shape: tuple, name: Callable[[Dim], str] = to_str) -> None:
    """Write dims into a TensorShapeProto; ``name`` gives a symbolic dim's dim_param (by
    default its printed form); None leaves a dim unknown; a str is a dim given as its text."""
    for d in shape:
        dim = shape_proto.dim.add()
        if d is None:
            continue
        if isinstance(d, int):
            dim.dim_value = d
        elif type(d) is str:
            dim.dim_param = d
        else:
            dim.dim_param = name(d)


def type_from_fact(fact: Fact, name: Callable[[Dim], str] = to_str) -> TypeProto:
    if fact.type_proto is not None:
        return fact.type_proto
    tp = TypeProto()
    tp.tensor_type.elem_type = fact.dtype
    if fact.shape is not None:
        shape_proto = tp.tensor_type.shape
        shape_proto.SetInParent()
        fill_shape_proto(shape_proto, fact.shape, name)
    return tp


def tensor_from_value(fact: Fact, name: str) -> Optional[TensorProto]:
    """The fact's value as a TensorProto, when it is fully known and concrete."""
    v = fact.value
    if v is None or fact.dtype == 0:
        return None
    if v.dtype == object:
        flat = v.reshape(-1).tolist()
        if any(e is UNKNOWN or not isinstance(e, (int, bool)) for e in flat):
            return None
        dt = np_dtype(fact.dtype)
        if dt is None:
            return None
        try:
            arr = np.array(flat, dtype=dt).reshape(v.shape)
        except (OverflowError, ValueError):
            return None
    else:
        arr = v
    if arr.dtype != object and onnx_type(arr.dtype) is None:
        return None  # an odd dtype numpy_helper cannot write: just do not pass the value
    return numpy_helper.from_array(arr, name)


def value_from_tensor(tensor: TensorProto, base_dir: Optional[str] = None) -> Optional[np.ndarray]:
    """The tracked value of a small constant tensor. External data is read only for a small
    integer tensor inside base_dir (see shapeinfer/modelio/external.py); weights never are."""
    if tensor.data_location == TensorProto.EXTERNAL:
        if tensor.data_type not in INT_TYPES:
            return None
        arr = read_small_tensor(tensor, base_dir, MAX_VALUE_ELEMENTS)
        return None if arr is None else value_from_numpy(arr, tensor.data_type)
    n = 1
    for d in tensor.dims:
        n *= d
    if n > MAX_VALUE_ELEMENTS:
        return None
    if tensor.data_type not in INT_TYPES and tensor.data_type != TensorProto.BOOL:
        if tensor.data_type not in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16):
            return None
    try:
        arr = read_tensor(tensor)
    except CannotDecide:  # (not what it says: the structure check reports it)
        return None
    return value_from_numpy(arr, tensor.data_type)


