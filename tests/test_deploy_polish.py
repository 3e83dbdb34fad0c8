"""What engineers coming from onnxsim / onnxslim / polygraphy expect: `optimize --input-shape`,
shapes written into the optimised model (checked against onnxruntime's real shapes), the
before/after report, and a command line that forgives typos and says what is wrong."""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import parser

import shapeinfer
from shapeinfer.optimizer.manager import OptimizeReport
from shapeinfer.symbolic import ParseError, evaluate, free_symbols, parse
from shapeinfer_cli.main import cli, main
from tests import corpus

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "tiny_bert.onnx")


# ------------------------------------------------------------------ shapes in the optimised model


def _written_shapes(model):
    """{name: [int | dim text | None]} of value_info and graph outputs."""
    out = {}
    for vi in list(model.graph.value_info) + list(model.graph.output):
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and tt.HasField("shape"):
            out[vi.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
    return out


def _check_written_against_runs(model, runs, input_names):
    """Run ``model`` with every written tensor exposed at each binding; every written dim must
    be the real size (a dim_param in the input dims evaluated at the binding; another name is
    opaque, and must at least be one size within a run). Returns how many dims were compared."""
    written = _written_shapes(model)
    names = [n for n in written if n not in input_names]
    sess = corpus._session(model, names)
    compared = 0
    for feeds, binding in runs:
        values = sess.run(names, feeds)
        opaque: dict = {}
        for name, arr in zip(names, values):
            dims = written[name]
            assert len(dims) == arr.ndim, (name, dims, arr.shape, binding)
            for d, size in zip(dims, arr.shape):
                if d is None:
                    continue
                if isinstance(d, int):
                    assert d == size, (name, dims, arr.shape, binding)
                    compared += 1
                    continue
                try:
                    expr = parse(d)
                except ParseError:
                    expr = None
                if expr is not None and free_symbols(expr) <= set(binding):
                    assert evaluate(expr, binding) == size, (name, dims, arr.shape, binding)
                    compared += 1
                else:  # an opaque name: one size per run
                    assert opaque.setdefault(d, size) == size, (name, d, opaque[d], size, binding)
    return compared


CORPUS_ENTRIES = [e for e in corpus.entries() if e["model"] in ("gpt2", "llama", "bert", "qwen2_kv", "cnn")][:8]


@pytest.mark.parametrize("entry", CORPUS_ENTRIES, ids=lambda e: e["file"])
def test_optimised_model_carries_every_shape_and_each_is_the_real_one(entry):
    pytest.importorskip("onnxruntime")
    model = onnx.load(os.path.join(entry["dir"], entry["file"]))
    out = shapeinfer.optimize(model)
    produced = {o for n in out.graph.node for o in n.output if o}
    graph_outputs = {o.name for o in out.graph.output}
    described = {vi.name for vi in out.graph.value_info}
    assert produced - graph_outputs <= described, sorted(produced - graph_outputs - described)[:5]
    runs = corpus._bindings(entry, model)
    inputs = {i.name for i in out.graph.input}
    assert _check_written_against_runs(out, runs, inputs) > 0


def test_no_shapes_leaves_value_info_out():
    out = shapeinfer.optimize(onnx.load(FIXTURE), write_shapes=False)
    assert len(out.graph.value_info) == 0


# ------------------------------------------------------------------ optimize --input-shape

ATTENTION = """<ir_version: 9, opset_import: ["" : 18]>
g (float[B,T,16] x) => (float[B,T,16] y) <int64[1] heads = {4}, int64[1] hd = {4}> {
  s = Shape(x)
  b = Shape<start = 0, end = 1>(x)
  t = Shape<start = 1, end = 2>(x)
  shp = Concat<axis = 0>(b, t, heads, hd)
  r = Reshape(x, shp)
  tr = Transpose<perm = [0, 2, 1, 3]>(r)
  back = Transpose<perm = [0, 2, 1, 3]>(tr)
  y = Reshape(back, s)
}"""


def test_input_shape_fixes_inputs_and_folds_what_becomes_static(tmp_path):
    pytest.importorskip("onnxruntime")
    path = tmp_path / "attn.onnx"
    onnx.save(parser.parse_model(ATTENTION), path)
    out = tmp_path / "fixed.onnx"
    r = CliRunner().invoke(cli, ["optimize", str(path), "-o", str(out), "--input-shape", "x=2,5,16", "--verify"])
    assert r.exit_code == 0, r.output
    assert "inputs fixed: x=[2,5,16]" in r.output
    assert "outputs identical" in r.output
    m = onnx.load(out)
    assert [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == [2, 5, 16]
    assert [d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim] == [2, 5, 16]
    ops = [n.op_type for n in m.graph.node]
    assert "Shape" not in ops and "Concat" not in ops  # every shape is a constant now
    # The same model without --input-shape keeps B and T symbolic.
    r = CliRunner().invoke(cli, ["optimize", str(path), "-o", str(tmp_path / "sym.onnx")])
    assert r.exit_code == 0, r.output
    m = onnx.load(tmp_path / "sym.onnx")
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "B"


def test_input_shape_with_a_symbol_verifies_at_its_bindings(tmp_path):
    pytest.importorskip("onnxruntime")
    path = tmp_path / "attn.onnx"
    onnx.save(parser.parse_model(ATTENTION), path)
    out = tmp_path / "fixed.onnx"
    code = main(["optimize", str(path), "-o", str(out), "--input-shape", "x=1,T,16", "--verify", "--bind", "T=0,1,7"])
    assert code == 0
    m = onnx.load(out)
    assert [d.dim_value or d.dim_param for d in m.graph.input[0].type.tensor_type.shape.dim] == [1, "T", 16]


# Input names as exporters write them: tf2onnx's `input:0`, a name holding `=`, one holding both,
# and names that are prefixes of one another.
NAMED_INPUTS = ["x", "input", "input:0", "k=v", "a:b=c", "a", "a:b"]


def _named_inputs_model(tmp_path):
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [f"d{k}", 4]) for k, n in enumerate(NAMED_INPUTS)]
    nodes = [helper.make_node("Add", [NAMED_INPUTS[0], NAMED_INPUTS[1]], ["s1"])]
    for k, n in enumerate(NAMED_INPUTS[2:], 2):
        nodes.append(helper.make_node("Add", [f"s{k - 1}", n], [f"s{k}"]))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(f"s{len(NAMED_INPUTS) - 1}",
                                                                             TensorProto.FLOAT, None)])
    path = tmp_path / "named.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


