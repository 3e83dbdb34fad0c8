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


def _same_in_onnxruntime(text, feeds_list, reference=False):
    """Optimise the model (fold-constants and inline-if): no If reading the decided condition is
    left, the result passes the checker and gives onnxruntime's bytes of the original (with
    ``reference``, onnx.reference's: onnxruntime returns None for a branch output given twice)."""
    model = parser.parse_model(H + text)
    report = OptimizeReport()
    out = shapeinfer.optimize(model, passes=["fold-constants", "inline-if"], report=report)
    assert report.changes.get("inline-if"), (report.changes, report.declined)
    onnx.checker.check_model(out, full_check=True)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    a = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(out.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    if reference:
        from onnx.reference import ReferenceEvaluator

        a, b = ReferenceEvaluator(model), ReferenceEvaluator(out)
    for feeds in feeds_list:
        want, got = a.run(None, feeds), b.run(None, {i: feeds[i] for i in feeds if i in {v.name for v in out.graph.input}})
        assert [w.tobytes() for w in want] == [g.tobytes() for g in got]
        assert [w.shape for w in want] == [g.shape for g in got]
    return out


def test_branch_names_the_model_uses_elsewhere_are_renamed():
    """The taken branch makes ``t`` and ``u``, which another If's branch makes too: moved into
    the main graph they would be made twice (onnxruntime refuses a model that is not in SSA
    form, found by a review); they are renamed."""
    out = _same_in_onnxruntime(
        "g (float[N] x, bool k) => (float[N] y, float[N] z) { c = Constant<value = bool {1}>()"
        "  y = If(c) <then_branch = tb () => (float[N] t2) { t = Abs(x)  u = Neg(t)  t2 = Neg(u) },"
        " else_branch = eb () => (float[N] v) { v = Abs(x) }>"
        "  z = If(k) <then_branch = kb () => (float[N] u) { u = Relu(x) }, else_branch = lb () => (float[N] t) { t = Neg(x) }> }",
        [{"x": np.array([-1.5, 0.0, 2.0], np.float32), "k": np.array(b)} for b in (True, False)])
    made = [o for n in out.graph.node for o in n.output]
    assert "t" not in made and "u" not in made and len(made) == len(set(made))


def test_graph_outputs_from_outside_the_branch_or_twice_get_an_identity():
    """A graph output the branch returns under two names is made by an Identity, so that each
    keeps its name; outer constants and tensors the branch reads stay (found by a review: the If
    was kept, and after folding onnxruntime refused the branch it never takes). (A branch that
    returns an outer tensor as it is, which onnx-graphsurgeon imports as a tensor of its own, is
    refused by onnxruntime; the pass reads it as the graph's tensor of that name.)"""
    out = _same_in_onnxruntime(
        "g (float[N] x) => (float[N] y1, float[N] y2, float[1] y3, float[N] y4) {"
        "  c = Constant<value = bool {0}>()  one = Constant<value = float[1] {1.0}>()  h = Relu(x)"
        "  y1, y2, y3, y4 = If(c) <then_branch = tb () => (float[N] a, float[N] b, float[1] e, float[N] f) {"
        " a = Neg(x)  b = Neg(x)  e = Identity(one)  f = Neg(x) },"
        " else_branch = eb () => (float[N] q, float[N] q, float[1] k1, float[N] k2) {"
        " q = Abs(x)  k1 = Identity(one)  k2 = Identity(h) }> }",
        [{"x": np.array([-1.5, 0.0, 2.0], np.float32)}, {"x": np.zeros(0, np.float32)}], reference=True)
    assert not any(n.op_type == "If" for n in out.graph.node)
    assert [o.name for o in out.graph.output] == ["y1", "y2", "y3", "y4"]


def test_a_branch_reading_an_outer_constant_is_inlined():
    """The branch reads the main graph's constant ``one`` (a review found it taken for a constant
    of the branch's own, clashing with itself, and the If kept)."""
    _same_in_onnxruntime(
        "g (float[N,M] x) => (float[?] y) { c = Constant<value = bool {0}>()  one = Constant<value = int64[1] {1}>()"
        "  y = If(c) <then_branch = tb () => (float[?] p) { p = Squeeze(x, one) },"
        " else_branch = eb () => (float[?] q) { q = ReduceSum<keepdims = 0>(x, one) }> }",
        [{"x": np.ones((3, 8), np.float32)}, {"x": np.ones((0, 8), np.float32)}])


NESTED = (
    "g (float[N,8] x, bool k) => (float[?] y) { f0 = Constant<value = int64[2] {1, -4}>()  f = Neg(f0)"
    "  t = Reshape(x, f)  one = Constant<value = int64[1] {1}>()  d1 = Shape<start = 1, end = 2>(t)"
    "  c1 = Equal(d1, one)  c = Squeeze(c1)  tc = Constant<value = int64 {1}>()"
    "  y = Loop(tc, k) <body = lb (int64 i, bool ci) => (bool co, float[?] yy) { co = Identity(ci)"
    "     yy = If(c) <then_branch = tb () => (float[?] p) { p = Squeeze(t, one) },"
    "                 else_branch = eb () => (float[?] q) { q = ReduceSum<keepdims = 0>(t, one) }> }> }")


def test_a_decided_if_in_a_loop_body_is_inlined_there_and_the_files_load():
    """The AffineGrid pattern inside a Loop body (its condition and t from the main graph), found
    by a review: once folding made t's shape [2*N, 4] visible, onnxruntime refused the branch
    never taken (a Squeeze of that 4) -- in optimize's output, and in infer_shapes' through the
    shape written on t. inline-if now inlines such an If in its body; infer_shapes leaves the
    declarations of what the other branch reads alone."""
    model = parser.parse_model(H + NESTED)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    feeds = {"x": np.ones((3, 8), np.float32), "k": np.array(True)}
    want = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report)
    assert report.changes.get("inline-if"), report.changes
    for written in (out, shapeinfer.infer_shapes(model)):
        got = ort.InferenceSession(written.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
        assert [w.tobytes() for w in want] == [g.tobytes() for g in got]


def test_infer_shapes_of_a_call_of_a_function_holding_a_decided_if_loads():
    """The same If inside a model-local function: onnxruntime inlines the call and checks the
    branch never taken with the shapes the call's input has. infer_shapes leaves the declarations
    of what such a call reads (and what that is computed from) as the model had them."""
    model = parser.parse_model("""<ir_version: 9, opset_import: ["" : 18, "local" : 1]>
        g (float[N,8] x) => (float[?] y) {
          f0 = Constant<value = int64[2] {1, -4}>()  f = Neg(f0)  t = Reshape(x, f)
          y = local.F(t)
        }
        <domain: "local", opset_import: ["" : 18]>
        F (a) => (r) {
          one = Constant<value = int64[1] {1}>()  d1 = Shape<start = 1, end = 2>(a)  c1 = Equal(d1, one)
          c = Squeeze(c1)
          r = If(c) <then_branch = tb () => (float[?] p) { p = Squeeze(a, one) },
                     else_branch = eb () => (float[?] q) { q = ReduceSum<keepdims = 0>(a, one) }>
        }""")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    feeds = {"x": np.ones((3, 8), np.float32)}
    want = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    written = shapeinfer.infer_shapes(model)
    got = ort.InferenceSession(written.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert [w.tobytes() for w in want] == [g.tobytes() for g in got]


def _both_load_and_agree(text, feeds):
    """infer_shapes' and optimize's files load in onnxruntime and give the original's bytes; the
    model given is not changed."""
    model = parser.parse_model(H + text)
    before = model.SerializeToString()
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(before, opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    for written in (shapeinfer.infer_shapes(model), shapeinfer.optimize(model)):
        got = ort.InferenceSession(written.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
        assert [w.tobytes() for w in want] == [g.tobytes() for g in got]
    assert model.SerializeToString() == before


def test_a_body_input_named_like_the_main_graphs_condition_is_the_bodys():
    """A Loop body's input ``c`` beside the main graph's constant ``c`` (a second review): the
    body's If reads its own ``c``; inline-if took the main graph's value and the wrong branch."""
    _both_load_and_agree(
        "g (float[3] x, bool k) => (float[3] y, bool kk) { c = Constant<value = bool {1}>()  f = Constant<value = bool {0}>()"
        "  trip = Constant<value = int64 {1}>()"
        "  y, kk = Loop(trip, k, x, f) <body = lb (int64 i, bool ci, float[3] v, bool c) => (bool co, float[3] w, bool cc) {"
        " co = Identity(ci)  cc = Identity(c)"
        "  w = If(c) <then_branch = tb () => (float[3] a) { a = Abs(v) }, else_branch = eb () => (float[3] b) { b = Neg(v) }> }> }",
        {"x": np.array([1.0, -2.0, 3.0], np.float32), "k": np.array(True)})


TAIL_BRANCH = ("  ax = Constant<value = int64[1] {0}>()"
               "  r = If(cb) <then_branch = tb () => (float[3] a) { a = ReduceSum<keepdims = 0>(t, ax) },"
               " else_branch = eb () => (float[3] b) { b = Squeeze(t, ax) }>")


def test_a_decided_if_whose_condition_a_body_makes_is_inlined_and_written_safely():
    """The condition is a Constant node of the Loop body itself (a second review): optimize kept
    the If, infer_shapes wrote t's shape [4, 3], and onnxruntime refused the branch never taken
    (a Squeeze of the 4) in both files."""
    _both_load_and_agree(
        "g (float[4,3] x, int64 n) => (float[3] z) { s = Shape(x)  s2 = Abs(s)  t = Reshape(x, s2)"
        "  k = Constant<value = bool {1}>()  z0 = Constant<value = float[3] {0, 0, 0}>()"
        "  z = Loop(n, k, z0) <body = lb (int64 i, bool ci, float[3] v) => (bool co, float[3] w) { co = Identity(ci)"
        "  cb = Constant<value = bool {1}>()" + TAIL_BRANCH + "  w = Add(v, r) }> }",
        {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "n": np.array(2, np.int64)})


def test_an_if_in_a_body_inference_does_not_walk_still_keeps_the_declarations():
    """The decided If sits in a SequenceMap body, which inference leaves to onnx's own and does
    not walk (a second review): infer_shapes skipped its look for decided Ifs and wrote t's
    shape, which made onnxruntime refuse the branch never taken."""
    _both_load_and_agree(
        "g (float[4,3] x) => (float[3] z) { s = Shape(x)  s2 = Abs(s)  t = Reshape(x, s2)"
        "  cb = Constant<value = bool {1}>()  seq = SequenceConstruct(x)"
        "  outs = SequenceMap(seq) <body = sb (float[4,3] e) => (float[3] r) {" + TAIL_BRANCH + " }>"
        "  i0 = Constant<value = int64 {0}>()  z = SequenceAt(outs, i0) }",
        {"x": np.arange(12, dtype=np.float32).reshape(4, 3)})


def test_a_branch_initializer_renamed_leaves_the_callers_model_alone():
    """The taken branch returns its own initializer as a graph output: inlined, it takes the
    output's name -- in a copy of its TensorProto (a second review found the caller's model
    renamed, which onnxruntime then refused)."""
    _both_load_and_agree(
        "g (float[3] x) => (float[3] y, float[3] y2) { c = Constant<value = bool {1}>()"
        "  y, y2 = If(c) <then_branch = tb () => (float[3] kw, float[3] a2) <float[3] kw = {5, 6, 7}> { a2 = Neg(x) },"
        " else_branch = eb () => (float[3] b, float[3] b2) { b = Neg(x)  b2 = Neg(x) }> }",
        {"x": np.array([1.0, -2.0, 3.0], np.float32)})
