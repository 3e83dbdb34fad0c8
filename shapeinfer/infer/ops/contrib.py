"""onnxruntime's own ops (domain ``com.microsoft``) that transformer exports and onnxruntime's
graph fusions produce: the fused normalizations, activations, MatMul/Gemm/Conv with fused
epilogues, the attention family, rotary embeddings and the BERT embedding layer.

Semantics are onnxruntime's contrib-op schemas (docs/ContribOperators.md); where the text is
vague the rule follows what onnxruntime's CPU kernels produce, and a dim they make from data
(a buffer length chosen at run time) is a fresh symbol. Where onnxruntime departs from its
own documentation it is said beside the rule. The quantized ops of the domain live in
``quantized.py``.

Every rule answers every output: a Fact with a fresh dim where the dim is not expressible,
and with an unknown rank where even that is not known -- never None, which would send the
node to onnx's inference (onnx does not know these ops).
"""

from __future__ import annotations

from onnx import TensorProto

from ...symbolic import add, dmax, floordiv, mul, provably_nonneg, to_str
from ..facts import Fact, as_dim
from ..registry import rule
from ._util import normalize_axis
from .conv import conv_shape, pool_facts, pool_shape
from .linalg import gemm_shape, matmul_shape
from .same_shape import layer_norm

MS = "com.microsoft"


# -- helpers ----------------------------------------------------------------------------------

def shape_of(ctx, i: int) -> tuple | None:
    """The shape of input i, or None when the input is absent or its rank unknown."""
    if not ctx.has_input(i):
        return None
    f = ctx.input(i)
    return None if f is None else f.shape


def dtype_of(ctx, i: int, default: int = 0) -> int:
    f = ctx.input(i) if ctx.has_input(i) else None
    return f.dtype if f is not None and f.dtype else default


def answer(ctx, facts: list) -> list:
    """One Fact per node output (an unknown one where the rule had nothing)."""
    n = len(ctx.node.output)
    out = list(facts[:n]) + [None] * (n - len(facts))
    return [f if f is not None else Fact() for f in out]


def exact_div(ctx, d, k: int):
    """d / k for a dim the op requires to be a multiple of k: a plain int when d is one (an
    error when it is not divisible), ``floor(d/k)`` otherwise -- equal to d/k at every size
    the node runs with."""
    if k <= 0:
        raise ctx.error(f"cannot divide dim {d} into {k} parts")
    if isinstance(d, int):
        if d % k:
            raise ctx.error(f"dim {d} is not a multiple of {k}")
        return d // k
    if k > 1:
        ctx.condition(f"valid only when {to_str(d)} is a multiple of {k}", "multiple", d, k)
    return floordiv(d, k)


def int_attr(ctx, name: str) -> int | None:
    v = ctx.attr(name)
    return int(v) if isinstance(v, int) else None


def scalar_dim(ctx, i: int):
    """The value of a scalar (or one-element) integer input as a dim, when it is known."""
    f = ctx.input(i) if ctx.has_input(i) else None
    if f is None or f.value is None or f.value.size != 1:
        return None
    return as_dim(f.value.reshape(-1).tolist()[0])


def same_as_input(ctx, i: int = 0) -> list:
    f = ctx.input(i)
    if f is None:
        return answer(ctx, [])
    return answer(ctx, [Fact(dtype=f.dtype, shape=f.shape)])


# -- normalizations ---------------------------------------------------------------------------

@rule("SkipLayerNormalization", "SkipSimplifiedLayerNormalization", since=1, domain=MS)
def skip_layer_norm(ctx):
    """Outputs: the normalized sum [.., H]; mean and inv_std_var [.., 1] (float); the sum
    input + skip (+ bias) [.., H]. The skip may be smaller than the input (it broadcasts):
    every output follows the input."""
    x = ctx.input(0)
    if x is None:
        return answer(ctx, [])
    stats = None if x.shape is None or not x.shape else tuple(x.shape[:-1]) + (1,)
    return answer(ctx, [
        Fact(dtype=x.dtype, shape=x.shape),
        Fact(dtype=TensorProto.FLOAT, shape=stats),
        Fact(dtype=TensorProto.FLOAT, shape=stats),
        Fact(dtype=x.dtype, shape=x.shape),
    ])


