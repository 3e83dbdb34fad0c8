"""Write shapeinfer/checker/data/onnxruntime_ops.json from the installed onnxruntime: what check
knows of onnxruntime without it installed -- the newest opset of each domain it runs, and the
schema of every op of its own domains (com.microsoft and the internal layout domains): input and
output counts, attributes (type, required), type constraints -- and, for the ops of the ONNX
domains, the element types its CPU kernels lack: each of onnx's backend node cases that loads is
tried with every type its schema allows for each type parameter, and a type is recorded as
lacking where every try is refused for want of a kernel (NOT_IMPLEMENTED) and none loads; and
the opset versions the CPU provider has kernels for, per op (its list of kernel definitions).

    python bench/runtime_tables.py        # in an environment with the onnxruntime to describe
    python bench/runtime_tables.py --kernel-versions   # refresh only the kernels' opset ranges

The table names the onnxruntime version it was read from; check says so in the findings it
makes from it."""

from __future__ import annotations

import json
import os
import sys

import onnx
import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as state

OUT = os.path.join(os.path.dirname(__file__), "..", "shapeinfer", "checker", "data", "onnxruntime_ops.json")
OWN_DOMAINS = ("com.microsoft", "com.microsoft.nchwc", "com.ms.internal.nhwc")


def _newest_opsets() -> dict:
    """The newest opset of each ONNX domain onnxruntime loads a model at (tried one by one)."""
    from onnx import TensorProto, helper

    so = ort.SessionOptions()
    so.log_severity_level = 4
    newest = {}
    for domain, start in (("", 1), ("ai.onnx.ml", 1)):
        v = start
        while v < 100:
            imports = [helper.make_opsetid("", v if not domain else 17)] + ([helper.make_opsetid(domain, v)] if domain else [])
            g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
            try:
                ort.InferenceSession(helper.make_model(g, opset_imports=imports, ir_version=10).SerializeToString(), so)
            except Exception:  # noqa: BLE001 - onnxruntime refusing that opset: the one before is the newest
                break
            v += 1
        newest[domain] = v - 1
    return newest


def _try_types(m, domain: str, verdict, types: dict, tried: dict) -> None:
    """Each type parameter of m's one node given each type its schema allows (the inputs and
    outputs bound to it retyped; Cast's 'to' for its output): onnxruntime's verdict counted."""
    node = m.graph.node[0]
    version = next(o.version for o in m.opset_import if ("" if o.domain in ("", "ai.onnx") else o.domain) == domain)
    try:
        schema = onnx.defs.get_schema(node.op_type, version, domain)
    except onnx.defs.SchemaError:
        return
    if verdict(m) != "ok":
        return
    graph_inputs = {i.name for i in m.graph.input}
    for tc in schema.type_constraints:
        param = tc.type_param_str
        fed = {name for k, name in enumerate(node.input)
               if name in graph_inputs and schema.inputs[min(k, len(schema.inputs) - 1)].type_str == param}
        made = {name for k, name in enumerate(node.output)
                if schema.outputs[min(k, len(schema.outputs) - 1)].type_str == param}
        to_attr = node.op_type == "Cast" and param == "T2"  # (Cast's output type is its 'to')
        if not fed and not to_attr:
            continue
        for allowed in tc.allowed_type_strs:
            if allowed not in types:
                continue
            mm = onnx.ModelProto()
            mm.CopyFrom(m)
            for vi in list(mm.graph.input) + list(mm.graph.output):
                if (vi.name in fed or vi.name in made) and vi.type.HasField("tensor_type"):
                    vi.type.tensor_type.elem_type = types[allowed]
            if to_attr:
                for a in mm.graph.node[0].attribute:
                    if a.name == "to":
                        a.i = types[allowed]
            tried[(domain, node.op_type, schema.since_version, param, allowed)][verdict(mm)] += 1


