"""Regression tests for defect classes an outside attack found: each builds the model that showed
the class and asserts what onnxruntime does. The families in tests/adversarial/families.py
(tests/test_families.py) span each class along its axes; these are the named cases.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, parser

import shapeinfer
from shapeinfer import ShapeInferenceError
from shapeinfer.infer.facts import Fact
from shapeinfer.symbolic import evaluate, free_symbols, sym

ort = pytest.importorskip("onnxruntime")


def _session(model, default_level=False):
    so = ort.SessionOptions()
    so.log_severity_level = 4
    if not default_level:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _loads(model) -> bool:
    try:
        _session(model)
        return True
    except Exception:  # noqa: BLE001 - any refusal
        return False


# ------------------------------------------------------------------ 0-d boolean values (class 1)


def _detection_postprocess():
    """What ``if boxes.numel():`` exports to in a detection head: boxes kept by a score
    threshold (NonZero), the post-processing guarded by Cast(Size(keep), BOOL)."""
    nodes = [
        helper.make_node("Greater", ["scores", "thr"], ["hit"]),
        helper.make_node("NonZero", ["hit"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "ax0"], ["idx"]),
        helper.make_node("Gather", ["boxes", "idx"], ["keep"], axis=0),
        helper.make_node("Size", ["keep"], ["n"]),
        helper.make_node("Cast", ["n"], ["any"], to=TP.BOOL),
        helper.make_node("If", ["any"], ["out"],
                         then_branch=helper.make_graph(
                             [helper.make_node("Reshape", ["keep", "shp"], ["o"])], "then", [],
                             [helper.make_tensor_value_info("o", TP.FLOAT, None)]),
                         else_branch=helper.make_graph(
                             [helper.make_node("ConstantOfShape", ["empty"], ["o2"],
                                               value=helper.make_tensor("v", TP.FLOAT, [1], [0.0]))], "else", [],
                             [helper.make_tensor_value_info("o2", TP.FLOAT, None)])),
        helper.make_node("Not", ["any"], ["none"]),
        helper.make_node("Cast", ["any"], ["anyf"], to=TP.FLOAT),
        helper.make_node("Where", ["any", "scores", "scores"], ["sel"]),
    ]
    inits = [helper.make_tensor("thr", TP.FLOAT, [], [0.5]), helper.make_tensor("ax0", TP.INT64, [1], [0]),
             helper.make_tensor("shp", TP.INT64, [3], [-1, 2, 2]), helper.make_tensor("empty", TP.INT64, [3], [0, 2, 2])]
    graph = helper.make_graph(nodes, "detect",
                              [helper.make_tensor_value_info("boxes", TP.FLOAT, ["N", 4]),
                               helper.make_tensor_value_info("scores", TP.FLOAT, ["N"])],
                              [helper.make_tensor_value_info(o, t, None) for o, t in
                               (("out", TP.FLOAT), ("none", TP.BOOL), ("anyf", TP.FLOAT), ("sel", TP.FLOAT))],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_detection_postprocess_guarded_by_numel_infers_checks_and_optimizes():
    model = _detection_postprocess()
    res = shapeinfer.infer(model)
    report = shapeinfer.check(model)
    assert report.exit_code == 0, [str(f) for f in report.findings]
    opt = shapeinfer.optimize(model)
    for n in (0, 1, 3):
        rng = np.random.default_rng(n)
        feeds = {"boxes": rng.normal(size=(n, 4)).astype(np.float32), "scores": rng.random(n).astype(np.float32)}
        want = _session(model).run(None, feeds)
        got = _session(opt).run(None, feeds)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and w.shape == g.shape and np.array_equal(w, g)
        sel = res.fact("sel")
        assert sel.shape is not None and int(evaluate(sel.shape[0], {"N": n})) == want[3].shape[0]


@pytest.mark.parametrize("chain", ["size_bool", "dim_bool", "size_uint8_bool"])
@pytest.mark.parametrize("reader", ["If", "Where", "Not", "CastFloat", "output"])
def test_zero_d_bool_values_from_sizes(chain, reader):
    """Cast(Size(x), BOOL), Cast(Gather(Shape(x), 0), BOOL), through uint8 too, read by each
    reader: inferred without a crash, and the value inference claims is the runtime's."""
    make = {
        "size_bool": "n = Size(x)\n c = Cast<to=9>(n)",
        "dim_bool": "s = Shape(x)\n i = Constant<value=int64 {0}>()\n n = Gather<axis=0>(s, i)\n c = Cast<to=9>(n)",
        "size_uint8_bool": "n = Size(x)\n u = Cast<to=2>(n)\n c = Cast<to=9>(u)",
    }[chain]
    use = {
        "If": "y = If(c) <then_branch = t () => (float[N,4] a) { a = Identity(x) }, "
              "else_branch = e () => (float[N,4] b) { b = Neg(x) }>",
        "Where": "y = Where(c, x, x)",
        "Not": "y = Not(c)",
        "CastFloat": "y = Cast<to=1>(c)",
        "output": "y = Identity(c)",
    }[reader]
    model = parser.parse_model(f'<ir_version: 8, opset_import: ["" : 17]>\ng (float[N,4] x) => (y, c) {{\n {make}\n {use}\n}}')
    res = shapeinfer.infer(model)
    c = res.fact("c")
    assert isinstance(c.value, np.ndarray) and c.value.shape == ()
    for n in (0, 1, 2, 256):
        x = np.zeros((n, 4), np.float32)
        got_c = _session(model).run(["c"], {"x": x})[0]
        e = c.value[()]
        if isinstance(e, bool) or hasattr(e, "terms"):  # (a value past uint8 wraps: unknown)
            claimed = e if isinstance(e, bool) else bool(evaluate(e, {"N": n}))
            assert claimed == bool(got_c), (n, e)
    shapeinfer.optimize(model)
    assert shapeinfer.check(model).exit_code == 0


