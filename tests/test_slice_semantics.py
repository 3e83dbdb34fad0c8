"""Slice follows the spec's clamping, not Python's, in all three places that compute it.

With a negative step the spec clamps the start to [0, dim-1] (Python: to -1 below -dim, which
selects nothing) and the end to [-1, dim-1]. onnxruntime follows the spec but for one case
(``RUNTIME_SPECIAL_ENDS``: an end of INT32_MAX or INT64_MAX with a negative step runs to index 0
there; the spec text and onnx's own inference give an empty slice); NumPy and
``onnx.reference`` (which slices with NumPy) do not follow it. So onnxruntime is the judge here
outside that case, ``shapeinfer.semantics.slice_range`` is checked against it first, and in that
case shapeinfer must say "unknown" and not fold.
"""

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.fold.kernels import KERNELS, NotFoldable
from shapeinfer.semantics import RUNTIME_SPECIAL_ENDS, slice_range
from shapeinfer.symbolic import evaluate

ort = pytest.importorskip("onnxruntime")

BIG = 2**63 - 1
BOUNDS = (-BIG - 1, -100, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 100, BIG)
STEPS = (-3, -2, -1, 1, 2, 3)
DIMS = (0, 1, 2, 3, 4)
# every (start, end, step) once; dims vary inside one batched model per case
CASES = list(itertools.product(BOUNDS, BOUNDS, STEPS))


