"""Rewrites of data layout and of MatMul + bias.

- ``merge-transposes``: Transpose of a Transpose becomes one Transpose with the composed
  permutation; a Transpose whose permutation is the identity is dropped. Pure data movement:
  bit-exact.
- ``fuse-gemm``: MatMul of two 2-D tensors followed by an Add of a bias that broadcasts to the
  product's shape (and not beyond it) becomes one Gemm (alpha = beta = 1). float/double only.
  The sum is the same mathematical one; a float result may differ in the last bit where a
  kernel adds the bias in another order (onnxruntime's own MatMulAddFusion makes the same
  rewrite inside a session, so under onnxruntime the results agree).
"""

from __future__ import annotations

from onnx import TensorProto

from .base import Pass, PassResult, register, remove_node, replace_uses


def _perm(ctx, node):
    perm = node.attrs.get("perm")
    if perm is not None:
        return [int(p) for p in perm]
    shape = ctx.shape(node.inputs[0])
    return None if shape is None else list(range(len(shape)))[::-1]


@register
class MergeTransposesPass(Pass):
    name = "merge-transposes"
    description = "Transpose of a Transpose becomes one; an identity Transpose is dropped"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if ctx.op(node) != "Transpose" or not node.outputs or not node.inputs:
                continue
            outer = _perm(ctx, node)
            if outer is None:
                result.decline(node, "kept: its input rank is not known")
                continue
            src, perm, merged = node.inputs[0], outer, None
            if len(src.inputs) == 1 and ctx.op(src.inputs[0]) == "Transpose" and src.inputs[0].inputs:
                inner_node = src.inputs[0]
                inner = _perm(ctx, inner_node)
                if inner is not None and len(inner) == len(outer):
                    # out[i] = mid[outer[i]] = x[inner[outer[i]]]
                    perm, src, merged = [inner[p] for p in outer], inner_node.inputs[0], inner_node
            out = node.outputs[0]
            if perm == list(range(len(perm))) and out.name not in ctx.graph_outputs:
                replace_uses(ctx.graph, out, src)
                remove_node(node)
                what = f"with {merged.name or 'Transpose'} gives the identity" if merged else "has the identity permutation"
                result.change(node, f"removed: it {what}")
            elif merged is not None:
                node.inputs[0] = src
                node.attrs["perm"] = perm
                ctx.touched(node)
                result.change(node, f"merged with {merged.name or 'Transpose'}: one Transpose with perm {perm}")
        return result


# float and double only: every runtime has those Gemm kernels (onnxruntime's CPU provider has
# MatMul and Add for float16, not always Gemm) -- a rewrite must not make a model unrunnable
GEMM_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE}


@register
class FuseGemmPass(Pass):
    name = "fuse-gemm"
    description = "MatMul of 2-D tensors + bias Add becomes one Gemm"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        if ctx.opsets.get("", 0) < 9:
            return result
        types = GEMM_TYPES
        for node in list(ctx.graph.nodes):
            if ctx.op(node) != "MatMul" or len(node.inputs) != 2 or len(node.outputs) != 1:
                continue
            prod = node.outputs[0]
            if prod.name in ctx.graph_outputs or len(prod.outputs) != 1 or ctx.op(prod.outputs[0]) != "Add":
                continue
            add = prod.outputs[0]
            if len(add.inputs) != 2 or add.inputs[0] is add.inputs[1] or not add.outputs:
                continue
            bias = add.inputs[1] if add.inputs[0] is prod else add.inputs[0]
            a, b, c, y = (ctx.shape(t) for t in (node.inputs[0], node.inputs[1], bias, prod))
            fact = ctx.facts.fact(prod.name)
            why = None
            if a is None or b is None or c is None or y is None:
                why = "an operand's shape is not known"
            elif len(a) != 2 or len(b) != 2:
                why = "Gemm takes 2-D operands only"
            elif len(c) > 2 or any(d != 1 and d != t for d, t in zip(c, y[len(y) - len(c):])):
                why = "the bias does not broadcast to the product's shape alone"
            elif fact is None or fact.dtype not in types:
                why = "Gemm does not take this element type"
            if why:
                result.decline(node, f"kept: {why}")
                continue
            # the Add becomes the Gemm: it already sits after every operand's producer
            add.op, add.attrs = "Gemm", {}
            operands = [node.inputs[0], node.inputs[1], bias]
            add.inputs.clear()
            add.inputs.extend(operands)
            remove_node(node)
            ctx.touched(add)
            result.change(node, f"fused with {add.name or 'Add'} into Gemm")
        return result
