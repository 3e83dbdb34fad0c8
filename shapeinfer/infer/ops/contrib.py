"""onnxruntime's contrib ops (domain ``com.microsoft``) and the quantization ops.

What quantizing, float16 conversion and onnxruntime's transformer optimizer put into a model:
fused normalizations and activations, the attention ops, quantized convolutions and matmuls.
Their shapes follow onnxruntime's contrib-op documentation (docs/ContribOperators.md in its
repository) and, where the documentation is silent, what onnxruntime's CPU provider computes
(tests/test_contrib_ops.py runs every rule against it). A dim no rule can state is left to a
fresh symbol, never guessed: the attention ops' present length with a shared past buffer, an
input of a rank the op does not take.

onnxruntime's session optimizer writes ``SimplifiedLayerNormalization`` (and a few others) into
the *default* domain, where onnxruntime registers them: they have rules there too.
"""

from __future__ import annotations

from onnx import TensorProto

from ...symbolic import add, dmax, floordiv, mul, provably_nonneg, truediv
from ..facts import Fact
from ..registry import rule
from ._util import broadcast_shapes, normalize_axis, value_entries
from .conv import conv_shape, pool_shape
from .linalg import gemm_shape, matmul_shape

MS = "com.microsoft"


def _known(fact) -> bool:
    return fact is not None and fact.shape is not None


def _like(fact, dtype=None, shape=None) -> Fact:
    return Fact(dtype=fact.dtype if dtype is None else dtype, shape=fact.shape if shape is None else shape)


def _outputs(ctx, *facts) -> list:
    """One entry per node output (an optional output not produced gets nothing)."""
    out = list(facts)[: len(ctx.node.output)]
    return out + [None] * (len(ctx.node.output) - len(out))


def _dtype_of(ctx, i: int, default: int) -> int:
    f = ctx.input(i) if ctx.has_input(i) else None
    return f.dtype if f is not None and f.dtype else default


def _reduced(shape: tuple, axis: int) -> tuple:
    """A normalization's statistics: the dims before axis, 1 from axis on."""
    return tuple(shape[:axis]) + (1,) * (len(shape) - axis)


# --------------------------------------------------------------------------- elementwise


@rule("FastGelu", "Gelu", "QuickGelu", "BiasGelu", "BiasAdd", "BiasSoftmax", "RotaryEmbedding", domain=MS)
def same_as_input(ctx):
    """The output has input 0's shape and type (a bias is added along the last axis)."""
    x = ctx.input(0)
    return _outputs(ctx, _like(x)) if _known(x) else None


# Ops onnxruntime runs on GPUs only (no CPU kernel): the shapes its documentation gives.


@rule("GroupNorm", "SkipGroupNorm", domain=MS)
def group_norm(ctx):
    """NHWC group normalization: the output (and SkipGroupNorm's sum output) like the input."""
    x = ctx.input(0)
    return [_like(x) for _ in ctx.node.output] if _known(x) else None


@rule("BiasSplitGelu", domain=MS)
def bias_split_gelu(ctx):
    """[N, S, D] -> [N, S, D/2]: the biased input split in two halves along the last axis."""
    x = ctx.input(0)
    if not _known(x) or not x.shape:
        return None
    d = x.shape[-1]
    if isinstance(d, int) and d % 2:
        raise ctx.error(f"the last dim ({d}) must be even")
    half = d // 2 if isinstance(d, int) else truediv(d, 2)
    return [_like(x, shape=tuple(x.shape[:-1]) + (half,))]


