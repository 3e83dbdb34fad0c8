"""Run an original and an optimised model on the same inputs and compare the outputs, bit for bit.

Each symbolic input dim takes several values: 1 for all at first, other small sizes, and 0 for
all at the end. At each binding both models run twice: on random floats with -0.0 and +0.0 mixed
in (a rewrite that loses a signed zero shows), then with +inf, -inf and NaN in some elements too.
Both models run in onnxruntime (an optimised model it cannot load is a difference: every model
shapeinfer writes must load there), or both in onnx's reference evaluator when onnxruntime cannot
load the original.

Outputs compare exactly by default: the same dtype, the same shape and the same bytes, with one
tolerance: a signalling NaN may come back quieted, so the quiet bit is set on every NaN (float16,
bfloat16, float32, float64, complex, float8e5m2 -- the other float8 kinds have a single NaN
encoding) in both outputs before the bytes are compared. ``exact=False`` -- for an optimisation
that used an inexact opt-in (fold_float_math, fuse_gemm) -- compares floats within RTOL/ATOL;
``signed_zeros=False`` -- for ignore_signed_zero -- takes -0.0 and +0.0 as equal, nothing else.

A binding the *original* model cannot run with is skipped and said so. The outcome is
"identical" (something was compared, all equal), "different", or "nothing compared" (every
binding skipped) -- never a pass, never a difference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import onnx

from ..modelio.external import check_external_data, external_tensors, load_external_data
from ..modelio.tensors import np_dtype as modelio_np_dtype

DEFAULT_VALUES = (1, 3, 5, 2, 8)
RTOL, ATOL = 1e-5, 1e-6
SIGNED_ZERO_FRACTION = 0.1  # of float input elements set to -0.0 (and as many to +0.0)
SPECIAL_FRACTION = 0.05  # of float input elements set to +inf, to -inf and to NaN (each)

IDENTICAL, DIFFERENT, NOTHING_COMPARED = "identical", "different", "nothing compared"

# dtype name: (unsigned view, exponent mask, mantissa mask, quiet bit, sign bit). A NaN has every
# exponent bit and some mantissa bit set; float8e4m3fn has one NaN per sign (no quiet bit), and
# the fnuz kinds have neither a quiet bit nor a -0.0.
_FLOAT_BITS = {
    "float16": (np.uint16, 0x7C00, 0x03FF, 0x0200, 0x8000),
    "bfloat16": (np.uint16, 0x7F80, 0x007F, 0x0040, 0x8000),
    "float32": (np.uint32, 0x7F800000, 0x007FFFFF, 0x00400000, 0x80000000),
    "float64": (np.uint64, 0x7FF0000000000000, 0x000FFFFFFFFFFFFF, 0x0008000000000000, 0x8000000000000000),
    "float8_e5m2": (np.uint8, 0x7C, 0x03, 0x02, 0x80),
    "float8_e4m3fn": (np.uint8, 0x78, 0x07, 0x00, 0x80),
}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass
class VerifyReport:
    runs: list = field(default_factory=list)  # (binding, "ok" | "skipped: why" | "DIFFERENT: what")
    engine: str = "onnxruntime"
    fallback: str = ""  # why onnxruntime was not used (it could not load the original), when it was not
    exact: bool = True
    signed_zeros: bool = True

    @property
    def compared(self) -> int:
        return sum(1 for r in self.runs if r[1] == "ok" or r[1].startswith("DIFFERENT"))

    @property
    def skipped(self) -> int:
        return sum(1 for r in self.runs if r[1].startswith("skipped"))

    @property
    def outcome(self) -> str:
        if any(r[1].startswith("DIFFERENT") for r in self.runs):
            return DIFFERENT
        return IDENTICAL if self.compared else NOTHING_COMPARED

    @property
    def ok(self) -> bool:
        return self.outcome == IDENTICAL

    @property
    def comparison(self) -> str:
        if not self.exact:
            return f"within rtol={RTOL:g}, atol={ATOL:g}"
        return "bit-exact" if self.signed_zeros else "bit-exact but for the sign of zero"

    def as_dict(self) -> dict:
        return {"outcome": self.outcome, "engine": self.engine, "fallback": self.fallback or None,
                "comparison": self.comparison,
                "runs": [{"binding": b, "result": r} for b, r in self.runs]}


def input_symbols(model) -> list:
    """The dim_params of the graph inputs (not initializers), in order, each once."""
    init = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in init or not vi.type.HasField("tensor_type"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value") and d.dim_param and d.dim_param not in out:
                out.append(d.dim_param)
    return out


_symbols = input_symbols


def bindings_for(model, count: int = 3, values: Optional[dict] = None) -> list:
    """Bindings of the inputs' symbolic dims: all 1, then other small values mixed, then all 0.

    ``values`` maps a symbol to the sizes it takes instead: then there are as many runs as the
    longest list (shorter lists cycle); symbols not named take 1, small values, and 0 last."""
    syms = input_symbols(model)
    values = {s: list(v) for s, v in (values or {}).items() if v}
    free = [s for s in syms if s not in values]
    runs = max(len(v) for v in values.values()) if values else max(count, 1)
    out = []
    for k in range(runs):
        b = {}
        for j, s in enumerate(syms):
            if s in values:
                b[s] = values[s][k % len(values[s])]
            else:
                b[s] = 1 if k == 0 else DEFAULT_VALUES[(k + j) % len(DEFAULT_VALUES)]
        out.append(b)
    if free:
        out.append({s: (values[s][0] if s in values else 0) for s in syms})
    return out


def _float_input(shape, np_dtype, rng, special: bool):
    n = int(np.prod(shape, dtype=np.int64))
    x = rng.standard_normal(n)
    u = rng.random(n)
    x[u < SIGNED_ZERO_FRACTION] = -0.0
    x[(u >= SIGNED_ZERO_FRACTION) & (u < 2 * SIGNED_ZERO_FRACTION)] = 0.0
    edge = [-0.0]
    if special:
        lo = 2 * SIGNED_ZERO_FRACTION
        for k, v in enumerate((np.inf, -np.inf, np.nan)):
            x[(u >= lo + k * SPECIAL_FRACTION) & (u < lo + (k + 1) * SPECIAL_FRACTION)] = v
        edge = [np.nan, np.inf, -np.inf, -0.0]
    x[:len(edge)] = edge[:n]  # small tensors see the edge cases too
    return x.astype(np_dtype).reshape(shape)


class NoRandomInputs(Exception):
    """A graph input random_inputs cannot make (not a tensor, or of a type NumPy cannot hold)."""


def random_inputs(model, binding, rng, special: bool = False) -> dict:
    init = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        if not vi.type.HasField("tensor_type"):
            raise NoRandomInputs(f"input {vi.name!r} is not a tensor")
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else binding.get(d.dim_param, 1)
                 for d in tt.shape.dim]
        np_dtype = modelio_np_dtype(tt.elem_type)
        if np_dtype is None:
            raise NoRandomInputs(f"input {vi.name!r} has element type {tt.elem_type}, which NumPy cannot hold")
        if tt.elem_type == onnx.TensorProto.BOOL:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(bool)
        elif np.issubdtype(np_dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 8, shape).astype(np_dtype)
        elif np.dtype(np_dtype).kind == "c":
            re, im = (_float_input(shape, np.float64, rng, special) for _ in range(2))
            feeds[vi.name] = (re + 1j * im).astype(np_dtype)
        elif np_dtype == object:
            feeds[vi.name] = np.array([str(v) for v in rng.integers(0, 8, int(np.prod(shape)))], dtype=object).reshape(shape)
        else:
            feeds[vi.name] = _float_input(shape, np_dtype, rng, special)
    return feeds


class RuntimeFailure(Exception):
    """A runtime (onnxruntime, onnx.reference) refusing or failing a model; the message is the
    first line of what it said."""


def _runtime(fn, *args, **kwargs):
    """``fn(*args)``, a call into a runtime, with what it raises made a RuntimeFailure. A
    boundary: onnxruntime's exceptions have no base but Exception, and onnx.reference's are what
    its NumPy kernels raise -- on a model it does not take, whatever the type -- while no code of
    shapeinfer's runs inside the call."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - a runtime's failure, reported as a result (see above)
        raise RuntimeFailure(_first_line(e)) from e


