"""onnx-graphsurgeon, contained: the one module that imports it or touches its internals.

The passes edit an onnx-graphsurgeon graph through its public classes, re-exported here
(``Graph``, ``Node``, ``Constant``, ``Variable``: no wrapper, no other graph model). Everything
that knows more of the library than those classes' public fields lives below:

- **import** (``import_model``): the graph, built directly where ``gs.import_onnx`` would spend
  most of its time in closures and log formatting (``build_graph``: the same objects, in the same
  order -- tests/test_importer.py exports both and compares the bytes), then patched where the
  library loses something: an empty list attribute (it cannot export one), an attribute it
  skips (a sparse tensor: a ``HeldAttribute``), declared types of kinds it cannot write (an
  optional, a map), a call's overload, an initializer that is also a graph input (it drops the
  input). A subgraph initializer that reuses an outer name is refused here
  (graph.structure.shadowed_name): the library resolves such a name to the outer tensor, and
  runtimes disagree on which one the body reads.
- **export** (``export_model``): each node written once, in place, with the library's own
  converters (``export_graph``: the graph ``gs.export_onnx`` writes, less the value_info the
  optimizer drops -- tests/test_exporter.py compares them at every export), what the import
  patched written back, and the model's own fields copied from the model given.
- **release**: the graph's reference cycles broken once it is exported.
- **constants**: the exact values a ``Constant`` holds (``constant_array``, through the
  TensorProto the library keeps, so bfloat16/float8/int4 stay what they are), new constants
  holding an array exactly (``constant``, ``make_constant``) or a TensorProto as it is
  (``take_value``), the TensorProto a constant reads (``stored_proto``, ``own_proto``).
- **edits** of a node's inputs and outputs that keep the library's two-way links by identity
  (``set_input``, ``pop_input``, ``clear_inputs``, ``clear_outputs``, ``replace_uses``).
- **walks** over graphs and bodies (``all_nodes``, ``outer_variables``, ``in_topological_order``).
- **folding**: a node's attributes as plain values and its NodeProto, for ``shapeinfer.fold``
  (which works on arrays and protos and does not know this library).
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from onnx import AttributeProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, helper, numpy_helper
from onnx_graphsurgeon import Constant, Graph, Node, Tensor, Variable, import_onnx
from onnx_graphsurgeon.exporters.onnx_exporter import OnnxExporter
from onnx_graphsurgeon.importers.onnx_importer import OnnxImporter
from onnx_graphsurgeon.ir.tensor import LazyValues, SparseValues
from onnx_graphsurgeon.logger import G_LOGGER
from onnx_graphsurgeon.util.misc import SynchronizedList

from ..errors import CannotDecide, ModelLoadError, UnsupportedModelError
from ..graph.structure import node_label, shadowed_name, shadowing_message
from ..infer.protos import clear_negative_dims
from ..modelio.tensors import read_tensor

__all__ = ["Constant", "Graph", "HeldAttribute", "Imported", "Node", "Variable", "all_nodes", "build_graph",
           "clear_inputs", "clear_outputs", "constant", "constant_array", "export_graph", "export_model", "fold_attrs",
           "held_constant", "import_model", "in_topological_order", "make_constant", "node_proto", "outer_variables",
           "own_proto", "pop_input", "release", "replace_uses", "set_input", "stored_proto", "take_value",
           "variable_for"]

_SUBGRAPH_ATTRS = frozenset({AttributeProto.GRAPH, AttributeProto.GRAPHS})
_LIST_TYPES = frozenset({AttributeProto.INTS, AttributeProto.FLOATS, AttributeProto.STRINGS, AttributeProto.TENSORS,
                         AttributeProto.GRAPHS, AttributeProto.SPARSE_TENSORS, AttributeProto.TYPE_PROTOS})
# the kinds of declared types the library writes (another, such as an optional, fails inside it)
_GS_TYPES = ("tensor_type", "sequence_type", "sparse_tensor_type")


# ---------------------------------------------------------------- import


@dataclass
class Imported:
    """What ``import_model`` made of a model: the graph the passes edit, and what
    ``export_model`` and ``release`` need to write it back and free it."""

    graph: Graph
    tensors: list  # every tensor of the main graph, as imported
    has_subgraphs: bool  # some node may hold a graph (False: built directly, no node holds one)
    opaque: frozenset  # ids of the nodes holding a HeldAttribute (kept as it is, never read)
    overridable: set  # initializers that are graph inputs too: Variables now, written back after export
    nodes: list  # every node as imported, bodies' too (release: passes drop some from the graph)
    attr_patches: dict  # id(node) -> [(name, type)]: empty lists and HeldAttributes (_unexportable_attributes)
    other_types: Optional[dict]  # declared types the library cannot write (_other_types)
    overloads: dict  # id(node) -> a call's overload, which the library drops


def import_model(model: ModelProto, *, move_constant: Optional[Callable] = None, io=None) -> Imported:
    """The model (not changed) as an onnx-graphsurgeon graph, with what the library would lose
    kept aside for ``export_model``. ``move_constant`` (a predicate on a TensorProto, when
    fold-constants runs): a Constant node whose value is a plain tensor it accepts becomes the
    constant tensor it makes, without a node (see build_graph). ``io``: the main graph's NodeIO
    (graph.structure.validate_structure), whose names are not read again.

    Raises UnsupportedModelError for a subgraph initializer that reuses a name the graphs around
    it define (graph.structure.SHADOWING), ModelLoadError for a declared dim that is not UTF-8."""
    G_LOGGER.severity = G_LOGGER.ERROR  # its warnings (and its hint to install colors) are not ours
    graph, tensors, pairs = build_graph(model, move_constant, io)
    nodes = list(all_nodes(graph))
    attr_patches = _unexportable_attributes(model.graph, graph, pairs)
    other_types = _other_types(model.graph, graph, bodies=pairs is None)  # (before any rewrite: by position)
    overloads = {id(gn): pn.overload for pn, gn in (pairs if pairs is not None else _node_pairs(model.graph, graph))
                 if pn.overload} if any(f.overload for f in model.functions) else {}
    overridable = _keep_overridable_inputs(graph, model)
    return Imported(graph=graph, tensors=tensors, has_subgraphs=pairs is None,
                    opaque=frozenset(k for k, held in attr_patches.items() if any(t is None for _, t in held)),
                    overridable=overridable, nodes=nodes, attr_patches=attr_patches, other_types=other_types,
                    overloads=overloads)


def build_graph(model: ModelProto, move_constant: Optional[Callable] = None, io=None) -> tuple:
    """(the onnx-graphsurgeon Graph of ``model``, built the way ``gs.import_onnx`` builds it;
    every tensor of its main graph, made for it; (NodeProto, Node) for each node built, or None
    when the library's importer built them, one node per NodeProto, in order).

    onnx-graphsurgeon's importer defines three closures and formats log messages for every
    node; on a 50,000-node graph that is most of the import. For the common model -- no
    model-local functions, no sparse initializers, no node with a subgraph -- the graph is built
    here directly with the library's own classes and its tensor and attribute converters, to
    the same objects in the same order; any other model goes through ``gs.import_onnx``.
    ``move_constant``, ``io``: see import_model."""
    g = model.graph
    if model.functions or g.sparse_initializer:
        return _imported(_import_onnx(model))
    nodes = g.node
    for n in nodes:
        for a in n.attribute:
            if a.type in _SUBGRAPH_ATTRS:
                return _imported(_import_onnx(model))
    opset = OnnxImporter.get_opset(model)
    domains = _own_domains(model.opset_import)
    import_tensor = OnnxImporter.import_tensor
    import_attributes = OnnxImporter.import_attributes
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
    made, built = [], []  # the nodes, and the NodeProto each was built from
    get = tensors.get
    new_node, new_variable = (_direct_node, _direct_variable) if _layout_known() else (_node, _variable)

    def tensor(name):  # a tensor no initializer, value_info or earlier node made: a new Variable
        t = get(name)
        if t is None:
            t = new_variable(name)
            if name:  # (each omitted optional input or output is a tensor of its own)
                tensors[name] = t
        return t

    if io is None or len(io.nodes) != len(nodes):
        io_ins = [n.input[:] for n in nodes]
        io_outs = [n.output[:] for n in nodes]
    else:
        nodes, io_ins, io_outs = io.nodes, io.ins, io.outs
    for n, names_in, names_out in zip(nodes, io_ins, io_outs):
        if move_constant is not None and n.op_type == "Constant" and _movable(n, move_constant):
            take_value(tensor(names_out[0]), n.attribute[0].t)
            continue
        ins = [get(name) or tensor(name) for name in names_in]  # (a tensor is always true)
        outs = [get(name) or tensor(name) for name in names_out]
        attrs = n.attribute
        if len(attrs):
            attrs = import_attributes(attrs, {}, tensors, opset, domains)
            _own_values(attrs)
        else:
            attrs = OrderedDict()
        made.append(new_node(n.op_type, n.name, attrs, ins, outs, n.domain if n.HasField("domain") else None))
        built.append(n)
    # (built without its nodes, which are then set: the constructor walks every node for
    # subgraph functions to merge, and these nodes have no subgraph)
    graph = Graph(nodes=[], inputs=inputs, outputs=outputs, name=g.name, doc_string=g.doc_string,
                  producer_name=model.producer_name, producer_version=model.producer_version, opset=opset,
                  import_domains=domains, functions=[], ir_version=model.ir_version)
    graph.nodes = made
    return graph, list(tensors.values()), list(zip(built, made))


def _import_onnx(model: ModelProto) -> Graph:
    """``gs.import_onnx``, for a model without a subgraph initializer that shadows an outer name:
    the library resolves such a name to the outer tensor, and runtimes disagree on which one
    the body reads -- a rewrite could change what the model computes wherever it runs."""
    shadow = shadowed_name(model.graph)
    if shadow is not None:
        name, node = shadow
        raise UnsupportedModelError(
            f"node {node_label(node)!r} ({node.op_type}): {shadowing_message(name)}; optimize declines such a model: "
            "rename one of them (nothing written)")
    return import_onnx(model)


def _own_domains(opset_import) -> list:
    """Copies of the opset imports: onnx-graphsurgeon keeps the model's (or function's) own
    repeated field and its export adds the domains it finds missing to it -- to the model given."""
    out = []
    for o in opset_import:
        c = OperatorSetIdProto()
        c.CopyFrom(o)
        out.append(c)
    return out


def _imported(graph) -> tuple:
    graph.import_domains = _own_domains(graph.import_domains or ())
    for f in getattr(graph, "functions", ()):
        f.import_domains = _own_domains(f.import_domains or ())

    stack = [graph, *getattr(graph, "functions", ())]
    while stack:  # (every node's attributes, the bodies' and functions' too: see _own_values)
        g = stack.pop()
        _check_dims(g.inputs, g.outputs)
        for node in g.nodes:
            _own_values(node.attrs)
            _check_dims(node.inputs, node.outputs)
            stack.extend(v for v in node.attrs.values() if isinstance(v, Graph))
    return graph, list(graph.tensors().values()), None


def _check_dims(*groups) -> None:
    """A declared dim that is not valid UTF-8 (a body's: the main graph's are read by inference)
    reads as bytes: an error naming it, not onnx's ValueError at export."""
    for group in groups:
        for t in group:
            for d in getattr(t, "shape", None) or ():
                if type(d) is bytes:
                    raise ModelLoadError(f"the dim {d!r} of {t.name!r} is not valid UTF-8; the file is corrupt")


