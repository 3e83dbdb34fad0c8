"""Folding conformance: every backend node case holding Expand/Reshape/Tile, with each graph
input turned into an initializer, must fold to constants equal to the expected outputs.
Run ``python tests/fold_conformance.py`` for the counts (``-v`` lists the misses).

Two modes. With ``fold_float_math`` every output must fold (the cases hold Softmax, MatMul,
ReduceMean... in their expanded functions; floats compared within a tolerance, as onnx's
expected outputs come from NumPy). By default only what is exactly defined folds: every
output that does must equal the expected one bit for bit, and every one that does not must
have been declined as float math (the reason names ``--fold-float-math``)."""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import numpy_helper

import shapeinfer
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), ".."))
from tests import conformance  # noqa: E402


# The point here is the kernels: a budget of 1 MiB lets test_tile's 161 KB output fold too
# (the default 16 KiB budget keeps that one Tile, as designed).
FOLD_BUDGET = 1 << 20


def as_initializers(model, inputs):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    init = {t.name for t in g.initializer}
    real = [vi for vi in g.input if vi.name not in init]
    for vi, arr in zip(real, inputs):
        if arr is None or not isinstance(arr, np.ndarray):
            return None
        g.initializer.append(numpy_helper.from_array(arr, vi.name))
    keep = [vi for vi in g.input if vi.name in init]
    del g.input[:]
    g.input.extend(keep)
    return m


def folded_value(model, name):
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(onnx.helper.get_attribute_value(n.attribute[0]))
        if n.op_type == "Identity" and n.output[0] == name:
            return folded_value(model, n.input[0])
    return None


def run(fold_float_math=True):
    """(outputs folded, misses as (case, output, why)). By default (exact folding) a folded
    output must be bit-identical to the expected one, and a miss is listed only when no node
    of its case was declined as float math."""
    from shapeinfer.optimizer.manager import OptimizeReport

    folded, missed = 0, []
    seen = set()
    for name, model, inputs, outputs in conformance.cases():
        key = (name, id(inputs))
        if key in seen:
            continue
        seen.add(key)
        m = as_initializers(model, inputs)
        if m is None:
            missed.extend((name, o.name, "an input is not a tensor") for o in model.graph.output)
            continue
        report = OptimizeReport()
        try:
            opt = shapeinfer.optimize(m, fold_budget=FOLD_BUDGET, fold_float_math=fold_float_math, report=report)
        except Exception as e:
            missed.extend((name, o.name, f"crash: {type(e).__name__}: {str(e)[:100]}") for o in model.graph.output)
            continue
        float_math = any("--fold-float-math" in why for _, _, why in report.declined)
        for o, expected in zip(model.graph.output, outputs):
            got = folded_value(opt, o.name)
            if got is None:
                if fold_float_math or not float_math:
                    missed.append((name, o.name, "not folded"))
            elif got.shape != np.shape(expected) or not _equal(got, expected, exact=not fold_float_math):
                missed.append((name, o.name, "WRONG value"))
            else:
                folded += 1
    return folded, missed


def _equal(a, b, exact=False):
    b = np.asarray(b)
    if a.dtype == object or b.dtype == object:
        return a.tolist() == b.tolist()
    if exact:
        return a.dtype == b.dtype and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    if a.dtype.kind == "f" or b.dtype.kind == "f" or a.dtype.name == "bfloat16":
        # within rounding of the output type: a case's expected outputs were computed with their
        # own intermediate roundings (a bfloat16 case's ulp, 2**-7, is past 1e-3)
        import ml_dtypes

        eps = float(ml_dtypes.finfo(a.dtype).eps) if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else 0.0
        rtol = max(1e-3, 2 * eps)
        return np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=1e-4, equal_nan=True)
    return np.array_equal(a, b)


if __name__ == "__main__":
    total = None
    for mode in (True, False):
        folded, missed = run(fold_float_math=mode)
        wrong = sum(1 for m in missed if "WRONG" in m[2])
        if mode:
            total = folded + len(missed)
            print(f"--fold-float-math: folded {folded} of {total} outputs; wrong {wrong}")
        else:
            print(f"default (exact): folded {folded} of {total} outputs, bit-identical to the expected; "
                  f"{total - folded - len(missed)} declined as float math; other misses {len(missed) - wrong}; "
                  f"wrong {wrong}")
        if "-v" in sys.argv:
            for m in missed:
                print("   ", *m)