def _ort_session(model, base_dir):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if base_dir is not None:  # the model's external data locations are relative to this folder
        opts.add_session_config_entry("session.model_external_initializers_file_folder_path", base_dir)
    sess = _runtime(ort.InferenceSession, model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return lambda feeds: _runtime(sess.run, None, feeds)


def _reference(model, base_dir):
    from onnx.reference import ReferenceEvaluator

    if base_dir is not None and next(external_tensors(model), None) is not None:
        m = onnx.ModelProto()  # (every external tensor, wherever it lives, read from base_dir: vetted first)
        m.CopyFrom(model)
        check_external_data(m, base_dir)
        load_external_data(m, base_dir)
        model = m
    ref = _runtime(ReferenceEvaluator, model)
    return lambda feeds: _runtime(ref.run, None, feeds)


# onnxruntime's messages start with its status and the C++ function that failed:
# "[ONNXRuntimeError] : 1 : FAIL : /src/.../model.cc:256 onnxruntime::Model::Model(...) Unsupported ..."
_ORT_PREFIX = re.compile(r"^(\[ONNXRuntimeError\] : \d+ : \w+ : )?(\S+\.(cc|cpp|h):\d+ [^\s(]+\([^)]*\)\s*)?")


def _first_line(e: Exception, limit: int = 160) -> str:
    line = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return (_ORT_PREFIX.sub("", line) or line)[:limit]


def _canonical(a: np.ndarray, signed_zeros: bool = True) -> np.ndarray:
    """An unsigned-integer view of a's elements (shape a.shape + (parts,)), NaNs quieted, and
    -0.0 made +0.0 unless ``signed_zeros``."""
    a = np.ascontiguousarray(a).reshape(np.shape(a))  # (alone it makes a 0-d array 1-d)
    if a.dtype.kind == "c":
        a = a.view(np.float32 if a.dtype.itemsize == 8 else np.float64).reshape(a.shape + (2,))
    else:
        a = a.reshape(a.shape + (1,))
    spec = _FLOAT_BITS.get(a.dtype.name)
    if spec is not None:
        view_t, exp, mant, quiet, sign = (spec[0],) + tuple(spec[0](v) for v in spec[1:])
        bits = a.view(view_t).copy()
        if quiet:
            bits[((bits & exp) == exp) & ((bits & mant) != 0)] |= quiet
        if not signed_zeros:
            bits[bits == sign] = 0
        return bits
    if a.dtype.itemsize in _UINT and a.dtype != object:
        return a.view(_UINT[a.dtype.itemsize])
    return a.view(np.uint8).reshape(a.shape[:-1] + (-1,))


def _show(v, bits) -> str:
    text = repr(v) if isinstance(v, (str, bytes)) else str(v)
    return f"{text} (0x{bits})" if bits else text


def _kind(v) -> str:
    if v is None:
        return "no value (an empty optional)"
    if isinstance(v, (list, tuple)):
        return f"a sequence of {len(v)}"
    if isinstance(v, dict):
        return f"a map of {len(v)}"
    return "a tensor"


def difference(a, b, exact: bool = True, signed_zeros: bool = True) -> str:
    """'' when a and b are equal (see the module doc), else what differs. An output that is no
    tensor compares by its structure: a sequence (its tensors may have different shapes) element
    by element, a map key by key, an optional by whether it holds a value, then that value."""
    if any(v is None or isinstance(v, (list, tuple, dict)) for v in (a, b)):
        if _kind(a).split(" of ")[0] != _kind(b).split(" of ")[0]:
            return f"{_kind(a)} vs {_kind(b)}"
        if a is None:
            return ""
        if isinstance(a, dict):
            if set(a) != set(b):
                return f"map keys {sorted(a, key=repr)} vs {sorted(b, key=repr)}"
            pairs = [(f"key {k!r}", a[k], b[k]) for k in sorted(a, key=repr)]
        else:
            if len(a) != len(b):
                return f"sequence length {len(a)} vs {len(b)}"
            pairs = [(f"element {k}", x, y) for k, (x, y) in enumerate(zip(a, b))]
        for where, x, y in pairs:
            why = difference(x, y, exact, signed_zeros)
            if why:
                return f"{where}: {why}"
        return ""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {list(a.shape)} vs {list(b.shape)}"
    floating = a.dtype != object and (a.dtype.kind in "fc" or "float" in a.dtype.name)
    if a.dtype == object:
        differ = np.array([x != y for x, y in zip(a.reshape(-1), b.reshape(-1))], dtype=bool).reshape(a.shape)
    elif floating and not exact:
        fa, fb = (x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) for x in (a, b))
        differ = ~np.isclose(fa, fb, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        differ = (_canonical(a, signed_zeros) != _canonical(b, signed_zeros)).any(axis=-1)
    count = int(np.count_nonzero(differ))
    if not count:
        return ""
    at = tuple(int(i) for i in np.argwhere(differ)[0])
    x, y = a[at], b[at]
    hx = hy = ""
    if floating:  # the bits too: -0.0 vs 0.0, NaN payloads
        hx, hy = (np.ascontiguousarray(v).tobytes()[::-1].hex() for v in (x, y))
    return f"{count} of {a.size} elements differ (first at {list(at)}: {_show(x, hx)} vs {_show(y, hy)})"


def _run(run, feeds):
    try:
        return run(feeds), None
    except RuntimeFailure as e:
        return None, str(e)


def verify(original, optimized, bindings=None, seed: int = 0, exact: bool = True, signed_zeros: bool = True,
           base_dir: Optional[str] = None, reference: bool = False) -> VerifyReport:
    """Run both models at each binding (default: :func:`bindings_for`) and compare the outputs.

    ``exact`` (the default) compares bytes (NaNs quieted); ``exact=False`` allows RTOL/ATOL on
    floats, for an optimisation made with an inexact opt-in (fold_float_math, fuse_gemm).
    ``signed_zeros=False`` takes -0.0 and +0.0 as equal and is otherwise exact, for an
    optimisation made with ignore_signed_zero. ``base_dir`` is the folder the models' external
    data locations are relative to. ``reference`` runs onnx's reference evaluator (the spec)
    instead of onnxruntime -- for float16 models, whose float16 ops onnxruntime's CPU provider
    runs in float32 with the Cast pairs between them dropped depending on the nodes around, so
    that two ways of writing one computation round differently there."""
    report = VerifyReport(exact=exact, signed_zeros=signed_zeros)
    bindings = list(bindings) if bindings is not None else bindings_for(original)
    try:
        if reference:
            raise RuntimeFailure("the reference evaluator was asked for")
        run1 = _ort_session(original, base_dir)
        try:
            run2 = _ort_session(optimized, base_dir)
        except RuntimeFailure as e:  # what shapeinfer writes must load where the original does
            why = f"DIFFERENT: the optimised model does not load in onnxruntime ({e})"
            report.runs = [(b, why) for b in bindings]
            return report
    except (RuntimeFailure, ImportError) as e_ort:  # (no onnxruntime installed: the reference)
        report.engine = "onnx.reference"
        report.fallback = ("asked for" if reference else
                           f"onnxruntime could not load the original model: {_first_line(e_ort, 200)}")
        try:
            run1 = _reference(original, base_dir)
        except RuntimeFailure as e:
            why = (f"skipped: the original model loads neither in onnxruntime ({_first_line(e_ort, 100)}) "
                   f"nor in onnx.reference ({_first_line(e, 100)})")
            report.runs = [(b, why) for b in bindings]
            return report
        try:
            run2 = _reference(optimized, base_dir)
        except RuntimeFailure as e:
            report.runs = [(b, f"DIFFERENT: the optimised model does not load ({e})") for b in bindings]
            return report
    names = [o.name for o in original.graph.output]
    rng = np.random.default_rng(seed)
    for binding in bindings:
        outcomes = []
        for special in (False, True):
            try:
                feeds = random_inputs(original, binding, rng, special)
            except NoRandomInputs as e:  # an input that is not a tensor of a known type
                outcomes.append(f"skipped: no random inputs for this model ({e})")
                break
            want, err = _run(run1, feeds)
            inputs = "with inf/NaN inputs: " if special else ""
            if err is not None:
                outcomes.append(f"skipped: the original model does not run {inputs}({err})")
                continue
            got, err = _run(run2, feeds)
            if err is not None:
                outcomes.append(f"DIFFERENT: {inputs}the optimised model fails ({err})")
                continue
            diffs = [f"{n}: {why}" for n, a, b in zip(names, want, got) if (why := difference(a, b, exact, signed_zeros))]
            outcomes.append(f"DIFFERENT: {inputs}" + "; ".join(diffs) if diffs else "ok")
        report.runs.append((binding, _combine(outcomes)))
    return report


def _combine(outcomes: list) -> str:
    """One outcome for a binding from its two runs: a difference wins, then a comparison."""
    for o in outcomes:
        if o.startswith("DIFFERENT"):
            return o
    if "ok" in outcomes:
        return "ok"
    return outcomes[0]


def computes_in_float16(model) -> bool:
    """Whether the model holds float16 weights or casts to float16 (see ``verify(reference=)``)."""
    return any(t.data_type == onnx.TensorProto.FLOAT16 for t in model.graph.initializer) or any(
        a.name == "to" and a.i == onnx.TensorProto.FLOAT16 for n in model.graph.node if n.op_type == "Cast"
        for a in n.attribute)
