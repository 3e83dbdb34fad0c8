"""Run onnx's own shape-inference tests with shapeinfer in place, and judge check on them.

onnx's tests build thousands of models and expect onnx's inference to accept some and to reject
others (``shape_inference_test.py``, ``data_propagation_test.py``, ``symbolic_shape_test.py``,
``model_inference_test.py``). This script runs those four files, from the sources of the onnx
release that is installed, with ``onnx.shape_inference.infer_shapes`` and ``onnx.checker.check_model``
wrapped so that every model they are given is recorded, with whether onnx rejected it in a test
that passed: the models the tests expect to fail. Each recorded model is then judged by
onnxruntime (session creation, graph optimisations off and at the default level; where it loads,
runs with every dynamic dim set to 0, 1, 2 and 7) and by ``shapeinfer.check``.

The figure that matters: models the tests expect to fail that onnxruntime refuses and check
passes without an error -- it must be 0. The other cells are printed beside it, with the
models onnx accepts that onnxruntime runs and check calls invalid (``--valid``).

    python bench/onnx_suite.py                         # fetch onnx's sdist of the installed version
    python bench/onnx_suite.py --source onnx-1.23.2.tar.gz   # or an sdist / a checkout at that tag
    python bench/onnx_suite.py --valid --json out.json       # judge the accepted models too

The sources come from ``--source`` (an sdist tarball, or a directory holding ``tests/python/`` or
``onnx/test/``), else from onnx's sdist on PyPI for the installed version, kept in
``bench/.cache/``. Needs onnxruntime and pytest (the test extra).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import sys
import tarfile
import tempfile
import urllib.request
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import onnx

FILES = ("shape_inference_test.py", "data_propagation_test.py", "symbolic_shape_test.py", "model_inference_test.py")
CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")
GRID = (0, 1, 2, 7)
MAX_FEED = 10 ** 7  # elements: a larger input is not fed (the model is judged at load only)


# -- the sources -------------------------------------------------------------------------------

def _sdist(version: str) -> str:
    """onnx's sdist of ``version`` from PyPI (the package registry), checked against its sha256."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"onnx-{version}.tar.gz")
    if os.path.exists(path):
        return path
    req = urllib.request.Request("https://pypi.org/simple/onnx/", headers={"Accept": "text/html"})
    page = urllib.request.urlopen(req, timeout=120).read().decode()
    found = re.search(r'href="(https://[^"]*/onnx-%s\.tar\.gz)#sha256=([0-9a-f]+)"' % re.escape(version), page)
    if not found:
        raise SystemExit(f"onnx {version}: no sdist on PyPI; pass --source")
    url, digest = found.groups()
    blob = urllib.request.urlopen(url, timeout=300).read()
    if hashlib.sha256(blob).hexdigest() != digest:
        raise SystemExit(f"{url}: sha256 does not match the index")
    with open(path + ".part", "wb") as f:
        f.write(blob)
    os.replace(path + ".part", path)
    return path


def _test_files(source: str, into: str) -> list:
    """The four test files (and every test module beside them, which they import) copied into
    ``into``; returns their paths."""
    if os.path.isfile(source):
        with tarfile.open(source) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and re.search(r"/(tests/python|onnx/test)/[^/]+\.py$", m.name)]
            for m in members:
                data = tar.extractfile(m).read()
                with open(os.path.join(into, os.path.basename(m.name)), "wb") as f:
                    f.write(data)
    else:
        for sub in ("tests/python", "onnx/test"):
            folder = os.path.join(source, sub)
            if os.path.isdir(folder):
                for name in os.listdir(folder):
                    if name.endswith(".py"):
                        with open(os.path.join(folder, name), "rb") as src, open(os.path.join(into, name), "wb") as dst:
                            dst.write(src.read())
                break
    paths = [os.path.join(into, f) for f in FILES]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"{source}: no {', '.join(os.path.basename(p) for p in missing)}")
    return paths


# -- recording what the tests give onnx ----------------------------------------------------------

