"""A model over 2 GB (weights as external data) is inferred and annotated without loading the
weights; -o writes the model elsewhere with its data file beside it, copied without loading it
(sparse where the source is), the source untouched."""

import os
import resource
import subprocess
import sys

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper

import shapeinfer
from tests.helpers import bench_module

BIG = 700_000_000  # float32 elements: 2.8 GB of weights


def _external(name, dtype, dims, location, offset, length):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _big_model(folder):
    """weights.bin: a small int64 shape at offset 0, then 2.8 GB of zeros (a sparse file)."""
    shape = np.array([-1, 4], dtype="<i8").tobytes()
    data = os.path.join(folder, "weights.bin")
    with open(data, "wb") as fh:
        fh.write(shape)
        fh.seek(4096 + BIG * 4 - 1)
        fh.write(b"\0")
    nodes = [
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
        helper.make_node("Shape", ["w"], ["ws"], name="shape_of_weights"),
        helper.make_node("Gather", ["w", "idx"], ["g"], name="gather_weights"),
    ]
    graph = helper.make_graph(
        nodes, "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, ["K"])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT if n != "ws" else TensorProto.INT64, None)
         for n in ("y", "ws", "g")],
        [_external("target", TensorProto.INT64, [2], "weights.bin", 0, 16),
         _external("w", TensorProto.FLOAT, [BIG], "weights.bin", 4096, BIG * 4)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = os.path.join(folder, "big.onnx")
    with open(path, "wb") as fh:
        fh.write(model.SerializeToString())
    return path, data


def test_big_model_is_inferred_without_reading_weights(tmp_path):
    path, data = _big_model(str(tmp_path))
    assert os.path.getsize(data) > 2**31
    result = shapeinfer.infer(path)
    # The small external shape tensor is read (-1 resolves to 2*N); the weights are not.
    assert result.shape_strs("y") == ["2*N", "4"]
    assert result.shape_strs("ws") == ["1"] and result.shape_strs("g") == ["K"]
    assert result.fact("w").value is None


def _cli_on_big_model(tmp_path, command, out_name):
    """Build the big model in src/, run the CLI writing into out/; (data file, stat, out path)."""
    src = tmp_path / "src"
    out_dir = tmp_path / "out"
    src.mkdir()
    out_dir.mkdir()
    path, data = _big_model(str(src))
    before = os.stat(data)
    out = out_dir / out_name
    code = subprocess.run([sys.executable, "-m", "shapeinfer_cli.main", *command, path, "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert code.returncode == 0, code.stderr
    return data, before, out


def _data_beside(out):
    """The output's external data: one file beside it, holding the source's bytes, sparse."""
    out_dir = out.parent
    data_name = out.name + ".data"
    assert sorted(os.listdir(out_dir)) == sorted([out.name, data_name])
    m = shapeinfer.load_model(str(out))  # its external data checks out: inside the folder, long enough
    locations = {e.value for t in m.graph.initializer for e in t.external_data if e.key == "location"}
    assert locations == {data_name}
    copied = os.stat(out_dir / data_name)
    assert copied.st_nlink == 1 and copied.st_blocks * 512 < 64 * 2**20  # the zeros stayed holes
    return m


def test_cli_writes_big_model_elsewhere_with_its_data_beside_it(tmp_path):
    data, before, out = _cli_on_big_model(tmp_path, [], "annotated.onnx")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert peak_mb < 1024, f"the CLI used {peak_mb:.0f} MB: weights were loaded"
    after = os.stat(data)
    assert (after.st_size, after.st_mtime_ns, after.st_nlink) == (before.st_size, before.st_mtime_ns, 1)
    m = _data_beside(out)
    w = next(t for t in m.graph.initializer if t.name == "w")
    info = {e.key: e.value for e in w.external_data}
    assert int(info["length"]) == BIG * 4 and int(info["offset"]) % 4096 == 0
    assert os.path.getsize(out.parent / "annotated.onnx.data") == int(info["offset"]) + BIG * 4
    dims = next(o for o in m.graph.output if o.name == "y").type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["2*N", 4]
    # the small shape tensor was copied too: inference on the written model reads it back
    assert shapeinfer.infer(str(out)).shape_strs("y") == ["2*N", "4"]


def test_external_location_outside_the_model_folder_is_not_read(tmp_path):
    inner = tmp_path / "model"
    inner.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.array([-1, 4], dtype="<i8").tobytes())
    node = helper.make_node("Reshape", ["x", "target"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_external("target", TensorProto.INT64, [2], "../secret.bin", 0, 16)],
    )
    path = inner / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString())
    with pytest.raises(shapeinfer.ExternalDataError, match="inside the model's folder"):
        shapeinfer.infer(str(path))
    # a model given in memory has no folder: the location is refused all the same, and the
    # bytes are never read
    model = onnx.load(str(path), load_external_data=False)
    report = shapeinfer.check(model)
    assert report.exit_code == 1 and [f.code for f in report.findings] == ["external-data"]


def test_optimize_big_model_keeps_external_weights(tmp_path):
    data, before, out = _cli_on_big_model(tmp_path, ["optimize"], "opt.onnx")
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 < 1024
    assert os.stat(data).st_mtime_ns == before.st_mtime_ns
    m = _data_beside(out)
    w = next(t for t in m.graph.initializer if t.name == "w")
    assert w.data_location == TensorProto.EXTERNAL
    # Shape(w) is known without reading w: it became a constant.
    assert "Shape" not in [n.op_type for n in m.graph.node]


def test_7b_shaped_model_is_optimised_in_its_folder_and_checked_without_reading_weights(tmp_path):
    """The Llama-2-7B-shaped model of bench/models.py (6.7 B float16 parameters, 13.5 GB of
    sparse external data): optimize writes beside it and references the data file (no copy,
    no data file of its own), check passes on both, and each CLI run stays far below the
    weights' size in memory (one that read them would need 13.5 GB)."""
    path = bench_module("models").llama_7b(str(tmp_path))
    data = tmp_path / "llama7b.data"
    before = os.stat(data)
    assert before.st_size > 13 * 10**9
    for command in (["optimize", path, "-o", str(tmp_path / "opt.onnx")], ["check", path],
                    ["check", str(tmp_path / "opt.onnx")]):
        run = subprocess.run([sys.executable, "-m", "shapeinfer_cli.main", *command], capture_output=True,
                             text=True, timeout=300, cwd=str(tmp_path))
        assert run.returncode == 0, (command, run.stdout[-2000:], run.stderr[-2000:])
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 < 1024
    assert sorted(os.listdir(tmp_path)) == ["llama7b.data", "llama7b.onnx", "opt.onnx"]
    after = os.stat(data)
    assert (after.st_size, after.st_mtime_ns, after.st_blocks) == (before.st_size, before.st_mtime_ns, before.st_blocks)
    m = onnx.load(str(tmp_path / "opt.onnx"), load_external_data=False)
    src = onnx.load(path, load_external_data=False)
    refs = lambda model: {t.name: tuple((e.key, e.value) for e in t.external_data)  # noqa: E731
                          for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    assert refs(m) == refs(src) and len(refs(m)) == 32 * 9 + 3  # every weight, as the source has it
    dims = [d.dim_param or d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "seq", 32000]


def test_7b_shaped_graph_optimised_computes_the_same_in_onnxruntime(tmp_path):
    """The same graph with small weights (random, written into the sparse file): the optimised
    model, referencing that file, gives the original's outputs bit for bit at sizes 0 and 1."""
    ort = pytest.importorskip("onnxruntime")
    path = bench_module("models").llama_7b(str(tmp_path), layers=2,
                                    config=dict(hidden=64, heads=4, head_dim=16, ffn=96, vocab=50))
    rng = np.random.default_rng(3)
    src = onnx.load(path, load_external_data=False)
    with open(tmp_path / "llama7b.data", "r+b") as fh:
        for t in src.graph.initializer:
            if t.data_location == TensorProto.EXTERNAL:
                info = {e.key: e.value for e in t.external_data}
                fh.seek(int(info["offset"]))
                fh.write((rng.standard_normal(int(info["length"]) // 2) * 0.1).astype(np.float16).tobytes())
    opt = shapeinfer.optimize(path)
    from shapeinfer.modelio.writer import write_model

    written = write_model(opt, str(tmp_path / "opt.onnx"), source_dir=str(tmp_path))
    assert written.referenced == ("llama7b.data",) and written.data is None
    a = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(tmp_path / "opt.onnx"), providers=["CPUExecutionProvider"])
    for batch, seq in ((1, 5), (2, 1), (1, 0), (0, 3)):
        feeds = {"input_ids": rng.integers(0, 50, (batch, seq)), "position_ids": np.tile(np.arange(seq), (batch, 1))}
        want, got = a.run(None, feeds)[0], b.run(None, feeds)[0]
        assert want.shape == (batch, seq, 50)
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
