"""Exact at every size, 0 included: the indicator ``iszero`` and Reshape's zero case.

A Reshape entry e (allowzero=0, or opset < 14) that is 0 at run time copies the input dim at its
index. Where no proof rules that case out, the node is computed twice -- e's atom nonzero (R1)
and zero (R0) -- and each output dim is ``R1 + iszero(atom)*(R0 - R1)``. onnxruntime is the
judge, at bindings that include 0 and 1; the algebra's rewrites are checked against direct
evaluation.
"""

import itertools
import os
from fractions import Fraction
from math import floor

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import shapeinfer
from shapeinfer.symbolic import (IsZero, ParseError, atoms, bounds, dmax, dmin, evaluate, floordiv,
                                 free_symbols, iszero, mod, mul, parse, provably_nonneg, provably_positive, sym,
                                 to_str, truediv)

ort = pytest.importorskip("onnxruntime")

# ------------------------------------------------------------------ the indicator, by hand

S, T, A, B = sym("S"), sym("T"), sym("a"), sym("b")


@pytest.mark.parametrize("built,printed", [
    (iszero(0), "1"),
    (iszero(3), "0"),
    (iszero(S + 1), "0"),  # provably >= 1
    (iszero(-S - 1), "0"),  # provably <= -1
    (iszero(4 * S), "iszero(S)"),  # a nonzero constant factor goes
    (iszero(-S), "iszero(S)"),
    (iszero(truediv(S, 2)), "iszero(S)"),
    (iszero(2 * A + 4 * B), "iszero(a+2*b)"),
    (iszero(-2 * A + 4 * B), "iszero(a-2*b)"),
    (iszero(mul(S, S) * T), "iszero(S*T)"),  # a power of a factor is 0 exactly when it is
    (iszero(iszero(S)), "-iszero(S)+1"),
    (mul(iszero(S), iszero(S)), "iszero(S)"),  # iszero(m)**k == iszero(m)
    (S * iszero(S), "0"),  # m * iszero(m) == 0
    (3 * S * T * iszero(S * T), "0"),
    (A * iszero(A * B), "a*iszero(a*b)"),  # not 0: b may be 0 with a != 0
    (S * iszero(T), "S*iszero(T)"),
    ((4 * B - 4 * B * iszero(S)) * 8 * (S + 4 * iszero(S)), "32*S*b"),
])
def test_iszero_canonical_forms(built, printed):
    assert to_str(built) == printed
    assert parse(printed) == built


def test_iszero_sign_reasoning():
    x = 4 * B - 4 * B * iszero(S)
    assert bounds(iszero(S)) == (0, 1)
    assert provably_nonneg(x)
    assert provably_nonneg(S + 4 * iszero(S))
    assert provably_positive(S + 4 * iszero(S))  # S >= 1, or S == 0 and it is 4
    assert not provably_positive(x)  # b may be 0
    assert not provably_nonneg(S - iszero(T))  # S = 0, T = 0 gives -1
    assert not provably_positive(S + iszero(T))


@pytest.mark.parametrize("bad", ["iszero()", "iszero(a,b)", "min(a)"])
def test_iszero_arity_is_checked_when_parsing(bad):
    with pytest.raises(ParseError):
        parse(bad)


# ------------------------------------------------------------------ the indicator, generated

NAMES = ["a", "b", "c"]


def _tree():
    leaf = st.one_of(st.integers(-4, 6).map(lambda v: ("int", v)), st.sampled_from(NAMES).map(lambda n: ("sym", n)))
    return st.recursive(
        leaf,
        lambda kids: st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), kids, kids),
            st.tuples(st.just("iszero"), kids),
            st.tuples(st.sampled_from(["//", "%", "/"]), kids, st.integers(1, 4).map(lambda v: ("int", v))),
        ),
        max_leaves=9,
    )


class _NoValue(Exception):
    """An exact division that does not divide: no valid run has that binding (dims are integers)."""


