"""Graph passes: one rewrite per module, one contract (see base.py). Importing registers them."""

from . import cleanup_passes, constant_folding, elementwise_passes, layout_passes, reduce_passes, reshape_passes  # noqa: F401
from .base import REGISTRY, Pass, PassContext, PassResult

__all__ = ["REGISTRY", "Pass", "PassContext", "PassResult"]
