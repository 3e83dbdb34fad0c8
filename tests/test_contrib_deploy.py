"""onnxruntime's contrib ops (com.microsoft) and the quantization ops, against onnxruntime.

Each case is one node whose graph inputs have symbolic dims (constants are initializers). It
runs in onnxruntime at every binding of a grid that includes 0 and 1 (a binding onnxruntime
refuses is skipped and counted; every case must run somewhere), and every dim of every output
shapeinfer infers must be an expression over the input symbols that evaluates to the real
size, with the real element type. The rules follow onnxruntime's contrib-op documentation;
where it is silent the judge is what onnxruntime computes.
"""

import os
import itertools
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.symbolic import evaluate, free_symbols

ort = pytest.importorskip("onnxruntime")

F, F16, U8, I8, I32, I64 = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.INT8,
                            TensorProto.INT32, TensorProto.INT64)
MS = "com.microsoft"

# Sizes each symbol takes (the grid is their product, capped): 0 and 1 included.
SIZES = {"B": [1, 2, 0, 3], "S": [1, 4, 0, 2], "P": [0, 3, 1], "H": [5, 8, 3, 1], "W": [6, 9, 4, 2],
         "M": [1, 3, 0]}
MAX_BINDINGS = 12


def _const(name, arr):
    return ("const", name, np.asarray(arr))


def _sym(name, dtype, dims):
    return ("sym", name, dtype, tuple(dims))


def _model(op, inputs, n_out, attrs=None, domain=MS, extra_nodes=(), opset=17):
    graph_inputs, inits, names = [], [], []
    for spec in inputs:
        if spec is None:
            names.append("")
        elif spec[0] == "const":
            inits.append(numpy_helper.from_array(spec[2], spec[1]))
            names.append(spec[1])
        else:
            graph_inputs.append(helper.make_tensor_value_info(spec[1], spec[2], list(spec[3])))
            names.append(spec[1])
    nodes = list(extra_nodes) + [helper.make_node(op, names, [f"y{k}" for k in range(n_out)], domain=domain,
                                                  **(attrs or {}))]
    outputs = [helper.make_value_info(f"y{k}", helper.TypeProto()) for k in range(n_out)]
    graph = helper.make_graph(nodes, "g", graph_inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])


def _feeds(inputs, binding, rng):
    feeds = {}
    for spec in inputs:
        if spec is None or spec[0] == "const":
            continue
        _, name, dtype, dims = spec
        shape = tuple(binding[d] if isinstance(d, str) else d for d in dims)
        np_t = helper.tensor_dtype_to_np_dtype(dtype)
        if np.issubdtype(np_t, np.floating):
            feeds[name] = rng.standard_normal(shape).astype(np_t)
        else:
            feeds[name] = np.zeros(shape, np_t)
    return feeds


