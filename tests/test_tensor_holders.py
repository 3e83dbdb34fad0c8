"""Every place a model can hold a tensor, stored as external data: a sparse initializer (its values
and its indices), a Constant's ``sparse_value``, a main-graph Constant, a Constant in a model-local
function, a Constant two bodies deep (If -> Loop, in the main graph and in a function), a TENSORS
attribute, training_info's initializers.

For each, and each command that writes (``infer -o``, ``optimize -o``, ``check --format json -o``)
and each destination -- the input's folder, a folder inside it, another folder, the input's data
file, the input model -- the input's files stay as they were (byte for byte), a destination that is
one of them is refused (exit 2), and a written model reads the same weights: onnxruntime computes
the original's outputs bit for bit (optimisations off and at the default level), and every stored
tensor of 65 elements or more holds the original's bytes, read by a walk of this file's own (the
oracle) from the written model's folder. Every location is vetted, whatever holds it; folding never
reads external data (from the working directory least of all); cost counts every holder.

onnxruntime deviations, taken into account below: it ignores training_info (the weights there are
compared by the oracle only); no ONNX op takes a TENSORS attribute (that model runs a custom op in
onnx.reference instead); it refuses a sparse initializer stored as external data inside a body
("Cannot parse data from external tensors", which the ONNX spec allows), so the bodies hold dense
Constants and initializers.
"""

import hashlib
import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer_cli.main import main

ort = pytest.importorskip("onnxruntime")

SHAPE = (4, 20)  # 80 elements: above the 64 that are always written inline
RNG = np.random.default_rng(11)
W = RNG.standard_normal(SHAPE).astype(np.float32)
W2 = RNG.standard_normal(SHAPE).astype(np.float32)
IDX = np.sort(RNG.choice(80, 70, replace=False)).astype(np.int64)
VALS = RNG.standard_normal(70).astype(np.float32)
X = np.arange(80, dtype=np.float32).reshape(SHAPE) / 7
OPSET = [helper.make_opsetid("", 18)]
DATA = "w.bin"


class _Data:
    """The model's external data: every tensor made here goes into one file, at its own offset,
    with bytes no tensor reads between them."""

    def __init__(self, location=DATA):
        self.location, self.buf = location, bytearray(b"\x5a" * 16)

    def tensor(self, name, arr):
        t = numpy_helper.from_array(arr, name)
        raw = t.raw_data
        t.ClearField("raw_data")
        offset = len(self.buf)
        self.buf += raw + b"\xa5" * 8
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.location), ("offset", str(offset)), ("length", str(len(raw)))):
            e = t.external_data.add()
            e.key, e.value = k, v
        return t

    def sparse(self, name):
        return helper.make_sparse_tensor(self.tensor(name, VALS), self.tensor(name + "_idx", IDX), list(SHAPE))


def _vi(name, dtype=TensorProto.FLOAT, shape=SHAPE):
    return helper.make_tensor_value_info(name, dtype, list(shape))


