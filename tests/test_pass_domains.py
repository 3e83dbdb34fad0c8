"""A pass matches an ONNX op by name *and* domain: a model-local function named Identity, Reshape
or Mul is not the ONNX op, whatever its name, and its calls must keep computing what the
function computes."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.optimizer.verify import verify

ort = pytest.importorskip("onnxruntime")


# functions named like ONNX ops, computing something else
FUNCTIONS = {
    "Identity": [helper.make_node("Neg", ["a"], ["c"])],
    "Mul": [helper.make_node("Sub", ["a", "b"], ["c"])],  # x "* 1" is x - 1
    "Reshape": [helper.make_node("Add", ["a", "a"], ["c"])],  # "a no-op Reshape" doubles
    "Expand": [helper.make_node("Relu", ["a"], ["c"])],
    "Transpose": [helper.make_node("Abs", ["a"], ["c"])],
}


def _model(op, domain):
    """y = op(x, k) with k a constant a pass would treat as neutral / no-op for the ONNX op."""
    k = {"Mul": np.ones((1,), np.float32), "Reshape": np.array([2, 3], np.int64),
         "Expand": np.array([2, 3], np.int64)}.get(op)
    inputs = ["x", "k"] if k is not None else ["x", ""]
    node = helper.make_node(op, [i for i in inputs if i], ["y0"], domain=domain, name="call")
    nodes = [node, helper.make_node("Relu", ["y0"], ["y"])]  # not a graph output: removable
    inits = [numpy_helper.from_array(k, "k")] if k is not None else []
    body = FUNCTIONS[op]
    fn = helper.make_function(domain, op, ["a", "b"] if k is not None else ["a"], ["c"], body,
                              [helper.make_opsetid("", 18)])
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    opsets = [helper.make_opsetid("", 18)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(g, functions=[fn], opset_imports=opsets, ir_version=9)


@pytest.mark.parametrize("op", sorted(FUNCTIONS))
def test_a_function_named_like_an_onnx_op_is_not_rewritten(op):
    model = _model(op, "local")
    out = shapeinfer.optimize(model)
    assert [n.op_type for n in out.graph.node if n.domain == "local"] == [op]
    v = verify(model, out, bindings=[{}])
    assert v.ok and v.compared == 1, v.runs


def test_dedupe_never_merges_calls_of_a_function_that_draws_random_numbers():
    noise = helper.make_function("local", "Noise", ["a"], ["c"], [helper.make_node("RandomNormalLike", ["a"], ["c"])],
                                 [helper.make_opsetid("", 18)])
    nodes = [helper.make_node("Noise", ["x"], ["n1"], domain="local"), helper.make_node("Noise", ["x"], ["n2"], domain="local"),
             helper.make_node("Sub", ["n1", "n2"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(g, functions=[noise], ir_version=9,
                              opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)])
    out = shapeinfer.optimize(model)
    assert [n.op_type for n in out.graph.node].count("Noise") == 2
    sess = ort.InferenceSession(out.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": np.zeros(4, np.float32)})
    assert np.any(y != 0)  # two draws, not one subtracted from itself
