"""Judge one generated graph: shapes, shape values, optimised outputs, no crash and no hang.

(a) every dim ``shapeinfer.infer`` reports (strict, and with ``assume_nonempty`` at bindings where
    no tensor is empty) evaluates to the runtime size; every shape value it claims equals the
    runtime tensor;
(b) every optimised model (default passes, ``assume_nonempty``, a random subset of passes) loads
    in onnxruntime and gives the original's outputs bit for bit (a signalling NaN may come back
    quieted), and passes onnx.checker when the original does;
(c) infer/optimize raise only ShapeInferenceError/ModelLoadError, check() never raises nor
    reports an internal error, each within a time budget; and none of them calls a model invalid
    (a ShapeInferenceError, a shape-error finding) when it runs at some binding.

The runtime is onnxruntime with graph optimisations off and every node output exposed; where it
cannot load the model, onnx.reference. Runtime deviations from the spec: ``deviations.py``.
"""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import onnx

import shapeinfer
from shapeinfer import ModelLoadError, ShapeInferenceError
from shapeinfer.infer.facts import UNKNOWN
from shapeinfer.symbolic import EvaluationError, Expr, evaluate, to_str

from . import deviations

COMMAND_SECONDS = 8.0
MAX_PER_CLASS = 3  # failures kept per class and graph (the first ones)  # one infer/optimize/check of a graph of at most ~60 nodes


class CommandTimeout(BaseException):
    """Raised by the timer; a BaseException so that no ``except Exception`` swallows it."""


@contextmanager
def time_limit(seconds: float):
    def handler(signum, frame):
        raise CommandTimeout()
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Failure:
    cls: str
    message: str
    model: bytes = field(default=b"", repr=False)
    seed: Optional[int] = None
    tensor: str = ""
    binding: Optional[dict] = None
    variant: str = ""
    shrunk: Optional[bytes] = field(default=None, repr=False)

    def key(self):
        return (self.cls, self.tensor)

    def report(self, max_text=6000) -> str:
        m = onnx.ModelProto()
        m.ParseFromString(self.shrunk or self.model)
        try:
            text = onnx.printer.to_text(m)
        except Exception as e:  # noqa: BLE001 - the printer fails on a few odd models
            text = f"(onnx.printer failed: {e}); {len(m.graph.node)} nodes"
        if len(text) > max_text:
            text = text[:max_text] + "\n... (truncated)"
        head = f"[{self.cls}] seed={self.seed} {self.message}"
        if self.binding is not None:
            head += f"\n  binding: {self.binding}"
        if self.variant:
            head += f"\n  variant: {self.variant}"
        return head + ("\n  (shrunk)" if self.shrunk else "") + "\n" + text