def test_a_value_is_always_an_array():
    """Fact keeps one representation whatever a rule hands it: a bare element is a 0-d array."""
    for element in (3, True, sym("N"), np.int64(2), np.float32(1.5)):
        f = Fact(dtype=TP.INT64, shape=(), value=element)
        assert isinstance(f.value, np.ndarray) and f.value.shape == ()
    with pytest.raises(TypeError):
        Fact(dtype=TP.INT64, shape=(), value=[1, 2])


# ------------------------------------------------------------------ code that may not run (class 3)


def _branch_model(body: str, x_decl: str = "float[2,3] x", container: str = "if") -> onnx.ModelProto:
    consts = ('sh45 = Constant<value=int64[2] {4,5}>()\n ax1 = Constant<value=int64[1] {1}>()\n'
              'k9 = Constant<value=int64[1] {9}>()\n')
    if container == "if":
        text = (f'<ir_version: 8, opset_import: ["" : 17]>\ng ({x_decl}, bool c) => (float[?,?] y) {{\n'
                f' y = If(c) <then_branch = t () => (float[?,?] o) {{ {consts} {body} }}, '
                'else_branch = e () => (float[?,?] o2) { o2 = Identity(x) }>\n}')
    else:
        text = (f'<ir_version: 8, opset_import: ["" : 17]>\ng ({x_decl}, int64 m) => (float[?,?] y) {{\n'
                ' t = Constant<value=bool {1}>()\n'
                f' y = Loop(m, t, x) <body = b (int64 i, bool cin, float[?,?] s) => (bool cout, float[?,?] so) '
                f'{{ {consts} {body} cout = Identity(cin) so = Identity(s) }}>\n}}')
    return parser.parse_model(text)


@pytest.mark.parametrize("container", ["if", "loop"])
def test_a_failure_onnxruntime_does_not_see_is_a_warning(container):
    """A Reshape whose counts never match, in a branch under a data condition (or a Loop that may
    make no trip): onnxruntime loads the model (its load-time inference does not check Reshape
    counts) and runs it where the code does not run -- a warning, the rest inferred."""
    model = _branch_model("o = Reshape(x, sh45)", container=container)
    assert _loads(model)
    res = shapeinfer.infer(model)  # no ShapeInferenceError
    assert res.fact("y").shape == (2, 3)  # the runs that succeed keep x
    report = shapeinfer.check(model)
    assert report.exit_code == 0
    assert any(f.code == "fails-if-run" and f.op == "Reshape" for f in report.findings)
    feeds = {"x": np.ones((2, 3), np.float32), "c": np.array(False), "m": np.array(0, np.int64)}
    feeds = {i.name: feeds[i.name] for i in model.graph.input}
    assert _session(model).run(None, feeds)[0].shape == (2, 3)
    opt = shapeinfer.optimize(model)
    assert _session(opt).run(None, feeds)[0].shape == (2, 3)


@pytest.mark.parametrize("container", ["if", "loop"])
def test_a_failure_onnxruntime_sees_at_load_stays_an_error(container):
    """A Squeeze of an axis of size 3 in the same place: onnxruntime's load-time inference sees
    it and refuses the model -- an error, as in code that runs."""
    model = _branch_model("o = Squeeze(x, ax1)", container=container)
    assert not _loads(model)
    with pytest.raises(ShapeInferenceError):
        shapeinfer.infer(model)
    assert shapeinfer.check(model).exit_code == 1


def test_a_failure_in_a_branch_taken_for_some_sizes_names_them():
    model = parser.parse_model('''<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] boxes) => (float[?,?] y) {
  n = Size(boxes)
  c = Cast<to=9>(n)
  y = If(c) <then_branch = t () => (float[?,?] o) { s = Constant<value=int64[2] {3,7}>()  o = Reshape(boxes, s) },
             else_branch = e () => (float[?,?] o2) { o2 = Identity(boxes) }>
}''')
    report = shapeinfer.check(model, include_empty=True)  # (N=0 makes one tensor empty)
    assert report.exit_code == 0
    found = [f for f in report.findings if f.op == "Reshape"]
    assert found and all("N=1" in f.message and "where the then-branch" in f.message for f in found), found


def test_an_untaken_branch_onnxruntime_rejects_makes_the_model_invalid():
    """A constant condition: the other branch never runs, but onnxruntime's load reads it."""
    model = parser.parse_model('''<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[?,?] y) {
  c = Constant<value=bool {1}>()
  y = If(c) <then_branch = t () => (float[?,?] o) { o = Identity(x) },
             else_branch = e () => (float[?,?] o2) { a = Constant<value=int64[1] {1}>()  o2 = Squeeze(x, a) }>
}''')
    assert not _loads(model)
    assert shapeinfer.check(model).exit_code == 1


def test_shapes_written_never_let_onnxruntime_see_a_branch_fail():
    """The branch squeezes an axis of x's rows, which only a Shape value tells: writing those
    dims into value_info would make onnxruntime's load reject the branch."""
    model = parser.parse_model('''<ir_version: 8, opset_import: ["" : 17]>
g (float[N,3] x, bool c) => (float[?,?] y) {
  s = Shape(x)
  X = Reshape(x, s)
  y = If(c) <then_branch = t () => (float[?,?] o) { a = Constant<value=int64[1] {1}>()  o = Squeeze(X, a) },
             else_branch = e () => (float[?,?] o2) { o2 = Identity(X) }>
}''')
    assert _loads(model)
    assert _loads(shapeinfer.infer_shapes(model))


# ------------------------------------------------------------------ written dim names (class 5)


