"""`shapeinfer check`: the corpus passes, broken copies fail with findings that name the node,
and the report formats carry them (text, JSON, JUnit) with the documented exit codes."""

import glob
import json
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper, parser

import shapeinfer
from shapeinfer.checker import check
from shapeinfer_cli.main import cli

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CORPUS = sorted(glob.glob(os.path.join(FIXTURES, "corpus", "*.onnx"))) + [os.path.join(FIXTURES, "tiny_bert.onnx")]
H = '<ir_version: 9, opset_import: ["" : 18]>\n'


def _model(text):
    """A model from the text syntax; outputs declare their rank with free dim names (Y0, Y1...)."""
    return parser.parse_model(H + text)


def _codes(report, severity=None):
    return [f.code for f in report.findings if severity is None or f.severity == severity]


def _tiny():
    return onnx.load(os.path.join(FIXTURES, "tiny_bert.onnx"))


# ------------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("path", CORPUS, ids=os.path.basename)
def test_corpus_checks_without_errors(path):
    for nonempty in (False, True):
        report = check(path, assume_nonempty=nonempty)
        assert report.ok and report.exit_code == 0, [f.line() for f in report.errors]
        assert not _codes(report, "error")


def test_corpus_in_one_parallel_run_exits_zero_and_streams_one_summary_line_per_model():
    """Text streams: each model's findings, its contract and its summary line, model after model
    in the order given (with -j 2 too), the summary ending each model's lines."""
    result = CliRunner().invoke(cli, ["check", "--assume-nonempty", "-j", "2"] + CORPUS)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    summaries = [line for line in lines if " -- " in line and line.split(":")[1].strip().startswith(("ok", "FAILED"))]
    assert [s.split(":")[0] for s in summaries] == CORPUS
    assert all(": ok -- 0 error(s)" in s for s in summaries)
    assert lines[-1] == summaries[-1] and [line.split(":")[0] for line in lines] == sorted(
        (line.split(":")[0] for line in lines), key=CORPUS.index)


def test_swin_export_fails_for_odd_patch_grids_and_check_says_where():
    """The HF Swin export pads a window but does not crop it back for an odd patch grid: the
    check names the Reshape and a size that breaks it -- and onnxruntime fails right there."""
    ort = pytest.importorskip("onnxruntime")
    path = os.path.join(FIXTURES, "corpus", "swin_classic.onnx")
    report = check(path, assume_nonempty=True)
    found = [f for f in report.findings if f.code == "conditional-shape"]
    assert found, report.findings
    first = found[0]
    binding = _failing_sizes(first.message)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    # (a symbol left out of the finding plays no part: any size breaks it)
    x = np.zeros((int(binding.get("batch", 2)), 3, int(binding.get("height", 2)), int(binding.get("width", 2))), np.float32)
    with pytest.raises(Exception, match=first.node.split("/")[-1]):
        sess.run(None, {"pixel_values": x})


# ------------------------------------------------------------------------- broken copies


def test_reshape_whose_counts_never_match_is_an_error_naming_the_node():
    """[batch,seq,32] to [0,0,13,-1]: 32 is no multiple of 13, so no run succeeds -- an error."""
    m = _tiny()
    n = next(n for n in m.graph.node if n.op_type == "Reshape")
    m.graph.initializer.append(numpy_helper.from_array(np.array([0, 0, 13, -1], np.int64), "bad_shape"))
    n.input[1] = "bad_shape"
    report = check(m)
    errs = [f for f in report.errors if f.code == "shape-error"]
    assert errs and errs[0].node == n.name and errs[0].op == "Reshape", report.findings
    assert "element counts cannot match" in errs[0].message
    assert report.exit_code == 1


