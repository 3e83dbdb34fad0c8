"""shapeinfer optimize against onnxsim and onnxslim on the fixture corpus and the synthetic chain.

    pip install ".[bench]" onnxsim onnxslim     # in a bench environment only
    python bench/bench_optimize.py              # table over the corpus and the 1k/50k chains
    python bench/bench_optimize.py --quick      # skip the 50k chain

For each model and tool: nodes left, Reshape/Expand whose shape is still computed although a
constant 0/-1 form provably exists ("avoidable computed"), Tile over size-1 axes, whether the
outputs equal the original's at three bindings (shapeinfer.optimizer.verify), and the time. The tools run
with dynamic shapes left dynamic (no input shapes fixed). A tool that is not installed or fails
is reported as such.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import shapeinfer  # noqa: E402
from shapeinfer.optimizer.passes.specs import expand_spec, reshape_spec  # noqa: E402
from shapeinfer.optimizer.verify import computes_in_float16, verify  # noqa: E402


def avoidable_and_tiles(model) -> tuple:
    """(computed Reshape/Expand shapes with a provable constant form, Tiles over size-1 axes)."""
    result = shapeinfer.infer(model)
    consts = {t.name for t in model.graph.initializer} | {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    avoidable = tiles = 0
    for n in model.graph.node:
        if n.op_type in ("Reshape", "Expand") and len(n.input) > 1 and n.input[1] not in consts:
            a, b = result.shape(n.input[0]), result.shape(n.output[0])
            if a is None or b is None or any(result.is_unknown_dim(d) for d in b):
                continue
            spec, _ = (reshape_spec if n.op_type == "Reshape" else expand_spec)(a, b)
            avoidable += spec is not None
        if n.op_type == "Tile":
            a, f = result.shape(n.input[0]), result.fact(n.input[1])
            if a is None or f is None or f.value is None:
                continue
            reps = f.value.reshape(-1).tolist()
            if len(reps) == len(a) and all(r == 1 or d == 1 for d, r in zip(a, reps)):
                tiles += 1
    return avoidable, tiles


def run_tool(tool, model):
    t = time.perf_counter()
    if tool == "shapeinfer":
        out = shapeinfer.optimize(model)
    elif tool == "shapeinfer+signedzero":  # the sign of a zero may change (x + 0.0 goes); no assumption
        out = shapeinfer.optimize(model, ignore_signed_zero=True)
    elif tool == "shapeinfer+nonempty":
        out = shapeinfer.optimize(model, assume_nonempty=True)
    elif tool == "shapeinfer+both":  # both opt-ins: no empty tensors, sign of zero may change
        out = shapeinfer.optimize(model, assume_nonempty=True, ignore_signed_zero=True)
    elif tool == "onnxsim":
        import onnxsim

        out, ok = onnxsim.simplify(model)
        if not ok:
            raise RuntimeError("onnxsim's own check failed")
    elif tool == "onnxslim":
        import onnxslim

        out = onnxslim.slim(model)
    else:
        raise ValueError(tool)
    return out, time.perf_counter() - t


def corpus_bindings(path, model):
    try:
        from tests import corpus

        for entry in corpus.entries():
            if entry["file"] == os.path.basename(path):
                return [b for _, b in corpus._bindings(entry, model)]
    except Exception:
        pass
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 50,000-node chain")
    ap.add_argument("--only", nargs="+", default=None, help="these fixture file names only")
    ap.add_argument("--deploy", action="store_true",
                    help="the deployment versions (fixtures/deploy/: quantized, float16, fused) instead of the corpus")
    ap.add_argument("--tools", nargs="+", default=["shapeinfer", "shapeinfer+signedzero", "shapeinfer+nonempty", "shapeinfer+both",
                                                           "onnxsim", "onnxslim"])
    args = ap.parse_args(argv)
    import bench_infer

    folder = "deploy" if args.deploy else "corpus"
    models = [(os.path.basename(p), p, onnx.load(p)) for p in sorted(glob.glob(os.path.join(HERE, "..", "fixtures", folder, "*.onnx")))]
    if args.only:
        models = [m for m in models if m[0] in args.only]
    if not args.deploy and not args.only:
        models.append(("tiny_bert.onnx", None, onnx.load(os.path.join(HERE, "..", "fixtures", "tiny_bert.onnx"))))
        models.append(("chain_1k", None, bench_infer.chain(1000)))
    if not args.quick and not args.deploy and not args.only:
        models.append(("chain_50k", None, bench_infer.chain(50000)))
    header = f"{'model':<30} {'tool':<20} {'nodes':>13} {'avoidable':>9} {'tile1':>5} {'same out':>8} {'seconds':>8}"
    print(header)
    print("-" * len(header))
    for name, path, model in models:
        before = len(model.graph.node)
        avoid0, tiles0 = avoidable_and_tiles(model) if not name.endswith("50k") else ("-", "-")
        print(f"{name:<30} {'(original)':<20} {before:>13} {avoid0:>9} {tiles0:>5} {'':>8} {'':>8}")
        for tool in args.tools:
            try:
                out, secs = run_tool(tool, model)
            except ImportError:
                print(f"{'':<30} {tool:<20} {'not installed':>13}")
                continue
            except Exception as e:
                print(f"{'':<30} {tool:<20} {'failed':>13}  {type(e).__name__}: {str(e).splitlines()[0][:60] if str(e) else ''}")
                continue
            nodes = len(out.graph.node)
            if name.endswith("50k"):
                avoid, tiles, same = "-", "-", "-"
            else:
                try:
                    avoid, tiles = avoidable_and_tiles(out)
                except Exception:
                    avoid, tiles = "?", "?"
                bindings = corpus_bindings(path, model) if path else None
                try:
                    same = "yes" if verify(model, out, bindings=bindings).ok else "NO"
                    if same == "NO" and computes_in_float16(model):  # onnxruntime's float16 roundings
                        same = "spec" if verify(model, out, bindings=bindings, reference=True).ok else "NO"
                except Exception:
                    same = "?"
            print(f"{'':<30} {tool:<20} {nodes:>6} ({nodes / before:4.0%}) {avoid:>9} {tiles:>5} {same:>8} {secs:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
