"""Every model optimize writes loads in onnxruntime -- at ORT_DISABLE_ALL, and at the default
level wherever the original loads there -- and gives the original's outputs bit for bit.

Node names: a node inlined from a branch keeps its name unless a node of the graph it joins has
it (onnxruntime refuses two nodes of one name in a graph: "two nodes with same node name"); the
Constant nodes and the Mul the optimizer adds get names no node of their graph has.

Branches a run may not take: onnxruntime infers both branches of every If at load, with what it
sees of the tensors they read -- a shape the graph makes plain, no value a node computes -- and
refuses the model where a branch contradicts it, though that branch would only fail if it ran.
The models here hold an If whose condition is not decided before the run (a bool input, or a
dim of another input compared at run time) and whose else-branch splits an outer tensor with
sizes that do not sum to its dim (shapeinfer reads that as "fails if this branch runs":
Split's rule in a body). In the original that dim is computed (a Reshape whose shape is a
Shape-Gather-Div-Concat chain; split sizes computed from a Shape): onnxruntime does not see it.
fold-constants (static dims: the chain's value is known) and constant-shapes (the Reshape's
shape as [0, 2, 3]) would make it a constant; written value_info would declare it. The If
sits in the main graph, in a Loop body, or in a model-local function (onnxruntime inlines the
call first); the branch reads the tensor directly, through another node, or reads the computed
split sizes themselves. What no branch reads is optimised as before (the side Reshape).
"""

import numpy as np
import onnx
import pytest
from onnx import parser

import shapeinfer
from shapeinfer.optimizer import OptimizeReport

ort = pytest.importorskip("onnxruntime")

LEVELS = {"off": "ORT_DISABLE_ALL", "default": "ORT_ENABLE_ALL"}


def _session(model, level):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _loads(model, level):
    try:
        return _session(model, level)
    except (ort.capi.onnxruntime_pybind11_state.Fail, ort.capi.onnxruntime_pybind11_state.InvalidGraph,
            ort.capi.onnxruntime_pybind11_state.InvalidArgument):
        return None


def _same_bits(want, got) -> bool:
    return len(want) == len(got) and all(
        w.dtype == g.dtype and w.shape == g.shape
        and np.array_equal(np.ascontiguousarray(w).view(np.uint8), np.ascontiguousarray(g).view(np.uint8))
        for w, g in zip(want, got))


def _check_written(model, out, feeds_list):
    """out loads wherever model does (and always with optimisations off), and gives model's
    bytes at every feed where model runs (at least one)."""
    onnx.checker.check_model(out, full_check=True)
    compared = 0
    for level in LEVELS:
        a = _loads(model, level)
        b = _loads(out, level)
        if level == "off":
            assert a is not None, "the original loads with optimisations off"
        if a is None:
            continue
        assert b is not None, f"the optimised model does not load at {LEVELS[level]}"
        names = {i.name for i in b.get_inputs()}
        given = {i.name for i in a.get_inputs()}
        for feeds in feeds_list:
            try:
                want = a.run(None, {k: v for k, v in feeds.items() if k in given})
            except (ort.capi.onnxruntime_pybind11_state.Fail, ort.capi.onnxruntime_pybind11_state.RuntimeException,
                    ort.capi.onnxruntime_pybind11_state.InvalidArgument):
                continue  # (the original fails at this size: nothing to compare)
            got = b.run(None, {k: v for k, v in feeds.items() if k in names})
            assert _same_bits(want, got), (level, {k: v.shape for k, v in feeds.items()})
            compared += 1
    assert compared


def _graphs(model):
    stack = [model.graph] + [f for f in model.functions]
    while stack:
        g = stack.pop()
        yield g
        for n in g.node:
            for a in n.attribute:
                if a.type == a.GRAPH:
                    stack.append(a.g)
                elif a.type == a.GRAPHS:
                    stack.extend(a.graphs)


def _names_unique(model):
    for g in _graphs(model):
        names = [n.name for n in g.node if n.name]
        assert len(names) == len(set(names)), sorted(names)


# --------------------------------------------------------------------------- node names

H = '<ir_version: 9, opset_import: ["" : 18]>\n'


def _named(text, names):
    """The model of ``text`` with node names set: output name -> node name (every graph)."""
    model = parser.parse_model(H + text)
    for g in _graphs(model):
        for n in g.node:
            if n.output and n.output[0] in names:
                n.name = names[n.output[0]]
    return model


BRANCHES = ("then_branch = tb () => (float[N] a) {{ a1 = Abs({src})  a = Neg(a1) }},"
            " else_branch = eb () => (float[N] b) {{ b1 = Relu({src})  b = Neg(b1) }}")

