"""A dim_param in someone else's model is an opaque name, whatever characters it holds.

``float["3"]`` is a tensor whose size is called "3", not 3; ``"a*b"`` is not the product of a and
b. shapeinfer reads its own printed syntax back only from models it marked as written by it, and
even there a declared dim is a claim that ``check`` compares with inference.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import shapeinfer
from shapeinfer.infer.protos import mark_written_by_shapeinfer, written_by_shapeinfer
from shapeinfer.symbolic import evaluate, parse, sym, to_str

ort = pytest.importorskip("onnxruntime")

NAMES = ["3", "a*b", "batch+1", "min(a,b)", "bcast(a,b)", "-1", "2*seq", "it's", "x y", "0", "max"]


def _run(model, feeds):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def _concat_model(name: str, op: str = "Concat"):
    """y = Concat(x, x) (or a fallback op that keeps the shape) of x: float[name, 2]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [name, 2])
    if op == "Concat":
        node = helper.make_node("Concat", ["x", "x"], ["y"], axis=0)
    else:  # ReverseSequence has no rule of ours: onnx's inference passes the dims through
        node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=1, time_axis=0)
    inits = [onnx.numpy_helper.from_array(np.array([0, 0], np.int64), "lens")] if op != "Concat" else []
    g = helper.make_graph([node], "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("op", ["Concat", "ReverseSequence"])
def test_a_dim_param_is_a_name_whatever_it_holds(name, op):
    model = _concat_model(name, op)
    result = shapeinfer.infer(model)
    (d0, d1) = result.shape("y")
    assert d1 == 2
    factor = 2 if op == "Concat" else 1
    assert d0 == factor * sym(name) if factor == 2 else d0 == sym(name)
    for size in (0, 1, 5):
        (y,) = _run(model, {"x": np.zeros((size, 2), np.float32)})
        assert evaluate(d0, {name: size}) == y.shape[0]


def test_names_that_look_related_stay_unrelated():
    """x: ["a*b"], y: ["a","b"]: at run time "a*b" may be anything (5 with a=2, b=3)."""
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float["a*b"] x, float[a, b] y) => (float z) {
      f = Flatten<axis = 0>(y)
      z = Concat<axis = 1>(f, f)
    }
    """)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "a*b"
    result = shapeinfer.infer(m)
    assert result.shape_strs("z") == ["1", "2*a*b"]
    assert result.shape_strs("x") == ["'a*b'"]


def test_printed_names_read_back_only_from_marked_models():
    """Output dims are written in the printed syntax, quoted where a name is not an identifier;
    shapeinfer marks the model, so its own check reads them back as what they say."""
    model = _concat_model("3")
    annotated = shapeinfer.infer_shapes(model)
    assert written_by_shapeinfer(annotated) and not written_by_shapeinfer(model)
    dims = [d.dim_param or d.dim_value for d in annotated.graph.output[0].type.tensor_type.shape.dim]
    assert dims == ["2*'3'", 2]
    assert parse("2*'3'") == 2 * sym("3")
    report = shapeinfer.check(annotated)
    assert not [f for f in report.findings if f.code == "declared-shape"], report.findings
    assert all(d["kind"] == "same" for d in shapeinfer.infer(annotated).declared_dims())


def test_a_marked_models_claims_are_checked_not_believed():
    """Anyone can set the marker: a declared output dim "3*n" where inference says 2*n is a
    claim that check refutes (equal only at n = 0), and inference does not take it."""
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[n] x) => (float[m] y) {
      y = Concat<axis = 0>(x, x)
    }
    """)
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "3*n"
    mark_written_by_shapeinfer(m)
    assert shapeinfer.infer(m).shape_strs("y") == ["2*n"]
    found = [f for f in shapeinfer.check(m).findings if f.code == "declared-shape"]
    assert found and "3*n" in found[0].message
    # the same declaration in a model shapeinfer did not write names the dim: no finding
    del m.metadata_props[:]
    assert not [f for f in shapeinfer.check(m).findings if f.code == "declared-shape"]
    assert [d["kind"] for d in shapeinfer.infer(m).declared_dims()] == ["equal"]


@pytest.mark.parametrize("claim", ["c/((-a-6)//(3/8))", "c//(3/8)", "c%(3/8)", "a/(3/8)", "(a/4)/(1/2)"])
def test_a_claim_no_run_can_have_is_handled_without_an_internal_error(claim):
    """A marked model may claim any expression, also one with a divisor that is no integer
    (3/8): its range is empty, and the algebra must take it as such (it once divided by zero)."""
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[a,c] x) => (float[m,a] y) { y = Relu(x) }
    """)
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = claim
    mark_written_by_shapeinfer(m)
    assert shapeinfer.infer(m).shape_strs("y") == ["a", "c"]
    report = shapeinfer.check(m)
    assert not [f for f in report.findings if f.code == "internal-error"], [f.line() for f in report.findings]
    shapeinfer.optimize(m)


def test_input_shape_overrides_are_typed_by_the_user_and_may_be_expressions():
    model = _concat_model("n")
    result = shapeinfer.infer(model, input_shapes={"x": ["2*k", 2]})
    assert result.shape_strs("y") == ["4*k", "2"]
    assert to_str(result.shape("y")[0]) == "4*k"


def test_exporter_placeholder_names_on_outputs_give_way_to_the_inferred_dims():
    """Exporters name output dims they could not infer (MatMuloutput_dim_0, Resizeout_dim_1):
    the annotated model carries what inference knows (batch, 10) and still says what the name
    equals; an input dim's name and a dim inference does not know keep their declared names."""
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[batch,4] x, float[4,10] w, float[n] z) => (float[MatMuloutput_dim_0, Resizeout_dim_1] y,
                                                         float[batch, Relu_dim_1] r, int64[1, NonZero_dim_1] k) {
      y = MatMul(x, w)
      r = Relu(x)
      k = NonZero(z)
    }
    """)
    out = shapeinfer.infer_shapes(model)
    dims = {o.name: [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in out.graph.output}
    assert dims["y"] == ["batch", 10]
    assert dims["r"] == ["batch", 4]
    assert dims["k"] == [1, "NonZero_dim_1"]  # the count of nonzeros is data: the name stays
    said = {(d["tensor"], d["axis"]): d["inferred"] for d in shapeinfer.infer(model).declared_dims()}
    assert said[("y", 0)] == "batch" and said[("y", 1)] == "10"


def test_a_declared_name_and_a_made_up_one_are_never_one_dim():
    """Names declared only inside a subgraph are read after the main graph's walk has made up
    names: whichever comes first, the two stay different dims."""
    from onnx import parser as p

    from shapeinfer.infer.symbols import SymbolTable

    table = SymbolTable(p.parse_model('<ir_version: 8, opset_import: ["" : 18]>\ng (float[N] x) => (float[N] y) {'
                                      ' y = Relu(x) }'))
    made = table.mint("nonzero")
    declared = table.param(str(made))  # a body declaring the same text
    assert declared != made
    table2 = SymbolTable(p.parse_model('<ir_version: 8, opset_import: ["" : 18]>\ng (float[N] x) => (float[N] y) {'
                                       ' y = Relu(x) }'))
    first = table2.param("nonzero_1")  # declared first ...
    assert table2.mint("nonzero") != first  # ... then a made-up one takes another name
