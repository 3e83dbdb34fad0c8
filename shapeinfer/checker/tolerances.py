"""What onnxruntime accepts that onnx.checker refuses -- encoded as rules, since onnxruntime is
not a dependency.

shapeinfer check's rule for every finding: what onnxruntime refuses is an error; what it loads
and runs is at most a warning that says which consumers may refuse it. onnx.checker stops at its
first complaint, so each tolerated complaint is reported, its cause fixed in a copy of the model
(:func:`Tolerance.fix`), and the checker run again -- a real error after it is still found.

Measured with onnxruntime 1.31 and 1.32 (tests/test_check_tolerances.py and the load-rule family of
tests/test_check_parity.py keep each rule honest):
- nodes out of topological order: onnxruntime sorts them (the main graph's; a body's it refuses);
- a graph input, output or value_info without a type, or a tensor type without a shape;
- onnxruntime's own ops saved in the default domain: SimplifiedLayerNormalization (its session
  optimizer writes it there), and LayerNormalization before opset 17 (its old contrib op);
- a node of a domain the model imports no opset for;
- (IR version below 4) an initializer that is not also a graph input;
- (IR version below 3) an opset import, which that IR version did not have yet;
- an unset ir_version, a graph without a name, a metadata key given twice, an initializer holding
  raw_data and a typed field (it reads raw_data), a model-local function importing another
  version of an operator set than the model, an unknown op used only in functions nothing calls,
  an op deprecated at the model's opset that onnxruntime still has a kernel or function body for,
  an initializer too short for its dims that nothing reads (onnxruntime drops it);
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


def untyped_values(model: ModelProto, no_type: bool) -> list:
    """The names of the main graph's inputs, outputs and value_info entries that declare no type
    (``no_type``) or a tensor type without a shape, in that order."""
    g = model.graph
    out = []
    for vi in (*g.input, *g.output, *g.value_info):
        if no_type:
            if not vi.HasField("type"):
                out.append(vi.name)
        elif vi.type.HasField("tensor_type") and not vi.type.tensor_type.HasField("shape"):
            out.append(vi.name)
    return out


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
_NO_OP = re.compile(r"No Op registered for (?P<op>\w+) with domain_version of (?P<version>\d+)")

_DOMAIN_ALIAS = Tolerance(
    "domain-alias", _NO_OP,
    lambda m: f"{m.group('op')} is written in domain 'ai.onnx', the default domain's other name: onnxruntime runs "
              "it; onnx.checker does not find its schema under that name",
    _unalias)

_IGNORED_ATTRIBUTE = Tolerance(
    "ignored-attribute", re.compile(r"Unrecognized attribute: (?P<attr>\S+) for operator (?P<op>\w+)"),
    lambda m: f"{m.group('op')} has an attribute {m.group('attr')!r} its schema does not have: onnxruntime ignores it "
              "and runs the model; onnx.checker refuses it",
    _drop_unchecked_attributes)

def _set_ir_version(model: ModelProto, match, facts) -> bool:
    model.ir_version = max(helper.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True), 3)
    return True


def _name_graphs(model: ModelProto, match, facts) -> bool:
    for k, g in enumerate(graphs_of(model)):
        if not g.name:
            g.name = f"graph_{k}"
    return True


def _dedupe_metadata(model: ModelProto, match, facts) -> bool:
    seen: dict = {}
    for p in model.metadata_props:
        seen.setdefault(p.key, p.value)
    del model.metadata_props[:]
    for key, value in seen.items():
        model.metadata_props.add(key=key, value=value)
    return True


_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def _keep_raw_data(model: ModelProto, match, facts) -> bool:
    fixed = False
    for g in graphs_of(model):
        for t in g.initializer:
            if t.name == match.group("name") and t.HasField("raw_data"):
                for field in _TYPED_FIELDS:
                    t.ClearField(field)
                fixed = True
    return fixed


def _function_opsets_as_model(model: ModelProto, match, facts) -> bool:
    imported = {o.domain: o.version for o in model.opset_import}
    for f in model.functions:
        for o in f.opset_import:
            if o.domain == match.group("domain") and o.domain in imported:
                o.version = imported[o.domain]
    return True


def called_functions(model: ModelProto) -> set:
    """(domain, name, overload) of the model-local functions some node of the model calls,
    directly or through other functions."""
    funcs = {(f.domain, f.name, getattr(f, "overload", "")): f for f in model.functions}
    called: set = set()
    stack = [n for g in graphs_of(model) for n in g.node]
    while stack:
        n = stack.pop()
        key = (n.domain, n.op_type, getattr(n, "overload", ""))
        if key in funcs and key not in called:
            called.add(key)
            f = funcs[key]
            stack.extend(f.node)
            stack.extend(m for a in f.node for at in a.attribute for g in ([at.g] if at.HasField("g") else []) + list(at.graphs)
                         for m in g.node)
    return called


def _only_in_uncalled_functions(model: ModelProto, op: str) -> bool:
    called = called_functions(model)
    if any(n.op_type == op for g in graphs_of(model) for n in g.node):
        return False
    uses = [f for f in model.functions if any(n.op_type == op for n in f.node)]
    return bool(uses) and all((f.domain, f.name, getattr(f, "overload", "")) not in called for f in uses)


def _drop_uncalled_functions(model: ModelProto, match, facts) -> bool:
    called = called_functions(model)
    kept = [f for f in model.functions if (f.domain, f.name, getattr(f, "overload", "")) in called]
    if len(kept) == len(model.functions):
        return False
    del model.functions[:]
    model.functions.extend(kept)
    return True


def _runs_deprecated(op: str, version: int) -> bool:
    """Whether onnxruntime runs ``op`` at a default-domain opset where ONNX deprecated it: it has a
    CPU kernel for that version, or expands the op's function body."""
    import onnx

    from .runtime import table

    try:
        schema = onnx.defs.get_schema(op, version, "")
    except onnx.defs.SchemaError:
        return False
    if schema.has_function or schema.has_context_dependent_function:
        return True
    spans = table().kernel_versions.get(f"|{op}", [])
    return any(lo <= version <= hi for lo, hi in spans)