def test_reshape_that_runs_only_on_an_empty_input_is_an_error():
    """[B,S,32] to [0,0,13,59] differs in element count wherever the input is not empty; at
    B = 0 both counts are 0 and onnxruntime runs it -- so inference reports its shape (no
    'invalid model'), and check calls it an error: the model runs at no non-empty size (the
    input contract). onnxruntime runs it at B = 0, which no deployment sends."""
    m = _model("g (float[B,S,32] x) => (float y) <int64[4] s = {0, 0, 13, 59}> { y = Reshape(x, s) }")
    assert shapeinfer.infer(m).shape_strs("y") == ["B", "S", "13", "59"]
    report = check(m)
    found = [f for f in report.findings if f.code == "no-size"]
    assert found and found[0].severity == "error" and found[0].op == "Reshape", report.findings
    assert "runs at no size where no input is empty" in found[0].message and report.exit_code == 1
    assert _runs(m, {"x": np.zeros((0, 3, 32), np.float32)}) and not _runs(m, {"x": np.zeros((1, 3, 32), np.float32)})
    assert check(m, strict=True).exit_code == 1
    import onnxruntime as ort

    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.zeros((0, 3, 32), np.float32)})[0].shape == (0, 3, 13, 59)
    with pytest.raises(Exception):
        sess.run(None, {"x": np.zeros((1, 3, 32), np.float32)})


def _loads_and_runs(m) -> bool:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    try:
        sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        sess.run(None, {"input_ids": np.zeros((2, 3), np.int64), "attention_mask": np.ones((2, 3), np.int64)})
    except Exception:
        return False
    return True


def test_declared_output_shape_that_contradicts_inference_is_a_warning_onnxruntime_runs_it():
    """A wrong declared shape is metadata: onnxruntime loads the model and runs it (it warns), so
    it is a warning that says who may fail -- an error under --strict."""
    for edit in (lambda d: setattr(d[2], "dim_value", 17),  # inferred: 16
                 lambda d: setattr(d.add(), "dim_value", 1)):  # rank 4, inferred rank 3
        m = _tiny()
        edit(m.graph.output[0].type.tensor_type.shape.dim)
        report = check(m)
        assert "declared-shape" in _codes(report, "warning") and report.exit_code == 0, report.findings
        assert "consumers that trust declared shapes" in report.findings[0].message
        assert check(m, strict=True).exit_code == 1
        assert _loads_and_runs(m)


def test_declared_output_type_that_contradicts_inference_is_an_error_onnxruntime_refuses_it():
    """A float16 conversion that declares a float16 output for Cast(to=FLOAT) -- a common
    converter bug: onnxruntime refuses the model at load."""
    m = _model("g (float[N] x) => (float16[N] y) { y = Cast<to = 1>(x) }")
    report = check(m)
    found = [f for f in report.errors if f.code == "declared-type"]
    assert found and "declared float16, but the node makes float" in found[0].message, report.findings
    import onnxruntime as ort

    with pytest.raises(Exception, match="Type Error"):
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def test_dangling_input_duplicate_output_and_cycle_are_errors():
    m = _tiny()
    m.graph.node[3].input[0] = "nothing_makes_this"
    report = check(m)
    f = [f for f in report.findings if f.code == "dangling-input"]
    assert f and f[0].node == m.graph.node[3].name and "nothing_makes_this" in f[0].message

    m = _tiny()
    m.graph.node[5].output[0] = m.graph.node[4].output[0]
    assert "duplicate-output" in _codes(check(m), "error")

    m = _tiny()
    m.graph.node[1].input[0] = m.graph.node[6].output[0]  # Shape reads a later tensor that needs it
    report = check(m)
    assert "not-a-dag" in _codes(report, "error"), report.findings


@pytest.mark.parametrize("text,code,fragment", [
    ("g (float[2,3] x) => (float[Y0,Y1] y) <int64[2] s = {4, 3}> { y = Expand(x, s) }", "shape-error", "broadcast"),
    ("g (float[2,3] x) => (float[Y0,Y1] y) <int64[2] r = {2, -1}> { y = Tile(x, r) }", "shape-error", "repeat"),
    ("g (float[2,3] x) => (float[Y0,Y1] y) <int64[3] r = {2, 1, 1}> { y = Tile(x, r) }", "shape-error", ""),
    ("g (float[2,6] x) => (float[Y0,Y1,Y2] y) <int64[3] s = {0, 0, 5}> { y = Reshape(x, s) }", "shape-error", ""),
    ("g (float[B,6] x) => (float[Y0,Y1,Y2] y) <int64[3] s = {0, 5, -1}> { y = Reshape(x, s) }", "shape-error", ""),
])
def test_invalid_expand_tile_reshape_are_errors(text, code, fragment):
    report = check(_model(text))
    errs = [f for f in report.errors if f.code == code]
    assert errs and errs[0].op in ("Expand", "Tile", "Reshape"), report.findings
    assert fragment in errs[0].message


