"""Runtime verification on the corpus of real PyTorch exports (fixtures/corpus/).

For each model (the exports of fixtures/corpus/ and their deployment versions in
fixtures/deploy/), shapeinfer's inference (strict, and with ``assume_nonempty``) is compared with
onnxruntime running the model with every node output exposed, at several bindings of the input
dims (1 included). A dim is *in input dims* when it is an expression over the graph inputs'
symbols only; a minted symbol (an unknown dim) must take one value per run wherever it
appears, and every dim that can be evaluated must equal the real size -- anything else is
*wrong*. A binding that onnxruntime itself cannot run is skipped, counted and named (the table's
``skipped`` column, details with ``-v``). Run ``python tests/corpus.py`` for the per-model table.

corpus.json gives each input dim as an int, a role (``"seq"``) or a sum of roles
(``"past+seq"``: the attention mask of a decoder with a KV cache covers the past and the new
tokens); a role takes the values of ROLE_VALUES, run after run.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx

import shapeinfer
from shapeinfer.symbolic import EvaluationError, evaluate, free_symbols

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "fixtures", "corpus")
# The deployment pipeline's versions of them (fixtures/derive_deploy.py: quantized, float16,
# fused by onnxruntime's transformer optimizer, saved by its session optimizer).
DEPLOY = os.path.join(HERE, "..", "fixtures", "deploy")

# Sizes each kind of dim takes at run time; the first binding uses the first value of each.
# batch and seq stay nonzero: at 0 onnxruntime itself fails on most of the corpus (a Reshape
# with -1 over an empty tensor: bert_dynamo, gpt2, llama, t5 at seq 0; cnn_classic,
# swin_classic and vit_torchvision_classic at batch 0).
ROLE_VALUES = {
    "batch": [1, 3, 2],
    "seq": [1, 7, 12],
    "dec_seq": [1, 4, 9],
    "height": [37, 64, 8],
    "width": [45, 33, 16],
    "past": [0, 3, 5],  # KV cache length: 0 is the first decoding step
    "samples": [400, 1601, 800],  # audio: wav2vec2's feature extractor needs 400 samples
}
# Models whose image size is fixed by the architecture use their own values (SegFormer's
# spatial-reduction convolutions need ~32 pixels a side; DETR was exported for height and width
# >= 32, its ResNet backbone's stride).
MODEL_ROLE_VALUES = {
    "swin": {"height": [32, 64, 48], "width": [32, 48, 64]},
    "segformer": {"height": [64, 37, 101], "width": [64, 83, 45]},
    "detr": {"height": [64, 37, 101], "width": [80, 45, 83]},
}


def entries():
    """Every model: the exports (corpus.json), then what was derived from them (deploy.json);
    each entry's "dir" is its folder."""
    out = []
    for folder, index in ((CORPUS, "corpus.json"), (DEPLOY, "deploy.json")):
        with open(os.path.join(folder, index)) as fh:
            out.extend(dict(e, dir=folder) for e in json.load(fh).values())
    return out


def _size(dim, roles, k):
    """The size of a corpus.json dim at run k: an int, a role or a sum of roles ("past+seq")."""
    if not isinstance(dim, str):
        return dim
    return sum(roles[r][k] for r in dim.split("+"))


def _bindings(entry, model):
    """[(feeds, symbol binding)] for each run of the model."""
    roles = dict(ROLE_VALUES)
    roles.update(MODEL_ROLE_VALUES.get(entry["model"], {}))
    graph_inputs = {i.name: i for i in model.graph.input}
    rng = np.random.default_rng(0)
    runs = []
    for k in range(3):
        feeds, binding = {}, {}
        for name in entry["inputs"]:
            dims = entry["dims"][name]
            shape = [_size(d, roles, k) for d in dims]
            declared = graph_inputs[name].type.tensor_type.shape.dim
            for d, size in zip(declared, shape):
                if d.dim_param:
                    binding[d.dim_param] = size
            dtype = entry["dtypes"][name]
            if dtype.startswith("int"):
                feeds[name] = rng.integers(0, 60, shape).astype(dtype)
                if name == "attention_mask":
                    feeds[name] = np.ones(shape, dtype)
            else:
                feeds[name] = rng.standard_normal(shape).astype(np.float32)
        runs.append((feeds, binding))
    return runs


