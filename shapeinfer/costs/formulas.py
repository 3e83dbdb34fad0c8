"""The cost of one node from its inputs' and outputs' shapes: multiply-accumulates (MACs) and
other floating-point operations (FLOPs), as dims (ints or expressions in the model's symbols).

Counting rules (the README's "Cost" section says the same):
- MACs: MatMul (and its integer, quantized and contrib forms) = the output's elements x K, the
  contracted dim; Gemm = M x N x K; Conv = the output's elements x C_in/group x the kernel's
  elements (W's dims after the first); ConvTranspose = the input's elements x C_out/group x the
  kernel's elements (again W's dims after the first); Einsum = the product of every index's size
  x (operands - 1); attention (com.microsoft Attention, MultiHeadAttention,
  GroupQueryAttention; ai.onnx Attention) = Q.K^T and attention x V as computed densely (a causal
  mask does not halve it), plus the input projection of com.microsoft Attention. The bias add
  of Conv/Gemm is not counted.
- FLOPs, for every other op: one per output element; a reduction (ReduceX, ArgMax/ArgMin,
  global pooling) one per input element; MaxPool/AveragePool/LpPool one per output element and
  kernel position. Ops that only move, select or describe data (Reshape, Transpose, Gather,
  Slice, Concat, Cast, Shape, Expand, Pad, ...) cost nothing, nor do control flow nodes (their
  bodies are not counted: the report names them).
"""

from __future__ import annotations

from functools import reduce
from typing import Callable, Optional

from onnx import helper

from ..symbolic import Dim, add, bcast, mul

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
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
COUNTED_DOMAINS = ("", "com.microsoft")  # ops of other domains are not counted (the report names them)
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


def _matmul(node, shape: ShapeOf, a_index=0, trans_attr=None) -> Optional[Dim]:
    """Output elements x K, K the last dim of A (its rows' dim under a transpose: the one before
    the last, or the first where FusedMatMul's transBatchA moves that after the batch dims)."""
    a, out = shape(_in(node, a_index)), shape(_out(node, 0))
    if not a or out is None:
        return None
    k = a[-1]
    if trans_attr and _attr(node, trans_attr, 0) and len(a) >= 2:
        k = a[0] if _attr(node, "transBatchA", 0) and len(a) > 2 else a[-2]
    return mul(prod(out), k)


def _matmul_nbits(node, shape: ShapeOf) -> Optional[Dim]:
    out, k = shape(_out(node, 0)), _attr(node, "K")
    return None if out is None or k is None else mul(prod(out), int(k))


def _gemm(node, shape: ShapeOf) -> Optional[Dim]:
    a, out = shape(_in(node, 0)), shape(_out(node, 0))
    if a is None or len(a) != 2 or out is None:
        return None
    k = a[0] if _attr(node, "transA", 0) else a[1]
    return mul(prod(out), k)


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
        eq = eq.decode()
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
                a, b = ellipsis, dims
                if len(a) < len(b):
                    a, b = b, a
                b = [1] * (len(a) - len(b)) + b
                try:
                    ellipsis = [bcast(x, y) for x, y in zip(a, b)]
                except Exception:  # noqa: BLE001 - they never broadcast: the model is invalid there
                    return None
        else:
            rest = list(s)
        if len(rest) != len(letters):
            return None
        for letter, d in zip(letters, rest):
            if letter in sizes and sizes[letter] != d:
                try:
                    sizes[letter] = bcast(sizes[letter], d)
                except Exception:  # noqa: BLE001
                    return None
            else:
                sizes.setdefault(letter, d)
    return mul(prod(list(sizes.values()) + (ellipsis or [])), len(terms) - 1)


def _ms_attention(node, shape: ShapeOf) -> Optional[Dim]:
    """com.microsoft Attention: the QKV projection, then Q.K^T and attention x V over every head."""
    x, w, out = shape(_in(node, 0)), shape(_in(node, 1)), shape(_out(node, 0))
    if x is None or w is None or out is None or len(x) != 3 or len(w) != 2 or len(out) != 3:
        return None
    b, s = x[0], x[1]
    projection = mul(mul(mul(b, s), x[2]), w[1])
    total = s
    present = shape(_out(node, 1))
    if present is not None and len(present) == 5:
        total = present[3]
    elif _in(node, 4):
        past = shape(_in(node, 4))
        if past is None or len(past) != 5:
            return None
        total = add(past[3], s)
    sizes = _attr(node, "qkv_hidden_sizes")
    qk = int(sizes[0]) if sizes else out[2]
    v = int(sizes[2]) if sizes else out[2]
    return add(projection, mul(mul(mul(b, s), total), add(qk, v)))


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


MAC_RULES = {
    ("", "MatMul"): _matmul,
    ("", "MatMulInteger"): _matmul,
    ("", "QLinearMatMul"): _matmul,
    ("", "Gemm"): _gemm,
    ("", "Conv"): _conv(1),
    ("", "ConvInteger"): _conv(1),
    ("", "QLinearConv"): _conv(3),
    ("", "ConvTranspose"): _conv_transpose,
    ("", "Einsum"): _einsum,
    ("", "Attention"): _onnx_attention,
    ("com.microsoft", "FusedMatMul"): lambda n, s: _matmul(n, s, trans_attr="transA"),
    ("com.microsoft", "MatMulIntegerToFloat"): _matmul,
    ("com.microsoft", "DynamicQuantizeMatMul"): _matmul,
    ("com.microsoft", "QOrderedMatMul"): _matmul,
    ("com.microsoft", "MatMulNBits"): _matmul_nbits,
    ("com.microsoft", "FusedConv"): _conv(1),
    ("com.microsoft", "NhwcConv"): _conv(1),
    ("com.microsoft", "QLinearConv"): _conv(3),
    ("com.microsoft", "Attention"): _ms_attention,
    ("com.microsoft", "MultiHeadAttention"): _mha,
    ("com.microsoft", "GroupQueryAttention"): _mha,
}


def node_cost(node, shape: ShapeOf) -> tuple:
    """(MACs, FLOPs) of node, each a dim, or None where a shape it needs is not known."""
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    rule = MAC_RULES.get((domain, node.op_type))
    if rule is not None:
        return rule(node, shape), 0
    if domain not in COUNTED_DOMAINS or node.op_type in ZERO_COST:
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
