"""Expand, Reshape and Tile at every opset version, against NumPy ground truth.

Each case runs twice: with the input's real (static) shape, and with every input dim replaced by
a symbol -- there the inferred dims are evaluated with the real sizes bound. The rules of the
other ops (Conv, pools, Resize, Pad, MatMul, ...) are in test_other_op_rules.py.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import shapeinfer
from shapeinfer import ShapeInferenceError
from tests.helpers import evaluate_shape, single_node_model, symbols_for

RESHAPE_VERSIONS = [5, 13, 14, 19, 21, 23]
EXPAND_VERSIONS = [8, 13]
TILE_VERSIONS = [6, 13]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

dims = st.integers(0, 4)
shapes = st.lists(dims, min_size=0, max_size=4)


def check(model, real_shape, binding=None):
    result = shapeinfer.infer(model)
    got = result.shape("y")
    assert got is not None, "rank lost"
    if binding is None:
        assert tuple(got) == tuple(real_shape)
    else:
        assert evaluate_shape(got, binding) == tuple(real_shape), f"{[str(d) for d in got]} under {binding}"


@st.composite
def reshape_cases(draw):
    """(input shape, shape spec, allowzero, numpy target) for a valid Reshape."""
    in_shape = draw(shapes)
    flat = list(in_shape)
    # Regroup the input dims into a new shape, sometimes with an extra 1.
    cuts = sorted(draw(st.sets(st.integers(1, max(len(flat) - 1, 1)), max_size=3))) if len(flat) > 1 else []
    groups, start = [], 0
    for c in cuts + [len(flat)]:
        groups.append(int(np.prod(flat[start:c], dtype=np.int64)))
        start = c
    target = [g for g in groups if True] if flat else []
    if draw(st.booleans()):
        target.insert(draw(st.integers(0, len(target))), 1)
    allowzero = draw(st.booleans())
    if any(t == 0 and (i >= len(in_shape) or in_shape[i] != 0) for i, t in enumerate(target)):
        allowzero = True  # a literal 0 that is not a copy of the input dim needs allowzero=1
    spec = list(target)
    # Entries equal to the input dim at the same index may be written as 0 (copy), allowzero=0.
    if not allowzero:
        for i in range(min(len(spec), len(in_shape))):
            if spec[i] == in_shape[i] and draw(st.booleans()):
                spec[i] = 0
    nonzero_product = all(t != 0 for t in target)
    if target and nonzero_product and draw(st.booleans()):
        k = draw(st.integers(0, len(spec) - 1))
        if not (allowzero and 0 in spec):
            spec[k] = -1
    return in_shape, spec, allowzero, target


@pytest.mark.parametrize("opset", RESHAPE_VERSIONS)
@SETTINGS
@given(case=reshape_cases())
def test_reshape_matches_numpy(opset, case):
    in_shape, spec, allowzero, target = case
    assume(opset >= 14 or not allowzero)  # allowzero exists from Reshape-14 on
    attrs = {"allowzero": 1} if allowzero else {}
    np_spec = [in_shape[i] if (e == 0 and not allowzero) else e for i, e in enumerate(spec)]
    real = np.reshape(np.empty(in_shape), np_spec).shape
    assert list(real) == list(target)
    const = [np.array(spec, dtype=np.int64)]
    check(single_node_model("Reshape", opset, in_shape, const, attrs), real)
    names, binding = symbols_for(in_shape)
    check(single_node_model("Reshape", opset, names, const, attrs), real, binding)


@SETTINGS
@given(case=reshape_cases())
def test_reshape_v1_attribute(case):
    in_shape, spec, allowzero, target = case
    assume(not allowzero)  # Reshape-1 has no allowzero
    real = np.reshape(np.empty(in_shape), [in_shape[i] if e == 0 else e for i, e in enumerate(spec)]).shape
    names, binding = symbols_for(in_shape)
    check(single_node_model("Reshape", 1, in_shape, attrs={"shape": spec}), real)
    check(single_node_model("Reshape", 1, names, attrs={"shape": spec}), real, binding)


@st.composite
def expand_cases(draw):
    rank = draw(st.integers(0, 4))
    a, b = [], []
    for _ in range(rank):
        kind = draw(st.sampled_from(["same", "a1", "b1"]))
        d = draw(dims)
        a.append(d if kind != "a1" else 1)
        b.append(d if kind != "b1" else 1)
    extra = draw(st.lists(dims, max_size=2))
    if draw(st.booleans()):
        b = extra + b  # target longer than the input
    else:
        a = extra + a  # target shorter than the input: the output is larger than the target
    return a, b


@pytest.mark.parametrize("opset", EXPAND_VERSIONS)
@SETTINGS
@given(case=expand_cases())
def test_expand_matches_numpy(opset, case):
    a, b = case
    real = (np.ones(a) * np.ones(b)).shape
    const = [np.array(b, dtype=np.int64)]
    check(single_node_model("Expand", opset, a, const), real)
    names, binding = symbols_for(a)
    check(single_node_model("Expand", opset, names, const), real, binding)


@pytest.mark.parametrize("opset", TILE_VERSIONS)
@SETTINGS
@given(a=shapes, data=st.data())
def test_tile_matches_numpy(opset, a, data):
    reps = data.draw(st.lists(st.integers(0, 3), min_size=len(a), max_size=len(a)))
    real = np.tile(np.empty(a), reps).shape if a else ()
    const = [np.array(reps, dtype=np.int64)]
    check(single_node_model("Tile", opset, a, const), real)
    names, binding = symbols_for(a)
    check(single_node_model("Tile", opset, names, const), real, binding)


@SETTINGS
@given(a=st.lists(dims, min_size=1, max_size=4), data=st.data())
def test_tile_v1_one_axis(a, data):
    axis = data.draw(st.integers(-len(a), len(a) - 1))
    tiles = data.draw(st.integers(0, 3))
    reps = [1] * len(a)
    reps[axis] = tiles
    real = np.tile(np.empty(a), reps).shape
    const = [np.array(tiles, dtype=np.int64), np.array(axis, dtype=np.int64)]
    check(single_node_model("Tile", 1, a, const), real)
    names, binding = symbols_for(a)
    check(single_node_model("Tile", 1, names, const), real, binding)


# ------------------------------------------------------------------ golden symbolic results


@pytest.mark.parametrize(
    "in_dims, spec, expected",
    [
        (["B", "S", 768], [0, 0, 12, -1], ["B", "S", "12", "64"]),
        (["B", "S"], [-1], ["B*S"]),
        (["B", "S", 4], [-1, 8], ["B*S/2", "8"]),
        (["B", "S", 64], [0, -1], ["B", "64*S"]),
    ],
    ids=["heads", "flatten_all", "rational", "merge_last"],
)
def test_reshape_symbolic_golden(in_dims, spec, expected):
    r = shapeinfer.infer(single_node_model("Reshape", 14, in_dims, [np.array(spec, dtype=np.int64)]))
    assert r.shape_strs("y") == expected


def test_expand_symbolic_golden():
    r = shapeinfer.infer(single_node_model("Expand", 13, ["N", 1], [np.array([2, 1, 6], dtype=np.int64)]))
    assert r.shape_strs("y") == ["2", "N", "6"]
    r = shapeinfer.infer(single_node_model("Expand", 13, ["N", "M"], [np.array([1, 1], dtype=np.int64)]))
    assert r.shape_strs("y") == ["N", "M"]


def test_unknown_shape_value_keeps_rank():
    """A shape input whose value is unknown but whose length is known still gives the rank."""
    from onnx import TensorProto, helper

    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    g = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 8]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    r = shapeinfer.infer(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]))
    assert len(r.shape("y")) == 3
    assert r.classify("y") == "unknown"


# ------------------------------------------------------------------ invalid models


@pytest.mark.parametrize(
    "op, opset, in_dims, consts, attrs, message",
    [
        ("Reshape", 14, [2, 3], [[7]], {}, "element counts cannot match"),
        ("Reshape", 14, ["B", "S", 768], [[0, 0, 13, -1]], {}, "element counts cannot match"),  # no run succeeds
        ("Reshape", 14, [2, 3], [[-1, -1]], {}, "more than one -1"),
        ("Reshape", 14, [2, 3], [[0, -1]], {"allowzero": 1}, "both 0 and -1"),
        ("Reshape", 14, [2, 3], [[-2, 3]], {}, "negative entry"),
        ("Reshape", 14, [2, 3], [[4, -1]], {}, "element counts cannot match"),
        ("Expand", 13, [3, 4], [[2, 4, 5]], {}, "cannot broadcast"),
        ("Tile", 13, [3, 4], [[2]], {}, "repeats has 1 entries"),
        ("Tile", 13, [3, 4], [[2, -1]], {}, "negative"),
    ],
    ids=["count", "count_symbolic", "two_minus_one", "zero_and_minus_one_allowzero", "negative",
         "minus_one_not_divisible", "expand_incompatible", "tile_wrong_length", "tile_negative"],
)
def test_invalid_models_raise_with_node_name(op, opset, in_dims, consts, attrs, message):
    model = single_node_model(op, opset, in_dims, [np.array(c, dtype=np.int64) for c in consts], attrs)
    with pytest.raises(ShapeInferenceError) as info:
        shapeinfer.infer(model)
    text = str(info.value)
    assert message in text
    assert f"{op.lower()}_node" in text and op in text
    assert "input shapes" in text


@pytest.mark.parametrize(
    "opset, in_dims, consts, attrs, n, expected",
    [
        (13, ["B", 10], [[3, 7]], {"axis": 1}, 2, [["B", "3"], ["B", "7"]]),
        (13, ["B", "S"], [], {"axis": 1}, 2, [["B", "S/2"], ["B", "S/2"]]),
        (18, [10], [], {"num_outputs": 3}, 3, [["4"], ["4"], ["2"]]),
        (11, [6, "S"], [], {"axis": 0, "split": [2, 4]}, 2, [["2", "S"], ["4", "S"]]),
    ],
    ids=["sizes_input", "equal_symbolic", "num_outputs_uneven", "sizes_attribute"],
)
def test_split(opset, in_dims, consts, attrs, n, expected):
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(c, dtype=np.int64), f"c{i}") for i, c in enumerate(consts)]
    outs = [f"y{i}" for i in range(n)]
    node = helper.make_node("Split", ["x"] + [t.name for t in inits], outs, **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_dims)],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    r = shapeinfer.infer(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]))
    assert [r.shape_strs(o) for o in outs] == expected
    # numbers: np.array_split agrees with the v18 uneven rule
    if opset == 18:
        assert [len(p) for p in np.array_split(np.empty(10), [4, 8])] == [4, 4, 2]


def test_registering_a_rule_twice_for_one_op_and_version_is_an_error(monkeypatch):
    from shapeinfer.infer import registry

    monkeypatch.setattr(registry, "_RULES", {k: list(v) for k, v in registry._RULES.items()})
    reshape_14 = registry.lookup("", "Reshape", 14)
    with pytest.raises(ValueError, match="two rules for Reshape .* since opset 14"):
        registry.rule("Reshape", since=14)(lambda ctx: None)
    with pytest.raises(ValueError, match="two rules for Tile"):
        registry.rule("Tile", "Tile", since=99)(lambda ctx: None)  # one op listed twice
    assert registry.lookup("", "Reshape", 14) is reshape_14
    registry.rule("Reshape", since=99)(lambda ctx: None)  # a new version is fine