def _own_values(attrs) -> None:
    """A tensor attribute (a Constant node's value, ConstantOfShape's) imported as a constant
    that reads the caller's TensorProto: when that proto has no name, it becomes a copy. The
    export writes the constant's name into the proto it reads, and "" written is a field set
    (the model given would change)."""
    for v in attrs.values():
        if isinstance(v, Constant) and isinstance(v._values, LazyValues):
            proto = v._values.tensor
            if not proto.HasField("name") or proto.name != v.name:
                own_proto(v)


# onnx-graphsurgeon's constructors route every field through __setattr__ overrides; the objects
# are built here with the same fields directly -- only where a probe shows that its classes
# have exactly the fields this module knows (else through the constructors).

_NODE_FIELDS = {"op", "name", "attrs", "inputs", "outputs", "domain"}
_VARIABLE_FIELDS = {"name", "inputs", "outputs", "dtype", "shape", "type"}
_LIST_FIELDS = {"parent_obj", "field_name"}


def _layout_known() -> bool:
    known = getattr(_layout_known, "cache", None)
    if known is None:
        known = False
        # (a version laid out otherwise takes other constructor arguments or holds other fields:
        # read without calling what may not be there)
        takes = set(inspect.signature(Node.__init__).parameters)
        if {"op", "name", "attrs", "inputs", "outputs", "domain"} <= takes:
            probe = Node("Probe", name="p", attrs=OrderedDict(), inputs=[], outputs=[], domain=None)
            var = Variable("v")
            known = (set(vars(probe)) == _NODE_FIELDS and set(vars(var)) == _VARIABLE_FIELDS
                     and set(vars(probe.inputs)) == _LIST_FIELDS and getattr(var, "type", None) == "tensor_type"
                     and all(getattr(lst, "field_name", None) == want for lst, want in (
                         (probe.inputs, "outputs"), (probe.outputs, "inputs"), (var.inputs, "outputs"),
                         (var.outputs, "inputs"))))
        _layout_known.cache = known
    return known


