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


def parse_input_shape_args(items, input_names) -> dict:
    """``--input-shape`` items -> {input name: [int or dim text]} for :func:`check_input_shapes`.

    An item is ``NAME:d0,d1,...`` or ``NAME=d0,d1,...`` (``input_ids:1,16`` as onnxsim writes
    it, ``x=1,seq,768``); NAME is resolved against the model's input names, which may hold ``:``
    or ``=`` themselves (tf2onnx's ``input:0``): it is the longest input name the item starts
    with that is followed by ``:`` or ``=``. Raises InputShapeError for an item that names no
    input (the message lists the inputs), an input given twice, an empty or negative dim; the
    dims' text is checked by check_input_shapes."""
    names = sorted({n for n in input_names if isinstance(n, str)}, key=len, reverse=True)
    out: dict = {}
    for item in items:
        name = next((n for n in names if item.startswith(n) and item[len(n):len(n) + 1] in (":", "=")), None)
        if name is None:
            cut = min((k for k in (item.find(":"), item.find("=")) if k >= 0), default=len(item))
            listed = ", ".join(repr(n) for n in sorted(names)) or "none"
            raise InputShapeError(f"the model has no input named {item[:cut]!r} (expected NAME:d0,d1,... or "
                                  f"NAME=d0,d1,..., NAME an input of the model: {listed})")
        if name in out:
            raise InputShapeError(f"input {name!r} is given twice")
        dims = item[len(name) + 1:]
        parsed: list = []
        for d in (top_level_split(dims) if dims.strip() else []):
            d = d.strip()
            if not d:
                raise InputShapeError(f"{item!r}: empty dim")
            if d.isascii() and d.lstrip("-").isdigit():
                if int(d) < 0:
                    raise InputShapeError(f"{item!r}: dims cannot be negative")
                parsed.append(int(d))
            else:
                parsed.append(d)
        out[name] = parsed
    return out


