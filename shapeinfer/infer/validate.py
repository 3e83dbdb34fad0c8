"""What onnx's schema of an op says a node must be, checked before its rule runs.

onnxruntime refuses a model at load when a node breaks its op's schema: an attribute the op
does not have, one of another type, a required attribute missing, more inputs or outputs than
the op takes, a required input left out, an input whose element type the op's type
constraints exclude or that differs from another input bound to the same type parameter.
These constraints are read from onnx's schemas themselves (``onnx.defs``), never copied by
hand, once per (domain, op, opset version); a node is checked against them once per distinct
signature (its attributes' names and types, which inputs and outputs it has, its inputs'
element types). What the schema cannot say -- pads that must not be negative, a Softmax that
needs a rank -- is each rule's business (``infer/ops``), from the spec text.
"""

from __future__ import annotations

import functools
from typing import Optional

import onnx
from onnx import AttributeProto, TensorProto

__all__ = ["attribute_problem", "schema_problem"]

_OPTION = onnx.defs.OpSchema.FormalParameterOption


class _Spec:
    """The parts of an op's schema a node is checked against."""

    __slots__ = ("attrs", "required", "inputs", "max_in", "max_out", "min_out", "allowed")

    def __init__(self, schema):
        self.attrs = {name: int(a.type) for name, a in schema.attributes.items()}
        self.required = tuple(sorted(name for name, a in schema.attributes.items() if a.required))
        # (type parameter, option, is_homogeneous) per formal input
        self.inputs = tuple((p.type_str, p.option, p.is_homogeneous) for p in schema.inputs)
        self.max_in = schema.max_input
        self.min_out = schema.min_output
        self.max_out = schema.max_output
        self.allowed = {tc.type_param_str: frozenset(tc.allowed_type_strs) for tc in schema.type_constraints}


@functools.lru_cache(maxsize=4096)
def _spec(domain: str, op: str, version: int) -> Optional[_Spec]:
    try:
        return _Spec(onnx.defs.get_schema(op, version, domain))
    except onnx.defs.SchemaError:  # (no such op at that version: the caller says so, or onnx's inference)
        return None


# Ops onnxruntime loads with an attribute their schema does not have (it folds a Constant into an
# initializer before checking it, and runs LayerNormalization by a schema of its own): the
# attribute is ignored there, so it does not make the model invalid (onnx.checker refuses it:
# check says so as a warning). Measured on every backend node case by tests/test_check_parity.py.
UNCHECKED_ATTRIBUTES = frozenset({"Constant", "LayerNormalization"})

# Where the spec text gives an input another type than onnx's schema: Tile-1 lists tiles and
# axis as T (float) and constrains them with T1 (int64) -- the spec's own constraint; int64 tiles
# are what exporters of that opset wrote.
_SPEC_TYPES = {("Tile", 1): {TensorProto.INT64}, ("Tile", 2): {TensorProto.INT64}}


_KNOWN_TYPES = frozenset(TensorProto.DataType.values())


def _type_str(dtype: int) -> str:
    return f"tensor({TensorProto.DataType.Name(dtype).lower()})"


def _attr_type(t: int) -> str:
    return AttributeProto.AttributeType.Name(t) if t in AttributeProto.AttributeType.values() else f"type {t}"


@functools.lru_cache(maxsize=65536)
def _problem(domain: str, op: str, version: int, attrs: tuple, given_in: tuple, n_out: int,
             in_types: tuple) -> Optional[str]:
    spec = _spec(domain, op, version)
    if spec is None:
        return None
    for name, t in attrs:
        want = spec.attrs.get(name)
        if want is None:
            if op in UNCHECKED_ATTRIBUTES:
                continue
            return f"attribute {name!r} is not an attribute of {op} (opset {version})"
        if t != want:
            return f"attribute {name!r} is {_attr_type(t)}; {op} takes {_attr_type(want)}"
    have = {name for name, _ in attrs}
    missing = [name for name in spec.required if name not in have]
    if missing:
        return f"required attribute {missing[0]!r} is missing"
    formal = spec.inputs
    if len(given_in) > spec.max_in:
        return f"{len(given_in)} inputs; {op} takes at most {spec.max_in}"
    for k, (ts, option, _) in enumerate(formal):
        if option == _OPTION.Single and (k >= len(given_in) or not given_in[k]):
            return f"input {k} is required and not given"
        if option == _OPTION.Variadic:
            break
    if n_out > spec.max_out:
        return f"{n_out} outputs; {op} has at most {spec.max_out}"
    if n_out < spec.min_out:
        return f"{n_out} outputs; {op} makes at least {spec.min_out}"
    bound: dict = {}
    for k, dtype in enumerate(in_types):
        if not dtype or not formal or (op, k) in _SPEC_TYPES and dtype in _SPEC_TYPES[op, k]:
            continue
        ts, option, homogeneous = formal[min(k, len(formal) - 1)]
        if k >= len(formal) and option != _OPTION.Variadic:
            continue
        if dtype not in _KNOWN_TYPES:
            return f"input {k} has element type {dtype}, which is no ONNX type"
        t = _type_str(dtype)
        allowed = spec.allowed.get(ts, frozenset({ts}) if ts.startswith("tensor(") else None)
        if allowed is not None and t not in allowed:
            kinds = sorted(a[7:-1] for a in allowed if a.startswith("tensor("))
            takes = ", ".join(kinds) if len(kinds) <= 4 else "other types"
            return f"input {k} is {t[7:-1]}; {op} (opset {version}) takes {takes} there"
        if allowed is not None and homogeneous and bound.setdefault(ts, t) != t:
            return f"inputs bound to one type differ: {bound[ts][7:-1]} and {t[7:-1]}"
    return None


