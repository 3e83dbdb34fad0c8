"""Code that may not run: an If branch under a condition the model computes, a Loop body that
may run no iteration, a Scan body over a sequence that may be empty.

A node there that breaks its op's rule does not make the model invalid: the model runs
wherever that code does not. The engine walks such a body inside a :class:`Region`; a rule's
``ShapeInferenceError`` there is recorded (an :class:`UnreachedFailure`) instead of ending the
walk, and the node's outputs are unknown. What the runs that succeed compute comes from the
code that does run (the other branch; a Loop's or Scan's states as they went in).

After the walk the engine settles each failure by onnxruntime's rule: where onnxruntime's own
load-time inference rejects the body -- the static shapes it sees contradict the node, as
onnx's strict inference (the same schema functions, run the same way) says of that node --
the model is refused at load and the failure is an error, as in code that runs. Otherwise it
is a warning: "fails if it runs", with the sizes where it runs when the condition is a
function of the input sizes (a branch taken only for some sizes is part of what the model
accepts), or the note that the condition is computed from tensor data.
"""

from __future__ import annotations

import re
from typing import Optional

from onnx import ModelProto

from ..errors import ShapeInferenceError
from ..graph.structure import graphs_of, has_subgraph
from ..symbolic import Dim, evaluate
from ..symbolic.search import binding_str, counterexample, holds, relevant

__all__ = ["Region", "UnreachedFailure", "describe", "load_time_static", "load_time_valued", "onnx_rejections", "or_not_run",
           "running_clause", "visible_to_runtime", "readable_by_onnx_inference"]


class UnreachedFailure:
    """A node that breaks its op's rule inside code that may not run. ``path``: (op_type, name)
    of each node that holds the code, outermost first, then of the node itself. Where
    onnxruntime does not see it at load, what ``holder`` reads must stay as unknown to
    onnxruntime's load-time inference as it is in the model (annotate, optimize): a shape
    written or folded there would make it see the failure and refuse the model."""

    __slots__ = ("error", "node", "path", "region", "holder")

    def __init__(self, error: ShapeInferenceError, node, path: tuple, region: "Region", holder):
        self.error = error
        self.node = node
        self.path = path
        self.region = region
        self.holder = holder  # the main graph's node that holds the code (an If, a Loop, a call)


class Region:
    """One walk of code that may not run. ``runs``: the 0/1 dim of "this code runs" when it is a
    function of the input sizes, None when it depends on tensor data (or is not known).
    ``failures``: those recorded directly in it (not in a region nested inside)."""

    __slots__ = ("node", "what", "runs", "failures")

    def __init__(self, node, what: str, runs: Optional[Dim]):
        self.node = node
        self.what = what
        self.runs = runs
        self.failures: list = []

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def or_not_run(test, runs):
    """A test of a binding that passes where ``test`` does or where the code (whose "it runs"
    is the 0/1 dim ``runs``) does not run: a failure there breaks no run."""
    def passes(binding):
        return evaluate(runs, binding) == 0 or test(binding)

    return passes


def running_clause(region: Optional[Region]) -> str:
    """What to add to "fails for N=1" for a condition inside code that may not run."""
    if region is None:
        return ""
    if region.runs is None:
        return f" if {region.what} runs (which depends on tensor data)"
    return f", where {region.what} runs"


def describe(failure: UnreachedFailure) -> Optional[str]:
    """The warning's text for a failure onnxruntime does not see at load; None when the code
    runs at no size tried (a branch whose condition no size makes true: nothing to say)."""
    region = failure.region
    err = failure.error
    if region.runs is None:
        return f"fails if it runs ({region.what}, which runs or not depending on tensor data): {err.rule}"
    runs = region.runs
    test = holds("equal", runs, 0)  # broken exactly where the code runs
    found = counterexample((runs,), test)
    if found is None:
        return None
    example = relevant((runs,), found, test)
    return f"fails for {binding_str(example)}, where {region.what} runs: {err.rule}"


# -- what onnxruntime sees at load ------------------------------------------------------------

_ENTRY = re.compile(r"\(op_type:(?P<op>[^,)]*)(?:, node name: (?P<name>[^)]*))?\)")


SMALL_INITIALIZER = 64  # elements: an initializer this small may be a shape onnx's inference reads


