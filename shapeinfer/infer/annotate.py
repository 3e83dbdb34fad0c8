"""Writing inferred shapes into a copy of the model (``infer_shapes``): value_info and graph
outputs, the author's declared dims kept, symbolic dims in the printed syntax."""

from __future__ import annotations

from typing import Optional

import numpy as np
from onnx import ModelProto, TypeProto

from ..modelio.wire import graph_patch, tensor_value_info, type_bytes
from ..semantics import LOAD_SAFE_DIM, shape_loads
from ..symbolic import NAME_RE, Dim, to_str
from .facts import Fact
from .protos import (clear_negative_dims, fill_shape_proto, mark_written_by_shapeinfer, nested_tensor_types, type_from_fact,
                     value_infos)
from .result import InferenceResult


def loadable_shape(shape):
    """``shape`` as it is written into a model: where onnxruntime's load-time inference could
    not take it (semantics.shape_loads: a static dim past LOAD_SAFE_DIM, static dims that multiply
    past int64), its static dims above 1 unknown (None)."""
    if shape is None or shape_loads(shape):
        return shape
    return tuple(None if type(d) is int and d > 1 else d for d in shape)


def written_shape(shape):
    """``shape`` as annotate writes it on a value_info or an output: loadable_shape, and a
    static 0 left unknown. onnxruntime's rewrites at its default level mishandle what they know
    to be empty: ExpandElimination drops an Expand whose constant target holds a 0 (it takes
    broadcasting 1 to 0 for no change), ReshapeFusion writes -1 beside a copied 0 dim; a 0
    written here would let its constant folding make such a target out of Shape nodes."""
    shape = loadable_shape(shape)
    if shape is None or 0 not in shape:
        return shape
    return tuple(None if type(d) is int and d == 0 else d for d in shape)


MAX_GUARD = 8  # parentheses tried around a written dim before it is left unknown


def reserved_names(model: ModelProto, rewritten=frozenset()) -> frozenset:
    """The dim_params the model keeps that the printed syntax could spell for another dim: those
    that are no identifier (``a*b``, ``N+1``, ``2*N``, ``'x'`` -- an identifier is a symbol's own
    name, and written only for that symbol), in every declared type but the main graph's
    outputs and value_info named in ``rewritten`` (annotate writes those: such a name there gives
    way). onnxruntime's fusions take two equal dim_params for one size, so a written dim must
    never spell one of these (see guarded_shape)."""
    from ..graph.structure import subgraphs_of

    g = model.graph

    def infos():
        yield from (vi for vi in (*g.input, *g.output, *g.value_info) if vi.name not in rewritten)
        for n in g.node:
            for body in subgraphs_of(n):
                yield from value_infos(body)
        for f in model.functions:
            yield from getattr(f, "value_info", ())
            for n in f.node:
                for body in subgraphs_of(n):
                    yield from value_infos(body)

    # (a name that is not valid UTF-8 comes as bytes: it spells no text written here)
    return frozenset(p for vi in infos() for tt in nested_tensor_types(vi.type) for d in tt.shape.dim
                     for p in (d.dim_param,) if p and type(p) is str and not NAME_RE.match(p))


def guarded_shape(shape, reserved: frozenset):
    """``shape`` with every symbolic dim whose printed form is a reserved name (reserved_names)
    given as other text that reads back as the same dim -- in parentheses, ``(a*b)`` -- or, past
    MAX_GUARD, left unknown (None). A str in the shape is a dim already given as text."""
    if not reserved or shape is None:
        return shape
    out = list(shape)
    for i, d in enumerate(shape):
        if d is None or type(d) is int:
            continue
        text = to_str(d)
        if text not in reserved:
            continue
        for _ in range(MAX_GUARD):
            text = f"({text})"
            if text not in reserved:
                out[i] = text
                break
        else:
            out[i] = None
    return tuple(out)


def guarded_name(reserved: frozenset):
    """A dim's dim_param for fill_shape_proto/type_from_fact, guarded as guarded_shape says (a
    dim that cannot be guarded is written as an unnamed placeholder)."""
    def name(d) -> str:
        text = guarded_shape((d,), reserved)[0]
        return "" if text is None else text if type(text) is str else to_str(text)

    return name


