"""The cost of one node from its inputs' and outputs' shapes: multiply-accumulates (MACs) and
other floating-point operations (FLOPs), as dims (ints or expressions in the model's symbols).

Counting rules (the README's "Cost" section says the same):
- MACs: MatMul (and its integer, quantized and contrib forms) = the output's elements x K, the
  contracted dim; Gemm (FusedGemm, QGemm, GemmFloat8) = M x N x K; the weight-packed MatMuls
  (MatMulNBits, MatMulBnb4, ...) = A's rows x K x N, N their output columns (MatMulNBitsMlp two
  projections, MatMulNBitsQkv three); Conv (ConvInteger, QLinearConv, FusedConv, NhwcConv,
  DeformConv's convolution) = the output's elements x C_in/group x the kernel's elements (W's
  dims after the first); ConvTranspose = the input's elements x C_out/group x the kernel's
  elements (again W's dims after the first); Einsum = the product of every index's size x
  (operands - 1); RNN/GRU/LSTM (DynamicQuantizeLSTM) = steps x batch x the elements of W and R
  (every gate's input and recurrent projections); attention (com.microsoft Attention,
  QAttention, MultiHeadAttention, GroupQueryAttention; ai.onnx Attention) = Q.K^T and attention
  x V as computed densely (a causal mask does not halve it), plus the input projection of
  com.microsoft Attention and QAttention. The bias add of Conv/Gemm is not counted.
- Not counted, and listed as such by the report (``not_counted``): a compute op no rule above
  counts (``COMPUTE_WITHOUT_RULE``, and any op whose name says MatMul, Gemm, Conv, Attention,
  Einsum, LSTM, GRU or RNN that has no rule and is not known to do no multiply-accumulates,
  ``NO_MACS``), a node with subgraphs (If, Loop, Scan, BeamSearch: the subgraphs' cost), and an
  op of another domain. A total is then a lower bound, and the report says by how many nodes.
- FLOPs, for every other op: one per output element; a reduction (ReduceX, ArgMax/ArgMin,
  global pooling) one per input element; MaxPool/AveragePool/LpPool one per output element and
  kernel position. Ops that only move, select or describe data (Reshape, Transpose, Gather,
  Slice, Concat, Cast, Shape, Expand, Pad, ...) cost nothing, nor do control flow nodes (their
  bodies are not counted: the report names them).
"""

from __future__ import annotations

import re
from functools import reduce
from typing import Callable, Optional

from onnx import AttributeProto, helper

from ..modelio.text import as_text
from ..symbolic import BroadcastError, Dim, add, bcast, mul

Shape = Optional[tuple]
ShapeOf = Callable[[str], Shape]

ZERO_COST = frozenset({
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Gather", "GatherElements", "GatherND", "Scatter",
    "ScatterElements", "ScatterND", "Slice", "Concat", "Split", "SplitToSequence", "Expand", "Tile", "Pad", "Shape",
    "Size", "Identity", "Cast", "CastLike", "ConstantOfShape", "Constant", "Range", "NonZero", "DepthToSpace",
    "SpaceToDepth", "Dropout", "EyeLike", "Compress", "ReverseSequence", "SequenceAt", "SequenceConstruct",
    "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength", "ConcatFromSequence", "Optional",
    "OptionalGetElement", "OptionalHasElement", "If", "Loop", "Scan", "Unique", "TopK", "Col2Im", "CenterCropPad",
    "Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
})
COUNTED_DOMAINS = ("", "com.microsoft")  # ops of other domains are not counted (the report lists them)
REDUCTIONS = frozenset({
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
})
POOLS = frozenset({"MaxPool", "AveragePool", "LpPool"})


def prod(dims) -> Dim:
    return reduce(mul, dims, 1)


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _in(node, i: int) -> str:
    return node.input[i] if i < len(node.input) else ""


def _out(node, i: int) -> str:
    return node.output[i] if i < len(node.output) else ""


def _operand(s: tuple, trans: bool = False, trans_batch: bool = False) -> tuple:
    """A MatMul operand as the plain one it stands for: FusedMatMul's ``transBatch`` reads
    [M, b1.., K] as [b1.., M, K], ``trans`` then swaps the last two (a vector stays)."""
    s = list(s)
    if len(s) == 1:
        return tuple(s)
    if trans_batch and len(s) > 2:
        s = s[1:-1] + [s[0], s[-1]]
    if trans:
        s[-2], s[-1] = s[-1], s[-2]
    return tuple(s)


