"""Constant folding.

Cases:
1. a node whose inputs are all constants (and whose subgraphs read only constants) is computed
   -- NumPy kernels for the data-movement and shape ops, onnx.reference for the rest -- and its
   outputs become constants, unless an output would exceed the size budget (larger than its
   inputs together and than ``fold_budget`` bytes) or the op is non-deterministic;
2. a tensor inference knows the full integer value of (``Shape`` of a tensor whose shape is
   static, ``Gather`` of such a shape, arithmetic on them...) becomes a constant, whatever its
   producer's inputs are.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import helper

from ..fold.folder import constant_array, constant_values, fold_node, outer_variables, within_budget
from ..fold.kernels import FoldError
from .base import Pass, PassResult, register


def _known_int_value(ctx, tensor):
    fact = ctx.facts.fact(tensor.name)
    if fact is None or fact.value is None or fact.dtype == 0:
        return None
    flat = fact.int_elements()
    if flat is None or fact.value.dtype != object:
        return None
    try:
        return np.array(flat, dtype=helper.tensor_dtype_to_np_dtype(fact.dtype)).reshape(fact.value.shape)
    except (OverflowError, ValueError, TypeError):
        return None


@register
class ConstantFoldingPass(Pass):
    name = "fold-constants"
    description = "compute nodes whose inputs are constants; make known shape values constants"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        for node in list(ctx.graph.nodes):
            if not node.outputs:
                continue
            inputs = [None if t.is_empty() else t for t in node.inputs]
            if all(t is None or isinstance(t, gs.Constant) for t in inputs) and not outer_variables(node):
                if self._fold(ctx, node, inputs, result):
                    continue
            known = [_known_int_value(ctx, t) for t in node.outputs]
            if known and all(k is not None for k in known):
                for t, arr in zip(node.outputs, known):
                    t.to_constant(constant_values(arr, t.name))
                node.outputs.clear()
                result.change(node, "its output value is known from inference: a constant now")

        return result

    def _fold(self, ctx, node, inputs, result):
        try:
            arrays = [None if t is None else constant_array(t) for t in inputs]
        except Exception:  # weights kept as external data are not loaded, so not folded
            result.decline(node, "not folded: an input's data is not loaded (external data)")
            return False
        domain = "" if node.domain in (None, "", "ai.onnx") else node.domain
        version = ctx.opsets.get(domain)
        if version is None:
            return False
        try:
            outs = fold_node(node, arrays, version, ctx.opsets, ctx.ir_version)
        except FoldError as e:
            result.decline(node, f"not folded: {e}")
            return True  # the inputs break the op's rule: inference reports it, nothing to do here
        if outs is None or len(outs) < len([t for t in node.outputs if not t.is_empty()]):
            return False
        if not within_budget(outs, arrays, ctx.fold_budget, node.op):
            result.decline(node, "not folded: the output would be larger than its inputs and the budget")
            return True
        for t, arr in zip(node.outputs, outs):
            if t.is_empty():
                continue
            expected = ctx.facts.fact(t.name)
            if expected is not None and expected.dtype:
                try:
                    want = helper.tensor_dtype_to_np_dtype(expected.dtype)
                except Exception:
                    want = None
                if want is not None and arr.dtype != want and arr.dtype != object:
                    arr = arr.astype(want)
            t.to_constant(constant_values(np.asarray(arr), t.name))
        node.outputs.clear()
        if node.op != "Constant":
            result.change(node, "folded to a constant")
        else:
            result.changed += 1  # a Constant node became an initializer: counted, not listed
        return True
