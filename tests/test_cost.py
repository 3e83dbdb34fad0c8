"""`shapeinfer cost` against real runs: every node's MACs and output bytes recomputed from the
shapes onnxruntime produces (every node output exposed) at the corpus bindings, KV-cache
decoders at past = 0 and past > 0 among them; the symbolic figures evaluated there equal the
bound ones and the real ones."""

import json
import os

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import helper, parser

import shapeinfer
from shapeinfer.costs import cost
from shapeinfer.symbolic import evaluate, free_symbols
from shapeinfer_cli.main import cli
from tests import corpus

HERE = os.path.dirname(os.path.abspath(__file__))


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _real_macs(node, shapes):
    """MACs from the definitions, on real shapes (None: not a MAC op here, or a shape missing)."""
    def s(i, out=False):
        names = node.output if out else node.input
        return shapes.get(names[i]) if i < len(names) and names[i] else None

    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
    out = s(0, True)
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul", "com.microsoft.MatMulIntegerToFloat",
              "com.microsoft.DynamicQuantizeMatMul"):
        return int(np.prod(out)) * s(0)[-1]
    if op == "com.microsoft.FusedMatMul":
        a = s(0)
        return int(np.prod(out)) * (a[-2] if _attr(node, "transA", 0) else a[-1])
    if op == "com.microsoft.MatMulNBits":
        return int(np.prod(out)) * _attr(node, "K")
    if op == "Gemm":
        a = s(0)
        return int(np.prod(out)) * (a[0] if _attr(node, "transA", 0) else a[1])
    if op in ("Conv", "ConvInteger", "com.microsoft.FusedConv"):  # out x C_in/group x kernel
        return int(np.prod(out)) * int(np.prod(s(1)[1:]))
    if op == "QLinearConv":
        return int(np.prod(out)) * int(np.prod(s(3)[1:]))
    if op == "ConvTranspose":
        return int(np.prod(s(0))) * int(np.prod(s(1)[1:]))
    if op in ("com.microsoft.Attention", "com.microsoft.QAttention"):
        x, w = s(0), s(1)
        present = s(1, True)
        total = present[3] if present is not None else x[1]
        return x[0] * x[1] * x[2] * w[1] + x[0] * x[1] * total * 2 * out[2]
    if op in ("com.microsoft.MultiHeadAttention", "com.microsoft.GroupQueryAttention"):
        q = s(0)
        present = s(1, True)
        total = present[2]
        qk = out[2] if op.endswith("GroupQueryAttention") else q[2]
        return q[0] * q[1] * total * (qk + out[2])
    return None


def _exposed_run(model, entry):
    names = [o for n in model.graph.node for o in n.output if o]
    sess = corpus._session(model, names)
    for feeds, binding in corpus._bindings(entry, model):
        try:
            values = sess.run(names, feeds)
        except Exception:  # onnxruntime's own failure at this binding: nothing to compare
            continue
        shapes = {n: tuple(v.shape) for n, v in zip(names, values)}
        nbytes = {n: (v.nbytes if v.dtype != object else None) for n, v in zip(names, values)}
        shapes.update({k: tuple(v.shape) for k, v in feeds.items()})
        nbytes.update({k: v.nbytes for k, v in feeds.items()})
        for t in model.graph.initializer:
            shapes[t.name] = tuple(t.dims)
        yield binding, shapes, nbytes


def _real_peak(model, nbytes):
    """The activation peak from real bytes, walked as the report walks it."""
    graph = model.graph
    produced = {o for n in graph.node for o in n.output}
    init = {t.name for t in graph.initializer}
    last = {}
    for k, n in enumerate(graph.node):
        for i in n.input:
            last[i] = k
    keep = {o.name for o in graph.output}
    live = {i.name: nbytes[i.name] for i in graph.input if i.name not in init and i.name not in produced}
    peak = cur = sum(live.values())
    for k, n in enumerate(graph.node):
        for o in n.output:
            if o:
                live[o] = nbytes.get(o) or 0
                cur += live[o]
        peak = max(peak, cur)
        for t in set(n.input) | set(n.output):
            if t in live and last.get(t, -1) <= k and t not in keep:
                cur -= live.pop(t)
    return peak


ENTRIES = [e for e in corpus.entries() if e["model"] in ("bert", "gpt2", "llama", "cnn", "qwen2_kv", "t5", "vit_torchvision")
           or e["file"] in ("bert_fused.onnx", "gpt2_fused.onnx", "bert_int8.onnx", "cnn_qop.onnx",
                            "qwen2_kv_session_ext.onnx")]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"])