def _norm_with_stats(ctx):
    """Y like X (in the scale's type), then statistics over the dims from ``axis`` on, kept as
    1s, in ``stash_type``: onnxruntime's SimplifiedLayerNormalization (Y, inv_std_var) and its
    LayerNormalization before ONNX defined one (Y, mean, inv_std_var)."""
    x = ctx.input(0)
    if x is None:
        return answer(ctx, [])
    y_type = dtype_of(ctx, 1, x.dtype)
    stash = ctx.attr("stash_type", TensorProto.FLOAT)
    stats = None
    if x.shape is not None:
        r = len(x.shape)
        axis = normalize_axis(ctx, ctx.attr("axis", -1), r)
        stats = tuple(x.shape[:axis]) + (1,) * (r - axis)
    return answer(ctx, [Fact(dtype=y_type, shape=x.shape)] + [Fact(dtype=stash, shape=stats)
                                                               for _ in ctx.node.output[1:]])


# onnxruntime's session optimizer writes SimplifiedLayerNormalization in the default domain
# (where onnxruntime registers it); some converters write it in com.microsoft.
rule("SimplifiedLayerNormalization", since=1)(_norm_with_stats)
rule("SimplifiedLayerNormalization", since=1, domain=MS)(_norm_with_stats)
# LayerNormalization before default-domain opset 17 is onnxruntime's own op (ONNX defines it
# from 17: same_shape.py), and some exporters write it in com.microsoft.
rule("LayerNormalization", since=1)(_norm_with_stats)
rule("LayerNormalization", since=1, domain=MS)(layer_norm)


# -- elementwise --------------------------------------------------------------------------------

@rule("Gelu", "QuickGelu", "FastGelu", "BiasGelu", "BiasAdd", "BiasSoftmax", "RotaryEmbedding",
      since=1, domain=MS)
def like_first_input(ctx):
    """Outputs shaped like input 0: the biases of BiasGelu/FastGelu/BiasAdd are 1-D over the last
    dim (and BiasAdd's skip has input 0's shape), BiasSoftmax's bias broadcasts into the
    scores, RotaryEmbedding rotates its input in place."""
    return same_as_input(ctx, 0)


# -- MatMul, Gemm and Conv with fused parts -------------------------------------------------------

def fused_matmul_operand(ctx, shape, trans: bool, trans_batch: bool) -> tuple:
    """An operand of FusedMatMul as the plain MatMul it stands for. ``transBatch`` moves dim 0
    behind the batch dims ([M, b1.., K] is read as [b1.., M, K]); ``trans`` then swaps the last
    two; neither touches a vector (onnxruntime's kernel ignores them there)."""
    shape = list(shape)
    if len(shape) == 1:
        return tuple(shape)
    if trans_batch:
        shape = shape[1:-1] + [shape[0], shape[-1]]
    if trans:
        shape[-2], shape[-1] = shape[-1], shape[-2]
    return tuple(shape)


@rule("FusedMatMul", since=1, domain=MS)
def fused_matmul(ctx):
    a, b = shape_of(ctx, 0), shape_of(ctx, 1)
    dtype = dtype_of(ctx, 0)
    if a is None or b is None:
        return answer(ctx, [Fact(dtype=dtype)])
    tba, tbb = bool(ctx.attr("transBatchA", 0)), bool(ctx.attr("transBatchB", 0))
    if (tba or tbb) and not (len(a) == len(b) and len(a) >= 3):
        raise ctx.error("transBatchA/transBatchB need two operands of the same rank, 3 or more")
    sa = fused_matmul_operand(ctx, a, bool(ctx.attr("transA", 0)), tba)
    sb = fused_matmul_operand(ctx, b, bool(ctx.attr("transB", 0)), tbb)
    return answer(ctx, [Fact(dtype=dtype, shape=matmul_shape(ctx, sa, sb))])


@rule("FusedGemm", since=1, domain=MS)
def fused_gemm(ctx):
    shape = gemm_shape(ctx, shape_of(ctx, 0), shape_of(ctx, 1), ctx.attr("transA", 0), ctx.attr("transB", 0))
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 0), shape=shape)])