def inference_view(model: ModelProto) -> ModelProto:
    """What onnx's inference needs of ``model`` to say which nodes it rejects: a copy whose
    subgraphs' outputs keep their element types but no shape -- an output declared with another
    shape than its node makes is a warning to onnxruntime, which merges it leniently and loads;
    the main graph's outputs and value_info stay, as onnxruntime's inference reads them into
    what the nodes after see (a conflict there is a rejection of a main-graph node, which no
    failure inside a subgraph is matched against) -- and whose initializers of more than SMALL_INITIALIZER elements are typed inputs instead
    (no weight is copied or serialized; only small tensors -- shapes, axes -- are values
    inference reads), sparse initializers too (onnxruntime reads them as the dense tensors they
    stand for, which onnx's inference does not)."""
    from onnx import helper

    g = model.graph
    view = ModelProto()
    view.ir_version = max(model.ir_version, 4)
    view.opset_import.extend(model.opset_import)
    view.functions.extend(model.functions)
    vg = view.graph
    vg.name = g.name
    vg.node.extend(g.node)
    vg.input.extend(g.input)
    vg.output.extend(g.output)
    vg.value_info.extend(g.value_info)
    listed = {i.name for i in g.input}
    for sp in g.sparse_initializer:  # (onnx's inference takes none: "unsupported type sparse_tensor")
        if sp.values.name not in listed:
            vg.input.append(helper.make_tensor_value_info(sp.values.name, sp.values.data_type, list(sp.dims)))
    for t in g.initializer:
        if _elements(t) <= SMALL_INITIALIZER:
            vg.initializer.append(t)
        elif t.name not in listed:
            vg.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    for graph in graphs_of(view)[:-1]:  # (the main graph comes last)
        for vi in graph.output:
            if vi.type.HasField("tensor_type"):
                vi.type.tensor_type.ClearField("shape")
    _unaliased(view)
    return view


def _unaliased(view: ModelProto) -> None:
    """Nodes of domain "ai.onnx" read as the default domain, as onnxruntime reads them (onnx's
    inference finds no schema under that name when the model imports both)."""
    imports = {o.domain: o.version for o in view.opset_import}
    if "ai.onnx" not in imports:
        return
    if "" not in imports:
        view.opset_import.add(domain="", version=imports["ai.onnx"])
    for nodes in [g.node for g in graphs_of(view)] + [f.node for f in view.functions]:
        for n in nodes:
            if n.domain == "ai.onnx":
                n.domain = ""


def _elements(t) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


def onnx_rejections(model: ModelProto, static: Optional[dict] = None) -> list:
    """The chains of nodes onnx's strict type and shape inference rejects -- each a list of
    (op_type, name), outermost first (an If, then the node in its branch that fails) --, or []
    when it accepts the model or cannot infer it at all (a model too large to serialize).
    ``static``: {name: (dims, elem_type)} of main-graph tensors whose dims onnxruntime's load
    knows as numbers (load_time_static)."""
    view = readable_by_onnx_inference(inference_view(model))
    chains = _rejected(view)
    if static:
        # onnxruntime's load also follows shape values, but only those fully known (a Reshape to
        # Shape(c) of a constant c [2,3] has its dims; to Shape(x) of x [N,3] none). onnx's own
        # propagation (data_prop) follows partly known values too, and may exhaust the memory
        # on a large value: the tensors known to be static are declared so instead
        chains += [c for c in _rejected(_with_static_shapes(view, static)) if c not in chains]
    return chains


def _rejected(view: ModelProto) -> list:
    from onnx.checker import ValidationError
    from onnx.shape_inference import InferenceError, infer_shapes

    try:
        infer_shapes(view, check_type=True, strict_mode=True)
        return []
    except InferenceError as e:
        text = str(e)
    except (ValidationError, ValueError, RuntimeError):  # (not inferable at all: a recursive function, past 2 GiB)
        return []
    chains = []
    for line in text.splitlines():
        chain = [(m.group("op"), m.group("name") or "") for m in _ENTRY.finditer(line)]
        if chain and "expected to have type but instead is null" not in line:
            chains.append(chain)  # (a missing type follows from an earlier rejection, or from no type declared)
    return chains


# The ops whose values onnxruntime's load follows from known values (its data propagation)
_PROPAGATED = frozenset({"Shape", "Size", "Gather", "Concat", "Unsqueeze", "Squeeze", "Slice", "Add", "Sub", "Mul",
                         "Div", "Identity", "Constant"})


def load_time_static(model: ModelProto, facts: dict) -> dict:
    """{name: (dims, elem_type)} of the main-graph tensors whose dims onnxruntime's load knows
    as numbers and that inference shows to be static (see _load_time_walk)."""
    return _load_time_walk(model, facts)[0]


def load_time_valued(model: ModelProto, facts: dict) -> set:
    """The main-graph tensors whose values onnxruntime's load knows: constants, and what its
    data propagation follows from known values (Shape of a static tensor, Gather, Concat, ...
    of known values; nothing through a Reshape)."""
    return _load_time_walk(model, facts)[1]


