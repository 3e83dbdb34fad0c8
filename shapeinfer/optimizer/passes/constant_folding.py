"""Constant folding.

Cases:
1. a node whose inputs are all constants (and whose subgraphs read only constants) is computed
   and its outputs become constants -- only where the result is exactly defined (data
   movement, integer and boolean ops, comparisons, correctly rounded float ops, exact casts:
   see ``shapeinfer.fold``); float math that runtimes compute differently in the last bits
   (transcendental functions, float reductions and MatMul, ...) only with
   ``ctx.fold_float_math``. Not folded either: an output that would exceed the size budget
   (larger than its inputs together and than ``fold_budget`` bytes), a non-deterministic op.
   Each refusal is reported with its reason (``optimize --explain``);
2. a tensor inference knows the full integer value of (``Shape`` of a tensor whose shape is
   static, ``Gather`` of such a shape, arithmetic on them...) becomes a constant, whatever its
   producer's inputs are -- except a Cast from a float whose value is not provably in range
   (out of range, the spec leaves the integer undefined).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ...errors import CannotDecide, ShapeInferenceError
from ...modelio.tensors import np_dtype, onnx_type
from ...fold.casts import cast_array
from ...fold.folder import fold_node, within_budget
from ...fold.kernels import FoldError, NotFoldable
from ..adapter import (Constant, Graph, constant_array, fold_attrs, make_constant, node_proto, outer_variables,
                       stored_proto, take_value)
from .base import Pass, PassResult, register
from .graph_ops import remove_node, unloadable_constant


def _known_shortcut(ctx, node, inputs) -> bool:
    """Whether node's known output values may be taken without its kernel (_INT_VALUE_OPS):
    its inputs are of one element type (Concat's must be; Gather's and the others' data are
    checked by inference), and a Shape before opset 15 has no start/end to misread."""
    if node.op not in _INT_VALUE_OPS or (node.domain or "") not in ("", "ai.onnx"):
        return False
    if node.op == "Shape" and node.attrs and ctx.opsets.get("", 0) < 15:
        return False
    if node.op == "Concat":
        types = {t.dtype for t in inputs if t is not None}
        return len(types) == 1
    return True


def _cast_of_float_is_exact(ctx, node) -> bool:
    """False for a Cast/CastLike of a float tensor unless its known value casts exactly (in
    range: out of range the integer is undefined, whatever inference computed)."""
    if node.op not in ("Cast", "CastLike") or not node.inputs:
        return True
    src = ctx.facts.fact(node.inputs[0].name)
    if src is None or not src.dtype:
        return False
    np_src = np_dtype(src.dtype)
    if np_src is None:
        return False
    if np_src.kind in "biu" or np_src == np.dtype(object):
        return True
    value = src.value
    if value is None or value.dtype == object:
        return False
    out = ctx.facts.fact(node.outputs[0].name)
    np_out = np_dtype(out.dtype) if out is not None else None
    if np_out is None:
        return False
    try:
        cast_array(np.asarray(value).astype(np_src), np_out)
    except NotFoldable:  # (out of range, undefined: the integer is whatever a runtime makes)
        return False
    return True


def _known_int_value(ctx, tensor):
    fact = ctx.facts.fact(tensor.name)
    if fact is None or fact.value is None or fact.dtype == 0:
        return None
    flat = fact.int_elements()
    if flat is None or fact.value.dtype != object:
        return None
    dt = np_dtype(fact.dtype)
    if dt is None:
        return None
    try:
        return np.array(flat, dtype=dt).reshape(fact.value.shape)
    except OverflowError:  # (a value past the type's range: the engine wraps those, so not here)
        return None


# Ops that move small int tensors (shapes, indices) about: where inference knows their
# outputs' values, those are taken as they are instead of computing them again. Only ops whose
# kernel refuses nothing a valid model holds -- not Slice (where onnxruntime slices otherwise
# than the spec the kernel leaves it), not the arithmetic (Div of INT_MIN by -1 traps in
# onnxruntime), not Cast -- and within the budget (a larger output is left to the folding path,
# which weighs it). See _known_shortcut for the rest.
_INT_VALUE_OPS = frozenset({"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape", "Size"})

# Ops whose output can be far larger than their inputs, or whose work is not bounded by them:
# folded only when inference knows the output's size beforehand.
GROWING_OPS = frozenset({"ConstantOfShape", "Expand", "Tile", "Range", "Resize", "Upsample", "Pad", "OneHot",
                         "Loop", "Scan", "If", "SequenceConstruct", "ConcatFromSequence", "SplitToSequence"})
MAX_LOOP_TRIPS = 10_000
MAX_REFERENCE_INPUT_BYTES = 64 * 2**20


def _too_costly(ctx, node, arrays) -> str:
    """Why computing node now could blow up memory or time (so it is not tried), or ''."""
    in_bytes = sum(a.nbytes for a in arrays if a is not None and a.dtype != object)
    if in_bytes > MAX_REFERENCE_INPUT_BYTES:
        return f"its inputs hold {in_bytes} bytes"
    predicted = _static_bytes(ctx.facts, [t.name for t in node.outputs if not t.is_empty()])
    if predicted is not None and predicted > max(in_bytes, ctx.fold_budget):
        return f"the output would hold {predicted} bytes, more than its inputs and the budget"
    if predicted is None and node.op in GROWING_OPS:
        if node.op in ("If", "Loop", "Scan") and not _grows_inside(node):
            predicted = in_bytes  # bodies without a growing op: bounded by what goes in
        else:  # the inference rules, for these constant inputs (one home for output sizes)
            predicted = _size_by_inference(ctx, node, arrays)
        if predicted is None:
            return "the output's size is not known before computing it"
        if predicted > max(in_bytes, ctx.fold_budget):
            return f"the output would hold {predicted} bytes, more than its inputs and the budget"
    if node.op == "Loop":
        trips = arrays[0] if arrays else None
        if trips is None or trips.size != 1 or int(trips.reshape(-1)[0]) > MAX_LOOP_TRIPS:
            return f"the trip count is absent or above {MAX_LOOP_TRIPS}"
    if node.op == "Scan" and any(d > MAX_LOOP_TRIPS for a in arrays if a is not None for d in a.shape):
        return f"an input has a dim above {MAX_LOOP_TRIPS}: a scan of that many trips (even over no data)"
    return ""


def _static_bytes(facts, names):
    """Bytes the named tensors hold when inference knows their every dim and type, else None."""
    total = 0
    for name in names:
        fact = facts.fact(name)
        if fact is None or fact.shape is None or not fact.dtype or not all(type(d) is int for d in fact.shape):
            return None
        dt = np_dtype(fact.dtype)
        itemsize = 8 if dt is None else dt.itemsize
        total += math.prod(fact.shape) * itemsize
    return total


def _size_by_inference(ctx, node, arrays):
    """Bytes of node's outputs as shapeinfer infers them for these constant inputs -- the
    rules bound sizes without computing anything (None: some output size stays unknown)."""
    from ...infer.run import infer

    if any(a is not None and a.dtype != object and onnx_type(a.dtype) is None for a in arrays):
        return None  # (a value numpy_helper cannot write)
    if any(isinstance(v, Graph) for v in node.attrs.values()):
        return None  # (a body: its export needs what adapter.export_model patches in; the size stays unknown)
    proto = node_proto(node)
    inits = [numpy_helper.from_array(a, t.name) for t, a in zip(node.inputs, arrays)
             if a is not None and not t.is_empty()]
    outs = [helper.make_empty_tensor_value_info(t.name) for t in node.outputs if not t.is_empty()]
    model = helper.make_model(helper.make_graph([proto], "size", [], outs, inits), ir_version=ctx.ir_version,
                              opset_imports=[helper.make_opsetid(d, v) for d, v in ctx.opsets.items()])
    try:
        facts = infer(model)
    except ShapeInferenceError:  # (the inputs break the op's rule: folding says so)
        return None
    return _static_bytes(facts, [o.name for o in outs])


# Bytes per element of the types a Constant's tensor is moved for (others take the general path).
_ITEMSIZE = {TensorProto.FLOAT: 4, TensorProto.DOUBLE: 8, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2,
             TensorProto.INT8: 1, TensorProto.UINT8: 1, TensorProto.INT16: 2, TensorProto.UINT16: 2,
             TensorProto.INT32: 4, TensorProto.UINT32: 4, TensorProto.INT64: 8, TensorProto.UINT64: 8,
             TensorProto.BOOL: 1}


def movable_value(proto, budget: int) -> bool:
    """Whether a Constant node's ``value`` tensor is moved as it is to the node's output: stored
    in the model, of a plain type, within the budget (as _too_costly measures it: larger than
    the budget, with no input, is too costly). Used here and by the import, which moves such
    tensors as it builds the graph (adapter.build_graph, given this as its predicate)."""
    if proto.data_location == TensorProto.EXTERNAL:
        return False
    size = _ITEMSIZE.get(proto.data_type)  # (tensor_nbytes, for these types, without a dtype lookup)
    if size is None:
        return False
    for d in proto.dims:
        size *= d
    return size <= budget


def _move_constant(ctx, node) -> bool:
    """A Constant node whose ``value`` is a tensor: its output becomes that very tensor
    (movable_value, adapter.take_value). False where the general path must decide."""
    value = node.attrs.get("value")
    proto = stored_proto(value) if isinstance(value, Constant) else None
    if len(node.attrs) != 1 or proto is None or len(node.outputs) != 1 or node.outputs[0].is_empty():
        return False
    if not movable_value(proto, ctx.fold_budget):
        return False
    out = node.outputs[0]
    fact = ctx.facts.fact(out.name)
    if fact is not None and fact.dtype and fact.dtype != proto.data_type:
        return False
    take_value(out, proto)
    remove_node(node)
    return True


def _grows_inside(node) -> bool:
    for v in node.attrs.values():
        if isinstance(v, Graph):
            for n in v.nodes:
                if n.op in GROWING_OPS or _grows_inside(n):
                    return True
    return False


@register
class ConstantFoldingPass(Pass):
    name = "fold-constants"
    description = "compute nodes whose inputs are constants; make known shape values constants"

    def run(self, ctx) -> PassResult:
        result = PassResult()
        # A node left as it was decides the same way next round unless one of its inputs is
        # another tensor or has become a constant (its facts never change; a pass that changes
        # the node itself drops this entry: ctx.touched): id(node) -> (inputs, its declines).
        left = ctx.memo.setdefault("fold-left", {})
        declined = result.declined
        guarded = ctx.guarded
        for node in list(ctx.graph.nodes):
            if not node.outputs:
                continue
            if guarded and id(node) in guarded and node.op != "Constant":
                # (a Constant node's value is an initializer to onnxruntime as well: it may move)
                if all(t.is_empty() or isinstance(t, Constant) for t in node.inputs) \
                        or _known_int_value(ctx, node.outputs[0]) is not None:
                    result.decline(node, "not folded: an If's branch reads what it computes, and onnxruntime checks "
                                         "that branch at load with what it can see of it -- a constant here could make "
                                         "it refuse the model")
                continue
            ins = node.inputs
            state = (tuple(map(id, ins)), tuple(map(type, ins)))
            before = left.get(id(node))
            if before is not None and before[0] == state:
                declined.extend(before[1])
                continue
            mark = len(declined)
            self._visit(ctx, node, result)
            if node.outputs and not (node.attrs and any(isinstance(v, Graph) for v in node.attrs.values())):
                left[id(node)] = (state, declined[mark:] if len(declined) > mark else ())
        return result

    def _visit(self, ctx, node, result) -> None:
        if ctx.opaque and id(node) in ctx.opaque:
            result.decline(node, "not folded: it holds an attribute kept as it is (a sparse tensor)")
            return
        inputs = [t if t.name else None for t in node.inputs]
        if not ctx.op(node) and (node.domain or "") in ("", "ai.onnx"):
            result.decline(node, "not folded: a call of the model-local function " + node.op)
        elif all(t is None or isinstance(t, Constant) for t in inputs) and not outer_variables(node):
            # (an int output inference knows already is taken as it is, without computing it)
            if not (_known_shortcut(ctx, node, inputs) and self._take_known(ctx, node, result, ctx.fold_budget)) \
                    and self._fold(ctx, node, inputs, result):
                return
        self._take_known(ctx, node, result)

    def _take_known(self, ctx, node, result, budget=None) -> bool:
        """Make the outputs constants if inference knows their int values in full (and they
        hold at most ``budget`` bytes, when given)."""
        if not node.outputs:
            return False
        known = []
        for t in node.outputs:  # (most nodes: the first output's value is not known)
            k = _known_int_value(ctx, t)
            if k is None or budget is not None and k.nbytes > budget:
                return False
            known.append(k)
        if _cast_of_float_is_exact(ctx, node):
            why = next(filter(None, (unloadable_constant(t, a, ctx) for t, a in zip(node.outputs, known))), "")
            if why:
                result.decline(node, f"its known value is kept computed: {why}")
                return True
            for t, arr in zip(node.outputs, known):
                make_constant(t, arr)
            remove_node(node)
            result.change(node, "its output value is known from inference: a constant now")
            return True
        return False

    def _fold(self, ctx, node, inputs, result):
        if node.op == "Constant" and not inputs and _move_constant(ctx, node):
            result.changed += 1  # a Constant node became an initializer: counted, not listed
            return True
        try:
            arrays = [None if t is None else constant_array(t) for t in inputs]
        except CannotDecide as e:  # weights kept as external data are never read, so not folded
            result.decline(node, f"not folded: an input: {e}")
            return False
        domain = "" if node.domain in (None, "", "ai.onnx") else node.domain
        version = ctx.opsets.get(domain)
        if version is None:
            return False
        why = _too_costly(ctx, node, arrays)
        if why:
            result.decline(node, f"not folded: {why}")
            return True
        try:
            outs = fold_node(node.op, node.domain, fold_attrs(node), arrays, len(node.outputs), version, ctx.opsets,
                             ctx.ir_version, ctx.fold_float_math, node_proto=lambda: node_proto(node))
        except FoldError as e:
            result.decline(node, f"not folded: {e}")
            return True  # the inputs break the op's rule: inference reports it, nothing to do here
        except NotFoldable as e:
            result.decline(node, f"not folded: {e}")
            return True
        if outs is None or len(outs) < len([t for t in node.outputs if not t.is_empty()]):
            return False
        if not within_budget(outs, arrays, ctx.fold_budget, node.op):
            result.decline(node, "not folded: the output would be larger than its inputs and the budget")
            return True
        outs = [np.asarray(a) for a in outs]
        why = next(filter(None, (unloadable_constant(t, a, ctx) for t, a in zip(node.outputs, outs) if not t.is_empty())), "")
        if why:
            result.decline(node, f"not folded: {why}")
            return True
        for t, arr in zip(node.outputs, outs):
            expected = None if t.is_empty() else ctx.facts.fact(t.name)
            want = np_dtype(expected.dtype) if expected is not None and expected.dtype else None
            if want is None:
                continue
            if arr.dtype != want and arr.dtype != object:
                if not ctx.fold_float_math:  # an exact kernel gives the right type: never convert
                    result.decline(node, f"not folded: computed {arr.dtype}, the output is {want}")
                    return True
        for t, arr in zip(node.outputs, outs):
            if t.is_empty():
                continue
            expected = ctx.facts.fact(t.name)
            if expected is not None and expected.dtype:
                want = np_dtype(expected.dtype)
                if want is not None and arr.dtype != want and arr.dtype != object:
                    arr = arr.astype(want)  # onnx.reference's type (fold_float_math only)
            make_constant(t, np.asarray(arr))
        remove_node(node)
        if node.op != "Constant":
            result.change(node, "folded to a constant")
        else:
            result.changed += 1  # a Constant node became an initializer: counted, not listed
        return True
