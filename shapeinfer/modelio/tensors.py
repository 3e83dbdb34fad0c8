"""Stored tensors: where a model holds them, what a TensorProto holds and whether it can be what
it says.

A tensor can live in many places of a model: the initializers and sparse initializers of any
graph, the TENSOR / SPARSE_TENSOR / TENSORS / SPARSE_TENSORS attributes of any node (Constant
nodes, ConstantOfShape, ops of other domains), in the main graph, in the bodies of If, Loop and
Scan at any depth, in model-local functions (their nodes and the default values of their
attributes) and in training_info (its initialization and algorithm graphs). :func:`stored_tensors`
is the one walk over all of them: loading and vetting external data, protecting and copying the
input's data files when a model is written, vetting each tensor (:func:`tensor_problem`) and
counting parameters all take their tensors from it, so that no consumer can miss a place.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple, Optional

import numpy as np
from onnx import AttributeProto, ModelProto, NodeProto, SparseTensorProto, TensorProto, helper

from ..errors import CannotDecide
from .text import as_text

TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
PACKED_4BIT = {getattr(TensorProto, k) for k in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, k)}
PACKED_2BIT = {getattr(TensorProto, k) for k in ("INT2", "UINT2") if hasattr(TensorProto, k)}
# elements per byte of raw data (and per entry of int32_data) for the packed types
PER_BYTE = {**{t: 2 for t in PACKED_4BIT}, **{t: 4 for t in PACKED_2BIT}}


def tensor_problem(tensor: TensorProto) -> Optional[str]:
    """Why a stored tensor cannot be what it says (unknown type, negative dim, other than the
    bytes or elements its dims need), or None. Cheap: the bytes are measured, never copied."""
    data_type = tensor.data_type
    if data_type not in _KNOWN_TYPES:
        return f"element type {data_type} is not an ONNX type"
    if data_type == TensorProto.UNDEFINED:
        return "element type is undefined"
    dims = tensor.dims
    n = 1
    for d in dims:
        if d < 0:
            return f"dims {list(dims)} hold a negative size"
        n *= d
    if tensor.data_location == TensorProto.EXTERNAL or tensor.HasField("segment"):
        return None  # external: checked against its file by shapeinfer.modelio.external
    if data_type == TensorProto.STRING:
        have = len(tensor.string_data)
        return None if have == n else f"holds {have} strings, its dims {list(dims)} need {n}"
    itemsize = _itemsize(data_type)
    if itemsize is None:
        return None
    per_byte = PER_BYTE.get(data_type, 0)
    need = -(-n // per_byte) if per_byte else n * itemsize
    if tensor.HasField("raw_data"):
        # ByteSize counts raw_data without copying it: fewer bytes than needed is sure to be short
        if tensor.ByteSize() < need:
            return f"holds fewer than the {need} bytes its dims {list(dims)} need"
        if need <= 1 << 20 and len(tensor.raw_data) != need:
            return f"holds {len(tensor.raw_data)} bytes, its dims {list(dims)} need {need}"
        return None
    have = max(len(getattr(tensor, f)) for f in TYPED_FIELDS)
    if data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
        have //= 2
    if per_byte:  # (packed: per_byte elements in each entry, the last one maybe part-filled)
        entries, need_entries = have, -(-n // per_byte)
        if entries != need_entries:
            return f"holds {entries} packed entries, its dims {list(dims)} need {need_entries}"
        return None
    if have != n:  # (onnxruntime refuses more elements than the dims hold as well as fewer)
        return f"holds {have} elements, its dims {list(dims)} need {n}"
    return None


_KNOWN_TYPES = frozenset(TensorProto.DataType.values())
_ITEMSIZES: dict = {}


def np_dtype(data_type: int) -> Optional[np.dtype]:
    """The NumPy dtype of an ONNX element type, or None for one onnx maps to none."""
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(data_type))
    except KeyError:
        return None


def onnx_type(dtype: np.dtype) -> Optional[int]:
    """The ONNX element type of a NumPy dtype (object: STRING), or None for one onnx maps to none."""
    if dtype == np.dtype(object):
        return TensorProto.STRING
    try:
        return helper.np_dtype_to_tensor_dtype(dtype)
    except KeyError:
        return None


def read_tensor(tensor: TensorProto) -> np.ndarray:
    """The values of a stored tensor held in the model itself (not external data), exactly as
    stored (onnx.numpy_helper: bfloat16, float8, int4 ... through ml_dtypes). A tensor that
    cannot be what it says (tensor_problem) or that NumPy cannot hold raises CannotDecide
    ("element-type"); one stored as external data, CannotDecide("external-data")."""
    from onnx import numpy_helper

    if isinstance(tensor, SparseTensorProto):
        raise CannotDecide("sparse", repr(as_text(tensor.values.name)))
    if tensor.data_location == TensorProto.EXTERNAL:
        raise CannotDecide("external-data", repr(as_text(tensor.name)))
    problem = tensor_problem(tensor)
    if problem:
        raise CannotDecide("element-type", problem)
    try:
        return numpy_helper.to_array(tensor)
    except (ValueError, KeyError) as e:  # (what onnx's reader raises for a layout it does not take)
        raise CannotDecide("element-type", str(e)) from None


def _itemsize(data_type: int) -> Optional[int]:
    """Bytes of one element of an ONNX type (None: no NumPy layout), looked up once per type."""
    size = _ITEMSIZES.get(data_type, -1)
    if size == -1:
        dt = np_dtype(data_type)
        size = _ITEMSIZES[data_type] = None if dt is None else dt.itemsize
    return size


def stored_tensor_problems(model: ModelProto) -> Iterator[tuple]:
    """(StoredTensor, why) for every tensor of the model, wherever it lives (stored_tensors),
    that cannot be what it says (tensor_problem)."""
    for place in stored_tensors(model):
        problem = tensor_problem(place.tensor)
        if problem:
            yield place, problem


def node_label(node) -> str:
    """A node's name, or for an unnamed one what identifies it: its first output. A name that
    is not UTF-8 (protobuf hands it over as bytes) is text with its bytes escaped (as_text)."""
    name = node.name
    if name:
        return as_text(name)
    first = next((o for o in node.output if o), "")
    return f"<unnamed, output {first!r}>" if first else "<unnamed>"


INITIALIZER = "initializer"
SPARSE_INITIALIZER = "sparse initializer"
ATTRIBUTE = "attribute"
FUNCTION_DEFAULT = "function attribute default"


class StoredTensor(NamedTuple):
    """A TensorProto as stored in a model (the message itself, not a copy: a writer may point it
    elsewhere) and where it lives, for messages."""

    tensor: TensorProto
    kind: str  # INITIALIZER, SPARSE_INITIALIZER, ATTRIBUTE or FUNCTION_DEFAULT
    part: str  # "values" or "indices" of a sparse tensor, else ""
    node: Optional[NodeProto]  # the node whose attribute holds it (ATTRIBUTE)
    name: str  # the attribute's name ([k] for an item of a list), or the (sparse) initializer's
    scope: str  # "" in the main graph, else where its graph or function is
    sparse: Optional[SparseTensorProto] = None  # the sparse tensor whose values or indices it is

    def describe(self, with_node: bool = True) -> str:
        """Where the tensor lives, in a message: ``node 'c' (Constant), attribute 'value'``
        (without ``with_node``, for a message that names the node already: ``attribute 'value'``)."""
        part = f" (its {self.part})" if self.part else ""
        if self.kind == ATTRIBUTE:
            what = f"attribute {self.name!r}{part}"
            if with_node:
                what = f"node {node_label(self.node)!r} ({self.node.op_type}), {what}"
        elif self.kind == FUNCTION_DEFAULT:
            what = f"the default of attribute {self.name!r}{part}"
        else:
            what = f"{self.kind} {self.name!r}{part}"
        return f"{what} in {self.scope}" if self.scope else what


def stored_tensors(model: ModelProto, training_info: bool = True) -> Iterator[StoredTensor]:
    """Every TensorProto stored in the model, wherever it lives (see the module's docstring;
    without ``training_info``, the tensors of the model that runs inference only): a sparse
    tensor gives its values and its indices. Graphs are walked at any depth. An
    attribute's ``t`` and ``tensors`` count whatever type it declares (onnx's external data
    loader reads them so); its sparse tensors and graphs count under their types (onnxruntime
    and onnx read them so)."""
    yield from _in_graph(model.graph, "")
    for f in model.functions:
        scope = f"function {f.domain + '.' if f.domain else ''}{f.name}"
        yield from _in_nodes(f.node, scope)
        for a in f.attribute_proto:
            yield from _in_attribute(a, None, scope, FUNCTION_DEFAULT)
    for k, info in enumerate(model.training_info if training_info else ()):
        yield from _in_graph(info.initialization, f"training_info[{k}] (initialization)")
        yield from _in_graph(info.algorithm, f"training_info[{k}] (algorithm)")


def _in_graph(graph, scope: str) -> Iterator[StoredTensor]:
    for t in graph.initializer:
        yield StoredTensor(t, INITIALIZER, "", None, t.name, scope)
    for sp in graph.sparse_initializer:
        yield from _sparse(sp, SPARSE_INITIALIZER, None, sp.values.name, scope)
    yield from _in_nodes(graph.node, scope)


def _in_nodes(nodes, scope: str) -> Iterator[StoredTensor]:
    for n in nodes:
        attrs = n.attribute
        if attrs:
            for a in attrs:
                if a.HasField("t"):  # (a Constant's value, the common case, without another call)
                    yield StoredTensor(a.t, ATTRIBUTE, "", n, a.name, scope)
                if a.type in _NO_OTHER and not a.tensors:  # a number, a string, a tensor: nothing more
                    continue
                yield from _in_attribute(a, n, scope, ATTRIBUTE, with_t=False)


# The attribute types under which nothing but ``t`` and ``tensors`` holds a tensor.
_NO_OTHER = frozenset({AttributeProto.FLOAT, AttributeProto.INT, AttributeProto.STRING, AttributeProto.FLOATS,
                       AttributeProto.INTS, AttributeProto.STRINGS, AttributeProto.UNDEFINED, AttributeProto.TENSOR,
                       AttributeProto.TYPE_PROTO, AttributeProto.TYPE_PROTOS})


def _in_attribute(a, node, scope: str, kind: str, with_t: bool = True) -> Iterator[StoredTensor]:
    """The tensors an attribute holds: ``t`` and ``tensors`` whatever its type says (onnx's
    external data loader reads them so), sparse tensors and graphs under their types (as
    onnxruntime reads them)."""
    name = a.name
    if with_t and a.HasField("t"):
        yield StoredTensor(a.t, kind, "", node, name, scope)
    for k, t in enumerate(a.tensors):
        yield StoredTensor(t, kind, "", node, f"{name}[{k}]", scope)
    kind_of = a.type
    if kind_of == AttributeProto.SPARSE_TENSOR:
        yield from _sparse(a.sparse_tensor, kind, node, name, scope)
    elif kind_of == AttributeProto.SPARSE_TENSORS:
        for k, sp in enumerate(a.sparse_tensors):
            yield from _sparse(sp, kind, node, f"{name}[{k}]", scope)
    elif kind_of == AttributeProto.GRAPH or kind_of == AttributeProto.GRAPHS:
        where = f"the body {name!r} of node {node_label(node)!r} ({node.op_type})" if node is not None \
            else f"the default of attribute {name!r}"
        inner = f"{where}, in {scope}" if scope else where
        if kind_of == AttributeProto.GRAPH:
            yield from _in_graph(a.g, inner)
        else:
            for k, g in enumerate(a.graphs):
                yield from _in_graph(g, f"{inner} [{k}]" if len(a.graphs) > 1 else inner)


def _sparse(sp, kind: str, node, name: str, scope: str) -> Iterator[StoredTensor]:
    yield StoredTensor(sp.values, kind, "values", node, name, scope, sp)
    yield StoredTensor(sp.indices, kind, "indices", node, name, scope, sp)
