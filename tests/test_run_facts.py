"""What the tensors of a run that succeeds tell: a facts-of-the-run argument, judged by onnxruntime.

1. Element counts fit int64. An int64 Add/Sub/Mul is exact modulo 2**64, so a product computed
   one Mul at a time -- ``B*H`` then ``*W``, where ``B*H`` alone may pass int64 when W is 0 -- is
   exact wherever the full product fits; and it does where it is the element count of a tensor
   of the run (onnxruntime refuses a tensor whose count passes int64). Exporters flatten that
   way (SegFormer's ``8*batch*h*w // (8*batch)``), also with ``max(0, h-1) + 1`` for ``h``.
2. Tensor dims are not negative. A frame count ``S//4 - 1`` that is a tensor's dim makes
   ``S//4 >= 1`` in every run that reaches it, so a Reshape entry computed as ``S//4 - 1`` is
   not the -1 that means "infer".

Each model runs in onnxruntime at bindings that include 0 and 1 (where it runs) and every
reported dim is compared; a product that is no element count stays unknown.
"""

import itertools

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.infer import engine as engine_mod
from tests import corpus
from shapeinfer.symbolic import EvaluationError, evaluate, free_symbols

ort = pytest.importorskip("onnxruntime")


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _dim_nodes(src, names):
    """Shape(src) and one scalar per dim: ``names[i] = Squeeze(Gather(shape, i))``."""
    nodes = [helper.make_node("Shape", [src], [f"{src}_shape"])]
    inits = []
    for i, n in enumerate(names):
        inits.append(_ints(f"{n}_idx", [i]))
        nodes.append(helper.make_node("Gather", [f"{src}_shape", f"{n}_idx"], [f"{n}_1d"], axis=0))
        nodes.append(helper.make_node("Squeeze", [f"{n}_1d", "axes0"], [n]))
    inits.append(_ints("axes0", [0]))
    return nodes, inits


def _model(nodes, inits, inputs, outputs):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def flatten_model(exporter_max: bool, extra_factor: bool = False):
    """x [B,H,W] -> Reshape(x, [B, (B*H*W) / B]) with the product made one Mul at a time;
    ``exporter_max``: each of H, W written ``max(0, d-1) + 1`` as dynamo exports do;
    ``extra_factor``: the product takes W twice (no tensor has that many elements)."""
    nodes, inits = _dim_nodes("x", ["b", "h", "w"])
    inits += [_ints("one", 1), _ints("zero", 0), _ints("axes0b", [0])]
    h, w = "h", "w"
    if exporter_max:
        for d in ("h", "w"):
            nodes += [helper.make_node("Sub", [d, "one"], [f"{d}_m1"]),
                      helper.make_node("Max", [f"{d}_m1", "zero"], [f"{d}_max"]),
                      helper.make_node("Add", [f"{d}_max", "one"], [f"{d}_e"])]
        h, w = "h_e", "w_e"
    nodes += [helper.make_node("Mul", ["b", h], ["bh"]), helper.make_node("Mul", ["bh", w], ["bhw"])]
    last = "bhw"
    if extra_factor:
        nodes.append(helper.make_node("Mul", ["bhw", w], ["bhww"]))
        last = "bhww"
    nodes += [helper.make_node("Div", [last, "b"], ["q"]),
              helper.make_node("Unsqueeze", ["q", "axes0b"], ["q1"]),
              helper.make_node("Unsqueeze", ["b", "axes0b"], ["b1"]),
              helper.make_node("Concat", ["b1", "q1"], ["target"], axis=0),
              helper.make_node("Reshape", ["x", "target"], ["y"]),
              helper.make_node("Relu", ["y"], ["out"])]
    return _model(nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "H", "W"])],
                  [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])


