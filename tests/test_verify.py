"""Verification compares bit for bit (a NaN may come back quieted, nothing else), feeds inputs with
-0.0, +/-inf and NaN, and has three outcomes: identical, different, nothing compared. The CLI
exits 0, 1 and 2 for them, writing the model only for the first; --bind names the model's
symbols and needs --verify; the inexact opt-ins (--fold-float-math, --fuse-gemm) are flags, and
only they make --verify allow a tolerance."""

import json

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import parser

from shapeinfer.optimizer.verify import (DIFFERENT, IDENTICAL, NOTHING_COMPARED, random_inputs, difference, bindings_for, input_symbols,
                               verify)
from shapeinfer_cli.main import main

pytest.importorskip("onnxruntime")

H = '<ir_version: 9, opset_import: ["" : 18]>\n'


def _model(text):
    return parser.parse_model(H + text)


def _bits(values, dtype, view):
    return np.array(values, dtype=view).view(dtype)


# ------------------------------------------------------------------------------ comparison


@pytest.mark.parametrize("dtype, view, signalling, quiet", [
    (np.float32, np.uint32, 0x7F800001, 0x7FC00001),
    (np.float64, np.uint64, 0x7FF0000000000001, 0x7FF8000000000001),
    (np.float16, np.uint16, 0x7C01, 0x7E01),
    (ml_dtypes.bfloat16, np.uint16, 0x7F81, 0x7FC1),
    (ml_dtypes.float8_e5m2, np.uint8, 0x7D, 0x7F),
], ids=["float32", "float64", "float16", "bfloat16", "float8e5m2"])
def test_a_quieted_nan_is_the_one_tolerance(dtype, view, signalling, quiet):
    a, b = _bits([signalling, 0], dtype, view), _bits([quiet, 0], dtype, view)
    assert difference(a, b) == ""
    # another payload, the other sign, or -0.0 for +0.0 are differences
    sign = {np.uint8: 0x80, np.uint16: 0x8000, np.uint32: 0x80000000, np.uint64: 0x8000000000000000}[view]
    assert difference(a, _bits([quiet + 1, 0], dtype, view)).startswith("1 of 2 elements differ")
    assert difference(a, _bits([quiet | sign, 0], dtype, view)) != ""
    assert difference(a, _bits([signalling, sign], dtype, view)) != ""


def test_exact_comparison_reports_what_differs():
    a = np.array([[1.0, -0.0], [np.inf, 2.0]], np.float32)
    b = a.copy()
    b[0, 1] = 0.0
    assert difference(a, a.copy()) == ""
    why = difference(a, b)
    assert why.startswith("1 of 4 elements differ (first at [0, 1]: -0.0 (0x80000000) vs 0.0 (0x00000000))")
    assert difference(a, b, signed_zeros=False) == ""
    assert difference(a, a.astype(np.float64)) == "dtype float32 vs float64"
    assert difference(a, a.reshape(4)) == "shape [2, 2] vs [4]"
    assert difference(np.array([1, 2], np.int64), np.array([1, 3], np.int64)).startswith("1 of 2")
    assert difference(np.array(["a"], object), np.array(["b"], object)).startswith("1 of 1")
    near = a * np.float32(1 + 1e-7)
    assert difference(a, near) != "" and difference(a, near, exact=False) == ""
    assert difference(a, a + 1, exact=False) != ""


def test_inputs_hold_signed_zeros_infinities_and_nans_even_when_small():
    model = _model("g (float[N] x, int64[N] i) => (float y) { y = Neg(x) }")
    rng = np.random.default_rng(0)
    plain = random_inputs(model, {"N": 1000}, rng)
    x = plain["x"]
    assert np.isfinite(x).all() and (np.signbit(x) & (x == 0)).sum() > 50 and (~np.signbit(x) & (x == 0)).sum() > 50
    special = random_inputs(model, {"N": 1000}, rng, special=True)["x"]
    assert np.isnan(special).sum() > 20 and (special == np.inf).sum() > 20 and (special == -np.inf).sum() > 20
    small = random_inputs(model, {"N": 4}, rng, special=True)["x"]
    assert np.isnan(small[0]) and small[1] == np.inf and small[2] == -np.inf and np.signbit(small[3])
    assert np.signbit(random_inputs(model, {"N": 1}, rng)["x"][0])
    assert plain["i"].dtype == np.int64


