"""onnx's backend node cases holding Expand/Reshape/Tile: no wrong shape, no crash, and the
number of exactly recovered outputs may not fall. Figures: ``python tests/conformance.py``."""

import pytest

from tests import conformance

# Floors: what the engine reaches today (onnx 1.23: 226 cases, 393 outputs). Raise them as it
# improves; the test fails if a change makes any output wrong or lowers the exact count.
EXACT_FLOOR = {"static": 375, "symbolic": 375, "symbolic-nonempty": 375}

# (symbolic: every input dim a symbol, 0 allowed -- as many exact as static: the zero cases
# are expressed, not given up)


@pytest.mark.parametrize("mode", conformance.MODES)
def test_backend_cases(mode):
    counts, details = conformance.run(mode)
    wrong = [d for d in details if d[2] == "wrong"]
    assert not wrong, "wrong shapes or crashes:\n" + "\n".join(map(str, wrong[:20]))
    assert sum(counts.values()) >= 380, "the backend cases were not all collected"
    assert counts["exact"] >= EXACT_FLOOR[mode], dict(counts)