@pytest.mark.parametrize("sep", [":", "="])
@pytest.mark.parametrize("name", NAMED_INPUTS)
def test_input_shape_names_the_longest_input_followed_by_a_colon_or_an_equals_sign(tmp_path, capsys, name, sep):
    path = _named_inputs_model(tmp_path)
    code = main(["infer", path, "--json", "--input-shape", f"{name}{sep}1,4"])
    assert code == 0, capsys.readouterr().err
    shapes = {t["name"]: t["shape"] for t in json.loads(capsys.readouterr().out)["inputs"]}
    assert shapes[name] == [1, 4]
    assert all(s != [1, 4] for n, s in shapes.items() if n != name)
    for command in (["cost", path, "--json"], ["optimize", path, "-o", str(tmp_path / "o.onnx"), "--json"]):
        assert main(command + ["--input-shape", f"{name}{sep}1,4"]) == 0, capsys.readouterr().err
    assert [d.dim_value for d in onnx.load(tmp_path / "o.onnx").graph.input[NAMED_INPUTS.index(name)]
            .type.tensor_type.shape.dim] == [1, 4]
    assert shapeinfer.cost(path, input_shapes={name: [1, 4]}).macs == 0  # (the API takes names as they are)


@pytest.mark.parametrize("item, expect", [
    ("a:b:2,4", {"a:b": [2, 4]}),       # the longest name followed by a separator wins
    ("a:b=c:2,4", {"a:b=c": [2, 4]}),
    ("a:b=c=2,4", {"a:b=c": [2, 4]}),
    ("a:b=2,4", {"a:b": [2, 4]}),       # `a:b=c` is not followed by `:` or `=` here
    ("input:0:N,4", {"input:0": ["N", 4]}),
    ("input:N,4", {"input": ["N", 4]}),
    ("k=v=1,4", {"k=v": [1, 4]}),
    ("x:", {"x": []}),
])
def test_input_shape_items_resolve_against_the_input_names(item, expect):
    from shapeinfer.infer.overrides import parse_input_shape_args

    assert parse_input_shape_args([item], NAMED_INPUTS) == expect


@pytest.mark.parametrize("items, says", [
    (["nope:1,4"], "no input named 'nope'"),
    (["nope=1,4"], "no input named 'nope'"),
    (["inputs:1,4"], "no input named 'inputs'"),
    (["k:1,4"], "no input named 'k'"),
    (["1,4"], "no input named '1,4'"),
    (["x:1,4", "x=2,4"], "given twice"),
    (["input:0:1,4", "input:0=1,4"], "given twice"),
    (["x:1,,4"], "empty dim"),
    (["x:1,-4"], "cannot be negative"),
])
@pytest.mark.parametrize("command", ["infer", "optimize", "cost"])
def test_input_shape_naming_no_input_is_a_usage_error_listing_the_inputs(tmp_path, capsys, command, items, says):
    path = _named_inputs_model(tmp_path)
    out = tmp_path / "o.onnx"
    argv = [command, path] + (["-o", str(out)] if command == "optimize" else [])
    for item in items:
        argv += ["--input-shape", item]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and not out.exists()
    if "no input named" in says:
        assert all(repr(n) in err for n in NAMED_INPUTS)


