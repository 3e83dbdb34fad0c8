"""The Python API and the CLI, end to end, with onnxruntime as ground truth on the fixture."""

import hashlib
import json
import os

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

import shapeinfer
from shapeinfer.symbolic import parse
from shapeinfer_cli.main import cli, main
from tests.helpers import evaluate_shape, save, single_node_model

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "tiny_bert.onnx")


def _write(path, data):
    path.write_bytes(data)
    return path


def _digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


# ------------------------------------------------------------------ Python API


def test_infer_shapes_writes_value_info_and_leaves_input_untouched():
    model = onnx.load(FIXTURE)
    before = model.SerializeToString()
    out = shapeinfer.infer_shapes(model)
    assert model.SerializeToString() == before
    vi = {v.name: v for v in out.graph.value_info}
    dims = vi["/attn/query/Reshape_output_0"].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", "seq+1", 4, 4]
    outs = {o.name: o for o in out.graph.output}
    # A declared name that is not an input dim gives way to the inferred dim; the result says what it equals.
    flat = outs["token_states"].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in flat] == ["batch*seq+batch", 16]
    declared = {(d["tensor"], d["axis"]): d for d in shapeinfer.infer(model).declared_dims()}
    assert parse(declared[("token_states", 0)]["inferred"]) == parse("batch*(seq+1)")
    assert declared[("last_hidden_state", 1)]["declared"] == "seq_plus_1"
    assert declared[("last_hidden_state", 1)]["inferred"] == "seq+1"
    assert declared[("last_hidden_state", 0)]["kind"] == "same"
    onnx.checker.check_model(out, full_check=True)


def test_input_shapes_override():
    out = shapeinfer.infer_shapes(onnx.load(FIXTURE), input_shapes={"input_ids": [2, "n"], "attention_mask": [2, "n"]})
    outs = {o.name: o for o in out.graph.output}
    dims = outs["last_hidden_state"].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == [2, "n+1", 16]


@pytest.mark.parametrize("batch, seq", [(1, 1), (2, 5), (3, 2), (1, 7)])
def test_every_inferred_shape_matches_onnxruntime(batch, seq):
    ort = pytest.importorskip("onnxruntime")
    model = onnx.load(FIXTURE)
    result = shapeinfer.infer(model)
    names = result.tensor_names()
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    del exposed.graph.output[:]
    for n in names:
        exposed.graph.output.append(onnx.helper.make_empty_tensor_value_info(n))
    sess = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {
        "input_ids": np.random.default_rng(0).integers(0, 50, (batch, seq)).astype(np.int64),
        "attention_mask": np.ones((batch, seq), np.int64),
    }
    values = sess.run(names, feeds)
    binding = {"batch": batch, "seq": seq}
    for name, real in zip(names, values):
        got = result.shape(name)
        assert got is not None, name
        assert evaluate_shape(got, binding) == real.shape, (name, [str(d) for d in got])
    assert result.summary()["unknown"] == 0


def test_invalid_model_error_names_node():
    model = single_node_model("Reshape", 14, [5, 6], [np.array([4, -1], dtype=np.int64)])
    with pytest.raises(shapeinfer.ShapeInferenceError) as info:
        shapeinfer.infer(model)
    assert "reshape_node" in str(info.value) and "Reshape" in str(info.value)


# ------------------------------------------------------------------ CLI


def test_cli_table():
    r = CliRunner().invoke(cli, [FIXTURE])
    assert r.exit_code == 0, r.output
    assert "/attn/query/Reshape" in r.output
    assert "[batch,seq+1,4,4]" in r.output
    assert "[batch,1,seq+1,seq+1]" in r.output
    assert "symbols: batch, seq" in r.output


def test_cli_all_and_json():
    r = CliRunner().invoke(cli, [FIXTURE, "--all"])
    assert r.exit_code == 0 and "/mask/Sub_output_0" in r.output
    r = CliRunner().invoke(cli, [FIXTURE, "--json"])
    assert r.exit_code == 0
    data = json.loads(r.output)
    node = next(n for n in data["nodes"] if n["name"] == "/cls/Tile")
    assert node["outputs"][0]["shape"] == ["batch", 1, 16]  # static dims are JSON integers
    assert data["summary"]["symbols"] == ["batch", "seq"]
    assert data["outputs"][0]["dtype"] == "float"


