"""shapeinfer: symbolic shape inference for ONNX models.

``infer_shapes(model)`` returns the model with every inferred shape written in; ``infer(model)``
returns the structured result (each tensor's dims as expressions, and the diagnostics).
"""

from .api import InferenceResult, annotate, infer, infer_shapes, load_model
from .errors import ExternalDataError, ModelLoadError, ShapeInferenceError


def optimize(model, **options):
    """The optimised model; see shapeinfer.optimizer.optimize for the options."""
    from .optimizer import optimize as _optimize

    return _optimize(model, **options)


def check(model, **options):
    """A CheckReport of the model's findings; see shapeinfer.checker.check for the options."""
    from .checker import check as _check

    return _check(model, **options)


__version__ = "0.1.0"

__all__ = [
    "ExternalDataError",
    "InferenceResult",
    "ModelLoadError",
    "ShapeInferenceError",
    "annotate",
    "check",
    "infer",
    "infer_shapes",
    "load_model",
    "optimize",
    "__version__",
]
