"""optimize never changes what the model computes -- including for inputs the caller may
override, empty axes, signed zeros and NaNs. Each case runs both models in onnxruntime and
compares the bytes (the one documented tolerance: a signalling NaN may come back quieted)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.optimizer.manager import OptimizeReport
from shapeinfer.optimizer.verify import difference, verify

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
    """ReduceMax(Expand(x[A,1], Shape(y[A,B])), axes=[1]) at B=0 reduces nothing: the op's
    identity (INT32_MIN). Reading x instead would give x. The rewrite needs the reduced axis
    empty exactly when x's is. (Ints: over floats the pass declines.)"""
    model = onnx.parser.parse_model(H + f"""
    g (int32[A,1] x, float[A,B] y) => (int32 z) <int64[1] ax = {{1}}> {{
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
    g (int32[A,1] x) => (int32 z) <int64[2] s = {{1, 5}}, int64[1] ax = {{1}}> {{
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
    assert difference(want, got) == ""  # which verify's rule allows
    assert _bits_equal(want[2:], got[2:])


def test_collapsed_reshapes_at_opset_below_5_take_the_shape_as_an_attribute():
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 3]>
    g (float[A,4] x) => (float y) {
      r = Reshape<shape = [0]>(x)
      y = Reshape<shape = [1, -1]>(r)
    }
    """)
    out = shapeinfer.optimize(model)
    onnx.checker.check_model(out, full_check=True)  # Reshape-1 takes one input
    assert all(len(n.input) == 1 for n in out.graph.node if n.op_type == "Reshape")


def test_a_sum_of_squares_over_no_axis_still_squares():
    """ReduceSumSquare with noop_with_empty_axes=1 and no axes squares each element: neither
    inference nor folding may pass the input on ([2] -> [4])."""
    model = onnx.parser.parse_model("""
    <ir_version: 9, opset_import: ["" : 18]>
    g (int32[2] x) => (int64[1] y) {
      s = Shape(x)
      y = ReduceSumSquare<keepdims = 1, noop_with_empty_axes = 1>(s)
    }
    """)
    assert shapeinfer.infer(model).fact("y").value is None  # (not the input passed on)
    out = shapeinfer.optimize(model)
    (want,), (got,) = _run(model, {"x": np.zeros(2, np.int32)}), _run(out, {"x": np.zeros(2, np.int32)})
    assert want.tolist() == got.tolist() == [4]


def test_a_declared_dim_value_minus_one_is_written_as_an_unnamed_dim():
    """Some exporters write a dynamic dim as dim_value -1; onnx's own inference reads it as the
    size -1 (and refuses an Expand to [4] once the target is constant). Written models carry
    an unnamed dim instead, which every tool reads as dynamic."""
    model = onnx.parser.parse_model("""
    <ir_version: 10, opset_import: ["" : 21]>
    g (float[batch,-1] x) => (int64[?] y) <int64[4] c = {0, 1, 2, 3}> {
      s = Shape(c)
      e = Expand(x, s)
      y = Shape(e)
    }
    """)
    for out in (shapeinfer.optimize(model), shapeinfer.infer_shapes(model)):
        dims = out.graph.input[0].type.tensor_type.shape.dim
        assert not dims[1].HasField("dim_value") and not dims[1].dim_param
        onnx.checker.check_model(out, full_check=True)
    feeds = {"x": np.zeros((2, 1), np.float32)}
    assert _run(model, feeds)[0].tolist() == _run(shapeinfer.optimize(model), feeds)[0].tolist() == [2, 4]


@pytest.mark.parametrize("size", [4097, 65537, 2048])
def test_a_cast_to_float16_that_rounds_is_not_folded(size):
    """onnxruntime's CPU provider runs a float16 Mul in float32 between inserted Casts and drops
    the Cast pairs, the rounding to float16 with them: Cast(4097 -> float16) * 1.5 gives 6145.5
    there, 6144 by the spec. A folded float16 constant keeps the rounding, so the Cast is folded
    only where float16 holds the value (2048 does). The spec is on the folded side; the outputs
    onnxruntime computes are what optimize keeps."""
    model = onnx.parser.parse_model(f"""
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[{size}] x) => (float y) {{
      s = Shape(x)
      h = Cast<to = 10>(s)
      c = Constant<value = float16 {{15872}}>()
      m = Mul(h, c)
      y = Cast<to = 1>(m)
    }}
    """)
    out = shapeinfer.optimize(model)
    feeds = {"x": np.zeros(size, np.float32)}
    (want,), (got,) = _run(model, feeds), _run(out, feeds)
    assert _bits_equal(want, got), (want, got)
    casts = [n for n in out.graph.node if n.op_type == "Cast" and n.attribute[0].i == TensorProto.FLOAT16]
    assert bool(casts) == (size != 2048)  # folded exactly where float16 holds the size


