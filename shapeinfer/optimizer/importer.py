"""The model as an onnx-graphsurgeon graph, built the way ``gs.import_onnx`` builds it.

onnx-graphsurgeon's importer defines three closures and formats log messages for every node; on
a 50,000-node graph that is most of the import. For the common model -- no model-local
functions, no sparse initializers, no node with a subgraph -- the graph is built here directly
with onnx-graphsurgeon's own classes and its tensor and attribute converters, to the same
objects in the same order (tests/test_importer.py exports both and compares the bytes); any
other model goes through ``gs.import_onnx``.
"""

from __future__ import annotations

from collections import OrderedDict

from onnx import AttributeProto, ModelProto

_SUBGRAPH_ATTRS = frozenset({AttributeProto.GRAPH, AttributeProto.GRAPHS})


def import_model(gs, model: ModelProto):
    """The onnx-graphsurgeon Graph of ``model`` (which is not changed)."""
    from onnx_graphsurgeon.importers.onnx_importer import OnnxImporter

    g = model.graph
    if model.functions or g.sparse_initializer:
        return gs.import_onnx(model)
    nodes = g.node
    for n in nodes:
        for a in n.attribute:
            if a.type in _SUBGRAPH_ATTRS:
                return gs.import_onnx(model)
    opset = OnnxImporter.get_opset(model)
    domains = OnnxImporter.get_import_domains(model)
    import_tensor = OnnxImporter.import_tensor
    import_attributes = OnnxImporter.import_attributes
    Variable, Node = gs.Variable, gs.Node
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
    made = []
    get = tensors.get
    for n in nodes:
        ins = []
        for name in n.input[:]:
            t = get(name)
            if t is None:
                if not name:
                    t = Variable.empty()
                else:
                    t = tensors[name] = Variable(name)
            ins.append(t)
        outs = []
        for name in n.output[:]:
            t = get(name)
            if t is None:
                if not name:
                    t = Variable.empty()
                else:
                    t = tensors[name] = Variable(name)
            outs.append(t)
        attrs = n.attribute
        attrs = import_attributes(attrs, {}, tensors, opset, domains) if len(attrs) else OrderedDict()
        made.append(Node(op=n.op_type, name=n.name, attrs=attrs, inputs=ins, outputs=outs,
                         domain=n.domain if n.HasField("domain") else None))
    return gs.Graph(nodes=made, inputs=inputs, outputs=outputs, name=g.name, doc_string=g.doc_string,
                    producer_name=model.producer_name, producer_version=model.producer_version, opset=opset,
                    import_domains=domains, functions=[], ir_version=model.ir_version)
