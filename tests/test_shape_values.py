"""Shape *values* followed through the ops exporters compute shapes with.

Each model computes a Reshape/Expand/Tile shape from ``Shape(x)`` of a symbolic input. With
``assume_nonempty`` the inferred output dims must be expressions over the input's symbols (no
unknowns) that evaluate to the shape onnx's reference evaluator produces, at several bindings
including 1. Without it (a symbol may be 0, and a Reshape entry of 0 copies the input dim) a
dim may be unknown, but one that is reported must still evaluate right.
"""

import numpy as np
import pytest
from onnx import parser
from onnx.reference import ReferenceEvaluator

import shapeinfer
from tests.helpers import evaluate_shape

HEADER = '<ir_version: 9, opset_import: ["" : 18]>\n'

CASES = {
    # Shape(start/end) -> Concat with constants -> Reshape(0, -1)
    "shape_start_end": (
        "g (float[B,S,H] x) => (float y) <int64[1] m1 = {-1}> {"
        " s = Shape<start = 1, end = -1>(x)"
        " t = Concat<axis = 0>(m1, s)"
        " y = Reshape(x, t) }",
        [(1, 1, 1), (2, 3, 4), (3, 5, 2)],
    ),
    # Gather with a negative index, Mul of two dims, Unsqueeze (input form)
    "gather_negative_mul": (
        "g (float[B,S,H] x) => (float y) <int64 i0 = {0}, int64 im1 = {-1}, int64 i1 = {1}, int64[1] ax = {0}> {"
        " s = Shape(x)"
        " b = Gather(s, i0)"
        " h = Gather(s, im1)"
        " sq = Gather(s, i1)"
        " sh = Mul(sq, h)"
        " bu = Unsqueeze(b, ax)"
        " shu = Unsqueeze(sh, ax)"
        " t = Concat<axis = 0>(bu, shu)"
        " y = Reshape(x, t) }",
        [(1, 1, 1), (2, 3, 4)],
    ),
    # Slice with a negative step reverses the shape; Reshape to it (a transpose-free reshape)
    "slice_negative_step": (
        "g (float[B,S,H] x) => (float y) <int64[1] st = {-1}, int64[1] en = {-9223372036854775807}, int64[1] ax = {0}, int64[1] stp = {-1}> {"
        " s = Shape(x)"
        " r = Slice(s, st, en, ax, stp)"
        " y = Reshape(x, r) }",
        [(1, 1, 1), (2, 3, 4)],
    ),
    # Div of int64 dims (truncating; here exact and halving): [B, N] -> [B, 2, N/2]
    "div_truncates": (
        "g (float[B,N] x) => (float y) <int64[1] two = {2}> {"
        " s = Shape(x)"
        " p = ReduceProd<keepdims = 1>(s)"
        " b = Shape<end = 1>(x)"
        " rest = Div(p, b)"
        " half = Div(rest, two)"
        " t = Concat<axis = 0>(b, two, half)"
        " y = Reshape(x, t) }",
        [(1, 2), (2, 4), (3, 6)],
    ),
    # The Where(Equal(shape, -1), ones, shape) idiom feeding Expand
    "where_equal_idiom": (
        "g (float[B,1,H] x) => (float y) <int64[3] target = {-1, 4, -1}, int64[3] m1s = {-1, -1, -1}, int64[3] ones = {1, 1, 1}> {"
        " e = Equal(target, m1s)"
        " t = Where(e, ones, target)"
        " y = Expand(x, t) }",
        [(1, 1, 1), (2, 1, 3)],
    ),
    # Where on symbolic entries: Equal(dim, -1) is provably false for a dim
    "where_symbolic": (
        "g (float[B,S] x) => (float y) <int64[2] m1s = {-1, -1}, int64[2] ones = {1, 1}> {"
        " s = Shape(x)"
        " e = Equal(s, m1s)"
        " t = Where(e, ones, s)"
        " y = Expand(x, t) }",
        [(1, 1), (2, 3)],
    ),
    # Range over a dim, Size, ConstantOfShape -> Tile repeats
    "range_size_constantofshape": (
        "g (float[B,S] x) => (float y, float z) <int64 zero = {0}, int64 one = {1}, int64[1] ax = {0}, int64[1] one1 = {1}> {"
        " s = Shape(x)"
        " n = Gather(s, one)"
        " r = Range(zero, n, one)"
        " rs = Shape(r)"
        " k = Size(x)"
        " ku = Unsqueeze(k, ax)"
        " reps = Concat<axis = 0>(ku, one1)"
        " y = Tile(x, reps)"
        " ones = ConstantOfShape<value = int64[1] {1}>(rs)"
        " ones_f = Cast<to = 1>(ones)"
        " rs2 = Concat<axis = 0>(one1, rs)"
        " z = Reshape(ones_f, rs2) }",
        [(1, 1), (2, 3)],
    ),
    # Mod, Neg, Abs, Min, Max, Sub on dims
    "mod_neg_abs_min_max": (
        "g (float[B,S] x) => (float y) <int64[1] two = {2}, int64 i1 = {1}, int64 i0 = {0}, int64[1] ax = {0}> {"
        " s = Shape(x)"
        " n = Gather(s, i1)"
        " b = Gather(s, i0)"
        " m = Mod(n, n)"
        " neg = Neg(b)"
        " ab = Abs(neg)"
        " mx = Max(ab, m)"
        " mn = Min(n, n)"
        " d = Sub(mn, m)"
        " mxu = Unsqueeze(mx, ax)"
        " du = Unsqueeze(d, ax)"
        " t = Concat<axis = 0>(mxu, du)"
        " y = Reshape(x, t) }",
        [(1, 1), (2, 3), (4, 2)],
    ),
    # Slice of a data tensor with a computed (symbolic) end and a negative start
    "slice_symbolic_bounds": (
        "g (float[B,N] x) => (float y, float z) <int64[1] i1 = {1}, int64[1] two = {2}, int64[1] zero = {0}, int64[1] m1 = {-1}> {"
        " s = Shape(x)"
        " n = Slice(s, i1, two)"
        " half = Div(n, two)"
        " y = Slice(x, zero, half, i1)"
        " z = Slice(x, m1, n, i1) }",
        [(1, 1), (2, 5), (3, 4)],
    ),
    # Squeeze / Cast / Identity on the shape path, Expand with a shorter target
    "squeeze_cast_identity_expand_shorter": (
        "g (float[B,1,H] x) => (float y) <int64[2] idx = {2, 1}, int64[1] ax = {0}> {"
        " s = Shape(x)"
        " g2 = Gather(s, idx)"
        " c = Cast<to = 7>(g2)"
        " i = Identity(c)"
        " y = Expand(x, i) }",
        [(1, 1, 1), (2, 1, 3)],
    ),
}


