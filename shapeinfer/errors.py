"""The errors shapeinfer raises on purpose. Anything else escaping the public API is a bug."""

from __future__ import annotations


class ShapeInferenceError(ValueError):
    """The model is invalid: a node's inputs break the rule of its op.

    The message names the node (name and op type), its input shapes and the rule broken."""

    def __init__(self, message: str, *, node_name: str = "", op_type: str = "", input_shapes=()):
        self.node_name = node_name
        self.op_type = op_type
        self.input_shapes = list(input_shapes)
        self.rule = message
        where = f"node {node_name!r} ({op_type})" if op_type else "model"
        shapes = ""
        if input_shapes:
            shapes = " with input shapes " + ", ".join(input_shapes)
        super().__init__(f"{where}{shapes}: {message}")


class UnsupportedModelError(ValueError):
    """A valid model that optimize cannot rewrite without changing what it computes (a body
    initializer shadowing an outer name, which its graph library resolves to the outer tensor).
    The message names the node and says what to change; nothing is written."""


class ModelLoadError(ValueError):
    """The file or object given is not a readable ONNX model."""


class ExternalDataError(ModelLoadError):
    """The model refers to external data that is unsafe (outside the model's folder, through
    an absolute path or a symlink), missing or too short. Refused before any byte is read."""

    invalid_model = True
    code = "external-data"


# What library code raises when it meets input it cannot handle (a tensor numpy cannot convert,
# an attribute of an odd type, arithmetic on an odd value). Code that tolerates odd input
# catches exactly these: anything else -- an exception a signal handler raises, a
# KeyboardInterrupt, MemoryError -- is not about the input and must propagate.
ODD_INPUT_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, NotImplementedError)


class InputShapeError(ValueError):
    """Input shapes given by the caller (``input_shapes=``, ``--input-shape``) that are malformed,
    name no graph input, or contradict the model (inference fails with them and not without)."""


class InputShapeContradiction(InputShapeError, ShapeInferenceError):
    """Input shapes under which inference fails while the model alone is valid: an
    InputShapeError (the CLI says the shapes contradict the model, exit 2) that is also the
    ShapeInferenceError met (node, op, rule), for callers that catch that."""

    def __init__(self, message: str, error: ShapeInferenceError):
        ShapeInferenceError.__init__(self, error.rule, node_name=error.node_name, op_type=error.op_type,
                                     input_shapes=error.input_shapes)
        self.args = (message,)


class BindError(InputShapeError):
    """Sizes given for symbols (``cost(bind=)``, ``--bind``) that name no input symbol or are not
    sizes."""