def _failing_sizes(message: str) -> dict:
    """{symbol: size} of a finding that starts "fails for a=1, b=2: ..."."""
    assert message.startswith("fails for "), message
    head = message[len("fails for "):].split(": ", 1)[0]
    return dict(kv.split("=") for kv in head.split(", "))


def test_reshape_valid_only_for_some_sizes_is_a_warning_with_a_size_that_breaks_it():
    m = _model("g (float[B,S] x) => (float[Y0,Y1,Y2] y) <int64[3] s = {0, -1, 4}> { y = Reshape(x, s) }")
    report = check(m)
    f = [f for f in report.findings if f.code == "input-multiple"]
    assert len(f) == 1 and f[0].severity == "warning" and report.ok, report.findings
    assert f[0].message.startswith("the model runs only when S % 4 == 0: at S=")
    size = int(re.search(r"at S=(\d+)", f[0].message).group(1))
    assert size % 4 != 0 and not _runs(m, {"x": np.zeros((2, size), np.float32)})
    assert _runs(m, {"x": np.zeros((2, 8), np.float32)})
    assert report.contract["runs_when"] == "S % 4 == 0"
    strict = check(m, strict=True)
    assert not strict.ok and strict.exit_code == 1


def test_a_reshape_that_always_works_gives_no_warning():
    m = _model("g (float[B,S,8] x) => (float[Y0,Y1,Y2] y) <int64[3] s = {0, -1, 4}> { y = Reshape(x, s) }")
    assert check(m, strict=True).findings == []


def test_broadcast_of_two_different_symbols_is_a_warning():
    m = _model("g (float[B] x, float[N] z) => (float[Y0] y) { y = Add(x, z) }")
    report = check(m)
    f = [f for f in report.findings if f.code == "input-equality"]
    assert f and f[0].op == "Add" and "runs only when B == N (or one of them is 1)" in f[0].message, report.findings
    assert report.ok and not check(m, strict=True).ok


def test_custom_ops_and_unknown_opsets_are_errors_as_onnxruntime_refuses_them_not_crashes():
    m = _model("g (float[B,4] x) => (float[Y0,Y1] y) { t = Relu(x)  y = my.domain.Frobnicate(t) }")
    m.opset_import.append(helper.make_opsetid("my.domain", 1))
    report = check(m)
    assert not report.ok and "unknown-op" in _codes(report, "error"), report.findings
    # an op of onnxruntime's own domain that shapeinfer has no rule for: onnxruntime runs it
    m = _model("g (float[B,4] x) => (float[Y0,Y1] y) { y = com.microsoft.BiasGelu(x, x) }")
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    report = check(m)
    assert report.ok, report.findings
    m = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 99)], ir_version=8)
    report = check(m)
    assert report.exit_code in (0, 1)  # the checker may refuse opset 99; nothing crashes
    assert all(f.message for f in report.findings)


def test_int64_overflow_in_shape_arithmetic_is_reported_and_wrapped():
    """2**62 * 4 wraps to 0 in int64: the value is what a run holds (never 2**64), and check
    reports the overflow (a warning: onnxruntime computes the wrapped value) -- here the wrapped 0
    also makes the Reshape invalid, as it is in onnxruntime (a 0 past the input's rank)."""
    m = _model("g (float[B,4] x) => (float[Y0,Y1,Y2] y) <int64[1] big = {4611686018427387904}, int64[1] four = {4}> {"
               " s = Shape(x)  g = Mul(big, four)  c = Concat<axis = 0>(s, g)  y = Reshape(x, c) }")
    report = check(m)
    assert "integer-overflow" in _codes(report, "warning"), report.findings
    assert "shape-error" in _codes(report, "error"), report.findings
    with pytest.raises(shapeinfer.ShapeInferenceError):
        shapeinfer.infer(m)
    del m.graph.node[-2:]
    m.graph.output[0].name = "g"
    assert shapeinfer.infer(m).fact("g").int_elements() == [0]


# ---------------------------------------------------------------------------------- formats


