"""Families of models built on purpose (tests/adversarial/families.py), judged like generated
graphs: shapes against onnxruntime at bindings with 0 and 1, every written model loaded and
compared with optimisations off and at onnxruntime's default level, check's verdict against
onnxruntime's session creation both ways, no crash.

    python -m pytest tests/test_families.py                      # a sample of every family
    SHAPEINFER_FAMILIES=all python -m pytest tests/test_families.py -s   # every case (~2,600 models)
    python -m tests.adversarial.families [FAMILY...]              # the same from the shell

The default run takes SAMPLE cases of each family, spread over the whole family (a fixed stride
from a fixed start), so that each run judges the same cases and every axis of the family is
touched.
"""

import os

import pytest

pytest.importorskip("onnxruntime")

from tests.adversarial import harness  # noqa: E402
from tests.adversarial.families import FAMILIES  # noqa: E402
from tests.adversarial.runner import Outcome  # noqa: E402

ALL = os.environ.get("SHAPEINFER_FAMILIES", "") == "all"
SAMPLE = 16


def _sample(cases: list) -> list:
    if ALL or len(cases) <= SAMPLE:
        return cases
    stride = len(cases) / SAMPLE
    return [cases[int(i * stride)] for i in range(SAMPLE)]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family(name):
    cases = _sample(FAMILIES[name]())
    total = Outcome()
    for case in cases:
        out = case.judge()
        for f in out.failures:
            f.message = f"[{case.name}] {f.message}"
        total.merge(out)
    text = harness.summary(total)
    assert total.built == len(cases)
    assert total.dims_compared > 0
    assert not total.failures, text


def test_every_family_runs_somewhere():
    """Each family holds models that run (else it tests only refusals) -- checked on its sample."""
    for name, fn in FAMILIES.items():
        cases = _sample(fn())
        ran = sum(case.judge().ran for case in cases[:4])
        assert ran > 0, f"family {name}: none of its first sampled models runs"
