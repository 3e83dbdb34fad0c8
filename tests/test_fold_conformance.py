"""Every backend node case holding Expand/Reshape/Tile, inputs made initializers, folds to
constants equal to the expected outputs (figures: python tests/fold_conformance.py): all of
them with fold_float_math; by default the exactly defined ones, bit for bit, and every other
output is declined as float math."""

from tests import fold_conformance


def test_every_backend_case_folds_to_its_expected_outputs_with_fold_float_math():
    folded, missed = fold_conformance.run(fold_float_math=True)
    assert not missed, missed[:20]
    assert folded >= 380


def test_by_default_what_folds_is_bit_identical_and_the_rest_is_float_math():
    folded, missed = fold_conformance.run(fold_float_math=False)
    assert not missed, missed[:20]
    assert folded >= 70
