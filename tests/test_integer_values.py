"""Integer shape values are what the runtime holds: casts wrap, overflow wraps, and a value that
may not fit its type is unknown.

The spec: a cast between integer types discards the high bits (200 as int8 is -56); a float cast
to an integer type out of its range is undefined. A computed *symbolic* value is kept only where
it provably fits its type for every dim below 2**31 (symbolic.DIM_MAX); a concrete one is
computed with the wrap. onnxruntime is the judge.
"""

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.infer.facts import UNKNOWN
from shapeinfer.semantics import INT_RANGES
from shapeinfer.symbolic import DIM_MAX, evaluate

ort = pytest.importorskip("onnxruntime")

INT_TYPES = sorted(INT_RANGES)
SIZES = (0, 1, 2, 3, 7, 300, 70000)


def _session(model):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_empty_tensor_value_info(o) for o in outputs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _boundaries(dtype):
    lo, hi = INT_RANGES[dtype]
    candidates = (lo, lo + 1, -129, -128, -1, 0, 1, 127, 128, 200, 255, 256, 65535, 65536, 2**31 - 1, 2**31,
                  2**31 + 5, 2**32 - 1, hi - 1, hi)
    return sorted({v for v in candidates if lo <= v <= hi})


@pytest.mark.parametrize("src,dst", list(itertools.product(INT_TYPES, INT_TYPES)))
def test_constant_integer_casts_wrap_as_onnxruntime_does(src, dst):
    values = np.array(_boundaries(src), dtype=helper.tensor_dtype_to_np_dtype(src))
    m = _model([helper.make_node("Cast", ["c"], ["y"], to=dst)], [], ["y"], [numpy_helper.from_array(values, "c")])
    result = shapeinfer.infer(m)
    (want,) = _session(m).run(None, {})
    assert result.fact("y").int_elements() == [int(v) for v in want], (src, dst)
    # a cast is defined to wrap: no overflow finding (check used to call this an int64-overflow)
    assert not [d for d in result.diagnostics if d.kind == "overflow"]


@pytest.mark.parametrize("dst", INT_TYPES)
@pytest.mark.parametrize("offset", [-4, 0, 200, 2**31])
def test_a_symbolic_value_cast_to_a_narrower_type_is_known_only_where_it_fits(dst, offset):
    """Cast(Shape(x)[0] + offset, dst): S-4 as uint8 is 252 at S=0; S+200 as int8 wraps for
    every S; S as int32 fits every dim below 2**31."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Add", ["s", "k"], ["v"]),
             helper.make_node("Cast", ["v"], ["y"], to=dst)]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S"])], ["y"],
               [numpy_helper.from_array(np.array([offset], np.int64), "k")])
    result = shapeinfer.infer(m)
    (e,) = result.fact("y").value.tolist()
    lo, hi = INT_RANGES[dst]
    sess = _session(m)
    for size in SIZES:
        (got,) = sess.run(None, {"x": np.zeros(size, np.float32)})
        if e is not UNKNOWN:
            assert evaluate(e, {"S": size}) == int(got[0]), (dst, offset, size, e)
    fits_everywhere = lo <= offset and offset + DIM_MAX <= hi
    assert (e is not UNKNOWN) == fits_everywhere, (e, dst, offset)


def test_the_issue_cases_are_unknown_not_passed_through():
    # ConstantOfShape(Cast(Shape(x) * 128, uint8)) wraps
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[S] x) => (float y) <int64[1] k = {128}> {
      s = Shape(x)
      v = Mul(s, k)
      c = Cast<to = 2>(v)
      w = Cast<to = 7>(c)
      y = ConstantOfShape(w)
    }
    """)
    result = shapeinfer.infer(m)
    assert result.is_unknown_dim(result.shape("y")[0])
    sess = _session(m)
    assert sess.run(None, {"x": np.zeros(3, np.float32)})[0].shape == (128,)  # 384 wraps to 128
    # int32 arithmetic that overflows: Cast(S, int32) * 2^30 / 2^30 + 3
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[S] x) => (float y) <int32[1] big = {1073741824}, int32[1] three = {3}> {
      s = Shape(x)
      c = Cast<to = 6>(s)
      a = Mul(c, big)
      b = Div(a, big)
      d = Add(b, three)
      w = Cast<to = 7>(d)
      y = ConstantOfShape(w)
    }
    """)
    result = shapeinfer.infer(m)
    assert result.fact("c").value.tolist()[0] == shapeinfer.symbolic.sym("S")  # S fits int32
    assert result.is_unknown_dim(result.shape("y")[0])  # S * 2^30 does not
    sess = _session(m)
    for size, want in ((0, 3), (1, 4), (2, 1), (3, 2)):  # 2 * 2^30 wraps to -2^31, / 2^30 = -2
        assert sess.run(None, {"x": np.zeros(size, np.float32)})[0].shape == (want,)


def test_a_constant_cast_to_int32_is_plain_data_for_check():
    """Cast(int64 initializer 2**31 + 5 -> int32) is defined (it wraps): no int64-overflow error."""
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N] x) => (int32[1] y) <int64[1] k = {2147483653}> {
      y = Cast<to = 6>(k)
    }
    """)
    report = shapeinfer.check(m)
    assert not [f for f in report.findings if f.code == "int64-overflow"], report.findings
    assert shapeinfer.infer(m).fact("y").int_elements() == [-2147483643]


