"""Fuzzing: mutated fixture models through the public API and the CLI.

The API may only raise the project's documented errors (ShapeInferenceError, ModelLoadError and
its ExternalDataError), each with a message; the CLI exits 0, 1 or 2 -- never 3 (an internal
error) -- and never prints a traceback.

    python -m pytest tests/test_fuzz.py                           # the default budget (CI)
    SHAPEINFER_FUZZ=2000 python -m pytest tests/test_fuzz.py      # a longer run
"""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import shapeinfer  # noqa: E402
from shapeinfer.errors import ModelLoadError, ShapeInferenceError  # noqa: E402
from shapeinfer_cli.main import main  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
SOURCES = [os.path.join(FIXTURES, "tiny_bert.onnx")] + [
    os.path.join(FIXTURES, "corpus", f) for f in ("cnn_dynamo.onnx", "gpt2_dynamo.onnx", "vit_torchvision_dynamo.onnx")]
BUDGET = int(os.environ.get("SHAPEINFER_FUZZ", "40"))
_MODELS: dict = {}


def _source(k):
    path = SOURCES[k % len(SOURCES)]
    if path not in _MODELS:
        _MODELS[path] = onnx.load(path).SerializeToString()
    m = onnx.ModelProto()
    m.ParseFromString(_MODELS[path])
    return m


def _names(m):
    out = [i.name for i in m.graph.input] + [t.name for t in m.graph.initializer]
    for n in m.graph.node:
        out.extend(o for o in n.output if o)
    return out


