"""Rewrites of data layout and of MatMul + bias.

- ``merge-transposes``: Transpose of a Transpose becomes one Transpose with the composed
  permutation; a Transpose whose permutation is the identity is dropped (with a graph output,
  its input takes the output's name -- unless the input is a graph input, an initializer or
  another graph output: then it stays, or becomes one identity Transpose). Pure data
  movement: bit-exact.
- ``merge-concats``: a Concat read only by a Concat on the same axis has its inputs spliced
  into that one (the shape subgraphs of exports concatenate pieces in steps). Data movement:
  bit-exact.
- ``fuse-gemm``: MatMul of two 2-D tensors followed by an Add of a bias that broadcasts to the
  product's shape (and not beyond it) becomes one Gemm (alpha = beta = 1). float/double only.
  The sum is the same mathematical one; a float result may differ in the last bit where a
  kernel adds the bias in another order (onnxruntime's own MatMulAddFusion makes the same
  rewrite inside a session, so under onnxruntime the results agree).
"""

from __future__ import annotations

from onnx import TensorProto

from ..adapter import clear_inputs, set_input
from .base import NO_MATCH, Decline, Match, RewritePass, register
from .graph_ops import bypass, can_bypass, remove_node


def _perm(ctx, node):
    perm = node.attrs.get("perm")
    if perm is not None:
        return [int(p) for p in perm]
    shape = ctx.shape(node.inputs[0])
    return None if shape is None else list(range(len(shape)))[::-1]


@register
class MergeTransposesPass(RewritePass):
    name = "merge-transposes"
    description = "Transpose of a Transpose becomes one; an identity Transpose is dropped"
    ops = ("Transpose",)

    def check(self, ctx, node):
        if not node.outputs or not node.inputs:
            return NO_MATCH
        outer = _perm(ctx, node)
        if outer is None:
            return Decline("kept: its input rank is not known")
        src, perm, merged = node.inputs[0], outer, None
        if len(src.inputs) == 1 and ctx.op(src.inputs[0]) == "Transpose" and src.inputs[0].inputs:
            inner_node = src.inputs[0]
            inner = _perm(ctx, inner_node)
            if inner is not None and len(inner) == len(outer):
                # out[i] = mid[outer[i]] = x[inner[outer[i]]]
                perm, src, merged = [inner[p] for p in outer], inner_node.inputs[0], inner_node
        remove = perm == list(range(len(perm))) and can_bypass(ctx, node, src)
        if not remove and merged is None:
            return NO_MATCH
        return Match(source=src, perm=perm, merged=merged, remove=remove)

    def rewrite(self, ctx, node, match) -> str:
        merged = match.merged
        if match.remove:
            bypass(ctx, node, match.source)
            what = f"with {merged.name or 'Transpose'} gives the identity" if merged else "has the identity permutation"
            return f"removed: it {what}"
        set_input(node, 0, match.source)
        node.attrs["perm"] = match.perm
        ctx.touched(node)
        return f"merged with {merged.name or 'Transpose'}: one Transpose with perm {match.perm}"


@register
class MergeConcatsPass(RewritePass):
    name = "merge-concats"
    description = "a Concat read only by a Concat on the same axis is spliced into it"
    ops = ("Concat",)

    def check(self, ctx, node):
        if not node.outputs or not node.inputs or "axis" not in node.attrs:
            return NO_MATCH
        rank = ctx.shape(node.outputs[0])
        if rank is None:
            return NO_MATCH
        axis = int(node.attrs["axis"]) % len(rank) if rank else None
        for i, t in enumerate(node.inputs):
            if len(t.inputs) != 1 or len(t.outputs) != 1 or ctx.op(t.inputs[0]) != "Concat" or _is_graph_output(ctx, t):
                continue
            inner = t.inputs[0]
            inner_rank = ctx.shape(t)
            if "axis" not in inner.attrs or inner_rank is None or len(inner_rank) != len(rank) or not inner.inputs:
                continue
            if int(inner.attrs["axis"]) % len(rank) == axis:
                return Match(index=i, inner=inner)
        return NO_MATCH

    def rewrite(self, ctx, node, match) -> str:
        inner = match.inner
        spliced = list(node.inputs[:match.index]) + list(inner.inputs) + list(node.inputs[match.index + 1:])
        clear_inputs(node)
        node.inputs.extend(spliced)
        ctx.touched(node)
        return f"spliced in {inner.name or 'Concat'}: {len(node.inputs)} inputs"


def _is_graph_output(ctx, tensor) -> bool:
    return any(o is tensor for o in ctx.graph.outputs)


# float and double only: every runtime has those Gemm kernels (onnxruntime's CPU provider has
# MatMul and Add for float16, not always Gemm) -- a rewrite must not make a model unrunnable
GEMM_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE}


@register
class FuseGemmPass(RewritePass):
    name = "fuse-gemm"
    description = "MatMul of 2-D tensors + bias Add becomes one Gemm"
    assumption = ("MatMul + Add fused into Gemm may differ in the last bits (the bias is added "
                  "in another order; --fuse-gemm)")
    ops = ("MatMul",)

    def check(self, ctx, node):
        if ctx.opsets.get("", 0) < 9 or len(node.inputs) != 2 or len(node.outputs) != 1:
            return NO_MATCH
        prod = node.outputs[0]
        if prod.name in ctx.graph_outputs or len(prod.outputs) != 1 or ctx.op(prod.outputs[0]) != "Add":
            return NO_MATCH
        add = prod.outputs[0]
        if len(add.inputs) != 2 or add.inputs[0] is add.inputs[1] or not add.outputs:
            return NO_MATCH
        bias = add.inputs[1] if add.inputs[0] is prod else add.inputs[0]
        a, b, c, y = (ctx.shape(t) for t in (node.inputs[0], node.inputs[1], bias, prod))
        fact = ctx.facts.fact(prod.name)
        if a is None or b is None or c is None or y is None:
            return Decline("kept: an operand's shape is not known")
        if len(a) != 2 or len(b) != 2:
            return Decline("kept: Gemm takes 2-D operands only")
        if len(c) > 2 or any(d != 1 and d != t for d, t in zip(c, y[len(y) - len(c):])):
            return Decline("kept: the bias does not broadcast to the product's shape alone")
        if fact is None or fact.dtype not in GEMM_TYPES:
            return Decline("kept: Gemm does not take this element type")
        return Match(add=add, bias=bias)

    def rewrite(self, ctx, node, match) -> str:
        # the Add becomes the Gemm: it already sits after every operand's producer
        add = match.add
        add.op, add.attrs = "Gemm", {}
        operands = [node.inputs[0], node.inputs[1], match.bias]
        clear_inputs(add)
        add.inputs.extend(operands)
        remove_node(node)
        ctx.touched(add)
        return f"fused with {add.name or 'Add'} into Gemm"