@pytest.mark.parametrize("opaque", ["a*b", "(a*b)"])
def test_a_written_dim_never_spells_an_opaque_name(opaque):
    """x's dim is named "a*b" (an opaque name, its own size); the flattened y is a*b. Written
    as the same text, onnxruntime's ReshapeFusion takes them for one size and returns (6,1)."""
    model = parser.parse_model(f'''<ir_version: 8, opset_import: ["" : 17]>
g (float["{opaque}"] x, float[a,b] y) => (float[?,?] z) {{
  f = Constant<value=int64[1] {{-1}}>()
  flat = Reshape(y, f)
  sx = Shape(x)
  z0 = Constant<value=int64 {{0}}>()
  g0 = Gather<axis=0>(sx, z0)
  ax = Constant<value=int64[1] {{0}}>()
  d0 = Unsqueeze(g0, ax)
  s2 = Concat<axis=0>(d0, f)
  z = Reshape(flat, s2)
}}''')
    feeds = {"x": np.arange(2, dtype=np.float32), "y": np.ones((2, 3), np.float32)}
    assert _session(model, default_level=True).run(None, feeds)[0].shape == (2, 3)
    for written in (shapeinfer.infer_shapes(model), shapeinfer.optimize(model)):
        names = {d.dim_param for vi in (*written.graph.value_info, *written.graph.output)
                 for d in vi.type.tensor_type.shape.dim if d.dim_param}
        assert opaque not in names
        assert _session(written, default_level=True).run(None, feeds)[0].shape == (2, 3)


# ------------------------------------------------------------------ attributes through functions (class 7)


@pytest.mark.parametrize("given", [True, False])
def test_a_reference_to_an_absent_attribute_two_levels_down_is_absent(given):
    """Main calls F1 (with or without ax); F1 calls F2 with bx = @ax; F2's Flatten takes
    axis = @bx. Where the caller gives no ax, Flatten has no axis: its default, 1."""
    attr = "<ax = 2>" if given else ""
    model = parser.parse_model(f'''<ir_version: 8, opset_import: ["" : 17, "f": 1]>
g (float[A,B,C] x) => (float[?,?] y) {{
  y = f.F1{attr}(x)
}}
<domain: "f", opset_import: ["" : 17, "f": 1]>
F1 <ax> (x) => (y) {{
  y = f.F2<bx: int = @ax>(x)
}}
<domain: "f", opset_import: ["" : 17, "f": 1]>
F2 <bx> (x) => (y) {{
  y = Flatten<axis: int = @bx>(x)
}}''')
    shape = shapeinfer.infer(model).fact("y").shape
    for a, b, c in ((2, 2, 2), (2, 3, 4), (0, 1, 2)):
        want = _session(model).run(None, {"x": np.zeros((a, b, c), np.float32)})[0].shape
        assert tuple(int(evaluate(d, {"A": a, "B": b, "C": c})) for d in shape) == want


# ------------------------------------------------------------------ onnxruntime's rewrites on empty tensors


_EMPTY_CASES = {
    # Tile of a [1] by 0 -> ReduceProd (1): tile-to-expand's Expand to [0] is what ExpandElimination drops
    "tile_by_zero": ('''<ir_version: 8, opset_import: ["" : 18]>
g (float x) => (float[1] y) <int64[1] reps = {0}, int64[1] ax = {-1}> {
  c = Constant<value=float[1] {0}>()
  s = Sub(x, c)
  t = Tile(s, reps)
  y = ReduceProd(t, ax)
}''', {"x": np.array(2.0, np.float32)}),
    # a shape gathered from a tensor known to be empty: written [0,1], onnxruntime folds the Expand's target
    "expand_to_gathered_zero": ('''<ir_version: 6, opset_import: ["" : 11]>
g (float[?,0] x) => (float[?,?] y) <int64[2] c2 = {-1,1}> {
  r = Reshape(x, c2)
  s = Shape(r)
  i = Constant<value=int64[1] {0}>()
  d = Gather(s, i)
  e = Expand(r, d)
  y = Min(e, e)
}''', {"x": np.zeros((3, 0), np.float32)}),
    # a 0 folded into the Concat of a Reshape of a tensor declared empty: ReshapeFusion writes -1 beside it
    "reshape_fusion_zero": ('''<ir_version: 6, opset_import: ["" : 11]>
g (float["N-1",seq,"N-1",0] x) => (float[?,1,1,0] y) <int64 c3 = {1}> {
  s = Shape(x)
  g = Gather(s, c3)
  u = Unsqueeze<axes = [0]>(g)
  c8 = Constant<value=int64[2] {1,1}>()
  p = ReduceProd<axes = [0], keepdims = 1>(s)
  c = Concat<axis = 0>(u, c8, p)
  y = Reshape(x, c)
}''', {"x": np.zeros((2, 3, 2, 0), np.float32)}),
}


@pytest.mark.parametrize("case", list(_EMPTY_CASES))
def test_written_models_compute_the_same_at_onnxruntimes_default_level(case):
    """onnxruntime's rewrites at its default level mishandle what they know to be empty; what
    shapeinfer writes (shapes, constants, an Expand for a Tile) must not hand them that."""
    text, feeds = _EMPTY_CASES[case]
    model = parser.parse_model(text)
    want = _session(model, default_level=True).run(None, feeds)
    for written in (shapeinfer.optimize(model), shapeinfer.infer_shapes(model)):
        got = _session(written, default_level=True).run(None, feeds)
        for w, g in zip(want, got):
            assert w.shape == g.shape and np.array_equal(w, g), (case, w, g)


