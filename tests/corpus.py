"""Runtime verification on the corpus of real PyTorch exports (fixtures/corpus/).

For each model, shapeinfer's inference (strict, and with ``assume_nonempty``) is compared with
onnxruntime running the model with every node output exposed, at several bindings of the input
dims (1 included). A dim is *in input dims* when it is an expression over the graph inputs'
symbols only; a minted symbol (an unknown dim) must take one value per run wherever it
appears, and every dim that can be evaluated must equal the real size -- anything else is
*wrong*. Run ``python tests/corpus.py`` for the per-model table.
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

# Sizes each kind of dim takes at run time; the first binding uses the first value of each.
ROLE_VALUES = {
    "batch": [1, 3, 2],
    "seq": [1, 7, 12],
    "dec_seq": [1, 4, 9],
    "height": [37, 64, 8],
    "width": [45, 33, 16],
}
# Models whose image size is fixed by the architecture use their own values.
MODEL_ROLE_VALUES = {"swin": {"height": [32, 64, 48], "width": [32, 48, 64]}}


def entries():
    with open(os.path.join(CORPUS, "corpus.json")) as fh:
        return list(json.load(fh).values())


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
            shape = [roles[d][k] if isinstance(d, str) else d for d in dims]
            declared = graph_inputs[name].type.tensor_type.shape.dim
            for d, size in zip(declared, shape):
                if d.dim_param:
                    binding[d.dim_param] = size
            dtype = entry["dtypes"][name]
            if dtype.startswith("int"):
                feeds[name] = rng.integers(0, 60, shape).astype(np.int64)
                if name == "attention_mask":
                    feeds[name] = np.ones(shape, np.int64)
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
    """{'tensors', 'in_input_dims', 'unknown', 'wrong', 'details'} for one model."""
    model = onnx.load(os.path.join(CORPUS, entry["file"]))
    result = shapeinfer.infer(model, assume_nonempty=assume_nonempty)
    names = [n for n in result.tensor_names() if result.fact(n) is not None and result.fact(n).dtype]
    sess = _session(model, names)
    input_symbols = result.input_symbols()
    unknown, wrong, details = set(), set(), []
    for feeds, binding in _bindings(entry, model):
        values = sess.run(names, feeds)
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
    }


def main(argv):
    verbose = "-v" in argv
    print(f"{'model':<28} {'mode':<9} {'tensors':>7} {'in input dims':>14} {'unknown':>8} {'wrong':>6}")
    for entry in entries():
        for assume in (False, True):
            r = verify(entry, assume)
            pct = 100.0 * r["in_input_dims"] / max(r["tensors"], 1)
            mode = "nonempty" if assume else "strict"
            print(f"{entry['file']:<28} {mode:<9} {r['tensors']:>7} {r['in_input_dims']:>7} ({pct:5.1f}%) {r['unknown']:>8} {r['wrong']:>6}")
            if verbose:
                for d in r["details"][:10]:
                    print("    WRONG", *d)
                for n in r["unknown_names"][:15]:
                    print("    unknown", n)


if __name__ == "__main__":
    main(sys.argv[1:])
