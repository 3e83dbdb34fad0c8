"""``shapeinfer check``: validate a model for CI and say what is wrong, node by node.

A check reads the model (refusing unsafe external data before anything is read), checks its
structure (every tensor produced once, every input produced by something, no cycle), runs
``onnx.checker`` and then shapeinfer's inference in a mode that records an invalid node and walks
on, so that one run reports every finding. Each finding has a severity, a code, the node's name
and op type, and one line of explanation.

The rule for every finding: what onnxruntime refuses (at load, or in every run) is an error;
what it loads and runs is at most a warning, which says who may refuse it
(shapeinfer/tolerances.py encodes onnxruntime's tolerances).

Errors (the model cannot run as exported):
  ``unreadable``, ``external-data``, ``checker`` (onnx.checker, where onnxruntime agrees),
  ``initializer`` (an unknown type, fewer bytes than its dims need), ``duplicate-output``,
  ``duplicate-node-name``, ``dangling-input``, ``not-a-dag``, ``declared-type`` (a declared
  type inference contradicts: onnxruntime refuses the model), ``type-error`` (a node's input
  types disagree), ``shape-error`` (a Reshape whose element counts can never match, an Expand
  with incompatible dims, a Tile with bad repeats, ...), ``int64-overflow`` (a tensor with more
  elements than int64 counts), ``internal-error`` (a bug of ours, reported as a failure of that
  model rather than ending the run).
Warnings (the model runs, for some inputs or in some runtimes, or shapeinfer cannot tell):
  ``conditional-shape`` (a Reshape valid only for some values of the symbols -- which),
  ``forced-broadcast`` (a broadcast that holds only when two different dims are equal or 1),
  ``declared-shape`` (a declared output or value_info shape inference proves different, or
  equal only for some sizes: onnxruntime runs it and warns; consumers that trust declared shapes
  may fail), ``integer-overflow`` (a shape value that wraps at run time), the onnx.checker
  complaints onnxruntime tolerates (``unsorted-nodes``, ``missing-type``, ``missing-shape``,
  ``runtime-op``, ``missing-opset-import``, ``initializer-not-input``), ``unknown-dims`` (a node
  whose output dims no rule could express), ``huge-tensor`` (10^12 elements or more),
  ``unknown-op``, ``future-opset`` (newer than the installed onnx knows), ``inference-fallback``.
With ``strict`` every warning counts as an error.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Optional

import onnx
from onnx import ModelProto

from ..errors import ODD_INPUT_ERRORS, ModelLoadError, ShapeInferenceError
from ..infer.context import node_label
from ..infer.facts import dtype_name, shape_str
from ..symbolic import atoms, to_str

ERROR, WARNING = "error", "warning"
INT64_MAX = 2**63 - 1
HUGE_ELEMENTS = 10**12  # a warning: no real deployment materialises a tensor this large


@dataclass
class Finding:
    severity: str
    code: str
    message: str
    node: str = ""
    op: str = ""

    def as_dict(self) -> dict:
        return {"severity": self.severity, "code": self.code, "node": self.node, "op": self.op, "message": self.message}

    def line(self) -> str:
        where = f"{self.node or '<unnamed>'} ({self.op}): " if self.op else ""
        return f"{self.severity}: [{self.code}] {where}{self.message}"


@dataclass
class CheckReport:
    path: str
    findings: list = field(default_factory=list)
    nodes: int = 0
    seconds: float = 0.0
    strict: bool = False
    unreadable: bool = False
    assume_nonempty: bool = False

    def add(self, severity, code, message, node="", op="") -> None:
        self.findings.append(Finding(severity, code, message, node or "", op or ""))

    @property
    def errors(self) -> list:
        return [f for f in self.findings if f.severity == ERROR or (self.strict and f.severity == WARNING)]

    @property
    def warnings(self) -> list:
        return [] if self.strict else [f for f in self.findings if f.severity == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def exit_code(self) -> int:
        return 2 if self.unreadable else (0 if self.ok else 1)

    def summary(self) -> str:
        state = "unreadable" if self.unreadable else ("ok" if self.ok else "FAILED")
        return (f"{self.path}: {state} -- {len(self.errors)} error(s), {len(self.warnings)} warning(s), "
                f"{self.nodes} nodes, {self.seconds:.2f} s")

    def as_dict(self) -> dict:
        return {"model": self.path, "ok": self.ok, "exit_code": self.exit_code, "nodes": self.nodes,
                "errors": len(self.errors), "warnings": len(self.warnings), "seconds": round(self.seconds, 3),
                "findings": [f.as_dict() for f in self.findings]}


def check(model, *, strict: bool = False, assume_nonempty: bool = False, name: Optional[str] = None) -> CheckReport:
    """Check one model (a path or a ModelProto); never raises for a bad model: see the findings."""
    if not isinstance(model, (str, os.PathLike, ModelProto)):
        raise TypeError(f"expected a path or an onnx.ModelProto, got {type(model).__name__}")
    t0 = time.perf_counter()
    path = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    report = CheckReport(path=name or path or "<model>", strict=strict, assume_nonempty=assume_nonempty)
    try:
        _check(model, path, report, assume_nonempty)
    except ModelLoadError as e:
        report.unreadable = not getattr(e, "invalid_model", False)
        report.add(ERROR, getattr(e, "code", "unreadable"), str(e))
    except Exception as e:  # a bug of ours must not stop a CI run over many models: say so, fail it
        report.add(ERROR, "internal-error", f"shapeinfer failed on this model ({type(e).__name__}: {e}); "
                   "please report it")
    report.seconds = time.perf_counter() - t0
    return report


def _check(model, path, report: CheckReport, assume_nonempty: bool) -> None:
    from ..infer.result import InferenceResult
    from ..modelio.load import load_model
    from ..modelio.external import check_external_data
    from ..infer.engine import Engine

    if path is not None:
        m = load_model(path)  # refuses unsafe or missing external data too
        base_dir = os.path.dirname(os.path.abspath(path))
    else:
        m = model
        base_dir = None
        check_external_data(m, None)
    report.nodes = len(m.graph.node)
    structural = _structure(m.graph, set(), report)
    if structural and any(f.code == "not-a-dag" for f in report.findings):
        return  # no order to walk in
    engine = Engine(m, assume_nonempty=assume_nonempty, base_dir=base_dir, keep_going=True)
    try:
        engine.run()
    except ShapeInferenceError as e:  # not per node (e.g. a cycle inside a subgraph)
        report.add(ERROR, "shape-error", e.rule, e.node_name, e.op_type)
        return
    result = InferenceResult(m, engine)
    nonempty = [d for d in engine.tensor_dims if not result.is_unknown_dim(d)] if assume_nonempty else ()
    codes = {"shape-error": (ERROR, "shape-error"), "overflow": (WARNING, "integer-overflow"),
             "future-opset": (WARNING, "future-opset"), "unknown-op": (WARNING, "unknown-op")}
    for d in engine.diagnostics:
        if d.kind == "condition":
            # one about an unknown dim or a broadcast already reported follows from those; one
            # that no binding of the symbols breaks is an identity the algebra did not see
            kind, a, b = d.dims
            if any(x.kind == "bcast" or (x.kind == "sym" and x.args[0] in engine.minted)
                   for y in (a, b) for x in atoms(y)):
                continue
            example = _counterexample((a, b), _holds(kind, a, b), nonempty)
            if example is not None:
                report.add(WARNING, "conditional-shape", f"{d.message}; it fails for {_binding_str(example)}",
                           d.node_name, d.op_type)
        else:
            severity, code = codes.get(d.kind, (WARNING, "inference-fallback"))
            report.add(severity, code, d.message, d.node_name, d.op_type)
    if not structural:
        _onnx_checks(m, base_dir, report, result.facts)
    _declared(result, report, engine)
    _per_node(m.graph, result, report, nonempty)


MAX_CHECKER_ROUNDS = 12


def _onnx_checks(m: ModelProto, base_dir, report: CheckReport, facts) -> None:
    """onnx.checker, then onnx's type inference, classified by what onnxruntime accepts.

    The checker stops at its first complaint: one onnxruntime tolerates is a warning, its cause
    is fixed in a copy of the model and the checker runs again. It runs in the model's folder,
    so that external data resolves where the model says (not in the working directory)."""
    from .tolerances import tolerated

    model, copied, seen = _without_negative_dims(m), False, set()
    copied = model is not m
    with _in_folder(base_dir if _has_external_data(m) else None):
        for _ in range(MAX_CHECKER_ROUNDS):
            try:
                onnx.checker.check_model(model)
                break
            except (onnx.checker.ValidationError, *ODD_INPUT_ERRORS, RuntimeError) as e:
                text = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            found = tolerated(text)
            if found is None or text in seen:
                report.add(ERROR, "checker", "onnx.checker: " + text)
                return  # onnxruntime refuses it too: the type check would add nothing
            seen.add(text)
            tolerance, match = found
            report.add(WARNING, tolerance.code, tolerance.explain(match))
            if not copied:
                model, copied = ModelProto(), True
                model.CopyFrom(m)
            if not tolerance.fix(model, match, facts):
                return  # cannot be made acceptable to the checker: nothing more to learn from it
        _type_errors(model, report)


def _without_negative_dims(m: ModelProto) -> ModelProto:
    """m, or a copy whose dims written ``dim_value: -1`` (a dynamic dim, to onnx.checker and
    onnxruntime) are left blank: onnx's C++ shape inference aborts the process on some of them."""
    def declared(g):
        for vi in (*g.input, *g.output, *g.value_info):
            if vi.type.HasField("tensor_type"):
                yield from vi.type.tensor_type.shape.dim

    from .tolerances import graphs_of

    if not any(d.HasField("dim_value") and d.dim_value < 0 for g in graphs_of(m) for d in declared(g)):
        return m
    out = ModelProto()
    out.CopyFrom(m)
    for g in graphs_of(out):
        for d in declared(g):
            if d.HasField("dim_value") and d.dim_value < 0:
                d.Clear()
    return out


