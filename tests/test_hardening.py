"""Whatever file anyone hands shapeinfer: a clear message naming the problem, the right exit
code, no traceback, no output file for a refused input, the input untouched.

Every case runs through the three commands (infer -o, optimize -o, check)."""

import builtins
import hashlib
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, parser

import shapeinfer
from shapeinfer_cli.main import main

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "fixtures", "tiny_bert.onnx")
H = '<ir_version: 9, opset_import: ["" : 18]>\n'
COMMANDS = ("infer", "optimize", "check")


def _digest(path):
    st = os.stat(path)
    if st.st_size > 64 * 2**20:  # the sparse 2 GiB file: size and time say it is untouched
        return (st.st_size, st.st_mtime_ns)
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _run(capsys, command, path, tmp_path):
    """Run one command on path; returns (exit code, stderr+stdout, files written in out/)."""
    out_dir = tmp_path / "out"
    out_dir.mkdir(exist_ok=True)
    args = [command, str(path)]
    if command != "check":
        args += ["-o", str(out_dir / "result.onnx")]
    before = _digest(path) if os.path.isfile(path) else None
    code = main(args)
    captured = capsys.readouterr()
    text = captured.err + captured.out
    assert "Traceback" not in text
    if before is not None:
        assert _digest(path) == before, "the input file changed"
    return code, text, sorted(os.listdir(out_dir))


def _save(tmp_path, name, model):
    p = tmp_path / name
    p.write_bytes(model.SerializeToString())
    return p


# ------------------------------------------------------------------------- unreadable files


def _unreadable(tmp_path, kind):
    p = tmp_path / f"{kind}.onnx"
    data = open(TINY, "rb").read()
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "truncated":
        p.write_bytes(data[: len(data) // 3])
    elif kind == "random":
        p.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    elif kind == "text":
        p.write_text("this is not a model\n")
    elif kind == "directory":
        p.mkdir()
    elif kind == "missing":
        pass
    return p


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind,says", [
    ("empty", "empty"), ("truncated", "not an ONNX model"), ("random", "not an ONNX model"),
    ("text", "not an ONNX model"), ("directory", "directory"), ("missing", "No such file"),
])
def test_unreadable_input_exits_2_with_a_message_and_writes_nothing(capsys, tmp_path, command, kind, says):
    path = _unreadable(tmp_path, kind)
    code, text, written = _run(capsys, command, path, tmp_path)
    assert code == 2 and says in text and written == []


def test_file_over_two_gib_is_refused_without_reading_it(capsys, tmp_path):
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as fh:  # sparse: no disk space, and no reading either
        fh.truncate(2**31 + 16)
    for command in COMMANDS:
        code, text, written = _run(capsys, command, path, tmp_path)
        assert code == 2 and "2 GiB" in text and written == []


# -------------------------------------------------------------------------- invalid graphs


def _broken(kind):
    m = onnx.load(TINY)
    if kind == "cycle":
        m.graph.node[1].input[0] = m.graph.node[6].output[0]
    elif kind == "dangling":
        m.graph.node[3].input[0] = "nothing_makes_this"
    elif kind == "duplicate-output":
        m.graph.node[5].output[0] = m.graph.node[4].output[0]
    return m


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind,says", [
    ("cycle", "cycle"), ("dangling", "nothing_makes_this"), ("duplicate-output", "also produced by"),
])
def test_structurally_invalid_graph_exits_1_naming_the_node(capsys, tmp_path, command, kind, says):
    m = _broken(kind)
    path = _save(tmp_path, f"{kind}.onnx", m)
    code, text, written = _run(capsys, command, path, tmp_path)
    assert code == 1 and says in text and written == []


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("text,says", [
    ("g (float[B,6] x) => (float[Y0,Y1] y) <float[2] s = {2.0, 3.0}> { y = Reshape(x, s) }", "input 1 is float; Reshape (opset 18) takes int64"),
    ("g (float[B,6] x) => (float[Y0,Y1] y) <int64[1,2] s = {2, 3}> { y = Reshape(x, s) }", "1-D tensor, got rank 2"),
    # (a constant Expand shape of rank 2 runs in onnxruntime: test_attack_regressions, off-spec;
    # a graph input of that rank it refuses)
    ("g (float[B,6] x, int64[1,2] s) => (float[Y0,Y1] y) { y = Expand(x, s) }", "1-D tensor, got rank 2"),
    ("g (float[B,6] x) => (float[Y0,Y1] y) <int32[2] s = {2, 3}> { y = Tile(x, s) }", "input 1 is int32; Tile (opset 18) takes int64"),
])
def test_shape_inputs_of_the_wrong_type_or_rank_are_errors(capsys, tmp_path, command, text, says):
    path = _save(tmp_path, "m.onnx", parser.parse_model(H + text))
    code, out, written = _run(capsys, command, path, tmp_path)
    assert code == 1 and says in out and written == []


