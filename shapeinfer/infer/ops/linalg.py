"""MatMul and Gemm: batch dims broadcast like elementwise ops (so symbols survive), the
contracted dims must agree."""

from __future__ import annotations

from ..facts import Fact
from ..registry import rule
from ._util import broadcast_shapes


def _check_contracted(ctx, k1, k2):
    if isinstance(k1, int) and isinstance(k2, int) and k1 != k2:
        raise ctx.error(f"contracted dims differ: {k1} and {k2}")


@rule("MatMul", since=1)
def matmul(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    return [Fact(dtype=a.dtype, shape=matmul_shape(ctx, a.shape, b.shape))]


def matmul_shape(ctx, sa, sb) -> tuple:
    """The shape of MatMul(A, B) (numpy.matmul's rule) for operand shapes sa and sb."""
    sa, sb = list(sa), list(sb)
    if not sa or not sb:
        raise ctx.error(f"{ctx.op_type} inputs must have rank 1 or more")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        sa = [1] + sa
    if b_vec:
        sb = sb + [1]
    _check_contracted(ctx, sa[-1], sb[-2])
    batch = broadcast_shapes(ctx, [tuple(sa[:-2]), tuple(sb[:-2])])
    out = list(batch)
    if not a_vec:
        out.append(sa[-2])
    if not b_vec:
        out.append(sb[-1])
    return tuple(out)


@rule("Gemm", since=7)
def gemm(ctx):
    a, b = ctx.input(0), ctx.input(1)
    out = gemm_shape(ctx, a, b)
    return None if out is None else [Fact(dtype=a.dtype, shape=out)]


def gemm_shape(ctx, a, b):
    """(M, N) of Gemm(A, B) with the node's transA/transB, or None where a rank is unknown."""
    if a is None or b is None or a.shape is None or b.shape is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    m, k1 = a.shape[::-1] if ctx.attr("transA", 0) else a.shape
    k2, n = b.shape[::-1] if ctx.attr("transB", 0) else b.shape
    _check_contracted(ctx, k1, k2)
    return (m, n)
