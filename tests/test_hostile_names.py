"""Names are data: node names, tensor names, op types, domains and model paths holding control
characters, newlines, escape sequences, XML specials, lone surrogates, very long text or bytes
that are not UTF-8 go through every renderer -- check's text, JSON and JUnit; infer's table and
--json; optimize's report, --explain and --json; cost's table and JSON -- and come out

- in text: with exactly the lines a plain name gives (a name never starts a line), every
  character printable (no escape sequence reaches a terminal), the name shown escaped;
- in JUnit: XML that parses, the name in its escaped form;
- in JSON: the exact name (a byte that is not UTF-8 as the lone surrogate surrogateescape
  makes of it).

A model path that is not UTF-8 runs through every command in a subprocess: no traceback, the
path shown escaped."""

import json
import os
import subprocess
import sys
import textwrap
from xml.etree import ElementTree as ET

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeinfer.modelio.text import one_line
from shapeinfer_cli.main import main

HOSTILE = {
    "c0": "n" + "".join(chr(c) for c in range(0x20)) + "n",
    "del": "a\x7fb",
    "newline": "evil\nerror: [shape-error] forged line",
    "carriage-return": "evil\rforged\r\n",
    "xml": "<&>\"' ]]> <![CDATA[x]]>",
    "ansi": "\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "long": "n" * 5000,
    "unicode-breaks": "a\u2028b\u2029c\x85d\u202eevil",
    "nonchars": "a\ufffe\uffffb",
}
# (a lone surrogate, "a\ud800b": protobuf refuses to hold it in a str; the non-UTF-8 bytes below
# reach the same code paths)
PLAIN = "plainname"
# Stand-ins of the same length as the bytes that replace them in the serialized model.
NON_UTF8 = {"non-utf8": b"ev\xff\xfe\xc3(\x80il\n\x1b[1m"}


def _model(name: str, tensor: str = "r", op_suffix: str = ""):
    """x [b, 6] -> Reshape [-1, 4] (a conditional shape: check warns on the node) -> MatMul
    (MACs for cost) -> a custom-domain op (an unknown op for check, not counted by cost)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 6])
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], [tensor], name=name),
        helper.make_node("MatMul", [tensor, "w"], ["z"], name=name + "_mm"),
        helper.make_node("Op" + op_suffix, ["z"], ["y"], name=name + "_op", domain="com.example" + op_suffix),
    ]
    inits = [numpy_helper.from_array(np.array([-1, 4], np.int64), "shape"),
             numpy_helper.from_array(np.zeros((4, 3), np.float32), "w")]
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("com.example" + op_suffix, 1)])


def _save(tmp_path, name, tensor="r", op_suffix="", raw=None):
    model = _model(name, tensor, op_suffix)
    data = model.SerializeToString()
    if raw is not None:  # protobuf cannot hold a str that is not UTF-8: patch the serialized bytes
        assert data.count(name.encode()) == 3 and len(name.encode()) == len(raw)
        data = data.replace(name.encode(), raw)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    return str(path)


def _run(capsys, args):
    code = main(args)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    return code, captured.out


def _printable_lines(text: str) -> list:
    lines = text.split("\n")
    for line in lines:
        assert line.isprintable(), repr(line[:200])
    return lines


def _cases():
    cases = [(c, n, None) for c, n in HOSTILE.items()]
    return cases + [(c, "N" * len(raw), raw) for c, raw in NON_UTF8.items()]


COMMANDS = {
    "check": (["check"], "text"),
    "check-json": (["check", "--format", "json"], "json"),
    "check-junit": (["check", "--format", "junit"], "junit"),
    "infer": (["infer", "--all", "--op", "Reshape", "--op", "MatMul"], "text"),
    "infer-json": (["infer", "--json", "--all"], "json"),
    "cost": (["cost", "--wide"], "text"),
    "cost-json": (["cost", "--json"], "json"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case, name, raw", _cases(), ids=[c for c, _, _ in _cases()])
def test_a_hostile_node_name_through_every_renderer(tmp_path, capsys, command, case, name, raw):
    args, kind = COMMANDS[command]
    path = _save(tmp_path, name, raw=raw)
    shown = raw.decode("utf-8", "surrogateescape") if raw is not None else name  # what JSON must hold
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    plain = _save(plain_dir, PLAIN)
    code, out = _run(capsys, args + [path])
    plain_code, plain_out = _run(capsys, args + [plain])
    assert code == plain_code
    if kind == "text":
        lines = _printable_lines(out)
        assert len(lines) == len(plain_out.split("\n")), out
        assert one_line(shown) in out
        assert not any(line.startswith(("error: [shape-error] forged", "forged")) for line in lines)
    elif kind == "junit":
        root = ET.fromstring(out.encode("utf-8"))
        texts = [el.text or "" for el in root.iter()] + [v for el in root.iter() for v in el.attrib.values()]
        assert any(one_line(shown) in t for t in texts)
        assert out.count("\n") == plain_out.count("\n")
    else:
        data = json.loads(out)
        if command == "check-json":
            names = [f["node"] for m in data["models"] for f in m["findings"]]
        elif command == "infer-json":
            names = [n["name"] for n in data["nodes"]]
        else:
            names = [n["name"] for n in data["nodes"]]
        assert shown in names, names
        if raw is not None:
            assert shown.encode("utf-8", "surrogateescape") == raw


@pytest.mark.parametrize("case, name", list(HOSTILE.items()))
def test_optimize_report_and_explain_keep_hostile_names_on_their_line(tmp_path, capsys, case, name):
    path = _save(tmp_path, name)
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    plain = _save(plain_dir, PLAIN)
    outs = []
    for p, o in ((path, tmp_path / "o.onnx"), (plain, plain_dir / "o.onnx")):
        code, out = _run(capsys, ["optimize", p, "-o", str(o), "--explain"])
        assert code == 0
        outs.append(out)
    lines = _printable_lines(outs[0])
    assert len(lines) == len(outs[1].split("\n"))
    assert one_line(name) in outs[0]
    code, out = _run(capsys, ["optimize", path, "-o", str(tmp_path / "o2.onnx"), "--json"])
    assert code == 0 and name in [k["node"] for k in json.loads(out)["kept"]]


@pytest.mark.parametrize("case, text", [(c, n) for c, n in HOSTILE.items() if c != "long"])
def test_hostile_tensor_names_op_types_and_domains(tmp_path, capsys, case, text):
    """A tensor name, an op type and a domain holding the same characters: one line each."""
    path = _save(tmp_path, "node", tensor="t" + text, op_suffix=text)
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    plain = _save(plain_dir, "node", tensor="t" + PLAIN, op_suffix=PLAIN)
    for args in (["check"], ["infer", "--all"], ["cost", "--wide"]):
        code, out = _run(capsys, args + [path])
        plain_code, plain_out = _run(capsys, args + [plain])
        assert code == plain_code
        lines = _printable_lines(out)
        assert len(lines) == len(plain_out.split("\n")), (args, out)
    code, out = _run(capsys, ["check", "--format", "junit", path])
    ET.fromstring(out.encode("utf-8"))
    code, out = _run(capsys, ["cost", "--json", path])
    assert "com.example" + text + ".Op" + text in [n["op"] for n in json.loads(out)["nodes"]]


DRIVER = textwrap.dedent("""
    import sys
    from shapeinfer_cli.main import main
    path, out = sys.argv[1], sys.argv[2]  # (decoded with surrogateescape, as every argv is)
    for args in (["infer", path], ["infer", path, "--json"], ["check", path], ["check", path, "--format", "json"],
                 ["check", path, "--format", "junit"], ["cost", path], ["cost", path, "--json"],
                 ["optimize", path, "-o", out, "--explain"], ["optimize", path, "-o", out, "--json"],
                 ["infer", path + "-missing"]):
        print("=== " + args[0], flush=True)
        code = main(args)
        sys.stdout.flush()
        print("=== exit", code, flush=True)