def _synced(owner, field_name: str, items: list):
    lst = SynchronizedList.__new__(SynchronizedList)
    d = lst.__dict__  # (its two fields, as the probe found them)
    d["parent_obj"], d["field_name"] = owner, field_name
    if items:
        list.extend(lst, items)
    return lst


def _direct_node(op, name, attrs, inputs, outputs, domain):
    node = object.__new__(Node)
    d = node.__dict__
    d["op"], d["name"], d["attrs"] = op, name or "", attrs
    d["inputs"] = _synced(node, "outputs", inputs)
    d["outputs"] = _synced(node, "inputs", outputs)
    d["domain"] = domain
    for t in inputs:
        list.append(t.outputs, node)
    for t in outputs:
        list.append(t.inputs, node)
    return node


def _direct_variable(name):
    var = object.__new__(Variable)
    d = var.__dict__
    d["name"] = name
    d["inputs"] = _synced(var, "outputs", [])
    d["outputs"] = _synced(var, "inputs", [])
    d["dtype"] = d["shape"] = None
    d["type"] = "tensor_type"
    return var


def _node(op, name, attrs, inputs, outputs, domain):
    return Node(op=op, name=name, attrs=attrs, inputs=inputs, outputs=outputs, domain=domain)


def _variable(name):
    return Variable(name) if name else Variable.empty()


