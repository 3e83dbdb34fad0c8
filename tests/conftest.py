"""Hypothesis runs derandomized by default so that CI is repeatable; set
HYPOTHESIS_PROFILE=explore (and a larger SHAPEINFER_EXAMPLES) to search with fresh seeds.

Every test runs in raise mode (SHAPEINFER_RAISE=1, shapeinfer/errors.py): the CLI's and check's
boundary handlers re-raise, so that a bug anywhere fails the test that met it rather than
becoming an exit code or an internal-error finding. The tests of those boundaries turn it off
(the ``no_raise_mode`` fixture) where they inject a failure. Commands run in a child process
inherit it.
"""

import os

import pytest

from hypothesis import settings

settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

os.environ["SHAPEINFER_RAISE"] = "1"
# Output goes to no terminal here: tables get whole lines, whatever width a parallel worker's
# environment sets (pytest-xdist's workers have COLUMNS). Tests of the fitted tables set it.
os.environ.pop("COLUMNS", None)


@pytest.fixture
def no_raise_mode(monkeypatch):
    """The boundary handlers report instead of re-raising (what a user's run does)."""
    monkeypatch.setenv("SHAPEINFER_RAISE", "0")
