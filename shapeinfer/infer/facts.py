"""What inference knows about one tensor: its element type, its shape, and (small) its value.

Shape *values* -- the small int64 tensors that real exports compute Reshape/Expand/Tile shapes
with -- are kept as NumPy object arrays whose elements are dims (``int`` or ``Expr``), Python
``bool`` for boolean tensors, or :data:`UNKNOWN`. NumPy then does the indexing work (Gather is
``np.take``, Concat ``np.concatenate``, Slice is slicing) and the dim operators do the arithmetic.
Values of other element types are kept as ordinary NumPy arrays when they are small constants.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from onnx import TensorProto

from ..symbolic import Dim, Expr, to_str

# Values with more elements than this are not tracked (a shape value is a handful of entries).
MAX_VALUE_ELEMENTS = 4096

INT_TYPES = frozenset(
    {
        TensorProto.INT8,
        TensorProto.INT16,
        TensorProto.INT32,
        TensorProto.INT64,
        TensorProto.UINT8,
        TensorProto.UINT16,
        TensorProto.UINT32,
        TensorProto.UINT64,
    }
)
FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16})


class _Unknown:
    """An element of a shape value that is not known. Arithmetic with it stays unknown."""

    __slots__ = ()

    def __repr__(self):
        return "?"

    def _same(self, *_):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = _same
    __neg__ = __pos__ = __abs__ = _same


UNKNOWN = _Unknown()


class Wrapped(_Unknown):
    """An int64 element made by Add, Sub or Mul whose exact value
    ``dim`` may not fit int64. The runtime computes modulo 2**64 (two's complement), and these
    ops commute with that: the element is ``dim`` reduced modulo 2**64, so it *is* ``dim``
    wherever ``dim`` fits -- as it does when ``dim`` is the element count of a tensor of the
    same run, which no runtime makes past int64 (the engine's ``settle_wrapped``). Rules that
    read elements see an unknown (arithmetic with one gives UNKNOWN); the ring ops compute on
    ``dim``, and their result is again exact modulo 2**64."""

    __slots__ = ("dim",)

    def __init__(self, dim):
        self.dim = dim

    def __eq__(self, other):
        return type(other) is Wrapped and other.dim == self.dim

    def __hash__(self):
        return hash((Wrapped, self.dim))

    def __repr__(self):
        return f"?({to_str(self.dim)} mod 2**64)"

    def _unknown(self, *_):
        return UNKNOWN

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unknown
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = _unknown
    __neg__ = __pos__ = __abs__ = _unknown


def is_unknown(e) -> bool:
    """An element that is not known (UNKNOWN, or a Wrapped one)."""
    return isinstance(e, _Unknown)


def ring_dim(e):
    """The dim an Add/Sub/Mul operand stands for modulo 2**64: the element itself when it is a
    dim, a Wrapped one's ``dim``; None for anything else."""
    t = type(e)
    if t is int or t is Expr:
        return e
    if t is Wrapped:
        return e.dim
    return None


class Fact:
    """Everything known about one tensor. ``shape`` None: rank unknown. ``value`` None: unknown.

    ``type_proto`` holds the full type for values that are not tensors (sequences, optionals,
    maps); for tensors it is None and ``dtype`` is the TensorProto element type (0 if unknown).

    A plain class with ``__slots__`` (a walk makes one per tensor), written out because
    ``dataclass(slots=True)`` needs Python 3.10 and shapeinfer supports 3.9. Facts compare by
    identity."""

    __slots__ = ("dtype", "shape", "value", "type_proto", "kid", "unsure")

    def __init__(self, dtype: int = 0, shape: Optional[tuple] = None, value: Optional[np.ndarray] = None,
                 type_proto: object = None):
        self.dtype = dtype
        self.shape = shape
        # One representation for values, whatever rule made them: an ndarray (an object array
        # of elements for int and bool tensors), 0-d for a scalar -- never a bare element.
        self.value = value if value is None or value.__class__ is np.ndarray else as_value(value)
        self.type_proto = type_proto
        # The engine's number for (dtype, shape, value), given when a memo key first needs it
        # (engine.py): a fact is not changed once a node has read it.
        self.kid = None
        # A runtime may give this tensor other dims than these where the run fails in the spec
        # (onnxruntime's pools, Concat of an empty input, a Loop's scan outputs at 0
        # iterations), or they are a declaration no runtime checks (a subgraph's input type):
        # they tell nothing of a run (Engine._scope_tables). Set by NodeContext.unsure, and
        # carried to every tensor computed from such a one.
        self.unsure = False

    def copy(self) -> "Fact":
        """A new fact with the same type, shape, value, number and mark."""
        copy = Fact(self.dtype, self.shape, self.value, self.type_proto)
        copy.kid = self.kid
        copy.unsure = self.unsure
        return copy

    def __repr__(self):
        return f"Fact(dtype={self.dtype!r}, shape={self.shape!r}, value={self.value!r}, type_proto={self.type_proto!r})"

    def same_value(self, other: Optional["Fact"]) -> bool:
        """Whether both values are known and equal element by element (each of one kind: an
        int, an expression, an unknown element compared as itself)."""
        if other is None or self.value is None or other.value is None or self.value.shape != other.value.shape:
            return False
        return all(type(x) is type(y) and x == y
                   for x, y in zip(self.value.reshape(-1).tolist(), other.value.reshape(-1).tolist()))

    @property
    def rank(self) -> Optional[int]:
        return None if self.shape is None else len(self.shape)

    def static_shape(self) -> Optional[tuple]:
        """The shape when every dim is an int, else None."""
        if self.shape is None or not all(isinstance(d, int) for d in self.shape):
            return None
        return self.shape

    def known_elements(self) -> Optional[list]:
        """The flat list of the value's elements when every one is known, else None."""
        if self.value is None:
            return None
        flat = self.value.reshape(-1).tolist()
        if any(isinstance(e, _Unknown) for e in flat):
            return None
        return flat

    def int_elements(self) -> Optional[list]:
        """The flat list of the value's elements when every one is a plain int, else None."""
        flat = self.known_elements()
        if flat is None or not all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in flat):
            return None
        return [int(e) for e in flat]


def shape_str(shape) -> str:
    """``[batch,seq+1,4]``; ``?`` for an unknown rank."""
    if shape is None:
        return "?"
    return "[" + ",".join(to_str(d) for d in shape) + "]"


def dtype_name(dtype: int) -> str:
    """'float', 'int64', 'bfloat16', ... for a TensorProto element type ('type 99' if unknown)."""
    try:
        return TensorProto.DataType.Name(dtype).lower()
    except ValueError:
        return f"type {dtype}"


def obj_array(elements, shape=None) -> np.ndarray:
    """An object array holding dims/bools/UNKNOWN, with the given shape (default 1-D)."""
    flat = list(elements)
    arr = np.empty(len(flat), dtype=object)
    for i, e in enumerate(flat):
        arr[i] = e
    return arr.reshape(shape if shape is not None else (len(flat),))


def as_value(value) -> np.ndarray:
    """``value`` as a tracked value: an ndarray as it is (a subclass as a plain ndarray), a NumPy
    scalar as a 0-d array of its type, a bare element (an int, a bool, a dim, UNKNOWN) as a 0-d
    object array. Anything else is a bug of the rule that made it."""
    if isinstance(value, np.ndarray):
        return np.asarray(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, (int, bool, Expr, _Unknown)):
        out = np.empty((), dtype=object)
        out[()] = value
        return out
    raise TypeError(f"not a tensor value: {value!r} ({type(value).__name__})")


def elementwise(fn, *values: np.ndarray) -> np.ndarray:
    """``fn`` applied element by element to object arrays (broadcast): an object array of the
    broadcast shape, 0-d included (NumPy's ufuncs return a bare element for 0-d operands)."""
    out = np.frompyfunc(fn, len(values), 1)(*values)
    return out if out.__class__ is np.ndarray else as_value(out)


def value_from_numpy(array: np.ndarray, dtype: int) -> Optional[np.ndarray]:
    """The tracked form of a constant: object array of ints/bools for int/bool tensors."""
    if array.size > MAX_VALUE_ELEMENTS:
        return None
    if dtype in INT_TYPES:
        return obj_array((int(x) for x in array.reshape(-1)), array.shape)
    if dtype == TensorProto.BOOL:
        return obj_array((bool(x) for x in array.reshape(-1)), array.shape)
    return array


def as_dim(e) -> Optional[Dim]:
    """A value element as a dim (int or Expr), or None when it is unknown or not integral."""
    t = type(e)
    if t is int or t is Expr:
        return e
    if isinstance(e, Expr):
        return e
    if isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)):
        return int(e)
    return None