_INFERENCE_ERROR = re.compile(r"\(op_type:(?P<op>[^,)]*)(?:, node name: (?P<node>[^)]*))?\): "
                              r"(?:\[(?P<kind>\w+)\] )?(?P<message>[^\n]*)")
_ELEM_TYPES = re.compile(r"Inferred elem type differs from existing elem type: \((\d+)\) vs \((\d+)\)")


def _type_errors(model: ModelProto, report: CheckReport) -> None:
    """onnx's type inference (strict): a declared type it contradicts, or node inputs whose
    types disagree, make onnxruntime refuse the model. Its shape complaints are not repeated
    here: shapeinfer's own declared-shape findings say them with symbols."""
    from onnx.shape_inference import InferenceError, infer_shapes

    try:
        infer_shapes(model, check_type=True, strict_mode=True)
        return
    except InferenceError as e:
        text = str(e)
    except (ValueError, RuntimeError):  # too large to serialize, or not inferable: nothing to add
        return
    for hit in _INFERENCE_ERROR.finditer(text):
        op, node, kind, message = hit.group("op"), hit.group("node") or "", hit.group("kind") or "", hit.group("message")
        types = _ELEM_TYPES.search(message)
        if types is not None:
            inferred, declared = (dtype_name(int(t)) for t in types.groups())
            report.add(ERROR, "declared-type", f"an output is declared {declared}, but the node makes {inferred} "
                       "(onnxruntime refuses the model)", node, op)
        elif kind == "TypeInferenceError" or "inconsistent type" in message or "type" in message.split(":")[0]:
            if "expected to have type but instead is null" in message:
                continue  # follows from an unsorted graph or a missing type: reported as such
            report.add(ERROR, "type-error", f"{message.strip()} (onnx type inference; onnxruntime refuses the model)",
                       node, op)
        # Its shape complaints are not findings: a declared shape is the declared-shape findings'
        # business, and onnxruntime runs models onnx's inference refuses (a Reshape of an empty
        # tensor, a TopK with k past a dim that is 0 only at some sizes): shapeinfer's own rules
        # say which node breaks and for which sizes.


