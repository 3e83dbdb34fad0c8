"""The adapter's import (optimizer/adapter.py, build_graph) builds the onnx-graphsurgeon graph
gs.import_onnx builds: exported again, both give the same bytes -- on every fixture, on generated
graphs, and on graphs the fast path hands to gs.import_onnx (subgraphs, functions)."""

from __future__ import annotations

import glob
import os

import onnx
import onnx_graphsurgeon as gs

import shapeinfer
import pytest
from onnx import TensorProto, helper

from shapeinfer.optimizer.adapter import build_graph
from tests.helpers import bench_module

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "**", "*.onnx"), recursive=True))


def _same(model):
    ours = gs.export_onnx(build_graph(model)[0], do_type_check=False)
    theirs = gs.export_onnx(gs.import_onnx(model), do_type_check=False)
    assert ours.SerializeToString() == theirs.SerializeToString()


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.relpath(p, HERE) for p in FIXTURES])
def test_fixtures_import_as_onnx_graphsurgeon_imports_them(path):
    _same(onnx.load(path, load_external_data=False))


def test_the_bench_models_import_as_onnx_graphsurgeon_imports_them():
    _same(bench_module("bench_infer").chain(2000))
    _same(bench_module("models").llama_layers(4))


def test_odd_graphs_import_as_onnx_graphsurgeon_imports_them():
    """Repeated and partial value_info, a tensor without producer, empty optional inputs and
    outputs, a graph input that is also an initializer, attributes of every kind, a subgraph."""
    t = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    nodes = [
        helper.make_node("Add", ["x", "w"], ["a"], name="add"),
        helper.make_node("Clip", ["a", "", "hi"], ["c"], name="clip"),
        helper.make_node("Dropout", ["c"], ["d", ""], name="drop"),
        helper.make_node("Constant", [], ["k"], value=helper.make_tensor("v", TensorProto.INT64, [1], [3])),
        helper.make_node("Custom", ["d", "dangling"], ["e"], domain="x.y", f=1.5, i=2, s="txt", fl=[1.0], il=[1, 2],
                         sl=["a", "b"]),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("hi", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [t],
        value_info=[helper.make_empty_tensor_value_info("a"),
                    helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 2]),
                    helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("x.y", 1)])
    _same(model)
    body = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "body", [],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    nodes.append(helper.make_node("If", ["cond"], ["z"], then_branch=body, else_branch=body))
    graph.node.append(nodes[-1])
    graph.input.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    _same(model)  # (handed to gs.import_onnx)


def test_an_empty_list_attribute_after_a_moved_constant_is_exported_with_its_type():
    """The import makes small Constant nodes constants (no gs node): the nodes after one are
    paired with their NodeProto as built, not by position, or an empty ``axes`` list lands on
    the wrong node and the export fails (found by the adversarial harness, seed 20170)."""

    from shapeinfer.optimizer.verify import verify

    nodes = [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.0])),
             helper.make_node("Mul", ["x", "c"], ["m"]),
             helper.make_node("ReduceSum", ["m"], ["y"], keepdims=1)]
    nodes[2].attribute.append(helper.make_attribute("axes", [], attr_type=onnx.AttributeProto.INTS))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    out = shapeinfer.optimize(model)
    reduce = next(n for n in out.graph.node if n.op_type == "ReduceSum")
    assert [(a.name, a.type, list(a.ints)) for a in reduce.attribute if a.name == "axes"] == \
        [("axes", onnx.AttributeProto.INTS, [])]
    assert verify(model, out).ok