# ----------------------------------------------------------------- huge shapes and overflow


@pytest.mark.parametrize("text", [
    "g (float[B,1] x) => (float[Y0,Y1,Y2] y) <int64[3] s = {1000000, 1000000, 1000000}> { y = Expand(x, s) }",
    "g (float[B,1] x) => (float[Y0,Y1] y) <int64[2] s = {1000000, 1000000}> { c = ConstantOfShape(s)  y = Add(x, c) }",
    "g (float[1,1] x) => (float[Y0,Y1] y) <int64[2] r = {1000000, 1000000}, float[1,1] w = {2.}> { t = Tile(w, r)  y = Add(x, t) }",
])
def test_astronomically_large_shapes_are_reported_never_materialised(capsys, tmp_path, text):
    import resource

    path = _save(tmp_path, "m.onnx", parser.parse_model(H + text))
    code, out, written = _run(capsys, "infer", path, tmp_path)
    assert code == 0 and "1000000" in out
    code, out, written = _run(capsys, "optimize", path, tmp_path)
    assert code == 0 and written == ["result.onnx"]
    assert os.path.getsize(tmp_path / "out" / "result.onnx") < 4096  # nothing was folded into it
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 * 1024 * 1024  # KiB: < 2 GiB
    code, out, _ = _run(capsys, "check", path, tmp_path)
    assert code == 0 and "huge-tensor" in out


def test_element_count_beyond_int64_is_an_error(capsys, tmp_path):
    text = ("g (float[B,1] x) => (float[Y0,Y1] y) <int64[2] s = {1000000000000, 1000000000000}, float[1] one = {1.}>"
            " { c = Expand(one, s)  y = Add(x, c) }")
    path = _save(tmp_path, "m.onnx", parser.parse_model(H + text))
    code, out, _ = _run(capsys, "check", path, tmp_path)
    assert code == 1 and "int64-overflow" in out


def test_shape_value_overflow_is_reported_and_wrapped_as_a_run_does(capsys, tmp_path):
    """2**62 * 4 wraps to 0 in int64, + 1 gives 1: the shape is [B,4,1], as onnxruntime computes
    it (never a dim of 2**64 + 1), and the overflow is reported."""
    text = ("g (float[B,4] x) => (float[Y0,Y1,Y2] y) <int64[1] big = {4611686018427387904}, int64[1] four = {4},"
            " int64[1] one = {1}> {"
            " s = Shape(x)  g = Mul(big, four)  h = Add(g, one)  c = Concat<axis = 0>(s, h)  y = Reshape(x, c) }")
    model = parser.parse_model(H + text)
    path = _save(tmp_path, "m.onnx", model)
    code, out, _ = _run(capsys, "infer", path, tmp_path)
    assert code == 0 and "wraps at run time" in out
    import numpy as np
    import onnxruntime as ort

    import shapeinfer

    r = shapeinfer.infer(str(path))
    assert r.fact("g").int_elements() == [0] and r.shape_strs("y") == ["B", "4", "1"]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.zeros((3, 4), np.float32)})[0].shape == (3, 4, 1)
    code, out, _ = _run(capsys, "check", path, tmp_path)
    assert code == 0 and "warning: [integer-overflow]" in out and "wraps at run time" in out
    assert shapeinfer.check(str(path), strict=True).exit_code == 1


# ----------------------------------------------------------- unknown ops and future opsets


def test_custom_domain_op_gets_unknown_shapes_and_no_crash(capsys, tmp_path):
    m = parser.parse_model(H + "g (float[B,4] x) => (float[Y0,Y1] y) { t = Relu(x)  y = my.domain.Frobnicate(t) }")
    m.opset_import.append(helper.make_opsetid("my.domain", 1))
    path = _save(tmp_path, "m.onnx", m)
    for command in COMMANDS:
        code, out, written = _run(capsys, command, path, tmp_path)
        # infer and optimize go on with what they know; check says what onnxruntime says: it
        # refuses an op of a domain no operator set it runs defines
        assert code == (1 if command == "check" else 0), out
    assert "unknown-op" in out and "onnxruntime refuses the model" in out


