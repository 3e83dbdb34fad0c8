"""The dim algebra: ints and canonical symbolic expressions. Imports nothing from onnx."""

from .expr import (
    Atom,
    BroadcastError,
    Dim,
    EvaluationError,
    Expr,
    ExpressionTooLarge,
    add,
    atoms,
    bcast,
    bounds,
    dim_key,
    dmax,
    dmin,
    evaluate,
    floordiv,
    free_symbols,
    is_static,
    mod,
    mul,
    neg,
    provably_equal,
    provably_le,
    provably_nonneg,
    provably_not_one,
    provably_one,
    provably_positive,
    replace_atom,
    sub,
    substitute,
    sym,
    truediv,
)
from .printing import NAME_RE, ParseError, parse, to_str

__all__ = [
    "Atom", "BroadcastError", "Dim", "EvaluationError", "Expr", "ExpressionTooLarge", "NAME_RE", "ParseError",
    "add", "atoms", "bcast", "bounds", "dim_key", "dmax", "dmin", "evaluate", "floordiv", "free_symbols",
    "is_static", "mod", "mul", "neg", "parse", "provably_equal", "provably_le", "provably_nonneg",
    "provably_not_one", "provably_one", "provably_positive", "replace_atom", "sub", "substitute", "sym", "to_str", "truediv",
]
