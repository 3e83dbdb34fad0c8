"""check's rule for every finding: what onnxruntime refuses is an error; what it loads and runs is
at most a warning. Each case below is run through onnxruntime too, so a rule that drifts from
what onnxruntime does fails here."""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import shapeinfer

ort = pytest.importorskip("onnxruntime")
HERE = os.path.dirname(os.path.abspath(__file__))
X = helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])


def _y(elem=T.FLOAT, shape=("N", 4)):
    return helper.make_tensor_value_info("y", elem, list(shape) if shape is not None else None)


def _model(nodes, inputs=(X,), outputs=None, inits=(), opsets=(("", 17),), ir=8, value_info=()):
    g = helper.make_graph(nodes, "g", list(inputs), outputs if outputs is not None else [_y()], list(inits),
                          value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], ir_version=ir)


def _ones4():
    return numpy_helper.from_array(np.ones(4, np.float32), "s")


def _onnxruntime(m):
    """'runs', or why onnxruntime refused to load the model."""
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    try:
        sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        return f"refused: {str(e)[:200]}"
    feeds = {}
    for i in m.graph.input:
        if any(i.name == t.name for t in m.graph.initializer):
            continue
        feeds[i.name] = np.ones((2, 4), np.float32 if i.type.tensor_type.elem_type == T.FLOAT else np.int64)
    sess.run(None, feeds)
    return "runs"


TOLERATED = {
    "unsorted-nodes": _model([helper.make_node("Relu", ["h"], ["y"]), helper.make_node("Relu", ["x"], ["h"])]),
    "missing-type": _model([helper.make_node("Relu", ["x"], ["y"])], outputs=[helper.make_empty_tensor_value_info("y")]),
    "missing-shape": _model([helper.make_node("Relu", ["x"], ["y"])], outputs=[_y(shape=None)]),
    "runtime-op": _model([helper.make_node("SimplifiedLayerNormalization", ["x", "s"], ["y"], axis=-1, epsilon=1e-5)],
                         inits=[_ones4()]),
    "runtime-op-layernorm-before-17": _model([helper.make_node("LayerNormalization", ["x", "s"], ["y"])],
                                             inits=[_ones4()], opsets=(("", 13),)),
    "missing-opset-import": _model([helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")]),
    "initializer-not-input": _model([helper.make_node("Add", ["x", "s"], ["y"])], inits=[_ones4()], ir=3),
    "old-ir-opset-import": _model([helper.make_node("Add", ["x", "x"], ["y"])], opsets=(("", 7),), ir=2),
    "constant-type": _model([helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", T.INT64, [2], [0, -1])),
                             helper.make_node("Reshape", ["x", "c"], ["y"])], opsets=(("", 5),), ir=3,
                            outputs=[_y(shape=None)]),
}

REFUSED = {
    "checker-unknown-op": _model([helper.make_node("Frobnicate", ["x"], ["y"])]),
    "checker-contrib-op-in-default-domain": _model([helper.make_node("FastGelu", ["x"], ["y"])]),
    "checker-attribute-type": _model([helper.make_node("Softmax", ["x"], ["y"], axis=1.5)]),
    "checker-unknown-attribute": _model([helper.make_node("Relu", ["x"], ["y"], bogus=3)]),
    "duplicate-node-name": _model([helper.make_node("Relu", ["x"], ["h"], name="a"),
                                   helper.make_node("Relu", ["h"], ["y"], name="a")]),
    "declared-type": _model([helper.make_node("Cast", ["x"], ["y"], to=T.FLOAT)], outputs=[_y(T.FLOAT16)]),
    "declared-type-value-info": _model([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                                       value_info=[helper.make_tensor_value_info("h", T.INT64, ["N", 4])]),
    "type-error": _model([helper.make_node("Add", ["x", "i"], ["y"])],
                         inputs=[X, helper.make_tensor_value_info("i", T.INT64, ["N", 4])]),
}


@pytest.mark.parametrize("name", sorted(TOLERATED))
def test_what_onnxruntime_runs_is_a_warning(name):
    m = TOLERATED[name]
    assert _onnxruntime(m) == "runs"
    report = shapeinfer.check(m)
    code = name.split("-layernorm")[0]
    found = [f for f in report.findings if f.code == code]
    assert found and found[0].severity == "warning", report.findings
    assert "onnxruntime" in found[0].message and "refuse" in found[0].message  # who may refuse it
    assert report.exit_code == 0, [f.line() for f in report.errors]
    assert shapeinfer.check(m, strict=True).exit_code == 1


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_onnxruntime_refuses_is_an_error(name):
    m = REFUSED[name]
    assert _onnxruntime(m).startswith("refused")
    report = shapeinfer.check(m)
    code = {"declared-type-value-info": "declared-type"}.get(name, name.split("-")[0] if name.startswith("checker")
                                                            else name)
    assert code in [f.code for f in report.errors], report.findings
    assert report.exit_code == 1


def test_a_tolerated_complaint_does_not_hide_a_real_error_after_it():
    """Unsorted nodes (tolerated) first, then an unknown attribute (refused): both are found."""
    m = _model([helper.make_node("Relu", ["h"], ["y"]), helper.make_node("Relu", ["x"], ["h"], bogus=3)])
    assert _onnxruntime(m).startswith("refused")
    report = shapeinfer.check(m)
    codes = [f.code for f in report.findings]
    # (the schema check names the node and the attribute; onnx.checker, run again past the
    # tolerated complaint, says it too)
    assert {"schema-error", "unsorted-nodes", "checker"} <= set(codes), report.findings
    assert codes.index("unsorted-nodes") < codes.index("checker")
    assert report.exit_code == 1


def test_assume_nonempty_keeps_a_forced_broadcast_that_fails():
    """BERT's position embeddings hold 64 rows: seq = 65 fails in onnxruntime. The search for a
    binding that breaks the broadcast used to skip bindings where some dim could not be
    evaluated -- the failing broadcast itself -- so --assume-nonempty hid the warning."""
    path = os.path.join(HERE, "..", "fixtures", "corpus", "bert_classic.onnx")
    for assume in (False, True):
        found = [f for f in shapeinfer.check(path, assume_nonempty=assume).findings if f.code == "input-bound"]
        assert len(found) == 1 and "runs only when seq <= 64" in found[0].message, assume
        assert "at seq=65" in found[0].message and found[0].severity == "warning"
    m = onnx.load(path)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in m.graph.input]

    def run(seq):
        return sess.run(None, {n: np.ones((1, seq), np.int64) for n in names})

    run(64)
    with pytest.raises(Exception):
        run(65)


def test_onnx_shape_complaints_onnxruntime_runs_are_not_errors():
    """onnx's strict inference reads the default of an input that is also an initializer as a
    constant and refuses Reshape(x[0], [0,-1]) ('product cannot be 0 in combination with -1');
    onnxruntime loads the model and runs it with the shape the caller feeds. onnx's shape
    complaints are not findings: shapeinfer's own rules judge the node."""
    s = helper.make_tensor_value_info("s", T.INT64, [2])
    m = _model([helper.make_node("Reshape", ["x", "s"], ["y"])], inputs=[helper.make_tensor_value_info("x", T.FLOAT, [0]), s],
               outputs=[helper.make_tensor_value_info("y", T.FLOAT, None)],
               inits=[numpy_helper.from_array(np.array([0, -1], np.int64), "s")])
    with pytest.raises(Exception, match="Product cannot be 0"):
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.zeros(0, np.float32), "s": np.array([0, 3], np.int64)})[0].shape == (0, 3)
    report = shapeinfer.check(m)
    assert report.exit_code == 0, report.findings
