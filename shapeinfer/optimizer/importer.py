"""The model as an onnx-graphsurgeon graph, built the way ``gs.import_onnx`` builds it.

onnx-graphsurgeon's importer defines three closures and formats log messages for every node; on
a 50,000-node graph that is most of the import. For the common model -- no model-local
functions, no sparse initializers, no node with a subgraph -- the graph is built here directly
with onnx-graphsurgeon's own classes and its tensor and attribute converters, to the same
objects in the same order (tests/test_importer.py exports both and compares the bytes); any
other model goes through ``gs.import_onnx``.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from typing import Optional

from onnx import AttributeProto, ModelProto, OperatorSetIdProto

from ..errors import ModelLoadError
from .passes.constant_folding import movable_value, take_value
from .passes.graph_ops import own_proto

_SUBGRAPH_ATTRS = frozenset({AttributeProto.GRAPH, AttributeProto.GRAPHS})


def import_model(gs, model: ModelProto, move_constants: Optional[int] = None, io=None) -> tuple:
    """(the onnx-graphsurgeon Graph of ``model``, which is not changed; every tensor of its
    main graph, made for it; (NodeProto, gs.Node) for each node built, or None when onnx-
    graphsurgeon's importer built them, one node per NodeProto, in order).

    ``move_constants`` (fold-constants' budget, when that pass runs): a Constant node whose
    value is a plain tensor of at most that many bytes becomes the constant tensor it makes,
    as fold-constants would make it in its first run (constant_folding._move_constant),
    without a node to build, visit and remove. ``io``: the main graph's NodeIO
    (graph.structure.validate_structure), whose names are not read again."""
    from onnx_graphsurgeon.importers.onnx_importer import OnnxImporter

    g = model.graph
    if model.functions or g.sparse_initializer:
        return _imported(gs, gs.import_onnx(model))
    nodes = g.node
    for n in nodes:
        for a in n.attribute:
            if a.type in _SUBGRAPH_ATTRS:
                return _imported(gs, gs.import_onnx(model))
    opset = OnnxImporter.get_opset(model)
    domains = _own_domains(model.opset_import)
    import_tensor = OnnxImporter.import_tensor
    import_attributes = OnnxImporter.import_attributes
    Variable = gs.Variable
    tensors: dict = {}
    for t in g.initializer:
        if t.name not in tensors:
            tensors[t.name] = import_tensor(t)
    for vi in g.value_info:  # repeated entries fill in what the first one left out
        have = tensors.get(vi.name)
        if have is None:
            tensors[vi.name] = import_tensor(vi)
        elif isinstance(have, Variable):
            other = import_tensor(vi)
            have.dtype = have.dtype or other.dtype
            have.shape = have.shape or other.shape
    init_names = {t.name for t in g.initializer}
    inputs = []
    for vi in g.input:
        if vi.name not in init_names:
            t = tensors.get(vi.name)
            if t is None:
                t = tensors[vi.name] = import_tensor(vi)
            inputs.append(t)
    outputs = []
    for vi in g.output:
        t = tensors.get(vi.name)
        if t is None:
            t = tensors[vi.name] = import_tensor(vi)
        outputs.append(t)
    made, built = [], []  # the gs nodes, and the NodeProto each was built from
    get = tensors.get
    new_node, new_variable = (_direct_node, _direct_variable) if _layout_known(gs) else (_node, _variable)

    def tensor(name):  # a tensor no initializer, value_info or earlier node made: a new Variable
        t = get(name)
        if t is None:
            t = new_variable(gs, name)
            if name:  # (each omitted optional input or output is a tensor of its own)
                tensors[name] = t
        return t

    if io is None or len(io.nodes) != len(nodes):
        io_ins = [n.input[:] for n in nodes]
        io_outs = [n.output[:] for n in nodes]
    else:
        nodes, io_ins, io_outs = io.nodes, io.ins, io.outs
    for n, names_in, names_out in zip(nodes, io_ins, io_outs):
        if move_constants is not None and n.op_type == "Constant" and _movable(n, move_constants):
            take_value(tensor(names_out[0]), n.attribute[0].t)
            continue
        ins = [get(name) or tensor(name) for name in names_in]  # (a tensor is always true)
        outs = [get(name) or tensor(name) for name in names_out]
        attrs = n.attribute
        if len(attrs):
            attrs = import_attributes(attrs, {}, tensors, opset, domains)
            _own_values(gs, attrs)
        else:
            attrs = OrderedDict()
        made.append(new_node(gs, n.op_type, n.name, attrs, ins, outs, n.domain if n.HasField("domain") else None))
        built.append(n)
    # (built without its nodes, which are then set: the constructor walks every node for
    # subgraph functions to merge, and these nodes have no subgraph)
    graph = gs.Graph(nodes=[], inputs=inputs, outputs=outputs, name=g.name, doc_string=g.doc_string,
                     producer_name=model.producer_name, producer_version=model.producer_version, opset=opset,
                     import_domains=domains, functions=[], ir_version=model.ir_version)
    graph.nodes = made
    return graph, list(tensors.values()), list(zip(built, made))


def _own_domains(opset_import) -> list:
    """Copies of the opset imports: onnx-graphsurgeon keeps the model's (or function's) own
    repeated field and its export adds the domains it finds missing to it -- to the model given."""
    out = []
    for o in opset_import:
        c = OperatorSetIdProto()
        c.CopyFrom(o)
        out.append(c)
    return out


def _imported(gs, graph) -> tuple:
    graph.import_domains = _own_domains(graph.import_domains or ())
    for f in getattr(graph, "functions", ()):
        f.import_domains = _own_domains(f.import_domains or ())

    stack = [graph, *getattr(graph, "functions", ())]
    while stack:  # (every node's attributes, the bodies' and functions' too: see _own_values)
        g = stack.pop()
        _check_dims(g.inputs, g.outputs)
        for node in g.nodes:
            _own_values(gs, node.attrs)
            _check_dims(node.inputs, node.outputs)
            stack.extend(v for v in node.attrs.values() if isinstance(v, gs.Graph))
    return graph, list(graph.tensors().values()), None


def _check_dims(*groups) -> None:
    """A declared dim that is not valid UTF-8 (a body's: the main graph's are read by inference)
    reads as bytes: an error naming it, not onnx's ValueError at export."""
    for group in groups:
        for t in group:
            for d in getattr(t, "shape", None) or ():
                if type(d) is bytes:
                    raise ModelLoadError(f"the dim {d!r} of {t.name!r} is not valid UTF-8; the file is corrupt")


def _own_values(gs, attrs) -> None:
    """A tensor attribute (a Constant node's value, ConstantOfShape's) imported as a constant
    that reads the caller's TensorProto: when that proto has no name, it becomes a copy. The
    export writes the constant's name into the proto it reads, and "" written is a field set
    (the model given would change)."""
    from onnx_graphsurgeon.ir.tensor import LazyValues

    for v in attrs.values():
        if isinstance(v, gs.Constant) and isinstance(v._values, LazyValues):
            proto = v._values.tensor
            if not proto.HasField("name") or proto.name != v.name:
                own_proto(v)


# onnx-graphsurgeon's constructors route every field through __setattr__ overrides; the objects
# are built here with the same fields directly -- only where a probe shows that its classes
# have exactly the fields this module knows (else through the constructors).

_NODE_FIELDS = {"op", "name", "attrs", "inputs", "outputs", "domain"}
_VARIABLE_FIELDS = {"name", "inputs", "outputs", "dtype", "shape", "type"}
_LIST_FIELDS = {"parent_obj", "field_name"}


def _layout_known(gs) -> bool:
    known = getattr(_layout_known, "cache", None)
    if known is None:
        known = False
        # (a version laid out otherwise takes other constructor arguments or holds other fields:
        # read without calling what may not be there)
        takes = set(inspect.signature(gs.Node.__init__).parameters)
        if {"op", "name", "attrs", "inputs", "outputs", "domain"} <= takes:
            probe = gs.Node("Probe", name="p", attrs=OrderedDict(), inputs=[], outputs=[], domain=None)
            var = gs.Variable("v")
            known = (set(vars(probe)) == _NODE_FIELDS and set(vars(var)) == _VARIABLE_FIELDS
                     and set(vars(probe.inputs)) == _LIST_FIELDS and getattr(var, "type", None) == "tensor_type"
                     and all(getattr(lst, "field_name", None) == want for lst, want in (
                         (probe.inputs, "outputs"), (probe.outputs, "inputs"), (var.inputs, "outputs"),
                         (var.outputs, "inputs"))))
        _layout_known.cache = known
    return known


def _synced(gs, owner, field_name: str, items: list):
    cls = gs.util.misc.SynchronizedList
    lst = cls.__new__(cls)
    d = lst.__dict__  # (its two fields, as the probe found them)
    d["parent_obj"], d["field_name"] = owner, field_name
    if items:
        list.extend(lst, items)
    return lst


def _direct_node(gs, op, name, attrs, inputs, outputs, domain):
    node = object.__new__(gs.Node)
    d = node.__dict__
    d["op"], d["name"], d["attrs"] = op, name or "", attrs
    d["inputs"] = _synced(gs, node, "outputs", inputs)
    d["outputs"] = _synced(gs, node, "inputs", outputs)
    d["domain"] = domain
    for t in inputs:
        list.append(t.outputs, node)
    for t in outputs:
        list.append(t.inputs, node)
    return node


def _direct_variable(gs, name):
    var = object.__new__(gs.Variable)
    d = var.__dict__
    d["name"] = name
    d["inputs"] = _synced(gs, var, "outputs", [])
    d["outputs"] = _synced(gs, var, "inputs", [])
    d["dtype"] = d["shape"] = None
    d["type"] = "tensor_type"
    return var


def _node(gs, op, name, attrs, inputs, outputs, domain):
    return gs.Node(op=op, name=name, attrs=attrs, inputs=inputs, outputs=outputs, domain=domain)


def _variable(gs, name):
    return gs.Variable(name) if name else gs.Variable.empty()


def _movable(node, budget: int) -> bool:
    """A Constant node of the default domain whose one attribute is ``value``, a tensor
    fold-constants moves as it is (constant_folding.movable_value), with one output."""
    if node.domain not in ("", "ai.onnx") or len(node.attribute) != 1 or len(node.output) != 1 or not node.output[0]:
        return False
    a = node.attribute[0]
    return a.name == "value" and a.type == AttributeProto.TENSOR and not a.ref_attr_name \
        and movable_value(a.t, budget)
