"""The view of one node that a rule works with."""

from __future__ import annotations

import functools
from typing import Optional

import onnx
from onnx import AttributeProto, TensorProto, helper

from ..errors import CannotDecide, ShapeInferenceError
from ..semantics import is_odd_flag
from ..symbolic import Expr, provably_nonneg, provably_positive
from ..graph.structure import node_label
from .facts import Fact, dtype_name, shape_str

_MISSING = object()
# The common attribute kinds, read directly (onnx.helper.get_attribute_value is general but slow).
_READERS = {
    AttributeProto.INT: lambda a: a.i,
    AttributeProto.INTS: lambda a: list(a.ints),
    AttributeProto.FLOAT: lambda a: a.f,
    AttributeProto.FLOATS: lambda a: list(a.floats),
    AttributeProto.STRING: lambda a: a.s,
    AttributeProto.TENSOR: lambda a: a.t,
    AttributeProto.GRAPH: lambda a: a.g,
}


@functools.lru_cache(maxsize=4096)
def attribute_types(domain: str, op: str, version) -> dict:
    """{attribute name: its AttributeProto type} in onnx's schema of the op at that opset
    version ({} where onnx has no schema: another domain's op, a model-local function)."""
    if version is None or domain not in ("", "ai.onnx", "ai.onnx.ml") or type(op) is not str:
        return {}  # (an op type that is not valid UTF-8 reaches here as bytes: no schema has it)
    try:
        schema = onnx.defs.get_schema(op, version, "" if domain == "ai.onnx" else domain)
    except onnx.defs.SchemaError:
        return {}
    return {name: int(a.type) for name, a in schema.attributes.items()}


def _type_name(t: int) -> str:
    return AttributeProto.AttributeType.Name(t) if t in AttributeProto.AttributeType.values() else f"type {t}"


class NodeContext:
    """One node, its input facts, its attributes and the services a rule needs.

    ``attr_scope`` holds the calling node's attributes while inferring a model-local function's
    body, so that attributes given by reference (``ref_attr_name``) resolve."""

    __slots__ = ("node", "inputs", "version", "engine", "attr_scope", "scope", "opsets", "_attrs")

    def __init__(self, node, inputs: list, version: int, engine, attr_scope=None, scope=None, opsets=None):
        self.node = node
        self.scope = scope  # the facts visible here (for subgraphs: outer scope included)
        self.opsets = opsets
        self.inputs = inputs
        self.version = version
        self.engine = engine
        self.attr_scope = attr_scope
        self._attrs = None

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def name(self) -> str:
        return node_label(self.node)

    def input(self, i: int) -> Optional[Fact]:
        """The fact of input i, or None when the input is absent or unknown."""
        return self.inputs[i] if i < len(self.inputs) else None

    @property
    def in_body(self) -> bool:
        """Whether the node sits in a subgraph or a function body being walked (it may never run:
        an If branch not taken, a Loop of no trips)."""
        return self.engine.depth > 0

    def has_input(self, i: int) -> bool:
        return i < len(self.node.input) and self.node.input[i] != ""

    def attributes(self) -> dict:
        if self._attrs is None:
            attrs = {}
            for a in self.node.attribute:
                name = a.name
                if a.ref_attr_name:
                    if self.attr_scope is None or a.ref_attr_name not in self.attr_scope:
                        continue
                    a = self.attr_scope[a.ref_attr_name]  # the caller's value, under this name
                attrs[name] = a
            self._attrs = attrs
        return self._attrs

    def attr(self, name: str, default=None):
        """The attribute's value, or ``default`` when the node has none. An attribute whose type
        is not the one the op's schema gives it (a FLOAT ``axis``, an attribute of no type) is
        an invalid node -- onnxruntime refuses it at load -- never a value a rule computes with."""
        a = self.attributes().get(name, _MISSING)
        if a is _MISSING:
            return default
        want = attribute_types(self.node.domain, self.op_type, self.version).get(name)
        if want is not None and a.type != want:
            raise self.error(f"attribute {name!r} is {_type_name(a.type)}; {self.op_type} takes {_type_name(want)}")
        reader = _READERS.get(a.type)
        value = reader(a) if reader is not None else helper.get_attribute_value(a)
        if is_odd_flag(name, value):
            raise CannotDecide("odd-flag", f"{name}={value}")
        return value

    def positive(self, d) -> bool:
        """True only when d >= 1 wherever the model runs: by the algebra, or (under the opt-in
        assume_nonempty) because d is the size of a tensor, and no tensor is empty."""
        if provably_positive(d):
            return True
        if not self.engine.assume_nonempty:
            return False
        return self.engine.positive_given_tensor_dims(d)

    def nonneg(self, d) -> bool:
        """True only when d >= 0 wherever the model runs: by the algebra, or because the dims of
        the tensors computed so far are (Engine.nonneg_given_tensor_dims)."""
        if provably_nonneg(d):
            return True
        return self.scope is not None and self.engine.nonneg_given_tensor_dims(self.scope, d)

    def unsure(self, fact: Fact) -> Fact:
        """Mark an output whose dims a runtime may give otherwise (see Fact.unsure)."""
        fact.unsure = True
        self.engine.any_unsure = True
        return fact

    def fresh(self, hint: str = "") -> Expr:
        """A new symbol for a dim this node makes that no rule can express."""
        return self.engine.symbols.mint(hint or self.op_type.lower())

    def fresh_shape(self, rank: int) -> Optional[tuple]:
        if rank > 1024:  # not a real tensor's rank: say nothing rather than make a million symbols
            raise self.error(f"an output of rank {rank}: no runtime supports a tensor of that rank")
        return tuple(self.fresh() for _ in range(rank))

    def input_shapes(self) -> list:
        return [shape_str(f.shape) if f is not None else "?" for f in self.inputs]

    def shape_input(self, i: int, what: str):
        """Input i, a 1-D int64 tensor of dims (Reshape's shape, Expand's shape, Tile's repeats):
        its fact, or a ShapeInferenceError when its type or rank says it cannot be one."""
        fact = self.inputs[i] if i < len(self.inputs) else None
        if fact is None:
            return None
        if fact.dtype and fact.dtype != TensorProto.INT64:
            raise self.error(f"{what} (input {i}) must be int64, got {dtype_name(fact.dtype)}")
        if fact.shape is not None and len(fact.shape) != 1:
            raise self.error(f"{what} (input {i}) must be a 1-D tensor, got rank {len(fact.shape)}")
        return fact

    def condition(self, message: str, kind: str, a, b) -> None:
        """The node is valid only when a == b (kind "equal"), a and b broadcast together
        ("broadcast"), a <= b ("le") or a is a multiple of b ("multiple"):
        a check warning (shapeinfer check looks for values of the symbols that break it)."""
        dims = (kind, a, b)
        self.engine.warn(self.node, message, kind="condition", severity="info", dims=dims)

    def error(self, message: str) -> ShapeInferenceError:
        return ShapeInferenceError(
            message, node_name=self.name, op_type=self.op_type, input_shapes=self.input_shapes()
        )
