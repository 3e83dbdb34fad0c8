"""Speed and memory: shapeinfer's infer / optimize / check next to onnx's C++ and onnxsim.

    pip install ".[bench]" onnxsim          # in a bench environment (onnxsim is optional)
    python bench/bench_speed.py              # every model and task: about 3 minutes
    python bench/bench_speed.py --models llama_32 --tasks infer optimize
    python bench/bench_speed.py --no-memory  # times only

One protocol for every figure. Time: warm, in one process -- one call per tool first, then
``--repeat`` rounds (default 5) in which the tools run one after the other -- the median and the
range. Peak memory: a fresh process per (model, task, tool) that builds the model and makes one
call (its VmHWM, imports included).

Models: ``chain_50k`` (bench_infer.py's 50,000-node chain of Shape/Gather/Concat/Reshape/Tile/
Expand blocks), ``llama_32`` (a 32-layer Llama-shaped decoder, 7,435 nodes: bench/models.py) and
``llama_7b`` (Llama-2-7B's shapes, 1,690 nodes, 13.5 GB of float16 weights as a sparse external
file written into a temporary folder: bench/models.py). Tasks and the tool each is measured
against:

- infer: ``shapeinfer.infer_shapes`` / ``onnx.shape_inference.infer_shapes(data_prop=True)``;
  ratio = shapeinfer's time over onnx's (the target: at most 1.5).
- optimize: ``shapeinfer.optimize`` / ``onnxsim.simplify``; ratio = onnxsim's time over
  shapeinfer's (the target: at least 2.5). On llama_7b shapeinfer reads the model from its
  path and writes the result into the same folder (its weights referenced, not copied), as
  ``shapeinfer optimize M -o O`` does; onnxsim is given the model without its weights (loading
  them takes 13.5 GB) and its result is checked: it merges unloaded weights of equal shape.
- check: ``shapeinfer.check`` / ``onnx.checker.check_model(full_check=True)``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

import onnx  # noqa: E402

MODELS = ("chain_50k", "llama_32", "llama_7b")
TASKS = ("infer", "optimize", "check")
OTHER = {"infer": "onnx", "optimize": "onnxsim", "check": "onnx"}


def build(name: str, folder: str):
    """(model proto, path or None): the 7B exists as files (its weights are external)."""
    if name == "chain_50k":
        from bench_infer import chain

        return chain(50000), None
    if name == "llama_32":
        from models import llama_layers

        return llama_layers(32), None
    from models import llama_7b

    path = llama_7b(folder)
    return onnx.load(path, load_external_data=False), path


def call(task: str, tool: str, model, path, folder: str):
    """The function that one measurement calls."""
    if tool == "shapeinfer":
        import shapeinfer

        if task == "infer":
            return lambda: shapeinfer.infer_shapes(path or model)
        if task == "check":
            return lambda: shapeinfer.check(path or model)
        if path is None:
            return lambda: shapeinfer.optimize(model)
        from shapeinfer.modelio.writer import write_model

        out = os.path.join(folder, "optimized.onnx")
        return lambda: write_model(shapeinfer.optimize(path), out, source_dir=folder)
    if task == "infer":
        return lambda: onnx.shape_inference.infer_shapes(model, data_prop=True)
    if task == "check":
        return lambda: onnx.checker.check_model(path or model, full_check=True)
    import onnxsim

    return lambda: onnxsim.simplify(model)


def available(tool: str) -> bool:
    if tool != "onnxsim":
        return True
    try:
        import onnxsim  # noqa: F401
    except ImportError:
        return False
    return True


def onnxsim_on_7b(model, folder: str) -> str:
    """What onnxsim makes of the 7B without its weights (run in the model's folder, where the
    locations resolve): how many distinct weights its MatMuls still read (the model has a
    weight of its own for each)."""
    import onnxsim

    back = os.getcwd()
    os.chdir(folder)
    t = time.perf_counter()
    try:
        out, _ = onnxsim.simplify(model)
    except Exception as e:  # noqa: BLE001 - reported, not raised
        return f"fails after {time.perf_counter() - t:.2f} s: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
    finally:
        os.chdir(back)
    seconds = time.perf_counter() - t

    def weights_read(m):
        inits = {i.name for i in m.graph.initializer}
        return len({n.input[1] for n in m.graph.node if n.op_type == "MatMul" and n.input[1] in inits})

    return f"{seconds:.2f} s; its MatMuls read {weights_read(out)} distinct weights, the model's {weights_read(model)}"


def timed(models, tasks, repeat: int) -> list:
    rows = []
    for name in models:
        with tempfile.TemporaryDirectory() as folder:
            model, path = build(name, folder)
            for task in tasks:
                tools = ["shapeinfer", OTHER[task]]
                note = ""
                if name == "llama_7b" and task == "optimize":
                    if available("onnxsim"):
                        note = "onnxsim, weights unloaded: " + onnxsim_on_7b(model, folder)
                    tools = ["shapeinfer"]
                tools = [t for t in tools if available(t)]
                fns = {t: call(task, t, model, path, folder) for t in tools}
                for fn in fns.values():
                    fn()
                times = {t: [] for t in tools}
                for _ in range(repeat):
                    for t, fn in fns.items():
                        start = time.perf_counter()
                        fn()
                        times[t].append(time.perf_counter() - start)
                rows.append(dict(model=name, nodes=len(model.graph.node), task=task, times=times, note=note))
    return rows


def peak_mb(name: str, task: str, tool: str) -> float:
    out = subprocess.run([sys.executable, __file__, "--_child", name, task, tool], capture_output=True, text=True)
    if out.returncode != 0:
        return float("nan")
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"]


def child(name: str, task: str, tool: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        model, path = build(name, folder)
        call(task, tool, model, path, folder)()
    print(json.dumps({"peak_mb": own_peak_mb()}))


def own_peak_mb() -> float:
    """This process's peak resident memory. VmHWM belongs to the address space exec made:
    ru_maxrss survives exec and starts at the forking parent's size."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    ap.add_argument("--repeat", type=int, default=5, help="rounds of alternating calls (median reported)")
    ap.add_argument("--no-memory", action="store_true", help="skip the fresh-process peak memory runs")
    ap.add_argument("--_child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        child(*args._child)
        return 0
    rows = timed(args.models, args.tasks, args.repeat)
    print(f"{'model':<10} {'nodes':>6} {'task':<9} {'tool':<11} {'median s':>9} {'range s':>15} {'peak MB':>8}  ratio")
    for r in rows:
        ours = statistics.median(r["times"]["shapeinfer"])
        for tool, ts in r["times"].items():
            med = statistics.median(ts)
            mem = "" if args.no_memory else f"{peak_mb(r['model'], r['task'], tool):.0f}"
            ratio = ""
            if tool != "shapeinfer":
                ratio = f"onnxsim/shapeinfer {med / ours:.2f}x" if r["task"] == "optimize" else \
                    f"shapeinfer/{tool} {ours / med:.2f}x"
            print(f"{r['model']:<10} {r['nodes']:>6} {r['task']:<9} {tool:<11} {med:>9.3f} "
                  f"{min(ts):>7.3f}-{max(ts):<7.3f} {mem:>8}  {ratio}")
        if r["note"]:
            print(f"{'':<10} {'':>6} {r['task']:<9} {r['note']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