def _has_external_data(m: ModelProto) -> bool:
    from ..modelio.external import external_tensors

    return next(external_tensors(m), None) is not None


class _in_folder:
    """Run a block in another working directory (onnx.checker resolves a model's external data
    against it), and come back. None: stay."""

    def __init__(self, folder):
        self.folder, self.back = folder, None

    def __enter__(self):
        if self.folder is not None:
            self.back = os.getcwd()
            os.chdir(self.folder)

    def __exit__(self, *exc):
        if self.back is not None:
            os.chdir(self.back)


def _structure(graph, outer: set, report: CheckReport) -> bool:
    """Duplicate producers, dangling inputs, cycles (subgraphs too). True if any was found.

    One pass over the nodes (their inputs and outputs read from the protobuf once); the cycle
    search runs only when the nodes are not already in topological order."""
    from ..infer.protos import tensor_problem

    found = False
    where = "" if not outer else " (in a subgraph)"
    nodes = list(graph.node)
    ins = [list(n.input) for n in nodes]
    for n, names in zip(nodes, ins):
        if not all(type(x) is str for x in names) or not all(type(x) is str for x in n.output):
            raise ModelLoadError(f"node {n.name!r} ({n.op_type}): a tensor name is not valid UTF-8; the file is corrupt")
    producer: dict = {}  # tensor name -> index of its node, -1 for a graph input or initializer
    for t in graph.input:
        producer[t.name] = -1
    for t in graph.initializer:
        producer.setdefault(t.name, -1)
        problem = tensor_problem(t)
        if problem:
            report.add(ERROR, "initializer", f"initializer {t.name!r}{where}: {problem}")
            found = True
    for t in graph.sparse_initializer:
        producer.setdefault(t.values.name, -1)
    named: dict = {}
    for n in nodes:
        if n.name and named.setdefault(n.name, n) is not n:
            report.add(ERROR, "duplicate-node-name", f"another node of this graph{where} has the same name "
                       f"({named[n.name].op_type}); onnxruntime refuses a model with two nodes of one name",
                       n.name, n.op_type)
            found = True
    for k, n in enumerate(nodes):
        for o in n.output:
            if not o:
                continue
            other = producer.get(o)
            if other is None:
                producer[o] = k
                continue
            what = (f"node {nodes[other].name!r} ({nodes[other].op_type})" if other >= 0
                    else "a graph input or initializer")
            report.add(ERROR, "duplicate-output", f"its output {o!r} is also produced by {what}{where}", node_label(n), n.op_type)
            found = True
    in_order = True
    for k, names in enumerate(ins):
        for i in names:
            if not i:
                continue
            p = producer.get(i)
            if p is None:
                if i not in outer:
                    n = nodes[k]
                    report.add(ERROR, "dangling-input", f"input {i!r} is produced by no node, graph input or "
                               f"initializer{where}", node_label(n), n.op_type)
                    found = True
            elif p >= k:
                in_order = False
    for o in graph.output:
        if o.name not in producer and o.name not in outer:
            report.add(ERROR, "dangling-input", f"graph output {o.name!r} is produced by nothing{where}")
            found = True
    cycle = None if in_order else _cycle(nodes, ins, producer)
    if cycle is not None:
        report.add(ERROR, "not-a-dag", f"the graph has a cycle through this node{where}: "
                   + " -> ".join(repr(c.name or c.op_type) for c in cycle), cycle[0].name, cycle[0].op_type)
        found = True
    names = None
    for n in nodes:
        for a in n.attribute:
            subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
            for g in subs:
                names = names if names is not None else set(producer) | outer
                found |= _structure(g, names, report)
    return found


