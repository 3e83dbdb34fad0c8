"""Graph passes: one family of rewrites per module, one contract (base.py), the graph edits they
share (graph_ops.py). Importing registers them."""

from . import cleanup_passes, constant_folding, control_passes, elementwise_passes, layout_passes, reduce_passes, reshape_passes  # noqa: F401
from .base import NO_MATCH, REGISTRY, Decline, Match, Pass, PassContext, PassResult, RewritePass

__all__ = ["NO_MATCH", "REGISTRY", "Decline", "Match", "Pass", "PassContext", "PassResult", "RewritePass"]