def test_cost_equals_real_runs(entry):
    pytest.importorskip("onnxruntime")
    model = onnx.load(os.path.join(entry["dir"], entry["file"]))
    report = cost(model)
    runs = 0
    compared = 0
    for binding, shapes, nbytes in _exposed_run(model, entry):
        runs += 1
        bind = {k: v for k, v in binding.items() if k in report.symbols}
        bound = cost(model, bind=bind)
        total_real = 0
        for node, symbolic, numeric in zip(model.graph.node, report.nodes, bound.nodes):
            real = _real_macs(node, shapes)
            if real is None:
                assert symbolic.macs == 0 or node.domain not in ("", "ai.onnx"), (node.name, symbolic.macs)
                continue
            total_real += real
            assert numeric.macs == real, (node.name, node.op_type, numeric.macs, real, binding)
            if not (free_symbols(symbolic.macs) - bind.keys()) if not isinstance(symbolic.macs, int) else True:
                assert evaluate(symbolic.macs, bind) == real, (node.name, symbolic.macs, binding)
            compared += 1
            out_bytes = sum(nbytes[o] for o in node.output if o and nbytes.get(o) is not None)
            assert numeric.output_bytes == out_bytes, (node.name, numeric.output_bytes, out_bytes)
        assert bound.macs == total_real
        assert evaluate(report.macs, bind) == bound.macs
        assert evaluate(report.flops, bind) == bound.flops
        assert evaluate(report.activation_bytes, bind) == bound.activation_bytes
        peak = _real_peak(model, nbytes)
        assert bound.activation_peak_bytes == peak, (bound.activation_peak_bytes, peak, binding)
        symbolic_peak = evaluate(report.activation_peak_bytes, bind)
        assert symbolic_peak == peak if not report.peak_is_bound else symbolic_peak >= peak
    assert runs >= 2 and (compared or entry["model"] not in ("bert", "gpt2", "llama", "cnn"))


def test_kv_cache_decoder_costs_grow_with_past():
    entry = next(e for e in corpus.entries() if e["file"] == "qwen2_kv_classic.onnx")
    model = onnx.load(os.path.join(entry["dir"], entry["file"]))
    report = cost(model)
    assert "past" in report.symbols
    at0 = cost(model, bind={"batch": 1, "seq": 1, "past": 0}).macs
    at5 = cost(model, bind={"batch": 1, "seq": 1, "past": 5}).macs
    assert at5 > at0 > 0
    assert evaluate(report.macs, {"batch": 1, "seq": 1, "past": 5}) == at5


# ------------------------------------------------------------------ single ops, by definition

H = '<ir_version: 9, opset_import: ["" : 18]>\n'


@pytest.mark.parametrize("text, binding, macs", [
    ("g (float[B,S,64] x, float[64,32] w) => (float y) { y = MatMul(x, w) }", {"B": 2, "S": 5}, 2 * 5 * 32 * 64),
    ("g (float[M,K] a, float[N,K] b) => (float y) { y = Gemm<transB = 1>(a, b) }", {"M": 3, "K": 7, "N": 4}, 3 * 4 * 7),
    ("g (float[K,M] a, float[K,N] b) => (float y) { y = Gemm<transA = 1>(a, b) }", {"M": 3, "K": 7, "N": 4}, 3 * 4 * 7),
    ("g (float[N,8,H,W] x, float[16,4,3,3] w) => (float y) { y = Conv<group = 2, pads = [1, 1, 1, 1]>(x, w) }",
     {"N": 2, "H": 5, "W": 6}, 2 * 16 * 5 * 6 * 4 * 9),
    ("g (float[N,8,H,W] x, float[8,3,2,2] w) => (float y) { y = ConvTranspose<strides = [2, 2]>(x, w) }",
     {"N": 1, "H": 3, "W": 4}, 1 * 8 * 3 * 4 * 3 * 4),
    ("g (float[B,I,J] a, float[B,J,K] b) => (float y) { y = Einsum<equation = \"bij,bjk->bik\">(a, b) }",
     {"B": 2, "I": 3, "J": 4, "K": 5}, 2 * 3 * 4 * 5),
    ("g (float[X,Y,I,J] a, float[J,K] b) => (float y) { y = Einsum<equation = \"...ij,jk->...ik\">(a, b) }",
     {"X": 2, "Y": 3, "I": 4, "J": 5, "K": 6}, 2 * 3 * 4 * 5 * 6),
    ("g (float[B,S,64] x) => (float y) { y = Relu(x) }", {"B": 2, "S": 3}, 0),
])
def test_mac_formulas_by_definition(text, binding, macs):
    model = parser.parse_model(H + text)
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    report = cost(model)
    assert evaluate(report.macs, binding) == macs
    assert cost(model, bind=binding).macs == macs


