"""The input bounds optimize takes from the Reshapes every run executes (infer/run_bounds.py),
judged by onnxruntime: the original runs nowhere below a bound, and the optimised model computes
what the original does wherever the original runs (sizes 0 and 1 included).

A Reshape fails where its ``-1`` sits beside a 0 and where its element count would change
(onnxruntime: ``size != 0 && input_shape_size % size == 0``, ``input_shape_size ==
requested_shape_size``; the spec gives such a Reshape no output). Generated models chain
Reshapes whose entries are computed from ``Shape(x)`` -- some beside a -1, some that copy another
dim where they are 0 -- and each is run at every binding of a small grid.
"""

import functools
import itertools
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.infer.run_bounds import _constraints, run_lows
from shapeinfer.optimizer.verify import IDENTICAL, verify

ort = pytest.importorskip("onnxruntime")

GRID = (0, 1, 2, 3, 4, 5, 8)  # every symbol takes each of these
SYMS = ("B", "H", "W")


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


class _Builder:
    """x [B, H, W] float and the int64 1-element tensors computed from Shape(x)."""

    def __init__(self):
        self.nodes = [helper.make_node("Shape", ["x"], ["xs"])]
        self.inits = []
        self.k = 0
        self.cache = {}

    def name(self, base):
        self.k += 1
        return f"{base}{self.k}"

    def const(self, v):
        key = ("c", v)
        if key not in self.cache:
            n = self.name("c")
            self.inits.append(_ints(n, [v]))
            self.cache[key] = n
        return self.cache[key]

    def dim(self, i):
        key = ("d", i)
        if key not in self.cache:
            n = self.name("d")
            self.nodes.append(helper.make_node("Gather", ["xs", self.const(i)], [n], axis=0))
            self.cache[key] = n
        return self.cache[key]

    def op(self, op, a, b):
        n = self.name(op.lower())
        self.nodes.append(helper.make_node(op, [a, b], [n]))
        return n

    def entry(self, spec):
        """spec: int (a constant), or a symbol index, or (op, spec, spec)."""
        if isinstance(spec, tuple):
            return self.op(spec[0], self.entry(spec[1]), self.entry(spec[2]))
        if isinstance(spec, str):
            return self.dim(SYMS.index(spec))
        return self.const(spec)

    def reshape(self, data, entries, relu=False, keep=None, allowzero=0):
        """Reshape(data, Concat(entries)); ``relu``: then a Relu of it (another reader than a
        reshape-like op, which may be merged with it); ``keep``: "Identity" or "Add" (of 0)
        between the Concat and the Reshape, a node onnxruntime removes before it fuses."""
        shape = self.name("shape")
        self.nodes.append(helper.make_node("Concat", [self.entry(e) for e in entries], [shape], axis=0))
        if keep == "Identity":
            self.nodes.append(helper.make_node("Identity", [shape], [shape + "_same"]))
            shape += "_same"
        elif keep == "Add":
            self.nodes.append(helper.make_node("Add", [shape, self.const(0)], [shape + "_same"]))
            shape += "_same"
        out = self.name("r")
        self.nodes.append(helper.make_node("Reshape", [data, shape], [out], **({"allowzero": 1} if allowzero else {})))
        if relu:
            self.nodes.append(helper.make_node("Relu", [out], [out + "_relu"]))
            out += "_relu"
        return out

    def model(self, out, *more):
        """y = Relu(out), and ``more`` as further graph outputs."""
        self.nodes.append(helper.make_node("Relu", [out], ["y"]))
        outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y",) + more]
        graph = helper.make_graph(self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SYMS))],
                                  outputs, initializer=self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# entries a Reshape target is made of (spec of _Builder.entry)
_ENTRIES = ["B", "H", "W", ("Div", "H", 2), ("Div", "W", 2), ("Mul", "H", "W"), ("Div", ("Add", "H", 1), 2),
            ("Mul", "B", "H"), 2, 4, ("Sub", "H", 1)]


def _random_model(rng):
    b = _Builder()
    cur = "x"
    for _ in range(rng.integers(2, 4)):
        rank = int(rng.integers(1, 5))
        entries = [_ENTRIES[i] for i in rng.integers(0, len(_ENTRIES), size=rank)]
        if rng.random() < 0.6:
            entries[int(rng.integers(0, rank))] = -1
        keep = (None, None, None, "Identity", "Add")[int(rng.integers(0, 5))]
        # allowzero=1: an entry that is 0 stays 0 -- and onnxruntime runs a 0 beside the -1 there,
        # which the spec calls invalid (dynamo exports write every view so: [batch, seq, -1, 8])
        cur = b.reshape(cur, entries, relu=rng.random() < 0.6, keep=keep, allowzero=rng.random() < 0.3)
    return b.model(cur)