def test_a_reshape_entry_that_a_caller_may_override_is_not_decided():
    """IR 3: the initializer c is also a graph input (its value is only a default), so the
    second entry of the shape is not known. The zero-case test of the first entry (Size(x), 0
    where batch is) read that unknown entry as a dim and raised AttributeError -- hidden until
    raise mode as 'rule failed'."""
    g = helper.make_graph(
        [helper.make_node("Size", ["x"], ["n"]), helper.make_node("Unsqueeze", ["n"], ["u"], axes=[0]),
         helper.make_node("Concat", ["u", "c"], ["s"], axis=0), helper.make_node("Reshape", ["x", "s"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, "batch"]), helper.make_tensor_value_info("c", TP.INT64, [1])],
        [helper.make_tensor_value_info("y", TP.FLOAT, None)], [helper.make_tensor("c", TP.INT64, [1], [1])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 7)], ir_version=3)
    shape = shapeinfer.infer(model).fact("y").shape
    assert shape is not None and len(shape) == 2
    for b in (1, 3):  # (at batch 0 the 0 entry copies the 2 of x: no run, as the spec says)
        want = _session(model).run(None, {"x": np.zeros((2, b), np.float32)})[0].shape
        assert int(evaluate(shape[0], {"batch": b})) == want[0]


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_conv_transpose_same_with_a_kernel_narrower_than_its_stride(auto_pad):
    """ConvTranspose with SAME: the spec's output is D*s with a total padding of
    s*(D-1) + output_padding + K - D*s, negative when output_padding + K < s; onnxruntime clamps
    that padding to 0 (output s*(D-1) + output_padding + K). Where they disagree the dim is left
    unknown; everywhere else it is D*s. Family: stride x kernel x dilation x output_padding, each
    at D = 1, 2, 5 and symbolic."""
    for s in (1, 2, 3, 4):
        for k in (1, 2, 3):
            for d in (1, 2):
                for op in range(s):
                    K = (k - 1) * d + 1
                    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[s], dilations=[d],
                                            output_padding=[op], auto_pad=auto_pad)
                    w = helper.make_tensor("w", TP.FLOAT, [1, 1, k], np.arange(1, k + 1, dtype=np.float32))
                    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, "D"])],
                                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [w])
                    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
                    dim = shapeinfer.infer(model).fact("y").shape[2]
                    sess = _session(model)
                    for D in (1, 2, 5):
                        got = sess.run(None, {"x": np.ones((1, 1, D), np.float32)})[0].shape[2]
                        if free_symbols(dim) - {"D"}:  # a fresh symbol: unknown
                            assert op + K < s, (s, k, d, op)
                        else:
                            assert int(evaluate(dim, {"D": D})) == got, (s, k, d, op, D, dim, got)


@pytest.mark.parametrize("trip", ["N", "N+1"])
@pytest.mark.parametrize("early_exit", [False, True])
def test_loop_scan_output_dims_where_the_loop_may_make_no_iteration(trip, early_exit):
    """At 0 iterations no body ran: onnxruntime makes a scan output's dims past the first from
    its own inference of the body's output, 0 where that is unknown (here the body's output is
    declared [?]; the carried state makes it [1] for shapeinfer). Where the trip count may be 0,
    those dims are not reported; where the Loop surely runs (N+1 trips), they are."""
    cond = "cout = Less (i, lim)" if early_exit else "cout = Identity (cin)"
    extra = "one64 = Constant <value: tensor = int64[1] {1}> ()\n m1 = Add (m, one64)\n mm = Squeeze (m1, ax)" \
        if trip == "N+1" else "mm = Squeeze (s, ax)"
    text = f"""
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[N] x, int64 lim) => (float[?] acc, float[?,?] sc) {{
       s = Shape (x)
       ax = Constant <value: tensor = int64[1] {{0}}> ()
       m = Identity (s)
       {extra}
       c = Constant <value: tensor = bool {{1}}> ()
       z = Constant <value: tensor = float[1] {{0}}> ()
       acc, sc = Loop (mm, c, z) <body: graph = b (int64 i, bool cin, float[?] a) => (bool cout, float[?] aout, float[?] so) {{
          {cond}
          one = Constant <value: tensor = float[1] {{1}}> ()
          aout = Add (a, one)
          so = Identity (aout)
       }}>
    }}"""
    model = parser.parse_model(text)
    shape = shapeinfer.infer(model).fact("sc").shape
    sess = _session(model)
    for n in (0, 1, 3):
        got = sess.run(None, {"x": np.zeros(n, np.float32), "lim": np.array(100, np.int64)})[1].shape
        for dim, want in zip(shape, got):
            if dim is not None and not free_symbols(dim) - {"N"}:  # (a fresh symbol: any size)
                assert int(evaluate(dim, {"N": n})) == want, (shape, got, n)
    assert (shape[1] == 1) == (trip == "N+1"), shape  # (N+1 trips: the body runs at least once)


_FLAG_CASES = [
    ("ReduceMax", "y = ReduceMax <keepdims: int = {v}> (x)", 18),
    ("ReduceSum", "y = ReduceSum <keepdims: int = {v}> (x, ax)", 18),
    ("ReduceSum-noop", "y = ReduceSum <noop_with_empty_axes: int = {v}> (x, none)", 18),
    ("ArgMin", "y = ArgMin <keepdims: int = {v}> (x)", 18),
    ("ArgMax", "y = ArgMax <keepdims: int = {v}, select_last_index: int = {v}> (x)", 18),
    ("MaxPool", "y = MaxPool <kernel_shape: ints = [2], strides: ints = [2], ceil_mode: int = {v}> (x)", 18),
    ("CumSum", "y = CumSum <exclusive: int = {v}> (x, zero)", 18),
]