def test_flops_parameters_and_external_weights_never_read(tmp_path):
    from onnx import numpy_helper

    model = parser.parse_model(H + """
        g (float[B,S,8] x, float[8,8] w) => (float y) {
          m = MatMul(x, w)  r = Relu(m)  s = ReduceSum<keepdims = 0>(r)  y = Softmax(r) }""")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    del model.graph.input[1]
    model.graph.initializer.append(numpy_helper.from_array(np.ones((8, 8), np.float32), "w"))
    report = cost(model, bind={"B": 2, "S": 3})
    assert report.params == 64 and report.param_bytes == 256
    assert report.macs == 2 * 3 * 8 * 8
    # Relu and Softmax: one per output element (48 each); ReduceSum: one per input element (48)
    assert report.flops == 48 * 3
    # external weights: counted from their dims, the data file is never opened
    path = tmp_path / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="w.bin", size_threshold=0)
    os.remove(tmp_path / "w.bin")  # not even there: nothing reads it
    assert cost(onnx.load(path, load_external_data=False)).params == 64


def test_data_dependent_dims_are_named_and_stay_symbols():
    model = parser.parse_model(H + """
        g (float[N] x, float[M,4] w) => (float y) {
          nz = NonZero(x)  t = Transpose(nz)  f = Cast<to = 1>(t)  y = MatMul(f, w) }""")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    report = cost(model)
    assert report.unknown_symbols
    (name,) = report.unknown_symbols
    assert name in free_symbols(report.macs)
    text = CliRunner().invoke(cli, ["cost", _save(model, "nz.onnx")]).output
    assert f"unknown: {name}" in text


_SAVED = {}


def _save(model, name):
    import tempfile

    folder = _SAVED.setdefault("dir", tempfile.mkdtemp())
    path = os.path.join(folder, name)
    onnx.save(model, path)
    return path


def test_cli_table_formulas_and_json_schema():
    path = os.path.join(HERE, "..", "fixtures", "corpus", "gpt2_classic.onnx")
    r = CliRunner().invoke(cli, ["cost", path])
    assert r.exit_code == 0, r.output
    assert "by op" in r.output and "top 10 nodes" in r.output and "MACs   = " in r.output
    assert "batch*seq^2" in r.output
    data = json.loads(CliRunner().invoke(cli, ["cost", path, "--json"]).output)
    assert data["schema_version"] == 1 and data["symbols"] == ["batch", "seq"]
    assert set(data["total"]) >= {"macs", "flops", "params", "param_bytes", "activation_peak_bytes"}
    assert data["by_op"]["MatMul"]["count"] > 0 and data["nodes"]
    bound = json.loads(CliRunner().invoke(cli, ["cost", path, "--json", "--bind", "batch=2", "--bind", "seq=9"]).output)
    assert isinstance(bound["total"]["macs"], int)
    assert evaluate(shapeinfer.symbolic.parse(data["total"]["macs"]), {"batch": 2, "seq": 9}) == bound["total"]["macs"]
    assert all(isinstance(v["macs"], int) for v in bound["by_op"].values())