def _movable(node, move_constant: Callable) -> bool:
    """A Constant node of the default domain whose one attribute is ``value``, a tensor
    ``move_constant`` accepts (constant_folding.movable_value), with one output."""
    if node.domain not in ("", "ai.onnx") or len(node.attribute) != 1 or len(node.output) != 1 or not node.output[0]:
        return False
    a = node.attribute[0]
    return a.name == "value" and a.type == AttributeProto.TENSOR and not a.ref_attr_name and move_constant(a.t)


class HeldAttribute:
    """An attribute onnx-graphsurgeon cannot hold (it skips a sparse tensor, ``sparse_value`` of
    a Constant): kept in the node's attrs as its AttributeProto, which the export writes back.
    To the passes it is an opaque value (dedupe tells two apart by their bytes; fold-constants
    leaves such a node: PassContext.opaque)."""

    __slots__ = ("proto", "_bytes")

    def __init__(self, proto):
        self.proto = AttributeProto()
        self.proto.CopyFrom(proto)
        self._bytes = self.proto.SerializeToString()

    def __repr__(self) -> str:
        import hashlib

        return f"HeldAttribute({self.proto.name}, {hashlib.sha256(self._bytes).hexdigest()})"


def _node_pairs(proto_graph, gs_graph):
    """(NodeProto, Node) pairs of a graph and its subgraphs, matched by position (onnx-
    graphsurgeon imports and exports the nodes of a graph in order)."""
    stack = [(proto_graph, gs_graph)]
    while stack:
        pg, gg = stack.pop()
        for pn, gn in zip(pg.node, gg.nodes):
            yield pn, gn
            for a in pn.attribute:
                if a.type == AttributeProto.GRAPH and isinstance(gn.attrs.get(a.name), Graph):
                    stack.append((a.g, gn.attrs[a.name]))


def _unexportable_attributes(proto_graph, gs_graph, pairs=None) -> dict:
    """id(node) -> [(name, attribute type)] for the empty list attributes of the imported nodes:
    onnx-graphsurgeon keeps them as [] but cannot export them (the type of an empty list is
    unknown to it). Passes see [] as before; _export writes them back with their type. An
    attribute it skipped (a sparse tensor) becomes a HeldAttribute in the node's attrs, listed
    with type None; _export writes it back as it was.
    ``pairs``: (NodeProto, Node) as build_graph built them (None: matched by position)."""
    out: dict = {}
    for pn, gn in pairs if pairs is not None else _node_pairs(proto_graph, gs_graph):
        for a in pn.attribute:
            if a.ref_attr_name:
                continue
            if a.type in _LIST_TYPES and gn.attrs.get(a.name) == []:
                out.setdefault(id(gn), []).append((a.name, a.type))
            elif a.name not in gn.attrs:  # (one it skipped: a sparse tensor)
                gn.attrs[a.name] = HeldAttribute(a)
                out.setdefault(id(gn), []).append((a.name, None))
    return out


def _odd_types(graph) -> bool:
    return any(vi.type.WhichOneof("value") not in _GS_TYPES
               for vi in list(graph.input) + list(graph.output) + list(graph.value_info))


def _other_types(proto_graph, gs_graph, bodies: bool = True) -> Optional[dict]:
    """None when every declared type of the graph and its bodies (inputs, outputs, value_info:
    where onnx-graphsurgeon takes types from) is of a kind onnx-graphsurgeon writes; else, for
    each body (id of its Graph, as imported: matched by position, before any rewrite), the
    declared types of its inputs and outputs of another kind (an optional, a map), by name --
    onnx-graphsurgeon fails on them, so _export writes them untyped and then puts these back.
    ``bodies``: the graph may have subgraphs (build_graph's own graphs have none)."""
    odd = _odd_types(proto_graph)
    found: dict = {}
    for pn, gn in _node_pairs(proto_graph, gs_graph) if bodies else ():
        for a in pn.attribute:
            if a.type == AttributeProto.GRAPH and isinstance(gn.attrs.get(a.name), Graph):
                body = a.g
                if _odd_types(body):
                    odd = True
                    found[id(gn.attrs[a.name])] = {vi.name: vi.type for vi in list(body.input) + list(body.output)
                                                   if vi.type.WhichOneof("value") not in _GS_TYPES}
    return found if odd else None