def _direct(t, env):
    if t[0] == "int":
        return t[1]
    if t[0] == "sym":
        return env[t[1]]
    if t[0] == "iszero":
        return 1 if _direct(t[1], env) == 0 else 0
    op, x, y = t
    a, b = _direct(x, env), _direct(y, env)
    return {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "min": lambda: min(a, b),
        "max": lambda: max(a, b), "//": lambda: floor(Fraction(a) / b),
        "%": lambda: Fraction(a) - b * floor(Fraction(a) / b), "/": lambda: _exact_div(a, b),
    }[op]()


def _exact_div(a, b):
    q = Fraction(a) / b
    if q.denominator != 1:
        raise _NoValue
    return q


def _build(t):
    if t[0] == "int":
        return t[1]
    if t[0] == "sym":
        return sym(t[1])
    if t[0] == "iszero":
        return iszero(_build(t[1]))
    op, x, y = t
    a, b = _build(x), _build(y)
    return {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: mul(a, b), "min": lambda: dmin(a, b),
        "max": lambda: dmax(a, b), "//": lambda: floordiv(a, b), "%": lambda: mod(a, b),
        "/": lambda: truediv(a, b),
    }[op]()


_EXAMPLES = int(os.environ.get("SHAPEINFER_EXAMPLES", 300))
_ENV = st.fixed_dictionaries({n: st.integers(0, 5) for n in NAMES})


@settings(max_examples=_EXAMPLES, deadline=None)
@given(_tree(), st.lists(_ENV, min_size=1, max_size=6))
def test_iszero_expressions_evaluate_as_defined(tree, envs):
    """Canonical forms (constant factors dropped, iszero(m)**k, m*iszero(m)) keep every value,
    and bounds and the sign predicates hold at every binding, 0 included."""
    built = _build(tree)
    nonneg, positive = provably_nonneg(built), provably_positive(built)
    lo, hi = bounds(built)
    for env in envs:
        try:
            want = _direct(tree, env)
        except _NoValue:
            continue
        got = evaluate(built, env)
        assert got == want
        assert lo <= got <= hi
        if nonneg:
            assert got >= 0
        if positive:
            assert got >= 1


@settings(max_examples=_EXAMPLES, deadline=None)
@given(_tree())
def test_iszero_expressions_print_and_parse_back(tree):
    built = _build(tree)
    assert parse(to_str(built)) == built


@settings(max_examples=_EXAMPLES, deadline=None)
@given(_tree(), _tree(), st.lists(_ENV, min_size=1, max_size=4))
def test_products_with_indicators_keep_values(t1, t2, envs):
    x, y = _build(t1), _build(t2)
    for env in envs:
        try:
            _direct(t1, env), _direct(t2, env)
        except _NoValue:
            continue
        assert evaluate(mul(x, iszero(y)), env) == _direct(t1, env) * (1 if _direct(t2, env) == 0 else 0)
        assert evaluate(mul(x, iszero(x)), env) == 0
        ix = 1 if _direct(t1, env) == 0 else 0
        assert evaluate(mul(mul(iszero(x), iszero(x)), y), env) == ix * _direct(t2, env)


# ------------------------------------------------------------------ Reshape against onnxruntime


def _reshape_model(x_dims, spec, opset=17):
    """y = Reshape(x, shape): each entry of the shape an int, a symbol name (the dim of a carrier
    input of that shape) or (k, name, ...) for k times the product of the named."""
    nodes, inits, pieces = [], [], []
    carriers = sorted({n for e in spec if not isinstance(e, int) for n in ([e] if isinstance(e, str) else e[1:])})
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)]
    inputs += [helper.make_tensor_value_info(f"c_{n}", TensorProto.FLOAT, [n]) for n in carriers]
    for j, e in enumerate(spec):
        name = f"e{j}"
        if isinstance(e, int):
            inits.append(numpy_helper.from_array(np.array([e], np.int64), name))
        elif isinstance(e, str):
            nodes.append(helper.make_node("Shape", [f"c_{e}"], [name]))
        else:
            k, *ns = e
            inits.append(numpy_helper.from_array(np.array([k], np.int64), f"k{j}"))
            prev = f"k{j}"
            for n in ns:
                nodes.append(helper.make_node("Shape", [f"c_{n}"], [f"s{j}_{n}"]))
                nodes.append(helper.make_node("Mul", [prev, f"s{j}_{n}"], [f"m{j}_{n}"]))
                prev = f"m{j}_{n}"
            nodes.append(helper.make_node("Identity", [prev], [name]))
        pieces.append(name)
    nodes.append(helper.make_node("Concat", pieces, ["shape"], axis=0))
    nodes.append(helper.make_node("Reshape", ["x", "shape"], ["y"]))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_empty_tensor_value_info("y")], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _session(model):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


