"""check as a CI gate: the sizes a team runs at (--dims), codes to ignore, a baseline of accepted
findings, folders of models, streamed text, and findings that name what to fix."""

import json
import os
import shutil

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from shapeinfer.checker import check
from shapeinfer.errors import InputShapeError
from shapeinfer.infer.overrides import parse_dims_args
from shapeinfer_cli.main import cli

HERE = os.path.dirname(__file__)
CORPUS = os.path.join(HERE, "..", "fixtures", "corpus")
BERT = os.path.join(CORPUS, "bert_classic.onnx")
SWIN = os.path.join(CORPUS, "swin_classic.onnx")
H = '<ir_version: 9, opset_import: ["" : 18]>\n'
BAKED = H + ('g (float[batch,seq,32] x) => (float[batch,seq,4,8] y) '
             '{ s = Constant<value = int64[4] {0, 5, 4, 8}>() ["/attn/Reshape"] y = Reshape(x, s) }')


def _save(tmp_path, text, name):
    path = str(tmp_path / name)
    onnx.save(onnx.parser.parse_model(text), path)
    return path


@pytest.mark.parametrize("item,name,lo,hi,values", [
    ("seq=1..4096", "seq", 1, 4096, None),
    ("seq=128", "seq", 128, 128, None),
    ("batch=1,2,4", "batch", 1, 4, (1, 2, 4)),
    ("a*b=3", "a*b", 3, 3, None),  # (an opaque name, matched literally)
    ("x=1=2..3", "x=1", 2, 3, None),  # (a name holding '=': the longest one the item starts with)
])
def test_dims_syntax(item, name, lo, hi, values):
    got = parse_dims_args([item], {"seq", "batch", "a*b", "x", "x=1"})
    assert list(got) == [name] and (got[name].lo, got[name].hi, got[name].values) == (lo, hi, values)


@pytest.mark.parametrize("items,message", [
    (["foo=3"], "they name: 'batch', 'seq'"),
    (["seq=3", "seq=4"], "given twice"),
    (["seq=9..2"], "empty"),
    (["seq=-1"], "not a size"),
    (["seq="], "no size given"),
    (["seq=1.5"], "not a size"),
])
def test_dims_refused_with_what_was_expected(items, message):
    with pytest.raises(InputShapeError, match=message):
        parse_dims_args(items, {"seq", "batch"})


def test_dims_make_a_failure_at_the_sizes_run_an_error_and_drop_the_others(tmp_path):
    assert check(BERT, dims={"seq": "1..64"}).findings == []  # (inside the contract: nothing to say)
    report = check(BERT, dims={"seq": "1..512"})
    assert [(f.severity, f.code) for f in report.findings] == [("error", "input-bound")], report.findings
    assert "--dims seq=1..512 includes seq=65" in report.findings[0].message and report.dims == {"seq": "1..512"}
    baked = onnx.parser.parse_model(BAKED)
    assert check(baked, dims={"seq": 5}).ok
    report = check(baked, dims={"seq": [4, 5]})
    assert not report.ok and "includes seq=4" in report.errors[0].message
    # a size warning of an open requirement is an error where the sizes the user runs at break it
    report = check(SWIN, dims={"batch": 1, "height": 7, "width": 7})
    found = [f for f in report.errors if f.code == "conditional-shape"]
    assert found and "fails for" in found[0].message and "Reshape_9" in found[0].node, report.findings
    assert check(SWIN, dims={"batch": 1, "height": 224, "width": 224}).ok
    with pytest.raises(InputShapeError):
        check(BERT, dims={"sequence": "1..8"})


def test_dims_over_many_models_apply_where_named_and_a_name_none_uses_is_a_usage_error(tmp_path):
    baked = _save(tmp_path, BAKED, "baked.onnx")
    runner = CliRunner()
    r = runner.invoke(cli, ["check", BERT, baked, "--dims", "seq=1..64"])
    assert r.exit_code == 1 and "includes seq=1" in r.output and "bert_classic.onnx: ok" in r.output, r.output
    r = runner.invoke(cli, ["check", BERT, baked, "--dims", "height=1..64"])
    assert r.exit_code == 2 and "no model checked names that dim" in r.output


def test_ignore_baseline_and_folders(tmp_path):
    folder = tmp_path / "models"
    (folder / "sub").mkdir(parents=True)
    _save(folder, BAKED, "baked.onnx")
    shutil.copy(BERT, folder / "sub" / "bert.onnx")
    runner = CliRunner()
    r = runner.invoke(cli, ["check", str(folder)])
    assert r.exit_code == 1 and "baked.onnx" in r.output and "bert.onnx" not in r.output, r.output
    r = runner.invoke(cli, ["check", "-r", str(folder)])
    assert "bert.onnx" in r.output and "[input-bound]" in r.output
    r = runner.invoke(cli, ["check", "-r", str(folder), "--ignore", "baked-in-size,input-bound"])
    assert r.exit_code == 0 and "(+1 ignored)" in r.output, r.output
    base = str(tmp_path / "accepted.json")
    r = runner.invoke(cli, ["check", "-r", str(folder), "--baseline", base, "--update-baseline"])
    assert r.exit_code == 0 and json.load(open(base))["shapeinfer_baseline"] == 1
    r = runner.invoke(cli, ["check", "-r", str(folder), "--baseline", base])
    assert r.exit_code == 0 and "accepted by the baseline" in r.output and "error:" not in r.output, r.output
    # a new finding (another model with the export bug) still fails the build
    _save(folder, BAKED, "baked2.onnx")
    r = runner.invoke(cli, ["check", "-r", str(folder), "--baseline", base])
    assert r.exit_code == 1 and "baked2.onnx: error: [baked-in-size]" in r.output, r.output
    r = runner.invoke(cli, ["check", str(tmp_path / "nothing-here"), "--baseline", str(tmp_path / "none.json")])
    assert r.exit_code == 2 and "does not exist" in r.output
    (tmp_path / "empty").mkdir()
    r = runner.invoke(cli, ["check", str(tmp_path / "empty")])
    assert r.exit_code == 2 and "holds no *.onnx" in r.output
    r = runner.invoke(cli, ["check", BERT, "--ignore", "Not A Code"])
    assert r.exit_code == 2
    r = runner.invoke(cli, ["check", BERT, "--update-baseline"])
    assert r.exit_code == 2 and "--baseline FILE" in r.output