_DEPRECATED = Tolerance(
    "deprecated-op", re.compile(r"Op registered for (?P<op>\w+) is deprecated in domain_version of (?P<version>\d+)"),
    lambda m: f"{m.group('op')} is deprecated at opset {m.group('version')}: onnxruntime still runs it; onnx.checker "
              "refuses it (its later checks are skipped)",
    lambda model, match, facts: False)

def _drop_initializer(model: ModelProto, match, facts) -> bool:
    kept = [t for t in model.graph.initializer if t.name != match.group("name")]
    if len(kept) == len(model.graph.initializer):
        return False
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    return True


_UNREAD_INITIALIZER = Tolerance(
    "unread-initializer", re.compile(r"TensorProto \(tensor name: (?P<name>[^)]*)\) .*is too small"),
    lambda m: f"onnx.checker refuses initializer {m.group('name')!r}, which nothing reads: onnxruntime drops it and "
              "loads the model",
    _drop_initializer)

_UNCALLED_FUNCTION = Tolerance(
    "unused-function", _NO_OP,
    lambda m: f"{m.group('op')}, which no operator set defines, is used only in model-local functions no node calls: "
              "onnxruntime loads the model without them; onnx.checker refuses it",
    _drop_uncalled_functions)

TOLERANCES = (
    Tolerance("ir-version", re.compile(r"does not have an ir_version set properly"),
              lambda m: "the model's ir_version is not set (0): onnxruntime loads the model; onnx.checker refuses it",
              _set_ir_version),
    Tolerance("graph-name", re.compile(r"Field 'name' of 'graph' is required to be non-empty"),
              lambda m: "a graph has no name: onnxruntime loads the model; onnx.checker refuses it", _name_graphs),
    Tolerance("metadata", re.compile(r"duplicate keys in metadata_props"),
              lambda m: "metadata_props holds a key twice: onnxruntime loads the model; onnx.checker refuses it",
              _dedupe_metadata),
    Tolerance("initializer-fields", re.compile(r"TensorProto \(tensor name: (?P<name>[^)]*)\) should contain one and only "
                                               r"one value field"),
              lambda m: f"initializer {m.group('name')!r} holds its data twice, in raw_data and in a typed field: "
                        "onnxruntime reads raw_data and runs the model; onnx.checker refuses it", _keep_raw_data),
    Tolerance("function-opset", re.compile(r"Opset import for domain (?P<domain>\S*) in function op \w+\s?is not "
                                           r"compatible with the version imported by model"),
              lambda m: "a model-local function imports another version of an operator set than the model does: "
                        "onnxruntime loads the model; onnx.checker refuses it", _function_opsets_as_model),
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
    m = _UNREAD_INITIALIZER.pattern.search(message)
    if m is not None and model is not None:
        from ..graph.structure import unread_initializer_problems

        unread = {name for name, _ in unread_initializer_problems(model)}
        return (_UNREAD_INITIALIZER, m) if m.group("name") in unread else None
    m = _DEPRECATED.pattern.search(message)
    if m is not None:
        return (_DEPRECATED, m) if _runs_deprecated(m.group("op"), int(m.group("version"))) else None
    m = _UNCALLED_FUNCTION.pattern.search(message)
    if m is not None and model is not None and _only_in_uncalled_functions(model, m.group("op")):
        return _UNCALLED_FUNCTION, m
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
        if t.code == "missing-opset-import" and model is not None \
                and m.group("domain") in {f.domain for f in model.functions}:
            return None  # (onnxruntime implies the imports of the domains it knows, not of the model's functions)
        return t, m
    return None
