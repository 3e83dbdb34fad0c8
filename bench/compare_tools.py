"""Tensors expressed in the input dims: shapeinfer against onnxruntime's SymbolicShapeInference
and the onnx-shape-inference package, on the fixture corpus, judged by real runs.

    python -m venv /tmp/cmp && /tmp/cmp/bin/pip install onnx onnxruntime numpy sympy click \\
        onnx-graphsurgeon onnx-shape-inference
    /tmp/cmp/bin/python bench/compare_tools.py [MODEL ...]

Each model runs in onnxruntime with every node output exposed at the corpus bindings
(tests/corpus.py) and at bindings with one role at 0 where the model runs there. A tool's
tensor counts as *in input dims* when it has a shape and every dim is an int or an expression
over the graph inputs' dim names that equals the real size at every binding that ran; a dim
that evaluates to another size is *wrong* (the whole tensor counts as wrong). Competitors'
dims are strings (sympy syntax: ``floor(seq/2)``, ``Max(...)``), read with sympy.
Not part of the test run (needs sympy and onnx-shape-inference).

Known: llama_dynamo at batch = 0 shows 20 "wrong" for every tool alike -- onnxruntime's
ReduceMean with ``axes=[-1]`` on an empty input keeps the axis ([0,1,32] where the spec gives
[0,1,1]; the generator lists it as ort-reduce-empty-negative-axis-ignored): all three tools
follow the spec there.
"""

from __future__ import annotations

import os
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import shapeinfer  # noqa: E402
from shapeinfer.symbolic import EvaluationError, evaluate, free_symbols  # noqa: E402
from tests import corpus  # noqa: E402


def _shapes(sess, names, feeds):
    try:
        values = sess.run(names, feeds)
    except Exception:
        return None
    return {n: v.shape for n, v in zip(names, values)}


def _shapes_in_child(sess, names, feeds):
    """_shapes in a forked process: onnxruntime dies of SIGFPE on some empty inputs
    (DynamicQuantizeLinear, GroupQueryAttention at batch 0), which must not end the table."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=lambda: child.send(_shapes(sess, names, feeds)))
    proc.start()
    got = parent.recv() if parent.poll(120) else None
    proc.join(5)
    return got


def runs(entry, model, names):
    """[(binding, {tensor: shape})] at the corpus bindings and at each role set to 0 (where the
    model runs there)."""
    sess = corpus._session(model, names)
    out, seen = [], set()
    roles = sorted({d for dims in entry["dims"].values() for d in dims if isinstance(d, str)})
    saved = dict(corpus.ROLE_VALUES)
    variants = [None] + roles
    try:
        for zero in variants:
            if zero is not None:
                corpus.ROLE_VALUES[zero] = [0, 0, 0]
            for feeds, binding in corpus._bindings(entry, model):
                key = tuple(sorted(binding.items()))
                if key in seen:
                    continue
                seen.add(key)
                shapes = _shapes_in_child(sess, names, feeds) if zero is not None else _shapes(sess, names, feeds)
                if shapes is None:
                    continue  # the model does not run there: nothing to judge
                out.append((binding, shapes))
            corpus.ROLE_VALUES.clear()
            corpus.ROLE_VALUES.update(saved)
    finally:
        corpus.ROLE_VALUES.clear()
        corpus.ROLE_VALUES.update(saved)
    return out


def judge(shape_of, evaluate_dim, names, observed):
    """(in input dims, wrong) over the tensors: shape_of(name) -> list of dims or None."""
    good = wrong = 0
    for n in names:
        dims = shape_of(n)
        if dims is None:
            continue
        ok, bad = True, False
        for binding, shapes in observed:
            real = shapes[n]
            if len(dims) != len(real):
                bad = True
                break
            for d, size in zip(dims, real):
                v = evaluate_dim(d, binding)
                if v is None:
                    ok = False
                elif v != size:
                    bad = True
        if bad:
            wrong += 1
        elif ok:
            good += 1
    return good, wrong


def ours(model, input_symbols):
    r = shapeinfer.infer(model)

    def shape_of(n):
        return r.shape(n)

    def value(d, binding):
        if isinstance(d, int):
            return d
        if not free_symbols(d) <= input_symbols:
            return None
        try:
            return evaluate(d, binding)
        except EvaluationError:
            return -1  # no value where the model ran: wrong
    return shape_of, value


def _sympy_value(text, binding):
    import sympy

    try:
        expr = sympy.sympify(text, locals={k: sympy.Symbol(k, integer=True, nonnegative=True) for k in binding})
        if expr.free_symbols - {sympy.Symbol(k, integer=True, nonnegative=True) for k in binding}:
            return None
        v = expr.subs({sympy.Symbol(k, integer=True, nonnegative=True): val for k, val in binding.items()})
        return int(v) if v.is_number and v == int(v) else -1
    except Exception:
        return None


def _proto_shapes(model):
    out = {}
    g = model.graph
    for vi in list(g.value_info) + list(g.output) + list(g.input):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        out[vi.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
    return out


def onnxruntime_symbolic(model):
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    m = onnx.ModelProto()
    m.CopyFrom(model)
    inferred = SymbolicShapeInference.infer_shapes(m, auto_merge=True)
    return _proto_shapes(inferred)


def onnx_shape_inference(model):
    import onnx_ir as ir
    from onnx_shape_inference import infer_symbolic_shapes

    m = ir.from_proto(model)
    infer_symbolic_shapes(m)
    return _proto_shapes(ir.to_proto(m))


def strings(shapes):
    def shape_of(n):
        return shapes.get(n)

    def value(d, binding):
        if isinstance(d, int):
            return d
        if d is None:
            return None
        return _sympy_value(str(d), binding)
    return shape_of, value


def main(argv):
    wanted = set(argv)
    print(f"{'model':<28} {'tensors':>7}  {'shapeinfer':>16}  {'ort symbolic':>16}  {'onnx-shape-inference':>20}  bindings")
    for entry in corpus.entries():
        if wanted and not wanted & {entry["file"], entry["file"][:-5], entry["model"]}:
            continue
        model = onnx.load(os.path.join(entry["dir"], entry["file"]))
        r = shapeinfer.infer(model)
        names = [n for n in r.tensor_names() if r.fact(n) is not None and r.fact(n).dtype
                 and n not in {i.name for i in model.graph.input}]
        observed = runs(entry, model, names)
        cells = [judge(*ours(model, r.input_symbols()), names, observed)]
        for tool in (onnxruntime_symbolic, onnx_shape_inference):
            try:
                cells.append(judge(*strings(tool(model)), names, observed))
            except Exception as e:  # a crash of the tool: said, not counted
                cells.append(f"crash: {type(e).__name__}")
        shown = [c if isinstance(c, str) else f"{c[0]} ({c[1]} wrong)" for c in cells]
        zeros = sum(1 for b, _ in observed if 0 in b.values())
        print(f"{entry['file']:<28} {len(names):>7}  {shown[0]:>16}  {shown[1]:>16}  {shown[2]:>20}  "
              f"{len(observed)} ({zeros} with a 0)")


if __name__ == "__main__":
    main(sys.argv[1:])