def test_api_input_shapes_and_pass_names():
    model = onnx.load(FIXTURE)
    with pytest.raises(TypeError, match="list of dims"):
        shapeinfer.optimize(model, input_shapes={"input_ids": "1,seq"})
    with pytest.raises(TypeError, match="must map"):
        shapeinfer.infer(model, input_shapes=[("input_ids", [1, 2])])
    with pytest.raises(shapeinfer.InputShapeError, match="no input named"):
        shapeinfer.optimize(model, input_shapes={"nope": [1, 2]})
    with pytest.raises(shapeinfer.InputShapeError, match="can be negative"):
        shapeinfer.infer(model, input_shapes={"input_ids": [1, "a-b"]})
    with pytest.raises(shapeinfer.InputShapeError, match="has rank 2"):
        shapeinfer.infer(model, input_shapes={"input_ids": [1, 2, 3]})
    with pytest.raises(shapeinfer.InputShapeError, match="contradict the model") as info:
        shapeinfer.infer(model, input_shapes={"input_ids": [1, 4], "attention_mask": [1, 5]})
    # also the ShapeInferenceError met, for callers that catch that: the node, its op, the rule
    assert isinstance(info.value, shapeinfer.ShapeInferenceError) and info.value.op_type == "Expand"
    report = OptimizeReport()
    shapeinfer.optimize(model, passes="fold-constants, dedupe", report=report)
    assert set(report.changes) == {"fold-constants", "dedupe"}
    with pytest.raises(ValueError, match="unknown pass 'dedup'"):
        shapeinfer.optimize(model, passes="dedup")


