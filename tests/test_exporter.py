"""The adapter's export (optimizer/adapter.py, export_graph) writes the graph gs.export_onnx
writes, less the main graph's value_info (which the optimizer drops): at every export optimize
makes -- of every fixture, of generated graphs, of graphs with subgraphs, functions, sparse
initializers and attributes of every kind -- both are run and their graphs' bytes compared."""

from __future__ import annotations

import glob
import os

import onnx
import onnx_graphsurgeon as gs
import pytest
from onnx import TensorProto, helper, parser

import shapeinfer
from shapeinfer.optimizer import adapter
from tests.helpers import bench_module

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "**", "*.onnx"), recursive=True))


@pytest.fixture
def compared(monkeypatch):
    """Every export optimize makes is also made by gs.export_onnx; the list of graphs compared."""
    seen = []

    def both(graph):
        ours = export_graph(graph)
        theirs = gs.export_onnx(graph, do_type_check=False).graph
        theirs.ClearField("value_info")
        assert ours.graph.SerializeToString() == theirs.SerializeToString()
        assert [f.name for f, _ in ours.ListFields()] == ["graph"]
        seen.append(graph.name)
        return ours

    export_graph = adapter.export_graph
    monkeypatch.setattr(adapter, "export_graph", both)
    return seen


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.relpath(p, HERE) for p in FIXTURES])
def test_fixtures_export_as_onnx_graphsurgeon_exports_them(path, compared):
    for opts in ({}, {"ignore_signed_zero": True}, {"passes": []}):
        shapeinfer.optimize(onnx.load(path, load_external_data=False), **opts)
    assert len(compared) == 3


def test_generated_graphs_export_as_onnx_graphsurgeon_exports_them(compared):
    from tests.adversarial.gen import generate

    done = 0
    for seed in range(300, 360):
        try:
            model = generate(seed).model
        except Exception:  # (a seed the generator gives up on)
            continue
        try:
            shapeinfer.optimize(model)
        except shapeinfer.ShapeInferenceError:  # (a graph inference refuses: nothing exported)
            continue
        done += 1
    assert done >= 40 and len(compared) == done


def test_the_bench_models_export_as_onnx_graphsurgeon_exports_them(compared):
    shapeinfer.optimize(bench_module("bench_infer").chain(1000))
    shapeinfer.optimize(bench_module("models").llama_layers(2))
    assert len(compared) == 2


def test_odd_graphs_export_as_onnx_graphsurgeon_exports_them(compared):
    """Attributes of every kind, empty optional names, a subgraph, a
    model-local function, a sparse initializer, a doc string, an unnamed node."""
    body = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "body", [],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    sparse = helper.make_sparse_tensor(helper.make_tensor("sv", TensorProto.FLOAT, [1], [5.0]),
                                       helper.make_tensor("si", TensorProto.INT64, [1], [1]), [3])
    nodes = [
        helper.make_node("Add", ["x", "w"], ["a"], name="add"),
        helper.make_node("Clip", ["a", "", "hi"], ["c"]),
        helper.make_node("Dropout", ["c"], ["d", ""], name="drop"),
        helper.make_node("Custom", ["d", "dg", "sv"], ["e"], domain="x.y", f=1.5, i=2, s="txt", fl=[1.0],
                         il=[1, 2], sl=["a", "b"], t=helper.make_tensor("tv", TensorProto.INT64, [1], [3])),
        helper.make_node("If", ["cond"], ["z"], then_branch=body, else_branch=body, name="if"),
        helper.make_node("Twice", ["z"], ["u"], domain="local", name="call"),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2]),
         helper.make_tensor_value_info("hi", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("dg", TensorProto.INT8, None)],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("u", TensorProto.FLOAT, None)],
        [helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])],
        doc_string="the graph",
        sparse_initializer=[sparse],
    )
    twice = helper.make_function("local", "Twice", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                                 [helper.make_opsetid("", 17)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("x.y", 1),
                                                    helper.make_opsetid("local", 1)], functions=[twice])
    shapeinfer.optimize(model)
    plain = parser.parse_model("""
        <ir_version: 8, opset_import: ["" : 17]>
        g (float[N, 4] x) => (float[N, 4] y) {
            k = Constant <value = float[1] {2.0}> ()
            m = Mul (x, k)
            y = ReduceSum <keepdims = 1> (m, )
        }""")
    shapeinfer.optimize(plain)
    assert compared == ["g", "g"]