@rule("FusedConv", since=1, domain=MS)
def fused_conv(ctx):
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 0), shape=conv_shape(ctx, shape_of(ctx, 0), shape_of(ctx, 1)))])


@rule("NhwcConv", "NhwcFusedConv", since=1, domain=MS)
def nhwc_conv(ctx):
    """Conv with input 0 and output 0 channels-last ([N, D1.., C] -> [N, E1.., M]); W as Conv's
    [M, C/group, k1..] (onnxruntime infers them through Conv's rule on the transposed shapes)."""
    x = shape_of(ctx, 0)
    first = None if x is None or len(x) < 2 else (x[0], x[-1]) + tuple(x[1:-1])
    out = conv_shape(ctx, first, shape_of(ctx, 1))
    return answer(ctx, [Fact(dtype=dtype_of(ctx, 0),
                             shape=None if out is None else (out[0],) + tuple(out[2:]) + (out[1],))])


# -- attention ----------------------------------------------------------------------------------

def _num_heads(ctx, name: str = "num_heads") -> int:
    n = int_attr(ctx, name)
    if n is None or n <= 0:
        raise ctx.error(f"{name} must be a positive int, got {ctx.attr(name)!r}")
    return n


@rule("Attention", since=1, domain=MS)
def attention(ctx):
    """input [B, S, Din], weights [Din, q+k+v], bias [q+k+v], past [2, B, N, P, h].
    output [B, S, v]; present [2, B, N, P+S, v/N].

    onnxruntime sizes the head of ``present`` by v_hidden_size / num_heads (its docs say
    head_size, which is q's); they differ only without a past, where q and v may differ.
    With ``past_present_share_buffer`` the present length is the buffer's, left fresh."""
    return _attention_like(ctx, weights=1, bias=2, past=4, qkv=ctx.attr("qkv_hidden_sizes"))


def _attention_like(ctx, weights: int, bias: int, past: int, qkv):
    x = shape_of(ctx, 0)
    dtype = dtype_of(ctx, bias if ctx.op_type == "QAttention" else 0)
    n = _num_heads(ctx)
    if x is None or len(x) != 3:
        if x is not None:
            raise ctx.error(f"input must be 3-D [batch, sequence, hidden], got rank {len(x)}")
        return answer(ctx, [Fact(dtype=dtype), Fact(dtype=dtype)])
    batch, seq = x[0], x[1]
    if qkv:
        if len(qkv) != 3:
            raise ctx.error(f"qkv_hidden_sizes must have 3 entries, got {list(qkv)}")
        v_hidden = int(qkv[2])
    else:
        total = shape_of(ctx, bias)
        total = total[0] if total is not None and len(total) == 1 else None
        if total is None:
            w = shape_of(ctx, weights)
            total = w[1] if w is not None and len(w) == 2 else None
        v_hidden = exact_div(ctx, total, 3) if total is not None else ctx.fresh()
    outs = [Fact(dtype=dtype, shape=(batch, seq, v_hidden))]
    p = shape_of(ctx, past)
    if p is not None and len(p) != 5:
        raise ctx.error(f"past must be 5-D [2, batch, heads, past_sequence, head_size], got rank {len(p)}")
    if ctx.attr("past_present_share_buffer", 0):
        length = ctx.fresh("kv_len")
    elif p is not None:
        length = add(p[3], seq)
    elif ctx.has_input(past):
        length = ctx.fresh("kv_len")  # a past of unknown rank
    else:
        length = seq
    outs.append(Fact(dtype=dtype, shape=(2, batch, n, length, exact_div(ctx, v_hidden, n))))
    return answer(ctx, outs)


@rule("QAttention", since=1, domain=MS)
def q_attention(ctx):
    """Attention on quantized input and weight: output [B, S, H] and present
    [2, B, N, P+S, H/N] in the bias's (float) type; H = bias/3, past is input 8."""
    return _attention_like(ctx, weights=1, bias=2, past=8, qkv=None)


