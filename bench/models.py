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
