"""Nothing a model contains makes the work grow without bound.

Every dim expression has a budget (shapeinfer.symbolic.expr.LIMITS); past it a dim becomes a
fresh symbol (a value element: unknown), so growing shape arithmetic -- the 41-node model that
squares a dim 13 times used to hang every command -- stays fast, and what is still reported stays
right. Exceptions that are not inference failures (a signal handler's) propagate. (Bounds of a
dim's *value* are the algebra's: test_symbolic.py; model-local functions: test_function_work_bounds.py.)
"""

import importlib
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.errors import CannotDecide
from shapeinfer.infer import registry

engine_module = importlib.import_module("shapeinfer.infer.engine")  # shapeinfer.infer is also a function
from shapeinfer.symbolic import ExpressionTooLarge, add, evaluate, mul, provably_nonneg, sym
from shapeinfer.symbolic.expr import MAX_DEGREE, MAX_DEPTH, MAX_TERMS, dmin

ort = pytest.importorskip("onnxruntime")
BUDGET_SECONDS = 5.0  # per command on a model of at most a few hundred nodes (real: ~0.1 s)


def _ints(**named):
    return [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in named.items()]


def growing_model(steps: int):
    """v <- (v+1)*v + 2, starting from Shape(x)[0], then ConstantOfShape([v]) and Shape of that."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["v0"], axis=0)]
    v = "v0"
    for k in range(steps):
        nodes += [helper.make_node("Add", [v, "one"], [f"a{k}"]), helper.make_node("Mul", [f"a{k}", v], [f"m{k}"]),
                  helper.make_node("Add", [f"m{k}", "two"], [f"v{k + 1}"])]
        v = f"v{k + 1}"
    nodes += [helper.make_node("Unsqueeze", [v, "ax"], ["u"]), helper.make_node("ConstantOfShape", ["u"], ["y"])]
    g = helper.make_graph(nodes, "grow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info(v, TensorProto.INT64, None)],
                          _ints(zero=0, one=1, two=2, ax=[0]))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), v


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - t
    assert elapsed < BUDGET_SECONDS, elapsed
    return out


@pytest.mark.parametrize("steps", [13, 60, 400])
def test_growing_shape_arithmetic_stays_fast_in_every_command(steps):
    model, _ = growing_model(steps)
    result = _timed(lambda: shapeinfer.infer(model))
    assert result.is_unknown_dim(result.shape("y")[0])  # past the budget: a fresh symbol
    _timed(lambda: shapeinfer.optimize(model))
    report = _timed(lambda: shapeinfer.check(model))
    assert not [f for f in report.findings if f.code == "internal-error"]


def test_a_value_that_may_pass_int64_is_unknown():
    """Two steps give a degree-4 polynomial in S: past int64 for some S below 2**31 (where the
    runtime would wrap), so its value is not known -- one step (degree 2) always fits."""
    model, v = growing_model(2)
    assert shapeinfer.infer(model).fact(v).value is None


@pytest.mark.parametrize("steps", [1])
def test_within_the_budget_the_value_is_exact(steps):
    model, v = growing_model(steps)
    result = shapeinfer.infer(model)
    value = result.fact(v).value.reshape(-1)[0]  # a scalar
    (dim,) = result.shape("y")
    assert not result.is_unknown_dim(dim) and dim == value
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for s in (0, 1, 2, 3):
        y, got = sess.run(None, {"x": np.zeros(s, np.float32)})
        assert evaluate(value, {"S": s}) == int(got) == y.shape[0]


def test_squaring_a_dim_through_tile_becomes_fresh_past_the_budget():
    """Tile(x, Shape(x)) squares the dim; after 6 rounds the degree would pass the budget."""
    nodes, t = [], "x"
    for k in range(8):
        nodes += [helper.make_node("Shape", [t], [f"s{k}"]), helper.make_node("Tile", [t, f"s{k}"], [f"t{k}"])]
        t = f"t{k}"
    g = helper.make_graph(nodes, "tiles", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S"])],
                          [helper.make_tensor_value_info(t, TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    result = _timed(lambda: shapeinfer.infer(model))
    assert result.shape_strs("t0") == ["S^2".replace("^2", "*S")]
    assert result.shape_strs("t3") == ["S" + "*S" * 15]  # degree 16: within the budget
    assert result.is_unknown_dim(result.shape("t5")[0])  # degree 64: fresh
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for s in (0, 1):  # S=2 would need 2^256 elements at the end
        (y,) = sess.run(None, {"x": np.zeros(s, np.float32)})
        assert y.shape == (s,)
        for k in range(5):
            assert evaluate(result.shape(f"t{k}")[0], {"S": s}) == s


def test_deeply_nested_min_becomes_fresh_without_recursion_errors():
    """Slices with symbolic ends nest min() atoms; past the depth budget the dim is fresh."""
    nodes, t = [], "x"
    for k in range(3 * MAX_DEPTH):
        nodes += [helper.make_node("Shape", ["y"], [f"e{k}"]),
                  helper.make_node("Slice", [t, "zero", f"e{k}"], [f"t{k}"])]
        t = f"t{k}"
    g = helper.make_graph(nodes, "nest", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["A"]),
                                          helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B"])],
                          [helper.make_tensor_value_info(t, TensorProto.FLOAT, None)], _ints(zero=[0]))
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    result = _timed(lambda: shapeinfer.infer(model))
    assert result.shape_strs("t0") == ["min(A,B)"]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": np.zeros(5, np.float32), "y": np.zeros(3, np.float32)})
    for k in range(3 * MAX_DEPTH):
        d = result.shape(f"t{k}")[0]
        if not result.is_unknown_dim(d):
            assert evaluate(d, {"A": 5, "B": 3}) == 3
    _timed(lambda: shapeinfer.check(model))
    _timed(lambda: shapeinfer.optimize(model))


def test_the_algebra_refuses_work_past_the_budget():
    s = [sym(f"s{i}") for i in range(MAX_TERMS + 1)]
    total = 0
    with pytest.raises(ExpressionTooLarge):
        for x in s:
            total = add(total, x)
    x = sym("x")
    p = x
    with pytest.raises(ExpressionTooLarge):
        for _ in range(MAX_DEGREE + 1):
            p = mul(p, x)
    d = x
    with pytest.raises(ExpressionTooLarge):
        for k in range(MAX_DEPTH + 1):
            d = dmin(d, sym(f"y{k}"))
    with pytest.raises(ExpressionTooLarge):
        mul(x, 2**300)
    # a predicate whose proof would pass the budget answers "not proven"
    wide = 0
    for v in s[: MAX_TERMS - 1]:
        wide = add(wide, v)
    assert provably_nonneg(wide)  # by bounds alone
    assert not provably_nonneg(add(wide, -1))


class _Interrupt(Exception):
    """What a signal handler (a timeout, say) might raise in the middle of the walk."""


def test_an_exception_that_is_not_an_inference_failure_propagates(monkeypatch):
    """A rule that does not decide on purpose (CannotDecide) falls back to onnx's inference;
    anything else -- what a signal handler raised while a rule ran, or a bug of the rule (an
    IndexError) -- reaches the caller, not swallowed as an unknown dim."""
    def interrupted(ctx):
        raise _Interrupt()

    original = registry.lookup
    monkeypatch.setattr(engine_module, "lookup",
                        lambda d, op, v: interrupted if op == "Concat" else original(d, op, v))
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N] x) => (float y) { y = Concat<axis = 0>(x, x) }
    """)
    with pytest.raises(_Interrupt):
        shapeinfer.infer(model)
    monkeypatch.setattr(engine_module, "lookup",
                        lambda d, op, v: (lambda ctx: [][1]) if op == "Concat" else original(d, op, v))
    with pytest.raises(IndexError):
        shapeinfer.infer(model)

    def undecided(ctx):
        raise CannotDecide("attribute-form", "a test")

    monkeypatch.setattr(engine_module, "lookup",
                        lambda d, op, v: undecided if op == "Concat" else original(d, op, v))
    result = shapeinfer.infer(model)
    assert len(result.shape("y")) == 1  # onnx's inference: the rank, a fresh dim
    assert any("unknown because an attribute in a form this rule does not read: a test" in d.message
               for d in result.diagnostics)