@rule("MultiHeadAttention", since=1, domain=MS)
def multi_head_attention(ctx):
    """query [B, S, Hq] with key/value [B, L, Hk]/[B, L, Hv], or key/value already split into
    heads [B, N, L, h] (cross attention), or packed KV key [B, L, N, 2, h]; or packed QKV query
    [B, S, N, 3, h]. past_key/past_value [B, N, P, h].
    output [B, S, Hv]; present_key [B, N, P+L, Hq/N]; present_value [B, N, P+L, Hv/N];
    qk [B, N, S, P+L]. With buffer sharing (past_sequence_length given) the present length is
    the buffer's, left fresh."""
    q = shape_of(ctx, 0)
    dtype = dtype_of(ctx, 0)
    n = _num_heads(ctx)
    if q is None:
        return answer(ctx, [Fact(dtype=dtype) for _ in range(4)])
    k, v = shape_of(ctx, 1), shape_of(ctx, 2)
    batch, seq = q[0], q[1]
    kv_len = head_k = head_v = None
    if len(q) == 5:  # packed QKV
        hidden_v = mul(q[2], q[4])
        kv_len, head_k, head_v = seq, q[4], q[4]
    elif len(q) == 3:
        if k is not None and len(k) == 5:  # packed KV
            hidden_v = q[2]
            kv_len, head_k, head_v = k[1], k[4], k[4]
        elif k is not None and len(k) == 3 and v is not None and len(v) == 3:
            hidden_v = v[2]
            kv_len, head_k, head_v = k[1], exact_div(ctx, q[2], n), exact_div(ctx, v[2], n)
        elif k is not None and len(k) == 4 and v is not None and len(v) == 4:  # BNSH key/value
            hidden_v = mul(n, v[3])
            kv_len, head_k, head_v = k[2], k[3], v[3]
        else:
            hidden_v = ctx.fresh()
    else:
        raise ctx.error(f"query must be 3-D or 5-D (packed QKV), got rank {len(q)}")
    outs = [Fact(dtype=dtype, shape=(batch, seq, hidden_v))]
    past = shape_of(ctx, 6)
    if kv_len is None or ctx.has_input(8) or (ctx.has_input(6) and (past is None or k is not None and len(k) == 4)):
        length = ctx.fresh("kv_len")
    elif past is not None:
        if len(past) != 4:
            raise ctx.error(f"past_key must be 4-D [batch, heads, past_sequence, head_size], got rank {len(past)}")
        length = add(past[2], kv_len)
    else:
        length = kv_len
    fresh = ctx.fresh
    outs.append(Fact(dtype=dtype, shape=(batch, n, length, head_k if head_k is not None else fresh())))
    outs.append(Fact(dtype=dtype, shape=(batch, n, length, head_v if head_v is not None else fresh())))
    outs.append(Fact(dtype=dtype, shape=(batch, n, seq, length)))
    return answer(ctx, outs)