NAME_CASES = {
    # depth 1: the taken branch's nodes are named like main-graph nodes
    "main-graph": ("g (float[N] x) => (float[N] y) { c = Constant<value = bool {1}>()  h = Sigmoid(x)"
                   f"  y = If(c) <{BRANCHES.format(src='h')}> }}",
                   {"h": "n1", "a1": "n1", "a": "n2", "y": "n2", "b1": "n3", "b": "n4"}),
    # two Ifs inlined into one graph, their branches naming nodes alike (and like the renamed ones)
    "two-ifs": ("g (float[N] x) => (float[N] y, float[N] z) { c = Constant<value = bool {1}>()"
                "  d = Constant<value = bool {0}>()  h = Sigmoid(x)"
                f"  y = If(c) <{BRANCHES.format(src='h')}>"
                "  z = If(d) <then_branch = tb2 () => (float[N] p) { p1 = Abs(x)  p = Neg(p1) },"
                " else_branch = eb2 () => (float[N] q) { q1 = Relu(x)  q = Neg(q1) }> }",
                {"h": "n1_1", "a1": "n1", "a": "m", "p1": "m", "p": "n1", "b1": "n1", "b": "m", "q1": "n1", "q": "n1_1"}),
    # depth 2: an If in the taken branch, decided by a Constant node of that branch
    "depth-2": ("g (float[N] x) => (float[N] y) { c = Constant<value = bool {1}>()  h = Sigmoid(x)"
                "  y = If(c) <then_branch = tb () => (float[N] a) { k = Constant<value = bool {0}>()  a0 = Abs(h)"
                "     a = If(k) <then_branch = itb () => (float[N] u) { u1 = Abs(a0)  u = Neg(u1) },"
                "                else_branch = ieb () => (float[N] v) { v1 = Relu(a0)  v = Neg(v1) }> },"
                " else_branch = eb () => (float[N] b) { b = Neg(x) }> }",
                {"h": "n1", "k": "n1", "a0": "n2", "a": "n3", "u1": "n1", "v1": "n2", "v": "n3", "b": "n1"}),
    # an If in a Loop body is inlined into that body: named like the body's nodes
    "loop-body": ("g (float[N] x, bool k) => (float[N] y) { trip = Constant<value = int64 {2}>()"
                  "  y = Loop(trip, k, x) <body = lb (int64 i, bool ci, float[N] v) => (bool co, float[N] w) {"
                  "  co = Identity(ci)  c = Constant<value = bool {1}>()  h = Sigmoid(v)"
                  f"  w = If(c) <{BRANCHES.format(src='h')}> }}> }}",
                  {"co": "n1", "c": "n2", "h": "n3", "a1": "n1", "a": "n3", "b1": "n1"}),
}


@pytest.mark.parametrize("case", sorted(NAME_CASES))
def test_inlined_nodes_get_names_no_node_of_their_graph_has(case):
    text, names = NAME_CASES[case]
    model = _named(text, names)
    _names_unique(model)
    assert _loads(model, "off") is not None
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report)
    assert report.changes.get("inline-if"), report.declined
    assert not any(n.op_type == "If" for g in _graphs(out) for n in g.node)
    _names_unique(out)
    feeds = [{"x": np.array([-1.5, -0.0, 0.0, np.nan, 2.0][:n], np.float32), "k": np.array(True)} for n in (0, 1, 5)]
    _check_written(model, out, feeds)


def test_constant_nodes_for_folded_outputs_get_free_names():
    """A graph output folding makes constant is made by a Constant node named ``<output>_constant``
    -- unless a node has that name already."""
    model = _named("g (float[2] x) => (int64[1] y, float[2] z) { s = Shape(x)  y = Identity(s)  z = Neg(x) }",
                   {"z": "y_constant", "s": "y_constant_1"})
    out = shapeinfer.optimize(model)
    assert any(n.op_type == "Constant" for n in out.graph.node)
    _names_unique(out)
    _check_written(model, out, [{"x": np.array([1.0, -0.0], np.float32)}])


def test_the_mul_tile_uniform_adds_gets_a_free_name():
    """tile-uniform computes an Expand target with a Mul named ``<tile>_out_shape_mul``: named so
    only where no node has that name."""
    model = _named("g (int64[2] r, float[N,2] x) => (float[?,?] y, float[N,2] z) {"
                   "  c = Constant<value = float[2,2] {1.5, 1.5, 1.5, 1.5}>()  y = Tile(c, r)  z = Neg(x) }",
                   {"y": "T", "z": "T_out_shape_mul"})
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report)
    assert report.changes.get("tile-uniform"), report.declined
    _names_unique(out)
    _check_written(model, out, [{"r": np.array(r, np.int64), "x": np.ones((n, 2), np.float32)}
                                for r, n in (([1, 1], 0), ([2, 3], 1), ([0, 2], 3))])


