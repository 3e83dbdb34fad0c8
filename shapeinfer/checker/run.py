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
  ``initializer`` (an unknown type, fewer bytes than its dims need, another type or shape
  than the graph input of its name declares), ``no-output``, ``duplicate-output``,
  ``duplicate-node-name``, ``dangling-input``, ``not-a-dag``, ``declared-type`` (a declared
  type inference contradicts: onnxruntime refuses the model), ``type-error`` (a node's input
  types disagree), ``shape-error`` (a Reshape whose element counts can never match, an Expand
  with incompatible dims, a Tile with bad repeats, a node whose inference rejects the shapes
  the model declares, which onnxruntime's load takes as facts, ...), ``int64-overflow`` (a tensor with more
  elements than int64 counts, read by more than a Shape), ``no-kernel`` (an element type
  onnxruntime's CPU provider has no kernel for: checker/runtime.py), ``internal-error`` (a bug of ours, reported as a failure of that
  model rather than ending the run).
Warnings (the model runs, for some inputs or in some runtimes, or shapeinfer cannot tell):
  ``conditional-shape`` (a Reshape valid only for some values of the symbols -- which),
  ``fails-if-run`` (a node that breaks its op's rule inside code that may not run -- an If
  branch under a computed condition, a Loop or Scan body that may make no iteration -- where
  onnxruntime's load-time inference does not see it: the model runs wherever that code does not),
  ``forced-broadcast`` (a broadcast that holds only when two different dims are equal or 1),
  ``declared-shape`` (a declared output or value_info shape inference proves different, or
  equal only for some sizes: onnxruntime runs it and warns; consumers that trust declared shapes
  may fail), ``integer-overflow`` (a shape value that wraps at run time), the onnx.checker
  complaints onnxruntime tolerates (``unsorted-nodes``, ``missing-type``, ``missing-shape``,
  ``runtime-op``, ``missing-opset-import``, ``initializer-not-input``, ``old-ir-opset-import``,
  ``constant-type``), ``shadowed-initializer``
  (a subgraph initializer reusing a name the graph around it defines: runtimes disagree on which
  tensor the subgraph reads, graph.structure.SHADOWING), ``unknown-dims`` (a node
  whose output dims no rule could express), ``huge-tensor`` (10^12 elements or more),
  ``unknown-op``, ``future-opset`` (newer than the installed onnx knows), ``off-spec`` (a flag
  attribute outside 0/1, an Expand shape that is not 1-D: onnxruntime reads it its own way, the
  spec does not define it), ``inference-fallback``.
With ``strict`` every warning counts as an error.
"""

from __future__ import annotations

import functools
import os
import re
import time
from typing import Optional

import numpy as np
import onnx
from onnx import ModelProto

from ..errors import InputShapeError, ModelLoadError, ShapeInferenceError, raise_mode
from ..graph.structure import (graphs_of, node_label, shadowed_names, shadowing_message, structure_problems,
                               unread_initializer_problems)
from ..infer.engine import Engine
from ..infer.facts import INT_TYPES, dtype_name
from ..infer.overrides import resolve_dims, resolve_input_shapes
from ..infer.result import InferenceResult
from ..infer.unreached import inference_view, load_time_static, load_time_valued, or_not_run, readable_by_onnx_inference, running_clause
from ..modelio.external import check_external_data, external_places, external_tensors, load_external_data
from ..modelio.load import load_model
from ..symbolic import Bcast, Sym, atoms
from ..symbolic.search import binding_str, counterexample, holds, relevant
from .contract import CONTRACT_CODES, Scope, contract_findings, spoken_condition
from .findings import ERROR, WARNING, CheckReport, Finding, exit_code
from .runtime import table as runtime_table
from .render import render_json, render_junit, render_text
from .shapes import broadcast_condition, declared_shapes, declared_str, per_node
from .tolerances import runtime_op_nodes, tolerated, unsorted_body, untyped_values

__all__ = ["CheckReport", "Finding", "check", "check_many", "exit_code", "render_json", "render_junit", "render_text"]


# Warnings about sizes: kept by default only where they hold at sizes with no empty tensor
SIZE_CODES = frozenset({"forced-broadcast", "conditional-shape", "declared-shape"})


def check(model, *, strict: bool = False, assume_nonempty: bool = False, include_empty: bool = False,
          name: Optional[str] = None, dims=None, dims_lenient: bool = False, input_shapes=None) -> CheckReport:
    """Check one model (a path or a ModelProto); never raises for a bad model: see the findings.

    ``dims``: the sizes the model is run at, {symbol: "1..4096" | "128" | "1,2,4" | int | list}
    (``--dims``): a failure at those sizes is an error, one outside them is not reported. A
    symbol the model's inputs do not name is an InputShapeError (a usage error) -- unless
    ``dims_lenient`` (a run over many models: each takes the sizes of the dims it names).

    A warning about sizes (SIZE_CODES) that only an empty tensor breaks is left out unless
    ``include_empty``: the model is checked again with no tensor empty, and such a warning is
    kept where that check finds it too, in its words (which need no zero case). Unlike
    ``assume_nonempty``, nothing else changes: errors, and every other finding, are the
    model's as it is."""
    if not isinstance(model, (str, os.PathLike, ModelProto)):
        raise TypeError(f"expected a path or an onnx.ModelProto, got {type(model).__name__}")
    t0 = time.perf_counter()
    path = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    report = CheckReport(path=name or path or "<model>", strict=strict, assume_nonempty=assume_nonempty,
                         dims_lenient=dims_lenient)
    try:
        m, contract = _check(model, path, report, assume_nonempty, dims=dims, input_shapes=input_shapes)
        if not include_empty and not assume_nonempty and any(f.code in SIZE_CODES and f.severity == WARNING
                                                              for f in report.findings):
            _drop_empty_only(m, path, report, dims, input_shapes, contract)
    except InputShapeError:
        raise  # (a usage error: sizes given for a dim the model does not name)
    except ModelLoadError as e:
        report.unreadable = not getattr(e, "invalid_model", False)
        report.add(ERROR, getattr(e, "code", "unreadable"), str(e))
    except Exception as e:  # the boundary: a bug of ours must not stop a CI run over many models
        if raise_mode():
            raise
        report.add(ERROR, "internal-error", f"shapeinfer failed on this model ({type(e).__name__}: {e}); "
                   "please report it")
    report.seconds = time.perf_counter() - t0
    return report


def _drop_empty_only(m: ModelProto, path, report: CheckReport, dims=None, input_shapes=None, contract=None) -> None:
    """Leave out the size warnings no non-empty size breaks (see check); count them. The second
    inference (no tensor empty) reads the model already loaded and skips what does not depend
    on sizes -- onnx.checker and onnxruntime's load-time refusals, whose errors the first
    report holds."""
    nonempty = CheckReport(path=report.path, assume_nonempty=True, dims_lenient=report.dims_lenient)
    # (the contract is read over non-empty sizes already: the first pass's serves)
    _check(m, path, nonempty, True, sizes_only=True, loaded=True, dims=dims, input_shapes=input_shapes,
           given_contract=contract)
    kept: dict = {}
    for f in nonempty.findings:
        if f.code in SIZE_CODES and f.severity == WARNING:
            kept.setdefault((f.code, f.node), []).append(f)
    # (a node no non-empty size runs, or that onnxruntime refuses: its size warnings stay)
    broken = {f.node for r in (report, nonempty) for f in r.findings if f.severity == ERROR
              and f.code not in CONTRACT_CODES}  # (the contract's own say the non-empty sizes)
    findings = []
    for f in report.findings:
        if f.code in SIZE_CODES and f.severity == WARNING and f.node not in broken:
            same = kept.get((f.code, f.node))
            if not same:
                report.empty_only += 1
                continue
            f = same.pop(0)
        findings.append(f)
    report.findings = findings


@functools.lru_cache(maxsize=1)
def _schema_domains() -> frozenset:
    """The domains onnx's schema registry defines ops of (and onnxruntime's own)."""
    return frozenset({s.domain for s in onnx.defs.get_all_schemas_with_history()} | {"", "ai.onnx", "com.microsoft"})


def _bodies(m: ModelProto) -> list:
    """(graph or function, where it is said) for the main graph, every subgraph, and each
    model-local function's body (with the subgraphs in it)."""
    from ..graph.structure import subgraphs_of

    out = [(g, "") for g in graphs_of(m)]
    for f in m.functions:
        where = f" (in function {f.name})"
        out.append((f, where))
        stack = [g for n in f.node for g in subgraphs_of(n)]
        while stack:
            g = stack.pop()
            out.append((g, where))
            stack.extend(b for n in g.node for b in subgraphs_of(n))
    return out


def _undefined_local_calls(m: ModelProto) -> list:
    """(node, where) for each call, in the graphs and the functions' bodies, of an op in a domain
    that only the model's own functions define (no schema of onnx's registry has it), which none
    of those functions is -- by domain, name and (IR 10) overload."""
    defined = {(f.domain, f.name, getattr(f, "overload", "")) for f in m.functions}
    local = {d for d, _, _ in defined}
    if not local:
        return []
    local -= _schema_domains()
    if not local:
        return []
    found = []
    for g, where in _bodies(m):
        for n in g.node:
            if n.domain in local and (n.domain, n.op_type, getattr(n, "overload", "")) not in defined:
                found.append((n, where))
    return found


def _runtime_refusals(m: ModelProto, report: CheckReport) -> set:
    """Model-level refusals of onnxruntime that its table tells (checker/runtime.py): an opset
    newer than it runs, a graph input without a type, a tensor declared of element type 0, a
    main graph without outputs, an op of a domain no one defines, an op of
    onnxruntime's own domains that it lacks or that breaks its schema, two nodes of one name in a
    function's body (onnxruntime inlines the function), a function output no node of its body makes. The labels of the nodes reported."""
    rt = runtime_table()
    reported: set = set()
    for domain, version, newest in rt.opset_problems(m):
        report.add(ERROR, "opset-unsupported", f"the model imports opset {version} of {domain}; {rt.release} runs up "
                   f"to {newest} and refuses the model")
    for vi in m.graph.input:
        if vi.type.WhichOneof("value") is None:
            report.add(ERROR, "missing-type", f"graph input {vi.name!r} declares no type: onnxruntime refuses a graph "
                       "input without one (an output or value_info without one, it loads)")
    for g in graphs_of(m):
        for vi in (*g.input, *g.output, *g.value_info):
            if vi.type.WhichOneof("value") == "tensor_type" and vi.type.tensor_type.elem_type == 0:
                report.add(ERROR, "missing-type", f"{vi.name!r} is declared a tensor of element type 0 (undefined): "
                           "onnxruntime refuses the model (\"Invalid tensor data type 0\"); declare its type or no type")
                break
    g = m.graph
    read = {i for n in g.node for i in n.input}
    for what, name, elem in [*(("graph input", vi.name, vi.type.tensor_type.elem_type) for vi in (*g.input, *g.output)
                               if vi.type.HasField("tensor_type")),
                             *(("initializer", t.name, t.data_type) for t in g.initializer if t.name in read)]:
        if elem in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128):
            kind = "complex64" if elem == onnx.TensorProto.COMPLEX64 else "complex128"
            report.add(ERROR, "no-kernel", f"{what if what == 'initializer' else 'graph input or output'} {name!r} is "
                       f"{kind}: {rt.release} registers no complex tensor type and refuses the model")
            break
    if not g.output:
        if all(n.op_type == "Constant" and n.domain in ("", "ai.onnx") for n in g.node):
            why = "onnxruntime refuses to create a session for it (no value to compute)"
        else:
            why = "onnxruntime loads it and fails every run (\"At least one output should be requested\")"
        report.add(ERROR, "no-output", f"the main graph has no output: {why}")
    functions = {(f.domain, f.name, getattr(f, "overload", "")) for f in m.functions}
    local_domains = {d for d, _, _ in functions}
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in m.opset_import}
    for g, where in _bodies(m):
        for n in g.node:
            if (n.domain, n.op_type, getattr(n, "overload", "")) in functions or n.domain in local_domains:
                continue  # (a call of the model's own function; a missing one: _undefined_local_calls)
            if n.op_type == "SequenceMap" and n.domain in ("", "ai.onnx"):
                _untyped_sequence_map_body(n, where, report)
            domain = "" if n.domain == "ai.onnx" else n.domain
            if domain not in rt.domains:
                why = f"no operator set {rt.release} runs defines domain {n.domain!r}, nor do the model's functions"
            else:
                why = rt.node_problem(n, opsets.get(domain))
            if why:
                report.add(ERROR, "unknown-op" if "has no op" in why or "defines domain" in why else "schema-error",
                           f"{n.domain}.{n.op_type}{where}: {why}: onnxruntime refuses the model", node_label(n), n.op_type)
                reported.add(node_label(n))
    for f in m.functions:
        made = {o for n in f.node for o in n.output if o}
        lacking = [o for o in f.output if o not in made]
        if lacking:
            report.add(ERROR, "schema-error", f"function {f.domain}.{f.name} declares output {lacking[0]!r}, which no "
                       "node of its body makes (an output must be a node's output, not an input or nothing): "
                       "onnxruntime refuses the model, called or not", "", f.name)
        seen: dict = {}
        for n in f.node:
            if n.name and seen.setdefault(n.name, n) is not n:
                report.add(ERROR, "duplicate-node-name", f"two nodes named {n.name!r} in function {f.name}: onnxruntime "
                           "inlines the function and refuses the graph", n.name, n.op_type)
                break
    return reported


