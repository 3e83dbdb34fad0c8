"""What onnxruntime accepts that onnx.checker refuses -- encoded as rules, since onnxruntime is
not a dependency.

shapeinfer check's rule for every finding: what onnxruntime refuses is an error; what it loads
and runs is at most a warning that says which consumers may refuse it. onnx.checker stops at its
first complaint, so each tolerated complaint is reported, its cause fixed in a copy of the model
(:func:`Tolerance.fix`), and the checker run again -- a real error after it is still found.

Measured with onnxruntime 1.31 (tests/test_check_tolerances.py keeps each rule honest):
- nodes out of topological order: onnxruntime sorts them (the main graph's; a body's it refuses);
- a graph input, output or value_info without a type, or a tensor type without a shape;
- onnxruntime's own ops saved in the default domain: SimplifiedLayerNormalization (its session
  optimizer writes it there), and LayerNormalization before opset 17 (its old contrib op);
- a node of a domain the model imports no opset for;
- (IR version below 4) an initializer that is not also a graph input;
- (IR version below 3) an opset import, which that IR version did not have yet;
- (found by type inference, checker/run.py) a Constant before opset 9 holding a tensor type
  Constant-1 does not list (int64, ...): onnxruntime makes every Constant an initializer.
Refused by onnxruntime although onnx.checker passes them (errors, found elsewhere): two nodes
with the same name, declared types that contradict inference, inputs whose types disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from onnx import ModelProto, helper

from ..graph.structure import graphs_of

# Ops onnxruntime implements in the default domain although ONNX does not define them there:
# op -> the first default-domain opset at which ONNX's own definition takes over (None: never).
RUNTIME_DEFAULT_DOMAIN_OPS = {"SimplifiedLayerNormalization": None, "LayerNormalization": 17}
RUNTIME_DOMAIN = "com.microsoft"


@dataclass(frozen=True)
class Tolerance:
    code: str
    pattern: re.Pattern
    explain: Callable[[re.Match], str]
    fix: Callable[[ModelProto, re.Match, object], bool]  # (copy, match, facts) -> fixed?


def unsorted_body(model: ModelProto) -> bool:
    """Whether the nodes of some If/Loop/Scan body -- of the main graph or of a model-local
    function -- are out of topological order (onnxruntime sorts the main graph's nodes, not a
    body's: it refuses such a model)."""
    from ..graph.structure import topological_order

    bodies = [g for g in graphs_of(model) if g is not model.graph]
    stack = [n for f in model.functions for n in f.node]  # (the nodes of a function's bodies too)
    while stack:
        for a in stack.pop().attribute:
            for g in ([a.g] if a.type == a.GRAPH else a.graphs):
                bodies.append(g)
                stack.extend(g.node)
    return any(any(a is not b for a, b in zip(topological_order(list(g.node)), g.node)) for g in bodies)


def _sort_graphs(model: ModelProto, match, facts) -> bool:
    from ..graph.structure import topological_order

    for graph in graphs_of(model):  # inner graphs first: their parents copy sorted ones
        ordered = []
        for n in topological_order(list(graph.node)):  # a cycle was refused before the checker ran
            c = type(n)()
            c.CopyFrom(n)
            ordered.append(c)
        del graph.node[:]
        graph.node.extend(ordered)
    return True


def _fill_types(model: ModelProto, match, facts) -> bool:
    """Give a type (inferred, else float) to every value that declares none; drop value_info
    entries that have none."""
    g = model.graph
    keep = [vi for vi in g.value_info if vi.HasField("type")]
    del g.value_info[:]
    g.value_info.extend(keep)
    for vi in list(g.input) + list(g.output):
        if not vi.HasField("type"):
            fact = facts.get(vi.name) if facts is not None else None
            vi.type.tensor_type.elem_type = fact.dtype if fact is not None and fact.dtype else 1
    return True


def _fill_shapes(model: ModelProto, match, facts) -> bool:
    """Give every tensor type without a shape the inferred one; where the rank is not known the
    checker cannot be satisfied: stop re-checking."""
    from ..infer.protos import fill_shape_proto

    g = model.graph
    keep = [vi for vi in g.value_info if not vi.type.HasField("tensor_type") or vi.type.tensor_type.HasField("shape")]
    del g.value_info[:]
    g.value_info.extend(keep)
    for vi in list(g.input) + list(g.output):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or tt.HasField("shape"):
            continue
        fact = facts.get(vi.name) if facts is not None else None
        if fact is None or fact.shape is None:
            return False
        tt.shape.SetInParent()
        fill_shape_proto(tt.shape, fact.shape)
    return True


def _default_domain_nodes(model: ModelProto, op: str) -> list:
    """The nodes of op in the default domain (either of its names), subgraphs included."""
    return [n for graph in graphs_of(model) for n in graph.node if n.op_type == op and n.domain in ("", "ai.onnx")]


def _move_runtime_ops(model: ModelProto, match, facts) -> bool:
    for n in _default_domain_nodes(model, match.group("op")):
        n.domain = RUNTIME_DOMAIN
    if not any(o.domain == RUNTIME_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(RUNTIME_DOMAIN, 1))
    return True


def runtime_op_nodes(model: ModelProto, match) -> list:
    """(node label, op) of every default-domain node using the op a "runtime-op" complaint names,
    subgraphs included ([("", "")] when none is found: the complaint still stands)."""
    from ..graph.structure import node_label

    found = [(node_label(n), n.op_type) for n in _default_domain_nodes(model, match.group("op"))]
    return found or [("", "")]


def _add_opset_import(model: ModelProto, match, facts) -> bool:
    model.opset_import.append(helper.make_opsetid(match.group("domain"), 1))
    return True


def _initializers_as_inputs(model: ModelProto, match, facts) -> bool:
    g = model.graph
    listed = {i.name for i in g.input}
    for t in g.initializer:
        if t.name not in listed:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return True


def _opset_import_ir(model: ModelProto, match, facts) -> bool:
    model.ir_version = 3
    return True


def _aliased_nodes(model: ModelProto, op: str) -> list:
    """The nodes of op written in domain "ai.onnx" (the default domain's other name)."""
    return [n for graph in graphs_of(model) for n in graph.node if n.op_type == op and n.domain == "ai.onnx"]


def _unalias(model: ModelProto, match, facts) -> bool:
    for n in _aliased_nodes(model, match.group("op")):
        n.domain = ""
    return True


def _drop_unchecked_attributes(model: ModelProto, match, facts) -> bool:
    """Drop the attributes onnxruntime ignores on the ops it does not check them for."""
    op = match.group("op")
    known = {a.name for a in onnx_schema_attributes(op)}
    for n in _default_domain_nodes(model, op):
        keep = [a for a in n.attribute if a.name in known]
        del n.attribute[:]
        n.attribute.extend(keep)
    return True


def onnx_schema_attributes(op: str) -> list:
    """The attributes of op's newest schema in onnx, as objects with ``name``."""
    import onnx

    try:
        schema = onnx.defs.get_schema(op)
    except onnx.defs.SchemaError:
        return []
    return list(schema.attributes.values())


def _runtime_op(m: re.Match) -> Optional[str]:
    op, version = m.group("op"), int(m.group("version"))
    if op not in RUNTIME_DEFAULT_DOMAIN_OPS:
        return None
    until = RUNTIME_DEFAULT_DOMAIN_OPS[op]
    return None if until is not None and version >= until else op


# onnx.checker looks an op of domain "ai.onnx" up under that name when the model imports it
# beside "": it finds no schema; onnxruntime reads "ai.onnx" as the default domain and runs it
_DOMAIN_ALIAS = Tolerance(
    "domain-alias", re.compile(r"No Op registered for (?P<op>\w+) with domain_version of (?P<version>\d+)"),
    lambda m: f"{m.group('op')} is written in domain 'ai.onnx', the default domain's other name: onnxruntime runs "
              "it; onnx.checker does not find its schema under that name",
    _unalias)

_IGNORED_ATTRIBUTE = Tolerance(
    "ignored-attribute", re.compile(r"Unrecognized attribute: (?P<attr>\S+) for operator (?P<op>\w+)"),
    lambda m: f"{m.group('op')} has an attribute {m.group('attr')!r} its schema does not have: onnxruntime ignores it "
              "and runs the model; onnx.checker refuses it",
    _drop_unchecked_attributes)

TOLERANCES = (
    Tolerance("unsorted-nodes", re.compile(r"Nodes in a graph must be topologically sorted"),
              lambda m: "the nodes are not in topological order: onnxruntime sorts them and runs the model; "
                        "onnx.checker and tools that read the nodes in order refuse it", _sort_graphs),
    Tolerance("missing-type", re.compile(r"Field 'type' of 'value_info' is required but missing"),
              lambda m: "a graph input, output or value_info declares no type: onnxruntime loads the model; "
                        "onnx.checker and converters that read declared types refuse it", _fill_types),
    Tolerance("missing-shape", re.compile(r"Field 'shape' of 'type' is required but missing"),
              lambda m: "a graph input, output or value_info declares a tensor type without a shape: onnxruntime "
                        "loads the model; onnx.checker refuses it", _fill_shapes),
    Tolerance("runtime-op", re.compile(r"No Op registered for (?P<op>\w+) with domain_version of (?P<version>\d+)"),
              lambda m: f"{m.group('op')} in the default domain is onnxruntime's own op (its session optimizer "
                        f"writes it there): onnxruntime runs it; other runtimes and onnx.checker refuse it",
              _move_runtime_ops),
    Tolerance("missing-opset-import", re.compile(r"No opset import for domain '(?P<domain>[^']*)'"),
              lambda m: f"nodes of domain {m.group('domain')!r} but no opset import for it: onnxruntime loads the "
                        f"model; onnx.checker and converters refuse it", _add_opset_import),
    Tolerance("initializer-not-input", re.compile(r"in initializer but not in graph input"),
              lambda m: "an initializer is not listed as a graph input, which IR versions below 4 require: "
                        "onnxruntime loads the model; onnx.checker refuses it", _initializers_as_inputs),
    Tolerance("old-ir-opset-import", re.compile(r"IR version < 3 cannot have opset_import specified"),
              lambda m: "the model's IR version is below 3, which had no opset imports, yet it imports one: "
                        "onnxruntime loads the model with it; onnx.checker refuses it", _opset_import_ir),
)


def tolerated(message: str, model: Optional[ModelProto] = None) -> Optional[tuple]:
    """(tolerance, match) when onnxruntime accepts what an onnx.checker message complains about
    (``model``: the model complained of, where the message alone does not tell)."""
    m = _IGNORED_ATTRIBUTE.pattern.search(message)
    if m is not None:
        from ..infer.validate import UNCHECKED_ATTRIBUTES

        return (_IGNORED_ATTRIBUTE, m) if m.group("op") in UNCHECKED_ATTRIBUTES else None
    m = _DOMAIN_ALIAS.pattern.search(message)
    if m is not None and model is not None and _aliased_nodes(model, m.group("op")):
        import onnx

        if onnx.defs.has(m.group("op")):
            return _DOMAIN_ALIAS, m
    for t in TOLERANCES:
        m = t.pattern.search(message)
        if m is None:
            continue
        if t.code == "runtime-op" and _runtime_op(m) is None:
            return None  # an op nobody runs in the default domain: onnxruntime refuses it too
        return t, m
    return None