def _matmul_macs(a: tuple, b: tuple) -> Optional[Dim]:
    """numpy.matmul's MACs from its operands' shapes: the broadcast batch x M x K x N (a vector
    operand has no M, or no N)."""
    if not a or not b:
        return None
    m = a[-2] if len(a) > 1 else 1
    n = b[-1] if len(b) > 1 else 1
    batch = _broadcast(list(a[:-2]), list(b[:-2]))
    if batch is None:
        return None
    return mul(prod(batch + [m, n]), a[-1])


def _broadcast(a: list, b: list) -> Optional[list]:
    """Two lists of dims broadcast against each other (aligned from the right), or None where
    they never broadcast (the model is invalid there)."""
    if len(a) < len(b):
        a, b = b, a
    b = [1] * (len(a) - len(b)) + b
    try:
        return [bcast(x, y) for x, y in zip(a, b)]
    except BroadcastError:
        return None


def _matmul(node, shape: ShapeOf, a_index=0, trans_attr=None, b_index=1) -> Optional[Dim]:
    """Output elements x K, K the last dim of A (its rows' dim under a transpose: the one before
    the last, or the first where FusedMatMul's transBatchA moves that after the batch dims).
    Where no rule infers the output, the same from the operands' shapes."""
    a, out = shape(_in(node, a_index)), shape(_out(node, 0))
    if not a:
        return None
    trans_a = bool(trans_attr and _attr(node, trans_attr, 0))
    if out is None:
        b = shape(_in(node, b_index))
        if b is None:
            return None
        trans_b = bool(trans_attr and _attr(node, "transB", 0))
        return _matmul_macs(_operand(a, trans_a, bool(_attr(node, "transBatchA", 0))),
                            _operand(b, trans_b, bool(_attr(node, "transBatchB", 0))))
    k = a[-1]
    if trans_a and len(a) >= 2:
        k = a[0] if _attr(node, "transBatchA", 0) and len(a) > 2 else a[-2]
    return mul(prod(out), k)


def _fused_matmul(node, shape: ShapeOf) -> Optional[Dim]:
    return _matmul(node, shape, trans_attr="transA")


def _packed_matmul(projections: Callable):
    """A MatMul whose weight is packed (its K x N from attributes): A's rows x K x N for each
    projection -- ``projections(node)`` gives the sum of their output columns, or None."""
    def rule(node, shape: ShapeOf) -> Optional[Dim]:
        a, k, n = shape(_in(node, 0)), _attr(node, "K"), projections(node)
        if not a or not isinstance(k, int) or n is None:
            return None
        return mul(prod(a[:-1]), int(k) * int(n))
    return rule


def _attr_int(name: str, times: int = 1) -> Callable:
    def columns(node) -> Optional[int]:
        v = _attr(node, name)
        return int(v) * times if isinstance(v, int) else None
    return columns


def _qkv_columns(node) -> Optional[int]:
    nq, nkv = _attr(node, "Nq"), _attr(node, "Nkv")
    return int(nq) + 2 * int(nkv) if isinstance(nq, int) and isinstance(nkv, int) else None


def _weight_rows_matmul(node, shape: ShapeOf) -> Optional[Dim]:
    """A [..., K] times a block-quantized weight B stored [N, ...]: A's rows x K x N."""
    a, b = shape(_in(node, 0)), shape(_in(node, 1))
    if not a or not b:
        return None
    return mul(prod(a), b[0])


def _gemm(b_index: int = 1):
    """Gemm and its twins: M x N x K from A [M, K] and B [K, N] (either transposed by
    transA/transB) -- the operands, so that no output shape is needed."""
    def rule(node, shape: ShapeOf) -> Optional[Dim]:
        a, b = shape(_in(node, 0)), shape(_in(node, b_index))
        if a is None or b is None or len(a) != 2 or len(b) != 2:
            return None
        m, k = (a[1], a[0]) if _attr(node, "transA", 0) else (a[0], a[1])
        n = b[0] if _attr(node, "transB", 0) else b[1]
        return mul(mul(m, n), k)
    return rule


def _recurrent(node, shape: ShapeOf) -> Optional[Dim]:
    """RNN, GRU, LSTM (and DynamicQuantizeLSTM): at every step, for every sequence of the batch,
    each gate's input projection (W) and recurrent projection (R) -- steps x batch x (W's
    elements + R's), in either layout of W and R."""
    x, w, r = (shape(_in(node, i)) for i in range(3))
    if x is None or w is None or r is None or len(x) != 3:
        return None
    steps, batch = (x[1], x[0]) if _attr(node, "layout", 0) else (x[0], x[1])
    return mul(mul(steps, batch), add(prod(w), prod(r)))