def frames_model(op: str = "Conv", allowzero: int = 0):
    """x [1,1,S] -> a window of 8, stride 4 (Conv, or MaxPool): [1,1,S//4-1]; the entry
    e = S//4 - 1, computed from Shape(x), reshapes another input z [K] to [e] (e = 0 would copy
    K, e = -1 infer it). e >= 0 is known only from the window's output existing -- for a Conv:
    onnxruntime refuses a MaxPool's negative length less than the spec does (it runs)."""
    nodes, inits = _dim_nodes("x", ["n", "c", "s"])
    inits += [_ints("four", 4), _ints("one", 1), _ints("axes0b", [0])]
    if op == "Conv":
        inits.append(numpy_helper.from_array(np.ones((1, 1, 8), np.float32), "w"))
        nodes.append(helper.make_node("Conv", ["x", "w"], ["pool"], strides=[4]))
    else:
        nodes.append(helper.make_node(op, ["x"], ["pool"], kernel_shape=[8], strides=[4]))
    nodes += [helper.make_node("Div", ["s", "four"], ["s4"]),
              helper.make_node("Sub", ["s4", "one"], ["e"]),
              helper.make_node("Unsqueeze", ["e", "axes0b"], ["target"]),
              helper.make_node("Reshape", ["z", "target"], ["y"], allowzero=allowzero),
              helper.make_node("Shape", ["y"], ["ys"]),
              helper.make_node("Sub", ["ys", "target"], ["d"]),
              helper.make_node("Relu", ["pool"], ["out2"])]
    return _model(nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "S"]),
                                 helper.make_tensor_value_info("z", TensorProto.FLOAT, ["K"])],
                  [helper.make_tensor_value_info("d", TensorProto.INT64, None),
                   helper.make_tensor_value_info("out2", TensorProto.FLOAT, None)])


def _check_against_onnxruntime(model, bindings, feeds_of):
    """Every dim of every tensor at each binding onnxruntime runs; returns (runs, unknown names)."""
    result = shapeinfer.infer(model)
    names = [n for n in result.tensor_names() if result.fact(n) is not None and result.fact(n).dtype]
    sess = corpus._session(model, names)  # every tensor an output, onnxruntime's optimizations off
    inputs = result.input_symbols()
    runs, unknown = 0, set()
    for binding in bindings:
        try:
            values = sess.run(names, feeds_of(binding))
        except Exception:  # noqa: BLE001  (a binding onnxruntime cannot run: nothing to compare)
            continue
        runs += 1
        for name, arr in zip(names, values):
            dims = result.shape(name)
            assert dims is not None and len(dims) == np.ndim(arr), (name, binding)
            for d, size in zip(dims, np.shape(arr)):
                if free_symbols(d) - inputs:
                    unknown.add(name)
                    continue
                try:
                    got = evaluate(d, binding)
                except EvaluationError:
                    got = None
                assert got == size, (name, result.shape_strs(name), np.shape(arr), binding)
    return runs, unknown


def _bhw_feeds(binding):
    return {"x": np.zeros((binding["B"], binding["H"], binding["W"]), np.float32)}


BHW = [dict(B=b, H=h, W=w) for b, h, w in itertools.product([0, 1, 2], [0, 1, 3], [0, 1, 5])]


@pytest.mark.parametrize("exporter_max", [False, True], ids=["product", "max-form"])
def test_a_flattened_size_past_int64_is_exact_where_it_is_an_element_count(exporter_max):
    runs, unknown = _check_against_onnxruntime(flatten_model(exporter_max), BHW, _bhw_feeds)
    assert runs >= 6
    assert not unknown  # every dim in B, H, W: B*H*W is x's element count, so it fits int64
    result = shapeinfer.infer(flatten_model(exporter_max))
    # (the product is 0 where H or W is, and then copies H: the exact form says so)
    assert result.shape_strs("y")[1] == ("max(0,H-1)*max(0,W-1)+max(0,H-1)+max(0,W-1)+1" if exporter_max
                                         else "H*W+H*iszero(H*W)")


def test_a_product_that_is_no_element_count_stays_unknown():
    model = flatten_model(False, extra_factor=True)
    result = shapeinfer.infer(model)
    assert result.fact("bhww").value is None  # B*H*W*W may pass int64 (and wrap): not known
    assert result.fact("bhw").value is not None
    # (the Reshape's dim is minted, and onnxruntime runs only where B*H*W*W/B == H*W)
    runs, _ = _check_against_onnxruntime(model, BHW, _bhw_feeds)
    assert runs >= 1


