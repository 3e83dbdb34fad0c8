"""Rules for onnxruntime's contrib ops (com.microsoft) and the quantization ops, against
onnxruntime's CPU kernels.

Each case is a small model whose graph inputs have symbolic dims (weights are initializers).
shapeinfer infers it once; onnxruntime then runs it at several bindings of the symbols -- 0 and
1 included where onnxruntime runs them -- and every inferred dim that is not a fresh symbol must
evaluate to the size onnxruntime produced, every dtype must be the one it produced, and every
dim a case does not list as data-dependent must be an expression over the input symbols (a
rule that left everything unknown would fail here, not pass).

Ops onnxruntime has no CPU kernel for (BiasAdd, BiasSoftmax, packed QKV/KV MultiHeadAttention)
and the com.microsoft spellings of the normalizations that onnxruntime 1.32 does not register
are checked against their documented shapes at the end.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.symbolic import to_str
from tests.helpers import evaluate_shape

ort = pytest.importorskip("onnxruntime")

MS = "com.microsoft"
F, I32, I64, U8, I8 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8, TensorProto.INT8
RNG = np.random.default_rng(0)


@dataclass
class Case:
    nodes: list
    inputs: list  # (name, elem type, dims: ints and symbol names, fill: None or fn(shape, sizes) -> array)
    outputs: list
    bindings: list  # {symbol: size}
    inits: list = field(default_factory=list)
    fresh: dict = field(default_factory=dict)  # output -> dim indices allowed to be fresh
    may_refuse_zero: bool = True  # onnxruntime may refuse a binding with a 0 (counted, not failed)


def node(op, inputs, outputs, domain=MS, **attrs):
    return helper.make_node(op, inputs, outputs, domain=domain, **attrs)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def rand(*shape, dtype=np.float32):
    if np.dtype(dtype) == np.uint8:
        return RNG.integers(0, 255, shape).astype(np.uint8)
    if np.dtype(dtype) == np.int8:
        return RNG.integers(-100, 100, shape).astype(np.int8)
    return RNG.standard_normal(shape).astype(dtype)


SCALE = np.array(0.05, np.float32)
ZP_U8 = np.array(3, np.uint8)
ZP_I8 = np.array(-2, np.int8)


def build(case: Case) -> onnx.ModelProto:
    graph_inputs = [helper.make_tensor_value_info(n, t, list(dims)) for n, t, dims, _ in case.inputs]
    graph = helper.make_graph(case.nodes, "g", graph_inputs, [helper.make_empty_tensor_value_info(o) for o in case.outputs],
                              case.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)], ir_version=10)


NP_OF = {F: np.float32, I32: np.int32, I64: np.int64, U8: np.uint8, I8: np.int8, TensorProto.FLOAT16: np.float16}


def feeds_for(case: Case, sizes: dict) -> dict:
    feeds = {}
    for name, elem, dims, fill in case.inputs:
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in dims)
        if fill is not None:
            feeds[name] = fill(shape, sizes)
        elif elem in (I32, I64):
            feeds[name] = np.zeros(shape, NP_OF[elem])
        else:
            feeds[name] = rand(*shape, dtype=NP_OF[elem])
    return feeds


def check_case(case: Case) -> int:
    """Infer, then compare with onnxruntime at every binding; returns the dims compared."""
    model = build(case)
    result = shapeinfer.infer(model)
    for out in case.outputs:
        fact = result.fact(out)
        assert fact is not None and fact.shape is not None, (out, "rank unknown")
        allowed = case.fresh.get(out, ())
        for k, d in enumerate(fact.shape):
            if k not in allowed:
                assert not result.is_unknown_dim(d), (out, k, result.shape_strs(out), "expected a symbolic dim")
        # declare the inferred types: onnxruntime checks them against its own inference
        vi = next(o for o in model.graph.output if o.name == out)
        vi.type.tensor_type.elem_type = fact.dtype
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    compared = ran = 0
    for sizes in case.bindings:
        try:
            values = sess.run(case.outputs, feeds_for(case, sizes))
        except Exception:  # onnxruntime refusing a binding
            if case.may_refuse_zero and 0 in sizes.values():
                continue
            raise
        ran += 1
        for out, arr in zip(case.outputs, values):
            dims = result.shape(out)
            assert len(dims) == arr.ndim, (out, result.shape_strs(out), arr.shape, sizes)
            assert NP_OF.get(result.fact(out).dtype) == arr.dtype, (out, result.fact(out).dtype, arr.dtype)
            for k, (d, size) in enumerate(zip(dims, arr.shape)):
                if result.is_unknown_dim(d):
                    continue
                assert evaluate_shape([d], sizes) == (size,), (out, k, to_str(d), arr.shape, sizes)
                compared += 1
    assert ran > 0, "onnxruntime ran no binding"
    return compared


def grid(**choices):
    """Every combination of the given sizes, as bindings."""
    names = list(choices)
    return [dict(zip(names, values)) for values in itertools.product(*(choices[n] for n in names))]


CASES: dict = {}


def case(name):
    def register(fn):
        for suffix, c in fn():
            CASES[name + suffix] = c
        return fn
    return register


# -- normalizations -----------------------------------------------------------------------------

@case("skip_layer_norm")
def _skip_layer_norm():
    H = 8
    for op, rank, skip_kind, bias in itertools.product(
            ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization"), (2, 3), ("same", "bcast"), (False, True)):
        if rank == 2 and skip_kind == "bcast":
            continue  # a 2-D input takes a 2-D skip only
        dims = ["B", "S", H] if rank == 3 else ["T", H]
        skip = dims if skip_kind == "same" else dims[1:]
        beta = op == "SkipLayerNormalization"
        names = ["x", "skip", "gamma"] + (["beta"] if beta else []) + (["bias"] if bias else [])
        if not beta and bias:
            names = ["x", "skip", "gamma", "bias"]
        inits = [init("gamma", rand(H)), init("beta", rand(H)), init("bias", rand(H))]
        n = node(op, names, ["y", "mean", "inv", "sum"], epsilon=1e-5)
        sizes = grid(B=[0, 1, 3], S=[1, 4]) if rank == 3 else grid(T=[0, 1, 5])
        yield f"_{op}_{rank}d_{skip_kind}_bias{int(bias)}", Case(
            [n], [("x", F, dims, None), ("skip", F, skip, None)], ["y", "mean", "inv", "sum"], sizes,
            [i for i in inits if i.name in names])


@case("simplified_layer_norm_default_domain")
def _simplified():
    for axis in (-1, -2, 1):
        yield f"_axis{axis}", Case(
            [node("SimplifiedLayerNormalization", ["x", "scale"], ["y", "inv"], domain="", axis=axis, epsilon=1e-5)],
            [("x", F, ["B", "S", 8], None)], ["y", "inv"], grid(B=[0, 1, 2], S=[1, 3]),
            [init("scale", rand(*([8] if axis == -1 else [1, 8])))])


# -- activations and fused elementwise ----------------------------------------------------------

@case("activations")
def _activations():
    for op, extra in (("Gelu", []), ("QuickGelu", []), ("FastGelu", []), ("FastGelu", ["bias"]), ("BiasGelu", ["bias"])):
        yield f"_{op}_{len(extra)}", Case(
            [node(op, ["x"] + extra, ["y"])], [("x", F, ["B", "S", 8], None)], ["y"], grid(B=[0, 1, 2], S=[0, 1, 5]),
            [init("bias", rand(8))])


@case("rotary_embedding")
def _rotary():
    def positions(shape, sizes):
        return np.zeros(shape, np.int64)
    for layout in ("bsh", "bnsh"):
        dims = ["B", "S", 16] if layout == "bsh" else ["B", 2, "S", 8]
        attrs = {"num_heads": 2} if layout == "bsh" else {}
        yield f"_{layout}", Case(
            [node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], **attrs)],
            [("x", F, dims, None), ("pos", I64, ["B", "S"], positions)], ["y"], grid(B=[1, 2], S=[0, 1, 3]),
            [init("cos", rand(16, 4)), init("sin", rand(16, 4))])


# -- MatMul, Gemm, Conv ---------------------------------------------------------------------------

@case("fused_matmul")
def _fused_matmul():
    # (A dims, B dims, attrs) in the layout the flags describe
    combos = [
        (["B", "M", 4], [4, "N"], {}),
        (["B", 4, "M"], ["N", 4], {"transA": 1, "transB": 1}),
        ([4], [4, "N"], {"transA": 1}),
        (["B", "M", 4], [4], {"transB": 1}),
        (["M", "B", 4], ["B", 4, "N"], {"transBatchA": 1}),
        (["M", "B", 4], [4, "B", "N"], {"transBatchA": 1, "transBatchB": 1}),
        ([4, "B", "M"], ["B", "N", 4], {"transBatchA": 1, "transA": 1, "transB": 1}),
        (["C", "B", "M", 4], [1, "B", 4, "N"], {}),
        (["M", "C", "B", 4], [4, "C", "B", "N"], {"transBatchA": 1, "transBatchB": 1}),
    ]
    for k, (a, b, attrs) in enumerate(combos):
        yield f"_{k}", Case([node("FusedMatMul", ["a", "b"], ["y"], alpha=0.5, **attrs)],
                            [("a", F, a, None), ("b", F, b, None)], ["y"],
                            grid(B=[0, 1, 2], M=[1, 3], N=[0, 2], C=[1, 2]))


@case("fused_gemm")
def _fused_gemm():
    for ta, tb in itertools.product((0, 1), (0, 1)):
        a = ["K", "M"] if ta else ["M", "K"]
        b = ["N", "K"] if tb else ["K", "N"]
        yield f"_t{ta}{tb}", Case([node("FusedGemm", ["a", "b"], ["y"], transA=ta, transB=tb, activation="Relu")],
                                  [("a", F, a, None), ("b", F, b, None)], ["y"], grid(M=[0, 1, 3], K=[1, 4], N=[1, 2]))


CONV_ATTRS = [
    {"pads": [1, 2, 0, 1], "strides": [2, 1], "dilations": [1, 2]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 3]},
    {"auto_pad": "VALID"},
    {"pads": [1, 1, 1, 1], "group": 2},
]


def _conv_sizes():
    return grid(N=[0, 1, 2], H=[5, 7], W=[6, 9])


@case("fused_conv")
def _fused_conv():
    for k, attrs in enumerate(CONV_ATTRS):
        g = attrs.get("group", 1)
        yield f"_{k}", Case([node("FusedConv", ["x", "w", "bias"], ["y"], activation="Relu", **attrs)],
                            [("x", F, ["N", 4, "H", "W"], None)], ["y"], _conv_sizes(),
                            [init("w", rand(6, 4 // g, 3, 3)), init("bias", rand(6))])


@case("conv_integer")
def _conv_integer():
    for k, attrs in enumerate(CONV_ATTRS):
        g = attrs.get("group", 1)
        if g != 1:
            continue  # onnxruntime's ConvInteger takes no groups
        yield f"_{k}", Case([node("ConvInteger", ["x", "w", "xz"], ["y"], domain="", **attrs)],
                            [("x", U8, ["N", 4, "H", "W"], None)], ["y"], _conv_sizes(),
                            [init("w", rand(6, 4, 3, 3, dtype=np.uint8)), init("xz", ZP_U8)])


@case("qlinear_conv")
def _qlinear_conv():
    for (k, attrs), domain, channels_last in itertools.product(enumerate(CONV_ATTRS), ("", MS), (0, 1)):
        if domain == "" and channels_last:
            continue
        g = attrs.get("group", 1)
        extra = {"channels_last": 1} if channels_last else {}
        x = ["N", "H", "W", 4] if channels_last else ["N", 4, "H", "W"]
        yield f"_{k}_{domain or 'onnx'}_cl{channels_last}", Case(
            [node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], domain=domain, **attrs, **extra)],
            [("x", U8, x, None)], ["y"], _conv_sizes(),
            [init("w", rand(6, 4 // g, 3, 3, dtype=np.int8)), init("xs", SCALE), init("xz", ZP_U8), init("ws", SCALE),
             init("wz", np.array(0, np.int8)), init("ys", SCALE), init("yz", ZP_U8)])


# -- attention ------------------------------------------------------------------------------------

@case("attention")
def _attention():
    D, N = 8, 2
    for past, qkv, bias, n_out in itertools.product((False, True), (None, [8, 8, 4]), (True, False), (1, 2)):
        if past and (qkv or n_out == 1):
            continue  # onnxruntime needs k and v of one size, and a present output, with a past
        sizes_qkv = qkv or [D, D, D]
        total = sum(sizes_qkv)
        names = ["x", "w", "bias" if bias else "", "", "past" if past else ""]
        attrs = {"num_heads": N}
        if qkv:
            attrs["qkv_hidden_sizes"] = qkv
        inputs = [("x", F, ["B", "S", D], None)]
        if past:
            inputs.append(("past", F, [2, "B", N, "P", sizes_qkv[2] // N], None))
        outs = ["y", "present"][:n_out]
        yield f"_past{int(past)}_qkv{int(bool(qkv))}_bias{int(bias)}_out{n_out}", Case(
            [node("Attention", names, outs, **attrs)], inputs, outs, grid(B=[0, 1, 2], S=[0, 1, 3], P=[0, 1, 4]),
            [init("w", rand(D, total)), init("bias", rand(total))])


@case("qattention")
def _qattention():
    D, N = 8, 2
    for past in (False, True):
        names = ["x", "w", "bias", "xs", "ws", "", "xz", "wz"] + (["past"] if past else [])
        inputs = [("x", U8, ["B", "S", D], None)] + ([("past", F, [2, "B", N, "P", D // N], None)] if past else [])
        yield f"_past{int(past)}", Case(
            [node("QAttention", names, ["y", "present"], num_heads=N)], inputs, ["y", "present"],
            grid(B=[1, 2], S=[0, 1, 3], P=[0, 2]),  # batch 0 crashes onnxruntime 1.32 (SIGFPE in QAttention)
            [init("w", rand(D, 3 * D, dtype=np.uint8)), init("bias", rand(3 * D)), init("xs", SCALE), init("ws", SCALE),
             init("xz", ZP_U8), init("wz", ZP_U8)])


@case("multi_head_attention")
def _mha():
    N, h = 2, 4
    D = N * h
    yield "_separate_v_wider", Case(
        [node("MultiHeadAttention", ["q", "k", "v"], ["y", "pk", "pv"], num_heads=N)],
        [("q", F, ["B", "S", D], None), ("k", F, ["B", "L", D], None), ("v", F, ["B", "L", 12], None)],
        ["y", "pk", "pv"], grid(B=[0, 1, 2], S=[0, 1, 3], L=[0, 1, 4]))
    yield "_bias_and_mask", Case(
        [node("MultiHeadAttention", ["q", "k", "v", "bias", "mask"], ["y", "pk", "pv"], num_heads=N)],
        [("q", F, ["B", "S", D], None), ("k", F, ["B", "L", D], None), ("v", F, ["B", "L", D], None),
         ("mask", I32, ["B", "L"], lambda shape, sizes: np.ones(shape, np.int32))],
        ["y", "pk", "pv"], grid(B=[1, 2], S=[1, 3], L=[1, 4]), [init("bias", rand(3 * D))])
    yield "_past", Case(
        [node("MultiHeadAttention", ["q", "k", "v", "", "", "", "past_k", "past_v"], ["y", "pk", "pv"], num_heads=N)],
        [("q", F, ["B", "S", D], None), ("k", F, ["B", "S", D], None), ("v", F, ["B", "S", D], None),
         ("past_k", F, ["B", N, "P", h], None), ("past_v", F, ["B", N, "P", h], None)],
        ["y", "pk", "pv"], grid(B=[0, 1, 2], S=[0, 1, 3], P=[0, 1, 5]))
    yield "_qk_output", Case(
        [node("MultiHeadAttention", ["q", "k", "v", "", "", "", "past_k", "past_v"], ["y", "pk", "pv", "qk"],
              num_heads=N)],
        [("q", F, ["B", "S", D], None), ("k", F, ["B", "S", D], None), ("v", F, ["B", "S", D], None),
         ("past_k", F, ["B", N, "P", h], None), ("past_v", F, ["B", N, "P", h], None)],
        ["y", "pk", "pv", "qk"], grid(B=[0, 1, 2], S=[0, 1, 3], P=[0, 1, 5]))
    yield "_bnsh_key_value", Case(
        [node("MultiHeadAttention", ["q", "k", "v"], ["y", "pk", "pv"], num_heads=N)],
        [("q", F, ["B", "S", D], None), ("k", F, ["B", N, "L", h], None), ("v", F, ["B", N, "L", h], None)],
        ["y", "pk", "pv"], grid(B=[0, 1, 2], S=[0, 1, 3], L=[0, 1, 4]))


@case("group_query_attention")
def _gqa():
    """total_sequence_length taken from the attention mask's shape, as exports do: the present
    length is then exact (max(T, P)); given as a graph input its value is unknown and so is
    the present length."""
    N, K, h = 4, 2, 8
    for packed, total_from_shapes in itertools.product((False, True), (True, False)):
        q_hidden = N * h + (2 * K * h if packed else 0)
        nodes, inits = [], [init("i1", np.array([1], np.int64)), init("i2", np.array([2], np.int64))]
        inputs = [("q", F, ["B", "S", q_hidden], None)]
        if not packed:
            inputs += [("k", F, ["B", "S", K * h], None), ("v", F, ["B", "S", K * h], None)]
        inputs += [("past_k", F, ["B", K, "P", h], None), ("past_v", F, ["B", K, "P", h], None),
                   ("seqlens", I32, ["B"], lambda shape, sizes: np.full(shape, sizes["P"] + sizes["S"] - 1, np.int32))]
        if total_from_shapes:  # as exports do: the attention mask [B, T] gives T
            inputs.append(("mask", I64, ["B", "T"], None))
            nodes += [node("Shape", ["mask"], ["ms"], domain=""), node("Gather", ["ms", "i1"], ["t64"], domain="", axis=0),
                      node("Cast", ["t64"], ["t32v"], domain="", to=I32), node("Squeeze", ["t32v"], ["total"], domain="")]
        else:
            inputs.append(("total", I32, [], lambda shape, sizes: np.array(sizes["P"] + sizes["S"], np.int32)))
        names = ["q", "" if packed else "k", "" if packed else "v", "past_k", "past_v", "seqlens", "total"]
        outs = ["y", "pk", "pv", "qk"] if total_from_shapes else ["y", "pk", "pv"]
        nodes.append(node("GroupQueryAttention", names, outs, num_heads=N, kv_num_heads=K,
                          qk_output=int(total_from_shapes)))
        # onnxruntime: a batch above 1 only one token at a time once there is a past
        sizes = [dict(s, T=s["P"] + s["S"]) for s in grid(B=[1, 2], S=[1, 3], P=[0, 1, 4])
                 if s["B"] == 1 or s["S"] == 1 or s["P"] == 0]
        fresh = {} if total_from_shapes else {"pk": (2,), "pv": (2,)}
        yield f"_packed{int(packed)}_total_from_shapes{int(total_from_shapes)}", Case(
            nodes, inputs, outs, sizes, inits, fresh)
    def gqa_case(attrs, outs, fresh, sizes):
        return Case(
            [node("GroupQueryAttention", ["q", "k", "v", "past_k", "past_v", "seqlens", "total"], outs, num_heads=N,
                  kv_num_heads=K, **attrs)],
            [("q", F, ["B", "S", N * h], None), ("k", F, ["B", "S", K * h], None), ("v", F, ["B", "S", K * h], None),
             ("past_k", F, ["B", K, "P", h], None), ("past_v", F, ["B", K, "P", h], None),
             ("seqlens", I32, ["B"], lambda shape, sizes: np.full(shape, sizes["T"] - 1, np.int32)),
             ("total", I32, [], lambda shape, sizes: np.array(sizes["T"], np.int32))],
            outs, sizes, fresh=fresh)
    # a windowed cache keeps its capacity P, whatever T is
    yield "_sliding_window", gqa_case({"sliding_window_cache": 1, "local_window_size": 4}, ["y", "pk", "pv"], {},
                                      [{"B": 1, "S": s, "P": 6, "T": t} for s, t in ((1, 3), (3, 3), (1, 9), (3, 9))]
                                      + [{"B": 1, "S": 1, "P": 4, "T": 7}])
    # output_qk spans T (a graph input here: fresh), also where the cache is a fixed buffer (T <= P)
    yield "_qk_output", gqa_case({"qk_output": 1}, ["y", "pk", "pv", "qk"], {"pk": (2,), "pv": (2,), "qk": (3,)},
                                 [{"B": b, "S": 1, "P": p, "T": t} for b, p, t in ((1, 4, 5), (2, 8, 5), (1, 1, 1))])
    yield "_prompt_without_past", Case(
        [node("GroupQueryAttention", ["q", "k", "v", "", "", "seqlens", "total"], ["y", "pk", "pv"], num_heads=N,
              kv_num_heads=K)],
        [("q", F, ["B", "S", N * h], None), ("k", F, ["B", "S", K * h], None), ("v", F, ["B", "S", K * h], None),
         ("seqlens", I32, ["B"], lambda shape, sizes: np.full(shape, sizes["S"] - 1, np.int32)),
         ("total", I32, [], lambda shape, sizes: np.array(sizes["S"], np.int32))],
        ["y", "pk", "pv"], grid(B=[1, 3], S=[1, 4]))


@case("embed_layer_norm")
def _embed():
    H = 8
    ids = ("ids", I32, ["B", "S"], lambda shape, sizes: RNG.integers(0, 10, shape).astype(np.int32))
    for segment, mask, n_out in itertools.product((False, True), (False, True), (2, 3)):
        names = ["ids", "seg" if segment else "", "word", "pos", "segemb" if segment else "", "gamma", "beta"]
        inputs = [ids]
        if segment:
            inputs.append(("seg", I32, ["B", "S"], None))
        if mask:
            names.append("mask")
            inputs.append(("mask", I32, ["B", "S"], lambda shape, sizes: np.ones(shape, np.int32)))
        outs = ["y", "mask_index", "sum"][:n_out]
        yield f"_seg{int(segment)}_mask{int(mask)}_out{n_out}", Case(
            [node("EmbedLayerNormalization", names, outs, epsilon=1e-5)], inputs, outs, grid(B=[0, 1, 2], S=[0, 1, 5]),
            [init("word", rand(10, H)), init("pos", rand(16, H)), init("segemb", rand(2, H)), init("gamma", rand(H)),
             init("beta", rand(H))])


@case("qembed_layer_norm")
def _qembed():
    H = 8
    def q(*shape):
        return rand(*shape, dtype=np.uint8)
    names = ["ids", "", "word", "pos", "", "gamma", "beta", "", "ws", "ps", "", "gs", "bs", "wz", "pz", "", "gz", "bz"]
    yield "", Case(
        [node("QEmbedLayerNormalization", names, ["y", "mask_index"])],
        [("ids", I32, ["B", "S"], lambda shape, sizes: RNG.integers(0, 10, shape).astype(np.int32))],
        ["y", "mask_index"], grid(B=[1, 2], S=[1, 5]),
        [init("word", q(10, H)), init("pos", q(16, H)), init("gamma", q(H)), init("beta", q(H))]
        + [init(n, SCALE) for n in ("ws", "ps", "gs", "bs")] + [init(n, ZP_U8) for n in ("wz", "pz", "gz", "bz")])


# -- quantized ------------------------------------------------------------------------------------

@case("quantized_matmuls")
def _quantized_matmuls():
    sizes = grid(B=[0, 1, 2], M=[1, 3])
    yield "_MatMulNBits", Case(
        [node("MatMulNBits", ["a", "b", "scales"], ["y"], K=32, N=5, block_size=32, bits=4)],
        [("a", F, ["B", "M", 32], None)], ["y"], sizes,
        [init("b", rand(5, 1, 16, dtype=np.uint8)), init("scales", rand(5, 1))])
    yield "_MatMulNBits_vector", Case(
        [node("MatMulNBits", ["a", "b", "scales"], ["y"], K=32, N=5, block_size=32, bits=4)],
        [("a", F, [32], None)], ["y"], [{}],
        [init("b", rand(5, 1, 16, dtype=np.uint8)), init("scales", rand(5, 1))])
    yield "_MatMulIntegerToFloat", Case(
        [node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az"], ["y"])],
        [("a", U8, ["B", "M", 4], None), ("b", I8, [4, "N"], None)], ["y"], grid(B=[0, 1, 2], M=[1, 3], N=[1, 2]),
        [init("as", SCALE), init("bs", SCALE), init("az", ZP_U8)])
    yield "_DynamicQuantizeMatMul", Case(
        [node("DynamicQuantizeMatMul", ["a", "b", "bs"], ["y"])],
        [("a", F, ["B", "M", 4], None), ("b", I8, ["C", 4, "N"], None)], ["y"],
        grid(B=[0, 1, 2], M=[1, 3], N=[1, 2], C=[1]), [init("bs", SCALE)])
    yield "_MatMulInteger", Case(
        [node("MatMulInteger", ["a", "b"], ["y"], domain="")],
        [("a", U8, ["B", "M", 4], None), ("b", U8, [4, "N"], None)], ["y"], grid(B=[0, 1, 2], M=[1, 3], N=[1, 2]))
    yield "_QLinearMatMul", Case(
        [node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain="")],
        [("a", U8, ["B", "M", 4], None), ("b", U8, [4, "N"], None)], ["y"], grid(B=[0, 1, 2], M=[1, 3], N=[1, 2]),
        [init(n, SCALE) for n in ("as", "bs", "ys")] + [init(n, ZP_U8) for n in ("az", "bz", "yz")])
    for ta, tb, requant in itertools.product((0, 1), (0, 1), (False, True)):
        a = ["K", "M"] if ta else ["M", "K"]
        b = ["N", "K"] if tb else ["K", "N"]
        names = ["a", "as", "az", "b", "bs", "bz"] + (["", "ys", "yz"] if requant else [])
        yield f"_QGemm_t{ta}{tb}_requant{int(requant)}", Case(
            [node("QGemm", names, ["y"], transA=ta, transB=tb)], [("a", U8, a, None), ("b", U8, b, None)], ["y"],
            grid(M=[0, 1, 3], K=[1, 4], N=[1, 2]),
            [init(n, SCALE) for n in ("as", "bs", "ys")] + [init(n, ZP_U8) for n in ("az", "bz", "yz")])


@case("quantize_dequantize")
def _quantize():
    sizes = grid(B=[0, 1, 3], S=[1, 4])
    yield "_DynamicQuantizeLinear", Case([node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], domain="")],
                                         [("x", F, ["B", "S"], None)], ["y", "s", "z"], sizes)
    for zp in (None, ZP_U8, ZP_I8):
        names = ["x", "sc"] + (["zp"] if zp is not None else [])
        inits = [init("sc", SCALE)] + ([init("zp", zp)] if zp is not None else [])
        yield f"_ms_QuantizeLinear_{'none' if zp is None else zp.dtype}", Case(
            [node("QuantizeLinear", names, ["y"])], [("x", F, ["B", "S"], None)], ["y"], sizes, inits)
    # the default-domain ops: onnx's own inference keeps their symbolic dims (no rule of ours)
    for axis_scale in (False, True):
        sc = np.full(4, 0.05, np.float32) if axis_scale else SCALE
        zp = np.zeros(4, np.int8) if axis_scale else ZP_I8
        attrs = {"axis": 1} if axis_scale else {}
        yield f"_onnx_QuantizeLinear_axis{int(axis_scale)}", Case(
            [node("QuantizeLinear", ["x", "sc", "zp"], ["y"], domain="", **attrs),
             node("DequantizeLinear", ["y", "sc", "zp"], ["z"], domain="", **attrs)],
            [("x", F, ["B", 4, "S"], None)], ["y", "z"], grid(B=[0, 1, 3], S=[1, 4]), [init("sc", sc), init("zp", zp)])
    for elem, zp in ((U8, ZP_U8), (I8, ZP_I8)):
        yield f"_ms_DequantizeLinear_{elem}", Case(
            [node("DequantizeLinear", ["x", "sc", "zp"], ["y"])], [("x", elem, ["B", "S"], None)], ["y"], sizes,
            [init("sc", SCALE), init("zp", zp)])


@case("qlinear_elementwise")
def _qlinear_elementwise():
    q = [init(n, SCALE) for n in ("as", "bs", "cs")] + [init(n, ZP_U8) for n in ("az", "bz", "cz")]
    for op, (a, b) in itertools.product(("QLinearAdd", "QLinearMul"),
                                        ((["B", "S", 4], [4]), (["B", 1, 4], ["S", 1]), (["B", "S"], ["B", "S"]))):
        yield f"_{op}_{len(a)}{len(b)}", Case(
            [node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"])], [("a", U8, a, None), ("b", U8, b, None)],
            ["y"], grid(B=[0, 1, 2], S=[1, 3]), q)
    unary = [init("xs", SCALE), init("xz", ZP_U8), init("ys", SCALE), init("yz", ZP_U8)]
    for op, attrs in (("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.1}), ("QLinearSoftmax", {"opset": 13})):
        yield f"_{op}", Case([node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], **attrs)], [("x", U8, ["B", "S"], None)],
                             ["y"], grid(B=[0, 1, 2], S=[1, 3]), unary)


@case("qlinear_pools_concat")
def _qlinear_pools():
    unary = [init("xs", SCALE), init("xz", ZP_U8), init("ys", SCALE), init("yz", ZP_U8)]
    sizes = grid(N=[0, 1, 2], H=[4, 7], W=[5, 8])
    for cl in (0, 1):
        x = ["N", "H", "W", 3] if cl else ["N", 3, "H", "W"]
        yield f"_global_cl{cl}", Case(
            [node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], channels_last=cl)],
            [("x", U8, x, None)], ["y"], sizes, unary)
        for k, attrs in enumerate(({"kernel_shape": [2, 2]},
                                   {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]},
                                   {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 1, 1, 1]})):
            yield f"_average_cl{cl}_{k}", Case(
                [node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], channels_last=cl, **attrs)],
                [("x", U8, x, None)], ["y"], sizes, unary)
    for axis in (0, 1, -1):
        dims = {0: (["A", 3], ["C", 3]), 1: (["B", "A"], ["B", "C"]), -1: (["B", "A"], ["B", "C"])}[axis]
        yield f"_concat_axis{axis}", Case(
            [node("QLinearConcat", ["ys", "yz", "a", "xs", "xz", "b", "xs", "xz"], ["y"], axis=axis)],
            [("a", U8, dims[0], None), ("b", U8, dims[1], None)], ["y"], grid(A=[0, 1, 2], B=[1, 2], C=[0, 3]), unary)


@case("dynamic_quantize_lstm")
def _dq_lstm():
    H, n_in = 3, 4
    for direction in ("forward", "bidirectional"):
        d = 2 if direction == "bidirectional" else 1
        names = ["x", "w", "r", "", "", "", "", "", "wsc", "wz", "rsc", "rz"]
        yield f"_{direction}", Case(
            [node("DynamicQuantizeLSTM", names, ["y", "yh", "yc"], hidden_size=H, direction=direction)],
            [("x", F, ["S", "B", n_in], None)], ["y", "yh", "yc"], grid(S=[1, 3], B=[1, 2]),
            [init("w", rand(d, n_in, 4 * H, dtype=np.int8)), init("r", rand(d, H, 4 * H, dtype=np.int8)),
             init("wsc", np.full(d, 0.05, np.float32)), init("wz", np.zeros(d, np.int8)),
             init("rsc", np.full(d, 0.05, np.float32)), init("rz", np.zeros(d, np.int8))])


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_against_onnxruntime(name):
    assert check_case(CASES[name]) > 0, "every dim was unknown: nothing was compared with onnxruntime"


def test_every_listed_op_has_a_case():
    ops = {n.op_type for c in CASES.values() for n in c.nodes}
    listed = {
        "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization", "Gelu",
        "QuickGelu", "FastGelu", "BiasGelu", "FusedMatMul", "FusedConv", "FusedGemm", "Attention",
        "MultiHeadAttention", "GroupQueryAttention", "RotaryEmbedding", "EmbedLayerNormalization", "QAttention",
        "QEmbedLayerNormalization", "MatMulNBits", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
        "DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "QLinearAdd",
        "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearGlobalAveragePool", "QLinearAveragePool",
        "QLinearConcat", "QLinearSoftmax", "QGemm", "ConvInteger", "DynamicQuantizeLSTM",
    }
    assert listed <= ops, listed - ops


# -- what onnxruntime's CPU provider cannot run: the documented shapes ------------------------------

def _infer_one(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_empty_tensor_value_info(o) for o in outputs], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)], ir_version=10)
    return shapeinfer.infer(model)


def test_ops_without_a_cpu_kernel_follow_their_documented_shapes():
    r = _infer_one([node("BiasAdd", ["x", "b", "skip"], ["y"]), node("BiasSoftmax", ["s", "m"], ["z"], axis=3,
                                                                       is_inner_broadcast=0)],
                   [("x", F, ["N", "S", 8]), ("b", F, [8]), ("skip", F, ["N", "S", 8]), ("s", F, ["B", 2, "S", "T"]),
                    ("m", F, ["B", 1, "S", "T"])], ["y", "z"])
    assert r.shape_strs("y") == ["N", "S", "8"] and r.shape_strs("z") == ["B", "2", "S", "T"]
    # MultiHeadAttention with packed QKV [B, S, N, 3, h] and packed KV [B, L, N, 2, h]
    r = _infer_one([node("MultiHeadAttention", ["qkv"], ["y", "pk", "pv"], num_heads=2),
                    node("MultiHeadAttention", ["q", "kv"], ["y2", "pk2", "pv2"], num_heads=2)],
                   [("qkv", F, ["B", "S", 2, 3, 4]), ("q", F, ["B", "S", 8]), ("kv", F, ["B", "L", 2, 2, 4])],
                   ["y", "pk", "pv", "y2", "pk2", "pv2"])
    assert r.shape_strs("y") == ["B", "S", "8"] and r.shape_strs("pk") == ["B", "2", "S", "4"]
    assert r.shape_strs("y2") == ["B", "S", "8"] and r.shape_strs("pv2") == ["B", "2", "L", "4"]


def test_com_microsoft_spellings_of_the_normalizations_infer_like_the_default_domain_ones():
    """onnxruntime 1.32 registers SimplifiedLayerNormalization and the pre-17 LayerNormalization
    only in the default domain; converters also write them in com.microsoft."""
    for op, outs in (("SimplifiedLayerNormalization", ["y", "inv"]), ("LayerNormalization", ["y", "mean", "inv"])):
        for domain in ("", MS):
            nodes = [node(op, ["x", "scale"], outs, domain=domain, axis=1)]
            r = _infer_one(nodes, [("x", F, ["B", "S", 8]), ("scale", F, ["S", 8])], outs)
            assert r.shape_strs("y") == ["B", "S", "8"], (op, domain)
            assert r.shape_strs("inv") == ["B", "1", "1"], (op, domain)
            assert r.fact("inv").dtype == F


def test_default_domain_layer_norm_before_opset_17_is_onnxruntimes_and_runs():
    graph = helper.make_graph([node("LayerNormalization", ["x", "s", "b"], ["y", "m", "v"], domain="")], "g",
                              [helper.make_tensor_value_info("x", F, ["B", "S", 8])],
                              [helper.make_tensor_value_info(o, F, None) for o in ("y", "m", "v")],
                              [init("s", rand(8)), init("b", rand(8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    r = shapeinfer.infer(model)
    assert r.shape_strs("y") == ["B", "S", "8"] and r.shape_strs("m") == ["B", "S", "1"]
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": rand(2, 3, 8)})
    assert [a.shape for a in got] == [(2, 3, 8), (2, 3, 1), (2, 3, 1)]


# -- domains in diagnostics, the implied com.microsoft opset ------------------------------------------

def test_an_op_without_a_rule_in_a_known_domain_is_reported_with_its_domain():
    r = _infer_one([node("Frobnicate", ["x"], ["y"])], [("x", F, ["B"])], ["y"])
    found = [d for d in r.diagnostics if d.kind == "unknown-op"]
    assert found and "com.microsoft" in found[0].message and "Frobnicate" in found[0].message, [str(d) for d in r.diagnostics]


def test_com_microsoft_without_an_opset_import_is_read_at_version_1_as_onnxruntime_does():
    graph = helper.make_graph([node("FastGelu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", F, ["B", 4])],
                              [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    r = shapeinfer.infer(model)
    assert r.shape_strs("y") == ["B", "4"]
    assert any(d.kind == "opset-implied" and "com.microsoft" in d.message for d in r.diagnostics)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": rand(2, 4)})
    assert got[0].shape == (2, 4)
    report = shapeinfer.check(model)
    assert report.ok and "missing-opset-import" in {f.code for f in report.findings}, report.findings


def test_the_com_microsoft_opset_version_selects_the_rule():
    from shapeinfer.infer.registry import lookup

    assert lookup(MS, "Attention", 1) is not None
    assert lookup(MS, "Attention", 0) is None  # before the op existed
    assert lookup("", "Attention", 21) is None  # the domains are not mixed up


def test_check_warns_about_a_runtime_op_in_the_default_domain_naming_the_node_and_does_not_fail():
    """onnx.checker refuses SimplifiedLayerNormalization in the default domain; onnxruntime runs
    it (its session optimizer writes it there): a warning per node, and the model passes."""
    nodes = [node("SimplifiedLayerNormalization", ["x", "s"], ["h"], domain="", name="rms_0", axis=-1, epsilon=1e-5),
             node("SkipLayerNormalization", ["h", "x", "s"], ["y"], name="skip_ln")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["B", "S", 8])],
                              [helper.make_tensor_value_info("y", F, ["B", "S", 8])], [init("s", rand(8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": rand(2, 3, 8)})
    assert got[0].shape == (2, 3, 8)
    report = shapeinfer.check(model)
    assert report.ok, [f.line() for f in report.errors]
    found = [f for f in report.findings if f.code == "runtime-op"]
    assert len(found) == 1 and found[0].severity == "warning" and found[0].node == "rms_0", report.findings
    assert "onnxruntime runs it" in found[0].message
    assert not [f for f in report.findings if f.code in ("unknown-op", "unknown-dims", "inference-fallback")], report.findings
    assert not shapeinfer.check(model, strict=True).ok
