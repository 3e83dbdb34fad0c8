"""Benchmark models built from the fixtures: a Llama-shaped decoder of any depth.

``llama_layers(32)`` takes the exported 2-layer Llama of fixtures/corpus/ (grouped-query
attention with 2 KV heads, rotary embeddings, a causal mask, dynamic batch and sequence) and
repeats its second decoder layer until the model has that many: the nodes an exporter writes
per layer (about 230), every layer reading the previous one's residual stream and the shared
rotary tables and mask, with the layer's weights shared (the model stays small). 32 layers make
about 7,500 nodes.
"""

from __future__ import annotations

import os

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = os.path.join(HERE, "..", "fixtures", "corpus", "llama_classic.onnx")
_LAYER = "/model/model/layers.1/"
_RESIDUAL_IN = "/model/model/layers.0/Add_1_output_0"
_RESIDUAL_OUT = "/model/model/layers.1/Add_1_output_0"


def llama_layers(n_layers: int = 32) -> onnx.ModelProto:
    model = onnx.load(LLAMA)
    nodes = list(model.graph.node)
    layer = [n for n in nodes if n.name.startswith(_LAYER)]
    inside = {o for n in layer for o in n.output}
    last = max(i for i, n in enumerate(nodes) if n.name.startswith(_LAYER))
    copies = []
    previous = _RESIDUAL_OUT
    for k in range(2, n_layers):
        rename = {o: f"{o}.{k}" for o in inside}
        rename[_RESIDUAL_IN] = previous
        for n in layer:
            c = onnx.NodeProto()
            c.CopyFrom(n)
            c.name = n.name.replace(_LAYER, f"/model/model/layers.{k}/")
            for j, name in enumerate(c.input):
                c.input[j] = rename.get(name, name)
            for j, name in enumerate(c.output):
                c.output[j] = rename.get(name, name)
            copies.append(c)
        previous = rename[_RESIDUAL_OUT]
    for n in nodes[last + 1:]:  # the final norm reads the last layer
        for j, name in enumerate(n.input):
            if name == _RESIDUAL_OUT:
                n.input[j] = previous
    del model.graph.node[:]
    model.graph.node.extend(nodes[: last + 1] + copies + nodes[last + 1:])
    return model


# -- a 7B-shaped decoder whose weights are a sparse external file ------------------------------

LLAMA_7B = dict(layers=32, hidden=4096, heads=32, head_dim=128, ffn=11008, vocab=32000)