@rule("GemmFastGelu", domain=MS)
def gemm_fast_gelu(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if not (_known(a) and _known(b)):
        return None
    return [_like(a, shape=matmul_shape(ctx, a.shape, b.shape))]


@rule("RelativePositionBias", domain=MS)
def relative_position_bias(ctx):
    """(bias_table [buckets, heads], query_length, key_length) -> [1, heads, query_length,
    key_length] (the lengths are values: unknown where they come from the data)."""
    table = ctx.input(0)
    if not _known(table) or len(table.shape) != 2:
        return None
    lengths = []
    for i in (1, 2):
        entries = value_entries(ctx.input(i)) if ctx.has_input(i) else None
        e = entries[0] if entries and len(entries) == 1 else None
        lengths.append(e if e is not None and provably_nonneg(e) else ctx.fresh())
    return [_like(table, shape=(1, table.shape[1], *lengths))]


# --------------------------------------------------------------------------- normalizations


def _norm_outputs(ctx, x, stats_from: int, sum_index=None):
    """Y like x; the statistics outputs (from index stats_from) reduced from the axis on; the
    optional sum output (sum_index) like x."""
    r = len(x.shape)
    axis = normalize_axis(ctx, ctx.attr("axis", -1), r) if r else 0
    stash = ctx.attr("stash_type", TensorProto.FLOAT)
    outs = []
    for i in range(len(ctx.node.output)):
        if i == 0 or i == sum_index:
            outs.append(_like(x))
        elif i >= stats_from:
            outs.append(Fact(dtype=stash, shape=_reduced(x.shape, axis)))
        else:
            outs.append(None)
    return outs


@rule("SimplifiedLayerNormalization", since=1)
def simplified_layer_norm(ctx):
    """(X, scale) -> Y, inv_std_var: RMS normalization over the axes from ``axis`` on.
    onnxruntime registers it in the default domain (its session optimizer writes it there)."""
    x = ctx.input(0)
    return _norm_outputs(ctx, x, 1) if _known(x) else None


@rule("LayerNormalization", since=1)
def layer_norm_before_17(ctx):
    """LayerNormalization before opset 17 is onnxruntime's (in the default domain, as its fusions
    write it); from 17 on it is onnx's (same_shape.py), with the same shapes."""
    x = ctx.input(0)
    return _norm_outputs(ctx, x, 1) if _known(x) else None


@rule("LayerNormalization", "SimplifiedLayerNormalization", since=1, domain=MS)
def ms_layer_norm(ctx):
    x = ctx.input(0)
    return _norm_outputs(ctx, x, 1) if _known(x) else None


@rule("SkipLayerNormalization", "SkipSimplifiedLayerNormalization", domain=MS)
def skip_layer_norm(ctx):
    """(input, skip, gamma[, beta][, bias]) -> output, mean, inv_std_var, input_skip_bias_sum:
    the statistics are [.., 1] over the last axis (the hidden size)."""
    x = ctx.input(0)
    if not _known(x) or not x.shape:
        return None
    outs = [_like(x)]
    for i in range(1, len(ctx.node.output)):
        outs.append(_like(x) if i == 3 else Fact(dtype=TensorProto.FLOAT, shape=tuple(x.shape[:-1]) + (1,)))
    if len(outs) > 1 and x.dtype != TensorProto.FLOAT:
        outs[1:3] = [None] * len(outs[1:3])  # float16 inputs: the statistics' type is not documented
    return outs


@rule("EmbedLayerNormalization", domain=MS)
def embed_layer_norm(ctx):
    """(input_ids [B,S], segment_ids, word_embedding [V,H], position_embedding, segment_embedding,
    gamma, beta[, mask][, position_ids]) -> output [B,S,H], mask_index [B] (int32),
    embedding_sum [B,S,H]."""
    ids, words = ctx.input(0), ctx.input(2)
    if not (_known(ids) and _known(words)) or len(ids.shape) != 2 or len(words.shape) != 2:
        return None
    b, s = ids.shape
    hidden = Fact(dtype=words.dtype, shape=(b, s, words.shape[1]))
    return _outputs(ctx, hidden, Fact(dtype=TensorProto.INT32, shape=(b,)), hidden)


@rule("QEmbedLayerNormalization", domain=MS)
def q_embed_layer_norm(ctx):
    ids, words = ctx.input(0), ctx.input(2)
    if not (_known(ids) and _known(words)) or len(ids.shape) != 2 or len(words.shape) != 2:
        return None
    b, s = ids.shape
    return _outputs(ctx, Fact(dtype=TensorProto.FLOAT, shape=(b, s, words.shape[1])),
                    Fact(dtype=TensorProto.INT32, shape=(b,)))


# --------------------------------------------------------------------------- matmuls and convs


def _fused_operand(ctx, shape: tuple, trans: bool, trans_batch: bool):
    """FusedMatMul's view of an operand: with transBatch the first dim moves behind the batch
    dims ([d0, d1, .., dn] -> [d1, .., d(n-1), d0, dn]), then trans swaps the last two."""
    s = list(shape)
    if trans_batch and len(s) >= 3:
        s = s[1:-1] + [s[0], s[-1]]
    elif trans_batch and len(s) < 2:
        return None
    if trans:
        if len(s) < 2:
            return None
        s[-2], s[-1] = s[-1], s[-2]
    return tuple(s)


@rule("FusedMatMul", domain=MS)
def fused_matmul(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if not (_known(a) and _known(b)):
        return None
    sa = _fused_operand(ctx, a.shape, ctx.attr("transA", 0), ctx.attr("transBatchA", 0))
    sb = _fused_operand(ctx, b.shape, ctx.attr("transB", 0), ctx.attr("transBatchB", 0))
    if sa is None or sb is None:
        return None
    return [_like(a, shape=matmul_shape(ctx, sa, sb))]


@rule("MatMulNBits", domain=MS)
def matmul_nbits(ctx):
    """A [..., K] times a packed [N, K] weight -> [..., N] (N and K are attributes)."""
    a, n = ctx.input(0), ctx.attr("N")
    if not _known(a) or not a.shape or not isinstance(n, int):
        return None
    return [_like(a, shape=tuple(a.shape[:-1]) + (n,))]


@rule("MatMulIntegerToFloat", domain=MS)
def matmul_integer_to_float(ctx):
    """(A, B, a_scale, b_scale, ...) -> float of a_scale's type."""
    a, b = ctx.input(0), ctx.input(1)
    if not (_known(a) and _known(b)):
        return None
    return [Fact(dtype=_dtype_of(ctx, 2, TensorProto.FLOAT), shape=matmul_shape(ctx, a.shape, b.shape))]


@rule("DynamicQuantizeMatMul", domain=MS)
def dynamic_quantize_matmul(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if not (_known(a) and _known(b)):
        return None
    return [_like(a, shape=matmul_shape(ctx, a.shape, b.shape))]


@rule("MatMulInteger", since=10)
def matmul_integer(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if not (_known(a) and _known(b)):
        return None
    return [Fact(dtype=TensorProto.INT32, shape=matmul_shape(ctx, a.shape, b.shape))]


@rule("QLinearMatMul", since=10)
def qlinear_matmul(ctx):
    """(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> the type of y_zp."""
    a, b = ctx.input(0), ctx.input(3)
    if not (_known(a) and _known(b)):
        return None
    return [Fact(dtype=_dtype_of(ctx, 7, a.dtype), shape=matmul_shape(ctx, a.shape, b.shape))]


@rule("FusedGemm", domain=MS)
def fused_gemm(ctx):
    a = ctx.input(0)
    out = gemm_shape(ctx, a, ctx.input(1))
    return None if out is None else [_like(a, shape=out)]


@rule("QGemm", domain=MS)
def qgemm(ctx):
    """(A, a_scale, a_zp, B, b_scale, b_zp[, C][, y_scale, y_zp]): without y_scale the output
    is float, with it the type of y_zp (A's)."""
    a = ctx.input(0)
    out = gemm_shape(ctx, a, ctx.input(3))
    if out is None:
        return None
    dtype = _dtype_of(ctx, 8, a.dtype) if ctx.has_input(7) else TensorProto.FLOAT
    return [Fact(dtype=dtype, shape=out)]


@rule("FusedConv", "NhwcFusedConv", domain=MS)
def fused_conv(ctx):
    if ctx.op_type == "NhwcFusedConv":
        return None  # channels last: not the Conv layout
    x = ctx.input(0)
    out = conv_shape(ctx, x, ctx.input(1))
    return None if out is None else [_like(x, shape=out)]


@rule("ConvInteger", since=10)
def conv_integer(ctx):
    x = ctx.input(0)
    out = conv_shape(ctx, x, ctx.input(1))
    return None if out is None else [Fact(dtype=TensorProto.INT32, shape=out)]


@rule("QLinearConv", since=10)
def qlinear_conv(ctx):
    """(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B]) -> the type of y_zp."""
    x = ctx.input(0)
    out = conv_shape(ctx, x, ctx.input(3))
    return None if out is None else [Fact(dtype=_dtype_of(ctx, 7, x.dtype), shape=out)]


# --------------------------------------------------------------------------- quantized elementwise


@rule("QLinearAdd", "QLinearMul", domain=MS)
def qlinear_binary(ctx):
    """(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp): A and B broadcast."""
    a, b = ctx.input(0), ctx.input(3)
    if not (_known(a) and _known(b)):
        return None
    return [_like(a, shape=broadcast_shapes(ctx, [a.shape, b.shape]))]


@rule("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearReduceMean", domain=MS)
def qlinear_unary(ctx):
    x = ctx.input(0)
    if not _known(x) or ctx.op_type == "QLinearReduceMean":
        return None  # (a reduction: left to a fresh shape)
    return [_like(x)]


@rule("QLinearGlobalAveragePool", domain=MS)
def qlinear_global_average_pool(ctx):
    x = ctx.input(0)
    if not _known(x) or len(x.shape) < 3:
        return None
    if ctx.attr("channels_last", 0):
        return [_like(x, shape=(x.shape[0],) + (1,) * (len(x.shape) - 2) + (x.shape[-1],))]
    return [_like(x, shape=tuple(x.shape[:2]) + (1,) * (len(x.shape) - 2))]


@rule("QLinearAveragePool", domain=MS)
def qlinear_average_pool(ctx):
    x = ctx.input(0)
    if ctx.attr("channels_last", 0):
        return None
    out = pool_shape(ctx, x, ceil_mode=bool(ctx.attr("ceil_mode", 0)))
    return None if out is None else [_like(x, shape=out)]


@rule("QLinearConcat", domain=MS)
def qlinear_concat(ctx):
    """(Y_scale, Y_zp, then (X, X_scale, X_zp) per input): the Xs concatenated along axis."""
    xs = [ctx.input(i) for i in range(2, len(ctx.node.input), 3)]
    if not xs or not all(_known(x) for x in xs):
        return None
    r = len(xs[0].shape)
    if any(len(x.shape) != r for x in xs) or r == 0:
        raise ctx.error("inputs have different ranks (or rank 0)")
    axis = normalize_axis(ctx, ctx.attr("axis", 0), r)
    out = list(xs[0].shape)
    for x in xs[1:]:
        out[axis] = add(out[axis], x.shape[axis])
    return [_like(xs[0], shape=tuple(out))]


@rule("QuantizeLinear", domain=MS)
def ms_quantize(ctx):
    x = ctx.input(0)
    return [_like(x, dtype=_dtype_of(ctx, 2, TensorProto.UINT8))] if _known(x) else None


@rule("DequantizeLinear", domain=MS)
def ms_dequantize(ctx):
    x = ctx.input(0)
    return [_like(x, dtype=_dtype_of(ctx, 1, TensorProto.FLOAT))] if _known(x) else None


@rule("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(ctx):
    x = ctx.input(0)
    if not _known(x):
        return None
    return _outputs(ctx, _like(x, dtype=TensorProto.UINT8), Fact(dtype=TensorProto.FLOAT, shape=()),
                    Fact(dtype=TensorProto.UINT8, shape=()))


# --------------------------------------------------------------------------- attention


def _heads(ctx) -> int:
    n = ctx.attr("num_heads")
    if not isinstance(n, int) or n <= 0:
        raise ctx.error(f"num_heads must be a positive integer, got {n!r}")
    return n


def _per_head(ctx, hidden, heads: int):
    """hidden / heads: exact (the op fails where it does not divide); None for a constant that
    does not divide."""
    if isinstance(hidden, int):
        return hidden // heads if hidden % heads == 0 else None
    return truediv(hidden, heads)


def _present(ctx, batch, heads, past_len, new_len, head_size, lead=()):
    if head_size is None:
        head_size = ctx.fresh()
    total = add(past_len, new_len) if past_len is not None else new_len
    return Fact(dtype=None, shape=tuple(lead) + (batch, heads, total, head_size))


@rule("Attention", domain=MS)
def attention(ctx):
    """(input [B,S,I], weights [I, q+k+v], bias, mask_index, past [2,B,N,P,H], ...) ->
    output [B,S,v_hidden], present [2,B,N,P+S,H]."""
    x, w = ctx.input(0), ctx.input(1)
    if not _known(x) or len(x.shape) != 3:
        return None
    heads = _heads(ctx)
    sizes = ctx.attr("qkv_hidden_sizes")
    b, s = x.shape[0], x.shape[1]
    if sizes:
        if len(sizes) != 3:
            raise ctx.error(f"qkv_hidden_sizes must have 3 entries, got {len(sizes)}")
        v_hidden, k_hidden = sizes[2], sizes[1]
    elif _known(w) and len(w.shape) == 2:
        third = w.shape[1] // 3 if isinstance(w.shape[1], int) else floordiv(w.shape[1], 3)
        v_hidden = k_hidden = third
    else:
        return None
    out = Fact(dtype=x.dtype, shape=(b, s, v_hidden))
    present = None
    if len(ctx.node.output) > 1 and ctx.node.output[1] and not ctx.attr("past_present_share_buffer", 0):
        past = ctx.input(4) if ctx.has_input(4) else None
        if past is None:
            past_len = None
        elif _known(past) and len(past.shape) == 5:
            past_len = past.shape[3]
        else:
            past_len = False
        if past_len is not False:
            p = _present(ctx, b, heads, past_len, s, _per_head(ctx, k_hidden, heads), lead=(2,))
            present = Fact(dtype=x.dtype, shape=p.shape)
    return _outputs(ctx, out, present)


@rule("QAttention", domain=MS)
def q_attention(ctx):
    """(input, weight [I, 3H], bias [3H], input_scale, weight_scale, mask_index, input_zp,
    weight_zp, past) -> float output [B,S,H], present [2,B,N,P+S,H/N]."""
    x, bias = ctx.input(0), ctx.input(2)
    if not (_known(x) and _known(bias)) or len(x.shape) != 3 or len(bias.shape) != 1:
        return None
    heads = _heads(ctx)
    hidden = bias.shape[0] // 3 if isinstance(bias.shape[0], int) else floordiv(bias.shape[0], 3)
    b, s = x.shape[0], x.shape[1]
    dtype = bias.dtype or TensorProto.FLOAT
    out = Fact(dtype=dtype, shape=(b, s, hidden))
    present = None
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        past = ctx.input(8) if ctx.has_input(8) else None
        if past is None or (_known(past) and len(past.shape) == 5):
            p = _present(ctx, b, heads, past.shape[3] if past is not None else None, s,
                         _per_head(ctx, hidden, heads), lead=(2,))
            present = Fact(dtype=dtype, shape=p.shape)
    return _outputs(ctx, out, present)


@rule("MultiHeadAttention", domain=MS)
def multi_head_attention(ctx):
    """(query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value, ...):
    query [B,S,D] with key/value [B,L,D]/[B,L,Dv] (or already split into heads [B,N,L,H]);
    packed QKV query [B,S,N,3,H] and packed KV key [B,L,N,2,H]. Output [B,S,v_hidden]; present
    key/value [B,N,P+L,H]."""
    q = ctx.input(0)
    if not _known(q):
        return None
    heads = _heads(ctx)
    key = ctx.input(1) if ctx.has_input(1) else None
    value = ctx.input(2) if ctx.has_input(2) else None
    if len(q.shape) == 5:  # packed QKV [B,S,N,3,H]
        b, s, n, _, h = q.shape
        return _outputs(ctx, _like(q, shape=(b, s, mul(n, h))))
    if len(q.shape) != 3:
        return None
    b, s = q.shape[0], q.shape[1]
    new_len = k_head = v_head = None
    if _known(key) and len(key.shape) == 5:  # packed KV [B,L,N,2,H]
        v_hidden = mul(key.shape[2], key.shape[4])
        new_len, k_head = key.shape[1], key.shape[4]
        v_head = k_head
    elif _known(value) and len(value.shape) == 3:
        v_hidden = value.shape[2]
        new_len = value.shape[1]
        v_head = _per_head(ctx, v_hidden, heads)
        if _known(key) and len(key.shape) == 3:
            k_head = _per_head(ctx, key.shape[2], heads)
    elif _known(value) and len(value.shape) == 4:  # [B,N,L,H]: already projected (cross attention)
        return _outputs(ctx, _like(q, shape=(b, s, mul(value.shape[1], value.shape[3]))))
    else:
        return None
    out = _like(q, shape=(b, s, v_hidden))
    presents = []
    for past_i, head in ((6, k_head), (7, v_head)):
        past = ctx.input(past_i) if ctx.has_input(past_i) else None
        if past is None:
            past_len = None
        elif _known(past) and len(past.shape) == 4:
            past_len = past.shape[2]
        else:
            presents.append(None)
            continue
        p = _present(ctx, b, heads, past_len, new_len, head)
        presents.append(Fact(dtype=q.dtype, shape=p.shape))
    return _outputs(ctx, out, *presents)


@rule("GroupQueryAttention", domain=MS)
def group_query_attention(ctx):
    """(query, key, value, past_key, past_value, seqlens_k, total_sequence_length, ...):
    output [B,S,num_heads*H]; present key/value [B,kv_num_heads,max(P, total),H] -- the past
    buffer when it is longer (shared), else total_sequence_length."""
    q = ctx.input(0)
    if not _known(q) or len(q.shape) != 3:
        return None
    heads = _heads(ctx)
    kv_heads = ctx.attr("kv_num_heads")
    if not isinstance(kv_heads, int) or kv_heads <= 0:
        raise ctx.error(f"kv_num_heads must be a positive integer, got {kv_heads!r}")
    b, s, d = q.shape
    packed = not ctx.has_input(1)
    if packed:
        head = _per_head(ctx, d, heads + 2 * kv_heads)
        if head is None:
            return None
        hidden = mul(heads, head)
    else:
        hidden, head = d, _per_head(ctx, d, heads)
    out = _like(q, shape=(b, s, hidden))
    total = ctx.input(6) if ctx.has_input(6) else None
    entries = value_entries(total)
    total_len = entries[0] if entries and len(entries) == 1 and entries[0] is not None else None
    past = ctx.input(3) if ctx.has_input(3) else None
    length = None
    if total_len is not None and provably_nonneg(total_len):
        if past is None:
            length = total_len
        elif _known(past) and len(past.shape) == 4:
            length = dmax(past.shape[2], total_len)
    # (a total computed from the data -- the attention mask's sum -- leaves the length unknown)
    present = Fact(dtype=q.dtype, shape=(b, kv_heads, length if length is not None else ctx.fresh(),
                                         head if head is not None else ctx.fresh()))
    return _outputs(ctx, out, present, present)



# --------------------------------------------------------------------------- NCHWc layout
# onnxruntime's ORT_ENABLE_ALL level rewrites convolutions into its blocked NCHWc layout
# (domain com.microsoft.nchwc); a model saved at that level carries these ops. The channel
# block is the machine's (8 or 16 floats): a channel count is padded up to it, so a count
# that is not a multiple of 16 becomes a fresh dim; spatial dims keep their arithmetic.

NCHWC = "com.microsoft.nchwc"


@rule("Conv", domain=NCHWC)
def nchwc_conv(ctx):
    x = ctx.input(0)
    out = conv_shape(ctx, x, ctx.input(1))
    return None if out is None else [_like(x, shape=out)]


@rule("MaxPool", "AveragePool", domain=NCHWC)
def nchwc_pool(ctx):
    x = ctx.input(0)
    out = pool_shape(ctx, x, ceil_mode=bool(ctx.attr("ceil_mode", 0)))
    return None if out is None else [_like(x, shape=out)]


@rule("GlobalAveragePool", "GlobalMaxPool", domain=NCHWC)
def nchwc_global_pool(ctx):
    x = ctx.input(0)
    if not _known(x) or len(x.shape) < 3:
        return None
    return [_like(x, shape=tuple(x.shape[:2]) + (1,) * (len(x.shape) - 2))]


@rule("Upsample", domain=NCHWC)
def nchwc_upsample(ctx):
    x, scales = ctx.input(0), ctx.attr("scales")
    if not _known(x) or not scales or len(scales) != len(x.shape):
        return None
    return [_like(x, shape=tuple(mul(d, int(s)) for d, s in zip(x.shape, scales)))]


@rule("ReorderInput", domain=NCHWC)
def reorder_input(ctx):
    """NCHW (or NHWC with channels_last) to blocked NCHWc: [N, C padded to the block, H, W]."""
    x = ctx.input(0)
    if not _known(x) or len(x.shape) < 3:
        return None
    if ctx.attr("channels_last", 0):
        n, c, spatial = x.shape[0], x.shape[-1], tuple(x.shape[1:-1])
    else:
        n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    padded = c if isinstance(c, int) and c % 16 == 0 else ctx.fresh("channels")
    return [_like(x, shape=(n, padded) + spatial)]


@rule("ReorderOutput", domain=NCHWC)
def reorder_output(ctx):
    """Blocked NCHWc back to NCHW (or NHWC with channels_last) with ``channels`` channels."""
    x, channels = ctx.input(0), ctx.attr("channels")
    if not _known(x) or len(x.shape) < 3 or not isinstance(channels, int):
        return None
    if ctx.attr("channels_last", 0):
        return [_like(x, shape=(x.shape[0],) + tuple(x.shape[2:]) + (channels,))]
    return [_like(x, shape=(x.shape[0], channels) + tuple(x.shape[2:]))]
