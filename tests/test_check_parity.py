"""check says what onnxruntime says, both ways, on families generated from onnx's schemas.

The valid models are onnx's backend node cases (every op of the default domain, run by
onnxruntime with the inputs they ship). Each is mutated against its op's schema -- an
attribute the op does not have, a required attribute dropped, an attribute of another type, an
input past the most the op takes, a required input left out, an output past the most it makes,
an input of an element type its constraints exclude -- and against the spec's value rules for
the windowed ops (a kernel, stride or dilation of 0, a negative pad). Each model, original or
mutant, is judged by onnxruntime's session creation (graph optimisations off) and a run with
the case's inputs: check must report an error exactly where onnxruntime refuses or fails in the
run (a refusal for want of a kernel -- NOT_IMPLEMENTED -- is not judged: the model is valid, the
runtime incomplete). A mutant onnxruntime still loads and runs must get no error.

    python -m pytest tests/test_check_parity.py                   # a sample of every mutation kind
    SHAPEINFER_PARITY=all python -m pytest tests/test_check_parity.py   # every case and mutation
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper

import shapeinfer

ort = pytest.importorskip("onnxruntime")

ALL = os.environ.get("SHAPEINFER_PARITY", "") == "all"
SAMPLE = 24  # models per mutation kind in the default run


def _cases() -> list:
    """(name, model, inputs) of the backend node cases of one node in the default domain."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = []
        for c in collect_testcases(None):
            m = c.model
            if len(m.graph.node) != 1 or m.graph.node[0].domain not in ("", "ai.onnx") or m.functions:
                continue
            if not c.data_sets:
                continue
            found.append((c.name, m, c.data_sets[0][0]))
    return sorted(found, key=lambda t: t[0])


def _schema(node, model):
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    try:
        return onnx.defs.get_schema(node.op_type, version, "")
    except onnx.defs.SchemaError:
        return None


def _copy(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return m


def _mutants(name, model):
    """(kind, mutant model) for each schema rule the case's node can be made to break."""
    node = model.graph.node[0]
    schema = _schema(node, model)
    if schema is None:
        return
    m = _copy(model)
    m.graph.node[0].attribute.append(helper.make_attribute("not_an_attribute", 1))
    yield "unknown-attribute", m
    for a in node.attribute:
        spec = schema.attributes.get(a.name)
        if spec is not None and spec.required:
            m = _copy(model)
            del m.graph.node[0].attribute[[x.name for x in node.attribute].index(a.name)]
            yield "required-attribute-dropped", m
            break
    for k, a in enumerate(node.attribute):
        if a.type == AttributeProto.INT:
            m = _copy(model)
            m.graph.node[0].attribute[k].CopyFrom(helper.make_attribute(a.name, float(a.i)))
            yield "attribute-type", m
            break
    if schema.max_input < 2**31 - 1 and len(node.input) >= schema.max_input and model.graph.input:
        m = _copy(model)
        m.graph.node[0].input.append(m.graph.input[0].name)
        yield "too-many-inputs", m
    if schema.max_output < 2**31 - 1:
        m = _copy(model)
        extra = "extra_output"
        while len(m.graph.node[0].output) <= schema.max_output:
            m.graph.node[0].output.append(f"{extra}{len(m.graph.node[0].output)}")
        yield "too-many-outputs", m
    required = [k for k, p in enumerate(schema.inputs) if p.option == onnx.defs.OpSchema.FormalParameterOption.Single]
    if required and required[-1] < len(node.input) and node.input[required[-1]]:
        m = _copy(model)
        m.graph.node[0].input[required[-1]] = ""
        yield "required-input-dropped", m
    if node.op_type in ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"):
        for attr, bad in (("kernel_shape", 0), ("strides", 0), ("dilations", 0), ("pads", -1)):
            k = next((i for i, a in enumerate(node.attribute) if a.name == attr), None)
            if k is not None and node.attribute[k].ints:
                m = _copy(model)
                values = list(node.attribute[k].ints)
                values[0] = bad
                m.graph.node[0].attribute[k].CopyFrom(helper.make_attribute(attr, values))
                yield f"window-{attr}", m


def _ort_verdict(model, inputs):
    """'refused' (at load or in the run), 'runs', or None (no kernel: not judged)."""
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's refusal
        text = str(e)
        if "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text \
                or "Exception during initialization" in text:
            # (no kernel, or one that refuses a valid configuration when it is created -- batchwise
            # RNNs, a locale the machine lacks: the model is valid, the runtime incomplete here)
            return None
        return "refused"
    feeds = {i.name: v for i, v in zip(model.graph.input, inputs) if isinstance(v, np.ndarray)}
    if len(feeds) != len(model.graph.input):
        return None  # (sequence or optional inputs: not fed here)
    try:
        sess.run(None, feeds)
    except Exception:  # noqa: BLE001 - the run fails
        return "fails"
    return "runs"


def _judged():
    out = []
    for name, model, inputs in _cases():
        out.append(("original", name, model, inputs))
        for kind, m in _mutants(name, model):
            out.append((kind, name, m, inputs))
    return out


def _sample(items):
    if ALL:
        return items
    by_kind: dict = {}
    for it in items:
        by_kind.setdefault(it[0], []).append(it)
    picked = []
    for kind, group in sorted(by_kind.items()):
        stride = max(1, len(group) // SAMPLE)
        picked.extend(group[::stride][:SAMPLE])
    return picked


def test_check_says_what_onnxruntime_says_on_schema_mutants():
    disagree = []
    judged = 0
    for kind, name, model, inputs in _sample(_judged()):
        verdict = _ort_verdict(model, inputs)
        if verdict is None or verdict == "fails":
            continue  # (no kernel; a run that fails is a run-time matter, judged elsewhere)
        report = shapeinfer.check(model)
        errors = [f for f in report.findings if f.severity == "error"]
        judged += 1
        if verdict == "refused" and not errors:
            disagree.append(f"{kind} {name}: onnxruntime refuses it, check reports no error")
        if verdict == "runs" and errors:
            disagree.append(f"{kind} {name}: onnxruntime runs it, check says {errors[0].code}: {errors[0].message[:160]}")
    assert judged > 50
    assert not disagree, "\n".join(disagree[:30])


def test_a_refused_mutant_names_the_node():
    name, model, inputs = next(c for c in _cases() if c[0] == "test_relu")
    m = _copy(model)
    m.graph.node[0].name = "the_relu"
    m.graph.node[0].attribute.append(helper.make_attribute("not_an_attribute", 1))
    errors = [f for f in shapeinfer.check(m).findings if f.severity == "error"]
    assert errors and errors[0].node == "the_relu" and "not_an_attribute" in errors[0].message
    with pytest.raises(shapeinfer.ShapeInferenceError, match="not_an_attribute"):
        shapeinfer.infer(m)