def _swin_like():
    """Swin's pattern: [B, 2, -1] (B >= 1), then windows of 2 and back to [B, H*W/...]: a Reshape
    entry H//2 that copies another dim where it is 0, refuted by a later element count."""
    b = _Builder()
    r1 = b.reshape("x", ["B", 2, -1], relu=True)  # beside-1: B*2 != 0
    r2 = b.reshape(r1, ["B", ("Div", "H", 2), 2, "W"], relu=True)  # H//2 = 0 copies the 2 (or the H*W/2)
    r3 = b.reshape(r2, [-1, ("Div", "H", 2), 2, "W"], relu=True)
    r4 = b.reshape(r3, ["B", ("Mul", "H", "W")])
    return b.model(r4)


def _runs(model, level=None, spec=True):
    """{binding: True/False}: does onnxruntime run the model there."""
    opts = ort.SessionOptions()
    opts.log_severity_level = 4  # (every failing binding would log an error)
    # its kernels as the spec has them: from the basic level on, onnxruntime merges consecutive
    # Reshapes, which then run where the first one fails (a deviation from the spec; run_facts
    # leaves such Reshapes out, which test_merged_reshapes_make_no_bound checks)
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL if level is None else level
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    # onnxruntime's kernel runs an allowzero=1 Reshape whose shape holds a 0 and a -1 (the -1 the
    # quotient of the dims that are not 0), which the spec calls invalid: there the original runs
    # in the spec only where onnx.reference, which refuses it, runs it too
    ref = None
    if spec and level is None and any(n.op_type == "Reshape" and any(a.name == "allowzero" and a.i for a in n.attribute)
                             for n in model.graph.node):
        from onnx.reference import ReferenceEvaluator

        ref = ReferenceEvaluator(model)
    out = {}
    for vals in itertools.product(GRID, repeat=3):
        try:
            sess.run(None, {"x": np.zeros(vals, np.float32)})
            if ref is not None:
                ref.run(None, {"x": np.zeros(vals, np.float32)})
            out[vals] = True
        except Exception:  # noqa: BLE001 - the model fails at this binding
            out[vals] = False
    return out


def _check(model):
    """The bounds hold wherever the model runs -- in the spec (onnxruntime's kernels) and in
    onnxruntime at its default level, whose graph optimizations run some models where the spec
    fails; the optimised model is identical wherever the original runs."""
    runs = _runs(model)
    lows = run_lows(model, shapeinfer.infer(model))
    default = _runs(model, ort.GraphOptimizationLevel.ORT_ENABLE_ALL) if lows else {}
    for vals in runs:
        if runs[vals] or default.get(vals):
            binding = dict(zip(SYMS, vals))
            for s, (lo, why) in lows.items():
                assert binding[s] >= lo, (s, lo, why, binding, "spec" if runs[vals] else "default level")
    opt = shapeinfer.optimize(model)
    ran_at = [dict(zip(SYMS, v)) for v, ran in runs.items() if ran]
    if ran_at:
        rep = verify(model, opt, bindings=ran_at)
        assert rep.outcome == IDENTICAL, [r for r in rep.runs if "DIFFERENT" in r[1]][:3]
    return lows, opt, runs


def test_swin_pattern_bounds_and_rewrite():
    model = _swin_like()
    lows, opt, runs = _check(model)
    # (W >= 1: the W that a 0 would copy is beside the -1 of the third Reshape)
    assert {s: lo for s, (lo, _) in lows.items()} == {"B": 1, "H": 2, "W": 1}
    # below the bounds the model runs nowhere on the grid; at them it does
    assert not any(ran for v, ran in runs.items() if v[0] == 0 or v[1] < 2 or v[2] == 0)
    assert runs[(1, 2, 1)]
    # with B >= 1 the first Reshape is [0, 2, -1]; with H >= 2 the entry H//2 never copies, so
    # the third Reshape changes nothing (it goes) and the last is [0, -1]. The second keeps its
    # computed shape: H//2 and W are neither constants nor its input's dims.
    assert _computed_reshapes(opt) == 1
    assert [n.op_type for n in opt.graph.node].count("Reshape") == 3


def _computed_reshapes(model) -> int:
    consts = {t.name for t in model.graph.initializer}
    return sum(1 for n in model.graph.node if n.op_type == "Reshape" and n.input[1] not in consts)