""")


def test_a_model_path_that_is_not_utf8_runs_through_every_command(tmp_path):
    folder = os.fsencode(str(tmp_path)) + b"/dir\xff\xfe"
    os.mkdir(folder)
    path = folder + b"/m\xe9\x1b[31m\n.onnx"
    with open(path, "wb") as fh:
        fh.write(_model("node").SerializeToString())
    shown = one_line(os.fsdecode(path))
    assert "\\xff\\xfe" in shown and "\\xe9" in shown
    env = dict(os.environ, PYTHONIOENCODING="utf-8", LC_ALL="C.UTF-8")
    r = subprocess.run([sys.executable, "-c", DRIVER, path, folder + b"/out\xff.onnx"], capture_output=True, env=env,
                       timeout=60)
    out, err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8")
    assert r.returncode == 0 and "Traceback" not in err and "internal error" not in err, err
    exits = [line for line in out.split("\n") if line.startswith("=== exit")]
    # (check: 1 -- the model's com.example op is one onnxruntime refuses, as no operator set it
    # runs defines that domain)
    assert exits == ["=== exit 0"] * 2 + ["=== exit 1"] * 3 + ["=== exit 0"] * 4 + ["=== exit 2"], out
    assert shown in out and shown in err  # the text reports, and the error line for the missing file
    assert f'"{json.dumps(os.fsdecode(path))[1:-1]}"' in out  # JSON: the exact path
    assert os.path.exists(folder + b"/out\xff.onnx")
    # The real command line, once: argv bytes as the shell passes them.
    r = subprocess.run([sys.executable, "-m", "shapeinfer", "check", path, "--format", "junit"], capture_output=True,
                       env=env, timeout=60)
    assert r.returncode == 1 and b"Traceback" not in r.stderr
    root = ET.fromstring(r.stdout)
    assert [c.get("name") for c in root.iter("testcase")] == [shown]
