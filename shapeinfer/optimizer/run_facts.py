"""The input bounds of every run that succeeds (infer/run_bounds.py, part of the input
contract), as the passes read them: each bounded symbol at its bound."""

from __future__ import annotations

from ..infer.run_bounds import run_lows
from ..symbolic import BroadcastError, EvaluationError, Expr, ExpressionTooLarge, substitute, sym

__all__ = ["BoundedFacts", "run_lows"]

_ERRORS = (BroadcastError, EvaluationError, ExpressionTooLarge, ZeroDivisionError, OverflowError)

class BoundedFacts:
    """An inference result read with each bounded symbol taking its bound (``run_lows``): a dim
    or value element over ``height`` reads as one over ``height >= 4``, which simplifies what the
    bound decides (``iszero((height+4)//8)`` is 0). Facts are rewritten when first read, once
    each; everything else is the result's own.

    A dim whose rewriting fails (a broadcast or a division that the bound makes impossible:
    no run reaches that tensor) stays as it was -- exact at every size, only less simple."""

    def __init__(self, result, lows: dict):
        self._result = result
        self._mapping = {s: sym(s, lo) for s, lo in lows.items()}
        self._facts: dict = {}
        self._dims: dict = {}
        self._shapes: dict = {}

    def __getattr__(self, name):  # fixed_inputs, diagnostics, minted, ...: the result's
        return getattr(self._result, name)

    def dim(self, d):
        if type(d) is int or not isinstance(d, Expr):
            return d
        got = self._dims.get(d)
        if got is None:
            try:
                got = substitute(d, self._mapping)
            except _ERRORS:
                got = d
            self._dims[d] = got
        return got

    def fact(self, name: str):
        if name in self._facts:
            return self._facts[name]
        f = self._result.fact(name)
        if f is None:
            self._facts[name] = f
            return f
        shape = f.shape
        if shape is not None:
            got = self._shapes.get(shape)
            if got is None:  # (many tensors share a shape: [batch, seq, 64])
                got = tuple(self.dim(d) for d in shape)
                got = self._shapes[shape] = shape if all(a is b for a, b in zip(got, shape)) else got
            shape = got
        if shape is not f.shape or f.value is not None and f.value.dtype == object:
            f = f.copy()
            f.shape = shape
            if f.value is not None and f.value.dtype == object:
                value = f.value.copy()
                flat = value.reshape(-1)
                for k in range(flat.size):
                    flat[k] = self.dim(flat[k])
                f.value = value
        self._facts[name] = f
        return f

    def shape(self, name: str):
        f = self.fact(name)
        return None if f is None else f.shape