VALUES = (0, 1, 2, 3, 5)


def _check_against_onnxruntime(model, x_dims):
    """Every inferred dim of y equals onnxruntime's at every binding that runs; returns the
    inferred shape and the bindings that ran."""
    shape = shapeinfer.infer(model).fact("y").shape
    names = sorted({d for d in x_dims if isinstance(d, str)}
                   | {i.name[2:] for i in model.graph.input if i.name.startswith("c_")})
    sess = _session(model)
    ran = []
    for values in itertools.product(VALUES, repeat=len(names)):
        binding = dict(zip(names, values))
        feeds = {"x": np.zeros([binding[d] if isinstance(d, str) else d for d in x_dims], np.float32)}
        feeds.update({i.name: np.zeros([binding[i.name[2:]]], np.float32)
                      for i in model.graph.input if i.name.startswith("c_")})
        try:
            (y,) = sess.run(None, feeds)
        except Exception:
            continue  # an invalid run: nothing to compare
        ran.append(binding)
        assert len(shape) == y.ndim
        for k, d in enumerate(shape):
            if not free_symbols(d) <= binding.keys():
                continue  # a minted symbol: unknown, which is allowed
            got = evaluate(d, binding)  # a reported dim has a value in every run (no EvaluationError)
            assert got == y.shape[k], (to_str(d), binding, y.shape)
    assert ran, "no binding ran"
    return shape, ran


def _exact(shape, names):
    return all(free_symbols(d) <= set(names) for d in shape)


CASES = [
    # (id, input dims, shape entries, expected printed output or None, symbols that must reach 0 in a run)
    ("bert_dynamo_heads", ["batch", 4, "seq", 8], [-1, "seq", 8],
     ["-4*batch*iszero(seq)+4*batch", "seq+4*iszero(seq)", "8"], ["seq"]),
    ("entry_copies_at_zero", ["B", 3, "S"], [0, "S", 3], ["B", "S+3*iszero(S)", "3"], ["S"]),
    ("twice_a_symbol", ["B", 4, "S", 8], [-1, (2, "S"), 4],
     ["-4*B*iszero(S)+4*B", "2*S+4*iszero(S)", "4"], ["S"]),
    ("minus_one_beside_the_zero_case", ["S", 4], [-1, "S"], ["-4*iszero(S)+4", "S+4*iszero(S)"], ["S"]),
    ("entries_after_the_input_rank", ["B", "T", 4, "S"], [-1, "S", 2, 2, "T"],
     ["-B*iszero(S)+B", "T*iszero(S)+S", "2", "2", "T"], ["S"]),
    ("zero_case_fails_r1_alone", ["S", "T", "T", 6], ["T", 0, -1], ["T", "T", "6*S"], []),
    ("two_pending_entries", ["B", 3, "S", "T"], [-1, "S", "T"], None, ["S", "T"]),
    ("two_pending_no_minus_one", ["S", 2, "T"], [0, "T", "S"], None, ["S", "T"]),
]