def top_level_split(text: str) -> list:
    """``1,min(a,b),seq`` -> ["1", "min(a,b)", "seq"]: commas inside parentheses belong to the dim."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


MAX_SET = 64  # sizes in one --dims set (a range says more)
MAX_SIZE = 2 ** 40  # the largest size a range may name


class DimSizes:
    """The sizes a user runs a symbol at (``--dims``): a range ``lo..hi``, one size, or a set."""

    __slots__ = ("lo", "hi", "values")

    def __init__(self, lo: int, hi: int, values=None):
        self.lo, self.hi = lo, hi
        self.values = tuple(sorted(set(values))) if values is not None else None

    def admits(self, v: int) -> bool:
        return v in self.values if self.values is not None else self.lo <= v <= self.hi

    def samples(self) -> tuple:
        """Sizes of it a search tries first: all of a set; a range's ends, the sizes beside them and
        a few between (powers of two and their neighbours)."""
        if self.values is not None:
            return self.values
        lo, hi = self.lo, self.hi
        got = {lo, hi, lo + 1, hi - 1, (lo + hi) // 2}
        p = 1
        while p <= hi:
            got |= {p - 1, p, p + 1}
            p *= 2
        return tuple(sorted(v for v in got if lo <= v <= hi))

    def text(self) -> str:
        if self.values is not None:
            return ",".join(str(v) for v in self.values)
        return str(self.lo) if self.lo == self.hi else f"{self.lo}..{self.hi}"

    def __repr__(self):
        return f"DimSizes({self.text()})"


def parse_dims_args(items, symbols) -> dict:
    """``--dims`` items -> {symbol: DimSizes}. An item is ``NAME=LO..HI`` (a range), ``NAME=N``
    (one size) or ``NAME=A,B,C`` (a set); NAME is a symbol the model's inputs use, matched
    literally (an opaque name such as ``a*b`` or ``x=1`` is a name): the longest symbol the item
    starts with that is followed by ``=``. Raises InputShapeError for a name the model does not
    use (the message lists its symbols), a symbol given twice, a size that is not a whole number
    >= 0, an empty range."""
    names = sorted({s for s in symbols if isinstance(s, str)}, key=len, reverse=True)
    out: dict = {}
    for item in items:
        name = next((n for n in names if item.startswith(n) and item[len(n):len(n) + 1] == "="), None)
        if name is None:
            listed = ", ".join(repr(n) for n in sorted(names)) or "none"
            raise InputShapeError(f"{item!r}: expected NAME=LO..HI, NAME=SIZE or NAME=A,B,C with NAME a dim the "
                                  f"model's inputs name (they name: {listed})")
        if name in out:
            raise InputShapeError(f"{name!r} is given twice (give its sizes at once: {name}=A,B or {name}=LO..HI)")
        text = item[len(name) + 1:].strip()
        out[name] = _dim_sizes(item, text)
    return out


def _dim_sizes(item: str, text: str) -> DimSizes:
    def size(t: str) -> int:
        t = t.strip()
        if not (t.isascii() and t.isdigit()) or int(t) > MAX_SIZE:
            raise InputShapeError(f"{item!r}: {t!r} is not a size (a whole number from 0 to {MAX_SIZE})")
        return int(t)

    if ".." in text:
        lo, _, hi = text.partition("..")
        a, b = size(lo), size(hi)
        if a > b:
            raise InputShapeError(f"{item!r}: the range {a}..{b} is empty")
        return DimSizes(a, b)
    values = [size(t) for t in text.split(",")] if text else []
    if not values:
        raise InputShapeError(f"{item!r}: no size given")
    if len(values) > MAX_SET:
        raise InputShapeError(f"{item!r}: more than {MAX_SET} sizes (give a range, LO..HI)")
    return DimSizes(min(values), max(values), values if len(set(values)) > 1 else None)


def resolve_dims(spec, m, lenient: bool = False) -> dict:
    """``dims`` as check takes it -- "NAME=SIZES" items (--dims), or {symbol: "1..4096" | "128" |
    "1,2,4" | int | list of ints} -- as {symbol: DimSizes}, against the symbols the model's inputs
    name; already resolved, as it is. ``lenient``: items naming a symbol the model does not use
    are left out (not an error)."""
    if isinstance(spec, dict) and all(isinstance(v, DimSizes) for v in spec.values()):
        return spec
    if isinstance(spec, dict):
        items = []
        for k, v in spec.items():
            if isinstance(v, (list, tuple, range)):
                v = ",".join(str(x) for x in v) if not isinstance(v, range) else f"{v.start}..{v.stop - 1}"
            items.append(f"{k}={v}")
    elif isinstance(spec, (list, tuple)):
        items = list(spec)
    else:
        raise TypeError(f"dims must map symbols to sizes, e.g. {{'seq': '1..4096'}}; got {type(spec).__name__}")
    init = {t.name for t in m.graph.initializer}
    symbols = {d.dim_param for vi in m.graph.input if vi.name not in init and vi.type.HasField("tensor_type")
               for d in vi.type.tensor_type.shape.dim if d.dim_param}
    if lenient:  # (a run over many models: each takes the sizes of the dims it names)
        items = [item for item in items if any(item.startswith(f"{s}=") for s in symbols)]
    return parse_dims_args(items, symbols)


def resolve_input_shapes(spec, m, lenient: bool = False) -> dict:
    """``input_shapes`` as check takes it -- "NAME:d0,d1" / "NAME=d0,d1" items (--input-shape,
    NAME resolved against the model's input names, the longest that fits) or {name: [dims]} --
    checked against the model (check_input_shapes). ``lenient``: items naming no input of this
    model are left out."""
    names = [vi.name for vi in m.graph.input]
    if isinstance(spec, (list, tuple)):
        items = [i for i in spec if not lenient or any(i.startswith(n) and i[len(n):len(n) + 1] in (":", "=")
                                                      for n in names)]
        spec = parse_input_shape_args(items, names)
    elif lenient and isinstance(spec, dict):
        spec = {k: v for k, v in spec.items() if k in names}
    return check_input_shapes(m, spec)