@pytest.mark.parametrize("value", [2, -1, 3])
@pytest.mark.parametrize("case", _FLAG_CASES, ids=[c[0] for c in _FLAG_CASES])
def test_a_flag_attribute_outside_0_and_1_decides_nothing(case, value):
    """A flag (keepdims, ceil_mode, noop_with_empty_axes, ...) is defined for 0 and 1; runtimes
    read other values differently (onnxruntime's ReduceMax keepdims=2 drops the axes, a reader of
    'non-zero is true' keeps them). Nothing is decided from such a value: every shape shapeinfer
    reports is the one onnxruntime gives, and the optimised model (where Shape of the node would
    fold) computes what the original does in onnxruntime, at both levels."""
    _, body, opset = case
    text = f"""
    <ir_version: 8, opset_import: ["" : {opset}]>
    agraph (float[1,1,5] x) => (int64[?] s, float[?] f) {{
       ax = Constant <value: tensor = int64[1] {{2}}> ()
       none = Constant <value: tensor = int64[0] {{}}> ()
       zero = Constant <value: tensor = int64 {{2}}> ()
       {body.format(v=value)}
       s = Shape (y)
       f = Cast <to: int = 1> (y)
    }}"""
    model = parser.parse_model(text)
    feeds = {"x": np.arange(5, dtype=np.float32).reshape(1, 1, 5)}
    try:
        want = _session(model).run(None, feeds)
    except Exception:  # noqa: BLE001 - onnxruntime refuses that value: nothing to compare
        return
    shape = shapeinfer.infer(model).fact("y").shape
    if shape is not None:
        assert len(shape) == len(want[1].shape), (shape, want[1].shape)
        for d, w in zip(shape, want[1].shape):
            assert free_symbols(d) or int(evaluate(d, {})) == w, (shape, want[1].shape)
    opt = shapeinfer.optimize(model)
    kernel = _session(model).run(None, feeds)  # optimisations off: the kernel's result
    for level in (False, True):
        got = _session(opt, default_level=level).run(None, feeds)
        ref = _session(model, default_level=level).run(None, feeds)
        for a, b, k in zip(ref, got, kernel):
            # (at its default level onnxruntime folds Shape from onnx's inference, which reads
            # noop_with_empty_axes=2 as true where its kernel reads it as false: the original
            # itself gives two answers; the optimised model must give one of them)
            same = a.shape == b.shape and a.tobytes() == b.tobytes()
            assert same or (level and k.shape == b.shape and k.tobytes() == b.tobytes()), (level, a, b)


@pytest.mark.parametrize("opset", [1, 3, 4, 13])
def test_concat_without_axis_before_opset_4_reads_the_schema_default(opset):
    """Concat-1 (opsets 1-3) makes axis optional, "Default value is 1" in its schema's text (the
    schema has no default_value field); from opset 4 it is required. The shape rule must agree
    with the fold kernel and that text (no runtime runs Concat before opset 4:
    onnxruntime has no kernel, onnx.reference requires the attribute)."""
    import onnx

    schema = onnx.defs.get_schema("Concat", opset)
    attr = schema.attributes["axis"]
    node = helper.make_node("Concat", ["x", "w"], ["y"]) if opset < 4 else helper.make_node("Concat", ["x", "w"], ["y"], axis=1)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3]),
                                        helper.make_tensor_value_info("w", TP.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=3)
    if opset < 4:
        assert not attr.required and "Default value is 1." in attr.description
    else:
        assert attr.required
    assert shapeinfer.infer(model).fact("y").shape == (2, 7)


@pytest.mark.parametrize("nodes", [1, 3])
def test_optimize_keeps_a_graph_without_outputs_loadable(nodes):
    """A graph with no outputs loads in onnxruntime; dropping every node no output reads would
    leave an empty graph it refuses ('OrtValue indexes should have been populated'). optimize
    gives the model back unchanged and says why."""
    body = "\n".join(f"y{i} = Neg ({'x' if i == 0 else f'y{i - 1}'})" for i in range(nodes))
    model = parser.parse_model(f"""
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[N] x) => () {{
       {body}
    }}""")
    for level in (False, True):
        _session(model, default_level=level)  # the model given loads
    report = shapeinfer.OptimizeReport()
    opt = shapeinfer.optimize(model, report=report)
    assert len(opt.graph.node) == nodes
    for level in (False, True):
        _session(opt, default_level=level)
    assert any("no outputs" in a for a in report.assumptions)


