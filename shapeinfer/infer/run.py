"""Running inference on a model (a ModelProto, a path or bytes): the structured result
(:func:`infer`) or the model with every shape written in (:func:`infer_shapes`)."""

from __future__ import annotations

import os
from typing import Optional

from onnx import ModelProto

from ..errors import InputShapeContradiction, ShapeInferenceError, UsageError
from ..modelio.load import as_model
from .annotate import annotate_loadable
from .dim_names import identifier_dim_names
from .engine import Engine
from .overrides import check_input_shapes
from .result import InferenceResult


def infer(model, *, input_shapes: Optional[dict] = None, assume_nonempty: bool = False,
          base_dir: Optional[str] = None, node_io=None) -> InferenceResult:
    """Infer every tensor's shape; the model is not modified.

    ``input_shapes`` maps a graph input name to a list of ints and/or symbol names (or
    expressions) that replaces the model's declared shape for that input.
    ``assume_nonempty`` (opt-in) takes no tensor to be empty: every dim of the graph inputs and
    of every tensor computed is at least 1. Without it a symbol may be 0, and shapes that differ
    only where some tensor is empty are reported unknown; with it they are exact for every run
    without an empty tensor. The result lists it under ``assumptions``.
    ``base_dir`` is the folder of a model's external data (default: the model file's folder when
    a path is given). Weights are never loaded; a small external int tensor is read from there.
    ``node_io`` (the ``NodeIO`` ``validate_structure`` returned for this model, unchanged since):
    the nodes' input and output names, not read again.
    Raises :class:`shapeinfer.ShapeInferenceError` for an invalid model,
    :class:`shapeinfer.InputShapeError` for input shapes that are malformed, name no input or
    contradict the model, TypeError for ``input_shapes`` that is not a mapping of lists."""
    if base_dir is None and isinstance(model, (str, os.PathLike)):
        base_dir = os.path.dirname(os.path.abspath(os.fspath(model)))
    m = as_model(model)
    input_shapes = check_input_shapes(m, input_shapes)
    engine = Engine(m, input_shapes=input_shapes, assume_nonempty=assume_nonempty, base_dir=base_dir)
    engine.node_io = node_io
    try:
        engine.run()
    except ShapeInferenceError as e:
        if input_shapes:
            contradiction(m, input_shapes, e, assume_nonempty, base_dir)
        raise
    return InferenceResult(m, engine)


def contradiction(m, input_shapes: dict, error: ShapeInferenceError, assume_nonempty: bool, base_dir) -> None:
    """Raise InputShapeError when inference failed with the input shapes given but succeeds
    without them: the shapes contradict the model, which is otherwise valid."""
    try:
        Engine(m, assume_nonempty=assume_nonempty, base_dir=base_dir).run()
    except ShapeInferenceError:
        return  # the model is invalid as it is
    given = "; ".join(f"{k}=[{','.join(map(str, v))}]" for k, v in input_shapes.items())
    raise InputShapeContradiction(f"the input shapes given ({given}) contradict the model: {error}", error) from error


def infer_shapes(model, *, input_shapes: Optional[dict] = None, assume_nonempty: bool = False,
                 base_dir: Optional[str] = None, dim_names: str = "expressions") -> ModelProto:
    """Like ``onnx.shape_inference.infer_shapes``: a new model with every inferred shape written in.

    Symbolic dims are written as ``dim_param`` in the printed syntax (``batch*seq/4``), or with
    ``dim_names="identifiers"`` as identifiers (``batch_x_seq``, the mapping in metadata_props:
    see infer/dim_names.py). The model given is not modified. Raises
    :class:`shapeinfer.ShapeInferenceError` for an invalid model, ValueError for another
    ``dim_names``."""
    check_dim_names(dim_names)
    if base_dir is None and isinstance(model, (str, os.PathLike)):
        base_dir = os.path.dirname(os.path.abspath(os.fspath(model)))
    m = as_model(model)
    result = infer(m, input_shapes=input_shapes, assume_nonempty=assume_nonempty, base_dir=base_dir)
    out = annotate_loadable(m, result, input_shapes)
    if dim_names == "identifiers":
        identifier_dim_names(out)
    return out


DIM_NAME_STYLES = ("expressions", "identifiers")


def check_dim_names(dim_names) -> None:
    if dim_names not in DIM_NAME_STYLES:
        raise UsageError(f"dim_names must be one of {', '.join(DIM_NAME_STYLES)}; got {dim_names!r}")