def test_report_lists_every_op_and_the_size(tmp_path):
    r = CliRunner().invoke(cli, ["optimize", FIXTURE, "-o", str(tmp_path / "o.onnx")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    model = onnx.load(FIXTURE)
    for op in {n.op_type for n in model.graph.node}:
        assert any(line.split()[:1] == [op] for line in lines), op
    size = next(line for line in lines if line.strip().startswith("size"))
    assert "KiB" in size
    assert "0 changes" not in r.output  # passes that did nothing are not listed


# ------------------------------------------------------------------ the command line


def test_python_m_shapeinfer_runs_the_cli():
    proc = subprocess.run([sys.executable, "-m", "shapeinfer", FIXTURE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "summary:" in proc.stdout


def test_bare_command_prints_usage_without_error(capsys):
    assert main([]) == 0
    captured = capsys.readouterr()
    assert "Usage:" in captured.out and "error" not in captured.err


@pytest.mark.parametrize("word, meant", [("optimise", "optimize"), ("chek", "check"), ("infre", "infer")])
def test_misspelt_command_gets_a_suggestion(capsys, word, meant):
    assert main([word, "model.onnx"]) == 2
    assert f"did you mean `{meant}`?" in capsys.readouterr().err


def test_a_model_named_like_a_command_is_still_a_model(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open(FIXTURE, "rb") as src, open("optimise", "wb") as dst:
        dst.write(src.read())
    assert main(["optimise"]) == 0  # an existing file: inferred, not corrected


@pytest.mark.parametrize("command", [[], ["optimize"]])
def test_output_in_a_missing_folder_names_that_path(capsys, command):
    assert main(command + [FIXTURE, "-o", "/missing/dir/x.onnx"]) == 2
    err = capsys.readouterr().err
    assert "/missing/dir" in err and ".tmp" not in err


@pytest.mark.parametrize("args, message", [
    (["--input-shape", "input_ids=1,a-b"], "can be negative"),
    (["--input-shape", "input_ids=1,4", "--input-shape", "input_ids=1,5"], "given twice"),
    (["--input-shape", "input_ids=1,4", "--input-shape", "attention_mask=1,5"], "contradict the model"),
    (["--input-shape", "input_ids=1,2,3"], "has rank 2"),
    (["--input-shape", "nope=1"], "no input named"),
])
@pytest.mark.parametrize("command", ["infer", "optimize"])
def test_bad_input_shapes_are_usage_errors(tmp_path, capsys, command, args, message):
    out = tmp_path / "o.onnx"
    argv = [command, FIXTURE] + (["-o", str(out)] if command == "optimize" else []) + args
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "invalid model" not in err
    assert not out.exists()


def test_verify_says_when_it_fell_back_to_the_reference_evaluator(tmp_path):
    model = parser.parse_model("""<ir_version: 9, opset_import: ["" : 18]>
        g (float[N] x) => (float[N] y) { a = Identity(x)  y = Relu(a) }""")
    model.ir_version = 99  # newer than onnxruntime reads
    path = tmp_path / "new_ir.onnx"
    onnx.save(model, path)
    r = CliRunner().invoke(cli, ["optimize", str(path), "-o", str(tmp_path / "o.onnx"), "--verify"])
    assert "verify (onnx.reference)" in r.output, r.output
    assert "onnxruntime could not load the original model" in r.output
    assert "IR version" in r.output or "ir_version" in r.output.lower()


def test_py_typed_marker_ships():
    assert os.path.exists(os.path.join(os.path.dirname(shapeinfer.__file__), "py.typed"))


def test_optimize_report_is_at_the_top_level():
    assert issubclass(shapeinfer.UnknownPassError, ValueError)
    assert shapeinfer.OptimizeReport is OptimizeReport
    assert shapeinfer.CostReport is type(shapeinfer.cost(onnx.load(FIXTURE)))
    assert {"optimize", "check", "cost", "OptimizeReport", "CheckReport", "CostReport"} <= set(shapeinfer.__all__)


# ------------------------------------------------------------------ the terminal

T5 = os.path.join(HERE, "..", "fixtures", "corpus", "t5_classic.onnx")
SWIN = os.path.join(HERE, "..", "fixtures", "corpus", "swin_classic.onnx")


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize("path", [T5, SWIN])
def test_the_table_fits_the_terminal_and_wide_keeps_it_whole(path, columns):
    r = CliRunner().invoke(cli, [path], env={"COLUMNS": str(columns)})
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.output.splitlines()) <= columns
    assert "…" in r.output  # something had to be cut
    wide = CliRunner().invoke(cli, [path, "--wide"], env={"COLUMNS": str(columns)})
    assert "…" not in wide.output and max(len(line) for line in wide.output.splitlines()) > columns


def test_a_pipe_gets_whole_lines_and_no_colour():
    r = CliRunner().invoke(cli, [T5], env={"COLUMNS": ""})
    assert "…" not in r.output and "\x1b[" not in r.output


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    from shapeinfer_cli import main as cli_main

    monkeypatch.setattr(cli_main.sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert cli_main.use_color()
    monkeypatch.setenv("NO_COLOR", "1")
    assert not cli_main.use_color()


def test_rows_of_a_repeated_block_are_one_counted_row():
    r = CliRunner().invoke(cli, [T5, "--wide"])
    model = onnx.load(T5)
    reshapes = [n for n in model.graph.node if n.op_type in ("Reshape", "Expand", "Tile")]
    rows = [line for line in r.output.split("Expand / Reshape / Tile")[1].splitlines()[2:] if line.startswith("  /")
            or line.startswith("  R")]
    counted = sum(int(w[1:]) for line in rows for w in line.split() if w.startswith("x") and w[1:].isdigit())
    uncounted = sum(1 for line in rows if not any(w.startswith("x") and w[1:].isdigit() for w in line.split()))
    assert counted + uncounted == len(reshapes) and len(rows) < len(reshapes)


def test_the_target_column_shows_the_shape_value_not_its_size():
    r = CliRunner().invoke(cli, [FIXTURE, "--wide"])
    assert "[batch,seq+1,16] -> [batch,seq+1,4,-1]" in r.output, r.output
    assert "[batch,seq+1,16], [4]" not in r.output


def test_op_and_node_filters():
    r = CliRunner().invoke(cli, [FIXTURE, "--op", "MatMul", "--op", "Softmax", "--wide"])
    assert r.exit_code == 0
    section = r.output.split("MatMul / Softmax")[1]
    assert "MatMul" in section and "Softmax" in section and "Reshape " not in section
    r = CliRunner().invoke(cli, [FIXTURE, "--node", "/attn/*", "--wide"])
    section = r.output.split("Expand / Reshape / Tile")[1].split("summary:")[0]
    assert "/attn/query/Reshape" in section and "/cls/Tile" not in section
    r = CliRunner().invoke(cli, [FIXTURE, "--node", "nothing*"])
    assert "(no such node)" in r.output


def test_summary_counts_minted_symbols_instead_of_listing_them():
    model = parser.parse_model("""<ir_version: 9, opset_import: ["" : 18]>
        g (float[N] x) => (int64[?,?] y) { y = NonZero(x) }""")
    result = shapeinfer.infer(model)
    from shapeinfer_cli.render import render_table

    text = render_table(result, "m.onnx")
    line = next(line for line in text.splitlines() if line.startswith("summary:"))
    assert "1 minted for unknown dims" in line and "nonzero" not in line


def test_json_has_a_schema_version_and_integer_static_dims():
    import json

    data = json.loads(CliRunner().invoke(cli, [FIXTURE, "--json"]).output)
    assert data["schema_version"] == 1
    shapes = [o["shape"] for n in data["nodes"] for o in n["outputs"]]
    assert all(isinstance(d, (int, str)) for s in shapes for d in s)
    assert any(isinstance(d, int) for s in shapes for d in s)
    assert all(not (isinstance(d, str) and d.isdigit()) for s in shapes for d in s)
    reshape = next(n for n in data["nodes"] if n["name"] == "/attn/query/Reshape")
    assert reshape["inputs"][1]["value"] == ["batch", "seq+1", 4, -1]


def test_check_and_optimize_json_have_the_schema_version(tmp_path):
    import json

    r = CliRunner().invoke(cli, ["check", FIXTURE, "--format", "json"])
    assert json.loads(r.output)["schema_version"] == 1
    r = CliRunner().invoke(cli, ["optimize", FIXTURE, "-o", str(tmp_path / "o.onnx"), "--json"])
    assert json.loads(r.output)["schema_version"] == 1


# ------------------------------------------------------------------ findings


def test_findings_say_the_breaking_sizes_first_with_only_the_symbols_that_matter():
    from shapeinfer.checker import check

    # batch plays no part: the Reshape breaks where S is not a multiple of 4, whatever B is
    model = parser.parse_model("""<ir_version: 9, opset_import: ["" : 18]>
        g (float[B,S] x) => (float[A,C,D] y) <int64[3] s = {0, -1, 4}> { y = Reshape(x, s) }""")
    report = check(model)
    f = next(f for f in report.findings if f.code == "input-multiple")
    head = f.message.split(" it fails", 1)[0]
    assert "at S=" in head and "B=" not in head, f.message
    size = int(head.split("at S=")[1])
    assert size % 4 != 0 and size < 16  # the smallest size that breaks it, not a random large one


def test_a_finding_repeated_on_every_layer_is_one_line_in_text():
    r = CliRunner().invoke(cli, ["check", os.path.join(HERE, "..", "fixtures", "corpus", "gpt2_classic.onnx"),
                                 "--include-empty"])  # (its repeated warnings hold only for an empty input)
    lines = r.output.splitlines()
    assert any("the same on" in line for line in lines)
    messages = [line.split("): ", 1)[-1] for line in lines if "warning:" in line]
    assert len(messages) == len(set(messages))


def test_junit_under_strict_says_warnings_fail_not_error_warning():
    r = CliRunner().invoke(cli, ["check", os.path.join(HERE, "..", "fixtures", "corpus", "gpt2_classic.onnx"),
                                 "--strict", "--format", "junit", "--include-empty"])
    assert "which fail under --strict" in r.output and "error(s): warning" not in r.output


# ------------------------------------------------------------------ identifier dim names


def test_identifier_dim_names_are_identifiers_mapped_back_to_the_real_sizes():
    import json
    import re

    pytest.importorskip("onnxruntime")
    entry = next(e for e in corpus.entries() if e["file"] == "swin_classic.onnx")
    model = onnx.load(os.path.join(entry["dir"], entry["file"]))
    out = shapeinfer.optimize(model, dim_names="identifiers")
    props = {p.key: p.value for p in out.metadata_props}
    assert "shapeinfer.dim_syntax" not in props  # read back, the names are opaque
    mapping = json.loads(props["shapeinfer.dim_names"])
    assert mapping and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) for k in mapping)
    written = _written_shapes(out)
    params = {d for dims in written.values() for d in dims if isinstance(d, str)}
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) for p in params)
    assert set(mapping) <= params
    # the same model with the names mapped back to expressions: every dim is the real size
    for vi in list(out.graph.value_info) + list(out.graph.output):
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in mapping:
                d.dim_param = mapping[d.dim_param]
    inputs = {i.name for i in out.graph.input}
    assert _check_written_against_runs(out, corpus._bindings(entry, model), inputs) > 0


def test_identifier_names_are_stable_and_distinct():
    from shapeinfer.infer.dim_names import identifier_dim_names

    def renamed(exprs):
        m = parser.parse_model("""<ir_version: 9, opset_import: ["" : 18]>
            g (float[N] x) => (float[N] y) { y = Relu(x) }""")
        for k, e in enumerate(exprs):
            vi = onnx.helper.make_tensor_value_info(f"t{k}", onnx.TensorProto.FLOAT, [e])
            m.graph.value_info.append(vi)
        return identifier_dim_names(m), [vi.type.tensor_type.shape.dim[0].dim_param for vi in m.graph.value_info]

    exprs = ["a+b*c", "(a+b)*c", "batch*seq", "2*seq+1", "N"]
    mapping, names = renamed(exprs)
    assert len(set(names)) == len(exprs)
    assert names[2] == "batch_x_seq" and names[4] == "N" and names[3].startswith("d_")
    assert renamed(list(reversed(exprs)))[0] == mapping  # the same names whatever the order
    assert shapeinfer.infer_shapes(onnx.load(FIXTURE), dim_names="identifiers").metadata_props
    with pytest.raises(ValueError, match="dim_names"):
        shapeinfer.optimize(onnx.load(FIXTURE), dim_names="short")


@pytest.mark.parametrize("command", ["infer", "optimize"])
def test_dim_names_option_on_the_command_line(tmp_path, command):
    out = tmp_path / "o.onnx"
    r = CliRunner().invoke(cli, [command, FIXTURE, "-o", str(out), "--dim-names", "identifiers"])
    assert r.exit_code == 0, r.output
    m = onnx.load(out)
    assert any(p.key == "shapeinfer.dim_names" for p in m.metadata_props)
    params = {d.dim_param for vi in list(m.graph.value_info) + list(m.graph.output)
              for d in vi.type.tensor_type.shape.dim if d.dim_param}
    assert "batch_x_seq_plus_batch" in params or any(p.startswith("batch_x") for p in params), params


# ------------------------------------------------------------------ regressions (an adversarial review)

H18 = '<ir_version: 8, opset_import: ["" : 17]>\n'


def _dims(vi):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in vi.type.tensor_type.shape.dim]