def _untyped_sequence_map_body(n, where: str, report: CheckReport) -> None:
    body = next((a.g for a in n.attribute if a.name == "body" and a.HasField("g")), None)
    untyped = [vi.name for vi in (body.output if body is not None else ()) if vi.type.WhichOneof("value") is None]
    if untyped:
        report.add(ERROR, "missing-type", f"the body of SequenceMap{where} declares output {untyped[0]!r} without a "
                   "type: onnxruntime builds the output sequence from it and refuses the model", node_label(n), n.op_type)


def _kernel_refusals(m: ModelProto, result, report: CheckReport, refused: set) -> None:
    """Main-graph nodes of the ONNX domains on an element type onnxruntime's CPU provider has no
    kernel for: it refuses the model at load (NOT_IMPLEMENTED)."""
    rt = runtime_table()
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in m.opset_import}
    for n in m.graph.node:
        if n.domain not in ("", "ai.onnx", "ai.onnx.ml") or node_label(n) in refused:
            continue
        types = [[], []]
        for side, names in ((0, n.input), (1, n.output)):
            for name in names:
                fact = result.facts.get(name) if name else None
                types[side].append(fact.dtype if fact is not None and fact.type_proto is None else 0)
        why = rt.kernel_problem(n, opsets.get("" if n.domain in ("", "ai.onnx") else n.domain), *types)
        if not why and n.op_type in ("RNN", "GRU", "LSTM") and any(a.name == "layout" and a.i == 1 for a in n.attribute):
            why = f"{rt.release}'s CPU {n.op_type} kernel implements layout 0 only (batch after sequence)"
        if why:
            report.add(ERROR, "no-kernel", f"{why}: onnxruntime refuses the model (another provider may run it)",
                       node_label(n), n.op_type)


