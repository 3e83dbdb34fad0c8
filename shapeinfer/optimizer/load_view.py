"""What onnxruntime sees of a model's tensors when it loads it, before any kernel runs.

onnxruntime infers the types of every tensor when it loads a model -- the branches of every If
too, taken or not -- with onnx's per-op inference: a shape where the graph makes it plain (a
constant Reshape shape, an initializer's dims, a declared type), no value a node computes (the
``Shape`` of a static shape is not a constant to it). Where it sees a static dim that a branch
contradicts, it refuses the whole model, whether or not a run ever takes that branch.

shapeinfer knows more than that (the values of shape subgraphs, the dims they give). A rewrite
can make what it knows plain -- a value folded, a computed shape made constant, a node bypassed
that hid a shape -- and so show onnxruntime a fact it did not see: harmless, unless a branch
reads it. ``visible_tensors`` says of which tensors onnxruntime already sees all that shapeinfer
knows (no rewrite can then show it more); the passes leave the others that a branch reads, and
what they are computed from, as they are (passes/graph_ops.branch_guard).
"""

from __future__ import annotations

from itertools import chain

from onnx import ModelProto, TensorProto, helper
from onnx.checker import ValidationError
from onnx.shape_inference import InferenceError, infer_shapes

from ..fold.folder import NONDETERMINISTIC
from ..graph.structure import graphs_of
from ..infer.unreached import readable_by_onnx_inference
from .adapter import Constant, Graph, Variable, outer_variables

# An initializer this small may be a value onnx's inference reads (a Reshape shape, Tile
# repeats, pads, axes): the light copy keeps it. A larger one is a typed input there.
VALUE_ELEMENTS = 64


def runtime_view(model: ModelProto, input_dims=None) -> dict:
    """name -> the static dims onnxruntime's load-time inference gives it (a tuple of int or
    None for each dim; None for the whole: the rank is not known), for the tensors of the main
    graph and of its bodies (a name of several graphs: what every one of them shows). Inferred
    by onnx on a light copy: the nodes, declared types, small initializers; the others are
    typed inputs (their values are never read there), so no weight is copied. ``input_dims``:
    graph input name -> its dims as the caller fixed them (ints, or anything else for a dim
    left dynamic), as the optimised model declares them. Empty where onnx's inference fails on
    the model."""
    light = ModelProto()
    light.ir_version = model.ir_version
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    g, src = light.graph, model.graph
    g.node.extend(src.node)
    g.input.extend(src.input)
    for vi in g.input:
        dims = (input_dims or {}).get(vi.name)
        if dims is not None and vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
            for d in dims:
                dim = vi.type.tensor_type.shape.dim.add()
                if type(d) is int:
                    dim.dim_value = d
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    inputs = {i.name for i in src.input}
    for t in src.initializer:
        count = 1
        for d in t.dims:
            count *= d
        if t.name in inputs:  # (a default the caller may override: onnxruntime reads no value of it)
            continue
        if t.data_location != TensorProto.EXTERNAL and count <= VALUE_ELEMENTS:
            g.initializer.append(t)
        else:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    for s in src.sparse_initializer:
        if s.values.name not in inputs:
            g.input.append(helper.make_tensor_value_info(s.values.name, s.values.data_type, list(s.dims)))
    try:
        inferred = infer_shapes(readable_by_onnx_inference(light), check_type=False, strict_mode=False, data_prop=False)
    except (InferenceError, ValidationError, RuntimeError, ValueError):
        return {}
    view: dict = {}
    for graph in graphs_of(inferred):  # (_merge does not depend on the order)
        for vi in chain(graph.input, graph.output, graph.value_info):
            _note(view, vi)
        for t in graph.initializer:
            _merge(view, t.name, tuple(int(d) for d in t.dims))
    return view


def _note(view: dict, vi) -> None:
    tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
    if tt is None or not tt.HasField("shape"):
        _merge(view, vi.name, None)
        return
    _merge(view, vi.name, tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim))


def _merge(view: dict, name: str, dims) -> None:
    if name not in view:
        view[name] = dims
        return
    have = view[name]
    if have is None or dims is None or len(have) != len(dims):
        view[name] = None
    else:
        view[name] = tuple(a if a == b else None for a, b in zip(have, dims))


def visible_tensors(varying: list, facts, view: dict) -> frozenset:
    """The ids of the tensors of which onnxruntime's load-time inference (``view``, from
    runtime_view) already sees all that a rewrite could show it: among ``varying`` (tensors
    whose values vary with the model's inputs: no pass makes one a constant; see
    varying_tensors), those whose value inference does not know, whose rank onnxruntime knows
    and whose every static dim (as inference knows it) onnxruntime sees too."""
    out = set()
    for t in varying:
        fact = facts.fact(t.name)
        if fact is None or fact.shape is None or fact.value is not None:
            continue
        seen = view.get(t.name)
        if seen is None or len(seen) != len(fact.shape):
            continue
        if all(type(d) is not int or s == d for d, s in zip(fact.shape, seen)):
            out.add(id(t))
    return frozenset(out)


def varying_tensors(graph) -> tuple:
    """(the Variables of graph and its bodies whose values vary with the model's inputs, the ids
    of the other Variables -- computed from constants alone, which folding may make constants:
    an If condition among them may yet be decided). A tensor the passes make later is in
    neither."""
    varying = _varying(graph)
    ids = {id(t) for t in varying}
    fixed: set = set()
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.nodes:
            fixed.update(id(t) for t in n.outputs if id(t) not in ids and not t.is_empty())
            if n.attrs:
                stack.extend(v for v in n.attrs.values() if isinstance(v, Graph))
    return varying, frozenset(fixed)


def _varying(graph) -> list:
    """The Variables of graph and its bodies whose values depend on the model's inputs (or on a
    body's inputs, a random op, a tensor nothing makes): no pass can make one a constant."""
    found: dict = {id(t): t for t in graph.inputs}

    def varies(t) -> bool:
        return id(t) in found or (isinstance(t, Variable) and not t.inputs and not t.is_empty())

    stack = [iter(graph.nodes)]
    while stack:
        n = next(stack[-1], None)
        if n is None:
            stack.pop()
            continue
        bodies = [v for v in n.attrs.values() if isinstance(v, Graph)] if n.attrs else ()
        if n.op in NONDETERMINISTIC or any(varies(t) for t in n.inputs) \
                or (bodies and any(varies(t) for t in outer_variables(n))):
            found.update((id(t), t) for t in n.outputs)
        for body in bodies:  # (walked next: a body reads only what was made before its node)
            found.update((id(t), t) for t in body.inputs)
            stack.append(iter(body.nodes))
    return [t for t in found.values() if not t.is_empty() and not isinstance(t, Constant)]