def test_json_and_junit_reports_and_exit_codes(tmp_path):
    good = os.path.join(FIXTURES, "tiny_bert.onnx")
    bad = tmp_path / "bad.onnx"
    m = _tiny()
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16  # onnxruntime refuses it
    onnx.save(m, str(bad))
    runner = CliRunner()

    res = runner.invoke(cli, ["check", good, str(bad), "--format", "json"])
    assert res.exit_code == 1
    data = json.loads(res.output)
    assert [x["ok"] for x in data["models"]] == [True, False] and data["exit_code"] == 1
    assert any(f["code"] == "declared-type" and f["severity"] == "error" for f in data["models"][1]["findings"])

    out = tmp_path / "report.xml"
    res = runner.invoke(cli, ["check", good, str(bad), "--format", "junit", "-o", str(out)])
    assert res.exit_code == 1 and out.exists()
    root = ET.parse(out).getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 2 and cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None and "declared-type" in failure.text
    assert root.find("testsuite").get("failures") == "1"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".shapeinfer-")]

    res = runner.invoke(cli, ["check", good])
    assert res.exit_code == 0 and res.output.strip().endswith("s")  # the summary line

    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00garbage" * 10)
    res = runner.invoke(cli, ["check", good, str(junk), "--format", "junit"])
    assert res.exit_code == 2
    root = ET.fromstring(res.output)
    assert root.find(".//testcase[2]/error") is not None or len(root.findall(".//error")) == 1


def test_parallel_and_serial_reports_agree(tmp_path):
    runner = CliRunner()
    a = runner.invoke(cli, ["check", "--format", "json"] + CORPUS[:4])
    b = runner.invoke(cli, ["check", "--format", "json", "-j", "2"] + CORPUS[:4])
    strip = lambda d: [{k: v for k, v in m.items() if k != "seconds"} for m in json.loads(d)["models"]]  # noqa: E731
    assert a.exit_code == b.exit_code == 0 and strip(a.output) == strip(b.output)


def test_declared_symbolic_dims_are_checked_against_inference():
    # declared seq where the output has seq+1 rows: never equal -- an error
    m = _model("g (float[B,S,4] x) => (float[B,S,4] y) <float[1,1,4] z = {0., 0., 0., 0.}, int64 i0 = {0},"
               " int64[1] ax = {0}, int64[1] one = {1}, int64[1] four = {4}> {"
               " s = Shape(x)  b = Gather<axis = 0>(s, i0)  u = Unsqueeze(b, ax)  c = Concat<axis = 0>(u, one, four)"
               " e = Expand(z, c)  y = Concat<axis = 1>(e, x) }")
    report = check(m)
    errs = [f for f in report.findings if f.code == "declared-shape"]
    assert errs and errs[0].severity == "warning" and "never S" in errs[0].message, report.findings
    # declared B where inference has S: equal only when B == S -- a warning with a size that breaks it
    m = _model("g (float[B,S] x) => (float[B,B] y) { y = Relu(x) }")
    report = check(m)
    warns = [f for f in report.findings if f.code == "declared-shape"]
    assert warns and warns[0].severity == "warning" and "only for some sizes" in warns[0].message, report.findings
    # a free name for a dim is fine
    assert check(_model("g (float[B,S] x) => (float[B,S_out] y) { y = Relu(x) }"), strict=True).findings == []


@pytest.mark.parametrize("file,axis,size,code,node,fragment", [
    # exported for 32x32 images, declared for 48: 25 patches meet 17 position embeddings
    ("vit_torchvision_classic.onnx", 2, 48, "shape-error", "/encoder/Add", "25 and 17"),
    # the dynamo export declares every intermediate shape: the Conv's one is now wrong (a warning:
    # onnxruntime runs it for even batches, mixing patches into the batch -- an error with --strict)
    ("vit_torchvision_dynamo.onnx", 2, 48, "declared-shape", "node_Conv_206", "never 4"),
    # a sequence of 80 tokens, 64 position embeddings
    ("gpt2_dynamo.onnx", 1, 80, "shape-error", "node_embedding_1", "out of range"),
])
def test_broken_copies_of_corpus_models_fail_at_the_right_node(file, axis, size, code, node, fragment):
    m = onnx.load(os.path.join(FIXTURES, "corpus", file))
    m.graph.input[0].type.tensor_type.shape.dim[axis].dim_value = size
    report = check(m, strict=code == "declared-shape")
    assert report.exit_code == 1
    found = [f for f in report.errors if f.code == code and f.node == node]
    assert found and fragment in found[0].message, [f.line() for f in report.errors]