# ---------------------------------------------------------------- a graph output's name moves


def _outputs_bit_equal(model, out, feeds_list):
    assert [o.name for o in out.graph.output] == [o.name for o in model.graph.output]
    for feeds in feeds_list:
        for want, got in zip(_run(model, feeds), _run(out, feeds)):
            assert _bits_equal(want, got), feeds


SIGNED = np.array([-0.0, 0.0, np.nan, -1.5, np.inf, 3.0], np.float32)


def _x(n, d=3):
    return {"x": np.resize(SIGNED, (n, d)).astype(np.float32)}


@pytest.mark.parametrize("y_type, node", [
    ("float[N,3]", "y = Identity(r)"),
    ("float[N,3]", "y = Reshape(r, s)"),  # s = [0, 3]: the shape r has
    ("float[N,3]", "y = Cast<to = 1>(r)"),  # to the type r has
    ("float[N,3]", "y = Mul(r, one)"),
    ("float[N,3]", "y = Transpose<perm = [0, 1]>(r)"),
    ("float[N,1,3]", "w = Unsqueeze(r, ax)  y = ReduceMax<keepdims = 1>(w, ax)"),  # over a size-1 axis
], ids=["identity", "noop_reshape", "noop_cast", "times_one", "identity_transpose", "reduce_size_one"])
def test_a_removed_node_that_made_a_graph_output_gives_its_name_to_its_input(y_type, node):
    """The node goes; the tensor it read takes the graph output's name (its other reader, z,
    reads it under that name), and both models return the same bytes."""
    model = onnx.parser.parse_model(H + f"""
    g (float[N,3] x) => ({y_type} y, float[N,3] z) <int64[2] s = {{0, 3}}, float one = {{1.0}}, int64[1] ax = {{1}}> {{
      r = Relu(x)
      {node}
      z = Neg(r)
    }}
    """)
    op = node.split("y = ")[1].split("(")[0].split("<")[0]
    out = shapeinfer.optimize(model)
    onnx.checker.check_model(out, full_check=True)
    assert op not in [n.op_type for n in out.graph.node]
    assert {"y", "z"} <= {o for n in out.graph.node for o in n.output}
    _outputs_bit_equal(model, out, [_x(0), _x(1), _x(4)])


def test_a_renamed_tensor_is_read_under_its_new_name_inside_a_subgraph():
    model = onnx.parser.parse_model(H + """
    g (float[N,3] x, bool c) => (float[N,3] y, float[N,3] z) <int64[2] s = {0, 3}> {
      r = Relu(x)
      z = If(c) <then_branch = t () => (float[N,3] a) { a = Neg(r) }, else_branch = e () => (float[N,3] b) { b = Abs(r) }>
      y = Reshape(r, s)
    }
    """)
    out = shapeinfer.optimize(model)
    onnx.checker.check_model(out, full_check=True)
    assert "Reshape" not in [n.op_type for n in out.graph.node]
    feeds = [{**_x(n), "c": np.array(flag)} for n in (0, 2) for flag in (True, False)]
    _outputs_bit_equal(model, out, feeds)


@pytest.mark.parametrize("graph, kept", [
    # the input is a graph input: its name is the caller's
    ("g (float[N,3] x) => (float[N,3] y) <int64[2] s = {0, 3}> { y = Reshape(x, s) }", "Reshape"),
    ("g (float[N,3] x) => (float[N,3] y) { y = Identity(x) }", "Identity"),
    # the input is another graph output
    ("g (float[N,3] x) => (float[N,3] r, float[N,3] y) <int64[2] s = {0, 3}> { r = Relu(x)  y = Reshape(r, s) }",
     "Reshape"),
    # two outputs of one tensor: the first takes its name, the second stays
    ("g (float[N,3] x) => (float[N,3] y1, float[N,3] y2) { r = Relu(x)  y1 = Identity(r)  y2 = Identity(r) }",
     "Identity"),
], ids=["graph_input", "graph_input_identity", "another_graph_output", "two_outputs_of_one_tensor"])
def test_a_graph_output_keeps_its_node_when_the_input_has_a_name_to_keep(graph, kept):
    model = onnx.parser.parse_model(H + graph)
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report)
    onnx.checker.check_model(out, full_check=True)
    assert [n.op_type for n in out.graph.node].count(kept) == 1
    if kept == "Reshape":
        assert any("graph output" in why for _, _, why in report.kept), report.kept
    _outputs_bit_equal(model, out, [_x(0), _x(1), _x(4)])