def validate_structure(model: ModelProto) -> None:
    """Raise ShapeInferenceError for the first structural error (a tensor produced twice, an
    input nothing produces, a cycle): what infer/optimize refuse before doing anything."""
    report = CheckReport(path="")
    if _structure(model.graph, set(), report):
        f = report.findings[0]
        raise ShapeInferenceError(f"[{f.code}] {f.message}", node_name=f.node, op_type=f.op)


def _cycle(nodes, ins, producer: dict) -> Optional[list]:
    """Some cycle of nodes (as a list) if the nodes' data dependencies have one."""
    deps = [{producer[i] for i in names if i and producer.get(i, -1) >= 0} for names in ins]
    color = [0] * len(deps)  # 0 new, 1 on the stack, 2 done
    for start in range(len(deps)):
        if color[start]:
            continue
        stack = [(start, iter(deps[start]))]
        color[start] = 1
        path = [start]
        while stack:
            k, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[k] = 2
                stack.pop()
                path.pop()
            elif color[nxt] == 1:
                loop = path[path.index(nxt):]
                return [nodes[j] for j in reversed(loop)]
            elif color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))
                path.append(nxt)
    return None


def _declared(result, report: CheckReport, engine=None) -> None:
    """Declared shapes on outputs/value_info that inference proves different (or equal only
    for some sizes, when the declared dim is an expression over the input symbols)."""
    from ..infer.protos import declared_size
    from ..symbolic import free_symbols, provably_positive, sub

    inputs = result.input_symbols()
    g = result.model.graph
    producers = {o: n for n in g.node for o in n.output}
    for vi in list(g.output) + list(g.value_info):
        fact = result.facts.get(vi.name)
        if fact is None or fact.shape is None or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        n = producers.get(vi.name)
        node, op = (node_label(n), n.op_type) if n is not None else ("", "")
        dims = tt.shape.dim
        if len(dims) != len(fact.shape):
            report.add(WARNING, "declared-shape", f"{vi.name!r} is declared with rank {len(dims)}, inferred "
                       f"{shape_str(fact.shape)} (rank {len(fact.shape)}){_DECLARED_NOTE}", node, op)
            continue
        for axis, (d, ours) in enumerate(zip(dims, fact.shape)):
            if declared_size(d) is not None and not result.is_unknown_dim(ours):
                theirs = declared_size(d)
                if isinstance(ours, int) and ours != theirs or (not isinstance(ours, int) and _never(ours, theirs)):
                    report.add(WARNING, "declared-shape", f"{vi.name!r} is declared {_declared_str(tt)}, but dim {axis} "
                               f"is {to_str(ours)}, never {theirs}; inferred {shape_str(fact.shape)}{_DECLARED_NOTE}",
                               node, op)
                    break
            elif d.dim_param and engine is not None and not result.is_unknown_dim(ours):
                # a declared expression over the input symbols is a claim: check it
                try:
                    theirs = engine.claim(d.dim_param)
                except Exception:
                    continue
                free = free_symbols(theirs)
                if not free or not free <= inputs or str(theirs) == str(ours):
                    continue  # a free name (seq_plus_1) only names the dim
                diff = sub(ours, theirs)
                if isinstance(diff, int) or provably_positive(diff) or provably_positive(sub(0, diff)):
                    report.add(WARNING, "declared-shape", f"{vi.name!r} is declared {_declared_str(tt)}, but dim {axis} "
                               f"is {to_str(ours)}, never {d.dim_param}; inferred {shape_str(fact.shape)}"
                               f"{_DECLARED_NOTE}", node, op)
                    break
                example = _counterexample((ours, theirs), _holds("equal", ours, theirs))
                if example is not None:
                    report.add(WARNING, "declared-shape", f"{vi.name!r} is declared {_declared_str(tt)}, but dim {axis} "
                               f"is {to_str(ours)}: equal to {d.dim_param} only for some sizes (not for "
                               f"{_binding_str(example)})", node, op)
                    break


