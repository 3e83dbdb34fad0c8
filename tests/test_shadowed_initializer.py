"""A subgraph initializer that reuses a name the graph around it defines is ambiguous, and the
runtimes disagree on which tensor the subgraph reads (graph.structure.SHADOWING says how). Each
claim of that message is run here -- in onnxruntime with its graph optimisations off and at its
default level, and in onnx.reference -- on the model it is about: a Loop body, a Scan body, an If
branch whose sibling does not read the name, one whose sibling does (and a branch onnxruntime's
constant folding reaches). ``optimize`` declines every such model (onnx-graphsurgeon would read
the outer tensor; nothing is written, exit 2 from the command line) and ``check`` warns about it
with the same explanation."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import parser
from onnx.reference import ReferenceEvaluator

import shapeinfer
from shapeinfer.graph.structure import SHADOWING
from shapeinfer_cli.main import main
from tests.helpers import save

ort = pytest.importorskip("onnxruntime")

H = '<ir_version: 9, opset_import: ["" : 18]>\n'
X = np.array([1.0, 2.0, 4.0], np.float32)
# The outer w is 3, the inner one 2: y is x*3 where the outer one is read, x*2 where the inner one is
# (-x*3 and -x*2 through a Neg of w).
OUTER, INNER = "outer", "inner"

MODELS = {
    # a Loop body (one trip): vo = v * w
    "loop_body": (H + """
        g (float[3] x, int64 trip, bool k) => (float[3] y, float[3] u) <float w = {3.0}> {
          u = Add(x, w)
          y = Loop(trip, k, x) <body = b (int64 i, bool ci, float[3] v) => (bool co, float[3] vo) <float w = {2.0}> {
            co = Identity(ci)
            vo = Mul(v, w) }> }""", {"x": X, "trip": np.array(1, np.int64), "k": np.array(True)}, 1),
    # a Scan body over one row: yo = xi * w
    "scan_body": (H + """
        g (float[1,3] xs) => (float[1,3] y, float[3] u) <float w = {3.0}> {
          z = Constant<value = float[3] {0.0, 0.0, 0.0}>()
          u = Add(z, w)
          s, y = Scan(z, xs) <num_scan_inputs = 1, body = b (float[3] acc, float[3] xi) => (float[3] acc2, float[3] yo)
                              <float w = {2.0}> { yo = Mul(xi, w)  acc2 = Add(acc, yo) }> }""", {"xs": X.reshape(1, 3)}, 1),
    # an If branch whose sibling does not read w
    "if_sibling_does_not_read": (H + """
        g (float[3] x, bool k) => (float[3] y, float[3] u) <float w = {3.0}> {
          u = Add(x, w)
          y = If(k) <then_branch = tb () => (float[3] a) <float w = {2.0}> { a = Mul(x, w) },
                     else_branch = eb () => (float[3] b) { b = Abs(x) }> }""", {"x": X, "k": np.array(True)}, 1),
    # an If branch whose sibling reads w (the outer one), the branch computing x * w
    "if_sibling_reads": (H + """
        g (float[3] x, bool k) => (float[3] y, float[3] u) <float w = {3.0}> {
          u = Add(x, w)
          y = If(k) <then_branch = tb () => (float[3] a) <float w = {2.0}> { a = Mul(x, w) },
                     else_branch = eb () => (float[3] b) { b = Mul(x, w) }> }""", {"x": X, "k": np.array(True)}, 1),
    # the same, the branch computing x * Neg(w): a constant expression, which onnxruntime's
    # constant folding (from its basic level) computes
    "if_sibling_reads_folded": (H + """
        g (float[3] x, bool k) => (float[3] y, float[3] u) <float w = {3.0}> {
          u = Add(x, w)
          y = If(k) <then_branch = tb () => (float[3] a) <float w = {2.0}> { c = Neg(w)  a = Mul(x, c) },
                     else_branch = eb () => (float[3] b) { b = Mul(x, w) }> }""", {"x": X, "k": np.array(True)}, -1),
}

# what each reads: onnxruntime with optimisations off, at its default level; onnx.reference
EXPECTED = {
    "loop_body": (INNER, INNER, OUTER),
    "scan_body": (INNER, INNER, OUTER),
    "if_sibling_does_not_read": (INNER, INNER, OUTER),
    "if_sibling_reads": (OUTER, OUTER, OUTER),
    "if_sibling_reads_folded": (OUTER, INNER, OUTER),
}


def _model(case):
    """(the model, its feeds, the sign y has: x times w or -w)."""
    text, feeds, sign = MODELS[case]
    return parser.parse_model(text), feeds, sign


def _which(y, sign) -> str:
    y = np.asarray(y).reshape(-1)
    if np.array_equal(y, sign * 3 * X):
        return OUTER
    assert np.array_equal(y, sign * 2 * X), y
    return INNER


def _ort(model, feeds, level=None):
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]


@pytest.mark.parametrize("case", list(MODELS))
def test_the_runtimes_read_the_tensors_the_message_says(case):
    model, feeds, sign = _model(case)
    off = _which(_ort(model, feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL), sign)
    default = _which(_ort(model, feeds), sign)
    reference = _which(ReferenceEvaluator(model).run(["y"], feeds)[0], sign)
    assert (off, default, reference) == EXPECTED[case]
    # what the message says, case by case
    assert "onnxruntime 1.32 reads the inner one in a Loop or Scan body and in an If branch whose sibling " \
           "branch does not read the name" in SHADOWING
    assert "with optimisations off the outer one; where its constant folding reaches the branch, the inner one" \
        in SHADOWING
    assert "onnx.reference reads the outer one" in SHADOWING


@pytest.mark.parametrize("case", list(MODELS))
def test_check_warns_and_optimize_declines(case, tmp_path, capsys):
    model, _, _ = _model(case)
    report = shapeinfer.check(model)
    found = [f for f in report.findings if f.code == "shadowed-initializer"]
    assert len(found) == 1 and found[0].severity == "warning", report.findings
    assert found[0].op in ("Loop", "Scan", "If")
    assert "initializer 'w', a name the graph around it defines too" in found[0].message
    assert SHADOWING in found[0].message and "rename one of them" in found[0].message
    assert report.exit_code == 0  # (a warning: onnxruntime loads and runs the model)
    with pytest.raises(shapeinfer.UnsupportedModelError) as e:
        shapeinfer.optimize(model)
    assert "initializer 'w', a name the graph around it defines too" in str(e.value)
    assert SHADOWING in str(e.value) and "rename one of them (nothing written)" in str(e.value)
    # the command line: exit 2, one line, nothing written (no temporary file either)
    src = save(model, tmp_path / "m.onnx")
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    assert main(["optimize", src, "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: node ") and "runtimes disagree" in err and err.count("\n") == 1, err
    assert sorted(os.listdir(tmp_path)) == before
    assert main(["check", src]) == 0
    assert "shadowed-initializer" in capsys.readouterr().out


def test_a_body_input_named_like_an_outer_tensor_is_its_own():
    """A body input of an outer name is a tensor of its own to every runtime (and to
    onnx-graphsurgeon): no warning, and optimize goes on."""
    model = parser.parse_model(H + """
        g (float[N] v, int64 trip, bool k) => (float[N] out, float[N] w) {
          w = Neg(v)
          out = Loop(trip, k, v) <body = b (int64 i, bool ci, float[N] v) => (bool co, float[N] vo) {
            co = Identity(ci)  vo = Add(v, v) }> }""")
    assert not [f for f in shapeinfer.check(model).findings if f.code == "shadowed-initializer"]
    shapeinfer.optimize(model)


def test_every_shadowing_body_is_reported():
    """Both branches of an If, each holding its own w: two warnings, one refusal."""
    model = parser.parse_model(H + """
        g (float[3] x, bool k) => (float[3] y, float[3] u) <float w = {3.0}> {
          u = Add(x, w)
          y = If(k) <then_branch = tb () => (float[3] a) <float w = {2.0}> { a = Mul(x, w) },
                     else_branch = eb () => (float[3] b) <float w = {5.0}> { b = Mul(x, w) }> }""")
    found = [f for f in shapeinfer.check(model).findings if f.code == "shadowed-initializer"]
    assert len(found) == 2
    with pytest.raises(shapeinfer.UnsupportedModelError):
        shapeinfer.optimize(model)