def test_a_broken_baseline_is_a_usage_error_and_nothing_is_written(tmp_path):
    base = tmp_path / "b.json"
    for text in ("{", '{"findings": []}', '{"shapeinfer_baseline": 1, "findings": [{"model": 1}]}'):
        base.write_text(text)
        r = CliRunner().invoke(cli, ["check", BERT, "--baseline", str(base), "-o", str(tmp_path / "r.txt")])
        assert r.exit_code == 2 and not (tmp_path / "r.txt").exists(), r.output


def test_missing_shape_names_the_tensors(tmp_path):
    m = onnx.parser.parse_model(H + "g (float[2] x) => (float y, float z) { y = Relu(x) z = Neg(x) }")
    for o in m.graph.output:
        o.type.tensor_type.ClearField("shape")
    found = [f for f in check(m).findings if f.code == "missing-shape"]
    assert found and found[0].message.endswith("('y', 'z')"), found


def test_json_and_junit_carry_codes_contract_and_dims():
    runner = CliRunner()
    data = json.loads(runner.invoke(cli, ["check", BERT, "--format", "json", "--dims", "seq=1..128"]).output)
    model = data["models"][0]
    assert model["dims"] == {"seq": "1..128"} and model["contract"]["runs_when"] == "1 <= seq <= 64"
    assert [f["code"] for f in model["findings"]] == ["input-bound"] and data["exit_code"] == 1
    junit = runner.invoke(cli, ["check", BERT, "--format", "junit"]).output
    assert "[input-bound]" in junit and 'name="runs_when"' in junit
    assert np.isfinite(model["seconds"])


def test_input_shape_fixes_a_shape_the_longest_input_name_first(tmp_path):
    """tf2onnx names inputs input:0: NAME:DIMS takes the longest input name that fits."""
    m = onnx.parser.parse_model(BAKED)
    m.graph.input[0].name = "x:0"
    m.graph.node[1].input[0] = "x:0"
    path = str(tmp_path / "tf.onnx")
    onnx.save(m, path)
    runner = CliRunner()
    r = runner.invoke(cli, ["check", path, "--input-shape", "x:0:2,5,32"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["check", path, "--input-shape", "x:0=2,6,32"])
    assert r.exit_code == 1 and "[shape-error]" in r.output, r.output
    r = runner.invoke(cli, ["check", path, "--input-shape", "y:2"])
    assert r.exit_code == 2 and "no input named 'y'" in r.output


def test_cost_takes_the_dims_syntax_one_size_evaluates_a_range_sweeps():
    runner = CliRunner()
    one = runner.invoke(cli, ["cost", BERT, "--dims", "seq=16", "--dims", "batch=1", "--json"])
    bound = runner.invoke(cli, ["cost", BERT, "--bind", "seq=16", "--bind", "batch=1", "--json"])
    assert one.exit_code == 0 and json.loads(one.output)["total"] == json.loads(bound.output)["total"]
    r = runner.invoke(cli, ["cost", BERT, "--dims", "seq=1..64", "--bind", "batch=2", "--json"])
    sweep = json.loads(r.output)["sweep"]
    sizes = [row["sizes"]["seq"] for row in sweep]
    assert sizes[0] == 1 and sizes[-1] == 64 and len(sizes) <= 12 and sizes == sorted(sizes)
    macs = [row["macs"] for row in sweep]
    assert macs == sorted(macs) and macs[0] > 0
    r = runner.invoke(cli, ["cost", BERT, "--dims", "seq=8,65", "--bind", "batch=1"])
    assert r.exit_code == 0 and "seq=65: the model is invalid" in r.output
    assert runner.invoke(cli, ["cost", BERT, "--dims", "len=3"]).exit_code == 2


def test_optimize_takes_dims_as_an_opt_in_that_says_so_and_verify_samples_them(tmp_path):
    import shapeinfer
    from shapeinfer.optimizer.manager import OptimizeReport

    report = OptimizeReport()
    shapeinfer.optimize(SWIN, dims={"height": "32..64", "width": "32..64"}, report=report)
    said = [a for a in report.assumptions if "--dims" in a]
    assert said and "rewrites assume height >= 32, width >= 32" in said[0], report.assumptions
    out = str(tmp_path / "o.onnx")
    r = CliRunner().invoke(cli, ["optimize", BERT, "-o", out, "--dims", "seq=8..64", "--verify", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    seqs = {run["binding"]["seq"] for run in data["verify"]["runs"] if run["result"] == "ok"}
    assert {8, 64} <= seqs and data["verify"]["outcome"] == "identical"
    assert any("seq=8..64" in a for a in data["assumptions"])
    r = CliRunner().invoke(cli, ["optimize", BERT, "-o", out, "--dims", "len=3"])
    assert r.exit_code == 2
