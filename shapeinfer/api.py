"""The public API: :func:`infer` (structured result) and :func:`infer_shapes` (annotated model)."""

from __future__ import annotations

import gc
import os
from typing import Optional

import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, TypeProto

from .encoding import graph_patch, tensor_value_info

from .errors import ODD_INPUT_ERRORS, ModelLoadError
from .infer.engine import Engine
from .infer.facts import Fact
from .infer.protos import fill_shape_proto, mark_written_by_shapeinfer, type_from_fact
from .symbolic import Dim, free_symbols, to_str

RESHAPE_LIKE = ("Expand", "Reshape", "Tile")


def dtype_name(dtype: int) -> str:
    """'float', 'int64', 'bfloat16', ... for a TensorProto element type."""
    return onnx.helper.tensor_dtype_to_string(dtype).replace("TensorProto.", "").lower()


class InferenceResult:
    """What inference found: every tensor's facts, the diagnostics and the minted symbols."""

    def __init__(self, model: ModelProto, engine: Engine):
        self.model = model
        self.facts: dict = engine.facts
        self.diagnostics: list = engine.diagnostics
        self.minted: dict = dict(engine.minted)
        self._produced: list = engine.produced
        self.assumptions: list = (
            ["no tensor is empty: every dim of every tensor is at least 1 (--assume-nonempty)"] if engine.assume_nonempty else []
        )

    def fact(self, name: str) -> Optional[Fact]:
        return self.facts.get(name)

    def shape(self, name: str) -> Optional[tuple]:
        """The dims of tensor ``name`` (ints and Exprs), or None when its rank is unknown."""
        f = self.facts.get(name)
        return None if f is None else f.shape

    def shape_strs(self, name: str) -> Optional[list]:
        s = self.shape(name)
        return None if s is None else [to_str(d) for d in s]

    def classify(self, name: str) -> str:
        """'static' (all ints), 'symbolic' (expressions over known symbols) or 'unknown'."""
        s = self.shape(name)
        if s is None:
            return "unknown"
        if all(isinstance(d, int) for d in s):
            return "static"
        if any(self.is_unknown_dim(d) for d in s):
            return "unknown"
        return "symbolic"

    def is_unknown_dim(self, d: Dim) -> bool:
        """True when d involves a symbol minted for a dim that no rule could express."""
        return any(s in self.minted for s in free_symbols(d))

    def declared_dims(self) -> list:
        """How the dims declared on graph outputs and value_info compare with inference.

        One entry per declared dim that says something inference also knows: ``same`` (equal),
        ``equal`` (a declared name for a dim inference expresses otherwise: ``seq_plus_1`` is
        ``seq+1``), or ``conflict`` (a declared size inference proves different)."""
        from .infer.protos import dim_from_param, parse_dim_param, written_by_shapeinfer

        read = parse_dim_param if written_by_shapeinfer(self.model) else dim_from_param
        out = []
        g = self.model.graph
        for vi in list(g.output) + list(g.value_info):
            fact = self.facts.get(vi.name)
            if fact is None or fact.shape is None or not vi.type.HasField("tensor_type"):
                continue
            dims = vi.type.tensor_type.shape.dim
            if not vi.type.tensor_type.HasField("shape") or len(dims) != len(fact.shape):
                continue
            for axis, (d, ours) in enumerate(zip(dims, fact.shape)):
                if self.is_unknown_dim(ours) or not (d.dim_param or d.HasField("dim_value")):
                    continue
                declared = d.dim_param or str(d.dim_value)
                theirs = int(d.dim_value) if d.HasField("dim_value") else read(d.dim_param)
                if str(theirs) == str(ours):
                    kind = "same"
                elif isinstance(theirs, int) and isinstance(ours, int):
                    kind = "conflict"
                else:
                    kind = "equal"
                out.append({"tensor": vi.name, "axis": axis, "declared": declared, "inferred": to_str(ours), "kind": kind})
        return out

    def input_symbols(self) -> set:
        """The symbols the graph inputs' dims are made of."""
        init = {t.name for t in self.model.graph.initializer}
        out: set = set()
        for i in self.model.graph.input:
            f = self.facts.get(i.name)
            if i.name not in init and f is not None and f.shape is not None:
                for d in f.shape:
                    out |= free_symbols(d)
        return out

    def symbols(self) -> list:
        """The symbols in use in the main graph's shapes (minted ones included), sorted."""
        out: set = set()
        for f in self.facts.values():
            if f is not None and f.shape is not None:
                for d in f.shape:
                    out |= free_symbols(d)
        return sorted(out)

    def reshape_like_nodes(self) -> list:
        """The Expand/Reshape/Tile nodes of the main graph, in graph order."""
        return [n for n in self.model.graph.node if n.op_type in RESHAPE_LIKE and n.domain in ("", "ai.onnx")]

    def to_dict(self, all_tensors: bool = False) -> dict:
        g = self.model.graph

        def tensor(name):
            f = self.facts.get(name)
            return {
                "name": name,
                "dtype": dtype_name(f.dtype) if f is not None and f.dtype else None,
                "shape": self.shape_strs(name),
                "kind": self.classify(name),
            }

        init = {t.name for t in g.initializer}
        out = {
            "inputs": [tensor(i.name) for i in g.input if i.name not in init],
            "outputs": [tensor(o.name) for o in g.output],
            "nodes": [
                {
                    "name": n.name,
                    "op_type": n.op_type,
                    "inputs": [tensor(i) if i else None for i in n.input],
                    "outputs": [tensor(o) for o in n.output if o],
                }
                for n in self.reshape_like_nodes()
            ],
            "summary": self.summary(),
            "assumptions": list(self.assumptions),
            "declared_dims": [d for d in self.declared_dims() if d["kind"] != "same"],
            "diagnostics": [d.as_dict() for d in self.diagnostics],
        }
        if all_tensors:
            out["tensors"] = [tensor(name) for name in self.tensor_names()]
        return out

    def tensor_names(self) -> list:
        """Every tensor of the main graph that a node produces, in the order inferred."""
        return list(self._produced)

    def summary(self) -> dict:
        counts = {"static": 0, "symbolic": 0, "unknown": 0}
        for name in self.tensor_names():
            counts[self.classify(name)] += 1
        symbols = self.symbols()
        return {
            **counts,
            "symbols": [s for s in symbols if s not in self.minted],
            "minted_symbols": [s for s in symbols if s in self.minted],
        }


