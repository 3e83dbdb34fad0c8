"""Differential check on mutated models: whatever shapeinfer reports must be what onnxruntime
computes. Mutants of the fixture (rewired inputs, changed attributes and shape constants) are
inferred with and without ``assume_nonempty``; those onnxruntime can run are run at three
bindings, and every dim that is not unknown must evaluate to the real size. Invalid mutants may
raise ShapeInferenceError, never anything else.

test_fuzz.py mutates models too and judges only how failures are reported (no shapes);
test_adversarial.py judges generated graphs the same way.

SHAPEINFER_MUTANTS sets how many mutants (default 200; the closing notes report larger runs).
"""

import os
import random

import numpy as np
import onnx
import pytest

import shapeinfer
from shapeinfer import ShapeInferenceError
from shapeinfer.symbolic import EvaluationError, evaluate

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "tiny_bert.onnx")
BINDINGS = ((1, 1), (2, 3), (3, 2))


def _mutate(model, rng, names):
    nodes = model.graph.node
    for _ in range(rng.randint(1, 3)):
        node = nodes[rng.randrange(len(nodes))]
        r = rng.random()
        if r < 0.4 and node.input:
            node.input[rng.randrange(len(node.input))] = rng.choice(names)
        elif r < 0.6:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.INT:
                    a.i = rng.randint(-3, 3)
                if a.type == onnx.AttributeProto.INTS and a.ints:
                    a.ints[rng.randrange(len(a.ints))] = rng.randint(-3, 3)
        else:
            t = model.graph.initializer[rng.randrange(len(model.graph.initializer))]
            if t.data_type == onnx.TensorProto.INT64:
                arr = onnx.numpy_helper.to_array(t).copy()
                flat = arr.reshape(-1)
                if flat.size:
                    flat[rng.randrange(flat.size)] = rng.randint(-2, 6)
                t.CopyFrom(onnx.numpy_helper.from_array(arr, t.name))


def test_mutants_never_get_a_wrong_shape():
    ort = pytest.importorskip("onnxruntime")
    ort.set_default_logger_severity(4)
    base = onnx.load(FIXTURE)
    g = base.graph
    names = [o for n in g.node for o in n.output] + [i.name for i in g.input] + [t.name for t in g.initializer]
    rng = random.Random(20261121)
    checked = 0
    for _ in range(int(os.environ.get("SHAPEINFER_MUTANTS", 200))):
        model = onnx.ModelProto()
        model.CopyFrom(base)
        _mutate(model, rng, names)
        for assume in (False, True):
            try:
                result = shapeinfer.infer(model, assume_nonempty=assume)
            except ShapeInferenceError:
                continue
            outs = [o for n in model.graph.node for o in n.output if o and result.shape(o) is not None]
            exposed = onnx.ModelProto()
            exposed.CopyFrom(model)
            del exposed.graph.output[:]
            for o in outs:
                exposed.graph.output.append(onnx.helper.make_empty_tensor_value_info(o))
            try:
                sess = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
            except Exception:
                continue  # onnxruntime rejects the mutant: nothing to compare with
            for b, s in BINDINGS:
                feeds = {"input_ids": np.zeros((b, s), np.int64), "attention_mask": np.ones((b, s), np.int64)}
                try:
                    values = sess.run(outs, feeds)
                except Exception:
                    continue  # fails at run time for this binding: no shape to compare
                checked += 1
                for o, v in zip(outs, values):
                    dims = result.shape(o)
                    assert len(dims) == v.ndim, (o, result.shape_strs(o), v.shape)
                    for d, n in zip(dims, v.shape):
                        if result.is_unknown_dim(d):
                            continue
                        try:
                            got = evaluate(d, {"batch": b, "seq": s})
                        except EvaluationError:
                            got = None
                        assert got == n, (o, result.shape_strs(o), v.shape, (b, s), assume)
    assert checked > 0
