"""Run an original and an optimised model on the same random inputs and compare the outputs.

Each symbolic input dim takes several values (1 included); both models run with onnxruntime,
or with onnx's reference evaluator where onnxruntime cannot load one of them. Integer, bool
and string outputs must be identical, float outputs identical or within a tight tolerance
(folding may compute a constant subexpression in another order). A binding the *original*
model cannot run with is skipped and said so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

DEFAULT_VALUES = (1, 3, 5, 2, 8)
RTOL, ATOL = 1e-5, 1e-6


@dataclass
class VerifyReport:
    runs: list = field(default_factory=list)  # (binding, "ok" | "skipped: why" | "DIFFERENT: what")
    engine: str = "onnxruntime"

    @property
    def ok(self) -> bool:
        compared = [r for r in self.runs if r[1] == "ok" or r[1].startswith("DIFFERENT")]
        return bool(compared) and all(r[1] == "ok" for r in compared)

    @property
    def compared(self) -> int:
        return sum(1 for r in self.runs if r[1] == "ok" or r[1].startswith("DIFFERENT"))


def _symbols(model) -> list:
    init = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in init or not vi.type.HasField("tensor_type"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value") and d.dim_param not in out:
                out.append(d.dim_param)
    return out


def bindings_for(model, count: int = 3, values=None) -> list:
    """Bindings of the inputs' symbolic dims: all 1, then other small values, mixed.

    ``values`` maps a symbol to the sizes it should take instead (cycled over the runs)."""
    syms = _symbols(model)
    values = values or {}
    out = []
    for k in range(max(count, 1)):
        b = {}
        for j, s in enumerate(syms):
            if s in values:
                b[s] = values[s][k % len(values[s])]
            else:
                b[s] = 1 if k == 0 else DEFAULT_VALUES[(k + j) % len(DEFAULT_VALUES)]
        out.append(b)
    return out


def _inputs(model, binding, rng) -> dict:
    init = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else binding.get(d.dim_param, 1) for d in tt.shape.dim]
        np_dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if tt.elem_type == onnx.TensorProto.BOOL:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(bool)
        elif np.issubdtype(np_dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 8, shape).astype(np_dtype)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np_dtype)
    return feeds


def _runner(model):
    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return "onnxruntime", lambda feeds: sess.run(None, feeds)
    except Exception:
        from onnx.reference import ReferenceEvaluator

        ref = ReferenceEvaluator(model)
        return "onnx.reference", lambda feeds: ref.run(None, feeds)


def _same(a, b) -> str:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {list(a.shape)} vs {list(b.shape)}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.dtype == object or np.issubdtype(a.dtype, np.integer) or a.dtype == bool:
        return "" if np.array_equal(a, b) else "values differ"
    if np.array_equal(a, b, equal_nan=True):
        return ""
    return "" if np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True) else f"max difference {np.nanmax(np.abs(a - b))}"


def verify(original, optimized, bindings=None, seed: int = 0) -> VerifyReport:
    report = VerifyReport()
    eng1, run1 = _runner(original)
    eng2, run2 = _runner(optimized)
    report.engine = eng1 if eng1 == eng2 else f"{eng1} / {eng2}"
    names = [o.name for o in original.graph.output]
    rng = np.random.default_rng(seed)
    for binding in bindings or bindings_for(original):
        feeds = _inputs(original, binding, rng)
        try:
            want = run1(feeds)
        except Exception as e:
            report.runs.append((binding, f"skipped: the original model does not run ({str(e).splitlines()[0][:120]})"))
            continue
        try:
            got = run2(feeds)
        except Exception as e:
            report.runs.append((binding, f"DIFFERENT: the optimised model fails ({str(e).splitlines()[0][:160]})"))
            continue
        diffs = [f"{n}: {why}" for n, a, b in zip(names, want, got) if (why := _same(a, b))]
        report.runs.append((binding, "DIFFERENT: " + "; ".join(diffs) if diffs else "ok"))
    return report