class Recorder:
    """A pytest plugin: wraps onnx's inference and checker while the tests run. A model that onnx
    rejects inside a test that passes is one the test expects to fail; a model onnx accepts is
    recorded as valid. (A model the checker rejects after inference accepted it is recorded as
    the model given to inference.)"""

    def __init__(self):
        self.invalid: dict = {}
        self.valid: dict = {}
        self.test = None
        self._pending: list = []
        self._last = None  # (inferred model, the model it was inferred from)

    def pytest_runtest_setup(self, item):
        self.test, self._pending = item.nodeid, []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed:
            for blob, rejected, reason in self._pending:
                if rejected:
                    self.invalid.setdefault(blob, (self.test, reason))
                else:
                    self.valid.setdefault(blob, (self.test, ""))

    def _note(self, model, rejected, reason=""):
        if isinstance(model, onnx.ModelProto):
            self._pending.append((model.SerializeToString(), rejected, reason))

    def install(self):
        infer, check = onnx.shape_inference.infer_shapes, onnx.checker.check_model

        def infer_shapes(model, *args, **kwargs):
            try:
                out = infer(model, *args, **kwargs)
            except Exception as e:
                self._note(model, True, f"inference: {str(e)[:200]}")
                raise
            self._last = (out, model)
            return out

        def check_model(model, *args, **kwargs):
            original = self._last[1] if self._last and self._last[0] is model else model
            try:
                check(model, *args, **kwargs)
            except Exception as e:
                self._note(original, True, f"checker: {str(e)[:200]}")
                raise
            self._note(original, False)

        onnx.shape_inference.infer_shapes = infer_shapes
        onnx.checker.check_model = check_model


def record(paths: list) -> Recorder:
    import pytest

    rec = Recorder()
    rec.install()
    sys.path.insert(0, os.path.dirname(paths[0]))
    code = pytest.main([*paths, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header",
                        "-W", "ignore", "--rootdir", os.path.dirname(paths[0]), "-o", "addopts="], plugins=[rec])
    print(f"onnx's tests: pytest exit code {int(code)}")
    for blob in rec.invalid:
        rec.valid.pop(blob, None)
    return rec


# -- onnxruntime's verdict -----------------------------------------------------------------------

_NP = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
       10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def _feeds(model, size):
    feeds = {}
    inits = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or tt.elem_type not in _NP or not tt.HasField("shape"):
            return None
        dims = [d.dim_value if d.HasField("dim_value") else size for d in tt.shape.dim]
        if np.prod(dims, dtype=float) > MAX_FEED:
            return None
        feeds[vi.name] = np.ones(dims, dtype=_NP[tt.elem_type])
    return feeds


def ort_verdict(blob: bytes, run: bool = True) -> str:
    """'refused' (both levels refuse the session), 'no-kernel', 'fails' (loads, and every run
    fails), 'runs' (some run succeeds), 'loads' (not run: inputs it cannot be fed, or ``run``
    false), 'split' (one level loads it, the other refuses)."""
    import onnxruntime as ort

    model = onnx.load_model_from_string(blob)
    verdicts = []
    sessions = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        so = ort.SessionOptions()
        so.log_severity_level = 4
        so.graph_optimization_level = level
        try:
            sessions.append(ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"]))
            verdicts.append("loads")
        except Exception as e:  # noqa: BLE001 - onnxruntime's refusal is the verdict
            text = str(e)
            kernel = "Could not find an implementation" in text or "Failed to find kernel" in text
            verdicts.append("no-kernel" if kernel else "refused")
    if verdicts[0] != verdicts[1]:
        return "split"
    if verdicts[0] != "loads" or not run:
        return verdicts[0]
    tried = 0
    for size in GRID:
        feeds = _feeds(model, size)
        if feeds is None:
            return "loads"
        tried += 1
        try:
            sessions[0].run(None, feeds)
            return "runs"
        except Exception:  # noqa: BLE001 - that run failing is part of the verdict
            pass
    return "fails" if tried else "loads"


class Judge:
    """onnxruntime's verdicts in a forkserver worker: onnxruntime aborts the process on some
    invalid models; that, and no verdict within a minute, is 'refused'."""

    def __init__(self):
        self.pool = None

    def __call__(self, blob: bytes, run: bool = True) -> str:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("forkserver"))
        try:
            return self.pool.submit(ort_verdict, blob, run).result(timeout=60)
        except (BrokenProcessPool, FutureTimeout):
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
            if run and self(blob, run=False) == "loads":
                return "crashes"  # (onnxruntime loads it and dies, or hangs, in a run)
            return "refused"