# --------------------------------------------------------------------------- branches a run may not take

# t: [N, 2, 3] (N = 2 where static), its shape computed; s: split sizes [1, 3], computed
SHAPE_CHAIN = ("s0 = Shape(x)  i0 = Constant<value = int64[1] {0}>()  i1 = Constant<value = int64[1] {1}>()"
               "  d0 = Gather(s0, i0)  d1 = Gather(s0, i1)  three = Constant<value = int64[1] {3}>()"
               "  d2 = Div(d1, three)  sh = Concat<axis = 0>(d0, d2, three)  t0 = Reshape(x, sh)")
SIZES = ("six = Constant<value = int64[1] {6}>()  two = Constant<value = int64[1] {2}>()"
         "  e0 = Div(d1, six)  e1 = Div(d1, two)  s = Concat<axis = 0>(e0, e1)")
# what no branch reads: a Reshape whose computed shape the passes make constant
SIDE = "  m1 = Constant<value = int64[1] {-1}>()  sh2 = Concat<axis = 0>(d0, m1)  w = Reshape(x, sh2)"
READS = {  # what the branch reads -> (the main-graph lines, the tensor, the split node)
    "reshaped": ("t = Identity(t0)", "t", "b, b2 = Split<axis = 1>({r}, sp)"),
    "through-a-node": ("t = Relu(t0)", "t", "b, b2 = Split<axis = 1>({r}, sp)"),
    "split-sizes": (SIZES + "  t = Identity(x)", "t", "b, b2 = Split<axis = 1>({r}, {s})"),
}
CONDITIONS = {"data": "k", "dims": "cz"}  # a bool input; whether z has one element (decided at run time)


def _branch_model(where, reads, cond, static):
    lines, read, split = READS[reads]
    r, s = ("a", "sa") if where == "function" else (read, "s")
    split = split.format(r=r, s=s)
    if "{s}" not in READS[reads][2]:
        split = "sp = Constant<value = int64[2] {1, 3}>()  " + split
    iff = (f"If({'kk' if where == 'function' else CONDITIONS[cond]}) <"
           f"then_branch = tb () => (float[?] p) {{ f1 = Constant<value = int64[1] {{-1}}>()  p = Reshape({r}, f1) }},"
           f" else_branch = eb () => (float[?] q) {{ {split}  f2 = Constant<value = int64[1] {{-1}}>()"
           "  q = Reshape(b, f2) }>")
    x = "float[2,6] x" if static else "float[N,6] x"
    head = (f"g ({x}, bool k, float[M] z) => (float[?] y, float[?,?] w) {{ {SHAPE_CHAIN}  {lines}{SIDE}"
            "  zs = Shape(z)  one = Constant<value = int64[1] {1}>()  ce = Equal(zs, one)  cz = Squeeze(ce)")
    c = CONDITIONS[cond]
    if where == "main":
        text = H + f"{head}  y = {iff} }}"
    elif where == "loop":
        text = H + (f"{head}  trip = Constant<value = int64 {{1}}>()  go = Constant<value = bool {{1}}>()"
                    f"  y0 = Loop(trip, go) <body = lb (int64 i, bool ci) => (bool co, float[?] yy) {{"
                    f" co = Identity(ci)  yy = {iff} }}>  fl = Constant<value = int64[1] {{-1}}>()  y = Reshape(y0, fl) }}")
    else:
        extra = ", s" if reads == "split-sizes" else ""
        text = (H.replace('"" : 18', '"" : 18, "local" : 1') + f"{head}  y = local.F({read}, {c}{extra}) }}\n"
                f'<domain: "local", opset_import: ["" : 18]>\nF (a, kk{", sa" if extra else ""}) => (r) {{ r = {iff} }}')
    return parser.parse_model(text)


def _branch_feeds(static, cond):
    out = []
    for n in ((2,) if static else (0, 1, 3)):
        for m, k in ((1, True), (0, True), (2, False)):
            x = np.resize(np.array([-1.5, -0.0, 0.0, np.nan, 2.0, np.inf], np.float32), (n, 6))
            out.append({"x": x, "k": np.array(k if cond == "data" else True), "z": np.ones(m, np.float32)})
    return out


BRANCH_CASES = [(where, reads, cond, static, skip)
                for where in ("main", "loop", "function")
                for reads in READS
                for cond in CONDITIONS
                for static, skip in ((True, "constant-shapes"), (False, "fold-constants"), (False, ""))
                # (computed split sizes become a constant only by folding)
                if not (where == "function" and cond == "dims" and reads != "reshaped")
                and not (reads == "split-sizes" and skip == "fold-constants")]