def _conv(w_index: int):
    def rule(node, shape: ShapeOf) -> Optional[Dim]:
        w, out = shape(_in(node, w_index)), shape(_out(node, 0))
        if w is None or len(w) < 2 or out is None:
            return None
        return mul(prod(out), prod(w[1:]))  # W: [C_out, C_in/group, k1, k2, ...]
    return rule


def _conv_transpose(node, shape: ShapeOf) -> Optional[Dim]:
    x, w = shape(_in(node, 0)), shape(_in(node, 1))
    if x is None or w is None or len(w) < 2:
        return None
    return mul(prod(x), prod(w[1:]))  # W: [C_in, C_out/group, k1, k2, ...]


def _einsum(node, shape: ShapeOf) -> Optional[Dim]:
    eq = _attr(node, "equation")
    if isinstance(eq, bytes):
        eq = eq.decode(errors="replace")
    if not eq or len(node.input) < 2:
        return 0 if len(node.input) < 2 else None
    lhs = eq.replace(" ", "").split("->")[0]
    terms = lhs.split(",")
    if len(terms) != len(node.input):
        return None
    sizes: dict = {}
    ellipsis: Optional[list] = None
    for term, name in zip(terms, node.input):
        s = shape(name)
        if s is None:
            return None
        letters = term.replace("...", "")
        if "..." in term:
            k = len(s) - len(letters)
            if k < 0:
                return None
            at = term.index("...")
            dims = list(s[at:at + k])
            rest = list(s[:at]) + list(s[at + k:])
            if ellipsis is None:
                ellipsis = dims
            else:  # broadcast the ellipsis dims (aligned from the right)
                ellipsis = _broadcast(ellipsis, dims)
                if ellipsis is None:
                    return None
        else:
            rest = list(s)
        if len(rest) != len(letters):
            return None
        for letter, d in zip(letters, rest):
            if letter in sizes and sizes[letter] != d:
                try:
                    sizes[letter] = bcast(sizes[letter], d)
                except BroadcastError:
                    return None
            else:
                sizes.setdefault(letter, d)
    return mul(prod(list(sizes.values()) + (ellipsis or [])), len(terms) - 1)


def _ms_attention(past_index: int):
    """com.microsoft Attention (past at input 4) and QAttention (past at input 8, its input and
    weights quantized): the QKV projection, then Q.K^T and attention x V over every head."""
    def rule(node, shape: ShapeOf) -> Optional[Dim]:
        x, w, out = shape(_in(node, 0)), shape(_in(node, 1)), shape(_out(node, 0))
        if x is None or w is None or out is None or len(x) != 3 or len(w) != 2 or len(out) != 3:
            return None
        b, s = x[0], x[1]
        projection = mul(mul(mul(b, s), x[2]), w[1])
        total = s
        present = shape(_out(node, 1))
        if present is not None and len(present) == 5:
            total = present[3]
        elif _in(node, past_index):
            past = shape(_in(node, past_index))
            if past is None or len(past) != 5:
                return None
            total = add(past[3], s)
        sizes = _attr(node, "qkv_hidden_sizes")
        qk = int(sizes[0]) if sizes else out[2]
        v = int(sizes[2]) if sizes else out[2]
        return add(projection, mul(mul(mul(b, s), total), add(qk, v)))
    return rule


def _mha(node, shape: ShapeOf) -> Optional[Dim]:
    """MultiHeadAttention / GroupQueryAttention: Q.K^T and attention x V over the total sequence
    (the present key's, or the key's plus the past's)."""
    q, out = shape(_in(node, 0)), shape(_out(node, 0))
    if q is None or out is None or len(q) != 3 or len(out) != 3:
        return None
    b, s = q[0], q[1]
    present = shape(_out(node, 1))
    if present is not None and len(present) == 4:
        total = present[2]
    else:
        key = shape(_in(node, 1))
        if key is None or len(key) not in (3, 4):
            return None
        total = key[1] if len(key) == 3 else key[2]
        past_index = 6 if node.op_type == "MultiHeadAttention" else 3
        if _in(node, past_index):
            past = shape(_in(node, past_index))
            if past is None or len(past) != 4:
                return None
            total = add(past[2], total)
    if node.op_type == "GroupQueryAttention" or not _in(node, 1) or shape(_in(node, 1)) is None:
        qk = out[2]  # packed QKV: the query's hidden size is the output's
    else:
        qk = q[2]
    return mul(mul(mul(b, s), total), add(qk, out[2]))