def test_a_partial_product_is_not_reported_as_known():
    """B*H alone is no element count: reported unknown even though the full product is."""
    result = shapeinfer.infer(flatten_model(False))
    assert result.fact("bh").value is not None  # (B*H fits: two symbols up to 2**31)
    assert result.shape_strs("y") == ["B", "H*W+H*iszero(H*W)"]


def _frames_feeds(b):
    return {"x": np.zeros((1, 1, b["S"]), np.float32), "z": np.zeros(b["K"], np.float32)}


def test_a_tensor_dim_bounds_the_atoms_it_holds():
    # (onnxruntime's Conv refuses an output of length 0 or less: S < 8 does not run)
    bindings = [dict(S=s, K=k) for s in [0, 3, 7, 8, 9, 11, 12, 13, 16, 40, 41] for k in [0, 1, 2, 9]]
    runs, unknown = _check_against_onnxruntime(frames_model(), bindings, _frames_feeds)
    assert runs >= 5
    assert not unknown
    result = shapeinfer.infer(frames_model())
    assert result.shape_strs("y") == ["K*iszero(S//4-1)+S//4-1"]  # e == 0 copies K: exact


def _outputs_equal_after_optimize(model, feeds_list, name):
    optimized = shapeinfer.optimize(model)
    sessions = [ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
                for m in (model, optimized)]
    compared = 0
    for feeds in feeds_list:
        try:
            want = sessions[0].run([name], feeds)[0]
        except Exception:  # noqa: BLE001  (the original fails here: nothing to compare)
            continue
        got = sessions[1].run([name], feeds)[0]
        assert np.array_equal(want, got), (feeds.keys(), want, got)
        compared += 1
    return compared


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_a_pool_length_is_no_fact_of_the_run(op):
    """A pool's length S//4 - 1 is negative for S < 4 in the spec (the run fails), where
    onnxruntime divides with truncation and runs: e = S//4 - 1 is -1 there, and the Reshape
    infers K. Neither the inferred dims nor the optimised model may rest on S//4 >= 1."""
    model = frames_model(op, allowzero=1)
    result = shapeinfer.infer(model)
    assert free_symbols(result.shape("y")[0]) - result.input_symbols()  # not known
    feeds = [_frames_feeds(dict(S=s, K=k)) for s in [1, 2, 3, 8, 12] for k in [0, 1, 5]]
    assert _outputs_equal_after_optimize(model, feeds, "d") >= 4