@pytest.mark.parametrize("args, message", [
    (["--bind", "nope=3"], "no symbol"),
    (["--bind", "batch=x"], "SYMBOL=SIZE"),
    (["--bind", "batch=1", "--bind", "batch=2"], "given twice"),
])
def test_cli_bad_binds_are_usage_errors(capsys, args, message):
    from shapeinfer_cli.main import main

    path = os.path.join(HERE, "..", "fixtures", "corpus", "gpt2_classic.onnx")
    assert main(["cost", path] + args) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("name, macs, params", [
    # published: MobileNetV3-Small 56 M multiply-adds at 224x224 (Howard et al. 2019, table 3);
    # ResNet-18 1.8 G (He et al. 2016, table 1); torchvision's parameter counts, less the
    # BatchNorm statistics the exporter folds into the convolutions
    ("mobilenet_v3_small", (56e6, 57e6), (2.52e6, 2.55e6)),
    ("resnet18", (1.80e9, 1.83e9), (11.6e6, 11.7e6)),
])
def test_published_figures(name, macs, params):
    """Graph-only exports (fixtures/published/export_published.py: the weights' data file is not
    committed -- the cost reads their dims, never their data)."""
    folder = os.path.join(HERE, "..", "fixtures", "published")
    model = onnx.load(os.path.join(folder, f"{name}.onnx"), load_external_data=False)
    report = cost(model, base_dir=folder)
    assert report.symbols == ["batch", "height", "width"]
    at224 = cost(model, bind={"batch": 1, "height": 224, "width": 224}, base_dir=folder)
    assert macs[0] <= at224.macs <= macs[1], at224.macs
    assert params[0] <= at224.params <= params[1], at224.params
    for b, h, w in ((1, 224, 224), (2, 160, 192), (1, 97, 131)):
        bound = cost(model, bind={"batch": b, "height": h, "width": w}, base_dir=folder)
        assert evaluate(report.macs, {"batch": b, "height": h, "width": w}) == bound.macs
    assert cost(model, bind={"batch": 4, "height": 224, "width": 224}, base_dir=folder).macs == 4 * at224.macs


# ------------------------------------------------------------------ regressions (an adversarial review)


def test_the_api_function_survives_importing_the_package():
    import shapeinfer.costs  # noqa: F401 - a subpackage named like the function would replace it

    model = onnx.load(os.path.join(HERE, "..", "fixtures", "tiny_bert.onnx"))
    assert shapeinfer.cost(model).macs == shapeinfer.cost(model).macs
    assert shapeinfer.CostReport is type(shapeinfer.cost(model))


def test_binding_sizes_where_the_model_is_invalid_is_a_bind_error(capsys):
    model = parser.parse_model(H + "g (float[A] x, float[B] z) => (float y) { y = Add(x, z) }")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    with pytest.raises(shapeinfer.BindError, match="invalid at A=2, B=3"):
        cost(model, bind={"A": 2, "B": 3})
    assert cost(model, bind={"A": 3, "B": 3}).flops == 3
    from shapeinfer_cli.main import main

    assert main(["cost", _save(model, "add.onnx"), "--bind", "A=2", "--bind", "B=3"]) == 2
    assert "invalid at A=2, B=3" in capsys.readouterr().err


def test_a_partial_binding_substitutes_what_it_binds():
    model = parser.parse_model(H + "g (float[B,S] x, float[S,4] w) => (float y) { y = MatMul(x, w) }")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    report = cost(model, bind={"S": 3})
    assert report.macs == shapeinfer.symbolic.parse("12*B")


def test_fused_matmul_with_transposed_batch_contracts_over_the_first_dim():
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft", transA=1, transBatchA=1)], "g",
        [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, ["K", "B", "M"]),
         helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, ["B", "K", "N"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["B", "M", "N"])]),
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)])
    node = model.graph.node[0]
    from shapeinfer.costs.formulas import node_cost

    shapes = {"a": (5, 2, 3), "b": (2, 5, 7), "y": (2, 3, 7)}
    assert node_cost(node, shapes.get)[0] == 2 * 3 * 7 * 5


def test_the_peak_keeps_what_a_subgraph_reads_until_its_node():
    model = parser.parse_model(H + """
        g (float[N] x, bool c) => (float y) {
          e = Exp(x)  s = ReduceSum<keepdims = 0>(x)
          y = If(c) <then_branch = t () => (float a) { a = Identity(e) },
                     else_branch = f () => (float b) { b = Neg(e) }> }""")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    report = cost(model, bind={"N": 100})
    # x (400) and e (400) live together until the If reads e; then y (400)
    assert report.activation_peak_bytes >= 800 + 4


def test_the_simpler_upper_bound_is_above_every_candidate():
    from shapeinfer.costs.report import _upper_bound
    from shapeinfer.symbolic import parse as p

    cands = [p("4*A*B-4*A+100"), p("8*A+5"), p("2*A*B")]
    bound = _upper_bound(cands)
    for a in range(0, 20):
        for b in range(0, 6):
            assert evaluate(bound, {"A": a, "B": b}) >= max(evaluate(c, {"A": a, "B": b}) for c in cands)


