"""Detection and false-alarm rates of export validators on export bugs injected into real exports.

The 30 corpus exports (fixtures/corpus: BERT, GPT-2, Llama, Whisper, SegFormer, wav2vec2... from
the classic and the dynamo exporters) are the healthy models; each bug family below injects the
bug teams ship into them, at a node picked by a seeded generator:

  baked-reshape, baked-expand, baked-slice, baked-range   a shape the graph computes from the
        input sizes replaced by its value at the traced size (what tracing bakes in)
  wrong-heads      a constant Reshape entry doubled (a head count or head size that is wrong)
  wrong-perm       a Transpose's last two axes swapped
  wrong-axis       a Concat along another axis
  dtype-mismatch   a Cast to float16 in front of one input of a float binary op
  declared-lie     a graph output's symbolic dim declared as the traced size
  structural       a node's output renamed (its readers left dangling)

Ground truth comes from onnxruntime: a model is broken where it refuses to load it (default
level or optimisations off), or fails a run, or gives an output of another shape than declared,
at a grid of the sizes users deploy (batch 1-2, seq 1/8/32, images 64/96, audio 4000/8000 samples,
past 1/4). Each model is then judged by:

  shapeinfer        ``shapeinfer check`` (an error fails the model; "+warn" counts warnings too)
  shapeinfer-dims   the same with ``--dims`` giving the deploy grid's ranges (as a team's gate would)
  onnx.checker      ``onnx.checker.check_model(full_check=True)``
  ort-session       onnxruntime session creation at its default level
  polygraphy        ``polygraphy check lint`` (if installed; it runs the model at size 1)

Detection = broken models a tool fails / broken models; false alarm = healthy-by-onnxruntime
models it fails / those models.

    python bench/export_bugs.py                  # all families, every corpus export
    python bench/export_bugs.py --per-family 20 --no-polygraphy --json out.json

Needs onnxruntime (the test extra); polygraphy optional (``pip install polygraphy``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "fixtures", "corpus")
# the sizes users deploy at, per dim name: grid bindings take the k-th of each (cycled)
GRID = {"batch": (1, 2, 1), "seq": (1, 8, 32), "dec_seq": (1, 5, 3), "past": (1, 4, 2), "height": (64, 96, 64),
        "width": (64, 64, 96), "samples": (4000, 8000, 4000)}
DEPLOY_DIMS = ["batch=1..2", "seq=1..32", "dec_seq=1..5", "past=1..4", "height=64..96", "width=64..96",
               "samples=4000..8000"]
TRACED = {"batch": 2, "seq": 8, "dec_seq": 5, "past": 4, "height": 64, "width": 64, "samples": 4000}
SUMS = {"past+seq": ("past", "seq"), "s53": ("past", "seq")}  # mask lengths: past + seq


def _size(name: str, binding: dict) -> int:
    if name in SUMS:
        return sum(binding[s] for s in SUMS[name])
    return binding.get(name, 1)


def bindings() -> list:
    return [{s: v[k % len(v)] for s, v in GRID.items()} for k in range(3)]


# -- the bug families -------------------------------------------------------------------------

def _inferred(model):
    import shapeinfer

    return shapeinfer.infer(model)


def _const(model, values, dtype=np.int64) -> str:
    name = f"bug_const_{len(model.graph.initializer)}"
    model.graph.initializer.append(numpy_helper.from_array(np.array(values, dtype), name))
    return name


def _value_at(result, name: str, binding: dict):
    from shapeinfer.symbolic import evaluate

    f = result.fact(name)
    if f is None or f.value is None or f.value.dtype != object and not np.issubdtype(f.value.dtype, np.integer):
        return None
    flat = f.value.reshape(-1).tolist()
    if all(isinstance(v, int) for v in flat):
        return None  # (a constant already: nothing to bake)
    try:
        vals = [int(evaluate(v, binding)) for v in flat]
    except (ArithmeticError, ValueError, TypeError):
        return None
    return np.array(vals, np.int64).reshape(f.value.shape)


def _bake(op: str, index: int):
    def inject(model, rng):
        result = _inferred(model)
        binding = {s: _size(s, TRACED) for s in result.symbols()}
        picks = [n for n in model.graph.node if n.op_type == op and len(n.input) > index and n.input[index]]
        rng.shuffle(picks)
        for n in picks:
            value = _value_at(result, n.input[index], binding)
            if value is not None:
                n.input[index] = _const(model, value)
                return f"{op} {n.name!r} input {index} baked at {value.tolist()}"
        return None
    return inject


def wrong_heads(model, rng):
    inits = {t.name: t for t in model.graph.initializer}
    consts = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    picks = [n for n in model.graph.node if n.op_type == "Reshape" and len(n.input) > 1]
    rng.shuffle(picks)
    for n in picks:
        t = inits.get(n.input[1])
        if t is None and n.input[1] in consts:
            t = next((a.t for a in consts[n.input[1]].attribute if a.name == "value"), None)
        if t is None:
            continue
        v = numpy_helper.to_array(t).astype(np.int64).reshape(-1)
        big = [k for k, e in enumerate(v) if e >= 2]
        if not big:
            continue
        v = v.copy()
        v[big[-1]] *= 2
        n.input[1] = _const(model, v)
        return f"Reshape {n.name!r} shape entry doubled: {v.tolist()}"
    return None


def wrong_perm(model, rng):
    picks = [n for n in model.graph.node if n.op_type == "Transpose"]
    rng.shuffle(picks)
    for n in picks:
        perm = next((a for a in n.attribute if a.name == "perm"), None)
        if perm is None or len(perm.ints) < 3 or perm.ints[-1] == perm.ints[-2]:
            continue
        ints = list(perm.ints)
        ints[-1], ints[-2] = ints[-2], ints[-1]
        del perm.ints[:]
        perm.ints.extend(ints)
        return f"Transpose {n.name!r} perm {ints}"
    return None


def wrong_axis(model, rng):
    result = _inferred(model)
    picks = [n for n in model.graph.node if n.op_type == "Concat"]
    rng.shuffle(picks)
    for n in picks:
        f = result.fact(n.output[0])
        if f is None or f.shape is None or len(f.shape) < 2:
            continue
        axis = next(a for a in n.attribute if a.name == "axis")
        rank = len(f.shape)
        new = (axis.i % rank + 1) % rank
        axis.i = new
        return f"Concat {n.name!r} axis {new}"
    return None


def dtype_mismatch(model, rng):
    result = _inferred(model)
    picks = [n for n in model.graph.node if n.op_type in ("Add", "Mul", "MatMul", "Sub")]
    rng.shuffle(picks)
    for n in picks:
        f = result.fact(n.input[0])
        if f is None or f.dtype != TensorProto.FLOAT:
            continue
        out = f"bug_cast_{n.output[0]}"
        model.graph.node.insert(list(model.graph.node).index(n),
                                helper.make_node("Cast", [n.input[0]], [out], to=TensorProto.FLOAT16))
        n.input[0] = out
        return f"{n.op_type} {n.name!r} input 0 cast to float16"
    return None


def declared_lie(model, rng):
    outs = [o for o in model.graph.output if o.type.HasField("tensor_type")
            and any(d.dim_param for d in o.type.tensor_type.shape.dim)]
    rng.shuffle(outs)
    for o in outs:
        dims = [d for d in o.type.tensor_type.shape.dim if d.dim_param and d.dim_param in TRACED]
        if not dims:
            continue
        d = dims[-1]
        size = TRACED[d.dim_param]
        d.Clear()
        d.dim_value = size
        return f"output {o.name!r} declares {size} for a dynamic dim"
    return None


def structural(model, rng):
    read = {i for n in model.graph.node for i in n.input}
    picks = [n for n in model.graph.node if n.op_type != "Constant" and n.output and n.output[0] in read]
    rng.shuffle(picks)
    for n in picks:
        n.output[0] = n.output[0] + "_renamed"
        return f"{n.op_type} {n.name!r} output renamed: its readers dangle"
    return None


FAMILIES = {"baked-reshape": _bake("Reshape", 1), "baked-expand": _bake("Expand", 1), "baked-slice": _bake("Slice", 2),
            "baked-range": _bake("Range", 1), "wrong-heads": wrong_heads, "wrong-perm": wrong_perm,
            "wrong-axis": wrong_axis, "dtype-mismatch": dtype_mismatch, "declared-lie": declared_lie,
            "structural": structural}


# -- the judges -------------------------------------------------------------------------------

def _feeds(model, binding) -> dict:
    init = {t.name for t in model.graph.initializer}
    feeds = {}
    rng = np.random.default_rng(0)
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else _size(d.dim_param, binding) for d in tt.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.integer):
            feeds[vi.name] = np.ones(shape, dtype)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def ground_truth(model) -> tuple:
    """(broken, why) by onnxruntime over the deploy grid, at both optimisation levels."""
    import onnxruntime as ort

    data = model.SerializeToString()
    declared = {o.name: o.type.tensor_type.shape for o in model.graph.output if o.type.HasField("tensor_type")}
    for level in (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        options.log_severity_level = 4
        try:
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as e:  # (onnxruntime's refusal, whatever its type: the verdict)
            return True, f"refused: {str(e).splitlines()[0][:120]}"
        names = [o.name for o in session.get_outputs()]
        for binding in bindings():
            try:
                outs = session.run(None, _feeds(model, binding))
            except Exception as e:  # (a run that fails: the verdict)
                return True, f"run fails at {binding}: {str(e).splitlines()[0][:100]}"
            for name, out in zip(names, outs):
                shape = declared.get(name)
                if shape is None or not shape.dim:
                    continue
                want = [d.dim_value if d.HasField("dim_value") else (_size(d.dim_param, binding)
                                                                      if d.dim_param in GRID or d.dim_param in SUMS
                                                                      else None) for d in shape.dim]
                if len(want) != out.ndim or any(w is not None and w != g for w, g in zip(want, out.shape)):
                    return True, f"output {name!r} is {list(out.shape)}, declared {want}"
    return False, ""


def judge_shapeinfer(path, dims=None) -> tuple:
    from shapeinfer.checker.run import check

    # (lenient: each model takes the dims of the grid it names, as over a folder of models)
    report = check(path, dims=dims, dims_lenient=True)
    return (not report.ok, bool(report.findings))


def judge_checker(path) -> bool:
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception:  # (onnx.checker's verdict, whatever its type)
        return True
    return False


def judge_session(path) -> bool:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception:  # (onnxruntime's refusal)
        return True
    return False


def judge_polygraphy(path) -> bool:
    r = subprocess.run([shutil.which("polygraphy"), "check", "lint", path], capture_output=True, timeout=300)
    return r.returncode != 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-family", type=int, default=30, help="mutants per family at most (one per corpus export)")
    ap.add_argument("--no-polygraphy", action="store_true")
    ap.add_argument("--json", help="write every model's verdicts here")
    args = ap.parse_args(argv)
    poly = not args.no_polygraphy and shutil.which("polygraphy") is not None
    bases = sorted(glob.glob(os.path.join(CORPUS, "*.onnx")))
    work = tempfile.mkdtemp(prefix="export-bugs-")
    rows = []
    t0 = time.time()
    cases = [("healthy", b, None) for b in bases]
    for fam in FAMILIES:
        cases += [(fam, b, random.Random(f"{fam}-{os.path.basename(b)}")) for b in bases][:args.per_family]
    for fam, base, rng in cases:
        model = onnx.load(base)
        what = ""
        if rng is not None:
            what = FAMILIES[fam](model, rng)
            if what is None:
                continue  # (no place for this bug in that export)
        path = os.path.join(work, f"{fam}-{os.path.basename(base)}")
        onnx.save(model, path)
        broken, why = ground_truth(model)
        err, any_finding = judge_shapeinfer(path)
        err_dims, _ = judge_shapeinfer(path, DEPLOY_DIMS)
        row = {"family": fam, "base": os.path.basename(base), "bug": what, "broken": broken, "why": why,
               "shapeinfer": err, "shapeinfer+warn": any_finding, "shapeinfer-dims": err_dims,
               "onnx.checker": judge_checker(path), "ort-session": judge_session(path)}
        if poly:
            row["polygraphy"] = judge_polygraphy(path)
        rows.append(row)
        print(f"{fam:15s} {os.path.basename(base):28s} broken={broken!s:5s} " +
              " ".join(f"{k}={int(row[k])}" for k in row if k not in ("family", "base", "bug", "broken", "why")),
              file=sys.stderr)
    tools = [k for k in rows[0] if k not in ("family", "base", "bug", "broken", "why")]
    print(f"\n{len(rows)} models ({sum(r['family'] == 'healthy' for r in rows)} healthy exports, the rest with one "
          f"injected bug); broken by onnxruntime over the deploy grid: {sum(r['broken'] for r in rows)}; "
          f"{time.time() - t0:.0f} s\n")
    fams = ["healthy"] + [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    print("| family | models | broken | " + " | ".join(tools) + " |")
    print("|---|---|---|" + "---|" * len(tools))
    for fam in fams:
        rs = [r for r in rows if r["family"] == fam]
        bro = [r for r in rs if r["broken"]]
        cells = [f"{sum(r[t] for r in bro)}/{len(bro)}" for t in tools]
        print(f"| {fam} | {len(rs)} | {len(bro)} | " + " | ".join(cells) + " |")
    broken = [r for r in rows if r["broken"]]
    fine = [r for r in rows if not r["broken"]]
    print("| **detection** (broken flagged) | | " + str(len(broken)) + " | " +
          " | ".join(f"**{100 * sum(r[t] for r in broken) / max(len(broken), 1):.0f}%**" for t in tools) + " |")
    print("| **false alarm** (healthy flagged) | | " + str(len(fine)) + " | " +
          " | ".join(f"**{100 * sum(r[t] for r in fine) / max(len(fine), 1):.0f}%**" for t in tools) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