def _keep_overridable_inputs(graph, src) -> set:
    """An initializer that is also a graph input is a default the caller may override (older
    exports list every initializer as an input): onnx-graphsurgeon imports it as a constant and
    drops the input. Make it an input again -- a Variable, so no pass folds or rewrites with its
    value -- and return the names, whose initializers are written back after export."""
    init = {t.name for t in src.graph.initializer}
    names = [vi.name for vi in src.graph.input if vi.name in init]
    if not names:
        return set()
    tensors = graph.tensors()
    protos = {t.name: t for t in src.graph.initializer}
    variables = {}
    for name in names:
        t = tensors.get(name)
        if isinstance(t, Constant):
            variables[name] = variable_for(graph, t, f"{name} (default)")
        elif t is not None:
            variables[name] = t
        else:  # read by no node: onnx-graphsurgeon does not keep it, but it is still an input
            proto = protos[name]
            variables[name] = Variable(name, dtype=helper.tensor_dtype_to_np_dtype(proto.data_type),
                                       shape=list(proto.dims))
    by_name = {t.name: t for t in graph.inputs}
    graph.inputs = [variables.get(vi.name) or by_name[vi.name] for vi in src.graph.input
                    if vi.name in variables or vi.name in by_name]
    return set(variables)


def variable_for(graph, held, renamed: str) -> Variable:
    """A Variable of the name, type and shape of the Constant ``held``, which every reader of it
    (in graph and its bodies) reads instead -- so no pass folds or rewrites with its value. The
    Constant, read by nothing now, is renamed ``renamed`` (it is never exported)."""
    var = Variable(held.name, dtype=held.dtype, shape=list(held.shape))
    replace_uses(graph, held, var)
    held.name = renamed
    return var


# ---------------------------------------------------------------- export


def export_model(imported: Imported, src: ModelProto) -> ModelProto:
    """The graph as a new model given the fields of ``src`` (the model imported) but its graph
    -- opsets, metadata, functions... (the source's graph, weights included, is never copied) --
    with what the import kept aside written back: empty list attributes, held attributes,
    declared types the library cannot write, call overloads. The main graph has no value_info
    (it described the graph before the rewrites); graph inputs and outputs keep their declared
    types (onnx-graphsurgeon writes an unknown shape as rank 0)."""
    graph = imported.graph
    exported = _export(graph, imported.attr_patches, imported.other_types)
    current = _copy_model_meta(src, exported, subgraphs=imported.has_subgraphs)  # (build_graph's have none)
    if imported.overloads:
        for pn, gn in _node_pairs(current.graph, graph):
            if id(gn) in imported.overloads:
                pn.overload = imported.overloads[id(gn)]
    return current


def export_graph(graph) -> ModelProto:
    """A ModelProto whose graph is ``graph`` exported the way ``gs.export_onnx`` writes it, less
    its value_info; no other field is set.

    ``gs.export_onnx`` builds every NodeProto with ``onnx.helper.make_node`` and then copies it
    into the graph, maps every tensor through a walk that concatenates each node's lists, merges
    the functions of every subgraph and writes a value_info for every typed tensor: on a
    15,000-node graph that is more than half of its time, for fields that are thrown away. Here
    each node is written once, in place, with the library's own converters for its attributes
    (subgraphs among them), tensors and graph inputs and outputs."""
    model = ModelProto()
    out = model.graph
    export_attributes = OnnxExporter.export_attributes
    tensors: dict = {}  # name -> tensor, in the order onnx-graphsurgeon's Graph.tensors() gives
    for t in graph.inputs:
        if t.name:
            tensors[t.name] = t
    add = out.node.add
    for node in graph.nodes:
        proto = add()
        proto.op_type = node.op
        ins, outs = node.inputs, node.outputs
        proto.input.extend([t.name for t in ins])
        proto.output.extend([t.name for t in outs])
        if node.name:
            proto.name = node.name
        if node.domain is not None:
            proto.domain = node.domain
        if node.attrs:
            proto.attribute.extend(export_attributes(node.attrs))
        for t in ins:
            if t.name:
                tensors[t.name] = t
        for t in outs:
            if t.name:
                tensors[t.name] = t
    for t in graph.outputs:
        if t.name:
            tensors[t.name] = t
    out.name = graph.name
    out.input.extend([OnnxExporter.export_value_info_proto(t, False) for t in graph.inputs])
    out.output.extend([OnnxExporter.export_value_info_proto(t, False) for t in graph.outputs])
    constants = [t for t in tensors.values() if isinstance(t, Constant)]
    out.initializer.extend([OnnxExporter.export_tensor_proto(t) for t in constants
                            if not isinstance(t._values, SparseValues)])
    out.sparse_initializer.extend([OnnxExporter.export_sparse_tensor_proto(t) for t in constants
                                   if isinstance(t._values, SparseValues)])
    if graph.doc_string:
        out.doc_string = graph.doc_string
    return model