def _if_loop(d, x, cond, prefix):
    """If(cond) whose then-branch runs a Loop (2 trips) adding a Constant and a body initializer,
    both external, to ``x``; the else-branch returns ``x``: the Constant is two bodies deep."""
    body = helper.make_graph(
        [helper.make_node("Constant", [], [f"{prefix}lw"], value=d.tensor(f"{prefix}lw", W), name=f"{prefix}deep"),
         helper.make_node("Add", ["s_in", f"{prefix}lw"], ["s_add"]),
         helper.make_node("Add", ["s_add", f"{prefix}li"], ["s_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "loop_body", [_vi("i", TensorProto.INT64, ()), _vi("cond_in", TensorProto.BOOL, ()), _vi("s_in")],
        [_vi("cond_out", TensorProto.BOOL, ()), _vi("s_out")], [d.tensor(f"{prefix}li", W2)])
    then = helper.make_graph(
        [helper.make_node("Constant", [], [f"{prefix}M"], value=numpy_helper.from_array(np.array(2, np.int64))),
         helper.make_node("Loop", [f"{prefix}M", "", x], [f"{prefix}t"], body=body, name=f"{prefix}loop")],
        "then", [], [_vi(f"{prefix}t")])
    other = helper.make_graph([helper.make_node("Identity", [x], [f"{prefix}e"])], "else", [], [_vi(f"{prefix}e")])
    return helper.make_node("If", [cond], [f"{prefix}y"], then_branch=then, else_branch=other, name=f"{prefix}if")


def _model(kind, d):
    """(the model, its inputs besides x) for a holder kind, its tensors in ``d``."""
    inputs, functions, inits, sparse, training = [_vi("x")], [], [], [], []
    opsets = list(OPSET)
    if kind == "sparse_initializer":
        sparse = [d.sparse("S")]
        nodes = [helper.make_node("Add", ["x", "S"], ["y"], name="add")]
    elif kind == "sparse_attribute":
        nodes = [helper.make_node("Constant", [], ["S"], sparse_value=d.sparse("S"), name="sparse_const"),
                 helper.make_node("Add", ["x", "S"], ["y"], name="add")]
    elif kind == "constant":
        nodes = [helper.make_node("Constant", [], ["W"], value=d.tensor("W", W), name="const"),
                 helper.make_node("Add", ["x", "W"], ["y"], name="add")]
    elif kind == "function":
        functions = [helper.make_function("local", "AddW", ["a"], ["b"], [
            helper.make_node("Constant", [], ["w"], value=d.tensor("fw", W), name="fconst"),
            helper.make_node("Add", ["a", "w"], ["b"])], OPSET)]
        opsets.append(helper.make_opsetid("local", 1))
        nodes = [helper.make_node("AddW", ["x"], ["y"], domain="local", name="call")]
    elif kind == "body":
        inputs.append(_vi("c", TensorProto.BOOL, ()))
        nodes = [_if_loop(d, "x", "c", "")]  # (its output: y)
    elif kind == "function_body":
        inner = _if_loop(d, "a", "k", "f_")
        inner.output[0] = "b"
        functions = [helper.make_function("local", "Deep", ["a", "k"], ["b"], [inner], OPSET)]
        opsets.append(helper.make_opsetid("local", 1))
        inputs.append(_vi("c", TensorProto.BOOL, ()))
        nodes = [helper.make_node("Deep", ["x", "c"], ["y"], domain="local", name="call")]
    elif kind == "tensors_attribute":
        opsets.append(helper.make_opsetid("test", 1))
        nodes = [helper.make_node("AddAll", ["x"], ["y"], domain="test", name="addall",
                                  tensors=[d.tensor("T0", W), d.tensor("T1", W2)])]
    elif kind == "training_info":
        inits = [numpy_helper.from_array(W, "W")]
        nodes = [helper.make_node("Add", ["x", "W"], ["y"], name="add")]
        info = onnx.TrainingInfoProto()
        info.initialization.CopyFrom(helper.make_graph(
            [helper.make_node("Identity", ["W0"], ["W_new"])], "init", [], [_vi("W_new")], [d.tensor("W0", W2)]))
        info.algorithm.CopyFrom(helper.make_graph(  # (with a Constant two bodies deep)
            [helper.make_node("Add", ["W", "lr"], ["W_sum"]), _if_loop(d, "W_sum", "flag", "t_"),
             helper.make_node("Identity", ["t_y"], ["W_upd"])],
            "alg", [_vi("flag", TensorProto.BOOL, ())], [_vi("W_upd")], [d.tensor("lr", W2)]))
        for binding, value in ((info.initialization_binding, "W_new"), (info.update_binding, "W_upd")):
            b = binding.add()
            b.key, b.value = "W", value
        training = [info]
    else:
        raise AssertionError(kind)
    graph = helper.make_graph(nodes, "g", inputs, [_vi("y")], inits, sparse_initializer=sparse)
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10, functions=functions)
    for info in training:
        model.training_info.add().CopyFrom(info)
    return model


KINDS = ("sparse_initializer", "sparse_attribute", "constant", "function", "body", "function_body",
         "tensors_attribute", "training_info")
# where the messages name each holder
PLACES = {"sparse_initializer": "sparse initializer 'S'",
          "sparse_attribute": "'sparse_const' (Constant), attribute 'sparse_value'",
          "constant": "'const' (Constant), attribute 'value'", "function": "in function local.AddW",
          "body": "in the body 'body' of node 'loop' (Loop), in the body 'then_branch' of node 'if' (If)",
          "function_body": "of node 'f_loop' (Loop), in the body 'then_branch' of node 'f_if' (If), "
                           "in function local.Deep",
          "tensors_attribute": "'addall' (AddAll), attribute 'tensors[0]'", "training_info": "in training_info[0]"}


def _build(folder, kind, location=DATA, data_path=None):
    """folder/m.onnx holding a tensor of ``kind`` as external data at ``location`` (written to
    ``data_path``, by default folder/location)."""
    folder.mkdir(parents=True, exist_ok=True)
    d = _Data(location)
    model = _model(kind, d)
    (data_path or folder / location).write_bytes(bytes(d.buf))
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _reference_op():
    """AddAll of domain ``test``: x plus every tensor of its TENSORS attribute, for onnx.reference."""
    from onnx.reference.op_run import OpRun

    class AddAllOp(OpRun):
        op_domain = "test"

        def _run(self, x, tensors=None):
            out = x
            for t in tensors:
                out = out + t
            return (out,)

    AddAllOp.__name__ = "AddAll"
    return AddAllOp


def _feeds(kind, cond):
    feeds = {"x": X}
    if kind in ("body", "function_body"):
        feeds["c"] = np.array(cond)
    return feeds


def _outputs(path, kind) -> list:
    """The output bytes of the model at ``path``: onnxruntime with optimisations off and at its
    default level, each branch taken where there is one; onnx.reference for the custom op."""
    if kind == "tensors_attribute":
        from onnx.reference import ReferenceEvaluator

        return [ReferenceEvaluator(str(path), new_ops=[_reference_op()]).run(None, _feeds(kind, True))[0].tobytes()]
    out = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):  # (its default)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = level
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        for cond in ((True, False) if kind in ("body", "function_body") else (True,)):
            out.append(sess.run(None, _feeds(kind, cond))[0].tobytes())
    return out


def _stored(model):
    """Every TensorProto of a model (the oracle's walk: written here, not shapeinfer's)."""
    def graph(g):
        yield from g.initializer
        for sp in g.sparse_initializer:
            yield from (sp.values, sp.indices)
        yield from nodes(g.node)

    def attribute(a):
        if a.HasField("t"):
            yield a.t
        yield from a.tensors
        if a.HasField("sparse_tensor"):
            yield from (a.sparse_tensor.values, a.sparse_tensor.indices)
        for sp in a.sparse_tensors:
            yield from (sp.values, sp.indices)
        if a.HasField("g"):
            yield from graph(a.g)
        for g in a.graphs:
            yield from graph(g)

    def nodes(ns):
        for n in ns:
            for a in n.attribute:
                yield from attribute(a)

    yield from graph(model.graph)
    for f in model.functions:
        yield from nodes(f.node)
        for a in f.attribute_proto:  # (the default values of its attributes)
            yield from attribute(a)
    for info in model.training_info:
        yield from graph(info.initialization)
        yield from graph(info.algorithm)


def _weights(path) -> list:
    """(type, dims, bytes) of every stored tensor of 65 elements or more, external bytes read from
    the model's own folder (a location that leaves it, or a file missing there, fails)."""
    model = onnx.load(str(path), load_external_data=False)
    folder = os.path.realpath(os.path.dirname(path))
    out = []
    for t in _stored(model):
        if int(np.prod(t.dims)) <= 64:
            continue
        if t.data_location == TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            file = os.path.realpath(os.path.join(folder, info["location"]))
            assert os.path.dirname(file) == folder, f"{t.name}: {info['location']} is not beside the model"
            with open(file, "rb") as fh:
                fh.seek(int(info.get("offset", 0)))
                raw = fh.read(int(info["length"]))
        else:
            raw = t.raw_data
        out.append((t.data_type, tuple(t.dims), raw))
    return sorted(out)


def _digests(folder) -> dict:
    out = {}
    for root, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


_ORIGINAL: dict = {}  # kind -> (outputs, weights) of the original, computed once


def _original(kind, src):
    if kind not in _ORIGINAL:
        _ORIGINAL[kind] = (_outputs(src, kind), _weights(src))
    return _ORIGINAL[kind]


PATHS = ("same-folder", "subfolder", "other-folder", "onto-data", "onto-model")
COMMANDS = ("infer", "optimize", "check")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", PATHS)
@pytest.mark.parametrize("kind", KINDS)
def test_writing_keeps_the_inputs_data_and_reads_the_same_weights(kind, where, command, tmp_path, monkeypatch,
                                                                   capsys):
    """Every holder x every destination x every command that writes: the input's files stay as
    they were; its data file and the model itself are refused (exit 2, one line, nothing
    written); a written model reads the input's data where it is (same folder) or its own copy
    beside it (anywhere else), and computes the original's outputs bit for bit."""
    src = _build(tmp_path / "src", kind)
    want_outputs, want_weights = _original(kind, src)
    # a decoy where the command runs: nothing may read a location relative to the working directory
    (tmp_path / "cwd").mkdir()
    if command != "check":  # (onnx.checker, which check runs, would take it for the data)
        (tmp_path / "cwd" / DATA).write_bytes(bytes(range(256)) * 8)
    monkeypatch.chdir(tmp_path / "cwd")
    before = _digests(src.parent)
    name = "o.json" if command == "check" else "o.onnx"
    out = {"same-folder": src.parent / name, "subfolder": src.parent / "sub" / name,
           "other-folder": tmp_path / "out" / name, "onto-data": src.parent / DATA, "onto-model": src}[where]
    out.parent.mkdir(exist_ok=True)
    args = [command, str(src), "-o", str(out)] + (["--format", "json"] if command == "check" else ["--json"])
    code = main(args)
    text, err = capsys.readouterr()
    after = _digests(src.parent)
    assert {p: h for p, h in after.items() if p in before} == before  # the input's files, byte for byte
    if where in ("onto-data", "onto-model"):
        assert code == 2, err
        assert "refusing to overwrite it; nothing written" in err and err.count("\n") == 1, err
        assert set(after) == set(before)  # nothing written (no temporary file left either)
        assert _outputs(src, kind) == want_outputs
        return
    if command == "check":
        findings = {f["code"] for m in json.loads(out.read_text())["models"] for f in m["findings"]}
        assert not findings & {"external-data", "checker", "internal-error", "unreadable"}, (findings, err)
        return
    assert code == 0, err
    written = json.loads(text)["written"]
    if where == "same-folder":  # the input's data file, read where it is: the report says so
        assert written["referenced"] == [DATA] and written["external_data"] is None, written
    else:  # a data file of its own beside the output
        assert written["external_data"] == str(out) + ".data" and written["referenced"] == [], written
    assert _weights(out) == want_weights
    if kind == "training_info":  # onnxruntime ignores training_info: the weights above say it all
        out_model = onnx.load(str(out), load_external_data=False)
        assert len(out_model.training_info) == 1
    assert _outputs(out, kind) == want_outputs


@pytest.mark.parametrize("how", ("parent", "absolute", "symlink", "not-utf8", "nul"))
@pytest.mark.parametrize("kind", KINDS)
def test_every_holder_is_vetted_before_anything_is_read(kind, how, tmp_path, monkeypatch, capsys):
    """A location out of the model's folder (``../``, absolute, a symbolic link leading out) or
    one that is no file name (not UTF-8, a NUL in it) is refused, exit 1, naming where the tensor
    lives -- whatever holds it; nothing is read or written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "src"
    folder.mkdir()
    if how == "symlink":
        os.symlink(outside / DATA, folder / DATA)
        src = _build(folder, kind, DATA, data_path=outside / DATA)
    elif how in ("not-utf8", "nul"):  # (protobuf writes no such string: the bytes are set in the file)
        src = _build(folder, kind, "LOCATION", data_path=outside / DATA)
        bad = b"\xff\xfe\xfd\xfcw.bn" if how == "not-utf8" else b"w.bin\0ab"  # (as long as LOCATION)
        src.write_bytes(src.read_bytes().replace(b"LOCATION", bad))
    else:
        location = "../outside/w.bin" if how == "parent" else str(outside / DATA)
        src = _build(folder, kind, location, data_path=outside / DATA)
    monkeypatch.chdir(tmp_path)
    why = "not valid UTF-8" if how == "not-utf8" else "refused"
    for args in (["infer", str(src)], ["optimize", str(src), "-o", str(tmp_path / "o.onnx")], ["cost", str(src)]):
        assert main(args) == 1, args
        err = capsys.readouterr().err
        assert err.startswith("error: invalid model: ") and err.count("\n") == 1, err
        assert PLACES[kind] in err and why in err, err
    assert not (tmp_path / "o.onnx").exists()
    report = shapeinfer.check(str(src))
    assert [f.code for f in report.findings] == ["external-data"] and PLACES[kind] in report.findings[0].message
    with pytest.raises(shapeinfer.ExternalDataError, match=why):
        shapeinfer.load_model(str(src), load_external_data=True)


@pytest.mark.parametrize("kind", KINDS)
def test_load_external_data_reads_every_holder_from_the_models_folder(kind, tmp_path, monkeypatch):
    src = _build(tmp_path / "src", kind)
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / DATA).write_bytes(bytes(4096))  # a decoy: never read
    monkeypatch.chdir(tmp_path / "cwd")
    model = shapeinfer.load_model(str(src), load_external_data=True)
    assert all(t.data_location != TensorProto.EXTERNAL for t in _stored(model))
    path = tmp_path / "loaded" / "m.onnx"
    path.parent.mkdir()
    path.write_bytes(model.SerializeToString())
    assert _weights(path) == _weights(src)


def _folding_models(folder):
    """Models whose weights optimize could fold, were they read: Neg of an external initializer,
    a Constant node whose value is external data."""
    folder.mkdir(parents=True)
    d = _Data()
    neg = helper.make_graph([helper.make_node("Neg", ["W"], ["nw"], name="neg"),
                             helper.make_node("Add", ["x", "nw"], ["y"], name="add")],
                            "g", [_vi("x")], [_vi("y")], [d.tensor("W", W)])
    const = helper.make_graph([helper.make_node("Constant", [], ["c"], value=d.tensor("C", W2), name="const"),
                               helper.make_node("Neg", ["c"], ["nc"], name="neg"),
                               helper.make_node("Add", ["x", "nc"], ["y"], name="add")],
                              "g", [_vi("x")], [_vi("y")])
    (folder / DATA).write_bytes(bytes(d.buf))
    paths = []
    for name, g in (("neg", neg), ("const", const)):
        p = folder / f"{name}.onnx"
        p.write_bytes(helper.make_model(g, opset_imports=OPSET, ir_version=10).SerializeToString())
        paths.append(p)
    return paths


@pytest.mark.parametrize("decoy", (False, True))
def test_folding_never_reads_external_data(decoy, tmp_path, monkeypatch, capsys):
    """Nothing is folded from weights kept as external data: onnx would read the location
    relative to the working directory -- there a decoy file of that name gave other values, and
    without one a Constant node's value crashed optimize."""
    (tmp_path / "cwd").mkdir()
    if decoy:
        (tmp_path / "cwd" / DATA).write_bytes(bytes(range(256)) * 8)
    monkeypatch.chdir(tmp_path / "cwd")
    for src in _folding_models(tmp_path / "src"):
        want = _outputs(src, "")
        out = tmp_path / "out" / src.name
        out.parent.mkdir(exist_ok=True)
        assert main(["optimize", str(src), "-o", str(out), "--explain"]) == 0, capsys.readouterr().err
        text = capsys.readouterr().out
        assert "(external data" in text or "stored as external data (not loaded)" in text, text
        assert _outputs(out, "") == want
        assert _weights(out) == _weights(src)


def test_cost_counts_every_holder_but_training_info(tmp_path):
    expected = {"sparse_initializer": 80, "sparse_attribute": 80, "constant": 80, "function": 80,
                "body": 80 + 80 + 1, "function_body": 80 + 80 + 1, "tensors_attribute": 0, "training_info": 80}
    for kind in KINDS:
        src = _build(tmp_path / kind, kind)
        assert shapeinfer.cost(str(src)).params == expected[kind], kind
    # a sparse Constant's bytes: its values and its indices (70 floats, 70 int64)
    assert shapeinfer.cost(str(tmp_path / "sparse_attribute" / "m.onnx")).param_bytes == 70 * 4 + 70 * 8


@pytest.mark.parametrize("kind", ("sparse_attribute", "constant", "body_initializer"))
def test_a_short_tensor_is_refused_wherever_it_lives(kind, tmp_path, capsys):
    """A stored tensor with fewer bytes than its dims need (onnxruntime refuses the model) is an
    ``initializer`` error naming where it lives, whatever holds it."""
    short = numpy_helper.from_array(W, "W")
    short.raw_data = short.raw_data[:-4]
    if kind == "sparse_attribute":
        values = numpy_helper.from_array(VALS, "S")
        values.raw_data = values.raw_data[:-4]
        nodes = [helper.make_node("Constant", [], ["S"], sparse_value=helper.make_sparse_tensor(
            values, numpy_helper.from_array(IDX, "i"), list(SHAPE)), name="sparse_const"),
            helper.make_node("Add", ["x", "S"], ["y"])]
        place = "attribute 'sparse_value' (its values)"
    elif kind == "constant":
        nodes = [helper.make_node("Constant", [], ["W"], value=short, name="const"),
                 helper.make_node("Add", ["x", "W"], ["y"])]
        place = "attribute 'value'"
    else:
        then = helper.make_graph([helper.make_node("Add", ["x", "W"], ["t"])], "then", [], [_vi("t")], [short])
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [_vi("e")])
        nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="if")]
        place = "initializer 'W' in the body 'then_branch' of node 'if' (If)"
    inputs = [_vi("x")] + ([_vi("c", TensorProto.BOOL, ())] if kind == "body_initializer" else [])
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(helper.make_graph(nodes, "g", inputs, [_vi("y")]), opset_imports=OPSET,
                                       ir_version=10).SerializeToString())
    refusals = (ort.capi.onnxruntime_pybind11_state.Fail, ort.capi.onnxruntime_pybind11_state.InvalidGraph,
                ort.capi.onnxruntime_pybind11_state.RuntimeException)
    with pytest.raises(refusals):  # onnxruntime refuses it
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for args in (["infer", str(path)], ["optimize", str(path), "-o", str(tmp_path / "o.onnx")]):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "[initializer]" in err and place in err and "need" in err and err.count("\n") == 1, err
    assert not (tmp_path / "o.onnx").exists()
    report = shapeinfer.check(str(path))
    assert any(f.code == "initializer" and place in f.message for f in report.findings), report.findings