def test_a_subgraph_input_declaration_is_no_fact_of_the_run():
    """A Loop body's carried input read from its declared type ([B,H,W,W], which no runtime
    checks), and what is computed from it (Relu): its element count must not make ``B*H*W*W``
    (computed one Mul at a time, past int64 for large sizes) known."""
    body = onnx.parser.parse_graph("""
    body (int64 it, bool cin, float[B,H,W,W] v) => (bool cout, float[B,H,W,W] vout, float[P] y)
    <int64[1] zero = {0}, int64[1] one = {1}, int64[1] two = {2}, int64[1] three = {3}>
    {
      cout = Identity(cin)
      vout = Relu(v)
      sh = Shape(x)
      b = Slice(sh, zero, one)
      h = Slice(sh, one, two)
      w = Slice(sh, two, three)
      bh = Mul(b, h)
      bhw = Mul(bh, w)
      p = Mul(bhw, w)
      y = ConstantOfShape(p)
    }""")
    main = onnx.parser.parse_graph("""
    g (float[B,H,W,Z] x, float v0, int64 trip) => (float vf, float[T,Q] ys)
    {
      vf, ys = Loop(trip, "", v0)
    }""")
    main.node[0].attribute.append(helper.make_attribute("body", body))
    main.node[0].input[1] = ""
    model = helper.make_model(main, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.graph.input[1].type.tensor_type.ClearField("shape")
    ys = shapeinfer.infer(model).shape_strs("ys")
    assert "B*H*W*W" not in ys[1], ys  # (at B=H=W=2**16 the product wraps to 0 at run time)


@pytest.mark.parametrize("make", [lambda: flatten_model(True), frames_model], ids=["counts", "tensor-dims"])
def test_answers_that_read_the_scope_are_not_memoized(make, monkeypatch):
    """The same node on the same input facts can get another answer elsewhere (the scope has
    other tensors): the memo must not serve it, and the results equal those without a memo."""
    with_memo = shapeinfer.infer(make())
    monkeypatch.setattr(engine_mod, "MEMOIZE", False)
    without = shapeinfer.infer(make())
    assert {n: with_memo.shape_strs(n) for n in with_memo.tensor_names()} == \
        {n: without.shape_strs(n) for n in without.tensor_names()}


@pytest.mark.parametrize("to", [TensorProto.INT32, TensorProto.INT64])
def test_a_cast_of_a_product_that_may_wrap_is_unknown(to):
    """Cast is no ring operation on it (to int32 it wraps modulo 2**32): unknown, by the rule."""
    model = flatten_model(False, extra_factor=True)
    model.graph.node.append(helper.make_node("Cast", ["bhww"], ["cast"], to=to))
    result = shapeinfer.infer(model)
    value = result.fact("cast").value
    assert value is None or result.fact("cast").known_elements() is None
    assert not [d for d in result.diagnostics if "rule failed" in str(d)]


def test_a_concat_whose_other_dims_differ_is_no_fact_of_the_run():
    """onnxruntime takes Concat's other dims from the first non-empty input: [0,N,N] and
    [16,1,1] give (16,1,1), where the spec's [A+C,B,E] says (A+C)*B*E elements. That product,
    made one Mul at a time (2**60 at A=0, B=E=2**30), wraps: it must stay unknown."""
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[A,B,E] x, float[C,D,F] y) => (int64[1] dd, float[Q,R,T] zr)
    <int64[1] i0 = {0}, int64[1] i1 = {1}, int64[1] i2 = {2}>
    {
      z = Concat<axis=0>(x, y)
      zr = Relu(z)
      xs = Shape(x)
      ys = Shape(y)
      a = Gather(xs, i0)
      b = Gather(xs, i1)
      e = Gather(xs, i2)
      c = Gather(ys, i0)
      ac = Add(a, c)
      acb = Mul(ac, b)
      p = Mul(acb, e)
      q = Div(p, b)
      r = Mul(ac, e)
      dd = Sub(q, r)
    }""")
    assert shapeinfer.infer(model).fact("p").value is None
    n = 2**30
    feeds = [{"x": np.zeros((0, n, n), np.float32), "y": np.ones((16, 1, 1), np.float32)},
             {"x": np.zeros((2, 3, 4), np.float32), "y": np.ones((5, 3, 4), np.float32)}]
    assert _outputs_equal_after_optimize(model, feeds, "dd") == 2


def test_a_loop_scan_output_is_no_fact_of_the_run():
    """At 0 iterations no body runs: onnxruntime gives the scan output (0,1,1,0) where the
    body's Conv says length S-6, which is negative for S < 6 -- no fact that S >= 6."""
    body = onnx.parser.parse_graph("""
    body (int64 it, bool cin) => (bool cout, float[A,B,C] p)
    <float[1,1,7] w8 = {1,1,1,1,1,1,1}>
    {
      cout = Identity(cin)
      p = Conv(x, w8)
    }""")
    main = onnx.parser.parse_graph("""
    g (float[1,1,S] x, float[K] z, float[T] t) => (int64[1] d, float[Q,1,1,R] ps)
    <int64[1] i2 = {2}, int64[1] a0 = {0}, int64 six = {6}, int64[1] i0 = {0}>
    {
      ts = Shape(t)
      trip1 = Gather(ts, i0)
      trip = Squeeze(trip1, a0)
      ps = Loop(trip, "")
      xs = Shape(x)
      s1 = Gather(xs, i2)
      s = Squeeze(s1, a0)
      e = Sub(s, six)
      target = Unsqueeze(e, a0)
      y = Reshape<allowzero=1>(z, target)
      ys = Shape(y)
      d = Sub(ys, target)
    }""")
    main.node[3].attribute.append(helper.make_attribute("body", body))
    model = helper.make_model(main, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = [{"x": np.zeros((1, 1, s), np.float32), "z": np.zeros(k, np.float32), "t": np.zeros(t, np.float32)}
             for t in (0, 1) for s in (3, 5, 7, 8) for k in (0, 1, 5)]
    assert _outputs_equal_after_optimize(model, feeds, "d") >= 3