@pytest.mark.parametrize("x_dims,spec,printed,zeros", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("opset", [13, 17])
def test_reshape_zero_case_matches_onnxruntime(x_dims, spec, printed, zeros, opset):
    model = _reshape_model(x_dims, spec, opset)
    shape, ran = _check_against_onnxruntime(model, x_dims)
    names = {d for d in x_dims if isinstance(d, str)} | {i.name[2:] for i in model.graph.input
                                                        if i.name.startswith("c_")}
    assert _exact(shape, names), [to_str(d) for d in shape]
    if printed is not None:
        assert [to_str(d) for d in shape] == printed
    for n in zeros:  # the zero case was exercised, not only proven away
        assert any(b[n] == 0 for b in ran), n


def test_two_pending_entries_split_both():
    shape = shapeinfer.infer(_reshape_model(["B", 3, "S", "T"], [-1, "S", "T"])).fact("y").shape
    split = {a.args[0] for d in shape for a in atoms(d) if isinstance(a, IsZero)}
    assert split == {S, T}


def test_an_entry_with_two_zero_factors_is_exact():
    """S*T at index 1 copies 4 when S or T is 0: the entry is ``S*T + 4*iszero(S*T)`` by itself
    (no split into cases), and the -1 the element count over it, 4*B where S*T != 0 -- checked in onnxruntime at
    125 bindings, S = 0 and T = 0 among them."""
    model = _reshape_model(["B", 4, "S", "T"], [-1, (1, "S", "T")])
    shape, ran = _check_against_onnxruntime(model, ["B", 4, "S", "T"])
    assert _exact(shape, {"B", "S", "T"})
    assert [to_str(d) for d in shape] == ["-4*B*iszero(S*T)+4*B", "S*T+4*iszero(S*T)"]
    assert any(b["S"] == 0 and b["B"] > 0 for b in ran) and any(b["T"] == 0 and b["B"] > 0 for b in ran)


def test_the_zero_case_with_allowzero_needs_no_split():
    """With allowzero=1 an entry 0 means 0: S is S at every size. (No -1 here: the spec makes a
    shape holding both 0 and -1 invalid under allowzero, and onnxruntime 1.31 then gives a
    shape of its own.)"""
    model = _reshape_model(["B", 4, "S", 8], [(4, "B"), "S", 8], opset=17)
    model.graph.node[-1].attribute.append(helper.make_attribute("allowzero", 1))
    shape, _ = _check_against_onnxruntime(model, ["B", 4, "S", 8])
    assert [to_str(d) for d in shape] == ["4*B", "S", "8"]


def test_bert_dynamo_attention_reshape():
    """The real export: Reshape of [batch,4,seq,8] to [-1,seq,8] (onnxruntime's own symbolic
    inference says [4*batch,seq,8], wrong at seq = 0)."""
    import onnx

    model = onnx.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "corpus", "bert_dynamo.onnx"))
    result = shapeinfer.infer(model)
    shapes = {tuple(to_str(d) for d in f.shape) for f in (result.fact(n) for n in _tensor_names(model))
              if f is not None and f.shape is not None}
    assert ("-4*batch*iszero(seq)+4*batch", "seq+4*iszero(seq)", "8") in shapes


def _tensor_names(model):
    return [o for n in model.graph.node for o in n.output]


def _random_reshape(rng):
    rank = rng.randint(1, 4)
    x_dims = [rng.choice(["S", "T", "B", 1, 2, 3, 4]) for _ in range(rank)]
    spec, minus = [], False
    for j in range(rng.randint(1, 5)):
        c = rng.random()
        if c < 0.15 and not minus:
            spec.append(-1)
            minus = True
        elif c < 0.3 and j < rank:
            spec.append(0)
        elif c < 0.45:
            spec.append(rng.randint(1, 4))
        elif c < 0.8:
            spec.append(rng.choice(["S", "T", "B"]))
        elif c < 0.9:
            spec.append((rng.choice([2, 3]), rng.choice(["S", "T"])))
        else:
            spec.append((1, "S", "T"))
    return x_dims, spec, rng.choice([13, 17])


@pytest.mark.parametrize("seed", range(6))
def test_generated_reshapes_match_onnxruntime_at_every_small_binding(seed):
    """Random shapes with symbolic entries (which may be 0 and copy), the -1 and 0 among them:
    every inferred dim equals onnxruntime's wherever the run succeeds, 0 and 1 included."""
    import random

    rng = random.Random(seed)
    for _ in range(25):
        x_dims, spec, opset = _random_reshape(rng)
        model = _reshape_model(x_dims, spec, opset)
        try:
            shapeinfer.infer(model).fact("y")
        except Exception:
            continue  # an invalid shape reported as an error: another test's business
        try:
            _check_against_onnxruntime(model, x_dims)
        except AssertionError as e:
            if "no binding ran" in str(e):
                continue
            raise AssertionError(f"{x_dims} -> {spec} (opset {opset}): {e}") from None


