"""optimize keeps what the model computes, bit for bit, and what training_info reads.

dedupe merges two nodes only when their attributes are the same bits: a float attribute of 0.0
is not one of -0.0 (LeakyRelu's alpha, Clip-6's min, Pad-2's value, Constant's value_float(s)
give zeros of other signs), nor is a NaN one of another NaN. (Constants -- initializers, Constant
tensors, tensor attributes -- are merged by type, shape and bytes already.)

training_info's graphs read the main graph's tensors by name (its initializers, and any tensor
a node makes: the algorithm runs after the inference graph, on its tensors), and its bindings
assign main-graph initializers (mutable: training changes them). optimize keeps every such
name, keeps the bound initializers as the variables they are (nothing folded or merged with
their values: the optimised model computes what the original does after training changed
them), and keeps training_info as it was.
"""

import struct

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.optimizer import OptimizeReport

ort = pytest.importorskip("onnxruntime")


def _run(model, feeds, level="ORT_DISABLE_ALL"):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    return sess.run(None, {k: v for k, v in feeds.items() if k in names})


def _bits(arrays):
    return [(a.dtype, a.shape, np.ascontiguousarray(a).view(np.uint8).tobytes()) for a in arrays]


def _same_everywhere(model, out, feeds_list, levels=("ORT_DISABLE_ALL", "ORT_ENABLE_ALL")):
    """out passes the checker, loads at both levels and gives model's bytes at ``levels``."""
    onnx.checker.check_model(out, full_check=True)
    for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_ALL"):
        for feeds in feeds_list:
            got = _bits(_run(out, feeds, level))
            if level in levels:
                assert _bits(_run(model, feeds, level)) == got, (level, feeds)


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


NAN_A, NAN_B = _f32(0x7FC00001), _f32(0x7FC00002)
X = np.array([-1.5, -0.0, 0.0, 2.0, -np.inf, np.nan, -3.0e-39], np.float32)  # (a subnormal too)

# the op (opset, name, attribute, other attributes); a FLOATS attribute holds [value, 1.0]
ATTR_CASES = {
    "LeakyRelu-alpha": (18, "LeakyRelu", "alpha", {}),
    "Elu-alpha": (18, "Elu", "alpha", {}),
    "ThresholdedRelu-alpha": (18, "ThresholdedRelu", "alpha", {}),
    "HardSigmoid-beta": (18, "HardSigmoid", "beta", {"alpha": 0.0}),
    "Clip6-min": (10, "Clip", "min", {}),
    "Clip6-max": (10, "Clip", "max", {}),
    "Pad2-value": (10, "Pad", "value", {"mode": "constant", "pads": [1, 1]}),
    "Constant-value_float": (18, "Constant", "value_float", {}),
    "Constant-value_floats": (18, "Constant", "value_floats", {}),
}
# (a, a, b): the first two nodes are the same bits, the third differs from them only in bits
TRIPLES = {"signed-zeros": (-0.0, -0.0, 0.0), "nan-payloads": (NAN_A, NAN_A, NAN_B)}


