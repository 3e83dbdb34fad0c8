"""shapeinfer: symbolic shape inference for ONNX models.

``infer_shapes(model)`` returns the model with every inferred shape written in; ``infer(model)``
returns the structured result (each tensor's dims as expressions, and the diagnostics).
"""

from typing import Callable, Optional

from onnx import ModelProto

from .api import InferenceResult, annotate, infer, infer_shapes, load_model
from .fold.folder import DEFAULT_BUDGET_BYTES
from .errors import (BindError, ExternalDataError, InputShapeContradiction, InputShapeError, ModelLoadError,
                     ShapeInferenceError, UnsupportedModelError)


def optimize(model, *, passes=None, skip=(), input_shapes: Optional[dict] = None, write_shapes: bool = True,
             dim_names: str = "expressions", fold_budget: int = DEFAULT_BUDGET_BYTES, assume_nonempty: bool = False, ignore_signed_zero: bool = False,
             fold_float_math: bool = False, fuse_gemm: bool = False, max_rounds: int = 8,
             progress: Optional[Callable[[str], None]] = None, report=None, dims: Optional[dict] = None) -> ModelProto:
    """The optimised model: a new ModelProto computing, bit for bit, what ``model`` (a ModelProto
    or a path, not changed) computes, for every input size.

    - ``passes``: the passes to run (names, or one comma-separated string; default: every
      default pass), ``skip``: passes not to run;
    - ``input_shapes``: {input name: [dims]} fixes inputs' shapes as :func:`infer` takes them
      (``{"x": [1, 16]}``, symbols allowed); what becomes static is folded and the inputs are
      written with these shapes (the model then takes only those);
    - ``write_shapes``: write every inferred shape into the result (value_info, graph outputs);
    - ``dim_names``: "expressions" (``batch*seq``) or "identifiers" (``batch_x_seq``, the
      mapping in metadata_props under ``shapeinfer.dim_names``);
    - ``fold_budget``: bytes a folded constant may hold beyond its inputs (16 KiB);
    - ``assume_nonempty``, ``ignore_signed_zero``, ``fold_float_math``, ``fuse_gemm``: opt-ins
      that are not exact for every input, reported in ``report.assumptions`` (see the README);
    - ``max_rounds``: bound on the rounds of passes; ``progress``: called with a status line;
    - ``report``: an :class:`OptimizeReport` to fill (counts before/after, changes, declines);
    - ``dims``: the sizes the model is run at, {symbol: "1..4096" | "128" | "1,2,4" | int | list}
      (``--dims``): an opt-in -- rewrites may assume each symbol at least its least size, the
      written model computes what the original does there; reported.

    Raises :class:`ShapeInferenceError` (an invalid model), :class:`InputShapeError` (input
    shapes malformed, naming no input, or contradicting the model), ``ValueError`` (an unknown
    pass name), :class:`ModelLoadError` (an unreadable path), :class:`UnsupportedModelError` (a
    valid model it cannot rewrite safely, saying what to change), ``TypeError`` (an argument of
    the wrong type)."""
    from .optimizer import optimize as _optimize

    return _optimize(model, passes=passes, skip=skip, input_shapes=input_shapes, write_shapes=write_shapes,
                     dim_names=dim_names, fold_budget=fold_budget, assume_nonempty=assume_nonempty, ignore_signed_zero=ignore_signed_zero,
                     fold_float_math=fold_float_math, fuse_gemm=fuse_gemm, max_rounds=max_rounds, progress=progress,
                     report=report, dims=dims)


def check(model, *, strict: bool = False, assume_nonempty: bool = False, include_empty: bool = False,
          name: Optional[str] = None, dims: Optional[dict] = None):
    """A :class:`CheckReport` of ``model`` (a path or a ModelProto): onnx.checker, structure and
    full shape inference, each finding with its node, op and what is wrong.

    ``strict`` counts warnings as errors; ``assume_nonempty`` as for :func:`infer`;
    ``include_empty`` also reports the size warnings only an empty tensor breaks (left out by
    default, and counted: ``report.empty_only``); ``name`` labels the report; ``dims`` gives the
    sizes the model is run at, {symbol: "1..4096" | "128" | "1,2,4" | int | list}: a failure at
    those sizes is an error, one outside them is not reported. Never raises for a bad model (the
    report says what is wrong); raises ``TypeError`` for something that is neither a path nor a
    ModelProto, :class:`InputShapeError` for ``dims`` naming a dim the model's inputs do not."""
    from .checker import check as _check

    return _check(model, strict=strict, assume_nonempty=assume_nonempty, include_empty=include_empty, name=name,
                  dims=dims)


def cost(model, *, bind: Optional[dict] = None, input_shapes: Optional[dict] = None, assume_nonempty: bool = False,
         base_dir: Optional[str] = None):
    """A :class:`CostReport` of ``model`` (a ModelProto or a path): MACs, FLOPs, parameters and
    activation memory, per node and in total, as formulas in the input dims -- or, with
    ``bind`` ({symbol: size}), as integers. Raises what :func:`infer` raises, and
    :class:`BindError` for a bound name that is no input symbol or a size that is not >= 0."""
    from .costs import cost as _cost

    return _cost(model, bind=bind, input_shapes=input_shapes, assume_nonempty=assume_nonempty, base_dir=base_dir)


def __getattr__(name):  # the report types, imported when first asked for
    if name == "OptimizeReport":
        from .optimizer.manager import OptimizeReport

        return OptimizeReport
    if name == "UnknownPassError":
        from .optimizer.manager import UnknownPassError

        return UnknownPassError
    if name == "CostReport":
        from .costs import CostReport

        return CostReport
    if name == "CheckReport":
        from .checker.findings import CheckReport

        return CheckReport
    raise AttributeError(f"module 'shapeinfer' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "BindError",
    "CostReport",
    "CheckReport",
    "OptimizeReport",
    "UnsupportedModelError",
    "ExternalDataError",
    "InferenceResult",
    "InputShapeContradiction",
    "InputShapeError",
    "ModelLoadError",
    "ShapeInferenceError",
    "UnknownPassError",
    "annotate",
    "check",
    "cost",
    "infer",
    "infer_shapes",
    "load_model",
    "optimize",
    "__version__",
]