def llama_7b(folder: str, layers: int = LLAMA_7B["layers"], data_name: str = "llama7b.data",
             config: dict = None) -> str:
    """Write ``llama7b.onnx`` into ``folder`` and return its path: Llama-2-7B's shapes (32
    layers, hidden 4096, 32 heads of 128, FFN 11008, vocabulary 32000, float16 weights,
    6.7 billion parameters), built with onnx.helper the way exporters write it -- RMSNorm,
    rotary embeddings over position_ids, a causal mask computed from the input's shape, head
    reshapes to shapes computed with Shape/Gather/Concat -- with dynamic batch and sequence.

    Its 13.5 GB of weights are external data in ``data_name`` beside it, a sparse file: every
    initializer points at its own range, the file has the full size, and no byte of it is
    written (nothing is read or allocated on disk unless a tool reads the weights). ``config``
    overrides entries of LLAMA_7B (tests build the same graph with small weights)."""
    from onnx import TensorProto, helper

    c = dict(LLAMA_7B, **(config or {}))
    H, NH, HD, F, V = c["hidden"], c["heads"], c["head_dim"], c["ffn"], c["vocab"]
    f16 = TensorProto.FLOAT16
    nodes, inits = [], []
    offset = [0]

    def weight(name, dims):
        t = TensorProto()
        t.name, t.data_type = name, f16
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        length = 2
        for d in dims:
            length *= d
        for k, v in (("location", data_name), ("offset", str(offset[0])), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        offset[0] += (length + 4095) // 4096 * 4096  # page-aligned, as onnx's writer does
        inits.append(t)
        return name

    def const(name, values, dtype=TensorProto.INT64, dims=None):
        inits.append(helper.make_tensor(name, dtype, [len(values)] if dims is None else dims, values))
        return name

    def node(op, inputs, name, n_out=1, **attrs):
        outs = [f"{name}_out{k}" if n_out > 1 else f"{name}_out" for k in range(n_out)]
        nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    const("axis1", [1]); const("idx0", [0]); const("idx1", [1])
    const("heads_hd", [NH, HD]); const("hidden", [H]); const("half", [HD // 2])
    const("zero_i", [0]); const("big", [2**62])
    inits.append(helper.make_tensor("eps", f16, [], [1e-5]))
    inits.append(helper.make_tensor("two", f16, [], [2.0]))
    inits.append(helper.make_tensor("scale", f16, [], [float(HD) ** 0.5]))

    def rms(x, w, name):
        p = node("Pow", [x, "two"], f"{name}/Pow")
        m = node("ReduceMean", [p, "axis_last"], f"{name}/ReduceMean", keepdims=1)
        a = node("Add", [m, "eps"], f"{name}/Add")
        s = node("Sqrt", [a], f"{name}/Sqrt")
        d = node("Div", [x, s], f"{name}/Div")
        return node("Mul", [weight(w, [H]), d], f"{name}/Mul")

    const("axis_last", [-1])
    x = node("Gather", [weight("embed_tokens.weight", [V, H]), "input_ids"], "/embed/Gather", axis=0)
    # shape values the exporter computes once: batch, seq
    ids_shape = node("Shape", ["input_ids"], "/Shape")
    batch = node("Gather", [ids_shape, "idx0"], "/Gather_batch", axis=0)
    seq = node("Gather", [ids_shape, "idx1"], "/Gather_seq", axis=0)
    # rotary tables from position_ids: inv_freq [HD/2] x positions
    inits.append(helper.make_tensor("inv_freq", f16, [1, HD // 2, 1], [1.0 / (10000 ** (2 * k / HD)) for k in range(HD // 2)]))
    pos = node("Cast", [node("Unsqueeze", ["position_ids", "axis1"], "/rot/Unsqueeze")], "/rot/Cast", to=f16)
    freqs = node("Transpose", [node("MatMul", ["inv_freq", pos], "/rot/MatMul")], "/rot/Transpose", perm=[0, 2, 1])
    emb = node("Concat", [freqs, freqs], "/rot/Concat", axis=-1)
    cos = node("Unsqueeze", [node("Cos", [emb], "/rot/Cos"), "axis1"], "/rot/Unsqueeze_cos")
    sin = node("Unsqueeze", [node("Sin", [emb], "/rot/Sin"), "axis1"], "/rot/Unsqueeze_sin")
    # causal mask [1, 1, seq, seq] from the sequence length
    ss = node("Concat", [seq, seq], "/mask/Concat", axis=0)
    filled = node("ConstantOfShape", [ss], "/mask/ConstantOfShape",
                  value=helper.make_tensor("v", f16, [1], [-65504.0]))
    upper = node("Trilu", [filled, "one_i"], "/mask/Trilu", upper=1)
    const("one_i", [1], dims=[])
    mask = node("Unsqueeze", [upper, "axes01"], "/mask/Unsqueeze")
    const("axes01", [0, 1])
    heads_shape = node("Concat", [batch, seq, "heads_hd"], "/heads/Concat", axis=0)
    merged_shape = node("Concat", [batch, seq, "hidden"], "/merge/Concat", axis=0)

    def rotate(t, name):
        x1 = node("Slice", [t, "zero_i", "half", "axis_last"], f"{name}/Slice_1")
        x2 = node("Slice", [t, "half", "big", "axis_last"], f"{name}/Slice_2")
        rot = node("Concat", [node("Neg", [x2], f"{name}/Neg"), x1], f"{name}/Concat", axis=-1)
        return node("Add", [node("Mul", [t, cos], f"{name}/Mul_cos"), node("Mul", [rot, sin], f"{name}/Mul_sin")],
                    f"{name}/Add")

    for k in range(layers):
        p = f"/layers.{k}"
        w = f"layers.{k}."
        h = rms(x, w + "input_layernorm.weight", f"{p}/input_layernorm")
        qkv = []
        for proj in ("q", "k", "v"):
            m = node("MatMul", [h, weight(w + f"self_attn.{proj}_proj.weight", [H, H])], f"{p}/self_attn/{proj}_proj/MatMul")
            r = node("Reshape", [m, heads_shape], f"{p}/self_attn/Reshape_{proj}")
            qkv.append(node("Transpose", [r], f"{p}/self_attn/Transpose_{proj}", perm=[0, 2, 1, 3]))
        q, kk, v = rotate(qkv[0], f"{p}/self_attn/rotary_q"), rotate(qkv[1], f"{p}/self_attn/rotary_k"), qkv[2]
        kt = node("Transpose", [kk], f"{p}/self_attn/Transpose_kt", perm=[0, 1, 3, 2])
        scores = node("Div", [node("MatMul", [q, kt], f"{p}/self_attn/MatMul_qk"), "scale"], f"{p}/self_attn/Div")
        probs = node("Softmax", [node("Add", [scores, mask], f"{p}/self_attn/Add_mask")], f"{p}/self_attn/Softmax", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"{p}/self_attn/MatMul_v")], f"{p}/self_attn/Transpose_o",
                   perm=[0, 2, 1, 3])
        o = node("MatMul", [node("Reshape", [ctx, merged_shape], f"{p}/self_attn/Reshape_o"),
                            weight(w + "self_attn.o_proj.weight", [H, H])], f"{p}/self_attn/o_proj/MatMul")
        x = node("Add", [x, o], f"{p}/Add_attn")
        h = rms(x, w + "post_attention_layernorm.weight", f"{p}/post_attention_layernorm")
        gate = node("MatMul", [h, weight(w + "mlp.gate_proj.weight", [H, F])], f"{p}/mlp/gate_proj/MatMul")
        up = node("MatMul", [h, weight(w + "mlp.up_proj.weight", [H, F])], f"{p}/mlp/up_proj/MatMul")
        act = node("Mul", [gate, node("Sigmoid", [gate], f"{p}/mlp/Sigmoid")], f"{p}/mlp/Mul_silu")
        down = node("MatMul", [node("Mul", [act, up], f"{p}/mlp/Mul"), weight(w + "mlp.down_proj.weight", [F, H])],
                    f"{p}/mlp/down_proj/MatMul")
        x = node("Add", [x, down], f"{p}/Add_mlp")
    h = rms(x, "norm.weight", "/norm")
    nodes.append(helper.make_node("MatMul", [h, weight("lm_head.weight", [H, V])], ["logits"], name="/lm_head/MatMul"))
    graph = helper.make_graph(
        nodes, "llama_7b_shaped",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", f16, ["batch", "seq", V])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "llama7b.onnx")
    onnx.save(model, path)
    with open(os.path.join(folder, data_name), "wb") as fh:
        fh.truncate(offset[0])  # sparse: the size without the bytes
    return path
