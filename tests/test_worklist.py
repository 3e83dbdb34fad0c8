"""After the first round each optimizer pass visits only the nodes changed near since it last
ran (the worklist). The optimised model must be the one full rounds give -- byte for byte,
with the same report -- on every fixture, the bench models and generated graphs."""

import importlib
import os

import onnx
import pytest

import shapeinfer
from tests import corpus
from tests.helpers import bench_module, generated_models

manager = importlib.import_module("shapeinfer.optimizer.manager")


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
    chain, models = bench_module("bench_infer").chain, bench_module("models")
    _same(chain(3000))
    _same(models.llama_layers(3))
    _same(models.llama_layers(3), assume_nonempty=True)


def test_worklist_changes_nothing_on_generated_graphs():
    compared = 0
    for seed, model in generated_models("SHAPEINFER_WORKLIST_SEEDS", 60):
        try:
            a = _optimized(model, True)
        except (shapeinfer.ShapeInferenceError, ValueError):
            continue
        assert a == _optimized(model, False), seed
        compared += 1
    assert compared > 30