def _expand_model(shape_dims: list, values: list, x_dims=(3, 1), as_input=False) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TP.FLOAT, list(x_dims))
    outs = [helper.make_tensor_value_info("y", TP.FLOAT, None), helper.make_tensor_value_info("s", TP.INT64, None)]
    nodes = [helper.make_node("Expand", ["x", "t"], ["y"], name="e"), helper.make_node("Shape", ["y"], ["s"], name="sh")]
    inputs, inits = [x], []
    if as_input:
        inputs.append(helper.make_tensor_value_info("t", TP.INT64, shape_dims))
    else:
        inits.append(helper.make_tensor("t", TP.INT64, shape_dims, values))
    g = helper.make_graph(nodes, "g", inputs, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("as_input", [False, True])
@pytest.mark.parametrize("shape_dims,values", [([1, 1], [3]), ([1, 2], [3, 1]), ([2, 1], [1, 4]), ([], [3]),
                                               ([1, 1, 1], [2]), ([1, 0], [])])
def test_expand_with_a_shape_that_is_not_1d_is_off_spec_not_invalid(shape_dims, values, as_input):
    """Expand's shape is 1-D in every version of the spec. Given as a constant, onnxruntime's
    kernel reads the elements of a shape of any rank in order and runs the model (Reshape and
    Tile refuse such an input): not invalid then -- infer and optimize go on, check warns
    ``off-spec`` -- and nothing is claimed: no output shape, no fold; the optimised model computes
    what onnxruntime computes from the original, at both levels. Given as a graph input of that
    rank, onnxruntime refuses the model at load: an error, and infer refuses."""
    model = _expand_model(shape_dims, values, as_input=as_input)
    feeds = {"x": np.arange(3, dtype=np.float32).reshape(3, 1)}
    if as_input:
        with pytest.raises(Exception, match="1D"):
            _session(model)
        assert any(f.code == "shape-error" and f.node == "e" for f in shapeinfer.check(model).errors)
        with pytest.raises(ShapeInferenceError):
            shapeinfer.infer(model)
        return
    want = _session(model).run(None, feeds)
    result = shapeinfer.infer(model)
    shape = result.fact("y").shape
    assert shape is None or all(free_symbols(d) for d in shape), shape  # nothing decided
    report = shapeinfer.check(model)
    assert not report.errors, report.findings
    assert any(f.code == "off-spec" and f.node == "e" for f in report.findings), report.findings
    opt = shapeinfer.optimize(model)
    for level in (False, True):
        got = _session(opt, default_level=level).run(None, feeds)
        for a, b in zip(want, got):
            assert a.shape == b.shape and a.tobytes() == b.tobytes(), (level, a, b)


@pytest.mark.parametrize("reader", ["Shape", "Size", "output"])
def test_an_element_count_past_int64_read_only_by_shape_is_a_warning(reader):
    """ConstantOfShape of [2^32]*3: onnxruntime fails computing it with optimisations off, and at
    its default level folds a Shape that reads it and runs the model -- a warning then. Read by
    anything else (Size, a graph output), every run computes the tensor: an error."""
    s = helper.make_tensor("s", TP.INT64, [3], [2 ** 32] * 3)
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos")]
    if reader == "output":
        out = helper.make_tensor_value_info("c", TP.FLOAT, None)
    else:
        nodes.append(helper.make_node(reader, ["c"], ["y"], name="r"))
        out = helper.make_tensor_value_info("y", TP.INT64, None)
    g = helper.make_graph(nodes, "g", [], [out], [s])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    runs_at_default = True
    try:
        _session(model, default_level=True).run(None, {})
    except Exception:  # noqa: BLE001 - onnxruntime fails every run: the verdict is an error
        runs_at_default = False
    assert runs_at_default == (reader == "Shape")
    with pytest.raises(Exception):  # with optimisations off the tensor is computed and fails
        _session(model).run(None, {})
    report = shapeinfer.check(model)
    codes = {(f.severity, f.code) for f in report.findings}
    assert (("warning" if runs_at_default else "error"), "int64-overflow") in codes, report.findings


@pytest.mark.parametrize("x_dims,refused", [([2, 3], True), (["N", 3], False)])
def test_a_branch_failure_onnxruntime_sees_through_fully_known_shape_values(x_dims, refused):
    """onnxruntime's load follows shape values -- Reshape(x, Shape(x)) has x's dims -- but only
    values known in full: with x [2,3] it rejects a branch that squeezes axis 1 of the reshaped
    x, with x [N,3] it loads. check's verdict is the same both ways (the condition is data)."""
    text = f"""<ir_version: 8, opset_import: ["" : 17]>
g (float[{','.join(map(str, x_dims))}] x, bool c) => (float[?,?] y) {{
  s = Shape(x)
  X = Reshape(x, s)
  y = If(c) <then_branch = t () => (float[?,?] o) {{ a = Constant<value=int64[1] {{1}}>()  o = Squeeze(X, a) }},
             else_branch = e () => (float[?,?] o2) {{ o2 = Identity(X) }}>
}}"""
    model = parser.parse_model(text)
    assert _loads(model) != refused
    errors = shapeinfer.check(model).errors
    assert bool(errors) == refused, errors
    if refused:
        assert "Squeeze" in errors[0].op
        with pytest.raises(ShapeInferenceError):
            shapeinfer.infer(model)
    else:
        shapeinfer.infer(model)
        assert _loads(shapeinfer.optimize(model)) and _loads(shapeinfer.infer_shapes(model))


_MOD_EXTREMES = {
    np.int32: [-(2 ** 31), -7, -1, 0, 5, 2 ** 31 - 1],
    np.int64: [-(2 ** 63), -(2 ** 53) - 1, -7, 0, 7, 2 ** 53 + 1, 2 ** 63 - 1],
    np.uint32: [0, 3, 2 ** 31, 2 ** 32 - 1],
    np.uint64: [0, 3, 2 ** 53 + 1, 2 ** 63, 2 ** 64 - 1],
}


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", list(_MOD_EXTREMES), ids=lambda t: t.__name__)
def test_mod_of_constants_at_the_ends_of_every_integer_type(dtype, fmod):
    """Mod of constants (shape values are such constants) at the ends of each integer type:
    no crash (a uint64 past 2**63 once overflowed a C long), and every value shapeinfer claims
    -- in inference or folded by optimize -- is what onnxruntime computes."""
    values = _MOD_EXTREMES[dtype]
    a = np.array([v for v in values for _ in values], dtype=dtype)
    b = np.array([w for _ in values for w in values], dtype=dtype)
    keep = b != 0  # (integer division by zero is undefined)
    if fmod == 0 and dtype is np.int64:
        keep &= ~((a == np.iinfo(np.int64).min) & (b == -1))  # (SIGFPE in onnxruntime: deviations.py)
    if fmod == 0 and dtype is np.int32:
        keep &= ~((a == np.iinfo(np.int32).min) & (b == -1))
    a, b = a[keep], b[keep]
    from onnx import numpy_helper

    g = helper.make_graph(
        [helper.make_node("Constant", [], ["ca"], value=numpy_helper.from_array(a, "va")),
         helper.make_node("Constant", [], ["cb"], value=numpy_helper.from_array(b, "vb")),
         helper.make_node("Mod", ["ca", "cb"], ["y"], fmod=fmod)],
        "g", [], [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    want = _session(model).run(None, {})[0]
    fact = shapeinfer.infer(model).fact("y")
    if fact.value is not None:
        for k, v in enumerate(fact.value.reshape(-1)):
            if isinstance(v, (int, np.integer)):
                assert int(v) == int(want[k]), (a[k], b[k], v, want[k])
    got = _session(shapeinfer.optimize(model)).run(None, {})[0]
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("x_dims", [[0, 1], ["N", 1], [2, 1], [0, "M"]])
def test_topk_past_an_axis_onnxruntime_knows_at_load(x_dims):
    """TopK k=2 along axis 1: onnxruntime's load refuses it where that axis is declared 1 (with
    x [0, 1] too, though the tensor is empty); with x [0, M] it loads, and runs where M >= 2.
    check's verdict is onnxruntime's."""
    x = helper.make_tensor_value_info("x", TP.FLOAT, x_dims)
    k = helper.make_tensor("k", TP.INT64, [1], [2])
    g = helper.make_graph([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, name="top")], "g", [x],
                          [helper.make_tensor_value_info("v", TP.FLOAT, None)], [k])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    loads = _loads(model)
    assert loads == (x_dims == [0, "M"])
    errors = shapeinfer.check(model).errors
    assert bool(errors) == (not loads), errors
    if loads:
        assert _session(model).run(None, {"x": np.zeros((0, 2), np.float32)})[0].shape == (0, 2)


def test_an_element_count_past_a_float_is_reported_not_crashed():
    """A shape of 130 dims of 255 has more elements than a float holds (about 1.9e+312): the
    report says so instead of failing to format the count."""
    s = helper.make_tensor("s", TP.INT64, [130], [255] * 130)
    g = helper.make_graph([helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos")], "g", [],
                          [helper.make_tensor_value_info("c", TP.FLOAT, None)], [s])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    errors = shapeinfer.check(model).errors
    assert errors and errors[0].code == "int64-overflow" and "e+312" in errors[0].message, errors


@pytest.mark.parametrize("to", [TP.BOOL, TP.INT32, TP.FLOAT])
def test_a_wrapped_shape_value_cast_is_not_a_crash(to):
    """Shape(Tile(x, N))*129 - 2 -- N*N*129 - 2 -- is an int64 element that may wrap (Wrapped);
    a Cast of it to bool asked whether an unknown element is 0 and crashed (long run seed
    15998). Every value claimed is onnxruntime's at sizes 0, 1 and 2."""
    model = parser.parse_model(f"""<ir_version: 8, opset_import: ["" : 17]>
    g (float[N] x) => (int64[1] y) <int64[1] k = {{129}}, int64[1] m = {{-2}}> {{
       n = Shape(x)
       t = Tile(x, n)
       s = Shape(t)
       a = Mul(s, k)
       b = Add(a, m)
       c = Cast<to: int = {to}>(b)
       y = Cast<to: int = 7>(c)
    }}""")
    from shapeinfer.infer.facts import is_unknown

    value = shapeinfer.infer(model).fact("y").value
    element = None if value is None else value.reshape(-1)[0]
    for n in (0, 1, 2):
        want = _session(model).run(None, {"x": np.zeros(n, np.float32)})[0]
        if element is not None and not is_unknown(element):
            assert int(evaluate(element, {"N": n})) == int(want[0]), (n, element, want)


@pytest.mark.parametrize("shape_of_c", ["s", "ab"])
@pytest.mark.parametrize("repeats", ["s", "r"])
def test_an_empty_tensor_with_a_dim_past_int64(repeats, shape_of_c):
    """Tile of an empty [2**40, 0] by [2**40, 0]: the first dim would be 2**80, past int64
    (long run seed 16994, where the harness saw the model run). Where onnxruntime's load knows
    both (constants it follows) it refuses the model; where it does not (a shape made by
    Concat), the run fails ("more than 4294967296 bytes"). check's verdict is onnxruntime's in
    each form, and infer claims no dim past int64 where it runs."""
    model = parser.parse_model("""<ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (int64[2] y) <int64[2] s = {1099511627776, 0}, int64[1] a = {1099511627776}, int64[1] b = {0}> {
       ab = Concat<axis: int = 0>(a, b)
       c = ConstantOfShape(%s)
       r = Shape(c)
       t = Tile(c, %s)
       y = Shape(t)
    }""" % (shape_of_c, repeats))
    try:
        _session(model).run(None, {"x": np.zeros(1, np.float32)})
        runs = True
    except Exception:  # noqa: BLE001 - refused at load or failed in the run
        runs = False
    assert bool(shapeinfer.check(model).errors) == (not runs)
    if runs:
        shape = shapeinfer.infer(model).fact("t").shape
        assert shape[1] == 0 and all(type(d) is not int or d <= 2 ** 63 - 1 for d in shape)


def test_a_dim_written_minus_one_is_not_known_to_onnxruntimes_load():
    """Some exporters write a dynamic dim as dim_value -1: TopK k=1 along it is no load-time
    refusal (long run seed 16241)."""
    x = helper.make_tensor_value_info("x", TP.FLOAT, [2, -1])
    k = helper.make_tensor("k", TP.INT64, [1], [1])
    g = helper.make_graph([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, name="top")], "g", [x],
                          [helper.make_tensor_value_info("v", TP.FLOAT, None)], [k])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    assert _session(model).run(None, {"x": np.ones((2, 3), np.float32)})[0].shape == (2, 1)
    assert not shapeinfer.check(model).errors


def _pool_cases():
    for op in ("MaxPool", "AveragePool", "LpPool"):
        for k, s, pads in ((2, 3, None), (3, 2, (1, 1)), (3, 2, None), (2, 2, (0, 1)), (3, 1, None), (4, 3, (1, 0))):
            yield op, k, s, pads, ""
    for op in ("MaxPool", "LpPool"):  # (SAME_* with a dilation: onnxruntime's own sizes, left unknown)
        for k, s, d in ((2, 2, 2), (2, 4, 3), (3, 1, 2)):
            yield op, k, s, None, f', dilations: ints = [{d}], auto_pad: string = "SAME_LOWER"'


@pytest.mark.parametrize("op,k,s,pads,extra", list(_pool_cases()))
def test_pooling_over_a_window_that_does_not_fit_is_sized_as_onnxruntime_runs_it(op, k, s, pads, extra):
    """onnxruntime's pooling sizes its output (n + pads - k) / s + 1 with C's division, which
    truncates toward zero: an input shorter than the window still makes one output where the
    spec's floor makes none (found by an attack: MaxPool k=2, s=3 on n=1 is 1 long). The
    inferred dim, evaluated at each size, must be what onnxruntime makes wherever it runs."""
    from shapeinfer.symbolic import evaluate

    attrs = f"kernel_shape: ints = [{k}], strides: ints = [{s}]" + (f", pads: ints = [{pads[0]}, {pads[1]}]" if pads else "") \
        + extra
    m = onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : 18]> g (float[1,1,n] x) => (float[] z) '
                                f'{{ z = {op}<{attrs}>(x) }}')
    dim = shapeinfer.infer(m).shape("z")[2]
    sess = _session(m)
    compared = 0
    for n in range(0, 10):
        try:
            got = sess.run(None, {"x": np.ones([1, 1, n], np.float32)})[0].shape[2]
        except Exception:  # noqa: BLE001 - a size onnxruntime refuses: no shape to compare
            continue
        if not free_symbols(dim) - {"n"}:  # (a dim left unknown is never wrong)
            assert evaluate(dim, {"n": n}) == got, f"{op} k={k} s={s} pads={pads}{extra} n={n}"
        compared += 1
    assert compared >= 5


