"""The Mistral and Phi-3 dynamo exports at batch 0: their optimised models run wherever the
originals do, with the same outputs (dtype, shape and bytes).

A dynamo export writes every view as Reshape<allowzero=1>(x, [batch, seq, -1, head_dim]). The
spec calls that shape invalid at batch 0 (a 0 beside the -1), but onnxruntime runs it, its -1 the
quotient of the dims that are not 0 -- and both models run at batch 0 there. optimize once took
``batch >= 1`` (and ``seq >= 1``) as run facts from such Reshapes and wrote constant shapes that
fail at batch 0 (run_facts._after_lenient_reshapes): mistral_dynamo and phi3_dynamo failed there
(phi3_kv_dynamo drew no such fact even then: it stands for the KV-cache form). The classic
exports of these models fail at batch 0 in onnxruntime itself (a Reshape with -1 over an empty
tensor), so they tell nothing.
"""

import onnx
import pytest

import shapeinfer
from shapeinfer.optimizer.verify import verify
from tests import corpus

MODELS = ["mistral_dynamo.onnx", "phi3_dynamo.onnx", "phi3_kv_dynamo.onnx"]


def _entry(name):
    return next(e for e in corpus.entries() if e["file"] == name)


def _batch_zero_bindings(entry, model):
    """Symbol bindings at batch 0, seq and past as the corpus takes them (seq 1, 7, 12; past 0,
    3, 5): each input dim of corpus.json (a role or a sum of roles) read through the graph
    input's dim_param, so that the dynamo export's own name for past+seq gets past + seq."""
    roles = dict(corpus.ROLE_VALUES)
    roles.update(corpus.MODEL_ROLE_VALUES.get(entry["model"], {}))
    roles["batch"] = [0, 0, 0]
    declared = {i.name: i.type.tensor_type.shape.dim for i in model.graph.input}
    out = []
    for k in range(3):
        binding = {}
        for name in entry["inputs"]:
            for d, dim in zip(declared[name], entry["dims"][name]):
                if d.dim_param:
                    binding[d.dim_param] = corpus._size(dim, roles, k)
        out.append(binding)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_optimized_dynamo_export_runs_at_batch_zero_where_the_original_does(name):
    pytest.importorskip("onnxruntime")
    entry = _entry(name)
    model = onnx.load(f"{entry['dir']}/{entry['file']}")
    # What the test is about: views written as allowzero=1 Reshapes.
    assert any(n.op_type == "Reshape" and any(a.name == "allowzero" and a.i == 1 for a in n.attribute)
               for n in model.graph.node)
    out = shapeinfer.optimize(model)
    bindings = _batch_zero_bindings(entry, model)
    assert all(b["batch"] == 0 and b["seq"] >= 1 for b in bindings), bindings
    # onnxruntime with its graph optimizations off; a binding the original cannot run is skipped
    # there, one the optimised model cannot run (or runs otherwise) is a difference.
    v = verify(model, out, bindings=bindings)
    assert not any(r.startswith("DIFFERENT") for _, r in v.runs), v.runs
    assert v.ok, v.runs
    # Something was compared at batch 0: the original runs there.
    compared = [b for b, r in v.runs if r == "ok"]
    assert compared and all(b["batch"] == 0 for b in compared), v.runs