@pytest.mark.parametrize("dst", [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64])
def test_float_to_integer_casts_out_of_range_are_not_computed(dst):
    values = np.array([0.5, -0.5, 2.9999, -2.9999, 127.9, 128.0, 300.0, -1e20, 1e20, np.nan, np.inf], np.float32)
    for v in values:
        m = _model([helper.make_node("Cast", ["c"], ["y"], to=dst)], [], ["y"],
                   [numpy_helper.from_array(np.array([v], np.float32), "c")])
        got = shapeinfer.infer(m).fact("y").int_elements()
        lo, hi = INT_RANGES[dst]
        if not np.isfinite(v) or not lo <= np.trunc(v) <= hi:
            assert got is None, (v, dst, got)  # undefined by the spec
        else:
            assert got == [int(_session(m).run(None, {})[0][0])], (v, dst)


@pytest.mark.parametrize("dtype", [TensorProto.INT32, TensorProto.INT64, TensorProto.INT16])
def test_integer_range_counts_and_values(dtype):
    np_t = helper.tensor_dtype_to_np_dtype(dtype)
    lo, hi = INT_RANGES[dtype]
    cases = [(0, 5, 1), (5, 0, -2), (0, 0, 3), (-7, 7, 3), (3, -4, -1), (0, 10, 4), (lo, lo + 3, 1), (hi - 3, hi, 2)]
    compared = 0
    for start, limit, delta in cases:
        inits = [numpy_helper.from_array(np.array(v, np_t), n) for n, v in (("a", start), ("b", limit), ("d", delta))]
        m = _model([helper.make_node("Range", ["a", "b", "d"], ["y"])], [], ["y"], inits)
        (want,) = _session(m).run(None, {})
        result = shapeinfer.infer(m)
        fact = result.fact("y")
        spec_count = max(-(-(limit - start) // delta), 0)
        if result.is_unknown_dim(fact.shape[0]):
            # only where onnxruntime's count (in double) may not be the spec's exact one
            assert max(abs(start), abs(limit)) > 2**52, (start, limit, delta)
            continue
        assert fact.shape == (spec_count,) == (len(want),), (start, limit, delta)
        assert fact.int_elements() == [int(v) for v in want], (start, limit, delta)
        compared += 1
    assert compared > 0, "every count was unknown: nothing was compared with onnxruntime"
    # why the count stays unknown there: near INT64_MIN onnxruntime before 1.32 counts 0 (in
    # double) where the spec counts 3; 1.32 counts 3. Whichever runs, shapeinfer must not say 0.
    if dtype == TensorProto.INT64:
        inits = [numpy_helper.from_array(np.array(v, np_t), n) for n, v in (("a", lo), ("b", lo + 3), ("d", 1))]
        m = _model([helper.make_node("Range", ["a", "b", "d"], ["y"])], [], ["y"], inits)
        assert _session(m).run(None, {})[0].shape in ((0,), (3,))
        fact = shapeinfer.infer(m).fact("y")
        assert fact.shape[0] != 0


def test_float_range_counts_follow_the_runtime_or_are_unknown():
    """Counts where the float32 difference and the double division give the exact count are
    known (and the values are accumulated in float32, as the runtime does); elsewhere unknown."""
    rng = np.random.default_rng(7)
    cases = [(0.0, 0.3, 0.1), (0.0, 1.0, 0.1), (1.5, -2.5, -0.5), (0.0, 5.0, 1.0), (0.1, 0.7, 0.2)]
    cases += [tuple(float(x) for x in rng.choice([-2.5, -1.0, -0.1, 0.0, 0.1, 0.3, 0.7, 1.0, 3.3], 3)) for _ in range(40)]
    compared = 0
    for start, limit, delta in cases:
        if delta == 0:
            continue
        inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("a", start), ("b", limit), ("d", delta))]
        m = _model([helper.make_node("Range", ["a", "b", "d"], ["y"])], [], ["y"], inits)
        (want,) = _session(m).run(None, {})
        result = shapeinfer.infer(m)
        (n,) = result.shape("y")
        if result.is_unknown_dim(n):
            continue
        assert n == len(want), (start, limit, delta)
        assert result.fact("y").value.tobytes() == want.tobytes(), (start, limit, delta)
        compared += 1
    assert compared > 0, "every count was unknown: nothing was compared with onnxruntime"


TRUNC_MODEL = """
<ir_version: 9, opset_import: ["" : 18]>
g (float[N] x, float[B,C,L] y) => (int64 q, float r, float z) {
    n = Shape(x)
    seven = Constant<value = int64[1] {7}>()
    two = Constant<value = int64[1] {2}>()
    d = Sub(n, seven)
    q = Div(d, two)
    zero = Constant<value = int64 {0}>()
    one = Constant<value = int64 {1}>()
    qs = Squeeze(q)
    lim = Add(qs, seven)
    r0 = Range(zero, lim, one)
    r = Cast<to = 1>(r0)
    s = Shape(y)
    z = Reshape(y, s)
}
"""


def test_division_of_a_value_of_either_sign_truncates_and_a_shape_of_itself_is_kept():
    """Div of int64 truncates toward zero: (N-7)/2 is max(N-7,0)//2 - max(7-N,0)//2, exact for
    N < 7 too (a Range from it has that length + 7 clamped at 0); Reshape(y, Shape(y)) is y's
    shape even where a dim (an entry) could be 0. Checked in onnxruntime at N in 0..12."""
    import onnxruntime as ort

    model = onnx.parser.parse_model(TRUNC_MODEL)
    result = shapeinfer.infer(model)
    (q,) = result.fact("q").value.tolist()
    assert result.shape_strs("z") == ["B", "C", "L"]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in range(13):
        real_q, real_r, real_z = sess.run(None, {"x": np.zeros(n, np.float32), "y": np.zeros((n % 3, 2, n), np.float32)})
        assert evaluate(q, {"N": n}) == int(real_q[0]), n
        assert tuple(evaluate(d, {"N": n}) for d in result.fact("r").shape) == real_r.shape, n