def test_opset_newer_than_the_installed_onnx(capsys, tmp_path):
    m = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="r"), helper.make_node("Neg", ["t"], ["y"], name="n")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 3])]),
        opset_imports=[helper.make_opsetid("", onnx.defs.onnx_opset_version() + 5)], ir_version=10)
    path = _save(tmp_path, "m.onnx", m)
    for command in COMMANDS:
        code, out, written = _run(capsys, command, path, tmp_path)
        if command == "check":  # onnxruntime runs no opset past its newest: it refuses the model
            assert code == 1 and "opset-unsupported" in out and "future-opset" in out, out
        else:
            assert code == 0 and "newer than the installed onnx" in out, out


# ---------------------------------------------------------------------------- external data


def _external_model(folder, location, offset=0, length=16, dims=(2,)):
    t = TensorProto()
    t.name, t.data_type = "target", TensorProto.INT64
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["A", "B"])], [t])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = folder / "m.onnx"
    path.write_bytes(m.SerializeToString())
    return path


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", ["parent", "absolute", "symlink", "missing", "too-short"])
def test_unsafe_or_broken_external_data_is_refused_before_reading(capsys, tmp_path, monkeypatch, command, case):
    folder = tmp_path / "model"
    folder.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.array([-1, 4], dtype="<i8").tobytes())
    if case == "parent":
        path, says = _external_model(folder, "../secret.bin"), "inside the model's folder"
    elif case == "absolute":
        path, says = _external_model(folder, str(secret)), "inside the model's folder"
    elif case == "symlink":
        os.symlink(secret, folder / "link.bin")
        path, says = _external_model(folder, "link.bin"), "symlink"
    elif case == "missing":
        path, says = _external_model(folder, "weights.bin"), "does not exist"
    else:
        (folder / "weights.bin").write_bytes(b"\x01" * 8)
        path, says = _external_model(folder, "weights.bin"), "has 8 bytes"

    real_open = builtins.open

    def guarded_open(file, *a, **k):
        if os.path.realpath(str(file)) == os.path.realpath(secret):
            raise AssertionError("the secret file was opened")
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", guarded_open)
    code, text, written = _run(capsys, command, path, tmp_path)
    assert code == 1 and says in text and "target" in text and written == []


# --------------------------------------------------------------------------- atomic writes