def test_swin_pattern_without_the_bounds_keeps_shapes(monkeypatch):
    """Without the bounds (the search off) the same model keeps computed shapes: the rewrite
    above is the bounds' doing."""
    from shapeinfer.infer.result import InferenceResult

    monkeypatch.setattr(InferenceResult, "run_lows", lambda self: {})
    opt = shapeinfer.optimize(_swin_like())
    assert _computed_reshapes(opt) == 3


def test_dead_and_branch_reshapes_make_no_bound():
    """A Reshape no output needs, or one inside an If, may never run: it makes no bound."""
    b = _Builder()
    dead = b.reshape("x", ["B", 2, -1])  # noqa: F841 - read by nothing
    model = b.model("x")
    lows = run_lows(model, shapeinfer.infer(model))
    assert lows == {}
    # the same Reshape read by a graph output makes B >= 1 (H, W: no zero case reads them)
    b = _Builder()
    r = b.reshape("x", ["B", 2, -1], relu=True)
    r2 = b.reshape(r, ["B", ("Div", "H", 2), 2, "W"])
    model = b.model(r2)
    assert {s: lo for s, (lo, _) in run_lows(model, shapeinfer.infer(model)).items()}.get("B") == 1
    # inside an If's branch (the model's output is the If's): none
    b = _Builder()
    shape = b.name("shape")
    b.nodes.append(helper.make_node("Concat", [b.entry("B"), b.entry(2), b.entry(-1)], [shape], axis=0))
    branch = helper.make_graph([helper.make_node("Reshape", ["x", shape], ["in_branch"])], "then", [],
                               [helper.make_tensor_value_info("in_branch", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["as_is"])], "else", [],
                              [helper.make_tensor_value_info("as_is", TensorProto.FLOAT, None)])
    b.nodes.append(helper.make_node("If", ["cond"], ["chosen"], then_branch=branch, else_branch=other))
    r2 = b.reshape("chosen", ["B", ("Div", "H", 2), 2, "W"])
    model = b.model(r2)
    model.graph.input.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    assert run_lows(model, shapeinfer.infer(model)) == {}