def _loadable_type(tp: TypeProto) -> TypeProto:
    """A sequence's or optional's type as it is written: ``tp``, or a copy whose static dims are
    unknown where onnxruntime could not take them (as loadable_shape does). (Such types are few.)"""
    out = TypeProto()
    out.CopyFrom(tp)
    cleared, stack = False, [out]
    while stack:
        t = stack.pop()
        kind = t.WhichOneof("value")
        if kind in ("tensor_type", "sparse_tensor_type"):
            dims = getattr(t, kind).shape.dim
            if not shape_loads([d.dim_value for d in dims if d.HasField("dim_value")]):
                for d in dims:
                    if d.dim_value > 1:
                        d.Clear()
                        cleared = True
        elif kind in ("sequence_type", "optional_type"):
            stack.append(getattr(t, kind).elem_type)
        elif kind == "map_type":
            stack.append(t.map_type.value_type)
    return out if cleared else tp


def _merge_dim(dim_proto, ours: Dim, result: InferenceResult, input_names: set, kept: dict,
               reserved: frozenset) -> None:
    """Write our dim into a declared one. Where ours is known it is written (``[batch,seq]``
    declared on a Transpose's output gives way to ``[seq,batch]``; an exporter's placeholder
    such as ``MatMuloutput_dim_0`` to the inferred dim -- what it equals stays in
    result.declared_dims()). Where ours is unknown the author's dim stays: a size, a name of the
    graph inputs' dims that reads as itself in the printed syntax (``batch``, not ``1``), or
    another name that stands for one dim only (``kept``, see _consistent_names). A dim past
    LOAD_SAFE_DIM is left unknown, the author's too (``loadable_shape``)."""
    if dim_proto.dim_value > LOAD_SAFE_DIM:  # (ours never is: _write_type merges only shapes that load)
        dim_proto.Clear()
        return
    if dim_proto.dim_param:
        name = dim_proto.dim_param
        if result.is_unknown_dim(ours) and (name in kept or (name in input_names and NAME_RE.match(name))):
            return  # where inference knows nothing, the author's name
        dim_proto.Clear()
    if dim_proto.HasField("dim_value") and result.is_unknown_dim(ours):
        return
    if isinstance(ours, int):
        if ours == 0 and not dim_proto.HasField("dim_value"):
            dim_proto.Clear()  # (a 0 is not written: see written_shape)
        else:
            dim_proto.dim_value = ours
    elif not result.is_unknown_dim(ours) or not dim_proto.HasField("dim_value"):
        text = guarded_shape((ours,), reserved)[0]
        if text is None:
            dim_proto.Clear()
        else:
            dim_proto.dim_param = text if type(text) is str else to_str(text)


def _write_type(dst: TypeProto, fact: Fact, result: InferenceResult, keep_declared: bool,
                input_names: set, kept: dict, reserved: frozenset) -> None:
    """Write fact into a declared value's type, keeping the author's dims where they are given
    (unless the inputs were overridden: then the declared names may describe other shapes)."""
    if fact.type_proto is not None or not fact.dtype:
        return
    tt = dst.tensor_type
    tt.elem_type = fact.dtype
    if fact.shape is None:
        return
    declared = list(tt.shape.dim) if tt.HasField("shape") else None
    if keep_declared and declared is not None and len(declared) == len(fact.shape) and shape_loads(fact.shape):
        for dim_proto, ours in zip(tt.shape.dim, fact.shape):
            _merge_dim(dim_proto, ours, result, input_names, kept, reserved)
        return
    tt.ClearField("shape")
    tt.shape.SetInParent()
    fill_shape_proto(tt.shape, guarded_shape(written_shape(fact.shape), reserved))