def test_a_placeholder_shared_by_different_unknown_dims_gives_way():
    """out_dim_0 declared on [C*x_1] and on [x_1,C]: kept on both it would claim them equal."""
    pytest.importorskip("onnxruntime")
    model = parser.parse_model(H18 + """g (float[?,C] x) => (float[out_dim_0] a, float[out_dim_0,C] b) {
        c = Constant<value = int64[1] {-1}>()  a = Reshape(x, c)  b = Relu(x) }""")
    out = shapeinfer.optimize(model)
    a, b = (_dims(o) for o in out.graph.output)
    assert a[0] != b[0] and "out_dim_0" not in (a[0], b[0])
    assert _check_written_against_runs(out, [({"x": np.zeros((2, 3), np.float32)}, {"C": 3})], {"x"}) > 0


def test_a_placeholder_for_one_unknown_dim_is_kept():
    model = parser.parse_model(H18 + """g (float[?,C] x) => (float[rows,C] b) { b = Relu(x) }""")
    assert _dims(shapeinfer.optimize(model).graph.output[0])[0] == "rows"


def test_an_input_dim_name_that_reads_as_a_number_is_written_quoted():
    pytest.importorskip("onnxruntime")
    model = parser.parse_model(H18 + """g (float[B,"1"] x) => (float[B,"1"] y) { t = Relu(x)  y = Relu(t) }""")
    out = shapeinfer.optimize(model)
    assert _dims(out.graph.output[0])[1] == "'1'"
    assert parse("'1'") != 1