_DECLARED_NOTE = " (onnxruntime runs the model and warns; consumers that trust declared shapes may fail)"


def _never(ours, theirs: int) -> bool:
    from ..symbolic import bounds

    lo, hi = bounds(ours)
    return (lo is not None and lo > theirs) or (hi is not None and hi < theirs)


def _declared_str(tt) -> str:
    return "[" + ",".join(d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?") for d in tt.shape.dim) + "]"


def _per_node(graph, result, report: CheckReport, nonempty=()) -> None:
    """Forced broadcasts and unknown dims, each at the node that first made it."""
    from ..symbolic.expr import Expr

    seen_bcast: set = set()
    seen_unknown: set = set()
    for n in graph.node:
        new_bcast, new_unknown = [], []
        for o in n.output:
            fact = result.facts.get(o) if o else None
            if fact is None or fact.shape is None:
                continue
            if all(type(d) is int for d in fact.shape):
                count = 1
                for d in fact.shape:
                    count *= d
                if count > INT64_MAX:
                    report.add(ERROR, "int64-overflow", f"output {o!r} of shape {shape_str(fact.shape)} would have "
                               f"{count:.3g} elements, more than int64 can count", node_label(n), n.op_type)
                elif count >= HUGE_ELEMENTS:
                    report.add(WARNING, "huge-tensor", f"output {o!r} of shape {shape_str(fact.shape)} has "
                               f"{count:.3g} elements", node_label(n), n.op_type)
            for d in fact.shape:
                if not isinstance(d, Expr):
                    continue
                for atom in atoms(d):
                    if atom.kind == "bcast" and atom not in seen_bcast:
                        seen_bcast.add(atom)
                        if not any(result.is_unknown_dim(a) for a in atom.args):
                            new_bcast.append(atom)
                    elif atom.kind == "sym" and atom.args[0] in result.minted and atom.args[0] not in seen_unknown:
                        seen_unknown.add(atom.args[0])
                        if not result.minted[atom.args[0]].startswith("input "):
                            new_unknown.append(atom.args[0])
        for atom in new_bcast:
            if _counterexample(atom.args, _broadcasts(atom.args), nonempty) is None:
                continue
            report.add(WARNING, "forced-broadcast", f"broadcasting holds only when {_equal_condition(atom.args)} "
                       f"(inferred as bcast({', '.join(to_str(a) for a in atom.args)}))", node_label(n), n.op_type)
        if new_unknown:
            report.add(WARNING, "unknown-dims", f"output dims no rule could express: {', '.join(new_unknown)}",
                       node_label(n), n.op_type)


