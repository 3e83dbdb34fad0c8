"""Optimising the real exports: the result passes the full checker and computes the same
outputs as the original at three bindings (1 included); what is left is counted."""

import onnx
import pytest

import shapeinfer
from shapeinfer.optimizer.manager import OptimizeReport
from shapeinfer.optimizer.verify import verify
from tests import corpus


@pytest.mark.parametrize("assume_nonempty", [False, True], ids=["strict", "nonempty"])
@pytest.mark.parametrize("entry", corpus.entries(), ids=lambda e: e["file"])
def test_optimized_export_computes_the_same(entry, assume_nonempty):
    pytest.importorskip("onnxruntime")
    model = onnx.load(f"{corpus.CORPUS}/{entry['file']}")
    report = OptimizeReport()
    out = shapeinfer.optimize(model, report=report, assume_nonempty=assume_nonempty)
    onnx.checker.check_model(out, full_check=True)
    bindings = [b for _, b in corpus._bindings(entry, model)]
    v = verify(model, out, bindings=bindings)
    assert v.ok and v.compared == len(bindings), v.runs
    assert report.after["nodes"] <= report.before["nodes"]
    assert report.after["Tile"] == 0 or any(op == "Tile" for _, op, _ in report.kept)