def test_a_bug_on_one_model_fails_that_model_and_the_run_goes_on(monkeypatch, tmp_path, no_raise_mode):
    import shapeinfer.checker.run as checker

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(checker, "declared_shapes", boom)
    good = os.path.join(FIXTURES, "tiny_bert.onnx")
    reports = checker.check_many([good, good])
    assert [r.exit_code for r in reports] == [1, 1]
    assert reports[0].findings[0].code == "internal-error" and "boom" in reports[0].findings[0].message
    with pytest.raises(TypeError):
        check(42)


def test_in_raise_mode_a_bug_in_check_is_raised(monkeypatch):
    import shapeinfer.checker.run as checker

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(checker, "declared_shapes", boom)
    monkeypatch.setenv("SHAPEINFER_RAISE", "1")
    with pytest.raises(RuntimeError, match="boom"):
        checker.check(os.path.join(FIXTURES, "tiny_bert.onnx"))


def test_text_report_ends_with_one_summary_line_per_model():
    """(No hint to try --assume-nonempty any more: zero cases are exact by default, and the
    unknown dims left come from data -- NonZero, TopK -- or the expression budget.)"""
    paths = [os.path.join(FIXTURES, "corpus", "swin_classic.onnx"), os.path.join(FIXTURES, "tiny_bert.onnx")]
    res = CliRunner().invoke(cli, ["check"] + paths)
    lines = res.output.strip().splitlines()
    assert res.exit_code == 0 and not any(line.startswith("hint:") for line in lines)
    assert [line.split(": ")[0] for line in lines[-2:]] == paths
    assert all(" -- 0 error(s), " in line for line in lines[-2:])


@pytest.mark.parametrize("where", ["main graph", "loop body"])
def test_nodes_out_of_order_are_a_warning_in_the_main_graph_and_an_error_in_a_body(where):
    """onnxruntime sorts the main graph's nodes and loads the model; a body's it does not sort: it
    refuses the model (a second review found check saying "onnxruntime sorts them" of a body)."""
    import onnxruntime as ort

    m = parser.parse_model('<ir_version: 8, opset_import: ["" : 17]>\n' + """g (float[N] x, int64 trip) => (float[N] out) {
      cond = Constant <value = bool {1}> ()
      out = Loop (trip, cond, x) <body = b (int64 i, bool ci, float[N] v) => (bool co, float[N] vo) {
          co = Identity (ci)
          w = Neg (v)
          vo = Add (w, v)
      }>
    }""")
    nodes = (m.graph if where == "main graph" else m.graph.node[1].attribute[0].g).node
    first = onnx.NodeProto()
    first.CopyFrom(nodes[-2] if where == "loop body" else nodes[0])
    if where == "loop body":  # w = Neg(v) after vo = Add(w, v)
        last = onnx.NodeProto()
        last.CopyFrom(nodes[-1])
        del nodes[-2:]
        nodes.extend([last, first])
    else:  # the Loop before the Constant it reads
        del nodes[0]
        nodes.append(first)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        loads = True
    except Exception:  # noqa: BLE001 - whether it loads is the judge
        loads = False
    report = check(m)
    assert loads == (where == "main graph")
    assert "unsorted-nodes" in _codes(report, "warning" if loads else "error"), report.findings
    assert report.exit_code == (0 if loads else 1)


