"""MatMul and Gemm: batch dims broadcast like elementwise ops (so symbols survive), the
contracted dims must agree.

``matmul_shape`` and ``gemm_shape`` hold the arithmetic; the quantized and fused variants
(MatMulInteger, QLinearMatMul, FusedMatMul, QGemm, FusedGemm, ... in ``quantized.py`` and
``contrib.py``) call them with their own operand shapes and output types."""

from __future__ import annotations

from ..facts import Fact
from ..registry import rule
from ._util import broadcast_shapes


def _check_contracted(ctx, k1, k2):
    if isinstance(k1, int) and isinstance(k2, int) and k1 != k2:
        raise ctx.error(f"contracted dims differ: {k1} and {k2}")


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