def test_fixing_one_input_fixes_the_dims_other_inputs_share(tmp_path):
    pytest.importorskip("onnxruntime")
    out = tmp_path / "shared.onnx"
    r = CliRunner().invoke(cli, ["optimize", FIXTURE, "-o", str(out),
                                 "--input-shape", "input_ids=1,seq", "--verify", "--bind", "seq=2,0,5"])
    assert r.exit_code == 0, r.output
    assert "attention_mask=[1,seq]" in r.output and "outputs identical" in r.output
    m = onnx.load(out)
    assert {i.name: _dims(i) for i in m.graph.input} == {"input_ids": [1, "seq"], "attention_mask": [1, "seq"]}
    # in inference too
    result = shapeinfer.infer(onnx.load(FIXTURE), input_shapes={"input_ids": [1, "seq"]})
    assert result.shape("attention_mask")[0] == 1


@pytest.mark.parametrize("text, given, message", [
    ("g (float[N] x) => (float[?] v, int64[?] i) <int64[1] k = {2}> { v, i = TopK(x, k) }", {"x": [1]}, "k = 2"),
    ("g (float[N,M] x) => (float[?,?,?] r) <int64[3] s = {0, -1, 2}> { r = Reshape(x, s) }", {"x": [0, 6]},
     "next to a zero dim"),
])
def test_shapes_under_which_no_run_succeeds_contradict_the_model(text, given, message):
    """Folded, such a node would make onnxruntime refuse the optimised model at load."""
    model = parser.parse_model(H18 + text)
    with pytest.raises(shapeinfer.InputShapeError, match=message):
        shapeinfer.optimize(model, input_shapes=given)


