"""Model-local functions: recursion is a clear error naming the functions; deep chains and calls
that multiply stay bounded (unknown outputs past the bound, never a RecursionError or a hang)."""

import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import shapeinfer
from shapeinfer.infer.engine import MAX_NESTING
from shapeinfer_cli.main import main

ort = pytest.importorskip("onnxruntime")


def _function(name, calls, domain="local"):
    """A function of one input: Concat(a, a) (the dim doubles), then calls to each of ``calls``."""
    nodes = [helper.make_node("Concat", ["a", "a"], ["t"], axis=0)]
    cur = "t"
    for k, callee in enumerate(calls):
        nodes.append(helper.make_node(callee, [cur], [f"c{k}"], domain=domain))
        cur = f"c{k}"
    nodes.append(helper.make_node("Identity", [cur], ["b"]))
    return helper.make_function(domain, name, ["a"], ["b"], nodes,
                                [helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])


def _model(functions, top="f0"):
    g = helper.make_graph([helper.make_node(top, ["x"], ["y"], domain="local")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, functions=functions, ir_version=8,
                             opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])


def _chain(depth):
    return _model([_function(f"f{i}", [f"f{i + 1}"] if i + 1 < depth else []) for i in range(depth)])


def test_a_recursive_function_is_a_clear_error_in_every_command(tmp_path, capsys):
    model = _model([_function("f0", ["f1"]), _function("f1", ["f0"])])
    with pytest.raises(shapeinfer.ShapeInferenceError, match=r"local:f0 calls itself \(local:f0 -> local:f1 -> local:f0\)"):
        shapeinfer.infer(model)
    with pytest.raises(shapeinfer.ShapeInferenceError, match="must not be recursive"):
        shapeinfer.optimize(model)
    report = shapeinfer.check(model)
    assert report.exit_code == 1 and not [f for f in report.findings if f.code == "internal-error"]
    assert any("recursive" in f.message for f in report.errors), report.findings
    with pytest.raises(Exception):  # onnxruntime refuses it too
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    path = tmp_path / "rec.onnx"
    onnx.save(model, str(path))
    for command in (["infer", str(path)], ["optimize", str(path), "-o", str(tmp_path / "o.onnx")], ["check", str(path)]):
        code = main(command)
        err = capsys.readouterr().err
        assert code == 1 and "Traceback" not in err, (command, err)
    assert not (tmp_path / "o.onnx").exists()


def test_a_chain_of_functions_deeper_than_the_bound_runs_and_stays_right():
    """onnxruntime runs a chain of 150 nested functions; shapeinfer follows MAX_NESTING of them
    and leaves the rest unknown (the dim doubles per level: 2^150 * N, past the budget anyway)."""
    depth = MAX_NESTING + 50
    model = _chain(depth)
    t = time.perf_counter()
    result = shapeinfer.infer(model)
    assert time.perf_counter() - t < 10
    shape = result.shape("y")  # unknown: no rank, or a fresh dim
    assert shape is None or (len(shape) == 1 and result.is_unknown_dim(shape[0]))
    assert any(d.kind == "budget" for d in result.diagnostics)
    shallow = shapeinfer.infer(_chain(3))
    assert shallow.shape_strs("y") == ["8*N"]
    (y,) = ort.InferenceSession(_chain(3).SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.zeros(5, np.float32)})
    assert y.shape == (40,)


def test_calls_that_multiply_stay_bounded():
    """f_i calls f_(i+1) twice, 40 deep: 2^40 bodies. The walk stops at a budget proportional
    to the model and leaves the rest unknown."""
    model = _model([_function(f"f{i}", [f"f{i + 1}", f"f{i + 1}"] if i < 40 else []) for i in range(41)])
    for call in (lambda: shapeinfer.infer(model), lambda: shapeinfer.check(model)):
        t = time.perf_counter()
        call()
        assert time.perf_counter() - t < 30
    result = shapeinfer.infer(model)
    shape = result.shape("y")
    assert shape is None or result.is_unknown_dim(shape[0])
    assert any("not walked" in d.message for d in result.diagnostics)