def test_bindings_start_at_one_and_end_at_zero():
    model = _model("g (float[B,S] x) => (float y) { y = Neg(x) }")
    b = bindings_for(model)
    assert b[0] == {"B": 1, "S": 1} and b[-1] == {"B": 0, "S": 0} and len(b) == 4
    assert all(v in (0, 1, 2, 3, 5, 8) for x in b for v in x.values())
    given = bindings_for(model, values={"S": [4, 9]})
    assert [x["S"] for x in given] == [4, 9, 4] and given[-1]["B"] == 0
    assert bindings_for(model, values={"S": [4], "B": [2, 3]}) == [{"B": 2, "S": 4}, {"B": 3, "S": 4}]
    assert input_symbols(model) == ["B", "S"]
    static = _model("g (float[2] x) => (float y) { y = Neg(x) }")
    assert bindings_for(static) == [{}, {}, {}]


# --------------------------------------------------------------------------------- outcomes


def test_a_rewrite_that_loses_a_signed_zero_is_a_difference():
    original = _model("g (float[N] x) => (float[N] y) <float[1] z = {0.0}> { y = Add(x, z) }")
    dropped = _model("g (float[N] x) => (float[N] y) { y = Identity(x) }")
    v = verify(original, dropped)
    assert v.outcome == DIFFERENT and not v.ok
    assert "-0.0" in v.runs[0][1] or "0x80000000" in v.runs[0][1]
    assert verify(original, dropped, signed_zeros=False).outcome == IDENTICAL
    # x * 1 -> x keeps every bit, NaN and -0.0 included
    times_one = _model("g (float[N] x) => (float[N] y) <float[1] one = {1.0}> { y = Mul(x, one) }")
    v = verify(times_one, dropped)
    assert v.outcome == IDENTICAL and v.compared == 4 and v.comparison == "bit-exact"


def test_nothing_compared_is_neither_a_pass_nor_a_difference():
    # runs only when N is 6: every default binding is skipped
    original = _model("g (float[N] x) => (float[2,3] y) <int64[2] s = {2, 3}> { y = Reshape(x, s) }")
    v = verify(original, original)
    assert v.outcome == NOTHING_COMPARED and not v.ok and v.compared == 0 and v.skipped == 4
    assert all(r.startswith("skipped: the original model does not run") for _, r in v.runs)
    assert verify(original, original, bindings=[{"N": 6}]).outcome == IDENTICAL


def test_an_optimised_model_onnxruntime_cannot_load_is_a_difference():
    original = _model("g (float[N] x) => (float[N] y) { y = Neg(x) }")
    broken = _model("g (float[N] x) => (float[N] y) { y = NoSuchOp(x) }")
    v = verify(original, broken)
    assert v.outcome == DIFFERENT and "does not load in onnxruntime" in v.runs[0][1]


# ------------------------------------------------------------------------------------- CLI


def _save(tmp_path, name, model):
    p = tmp_path / name
    p.write_bytes(model.SerializeToString())
    return str(p)


ONLY_SIX = "g (float[N] x) => (float[2,3] y) <int64[2] s = {2, 3}> { y = Reshape(x, s) }"


