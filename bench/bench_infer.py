"""Inference speed: shapeinfer against onnx's and onnxruntime's shape inference.

    python bench/bench_infer.py                 # 1,000 / 10,000 / 50,000 nodes
    python bench/bench_infer.py --sizes 1000    # pick sizes
    python bench/bench_infer.py --warm          # side by side: 50k chain and a 32-layer Llama, median of 5

Each chain is built from blocks on an input [B, S, 64]: Shape -> Gather -> Concat -> Reshape,
a Tile over a size-1 axis, an Expand to a computed target, a Reshape to [0,0,8,-1] and back to
[0,0,-1], and a ReduceMax. Every (tool, size) runs in a fresh process that makes one cold
call; the best of --repeat processes (default 3) is reported, with peak resident memory. Needs the ``bench`` extra (onnxruntime
and sympy, for onnxruntime's SymbolicShapeInference).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BLOCK_NODES = 13


def chain(n_nodes: int) -> onnx.ModelProto:
    c = lambda name, vals: numpy_helper.from_array(np.array(vals, np.int64), name)  # noqa: E731
    inits = [c("idx01", [0, 1]), c("c64", [64]), c("ax2", [2]), c("rep", [1, 1, 3, 1]),
             c("heads", [0, 0, 8, -1]), c("flat", [0, 0, -1])]
    nodes = []
    cur = "x"
    for k in range(max(1, n_nodes // BLOCK_NODES)):
        p = f"b{k}/"

        def n(op, ins, attrs=None, name=None):
            out = p + (name or op)
            nodes.append(helper.make_node(op, ins, [out], name=out, **(attrs or {})))
            return out

        s = n("Shape", [cur])
        g = n("Gather", [s, "idx01"], {"axis": 0})
        tgt = n("Concat", [g, "c64"], {"axis": 0})
        r = n("Reshape", [cur, tgt])
        u = n("Unsqueeze", [r, "ax2"])
        t = n("Tile", [u, "rep"])
        m = n("ReduceMax", [t], {"axes": [2], "keepdims": 0})
        e = n("Expand", [m, tgt])
        h = n("Reshape", [e, "heads"], name="Reshape_heads")
        f = n("Reshape", [h, "flat"], name="Reshape_flat")
        s2 = n("Shape", [f], name="Shape2")
        cur = n("Reshape", [f, s2], name="Reshape_back")
        cur = n("Relu", [cur])
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 64])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, ["B", "S", 64])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(tool: str, n_nodes: int) -> dict:
    model = chain(n_nodes)
    if tool == "shapeinfer":
        import shapeinfer

        fn = lambda: shapeinfer.infer_shapes(model)  # noqa: E731
    elif tool == "onnx":
        fn = lambda: onnx.shape_inference.infer_shapes(model, data_prop=True)  # noqa: E731
    else:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        fn = lambda: SymbolicShapeInference.infer_shapes(model, auto_merge=True)  # noqa: E731
    t = time.perf_counter()
    fn()  # one cold call per process, as a CLI run or a CI job makes it
    seconds = time.perf_counter() - t
    from bench_speed import own_peak_mb

    peak_mb = own_peak_mb()  # (VmHWM: ru_maxrss would start at the forking parent's size)
    return {"tool": tool, "nodes": len(model.graph.node), "seconds": seconds, "peak_mb": peak_mb}


def warm(repeat: int) -> int:
    """The side-by-side protocol of bench_speed.py (warm, one process, alternating, median),
    for inference on the 50k chain and the 32-layer Llama."""
    from bench_speed import main as speed

    return speed(["--models", "chain_50k", "llama_32", "--tasks", "infer", "--no-memory", "--repeat", str(repeat)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--tools", nargs="+", default=["shapeinfer", "onnx", "onnxruntime"])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per measurement; the best counts")
    ap.add_argument("--warm", action="store_true",
                    help="the side-by-side protocol: the 50k chain and the 32-layer Llama-shaped model, warm, in one "
                         "process, tools alternating, median of 5 (--repeat sets how many)")
    ap.add_argument("--_child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.warm:
        return warm(args.repeat if args.repeat != ap.get_default("repeat") else 5)
    if args._child:
        print(json.dumps(_run(args._child[0], int(args._child[1]))))
        return 0
    rows = {}
    for size in args.sizes:
        for tool in args.tools:
            for _ in range(args.repeat):
                out = subprocess.run([sys.executable, __file__, "--_child", tool, str(size)], capture_output=True, text=True)
                if out.returncode != 0:
                    err = out.stderr.strip().splitlines()
                    print(f"{tool} at {size}: failed: {err[-1] if err else out.returncode}")
                    break
                row = json.loads(out.stdout.strip().splitlines()[-1])
                if (tool, size) not in rows or row["seconds"] < rows[(tool, size)]["seconds"]:
                    rows[(tool, size)] = row
    print(f"{'nodes':>7}  {'tool':<12} {'seconds':>9} {'peak MB':>8}  {'vs shapeinfer':>13}")
    for size in args.sizes:
        ours = rows.get(("shapeinfer", size))
        for tool in args.tools:
            r = rows.get((tool, size))
            if r is None:
                continue
            ratio = f"{r['seconds'] / ours['seconds']:.2f}x" if ours and tool != "shapeinfer" else ""
            print(f"{r['nodes']:>7}  {tool:<12} {r['seconds']:>9.3f} {r['peak_mb']:>8.0f}  {ratio:>13}")
    ours = [rows[("shapeinfer", s)] for s in args.sizes if ("shapeinfer", s) in rows]
    for a, b in zip(ours, ours[1:]):
        print(f"shapeinfer scaling {a['nodes']} -> {b['nodes']} nodes: x{b['nodes'] / a['nodes']:.1f} nodes, "
              f"x{b['seconds'] / a['seconds']:.1f} time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
