"""Rule results are memoized on (op, attributes, input facts): the results must be the same as
without the memo, tensor by tensor, on every fixture and on generated graphs -- and a rule that
mints a symbol is never served from it (two unknown dims are not one)."""

import importlib
import os

import onnx
import pytest
from onnx import TensorProto, helper

import shapeinfer
from tests import corpus
from tests.helpers import generated_models

engine = importlib.import_module("shapeinfer.infer.engine")


def _facts(model, memo):
    saved = engine.MEMOIZE
    engine.MEMOIZE = memo
    try:
        r = shapeinfer.infer(model)
    finally:
        engine.MEMOIZE = saved
    out = {}
    for name in r.tensor_names():
        f = r.fact(name)
        value = None if f is None or f.value is None else (str(f.value.dtype), f.value.shape, repr(f.value.tolist()))
        out[name] = None if f is None else (f.dtype, r.shape_strs(name), value)
    return out, [str(d) for d in r.diagnostics], r.summary()


@pytest.mark.parametrize("entry", corpus.entries(), ids=lambda e: e["file"])
def test_memo_changes_nothing_on_the_fixtures(entry):
    model = onnx.load(os.path.join(entry["dir"], entry["file"]))
    assert _facts(model, True) == _facts(model, False)


def test_memo_changes_nothing_on_generated_graphs():
    compared = 0
    for seed, model in generated_models("SHAPEINFER_MEMO_SEEDS", 60):
        try:
            a = _facts(model, True)
        except shapeinfer.ShapeInferenceError:
            with pytest.raises(shapeinfer.ShapeInferenceError):
                _facts(model, False)
            continue
        assert a == _facts(model, False), seed
        compared += 1
    assert compared > 30


def test_a_rule_that_mints_is_not_served_twice():
    """Two NonZero of equal inputs have data-dependent sizes of their own: two symbols."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])
    nodes = [helper.make_node("NonZero", ["x"], ["a"]), helper.make_node("NonZero", ["x"], ["b"])]
    outs = [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in "ab"]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs), opset_imports=[helper.make_opsetid("", 17)])
    r = shapeinfer.infer(model)
    assert r.shape("a")[1] != r.shape("b")[1]