PROBES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 31, 32, 33, 63, 64, 65, 100, 127, 128, 224, 255, 256,
          257, 384, 511, 512, 1000, 1023, 1024, 4096)


def _holds(kind, a, b):
    from ..symbolic import evaluate

    def equal(binding):
        return evaluate(a, binding) == evaluate(b, binding)

    def multiple(binding):
        x, y = evaluate(a, binding), evaluate(b, binding)
        if y == 0:
            raise ZeroDivisionError  # a -1 beside a zero dim: another rule, not this binding
        return x % y == 0

    return equal if kind == "equal" else multiple


def _broadcasts(args):
    from ..symbolic import evaluate

    def holds(binding):
        return len({evaluate(x, binding) for x in args} - {1}) <= 1

    return holds


def _counterexample(dims, holds, nonempty=()) -> Optional[dict]:
    """A binding of the symbols (within their bounds) for which holds() is False, or None when
    none of a fixed, deterministic set of probes breaks it. ``nonempty``: dims that must stay
    at least 1 (the tensor dims, under assume_nonempty) -- bindings that break them are out."""
    import random

    from ..symbolic import EvaluationError

    lows: dict = {}
    for d in dims:
        for atom in atoms(d):
            if atom.kind == "sym":
                lows[atom.args[0]] = max(lows.get(atom.args[0], 0), atom.lo)
    names = sorted(lows)
    rng = random.Random(len(names))
    tries = [{n: v for n in names} for v in PROBES]
    tries += [{n: rng.choice(PROBES) for n in names} for _ in range(300 if len(names) > 1 else 0)]
    for binding in tries:
        if any(binding[n] < lows[n] for n in names):
            continue
        try:
            if not holds(binding) and _allowed(binding, nonempty):
                return binding
        except (EvaluationError, ZeroDivisionError, ArithmeticError):
            continue
    return None