def _constant_names(g) -> set:
    """The graph's constants onnxruntime reads when it creates kernels: its initializers (not also
    inputs, which a caller may override) and the outputs of its Constant nodes."""
    names = {t.name for t in g.initializer} - {i.name for i in g.input}
    return names | {o for n in g.node if n.op_type == "Constant" for o in n.output}


def _topk_refusals(m: ModelProto, result, report: CheckReport, nodes) -> None:
    """TopK asking more elements than an axis onnxruntime's load knows to be static holds, with
    a constant k: its load-time inference refuses the model, even where the tensor is empty
    (which the shape rule lets run: onnxruntime runs an empty one where its load does not know
    the dims)."""
    if not nodes:
        return
    g = m.graph
    known = load_time_static(m, result.facts)
    for vi in g.input:  # (a dim declared as a number: the others unknown, None)
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.HasField("shape"):
            known[vi.name] = (tuple(d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None
                                    for d in tt.shape.dim), 0)  # (-1, as some exporters write: dynamic)
    constants = _constant_names(g)
    for n in nodes:
        if not n.input or n.input[0] not in known:
            continue
        dims = known[n.input[0]][0]
        axis = next((a.i for a in n.attribute if a.name == "axis"), -1)
        if not -len(dims) <= axis < len(dims):
            continue
        k = next((a.i for a in n.attribute if a.name == "k"), None)
        if len(n.input) > 1:
            fact = result.facts.get(n.input[1])
            k = None
            if n.input[1] in constants and fact is not None and fact.value is not None and fact.value.size == 1:
                k = fact.value.reshape(-1)[0]
        if isinstance(k, (int, np.integer)) and dims[axis] is not None and int(k) > dims[axis]:
            report.add(ERROR, "shape-error", f"k = {int(k)} is more than the {dims[axis]} elements along axis {axis}, "
                       "static when onnxruntime loads the model: it refuses it", node_label(n), n.op_type)


def _shape_rank_refusals(m: ModelProto, result, report: CheckReport, nodes) -> None:
    """Expand or ConstantOfShape whose shape input is not 1-D and whose values onnxruntime's
    load does not know (computed through a Reshape, say): its load-time inference checks the
    rank and refuses the model. (Known values of another rank it reads in order and runs: the
    engine's off-spec warning.)"""
    g = m.graph
    inputs = {i.name for i in g.input}  # (a graph input: the engine's shape-error says it)
    wanted = []
    for n in nodes:
        k = 1 if n.op_type == "Expand" else 0
        name = n.input[k] if len(n.input) > k else ""
        fact = result.facts.get(name) if name else None
        if fact is not None and fact.shape is not None and len(fact.shape) != 1 and name not in inputs:
            wanted.append((n, k, name, fact))
    if not wanted:
        return  # (onnx's inference, which load_time_valued runs, only where a shape is not 1-D)
    valued = load_time_valued(m, result.facts) | _constant_names(g)
    for n, k, name, fact in wanted:
        if name in valued:
            continue
        report.add(ERROR, "shape-error", f"the shape (input {k}) has rank {len(fact.shape)}, and its values are not "
                   "known when onnxruntime loads the model: its inference wants a 1-D shape and refuses the model",
                   node_label(n), n.op_type)