def _mutate(m, ops, draw_int):
    """Apply the drawn mutations; each op is (kind, a, b) with a, b ints picking the target."""
    g = m.graph
    for kind, a, b in ops:
        nodes = g.node
        if kind == "drop" and len(nodes) > 1:
            del nodes[a % len(nodes)]
        elif kind == "duplicate" and nodes:
            n = onnx.NodeProto()
            n.CopyFrom(nodes[a % len(nodes)])
            nodes.insert(b % (len(nodes) + 1), n)
        elif kind == "rewire" and nodes:
            n = nodes[a % len(nodes)]
            names = _names(m)
            if n.input and names:
                n.input[b % len(n.input)] = names[(a * 7 + b) % len(names)]
        elif kind == "swap" and len(nodes) > 1:
            i, j = a % len(nodes), b % len(nodes)
            ni, nj = onnx.NodeProto(), onnx.NodeProto()
            ni.CopyFrom(nodes[i])
            nj.CopyFrom(nodes[j])
            nodes[i].CopyFrom(nj)
            nodes[j].CopyFrom(ni)
        elif kind == "attr" and nodes:
            n = nodes[a % len(nodes)]
            for attr in n.attribute:
                if attr.type == onnx.AttributeProto.INT:
                    attr.i = [-3, -1, 0, 1, 2, 7, 2**40][b % 7]
                elif attr.type == onnx.AttributeProto.INTS and len(attr.ints):
                    attr.ints[b % len(attr.ints)] = [-5, -1, 0, 1, 3, 2**33][b % 6]
                elif attr.type == onnx.AttributeProto.FLOAT:
                    attr.f = [float("nan"), -1.0, 0.0, 1e30][b % 4]
        elif kind == "initializer" and g.initializer:
            t = g.initializer[a % len(g.initializer)]
            choice = b % 4
            if choice == 0 and t.raw_data:
                t.raw_data = t.raw_data[: len(t.raw_data) // 2]  # too short for its dims
            elif choice == 1 and len(t.dims):
                t.dims[0] = [0, 1, 3, 2**31][a % 4]
            elif choice == 2 and t.data_type == TensorProto.INT64 and t.raw_data and len(t.raw_data) % 8 == 0:
                vals = np.frombuffer(t.raw_data, np.int64).copy()
                vals[a % max(len(vals), 1) if len(vals) else 0:] = [-7, -1, 0, 2**62][b % 4]
                t.raw_data = vals.tobytes()
            else:
                t.data_type = [TensorProto.FLOAT, TensorProto.INT32, TensorProto.STRING, 99][a % 4]
        elif kind == "input-shape" and g.input:
            vi = g.input[a % len(g.input)]
            dims = vi.type.tensor_type.shape.dim
            if len(dims):
                d = dims[b % len(dims)]
                v = [0, 1, 5, -2, None][a % 5]
                if v is None:
                    d.dim_param = "zz"
                else:
                    d.dim_value = v
            elif b % 2:
                vi.type.tensor_type.shape.dim.add().dim_value = 3
        elif kind == "optype" and nodes:
            nodes[a % len(nodes)].op_type = OPS[b % len(OPS)]
        elif kind == "drop-attr" and nodes:
            n = nodes[a % len(nodes)]
            if n.attribute:
                del n.attribute[b % len(n.attribute)]
        elif kind == "opset":
            m.opset_import[0].version = [1, 5, 11, 13, 30][b % 5]
        elif kind == "output":
            if g.output:
                g.output[a % len(g.output)].name = ["missing_tensor", _names(m)[b % len(_names(m))]][a % 2]
    return m


OPS = ["Reshape", "Expand", "Tile", "Shape", "Gather", "Concat", "Slice", "Unsqueeze", "Squeeze", "Transpose",
       "MatMul", "Gemm", "Conv", "Resize", "Pad", "Split", "Range", "ConstantOfShape", "Where", "Einsum", "TopK",
       "NonZero", "Loop", "If", "Scan", "Softmax", "ReduceSum", "Flatten", "DepthToSpace", "OneHot", "Frobnicate"]
MUTATION = st.tuples(
    st.sampled_from(["drop", "duplicate", "rewire", "swap", "attr", "initializer", "input-shape", "opset", "output",
                     "optype", "drop-attr"]),
    st.integers(0, 10_000), st.integers(0, 10_000))


def _settings():
    return settings(max_examples=BUDGET, deadline=None, derandomize=os.environ.get("CI") is not None or BUDGET <= 40,
                    suppress_health_check=list(HealthCheck), database=None)


@_settings()
@given(source=st.integers(0, len(SOURCES) - 1), ops=st.lists(MUTATION, min_size=1, max_size=4))
def test_api_raises_only_documented_errors(source, ops):
    m = _mutate(_source(source), ops, None)
    for call in (lambda: shapeinfer.infer(m), lambda: shapeinfer.infer(m, assume_nonempty=True),
                 lambda: shapeinfer.infer_shapes(m), lambda: shapeinfer.optimize(m)):
        try:
            call()
        except (ShapeInferenceError, ModelLoadError) as e:
            assert str(e).strip()
    report = shapeinfer.check(m)  # never raises: every problem is a finding
    assert all(f.message for f in report.findings)
    assert report.exit_code in (0, 1, 2)


@_settings()
@given(source=st.integers(0, len(SOURCES) - 1), ops=st.lists(MUTATION, min_size=1, max_size=4),
       command=st.sampled_from(["infer", "optimize", "check"]))
def test_cli_never_prints_a_traceback(tmp_path_factory, capsys, source, ops, command):
    m = _mutate(_source(source), ops, None)
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "m.onnx"
    path.write_bytes(m.SerializeToString())
    args = [command, str(path)] + (["-o", str(folder / "out.onnx")] if command != "check" else [])
    code = main(args)
    text = "".join(capsys.readouterr())
    assert "Traceback" not in text
    assert code in (0, 1, 2), text[-500:]
    if code != 0 and command != "check":
        assert not (folder / "out.onnx").exists()


@_settings()
@given(source=st.integers(0, len(SOURCES) - 1),
       flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=8),
       command=st.sampled_from(["infer", "optimize", "check"]))
def test_cli_on_corrupted_bytes(tmp_path_factory, capsys, source, flips, command):
    """Bytes of a serialized model overwritten at random places: whatever still parses must
    get a verdict, never a traceback or an internal error."""
    data = bytearray(_source(source).SerializeToString())
    for where, value in flips:
        data[where % len(data)] = value
    folder = tmp_path_factory.mktemp("bytes")
    path = folder / "m.onnx"
    path.write_bytes(bytes(data))
    args = [command, str(path)] + (["-o", str(folder / "out.onnx")] if command != "check" else [])
    code = main(args)
    text = "".join(capsys.readouterr())
    assert "Traceback" not in text
    assert code in (0, 1, 2), text[-500:]