def _consistent_names(graph, result: InferenceResult, input_names: set) -> set:
    """The declared dim names (outputs, value_info) that may be kept where inference does not
    know the dim: those kept for one dim only. A placeholder an exporter put on two outputs
    (``out_dim_0`` for both ``[C*x_1]`` and ``[x_1,C]``) claims they are equal; kept on both,
    it would write that claim -- it gives way to the inferred dims instead. So does a name that
    does not read as itself in the printed syntax (``2*N``) or that is a symbol's."""
    seen: dict = {}
    for vi in list(graph.output) + list(graph.value_info):
        fact = result.facts.get(vi.name)
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if fact is None or fact.shape is None or tt is None or not tt.HasField("shape") \
                or len(tt.shape.dim) != len(fact.shape):
            continue
        for dim_proto, ours in zip(tt.shape.dim, fact.shape):
            if dim_proto.dim_param and result.is_unknown_dim(ours) and dim_proto.dim_param not in input_names:
                seen.setdefault(dim_proto.dim_param, set()).add(ours)
    # an identifier only (another name, '2*N', reads as an expression in a model shapeinfer wrote),
    # and no symbol's name (it would read as that symbol)
    in_use = set(result.symbols())
    return {name for name, dims in seen.items() if len(dims) == 1 and NAME_RE.match(name) and name not in in_use}


def _declarations_kept(graph, result: InferenceResult, functions=()) -> set:
    """The tensors whose declarations are left as the model has them: for each If -- in the main
    graph or nested in a body -- the tensors its branches read from the graphs around it (both
    branches where the condition is not known, the one never taken where it is: from the main
    graph, which inference knows, or from a Constant node of that body), with all they are
    computed from (through the bodies around it, a body's input counting as the inputs of the
    node whose body it is), and the outputs of such an If of the main graph whose condition is
    known. For a call of a model-local function holding an If (in a function it calls too),
    whose condition may be decided at that call: what the call reads, with all it is computed
    from. onnxruntime checks both branches when it loads a model, with the types declared on
    what they read and make, and what its own inference computes from them: a shape the taken
    branch gives (the If's output), a shape the other branch was never meant to see (a 3-D grid
    read by the 2-D branch of AffineGrid's function, which squeezes a dim that is then 4), or one
    that a branch a run may not take contradicts (a Split whose sizes do not sum to a dim written
    as 3: at run time that branch would fail, but onnxruntime refuses the whole model at load)
    makes it refuse the model. Their declarations are left as the model has them, so that
    onnxruntime sees what it saw. So are what a Loop with scan outputs reads (at 0 iterations
    onnxruntime makes those outputs from the body's inferred shapes)."""
    from ..graph.structure import calls_function, functions_holding_if, implicit_inputs, subgraphs_of

    out: set = set()
    if not getattr(result, "saw_if", True) and not functions:
        return out  # (no If inferred, none to decide; no function to call one: nothing to walk for)
    reads: list = []
    with_if = functions_holding_if(functions) if functions else frozenset()
    made: dict = {}  # name -> the node that makes it, in any graph (a body's input: its owner node)
    stack = [(graph, frozenset())]  # (a graph, the names the bodies around it define: not the main graph's)
    while stack:
        g, shadowing = stack.pop()
        main = g is graph
        local = frozenset() if main else shadowing | {t.name for t in g.input} | {t.name for t in g.initializer} \
            | {o for n in g.node for o in n.output if o}
        consts = {} if main else _constant_nodes(g)
        for n in g.node:
            op = n.op_type
            for o in n.output:
                if o:
                    made.setdefault(o, n)
            if with_if and calls_function(n, with_if):
                reads.extend(i for i in n.input if i)
            if op == "Loop" and n.domain in ("", "ai.onnx"):
                body = next(subgraphs_of(n, ("body",)), None)
                if body is not None and len(body.output) > len(n.input) - 1:
                    # a Loop with scan outputs: at 0 iterations onnxruntime makes them empty with
                    # the shape its own inference gives the body's outputs -- from the types of
                    # what the body reads, which a written shape would change
                    reads.extend(implicit_inputs(n, ("body",)))
            if op == "If" and n.domain in ("", "ai.onnx") and n.input:
                cond = n.input[0]
                value = consts.get(cond)
                if value is None and cond not in local:  # (the main graph's tensor, not a body's namesake)
                    fact = result.facts.get(cond)
                    value = fact.value if fact is not None else None
                if value is not None and value.size == 1:
                    if main:
                        out.update(o for o in n.output if o)
                    e = value.reshape(-1)[0]
                    # (an element that is not a plain number -- a dim, unknown --: both branches)
                    never = ("else_branch" if bool(e) else "then_branch",) if isinstance(
                        e, (bool, int, float, np.bool_, np.number)) else None
                    reads.extend(implicit_inputs(n, never))
            for body in subgraphs_of(n):
                for vi in body.input:
                    made.setdefault(vi.name, n)
                stack.append((body, local))
    out |= with_producers(made, reads)
    return out