EXPANDED_DOMAIN = "shapeinfer.expanded"


def _expanded_function_refusals(m: ModelProto, result, report: CheckReport) -> None:
    """Ops onnxruntime has no CPU kernel for and runs by expanding their function body
    (GroupNormalization-21, CenterCropPad, SoftmaxCrossEntropyLoss...): its load infers the
    expanded nodes and refuses the model where one of them rejects its inputs, which the op's own
    rule may accept. The body is expanded here as onnxruntime does -- for the node's attributes
    and input types -- and given to onnx's strict inference, with its data propagation, as
    onnxruntime follows the shapes the body computes."""
    from onnx import FunctionProto, helper, inliner
    from onnx.shape_inference import InferenceError, infer_shapes

    rt = runtime_table()
    version = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
    if version is None or not rt.kernel_versions:
        return
    reported = {f.node for f in report.findings if f.severity == ERROR}
    for n in m.graph.node:
        if n.domain not in ("", "ai.onnx") or node_label(n) in reported:
            continue
        try:
            schema = onnx.defs.get_schema(n.op_type, version, "")
        except onnx.defs.SchemaError:
            continue
        if not (schema.has_function or schema.has_context_dependent_function):
            continue
        spans = rt.kernel_versions.get(f"|{n.op_type}", [])
        if any(lo <= schema.since_version <= hi for lo, hi in spans):
            continue  # (a kernel runs it: the body is not expanded)
        inputs = []
        for name in n.input:
            fact = result.facts.get(name) if name else None
            if name and (fact is None or not fact.dtype or fact.type_proto is not None or fact.shape is None):
                break
            if name:
                dims = [d if type(d) is int else None for d in fact.shape]
                inputs.append(helper.make_tensor_value_info(name, fact.dtype, dims))
        else:
            body = FunctionProto()
            try:
                if schema.has_context_dependent_function:
                    body.ParseFromString(schema.get_context_dependent_function_with_opset_version(
                        version, n.SerializeToString(), [vi.type.SerializeToString() for vi in inputs]))
                else:
                    body.ParseFromString(schema.get_function_with_opset_version(version))
            except (onnx.defs.SchemaError, RuntimeError, ValueError):  # (onnx cannot expand it for these inputs)
                continue
            body.domain = EXPANDED_DOMAIN
            call = helper.make_node(n.op_type, list(n.input), list(n.output), domain=EXPANDED_DOMAIN)
            call.attribute.extend(n.attribute)
            g = helper.make_graph([call], "expanded", inputs, [helper.make_empty_tensor_value_info(o) for o in n.output if o])
            model = helper.make_model(g, opset_imports=[helper.make_opsetid("", version), helper.make_opsetid(EXPANDED_DOMAIN, 1)],
                                      functions=[body], ir_version=max(m.ir_version, 8))
            try:
                infer_shapes(inliner.inline_local_functions(model), check_type=True, strict_mode=True, data_prop=True)
            except InferenceError as e:
                hit = _INFERENCE_ERROR.search(str(e))
                why = hit.group("message").strip() if hit else str(e).strip().splitlines()[0]
                inner = f" (its {hit.group('op')})" if hit else ""
                report.add(ERROR, "shape-error", f"onnxruntime has no kernel for {n.op_type}-{schema.since_version} and "
                           f"expands its function body, whose inference{inner} rejects the inputs: {why}",
                           node_label(n), n.op_type)
            except (ValueError, RuntimeError):  # (not inferable at all: nothing to add)
                continue