def schema_problem(node, version: int, inputs: list) -> Optional[str]:
    """Why ``node`` (of the default domain or ai.onnx.ml, at opset ``version``) breaks its op's
    schema as onnxruntime checks it at load, or None; ``inputs``: its input facts (element types
    read where known)."""
    domain = node.domain
    if domain == "ai.onnx":
        domain = ""
    attrs = tuple((a.name, a.type) for a in node.attribute)
    given_in = tuple(bool(n) for n in node.input)
    in_types = tuple((f.dtype if f is not None and f.type_proto is None else 0) for f in inputs)
    return _problem(domain, node.op_type, version, attrs, given_in, len(node.output), in_types)


# Attribute values onnxruntime refuses when it creates the kernel (at load), past what the schema
# types say: the words a string attribute takes, by op and from which opset.
_WORDS = {
    ("GridSample", "mode"): ((16, ("bilinear", "nearest", "bicubic")), (20, ("linear", "nearest", "cubic"))),
    ("GridSample", "padding_mode"): ((16, ("zeros", "border", "reflection")),),
    ("BitShift", "direction"): ((11, ("LEFT", "RIGHT")),),
    **{(op, "direction"): ((1, ("forward", "reverse", "bidirectional")),) for op in ("RNN", "GRU", "LSTM")},
    **{(op, "auto_pad"): ((1, ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")),)
       for op in ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool")},
    ("Pad", "mode"): ((1, ("constant", "reflect", "edge")), (19, ("constant", "reflect", "edge", "wrap"))),
    ("Resize", "mode"): ((10, ("nearest", "linear")), (11, ("nearest", "linear", "cubic"))),
}
# the activations an RNN, a GRU and an LSTM take per direction (onnxruntime's kernels check the count)
_ACTIVATIONS_PER_DIRECTION = {"RNN": 1, "GRU": 2, "LSTM": 3}


def attribute_problem(node, version: int) -> Optional[str]:
    """Why onnxruntime refuses ``node`` (default domain, opset ``version``) for an attribute
    value when it creates its kernel, or None: a word a string attribute does not take, an LRN
    of an even size, a ReverseSequence whose batch and time axes are one axis, a pooling window
    whose pad reaches its kernel size, an RNN, GRU or LSTM given another count of activations than it
    takes per direction."""
    op = node.op_type
    attrs = {a.name: a for a in node.attribute if not a.ref_attr_name}  # (a reference: its value comes with the call)
    for (o, name), by_version in _WORDS.items():
        if o != op or name not in attrs or attrs[name].type != AttributeProto.STRING:
            continue
        words = [w for since, w in by_version if since <= version]
        if words:
            value = attrs[name].s.decode(errors="replace")
            if value not in words[-1]:
                return f"{name} is {value!r}; {op} (opset {version}) takes {', '.join(words[-1])}"
    if op == "LRN" and "size" in attrs and attrs["size"].type == AttributeProto.INT and attrs["size"].i % 2 == 0:
        return f"size is {attrs['size'].i}; onnxruntime takes an odd size (the window centred on each channel)"
    if op in ("MaxPool", "AveragePool", "LpPool") and "pads" in attrs and "kernel_shape" in attrs:
        kernel, pads = list(attrs["kernel_shape"].ints), list(attrs["pads"].ints)
        if len(pads) == 2 * len(kernel):
            for axis, k in enumerate(kernel):
                if max(pads[axis], pads[axis + len(kernel)]) >= k:
                    return (f"pads {pads[axis]} and {pads[axis + len(kernel)]} of spatial axis {axis} reach its kernel "
                            f"size {k}; onnxruntime's pooling kernels take pads smaller than the kernel")
    per = _ACTIVATIONS_PER_DIRECTION.get(op)
    if per is not None and "activations" in attrs and attrs["activations"].type == AttributeProto.STRINGS:
        direction = attrs["direction"].s if "direction" in attrs else b"forward"
        want = per * (2 if direction == b"bidirectional" else 1)
        given = len(attrs["activations"].strings)
        # (a forward RNN may also list two, as the op's default does: onnxruntime reads the first)
        if given != want and not (op == "RNN" and want == 1 and given == 2):
            return (f"activations lists {given} functions; a {direction.decode(errors='replace')} "
                    f"{op} takes {want} ({per} per direction)")
    if op == "ReverseSequence":
        batch = attrs["batch_axis"].i if "batch_axis" in attrs else 1
        time_ = attrs["time_axis"].i if "time_axis" in attrs else 0
        if batch == time_:
            return f"batch_axis and time_axis are both {batch}; they must be different axes (0 and 1)"
    return None
