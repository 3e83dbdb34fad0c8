"""Small builders shared by the tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from shapeinfer.symbolic import EvaluationError, evaluate


def single_node_model(op, opset, data_dims, const_inputs=(), attrs=None, dtype=TensorProto.FLOAT):
    """A model with one node: input ``x`` (dims: ints or symbol names), constant extra inputs."""
    inits = []
    names = ["x"]
    for i, arr in enumerate(const_inputs):
        name = f"c{i}"
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        names.append(name)
    attrs = dict(attrs or {})
    empty = [k for k, v in attrs.items() if isinstance(v, list) and not v]
    node = helper.make_node(op, names, ["y"], name=f"{op.lower()}_node", **{k: v for k, v in attrs.items() if k not in empty})
    for k in empty:  # an empty list has no type of its own: say it is INTS
        node.attribute.append(helper.make_attribute(k, [], attr_type=onnx.AttributeProto.INTS))
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", dtype, list(data_dims))],
        [helper.make_tensor_value_info("y", dtype, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def symbols_for(shape):
    names = [f"d{i}" for i in range(len(shape))]
    return names, dict(zip(names, shape))


def evaluate_shape(dims, binding):
    """The shape as ints under binding, or None if a dim cannot be evaluated."""
    try:
        return tuple(int(evaluate(d, binding)) for d in dims)
    except EvaluationError:
        return None


def save(model, path):
    onnx.save(model, str(path))
    return str(path)


def bench_module(name: str):
    """A module of bench/ (its models and chains), imported from the checkout."""
    import importlib
    import os
    import sys

    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(folder)


def generated_models(env_name: str, default: int):
    """(seed, model) from the adversarial generator for seeds 0.. (``env_name`` overrides how
    many), skipping the seeds whose recipe does not apply."""
    import os

    from tests.adversarial.gen import generate

    for seed in range(int(os.environ.get(env_name, default))):
        try:
            model = generate(seed).model
        except Exception:  # noqa: BLE001 -- a recipe that does not apply to this seed
            continue
        yield seed, model


def fold_one(op, inputs, attrs=None, opset=18, n_out=1, fold_float_math=False):
    """shapeinfer.fold.folder.fold_node on a node of the default domain given as plain data:
    inputs ``in0``, ``in1``... (None: omitted), outputs ``out0``..., ``attrs`` by name (an array
    is a tensor attribute). Its NodeProto, for onnx.reference, is built only when asked for."""
    from shapeinfer.fold.folder import fold_node

    attrs = dict(attrs or {})

    def proto():
        names = [f"in{k}" if a is not None else "" for k, a in enumerate(inputs)]
        plain = {k: numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v for k, v in attrs.items()
                 if not (isinstance(v, list) and not v)}
        node = helper.make_node(op, names, [f"out{k}" for k in range(n_out)], **plain)
        for k, v in attrs.items():  # an empty list has no type of its own: say it is INTS
            if isinstance(v, list) and not v:
                node.attribute.append(helper.make_attribute(k, [], attr_type=onnx.AttributeProto.INTS))
        return node

    return fold_node(op, "", attrs, list(inputs), n_out, opset, {"": opset}, 10, fold_float_math, node_proto=proto)
