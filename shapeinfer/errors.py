"""The errors shapeinfer raises on purpose. Anything else escaping the public API is a bug."""

from __future__ import annotations

import os


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


class UsageError(ValueError):
    """An argument the caller gave that is not one shapeinfer takes (an unknown pass name, an
    unknown dim-name style): the CLI says so, exit 2."""


class UnsupportedModelError(ValueError):
    """A valid model that optimize cannot rewrite without changing what it computes on some
    runtime (a body initializer shadowing an outer name: runtimes disagree on which tensor the
    body reads, graph.structure.SHADOWING). The message names the node and says what to change;
    nothing is written."""


class ModelLoadError(ValueError):
    """The file or object given is not a readable ONNX model."""


class ExternalDataError(ModelLoadError):
    """The model refers to external data that is unsafe (outside the model's folder, through
    an absolute path or a symlink), missing or too short. Refused before any byte is read."""

    invalid_model = True
    code = "external-data"


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


# -- failures made explicit -------------------------------------------------------------------

RAISE_ENV = "SHAPEINFER_RAISE"


def raise_mode() -> bool:
    """Whether the two boundary handlers -- the CLI's exit 3 and check's per-model
    ``internal-error`` finding -- re-raise instead of reporting (``SHAPEINFER_RAISE=1``): a bug
    anywhere then fails the test that met it. The default test run sets it (tests/conftest.py)."""
    return os.environ.get(RAISE_ENV, "") not in ("", "0")


class CannotDecide(Exception):
    """A rule or a kernel that does not decide for these inputs, on purpose, for one of a small
    closed set of reasons (REASONS): the caller goes on without (onnx's inference for a rule, the
    node kept for a kernel) and can say why. Anything else a rule raises is a bug."""

    REASONS = {
        "external-data": "its data is stored as external data (not loaded)",
        "element-type": "an element type NumPy cannot hold",
        "attribute-form": "an attribute in a form this rule does not read",
        "too-large": "past a size bound",
        "not-a-tensor": "a value that is not a tensor (a sequence, a map, an optional)",
        "sparse": "a sparse tensor, which is not read as a dense one",
        "odd-flag": "a 0/1 flag attribute given another value, which runtimes read differently",
        "off-spec-input": "an input in a form the spec does not allow, which some runtimes accept",
    }

    def __init__(self, reason: str, detail: str = ""):
        if reason not in self.REASONS:
            raise ValueError(f"no such reason: {reason!r}")
        self.reason = reason
        self.detail = detail
        super().__init__(f"{self.REASONS[reason]}{': ' + detail if detail else ''}")