@rule("GroupQueryAttention", since=1, domain=MS)
def group_query_attention(ctx):
    """query [B, S, N*h] (or packed QKV [B, S, (N + 2*Nkv)*h] with no key/value), past_key and
    past_value [B, Nkv, P, h], total_sequence_length a scalar T.
    output [B, S, N*h]; present_key/present_value [B, Nkv, L, h]; output_qk [B, N, S, T] (T also
    where the cache is a fixed buffer longer than T).

    onnxruntime's CPU kernel makes L = max(T, P): without a past T must equal S, so L = S; with
    a past the cache is either growing (T = P + S) or a fixed buffer (T <= P), which only T's
    value tells apart -- L is exact when T is a known dim, fresh otherwise. A windowed cache
    (``sliding_window_cache``) keeps its capacity P; with right-padded chunks (query_seqlens) T
    is only a bound and L is fresh."""
    q = shape_of(ctx, 0)
    dtype = dtype_of(ctx, 0)
    n = _num_heads(ctx)
    n_kv = _num_heads(ctx, "kv_num_heads")
    past = shape_of(ctx, 3)
    cache_type = dtype_of(ctx, 3, dtype)
    if q is None or len(q) != 3:
        if q is not None:
            raise ctx.error(f"query must be 3-D [batch, sequence, hidden], got rank {len(q)}")
        return answer(ctx, [Fact(dtype=dtype), Fact(dtype=cache_type), Fact(dtype=cache_type), Fact(dtype=dtype)])
    batch, seq = q[0], q[1]
    if ctx.has_input(1):
        head = exact_div(ctx, q[2], n)
        hidden = q[2]
    else:
        head = exact_div(ctx, q[2], n + 2 * n_kv)
        hidden = mul(n, head)
    if past is not None and len(past) != 4:
        raise ctx.error(f"past_key must be 4-D [batch, kv_heads, past_sequence, head_size], got rank {len(past)}")
    if past is None and ctx.has_input(3):
        length = ctx.fresh("kv_len")
    elif past is None:
        length = seq
    elif ctx.attr("sliding_window_cache", 0):
        length = past[2]
    elif ctx.has_input(16):
        length = ctx.fresh("kv_len")
    else:
        total = scalar_dim(ctx, 6)
        length = dmax(total, past[2]) if total is not None else ctx.fresh("kv_len")
    total = scalar_dim(ctx, 6)
    if past is None:
        qk_len = seq  # without a past T equals S
    else:
        qk_len = total if total is not None else ctx.fresh("kv_len")
    quantized = any(ctx.attr(a, b"NONE") not in (b"NONE", "NONE") for a in ("k_quant_type", "v_quant_type"))
    if past is not None:
        present = (past[0], past[1], length, past[3])
    else:
        present = (batch, n_kv, length, head if not quantized else ctx.fresh())
    return answer(ctx, [
        Fact(dtype=dtype, shape=(batch, seq, hidden)),
        Fact(dtype=cache_type, shape=present),
        Fact(dtype=cache_type, shape=present),
        Fact(dtype=dtype, shape=(batch, n, seq, qk_len)),
    ])


# -- embeddings -----------------------------------------------------------------------------------

@rule("EmbedLayerNormalization", since=1, domain=MS)
def embed_layer_norm(ctx):
    """input_ids [B, S], word_embedding [V, H]: output [B, S, H] (the embeddings' type),
    mask_index [B] (int32, made also without a mask), embedding_sum [B, S, H]."""
    return _embed(ctx, out_type=dtype_of(ctx, 2))


@rule("QEmbedLayerNormalization", since=1, domain=MS)
def q_embed_layer_norm(ctx):
    """As EmbedLayerNormalization, on quantized embeddings: the output has the scales' type."""
    return _embed(ctx, out_type=dtype_of(ctx, 8, TensorProto.FLOAT))


def _embed(ctx, out_type: int):
    ids, word = shape_of(ctx, 0), shape_of(ctx, 2)
    if ids is not None and len(ids) != 2:
        raise ctx.error(f"input_ids must be 2-D [batch, sequence], got rank {len(ids)}")
    if word is not None and len(word) != 2:
        raise ctx.error(f"word_embedding must be 2-D [vocabulary, hidden], got rank {len(word)}")
    if ids is None:
        return answer(ctx, [Fact(dtype=out_type), Fact(dtype=TensorProto.INT32), Fact(dtype=out_type)])
    hidden = word[1] if word is not None else ctx.fresh()
    out = (ids[0], ids[1], hidden)
    return answer(ctx, [Fact(dtype=out_type, shape=out), Fact(dtype=TensorProto.INT32, shape=(ids[0],)),
                        Fact(dtype=out_type, shape=out)])


# -- ops onnxruntime runs on GPUs only (no CPU kernel): the shapes its documentation gives -------

@rule("GroupNorm", "SkipGroupNorm", since=1, domain=MS)
def group_norm(ctx):
    """NHWC group normalization: the output (and SkipGroupNorm's sum output) like the input."""
    x = ctx.input(0)
    if x is None:
        return None
    return [Fact(dtype=x.dtype, shape=x.shape) for _ in ctx.node.output]


@rule("BiasSplitGelu", since=1, domain=MS)
def bias_split_gelu(ctx):
    """[N, S, D] -> [N, S, D/2]: the biased input split in two halves along the last axis."""
    x = ctx.input(0)
    if x is None or not x.shape:
        return None
    return [Fact(dtype=x.dtype, shape=tuple(x.shape[:-1]) + (exact_div(ctx, x.shape[-1], 2),))]