@dataclass
class Outcome:
    seed: Optional[int] = None
    built: int = 0
    ran: int = 0  # graphs the original ran at some binding
    bindings_run: int = 0
    tensors_compared: int = 0
    dims_compared: int = 0
    values_compared: int = 0
    optimized_compared: int = 0  # (variant, binding) pairs whose outputs were compared
    failures: list = field(default_factory=list)
    deviations: Counter = field(default_factory=Counter)
    unlisted: list = field(default_factory=list)  # runtime vs spec differences matching nothing known
    engine: str = ""
    seconds: float = 0.0
    notes: list = field(default_factory=list)

    def merge(self, other: "Outcome"):
        for k in ("built", "ran", "bindings_run", "tensors_compared", "dims_compared", "values_compared",
                  "optimized_compared"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.failures.extend(other.failures)
        self.deviations.update(other.deviations)
        self.unlisted.extend(other.unlisted)


# ----------------------------------------------------------------------------------- running


def expose_all(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every main-graph node output also a graph output."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(onnx.helper.make_empty_tensor_value_info(o))
                have.add(o)
    return m


class Runtime:
    """A loaded model: onnxruntime (optimisations off; ``default_level``: at onnxruntime's
    default level, its fusions on) or onnx.reference."""

    def __init__(self, model: onnx.ModelProto, engine: Optional[str] = None, default_level: bool = False):
        self.error = ""
        self.engine = ""
        self.names = [o.name for o in model.graph.output]
        self.inputs = {i.name for i in model.graph.input}
        if engine in (None, "onnxruntime"):
            try:
                import onnxruntime as ort

                opts = ort.SessionOptions()
                opts.log_severity_level = 4
                if not default_level:
                    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                opts.intra_op_num_threads = 1
                opts.inter_op_num_threads = 1
                self.sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
                self.engine = "onnxruntime"
                return
            except Exception as e:  # noqa: BLE001
                self.error = "onnxruntime: " + str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
                if engine == "onnxruntime":
                    return
        try:
            from onnx.reference import ReferenceEvaluator

            self.ref = ReferenceEvaluator(model)
            self.engine = "onnx.reference"
        except Exception as e:  # noqa: BLE001
            self.error += "; onnx.reference: " + (str(e).strip().splitlines() or [type(e).__name__])[0][:300]

    def run(self, feeds: dict) -> dict:
        feeds = {k: v for k, v in feeds.items() if k in self.inputs}
        if self.engine == "onnxruntime":
            outs = self.sess.run(None, feeds)
        else:
            outs = self.ref.run(None, feeds)
        return dict(zip(self.names, [np.asarray(o) for o in outs]))


def _quiet_bits(a: np.ndarray) -> np.ndarray:
    """The bytes of a, with the quiet bit set on every NaN (a signalling NaN may come back quiet)."""
    if a.dtype.kind != "f" or a.size == 0 or a.dtype.itemsize not in (2, 4, 8):
        return a.reshape(-1).view(np.uint8) if a.dtype != object else a
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    quiet = {2: 0x0200, 4: 0x00400000, 8: 0x0008000000000000}[a.dtype.itemsize]
    bits = np.ascontiguousarray(a).reshape(-1).view(uint).copy()
    nan = np.isnan(a.reshape(-1))
    bits[nan] |= uint(quiet)
    return bits.view(np.uint8)


def same_bits(a: np.ndarray, b: np.ndarray) -> str:
    """'' when a and b are identical (dtype, shape, bytes up to NaN quieting), else why not."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {list(a.shape)} vs {list(b.shape)}"
    if a.dtype == object:
        return "" if a.tolist() == b.tolist() else "values differ"
    if np.array_equal(_quiet_bits(np.ascontiguousarray(a)), _quiet_bits(np.ascontiguousarray(b))):
        return ""
    fa, fb = a.reshape(-1), b.reshape(-1)
    qa, qb = _quiet_bits(fa).reshape(fa.size, -1), _quiet_bits(fb).reshape(fb.size, -1)
    i = int(np.nonzero((qa != qb).any(axis=1))[0][0])
    return f"element {i} (flat): {fa[i]!r} vs {fb[i]!r} ({fa[i:i + 1].tobytes().hex()} vs {fb[i:i + 1].tobytes().hex()})"


# ----------------------------------------------------------------------------------- the judge


ALLOWED = (ShapeInferenceError, ModelLoadError)


class Judge:
    def __init__(self, model: onnx.ModelProto, symbols, bindings, feeds, seed=None, variants=None, rng=None,
                 command_seconds=COMMAND_SECONDS, progress=None, skipped=None):
        self.model = model
        self.blob = model.SerializeToString()
        self.symbols = symbols
        self.bindings = bindings
        self.feeds = feeds
        self.seed = seed
        self.out = Outcome(seed=seed, built=1)
        self.rng = rng or np.random.default_rng(seed or 0)
        self.variants = variants
        self.command_seconds = command_seconds
        self.progress = progress or (lambda phase: None)
        self.skipped = skipped or {}
        self.opset = deviations.opset_of(model)
        self._orig_default = None  # the original at onnxruntime's default level, loaded when needed
        self.refused = False  # onnxruntime refuses the original as invalid (not for want of a kernel)

    def fail(self, cls, message, **kw):
        if sum(1 for f in self.out.failures if f.cls == cls) >= MAX_PER_CLASS:
            return
        if "variant" not in kw and getattr(self, "_variant", ""):
            kw["variant"] = self._variant
        self.out.failures.append(Failure(cls, message, self.blob, self.seed, **kw))

    def binding(self, b) -> dict:
        return {k: v for k, v in self.bindings[b].items() if not k.startswith("#")}

    # -- commands -----------------------------------------------------------------------------

    def command(self, what, fn, variant=""):
        """Run fn under the time budget; ('ok', value) or ('error', exc) or ('failed', None)."""
        self.progress(what)
        self._variant = variant
        t0 = time.perf_counter()
        try:
            with time_limit(self.command_seconds):
                value = fn()
        except CommandTimeout:
            self.fail("timeout", f"{what} took more than {self.command_seconds:.0f} s")
            return "failed", None
        except ALLOWED as e:
            return "error", e
        except RecursionError as e:
            self.fail("crash", f"{what} raised RecursionError: {str(e)[:200]}")
            return "failed", None
        except Exception as e:  # noqa: BLE001
            import traceback

            tb = traceback.extract_tb(e.__traceback__)
            where = next((f"{f.filename.split('shapeinfer/')[-1]}:{f.lineno}" for f in reversed(tb) if "/shapeinfer/" in f.filename), "")
            self.fail("crash", f"{what} raised {type(e).__name__}: {str(e)[:300]} (at {where})")
            return "failed", None
        dt = time.perf_counter() - t0
        if dt > self.command_seconds:
            self.fail("timeout", f"{what} took {dt:.1f} s")
        return "ok", value

    # -- the whole check ------------------------------------------------------------------------

    def run(self) -> Outcome:
        t0 = time.perf_counter()
        model = self.model
        # after a timeout the other commands (all of them infer first) are not run: one is enough
        st_inf, res = self.command("infer", lambda: shapeinfer.infer(model))
        timed_out = any(f.cls == "timeout" for f in self.out.failures)
        st_ne, res_ne = ("failed", None) if timed_out else self.command(
            "infer(assume_nonempty)", lambda: shapeinfer.infer(model, assume_nonempty=True))
        st_check, report = ("failed", None) if timed_out else self.command("check", lambda: shapeinfer.check(model))
        if st_check == "error":
            self.fail("crash", f"check raised {type(report).__name__}: {report}")
        st_ann, ann = ("failed", None) if timed_out else self.command(
            "infer_shapes", lambda: shapeinfer.infer_shapes(model))
        variants = self.variants if self.variants is not None else self.pick_variants()
        optimized = {}
        for name, kwargs in variants:
            if any(f.cls == "timeout" for f in self.out.failures):
                break
            st, opt = self.command(f"optimize({name})", lambda kw=kwargs: shapeinfer.optimize(model, **kw), variant=name)
            optimized[name] = (st, opt, kwargs)
        self._variant = ""

        # the runtime
        self.progress("runtime")
        exposed = expose_all(model)
        rt = Runtime(exposed)
        self.out.engine = rt.engine
        results = {}
        if rt.engine:
            for b, feeds in enumerate(self.feeds):
                if feeds is None:
                    continue
                self.progress(f"runtime binding {b}")
                try:
                    results[b] = (feeds, rt.run(feeds))
                except (Exception, MemoryError) as e:  # noqa: BLE001 - the original fails at this binding
                    results.setdefault("errors", []).append((b, str(e).strip().splitlines()[0][:200] if str(e).strip() else ""))
        ran = {b: v for b, v in results.items() if b != "errors"}
        if rt.engine != "onnxruntime" and refused_as_invalid(rt.error):
            # onnxruntime refuses the model itself (its load-time inference rejects a node):
            # invalid by the project's rule, whatever onnx.reference runs -- only check's
            # verdict is judged (judge_load_verdict), and shapeinfer may call it invalid
            self.refused = True
        # the graph outputs as the model itself computes them: onnxruntime's results can depend on
        # which tensors are graph outputs (float16 MatMul does), so outputs are compared like for like
        self.plain = {}
        self.plain_fails = set()  # bindings where the model fails unless every tensor is exposed
        if ran and rt.engine == "onnxruntime":
            plain_rt = Runtime(model, "onnxruntime")
            for b, (feeds, values) in ran.items():
                try:
                    self.plain[b] = plain_rt.run(feeds) if plain_rt.engine else None
                except Exception:  # noqa: BLE001
                    self.plain[b] = None
                    if plain_rt.engine:
                        self.plain_fails.add(b)
                        self.out.deviations["ort-outputs-depend-on-exposed-tensors"] += 1
                if self.plain[b] is not None:
                    for o in model.graph.output:
                        if same_bits(values[o.name], self.plain[b][o.name]):
                            self.out.deviations["ort-outputs-depend-on-exposed-tensors"] += 1
                            break
        if ran:
            self.out.ran = 1
            self.out.bindings_run = len(ran)
        taints = {b: self.taint(model, rt.engine, feeds, values) for b, (feeds, values) in ran.items()}
        nonempty = {b for b, (feeds, values) in ran.items() if not self.any_empty(model, feeds, values)}

        if st_inf == "ok":
            self.compare_shapes(res, ran, taints, "infer")
            self.check_run_facts(res, ran, taints)
        elif st_inf == "error" and isinstance(res, ShapeInferenceError):
            self.rejected(res, ran, taints, "infer")
        if st_ne == "ok":
            self.compare_shapes(res_ne, {b: v for b, v in ran.items() if b in nonempty}, taints, "infer(assume_nonempty)")
        elif st_ne == "error" and isinstance(res_ne, ShapeInferenceError):
            self.rejected(res_ne, {b: v for b, v in ran.items() if b in nonempty}, taints, "infer(assume_nonempty)")
        if st_check == "ok":
            self.judge_report(report, ran, taints)
            self.judge_load_verdict(report, rt)
        if st_ann == "ok" and rt.engine == "onnxruntime":
            self.check_annotated(ann, ran, taints)
        if ran and not any(f.cls == "timeout" for f in self.out.failures):
            # the same rules with every input size given (input_shapes=): static shapes at that binding
            inits = {t.name for t in model.graph.initializer}
            picks = sorted(ran, key=lambda b: (0 not in self.bindings[b].values(), b))[:1] + \
                [b for b in sorted(ran) if 0 not in self.bindings[b].values()][-1:]
            for b in dict.fromkeys(picks):
                feeds = ran[b][0]
                given = {i.name: [int(d) for d in np.shape(feeds[i.name])] for i in model.graph.input
                         if i.name in feeds and i.name not in inits}
                st3, res3 = self.command("infer(input_shapes=binding)", lambda g=given: shapeinfer.infer(model, input_shapes=g))
                if st3 == "ok":
                    self.compare_shapes(res3, {b: ran[b]}, taints, f"infer(input_shapes={given})")
                elif st3 == "error" and isinstance(res3, ShapeInferenceError):
                    self.rejected(res3, {b: ran[b]}, taints, "infer(input_shapes=binding)")
        if st_ann == "ok" and ran and not any(f.cls == "timeout" for f in self.out.failures):
            # the annotated model (marked: its dims are claims in the printed syntax) infers again
            # to shapes that still hold at run time
            st2, res2 = self.command("infer(infer_shapes(model))", lambda: shapeinfer.infer(ann))
            if st2 == "ok":
                self.compare_shapes(res2, ran, taints, "infer(infer_shapes(model))")
        for name, (st, opt, kwargs) in optimized.items():
            use = ran if not kwargs.get("assume_nonempty") else {b: v for b, v in ran.items() if b in nonempty}
            if st == "ok":
                self.check_optimized(name, opt, use, rt.engine, taints)
            elif st == "error" and isinstance(opt, ShapeInferenceError):
                self.rejected(opt, use, taints, f"optimize({name})")
        self.out.seconds = time.perf_counter() - t0
        return self.out

    def check_run_facts(self, res, ran, taints) -> None:
        """The bounds optimize relies on (infer/run_bounds.py) hold wherever the original ran:
        it runs nowhere below them. A binding where a documented runtime deviation touched some
        tensor is left out (the runtime may run where the spec fails)."""
        from shapeinfer.infer.run_bounds import run_lows

        st, lows = self.command("run_lows", lambda: run_lows(self.model, res))
        if st != "ok":
            return
        for b in ran:
            if taints.get(b):
                continue
            binding = self.binding(b)
            for s, (lo, why) in lows.items():
                if s in binding and binding[s] < lo:
                    self.fail("run-fact-wrong", f"optimize takes {s} >= {lo} ({why}), "
                              f"but the model ran at {s} = {binding[s]}", binding=binding)

    def pick_variants(self):
        from shapeinfer.optimizer.manager import DEFAULT_PASSES

        passes = list(DEFAULT_PASSES)
        k = self.rng.integers(1, 4)
        chosen = [passes[i] for i in self.rng.choice(len(passes), size=k, replace=False)]
        third = ("skip:" + ",".join(chosen), {"skip": chosen}) if self.rng.random() < 0.6 else \
            ("only:" + ",".join(chosen), {"passes": chosen})
        return [("default", {}), ("assume_nonempty", {"assume_nonempty": True}), third]

    # -- taint: documented runtime deviations ------------------------------------------------------

    def taint(self, model, engine, feeds, values) -> dict:
        """{tensor: (deviation, spec shape or None)} for outputs of nodes where the runtime deviates
        in a documented way, and everything computed from them."""
        inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        env = dict(inits)
        env.update(feeds)
        env.update(values)
        tainted: dict = {}
        for node in model.graph.node:
            reads = set(node.input) | _outer_reads(node)
            hit = next((tainted[i] for i in reads if i in tainted), None)
            if hit is not None:
                for o in node.output:
                    if o:
                        tainted[o] = (hit[0], None)
                continue
            if node.domain not in ("", "ai.onnx"):
                continue
            ins = [env.get(i) if i else None for i in node.input]
            if any(i and i not in env for i in node.input):
                continue
            if engine == "onnx.reference" and deviations.loop_scan_outputs(node):
                self.out.deviations["ref-loop-scan-outputs-concatenated"] += 1
                for o in deviations.loop_scan_outputs(node):
                    tainted[o] = ("ref-loop-scan-outputs-concatenated", None)
                continue
            if engine == "onnxruntime" and deviations.zero_trip_loop(node, ins):
                n_state = len(node.input) - 2
                scan_outs = [o for o in node.output[n_state:] if o]
                if scan_outs:
                    self.out.deviations["ort-loop-zero-iterations-scan-output"] += 1
                    for o in scan_outs:
                        tainted[o] = ("ort-loop-zero-iterations-scan-output", None)
                continue
            vdev = deviations.value_deviation(node, self.opset, ins, [values.get(o) for o in node.output], engine)
            want = deviations.spec_shapes(node, self.opset, ins)
            got = [tuple(np.asarray(values[o]).shape) if o in values else None for o in node.output]
            if want is None or want == "invalid" or len(want) != len(got) or want == got:
                if want == "invalid" and all(g is not None for g in got):
                    kind = deviations.classify(node, self.opset, ins, got, want, engine)
                    self.note_deviation(kind, node, ins, got, want)
                    for o in node.output:
                        if o:
                            tainted[o] = (kind, None)
                elif vdev:
                    self.out.deviations[vdev] += 1
                    for o in node.output:
                        if o:
                            tainted[o] = (vdev, "same")
                continue
            kind = deviations.classify(node, self.opset, ins, got, want, engine)
            self.note_deviation(kind, node, ins, got, want)
            if kind != "unlisted":
                for o, w in zip(node.output, want):
                    if o:
                        tainted[o] = (kind, w)
        return tainted

    def note_deviation(self, kind, node, ins, got, want):
        self.out.deviations[kind] += 1
        if kind == "unlisted" and len(self.out.unlisted) < 5:
            shapes = [None if x is None else (list(np.shape(x)), np.asarray(x).tolist() if np.size(x) <= 8 and np.asarray(x).dtype.kind in "iub" else "")
                      for x in ins]
            self.out.unlisted.append(f"seed={self.seed} {node.op_type} {node.name!r} opset {self.opset}: inputs {shapes}; "
                                     f"runtime {got}, spec {want}")

    @staticmethod
    def any_empty(model, feeds, values) -> bool:
        for name, arr in list(feeds.items()) + list(values.items()):
            if 0 in np.shape(arr):
                return True
        return False

    # -- (a) shapes and values ----------------------------------------------------------------------

    def compare_shapes(self, res, ran, taints, what):
        for b, (feeds, values) in ran.items():
            binding = self.binding(b)
            env = dict(feeds)
            env.update(values)
            for name, arr in env.items():
                fact = res.fact(name)
                if fact is None:
                    continue
                taint = taints[b].get(name)
                real = tuple(np.shape(arr))
                if taint is not None:
                    if taint[1] is None:
                        continue  # downstream of a runtime deviation: nothing to compare with
                    if taint[1] != "same":
                        real = tuple(taint[1])  # the deviating node itself: the spec's shape
                dims = fact.shape
                if dims is not None:
                    self.out.tensors_compared += 1
                    if len(dims) != len(real):
                        self.fail("wrong-rank", f"{what}: {name} has rank {len(real)} at run time, shapeinfer says "
                                  f"{_dims_str(dims)}", tensor=name, binding=binding)
                        continue
                    for i, (d, n) in enumerate(zip(dims, real)):
                        if res.is_unknown_dim(d):
                            continue
                        self.out.dims_compared += 1
                        try:
                            got = int(evaluate(d, binding))
                        except EvaluationError as e:
                            self.fail("unevaluable-dim", f"{what}: {name} dim {i} is {_short(to_str(d))!r}, which does not "
                                      f"evaluate under the binding ({e}); real size {n}", tensor=name, binding=binding)
                            continue
                        if got != n:
                            self.fail("wrong-dim", f"{what}: {name} is {_dims_str(dims)}; dim {i} = {_short(to_str(d))} = {got} "
                                      f"but the runtime gives {n} (shape {list(real)})", tensor=name, binding=binding)
                if fact.value is not None and taint is None:
                    self.compare_value(fact.value, np.asarray(arr), res, binding, name, what)

    def compare_value(self, value, arr, res, binding, name, what):
        value = np.asarray(value)
        if value.dtype != object:
            if value.shape != arr.shape:
                self.fail("wrong-value", f"{what}: {name} value has shape {list(value.shape)}, runtime {list(arr.shape)}",
                          tensor=name, binding=binding)
                return
            self.out.values_compared += 1
            why = same_bits(value.astype(arr.dtype) if value.dtype != arr.dtype else value, arr)
            if why:
                self.fail("wrong-value", f"{what}: {name} value {value.reshape(-1)[:8].tolist()} vs runtime "
                          f"{arr.reshape(-1)[:8].tolist()}: {why}", tensor=name, binding=binding)
            return
        if value.shape != arr.shape:
            self.fail("wrong-value", f"{what}: {name} value has shape {list(value.shape)}, runtime {list(arr.shape)}",
                      tensor=name, binding=binding)
            return
        for idx in np.ndindex(value.shape):
            e = value[idx]
            if e is UNKNOWN:
                continue
            real = arr[idx]
            if isinstance(e, (bool, np.bool_)):
                ok, got = bool(e) == bool(real), bool(e)
            elif isinstance(e, (int, np.integer, Expr)):
                if isinstance(e, Expr) and res.is_unknown_dim(e):
                    continue
                try:
                    got = int(evaluate(e, binding)) if isinstance(e, Expr) else int(e)
                except EvaluationError:
                    self.fail("unevaluable-dim", f"{what}: {name}{list(idx)} value {_short(to_str(e))} does not evaluate",
                              tensor=name, binding=binding)
                    continue
                if arr.dtype.kind == "f":
                    ok = float(got) == float(real)
                else:
                    ok = got == int(real)
            else:
                continue
            self.out.values_compared += 1
            if not ok:
                self.fail("wrong-value", f"{what}: {name}{list(idx)} is {_short(to_str(e)) if isinstance(e, Expr) else e} = {got}"
                          f" but the runtime gives {real!r} (dtype {arr.dtype}; value {_value_str(value)} vs "
                          f"{arr.reshape(-1)[:8].tolist()})", tensor=name, binding=binding)
                return

    # -- (c) a valid model called invalid ------------------------------------------------------------

    def node_of(self, label):
        """The main-graph node a message names: by name, or "<unnamed, output 'x'>"."""
        m = re.match(r"<unnamed, output '(.*)'>$", label or "")
        for n in self.model.graph.node:
            if (m and m.group(1) in n.output) or (not m and label and n.name == label):
                return n
        return None

    def rejected(self, err, ran, taints, what):
        if not ran or self.refused:
            return
        node = self.node_of(err.node_name)
        for b, (feeds, values) in ran.items():
            if node is not None and any(o in taints[b] for o in node.output):
                continue
            self.fail("rejects-valid-model", f"{what} raised ShapeInferenceError although the model runs at this "
                      f"binding: {str(err)[:400]}", binding=self.binding(b))
            return

    def judge_report(self, report, ran, taints):
        for f in report.findings:
            if f.code == "internal-error":
                self.fail("check-internal-error", f"check: {f.message[:400]}")
            if f.severity != "error" or not ran or self.refused:
                continue
            if f.code in ("no-size", "baked-in-size"):
                # a claim of the input contract, over non-empty inputs: "runs at no size" or
                # "runs only at seq=5" -- each binding the model ran at must be empty or that size
                said = re.search(r"runs only at ((?:(?:'[^']*'|[^\s=']+)=\d+(?: or )?)+):", f.message)
                sizes = [p.rsplit("=", 1) for p in said.group(1).split(" or ")] if said else []
                sizes = [(n[1:-1] if n.startswith("'") else n, v) for n, v in sizes]  # (a quoted name: 'a + b')
                equation = re.search(r"runs only where (.+?) == (\d+):", f.message)
                for b in ran:
                    binding = self.binding(b)
                    if any(v == 0 for v in binding.values()):
                        continue
                    if equation is not None:
                        from shapeinfer.symbolic import evaluate, parse

                        if evaluate(parse(equation.group(1)), binding) == int(equation.group(2)):
                            continue
                    elif sizes and any(binding.get(n, int(v)) == int(v) for n, v in sizes):
                        continue
                    self.fail("check-false-error", f"check reports an error [{f.code}] at {f.node!r} ({f.op}) "
                              f"although the model runs at this binding, no input empty: {f.message[:300]}",
                              binding=binding)
                    break
                continue
            if f.code not in ("shape-error", "declared-shape"):
                # any other error on a model that runs (onnxruntime loaded it and ran it; a run
                # by onnx.reference tells nothing of what onnxruntime accepts)
                if self.out.engine != "onnxruntime":
                    continue
                self.fail("check-false-error", f"check reports an error [{f.code}] at {f.node!r} ({f.op}) although "
                          f"the model loads and runs in onnxruntime: {f.message[:300]}",
                          binding=self.binding(next(iter(ran))))
                continue
            if f.code == "shape-error":
                for b, (feeds, values) in ran.items():
                    prod = self.node_of(f.node)
                    if prod is not None and any(o in taints[b] for o in prod.output):
                        continue
                    self.fail("check-false-error", f"check reports a shape-error at {f.node!r} ({f.op}) although the model "
                              f"runs at this binding: {f.message[:300]}", binding=self.binding(b))
                    break
            if f.code == "declared-shape":
                m = re.match(r"'([^']+)' is declared", f.message)
                if not m:
                    continue
                name = m.group(1)
                declared = self.declared(name)
                if declared is None:
                    continue
                for b, (feeds, values) in ran.items():
                    arr = values.get(name, feeds.get(name))
                    if arr is None or name in taints[b]:
                        continue
                    if self.declared_matches(declared, np.shape(arr), self.binding(b)):
                        self.fail("check-false-error", f"check reports a declared-shape error for {name!r}, yet the "
                                  f"declared shape holds at this binding (runtime {list(np.shape(arr))}): {f.message[:300]}",
                                  binding=self.binding(b), tensor=name)
                        break

    def judge_load_verdict(self, report, rt):
        """check's verdict against onnxruntime's session creation: a model onnxruntime refuses
        at load is an error (naming why); one it loads is judged by the runs (judge_report).
        A refusal for want of a kernel (an op or type onnxruntime does not implement) is counted,
        not judged: the model is valid, the runtime incomplete."""
        if rt.engine == "onnxruntime" or not rt.error.startswith("onnxruntime:"):
            return
        if "NOT_IMPLEMENTED" in rt.error or "Could not find an implementation" in rt.error:
            self.out.deviations["ort-no-kernel"] += 1
            return
        if "UpsampleBase" in rt.error:  # its Resize kernel takes no 1-D linear/cubic input (deviations.py)
            self.out.deviations["ort-resize-rank-checked-at-load"] += 1
            return
        if "InsertedPrecisionFreeCast" in rt.error:
            # a float16 op onnxruntime has no float16 kernel for: it inserts Casts to float, with
            # Cast's integer 'to' -- which Cast-1 (opsets below 6) has as a string (deviations.py)
            self.out.deviations["ort-fp16-casts-old-opset"] += 1
            return
        if not any(f.severity == "error" for f in report.findings):
            self.fail("check-passes-refused", f"onnxruntime refuses the model at load ({rt.error[:300]}), "
                      "yet check reports no error")

    def declared(self, name):
        for vi in list(self.model.graph.output) + list(self.model.graph.value_info):
            if vi.name == name and vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in vi.type.tensor_type.shape.dim]
        return None

    def declared_matches(self, declared, real, binding) -> bool:
        """The declaration holds for these runtime sizes (a name not bound is free; in a model
        marked as written by shapeinfer, an expression in its printed syntax is evaluated)."""
        if len(declared) != len(real):
            return False
        marked = any(p.key == "shapeinfer.dim_syntax" for p in self.model.metadata_props)
        for d, n in zip(declared, real):
            if isinstance(d, int) and d != n:
                return False
            if isinstance(d, str) and d in binding and binding[d] != n:
                return False
            if isinstance(d, str) and d not in binding and marked:
                from shapeinfer.symbolic import ParseError, parse

                try:
                    if int(evaluate(parse(d), binding)) != n:
                        return False
                except (ParseError, EvaluationError, ValueError, TypeError):
                    pass
        return True

    def default_level(self, written, ran, taints, what, variant=""):
        """A written model at onnxruntime's default level (its fusions read the dims and constant
        shapes written in): it loads, and computes what the original does at that level --
        shapes, types and integers exactly, floats up to rounding (a fusion may change the
        order of float operations in either model)."""
        if self._orig_default is None:
            self._orig_default = Runtime(self.model, "onnxruntime", default_level=True)
        orig = self._orig_default
        rt = Runtime(written, "onnxruntime", default_level=True)
        if orig.engine != "onnxruntime":
            # onnxruntime's own rewrites at that level break the original already (its
            # ReshapeFusion writes -1 beside a 0, say): nothing the written model could keep
            self.out.deviations["ort-default-level-refuses-original"] += 1
            return
        if rt.engine != "onnxruntime":
            self.fail(f"{what}-load-default", f"{what} model does not load in onnxruntime at its default level: "
                      f"{rt.error}", variant=variant)
            return
        for b, (feeds, values) in [kv for kv in ran.items() if not taints[kv[0]]][:2]:
            try:
                want = orig.run(feeds)
            except Exception:  # noqa: BLE001 - the original fails there at this level: nothing to compare
                continue
            try:
                got = rt.run(feeds)
            except Exception as e:  # noqa: BLE001
                self.fail(f"{what}-fails-default", f"{what} model fails at onnxruntime's default level where the "
                          f"original runs: {(str(e).strip().splitlines() or [''])[0][:300]}",
                          binding=self.binding(b), variant=variant)
                return
            for o in self.model.graph.output:
                why = roughly_same(want[o.name], got[o.name])
                kernels = values.get(o.name)
                if why and kernels is not None and roughly_same(kernels, want[o.name]) \
                        and not roughly_same(kernels, got[o.name]):
                    # onnxruntime's own rewrites change the original's result at that level (a
                    # Gather by Range(-2, 3, 3) made a Slice from -2 gives one element, not two);
                    # the written model computes what the kernels do: deviations.py
                    self.out.deviations["ort-default-level-changes-original"] += 1
                    continue
                if why:
                    self.fail(f"{what}-differs-default", f"{what} model at onnxruntime's default level: output "
                              f"{o.name!r} differs from the original's: {why}", binding=self.binding(b),
                              variant=variant, tensor=o.name)
                    return

    def check_annotated(self, ann, ran, taints):
        """infer_shapes' model (every shape written in) loads and computes what the original did."""
        if not ran:
            return  # a model that never runs may be refused at load once its shapes are written in
        rt = Runtime(ann, "onnxruntime")
        if rt.engine != "onnxruntime":
            self.fail("annotated-load", f"infer_shapes' model does not load in onnxruntime: {rt.error}")
            return
        self.default_level(ann, ran, taints, "annotated")
        for b, (feeds, values) in [kv for kv in ran.items() if not taints[kv[0]]][:2]:
            try:
                got = rt.run(feeds)
            except Exception as e:  # noqa: BLE001
                if b in self.plain_fails:
                    continue  # the original fails there too when run as it is
                self.fail("annotated-fails", f"infer_shapes' model fails where the original runs: "
                          f"{(str(e).strip().splitlines() or [''])[0][:300]}", binding=self.binding(b))
                return
            want = self.plain.get(b) or values
            for o in self.model.graph.output:
                why = same_bits(want[o.name], got[o.name])
                if why:
                    self.fail("annotated-differs", f"infer_shapes' model: output {o.name!r} differs: {why}",
                              binding=self.binding(b), tensor=o.name)
                    return

    # -- (b) the optimised model ---------------------------------------------------------------------

    def check_optimized(self, name, opt, ran, engine, taints):
        if not isinstance(opt, onnx.ModelProto):
            self.fail("crash", f"optimize({name}) returned {type(opt).__name__}", variant=name)
            return
        variant = name
        orig_ins = [(i.name) for i in self.model.graph.input]
        opt_ins = [(i.name) for i in opt.graph.input]
        if [o.name for o in opt.graph.output] != [o.name for o in self.model.graph.output]:
            self.fail("optimized-interface", f"optimize({name}) changed the graph outputs: "
                      f"{[o.name for o in self.model.graph.output]} -> {[o.name for o in opt.graph.output]}", variant=variant)
            return
        missing = [n for n in orig_ins if n not in opt_ins]
        if missing:
            self.fail("optimized-interface", f"optimize({name}) dropped graph inputs {missing}: a caller feeding them "
                      f"gets an error", variant=variant, shrunk=None)
        checker_ok = _checker_ok(self.model)
        if checker_ok is None:
            self.out.deviations["onnx-checker-aborts"] += 1
        if checker_ok and _checker_ok(opt) is False:
            try:
                onnx.checker.check_model(_undeclared(opt), full_check=True)
                why = ""
            except Exception as e:  # noqa: BLE001
                why = str(e).strip().splitlines()[0][:300]
            if "ShapeInferenceError" in why and not ran:
                return  # a model that never runs: onnx's inference may see that once constants are folded
            self.fail("optimized-checker", f"optimize({name}) output fails onnx.checker (full_check) where the original "
                      f"passes: {why}", variant=variant)
        if not engine:
            return
        rt = Runtime(opt, engine if engine == "onnx.reference" else None)
        if engine == "onnxruntime" and rt.engine == "onnxruntime" and ran:
            self.default_level(opt, ran, taints, "optimized", variant=variant)
        if engine == "onnxruntime" and rt.engine != "onnxruntime":
            if not ran and "UpsampleBase" in str(rt.error):
                # onnxruntime runs no 1-D (or 6-D) linear/cubic Resize: with the rank unknown at
                # load it fails at run time, with the rank written (value_info) at load. The
                # original ran at no binding, so nothing that ran stops running.
                self.out.deviations["ort-resize-rank-checked-at-load"] += 1
                return
            self.fail("optimized-load", f"optimize({name}) output does not load in onnxruntime: {rt.error}", variant=variant)
            return
        for b, (feeds, values) in ran.items():
            self.progress(f"optimized {name} binding {b}")
            try:
                got = rt.run(feeds)
            except Exception as e:  # noqa: BLE001
                if taints[b] or b in self.plain_fails:
                    continue  # the runtime left the spec at this binding: the rewrite may rely on the spec
                self.fail("optimized-fails", f"optimize({name}) output fails where the original runs: "
                          f"{(str(e).strip().splitlines() or [''])[0][:300]}", binding=self.binding(b), variant=variant)
                return
            self.out.optimized_compared += 1
            want = self.plain.get(b) or values
            for o in self.model.graph.output:
                if o.name in taints[b]:
                    continue
                why = same_bits(want[o.name], got[o.name])
                if why and rt.engine == "onnxruntime" and _half_judged_by_reference(self.model, opt, feeds, o.name):
                    self.out.deviations["ort-half-ops-computed-in-float"] += 1
                    continue
                if why:
                    self.fail("optimized-differs", f"optimize({name}): output {o.name!r} differs: {why}",
                              binding=self.binding(b), variant=variant, tensor=o.name)
                    return


def refused_as_invalid(error: str) -> bool:
    """Whether onnxruntime's load error says the model is invalid (its checks or its load-time
    inference reject it), not that onnxruntime lacks a kernel for something valid."""
    if not error.startswith("onnxruntime:"):
        return False
    return not any(k in error for k in ("NOT_IMPLEMENTED", "Could not find an implementation", "UpsampleBase",
                                        "InsertedPrecisionFreeCast"))


def roughly_same(a: np.ndarray, b: np.ndarray) -> str:
    """'' when a and b have one dtype and shape, equal integers, bools and strings, and floats
    equal up to rounding (NaNs and infinities in the same places), else why not."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {list(a.shape)} vs {list(b.shape)}"
    if a.dtype.kind != "f":
        return "" if np.array_equal(a, b) else "values differ"
    x, y = a.astype(np.float64), b.astype(np.float64)
    if not np.array_equal(np.isnan(x), np.isnan(y)) or not np.array_equal(np.isinf(x), np.isinf(y)):
        return "NaNs or infinities differ"
    finite = np.isfinite(x)
    if not np.array_equal(x[~finite & ~np.isnan(x)], y[~finite & ~np.isnan(y)]) or \
            not np.allclose(x[finite], y[finite], rtol=1e-2, atol=1e-3):
        return "values differ beyond rounding"
    return ""


def _half_judged_by_reference(model, opt, feeds: dict, name: str) -> bool:
    """Whether a float16/bfloat16 output that onnxruntime computes differently for the original
    and the optimised model is the same bits in both under onnx.reference (see deviations.py,
    ort-half-ops-computed-in-float): then the difference is onnxruntime's, not the rewrite's."""
    types = {o.name: o.type.tensor_type.elem_type for o in model.graph.output}
    if types.get(name) not in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
        return False
    try:  # (onnx.reference runs no function whose attribute refers to the caller's)
        from onnx.inliner import inline_local_functions

        model, opt = inline_local_functions(model), inline_local_functions(opt)
    except Exception:  # noqa: BLE001 - as they are
        pass
    a, b = Runtime(model, "onnx.reference"), Runtime(opt, "onnx.reference")
    if a.engine != "onnx.reference" or b.engine != "onnx.reference":
        return False
    try:
        return not same_bits(a.run(feeds)[name], b.run(feeds)[name])
    except Exception:  # noqa: BLE001 - the reference cannot judge it: not excused
        return False


def _undeclared(model) -> onnx.ModelProto:
    """A copy whose declared output shapes keep only their rank, whose value_info is gone and whose
    initializers that are also inputs are plain inputs: onnx's full check infers from the stored
    value of such an initializer, so it may refuse a declaration or a Reshape that holds for the
    value fed (deviations.py); the declarations are judged elsewhere (check's declared-shape
    findings)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for o in m.graph.output:
        if o.type.HasField("tensor_type") and o.type.tensor_type.HasField("shape"):
            for d in o.type.tensor_type.shape.dim:
                d.Clear()
    del m.graph.value_info[:]
    # an initializer that is also a graph input is only a default: onnx's full check infers from
    # its stored value (deviations.py), which a caller may replace; judged as a plain input
    inputs = {i.name for i in m.graph.input}
    kept = [t for t in m.graph.initializer if t.name not in inputs]
    if len(kept) != len(m.graph.initializer) and m.ir_version >= 4:
        del m.graph.initializer[:]
        m.graph.initializer.extend(kept)
    return m


def _checker_ok(model):
    """onnx.checker's full check in a forked process: True, False, or None when it killed the
    process (its C++ shape inference aborts on some models, see deviations.py)."""
    import os

    blob = _undeclared(model).SerializeToString()
    pid = os.fork()
    if pid == 0:  # the child: no Python cleanup, just the verdict
        import faulthandler

        faulthandler.disable()  # an abort here is the expected verdict, not a crash to report
        code = 0
        try:
            m = onnx.ModelProto()
            m.ParseFromString(blob)
            onnx.checker.check_model(m, full_check=True)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None
    return os.WEXITSTATUS(status) == 0


def _outer_reads(node) -> set:
    out = set()
    for a in node.attribute:
        graphs = [a.g] if a.type == a.GRAPH else list(a.graphs)
        for g in graphs:
            for n in g.node:
                out.update(n.input)
                out |= _outer_reads(n)
    return out


def _short(text: str, limit=120) -> str:
    return text if len(text) <= limit else text[:limit // 2] + "…" + text[-limit // 3:]


def _dims_str(dims) -> str:
    return "[" + ",".join(_short(to_str(d)) for d in dims) + "]"


def _value_str(value) -> str:
    flat = value.reshape(-1).tolist()[:8]
    return "[" + ",".join("?" if e is UNKNOWN else (_short(to_str(e), 60) if isinstance(e, Expr) else str(e)) for e in flat) + "]"
