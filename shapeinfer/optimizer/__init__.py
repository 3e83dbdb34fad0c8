"""``shapeinfer optimize``: the pass manager (manager), the passes (passes/) and the check that
an optimised model computes what the original did (verify). Folding kernels live in
shapeinfer.fold, shared with inference."""

from .manager import (ALL_PASSES, DEFAULT_PASSES, OPT_IN_PASSES, OptimizeReport, PassManager, UnknownPassError, model_stats,
                      optimize, select_passes)

__all__ = ["ALL_PASSES", "DEFAULT_PASSES", "OPT_IN_PASSES", "OptimizeReport", "PassManager", "UnknownPassError",
           "model_stats", "optimize", "select_passes"]