def with_producers(made: dict, reads: list) -> set:
    """The names in ``reads`` and every tensor they are computed from (with the other outputs of
    the nodes that make them): one walk back over their producers, ``made`` (name -> the node
    that makes it; a body's input: the node whose body it is)."""
    from ..graph.structure import implicit_inputs

    out: set = set()
    reads = list(reads)
    while reads:
        name = reads.pop()
        if name in out:
            continue
        out.add(name)
        node = made.get(name)
        if node is not None:
            out.update(o for o in node.output if o)
            reads.extend(i for i in node.input if i)
            reads.extend(implicit_inputs(node))
    return out


def guarded_reads(graph, holders: list) -> set:
    """What the main graph's nodes holding code that fails if it runs (InferenceResult.guarded)
    read -- their inputs and what their bodies read from outside -- with what that is computed
    from: onnxruntime's load-time inference must see it as it does in the model."""
    from ..graph.structure import implicit_inputs

    reads = []
    for node in holders:
        if node.op_type != "If":  # (an If's condition is no type its branches read)
            reads.extend(i for i in node.input if i)
        reads.extend(implicit_inputs(node))
    return with_producers({o: n for n in graph.node for o in n.output if o}, reads) if reads else set()


def _constant_nodes(graph) -> dict:
    """output name -> value of the graph's Constant nodes holding a one-element tensor."""
    from .protos import value_from_tensor

    out = {}
    for n in graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and len(n.attribute) == 1 and n.output:
            a = n.attribute[0]
            value = value_from_tensor(a.t) if a.name == "value" and a.type == a.TENSOR else None
            if value is not None and value.size == 1:
                out[n.output[0]] = value
    return out


def annotate(model: ModelProto, result: InferenceResult, input_shapes: Optional[dict] = None,
             in_place: bool = False) -> ModelProto:
    """A copy of ``model`` whose value_info and graph outputs carry the inferred shapes.

    Dims declared on outputs and value_info are kept where inference does not know them, and
    names of the graph inputs' dims are kept; other declared names give way to the inferred dim
    (what they equal is in ``result.declared_dims()``). Graph inputs named in
    ``input_shapes`` get the overriding shape written in, and then the inferred shapes replace
    the declared ones everywhere. ``in_place``: write into ``model`` itself and return it."""
    if in_place:
        out = model
    else:
        out = ModelProto()
        out.CopyFrom(model)
    mark_written_by_shapeinfer(out)
    g = out.graph
    clear_negative_dims(g)
    facts = result.facts
    overridden = {vi.name for vi in g.input if input_shapes and (vi.name in input_shapes or vi.name in result.fixed_inputs)
                  and facts.get(vi.name) is not None and facts[vi.name].shape is not None}
    known_elsewhere = {i.name for i in g.input} | {t.name for t in g.initializer}
    known_elsewhere |= _declarations_kept(g, result, out.functions)
    if getattr(result, "guarded", None):
        known_elsewhere |= guarded_reads(model.graph, result.guarded)
    reserved = reserved_names(out, overridden | {vi.name for vi in (*g.output, *g.value_info)
                                                 if vi.name not in known_elsewhere and facts.get(vi.name) is not None})
    for vi in g.input:
        if vi.name in overridden:
            vi.type.tensor_type.ClearField("shape")
            vi.type.tensor_type.shape.SetInParent()
            fill_shape_proto(vi.type.tensor_type.shape, guarded_shape(loadable_shape(facts[vi.name].shape), reserved))
    outputs = {o.name: o for o in g.output}
    existing = {vi.name: vi for vi in g.value_info}
    inits = {t.name for t in g.initializer}
    input_names = {d.dim_param for i in g.input if i.name not in inits and i.type.HasField("tensor_type")
                   for d in i.type.tensor_type.shape.dim if d.dim_param}
    kept = _consistent_names(g, result, input_names)
    appended: list = []  # new value_info entries, as wire bytes (see modelio/wire.py)
    by_kid: dict = {}  # Fact.kid -> its type's bytes (facts with one number have one type)
    for name in result.tensor_names():
        fact = facts.get(name)
        if fact is None or name in known_elsewhere:
            continue
        if name in outputs:
            _write_type(outputs[name].type, fact, result, not input_shapes, input_names, kept, reserved)
            continue
        vi = existing.get(name)
        if vi is None:
            if fact.type_proto is not None:
                vi = g.value_info.add()
                vi.name = name
                vi.type.CopyFrom(_loadable_type(type_from_fact(fact, guarded_name(reserved))))
            elif fact.dtype:
                kid = fact.kid
                if kid is None:
                    appended.append(tensor_value_info(name, fact.dtype, guarded_shape(written_shape(fact.shape), reserved)))
                else:
                    tb = by_kid.get(kid)
                    if tb is None:
                        tb = by_kid[kid] = type_bytes(fact.dtype, guarded_shape(written_shape(fact.shape), reserved))
                    appended.append(tensor_value_info(name, fact.dtype, fact.shape, tb))
            continue
        _write_type(vi.type, fact, result, not input_shapes, input_names, kept, reserved)
    if appended:
        out.MergeFromString(graph_patch(appended))
    return out