def test_parameters_of_constant_lists_and_sparse_initializers():
    from onnx import numpy_helper

    model = parser.parse_model(H + "g (float[B,3] x) => (float y) { c = Constant<value_floats = [1.0, 2.0, 3.0]>()"
                                   "  y = Add(x, c) }")
    assert cost(model).params == 3 and cost(model).param_bytes == 12
    model = parser.parse_model(H + "g (float[B,3] x) => (float y) { y = Add(x, sp) }")
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0], np.float32), "sp"), numpy_helper.from_array(np.array([1], np.int64), "i"),
        [3]))
    assert cost(model).params == 3


def test_a_node_whose_shapes_are_unknown_makes_the_total_unknown():
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, ["K", "N"])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    report = cost(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    assert report.macs is None and any("MACs not known" in n for n in report.notes)


@pytest.mark.parametrize("rank", [4, 3])
def test_onnx_attention_23_by_definition(rank):
    """Q.K^T (E per position pair) and attention x V (Ev) for every head; the output's shape from
    onnxruntime (which runs opset 23's Attention) confirms the layout."""
    ort = pytest.importorskip("onnxruntime")
    T = onnx.TensorProto
    if rank == 4:
        ins = [helper.make_tensor_value_info("q", T.FLOAT, ["B", 2, "S", 8]),
               helper.make_tensor_value_info("k", T.FLOAT, ["B", 2, "L", 8]),
               helper.make_tensor_value_info("v", T.FLOAT, ["B", 2, "L", 6])]
        node = helper.make_node("Attention", ["q", "k", "v"], ["y"])
        feeds = {"q": np.ones((2, 2, 3, 8), np.float32), "k": np.ones((2, 2, 5, 8), np.float32),
                 "v": np.ones((2, 2, 5, 6), np.float32)}
        expected = 2 * 2 * 3 * 5 * (8 + 6)
    else:
        ins = [helper.make_tensor_value_info("q", T.FLOAT, ["B", "S", 16]),
               helper.make_tensor_value_info("k", T.FLOAT, ["B", "L", 16]),
               helper.make_tensor_value_info("v", T.FLOAT, ["B", "L", 12])]
        node = helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=2, kv_num_heads=2)
        feeds = {"q": np.ones((2, 3, 16), np.float32), "k": np.ones((2, 5, 16), np.float32),
                 "v": np.ones((2, 5, 12), np.float32)}
        expected = 2 * 3 * 5 * (16 + 12)
    model = helper.make_model(helper.make_graph([node], "g", ins, [helper.make_empty_tensor_value_info("y")]),
                              opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(None, feeds)[0].shape[:2] == (2, 2 if rank == 4 else 3)
    assert evaluate(cost(model).macs, {"B": 2, "S": 3, "L": 5}) == expected


def test_a_size_past_int64_is_a_bind_error():
    model = parser.parse_model(H + "g (float[B] x) => (float y) { y = Relu(x) }")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    with pytest.raises(shapeinfer.BindError, match="2\\*\\*63-1"):
        cost(model, bind={"B": 2**70})


def test_an_activation_peak_past_the_expression_budget_is_unknown_not_an_error():
    """66 tensors [s_i, s_j], each live alone beside the inputs: every sum is a candidate for the
    peak, and even their simpler upper bound has more terms than an expression may hold."""
    import itertools

    from onnx import TensorProto, numpy_helper

    n = 12
    nodes, outs = [], []
    for i, j in itertools.combinations(range(n), 2):
        nodes += [helper.make_node("Unsqueeze", [f"x{i}", "one"], [f"u{i}_{j}"]),
                  helper.make_node("Mul", [f"u{i}_{j}", f"x{j}"], [f"t{i}_{j}"]),
                  helper.make_node("ReduceSum", [f"t{i}_{j}"], [f"r{i}_{j}"], keepdims=0)]
        outs.append(helper.make_tensor_value_info(f"r{i}_{j}", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [f"s{i}"])
                                       for i in range(n)], outs,
                          [numpy_helper.from_array(np.array([1], np.int64), "one")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    report = cost(model)
    assert report.activation_peak_bytes is None
    assert any("activation peak passes the expression budget" in note for note in report.notes)
    sizes = {f"s{i}": i + 1 for i in range(n)}
    peak = cost(model, bind=sizes).activation_peak_bytes  # bound: a number, at least the largest tensor
    assert isinstance(peak, int) and peak >= 4 * 11 * 12 + 4 * 12
