"""Conformance on onnx's backend node cases that hold Expand, Reshape or Tile.

Two modes:

- ``static``: graph inputs keep their real shapes; the outputs' declared shapes and all
  value_info are erased; inference must recover each output's shape.
- ``symbolic``: every graph-input dim becomes a named symbol; each inferred output dim is
  evaluated with the real input sizes bound and compared with the real output shape.
- ``symbolic-nonempty``: as ``symbolic``, with the opt-in assumption that input dims are at
  least 1 (``assume_nonempty``); a case whose real inputs have an empty dim runs without it.

An output is *exact* when every dim evaluates to the real size, *unknown* when its rank is
unknown or a dim involves a symbol minted for an unknown dim, *wrong* otherwise (including a
crash). Run ``python tests/conformance.py`` to print the figures.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter

import numpy as np
import onnx

import shapeinfer
from shapeinfer.symbolic import EvaluationError, evaluate, free_symbols

OPS = {"Expand", "Reshape", "Tile"}


def _ops(graph):
    for n in graph.node:
        yield n.op_type
        for a in n.attribute:
            if a.HasField("g"):
                yield from _ops(a.g)
            for g in a.graphs:
                yield from _ops(g)


def cases():
    """(name, model, inputs, outputs) of every backend node case whose graph holds the ops."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_cases = collect_testcases(None)
    out = []
    for c in all_cases:
        m = c.model
        ops = set(_ops(m.graph))
        for f in m.functions:
            ops |= {n.op_type for n in f.node}
        if ops & OPS:
            for inputs, outputs in c.data_sets:
                out.append((c.name, m, inputs, outputs))
    return out


def _prepare(model, inputs, mode):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    del g.value_info[:]
    binding = {}
    init = {t.name for t in g.initializer}
    real_inputs = [vi for vi in g.input if vi.name not in init]
    for vi, arr in zip(real_inputs, inputs):
        if not vi.type.HasField("tensor_type"):
            continue
        shape = vi.type.tensor_type.shape
        shape.ClearField("dim")
        arr_shape = np.shape(arr)
        for k, size in enumerate(arr_shape):
            d = shape.dim.add()
            if mode == "static":
                d.dim_value = int(size)
            else:
                name = f"{_ident(vi.name)}_d{k}"
                d.dim_param = name
                binding[name] = int(size)
    for o in g.output:
        if o.type.HasField("tensor_type"):
            o.type.tensor_type.ClearField("shape")
    return m, binding


def _ident(name):
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "x"


def classify(result, name, expected, binding):
    shape = result.shape(name)
    if shape is None:
        return "unknown"
    real = np.shape(expected)
    if len(shape) != len(real):
        return "wrong"
    unknown = False
    for d, r in zip(shape, real):
        if any(s in result.minted for s in free_symbols(d)):
            unknown = True
            continue
        try:
            v = evaluate(d, binding)
        except EvaluationError:
            return "wrong"
        if v != r:
            return "wrong"
    return "unknown" if unknown else "exact"


MODES = ("static", "symbolic", "symbolic-nonempty")


def run(mode):
    counts = Counter()
    details = []
    for name, model, inputs, outputs in cases():
        m, binding = _prepare(model, inputs, mode)
        assume = mode == "symbolic-nonempty" and all(v >= 1 for v in binding.values())
        try:
            result = shapeinfer.infer(m, assume_nonempty=assume)
        except Exception as e:  # any failure on a valid model counts as wrong
            for o in m.graph.output:
                counts["wrong"] += 1
                details.append((name, o.name, "wrong", f"crash: {type(e).__name__}: {e}"))
            continue
        for o, expected in zip(m.graph.output, outputs):
            kind = classify(result, o.name, expected, binding)
            counts[kind] += 1
            if kind != "exact":
                details.append((name, o.name, kind, f"got {result.shape_strs(o.name)}, real {list(np.shape(expected))}"))
    return counts, details


def main(argv):
    verbose = "-v" in argv
    for mode in MODES:
        counts, details = run(mode)
        total = sum(counts.values())
        print(f"{mode}: {total} outputs: exact {counts['exact']}, unknown {counts['unknown']}, wrong {counts['wrong']}")
        if verbose:
            for d in details:
                print("   ", *d)


if __name__ == "__main__":
    main(sys.argv[1:])


def every_case(dims: str = "symbolic", constants: str = "none", skip=("test_bernoulli",)):
    """Every node case onnx ships whose inputs are plain tensors, as (name, model, feeds,
    outputs, binding) per data set: value_info and the outputs' declared shapes erased, each
    input that stays an input given its real shape (``dims="static"``) or a symbol per dim
    (``"symbolic"``: ``i{input}_{axis}``, bound to the real size in ``binding``). ``constants``:
    which inputs become initializers -- ``"none"``, ``"small-ints"`` (int inputs of at most 16
    elements: axes, shapes, repeats) or ``"all"``. ``skip``: case-name prefixes left out
    (Bernoulli draws random numbers)."""
    from onnx import numpy_helper
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_cases = collect_testcases(None)
    for case in all_cases:
        if case.name.startswith(tuple(skip)):
            continue
        for inputs, outputs in case.data_sets:
            m = onnx.ModelProto()
            m.CopyFrom(case.model)
            g = m.graph
            del g.value_info[:]
            if len(inputs) != len(g.input) or not all(
                    vi.type.HasField("tensor_type") and isinstance(a, np.ndarray) for vi, a in zip(g.input, inputs)):
                continue  # (sequences, optionals: not given as plain arrays)
            feeds, kept, binding = {}, [], {}
            for k, (vi, arr) in enumerate(zip(list(g.input), inputs)):
                if constants == "all" or constants == "small-ints" and arr.dtype.kind in "iu" and arr.size <= 16:
                    try:
                        g.initializer.append(numpy_helper.from_array(arr, vi.name))
                        continue
                    except Exception:  # noqa: BLE001 - a type numpy_helper cannot write: stays an input
                        pass
                kept.append(vi)
                feeds[vi.name] = arr
                vi.type.tensor_type.ClearField("shape")
                shape = vi.type.tensor_type.shape
                for j, d in enumerate(arr.shape):
                    if dims == "static":
                        shape.dim.add().dim_value = d
                    else:
                        shape.dim.add().dim_param = f"i{k}_{j}"
                        binding[f"i{k}_{j}"] = int(d)
            del g.input[:]
            g.input.extend(kept)
            for o in g.output:
                if o.type.HasField("tensor_type"):
                    o.type.tensor_type.ClearField("shape")
            yield case.name, m, feeds, outputs, binding
