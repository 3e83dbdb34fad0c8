"""optimize never changes what the model computes -- including for inputs the caller may
override, empty axes, signed zeros and NaNs. Each case runs both models in onnxruntime and
compares the bytes (the one documented tolerance: a signalling NaN may come back quieted)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.verify import _same, verify

ort = pytest.importorskip("onnxruntime")
H = '<ir_version: 8, opset_import: ["" : 18]>\n'


def _run(model, feeds):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def _bits_equal(a, b) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_an_initializer_that_is_also_an_input_stays_an_overridable_input():
    """Older exports list every initializer as a graph input: the caller may feed another value.
    Reshape(x[S,2], spec) with spec = [1,-1] by default, fed [-1,1]: (6,1), not (1,6); and
    Add(c, c) of such an input is not folded."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S", 2])
    spec = helper.make_tensor_value_info("spec", TensorProto.INT64, [2])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Reshape", ["x", "spec"], ["r"]), helper.make_node("Add", ["c", "c"], ["cc"]),
             helper.make_node("Mul", ["r", "one"], ["y"]), helper.make_node("Identity", ["cc"], ["z"])]
    inits = [numpy_helper.from_array(np.array([1, -1], np.int64), "spec"),
             numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "c"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    g = helper.make_graph(nodes, "g", [x, spec, c], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                                    helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    out = shapeinfer.optimize(model)
    assert [i.name for i in out.graph.input] == ["x", "spec", "c"]
    assert {"spec", "c"} <= {t.name for t in out.graph.initializer}
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    for feeds in ({"x": xs}, {"x": xs, "spec": np.array([-1, 1], np.int64)},
                  {"x": xs, "c": np.array([5.0, -0.0], np.float32)}):
        for want, got in zip(_run(model, feeds), _run(out, feeds)):
            assert _bits_equal(want, got), feeds


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_a_reduction_over_broadcast_copies_keeps_an_axis_that_may_be_empty(op):
    """ReduceMax(Expand(x[A,1], Shape(y[A,B])), axes=[1]) at B=0 reduces nothing: -inf. Reading
    x instead would give x. The rewrite needs the reduced axis empty exactly when x's is."""
    model = onnx.parser.parse_model(H + f"""
    g (float[A,1] x, float[A,B] y) => (float z) <int64[1] ax = {{1}}> {{
      s = Shape(y)
      e = Expand(x, s)
      z = {op}<keepdims = 1>(e, ax)
    }}
    """)
    out = shapeinfer.optimize(model)
    bindings = [{"A": a, "B": b} for a in (1, 2) for b in (0, 1, 3)]
    v = verify(model, out, bindings=bindings)
    assert v.ok and v.compared == len(bindings), v.runs
    # a reduced axis that is provably non-empty is still rewritten
    model = onnx.parser.parse_model(H + f"""
    g (float[A,1] x) => (float z) <int64[2] s = {{1, 5}}, int64[1] ax = {{1}}> {{
      e = Expand(x, s)
      z = {op}<keepdims = 1>(e, ax)
    }}
    """)
    out = shapeinfer.optimize(model)
    assert "Expand" not in [n.op_type for n in out.graph.node]
    v = verify(model, out, bindings=[{"A": 1}, {"A": 3}, {"A": 0}])
    assert v.ok, v.runs


def test_tile_of_signed_zeros_is_not_uniform():
    """[0.0, -0.0] compares equal element by element, but Tile must copy each one's bits
    (repeats computed at run time, so tile-uniform -- not folding -- decides)."""
    model = onnx.parser.parse_model(H + """
    g (float[N] x) => (float y) <float[2] c = {0.0, -0.0}> {
      r = Shape(x)
      y = Tile(c, r)
    }
    """)
    out = shapeinfer.optimize(model)
    for n in (0, 1, 3):
        x = np.zeros(n, np.float32)
        for want, got in zip(_run(model, {"x": x}), _run(out, {"x": x})):
            assert _bits_equal(want, got), (n, want, got)


def test_tile_of_a_repeated_nan_is_still_uniform():
    model = onnx.parser.parse_model(H + """
    g (float[N] x) => (float y) <float[2] c = {nan, nan}> {
      r = Shape(x)
      y = Tile(c, r)
    }
    """)
    out = shapeinfer.optimize(model)
    assert "Tile" not in [n.op_type for n in out.graph.node]
    for n in (0, 1, 3):
        x = np.zeros(n, np.float32)
        for want, got in zip(_run(model, {"x": x}), _run(out, {"x": x})):
            assert _bits_equal(want, got)


def test_removing_x_times_one_may_return_a_signalling_nan_unquieted():
    """The one documented tolerance: Mul(x, 1.0) quiets a signalling NaN (0x7F800001 becomes
    0x7FC00001 in onnxruntime); without the Mul it comes back as it was. Bit for bit otherwise."""
    model = onnx.parser.parse_model(H + """
    g (float[N] x) => (float y) <float one = {1.0}> {
      m = Mul(x, one)
      y = Relu(m)
    }
    """)
    out = shapeinfer.optimize(model)
    assert "Mul" not in [n.op_type for n in out.graph.node]
    x = np.array([0x7F800001, 0xFF800001, 0x7FC00000, 0x80000000, 0x3F800000], np.uint32).view(np.float32)
    (want,), (got,) = _run(model, {"x": x}), _run(out, {"x": x})
    assert not _bits_equal(want, got)  # the signalling NaNs differ in their quiet bit only
    assert _same(want, got) == ""  # which verify's rule allows
    assert _bits_equal(want[2:], got[2:])
