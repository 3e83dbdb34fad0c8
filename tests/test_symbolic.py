"""The dim algebra: canonical forms, printing, parsing, bounds -- golden cases and property tests."""

import os
from fractions import Fraction
from math import floor

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from shapeinfer.symbolic import (
    BroadcastError,
    EvaluationError,
    ParseError,
    bcast,
    dmax,
    dmin,
    evaluate,
    floordiv,
    iszero,
    mod,
    parse,
    plain,
    provably_not_one,
    provably_positive,
    substitute,
    sym,
    to_str,
    truediv,
    zero_cases,
)

B, S, N = sym("batch"), sym("seq"), sym("N")


@pytest.mark.parametrize(
    "built, printed",
    [
        (2 * S + 1, "2*seq+1"),
        (B * S / 4, "batch*seq/4"),
        (truediv(B * S * 768, B * S * 12), "64"),
        (truediv((S + 1) * 768, (S + 1) * 12), "64"),
        (truediv(B * S * S + B * S, S + 1), "batch*seq"),
        ((S + 1) // 2, "(seq+1)//2"),
        (2 * ((S + 1) // 2), "2*((seq+1)//2)"),
        (floordiv(2 * S + 1, 2), "seq"),
        (floordiv(floordiv(S, 2), 3), "seq//6"),
        (mod(4 * S + 6, 4), "2"),
        (mod(S, 1), "0"),
        (S - S, "0"),
        (B * S - S * B, "0"),
        (bcast(B, 1), "batch"),
        (bcast(1, B), "batch"),
        (bcast(B, 3), "3"),
        (bcast(2 * S, 1), "2*seq"),
        (bcast(B, N), "bcast(N,batch)"),
        (bcast(N, B), "bcast(N,batch)"),
        (bcast(B, bcast(B, N)), "bcast(N,batch)"),
        (bcast(bcast(B, N), bcast(S, N)), "bcast(N,batch,seq)"),
        (bcast(B, N, 1, 4), "4"),
        (dmin(S, S + 1), "seq"),
        (dmax(S, S + 1), "seq+1"),
        (dmin(B, S), "min(batch,seq)"),
        ((S + 2) * (S - 2), "seq*seq-4"),
        (floordiv(S + mod(-S, 4), 4), "(seq+3)//4"),  # padded to a multiple of 4, then split
        (floordiv(S + mod(S, 2), 2), "(seq+1)//2"),
        (dmin(S, floordiv(S, 2)), "seq//2"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_canonical_print(built, printed):
    assert to_str(built) == printed
    assert parse(printed) == built


def test_equal_dims_compare_equal():
    assert (B + S) * 2 == 2 * S + 2 * B
    assert hash((B + S) * 2) == hash(2 * S + 2 * B)
    assert B * S / 4 == S * B / 4
    assert parse("seq + 1 + batch") == parse("batch+(seq+1)")


def test_bcast_of_two_constants_that_never_broadcast():
    with pytest.raises(BroadcastError):
        bcast(3, 4)


def test_bounds_predicates():
    assert provably_positive(S + 1)
    assert not provably_positive(S)
    assert provably_not_one(2 * S)  # even, never 1
    assert not provably_not_one(S)
    assert provably_not_one(S + 2)


def test_evaluate_bcast_failure_and_missing_symbol():
    with pytest.raises(EvaluationError):
        evaluate(bcast(B, N), {"batch": 2, "N": 3})
    assert evaluate(bcast(B, N), {"batch": 1, "N": 3}) == 3
    with pytest.raises(EvaluationError):
        evaluate(S + 1, {})


def test_substitute():
    assert substitute(bcast(N, S * B), {"seq": 0}) == 0
    assert substitute(S * B + 1, {"seq": 2}) == 2 * B + 1


@pytest.mark.parametrize("bad", ["", "1+", "(a", "a b", "foo(a,b)", "a $ b", "a//0"])
def test_parse_errors(bad):
    with pytest.raises(ParseError):
        parse(bad)


# ------------------------------------------------------------------ property tests
# Expression trees are built twice: evaluated directly with exact arithmetic, and built with the
# canonicalising constructors and then evaluated. The two must agree for every binding.

NAMES = ["a", "b", "c"]


def _leaf():
    return st.one_of(st.integers(-6, 9).map(lambda v: ("int", v)), st.sampled_from(NAMES).map(lambda n: ("sym", n)))


def _tree():
    return st.recursive(
        _leaf(),
        lambda kids: st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), kids, kids),
            st.tuples(st.sampled_from(["//", "%"]), kids, st.integers(1, 7).map(lambda v: ("int", v))),
            st.tuples(st.just("/"), kids, st.integers(1, 5).map(lambda v: ("int", v))),
            st.tuples(st.just("bcast"), kids, kids),
        ),
        max_leaves=8,
    )


class _NoValue(Exception):
    pass


def _direct(t, env):
    if t[0] == "int":
        return t[1]
    if t[0] == "sym":
        return env[t[1]]
    op, x, y = t
    a, b = _direct(x, env), _direct(y, env)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op == "/":
        q = Fraction(a) / b
        if q.denominator != 1:
            raise _NoValue  # an exact division that does not divide: no valid run has it
        return q
    if op == "//":
        return floor(Fraction(a) / b)
    if op == "%":
        return Fraction(a) - b * floor(Fraction(a) / b)
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise _NoValue


def _build(t):
    if t[0] == "int":
        return t[1]
    if t[0] == "sym":
        return sym(t[1])
    op, x, y = t
    a, b = _build(x), _build(y)
    return {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "min": lambda: dmin(a, b),
        "max": lambda: dmax(a, b),
        "/": lambda: truediv(a, b),
        "//": lambda: floordiv(a, b),
        "%": lambda: mod(a, b),
        "bcast": lambda: bcast(a, b),
    }[op]()


@settings(max_examples=int(os.environ.get("SHAPEINFER_EXAMPLES", 400)), deadline=None)
@given(_tree(), st.fixed_dictionaries({n: st.integers(0, 12) for n in NAMES}))
def test_simplify_then_evaluate_equals_direct(tree, env):
    try:
        expected = _direct(tree, env)
    except _NoValue:
        expected = None
    try:
        built = _build(tree)
    except BroadcastError:
        assert expected is None  # two constants that never broadcast: no binding gives a value
        return
    if expected is not None:
        assert evaluate(built, env) == expected
    # Where direct evaluation fails (a broadcast that fails at run time, an exact division that
    # does not divide) no valid run has that binding, and the simplified form may assume it away:
    # bcast(c, x) with c != 1 is c, and bounds treat every dim as an integer.


@settings(max_examples=int(os.environ.get("SHAPEINFER_EXAMPLES", 400)), deadline=None)
@given(_tree())
def test_parse_print_roundtrip(tree):
    try:
        built = _build(tree)
    except BroadcastError:
        built = None
    assume(built is not None)  # two constants that never broadcast: no expression to print
    assert parse(to_str(built)) == built


# ------------------------------------------------------------------ padding to a multiple
# A size padded up to a multiple of c (Swin's windows: x + (c - x%c)%c) has one canonical form,
# c*((x + c-1)//c), so that it equals the window count times c and cancels in quotients.


@settings(max_examples=int(os.environ.get("SHAPEINFER_EXAMPLES", 400)), deadline=None)
@given(
    st.integers(2, 9),
    st.lists(st.tuples(st.sampled_from(NAMES), st.integers(-3, 3)), min_size=1, max_size=3),
    st.integers(-10, 10),
    st.integers(1, 3),
    st.fixed_dictionaries({n: st.integers(-20, 40) for n in NAMES}),
)
def test_padding_to_a_multiple(c, lin, k0, k, env):
    r = k0
    for name, coef in lin:
        r = r + coef * sym(name)
    pads = [
        mod(c - mod(r, c), c),  # torch's (c - x % c) % c
        mod(-r, c),
        mod(mod(-r, c * 3), c),  # an inner remainder by a multiple of c reads through
    ]
    rv = evaluate(r, env) if not isinstance(r, int) else r
    want = k * (rv + (-rv) % c)
    forms = {k * (r + p) for p in pads}
    for padded in forms:
        assert evaluate(padded, env) == want, (to_str(padded), env)
    assert len(forms) == 1, [to_str(f) for f in forms]  # however the padding is written
    if not isinstance(r, int) and all(coef > 0 for mono, coef in r.terms if mono):  # rounding up
        assert forms == {k * c * floordiv(r + c - 1, c)}, [to_str(f) for f in forms]


def test_padded_sizes_cancel_with_their_window_counts():
    h = sym("h")
    padded = h + mod(h, 2)
    assert to_str(padded) == "2*((h+1)//2)"
    windows = floordiv(padded, 2)
    assert truediv(64 * B * windows * windows, 16 * padded * padded) == B
    w7 = h + mod(7 - mod(h, 7), 7)
    assert to_str(w7) == "7*((h+6)//7)"
    assert to_str(h - mod(h, 2)) == "h-(h%2)"  # rounding down is left alone


def test_plain_form_reads_inside_atoms():
    """A zero case inside a broadcast (or any other atom) is a zero case of the dim: plain()
    takes it as false there too, and zero_cases() lists it."""
    s, t = sym("s"), sym("t")
    exact = s * t + iszero(t) * 3 * s  # a Reshape entry t*s that copies 4*s where t = 0
    d = bcast(exact, s * t)
    assert [to_str(m) for m in zero_cases(d)] == ["t"]
    assert plain(d) == s * t
    for tv in (0, 1, 2):
        for sv in (0, 1, 3):
            if tv != 0:
                assert evaluate(plain(d), {"s": sv, "t": tv}) == evaluate(d, {"s": sv, "t": tv})


@settings(max_examples=int(os.environ.get("SHAPEINFER_EXAMPLES", 400)), deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(-12, 12), st.integers(-12, 12), st.integers(-60, 60))
def test_nested_floor_divisions_merge(c1, c2, j, k, x):
    """(x + j)//c1 + k, divided again by c2, is one division: (x + j + k*c1)//(c1*c2) -- so
    conv arithmetic written as repeated halvings meets its closed form."""
    s = sym("x")
    d = floordiv(floordiv(s + j, c1) + k, c2)
    assert evaluate(d, {"x": x}) == ((x + j) // c1 + k) // c2
    assert d == floordiv(s + j + k * c1, c1 * c2)


def test_sign_reasoning_splits_a_symbol_where_its_division_is_zero():
    """(w+7)//8 + 4*iszero((w+3)//4) is never 0: (w+3)//4 is 0 exactly at w = 0, where the
    sum is 4, and for w >= 1 the first division is >= 1. Proving it needs the cases of w itself
    (w = 0, w >= 1), not of the division alone, now that nested divisions merge into one."""
    w = sym("w")
    d = floordiv(w + 7, 8) + 4 * iszero(floordiv(w + 3, 4))
    assert provably_positive(d)
    assert iszero(d) == 0
    for v in range(40):
        assert evaluate(d, {"w": v}) >= 1
    e = floordiv(w + 4, 8) + 8 * iszero(floordiv(w, 4))  # zero for w in 0..3: four cases
    assert provably_positive(e)
    f = floordiv(w + 4, 8) - iszero(floordiv(w, 4))  # -1 at w = 0: not provable, and false
    assert not provably_positive(f) and evaluate(f, {"w": 0}) < 0