def _batched_model(dim_param: bool):
    """One model holding a Slice per case over x[d] (d symbolic or as given), outputs exposed."""
    nodes, outputs, inits = [], [], []
    for i, (s, e, k) in enumerate(CASES):
        for name, v in (("s", s), ("e", e), ("k", k)):
            inits.append(numpy_helper.from_array(np.array([v], np.int64), f"{name}{i}"))
        nodes.append(helper.make_node("Slice", ["x", f"s{i}", f"e{i}", "axes", f"k{i}"], [f"y{i}"]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "axes"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["d"])
    g = helper.make_graph(nodes, "slices", [x], outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.fixture(scope="module")
def runtime_lengths():
    model = _batched_model(True)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    out = {}
    for d in DIMS:
        x = np.arange(d, dtype=np.float32)
        for case, y in zip(CASES, sess.run(None, {"x": x})):
            out[(d,) + case] = y
    return model, out


def _spec(d, s, e, k):
    """The spec text's indices, written out independently of shapeinfer's helper."""
    s, e = (s + d if s < 0 else s), (e + d if e < 0 else e)
    if k > 0:
        s, e = min(max(s, 0), d), min(max(e, 0), d)
    else:
        s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
    return list(range(s, e, k))


def test_slice_range_matches_onnxruntime(runtime_lengths):
    _, runtime = runtime_lengths
    deviations, compared = 0, 0
    for (d, s, e, k), y in runtime.items():
        taken = slice_range(d, s, e, k)
        if d > 0 and k < 0 and e in RUNTIME_SPECIAL_ENDS:
            assert taken is None  # runtimes disagree: unknown
            # the deviation itself: onnxruntime runs down to index 0, the spec stops at once
            assert list(y) == list(range(min(max(s + d if s < 0 else s, 0), d - 1), -1, k))
            assert _spec(d, s, e, k) == []
            deviations += 1
            continue
        assert list(taken) == _spec(d, s, e, k)
        assert np.array_equal(y, np.arange(d, dtype=np.float32)[list(taken)]), (d, s, e, k, y)
        compared += 1
    assert deviations > 0 and compared > 0


def test_python_slicing_differs_where_the_spec_says():
    """The case from the spec difference: x[3], starts -10, ends -100, step -1 takes element 0."""
    assert list(slice_range(3, -10, -100, -1)) == [0]
    assert len(range(*slice(-10, -100, -1).indices(3))) == 0  # Python: nothing


def test_symbolic_rule_matches_onnxruntime(runtime_lengths):
    model, runtime = runtime_lengths
    result = shapeinfer.infer(model)
    compared = 0
    for i, case in enumerate(CASES):
        (dim,) = result.shape(f"y{i}")
        if result.is_unknown_dim(dim):
            continue
        assert not (case[2] < 0 and case[1] in RUNTIME_SPECIAL_ENDS), case
        for d in DIMS:
            assert evaluate(dim, {"d": d}) == runtime[(d,) + case].shape[0], (case, d, str(dim))
            compared += 1
    assert compared > 0, "every dim was unknown: nothing was compared with onnxruntime"


@pytest.mark.parametrize("d", DIMS)
def test_value_path_and_fold_kernel_match_onnxruntime(runtime_lengths, d):
    """Slice of a known value (the shape-value path of inference) and the folding kernel."""
    _, runtime = runtime_lengths
    data = np.arange(10, 10 + d, dtype=np.int64)
    differ = {i for i, (s, e, k) in enumerate(CASES) if d > 0 and k < 0 and e in RUNTIME_SPECIAL_ENDS}
    assert len(differ) < len(CASES), "every case skipped: nothing is compared"
    for i, (s, e, k) in enumerate(CASES):
        args = [data, np.array([s]), np.array([e]), np.array([0]), np.array([k])]
        if i in differ:
            with pytest.raises(NotFoldable):
                KERNELS["Slice"]({}, args, 18)
            continue
        want = runtime[(d, s, e, k)].astype(np.int64) + 10
        got = KERNELS["Slice"]({}, args, 18)[0]
        assert np.array_equal(got, want), ("kernel", d, s, e, k)
    # the value path: Slice of a constant int64 tensor, every case in one model
    nodes, outs, inits = [], [], [numpy_helper.from_array(data, "v"),
                                   numpy_helper.from_array(np.array([0], np.int64), "axes")]
    for i, (s, e, k) in enumerate(CASES):
        for name, v in (("s", s), ("e", e), ("k", k)):
            inits.append(numpy_helper.from_array(np.array([v], np.int64), f"{name}{i}"))
        nodes.append(helper.make_node("Slice", ["v", f"s{i}", f"e{i}", "axes", f"k{i}"], [f"y{i}"]))
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.INT64, None))
    model = helper.make_model(helper.make_graph(nodes, "v", [], outs, inits),
                              opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    result = shapeinfer.infer(model)
    for i, (s, e, k) in enumerate(CASES):
        got = result.fact(f"y{i}").int_elements()
        if i in differ:
            assert got is None
            continue
        want = runtime[(d, s, e, k)].astype(np.int64) + 10
        assert got == want.tolist(), ("value", d, s, e, k)


def test_reshape_to_a_negative_step_slice_of_its_shape():
    """A Reshape whose shape is a negative-step Slice of Shape(x) with a start below -rank (it
    takes dim 0) and a -1 keeps rank 2; optimize keeps the outputs; check raises no
    declared-shape error."""
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[A,B] x) => (float[A,B] y) {
      sh = Shape(x)
      s = Constant<value = int64[1] {-10}>()
      e = Constant<value = int64[1] {-100}>()
      a = Constant<value = int64[1] {0}>()
      k = Constant<value = int64[1] {-1}>()
      one = Slice(sh, s, e, a, k)
      t = Constant<value = int64[1] {-1}>()
      spec = Concat<axis=0>(one, t)
      y = Reshape(x, spec)
    }
    """)
    result = shapeinfer.infer(m)
    assert result.shape_strs("y") == ["A", "B"]
    opt = shapeinfer.optimize(m)
    for a, b in ((2, 3), (1, 1), (3, 0), (1, 5)):
        x = np.arange(a * b, dtype=np.float32).reshape(a, b)
        want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        got = ort.InferenceSession(opt.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        assert want.shape == got.shape == (a, b)
    assert not [f for f in shapeinfer.check(m).findings if f.code == "declared-shape"]


@pytest.mark.parametrize("offset", [-1, 0, 1, 2])
@pytest.mark.parametrize("end", [2**63 - 1, -(2**63), 0, -1, 5])
@pytest.mark.parametrize("step", [1, -1, 2, -2])
def test_a_computed_start_of_minus_dim_plus_or_minus_k(offset, end, step):
    """start = -(S + offset) computed from Shape(x) on an axis of size S: -(S+1) lies below -S
    for every S (clamped to 0 either way), -S is 0 after adding S, -(S-1) is 1."""
    m = onnx.parser.parse_model(f"""
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[S] x) => (float y) <int64[1] k = {{{offset}}}, int64[1] e = {{{end}}}, int64[1] a = {{0}},
                                 int64[1] st = {{{step}}}> {{
      s = Shape(x)
      t = Add(s, k)
      b = Neg(t)
      y = Slice(x, b, e, a, st)
    }}
    """)
    result = shapeinfer.infer(m)
    (dim,) = result.shape("y")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for size in range(5):
        (y,) = sess.run(None, {"x": np.arange(size, dtype=np.float32)})
        if not result.is_unknown_dim(dim):
            assert evaluate(dim, {"S": size}) == y.shape[0], (offset, end, step, size, str(dim))
    if step > 0 or end not in RUNTIME_SPECIAL_ENDS:
        assert offset == -1 or not result.is_unknown_dim(dim), str(dim)  # exact wherever the sign is known
