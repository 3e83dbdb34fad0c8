"""inline-if: an If whose condition is known becomes the branch it takes. Generated models --
conditions that are constants or that inference knows (a static dim compared), branches that
read outer tensors, return them, nest another If, feed graph outputs -- give onnxruntime's
bytes before and after at sizes 0, 1 and more, and the If is gone; the declines keep it."""

import numpy as np
import onnx
import pytest
from onnx import parser

import shapeinfer
from shapeinfer.optimizer import OptimizeReport

ort = pytest.importorskip("onnxruntime")

H = '<ir_version: 9, opset_import: ["" : 18]>\n'
UNARY = ["Neg", "Abs", "Relu", "Sigmoid", "Floor"]


def _branch(rng, name, out, depth):
    """A branch: a chain of unary ops over x or h (outer tensors), sometimes an inner If."""
    src = ["x", "h"][int(rng.integers(0, 2))]
    if rng.random() < 0.2:
        return f"{name} () => (float[N,3] {out}) {{ {out} = Identity({src}) }}", 1  # returns an outer tensor
    lines, cur = [], src
    for k in range(int(rng.integers(1, 4))):
        nxt = f"{out}_{k}"
        lines.append(f"{nxt} = {UNARY[int(rng.integers(0, len(UNARY)))]}({cur})")
        cur = nxt
    if depth == 0 and rng.random() < 0.3:
        inner_t, _ = _branch(rng, f"{name}_it", f"{out}_it", 1)
        inner_e, _ = _branch(rng, f"{name}_ie", f"{out}_ie", 1)
        lines.append(f"{out}_inner = If(k) <then_branch = {inner_t}, else_branch = {inner_e}>")
        lines.append(f"{out} = Add({cur}, {out}_inner)")
    else:
        lines.append(f"{out} = Identity({cur})")
    return f"{name} () => (float[N,3] {out}) {{ {' '.join(lines)} }}", 0


def _model(seed):
    rng = np.random.default_rng(seed)
    cond_kind = int(rng.integers(0, 3))
    if cond_kind == 0:
        cond = f"c = Constant<value = bool {{{int(rng.integers(0, 2))}}}>()"
    elif cond_kind == 1:  # a static dim compared: inference knows the value (fold makes it a constant)
        cond = f"s = Shape<start = 1, end = 2>(x)  three = Constant<value = int64[1] {{{int(rng.integers(2, 5))}}}>()" \
               "  c1 = Equal(s, three)  c = Squeeze(c1)"
    else:  # computed from a symbolic dim: not known, the If stays
        cond = "s = Shape<start = 0, end = 1>(x)  zero = Constant<value = int64[1] {0}>()  c1 = Equal(s, zero)" \
               "  c = Squeeze(c1)"
    then_b, _ = _branch(rng, "tb", "a", 0)
    else_b, _ = _branch(rng, "eb", "b", 0)
    y_is_output = rng.random() < 0.5
    tail = "" if y_is_output else "  z = Neg(y)"
    out = "float[N,3] y" if y_is_output else "float[N,3] z"
    text = (f"g (float[N,3] x, bool k) => ({out}) {{ h = Relu(x)  {cond}"
            f"  y = If(c) <then_branch = {then_b}, else_branch = {else_b}>{tail} }}")
    return parser.parse_model(H + text), cond_kind != 2


@pytest.mark.parametrize("seed", range(60))
def test_generated_ifs_inline_and_compute_the_same(seed):
    model, known = _model(seed)
    report = OptimizeReport()
    try:
        out = shapeinfer.optimize(model, report=report)
    except shapeinfer.ShapeInferenceError:
        pytest.fail("a valid model was refused")
    onnx.checker.check_model(out, full_check=True)
    ifs_left = sum(n.op_type == "If" and n.input[0] != "k" for n in out.graph.node)  # (an inner If(k) stays)
    if known:
        assert report.changes.get("inline-if") and ifs_left == 0, (report.changes, report.declined)
    else:
        assert ifs_left == 1
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    a = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(out.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    for n in (0, 1, 4):
        for k in (True, False):
            x = np.resize(np.array([-0.0, 1.5, np.nan, -2.25, np.inf, 0.0], np.float32), (n, 3))
            feeds = {"x": x, "k": np.array(k)}
            want, got = a.run(None, feeds), b.run(None, {i.name: feeds[i.name] for i in b.get_inputs()})
            assert [w.tobytes() for w in want] == [g.tobytes() for g in got] and \
                [w.shape for w in want] == [g.shape for g in got], (n, k)


def _report(text):
    report = OptimizeReport()
    out = shapeinfer.optimize(parser.parse_model(H + text), passes=["fold-constants", "inline-if"], report=report)
    return out, report


def test_a_branch_making_a_name_the_graph_uses_is_kept():
    out, report = _report("g (float[N] x) => (float y, float t) <bool c = {1}> { t = Neg(x)"
                          "  y = If(c) <then_branch = tb () => (float t2) { t = Abs(x)  t2 = Neg(t) },"
                          " else_branch = eb () => (float u) { u = Abs(x) }> }")
    assert any(n.op_type == "If" for n in out.graph.node)
    assert any("a name the graph already uses" in why for _, op, why in report.declined if op == "If")


def test_a_graph_output_returned_from_outside_the_branch_is_kept():
    out, report = _report("g (float[N] x) => (float y) <bool c = {0}> {"
                          "  y = If(c) <then_branch = tb () => (float a) { a = Neg(x) },"
                          " else_branch = eb () => (float x2) { x2 = Identity(x) }> }")
    assert not any(n.op_type == "If" for n in out.graph.node)  # (the Identity is the branch's own node)
    out, report = _report("g (float[N] x) => (float y) <bool c = {0}, float one = {1.0}> {"
                          "  y = If(c) <then_branch = tb () => (float a) { a = Neg(x) },"
                          " else_branch = eb () => (float one) { }> }")
    assert any(n.op_type == "If" for n in out.graph.node)
    assert any("from outside the branch" in why for _, op, why in report.declined if op == "If")
