"""``shapeinfer optimize``: the pass manager (manager), the passes (passes/) and the check that
an optimised model computes what the original did (verify). Folding kernels live in
shapeinfer.fold, shared with inference."""

from .manager import DEFAULT_PASSES, OPT_IN_PASSES, OptimizeReport, model_stats, optimize

__all__ = ["DEFAULT_PASSES", "OPT_IN_PASSES", "OptimizeReport", "model_stats", "optimize"]
