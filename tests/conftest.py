"""Hypothesis runs derandomized by default so that CI is repeatable; set
HYPOTHESIS_PROFILE=explore (and a larger SHAPEINFER_EXAMPLES) to search with fresh seeds."""

import os

from hypothesis import settings

settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