def _session(model, names):
    import onnxruntime as ort

    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    del exposed.graph.output[:]
    for n in names:
        exposed.graph.output.append(onnx.helper.make_empty_tensor_value_info(n))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 4
    return ort.InferenceSession(exposed.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def verify(entry, assume_nonempty):
    """{'tensors', 'in_input_dims', 'unknown', 'wrong', 'details', 'runs', 'skipped'} for one
    model; 'skipped' lists (binding, error) for the bindings onnxruntime failed to run."""
    model = onnx.load(os.path.join(entry.get("dir", CORPUS), entry["file"]))
    result = shapeinfer.infer(model, assume_nonempty=assume_nonempty)
    names = [n for n in result.tensor_names() if result.fact(n) is not None and result.fact(n).dtype]
    sess = _session(model, names)
    input_symbols = result.input_symbols()
    unknown, wrong, details, skipped, runs = set(), set(), [], [], 0
    for feeds, binding in _bindings(entry, model):
        try:
            values = sess.run(names, feeds)
        except Exception as e:  # onnxruntime's own failure: nothing to compare at this binding
            skipped.append((binding, f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"))
            continue
        runs += 1
        minted: dict = {}
        for name, arr in zip(names, values):
            dims = result.shape(name)
            if dims is None:
                unknown.add(name)
                continue
            if len(dims) != arr.ndim:
                wrong.add(name)
                details.append((name, result.shape_strs(name), arr.shape, binding))
                continue
            for d, size in zip(dims, arr.shape):
                syms = free_symbols(d)
                if syms - input_symbols:
                    unknown.add(name)
                    if len(syms) == 1 and str(d) == next(iter(syms)):
                        (s,) = syms
                        if minted.setdefault(s, size) != size:
                            wrong.add(name)
                            details.append((name, f"minted {s} is {minted[s]} and {size}", arr.shape, binding))
                    continue
                try:
                    ok = evaluate(d, binding) == size
                except EvaluationError:
                    ok = False
                if not ok:
                    wrong.add(name)
                    details.append((name, result.shape_strs(name), arr.shape, binding))
    return {
        "tensors": len(names),
        "in_input_dims": len(names) - len(unknown | wrong),
        "unknown": len(unknown - wrong),
        "wrong": len(wrong),
        "details": details,
        "unknown_names": sorted(unknown - wrong),
        "runs": runs,
        "skipped": skipped,
    }


def main(argv):
    verbose = "-v" in argv
    print(f"{'model':<28} {'mode':<9} {'tensors':>7} {'in input dims':>14} {'unknown':>8} {'wrong':>6} {'skipped':>8}")
    skipped_any = False
    for entry in entries():
        for assume in (False, True):
            r = verify(entry, assume)
            pct = 100.0 * r["in_input_dims"] / max(r["tensors"], 1)
            mode = "nonempty" if assume else "strict"
            skip = f"{len(r['skipped'])}/{len(r['skipped']) + r['runs']}"
            print(f"{entry['file']:<28} {mode:<9} {r['tensors']:>7} {r['in_input_dims']:>7} ({pct:5.1f}%) {r['unknown']:>8} {r['wrong']:>6} {skip:>8}")
            skipped_any = skipped_any or bool(r["skipped"])
            if verbose:
                for b, err in r["skipped"]:
                    print("    SKIPPED (onnxruntime failed)", b, err)
                for d in r["details"][:10]:
                    print("    WRONG", *d)
                for n in r["unknown_names"][:15]:
                    print("    unknown", n)
    if skipped_any:
        print("skipped: bindings onnxruntime itself failed to run (not compared; -v says which and why)")


if __name__ == "__main__":
    main(sys.argv[1:])