def test_an_initializer_keeps_its_name():
    """Identity of an initializer is left to fold-constants (run alone, remove-identity keeps it:
    the initializer's name is not one to move)."""
    model = onnx.parser.parse_model(H + """
    g (float[N,3] x) => (float[2] y, float[N,3] z) <float[2] c = {1.0, -0.0}> { y = Identity(c)  z = Neg(x) }
    """)
    out = shapeinfer.optimize(model, passes=["remove-identity"])
    assert [n.op_type for n in out.graph.node] == ["Identity", "Neg"]
    _outputs_bit_equal(model, out, [_x(2)])


def test_renames_wait_for_the_rewrites_that_need_none():
    """u undoes the Squeeze, so u's readers can read x; y = Reshape(u) is a no-op making a graph
    output. Renaming u to y first would leave u's Reshape and the Shape for the graph output
    (x, a graph input, cannot take y's name); bypassing u first leaves one Reshape of x."""
    model = onnx.parser.parse_model(H + """
    g (float[N,1,3] x) => (float[N,3] q, float[N,1,3] y) <int64[1] ax = {1}, int64[3] s = {0, 1, 3}> {
      q = Squeeze(x, ax)
      h = Shape(x)
      u = Reshape(q, h)
      y = Reshape(u, s)
    }
    """)
    out = shapeinfer.optimize(model, passes=["remove-noop"])
    assert [(n.op_type, list(n.input)) for n in out.graph.node] == [("Squeeze", ["x", "ax"]), ("Reshape", ["x", "s"])]
    _outputs_bit_equal(model, out, [{"x": np.resize(SIGNED, (n, 1, 3)).astype(np.float32)} for n in (0, 1, 4)])


def test_float16_arithmetic_that_rounds_is_not_folded():
    """x * (-1 / 3) in float16: onnxruntime's CPU provider divides in float32 and passes the
    float32 quotient to the Mul (the Casts between float16 ops are dropped), rounding once at
    the end; a folded float16 constant would round twice (generator seed 9650). A quotient
    float16 holds (-1 / 4) is folded."""
    for divisor, folded in ((16896, False), (17408, True)):  # 3.0 and 4.0 as float16 bits
        model = onnx.parser.parse_model(f"""
        <ir_version: 10, opset_import: ["" : 21]>
        g (float16[4] x) => (float16[4] y) <float16[1] a = {{48128}}, float16[1] b = {{{divisor}}}> {{
          q = Div(a, b)
          y = Mul(x, q)
        }}
        """)
        out = shapeinfer.optimize(model)
        assert (not any(n.op_type == "Div" for n in out.graph.node)) == folded
        feeds = {"x": np.array([-0.3992, 1.0, 3.0, 65504.0], np.float16)}
        (want,), (got,) = _run(model, feeds), _run(out, feeds)
        assert _bits_equal(want, got), (want, got)


def test_a_float_reduction_over_distinct_copies_keeps_the_copies():
    """onnxruntime's ReduceMin of values with a NaN depends on the order it reads them (min(1,
    NaN) is 1 there): reading Tile's input instead of its copies can change the result, so for
    floats reduce-broadcast needs every reduced axis of the input to hold one value (generator
    seeds 18140, 19351). Integers are rewritten as before."""
    for dtype, np_dtype, rewritten in (("float", np.float32, False), ("int32", np.int32, True)):
        model = onnx.parser.parse_model(f"""
        <ir_version: 8, opset_import: ["" : 13]>
        g ({dtype}[2,2] x) => ({dtype}[?,?] y) <int64[2] r = {{3, 3}}> {{
          t = Tile(x, r)
          y = ReduceMin<keepdims = 1>(t)
        }}
        """)
        out = shapeinfer.optimize(model)
        assert (not any(n.op_type == "Tile" for n in out.graph.node)) == rewritten
        x = np.array([[1, 2], [3, 4]], np_dtype)
        if np_dtype == np.float32:
            x[0, 1] = np.nan
        feeds = {"x": x}
        (want,), (got,) = _run(model, feeds), _run(out, feeds)
        assert _bits_equal(want, got), (want, got)