@pytest.mark.parametrize("where,reads,cond,static,skip", BRANCH_CASES,
                         ids=["-".join([w, r, c, "static" if s else "dynamic", f"skip-{k}" if k else "all"])
                              for w, r, c, s, k in BRANCH_CASES])
def test_a_branch_a_run_may_not_take_still_loads(where, reads, cond, static, skip):
    model = _branch_model(where, reads, cond, static)
    onnx.checker.check_model(model, full_check=True)
    out = shapeinfer.optimize(model, skip=[skip] if skip else ())
    _check_written(model, out, _branch_feeds(static, cond))
    # what no branch reads is optimised as ever: the side Reshape's shape is a constant
    inits = {t.name for t in out.graph.initializer} | {n.output[0] for n in out.graph.node if n.op_type == "Constant"}
    side = [n for n in out.graph.node if n.output and n.output[0] == "w"]
    if static or skip != "constant-shapes":
        assert side and side[0].op_type == "Reshape" and side[0].input[1] in inits, onnx.printer.to_text(out.graph)


@pytest.mark.parametrize("reads", ["reshaped", "through-a-node"])
def test_infer_shapes_leaves_what_such_a_branch_reads_undeclared(reads):
    """infer_shapes writes no shape on what such a branch reads (nor on what that is computed
    from): written as [N, 2, 3], it would make onnxruntime refuse the model."""
    model = _branch_model("main", reads, "data", False)
    written = shapeinfer.infer_shapes(model)
    declared = {vi.name for vi in written.graph.value_info}
    assert "t" not in declared and "t0" not in declared and "w" in {o.name for o in written.graph.output}
    _check_written(model, written, _branch_feeds(False, "data"))


def test_what_onnxruntime_sees_in_full_is_still_rewritten():
    """The branch reads t (whose dims onnxruntime does not see) and r = Relu(x), whose shape it
    knows as well as inference does; a no-op Reshape of r makes a graph output. t's Reshape keeps
    its computed shape; the no-op Reshape goes, r taking the output's name -- as without the If:
    no rewrite can show onnxruntime more of r."""
    model = parser.parse_model(H + "g (float[N,6] x, bool k) => (float[?] y, float[N,6] z) <int64[2] s = {0, 6}> {"
                               f"  {SHAPE_CHAIN}  t = Identity(t0)  r = Relu(x)  z = Reshape(r, s)"
                               "  y = If(k) <then_branch = tb () => (float[?] p) {"
                               " f1 = Constant<value = int64[1] {-1}>()  p = Reshape(r, f1) },"
                               " else_branch = eb () => (float[?] q) { sp = Constant<value = int64[2] {1, 3}>()"
                               "  b, b2 = Split<axis = 1>(t, sp)  f2 = Constant<value = int64[1] {-1}>()"
                               "  q = Reshape(b, f2) }> }")
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report)
    assert [n.op_type for n in out.graph.node].count("Reshape") == 1
    assert [why for _, op, why in report.kept if op == "Reshape"] == [
        "left as it is: an If's branch reads what it computes, and onnxruntime checks that branch at load with the "
        "shapes it can see -- a constant shape here could make it refuse the model"]
    _check_written(model, out, _branch_feeds(False, "data"))


def test_an_if_whose_condition_folding_might_decide_but_does_not_is_guarded():
    """The condition is computed from constants alone -- ReduceSum of floats, which is not folded
    by default -- so it might have been decided by folding (as AffineGrid's nested Ifs are, once
    the If before them is inlined: their branches are not guarded meanwhile); it is not, the If
    stays, and what its branch reads is guarded after all: the Reshape keeps its computed shape."""
    model = parser.parse_model(H + "g (float[N,6] x) => (float[?] y) { " + SHAPE_CHAIN + "  t = Identity(t0)"
                               "  c0 = Constant<value = float[2] {1.5, 2.25}>()  r = ReduceSum<keepdims = 0>(c0)"
                               "  zero = Constant<value = float {0}>()  cond = Greater(r, zero)"
                               "  y = If(cond) <then_branch = tb () => (float[?] p) {"
                               " f1 = Constant<value = int64[1] {-1}>()  p = Reshape(t, f1) },"
                               " else_branch = eb () => (float[?] q) { sp = Constant<value = int64[2] {1, 3}>()"
                               "  b, b2 = Split<axis = 1>(t, sp)  f2 = Constant<value = int64[1] {-1}>()"
                               "  q = Reshape(b, f2) }> }")
    out = shapeinfer.optimize(model)
    assert [n.op_type for n in out.graph.node].count("If") == 1
    _check_written(model, out, _branch_feeds(False, "data"))