@pytest.mark.parametrize("assume_nonempty", [True, False], ids=["nonempty", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_values_match_reference(name, assume_nonempty):
    text, bindings = CASES[name]
    model = parser.parse_model(HEADER + text)
    inp = model.graph.input[0]
    names = [d.dim_param or None for d in inp.type.tensor_type.shape.dim]
    result = shapeinfer.infer(model, assume_nonempty=assume_nonempty)
    ref = ReferenceEvaluator(model)
    outputs = [o.name for o in model.graph.output]
    compared = 0
    for shape in bindings:
        binding = {n: v for n, v in zip(names, shape) if n}
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        real = ref.run(None, {inp.name: x})
        for out, arr in zip(outputs, real):
            dims = result.shape(out)
            assert dims is not None and len(dims) == arr.ndim, (out, result.shape_strs(out))
            if assume_nonempty:
                assert result.classify(out) != "unknown", (out, result.shape_strs(out))
            for d, n in zip(dims, arr.shape):
                if not result.is_unknown_dim(d):
                    assert evaluate_shape([d], binding) == (n,), (out, result.shape_strs(out), binding)
                    compared += 1
    assert compared > 0, "no dim was compared with the reference evaluator"


@pytest.mark.parametrize("text,out,expect", [
    # 17*B at index 0 could be 0 (B = 0) and then copy 17 -- but then 0 elements meet 17*16: the
    # run fails, so every run that succeeds has 17*B
    ("g (float[17,B,2,8] x) => (float y) {"
     " s = Shape(x)  a = Gather<axis = 0>(s, i0)  b = Gather<axis = 0>(s, i1)  m = Mul(a, b)"
     " u = Unsqueeze(m, ax)  c = Concat<axis = 0>(u, sixteen)  y = Reshape(x, c) }", "y", ["17*B", "16"]),
    # S at index 1 could be 0 and copy 96: with B = 0 too that run succeeds with (0, 96, 96) --
    # not S: both zero cases are said with iszero (B at index 0 copies N when it is 0)
    ("g (float[N,96] x, float[B,S] t) => (float y) {"
     " s = Shape(t)  c = Concat<axis = 0>(s, n96)  y = Reshape(x, c) }", "y",
     ["N*iszero(B)+B", "S+96*iszero(S)", "96"]),
])
def test_reshape_entry_that_may_be_zero_is_exact_only_when_the_zero_case_fails(text, out, expect):
    header = '<ir_version: 9, opset_import: ["" : 18]>\n'
    consts = ("<int64 i0 = {0}, int64 i1 = {1}, int64[1] ax = {0}, int64[1] sixteen = {16}, int64[1] n96 = {96}>")
    text = text.replace(") {", ") " + consts + " {", 1)
    model = parser.parse_model(header + text)
    r = shapeinfer.infer(model)
    got = r.shape_strs(out)
    if expect is None:
        assert r.classify(out) == "unknown", got
    else:
        assert got == expect
    ref = ReferenceEvaluator(model)
    ran, compared = 0, 0
    for binding in ({"B": 0, "S": 0, "N": 0}, {"B": 1, "S": 1, "N": 1}, {"B": 3, "S": 2, "N": 6}, {"B": 0, "S": 3, "N": 0}):
        feeds = {}
        for i in model.graph.input:
            dims = [d.dim_value if d.HasField("dim_value") else binding[d.dim_param] for d in i.type.tensor_type.shape.dim]
            feeds[i.name] = np.zeros(dims, np.float32)
        try:
            want = ref.run(None, feeds)[0].shape
        except Exception:
            continue  # this binding does not run: nothing to compare
        ran += 1
        shape = evaluate_shape(r.shape(out), binding)
        assert shape is None or shape == want, (binding, shape, want)
        dims = r.shape(out)
        assert len(dims) == len(want), (binding, got, want)
        for d, n in zip(dims, want):  # each dim that is reported, also where another is unknown
            if not r.is_unknown_dim(d):
                assert evaluate_shape([d], binding) == (n,), (binding, got, want)
                compared += 1
    assert ran > 0 and compared > 0, "no binding ran in the reference evaluator: nothing was compared"


def test_slice_from_minus_seq_on_a_dim_of_seq_is_exact_even_when_seq_is_zero():
    """start = -S is negative unless S = 0 -- and then the dim is 0 too: both readings give S.
    (T5's relative position bias slices this way.)"""
    header = '<ir_version: 9, opset_import: ["" : 18]>\n'
    model = parser.parse_model(header + (
        "g (float[4,S,S] x) => (float y) <int64 i1 = {1}, int64[1] ax = {0}, int64[1] big = {9223372036854775807},"
        " int64[1] axis = {2}> {"
        " s = Shape(x)  n = Gather<axis = 0>(s, i1)  m = Neg(n)  u = Unsqueeze(m, ax)"
        " y = Slice(x, u, big, axis) }"))
    r = shapeinfer.infer(model)
    assert r.shape_strs("y") == ["4", "S", "S"]
    ref = ReferenceEvaluator(model)
    for S in (0, 1, 3):
        want = ref.run(None, {"x": np.zeros((4, S, S), np.float32)})[0].shape
        assert evaluate_shape(r.shape("y"), {"S": S}) == want
    # start = -S on a dim that is not S: for S = 0 the slice keeps the whole dim -- unknown
    model = parser.parse_model(header + (
        "g (float[4,S,7] x) => (float y) <int64 i1 = {1}, int64[1] ax = {0}, int64[1] big = {9223372036854775807},"
        " int64[1] axis = {2}> {"
        " s = Shape(x)  n = Gather<axis = 0>(s, i1)  m = Neg(n)  u = Unsqueeze(m, ax)"
        " y = Slice(x, u, big, axis) }"))
    assert shapeinfer.infer(model).classify("y") == "unknown"


@pytest.mark.parametrize("minus", [1, 3, 7])
def test_integer_div_of_a_value_that_may_be_slightly_negative(minus):
    """(h-1)/2 truncates: for h = 0 it is 0, not floor's -1 -- max((h-1)//2, 0) is exact. With
    h-3 the value can reach -3, and -3/2 truncates to -1 (max would be wrong there): it is
    max(h-3,0)//2 - max(3-h,0)//2, exact on both sides of 0."""
    header = '<ir_version: 9, opset_import: ["" : 18]>\n'
    model = parser.parse_model(header + (
        "g (float[H] x) => (float y) <int64 i0 = {0}, int64 k = {" + str(minus) + "}, int64 two = {2},"
        " int64[1] ax = {0}, int64[1] one = {1}> {"
        " s = Shape(x)  h = Gather<axis = 0>(s, i0)  a = Sub(h, k)  q = Div(a, two)  p = Add(q, k)"
        " u = Unsqueeze(p, ax)  c = Concat<axis = 0>(u, one)  y = ConstantOfShape(c) }"))
    r = shapeinfer.infer(model)
    assert r.classify("y") == "symbolic"
    ref = ReferenceEvaluator(model)
    for h in range(0, 12):
        want = ref.run(None, {"x": np.zeros((h,), np.float32)})[0].shape
        assert evaluate_shape(r.shape("y"), {"H": h}) == want, h
