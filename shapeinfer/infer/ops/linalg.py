"""MatMul and Gemm: batch dims broadcast like elementwise ops (so symbols survive), the
contracted dims must agree.

``matmul_shape`` and ``gemm_shape`` hold the arithmetic; the quantized and fused variants
(MatMulInteger, QLinearMatMul, FusedMatMul, QGemm, FusedGemm, ... in ``quantized.py`` and
``contrib.py``) call them with their own operand shapes and output types."""

from __future__ import annotations

from ...symbolic import to_str

from ...symbolic import add, mul
from ..facts import Fact
from ..registry import rule
from ._util import broadcast_shapes


def _check_contracted(ctx, k1, k2):
    if isinstance(k1, int) and isinstance(k2, int) and k1 != k2:
        raise ctx.error(f"contracted dims differ: {k1} and {k2}")
    if k1 is not None and k2 is not None and k1 != k2:  # (a symbol against a traced size, two symbols)
        ctx.condition(f"valid only when the contracted dims {to_str(k1)} == {to_str(k2)}", "equal", k1, k2)


def matmul_shape(ctx, sa, sb) -> tuple:
    """The output shape of numpy.matmul on operand shapes sa and sb (a rank-1 operand is a
    vector: its added dim is dropped again)."""
    sa, sb = list(sa), list(sb)
    if not sa or not sb:
        raise ctx.error(f"{ctx.op_type} inputs must have rank 1 or more")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        sa = [1] + sa
    if b_vec:
        sb = sb + [1]
    _check_contracted(ctx, sa[-1], sb[-2])
    out = list(broadcast_shapes(ctx, [tuple(sa[:-2]), tuple(sb[:-2])]))
    if not a_vec:
        out.append(sa[-2])
    if not b_vec:
        out.append(sb[-1])
    return tuple(out)


def gemm_shape(ctx, sa, sb, trans_a, trans_b) -> tuple | None:
    """(M, N) of A*B with 2-D operands transposed as the flags say; None if a rank is not 2."""
    if sa is None or sb is None or len(sa) != 2 or len(sb) != 2:
        return None
    m, k1 = sa[::-1] if trans_a else sa
    k2, n = sb[::-1] if trans_b else sb
    _check_contracted(ctx, k1, k2)
    return (m, n)


@rule("MatMul", since=1)
def matmul(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    return [Fact(dtype=a.dtype, shape=matmul_shape(ctx, a.shape, b.shape))]


@rule("Gemm", since=7)
def gemm(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if a is None or b is None:
        return None
    shape = gemm_shape(ctx, a.shape, b.shape, ctx.attr("transA", 0), ctx.attr("transB", 0))
    return None if shape is None else [Fact(dtype=a.dtype, shape=shape)]


def _attention_25_combinations(ctx) -> None:
    """Attention-25's rules on what is given together (its windows, its caches)."""
    for name in ("left_window_size", "right_window_size"):
        size = ctx.attr(name)
        if isinstance(size, int) and size < -1:
            raise ctx.error(f"{name} is {size}; it takes -1 (no limit) or a size of 0 or more")
    outs = ctx.node.output
    past = [ctx.has_input(i) for i in (4, 5)]
    present = [len(outs) > i and bool(outs[i]) for i in (1, 2)]
    if past[0] != past[1]:
        raise ctx.error("past_key and past_value are given together or not at all")
    if present[0] != present[1]:
        raise ctx.error("present_key and present_value are asked for together or not at all")
    if ctx.has_input(6) and (past[0] or present[0]):
        raise ctx.error("nonpad_kv_seqlen cannot be given with a past or present cache")


@rule("Attention", since=23)
def attention(ctx):
    """Scaled dot-product attention (opset 23, 24). 4-D: Q [B, Hq, S, h], K [B, Hkv, L, h],
    V [B, Hkv, L, hv]; 3-D: Q [B, S, Hq*h], K [B, L, Hkv*h], V [B, L, Hkv*hv] with the head
    counts q_num_heads, kv_num_heads given. past_key/past_value [B, Hkv, P, h]/[B, Hkv, P, hv]
    make the total length T = P + L (else T = L).
    Y [B, Hq, S, hv] (3-D: [B, S, Hq*hv]); present_key [B, Hkv, T, h]; present_value
    [B, Hkv, T, hv]; qk_matmul_output [B, Hq, S, T]. Q and K carry the type T1, V T2."""
    from .contrib import exact_div, int_attr

    if ctx.version >= 25:
        _attention_25_combinations(ctx)
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.version >= 25 and q is not None and q.shape is not None and len(q.shape) == 4 and (
            ctx.attr("q_num_heads") is not None or ctx.attr("kv_num_heads") is not None):
        raise ctx.error("q_num_heads and kv_num_heads are for 3-D inputs; Q is 4-D")
    t1 = q.dtype if q is not None else 0
    t2 = v.dtype if v is not None else 0
    n_out = len(ctx.node.output)
    unknown = [Fact(dtype=t) for t in (t1, t1, t2, t1)][:n_out]
    if any(f is None or f.shape is None for f in (q, k, v)):
        return unknown
    qs, ks, vs = q.shape, k.shape, v.shape
    if not (len(qs) == len(ks) == len(vs)) or len(qs) not in (3, 4):
        raise ctx.error(f"Q, K and V must all be 3-D or all 4-D, got ranks {len(qs)}, {len(ks)}, {len(vs)}")
    batch = qs[0]
    if len(qs) == 4:
        hq, seq, h = qs[1], qs[2], qs[3]
        hkv, kv_len, hv = ks[1], ks[2], vs[3]
    else:
        nq, nkv = int_attr(ctx, "q_num_heads"), int_attr(ctx, "kv_num_heads")
        if nq is None or nkv is None or nq <= 0 or nkv <= 0:
            raise ctx.error("3-D Q, K and V need positive q_num_heads and kv_num_heads attributes, got "
                            f"{ctx.attr('q_num_heads')!r} and {ctx.attr('kv_num_heads')!r}")
        hq, seq, h = nq, qs[1], exact_div(ctx, qs[2], nq)
        hkv, kv_len, hv = nkv, ks[1], exact_div(ctx, vs[2], nkv)
    past = ctx.input(4) if ctx.has_input(4) else None
    if ctx.has_input(4):
        if past is None or past.shape is None:
            total = ctx.fresh("total_sequence")
        elif len(past.shape) != 4:
            raise ctx.error(f"past_key must be 4-D [batch, kv_heads, past_sequence, head_size], got rank {len(past.shape)}")
        else:
            total = add(past.shape[2], kv_len)
    else:
        total = kv_len
    y = (batch, hq, seq, hv) if len(qs) == 4 else (batch, seq, mul(hq, hv))
    outs = [Fact(dtype=t1, shape=y), Fact(dtype=t1, shape=(batch, hkv, total, h)),
            Fact(dtype=t2, shape=(batch, hkv, total, hv)), Fact(dtype=t1, shape=(batch, hq, seq, total))]
    return outs[:n_out]