def test_unsure_pool_makes_no_bound():
    """A pool whose length may be negative is run by onnxruntime where the spec fails: a Reshape
    of it says nothing of a run."""
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[4]),
             helper.make_node("Shape", ["p"], ["ps"]),
             helper.make_node("Gather", ["ps", "i2"], ["len"], axis=0),
             helper.make_node("Concat", ["len", "m1"], ["t"], axis=0),
             helper.make_node("Reshape", ["p", "t"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "S"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[_ints("i2", [2]), _ints("m1", [-1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert run_lows(model, shapeinfer.infer(model)) == {}


def test_generated_models():
    """Random Reshape chains: every bound holds wherever onnxruntime runs the model, and the
    optimised model is identical there. Some models must get bounds (the test is not vacuous).
    ``SHAPEINFER_RUN_FACTS_MODELS=2000 SHAPEINFER_RUN_FACTS_SEED=1`` runs a longer sweep."""
    wanted = int(os.environ.get("SHAPEINFER_RUN_FACTS_MODELS", 24))
    rng = np.random.default_rng(int(os.environ.get("SHAPEINFER_RUN_FACTS_SEED", 7)))
    kept = with_bounds = 0
    for _ in range(10 * wanted):
        model = _random_model(rng)
        runs = _runs(model)
        if not any(runs.values()):
            continue  # runs nowhere: nothing to judge
        kept += 1
        lows, _, _ = _check(model)
        with_bounds += bool(lows)
        if kept >= wanted:
            break
    assert kept >= wanted // 2
    assert with_bounds >= wanted // 8


def test_allowzero_reshape_with_a_0_beside_its_minus_1_makes_no_bound():
    """A dynamo export's view: Reshape<allowzero=1>(x, [B, H, -1, 2]). At B = 0 the spec calls the
    shape invalid (a 0 and a -1), but onnxruntime runs it, working the -1 out from the dims that
    are not 0; a bound B >= 1 taken from it let constant-shapes write [0, 2, -1, ...] (allowzero
    0) for a later Reshape, which fails at B = 0 where the original runs (found on the Mistral
    and Phi-3 dynamo exports)."""
    b = _Builder()
    r1 = b.reshape("x", ["B", "H", -1, 2], allowzero=1)
    r2 = b.reshape("x", ["B", 2, "H", ("Div", "W", 2)], allowzero=1)
    r3 = b.reshape(r2, [-1, "H", ("Div", "W", 2)])
    model = b.model(r1, r2, r3)
    runs = _runs(model, spec=False)
    assert runs[(0, 3, 4)] and not _runs(model)[(0, 3, 4)]  # (onnxruntime runs the original at B = 0)
    lows, opt, _ = _check(model)
    assert "B" not in lows, lows
    ran_at = [dict(zip(SYMS, v)) for v, ran in runs.items() if ran and v[0] == 0]
    rep = verify(model, opt, bindings=ran_at)  # (where onnxruntime runs it, the optimised model does the same)
    assert rep.outcome == IDENTICAL, [r for r in rep.runs if "DIFFERENT" in r[1]][:3]


@pytest.mark.parametrize("reader", ["Reshape", "Flatten", "Shape", "Relu-Shape", "Relu"])
def test_reshape_read_by_skipping_ops_makes_no_bound(reader):
    """x [B,H,W] -> Reshape [6] -> reader: the Reshape fails unless B*H*W == 6. Where only a
    Shape reads what it computes (directly or after a Relu), onnxruntime folds the Shape (it
    knows the shape) and never runs the Reshape (see test_default_level_runs_agree); read by a
    reshape-like op alone, a runtime or a simplifier may merge the two. Either way it makes no
    constraint; read by a Relu that an output needs, it does."""
    b = _Builder()
    first = b.reshape("x", [6])
    out = b.name("read")
    if reader == "Reshape":
        b.nodes.append(helper.make_node("Reshape", [first, b.const(-1)], [out]))
    elif reader == "Relu-Shape":  # only the shape of what the Reshape computes is read
        b.nodes.append(helper.make_node("Relu", [first], [out + "_relu"]))
        b.nodes.append(helper.make_node("Shape", [out + "_relu"], [out]))
    else:
        b.nodes.append(helper.make_node(reader, [first], [out]))
    if reader in ("Shape", "Relu-Shape"):
        b.nodes.append(helper.make_node("Cast", [out], [out + "_f"], to=TensorProto.FLOAT))
        out += "_f"
    model = b.model(out)
    first_name = next(n.name or n.output[0] for n in model.graph.node if n.op_type == "Reshape")
    made = {c.node for c in _constraints(model, shapeinfer.infer(model), set(SYMS))}
    assert (first_name in made) == (reader == "Relu"), made


def test_swin_export_bounds():
    """The Swin export (fixtures/corpus): batch >= 1, height >= 4, width >= 4 in every run that
    succeeds -- onnxruntime fails below each, at its default level too -- and with them optimize
    keeps 7 computed Reshape shapes of the 27 (without them 13) and, with --ignore-signed-zero,
    159 nodes (onnxslim 168, onnxsim 191: ``python bench/bench_optimize.py --only swin_classic.onnx``)."""
    from shapeinfer.optimizer.manager import OptimizeReport
    from tests import corpus

    entry = next(e for e in corpus.entries() if e["file"] == "swin_classic.onnx")
    model = onnx.load(f"{entry['dir']}/{entry['file']}")
    result = shapeinfer.infer(model)
    lows = run_lows(model, result)
    assert {s: lo for s, (lo, _) in lows.items()} == {"batch": 1, "height": 4, "width": 4}
    # the same bounds are the proven part of the input contract that check prints
    contract = result.contract()
    assert contract.lows == lows == result.run_lows()
    assert contract.text().startswith("height >= 4, width >= 4")
    assert not contract.admits({"batch": 1, "height": 3, "width": 16}) and contract.admits({"height": 4, "width": 4})
    below = [(0, 16, 16), (0, 32, 48)] + [(1, h, 16) for h in range(4)] + [(2, 16, w) for w in range(4)]
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        opts.graph_optimization_level = level
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        for b, h, w in below:
            with pytest.raises(Exception):
                sess.run(None, {"pixel_values": np.zeros((b, 3, h, w), np.float32)})
    report = OptimizeReport()
    opt = shapeinfer.optimize(model, ignore_signed_zero=True, report=report)
    assert len(report.run_facts) == 3 and report.run_facts[0].startswith("batch >= 1 in every run that succeeds")
    assert _computed_reshapes(opt) == 7 and len(opt.graph.node) == 159
    rep = verify(model, opt, bindings=[b for _, b in corpus._bindings(entry, model)], signed_zeros=False)
    assert rep.outcome == IDENTICAL and rep.compared == len(rep.runs), rep.runs


def _default_level_outputs(model, feeds):
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    try:
        return [o.shape for o in sess.run(None, feeds)]
    except Exception:  # noqa: BLE001 - the model fails at this binding
        return None


def _fusion_model(between=None):
    """x [4,H] -> Reshape [H//4, 16] (H < 4: the 0 copies the 4, and the count is wrong); and
    w [3,4] -> Reshape [min(H//4, 1), -1], which a bound H >= 4 would make [1, -1]. ``between``:
    a node that leaves the shape as it is, between the Concat and the Reshape ("Identity",
    "Add" of 0), which onnxruntime removes before it fuses."""
    last = "t"
    extra = []
    if between == "Identity":
        extra, last = [helper.make_node("Identity", ["t"], ["t_same"])], "t_same"
    elif between == "Add":
        extra, last = [helper.make_node("Add", ["t", "c0"], ["t_same"])], "t_same"
    nodes = [helper.make_node("Shape", ["x"], ["xs"]), helper.make_node("Gather", ["xs", "i1"], ["h"], axis=0),
             helper.make_node("Div", ["h", "c4"], ["q"]), helper.make_node("Concat", ["q", "c16"], ["t"], axis=0),
             *extra, helper.make_node("Reshape", ["x", last], ["r"]), helper.make_node("Relu", ["r"], ["y"]),
             helper.make_node("Min", ["q", "c1"], ["m"]), helper.make_node("Concat", ["m", "cm1"], ["t2"], axis=0),
             helper.make_node("Reshape", ["w", "t2"], ["y2"])]
    inits = [_ints("i1", [1]), _ints("c4", [4]), _ints("c16", [16]), _ints("c1", [1]), _ints("cm1", [-1]),
             _ints("c0", [0])]
    return nodes, inits, [("x", [4, "H"]), ("w", [3, 4])], [("y", TensorProto.FLOAT), ("y2", TensorProto.FLOAT)], "H"


def _shape_folding_model():
    """x [B,6] -> Shape(Reshape(x, [2,3])) (B != 1: the count is wrong); w [3,4] -> Reshape
    [min(B, 1), -1], which a bound B >= 1 would make [1, -1]; and w2 [1,5] -> Reshape [B, 5], a
    zero case over B that makes B looked at."""
    nodes = [helper.make_node("Reshape", ["x", "c23"], ["r"]), helper.make_node("Shape", ["r"], ["y1"]),
             helper.make_node("Shape", ["x"], ["xs"]), helper.make_node("Gather", ["xs", "i0"], ["b"], axis=0),
             helper.make_node("Min", ["b", "c1"], ["mb"]), helper.make_node("Concat", ["mb", "cm1"], ["t2"], axis=0),
             helper.make_node("Reshape", ["w", "t2"], ["y2"]), helper.make_node("Concat", ["b", "c5"], ["t3"], axis=0),
             helper.make_node("Reshape", ["w2", "t3"], ["y3"])]
    inits = [_ints("c23", [2, 3]), _ints("i0", [0]), _ints("c1", [1]), _ints("cm1", [-1]), _ints("c5", [5])]
    outputs = [("y1", TensorProto.INT64), ("y2", TensorProto.FLOAT), ("y3", TensorProto.FLOAT)]
    return nodes, inits, [("x", ["B", 6]), ("w", [3, 4]), ("w2", [1, 5])], outputs, "B"


@pytest.mark.parametrize("make", [_fusion_model, functools.partial(_fusion_model, "Identity"),
                                  functools.partial(_fusion_model, "Add"), _shape_folding_model],
                         ids=["reshape-fusion", "fusion-through-identity", "fusion-through-add-0", "shape-folding"])
def test_default_level_runs_agree(make):
    """Two ways onnxruntime at its default level runs a model where the spec fails, which make no
    bound: ReshapeFusion turns the Concat's one computed entry into -1 ([H//4, 16] runs at H = 0
    as [-1, 16]); constant folding replaces Shape(Reshape(x, [2,3])) and the Reshape never runs
    (at B = 0). There the original's w Reshape copies the 3: (3, 4). Found by review, as was
    the fusion through nodes onnxruntime removes first."""
    nodes, inits, inputs, outputs, symbol = make()
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in inputs],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert run_lows(model, shapeinfer.infer(model)) == {}
    opt = shapeinfer.optimize(model)
    deviates = 0
    for v in range(9):
        feeds = {n: np.ones([v if d == symbol else d for d in dims], np.float32) for n, dims in inputs}
        want = _default_level_outputs(model, feeds)
        if want is not None:
            assert _default_level_outputs(opt, feeds) == want, v
            deviates += not _runs_spec(model, feeds)
    assert deviates  # the default level runs the original somewhere the spec does not


def _runs_spec(model, feeds) -> bool:
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    try:
        sess.run(None, feeds)
        return True
    except Exception:  # noqa: BLE001 - the model fails at this binding
        return False
