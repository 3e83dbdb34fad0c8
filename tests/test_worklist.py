"""After the first round each optimizer pass visits only the nodes changed near since it last
ran (the worklist). The optimised model must be the one full rounds give -- byte for byte,
with the same report -- on every fixture, the bench models and generated graphs."""

import importlib
import os
import sys

import onnx
import pytest

import shapeinfer
from tests import corpus

manager = importlib.import_module("shapeinfer.optimizer.manager")
HERE = os.path.dirname(os.path.abspath(__file__))


def _optimized(model, worklist: bool, **options):
    saved = manager.WORKLIST
    manager.WORKLIST = worklist
    try:
        report = manager.OptimizeReport()
        out = shapeinfer.optimize(model, report=report, **options)
    finally:
        manager.WORKLIST = saved
    kept = sorted(report.kept)
    return out.SerializeToString(), report.after, kept, sorted(report.not_folded)


def _same(model, **options):
    a = _optimized(model, True, **options)
    b = _optimized(model, False, **options)
    assert a[1:] == b[1:]
    assert a[0] == b[0]


@pytest.mark.parametrize("entry", corpus.entries(), ids=lambda e: e["file"])
def test_worklist_changes_nothing_on_the_fixtures(entry):
    _same(onnx.load(os.path.join(entry["dir"], entry["file"])))


def test_worklist_changes_nothing_on_the_bench_models():
    sys.path.insert(0, os.path.join(HERE, "..", "bench"))
    try:
        from bench_infer import chain
        from models import llama_layers
    finally:
        sys.path.pop(0)
    _same(chain(3000))
    _same(llama_layers(3))
    _same(llama_layers(3), assume_nonempty=True)


def test_worklist_changes_nothing_on_generated_graphs():
    from tests.adversarial.gen import generate

    compared = 0
    for seed in range(int(os.environ.get("SHAPEINFER_WORKLIST_SEEDS", 60))):
        try:
            model = generate(seed).model
        except Exception:  # noqa: BLE001 -- a recipe that does not apply to this seed
            continue
        try:
            a = _optimized(model, True)
        except (shapeinfer.ShapeInferenceError, ValueError):
            continue
        assert a == _optimized(model, False), seed
        compared += 1
    assert compared > 30
