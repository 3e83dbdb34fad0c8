"""Every op with a MAC rule counts its fused and quantized twins the same, and every compute op
without one is listed as not counted -- a total is never silently low.

- For each twin with a rule (FusedGemm, QGemm, MatMulInteger, QAttention, ...), a model built
  with onnx.helper has the MACs of its base op on the same shapes (FusedGemm == Gemm, QAttention
  == Attention's projection + attention); onnxruntime runs the model where its CPU provider has
  the kernel, so the test model is a valid one.
- Generated: every op costs/formulas.py counts has such a model with MACs > 0; every schema of
  the installed onnxruntime and onnx in the counted domains whose name says MatMul, Gemm, Conv,
  Attention, Einsum, LSTM, GRU or RNN is counted by a rule, or listed as not counted, or known
  to do no multiply-accumulates -- a twin onnxruntime adds without a decision here fails it.
"""

import json
import re

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from shapeinfer.costs import cost
from shapeinfer.costs.formulas import (COMPUTE_WITHOUT_RULE, CONTRACTION_NAME, COUNTED_DOMAINS, MAC_RULES, NO_MACS,
                                       NO_RULE, OTHER_DOMAIN, SUBGRAPHS)
from shapeinfer.symbolic import evaluate
from shapeinfer_cli.main import cli

MS = "com.microsoft"
F, U8, I8 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8
BINDING = {"B": 2, "S": 3, "H": 5, "W": 4, "M": 3}
K, N = 16, 8


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _scalar(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


class Case:
    """A one-node model (or a few nodes) and the feeds to run it at BINDING."""

    def __init__(self, nodes, inputs, inits, outputs=("y",), runs=True):
        self.nodes, self.inputs, self.inits, self.outputs, self.runs = nodes, inputs, inits, outputs, runs

    def model(self):
        g = helper.make_graph(self.nodes, "g",
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in self.inputs],
                              [helper.make_empty_tensor_value_info(o) for o in self.outputs],
                              self.inits)
        domains = {n.domain for n in self.nodes if n.domain}
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]
                                 + [helper.make_opsetid(d, 1) for d in sorted(domains)])

    def feeds(self):
        rng = np.random.default_rng(0)
        out = {}
        for name, t, shape in self.inputs:
            dims = [BINDING[d] if isinstance(d, str) else d for d in shape]
            np_type = helper.tensor_dtype_to_np_dtype(t)
            out[name] = (rng.integers(0, 4, dims).astype(np_type) if np.issubdtype(np_type, np.integer)
                         else rng.standard_normal(dims).astype(np_type))
        return out


def _node(op, inputs, outputs=("y",), domain="", **attrs):
    return helper.make_node(op, list(inputs), list(outputs), domain=domain, **attrs)


# ------------------------------------------------------------------------------ the models

def _matmul():
    return Case([_node("MatMul", ["a", "w"])], [("a", F, ["B", "S", K])], [_init("w", np.ones((K, N), np.float32))])


def _gemm(op="Gemm", domain="", trans_b=0):
    w = np.ones((N, K) if trans_b else (K, N), np.float32)
    attrs = {"activation": "Relu"} if op == "FusedGemm" else {}
    return Case([_node(op, ["a", "w", "c"], domain=domain, transB=trans_b, **attrs)], [("a", F, ["M", K])],
                [_init("w", w), _init("c", np.zeros(N, np.float32))])


def _qgemm():
    return Case([_node("QGemm", ["a", "as", "az", "w", "ws", "wz"], domain=MS, transB=1)], [("a", U8, ["M", K])],
                [_scalar("as", 0.1, np.float32), _scalar("az", 1, np.uint8), _init("w", np.ones((N, K), np.uint8)),
                 _scalar("ws", 0.2, np.float32), _scalar("wz", 0, np.uint8)])


def _gemm_float8():
    return Case([_node("GemmFloat8", ["a", "w"], domain=MS, transB=1, dtype=F)], [("a", F, ["M", K])],
                [_init("w", np.ones((N, K), np.float32))], runs=False)