@rule("GemmFastGelu", since=1, domain=MS)
def gemm_fast_gelu(ctx):
    a, b = shape_of(ctx, 0), shape_of(ctx, 1)
    if a is None or b is None:
        return None
    return [Fact(dtype=dtype_of(ctx, 0), shape=matmul_shape(ctx, a, b))]


@rule("RelativePositionBias", since=1, domain=MS)
def relative_position_bias(ctx):
    """(bias_table [buckets, heads], query_length, key_length) -> [1, heads, query_length,
    key_length] (the lengths are values: fresh where they come from the data)."""
    table = shape_of(ctx, 0)
    if table is None or len(table) != 2:
        return None
    lengths = []
    for i in (1, 2):
        d = scalar_dim(ctx, i)
        lengths.append(d if d is not None and provably_nonneg(d) else ctx.fresh())
    return [Fact(dtype=dtype_of(ctx, 0), shape=(1, table[1], *lengths))]


# -- NCHWc layout ---------------------------------------------------------------------------------
# onnxruntime's ORT_ENABLE_ALL level rewrites convolutions into its blocked NCHWc layout
# (domain com.microsoft.nchwc); a model saved at that level carries these ops. The channel
# block is the machine's (8 or 16 floats): a channel count is padded up to it, so a count
# that is not a multiple of 16 becomes a fresh dim; spatial dims keep their arithmetic.

NCHWC = "com.microsoft.nchwc"


@rule("Conv", since=1, domain=NCHWC)
def nchwc_conv(ctx):
    x, w = shape_of(ctx, 0), shape_of(ctx, 1)
    out = conv_shape(ctx, x, w) if x is not None and w is not None else None
    return None if out is None else [Fact(dtype=dtype_of(ctx, 0), shape=out)]


@rule("MaxPool", "AveragePool", since=1, domain=NCHWC)
def nchwc_pool(ctx):
    x, kernel = shape_of(ctx, 0), ctx.attr("kernel_shape")
    if x is None or kernel is None or len(x) < 3:
        return None
    return pool_facts(ctx, [Fact(dtype=dtype_of(ctx, 0), shape=pool_shape(ctx, x, kernel, bool(ctx.attr("ceil_mode", 0))))])


@rule("GlobalAveragePool", "GlobalMaxPool", since=1, domain=NCHWC)
def nchwc_global_pool(ctx):
    x = shape_of(ctx, 0)
    if x is None or len(x) < 3:
        return None
    return [Fact(dtype=dtype_of(ctx, 0), shape=tuple(x[:2]) + (1,) * (len(x) - 2))]


@rule("Upsample", since=1, domain=NCHWC)
def nchwc_upsample(ctx):
    x, scales = shape_of(ctx, 0), ctx.attr("scales")
    if x is None or not scales or len(scales) != len(x):
        return None
    return [Fact(dtype=dtype_of(ctx, 0), shape=tuple(mul(d, int(s)) for d, s in zip(x, scales)))]


@rule("ReorderInput", since=1, domain=NCHWC)
def reorder_input(ctx):
    """NCHW (or NHWC with channels_last) to blocked NCHWc: [N, C padded to the block, H, W]."""
    x = shape_of(ctx, 0)
    if x is None or len(x) < 3:
        return None
    if ctx.attr("channels_last", 0):
        n, c, spatial = x[0], x[-1], tuple(x[1:-1])
    else:
        n, c, spatial = x[0], x[1], tuple(x[2:])
    padded = c if isinstance(c, int) and c % 16 == 0 else ctx.fresh("channels")
    return [Fact(dtype=dtype_of(ctx, 0), shape=(n, padded) + spatial)]


@rule("ReorderOutput", since=1, domain=NCHWC)
def reorder_output(ctx):
    """Blocked NCHWc back to NCHW (or NHWC with channels_last) with ``channels`` channels."""
    x, channels = shape_of(ctx, 0), ctx.attr("channels")
    if x is None or len(x) < 3 or not isinstance(channels, int):
        return None
    if ctx.attr("channels_last", 0):
        return [Fact(dtype=dtype_of(ctx, 0), shape=(x[0],) + tuple(x[2:]) + (channels,))]
    return [Fact(dtype=dtype_of(ctx, 0), shape=(x[0], channels) + tuple(x[2:]))]