def test_topk_larger_than_a_symbolic_axis_is_a_condition_check_finds():
    from shapeinfer.checker import check

    model = parser.parse_model(H18 + "g (float[N] x) => (float[?] v, int64[?] i) <int64[1] k = {2}> { v, i = TopK(x, k) }")
    report = check(model)  # (a lower bound: the contract says it, no finding)
    assert report.contract["runs_when"] == "N >= 2" and not report.findings, report.findings
    f = [f for f in check(model, include_empty=True).findings if f.code == "conditional-shape"]
    assert f and f[0].message.startswith("fails for N=0:"), f  # (the empty input, on request)


def test_identifier_names_of_opaque_input_dims_map_to_their_printed_form():
    import json

    model = parser.parse_model(H18 + """g (float[B,"2*seq"] x, float[B,seq] z) => (float[?,?] y) {
        y = Concat<axis=1>(x, z) }""")
    out = shapeinfer.optimize(model, dim_names="identifiers")
    mapping = json.loads(next(p.value for p in out.metadata_props if p.key == "shapeinfer.dim_names"))
    x_dim = _dims(out.graph.input[0])[1]
    y_dim = _dims(out.graph.output[0])[1]
    assert free_symbols(parse(mapping[x_dim])) == {"2*seq"}  # one opaque name, not 2 times seq
    assert free_symbols(parse(mapping[y_dim])) == {"2*seq", "seq"}


def test_an_unsorted_model_comes_out_sorted():
    model = parser.parse_model(H18 + "g (float[B,S] x) => (float[?,?] y) { y = Relu(t)  t = Transpose(x) }")
    out = shapeinfer.optimize(model)
    assert [n.op_type for n in out.graph.node] == ["Transpose", "Relu"]
    onnx.checker.check_model(out, full_check=True)


def test_table_cells_are_safe_and_measured_in_terminal_cells():
    from shapeinfer_cli.render import _cells, _table

    rows = [("节点节点节点节点", "Reshape", "[批次,序列]"), ("evil\x1b[31mRED\nX", "Expand", "[1,2]")]
    lines = _table(rows, ("node", "op", "shape"), width=30, first=0)
    assert all(_cells(line) <= 30 for line in lines), lines
    assert not any("\x1b" in line or "\n" in line for line in lines)


@pytest.mark.parametrize("args, message", [
    (["optimize", FIXTURE, "-o", "/nonexistent/_x.onnx", "--verify", "--bind", "seq=0", "--bind", "seq=1"],
     "given twice"),
    (["infer", FIXTURE, "--op", ""], "an op type is a name"),
    (["infer", FIXTURE, "--input-shape", "input_ids=１,2"], "input_ids"),
])
def test_cli_messages(capsys, args, message):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_a_dim_with_commas_inside_parentheses():
    r = CliRunner().invoke(cli, [FIXTURE, "--input-shape", "input_ids=1,max(seq,2)",
                                 "--input-shape", "attention_mask=1,max(seq,2)"])
    assert r.exit_code == 0, r.output
    assert "max(2,seq)" in r.output


# ------------------------------------------------------------------ regressions (a second review)

H18b = '<ir_version: 8, opset_import: ["" : 18]>\n'


@pytest.mark.parametrize("wrap, unwrap", [("Optional", "OptionalGetElement"), ("SequenceConstruct", "SequenceAt")])
def test_dims_through_optional_and_sequence_types_stay_themselves(wrap, unwrap):
    """onnx's own inference answers these ops; the private names the dims go in with must not
    come back as dims two unrelated tensors share (Shape(x) - Shape(Transpose(x)) was folded to 0)."""
    ort = pytest.importorskip("onnxruntime")
    at = ", zero" if unwrap == "SequenceAt" else ""
    model = parser.parse_model(H18b + f"""g (float[batch,seq] x) => (int64[2] d) <int64 zero = {{0}}> {{
        t = Transpose(x)  o1 = {wrap}(x)  o2 = {wrap}(t)  y = {unwrap}(o1{at})  y2 = {unwrap}(o2{at})
        s1 = Shape(y)  s2 = Shape(y2)  d = Sub(s1, s2) }}""")
    result = shapeinfer.infer(model)
    assert result.shape_strs("y") == ["batch", "seq"] and result.shape_strs("y2") == ["seq", "batch"]
    out = shapeinfer.optimize(model)
    x = np.zeros((2, 3), np.float32)
    run = [ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
           for m in (model, out)]
    assert run[0].tolist() == run[1].tolist() == [-1, 1]


