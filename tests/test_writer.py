"""Writing models and reports: a model with external data written into another folder loads and
runs in onnxruntime from there, with its data file beside it (the source's untouched); -o never
replaces the input or a file it reads, however it is reached (symbolic link in the folder path or
the name, hard link); streams are written through; a failed write leaves nothing behind."""

import hashlib
import os
import stat
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.modelio.writer import OutputError, resolve_destination, write_model
from shapeinfer_cli.main import main

ort = pytest.importorskip("onnxruntime")

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "fixtures", "tiny_bert.onnx")
WRITERS = ("infer", "optimize")
COMMANDS = ("infer", "optimize", "check")

RNG = np.random.default_rng(7)
W1 = RNG.standard_normal((64, 32)).astype(np.float32)
B1 = RNG.standard_normal(32).astype(np.float32)
W2 = RNG.standard_normal((32, 16)).astype(np.float32)
C = RNG.standard_normal(16).astype(np.float32)  # 16 elements: always inline
D = RNG.standard_normal((16, 16)).astype(np.float32)  # 1024 bytes: inline in the source


def _external(name, arr, location, offset):
    t = numpy_helper.from_array(arr, name)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(arr.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _external_model(folder):
    """src/m.onnx: W1 and B1 in m.data (with bytes no tensor reads between them), W2 in
    weights/w2.bin, C and D inline; y = ((x @ W1 + B1) @ W2 + C) @ D, x of shape [N, 64]."""
    folder.mkdir(exist_ok=True)
    (folder / "weights").mkdir(exist_ok=True)
    with open(folder / "m.data", "wb") as fh:
        fh.write(W1.tobytes())
        fh.write(b"\xAB" * 8192)  # read by nothing
        fh.write(B1.tobytes())
    (folder / "weights" / "w2.bin").write_bytes(b"\x00" * 100 + W2.tobytes())
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h1"]),
        helper.make_node("Add", ["h1", "B1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "W2"], ["h3"]),
        helper.make_node("Add", ["h3", "C"], ["h4"]),
        helper.make_node("MatMul", ["h4", "D"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])],
        [_external("W1", W1, "m.data", 0), _external("B1", B1, "m.data", W1.nbytes + 8192),
         _external("W2", W2, "weights/w2.bin", 100), numpy_helper.from_array(C, "C"), numpy_helper.from_array(D, "D")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _digests(folder):
    out = {}
    for root, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(root, f)
            out[p] = (hashlib.sha256(open(p, "rb").read()).hexdigest(), os.stat(p).st_nlink)
    return out


def _run(path, n=3):
    x = np.random.default_rng(0).standard_normal((n, 64)).astype(np.float32)
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _locations(path):
    m = onnx.load(str(path), load_external_data=False)
    return {t.name: {e.key: e.value for e in t.external_data}.get("location")
            for t in m.graph.initializer if t.data_location == TensorProto.EXTERNAL}


def _check_passes(out, monkeypatch, capsys):
    # shapeinfer's check runs onnx.checker on the loaded proto, which looks for external data
    # relative to the working directory: run it from the model's folder (see
    # test_check_from_another_folder_finds_the_data_beside_the_model)
    monkeypatch.chdir(out.parent)
    assert main(["check", out.name]) == 0, capsys.readouterr()
    monkeypatch.chdir(HERE)


@pytest.fixture
def src(tmp_path):
    return _external_model(tmp_path / "src")


# --------------------------------------------------------------------- external data beside the output


@pytest.mark.parametrize("command", WRITERS)
def test_model_with_external_data_written_to_a_sibling_folder_loads_and_runs(command, src, tmp_path, monkeypatch,
                                                                              capsys):
    before = _digests(src.parent)
    want = _run(src)
    out = tmp_path / "out" / "x.onnx"
    out.parent.mkdir()
    assert main([command, str(src), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "external data: " in text and "x.onnx.data" in text
    assert sorted(os.listdir(out.parent)) == ["x.onnx", "x.onnx.data"]
    assert set(_locations(out).values()) == {"x.onnx.data"}
    # D (1024 bytes) moved out; C (16 elements) stays inline, and B1 (32 elements) comes inline
    assert set(_locations(out)) == {"W1", "W2", "D"}
    np.testing.assert_array_equal(_run(out), want)
    np.testing.assert_array_equal(_run(out, n=1), _run(src, n=1))
    # the unread bytes between W1 and B1 were not copied: tensors are packed, large ones aligned
    assert os.path.getsize(out.parent / "x.onnx.data") < os.path.getsize(src.parent / "m.data") + W2.nbytes + D.nbytes
    assert _digests(src.parent) == before  # source bytes and link counts unchanged
    assert os.stat(out.parent / "x.onnx.data").st_nlink == 1  # onnx.load refuses hard-linked data
    onnx.load(str(out))  # onnx's own loader accepts it
    onnx.checker.check_model(str(out), full_check=True)
    _check_passes(out, monkeypatch, capsys)


def test_optimize_verify_runs_a_model_with_external_data(src, tmp_path, capsys):
    out = tmp_path / "out" / "x.onnx"
    out.parent.mkdir()
    assert main(["optimize", str(src), "-o", str(out), "--verify", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["verify"]["outcome"] == "identical" and data["verify"]["engine"] == "onnxruntime"
    assert data["written"]["external_data"] == str(out) + ".data" and data["written"]["tensors"] == 3
    assert [r["result"] for r in data["verify"]["runs"]] == ["ok"] * 4


def test_check_from_another_folder_finds_the_data_beside_the_model(src, tmp_path, monkeypatch, capsys):
    """The README's CI recipe, run from another folder: onnx.checker resolves external data in
    the model's folder, not the working directory (it used to fail every such model)."""
    monkeypatch.chdir(tmp_path)
    assert main(["check", str(src)]) == 0, capsys.readouterr()
    assert os.getcwd() == str(tmp_path)


@pytest.mark.parametrize("args, external, data_file", [
    ([], {"W1", "W2", "D"}, "x.onnx.data"),
    (["--external-data", "w.bin"], {"W1", "W2", "D"}, "w.bin"),
    # C (16 elements) stays inline whatever the threshold: runtimes refuse small shape-like
    # tensors as external data, and no weight is that small
    (["--external-data", "w.bin", "--size-threshold", "0"], {"W1", "W2", "D"}, "w.bin"),
    (["--external-data", "w.bin", "--size-threshold", "1024"], {"W1", "W2", "D"}, "w.bin"),
    (["--external-data", "w.bin", "--size-threshold", "1025"], {"W1", "W2"}, "w.bin"),
    # tensors already external stay external whatever the threshold: they are never loaded
    (["--external-data", "w.bin", "--size-threshold", "1000000"], {"W1", "W2"}, "w.bin"),
], ids=["default", "named", "threshold_0", "threshold_at_D", "threshold_above_D", "threshold_huge"])
@pytest.mark.parametrize("command", WRITERS)
def test_external_data_options(command, args, external, data_file, src, tmp_path, capsys):
    out = tmp_path / "out" / "x.onnx"
    out.parent.mkdir()
    assert main([command, str(src), "-o", str(out)] + args) == 0, capsys.readouterr().err
    locations = _locations(out)
    assert set(locations) == external and set(locations.values()) == {data_file}
    assert sorted(os.listdir(out.parent)) == sorted(["x.onnx", data_file])
    np.testing.assert_array_equal(_run(out), _run(src))


@pytest.mark.parametrize("command", WRITERS)
def test_a_model_without_external_data_gets_a_data_file_only_when_asked(command, tmp_path, capsys):
    want = _run_tiny(TINY)
    plain = tmp_path / "plain.onnx"
    assert main([command, TINY, "-o", str(plain)]) == 0
    assert os.listdir(tmp_path) == ["plain.onnx"] and not _locations(plain)
    split = tmp_path / "split.onnx"
    assert main([command, TINY, "-o", str(split), "--external-data", "split.bin", "--size-threshold", "0"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["plain.onnx", "split.bin", "split.onnx"]
    assert _locations(split) and set(_locations(split).values()) == {"split.bin"}
    np.testing.assert_array_equal(_run_tiny(split), want)
    # no tensor reaches the threshold: one file, no data file
    one = tmp_path / "one.onnx"
    assert main([command, TINY, "-o", str(one), "--external-data", "one.bin", "--size-threshold", "100000000"]) == 0
    assert not (tmp_path / "one.bin").exists() and not _locations(one)
    capsys.readouterr()


def _run_tiny(path):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 3 for d in i.shape]
        feeds[i.name] = (np.arange(np.prod(shape)) % 7).reshape(shape).astype(
            np.int64 if "int64" in i.type else np.float32)
    return sess.run(None, feeds)[0]


def test_a_small_external_shape_tensor_comes_inline_so_that_the_output_loads(tmp_path, capsys):
    """onnxruntime reads a Reshape's shape while loading and refuses it as external data: the
    source does not load, what shapeinfer writes does."""
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "m.data").write_bytes(np.array([-1, 4], np.int64).tobytes() + W1.tobytes())
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("MatMul", ["r", "W"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["16*N", 32])],
        [_external("shape", np.array([-1, 4], np.int64), "m.data", 0),
         _external("W", W1[:4], "m.data", 16)])
    src = folder / "m.onnx"
    src.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                      ir_version=10).SerializeToString())
    with pytest.raises(Exception, match="external"):
        ort.InferenceSession(str(src), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((2, 16, 4)).astype(np.float32)
    outs = []
    for command in WRITERS:
        out = tmp_path / f"{command}.onnx"
        assert main([command, str(src), "-o", str(out)]) == 0
        assert set(_locations(out)) == {"W"}
        outs.append(ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], x.reshape(-1, 4) @ W1[:4], rtol=1e-5, atol=1e-5)
    capsys.readouterr()


def test_write_model_library_function(src, tmp_path):
    model = shapeinfer.load_model(str(src))
    original = model.SerializeToString()
    out = tmp_path / "lib" / "y.onnx"
    out.parent.mkdir()
    written = write_model(model, out, source_dir=str(src.parent))
    assert model.SerializeToString() == original  # the model given is not changed
    assert written.data == str(out) + ".data" and written.tensors == 3
    assert written.data_bytes == os.path.getsize(written.data)
    np.testing.assert_array_equal(_run(out), _run(src))
    with pytest.raises(OutputError, match="source_dir"):
        write_model(model, tmp_path / "lib" / "z.onnx")
    assert not (tmp_path / "lib" / "z.onnx").exists()


@pytest.mark.parametrize("args, says", [
    (["--size-threshold", "10"], "--size-threshold applies with --external-data"),
    (["--external-data", "sub/w.bin"], "give a file name"),
    (["--external-data", ".."], "give a file name"),
    (["--external-data", "x.onnx"], "is the model file itself"),
], ids=["threshold_without_file", "file_in_a_folder", "dotdot", "data_is_the_model"])
@pytest.mark.parametrize("command", WRITERS)
def test_bad_external_data_options_are_usage_errors(command, args, says, src, tmp_path, capsys):
    out = tmp_path / "out" / "x.onnx"
    out.parent.mkdir()
    assert main([command, str(src), "-o", str(out)] + args) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert os.listdir(out.parent) == []


def test_external_data_options_need_an_output(src, capsys):
    assert main(["infer", str(src), "--external-data", "w.bin"]) == 2
    assert "-o" in capsys.readouterr().err


def test_why_the_data_is_copied_not_hard_linked(src):
    """A hard link to the source's data file would give the right bytes, but onnx.load refuses
    a data file with more than one link -- the source model's as well as ours."""
    onnx.load(str(src))
    os.link(src.parent / "m.data", src.parent / "linked.data")
    with pytest.raises(Exception, match="hard ?link"):
        onnx.load(str(src))
    os.unlink(src.parent / "linked.data")


@pytest.mark.parametrize("command", WRITERS)
def test_the_data_file_never_overwrites_a_file_the_input_reads(command, src, tmp_path, capsys):
    before = _digests(src.parent)
    cases = [
        (src.parent / "b.onnx", ["--external-data", "m.data"]),  # the source's data file by name
        (src.parent / "weights" / "b.onnx", ["--external-data", "w2.bin"]),
    ]
    hard = tmp_path / "other"
    hard.mkdir()
    os.link(src.parent / "m.data", hard / "b.onnx.data")  # a hard link to it, under the default name
    cases.append((hard / "b.onnx", []))
    for out, args in cases:
        assert main([command, str(src), "-o", str(out)] + args) == 2
        err = capsys.readouterr().err
        assert "external data the input model reads" in err and "refusing" in err
        assert not out.exists()
    os.unlink(hard / "b.onnx.data")
    assert _digests(src.parent) == before


@pytest.mark.parametrize("command", WRITERS)
def test_output_beside_the_source_references_its_data_files(command, src, capsys):
    """Written into the folder the input's locations are relative to, the model reads the
    input's data files where they are (a 13.5 GB model is not copied): same locations, same
    ranges, no data file written, and onnxruntime runs it to the same outputs."""
    before = _digests(src.parent)
    src_refs = {t.name: {e.key: e.value for e in t.external_data}
                for t in onnx.load(str(src), load_external_data=False).graph.initializer
                if t.data_location == TensorProto.EXTERNAL}
    out = src.parent / "b.onnx"
    assert main([command, str(src), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "referenced where it is, not copied" in said and "m.data" in said
    refs = {t.name: {e.key: e.value for e in t.external_data}
            for t in onnx.load(str(out), load_external_data=False).graph.initializer
            if t.data_location == TensorProto.EXTERNAL}
    assert refs and all({"location", "offset", "length"} <= set(r) for r in refs.values())
    assert all(src_refs[name] == r for name, r in refs.items())  # (the optimizer may drop some)
    assert set(_locations(out).values()) <= {"m.data", "weights/w2.bin"}
    assert not (src.parent / "b.onnx.data").exists()
    np.testing.assert_array_equal(_run(out), _run(src))
    assert {k: v for k, v in _digests(src.parent).items() if k in before} == before


@pytest.mark.parametrize("command", WRITERS)
def test_output_beside_the_source_with_a_data_file_named_gets_it(command, src, capsys):
    before = _digests(src.parent)
    out = src.parent / "b.onnx"
    assert main([command, str(src), "-o", str(out), "--external-data", "b.bin"]) == 0
    capsys.readouterr()
    assert set(_locations(out).values()) == {"b.bin"}
    np.testing.assert_array_equal(_run(out), _run(src))
    after = _digests(src.parent)
    assert {k: v for k, v in after.items() if k in before} == before


def test_data_file_that_is_a_symlink_or_not_a_file_is_refused(src, tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    elsewhere = tmp_path / "elsewhere.bin"
    elsewhere.write_bytes(b"keep")
    os.symlink(elsewhere, out_dir / "x.onnx.data")
    assert main(["infer", str(src), "-o", str(out_dir / "x.onnx")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    os.unlink(out_dir / "x.onnx.data")
    (out_dir / "x.onnx.data").mkdir()
    assert main(["infer", str(src), "-o", str(out_dir / "x.onnx")]) == 2
    assert "directory" in capsys.readouterr().err
    assert elsewhere.read_bytes() == b"keep" and sorted(os.listdir(out_dir)) == ["x.onnx.data"]


def test_model_with_external_data_into_a_stream_or_through_a_link_to_another_folder_is_refused(src, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["infer", str(src), "-o", str(fifo)]) == 2  # refused before opening: no reader needed
    assert "not a regular file" in capsys.readouterr().err
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    os.symlink(tmp_path / "b" / "real.onnx", tmp_path / "a" / "link.onnx")
    assert main(["optimize", str(src), "-o", str(tmp_path / "a" / "link.onnx")]) == 2
    assert "another folder" in capsys.readouterr().err
    assert os.listdir(tmp_path / "b") == [] and os.path.islink(tmp_path / "a" / "link.onnx")


# ----------------------------------------------------------------------------- atomic writes


def test_a_failure_while_committing_leaves_the_previous_files_and_no_temporaries(src, tmp_path, monkeypatch):
    import shapeinfer.modelio.writer as writer

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "x.onnx"
    (out_dir / "x.onnx").write_bytes(b"old model")
    (out_dir / "x.onnx.data").write_bytes(b"old data")
    model = shapeinfer.load_model(str(src))
    real_replace = os.replace

    def failing_replace(a, b):
        if os.fspath(b) == str(out):
            raise OSError(28, "No space left on device")
        return real_replace(a, b)

    monkeypatch.setattr(writer.os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_model(model, out, source_dir=str(src.parent))
    monkeypatch.setattr(writer.os, "replace", real_replace)
    assert sorted(os.listdir(out_dir)) == ["x.onnx", "x.onnx.data"]
    assert out.read_bytes() == b"old model" and (out_dir / "x.onnx.data").read_bytes() == b"old data"

    def failing_copy(*a):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(writer, "_copy_range", failing_copy)
    assert main(["optimize", str(src), "-o", str(out)]) == 2
    assert sorted(os.listdir(out_dir)) == ["x.onnx", "x.onnx.data"] and out.read_bytes() == b"old model"


@pytest.mark.parametrize("in_kernel", [True, False], ids=["copy_file_range", "pread_pwrite"])
def test_copy_is_chunked_and_skips_holes(tmp_path, monkeypatch, in_kernel):
    """A 64 MiB tensor that is mostly a hole: copied in CHUNK_BYTES pieces at most, the hole
    stays a hole, the bytes around it arrive -- in the kernel, or through a buffer where the
    file system cannot copy_file_range."""
    import shapeinfer.modelio.writer as writer

    if in_kernel and not hasattr(os, "copy_file_range"):
        pytest.skip("no os.copy_file_range here")
    monkeypatch.setattr(writer, "_COPY_FILE_RANGE", in_kernel)

    folder = tmp_path / "src"
    folder.mkdir()
    n = 16 * 2**20  # float32 elements
    with open(folder / "big.bin", "wb") as fh:
        fh.write(np.arange(1024, dtype=np.float32).tobytes())
        fh.seek(n * 4 - 4)
        fh.write(np.float32(5.0).tobytes())
    w = _external("w", np.zeros(1, np.float32), "big.bin", 0)
    w.dims[:] = [n]
    for e in w.external_data:
        if e.key == "length":
            e.value = str(n * 4)
    graph = helper.make_graph([helper.make_node("Shape", ["w"], ["s"])], "g", [],
                              [helper.make_tensor_value_info("s", TensorProto.INT64, [1])], [w])
    (folder / "m.onnx").write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                                      ir_version=10).SerializeToString())
    sizes = []
    real = writer._copy_chunk

    def spy(src_fd, dst_fd, pos, k, at):
        sizes.append(k)
        return real(src_fd, dst_fd, pos, k, at)

    monkeypatch.setattr(writer, "_copy_chunk", spy)
    out = tmp_path / "out.onnx"
    write_model(shapeinfer.load_model(str(folder / "m.onnx")), out, source_dir=str(folder))
    assert sizes and max(sizes) <= writer.CHUNK_BYTES
    data = tmp_path / "out.onnx.data"
    assert os.path.getsize(data) == n * 4 and os.stat(data).st_blocks * 512 < 4 * 2**20
    with open(data, "rb") as fh:
        assert np.array_equal(np.frombuffer(fh.read(4096), np.float32), np.arange(1024, dtype=np.float32))
        fh.seek(n * 4 - 4)
        assert np.frombuffer(fh.read(4), np.float32)[0] == 5.0


# --------------------------------------------------------------------------- destinations


def _tiny_copy(folder):
    folder.mkdir(exist_ok=True)
    p = folder / "m.onnx"
    p.write_bytes(open(TINY, "rb").read())
    return p


def _args(command, model, out):
    if command == "check":
        return ["check", str(model), "--format", "json", "-o", str(out)]
    return [command, str(model), "-o", str(out)]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("how", ["symlinked_folder", "symlinked_file", "hard_link", "same_path", "dotted_path"])
def test_output_that_is_the_input_by_any_path_is_refused(command, how, tmp_path, capsys):
    model = _tiny_copy(tmp_path / "models")
    data = model.read_bytes()
    if how == "symlinked_folder":
        os.symlink(tmp_path / "models", tmp_path / "link")
        out = tmp_path / "link" / "m.onnx"
    elif how == "symlinked_file":
        os.symlink(model, tmp_path / "alias.onnx")
        out = tmp_path / "alias.onnx"
    elif how == "hard_link":
        os.link(model, tmp_path / "hard.onnx")
        out = tmp_path / "hard.onnx"
    elif how == "same_path":
        out = model
    else:
        out = tmp_path / "models" / ".." / "models" / "m.onnx"
    assert main(_args(command, model, out)) == 2
    err = capsys.readouterr().err
    assert "refusing to overwrite" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert model.read_bytes() == data and os.stat(model).st_ino == os.stat(out).st_ino
    assert not [f for f in os.listdir(tmp_path / "models") if f.startswith(".shapeinfer-")]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("how", ["symlink", "hard_link"])
def test_output_that_is_an_external_data_file_the_input_reads_is_refused(command, how, src, tmp_path, capsys):
    before = _digests(src.parent)
    out = tmp_path / "report.onnx"
    (os.symlink if how == "symlink" else os.link)(src.parent / "weights" / "w2.bin", out)
    assert main(_args(command, src, out)) == 2
    assert "external data" in capsys.readouterr().err
    os.unlink(out)
    assert _digests(src.parent) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_a_directory_is_refused(command, tmp_path, capsys):
    model = _tiny_copy(tmp_path / "models")
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "d", tmp_path / "dlink")
    for out in (tmp_path / "d", tmp_path / "dlink", str(tmp_path / "new") + "/"):
        assert main(_args(command, model, out)) == 2
        err = capsys.readouterr().err
        assert "directory" in err and "Traceback" not in err
    assert os.listdir(tmp_path / "d") == [] and not (tmp_path / "new").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_symlink_destination_is_written_through_to_its_target(command, tmp_path, capsys):
    model = _tiny_copy(tmp_path / "models")
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "result"
    target.write_bytes(b"previous")
    os.chmod(target, 0o640)
    link = tmp_path / "link.out"
    os.symlink(target, link)
    dangling = tmp_path / "dangling.out"
    os.symlink(tmp_path / "real" / "new", dangling)
    for out, real in ((link, target), (dangling, tmp_path / "real" / "new")):
        assert main(_args(command, model, out)) in (0, 1)
        assert os.path.islink(out) and os.path.realpath(out) == str(real)
        written = real.read_bytes()
        if command == "check":
            assert b'"models"' in written
        else:
            onnx.checker.check_model(onnx.load_from_string(written))
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640  # the replaced file keeps its mode
    assert sorted(os.listdir(tmp_path / "real")) == ["new", "result"]
    capsys.readouterr()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_is_written_through(command, tmp_path, capsys):
    model = _tiny_copy(tmp_path / "models")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    assert main(_args(command, model, fifo)) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not replaced by a file
    if command == "check":
        assert b'"models"' in got[0]
    else:
        onnx.checker.check_model(onnx.load_from_string(got[0]))
    capsys.readouterr()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", ["/dev/stdout", "/proc/self/fd/1"])
def test_standard_output_is_written_through(command, name, tmp_path):
    model = _tiny_copy(tmp_path / "models")
    out_file = tmp_path / "captured"
    with open(out_file, "wb") as fh:
        fh.write(b"")
        r = subprocess.run([sys.executable, "-m", "shapeinfer_cli.main", *_args(command, model, name)],
                           stdout=fh, stderr=subprocess.PIPE, text=False, timeout=120)
    assert r.returncode == 0, r.stderr
    data = out_file.read_bytes()
    if command == "check":
        assert data.startswith(b"{") and b'"models"' in data
    else:  # the model alone on stdout; the report went to stderr
        onnx.checker.check_model(onnx.load_from_string(data))
        assert b"nodes" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["captured", "models"]


def test_resolve_destination_kinds(tmp_path):
    assert not resolve_destination(tmp_path / "new.onnx").stream
    assert resolve_destination("/dev/null").stream
    with pytest.raises(OutputError, match="does not exist"):
        resolve_destination(tmp_path / "no" / "such.onnx")
    with pytest.raises(OutputError, match="directory"):
        resolve_destination(tmp_path)


def test_the_readme_ci_recipe_on_a_folder_of_models_with_external_weights(tmp_path, monkeypatch, capsys):
    """`shapeinfer check exported/*.onnx --format junit -o shapeinfer-report.xml`, run from the
    repository root (not the models' folder), on exported models with external weights -- and
    on models shapeinfer wrote into another folder."""
    import glob
    import xml.etree.ElementTree as ET

    exported = tmp_path / "repo" / "exported"
    exported.parent.mkdir()
    _external_model(exported)
    assert main(["optimize", str(exported / "m.onnx"), "-o", str(exported / "opt" / "o.onnx")]) == 2  # no folder yet
    (exported / "opt").mkdir()
    assert main(["optimize", str(exported / "m.onnx"), "-o", str(exported / "opt" / "o.onnx")]) == 0
    assert main(["infer", str(exported / "m.onnx"), "-o", str(exported / "annotated.onnx")]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path / "repo")
    models = sorted(glob.glob("exported/*.onnx")) + sorted(glob.glob("exported/opt/*.onnx"))
    assert len(models) == 3
    code = main(["check", *models, "--format", "junit", "-o", "shapeinfer-report.xml"])
    assert code == 0, capsys.readouterr()
    root = ET.parse("shapeinfer-report.xml").getroot()
    assert len(root.findall(".//testcase")) == 3 and not root.findall(".//failure")