def _attr_model(case, values):
    """Nodes of the op, alike but for the attribute (one node per value), each read by an
    Identity that makes a graph output (dedupe keeps a node that makes one)."""
    opset, op, name, rest = ATTR_CASES[case]
    nodes = []
    for k, v in enumerate(values):
        value = [v, 1.0] if name == "value_floats" else v
        nodes.append(helper.make_node(op, [] if op == "Constant" else ["x"], [f"a{k}"], **{name: value}, **rest))
        nodes.append(helper.make_node("Identity", [f"a{k}"], [f"y{k}"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                              [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None) for k in range(len(values))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)


# (onnxruntime refuses Clip-6 with a NaN bound when it creates the kernel: min <= max fails)
ATTR_TRIPLES = [(case, kind) for case in sorted(ATTR_CASES) for kind in sorted(TRIPLES)
                if not (case.startswith("Clip6") and kind == "nan-payloads")]


@pytest.mark.parametrize("case,kind", ATTR_TRIPLES)
def test_nodes_are_merged_when_their_float_attributes_are_the_same_bits(case, kind):
    """Of three nodes whose attribute is (a, a, b), the first two are merged and the third stays:
    -0.0 is not 0.0, one NaN's payload not another's (a NaN, unequal to itself as a number, is
    equal to itself as bits)."""
    values = TRIPLES[kind]
    model = _attr_model(case, values)
    written = [x.f if x.type == x.FLOAT else x.floats[0] for n in model.graph.node for x in n.attribute
               if x.name == ATTR_CASES[case][2]]
    assert [struct.pack("<f", v) for v in written] == [struct.pack("<f", v) for v in values]
    report = OptimizeReport()
    out = shapeinfer.optimize(model, passes=["dedupe"], report=report)
    assert len(report.changes.get("dedupe", [])) == 1, report.changes
    # Bits compared with onnxruntime's optimisations off: its common-subexpression elimination
    # (default level) compares float attributes as numbers and merges LeakyRelu(alpha=-0.0) with
    # LeakyRelu(alpha=0.0) -- seen where the first one's output has two readers, as here after
    # the merge (and in originals so built) -- which the spec does not allow.
    feeds = [{"x": X[:n]} for n in (0, 1, 7)]
    _same_everywhere(model, out, feeds, levels=("ORT_DISABLE_ALL",))
    _same_everywhere(model, shapeinfer.optimize(model), feeds, levels=("ORT_DISABLE_ALL",))


# --------------------------------------------------------------------------- training_info

def _training_model(read: str):
    """x @ W (+ x @ W2, W2 equal to W: dedupe bait) + Transpose(T) (a fold bait); training_info
    binds W (update_binding) and V (initialization_binding), and its algorithm reads ``read``:
    an initializer no node reads (``lr``), a tensor a node makes (``hid``, an Identity's output)
    or a bound initializer (``W``)."""
    w = np.arange(9, dtype=np.float32).reshape(3, 3) / 8
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(w.copy(), "W2"),
             numpy_helper.from_array(w.T.copy(), "T"), numpy_helper.from_array(np.full(3, 0.5, np.float32), "V"),
             numpy_helper.from_array(np.array([0.25], np.float32), "lr")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("MatMul", ["x", "W2"], ["h2"]),
             helper.make_node("Identity", ["h"], ["hid"]), helper.make_node("Add", ["hid", "h2"], ["s"]),
             helper.make_node("Transpose", ["T"], ["tt"]), helper.make_node("MatMul", ["s", "tt"], ["s2"]),
             helper.make_node("Add", ["s2", "V"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    algo = helper.make_graph(
        [helper.make_node("ReduceSum", [read], ["g0"], keepdims=0), helper.make_node("Mul", ["g0", "lr"], ["g1"]),
         helper.make_node("Sub", ["W", "g1"], ["W_new"]), helper.make_node("Transpose", ["T"], ["T_new"])],
        "algo", [], [helper.make_tensor_value_info("W_new", TensorProto.FLOAT, [3, 3]),
                     helper.make_tensor_value_info("T_new", TensorProto.FLOAT, [3, 3])])
    zeros = numpy_helper.from_array(np.zeros(3, np.float32))
    init = helper.make_graph([helper.make_node("Constant", [], ["V0"], value=zeros)], "init", [],
                             [helper.make_tensor_value_info("V0", TensorProto.FLOAT, [3])])
    model.training_info.append(helper.make_training_info(algo, [("W", "W_new"), ("T", "T_new")], init, [("V", "V0")]))
    onnx.checker.check_model(model, full_check=True)
    return model


def _trained(model, values: dict):
    """A copy of the model with these initializers' values, as training would leave them."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for t in out.graph.initializer:
        if t.name in values:
            t.CopyFrom(numpy_helper.from_array(values[t.name], t.name))
    return out


@pytest.mark.parametrize("read", ["lr", "hid", "W"])
def test_what_training_info_reads_and_binds_stays(read):
    model = _training_model(read)
    out = shapeinfer.optimize(model)
    onnx.checker.check_model(out, full_check=True)
    assert [t.SerializeToString() for t in out.training_info] == [t.SerializeToString() for t in model.training_info]
    made = {o for n in out.graph.node for o in n.output} | {i.name for i in out.graph.input}
    inits = {t.name: t for t in out.graph.initializer}
    for info in out.training_info:
        for g in (info.initialization, info.algorithm):
            mine = {o for n in g.node for o in n.output}
            for n in g.node:
                assert all(i in mine or i in made or i in inits for i in n.input), (n.input, sorted(made), sorted(inits))
        for b in list(info.initialization_binding) + list(info.update_binding):
            assert b.key in inits
            # a bound initializer keeps its value, and it is what the graph reads
            src = next(t for t in model.graph.initializer if t.name == b.key)
            assert numpy_helper.to_array(inits[b.key]).tobytes() == numpy_helper.to_array(src).tobytes()
    # trained, both models compute the same: nothing was folded or merged with a bound value
    update = {"W": np.full((3, 3), -0.0, np.float32), "T": np.eye(3, dtype=np.float32) * 3, "V": np.zeros(3, np.float32)}
    feeds = [{"x": np.resize(np.array([-1.5, -0.0, 2.0, np.nan], np.float32), (n, 3))} for n in (0, 1, 4)]
    _same_everywhere(model, out, feeds)
    _same_everywhere(_trained(model, update), _trained(out, update), feeds)