def _load_time_walk(model: ModelProto, facts: dict) -> tuple:
    """({name: (dims, elem_type)}, valued names): the main-graph tensors whose dims onnxruntime's load knows
    as numbers and that inference shows to be static: those onnx's own inference makes static,
    and a node's outputs where every input's dims are so known (a graph input declared with
    numbers only) or its value is -- a constant, or a value onnxruntime's data propagation
    follows from known values through shape ops (Reshape(c, Shape(c)) of a constant or a static
    input has its dims; of x [N,3] it has none: onnxruntime follows no value with a symbol)."""
    from onnx.shape_inference import InferenceError, infer_shapes

    graph = model.graph
    try:
        seen = infer_shapes(readable_by_onnx_inference(inference_view(model)), strict_mode=False).graph
        plain = {vi.name for vi in (*seen.value_info, *seen.output) if vi.type.HasField("tensor_type")
                 and vi.type.tensor_type.HasField("shape")
                 and all(d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)}
    except (InferenceError, ValueError, RuntimeError):
        plain = set()
    inputs = {i.name for i in graph.input}
    valued = {t.name for t in graph.initializer if t.name not in inputs}
    shaped = set(valued)
    for vi in graph.input:
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shaped.add(vi.name)
    out: dict = {}
    for n in graph.node:
        if has_subgraph(n) or n.domain not in ("", "ai.onnx"):
            continue
        given = [i for i in n.input if i]
        if all(i in shaped or i in valued for i in given) and (
                n.op_type in ("Shape", "Size") or (n.op_type in _PROPAGATED and all(i in valued for i in given))):
            valued.update(o for o in n.output if o)
        for o in n.output:
            f = facts.get(o) if o else None
            if not (o in plain or all(i in shaped or i in valued for i in given)):
                continue
            if f is not None and f.shape is not None and f.dtype and f.type_proto is None \
                    and all(type(d) is int for d in f.shape):
                shaped.add(o)
                if o not in inputs:
                    out[o] = (f.shape, f.dtype)
    return out, valued


def _with_static_shapes(m: ModelProto, static: dict) -> ModelProto:
    """A copy of m with value_info for the main-graph tensors of ``static`` not declared
    otherwise."""
    from onnx import helper

    out = ModelProto()
    out.CopyFrom(m)
    g = out.graph
    declared = {vi.name for vi in (*g.input, *g.output, *g.value_info)} | {t.name for t in g.initializer}
    g.value_info.extend(helper.make_tensor_value_info(name, elem, list(dims))
                        for name, (dims, elem) in static.items() if name not in declared)
    return out


def visible_to_runtime(failure: UnreachedFailure, rejections: list) -> bool:
    """Whether onnx's strict inference rejects the same node in the same outer node: then
    onnxruntime, whose load runs the same inference, refuses the model."""
    path = failure.path
    return any(chain[-1] == path[-1] and chain[0] == path[0] and len(chain) > 1 for chain in rejections)


def readable_by_onnx_inference(m: ModelProto) -> ModelProto:
    """m, or a copy that onnx's C++ inference can read without aborting the process: dims
    written ``dim_value: -1`` (a dynamic dim, to onnx.checker and onnxruntime) left blank, and
    a Split whose num_outputs differs from its outputs (an assertion fails in its inference;
    onnxruntime dies of it at load) without that attribute, which onnx's inference then rejects
    as a Split given neither sizes nor a count -- so the node still reads as refused."""
    def declared(g):
        for vi in (*g.input, *g.output, *g.value_info):
            if vi.type.HasField("tensor_type"):
                yield from vi.type.tensor_type.shape.dim

    def bad_split(n):
        return n.op_type == "Split" and n.domain in ("", "ai.onnx") and any(
            a.name == "num_outputs" and a.i != len(n.output) for a in n.attribute)

    def node_lists(model):
        return [g.node for g in graphs_of(model)] + [f.node for f in model.functions]

    if not any(d.HasField("dim_value") and d.dim_value < 0 for g in graphs_of(m) for d in declared(g)) \
            and not any(bad_split(n) for nodes in node_lists(m) for n in nodes):
        return m
    out = ModelProto()
    out.CopyFrom(m)
    for g in graphs_of(out):
        for d in declared(g):
            if d.HasField("dim_value") and d.dim_value < 0:
                d.Clear()
    for nodes in node_lists(out):
        for n in nodes:
            if bad_split(n):
                kept = [a for a in n.attribute if a.name != "num_outputs"]
                del n.attribute[:]
                n.attribute.extend(kept)
    return out