def test_a_declared_input_dim_name_gives_way_where_inference_proves_it_wrong():
    model = parser.parse_model(H18b + "g (float[batch,seq] x) => (float[batch,seq] y) { y = Transpose(x) }")
    assert _dims(shapeinfer.optimize(model).graph.output[0]) == ["seq", "batch"]
    assert _dims(shapeinfer.infer_shapes(model).graph.output[0]) == ["seq", "batch"]


def test_renamed_input_dims_leave_no_stale_declared_name():
    model = parser.parse_model(H18b + """g (float[batch,seq] ids, float[seq,hid] pos) => (float[batch,hid] y) {
        y = MatMul(ids, pos) }""")
    out = shapeinfer.optimize(model, input_shapes={"ids": ["seq", "batch"]})
    assert {i.name: _dims(i) for i in out.graph.input} == {"ids": ["seq", "batch"], "pos": ["batch", "hid"]}
    assert _dims(out.graph.output[0]) == ["seq", "hid"]


def test_the_shape_of_an_initializer_listed_as_an_input_is_not_given():
    from onnx import numpy_helper

    model = parser.parse_model(H18b + "g (float[N,4] x, float[1,4] w) => (float[N,4] y) { y = Add(x, w) }")
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((1, 4), np.float32), "w"))
    with pytest.raises(shapeinfer.InputShapeError, match="also an initializer"):
        shapeinfer.optimize(model, input_shapes={"w": [3, 4]})


def test_an_optional_graph_output_is_written():
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper as hp

    opt_type = hp.make_optional_type_proto(hp.make_tensor_type_proto(onnx.TensorProto.FLOAT, ["N"]))
    model = hp.make_model(hp.make_graph([hp.make_node("Optional", ["x"], ["y"])], "g",
                                        [hp.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N"])],
                                        [hp.make_value_info("y", opt_type)]),
                          opset_imports=[hp.make_opsetid("", 18)], ir_version=8)
    out = shapeinfer.optimize(model)
    assert out.graph.output[0].type.HasField("optional_type")
    ort.InferenceSession(out.SerializeToString(), providers=["CPUExecutionProvider"])


def test_a_minted_name_never_equals_a_name_inside_a_sequence_type():
    """b's dim comes from the sequence input's declared type ('sequenceat_1'); a's is made up
    by inference, and must not take that name (they were read as one dim and Sub folded to 0)."""
    from onnx import helper as hp

    T = onnx.TensorProto
    seq = hp.make_sequence_type_proto(hp.make_tensor_type_proto(T.FLOAT, ["sequenceat_1"]))
    nodes = [hp.make_node("SequenceConstruct", ["x", "y"], ["s"]), hp.make_node("SequenceAt", ["s", "zero"], ["a"]),
             hp.make_node("SequenceAt", ["t", "zero"], ["b"]), hp.make_node("Shape", ["a"], ["sa"]),
             hp.make_node("Shape", ["b"], ["sb"]), hp.make_node("Sub", ["sa", "sb"], ["d"])]
    graph = hp.make_graph(nodes, "g", [hp.make_tensor_value_info("x", T.FLOAT, ["N"]),
                                       hp.make_tensor_value_info("y", T.FLOAT, ["M"]), hp.make_value_info("t", seq)],
                          [hp.make_tensor_value_info("d", T.INT64, [1])],
                          [onnx.numpy_helper.from_array(np.array(0, np.int64), "zero")])
    model = hp.make_model(graph, opset_imports=[hp.make_opsetid("", 18)], ir_version=8)
    result = shapeinfer.infer(model)
    assert result.shape_strs("a") != result.shape_strs("b")
    assert "Sub" in [n.op_type for n in shapeinfer.optimize(model).graph.node]


def test_a_kept_placeholder_is_an_identifier_and_no_symbol_name():
    model = parser.parse_model(H18b + """g (float[N,3] x) => (float[D0,3] cat, int64[2,"2*N"] nz) {
        cat = Concat<axis = 0>(x, x)  nz = NonZero(x) }""")
    out = shapeinfer.infer_shapes(model)
    dims = {o.name: _dims(o) for o in out.graph.output}
    assert dims["cat"] == ["2*N", 3] and dims["nz"][1] != "2*N"