def _export(graph, empty_lists: dict, other_types: Optional[dict] = None):
    """The graph as a ModelProto whose only field is the graph (export_graph: no value_info),
    empty list attributes included (``other_types``: see _other_types)."""
    held, kept = [], []
    if empty_lists:
        for node in all_nodes(graph):
            for name, kind in empty_lists.get(id(node), ()):
                value = node.attrs.get(name)
                if kind is None and isinstance(value, HeldAttribute):
                    kept.append((node, name, value))
                    del node.attrs[name]
                elif value == []:
                    held.append((node, name))
                    del node.attrs[name]
    # onnx-graphsurgeon writes value infos of tensor, sequence and sparse types only (another,
    # such as an optional, fails inside it): the main graph's such tensors go out untyped -- its
    # inputs and outputs get their declared types back (_copy_model_meta), value_info is rewritten
    # (and so do the bodies' tensors, whose inputs and outputs get their types back below)
    untyped = [t for g in [graph, *_bodies(graph)] for t in [*g.tensors().values(), *g.inputs, *g.outputs]
               if isinstance(t, Variable) and t.dtype is not None
               and getattr(t, "type", "tensor_type") not in _GS_TYPES] if other_types is not None else []
    kept_dtypes = [(t, t.dtype) for t in untyped]
    for t in untyped:
        t.dtype = None
    try:
        exported = export_graph(graph)
    finally:
        for node, name in held:
            node.attrs[name] = []
        for node, name, value in kept:
            node.attrs[name] = value
        for t, dtype in kept_dtypes:
            t.dtype = dtype
    if other_types:
        for pn, gn in _node_pairs(exported.graph, graph):
            for a in pn.attribute:
                declared = other_types.get(id(gn.attrs.get(a.name))) if a.type == AttributeProto.GRAPH else None
                for vi in list(a.g.input) + list(a.g.output) if declared else ():
                    if vi.name in declared and not vi.type.WhichOneof("value"):
                        vi.type.CopyFrom(declared[vi.name])
    if kept:
        values = {}
        for node, name, value in kept:
            values.setdefault(id(node), []).append(value)
        for pn, gn in _node_pairs(exported.graph, graph):
            for value in values.get(id(gn), ()):
                pn.attribute.append(value.proto)
    if held:
        kinds = {id(n): dict(empty_lists[id(n)]) for n, _ in held}
        names = {}
        for node, name in held:
            names.setdefault(id(node), []).append(name)
        for pn, gn in _node_pairs(exported.graph, graph):
            for name in names.get(id(gn), ()):
                pn.attribute.append(helper.make_attribute(name, [], attr_type=kinds[id(gn)][name]))
    return exported