def _like_matmul(op, domain=MS, a_type=F, w=None, extra=(), runs=True, **attrs):
    w = np.ones((K, N), np.float32) if w is None else w
    names = ["a", "w"] + [e.name for e in extra]
    return Case([_node(op, names, domain=domain, **attrs)], [("a", a_type, ["B", "S", K])], [_init("w", w), *extra],
                runs=runs)


def _fused_matmul(op):
    """A stored [B, K, S]: transA reads it as [B, S, K] -- MatMul's MACs on [B, S, K] x [K, N]."""
    return Case([_node(op, ["a", "w"], domain=MS, transA=1)], [("a", F, ["B", K, "S"])],
                [_init("w", np.ones((K, N), np.float32))], runs=op != "FusedMatMulActivation")


def _qlinear_matmul():
    return Case([_node("QLinearMatMul", ["a", "as", "az", "w", "ws", "wz", "ys", "yz"])], [("a", U8, ["B", "S", K])],
                [_scalar("as", 0.1, np.float32), _scalar("az", 1, np.uint8), _init("w", np.ones((K, N), np.uint8)),
                 _scalar("ws", 0.2, np.float32), _scalar("wz", 0, np.uint8), _scalar("ys", 0.5, np.float32),
                 _scalar("yz", 0, np.uint8)])


def _qordered_matmul():
    return Case([_node("QOrderedMatMul", ["a", "as", "w", "ws", "ys"], domain=MS, order_A=1, order_B=0, order_Y=1)],
                [("a", I8, ["B", "S", K])],
                [_scalar("as", 0.1, np.float32), _init("w", np.ones((K, N), np.int8)), _scalar("ws", 0.2, np.float32),
                 _scalar("ys", 0.5, np.float32)], runs=False)


