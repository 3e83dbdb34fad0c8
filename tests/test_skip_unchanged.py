"""A pass that found nothing to do is not run again until some pass has changed the graph
(optimizer.manager.SKIP_UNCHANGED), small Constant nodes become constants as the graph is
built (MOVE_CONSTANTS), and dead nodes leave the graph after each round that changed it
(DROP_DEAD). The optimised model must be the one full rounds give --
byte for byte, with the same report -- on every fixture, the bench models, generated graphs and
graphs where one rewrite enables another several hops away."""

import importlib
import os

import onnx
import pytest

import shapeinfer
from tests import corpus
from tests.helpers import bench_module, generated_models

manager = importlib.import_module("shapeinfer.optimizer.manager")


def _optimized(model, skip: bool, **options):
    """Optimised with (skip) or without the shortcuts: passes skipped while nothing changed,
    small Constant nodes made constants at import instead of by fold-constants, dead nodes
    dropped between rounds instead of at the end."""
    saved = manager.SKIP_UNCHANGED, manager.MOVE_CONSTANTS, manager.DROP_DEAD
    manager.SKIP_UNCHANGED = manager.MOVE_CONSTANTS = manager.DROP_DEAD = skip
    try:
        report = manager.OptimizeReport()
        out = shapeinfer.optimize(model, report=report, **options)
    finally:
        manager.SKIP_UNCHANGED, manager.MOVE_CONSTANTS, manager.DROP_DEAD = saved
    # (the declines of nodes the result keeps: dead nodes dropped between rounds are not walked)
    live = {n.name for n in out.graph.node if n.name}
    return (out.SerializeToString(), report.after, report.kept, report.not_folded,
            [d for d in report.declined if d[0] in live], {k: v for k, v in report.changes.items() if v})


def _same(model, **options):
    a = _optimized(model, True, **options)
    b = _optimized(model, False, **options)
    assert a[1:] == b[1:]
    assert a[0] == b[0]


@pytest.mark.parametrize("entry", corpus.entries(), ids=lambda e: e["file"])
def test_skipping_changes_nothing_on_the_fixtures(entry):
    _same(onnx.load(os.path.join(entry["dir"], entry["file"])))


def test_skipping_changes_nothing_on_the_bench_models():
    chain, models = bench_module("bench_infer").chain, bench_module("models")
    _same(chain(3000))
    _same(models.llama_layers(3))
    _same(models.llama_layers(3), assume_nonempty=True)


def test_skipping_changes_nothing_on_generated_graphs():
    compared = 0
    for seed, model in generated_models("SHAPEINFER_SKIP_SEEDS", 60):
        try:
            a = _optimized(model, True)
        except (shapeinfer.ShapeInferenceError, ValueError):
            continue
        assert a == _optimized(model, False), seed
        compared += 1
    assert compared > 30


def _model(nodes, inputs, outputs, inits):
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    x = [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n, dims in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in inits]
    return helper.make_model(helper.make_graph(nodes, "g", x, outs, inits), opset_imports=[helper.make_opsetid("", 13)])


def test_a_node_that_becomes_reshape_like_lets_a_chain_below_go():
    """reduce-size-one turns ReduceMax into a Squeeze; remove-noop then compares the Squeeze
    three hops below with it (a chain check) and removes it."""
    from onnx import helper

    nodes = [helper.make_node("Relu", ["in"], ["x"]),
             helper.make_node("ReduceMax", ["x"], ["a"], axes=[0], keepdims=0),
             helper.make_node("Unsqueeze", ["a", "ax1"], ["b"]),
             helper.make_node("Unsqueeze", ["b", "ax0"], ["c"]),
             helper.make_node("Squeeze", ["c", "ax2"], ["d"]),
             helper.make_node("Neg", ["d"], ["out"]),
             helper.make_node("Abs", ["b"], ["ob"]), helper.make_node("Abs", ["c"], ["oc"])]
    model = _model(nodes, [("in", [1, 6])], ["out", "ob", "oc"], [("ax0", [0]), ("ax1", [1]), ("ax2", [2])])
    _same(model)
    assert "Squeeze" not in [n.op_type for n in onnx.load_from_string(_optimized(model, True)[0]).graph.node]


def test_a_reader_leaving_lets_the_other_reader_collapse():
    """collapse-reshapes merges a Flatten into the op before it once that op's output has one
    reader: the other reader leaves first."""
    from onnx import helper

    nodes = [helper.make_node("Unsqueeze", ["x", "ax0"], ["t"]),
             helper.make_node("Flatten", ["t"], ["f"], axis=2),
             helper.make_node("Reshape", ["t", "shp"], ["r"]),
             helper.make_node("Neg", ["f"], ["o1"]), helper.make_node("Neg", ["r"], ["o2"])]
    model = _model(nodes, [("x", [2, 3, 4])], ["o1", "o2"], [("ax0", [0]), ("shp", [6, 4])])
    _same(model)
    assert "Unsqueeze" not in [n.op_type for n in onnx.load_from_string(_optimized(model, True)[0]).graph.node]
