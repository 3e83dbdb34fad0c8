"""The public API, a facade: :func:`infer` (structured result), :func:`infer_shapes` (annotated
model), :func:`load_model`. The work is in infer/ (the engine, the result, annotation) and
modelio/ (reading models)."""

from __future__ import annotations

from .infer.annotate import annotate
from .infer.facts import dtype_name
from .infer.result import InferenceResult
from .infer.run import infer, infer_shapes
from .modelio.load import load_model

__all__ = ["InferenceResult", "annotate", "dtype_name", "infer", "infer_shapes", "load_model"]