def test_the_walk_finds_a_tensor_in_every_place_a_model_can_hold_one():
    """shapeinfer.modelio.tensors.stored_tensors, the one walk behind loading, vetting, protecting,
    copying and counting: every place the ONNX format has for a tensor, at any depth, each once,
    named where it lives."""
    from shapeinfer.modelio.tensors import stored_tensors

    def t(name):
        return numpy_helper.from_array(np.array([1.0], np.float32), name)

    def sp(name):
        return helper.make_sparse_tensor(t(name), numpy_helper.from_array(np.array([0], np.int64), name + "_i"), [2])

    def graph(prefix, nodes=()):
        return helper.make_graph(list(nodes), prefix, [], [], [t(prefix + "_init")],
                                 sparse_initializer=[sp(prefix + "_sp")])

    deep = graph("deep")
    body = graph("body", [helper.make_node("Op", [], [], domain="x", name="inner", g=deep)])
    stray = helper.make_attribute("axis", 1)
    stray.t.CopyFrom(t("stray"))  # an INT attribute with a tensor beside: onnx's loader reads it
    node = helper.make_node("Op", [], [], domain="x", name="n", value=t("value"), values=[t("v0"), t("v1")],
                            sparse=sp("sparse"), sparses=[sp("s0")], body=body, bodies=[graph("g0"), graph("g1")])
    node.attribute.append(stray)
    fn = helper.make_function("x", "F", [], [], [helper.make_node("Constant", [], ["c"], value=t("fconst"), name="fc")],
                              OPSET)
    fn.attribute_proto.append(helper.make_attribute("default", t("fdefault")))
    model = helper.make_model(graph("main", [node]), functions=[fn],
                              opset_imports=OPSET + [helper.make_opsetid("x", 1)])
    info = model.training_info.add()
    info.initialization.CopyFrom(graph("init"))
    info.algorithm.CopyFrom(graph("alg", [helper.make_node("Op", [], [], domain="x", name="a", g=graph("algbody"))]))

    found = {p.tensor.name: p.describe() for p in stored_tensors(model)}
    assert len(found) == sum(1 for _ in stored_tensors(model)) == len(list(_stored(model)))
    assert found["main_init"] == "initializer 'main_init'"
    assert found["main_sp"] == "sparse initializer 'main_sp' (its values)"
    assert found["main_sp_i"] == "sparse initializer 'main_sp' (its indices)"
    assert found["value"] == "node 'n' (Op), attribute 'value'"
    assert found["v1"] == "node 'n' (Op), attribute 'values[1]'"
    assert found["sparse_i"] == "node 'n' (Op), attribute 'sparse' (its indices)"
    assert found["s0"] == "node 'n' (Op), attribute 'sparses[0]' (its values)"
    assert found["stray"] == "node 'n' (Op), attribute 'axis'"
    assert found["body_init"] == "initializer 'body_init' in the body 'body' of node 'n' (Op)"
    assert found["deep_sp"] == "sparse initializer 'deep_sp' (its values) in the body 'g' of node 'inner' (Op), " \
                               "in the body 'body' of node 'n' (Op)"
    assert found["g1_init"] == "initializer 'g1_init' in the body 'bodies' of node 'n' (Op) [1]"
    assert found["fconst"] == "node 'fc' (Constant), attribute 'value' in function x.F"
    assert found["fdefault"] == "the default of attribute 'default' in function x.F"
    assert found["init_sp_i"] == "sparse initializer 'init_sp' (its indices) in training_info[0] (initialization)"
    assert found["algbody_init"] == \
        "initializer 'algbody_init' in the body 'g' of node 'a' (Op), in training_info[0] (algorithm)"
    inference = {p.tensor.name for p in stored_tensors(model, training_info=False)}
    assert inference == {n for n, where in found.items() if "training_info" not in where}


