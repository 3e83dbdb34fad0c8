"""The main graph of an onnx-graphsurgeon Graph as a ModelProto, the way ``gs.export_onnx`` writes
it, minus what the optimizer drops right after (manager._copy_model_meta): the model's own fields
(opsets, functions, producer, IR version) and the main graph's value_info.

``gs.export_onnx`` builds every NodeProto with ``onnx.helper.make_node`` and then copies it into
the graph, maps every tensor through a walk that concatenates each node's lists, merges the
functions of every subgraph and writes a value_info for every typed tensor: on a 15,000-node
graph that is more than half of its time, for fields that are thrown away. Here each node is
written once, in place, with onnx-graphsurgeon's own converters for its attributes (subgraphs
among them), tensors and graph inputs and outputs -- so the graph's bytes are those of
``gs.export_onnx`` less its value_info (tests/test_exporter.py compares them).
"""

from __future__ import annotations

from onnx import ModelProto


def export_model(gs, graph) -> ModelProto:
    """A ModelProto whose graph is ``graph`` exported (no value_info); no other field is set."""
    from onnx_graphsurgeon.exporters.onnx_exporter import OnnxExporter
    from onnx_graphsurgeon.ir.tensor import SparseValues

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
    Constant = gs.Constant
    constants = [t for t in tensors.values() if isinstance(t, Constant)]
    out.initializer.extend([OnnxExporter.export_tensor_proto(t) for t in constants
                            if not isinstance(t._values, SparseValues)])
    out.sparse_initializer.extend([OnnxExporter.export_sparse_tensor_proto(t) for t in constants
                                   if isinstance(t._values, SparseValues)])
    if graph.doc_string:
        out.doc_string = graph.doc_string
    return model