MAX_PROTO_BYTES = 2**31  # protobuf cannot parse a message this large


def load_model(path: str | os.PathLike, load_external_data: bool = False) -> ModelProto:
    """Read an ONNX file; raises ModelLoadError (never a protobuf traceback) when it is not one."""
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
    except (DecodeError, *ODD_INPUT_ERRORS):
        raise ModelLoadError(f"{p}: not an ONNX model (the file does not parse as a ModelProto)") from None
    if not model.HasField("graph") or (not model.opset_import and not model.graph.node):
        raise ModelLoadError(f"{p}: not an ONNX model (no graph in it)")
    bad = _not_text(model.graph)
    if bad is not None:
        raise ModelLoadError(f"{p}: not a readable ONNX model ({bad} is not valid UTF-8; the file is corrupt)")
    from .external import check_external_data

    check_external_data(model, os.path.dirname(os.path.abspath(p)))
    if load_external_data:
        onnx.external_data_helper.load_external_data_for_model(model, os.path.dirname(p) or ".")
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


def _as_model(model) -> ModelProto:
    if isinstance(model, ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        return load_model(model)
    if isinstance(model, bytes):
        m = ModelProto()
        try:
            m.ParseFromString(model)
        except (DecodeError, *ODD_INPUT_ERRORS):
            raise ModelLoadError("the bytes given do not parse as an ONNX model") from None
        return m
    raise TypeError(f"expected an onnx.ModelProto, a path or bytes, got {type(model).__name__}")


def infer(model, *, input_shapes: Optional[dict] = None, assume_nonempty: bool = False,
          base_dir: Optional[str] = None) -> InferenceResult:
    """Infer every tensor's shape; the model is not modified.

    ``input_shapes`` maps a graph input name to a list of ints and/or symbol names (or
    expressions) that replaces the model's declared shape for that input.
    ``assume_nonempty`` (opt-in) takes no tensor to be empty: every dim of the graph inputs and
    of every tensor computed is at least 1. Without it a symbol may be 0, and shapes that differ
    only where some tensor is empty are reported unknown; with it they are exact for every run
    without an empty tensor. The result lists it under ``assumptions``.
    ``base_dir`` is the folder of a model's external data (default: the model file's folder when
    a path is given). Weights are never loaded; a small external int tensor is read from there.
    Raises :class:`shapeinfer.ShapeInferenceError` for an invalid model."""
    if base_dir is None and isinstance(model, (str, os.PathLike)):
        base_dir = os.path.dirname(os.path.abspath(os.fspath(model)))
    m = _as_model(model)
    engine = Engine(m, input_shapes=input_shapes, assume_nonempty=assume_nonempty, base_dir=base_dir)
    # The walk allocates many small, acyclic objects; the cyclic collector's full passes over
    # them would make time grow faster than the graph. Collection resumes afterwards.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        engine.run()
    finally:
        if was_enabled:
            gc.enable()
    return InferenceResult(m, engine)


def _has_minted(result: InferenceResult, shape) -> bool:
    return any(result.is_unknown_dim(d) for d in shape)


def _merge_dim(dim_proto, ours: Dim, result: InferenceResult) -> None:
    """Write our dim into a declared one: a declared name is kept (the equality with what was
    inferred is in result.declared_dims()); a declared size is kept where ours is unknown."""
    if dim_proto.dim_param:
        return
    if dim_proto.HasField("dim_value") and result.is_unknown_dim(ours):
        return
    if isinstance(ours, int):
        dim_proto.dim_value = ours
    elif not result.is_unknown_dim(ours) or not dim_proto.HasField("dim_value"):
        dim_proto.dim_param = to_str(ours)


def _write_type(dst: TypeProto, fact: Fact, result: InferenceResult, keep_declared: bool) -> None:
    """Write fact into a declared value's type, keeping the author's dims where they are given
    (unless the inputs were overridden: then the declared names may describe other shapes)."""
    if fact.type_proto is not None or not fact.dtype:
        return
    tt = dst.tensor_type
    tt.elem_type = fact.dtype
    if fact.shape is None:
        return
    declared = list(tt.shape.dim) if tt.HasField("shape") else None
    if keep_declared and declared is not None and len(declared) == len(fact.shape):
        for dim_proto, ours in zip(tt.shape.dim, fact.shape):
            _merge_dim(dim_proto, ours, result)
        return
    tt.ClearField("shape")
    tt.shape.SetInParent()
    fill_shape_proto(tt.shape, fact.shape)


def annotate(model: ModelProto, result: InferenceResult, input_shapes: Optional[dict] = None) -> ModelProto:
    """A copy of ``model`` whose value_info and graph outputs carry the inferred shapes.

    Dims the author declared (names or sizes on outputs and value_info) are kept; how they
    relate to what was inferred is in ``result.declared_dims()``. Graph inputs named in
    ``input_shapes`` get the overriding shape written in, and then the inferred shapes replace
    the declared ones everywhere."""
    out = ModelProto()
    out.CopyFrom(model)
    mark_written_by_shapeinfer(out)
    g = out.graph
    for vi in g.input:
        fact = result.facts.get(vi.name)
        if input_shapes and vi.name in input_shapes and fact is not None and fact.shape is not None:
            vi.type.tensor_type.ClearField("shape")
            vi.type.tensor_type.shape.SetInParent()
            fill_shape_proto(vi.type.tensor_type.shape, fact.shape)
    outputs = {o.name: o for o in g.output}
    existing = {vi.name: vi for vi in g.value_info}
    known_elsewhere = {i.name for i in g.input} | {t.name for t in g.initializer}
    appended: list = []  # new value_info entries, as wire bytes (see encoding.py)
    for name in result.tensor_names():
        fact = result.facts.get(name)
        if fact is None or name in known_elsewhere:
            continue
        if name in outputs:
            _write_type(outputs[name].type, fact, result, not input_shapes)
            continue
        vi = existing.get(name)
        if vi is None:
            if fact.type_proto is not None:
                vi = g.value_info.add()
                vi.name = name
                vi.type.CopyFrom(type_from_fact(fact))
            elif fact.dtype:
                appended.append(tensor_value_info(name, fact.dtype, fact.shape))
            continue
        _write_type(vi.type, fact, result, not input_shapes)
    if appended:
        out.MergeFromString(graph_patch(appended))
    return out


def infer_shapes(model, *, input_shapes: Optional[dict] = None, assume_nonempty: bool = False,
                 base_dir: Optional[str] = None) -> ModelProto:
    """Like ``onnx.shape_inference.infer_shapes``: a new model with every inferred shape written in.

    Symbolic dims are written as ``dim_param`` in the printed syntax (``batch*seq/4``). The model
    given is not modified. Raises :class:`shapeinfer.ShapeInferenceError` for an invalid model."""
    if base_dir is None and isinstance(model, (str, os.PathLike)):
        base_dir = os.path.dirname(os.path.abspath(os.fspath(model)))
    m = _as_model(model)
    result = infer(m, input_shapes=input_shapes, assume_nonempty=assume_nonempty, base_dir=base_dir)
    return annotate(m, result, input_shapes)