OFF_SPEC_EMPTY = {
    # (text, feeds): inputs the spec does not define that onnxruntime reads its own way
    "squeeze-empty-axes-13": ("<opset_import: [\"\" : 13]> g (float[1,3,1] x) => (int64[?] s) "
                              "{ ax = Constant<value = int64[0] {}>()  y = Squeeze(x, ax)  s = Shape(y) }",
                              {"x": np.ones([1, 3, 1], np.float32)}),
    "squeeze-empty-axes-21": ("<opset_import: [\"\" : 21]> g (float[a,b,c] x) => (float[?] y) "
                              "{ ax = Constant<value = int64[0] {}>()  y = Squeeze(x, ax) }",
                              {"x": np.ones([1, 3, 1], np.float32)}),
    # (onnxruntime's load refuses it where it knows the split dim: test_check_parity's load rules)
    "split-empty-sizes": ("<opset_import: [\"\" : 13]> g (float[a,b] x) => (float[?,?] y, float[?,?] z) "
                          "{ sp = Constant<value = int64[0] {}>()  y, z = Split<axis = 1>(x, sp) }",
                          {"x": np.ones([2, 4], np.float32)}),
    "nonzero-scalar": ("<opset_import: [\"\" : 13]> g (float x) => (int64[?] s) "
                       "{ nz = NonZero(x)  s = Shape(nz) }", {"x": np.array(2.0, np.float32)}),
}


