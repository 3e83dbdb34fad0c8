"""shapeinfer: symbolic shape inference for ONNX models.

``infer_shapes(model)`` returns the model with every inferred shape written in; ``infer(model)``
returns the structured result (each tensor's dims as expressions, and the diagnostics).
"""

from .api import InferenceResult, annotate, infer, infer_shapes, load_model
from .errors import ModelLoadError, ShapeInferenceError


def optimize(model, **options):
    """The optimised model; see shapeinfer.optimizer.optimize for the options."""
    from .optimizer import optimize as _optimize

    return _optimize(model, **options)

__version__ = "0.1.0"

__all__ = [
    "InferenceResult",
    "ModelLoadError",
    "ShapeInferenceError",
    "annotate",
    "infer",
    "infer_shapes",
    "load_model",
    "optimize",
    "__version__",
]