def _qdq_refusals(m: ModelProto, result, report: CheckReport, nodes) -> None:
    """QuantizeLinear/DequantizeLinear (opset 13 on) whose static scale or zero point does not
    fit the static input: one element (per tensor), the size of ``axis`` (per axis), or the
    input's shape with ``axis`` counted in blocks of ``block_size``. onnxruntime fails every run
    of such a node."""
    version = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 0)
    if version < 13:
        return
    for n in nodes:
        if len(n.input) < 2:
            continue
        x, scale = (result.facts.get(n.input[k]) for k in (0, 1))
        if x is None or scale is None or x.shape is None or scale.shape is None \
                or not all(type(d) is int for d in (*x.shape, *scale.shape)):
            continue
        attrs = {a.name: a.i for a in n.attribute if a.type == onnx.AttributeProto.INT}
        block = attrs.get("block_size", 0)
        if int(np.prod(scale.shape)) == 1 and not block or not x.shape:
            continue  # (per tensor)
        try:
            axis = attrs.get("axis", 1) + (len(x.shape) if attrs.get("axis", 1) < 0 else 0)
            size = x.shape[axis]
        except IndexError:
            continue
        if block > 0:
            want = list(x.shape)
            want[axis] = -(-size // block)
        else:
            want = [size]
        for k, what in ((1, "scale"), (2, "zero point")):
            f = result.facts.get(n.input[k]) if len(n.input) > k and n.input[k] else None
            if f is not None and f.shape is not None and all(type(d) is int for d in f.shape) and list(f.shape) != want:
                how = f"blocks of {block} along axis {axis}" if block > 0 else f"axis {axis} of size {size}"
                report.add(ERROR, "shape-error", f"the {what} has shape {list(f.shape)}; for {how} of the input "
                           f"{list(x.shape)} it must be {want}: onnxruntime fails every run", node_label(n), n.op_type)
                break


def _resize_layout_refusals(result, report: CheckReport, nodes) -> None:
    """onnxruntime's CPU Resize interpolates linearly over 2 or 3 dims, 4 with the batch scale 1
    and the channel's (NCHW) or the last one's (NHWC) 1, 5 with the outer two 1, and cubically
    over 2 dims or 4 laid out so; other known scales it refuses when it creates the kernel. The
    spec allows any rank: the model is valid and this runtime lacks it (no-kernel)."""
    for n in nodes:
        if len(n.input) < 3 or not n.input[2]:
            continue
        attrs = {a.name: a for a in n.attribute}
        mode = attrs["mode"].s.decode(errors="replace") if "mode" in attrs else "nearest"
        if mode not in ("linear", "cubic") or "axes" in attrs or ("antialias" in attrs and attrs["antialias"].i):
            continue
        fact = result.facts.get(n.input[2])
        if fact is None or fact.value is None or fact.value.dtype == object or fact.value.ndim != 1 or not fact.value.size:
            continue
        scales = [float(v) for v in fact.value]
        r = len(scales)
        four = r == 4 and scales[0] == 1 and (scales[1] == 1 or scales[3] == 1)
        if four or r == 2 or (mode == "linear" and (r == 3 or (r == 5 and scales[0] == scales[1] == 1))):
            continue
        takes = ("2 dims, or 4 with the outer scales 1" if mode == "cubic" else
                 "2 to 5 dims, the outer ones (4-D: N and C or N and the last; 5-D: N and C) with scale 1")
        report.add(ERROR, "no-kernel", f"{mode} interpolation with scales {scales}: {runtime_table().release}'s CPU "
                   f"Resize interpolates {takes}, and refuses the model (another provider may run it)",
                   node_label(n), n.op_type)


MAX_STRINGS_READ = 10_000  # of a constant, for _string_cast_refusals
_FLOAT_PREFIX = re.compile(r"\s*[+-]?(\d|\.\d|inf|nan)", re.IGNORECASE)  # what strtod reads a number from
_INT_PREFIX = re.compile(r"\s*[+-]?\d")  # ... and strtol


def _string_cast_refusals(m: ModelProto, report: CheckReport, constants, casts) -> None:
    """A Cast of constant strings to a number or bool where a string starts with no number:
    onnxruntime parses each as C's strtod (strtol for integers and bool) would -- "1abc" is 1 --
    and fails every run on one it cannot read ("abc", "", "true")."""
    numeric = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
    g = m.graph
    inputs = {i.name for i in g.input}
    strings = {t.name: t for t in g.initializer if t.data_type == onnx.TensorProto.STRING and t.name not in inputs}
    for n in constants:
        if n.output:
            value = next((a.t for a in n.attribute if a.name == "value" and a.HasField("t")), None)
            if value is not None and value.data_type == onnx.TensorProto.STRING:
                strings[n.output[0]] = value
    if not strings:
        return
    for n in casts:
        if not n.input or n.input[0] not in strings:
            continue
        to = next((a.i for a in n.attribute if a.name == "to"), None)
        prefix = _FLOAT_PREFIX if to in numeric else _INT_PREFIX if to in INT_TYPES or to == onnx.TensorProto.BOOL else None
        if prefix is None:
            continue
        for v in strings[n.input[0]].string_data[:MAX_STRINGS_READ]:
            text = v.decode(errors="replace")
            if not prefix.match(text):
                report.add(ERROR, "shape-error", f"the constant string {text[:40]!r} holds no number to cast to "
                           f"{dtype_name(to)}: onnxruntime fails every run", node_label(n), n.op_type)
                break


_WINDOWED = frozenset({"Conv", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})


def _empty_window_refusals(result, report: CheckReport, nodes) -> None:
    """A convolution or pooling without pads whose input has a channel or spatial dim that is 0
    in every run and a batch that is not: onnxruntime's kernels fail every run of it (an empty
    batch, which a symbolic batch may be, they run; a padded Conv, or a ConvTranspose, may make
    an output from it)."""
    for n in nodes:
        if not n.input:
            continue
        if any(a.name == "pads" and any(a.ints) for a in n.attribute):
            continue  # (padded, an empty window input may still make an output: Conv runs it)
        fact = result.facts.get(n.input[0])
        if fact is not None and fact.shape and type(fact.shape[0]) is int and fact.shape[0] > 0 \
                and any(type(d) is int and d == 0 for d in fact.shape[1:]):  # (an empty batch runs)
            report.add(ERROR, "shape-error", f"the input {list(fact.shape)} has a channel or spatial dim of 0 in every "
                       f"run: onnxruntime's {n.op_type} fails on it", node_label(n), n.op_type)


def _dilated_same_refusals(report: CheckReport, nodes) -> None:
    """A Conv with auto_pad SAME_UPPER or SAME_LOWER and a dilation above 1: the spec defines
    it; onnxruntime's CPU Conv loads it and fails every run ("Dilation not supported for
    AutoPadType::SAME_UPPER or SAME_LOWER")."""
    for n in nodes:  # (main-graph nodes: in a branch or body, only where that code runs -- not judged)
        attrs = {a.name: a for a in n.attribute}
        pad = attrs["auto_pad"].s if "auto_pad" in attrs else b""
        if pad in (b"SAME_UPPER", b"SAME_LOWER") and "dilations" in attrs and any(v > 1 for v in attrs["dilations"].ints):
            report.add(ERROR, "shape-error", f"auto_pad {pad.decode()} with dilations {list(attrs['dilations'].ints)}: "
                       "onnxruntime's Conv fails every run of it (\"Dilation not supported for AutoPadType::SAME_UPPER "
                       "or SAME_LOWER\"); give explicit pads instead", node_label(n), n.op_type)


def _zero_divisor_refusals(m: ModelProto, result, report: CheckReport, nodes) -> None:
    """Integer Div or Mod by a constant (an initializer, a Constant node) that holds 0: undefined
    in the spec; onnxruntime reads such a divisor when it creates the kernel and refuses the
    model. (A divisor computed at run time it loads; the run divides by zero.)"""
    if not nodes:
        return
    constants = _constant_names(m.graph)
    for n in nodes:
        if len(n.input) < 2 or n.input[1] not in constants:
            continue
        fact = result.facts.get(n.input[1])
        if fact is None or fact.dtype not in INT_TYPES or fact.value is None:
            continue
        if any(type(v) is int and v == 0 or isinstance(v, np.integer) and v == 0 for v in fact.value.reshape(-1)):
            report.add(ERROR, "shape-error", "the divisor, a constant, holds 0: integer division by zero is undefined, "
                       "and onnxruntime refuses the model when it creates the kernel", node_label(n), n.op_type)


def _check(model, path, report: CheckReport, assume_nonempty: bool, sizes_only: bool = False,
           loaded: bool = False, dims: Optional[dict] = None, input_shapes=None, given_contract=None) -> tuple:
    """The findings of ``model`` (read from ``path`` unless ``loaded``) into ``report``; returns
    (the model read, its input contract or None where the walk did not get that far).
    ``sizes_only``: the walk and the size findings, without onnx.checker and the load-time
    refusals (what _drop_empty_only needs of a second inference, given the first's contract)."""
    base_dir = os.path.dirname(os.path.abspath(path)) if path is not None else None
    if loaded:
        m = model
    elif path is not None:
        m = load_model(path)  # refuses unsafe or missing external data too
    else:
        m = model
        check_external_data(m, None)
    report.nodes = len(m.graph.node)
    if dims:
        dims = resolve_dims(dims, m, lenient=report.dims_lenient)
        report.dims = {n: d.text() for n, d in dims.items()}
    fixed = resolve_input_shapes(input_shapes, m, lenient=report.dims_lenient) if input_shapes else None
    structural = False
    for p in structure_problems(m):
        report.add(ERROR, p.code, p.message, p.node, p.op)
        structural = True
    for name, why in unread_initializer_problems(m):
        report.add(WARNING, "initializer", f"initializer {name!r}: {why}; nothing reads it, so onnxruntime drops it and "
                   "loads the model (other tools may refuse it)")
    if structural and any(f.code == "not-a-dag" for f in report.findings):
        return m, None  # no order to walk in
    for name, node in shadowed_names(m.graph):
        report.add(WARNING, "shadowed-initializer", f"{shadowing_message(name)}; rename one of them (shapeinfer "
                   "optimize declines such a model)", node_label(node), node.op_type)
    for node, where in _undefined_local_calls(m):
        overload = getattr(node, "overload", "")
        report.add(ERROR, "undefined-function", f"calls {node.domain}.{node.op_type}"
                   f"{f' (overload {overload!r})' if overload else ''}{where}, but the model's functions of domain "
                   f"{node.domain!r} do not include it, and no operator set defines that domain: onnxruntime refuses "
                   "the model", node.name, node.op_type)
    refused = _runtime_refusals(m, report)
    engine = Engine(m, input_shapes=fixed, assume_nonempty=assume_nonempty, base_dir=base_dir, keep_going=True)
    try:
        engine.run()
    except ShapeInferenceError as e:  # not per node (e.g. a cycle inside a subgraph)
        report.add(ERROR, "shape-error", e.rule, e.node_name, e.op_type)
        return m, None
    result = InferenceResult(m, engine)
    contract = given_contract if given_contract is not None else result.contract()
    scope = Scope(contract, dims)
    if not sizes_only:
        _load_refusals(m, result, report, refused)
        report.contract = contract.as_dict()
        contract_findings(m, contract, report, dims)
    nonempty = [d for d in engine.tensor_dims if not result.is_unknown_dim(d)] if assume_nonempty else ()
    codes = {"shape-error": (ERROR, "shape-error"), "overflow": (WARNING, "integer-overflow"),
             "future-opset": (WARNING, "future-opset"), "unknown-op": (WARNING, "unknown-op"),
             "unreached-failure": (WARNING, "fails-if-run"), "schema-error": (ERROR, "schema-error"),
             "off-spec": (WARNING, "off-spec")}
    searched: dict = {}  # (kind, a, b) -> its counterexample: a repeated layer repeats its conditions
    for d in engine.diagnostics:
        if d.region is not None and d.region.runs == 0:
            continue  # code that runs at no size (an If's branch never taken): only onnxruntime's load reads it
        if d.kind == "condition":
            # one about an unknown dim or a broadcast already reported follows from those; one
            # that no binding of the symbols breaks is an identity the algebra did not see
            kind, a, b = d.dims
            if any(isinstance(x, Bcast) or (isinstance(x, Sym) and x.name in result.minted)
                   for y in (a, b) for x in atoms(y)):
                continue
            # in code that may not run, only the sizes where it runs break anything
            runs = d.region.runs if d.region is not None else 1
            if runs == 0:
                continue
            key = (d.dims, runs)
            if key not in searched:
                # (a failure outside the contract's envelope is the clause's, not this node's)
                pair, test = (a, b), scope.within(holds(kind, a, b))
                if runs is not None and runs != 1:
                    pair, test = (a, b, runs), or_not_run(test, runs)
                found = counterexample(pair, test, nonempty, scope.extra())
                searched[key] = None if found is None else relevant(pair, found, test, nonempty)
            example = searched[key]
            if example is None:
                continue
            # the breaking sizes first (only the symbols that matter), then the condition; inside
            # the sizes the user runs at (--dims), an error
            severity = ERROR if scope.inside(example) and runs == 1 else WARNING
            where = f"fails for {binding_str(example)}{running_clause(d.region)}"
            if kind == "broadcast":  # a broadcast the algebra resolved to one side
                report.add(severity, "forced-broadcast", f"{where}: broadcasting holds only "
                           f"when {broadcast_condition((a, b))}", d.node_name, d.op_type)
            else:
                report.add(severity, "conditional-shape", f"{where}: {spoken_condition(d.message, a, b, example)}",
                           d.node_name, d.op_type)
        elif d.kind == "opset-implied":
            continue  # onnx.checker's complaint says it (missing-opset-import)
        elif d.kind == "unknown-op" and d.node_name in refused:
            continue  # (onnxruntime refuses that node: said above)
        else:
            severity, code = codes.get(d.kind, (WARNING, "inference-fallback"))
            report.add(severity, code, d.message, d.node_name, d.op_type)
    if not structural and not sizes_only:
        _onnx_checks(m, base_dir, report, result.facts)
    declared_shapes(result, report, engine, scope, nonempty)
    per_node(m.graph, result, report, nonempty, scope)
    return m, contract


def _load_refusals(m: ModelProto, result, report: CheckReport, refused: set) -> None:
    """What onnxruntime refuses at load, or fails every run of, beyond the nodes' rules: the
    main graph's nodes of the ONNX domains read once, grouped by op, each check given its ops."""
    by_op: dict = {}
    for n in m.graph.node:
        if n.domain in ("", "ai.onnx"):
            by_op.setdefault(n.op_type, []).append(n)
    _kernel_refusals(m, result, report, refused)
    _topk_refusals(m, result, report, by_op.get("TopK", ()))
    _zero_divisor_refusals(m, result, report, by_op.get("Div", []) + by_op.get("Mod", []))
    _dilated_same_refusals(report, by_op.get("Conv", ()))
    _shape_rank_refusals(m, result, report, by_op.get("Expand", []) + by_op.get("ConstantOfShape", []))
    _expanded_function_refusals(m, result, report)
    _qdq_refusals(m, result, report, by_op.get("QuantizeLinear", []) + by_op.get("DequantizeLinear", []))
    _empty_window_refusals(result, report, [n for op in _WINDOWED for n in by_op.get(op, ())])
    _resize_layout_refusals(result, report, by_op.get("Resize", ()))
    _string_cast_refusals(m, report, by_op.get("Constant", ()), by_op.get("Cast", ()))


NAMES_SAID = 5  # tensors a finding names (the JSON has them all in the message too: it is not cut)


def _naming(names: list) -> str:
    if not names:
        return ""
    shown = ", ".join(repr(n) for n in names[:NAMES_SAID])
    more = f" and {len(names) - NAMES_SAID} more" if len(names) > NAMES_SAID else ""
    return f" ({shown}{more})"


MAX_CHECKER_ROUNDS = 12


def _onnx_checks(m: ModelProto, base_dir, report: CheckReport, facts) -> None:
    """onnx.checker, then onnx's type inference, classified by what onnxruntime accepts.

    The checker stops at its first complaint: one onnxruntime tolerates is a warning, its cause
    is fixed in a copy of the model and the checker runs again. It runs in the model's folder,
    so that external data resolves where the model says (not in the working directory)."""
    from onnx.shape_inference import InferenceError

    model, copied, seen = readable_by_onnx_inference(m), False, set()
    copied = model is not m
    if base_dir is not None and any(p.sparse is not None for p in external_places(m)):
        # onnx.checker validates a sparse tensor's indices and cannot read them from a file
        # ("Cannot parse data from external tensors"), which onnxruntime does: they are read
        # for it, from the model's folder (their locations were vetted when it was loaded)
        if not copied:
            model, copied = ModelProto(), True
            model.CopyFrom(m)
        load_external_data(model, base_dir, sparse_only=True)
    with _in_folder(base_dir if _has_external_data(m) else None):
        for _ in range(MAX_CHECKER_ROUNDS):
            try:
                onnx.checker.check_model(model)
                break
            except (onnx.checker.ValidationError, InferenceError, ValueError, RuntimeError) as e:  # (onnx.checker's verdicts)
                text = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            found = tolerated(text, model)
            if found is None or text in seen:
                report.add(ERROR, "checker", "onnx.checker: " + text)
                return  # onnxruntime refuses it too: the type check would add nothing
            seen.add(text)
            tolerance, match = found
            if tolerance.code == "unsorted-nodes" and unsorted_body(model):
                report.add(ERROR, "unsorted-nodes", "the nodes of an If/Loop/Scan body are not in topological order: "
                           "onnxruntime sorts the main graph's nodes only, and refuses the model")
                return
            where = runtime_op_nodes(model, match) if tolerance.code in ("runtime-op", "domain-alias") else [("", "")]
            said = tolerance.explain(match)
            if tolerance.code in ("missing-shape", "missing-type"):  # (which tensors: the user fixes those)
                said += _naming(untyped_values(model, tolerance.code == "missing-type"))
            for node, op in where:  # an op only onnxruntime runs: one warning per node using it
                report.add(WARNING, tolerance.code, said, node, op)
            if not copied:
                model, copied = ModelProto(), True
                model.CopyFrom(m)
            if not tolerance.fix(model, match, facts):
                return  # cannot be made acceptable to the checker: nothing more to learn from it
        _type_errors(model, report)


_INFERENCE_ERROR = re.compile(r"\(op_type:(?P<op>[^,)]*)(?:, node name: (?P<node>[^)]*))?\): "
                              r"(?:\[(?P<kind>\w+)\] )?(?P<message>[^\n]*)")
_ELEM_TYPES = re.compile(r"Inferred elem type differs from existing elem type: \((\d+)\) vs \((\d+)\)")


def _type_errors(model: ModelProto, report: CheckReport) -> None:
    """onnx's type inference (strict): a declared type it contradicts, or node inputs whose
    types disagree, make onnxruntime refuse the model. Of its shape complaints, those the
    model's own declarations cause are refusals too (_declared_refusals); the rest are not
    repeated here: shapeinfer's own rules say them with symbols."""
    view = inference_view(model)
    text = _inference_errors(view)
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
            if op == "Constant" and "unsupported type" in message:
                # Constant-1 lists float types only; onnxruntime makes every Constant an
                # initializer at load and runs the model
                report.add(WARNING, "constant-type", f"{message.strip()} (Constant before opset 9): onnxruntime "
                           "makes it an initializer and runs the model; onnx.checker and other runtimes refuse it",
                           node, op)
                continue
            report.add(ERROR, "type-error", f"{message.strip()} (onnx type inference; onnxruntime refuses the model)",
                       node, op)
    # Other shape complaints are not findings: a declared shape is the declared-shape findings'
    # business, and onnxruntime runs models onnx's inference refuses (a Reshape of an empty
    # tensor, a TopK with k past a dim that is 0 only at some sizes): shapeinfer's own rules
    # say which node breaks and for which sizes.
    if _shape_complaints(text):
        _declared_refusals(model, view, report)
    elif _declares_huge_dims(model):
        # onnxruntime's load follows shape values through Shape, Add, ... as onnx's data
        # propagation does; a declared dim near int64's end overflows there. (Not run for every
        # model: onnx's propagation can take much memory on large values.)
        _declared_refusals(model, view, report, data_prop=True)


HUGE_DIM = 2 ** 40  # a declared dim this large: shape arithmetic on it may overflow int64


def _declares_huge_dims(model: ModelProto) -> bool:
    return any(d.dim_value >= HUGE_DIM for vi in (*model.graph.value_info, *model.graph.output)
               if vi.type.HasField("tensor_type") for d in vi.type.tensor_type.shape.dim)


# onnx's complaint at a node whose output is declared with other dims than it makes: onnxruntime
# merges the two leniently and loads the model (a warning in its log)
_LENIENT_MERGE = ("Inferred shape and existing shape differ",)
# a complaint about a node inside a subgraph: onnx's inference matches a branch's names against
# the main graph's declarations, which onnxruntime does not (a branch's own z and an outer z)
_NESTED = ("Inference error(s)", "Graph attribute inferencing failed")
# Checks of the installed onnx's inference that onnxruntime's own copy of onnx does not make
# (measured by bench/onnx_suite.py: onnxruntime 1.32 loads these models): (op, start of message)
_NOT_AT_LOAD = (("Tile", "Integer overflow"), ("Col2Im", "Integer overflow"),
                ("SplitToSequence", "Scalar input 'split' must be greater than zero"))


def _inference_errors(view: ModelProto, data_prop: bool = False) -> str:
    from onnx.shape_inference import InferenceError, infer_shapes

    try:
        infer_shapes(view, check_type=True, strict_mode=True, data_prop=data_prop)
    except InferenceError as e:
        return str(e)
    except (ValueError, RuntimeError):  # too large to serialize, or not inferable: nothing to add
        pass
    return ""


def _declared_refusals(model: ModelProto, view: ModelProto, report: CheckReport, data_prop: bool = False) -> None:
    """The shape complaints of onnx's strict inference that the main graph's declared value_info
    and output shapes cause: onnxruntime's load merges those declarations into what it knows of
    each tensor and refuses a node whose inference rule rejects them (a Softmax of a tensor
    value_info declares rank 0; a Conv whose weight is declared with another spatial rank than
    its input). It merges leniently: where its inference knows a dim, that dim wins over the
    declared one; a declaration fills in only what inference does not know. shapeinfer's own
    inference does not take a declared dim for an intermediate tensor as a fact, so these are
    found with onnx's inference: run without the declarations, then with them merged so, what it
    rejects only in the second run is a refusal."""
    from onnx.shape_inference import InferenceError, infer_shapes

    bare = ModelProto()
    bare.CopyFrom(view)
    for vi in (*bare.graph.value_info, *bare.graph.output):
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    without = set(_shape_complaints(_inference_errors(bare, data_prop)))
    try:
        seen = infer_shapes(bare, strict_mode=False, data_prop=data_prop).graph
    except (InferenceError, ValueError, RuntimeError):
        return
    inferred = {vi.name: vi.type.tensor_type.shape for vi in (*seen.value_info, *seen.output)
                if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")}
    merged = ModelProto()
    merged.CopyFrom(view)
    for vi in (*merged.graph.value_info, *merged.graph.output):
        known = inferred.get(vi.name)
        if known is None or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims) != len(known.dim):
            vi.type.tensor_type.shape.CopyFrom(known)  # (a rank inference knows wins)
            continue
        for d, k in zip(dims, known.dim):
            if k.HasField("dim_value"):
                d.Clear()
                d.dim_value = k.dim_value
    declared = {vi.name: vi for vi in (*model.graph.value_info, *model.graph.output)}
    nodes = {(n.op_type, n.name): n for n in model.graph.node}
    for op, node, message in _shape_complaints(_inference_errors(merged, data_prop)):
        if (op, node, message) in without or any(op == o and message.startswith(m) for o, m in _NOT_AT_LOAD):
            continue
        if data_prop and "overflow" not in message:
            continue
        n = nodes.get((op, node))
        read = [declared[i] for i in (n.input if n is not None else ()) if i in declared]
        said = ", ".join(f"{vi.name} {declared_str(vi.type.tensor_type)}" for vi in read[:3]
                         if vi.type.tensor_type.HasField("shape"))
        report.add(ERROR, "shape-error", f"{message} -- onnxruntime's load takes the shapes the model declares"
                   f"{f' ({said})' if said else ''} and refuses the node", node, op)


def _shape_complaints(text: str) -> list:
    """(op, node, message) of each shape complaint of onnx's strict inference about a node of the
    main graph: not a type complaint, not a lenient merge, not one about a node in a subgraph."""
    out = []
    for hit in _INFERENCE_ERROR.finditer(text):
        op, node, kind, message = hit.group("op"), hit.group("node") or "", hit.group("kind") or "", hit.group("message")
        if kind == "TypeInferenceError" or "inconsistent type" in message or "type" in message.split(":")[0] \
                or _ELEM_TYPES.search(message) or message.startswith(_NESTED) \
                or any(lenient in message for lenient in _LENIENT_MERGE):
            continue
        out.append((op, node, message.strip()))
    return out


def _has_external_data(m: ModelProto) -> bool:
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


def check_many(paths: list, *, strict: bool = False, assume_nonempty: bool = False, include_empty: bool = False,
               jobs: int = 1, dims=None, on_done=None, input_shapes=None) -> list:
    """Reports for several models, in the order given; ``jobs`` > 1 uses that many processes.
    ``dims`` (see check) apply to each model that names them. ``on_done(k, report)`` is called
    for each report in that order, as soon as it and those before it are done."""
    options = dict(strict=strict, assume_nonempty=assume_nonempty, include_empty=include_empty, dims=dims,
                   dims_lenient=len(paths) > 1, input_shapes=input_shapes)
    done = on_done or (lambda k, r: None)
    if jobs <= 1 or len(paths) <= 1:
        out = []
        for k, p in enumerate(paths):
            out.append(check(p, **options))
            done(k, out[-1])
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # Workers fork from a fresh single-threaded server, never from this process: a fork of a
    # process whose other threads hold locks (onnxruntime's pool, a caller's threads) can leave
    # the child waiting forever on a lock no thread will release.
    if "forkserver" in multiprocessing.get_all_start_methods():
        mp = multiprocessing.get_context("forkserver")
        mp.set_forkserver_preload(["shapeinfer.checker.run"])
    else:
        mp = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths)), mp_context=mp) as pool:
        futures = [pool.submit(check, p, **options) for p in paths]
        out = []
        for k, f in enumerate(futures):
            out.append(f.result())
            done(k, out[-1])
        return out