def test_a_failed_run_leaves_an_existing_output_as_it_was_and_no_temporary_files(capsys, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    existing = out_dir / "result.onnx"
    existing.write_bytes(b"previous result")
    path = _save(tmp_path, "bad.onnx", _broken("cycle"))
    for command in ("infer", "optimize"):
        assert main([command, str(path), "-o", str(existing)]) == 1
        assert existing.read_bytes() == b"previous result"
    report = out_dir / "report.xml"
    assert main(["check", str(path), "--format", "junit", "-o", str(report)]) == 1
    assert sorted(os.listdir(out_dir)) == ["report.xml", "result.onnx"]  # no .shapeinfer-* left
    capsys.readouterr()
    # a successful run replaces the file, readable like any file the user writes
    assert main(["optimize", TINY, "-o", str(existing)]) == 0
    onnx.checker.check_model(onnx.load(str(existing)))
    assert os.stat(existing).st_mode & 0o044  # not mkstemp's private 0600
    assert sorted(os.listdir(out_dir)) == ["report.xml", "result.onnx"]


def test_initializer_with_wrong_byte_count_is_an_error_not_a_crash(capsys, tmp_path):
    m = onnx.load(TINY)
    init = next(t for t in m.graph.initializer if t.data_type == TensorProto.INT64 and t.raw_data)
    init.raw_data = init.raw_data[:-3]
    path = _save(tmp_path, "m.onnx", m)
    for command in COMMANDS:
        code, text, written = _run(capsys, command, path, tmp_path)
        assert code in (0, 1) and text.strip()



def test_a_constant_loop_with_a_huge_trip_count_is_not_run(capsys, tmp_path):
    """Folding would run the loop 10^12 times: it is declined up front (no hang)."""
    import signal

    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "one"], ["v_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "c", "v0"], ["v"], body=body, name="loop"),
         helper.make_node("Add", ["x", "v"], ["y"], name="add")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 1])],
        [helper.make_tensor("M", TensorProto.INT64, [], [10**12]), helper.make_tensor("c", TensorProto.BOOL, [], [True]),
         helper.make_tensor("v0", TensorProto.FLOAT, [1], [0.0])])
    path = _save(tmp_path, "loop.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))

    def timeout(*_):
        raise AssertionError("took more than 60 s")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(60)
    try:
        for command in COMMANDS:
            code, out, written = _run(capsys, command, path, tmp_path)
            assert code == 0, out
        code = main(["optimize", str(path), "-o", str(tmp_path / "out" / "o.onnx"), "--explain"])
        out = capsys.readouterr().out
        assert code == 0 and "Loop" in [n.op_type for n in onnx.load(str(tmp_path / "out" / "o.onnx")).graph.node]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("head", [2**62, 2**63 - 1])
def test_no_constant_shape_for_a_reshape_whose_static_dims_multiply_past_int64(head):
    """x = ConstantOfShape([head, 4, 0]) has no element, but onnx's inference (run by onnxruntime
    at load) multiplies a Reshape's input dims when the shape is a constant: Reshape(x, [d, 2, -1])
    with d = Shape(x)[1] computed loads, the same with the constant shape [4, 2, -1] would not.
    The optimised model loads wherever the original does (a generated graph found it)."""
    ort = pytest.importorskip("onnxruntime")
    import shapeinfer
    from onnx import numpy_helper

    def ints(name, v):
        return numpy_helper.from_array(np.array(v, dtype=np.int64), name)

    nodes = [helper.make_node("ConstantOfShape", ["dims"], ["x"]),
             helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Gather", ["xs", "one"], ["z"], axis=0),
             helper.make_node("Concat", ["z", "two", "m1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[ints("dims", [head, 4, 0]), ints("one", [1]), ints("m1", [-1]),
                                           ints("two", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])  # loads
    out = shapeinfer.optimize(model)
    ort.InferenceSession(out.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def test_int_min_divided_by_minus_one_is_not_folded():
    """INT64_MIN / -1 overflows: the spec leaves it undefined and onnxruntime traps (SIGFPE), so
    the kernel refuses to fold it -- and a value inference computed for it is not taken either
    (review found the fold shortcut taking it)."""
    import shapeinfer

    model = parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g () => (int64[1] y) <int64[1] a = {-9223372036854775808}, int64[1] b = {-1}> { y = Div (a, b) }
    """)
    out = shapeinfer.optimize(model)
    assert [n.op_type for n in out.graph.node] == ["Div"]


def test_a_computed_zero_divisor_in_a_branch_that_never_runs_stays_computed():
    """onnxruntime refuses a constant integer divisor holding a 0 when it builds the kernel -- in
    a branch that never runs too: b = Size(k) - Size(k) may not become the constant 0 there, or
    the optimised model no longer loads (found by review; older than the fold shortcut)."""
    ort = pytest.importorskip("onnxruntime")
    import shapeinfer

    model = parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool c, int64[2] x) => (int64[2] y) <int64[2] k = {1, 2}>
    {
       s = Size (k)
       b = Sub (s, s)
       y = If (c) <then_branch = t () => (int64[2] ty) { ty = Div (x, b) },
                   else_branch = e () => (int64[2] ey) { ey = Identity (x) }>
    }
    """)
    out = shapeinfer.optimize(model)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    feeds = {"c": np.array(False), "x": np.array([4, 6], np.int64)}
    want = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(out.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert [a.tobytes() for a in got] == [a.tobytes() for a in want]


@pytest.mark.parametrize("where", ["input", "output"])
def test_a_tensor_name_that_is_not_utf8_is_a_clear_error(capsys, tmp_path, where):
    """protobuf hands such a name over as bytes: infer and optimize name the node and refuse the
    file (optimize's structure walk finds it with one join over every name)."""
    m = parser.parse_model(H + "g (float[2] x) => (float[2] out) { yZZ = Identity(x)\n out = Identity(yZZ) }")
    m.graph.node[0].name, m.graph.node[1].name = "first", "second"
    data = m.SerializeToString()
    at = data.index(b"yZZ") if where == "output" else data.rindex(b"yZZ")
    path = tmp_path / "m.onnx"
    path.write_bytes(data[:at] + b"y\xff\xfe" + data[at + 3:])
    for command in ("infer", "optimize"):
        code, text, written = _run(capsys, command, path, tmp_path)
        assert code != 0 and written == []
        assert "not valid UTF-8" in text and ("first" in text or "second" in text), text


_CORRUPT_STRINGS = {  # a model whose string ZZ stands where the bytes go bad, by where it sits
    "node name": '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] out) { out = Relu(x) }',
    "op type": '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] out) { out = ReluZZ(x) }',
    "graph name": '<ir_version: 8, opset_import: ["" : 17]>\ngZZ (float[2] x) => (float[2] out) { out = Relu(x) }',
    "unused input": '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x, float[2] uZZ) => (float[2] out) { out = Relu(x) }',
    "attribute string": '<ir_version: 8, opset_import: ["" : 20]>\ng (float[2] x) => (float[2] out) { out = Gelu<approximate="tZZ">(x) }',
    "opset domain": '<ir_version: 8, opset_import: ["" : 17, "cZZ": 1]>\ng (float[2] x) => (float[2] out) { out = cZZ.Foo(x) }',
    "doc string": None,
    "node domain": '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] out) { r = Relu(x)\n out = Neg(r) }',
    "dim in a body": '<ir_version: 8, opset_import: ["" : 17]>\ng (float[N] x, bool c) => (float[N] y) {'
                     ' y = If (c) <then_branch = t () => (float[NZZ] o) { o = Neg (x) },'
                     ' else_branch = e () => (float[N] o2) { o2 = Identity (x) }> }',
}


@pytest.mark.parametrize("where", sorted(_CORRUPT_STRINGS))
def test_a_string_that_is_not_utf8_anywhere_is_a_clear_error_from_optimize(capsys, tmp_path, where):
    """Found by review: optimize raised UnicodeDecodeError from inside onnx-graphsurgeon or onnx's
    helpers (node name, op type, graph name, doc string, attribute, input name), a bad opset
    domain a TypeError from infer too; a second review: a node's domain a TypeError, a dim
    declared in a body onnx's ValueError. Each is now ModelLoadError (an exit code, nothing written)."""
    text = _CORRUPT_STRINGS[where] or _CORRUPT_STRINGS["node name"]
    m = parser.parse_model(text)
    if where == "node name":
        m.graph.node[0].name = "nZZ"
    if where == "doc string":
        m.doc_string = "dZZ"
    if where == "node domain":  # (with another node: their ops were sorted, str against bytes)
        m.graph.node[0].domain = "ZZdomain"
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString().replace(b"ZZ", b"\xff\xfe"))
    code, out, written = _run(capsys, "optimize", path, tmp_path)
    assert code != 0 and written == [] and "not valid UTF-8" in out, out
    code, out, _ = _run(capsys, "infer", path, tmp_path)  # (it reads fewer strings: no traceback)
    assert code in (0, 1, 2) and "internal error" not in out, out


def _session_error(model):
    """None when onnxruntime (graph optimizations off: the spec's model) loads the model."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - the message is the result
        return str(e)
    return None


# An input declared [2**40, 0] holds no element. onnx's inference (run by onnxruntime at load)
# miscounts dims this large: a Split of it refuses the model, though nothing could go wrong.
_HUGE = H + """g (int64[1099511627776,0] c) => (int64[?,?] a, int64[?,?] b)
    <int64[2] split = {549755813888, 549755813888}, int64[1] one = {1}, int64 zero = {0}> {
  sh = Shape (c)
  %s
  a, b = Split <axis = 0> (e, split)
}"""
_HIDDEN = {  # e equals c, but onnxruntime's load-time inference cannot tell its shape
    "reshape": "sa = Abs (sh)\n  e = Reshape (c, sa)",  # remove-noop bypassed it
    "tile": "ones = Div (sh, sh)\n  e = Tile (c, ones)",  # (the value_info written gave e's dims)
    # cancel-reshapes made the Split read Neg(c)
    "cancel-reshapes": "sa = Abs (sh)\n  r = Reshape (c, sa)\n  g = Neg (r)\n  e = Reshape (g, sa)",
    # Min/Max folded to the constant [1, 1]: the Tile's output became static to onnxruntime
    "folded-repeats": "lo = Min (sh, one)\n  ones = Max (lo, one)\n  e = Tile (c, ones)",
    # Shape(c) folded to the constant [2**40, 0] (its reader is no dim input), then the node between
    # it and the Reshape bypassed (a second review)
    "identity-of-shape": "sa = Identity (sh)\n  e = Reshape (c, sa)",
    "tile-of-shape": "s1 = Abs (sh)\n  sa = Tile (s1, one)\n  e = Reshape (c, sa)",
    # the value_info written for a sequence or an optional gave the element's dims
    "sequence": "sa = Abs (sh)\n  r = Reshape (c, sa)\n  s = SequenceConstruct (r)\n  e = SequenceAt (s, zero)",
    "optional": "sa = Abs (sh)\n  r = Reshape (c, sa)\n  s = Optional (r)\n  e = OptionalGetElement (s)",
}


@pytest.mark.parametrize("how", sorted(_HIDDEN))
@pytest.mark.parametrize("write_shapes", [True, False])
def test_optimize_never_shows_onnxruntime_a_dim_past_int32_it_could_not_see(how, write_shapes):
    """Adversarial seed 39687 and a review's attacks: a rewrite, or a shape written, that lets
    onnxruntime's load-time inference see a dim past 2**31-1 made it refuse a model it loads."""
    m = parser.parse_model(_HUGE % _HIDDEN[how])
    assert _session_error(m) is None
    out = shapeinfer.optimize(m, write_shapes=write_shapes)
    assert _session_error(out) is None
    if write_shapes:
        assert _session_error(shapeinfer.infer_shapes(m)) is None


_BYPASSED_ONTO_A_CONSTANT = {  # an Identity between a constant and a reader that onnxruntime checks at load
    "tile-repeats": """g (int64[1,0] c) => (int64[?,?] a, int64[?,?] b) <int64[2] reps = {1099511627776, 1},
        int64[2] split = {549755813888, 549755813888}> {
      r = Identity (reps)
      e = Tile (c, r)
      a, b = Split <axis = 0> (e, split)
    }""",
    "constant-of-shape": """g (int64[1] c) => (float[?,?] a, float[?,?] b) <int64[2] shp = {1099511627776, 0},
        int64[2] split = {549755813888, 549755813888}> {
      r = Identity (shp)
      e = ConstantOfShape (r)
      a, b = Split <axis = 0> (e, split)
    }""",
    "zero-divisor": """g (int64[N] x) => (int64[N] y) <int64[1] z = {0}> {
      d = Identity (z)
      y = Div (x, d)
    }""",
    "zero-divisor-in-a-branch": """g (int64[N] x, bool cond) => (int64[N] y) <int64[1] z = {0}> {
      d = Identity (z)
      y = If (cond) <then_branch = t () => (int64[N] o) { o = Div (x, d) },
                     else_branch = e () => (int64[N] o2) { o2 = Identity (x) }>
    }""",
    "reshape-overflow": """g (int64[4611686018427387904,4,0] c) => (int64[?,?] y) <int64[2] s = {-1, 0}> {
      r = Identity (s)
      y = Reshape (c, r)
    }""",
}


@pytest.mark.parametrize("case", sorted(_BYPASSED_ONTO_A_CONSTANT))
def test_no_bypass_hands_a_reader_a_constant_onnxruntime_refuses(case):
    """A second review: remove-identity made Tile, ConstantOfShape, Div (in a branch that never
    runs too) and Reshape read a constant that onnxruntime refuses at load (dims past int32, a 0
    divisor, a Reshape whose input dims multiply past int64); the Identity now stays."""
    m = parser.parse_model(H + _BYPASSED_ONTO_A_CONSTANT[case])
    assert _session_error(m) is None
    assert _session_error(shapeinfer.optimize(m)) is None


def test_an_input_fixed_to_a_dim_past_int32_is_written_unknown():
    """A second review: with input_shapes={"c": [2**40, 0]} the written input declared the dim and
    onnxruntime refused the Split of it; inference still knows it."""
    m = parser.parse_model(H + """g (int64[N,0] c) => (int64[?,?] a, int64[?,?] b)
        <int64[2] split = {549755813888, 549755813888}> {
      a, b = Split <axis = 0> (c, split)
    }""")
    assert _session_error(m) is None
    fixed = {"c": [2**40, 0]}
    assert shapeinfer.infer(m, input_shapes=fixed).shape("a") == (2**39, 0)
    for out in (shapeinfer.infer_shapes(m, input_shapes=fixed), shapeinfer.optimize(m, input_shapes=fixed),
                shapeinfer.optimize(m, input_shapes=fixed, write_shapes=False)):
        dims = out.graph.input[0].type.tensor_type.shape.dim
        assert dims[0].WhichOneof("value") != "dim_value" and dims[1].dim_value == 0  # (unknown, or a name)
        assert _session_error(out) is None


def test_written_shapes_leave_a_dim_past_int32_unknown():
    m = parser.parse_model(H + """g (float[2] x) => (int64[?,?] a, int64[?,?] b) <int64[1] big = {1099511627776},
        int64[1] zero = {0}, int64[2] split = {549755813888, 549755813888}> {
      s = Concat <axis = 0> (big, zero)
      c = ConstantOfShape <value = int64[1] {1}> (s)
      sh = Shape (c)
      e = Expand (c, sh)
      a, b = Split <axis = 0> (e, split)
    }""")
    assert _session_error(m) is None
    assert shapeinfer.infer(m).shape("e") == (2**40, 0)  # inference knows it; the file does not say it
    for out in (shapeinfer.infer_shapes(m), shapeinfer.optimize(m)):
        written = {vi.name: vi.type.tensor_type.shape.dim for vi in out.graph.value_info}
        # (a static 0 is not written either: annotate.written_shape)
        assert [d.WhichOneof("value") for d in written["e"]] == [None, None]
        assert _session_error(out) is None


def test_explain_says_why_a_reshape_by_a_huge_empty_tensor_stays():
    """The passes leave the readers and makers of such tensors alone; --explain says so (it said
    "its output is a graph output" of a tensor that was none)."""
    m = parser.parse_model(H + """g (float[4294967296,0] x) => (float[?,0] z) <int64[2] s = {4294967296, 0}> {
      y = Reshape (x, s)
      z = Neg (y)
    }""")
    report = shapeinfer.OptimizeReport()
    shapeinfer.optimize(m, report=report)
    assert [(op, why.split(":")[0]) for _, op, why in report.kept] == [("Reshape", "left as it is")]


@pytest.mark.parametrize("nodes", [["y = Add (x, sp)"], ["y = Add (sp, sp)"], ["s2 = Identity (sp)", "y = Add (s2, x)"],
                                   ["s = Shape (sp)", "sf = Cast <to = 1> (s)", "y = Add (x, sf)"]])
def test_a_sparse_initializer_is_optimised_around(nodes):
    """A second review: dedupe read a sparse initializer's TensorProto fields (ValueError from
    protobuf, exit 2 from the CLI). The result must run as the original does."""
    import onnxruntime as ort

    sp = helper.make_sparse_tensor(helper.make_tensor("sp", TensorProto.FLOAT, [1], [1.5]),
                                   helper.make_tensor("spi", TensorProto.INT64, [1], [0]), [3])
    body = [parser.parse_node(n) for n in nodes]
    g = helper.make_graph(body, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], sparse_initializer=[sp])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    out = shapeinfer.optimize(m)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    feeds = {"x": np.arange(3, dtype=np.float32)}
    a, b = (ort.InferenceSession(x.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            for x in (m, out))
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("options", [{}, {"write_shapes": False}, {"passes": "dedupe"}])
def test_no_static_shape_whose_dims_multiply_past_int64_is_shown_to_onnxruntime(options):
    """A third review: Expand to a computed [B,B,B,0] (B = 2**31-1) holds nothing; folding its
    shape, or writing e's value_info, let onnxruntime's load-time inference multiply B*B*B for
    the Reshape after it ("Dimension product overflow") where the original loads."""
    m = parser.parse_model(H + """g (float[1,7] x) => (float[?,7] y) <int64[3] b = {2147483647, 2147483647, 2147483647},
        int64[1] z = {0}, float one = {1}, int64[2] rs = {-1, 7}> {
      s = Concat <axis = 0> (b, z)
      e = Expand (one, s)
      r = Reshape (e, rs)
      y = Add (r, x)
    }""")
    assert _session_error(m) is None
    assert _session_error(shapeinfer.optimize(m, **options)) is None
    assert _session_error(shapeinfer.infer_shapes(m)) is None


def test_no_bypass_hands_a_div_the_zero_of_a_constant_node():
    """A third review: a Constant node over the fold budget stays a node, and onnxruntime reads
    its output as an initializer: bypassing the Identity after it gave Div a constant 0."""
    values = ", ".join(str(k % 5) for k in range(3000))  # (holds zeros)
    m = parser.parse_model(H + f"""g (int64[3000] x) => (int64[3000] y) {{
      c = Constant <value = int64[3000] {{{values}}}> ()
      d = Identity (c)
      y = Div (x, d)
    }}""")
    assert _session_error(m) is None
    for options in ({}, {"passes": "remove-identity"}, {"fold_budget": 0}):
        assert _session_error(shapeinfer.optimize(m, **options)) is None


def test_optimize_adds_no_opset_import_to_the_model_given():
    """A third review: onnx-graphsurgeon keeps the model's (and each function's) own opset_import
    field and its export appends the domains it finds missing -- to the caller's model."""
    F = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Neg", ["a"], ["b"])],
                             [helper.make_opsetid("", 17)])
    G = helper.make_function("local", "G", ["a"], ["c"], [helper.make_node("Identity", ["a"], ["b"]),
                                                          helper.make_node("F", ["b"], ["c"], domain="local")],
                             [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("G", ["x"], ["y"], domain="local")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[F, G])
    before = m.SerializeToString()
    shapeinfer.optimize(m)
    assert m.SerializeToString() == before


_INVALID_CONSTANT_INPUTS = {  # the spec's rule broken by a constant input: onnxruntime refuses the model at load
    "split sizes not summing to the axis": ('g (float[4] x) => (float[?] y, float[?] z) <int64[2] sp = {1, 1}> {'
                                             ' %s\n y, z = Split <axis = 0> (x, s) }'),
    "a Resize scale of 0": ('g (float[1,1,2,2] x) => (float[?,?,?,?] y) <float[4] sp = {1.0, 1.0, 0.0, 1.0}> {'
                            ' %s\n y = Resize (x, , s) }'),
    "a Slice axis given twice": ('g (float[N,M] x) => (float[?,?] y) <int64[2] sp = {0, 0}, int64[2] st = {0, 0},'
                                 ' int64[2] en = {1, 1}> { %s\n y = Slice (x, st, en, s) }'),
}


@pytest.mark.parametrize("case", sorted(_INVALID_CONSTANT_INPUTS))
def test_an_input_that_breaks_the_ops_rule_is_an_error_not_a_model_that_does_not_load(case):
    """A third review: inference took these (each node fails whenever it runs), and optimize,
    folding the Identity that hid the constant, wrote a model onnxruntime refuses at load."""
    direct = parser.parse_model(H + _INVALID_CONSTANT_INPUTS[case] % "s = Identity (sp)")
    bare = parser.parse_model(H + (_INVALID_CONSTANT_INPUTS[case] % "").replace("(x, s)", "(x, sp)")
                              .replace("(x, , s)", "(x, , sp)").replace("en, s)", "en, sp)"))
    assert _session_error(bare) is not None  # the judge: onnxruntime refuses the constant form
    for m in (direct, bare):
        with pytest.raises(shapeinfer.ShapeInferenceError):
            shapeinfer.infer(m)
        with pytest.raises(shapeinfer.ShapeInferenceError):
            shapeinfer.optimize(m)


def test_a_constant_node_with_a_sparse_value_keeps_it():
    """A fourth review: onnx-graphsurgeon skips a sparse_value attribute, so the optimised model
    held `Constant ()`, which onnxruntime refuses. Two such Constants of different values (which
    dedupe must not merge), one read from an If branch."""
    import onnxruntime as ort

    def sparse(name, at, value):
        return helper.make_sparse_tensor(helper.make_tensor(name, TensorProto.FLOAT, [1], [value]),
                                         helper.make_tensor(name + "_i", TensorProto.INT64, [1], [at]), [4])

    then_g = helper.make_graph([helper.make_node("Add", ["x", "k2"], ["t"])], "t", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "e", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4])])
    nodes = [helper.make_node("Constant", [], ["k1"], sparse_value=sparse("a", 2, 5.0)),
             helper.make_node("Constant", [], ["k2"], sparse_value=sparse("b", 1, -3.0)),
             helper.make_node("Add", ["x", "k1"], ["y1"]),
             helper.make_node("If", ["c"], ["y2"], then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                       helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("y1", "y2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    out = shapeinfer.optimize(m)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    feeds = {"c": np.array(True), "x": np.zeros(4, np.float32)}
    want, got = (ort.InferenceSession(x.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
                 for x in (m, out))
    assert [w.tobytes() for w in want] == [g_.tobytes() for g_ in got]
    assert want[1].tolist() == [0, -3, 0, 0]
