"""The input shapes a caller gives (``input_shapes=``, ``--input-shape``): checked once, for
infer and optimize alike, before any work."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InputShapeError
from ..symbolic import ParseError, parse, provably_nonneg

EXAMPLE = "{'x': [1, 'seq', 768]}"


def check_input_shapes(model, input_shapes) -> dict:
    """``input_shapes`` as {input name: [int or dim text]}, checked against the model: a
    mapping (else TypeError) from the name of a graph input to a list of
    dims, each an int >= 0 or the text of a dim that cannot be negative (``seq``, ``2*seq+1``),
    as many as the input's declared rank -- not an initializer listed as an input too (its
    default fixes its shape). Raises InputShapeError otherwise."""
    if input_shapes is None:
        return {}
    if not isinstance(input_shapes, Mapping):
        raise TypeError(f"input_shapes must map input names to lists of dims, e.g. {EXAMPLE}; "
                        f"got {type(input_shapes).__name__}")
    graph = model.graph
    inputs = {vi.name: vi for vi in graph.input}
    inits = {t.name: t for t in graph.initializer}
    out = {}
    for name, dims in input_shapes.items():
        if not isinstance(name, str):
            raise TypeError(f"input_shapes keys are input names (str); got {name!r}")
        if isinstance(dims, (str, bytes)) or not isinstance(dims, (list, tuple)):
            raise TypeError(f"input_shapes[{name!r}] must be a list of dims (ints >= 0 or dim names such as "
                            f"'seq'), e.g. {EXAMPLE}; got {type(dims).__name__} {dims!r}")
        if name not in inputs:
            raise InputShapeError(f"the model has no input named {name!r} "
                                  f"(inputs: {', '.join(sorted(inputs)) or 'none'})")
        if name in inits:
            raise InputShapeError(f"input {name!r} is also an initializer, its default: its shape is that one's "
                                  f"[{','.join(str(int(d)) for d in inits[name].dims)}] (onnxruntime refuses another)")
        checked = []
        for d in dims:
            if isinstance(d, bool) or not isinstance(d, (int, str)):
                raise TypeError(f"input_shapes[{name!r}]: a dim is an int >= 0 or a dim name; got {d!r}")
            if isinstance(d, int):
                if d < 0:
                    raise InputShapeError(f"input {name!r}: dim {d} is negative (a dim is a size, at least 0)")
                checked.append(int(d))
                continue
            try:
                expr = parse(d)
            except ParseError as e:
                raise InputShapeError(f"input {name!r}: dim {d!r}: {e}") from None
            if not provably_nonneg(expr):
                raise InputShapeError(f"input {name!r}: the dim {d!r} can be negative (a dim is a size, at least 0)")
            checked.append(expr if isinstance(expr, int) else d.strip())
        tt = inputs[name].type.tensor_type if inputs[name].type.HasField("tensor_type") else None
        if tt is not None and tt.HasField("shape") and len(tt.shape.dim) != len(checked):
            raise InputShapeError(f"input {name!r} has rank {len(tt.shape.dim)} in the model; the shape given "
                                  f"has {len(checked)} dims")
        out[name] = checked
    return out