def _allowed(binding, nonempty) -> bool:
    """False when the binding makes some tensor empty (under assume_nonempty). A dim that has
    no value there -- it sits after a broadcast that fails at that binding -- says nothing: the
    run stops before that tensor exists."""
    from ..symbolic import EvaluationError, evaluate, free_symbols

    for d in nonempty:
        if free_symbols(d) <= binding.keys():
            try:
                if evaluate(d, binding) < 1:
                    return False
            except (EvaluationError, ArithmeticError):
                continue
    return True


def _binding_str(binding: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in binding.items()) or "every binding"


def _equal_condition(args) -> str:
    """The condition under which dims broadcast together, said simply where it is simple."""
    if len(args) == 2:
        for a, b in (args, args[::-1]):
            if getattr(b, "terms", None) and len(b.terms) == 1 and b.terms[0][1] == 1 and len(b.terms[0][0]) == 1:
                atom, power = b.terms[0][0][0]
                if power == 1 and atom.kind in ("min", "max") and a in atom.args and len(atom.args) == 2:
                    other = atom.args[1] if atom.args[0] == a else atom.args[0]
                    return f"{to_str(a)} {'<=' if atom.kind == 'min' else '>='} {to_str(other)} (or one of them is 1)"
    return " and ".join(to_str(a) for a in args) + " are equal (or 1)"


def check_many(paths: list, *, strict: bool = False, assume_nonempty: bool = False, jobs: int = 1) -> list:
    """Reports for several models, in the order given; ``jobs`` > 1 uses that many processes."""
    if jobs <= 1 or len(paths) <= 1:
        return [check(p, strict=strict, assume_nonempty=assume_nonempty) for p in paths]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(jobs, len(paths))) as pool:
        futures = [pool.submit(check, p, strict=strict, assume_nonempty=assume_nonempty) for p in paths]
        return [f.result() for f in futures]


# ------------------------------------------------------------------------------------ formats


def render_text(reports: list) -> str:
    lines = []
    for r in reports:
        for f in r.findings:
            sev = ERROR if (r.strict and f.severity == WARNING) else f.severity
            lines.append(f"{r.path}: " + Finding(sev, f.code, f.message, f.node, f.op).line())
    if any(f.code == "unknown-dims" for r in reports if not r.assume_nonempty for f in r.findings):
        lines.append("hint: a dim is often unknown only because some tensor might be empty (a Reshape entry that "
                     "could be 0 copies the input dim); --assume-nonempty takes no tensor to be empty")
    for r in reports:  # the report ends with one summary line per model
        lines.append(r.summary())
    return "\n".join(lines) + "\n"


def render_json(reports: list) -> str:
    import json

    return json.dumps({"models": [r.as_dict() for r in reports],
                       "ok": all(r.ok for r in reports),
                       "exit_code": exit_code(reports)}, indent=2) + "\n"


def render_junit(reports: list) -> str:
    """JUnit XML: one test suite, one test case per model; a failure carries its findings."""
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name="shapeinfer check", tests=str(len(reports)),
                       failures=str(sum(1 for r in reports if not r.ok and not r.unreadable)),
                       errors=str(sum(1 for r in reports if r.unreadable)),
                       time=f"{sum(r.seconds for r in reports):.3f}")
    for r in reports:
        case = ET.SubElement(suite, "testcase", classname="shapeinfer.check", name=r.path, time=f"{r.seconds:.3f}")
        body = "\n".join(f.line() for f in r.findings)
        if r.unreadable:
            el = ET.SubElement(case, "error", message=r.errors[0].message if r.errors else "unreadable", type="unreadable")
            el.text = body
        elif not r.ok:
            first = r.errors[0]
            el = ET.SubElement(case, "failure", message=f"{len(r.errors)} error(s): {first.line()}", type="shape")
            el.text = body
        elif r.findings:
            out = ET.SubElement(case, "system-out")
            out.text = body
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def exit_code(reports: list) -> int:
    if any(r.unreadable for r in reports):
        return 2
    return 0 if all(r.ok for r in reports) else 1


__all__ = ["CheckReport", "Finding", "check", "check_many", "exit_code", "render_json", "render_junit", "render_text"]