def _nbits(op="MatMulNBits", runs=True, **attrs):
    block = 16
    packed = np.zeros((N, K // block, block // 2), np.uint8)
    return Case([_node(op, ["a", "w", "sc"], domain=MS, K=K, N=N, bits=4, block_size=block, **attrs)],
                [("a", F, ["B", "S", K])], [_init("w", packed), _init("sc", np.ones(N * K // block, np.float32))],
                runs=runs)


def _bnb4():
    block = 16
    return Case([_node("MatMulBnb4", ["a", "w", "absmax"], domain=MS, K=K, N=N, block_size=block, quant_type=1)],
                [("a", F, ["B", "S", K])], [_init("w", np.zeros((N * K + 1) // 2, np.uint8)),
                                            _init("absmax", np.ones(N * K // block, np.float32))])


def _packed():
    return Case([_node("MatMulPacked", ["a", "w"], domain=MS, K=K, N=N)], [("a", F, ["B", "S", K])],
                [_init("w", np.zeros((N, K // 2), np.uint8))], runs=False)


def _nbits_mlp():
    block = 16
    w = np.zeros((N, K // block, block // 2), np.uint8)
    sc = np.ones(N * K // block, np.float32)
    return Case([_node("MatMulNBitsMlp", ["a", "", "", "gw", "gs", "", "uw", "us"], domain=MS, K=K, N=N, bits=4,
                       block_size=block, activation="silu")], [("a", F, ["B", "S", K])],
                [_init("gw", w), _init("gs", sc), _init("uw", w), _init("us", sc)], runs=False)


def _nbits_qkv():
    block, nkv = 16, 4
    def packed(n):
        return np.zeros((n, K // block, block // 2), np.uint8), np.ones(n * K // block, np.float32)
    (qw, qs), (kw, ks), (vw, vs) = packed(N), packed(nkv), packed(nkv)
    return Case([_node("MatMulNBitsQkv", ["a", "", "norm", "qw", "qs", "", "kw", "ks", "", "vw", "vs"],
                       ["q", "k", "v"], domain=MS, K=K, Nq=N, Nkv=nkv, bits=4, block_size=block)],
                [("a", F, ["B", "S", K])],
                [_init("norm", np.ones(K, np.float32)), _init("qw", qw), _init("qs", qs), _init("kw", kw),
                 _init("ks", ks), _init("vw", vw), _init("vs", vs)], outputs=("q", "k", "v"), runs=False)


def _three_matmuls(n_each):
    nodes, inits = [], []
    for k, n in enumerate(n_each):
        nodes.append(_node("MatMul", ["a", f"w{k}"], [f"y{k}"]))
        inits.append(_init(f"w{k}", np.ones((K, n), np.float32)))
    return Case(nodes, [("a", F, ["B", "S", K])], inits, outputs=tuple(f"y{k}" for k in range(len(n_each))))


def _block_fp(op, w):
    return Case([_node(op, ["a", "w", "sc"], domain=MS, block_size=16)], [("a", F, ["B", "S", K])],
                [_init("w", w), _init("sc", np.ones((N, 1), np.float32))], runs=False)


C_IN, C_OUT = 4, 6


def _conv(op="Conv", domain="", x_type=F, w_type=np.float32, spatial=("H", "W"), **attrs):
    w = np.ones((C_OUT, C_IN, 3, 3), w_type)
    return Case([_node(op, ["x", "w"], domain=domain, pads=[1, 1, 1, 1], **attrs)],
                [("x", x_type, ["B", C_IN, *spatial])], [_init("w", w)])


def _qlinear_conv(domain=""):
    return Case([_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], domain=domain,
                       pads=[1, 1, 1, 1])], [("x", U8, ["B", C_IN, "H", "W"])],
                [_scalar("xs", 0.1, np.float32), _scalar("xz", 1, np.uint8),
                 _init("w", np.ones((C_OUT, C_IN, 3, 3), np.uint8)), _scalar("ws", 0.2, np.float32),
                 _scalar("wz", 0, np.uint8), _scalar("ys", 0.5, np.float32), _scalar("yz", 0, np.uint8)],
                runs=domain == "")


def _nhwc_conv(op):
    return Case([_node(op, ["x", "w"], domain=MS, pads=[1, 1, 1, 1])], [("x", F, ["B", "H", "W", C_IN])],
                [_init("w", np.ones((C_OUT, C_IN, 3, 3), np.float32))], runs=False)


def _deform_conv():
    """(onnx infers DeformConv's output only where the spatial dims are static)"""
    return Case([_node("DeformConv", ["x", "w", "off"], pads=[1, 1, 1, 1])],
                [("x", F, ["B", C_IN, 5, 4]), ("off", F, ["B", 18, 5, 4])],
                [_init("w", np.ones((C_OUT, C_IN, 3, 3), np.float32))])


def _conv_transpose(op="ConvTranspose", domain=""):
    pads = [_init("pads", np.zeros(4, np.int64))] if domain else []  # ConvTransposeWithDynamicPads: an input
    return Case([_node(op, ["x", "w"] + [p.name for p in pads], domain=domain, strides=[2, 2])],
                [("x", F, ["B", C_IN, "H", "W"])], [_init("w", np.ones((C_IN, C_OUT, 3, 3), np.float32)), *pads])


HIDDEN, HEADS = 16, 2


def _ms_attention():
    return Case([_node("Attention", ["x", "w", "b"], domain=MS, num_heads=HEADS)], [("x", F, ["B", "S", HIDDEN])],
                [_init("w", np.ones((HIDDEN, 3 * HIDDEN), np.float32) / 64),
                 _init("b", np.zeros(3 * HIDDEN, np.float32))])


def _q_attention():
    return Case([_node("QAttention", ["x", "w", "b", "xs", "ws", "", "xz", "wz"], domain=MS, num_heads=HEADS)],
                [("x", U8, ["B", "S", HIDDEN])],
                [_init("w", np.ones((HIDDEN, 3 * HIDDEN), np.uint8)), _init("b", np.zeros(3 * HIDDEN, np.float32)),
                 _scalar("xs", 0.01, np.float32), _scalar("ws", 0.01, np.float32), _scalar("xz", 1, np.uint8),
                 _scalar("wz", 0, np.uint8)])


def _mha():
    return Case([_node("MultiHeadAttention", ["q", "k", "v"], domain=MS, num_heads=HEADS)],
                [("q", F, ["B", "S", HIDDEN]), ("k", F, ["B", "M", HIDDEN]), ("v", F, ["B", "M", HIDDEN])], [])


def _gqa():
    return Case([_node("GroupQueryAttention", ["q", "k", "v", "", "", "lens", "total"], ["y", "pk", "pv"],
                       domain=MS, num_heads=HEADS, kv_num_heads=1)],
                [("q", F, [1, 3, HIDDEN]), ("k", F, [1, 3, HIDDEN // HEADS]), ("v", F, [1, 3, HIDDEN // HEADS])],
                [_init("lens", np.array([2], np.int32)), _scalar("total", 3, np.int32)], outputs=("y", "pk", "pv"))


def _onnx_attention():
    return Case([_node("Attention", ["q", "k", "v"])],
                [("q", F, ["B", HEADS, "S", 8]), ("k", F, ["B", HEADS, "M", 8]), ("v", F, ["B", HEADS, "M", 8])], [])


def _einsum():
    return Case([_node("Einsum", ["a", "w"], equation="bsk,kn->bsn")], [("a", F, ["B", "S", K])],
                [_init("w", np.ones((K, N), np.float32))])


SEQ_HIDDEN = 5


def _recurrent(op, gates):
    w = np.ones((1, gates * SEQ_HIDDEN, K), np.float32) / 100
    r = np.ones((1, gates * SEQ_HIDDEN, SEQ_HIDDEN), np.float32) / 100
    return Case([_node(op, ["x", "w", "r"], hidden_size=SEQ_HIDDEN)], [("x", F, ["S", "B", K])],
                [_init("w", w), _init("r", r)])


def _dq_lstm():
    """DynamicQuantizeLSTM: LSTM's W and R transposed ([D, I, 4H], [D, H, 4H]) and int8."""
    h4 = 4 * SEQ_HIDDEN
    return Case([_node("DynamicQuantizeLSTM", ["x", "w", "r", "", "", "", "", "", "ws", "wz", "rs", "rz"],
                       domain=MS, hidden_size=SEQ_HIDDEN)], [("x", F, ["S", "B", K])],
                [_init("w", np.ones((1, K, h4), np.int8)), _init("r", np.ones((1, SEQ_HIDDEN, h4), np.int8)),
                 _init("ws", np.full(1, 0.01, np.float32)), _init("wz", np.zeros(1, np.int8)),
                 _init("rs", np.full(1, 0.01, np.float32)), _init("rz", np.zeros(1, np.int8))])


# (domain, op) -> (the twin's model, the base model whose MACs it has on the same shapes)
TWINS = {
    ("", "MatMul"): (_matmul, None),
    ("", "MatMulInteger"): (lambda: _like_matmul("MatMulInteger", "", U8, np.ones((K, N), np.uint8)), _matmul),
    ("", "QLinearMatMul"): (_qlinear_matmul, _matmul),
    ("", "Gemm"): (_gemm, None),
    ("", "Conv"): (_conv, None),
    ("", "ConvInteger"): (lambda: _conv("ConvInteger", x_type=U8, w_type=np.uint8), _conv),
    ("", "QLinearConv"): (_qlinear_conv, _conv),
    ("", "DeformConv"): (_deform_conv, lambda: _conv(spatial=(5, 4))),
    ("", "ConvTranspose"): (_conv_transpose, None),
    ("", "Einsum"): (_einsum, _matmul),
    ("", "Attention"): (_onnx_attention, None),
    ("", "RNN"): (lambda: _recurrent("RNN", 1), None),
    ("", "GRU"): (lambda: _recurrent("GRU", 3), None),
    ("", "LSTM"): (lambda: _recurrent("LSTM", 4), None),
    (MS, "FusedMatMul"): (lambda: _fused_matmul("FusedMatMul"), _matmul),
    (MS, "FusedMatMulActivation"): (lambda: _fused_matmul("FusedMatMulActivation"), _matmul),
    (MS, "TransposeMatMul"): (lambda: _fused_matmul("TransposeMatMul"), _matmul),
    (MS, "MatMulIntegerToFloat"): (lambda: _like_matmul("MatMulIntegerToFloat", MS, U8, np.ones((K, N), np.int8),
                                                        [_scalar("as", 0.1, np.float32),
                                                         _scalar("ws", 0.2, np.float32)]), _matmul),
    (MS, "MatMulInteger16"): (lambda: _like_matmul("MatMulInteger16", MS, TensorProto.INT16,
                                                   np.ones((K, N), np.int16)), _matmul),
    (MS, "DynamicQuantizeMatMul"): (lambda: _like_matmul("DynamicQuantizeMatMul", MS, F, np.ones((K, N), np.int8),
                                                         [_scalar("ws", 0.2, np.float32)]), _matmul),
    (MS, "QOrderedMatMul"): (_qordered_matmul, _matmul),
    (MS, "GemmFastGelu"): (lambda: _like_matmul("GemmFastGelu", runs=False), _matmul),
    (MS, "MatMulNBits"): (_nbits, _matmul),
    (MS, "MatMulBnb4"): (_bnb4, _matmul),
    (MS, "MatMulPacked"): (_packed, _matmul),
    (MS, "MatMulNBitsMlp"): (_nbits_mlp, lambda: _three_matmuls([N, N])),
    (MS, "MatMulNBitsQkv"): (_nbits_qkv, lambda: _three_matmuls([N, 4, 4])),
    (MS, "MatMulBlockQuantizedFp8Weight"): (
        lambda: _block_fp("MatMulBlockQuantizedFp8Weight", np.zeros((N, K), np.uint8)), _matmul),
    (MS, "MatMulBlockQuantizedFp4Weight"): (
        lambda: _block_fp("MatMulBlockQuantizedFp4Weight", np.zeros((N, K // 2), np.uint8)), _matmul),
    (MS, "FusedGemm"): (lambda: _gemm("FusedGemm", MS, trans_b=1), _gemm),
    (MS, "QGemm"): (_qgemm, _gemm),
    (MS, "GemmFloat8"): (_gemm_float8, _gemm),
    (MS, "FusedConv"): (lambda: _conv("FusedConv", MS, activation="Relu"), _conv),
    (MS, "NhwcConv"): (lambda: _nhwc_conv("NhwcConv"), _conv),
    (MS, "NhwcFusedConv"): (lambda: _nhwc_conv("NhwcFusedConv"), _conv),
    (MS, "QLinearConv"): (lambda: _qlinear_conv(MS), _conv),
    (MS, "ConvTransposeWithDynamicPads"): (lambda: _conv_transpose("ConvTransposeWithDynamicPads", MS),
                                           _conv_transpose),
    (MS, "Attention"): (_ms_attention, None),
    (MS, "QAttention"): (_q_attention, _ms_attention),
    (MS, "MultiHeadAttention"): (_mha, _onnx_attention),
    (MS, "GroupQueryAttention"): (_gqa, None),
    (MS, "DynamicQuantizeLSTM"): (_dq_lstm, lambda: _recurrent("LSTM", 4)),
}


def _macs(case):
    report = cost(case.model())
    assert not report.not_counted, report.not_counted
    return report.macs


@pytest.mark.parametrize("key", list(TWINS), ids=lambda k: ".".join(filter(None, k)))
def test_a_twin_has_the_macs_of_its_base_op_on_the_same_shapes(key):
    twin, base = TWINS[key]
    case = twin()
    macs = _macs(case)
    assert macs is not None and evaluate(macs, BINDING) > 0
    if base is not None:
        assert macs == _macs(base()), (macs, _macs(base()))
    bound = cost(case.model(), bind={s: v for s, v in BINDING.items() if s in cost(case.model()).symbols}).macs
    assert bound == evaluate(macs, BINDING)
    if case.runs:  # the model is one onnxruntime runs (where its CPU provider has the kernel)
        ort = pytest.importorskip("onnxruntime")
        sess = ort.InferenceSession(case.model().SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, case.feeds())


@pytest.mark.parametrize("text, binding, macs", [
    ("RNN", {"S": 3, "B": 2}, 3 * 2 * (1 * SEQ_HIDDEN * K + SEQ_HIDDEN * SEQ_HIDDEN)),
    ("GRU", {"S": 3, "B": 2}, 3 * 2 * 3 * (SEQ_HIDDEN * K + SEQ_HIDDEN * SEQ_HIDDEN)),
    ("LSTM", {"S": 3, "B": 2}, 3 * 2 * 4 * (SEQ_HIDDEN * K + SEQ_HIDDEN * SEQ_HIDDEN)),
])
def test_recurrent_macs_by_definition(text, binding, macs):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[text]
    assert evaluate(cost(_recurrent(text, gates).model()).macs, binding) == macs


def test_attention_twins_by_definition():
    b, s, m = BINDING["B"], BINDING["S"], BINDING["M"]
    projection = b * s * HIDDEN * 3 * HIDDEN
    assert evaluate(_macs(_q_attention()), BINDING) == projection + b * s * s * 2 * HIDDEN
    assert evaluate(_macs(_mha()), BINDING) == b * s * m * 2 * HIDDEN
    assert evaluate(_macs(_onnx_attention()), BINDING) == b * HEADS * s * m * 16
    assert _macs(_gqa()) == 1 * 3 * 3 * 2 * HIDDEN  # the present cache holds 3 positions


# ------------------------------------------------------------------------------ generated

def _schemas():
    """(domain, op) of every schema the installed onnx and onnxruntime define."""
    out = {(s.domain, s.name) for s in onnx.defs.get_all_schemas_with_history()}
    ort = pytest.importorskip("onnxruntime")
    out |= {(s.domain, s.name) for s in ort.capi.onnxruntime_pybind11_state.get_all_operator_schema()}
    return sorted(out)


def _listed(domain, op):
    """The report's not-counted entry for one node of this op (inputs of unknown shape, as many
    as its schema requires where onnx has one)."""
    n_in = 1
    if not domain:
        try:
            n_in = max(1, onnx.defs.get_schema(op, 21, "").min_input)
        except onnx.defs.SchemaError:
            pass
    extra = [f"x{k}" for k in range(1, n_in)]  # (of no element type: any the op takes)
    node = _node(op, ["x"] + extra, domain=domain)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, None)]
                          + [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in extra],
                          [helper.make_tensor_value_info("y", F, None)])
    opsets = [helper.make_opsetid("", 21)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return [(n.op, n.why) for n in cost(helper.make_model(g, opset_imports=opsets)).not_counted]


def test_every_op_formulas_count_has_a_model_with_macs():
    assert set(MAC_RULES) <= set(TWINS), sorted(set(MAC_RULES) - set(TWINS))
    assert set(TWINS) <= set(MAC_RULES), sorted(set(TWINS) - set(MAC_RULES))


def test_every_contraction_schema_is_counted_or_listed_as_not_counted():
    """An op of the counted domains whose name says it contracts has a rule, is listed as not
    counted, or is known to do no multiply-accumulates: a new twin needs a decision here."""
    undecided = []
    for domain, op in _schemas():
        if not CONTRACTION_NAME.search(op):
            continue
        key = ("" if domain == "ai.onnx" else domain, op)
        if key[0] not in COUNTED_DOMAINS:
            assert _listed(*key) == [(f"{key[0]}.{op}", OTHER_DOMAIN)]
            continue
        if key in MAC_RULES or key in NO_MACS:
            continue
        if key in COMPUTE_WITHOUT_RULE:
            assert _listed(*key) == [(op if not key[0] else f"{key[0]}.{op}", NO_RULE)]
            continue
        undecided.append(key)
    assert not undecided, f"contraction ops with neither a MAC rule nor a place in the lists: {undecided}"


def test_every_listed_compute_op_is_reported_as_not_counted():
    for domain, op in sorted(COMPUTE_WITHOUT_RULE):
        assert _listed(domain, op) == [(op if not domain else f"{domain}.{op}", NO_RULE)]
    for domain, op in sorted(NO_MACS):
        assert _listed(domain, op) == []
    assert not set(COMPUTE_WITHOUT_RULE) & set(MAC_RULES) and not set(NO_MACS) & set(MAC_RULES)


@pytest.mark.parametrize("domain, op, why", [
    (MS, "FutureFusedMatMul", NO_RULE),       # a twin onnxruntime adds later: listed by its name
    (MS, "QFutureAttention", NO_RULE),
    ("", "ConvFuture", NO_RULE),
    (MS, "FutureElementwise", None),         # any other op: one FLOP per output element, counted
    ("com.example", "MatMul", OTHER_DOMAIN),
    ("ai.onnx.ml", "TreeEnsemble", OTHER_DOMAIN),
])
def test_an_op_no_list_knows_is_listed_when_its_name_says_it_contracts(domain, op, why):
    assert _listed(domain, op) == ([] if why is None else [(f"{domain}.{op}" if domain else op, why)])


def _not_counted_model():
    nodes = [_node("DecoderMaskedMultiHeadAttention", ["q", "k", "v"], [f"d{k}"], domain=MS, num_heads=HEADS,
                   name=f"dmmha{k}") for k in range(3)]
    nodes.append(_node("MyOp", ["q"], ["e"], domain="com.example", name="custom"))
    body = helper.make_graph([_node("Identity", ["q"], ["t"])], "body", [], [helper.make_tensor_value_info("t", F, None)])
    nodes.append(helper.make_node("If", ["c"], ["i"], name="branch", then_branch=body, else_branch=body))
    nodes.append(_node("MatMul", ["q", "w"], ["m"], name="counted"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, ["B", "S", HIDDEN]) for n in "qkv"]
                          + [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info(o, F, None) for o in ("d0", "d1", "d2", "e", "i", "m")],
                          [_init("w", np.ones((HIDDEN, 4), np.float32))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1),
                                               helper.make_opsetid("com.example", 1)])


def test_the_report_says_which_nodes_were_not_counted_in_text_and_json(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_not_counted_model(), path)
    report = cost(str(path))
    assert evaluate(report.macs, {"B": 2, "S": 3}) == 2 * 3 * HIDDEN * 4  # the MatMul alone
    r = CliRunner().invoke(cli, ["cost", str(path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert "not counted: 3 nodes (com.microsoft.DecoderMaskedMultiHeadAttention x3): no MAC rule" in lines
    assert "not counted: 1 node (com.example.MyOp x1): an op of another domain" in lines
    assert "not counted: 1 node (If x1): the cost of its subgraphs" in lines
    assert any(re.match(r"  MACs   = .*not counting 5 nodes", line) for line in lines)
    r = CliRunner().invoke(cli, ["cost", str(path), "--json"])
    data = json.loads(r.output)
    assert data["not_counted"] == [
        {"name": f"dmmha{k}", "op": "com.microsoft.DecoderMaskedMultiHeadAttention", "why": NO_RULE} for k in range(3)
    ] + [{"name": "custom", "op": "com.example.MyOp", "why": OTHER_DOMAIN},
         {"name": "branch", "op": "If", "why": SUBGRAPHS}]
    assert {n["name"]: (n["macs"], n["flops"]) for n in data["nodes"]}["dmmha0"] == (0, 0)