def _onnx_attention(node, shape: ShapeOf) -> Optional[Dim]:
    """ai.onnx Attention (opset 23): Q [B,Hq,S,E] (or [B,S,Hq*E]) against K/V of L positions."""
    q, k, v = (shape(_in(node, i)) for i in range(3))
    out = shape(_out(node, 0))
    if q is None or k is None or v is None or out is None or len(q) != len(k) or len(q) not in (3, 4):
        return None
    if len(q) == 3 and not _attr(node, "q_num_heads"):
        return None
    total = _total_sequence(node, shape, k[2] if len(q) == 4 else k[1])  # K: [B,H,L,E] or [B,L,H*E]
    if total is None:
        return None
    if len(q) == 4:  # [B, H, S, E]
        return mul(mul(mul(q[0], q[1]), mul(q[2], total)), add(q[3], v[3]))
    return mul(mul(q[0], mul(q[1], total)), add(q[2], out[2]))


def _total_sequence(node, shape: ShapeOf, new: Dim) -> Optional[Dim]:
    """The positions attended to: the present key's (output 1), else the past key's (input 4)
    and the ``new`` ones."""
    present = shape(_out(node, 1))
    if present is not None and len(present) == 4:
        return present[2]
    if not _in(node, 4):
        return new
    past = shape(_in(node, 4))
    return None if past is None else add(past[2], new)


MS = "com.microsoft"
MAC_RULES = {
    ("", "MatMul"): _matmul,
    ("", "MatMulInteger"): _matmul,
    ("", "QLinearMatMul"): lambda n, s: _matmul(n, s, b_index=3),
    ("", "Gemm"): _gemm(),
    ("", "Conv"): _conv(1),
    ("", "ConvInteger"): _conv(1),
    ("", "QLinearConv"): _conv(3),
    ("", "DeformConv"): _conv(1),  # the convolution; the bilinear sampling of the offsets is not counted
    ("", "ConvTranspose"): _conv_transpose,
    ("", "Einsum"): _einsum,
    ("", "Attention"): _onnx_attention,
    ("", "RNN"): _recurrent,
    ("", "GRU"): _recurrent,
    ("", "LSTM"): _recurrent,
    (MS, "FusedMatMul"): _fused_matmul,
    (MS, "FusedMatMulActivation"): _fused_matmul,
    (MS, "TransposeMatMul"): _fused_matmul,  # FusedMatMul's older name
    (MS, "MatMulIntegerToFloat"): _matmul,
    (MS, "MatMulInteger16"): _matmul,
    (MS, "DynamicQuantizeMatMul"): _matmul,
    (MS, "QOrderedMatMul"): lambda n, s: _matmul(n, s, b_index=2),
    (MS, "GemmFastGelu"): _matmul,
    (MS, "MatMulNBits"): _packed_matmul(_attr_int("N")),
    (MS, "MatMulBnb4"): _packed_matmul(_attr_int("N")),
    (MS, "MatMulPacked"): _packed_matmul(_attr_int("N")),
    (MS, "MatMulNBitsMlp"): _packed_matmul(_attr_int("N", times=2)),  # the gate and up projections
    (MS, "MatMulNBitsQkv"): _packed_matmul(_qkv_columns),  # the Q, K and V projections
    (MS, "MatMulBlockQuantizedFp8Weight"): _weight_rows_matmul,
    (MS, "MatMulBlockQuantizedFp4Weight"): _weight_rows_matmul,
    (MS, "FusedGemm"): _gemm(),
    (MS, "QGemm"): _gemm(3),
    (MS, "GemmFloat8"): _gemm(),
    (MS, "FusedConv"): _conv(1),
    (MS, "NhwcConv"): _conv(1),
    (MS, "NhwcFusedConv"): _conv(1),
    (MS, "QLinearConv"): _conv(3),
    (MS, "ConvTransposeWithDynamicPads"): _conv_transpose,
    (MS, "Attention"): _ms_attention(4),
    (MS, "QAttention"): _ms_attention(8),
    (MS, "MultiHeadAttention"): _mha,
    (MS, "GroupQueryAttention"): _mha,
    (MS, "DynamicQuantizeLSTM"): _recurrent,
}