def _copy_model_meta(src: ModelProto, graph_model: ModelProto, subgraphs: bool = True) -> ModelProto:
    """The exported model given the source model's fields but its graph (opsets, metadata,
    functions...): those are copied into ``graph_model``, which is returned -- the source's
    graph, weights included, is never copied.

    Graph inputs and outputs keep their declared types (onnx-graphsurgeon writes an unknown
    shape as rank 0), and value_info is dropped: it described the graph before the rewrites."""
    out = graph_model
    for fd in list(out.DESCRIPTOR.fields):
        if fd.name != "graph":
            out.ClearField(fd.name)
    for fd, value in src.ListFields():
        if fd.name == "graph":
            continue
        repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED
        if repeated:
            getattr(out, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(out, fd.name).CopyFrom(value)
        else:
            setattr(out, fd.name, value)
    declared = {vi.name: vi for vi in list(src.graph.input) + list(src.graph.output)}
    for vi in list(out.graph.input) + list(out.graph.output):
        if vi.name in declared:
            vi.type.CopyFrom(declared[vi.name].type)
    out.graph.ClearField("value_info")
    clear_negative_dims(out.graph, subgraphs)  # (the export copies outer tensors' dims into bodies)
    return out


def release(imported: Imported) -> None:
    """Break the graph's reference cycles once it is exported -- a node lists its tensors and
    each tensor its nodes, and every such synchronised list refers to its owner -- so that
    reference counting frees it at once, instead of the cyclic collector walking every object
    of the graph after the walk's pause of it ends (a tenth of a second on a 7,000-node model).

    Each node's and tensor's fields are dropped (the graph is never used again): nothing then
    refers to their lists, which go, and with them every cycle through an owner. The nodes and
    tensors as imported are dropped too (passes drop some from the graph)."""
    tensors = list(imported.tensors)
    extend = tensors.extend
    for group in (list(all_nodes(imported.graph)), imported.nodes):  # (the graph's walk reads fields: first)
        for node in group:
            d = node.__dict__
            if not d:  # (released already: a node in both groups)
                continue
            extend(d["inputs"])
            extend(d["outputs"])
            extend(v for v in d["attrs"].values() if isinstance(v, Tensor))
            d.clear()
    for t in tensors:
        t.__dict__.clear()


# ---------------------------------------------------------------- constants


def constant_array(tensor) -> np.ndarray:
    """The exact values of a Constant. Raises CannotDecide: "external-data" for one stored as
    external data -- never read here: onnx's reader would look for its file in the working
    directory --, "element-type" for one that is not what it says or that NumPy cannot hold
    (modelio.tensors.read_tensor)."""
    values = tensor._values
    if isinstance(values, LazyValues):
        return read_tensor(values.tensor)
    return np.asarray(values)


def _values_of(arr: np.ndarray, name: str) -> LazyValues:
    """Values holding arr exactly (its TensorProto is what gets exported)."""
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one)
    return LazyValues(numpy_helper.from_array(np.array(arr, copy=True, order="C") if arr.dtype != object else arr,
                                              name))


def constant(name: str, arr: np.ndarray) -> Constant:
    """A new Constant holding arr exactly (bfloat16, float8, int4 and strings included)."""
    return Constant(name, _values_of(arr, name))


def make_constant(tensor, arr: np.ndarray) -> None:
    """Make ``tensor`` (a Variable a node makes) the constant arr, exactly."""
    tensor.to_constant(_values_of(arr, tensor.name))


def take_value(tensor, proto: TensorProto) -> None:
    """Make ``tensor`` the constant ``proto`` holds: the TensorProto itself, renamed (nothing
    converted, so nothing can change; the model given is not touched: a copy)."""
    copy = TensorProto()
    copy.CopyFrom(proto)
    copy.name = tensor.name
    tensor.to_constant(LazyValues(copy))


def stored_proto(tensor):
    """The TensorProto (a SparseTensorProto for a sparse initializer) a Constant reads its values
    from, as the model stores them; None for one holding a NumPy array."""
    values = tensor._values
    return values.tensor if isinstance(values, LazyValues) else None


def own_proto(tensor) -> None:
    """A Constant that reads a TensorProto (the caller's own) reads a copy of it from now on:
    the export writes the constant's name into the proto it reads, and the model given must not
    change."""
    if isinstance(tensor, Constant) and isinstance(tensor._values, LazyValues):
        copy = TensorProto()
        copy.CopyFrom(tensor._values.tensor)
        tensor._values.tensor = copy


def held_constant(tensor):
    """The Constant ``tensor`` is, or the one a Constant node making it holds (onnxruntime
    reads a Constant node's output as an initializer when it loads a model), else None."""
    if isinstance(tensor, Constant):
        return tensor
    if len(tensor.inputs) == 1:
        maker = tensor.inputs[0]
        if maker.op == "Constant" and (maker.domain or "") in ("", "ai.onnx"):
            value = maker.attrs.get("value")
            return value if isinstance(value, Constant) else None
    return None


# ---------------------------------------------------------------- edits
#
# onnx-graphsurgeon keeps node.inputs and each tensor's .outputs (its readers) in step: taking a
# tensor out of node.inputs removes node from tensor.outputs with list.remove, which compares
# nodes field by field (Node.__eq__) -- quadratic time on a constant read by thousands of
# nodes, and it may take out another node that looks equal (unnamed copies). Every edit of a
# node's inputs or outputs goes through these, which unlink by identity.


def _unlink(items: list, obj) -> None:
    """Take one occurrence of obj (by identity) out of a synchronised list, without syncing.

    A shared constant has thousands of readers, and passes take them out in graph order, each
    near where the last one was: the search starts there (a hint per list, by id -- only a
    starting point, every match is checked by identity) and widens both ways."""
    n = len(items)
    if n <= 8:
        for k in range(n):
            if items[k] is obj:
                list.pop(items, k)
                return
        return
    hint = _HINTS.get(id(items), 0)
    if hint >= n:
        hint = n - 1
    for step in range(n):
        for k in (hint + step, hint - step - 1):
            if 0 <= k < n and items[k] is obj:
                list.pop(items, k)
                if len(_HINTS) > 65536:
                    _HINTS.clear()
                _HINTS[id(items)] = k
                return


