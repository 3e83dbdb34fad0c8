"""Constant shape inputs that reproduce an inferred output shape for every input size."""

from __future__ import annotations

from typing import Optional

from ...symbolic import provably_positive


def reshape_spec(in_shape: tuple, out_shape: tuple) -> tuple:
    """(spec, None) with spec a constant Reshape shape (allowzero=0) giving out_shape from an
    input of in_shape for every binding, or (None, reason).

    Entry i is the int where out[i] is one, 0 where out[i] is the input dim i, and a single -1
    elsewhere -- only when every other output dim is provably at least 1 (-1 cannot be inferred
    next to a zero)."""
    spec: list = []
    minus = None
    for i, d in enumerate(out_shape):
        if isinstance(d, int):
            if d == 0 and i < len(in_shape) and in_shape[i] == 0:
                spec.append(0)
            elif d == 0:
                return None, "a literal 0 dim needs allowzero=1"
            else:
                spec.append(d)
        elif i < len(in_shape) and in_shape[i] == d:
            spec.append(0)
        elif minus is None:
            minus = i
            spec.append(-1)
        else:
            return None, f"dims {out_shape[minus]} and {d} are neither constant nor input dims at their index"
    if minus is not None:
        others = [d for j, d in enumerate(out_shape) if j != minus]
        if not all(isinstance(d, int) and d >= 1 or provably_positive(d) for d in others):
            return None, "-1 would sit beside a dim that may be 0"
    return tuple(spec), None


def expand_spec(in_shape: tuple, out_shape: tuple) -> tuple:
    """(target, None): a constant Expand target giving out_shape from in_shape, or (None, why).

    Entry i is 1 where out[i] is the (right-aligned) input dim -- Expand keeps it -- and the int
    where out[i] is one: wherever the original ran, the input dim was 1 or that int."""
    if len(out_shape) < len(in_shape):
        return None, "the output has a smaller rank than the input"
    pad = len(out_shape) - len(in_shape)
    target = []
    for i, d in enumerate(out_shape):
        a = in_shape[i - pad] if i >= pad else 1
        if d == a:
            target.append(1)
        elif isinstance(d, int):
            target.append(d)
        else:
            return None, f"output dim {d} is neither a constant nor the input dim {a}"
    return tuple(target), None


def same_shape(a: Optional[tuple], b: Optional[tuple]) -> bool:
    if a is None or b is None:
        return False
    if type(a) is tuple and type(b) is tuple:
        return a == b  # (elementwise ==, each pair first compared by identity)
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))