def test_cli_nothing_compared_exits_2_with_a_hint_and_writes_nothing(tmp_path, capsys):
    path = _save(tmp_path, "m.onnx", _model(ONLY_SIX))
    out = tmp_path / "o.onnx"
    assert main(["optimize", path, "-o", str(out), "--verify"]) == 2
    captured = capsys.readouterr()
    assert "NOTHING COMPARED" in captured.out and "DIFFERENCES" not in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "compared nothing" in err[0] and "--bind SYMBOL=V1,V2" in err[0] and "symbols: N" in err[0]
    assert not out.exists()
    assert main(["optimize", path, "-o", str(out), "--verify", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["verify"]["outcome"] == NOTHING_COMPARED
    assert not out.exists()
    assert main(["optimize", path, "-o", str(out), "--verify", "--bind", "N=6"]) == 0
    assert "outputs identical, bit-exact, at 1 of 1 bindings" in capsys.readouterr().out
    onnx.checker.check_model(onnx.load(str(out)))


def test_cli_differences_exit_1_and_write_nothing(tmp_path, capsys, monkeypatch):
    import shapeinfer.optimizer.manager

    path = _save(tmp_path, "m.onnx", _model("g (float[N] x) => (float[N] y) { y = Neg(x) }"))
    wrong = _model("g (float[N] x) => (float[N] y) { y = Abs(x) }")
    monkeypatch.setattr(shapeinfer.optimizer.manager, "optimize", lambda model, **kw: wrong)
    out = tmp_path / "o.onnx"
    assert main(["optimize", path, "-o", str(out), "--verify"]) == 1
    captured = capsys.readouterr()
    assert "DIFFERENCES FOUND (bit-exact)" in captured.out and "elements differ" in captured.out
    assert "found differences" in captured.err and not out.exists()


@pytest.mark.parametrize("args, says", [
    (["--bind", "M=3"], "needs --verify"),
    (["--verify", "--bind", "Q=3"], "no symbolic dim of the model's inputs (symbols: N)"),
    (["--verify", "--bind", "N=x"], "expected SYMBOL=V1,V2"),
    (["--verify", "--bind", "N=-1"], "expected SYMBOL=V1,V2"),
], ids=["without_verify", "unknown_symbol", "not_a_number", "negative"])
def test_cli_bad_bind_is_a_usage_error(tmp_path, capsys, args, says):
    path = _save(tmp_path, "m.onnx", _model("g (float[N] x) => (float[N] y) { y = Neg(x) }"))
    out = tmp_path / "o.onnx"
    assert main(["optimize", path, "-o", str(out)] + args) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and not out.exists()


GEMM = ("g (float[M,3] x) => (float[M,2] y) <float[3,2] w = {1., -2., 3.5, 4., 5., -6.}, float[2] b = {0.5, -1.}> {"
        " m = MatMul(x, w)  y = Add(b, m) }")


@pytest.mark.parametrize("flags, ops, comparison, assumption", [
    ([], ["MatMul", "Add"], "bit-exact", None),
    (["--fuse-gemm"], ["Gemm"], "within rtol=1e-05, atol=1e-06", "--fuse-gemm"),
    (["--fold-float-math"], ["MatMul", "Add"], "within rtol=1e-05, atol=1e-06", "--fold-float-math"),
], ids=["default", "fuse_gemm", "fold_float_math"])
def test_cli_inexact_opt_ins_are_flags_and_only_they_allow_a_tolerance(tmp_path, capsys, flags, ops, comparison,
                                                                       assumption):
    path = _save(tmp_path, "m.onnx", _model(GEMM))
    out = tmp_path / "o.onnx"
    assert main(["optimize", path, "-o", str(out), "--verify"] + flags) == 0
    text = capsys.readouterr().out
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ops
    assert f"outputs identical, {comparison}" in text
    if assumption:
        assert any(line.startswith("assumption:") and assumption in line for line in text.splitlines())
    else:
        assert "assumption:" not in text


def test_cli_ignore_signed_zero_is_verified_exactly_but_for_the_sign_of_zero(tmp_path, capsys):
    path = _save(tmp_path, "m.onnx", _model("g (float[N] x) => (float[N] y) <float[1] z = {0.0}> "
                                            "{ t = Add(x, z)  y = Neg(t) }"))
    out = tmp_path / "o.onnx"
    assert main(["optimize", path, "-o", str(out), "--verify", "--ignore-signed-zero", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verify"]["outcome"] == IDENTICAL
    assert data["verify"]["comparison"] == "bit-exact but for the sign of zero"
    assert "Add" not in [n.op_type for n in onnx.load(str(out)).graph.node]


def test_cli_optimize_help_describes_the_opt_ins():
    from click.testing import CliRunner

    from shapeinfer_cli.main import cli

    r = CliRunner().invoke(cli, ["optimize", "--help"], terminal_width=200)
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for flag in ("--fold-float-math", "--fuse-gemm", "--external-data", "--size-threshold"):
        assert flag in text
    assert text.count("last bits") >= 2 and "bit for bit" in text


# ------------------------------------------------------------------ outputs that are no tensor


def _sequence_model(body: str, inputs: str = "float[N] x"):
    """A model whose one output ``s`` is a sequence of float tensors (of any shapes)."""
    m = _model(f"g ({inputs}) => () {{ {body} }}")
    m.graph.output.append(onnx.helper.make_tensor_sequence_value_info("s", onnx.TensorProto.FLOAT, None))
    return m


RAGGED = {  # each makes the sequence q
    "construct": "two = Constant<value = int64[1] {2}>()\n z = Constant<value = float[1] {0.0}>()\n"
                 " a = Expand(z, two)\n q = SequenceConstruct(a, x)",
    "uneven-split": "zero = Constant<value = int64[1] {0}>()\n five = Constant<value = int64[1] {5}>()\n"
                    " sizes = Constant<value = int64[2] {2, 3}>()\n xx = Concat<axis = 0>(x, x, x, x, x)\n"
                    " c = Slice(xx, zero, five)\n q = SplitToSequence<axis = 0>(c, sizes)",
    "three-shapes": "one = Constant<value = int64[1] {1}>()\n z = Constant<value = float[1] {1.5}>()\n"
                    " a = Expand(z, one)\n b = Concat<axis = 0>(x, a)\n q = SequenceConstruct(a, x, b)",
}
LAST = " minus_one = Constant<value = int64 {-1}>()\n"
ENDINGS = {
    "same": "\n s = Identity(q)",
    "last-doubled": "\n" + LAST + " last = SequenceAt(q, minus_one)\n doubled = Add(last, last)\n"
                    " shorter = SequenceErase(q, minus_one)\n s = SequenceInsert(shorter, doubled)",
    "last-dropped": "\n" + LAST + " s = SequenceErase(q, minus_one)",
}


@pytest.mark.parametrize("case", list(RAGGED))
def test_a_ragged_sequence_output_compares_element_by_element(case):
    original = _sequence_model(RAGGED[case] + ENDINGS["same"])
    v = verify(original, original, bindings=[{"N": 1}, {"N": 3}, {"N": 4}])
    assert v.outcome == IDENTICAL and v.compared == 3, v.runs
    # one element changed, or one fewer: a difference that says where
    v = verify(original, _sequence_model(RAGGED[case] + ENDINGS["last-doubled"]), bindings=[{"N": 3}])
    assert v.outcome == DIFFERENT and "s: element " in v.runs[0][1], v.runs
    v = verify(original, _sequence_model(RAGGED[case] + ENDINGS["last-dropped"]), bindings=[{"N": 3}])
    assert v.outcome == DIFFERENT and "s: sequence length " in v.runs[0][1], v.runs


@pytest.mark.parametrize("a, b, says", [
    ([np.zeros(2, np.float32), np.zeros(3, np.float32)], [np.zeros(2, np.float32), np.zeros(3, np.float32)], ""),
    ([np.zeros(2, np.float32), np.zeros(3, np.float32)], [np.zeros(2, np.float32), np.ones(3, np.float32)],
     "element 1: 3 of 3 elements differ"),
    ([np.zeros(2, np.float32), np.zeros(3, np.float32)], [np.zeros(2, np.float32), np.zeros(4, np.float32)],
     "element 1: shape [3] vs [4]"),
    ([np.array([-0.0], np.float32), np.zeros(3, np.float32)], [np.array([0.0], np.float32), np.zeros(3, np.float32)],
     "element 0: 1 of 1 elements differ"),
    ([np.zeros(2, np.float32)], [np.zeros(2, np.float32), np.zeros(3, np.float32)], "sequence length 1 vs 2"),
    ([np.zeros(2, np.float32), np.zeros(3, np.float32)], np.zeros((2, 3), np.float32), "a sequence of 2 vs a tensor"),
    ([], [], ""),
    (None, None, ""),
    (None, np.zeros(1, np.float32), "no value (an empty optional) vs a tensor"),
    ({1: np.zeros(2, np.float32), 2: np.zeros(3, np.float32)}, {1: np.zeros(2, np.float32), 2: np.ones(3, np.float32)},
     "key 2: 3 of 3 elements differ"),
    ({1: np.zeros(2, np.float32)}, {2: np.zeros(2, np.float32)}, "map keys [1] vs [2]"),
])
def test_difference_of_sequences_optionals_and_maps(a, b, says):
    got = difference(a, b)
    assert got.startswith(says) if says else got == ""
    assert difference(a, b, signed_zeros=False) == ("" if "element 0" in says else got)


def test_cli_verify_on_a_ragged_sequence_output(tmp_path, capsys):
    path = _save(tmp_path, "m.onnx", _sequence_model(RAGGED["uneven-split"] + ENDINGS["same"]))
    out = tmp_path / "o.onnx"
    assert main(["optimize", path, "-o", str(out), "--verify"]) == 0
    captured = capsys.readouterr()
    assert "outputs identical" in captured.out and "inhomogeneous" not in captured.out + captured.err
    assert out.exists()