# Compute ops -- products summed over a dim of their inputs, or work beyond a constant per output
# element -- that no rule counts: the report lists every node of them as not counted.
COMPUTE_WITHOUT_RULE = frozenset({
    ("", "Det"), ("", "DFT"), ("", "STFT"), ("", "LinearAttention"), ("", "CausalConvWithState"),
    ("", "DisentangledAttention_TRT"),
    (MS, "AttnLSTM"), (MS, "CDist"), (MS, "CausalConvWithState"), (MS, "VarlenCausalConvWithState"),
    (MS, "DecoderAttention"), (MS, "DecoderMaskedMultiHeadAttention"), (MS, "DecoderMaskedSelfAttention"),
    (MS, "DynamicSparseAttention"), (MS, "LongformerAttention"), (MS, "PackedAttention"),
    (MS, "PackedMultiHeadAttention"), (MS, "PagedAttention"), (MS, "QOrderedAttention"),
    (MS, "QOrderedLongformerAttention"), (MS, "SparseAttention"), (MS, "SparsePagedAttention"),
    (MS, "LinearAttention"), (MS, "SparseAttentionIndexer"), (MS, "PackedSparseAttentionIndexer"),
    (MS, "GatedDeltaNet"), (MS, "Mamba2Verify"), (MS, "GatedRelativePositionBias"), (MS, "EngramGate"),
    (MS, "HyperConnectionLowRankMix"), (MS, "HyperConnectionPostMix"), (MS, "HyperConnectionPreMix"),
    (MS, "MatMulFpQ4"), (MS, "MatMulNBitsQLoRA"), (MS, "SparseToDenseMatMul"), (MS, "WordConvEmbedding"),
    (MS, "MoE"), (MS, "QMoE"), (MS, "MoEPacked"), (MS, "MoEGroupRouter"), (MS, "RouterGateUpProj"),
    (MS, "Inverse"), (MS, "Rfft"), (MS, "Irfft"), (MS, "DynamicTimeWarping"), (MS, "EPContext"), (MS, "Snpe"),
})
# Ops whose name reads like a contraction but that do none (the name rule below would list them).
NO_MACS = {
    ("", "GRUUnit"): "the GRU gates' activations, given the projections",
    (MS, "GemmaRotaryEmbedding"): "a rotary embedding",
    (MS, "ConvStateReplay"): "copies a convolution's state",
    (MS, "LinearAttentionGate"): "elementwise gates",
    (MS, "PackedSparseAttentionIndexerMerge"): "merges index lists",
}
CONTRACTION_NAME = re.compile(r"MatMul|Gemm|Conv|Attention|Einsum|LSTM|GRU|RNN")

NO_RULE = "no MAC rule"
SUBGRAPHS = "the cost of its subgraphs"
OTHER_DOMAIN = "an op of another domain"


def _domain(node) -> str:
    d = as_text(node.domain)
    return "" if d in ("", "ai.onnx") else d


def not_counted(node) -> Optional[str]:
    """Why ``node``'s cost is not counted (its MACs and FLOPs are 0 in the figures, and the
    report lists it), or None when it is counted. Ops that only move or describe data are
    counted -- at 0."""
    domain, op = _domain(node), as_text(node.op_type)
    if domain not in COUNTED_DOMAINS:
        return OTHER_DOMAIN
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
        return SUBGRAPHS
    key = (domain, op)
    if key in MAC_RULES or key in NO_MACS:
        return None
    if key in COMPUTE_WITHOUT_RULE or CONTRACTION_NAME.search(op):
        return NO_RULE
    return None


def node_cost(node, shape: ShapeOf) -> tuple:
    """(MACs, FLOPs) of node, each a dim, or None where a shape it needs is not known; (0, 0)
    for a node :func:`not_counted` names."""
    if not_counted(node) is not None:
        return 0, 0
    domain = _domain(node)
    rule = MAC_RULES.get((domain, node.op_type))
    if rule is not None:
        return rule(node, shape), 0
    if node.op_type in ZERO_COST:
        return 0, 0
    if node.op_type in REDUCTIONS:
        x = shape(_in(node, 0))
        return 0, (None if x is None else prod(x))
    out = shape(_out(node, 0))
    if out is None:
        return 0, None
    if node.op_type in POOLS:
        kernel = _attr(node, "kernel_shape")
        return 0, (None if not kernel else mul(prod(out), prod(int(k) for k in kernel)))
    return 0, prod(out)