def test_cli_writes_annotated_model(tmp_path):
    out = tmp_path / "annotated.onnx"
    before = _digest(FIXTURE)
    r = CliRunner().invoke(cli, [FIXTURE, "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert _digest(FIXTURE) == before
    m = onnx.load(str(out))
    assert any(v.name == "/mask/Expand_output_0" for v in m.graph.value_info)
    assert [p for p in os.listdir(tmp_path) if p.startswith(".shapeinfer-")] == []


def test_cli_input_shape(tmp_path):
    out = tmp_path / "o.onnx"
    args = [FIXTURE, "--input-shape", "input_ids=1,n", "--input-shape", "attention_mask=1,n", "-o", str(out)]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert "[1,n+1,4,4]" in r.output
    dims = onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == [1, "n"]


@pytest.mark.parametrize("args", [["--help"], ["infer", "--help"]])
def test_cli_help(args):
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0
    assert "Usage" in r.output


def test_cli_invalid_model_exit_1(tmp_path, capsys):
    path = save(single_node_model("Reshape", 14, [5, 6], [np.array([4, -1], dtype=np.int64)]), tmp_path / "bad.onnx")
    out = tmp_path / "out.onnx"
    code = main([path, "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "reshape_node" in err and "Reshape" in err
    assert not out.exists()


@pytest.mark.parametrize(
    "make, expect",
    [
        (lambda p: p / "missing.onnx", "cannot read"),
        (lambda p: p, "is a directory"),
        (lambda p: _write(p / "empty.onnx", b""), "empty"),
        (lambda p: _write(p / "junk.onnx", bytes(range(256)) * 3), "not an ONNX model"),
        (lambda p: _write(p / "text.onnx", b"hello, not a model"), "not an ONNX model"),
    ],
    ids=["missing", "directory", "empty", "random_bytes", "text"],
)
def test_cli_unreadable_input_exit_2(tmp_path, capsys, make, expect):
    code = main([str(make(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2
    assert expect in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [["--bogus"], ["--input-shape", "nonsense"], ["--input-shape", "nope=1,2"], ["--input-shape", "input_ids=1,-3"]],
    ids=["unknown_option", "no_equals", "unknown_input", "negative_dim"],
)
def test_cli_bad_options_exit_2(capsys, args):
    code = main([FIXTURE] + args)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and "Traceback" not in err


def test_cli_refuses_to_overwrite_input(tmp_path, capsys):
    path = save(onnx.load(FIXTURE), tmp_path / "m.onnx")
    before = _digest(path)
    assert main([path, "-o", path]) == 2
    assert _digest(path) == before


def test_assume_nonempty_is_opt_in_and_reported():
    """Reshape back to Shape(x) after a broadcast: exact only if empty dims are ruled out."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Flatten", ["x"], ["f"], axis=0),
        helper.make_node("Reshape", ["f", "s"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["A", "B"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    strict = shapeinfer.infer(model)
    # x = [0, 0]: f = [1, 0], s = [0, 0] copies f's dims -> y = [1, 0], not [A, B] = [0, 0]:
    # strict inference says so with the indicator of A == 0.
    assert strict.shape_strs("y") == ["A+iszero(A)", "B"] and strict.assumptions == []
    assumed = shapeinfer.infer(model, assume_nonempty=True)
    assert assumed.shape_strs("y") == ["A", "B"]
    assert assumed.assumptions
    r = CliRunner().invoke(cli, [FIXTURE, "--assume-nonempty"])
    assert r.exit_code == 0 and "assumption: no tensor is empty" in r.output


def test_custom_domain_op_is_unknown_not_a_crash():
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("MyOp", ["x"], ["u"], domain="com.example", name="custom"),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Reshape", ["u", "s"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)])
    r = shapeinfer.infer(model)
    assert r.shape("u") is None
    # The Reshape's rank and its constant entry survive; N could be 0 (a copy of u's unknown dim).
    assert len(r.shape("y")) == 2 and r.shape_strs("y")[1] == "3" and r.classify("y") == "unknown"
    assert shapeinfer.infer(model, assume_nonempty=True).shape_strs("y") == ["N", "3"]
    assert any("custom" == d.node_name for d in r.diagnostics)


def test_unsorted_graph_is_walked_in_dependency_order_and_a_cycle_is_an_error():
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Reshape", ["x", "s"], ["y"], name="late"),
        helper.make_node("Shape", ["x"], ["s"], name="early"),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    assert shapeinfer.infer(model, assume_nonempty=True).shape_strs("y") == ["N", "3"]

    cyc = [
        helper.make_node("Relu", ["b"], ["a"], name="n1"),
        helper.make_node("Relu", ["a"], ["b"], name="n2"),
        helper.make_node("Relu", ["x"], ["y"], name="n3"),
    ]
    g2 = helper.make_graph(cyc, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(shapeinfer.ShapeInferenceError, match="not a DAG"):
        shapeinfer.infer(helper.make_model(g2, opset_imports=[helper.make_opsetid("", 18)]))


def test_cli_optimize(tmp_path):
    out = tmp_path / "opt.onnx"
    r = CliRunner().invoke(cli, ["optimize", FIXTURE, "-o", str(out), "--explain", "--verify"])
    assert r.exit_code == 0, r.output
    assert "computed reshape shapes" in r.output and "kept Reshape/Expand/Tile" in r.output
    assert "verify (onnxruntime): outputs identical" in r.output
    m = onnx.load(str(out))
    assert len(m.graph.node) < len(onnx.load(FIXTURE).graph.node)
    r = CliRunner().invoke(cli, ["optimize", FIXTURE, "-o", str(tmp_path / "j.onnx"), "--json", "--passes", "fold-constants"])
    assert r.exit_code == 0
    data = json.loads(r.output)
    assert set(data["changes"]) == {"fold-constants"} and data["before"]["nodes"] == 41


@pytest.mark.parametrize("args, code", [
    (["--passes", "nope"], 2),
    (["--skip", "nope"], 2),
], ids=["unknown_pass", "unknown_skip"])
def test_cli_optimize_bad_options(tmp_path, capsys, args, code):
    out = tmp_path / "o.onnx"
    assert main(["optimize", FIXTURE, "-o", str(out)] + args) == code
    assert not out.exists()
    assert "Traceback" not in capsys.readouterr().err


def test_cli_optimize_invalid_model_writes_nothing(tmp_path, capsys):
    path = save(single_node_model("Reshape", 14, [5, 6], [np.array([4, -1], dtype=np.int64)]), tmp_path / "bad.onnx")
    out = tmp_path / "o.onnx"
    assert main(["optimize", path, "-o", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert "reshape_node" in err and "Traceback" not in err


def test_cli_optimize_help():
    r = CliRunner().invoke(cli, ["optimize", "--help"])
    assert r.exit_code == 0 and "--verify" in r.output


def test_cli_optimize_verify_with_given_sizes(tmp_path, capsys):
    out = tmp_path / "o.onnx"
    assert main(["optimize", FIXTURE, "-o", str(out), "--verify", "--bind", "seq=4,9,2"]) == 0
    text = capsys.readouterr().out
    assert "seq=4" in text and "seq=9" in text and "outputs identical" in text
    assert main(["optimize", FIXTURE, "-o", str(out), "--verify", "--bind", "seq=x"]) == 2


def test_progress_line_is_rewritten_on_a_terminal_and_throttled_in_logs():
    import io

    from shapeinfer_cli.main import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    p = Progress(after=0.0, stream=tty)
    p("round 1, pass 1/3: fold-constants")
    p("round 1, pass 2/3: dedupe")
    p.done()
    text = tty.getvalue()
    assert text.count("\r") >= 3 and "\n" not in text and "dedupe" in text
    assert text.endswith("\r")  # the status line is cleared before the report prints

    log = io.StringIO()
    p = Progress(after=0.0, stream=log)
    for k in range(50):
        p(f"step {k}")
    assert log.getvalue().count("\n") == 1  # a log gets at most a line a second
    quiet = io.StringIO()
    p = Progress(after=60.0, stream=quiet)
    p("fast run")
    assert quiet.getvalue() == ""


def test_the_table_shows_the_plain_form_and_says_the_zero_case():
    """bert_dynamo's [batch,4,seq,8] -> [-1,seq,8] is exact at every size with iszero(seq); the
    table shows the plain form (seq >= 1), marks the dims that differ at seq = 0 and says the
    case; --json carries the exact shape, the plain one and the cases."""
    path = os.path.join(os.path.dirname(FIXTURE), "corpus", "bert_dynamo.onnx")
    r = CliRunner().invoke(cli, [path])
    assert r.exit_code == 0, r.output
    assert "[4*batch^,seq^,8]" in r.output and "^: another value where seq = 0" in r.output
    assert "iszero" not in r.output.split("^: another value")[0]
    data = json.loads(CliRunner().invoke(cli, [path, "--json"]).output)
    outs = [o for n in data["nodes"] for o in n["outputs"] if o.get("zero_cases")]
    assert outs and outs[0]["plain_shape"] == ["4*batch", "seq", 8] and outs[0]["zero_cases"] == ["seq = 0"]
    exact = [d if isinstance(d, int) else parse(d) for d in outs[0]["shape"]]
    for seq in (0, 1, 3):  # the exact shape: [0,4,8] at seq = 0, else [4*batch, seq, 8]
        got = [evaluate_shape([d], {"batch": 2, "seq": seq})[0] for d in exact]
        assert got == ([0, 4, 8] if seq == 0 else [8, seq, 8])