MAX_LOAD_ROUNDS = 3  # guard rounds before the written shapes are given up


def annotate_loadable(model: ModelProto, result: InferenceResult, input_shapes: Optional[dict] = None,
                      in_place: bool = False) -> ModelProto:
    """``annotate``, then onnxruntime's load-time view of what it wrote: where onnx's strict
    inference (what onnxruntime's load runs) now rejects a node it accepted in ``model`` -- a
    branch that fails if it runs, a TopK valid only on an empty tensor, once the shapes it reads
    are written --, what that node (or the main-graph node holding it) reads is guarded (left as
    ``model`` has it) and the shapes are written again; after MAX_LOAD_ROUNDS, none are."""
    from .unreached import onnx_rejections

    snapshot = _declarations(model) if in_place else None
    before = None  # what onnx's inference rejects in the model as given (computed only if needed)
    for _ in range(MAX_LOAD_ROUNDS):
        out = annotate(model, result, input_shapes, in_place=in_place)
        after = {tuple(c) for c in onnx_rejections(out)}
        if not after:
            return out
        if before is None:
            if in_place:
                _restore(model, snapshot)
            before = {tuple(c) for c in onnx_rejections(model)}
            if in_place:
                out = annotate(model, result, input_shapes, in_place=True)
        new = after - before
        if not new:
            return out
        holders = [n for n in model.graph.node if any((n.op_type, n.name) == c[0] for c in new)]
        if not holders or all(any(h is n for n in result.guarded) for h in holders):
            break
        result.guarded.extend(holders)
        if in_place:
            _restore(model, snapshot)
    if in_place:  # the shapes are given up: the model as it was
        _restore(model, snapshot)
        return model
    out = ModelProto()
    out.CopyFrom(model)
    return out


def _declarations(model: ModelProto) -> tuple:
    """Copies of what annotate writes into a model (its inputs', outputs' and value_info's
    declarations and the metadata), to put back."""
    g = model.graph
    return ([_copied(v) for v in g.input], [_copied(v) for v in g.output], [_copied(v) for v in g.value_info],
            [_copied(p) for p in model.metadata_props])


def _copied(message):
    out = type(message)()
    out.CopyFrom(message)
    return out


def _restore(model: ModelProto, snapshot: tuple) -> None:
    g = model.graph
    for field, saved in zip((g.input, g.output, g.value_info, model.metadata_props), snapshot):
        del field[:]
        field.extend(saved)
