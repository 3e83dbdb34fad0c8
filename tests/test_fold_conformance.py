"""Every backend node case holding Expand/Reshape/Tile, inputs made initializers, folds to
constants equal to the expected outputs (figures: python tests/fold_conformance.py)."""

from tests import fold_conformance


def test_every_backend_case_folds_to_its_expected_outputs():
    folded, missed = fold_conformance.run()
    assert not missed, missed[:20]
    assert folded >= 380
