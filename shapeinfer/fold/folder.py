"""Folding one node whose inputs are all constants -- only where the result is exactly defined.

The folded model must compute what the original did, bit for bit, on any runtime. So by
default a node is computed only by the exact kernels (``kernels.py``: data movement for every
element type; ``arith.py``: integer, boolean and correctly rounded float ops; ``casts.py``:
Cast where every bit is fixed by the spec), and each of them declines the inputs whose result
the spec leaves open or runtimes compute differently, saying why. Every other op --
transcendental functions, float reductions, float MatMul/Gemm, float Range, anything without
an exact kernel -- is folded only under the opt-in ``fold_float_math``, by ``onnx.reference``
(its last bits may differ from a runtime's). The reference evaluator is never used in the
default mode. Non-deterministic ops are never folded. The value kernels are held to the op's
type constraints at the model's opset (Round takes bfloat16 from opset 22 only); the data
movement kernels fold any element type (the bits land where the op puts them).

A node is given as plain data -- its op and domain, its attributes (a tensor as its array),
its input arrays, its number of outputs, and, for onnx.reference, a way to build its NodeProto
-- so this package knows no graph library: the optimizer's adapter (optimizer/adapter.py) reads
a node of its graph into these, and inference calls ``exact_value`` with its own. Values keep
their exact element type (read and written with ``onnx.numpy_helper``, so bfloat16/float8/int4
stay what they are). Nothing is folded whose output would be much larger than its inputs (the
budget). A constant stored as external data is never read (onnx would resolve its location
against the working directory, not the model's folder): a node that reads one is not folded,
and neither is one whose attributes or bodies hold one.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

import numpy as np
import onnx
from onnx import NodeProto, helper

from . import arith, casts  # noqa: F401  (their kernels register in KERNELS)
from ..errors import CannotDecide
from ..modelio.tensors import onnx_type
from ..semantics import odd_flag
from ..modelio.external import external_tensors
from .kernels import KERNELS, MOVEMENT_OPS, FoldError, Inexact, NotFoldable
from .precise import PRECISE, upcast_inputs

NONDETERMINISTIC = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"}
)
# Ops whose folding changes nothing useful or whose outputs are not plain tensors.
NEVER_FOLD = frozenset({"SequenceConstruct", "SequenceEmpty", "Optional"})

# Float math without an exact kernel: named as such in the decline reason (every op without
# an exact kernel is folded only with fold_float_math, these and the rest alike).
FLOAT_MATH = frozenset({
    "Exp", "Log", "Tanh", "Sigmoid", "HardSigmoid", "Erf", "Pow", "Softmax", "LogSoftmax", "Softplus",
    "Softsign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Elu", "Selu", "Celu", "Gelu", "LeakyRelu", "PRelu", "ThresholdedRelu", "HardSwish", "Mish", "Swish",
    "ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "Gemm", "Einsum", "Conv", "ConvTranspose",
    "LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
    "RMSNormalization", "MeanVarianceNormalization", "LpNormalization", "AveragePool", "LpPool",
    "GlobalAveragePool", "GlobalLpPool", "Resize", "Upsample", "Mean", "Sum", "Det", "DFT", "STFT",
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Attention", "RotaryEmbedding",
})
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})


def not_exact_reason(op: str, domain: str) -> str:
    """Why an op without an exact kernel is not folded by default (without the option's name)."""
    if domain not in (None, "", "ai.onnx"):
        return f"{domain} ops are not folded exactly (only onnx.reference computes them)"
    if op in FLOAT_MATH:
        return f"{op} is not exactly defined across runtimes"
    if op in CONTROL_FLOW:
        return f"{op}'s body would be computed by onnx.reference, not exactly"
    return f"{op} has no exact kernel (onnx.reference's result may differ from a runtime's)"

DEFAULT_BUDGET_BYTES = 16 * 1024


def nbytes(arr: np.ndarray) -> int:
    if arr.dtype == object:
        return sum(len(v) if isinstance(v, (bytes, str)) else 8 for v in arr.reshape(-1))
    return int(arr.size * max(arr.dtype.itemsize, 1))


def within_budget(outputs, inputs, budget: int, op: str = "") -> bool:
    """An output may be as large as all inputs together, or as the budget, not more.
    (A Constant node only moves its value into an initializer: always within.)"""
    if op == "Constant":
        return True
    in_bytes = sum(nbytes(a) for a in inputs if a is not None)
    return all(nbytes(o) <= max(in_bytes, budget) for o in outputs)


@functools.lru_cache(maxsize=None)
def _schema(op: str, version: int):
    try:
        return onnx.defs.get_schema(op, version, "")
    except onnx.defs.SchemaError:  # (no such op, or not at that version)
        return None


def _type_str(arr: np.ndarray) -> Optional[str]:
    """The schema's name of arr's element type (``tensor(float)``), or None for one onnx has none for."""
    t = onnx_type(arr.dtype)
    return None if t is None else f"tensor({onnx.TensorProto.DataType.Name(t).lower()})"


def type_error(op: str, inputs: list, version: int) -> str:
    """Why the inputs' element types break op's type constraints at this opset, or ''.
    (A kernel computes any type it can; the model must not fold what it may not run:
    Round takes bfloat16 only from opset 22, ReduceSum int8 not at all.)"""
    schema = _schema(op, version)
    if schema is None or not schema.inputs:
        return ""
    allowed = {tc.type_param_str: set(tc.allowed_type_strs) for tc in schema.type_constraints}
    formal = schema.inputs
    bound: dict = {}
    for i, arr in enumerate(inputs):
        if arr is None:
            continue
        if i >= len(formal) and formal[-1].option != onnx.defs.OpSchema.FormalParameterOption.Variadic:
            return ""  # too many inputs: the kernel says so
        param = formal[min(i, len(formal) - 1)]
        t = _type_str(arr)
        if t is None:
            return f"{op} input {param.name} has an element type onnx does not know"
        ts = param.type_str
        if t not in allowed.get(ts, {ts}):
            return f"{op} at opset {version} does not take {t[7:-1]} (input {param.name})"
        if ts in allowed and param.is_homogeneous and bound.setdefault(ts, t) != t:
            return f"{op}'s inputs of type {ts} differ: {bound[ts][7:-1]} and {t[7:-1]}"
    return ""


def exact_value(op: str, attrs: dict, inputs: list, version: int) -> Optional[list]:
    """The outputs of the ONNX op on these concrete arrays where every runtime computes them
    bit for bit (the default folding kernels), else None. Inference takes its float values
    from here, so that a value it reports is one a runtime computes."""
    fn = KERNELS.get(op)
    if fn is None or (op not in MOVEMENT_OPS and type_error(op, inputs, version)) or not _kernel_knows(op, version):
        return None
    attrs = dict(attrs)
    attrs["_num_outputs"] = 1
    try:
        with np.errstate(all="ignore"):
            return fn(attrs, inputs, version)
    except (FoldError, NotFoldable):  # (anything else a kernel raises is a bug)
        return None


# The newest version of each op that its kernel implements (the op's schema in onnx 1.23, opset
# 28; SpaceToDepth-28 added ``mode``, BitShift-28 signed types, Range-27 ``stash_type``). A node
# of a newer version -- an onnx that defines one after these were written -- is not folded: its
# definition may have changed in a way the kernel does not know.
KERNEL_VERSIONS = {
    "Abs": 13, "Add": 14, "And": 7, "ArgMax": 13, "ArgMin": 13, "BitShift": 28, "BitwiseAnd": 18, "BitwiseNot": 18,
    "BitwiseOr": 18, "BitwiseXor": 18, "Cast": 28, "CastLike": 25, "Ceil": 13, "Clip": 13, "Concat": 13,
    "Constant": 25, "ConstantOfShape": 25, "CumSum": 14, "DepthToSpace": 28, "Div": 14, "Equal": 19, "Expand": 13,
    "EyeLike": 22, "Flatten": 25, "Floor": 13, "Gather": 13, "GatherElements": 13, "GatherND": 13, "Greater": 13,
    "GreaterOrEqual": 16, "Identity": 25, "IsInf": 20, "IsNaN": 20, "Less": 13, "LessOrEqual": 16, "MatMul": 13,
    "Max": 13, "Min": 13, "Mod": 28, "Mul": 14, "Neg": 13, "NonZero": 13, "Not": 1, "Or": 7, "Pad": 25,
    "Range": 27, "Reciprocal": 13, "ReduceL1": 18, "ReduceMax": 20, "ReduceMin": 20, "ReduceProd": 18,
    "ReduceSum": 13, "ReduceSumSquare": 18, "Relu": 14, "Reshape": 25, "Round": 22, "Shape": 25, "Sign": 13,
    "Size": 25, "Slice": 13, "SpaceToDepth": 28, "Split": 18, "Sqrt": 13, "Squeeze": 25, "Sub": 14, "Tile": 13,
    "Transpose": 25, "Trilu": 14, "Unsqueeze": 25, "Where": 16, "Xor": 7,
}


@functools.lru_cache(maxsize=None)
def _since(op: str, version: int) -> Optional[int]:
    """The version of op's definition in force at opset ``version`` (None: onnx knows none)."""
    try:
        return onnx.defs.get_schema(op, version).since_version
    except onnx.defs.SchemaError:  # (no such op or version)
        return None


def _kernel_knows(op: str, version: int) -> bool:
    since = _since(op, version)
    return since is not None and since <= KERNEL_VERSIONS.get(op, 0)


def _readable(attrs: dict) -> dict:
    """A copy of the attributes for a kernel; NotFoldable for a tensor attribute that could not
    be read (given as its CannotDecide: stored as external data, or not what it says)."""
    for k, v in attrs.items():
        if isinstance(v, CannotDecide):
            raise NotFoldable(f"its attribute {k!r}: {v}")
    return dict(attrs)


def fold_node(op: str, domain: Optional[str], attrs: dict, inputs: list, num_outputs: int, version: int,
              opsets: dict, ir_version: int, fold_float_math: bool = False,
              node_proto: Optional[Callable[[], NodeProto]] = None) -> Optional[list]:
    """Output arrays of a node for constant inputs, or None when it cannot be folded.

    The node as plain data: ``op`` and ``domain`` (None, "" or "ai.onnx" for the default one);
    ``attrs``, its attributes by name (ints, floats, strings, lists of them; a tensor as its
    array, or as the CannotDecide that reading it raised -- the node is then not folded, with
    that reason); ``inputs``, an array per input (None for an omitted one); ``num_outputs``.
    ``node_proto``: builds the node's NodeProto (its inputs and outputs named), which only
    onnx.reference reads -- under ``fold_float_math``, for an op without an exact kernel (a
    node with a body among them); without it such a node is not folded.

    Raises FoldError when the inputs break the op's rule, NotFoldable when the result is not
    defined for them or not the same on every runtime -- its subclass Inexact when the
    difference is float math that ``fold_float_math`` accepts (then nothing is raised: the
    NumPy kernel or onnx.reference computes it)."""
    if op in NONDETERMINISTIC:
        raise NotFoldable(f"{op} is non-deterministic")
    if op in NEVER_FOLD:
        return None
    odd = odd_flag(attrs)
    if odd is not None:
        raise NotFoldable(f"its attribute {odd}={attrs[odd]}: a flag the spec defines for 0 and 1 only, which "
                          "runtimes read differently")
    default_domain = domain in (None, "", "ai.onnx")
    if default_domain and op not in MOVEMENT_OPS:
        why = type_error(op, inputs, version)
        if why:
            raise NotFoldable(why)
    fn = KERNELS.get(op) if default_domain else None
    if fn is not None:
        if not _kernel_knows(op, version):
            raise NotFoldable(f"{op} of opset {version} is newer than its kernel (written for version "
                              f"{KERNEL_VERSIONS.get(op)} and before)")
        kernel_attrs = _readable(attrs)
        kernel_attrs["_num_outputs"] = num_outputs
        try:
            with np.errstate(all="ignore"):  # the kernels test the cases that matter themselves
                return fn(kernel_attrs, inputs, version)
        except Inexact:
            if not fold_float_math:
                raise
    elif not fold_float_math:
        raise Inexact(not_exact_reason(op, domain))
    if default_domain:  # float math with a stated bound (precise.py)
        precise = PRECISE.get(op)
        if precise is not None:
            with np.errstate(all="ignore"):
                got = precise(_readable(attrs), inputs, version)
            if got is not None:
                return got
        upcast = upcast_inputs(op, inputs)
        if upcast is not None:
            wide, narrow = upcast
            got = _fold_with_reference(node_proto, wide, opsets, ir_version)
            return None if got is None else [r.astype(narrow) if r.dtype == np.float64 else r for r in got]
    return _fold_with_reference(node_proto, inputs, opsets, ir_version)


def reference_run(model, feeds: dict) -> Optional[list]:
    """onnx.reference's outputs of ``model``, or None where it cannot compute them. A boundary:
    the evaluator is another library running the model, and what it raises on a model it does
    not take (any exception type: its kernels are NumPy code) says nothing of shapeinfer's code,
    which runs none here."""
    from onnx.reference import ReferenceEvaluator

    try:
        return ReferenceEvaluator(model).run(None, feeds)
    except Exception:  # noqa: BLE001 - the reference evaluator's failure (see above)
        return None


def _fold_with_reference(node_proto: Optional[Callable[[], NodeProto]], inputs: list, opsets: dict,
                         ir_version: int) -> Optional[list]:
    if node_proto is None:
        return None
    proto = node_proto()
    feeds = {}
    graph_inputs = []
    for name, arr in zip(proto.input, inputs):
        if not name or arr is None or name in feeds:
            continue
        elem = onnx_type(arr.dtype)
        if elem is None:
            return None
        graph_inputs.append(helper.make_tensor_value_info(name, elem, list(arr.shape)))
        feeds[name] = arr
    outputs = [helper.make_empty_tensor_value_info(name) for name in proto.output]
    graph = helper.make_graph([proto], "fold", graph_inputs, outputs)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
        ir_version=ir_version,
    )
    if next(external_tensors(model), None) is not None:  # (onnx.reference would read it relative to the
        raise NotFoldable("it holds a tensor stored as external data (not loaded)")  # working directory)
    results = reference_run(model, feeds)
    if results is None:
        return None
    out = []
    for r in results:
        if not isinstance(r, np.ndarray):
            if np.isscalar(r):
                r = np.asarray(r)
            else:
                return None  # a sequence, map or optional: not a constant tensor
        out.append(r)
    return out