@pytest.mark.parametrize("case", sorted(OFF_SPEC_EMPTY))
def test_inputs_runtimes_read_their_own_way_are_neither_shaped_nor_folded(case):
    """An empty axes or split tensor, a NonZero of a scalar: the spec does not define them (or
    says other than onnxruntime does), and onnxruntime even differs between its levels (an
    attack found shapeinfer claiming the spec's shape and folding Shape to it). No dim is
    claimed, check warns off-spec and reports no error, and optimize computes what the original
    does at both levels."""
    text, feeds = OFF_SPEC_EMPTY[case]
    m = parser.parse_model("<ir_version: 8, " + text[1:])
    report = shapeinfer.check(m)
    assert not report.errors and any(f.code == "off-spec" for f in report.findings), report.findings
    out = shapeinfer.optimize(m)
    for default_level in (False, True):
        want, got = _session(m, default_level).run(None, feeds), _session(out, default_level).run(None, feeds)
        assert all(w.shape == g.shape and np.array_equal(w, g) for w, g in zip(want, got)), (case, default_level)


def test_a_branch_failure_onnxruntime_sees_is_an_error_with_nodes_of_domain_ai_onnx():
    """A model importing both "" and "ai.onnx" with a node of domain "ai.onnx": onnx's inference
    found no schema under that name and saw nothing, so a branch failure onnxruntime's load sees
    (a MatMul of a constant [1,1] by [2,2]) was missed (long run, seed 4918)."""
    m = parser.parse_model('<ir_version: 8, opset_import: ["" : 18, "ai.onnx" : 18]> g (float x2) => (float[?,?] y) '
                           '<float[1,1] c = {1}, int64[1] m1 = {-1}> { r = ai.onnx.Reshape(c, m1)  s = Shape(c)'
                           '  d = Reshape(c, s)  n = Size(d)  k = Cast<to = 9>(n)'
                           '  y = If(k) <else_branch = e () => (float[] b) { w = Constant<value = float[2,2] {1,1,1,1}>()'
                           '  b = MatMul(d, w) }, then_branch = t () => (float[] g) { g = Identity(d) }> }')
    assert not _loads(m)
    errors = shapeinfer.check(m).errors
    assert errors and errors[0].op == "MatMul", errors