def test_a_scan_over_an_empty_tensor_of_2_63_rows_is_not_run():
    """Scan makes one trip per row, even of an empty tensor: a constant [2**63-1, 0] scanned
    would never end (onnxruntime does not). Folding must not try it; every command stays fast
    and the shapes are still inferred."""
    model = onnx.parser.parse_model('''
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[?] y, float[?,?] z, float[2] w) {
      s = Constant<value = int64[2] {9223372036854775807, 0}>()
      c = ConstantOfShape(s)
      i = Constant<value = int64 {0}>()
      s0 = Gather<axis = 0>(c, i)
      y, z = Scan<num_scan_inputs = 1, body = body (float[0] a, float[0] b) => (float[0] a2, float[0] b2) {
          a2 = Add(a, b)
          b2 = Mul(b, b)
      }>(s0, c)
      w = Relu(x)
    }''')
    result = _timed(lambda: shapeinfer.infer(model))
    assert result.shape("z") == (2**63 - 1, 0)
    for opt_in in (False, True):  # (fold_float_math folds control flow with onnx.reference)
        out = _timed(lambda: shapeinfer.optimize(model, fold_float_math=opt_in))
        assert any(n.op_type == "Scan" for n in out.graph.node)  # not folded
    report = _timed(lambda: shapeinfer.check(model))
    assert not [f for f in report.findings if f.code == "internal-error"]