def _bindings(symbols):
    grid = list(itertools.product(*(SIZES[s] for s in symbols)))
    picked = grid[:MAX_BINDINGS // 2] + grid[-(MAX_BINDINGS // 2):] if len(grid) > MAX_BINDINGS else grid
    return [dict(zip(symbols, values)) for values in dict.fromkeys(picked)]


def _check(model, inputs, expect_symbolic=("y0",), feeds_for=None, runs_at=None):
    """Every inferred output dim against onnxruntime; returns the number of bindings run
    (``runs_at``: the bindings onnxruntime can be asked at all -- one that kills the process is
    never tried)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = shapeinfer.infer(model)
    symbols = sorted({d for spec in inputs if spec and spec[0] == "sym" for d in spec[3] if isinstance(d, str)})
    facts = {o.name: result.fact(o.name) for o in model.graph.output}
    for name in expect_symbolic:  # the rule answered: a shape over the input symbols, no fresh dim
        fact = facts[name]
        assert fact is not None and fact.shape is not None, (name, "no shape")
        assert all(free_symbols(d) <= set(symbols) for d in fact.shape if not isinstance(d, int)), \
            (name, result.shape_strs(name))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    ran = 0
    for binding in _bindings(symbols):
        if runs_at is not None and not runs_at(binding):
            continue
        feeds = (feeds_for or _feeds)(inputs, binding, rng)
        try:
            real = sess.run(None, feeds)
        except Exception:  # noqa: BLE001 -- onnxruntime refuses the binding: nothing to compare
            continue
        ran += 1
        for out, arr in zip(model.graph.output, real):
            fact = facts[out.name]
            if fact is None or fact.shape is None:
                continue
            assert len(fact.shape) == arr.ndim, (out.name, binding, result.shape_strs(out.name), arr.shape)
            for d, n in zip(fact.shape, arr.shape):
                if isinstance(d, int) or free_symbols(d) <= set(symbols):
                    assert evaluate(d, binding) == n, (out.name, binding, result.shape_strs(out.name), arr.shape)
            if fact.dtype:
                assert helper.tensor_dtype_to_np_dtype(fact.dtype) == arr.dtype, (out.name, fact.dtype, arr.dtype)
    assert ran > 0, "onnxruntime ran no binding: nothing was compared"
    return ran


def _w(shape, dtype=np.float32, seed=1):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.floating):
        return (rng.standard_normal(shape) * 0.1).astype(dtype)
    return rng.integers(0, 3, shape).astype(dtype)


# --------------------------------------------------------------------------- normalizations


@pytest.mark.parametrize("op", ["SkipLayerNormalization", "SkipSimplifiedLayerNormalization"])
@pytest.mark.parametrize("n_out", [1, 2, 4])
def test_skip_layer_norm(op, n_out):
    ins = [_sym("x", F, ("B", "S", 8)), _sym("skip", F, ("B", "S", 8)), _const("g", _w(8))]
    if op == "SkipLayerNormalization":
        ins.append(_const("b", _w(8)))
    _check(_model(op, ins, n_out), ins, expect_symbolic=[f"y{k}" for k in range(n_out)])


@pytest.mark.parametrize("axis,scale", [(-1, (8,)), (2, (4, 8)), (-2, (4, 8))])
def test_simplified_layer_norm_in_the_default_domain(axis, scale):
    ins = [_sym("x", F, ("B", "S", 4, 8)), _const("g", _w(scale))]
    _check(_model("SimplifiedLayerNormalization", ins, 2, {"axis": axis}, domain=""), ins, expect_symbolic=["y0", "y1"])


def test_layer_norm_before_opset_17_is_onnxruntimes():
    ins = [_sym("x", F, ("B", "S", 8)), _const("g", _w(8)), _const("b", _w(8))]
    _check(_model("LayerNormalization", ins, 3, {"axis": -1}, domain="", opset=13), ins,
           expect_symbolic=["y0", "y1", "y2"])


@pytest.mark.parametrize("op,extra", [("FastGelu", True), ("FastGelu", False), ("BiasGelu", True), ("Gelu", False),
                                      ("QuickGelu", False)])
def test_elementwise(op, extra):
    ins = [_sym("x", F, ("B", "S", 8))]
    if extra:
        ins.append(_const("bias", _w(8)))
    _check(_model(op, ins, 1), ins)


def test_rotary_embedding():
    ins = [_sym("x", F, ("B", "S", 16)), _sym("pos", I64, ("B", "S")), _const("cos", _w((32, 4))),
           _const("sin", _w((32, 4)))]
    _check(_model("RotaryEmbedding", ins, 1, {"num_heads": 2}), ins)


def test_embed_layer_norm():
    ins = [_sym("ids", I32, ("B", "S")), _sym("seg", I32, ("B", "S")), _const("word", _w((10, 8))),
           _const("pos", _w((16, 8))), _const("segw", _w((2, 8))), _const("g", _w(8)), _const("b", _w(8)),
           _sym("mask", I32, ("B", "S"))]
    _check(_model("EmbedLayerNormalization", ins, 3), ins, expect_symbolic=["y0", "y1", "y2"])


# --------------------------------------------------------------------------- matmuls and convs


def _fused_stored(logical, trans, trans_batch):
    """The stored shape FusedMatMul reads as ``logical`` with these flags."""
    s = list(logical)
    if trans:
        s[-2], s[-1] = s[-1], s[-2]
    if trans_batch:
        s = [s[-2]] + s[:-2] + [s[-1]]
    return tuple(s)


@pytest.mark.parametrize("ta,tb,tba,tbb", list(itertools.product([0, 1], repeat=4)))
def test_fused_matmul(ta, tb, tba, tbb):
    a = _fused_stored(("B", 2, "S", 4), ta, tba)
    b = _fused_stored(("B", 2, 4, 6), tb, tbb)
    ins = [_sym("a", F, a), _sym("b", F, b)]
    _check(_model("FusedMatMul", ins, 1, {"transA": ta, "transB": tb, "transBatchA": tba, "transBatchB": tbb,
                                          "alpha": 0.5}), ins)


def test_matmul_nbits():
    ins = [_sym("a", F, ("B", "S", 16)), _const("w", _w((8, 1, 8), np.uint8)), _const("scales", _w(8) + 1)]
    _check(_model("MatMulNBits", ins, 1, {"K": 16, "N": 8, "bits": 4, "block_size": 16}), ins)


def test_matmul_integer_family():
    a = _sym("a", U8, ("B", "S", 8))
    w = _const("w", _w((8, 4), np.uint8))
    ins = [a, w, _const("sa", np.float32(0.5)), _const("sb", np.full(4, 0.25, np.float32))]
    _check(_model("MatMulIntegerToFloat", ins, 1), ins)
    ins = [_sym("a", F, ("B", "S", 8)), _const("w", _w((8, 4), np.int8)), _const("sb", np.float32(0.1))]
    _check(_model("DynamicQuantizeMatMul", ins, 1), ins)
    ins = [a, w]
    _check(_model("MatMulInteger", ins, 1, domain=""), ins)
    ins = [a, _const("sa", np.float32(0.5)), _const("za", np.uint8(3)), w, _const("sb", np.float32(0.25)),
           _const("zb", np.uint8(1)), _const("sy", np.float32(2.0)), _const("zy", np.uint8(7))]
    _check(_model("QLinearMatMul", ins, 1, domain=""), ins)


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 1, 1]}, {"strides": [2, 2], "pads": [0, 1, 2, 1]},
                                   {"auto_pad": "SAME_UPPER", "strides": [2, 1]}, {"dilations": [2, 1]}])
def test_convolutions(attrs):
    x = _sym("x", U8, ("B", 2, "H", "W"))
    w = _const("w", _w((3, 2, 3, 3), np.uint8))
    _check(_model("ConvInteger", [x, w], 1, attrs, domain=""), [x, w])
    ins = [x, _const("sx", np.float32(0.5)), _const("zx", np.uint8(1)), w, _const("sw", np.float32(0.1)),
           _const("zw", np.uint8(0)), _const("sy", np.float32(0.7)), _const("zy", np.uint8(2))]
    _check(_model("QLinearConv", ins, 1, attrs, domain=""), ins)
    ins = [_sym("x", F, ("B", 2, "H", "W")), _const("w", _w((3, 2, 3, 3)))]
    _check(_model("FusedConv", ins, 1, dict(attrs, activation="Relu")), ins)


@pytest.mark.parametrize("ta,tb", list(itertools.product([0, 1], repeat=2)))
def test_gemms(ta, tb):
    a = _sym("a", F, (8, "M") if ta else ("M", 8))
    b = _const("b", _w((4, 8) if tb else (8, 4)))
    _check(_model("FusedGemm", [a, b], 1, {"transA": ta, "transB": tb, "activation": "Relu"}), [a, b])
    qa = _sym("a", U8, (8, "M") if ta else ("M", 8))
    qb = _const("b", _w((4, 8) if tb else (8, 4), np.uint8))
    base = [qa, _const("sa", np.float32(0.5)), _const("za", np.uint8(1)), qb, _const("sb", np.float32(0.2)),
            _const("zb", np.uint8(0))]
    _check(_model("QGemm", base, 1, {"transA": ta, "transB": tb}), base)  # float output
    ins = base + [_const("c", np.zeros(4, np.int32)), _const("sy", np.float32(0.3)), _const("zy", np.uint8(4))]
    _check(_model("QGemm", ins, 1, {"transA": ta, "transB": tb}), ins)


# --------------------------------------------------------------------------- quantized elementwise


def _q(name):
    return [_const(f"s_{name}", np.float32(0.25)), _const(f"z_{name}", np.uint8(3))]


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("b_dims", [(8,), ("B", 1, 8), ("B", "S", 8), (1,)])
def test_qlinear_binary(op, b_dims):
    ins = [_sym("a", U8, ("B", "S", 8)), *_q("a"), _sym("b", U8, b_dims), *_q("b"), *_q("c")]
    _check(_model(op, ins, 1), ins)


@pytest.mark.parametrize("op,attrs", [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.1}),
                                      ("QLinearSoftmax", {"axis": -1, "opset": 13})])
def test_qlinear_unary(op, attrs):
    ins = [_sym("x", U8, ("B", "S", 8)), *_q("x"), *_q("y")]
    if op == "QLinearSoftmax":
        ins = [_sym("x", U8, ("B", "S", 8)), *_q("x"), _const("s_y", np.float32(1 / 256)), _const("z_y", np.uint8(0))]
    _check(_model(op, ins, 1, attrs), ins)


@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_pools(channels_last):
    dims = ("B", "H", "W", 3) if channels_last else ("B", 3, "H", "W")
    ins = [_sym("x", U8, dims), *_q("x"), *_q("y")]
    _check(_model("QLinearGlobalAveragePool", ins, 1, {"channels_last": channels_last}), ins)
    if not channels_last:
        _check(_model("QLinearAveragePool", ins, 1, {"kernel_shape": [2, 2], "strides": [2, 1], "pads": [0, 1, 1, 0]}),
               ins)


def test_qlinear_concat():
    ins = [*_q("y"), _sym("a", U8, ("B", "S", 8)), *_q("a"), _sym("b", U8, ("B", "M", 8)), *_q("b")]
    _check(_model("QLinearConcat", ins, 1, {"axis": 1}), ins)


def test_quantize_dequantize_and_dynamic():
    ins = [_sym("x", F, ("B", "S", 8)), _const("s", np.float32(0.1)), _const("z", np.int8(2))]
    _check(_model("QuantizeLinear", ins, 1), ins)
    ins = [_sym("x", I8, ("B", "S", 8)), _const("s", np.float32(0.1)), _const("z", np.int8(2))]
    _check(_model("DequantizeLinear", ins, 1), ins)
    ins = [_sym("x", F, ("B", "S", 8))]
    _check(_model("DynamicQuantizeLinear", ins, 3, domain=""), ins, expect_symbolic=["y0", "y1", "y2"])


# --------------------------------------------------------------------------- attention


@pytest.mark.parametrize("past", [False, True])
@pytest.mark.parametrize("sizes", [None, [16, 16, 12]])
def test_attention(past, sizes):
    hidden = 16
    width = sum(sizes) if sizes else 3 * hidden
    ins = [_sym("x", F, ("B", "S", 8)), _const("w", _w((8, width))), _const("b", _w(width))]
    attrs = {"num_heads": 4}
    if sizes:
        attrs["qkv_hidden_sizes"] = sizes
    n_out = 1
    if past and not sizes:
        ins += [None, _sym("past", F, (2, "B", 4, "P", 4))]
        n_out = 2
    _check(_model("Attention", ins, n_out, attrs), ins, expect_symbolic=[f"y{k}" for k in range(n_out)])


def test_quantized_attention():
    ins = [_sym("x", U8, ("B", "S", 8)), _const("w", _w((8, 48), np.uint8)), _const("b", _w(48)),
           _const("sx", np.float32(0.1)), _const("sw", np.float32(0.05)), None, _const("zx", np.uint8(2)),
           _const("zw", np.uint8(1)), _sym("past", F, (2, "B", 4, "P", 4))]
    _check(_model("QAttention", ins, 2, {"num_heads": 4}), ins, expect_symbolic=["y0", "y1"])


@pytest.mark.parametrize("past", [False, True])
def test_multi_head_attention(past):
    v_hidden = 16 if past else 24  # (onnxruntime takes a past only where K and V heads are one size)
    ins = [_sym("q", F, ("B", "S", 16)), _sym("k", F, ("B", "M", 16)), _sym("v", F, ("B", "M", v_hidden))]
    n_out = 1
    if past:
        ins += [None, None, None, _sym("pk", F, ("B", 4, "P", 4)), _sym("pv", F, ("B", 4, "P", 4))]
        n_out = 3
    _check(_model("MultiHeadAttention", ins, n_out, {"num_heads": 4}), ins,
           expect_symbolic=[f"y{k}" for k in range(n_out)])
    ins = [_sym("q", F, ("B", "S", 16)), _sym("k", F, ("B", 4, "M", 4)), _sym("v", F, ("B", 4, "M", 4))]
    _check(_model("MultiHeadAttention", ins, 1, {"num_heads": 4}), ins)  # key/value already in heads


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("with_past", [False, True])
def test_group_query_attention(packed, with_past):
    """The total length computed in the graph from shapes: the new tokens' S without a past
    (prefill), the buffer's P with one (decoding into a shared buffer). The present length is
    max(P, total) -- total, or the buffer where it is longer."""
    heads, kv, h = 4, 2, 8
    s = "P" if with_past else "S"
    q_len = 1 if with_past else "S"
    q_width = (heads + 2 * kv) * h if packed else heads * h
    ins = [_sym("q", F, ("B", q_len, q_width))]
    ins += [None, None] if packed else [_sym("k", F, ("B", q_len, kv * h)), _sym("v", F, ("B", q_len, kv * h))]
    ins += [_sym("pk", F, ("B", kv, "P", h)), _sym("pv", F, ("B", kv, "P", h))] if with_past else [None, None]
    ins += [_sym("seqlens", I32, ("B",)), None]
    source, axis = ("pk", 2) if with_past else ("q", 1)
    extra = [helper.make_node("Shape", [source], ["len"], start=axis, end=axis + 1),
             helper.make_node("Cast", ["len"], ["total_1d"], to=TensorProto.INT32),
             helper.make_node("Squeeze", ["total_1d"], ["total"])]
    model = _model("GroupQueryAttention", ins, 3, {"num_heads": heads, "kv_num_heads": kv}, extra_nodes=extra)
    model.graph.node[-1].input[6] = "total"

    def feeds(inputs, binding, rng):
        out = _feeds(inputs, binding, rng)
        out["seqlens"] = np.full(binding["B"], binding[s] - 1, np.int32)
        return out

    # onnxruntime's GroupQueryAttention dies of SIGFPE at batch 0 (the spec of the op allows it)
    ran = _check(model, ins, expect_symbolic=["y0", "y1", "y2"], feeds_for=feeds, runs_at=lambda b: b["B"] > 0)
    assert ran >= 2
    length = shapeinfer.infer(model).shape_strs("y1")[2]
    assert length == s, length


def test_group_query_attention_with_a_total_from_the_data_has_an_unknown_length():
    ins = [_sym("q", F, ("B", 1, 32)), _sym("k", F, ("B", 1, 16)), _sym("v", F, ("B", 1, 16)),
           _sym("pk", F, ("B", 2, "P", 8)), _sym("pv", F, ("B", 2, "P", 8)), _sym("seqlens", I32, ("B",)),
           _sym("total", I32, ())]
    result = shapeinfer.infer(_model("GroupQueryAttention", ins, 3, {"num_heads": 4, "kv_num_heads": 2}))
    assert result.shape_strs("y0") == ["B", "1", "32"]
    length = result.fact("y1").shape[2]
    assert result.is_unknown_dim(length) and result.fact("y2").shape[2] == length


def test_an_op_no_rule_knows_is_reported_with_its_domain():
    ins = [_sym("x", F, ("B", 8))]
    result = shapeinfer.infer(_model("NoSuchFusedOp", ins, 1))
    msgs = [str(d) for d in result.diagnostics if d.kind == "unknown-op"]
    assert len(msgs) == 1 and "NoSuchFusedOp" in msgs[0] and "'com.microsoft'" in msgs[0], msgs
    ins = [_sym("q", F, ("B", 1, 32)), _sym("k", F, ("B", 1, 16)), _sym("v", F, ("B", 1, 16)), None, None,
           _sym("seqlens", I32, ("B",)), _sym("total", I32, ())]
    result = shapeinfer.infer(_model("GroupQueryAttention", ins, 3, {"num_heads": 4, "kv_num_heads": 2}))
    assert not [d for d in result.diagnostics if d.kind == "unknown-op"]  # a rule answered (in part)


# --------------------------------------------------------------------------- GPU-only ops
# onnxruntime's CPU provider has no kernel for these: the shapes its documentation states.


def _inferred(op, ins, n_out=1, attrs=None, extra=()):
    result = shapeinfer.infer(_model(op, ins, n_out, attrs, extra_nodes=extra))
    return [result.shape_strs(f"y{k}") for k in range(n_out)], result


def test_gpu_only_ops_have_their_documented_shapes():
    assert _inferred("GroupNorm", [_sym("x", F, ("B", "H", "W", 32)), _const("g", _w(32)), _const("b", _w(32))],
                     attrs={"groups": 4, "activation": 0, "epsilon": 1e-5})[0] == [["B", "H", "W", "32"]]
    shapes, _ = _inferred("SkipGroupNorm", [_sym("x", F, ("B", "H", "W", 32)), _const("g", _w(32)), _const("b", _w(32)),
                                            _sym("skip", F, ("B", "H", "W", 32))], 2, {"groups": 4, "activation": 0})
    assert shapes == [["B", "H", "W", "32"]] * 2
    assert _inferred("BiasSplitGelu", [_sym("x", F, ("B", "S", 64)), _const("b", _w(64))])[0] == [["B", "S", "32"]]
    assert _inferred("GemmFastGelu", [_sym("a", F, ("B", "S", 8)), _const("w", _w((8, 4)))])[0] == [["B", "S", "4"]]
    # T5's position bias with its lengths computed from the inputs' shapes (as the fused T5 does)
    extra = [helper.make_node("Shape", ["q_in"], ["qs"], start=1, end=2), helper.make_node("Squeeze", ["qs"], ["q"]),
             helper.make_node("Shape", ["k_in"], ["ks"], start=1, end=2), helper.make_node("Squeeze", ["ks"], ["k"])]
    ins = [_const("table", _w((32, 4))), _sym("q_in", F, ("B", "S", 8)), _sym("k_in", F, ("B", "M", 8))]
    model = _model("RelativePositionBias", ins, 1, extra_nodes=extra)
    model.graph.node[-1].input[1:] = ["q", "k"]
    assert shapeinfer.infer(model).shape_strs("y0") == ["1", "4", "S", "M"]
    with pytest.raises(shapeinfer.ShapeInferenceError, match="not a multiple of 2"):
        shapeinfer.infer(_model("BiasSplitGelu", [_sym("x", F, ("B", "S", 63)), _const("b", _w(63))], 1))


# --------------------------------------------------------------------------- NCHWc layout


@pytest.mark.parametrize("name", ["cnn_classic.onnx", "segformer_classic.onnx", "vit_torchvision_dynamo.onnx"])
def test_models_saved_at_ort_enable_all_carry_nchwc_ops(name, tmp_path):
    """onnxruntime's ORT_ENABLE_ALL rewrites convolutions into its blocked layout (domain
    com.microsoft.nchwc, block size the machine's): the saved model, made here on this machine,
    is judged like a corpus model -- every tensor against onnxruntime at the corpus bindings."""
    from tests import corpus

    entry = next(e for e in corpus.entries() if e["file"] == name)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.optimized_model_filepath = str(tmp_path / name)
    opts.log_severity_level = 4
    ort.InferenceSession(f"{entry['dir']}/{name}", opts, providers=["CPUExecutionProvider"])
    import onnx

    saved = onnx.load(str(tmp_path / name))
    if not any(n.domain == "com.microsoft.nchwc" for n in saved.graph.node):
        pytest.skip("this machine's onnxruntime made no NCHWc op")  # (no AVX: no blocked layout)
    r = corpus.verify(dict(entry, dir=str(tmp_path)), False)
    assert not r["skipped"] and r["wrong"] == 0, r["details"][:5]
    # what stays unknown: only the blocked channel counts that are not a multiple of 16
    assert r["in_input_dims"] >= r["tensors"] - 3, r["unknown_names"]


def test_an_annotated_fused_model_quantizes_without_a_default_type(tmp_path, monkeypatch):
    """onnxruntime's quantizer reads value_info types; on a fused model onnx's inference gives
    none for the contrib ops' outputs and quantize_dynamic stops ("Unable to find data type").
    shapeinfer's annotated model carries them: it quantizes as it is, and the result's every
    tensor is in the inputs' dims."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from tests import corpus

    entry = next(e for e in corpus.entries() if e["file"] == "bert_fused.onnx")
    entry = dict(entry, dir=os.path.abspath(entry["dir"]))
    monkeypatch.chdir(tmp_path)  # the quantizer leaves its temporary model files in the cwd
    plain = str(tmp_path / "plain_int8.onnx")
    with pytest.raises(RuntimeError, match="Unable to find data type"):
        quantize_dynamic(f"{entry['dir']}/bert_fused.onnx", plain, weight_type=QuantType.QInt8)
    annotated = str(tmp_path / "annotated.onnx")
    onnx.save(shapeinfer.infer_shapes(onnx.load(f"{entry['dir']}/bert_fused.onnx")), annotated)
    quantize_dynamic(annotated, str(tmp_path / "bert_fused_int8.onnx"), weight_type=QuantType.QInt8)
    r = corpus.verify(dict(entry, dir=str(tmp_path), file="bert_fused_int8.onnx"), False)
    assert r["runs"] and r["wrong"] == 0 and r["in_input_dims"] == r["tensors"], r["unknown_names"]