_HINTS: dict = {}  # id(list) -> where the last _unlink found its element


def set_input(node, i: int, tensor) -> None:
    """node.inputs[i] = tensor."""
    old = node.inputs[i]
    if old is tensor:
        return
    _unlink(old.outputs, node)
    list.__setitem__(node.inputs, i, tensor)
    list.append(tensor.outputs, node)


def pop_input(node):
    """node.inputs.pop(): the last input, no longer read by node."""
    old = list.pop(node.inputs)
    _unlink(old.outputs, node)
    return old


def clear_inputs(node) -> None:
    """node.inputs.clear()."""
    for t in node.inputs:
        _unlink(t.outputs, node)
    list.clear(node.inputs)


def clear_outputs(node) -> None:
    """node.outputs.clear()."""
    for t in node.outputs:
        _unlink(t.inputs, node)
    list.clear(node.outputs)


def replace_uses(graph, old, new) -> None:
    """Make every consumer of tensor ``old`` read ``new`` instead (subgraphs included)."""
    for node in list(old.outputs):
        for i, t in enumerate(node.inputs):
            if t is old:
                set_input(node, i, new)


# ---------------------------------------------------------------- walks


def all_nodes(graph):
    """Every node of graph and of its bodies, nested ones included."""
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.nodes:
            yield n
            stack.extend(v for v in n.attrs.values() if isinstance(v, Graph))


def _bodies(graph) -> list:
    """Every subgraph of the graph's nodes, nested ones included."""
    return [v for n in all_nodes(graph) for v in n.attrs.values() if isinstance(v, Graph)]


def outer_variables(node, names=None) -> list:
    """Non-constant tensors of the enclosing graphs that node's subgraphs (those of the
    attributes in ``names``, if given) read. A node with any cannot be folded (constants are
    exported with the subgraph that reads them)."""
    found: dict = {}
    for k, v in node.attrs.items():
        if isinstance(v, Graph) and (names is None or k in names):
            _outer_reads(v, frozenset(), found)
    return list(found.values())


def _outer_reads(graph, enclosing: frozenset, found: dict) -> None:
    """Into found: the tensors graph reads (or returns) that neither it nor ``enclosing`` makes.
    (A module-level function: a nested recursive one is a reference cycle per call.)"""
    local = set(enclosing) | {t.name for t in graph.inputs}
    for n in graph.nodes:
        local.update(t.name for t in n.outputs)
    for n in graph.nodes:
        for t in n.inputs:
            if not t.is_empty() and t.name not in local and not isinstance(t, Constant):
                found.setdefault(t.name, t)
        for v in n.attrs.values():
            if isinstance(v, Graph):
                _outer_reads(v, frozenset(local), found)  # a nested body sees this body's tensors
    for t in graph.outputs:  # a body may return an outer tensor as it is
        if t.name not in local and not isinstance(t, Constant):
            found.setdefault(t.name, t)


def in_topological_order(graph, bodies: bool) -> bool:
    """Whether every node of the main graph comes after the producers of what it reads (with
    ``bodies``, of what its subgraphs read from outside too). Read on the graph: no protobuf
    reads."""
    seen: set = set()
    add = seen.add
    for node in graph.nodes:
        for t in node.inputs:
            for p in t.inputs:
                if id(p) not in seen:
                    return False
        if bodies and any(isinstance(v, Graph) for v in node.attrs.values()):
            for t in outer_variables(node):
                for p in t.inputs:
                    if id(p) not in seen:
                        return False
        add(id(node))
    return True


# ---------------------------------------------------------------- folding


def fold_attrs(node) -> dict:
    """node's attributes as shapeinfer.fold takes them: plain values, a tensor as its array --
    one that cannot be read (external data, a type NumPy cannot hold) as its CannotDecide, which
    fold_node reports as why the node is not folded. A subgraph is left out (fold_node computes
    a node with a body from its NodeProto: node_proto)."""
    out = {}
    for k, v in node.attrs.items():
        if isinstance(v, Constant):
            try:
                v = constant_array(v)
            except CannotDecide as e:
                v = e
        elif isinstance(v, Graph):
            continue
        out[k] = v
    return out


def node_proto(node) -> NodeProto:
    """The node alone as a NodeProto (its attributes, bodies included, by the library's converters)."""
    return OnnxExporter.export_node(node)