def _missing_kernels() -> dict:
    """{"domain|op|since": {type parameter: [type strings]}}: the element types onnxruntime's CPU
    provider has no kernel for, tried on onnx's backend node cases (the other inputs as the case
    has them). Only a type every try refuses for want of a kernel, and none loads, is listed."""
    import collections
    import warnings

    from onnx import TensorProto
    from onnx.backend.test.case.node import collect_testcases

    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL

    def verdict(m) -> str:
        try:
            ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
            return "ok"
        except Exception as e:  # noqa: BLE001 - onnxruntime's refusal, classified
            text = str(e)
            return "no-kernel" if "Could not find an implementation" in text or "NOT_IMPLEMENTED" in text else "other"

    types = {f"tensor({TensorProto.DataType.Name(v).lower()})": v for v in TensorProto.DataType.values() if v}
    tried: dict = collections.defaultdict(collections.Counter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = list(collect_testcases(None))
    def at_versions(m, domain, op, version):
        """m, then m at each older opset where op has another definition (the node as it is)."""
        yield m
        older = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                        if s.name == op and s.domain == domain and s.since_version < version}, reverse=True)
        for v in older:
            mm = onnx.ModelProto()
            mm.CopyFrom(m)
            for o in mm.opset_import:
                if ("" if o.domain in ("", "ai.onnx") else o.domain) == domain:
                    o.version = v
            yield mm

    for case in cases:
        if len(case.model.graph.node) != 1 or case.model.functions:
            continue
        node = case.model.graph.node[0]
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        if domain not in ("", "ai.onnx.ml"):
            continue
        newest = next((o.version for o in case.model.opset_import
                       if ("" if o.domain in ("", "ai.onnx") else o.domain) == domain), None)
        if newest is None:
            continue
        for m in at_versions(case.model, domain, node.op_type, newest):
            _try_types(m, domain, verdict, types, tried)
    missing: dict = {}
    for (domain, op, since, param, allowed), counts in sorted(tried.items()):
        if counts["no-kernel"] and not counts["ok"]:
            missing.setdefault(f"{domain}|{op}|{since}", {}).setdefault(param, []).append(allowed)
    return missing


def _kernel_versions() -> dict:
    """{"domain|op": [[first, last], ...]}: the opset versions the CPU provider registers a
    kernel for, per op of the ONNX domains (onnxruntime's own list of kernel definitions)."""
    out: dict = {}
    for k in state.get_all_opkernel_def():
        if k.provider == "CPUExecutionProvider" and k.domain in ("", "ai.onnx.ml"):
            spans = out.setdefault(f"{k.domain}|{k.op_name}", [])
            if list(k.version_range) not in spans:
                spans.append(list(k.version_range))
    for spans in out.values():
        spans.sort()
    return out


def main() -> None:
    if "--kernel-versions" in sys.argv:  # refresh that part alone (the type probes take minutes)
        with open(OUT) as fh:
            table = json.load(fh)
        table["kernel_versions"] = _kernel_versions()
        _write(table)
        print(f"{OUT}: kernel versions of {len(table['kernel_versions'])} ops")
        return
    ops: dict = {}
    for s in state.get_all_operator_schema():
        if s.domain not in OWN_DOMAINS:
            continue
        entry = {
            "since": s.since_version,
            "inputs": [s.min_input, s.max_input],
            "outputs": [s.min_output, s.max_output],
            "attributes": {name: [int(a.type), bool(a.required)] for name, a in sorted(s.attributes.items())},
        }
        ops.setdefault(s.domain, {}).setdefault(s.name, []).append(entry)
    for domain in ops.values():
        for versions in domain.values():
            versions.sort(key=lambda e: e["since"])
    table = {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "newest_opsets": _newest_opsets(),
             "domains": sorted(set(OWN_DOMAINS) | {"", "ai.onnx", "ai.onnx.ml"}), "ops": ops,
             "missing_kernels": _missing_kernels(), "kernel_versions": _kernel_versions()}
    _write(table)
    print(f"{OUT}: {sum(len(d) for d in ops.values())} ops, newest opsets {table['newest_opsets']}, "
          f"{len(table['missing_kernels'])} op versions lacking a CPU kernel for some element type")


def _write(table: dict) -> None:
    with open(OUT, "w") as fh:
        json.dump(table, fh, indent=0, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