def test_a_case_value_without_a_value_in_the_other_case_is_not_combined():
    """[X,1] to [-1, X%2]: with X%2 != 0 the -1 is X/(X%2), which has no value at X%2 == 0 --
    so R1 + iszero(X%2)*(R0 - R1) would not evaluate there although the run succeeds ([X,1]).
    That dim stays unknown; the entry's dim is exact. (Found by the generator, seed 24417.)"""
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[X,1] x) => (float[?,?] y) {
      s = Shape(x)
      i0 = Constant<value = int64[1] {0}>()
      n = Gather(s, i0)
      two = Constant<value = int64[1] {2}>()
      m = Mod(n, two)
      neg = Constant<value = int64[1] {-1}>()
      shape = Concat<axis = 0>(neg, m)
      y = Reshape(x, shape)
    }
    """)
    shape = shapeinfer.infer(model).fact("y").shape
    sess = _session(model)
    ran = 0
    for x in range(8):
        (y,) = sess.run(None, {"x": np.zeros((x, 1), np.float32)})
        for k, d in enumerate(shape):
            if free_symbols(d) <= {"X"}:
                assert evaluate(d, {"X": x}) == y.shape[k], (to_str(d), x, y.shape)
                ran += 1
    assert ran >= 8 and to_str(shape[1]) == "iszero(X%2)+X%2"


# ------------------------------------------------------------------ values that are conditions

GQA_MODEL = """
<ir_version: 9, opset_import: ["" : 18]>
g (float[B,H,S,E] q, float[B,KV,S,E] k) => (float y, int64 groups) {
    h = Shape<start = 1, end = 2>(q)
    kv = Shape<start = 1, end = 2>(k)
    zero = Constant<value = int64[1] {0}>()
    one = Constant<value = int64[1] {1}>()
    two = Constant<value = int64[1] {2}>()
    same = Equal(h, kv)
    differ = Not(same)
    rem = Mod(h, kv)
    divides = Equal(rem, zero)
    gqa = And(differ, divides)
    ratio = Div(h, kv)
    groups = Where(gqa, ratio, one)
    b = Shape<start = 0, end = 1>(k)
    s = Shape<start = 2, end = 3>(k)
    e = Shape<start = 3, end = 4>(k)
    ku = Unsqueeze(k, two)
    target = Concat<axis = 0>(b, kv, groups, s, e)
    kx = Expand(ku, target)
    shape = Concat<axis = 0>(b, h, s, e)
    y = Reshape(kx, shape)
}
"""


def test_grouped_query_repeat_is_exact():
    """The group count of an attention function -- ``Where(Equal(Mod(h, kv), 0) and h != kv,
    h/kv, 1)`` -- is an exact dim (the condition its 0/1 indicator), so the K repeated to
    [B,H,S,E] is exact, also where S or E is 0 and their entries copy another dim. Checked in
    onnxruntime at every binding that runs (kv >= 1: an integer division by 0 is undefined)."""
    model = onnx.parser.parse_model(GQA_MODEL)
    result = shapeinfer.infer(model)
    y, groups = result.fact("y"), result.fact("groups")
    names = {"B", "H", "S", "E", "KV"}
    assert _exact(y.shape, names), [to_str(d) for d in y.shape]
    (g,) = groups.value.tolist()
    assert free_symbols(g) <= names, to_str(g)
    sess = _session(model)
    ran = 0
    for b, h, kv, s, e in itertools.product((0, 1, 2), (0, 1, 2, 4, 6), (1, 2, 3), (0, 1, 3), (0, 2)):
        binding = {"B": b, "H": h, "KV": kv, "S": s, "E": e}
        feeds = {"q": np.zeros((b, h, s, e), np.float32), "k": np.zeros((b, kv, s, e), np.float32)}
        try:
            real_y, real_groups = sess.run(None, feeds)
        except Exception:
            continue  # no run: the counts do not match
        ran += 1
        assert evaluate(g, binding) == int(real_groups[0]), binding
        assert tuple(evaluate(d, binding) for d in y.shape) == real_y.shape, (binding, [to_str(d) for d in y.shape])
    assert ran > 50


BCAST_MODEL = """
<ir_version: 9, opset_import: ["" : 18]>
g (float[seq,32] x, float[t] c, float[t,32] z) => (float y) {
    n = Shape(c)
    width = Constant<value = int64[1] {32}>()
    shape = Concat<axis = 0>(n, width)
    r = Reshape(x, shape)
    y = Add(r, z)
}
"""


def test_broadcast_with_a_zero_case_copy_is_the_dim():
    """r is [t + iszero(t)*(seq - t), 32]: where t = 0 the entry copies seq. Broadcast with z's t,
    it is t in every run (at t = 0 the result is 0 or the run fails) -- and ``check`` still
    says where it fails (t = 0 with seq > 1)."""
    model = onnx.parser.parse_model(BCAST_MODEL)
    result = shapeinfer.infer(model)
    assert [to_str(d) for d in result.fact("r").shape] == ["-t*iszero(t)+seq*iszero(t)+t", "32"] or \
        [to_str(d) for d in result.fact("r").shape] == ["seq*iszero(t)+t", "32"]
    assert result.shape_strs("y") == ["t", "32"]
    sess = _session(model)
    ran = 0
    for seq, t in itertools.product((0, 1, 2, 5), (0, 1, 2, 5)):
        feeds = {"x": np.zeros((seq, 32), np.float32), "c": np.zeros(t, np.float32), "z": np.zeros((t, 32), np.float32)}
        try:
            (y,) = sess.run(None, feeds)
        except Exception:
            continue
        ran += 1
        assert y.shape == (t, 32)
    assert ran >= 5
    report = shapeinfer.check(model, include_empty=True)  # (only t=0 breaks it: shown on request)
    text = " ".join(f.message for f in report.findings)
    assert "t=0" in text.replace(" ", ""), text
    assert not any(f.code == "forced-broadcast" for f in shapeinfer.check(model).findings)


def test_evaluation_reads_around_an_atom_with_no_value():
    """``R1 + iszero(m)*(R0 - R1)`` has a value where R1 has none (it cancels) or R0 has none
    (its factor is 0); a dim that does depend on such an atom still has none."""
    d = parse("X/(Y%2) + iszero(Y%2)*(Z - X/(Y%2))")
    assert evaluate(d, {"X": 4, "Y": 1, "Z": 7}) == 4
    assert evaluate(d, {"X": 4, "Y": 2, "Z": 7}) == 7
    with pytest.raises(Exception):
        evaluate(parse("X/(Y%2) + Z"), {"X": 4, "Y": 2, "Z": 7})


@pytest.mark.parametrize("a,b,printed", [
    ("4*B*S*T", "S*T+4*iszero(S*T)", "-4*B*iszero(S*T)+4*B"),  # a multiple of m over m + z*iszero(m)
    ("K*V*W", "3*K*iszero(Q)+3*K*Q", "V*W/(3*Q+3*iszero(Q))"),  # a factor of every term cancels
])
def test_division_forms(a, b, printed):
    q = truediv(parse(a), parse(b))
    assert to_str(q) == printed
    for values in itertools.product((0, 1, 2, 3), repeat=5):
        binding = dict(zip("BSTKVWQ", values + (2, 3)))
        den = evaluate(parse(b), binding)
        if den == 0:
            continue  # no value: the division's run fails
        num = evaluate(parse(a), binding)
        if num % den:
            continue
        assert evaluate(q, binding) == num // den, binding


VIEWS_MODEL = """
<ir_version: 9, opset_import: ["" : 18]>
g (float[B,T,64] x, float[B,HW,C] z, float[N,K,H,W] conv) => (float heads, float grid) {
    b = Shape<start = 0, end = 1>(x)
    t = Shape<start = 1, end = 2>(x)
    minus = Constant<value = int64[1] {-1}>()
    sixteen = Constant<value = int64[1] {16}>()
    view = Concat<axis = 0>(b, t, minus, sixteen)
    heads = Reshape(x, view)
    zb = Shape<start = 0, end = 1>(z)
    hw = Shape<start = 2, end = 4>(conv)
    spatial = Concat<axis = 0>(zb, hw, minus)
    grid = Reshape(z, spatial)
}
"""


def test_attention_and_segformer_views():
    """An attention view [B,T,-1,16] whose B and T come from the data tensor itself is [B,T,4,16]
    (with B*T = 0 the -1 has no value and the run fails); SegFormer's [B,h*w,C] -> [B,h,w,-1]
    with h, w from a conv is exact where w = 0 copies C -- both checked in onnxruntime at
    bindings with zeros."""
    model = onnx.parser.parse_model(VIEWS_MODEL)
    result = shapeinfer.infer(model)
    assert result.shape_strs("heads") == ["B", "T", "4", "16"]
    grid = result.fact("grid").shape
    sess = _session(model)
    ran = 0
    for b, t, h, w, c in itertools.product((0, 1, 2), (0, 3), (0, 1, 3), (0, 2), (1, 4)):
        feeds = {"x": np.zeros((b, t, 64), np.float32), "z": np.zeros((b, h * w, c), np.float32),
                 "conv": np.zeros((1, 2, h, w), np.float32)}
        binding = {"B": b, "T": t, "HW": h * w, "C": c, "N": 1, "K": 2, "H": h, "W": w}
        try:
            real_heads, real_grid = sess.run(None, feeds)
        except Exception:
            continue
        ran += 1
        assert tuple(evaluate(d, binding) for d in result.fact("heads").shape) == real_heads.shape
        assert tuple(evaluate(d, binding) for d in grid) == real_grid.shape, (binding, [to_str(d) for d in grid])
    assert ran >= 10


COMPARE_MODEL = """
<ir_version: 9, opset_import: ["" : 18]>
g (float[A] x, float[B] y) => (int64 lt, int64 le, int64 gt, int64 ge, int64 eq, float e) {
    a = Shape(x)
    b = Shape(y)
    l = Less(a, b)
    lt = Cast<to = 7>(l)
    le_b = LessOrEqual(a, b)
    le = Cast<to = 7>(le_b)
    gt_b = Greater(a, b)
    gt = Cast<to = 7>(gt_b)
    ge_b = GreaterOrEqual(a, b)
    ge = Cast<to = 7>(ge_b)
    eq_b = Equal(a, b)
    ne_b = Not(eq_b)
    both = Or(ne_b, l)
    eq = Cast<to = 7>(both)
    t = Where(l, b, a)
    e = Expand(x, t)
}
"""


def test_comparisons_of_dims_are_indicators():
    """Less/LessOrEqual/Greater/GreaterOrEqual of dims that bounds cannot decide are
    ``min(1, max(0, difference))`` indicators; with Equal/Not/Or/Where/Cast they stay exact --
    every value and shape checked in onnxruntime at A, B in 0..4."""
    model = onnx.parser.parse_model(COMPARE_MODEL)
    result = shapeinfer.infer(model)
    outs = ["lt", "le", "gt", "ge", "eq"]
    values = {o: result.fact(o).value.tolist()[0] for o in outs}
    assert all(isinstance(v, type(S)) for v in values.values()), values
    assert to_str(values["lt"]) == "min(1,max(0,-A+B))"
    sess = _session(model)
    ran = 0
    for a, b in itertools.product(range(5), repeat=2):
        try:
            real = sess.run(None, {"x": np.zeros(a, np.float32), "y": np.zeros(b, np.float32)})
        except Exception:
            continue  # the Expand of [a] to [max(a, b)] fails unless a is 1 or equal
        ran += 1
        binding = {"A": a, "B": b}
        for o, arr in zip(outs, real):
            assert evaluate(values[o], binding) == int(arr[0]), (o, binding)
        assert tuple(evaluate(d, binding) for d in result.fact("e").shape) == real[-1].shape, binding
    assert ran >= 10