@pytest.mark.parametrize("decoy", (False, True))
def test_a_tensor_attribute_inference_reads_comes_from_the_models_folder(decoy, tmp_path, monkeypatch):
    """ConstantOfShape's ``value`` stored as external data: inference reads its one element from
    the model's folder (within the rules for external data), never from the working directory --
    where a file of that name gave another shape, and none crashed."""
    d = _Data()
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["s"], ["k"], value=d.tensor("v", np.array([3], np.int64)), name="cos"),
         helper.make_node("Reshape", ["x", "k"], ["y"], name="r")],
        "g", [_vi("x", shape=(3, 3, 3))], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([3], np.int64), "s")])
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / DATA).write_bytes(bytes(d.buf))
    path = tmp_path / "src" / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=OPSET, ir_version=10).SerializeToString())
    (tmp_path / "cwd").mkdir()
    if decoy:
        (tmp_path / "cwd" / DATA).write_bytes(np.full(64, 9, np.int64).tobytes())
    monkeypatch.chdir(tmp_path / "cwd")
    assert shapeinfer.infer(str(path)).shape("y") == (3, 3, 3)
    assert main(["optimize", str(path), "-o", str(tmp_path / "o.onnx")]) == 0
    assert shapeinfer.infer(str(tmp_path / "o.onnx")).shape("y") == (3, 3, 3)