# -- check's verdict -----------------------------------------------------------------------------

def check_verdict(blob: bytes) -> tuple:
    """('error', first error) / ('pass', '') / ('crash', traceback line): shapeinfer.check.
    Most of onnx's test models have no graph output, which check reports (``no-output``:
    onnxruntime fails every run of such a model); unless the graph holds Constants only (which
    onnxruntime's load refuses), the verdict is taken from the other errors, so that it says
    whether check finds what onnxruntime refuses in the nodes."""
    import shapeinfer

    try:
        model = onnx.load_model_from_string(blob)
        report = shapeinfer.check(model)
    except Exception as e:  # noqa: BLE001 - a crash of check is a finding of this script
        return "crash", f"{type(e).__name__}: {e}"[:200]
    computes = any(n.op_type != "Constant" for n in model.graph.node)  # (Constants only: the load refuses that)
    errors = [f for f in report.findings if f.severity == "error" and not (f.code == "no-output" and computes)]
    if errors:
        e = errors[0]
        return "error", f"{e.code} [{e.op} {e.node}] {e.message}"[:200]
    return "pass", ""


def _label(blob: bytes) -> str:
    m = onnx.load_model_from_string(blob)
    ops = Counter(n.op_type for n in m.graph.node)
    return ",".join(op for op, _ in ops.most_common(3)) or "(no nodes)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="onnx's sdist, or a checkout at the installed version's tag")
    ap.add_argument("--valid", action="store_true", help="judge the models onnx accepts too (false errors)")
    ap.add_argument("--json", help="write every verdict to this file")
    args = ap.parse_args(argv)

    source = args.source or _sdist(onnx.__version__)
    print(f"onnx {onnx.__version__}: tests from {source}")
    import onnxruntime
    print(f"onnxruntime {onnxruntime.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        rec = record(_test_files(source, tmp))
    judge = Judge()
    rows = []
    groups = [("invalid", rec.invalid)] + ([("valid", rec.valid)] if args.valid else [])
    for kind, models in groups:
        for blob, (test, reason) in models.items():
            ort_says = judge(blob)
            ours, why = check_verdict(blob)
            rows.append({"expected": kind, "test": test, "onnx": reason, "onnxruntime": ort_says,
                         "check": ours, "why": why, "ops": _label(blob)})
    if judge.pool is not None:
        judge.pool.shutdown()

    for kind, _ in groups:
        mine = [r for r in rows if r["expected"] == kind]
        table = Counter((r["onnxruntime"], r["check"]) for r in mine)
        print(f"\n{len(mine)} models onnx's tests expect to be {kind} (onnxruntime verdict x check verdict):")
        for (o, c), n in sorted(table.items()):
            print(f"  onnxruntime {o:9s}  check {c:5s}  {n:5d}")
    missed = [r for r in rows if r["expected"] == "invalid" and r["onnxruntime"] == "refused" and r["check"] != "error"]
    false = [r for r in rows if r["onnxruntime"] == "runs" and r["check"] == "error"]
    blamed = [r for r in rows if r["onnxruntime"] in ("runs", "fails", "loads") and "onnxruntime's load" in r["why"]]
    crashes = [r for r in rows if r["check"] == "crash"]
    quiet = [r for r in rows if r["expected"] == "valid" and r["onnxruntime"] == "refused" and r["check"] != "error"]
    print()
    for title, found, field in (("expected to fail, refused by onnxruntime, passed by check", missed, "onnx"),
                                ("accepted by onnx, refused by onnxruntime, passed by check", quiet if args.valid else None, ""),
                                ("run by onnxruntime, an error in check", false, "why"),
                                ("loaded by onnxruntime, an error in check that says its load refuses it", blamed, "why"),
                                ("check crashed", crashes, "why")):
        if found is None:
            continue
        print(f"{title}: {len(found)}")
        for r in found:
            print(f"  {r['test']} [{r['ops']}]" + (f": {r[field][:140]}" if field else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if missed or crashes or false or blamed else 0


if __name__ == "__main__":
    sys.exit(main())