def test_a_body_out_of_order_inside_a_function_is_an_error_without_the_sorting_warning():
    """An If inside a model-local function whose branch has its nodes out of order: onnxruntime
    refuses the model. check said "onnxruntime sorts them and runs the model" (a warning) before
    the error; the body is found inside the function now: one error, no such warning."""
    import onnxruntime as ort

    body = helper.make_graph([helper.make_node("Neg", ["b"], ["c"]), helper.make_node("Abs", ["a"], ["b"])], "body",
                             [], [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])])
    f = helper.make_function("local", "F", ["a", "k"], ["c"],
                             [helper.make_node("If", ["k"], ["c"], then_branch=body, else_branch=body)],
                             [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("F", ["x", "k"], ["y"], domain="local")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("k", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[f])
    with pytest.raises(Exception):
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    report = check(m)
    assert report.exit_code == 1
    assert "unsorted-nodes" in _codes(report, "error"), report.findings
    assert "unsorted-nodes" not in _codes(report, "warning"), report.findings


def test_a_call_of_a_local_function_the_model_does_not_define_is_an_error():
    """A third review: check said ok (an unknown-op warning) of a model onnxruntime refuses: it
    calls local.F, and the model's functions of domain 'local' hold only G."""
    import onnxruntime as ort

    G = helper.make_function("local", "G", ["a"], ["b"], [helper.make_node("Neg", ["a"], ["b"])],
                             [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("F", ["x"], ["y"], domain="local")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[G])
    with pytest.raises(Exception):
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    report = check(m)
    assert "undefined-function" in _codes(report, "error") and report.exit_code == 1, report.findings
    m.graph.node[0].op_type = "G"  # (the function it defines: fine)
    assert "undefined-function" not in _codes(check(m))


def test_size_warnings_only_an_empty_tensor_breaks_are_left_out_unless_asked_for():
    """The corpus's GPT-2 export: its warnings hold only where seq is 0 (an empty tensor). By
    default check leaves them out and says how many; --include-empty (include_empty) shows them.
    A Reshape that runs only on an empty input stays (test above): no non-empty size runs it."""
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "corpus", "gpt2_classic.onnx")
    shown, every = check(path), check(path, include_empty=True)
    assert every.warnings and all("=0" in f.message.split(":")[0] for f in every.warnings)
    assert not shown.warnings and shown.empty_only == len(every.warnings)
    assert "only where a tensor is empty" in shown.summary()
    assert not any("iszero" in f.message or "bcast" in f.message for f in shown.findings)


def test_no_corpus_finding_spells_an_internal_term_or_a_size_zero_case():
    """What a team reads over the corpus exports: no finding about a size where a tensor is
    empty, no internal term (iszero, bcast) -- a dim no user would read is told by its value at
    the failing sizes ("at samples=224 it is 0, not 2")."""
    paths = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "fixtures", "corpus", "*.onnx")))
    assert len(paths) >= 30
    for path in paths:
        for f in check(path).findings:
            assert "iszero" not in f.message and "bcast" not in f.message, (path, f.message)
            assert not any(part.strip().endswith("=0") for part in f.message.split(":")[0].split(",")), (path, f.message)


def test_a_baked_in_sequence_length_is_an_error_naming_the_node_and_the_size():
    """[batch,seq,32] -> [0,5,4,8]: it runs at seq=5 and at no other non-empty size, whatever
    batch is (proven on the algebra: 32*batch*seq == 160*batch). The error names the node,
    the input and the size; the declared output [batch,seq,4,8], which holds at seq=5, is no
    finding; "every size" is never said."""
    m = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 18]> g (float[batch,seq,32] x) => '
                                '(float[batch,seq,4,8] y) { s = Constant<value = int64[4] {0, 5, 4, 8}>() '
                                '["/attn/Reshape"] y = Reshape(x, s) }')
    for kw in ({}, {"include_empty": True}, {"assume_nonempty": True}):
        report = check(m, **kw)
        found = [f for f in report.findings if f.code == "baked-in-size"]
        assert len(found) == 1 and found[0].severity == "error" and report.exit_code == 1, (kw, report.findings)
        assert found[0].op == "Reshape" and "runs only at seq=5" in found[0].message and "input 'x'" in found[0].message
        assert not any("every size" in f.message for f in report.findings), kw
        # (at seq=0 it fails or makes [0,5,4,8]: said only on request)
        assert all("=0" in f.message for f in report.findings if f.code != "baked-in-size"), (kw, report.findings)
        assert kw or len(report.findings) == 1, report.findings
        assert report.contract["runs_when"] == "seq == 5"
    for batch, seq in ((1, 5), (3, 5)):
        assert _runs(m, {"x": np.zeros((batch, seq, 32), np.float32)})
    for seq in (1, 4, 6, 64):
        assert not _runs(m, {"x": np.zeros((2, seq, 32), np.float32)})


def _runs(model, feeds) -> bool:
    """Whether onnx's reference evaluator runs the model on feeds (the spec's semantics)."""
    from onnx.reference import ReferenceEvaluator

    try:
        ReferenceEvaluator(model).run(None, feeds)
    except (ValueError, RuntimeError, IndexError):  # (a run that fails: those sizes break the shape rule)
        return False
    return True
