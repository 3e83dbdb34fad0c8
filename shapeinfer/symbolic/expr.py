"""Symbolic dims: integers and canonical expressions over named symbols.

A dim is a plain ``int`` or an :class:`Expr`. An ``Expr`` is a polynomial with exact (integer or
rational) coefficients whose variables are *atoms*: a named symbol, or one of the operations a
polynomial cannot express -- ``floordiv(a, b)``, ``mod(a, b)``, ``min(a, b)``, ``max(a, b)``,
``bcast(a, b)`` (the ONNX broadcast of two dims), ``div(a, b)`` (an exact division that is not a
polynomial) and ``iszero(m)`` (1 where m is 0, else 0: a zero case said exactly). The constructors put every result in canonical form, so two dims that the algebra
can show equal compare equal with ``==``; a result that is a constant is always returned as ``int``.

Each atom kind is one class, in the last section of this module (:class:`Sym`, :class:`Div`,
:class:`FloorDiv`, :class:`Mod`, :class:`Min`, :class:`Max`, :class:`Bcast`, :class:`IsZero`), holding side by side
everything about it: its canonicalising constructor (the function right after it, which
substitution rebuilds with), its bounds, its value under a binding, what it tells about signs,
and its syntax (which printing and parsing read). The polynomial code above never names a kind,
so a new kind is one new class. Other modules test a kind with ``isinstance`` and read dims
through the public functions here, never through the term representation.

Semantics (what :func:`evaluate` computes under a binding of the symbols):

- ``a / b`` is exact rational division. Reshape's ``-1`` divides element counts, which a valid
  model makes integral, so ``B*S/4`` evaluates to an integer in every valid run.
- ``a // b`` and ``a % b`` use floor semantics, like Python (and ONNX ``Mod`` with ``fmod=0``).
- ``bcast(a, b)`` is ``a`` if ``a == b`` or ``b == 1``, ``b`` if ``a == 1``; otherwise the model is
  invalid at run time and evaluation raises :class:`EvaluationError`.

Every symbol is assumed to be a non-negative integer (they stand for tensor dims). Each expression
knows integer bounds derived from that; the ``provably_*`` predicates answer True only when the
bounds prove it, so "False" means "not proven", never "proven false".

Every expression is bounded (:data:`LIMITS`: terms, size, degree, nesting depth, coefficient
bits). A constructor whose result would pass a limit raises :class:`ExpressionTooLarge` before
doing the work; callers turn that into "unknown" (a fresh symbol, an unknown value, "not
proven"), so nothing a model contains can make the algebra's work grow without bound.
"""

from __future__ import annotations

from fractions import Fraction
from math import floor, gcd, inf, lcm
from typing import Iterator, Mapping, Optional, Union

__all__ = [
    "Atom",
    "Sym",
    "Div",
    "FloorDiv",
    "Mod",
    "Min",
    "Max",
    "Bcast",
    "IsZero",
    "KINDS",
    "Dim",
    "Expr",
    "EvaluationError",
    "BroadcastError",
    "ExpressionTooLarge",
    "LIMITS",
    "sym",
    "add",
    "sub",
    "mul",
    "neg",
    "truediv",
    "floordiv",
    "mod",
    "dmin",
    "dmax",
    "bcast",
    "iszero",
    "plain",
    "zero_cases",
    "evaluate",
    "bounds",
    "atoms",
    "free_symbols",
    "substitute",
    "replace_atom",
    "at_zero",
    "atom_dim",
    "as_single_atom",
    "term_atoms",
    "zero_factors",
    "constant_value",
    "common_denominator",
    "is_static",
    "dim_key",
    "DIM_MAX",
    "fits",
    "provably_equal",
    "provably_nonneg",
    "provably_positive",
    "provably_one",
    "provably_not_one",
    "provably_le",
]

class EvaluationError(ArithmeticError):
    """An expression has no value under a binding (a missing symbol, a failed broadcast, x/0)."""


class BroadcastError(ValueError):
    """Two dims that can never broadcast together (for example 3 and 4)."""


class ExpressionTooLarge(ArithmeticError):
    """A result would pass the expression budget (:data:`LIMITS`)."""


# Real exports stay far inside these (the largest dim of the fixture corpus: 4 terms, size ~530,
# degree 3, nesting 4); an expression that reaches them is growing without bound.
MAX_TERMS = 64
MAX_SIZE = 4096  # terms plus atoms, counted through nested atoms
MAX_DEGREE = 32
MAX_DEPTH = 24  # atoms nested in atoms (also keeps printing and substitution recursion shallow)
MAX_COEF_BITS = 256
LIMITS = {"terms": MAX_TERMS, "size": MAX_SIZE, "degree": MAX_DEGREE, "depth": MAX_DEPTH,
          "coefficient bits": MAX_COEF_BITS}


def _too_large(what: str, n) -> ExpressionTooLarge:
    return ExpressionTooLarge(f"a dim expression would have {what} {n}, past the budget of {LIMITS[what]}")


Number = Union[int, Fraction]

_MEMO_LIMIT = 1 << 16


def _memo(fn):
    """Cache a pure constructor on its (hashable, canonical) arguments.

    Real graphs repeat the same dim arithmetic thousands of times (every Reshape multiplies
    the same input dims); canonical forms make the arguments good keys. Plain ints skip it."""
    cache: dict = {}
    miss = object()

    def cached(*args):
        for a in args:
            if type(a) is not int:
                break
        else:
            return fn(*args)
        out = cache.get(args, miss)
        if out is miss:
            out = fn(*args)
            if len(cache) >= _MEMO_LIMIT:
                cache.clear()
            cache[args] = out
        return out

    cached.__name__ = fn.__name__
    cached.__doc__ = fn.__doc__
    cached.__wrapped__ = fn
    return cached


class Atom:
    """A variable of a polynomial: a symbol, or an operation over dims (kept in canonical form).

    Never made directly: each kind is a subclass (the last section of this module) that sets
    ``tag`` and its syntax and implements :meth:`interval`, :meth:`value` and :meth:`build` (a
    symbol has no operands to rebuild: substitution looks it up). ``args`` are the operands,
    dims in canonical order (a symbol has none); ``key`` orders atoms canonically."""

    __slots__ = ("args", "key", "_hash", "_bounds", "size", "depth")

    # The kind's name in the canonical order. It is part of every key, so it decides the order
    # of printed terms: changing it changes printed forms.
    tag = ""
    # Its syntax (printing writes it, parsing reads it): ``call(a, b, ...)`` or ``a <infix> b``.
    call: Optional[str] = None
    infix: Optional[str] = None
    # How many operands a call takes (None: two or more); an infix kind takes two.
    arity: Optional[int] = None
    # Whether the kind rewrites the monomials it stands in (:meth:`_in_monomial`).
    reduces_monomials = False

    def __init__(self, args: tuple):
        size, depth = 1, 0
        for a in args:
            if type(a) is not int:
                size += a.size
                depth = max(depth, a.depth)
            else:
                size += 1
        if size > MAX_SIZE:
            raise _too_large("size", size)
        if depth + 1 > MAX_DEPTH:
            raise _too_large("depth", depth + 1)
        self.args = args
        self.size, self.depth = size, depth + 1
        self.key = (1, self.tag, tuple(dim_key(a) for a in args))
        self._hash = hash(self.key)
        self._bounds = None

    def __eq__(self, other):
        return isinstance(other, Atom) and self.key == other.key

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"Atom({self.tag}, {self.args!r})"

    @staticmethod
    def build(args: tuple) -> Dim:
        """The canonical dim of this kind over the operands ``args``: what substitution
        rebuilds the atom with, and what the parser makes of its syntax."""
        raise NotImplementedError

    def interval(self, top) -> tuple:
        """(lo, hi) bounds on the atom's value, every symbol taken to be at most ``top`` (inf:
        unbounded above); :func:`bounds` caches the unbounded ones."""
        raise NotImplementedError

    def value(self, binding: Mapping[str, int]) -> Number:
        """The atom's value under a binding of the symbols (EvaluationError where it has none)."""
        raise NotImplementedError

    def _substituted(self, mapping: Mapping) -> Dim:
        """The atom with the mapping (see :func:`substitute`) applied to its operands."""
        return self.build(tuple(substitute(x, mapping) for x in self.args))

    def _nonneg_in(self, d: Expr, depth: int) -> Optional[bool]:
        """Whether d (a dim this atom occurs in) is >= 0 for every binding, by reasoning about
        this atom -- or None when the atom gives no such reasoning (the others are then asked)."""
        return None

    def _in_monomial(self, exps: dict) -> Optional[int]:
        """Only for a kind with ``reduces_monomials``: the exponent this atom keeps in a product
        of the atoms ``exps`` ({atom: exponent}, itself included), or None when that product is
        0 for every binding. Multiplication asks it, so products stay canonical."""
        return exps[self]


class Expr:
    """A canonical polynomial over atoms. Build it with the module's functions or operators."""

    __slots__ = ("terms", "_hash", "_bounds", "_str", "size", "depth")

    def __init__(self, terms: tuple, size: int = 1, depth: int = 0):
        # terms: ((mono, coef), ...) sorted canonically; mono: ((Atom, exp), ...) sorted by atom key.
        # size and depth are measured by the constructors (_from_dict, atom_dim), which enforce
        # the budget.
        self.terms = terms
        self._hash = hash(terms)
        self._bounds = None
        self._str = None
        self.size = size
        self.depth = depth

    def __eq__(self, other):
        return isinstance(other, Expr) and self._hash == other._hash and self.terms == other.terms

    def __hash__(self):
        return self._hash

    def __repr__(self):
        from .printing import to_str

        return f"Expr({to_str(self)!r})"

    def __str__(self):
        if self._str is None:
            from .printing import to_str

            self._str = to_str(self)
        return self._str

    # Operators make Expr usable inside NumPy object arrays (shape values are computed that way).
    def __add__(self, other):
        return add(self, other) if _is_dim(other) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return sub(self, other) if _is_dim(other) else NotImplemented

    def __rsub__(self, other):
        return sub(other, self) if _is_dim(other) else NotImplemented

    def __mul__(self, other):
        return mul(self, other) if _is_dim(other) else NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __truediv__(self, other):
        return truediv(self, other) if _is_dim(other) else NotImplemented

    def __rtruediv__(self, other):
        return truediv(other, self) if _is_dim(other) else NotImplemented

    def __floordiv__(self, other):
        return floordiv(self, other) if _is_dim(other) else NotImplemented

    def __rfloordiv__(self, other):
        return floordiv(other, self) if _is_dim(other) else NotImplemented

    def __mod__(self, other):
        return mod(self, other) if _is_dim(other) else NotImplemented

    def __rmod__(self, other):
        return mod(other, self) if _is_dim(other) else NotImplemented


Dim = Union[int, Expr]


def _is_dim(x) -> bool:
    return isinstance(x, (int, Expr)) and not isinstance(x, bool)


# ---------------------------------------------------------------------------------------------
# Canonical construction


def _norm_coef(c: Number) -> Number:
    if isinstance(c, Fraction) and c.denominator == 1:
        return int(c.numerator)
    return c


def _mono_key(mono: tuple) -> tuple:
    return tuple((a.key, e) for a, e in mono)


def _term_sort_key(item) -> tuple:
    mono = item[0]
    return (-sum(e for _, e in mono), _mono_key(mono))


def _coef_bits(c) -> int:
    if type(c) is int:
        return c.bit_length()
    return max(c.numerator.bit_length(), c.denominator.bit_length())


def _from_dict(d: dict) -> Dim:
    """Canonical dim from {mono: coef}; ExpressionTooLarge past the budget."""
    items = [(m, _norm_coef(c)) for m, c in d.items() if c != 0]
    if not items:
        return 0
    if len(items) == 1 and items[0][0] == ():
        c = items[0][1]
        if isinstance(c, int):
            if c.bit_length() > MAX_COEF_BITS:
                raise _too_large("coefficient bits", c.bit_length())
            return c
    if len(items) > MAX_TERMS:
        raise _too_large("terms", len(items))
    size, depth, lone_mod = 0, 0, False
    for mono, c in items:
        size += 1
        degree = 0
        if len(mono) == 1 and type(mono[0][0]) is Mod and mono[0][1] == 1:
            lone_mod = True
        for atom, e in mono:
            size += atom.size
            degree += e
            if atom.depth > depth:
                depth = atom.depth
        if degree > MAX_DEGREE:
            raise _too_large("degree", degree)
        if _coef_bits(c) > MAX_COEF_BITS:
            raise _too_large("coefficient bits", _coef_bits(c))
    if size > MAX_SIZE:
        raise _too_large("size", size)
    if lone_mod:
        rounded = _multiple_of(items)
        if rounded is not None:
            return rounded
    items.sort(key=_term_sort_key)
    return Expr(tuple(items), size, depth)


def _multiple_of(items: list) -> Optional[Dim]:
    """``k*(R + y%c)`` where ``R + y`` is a nonzero multiple of c is R padded up to a multiple of c,
    ``k*c*((R + c-1)//c)`` (``h + h%2`` is ``2*((h+1)//2)``): the canonical form, so that a
    padded size and the window count it divides into compare equal, and cancel in quotients."""
    for i, (mono, k) in enumerate(items):
        if len(mono) != 1 or type(mono[0][0]) is not Mod or mono[0][1] != 1 or type(k) is not int:
            continue
        y, c = mono[0][0].args
        if type(c) is not int or c < 2:
            continue
        rest = {}
        for j, (m, coef) in enumerate(items):
            if j == i:
                continue
            if type(coef) is not int or coef % k:
                break
            rest[m] = coef // k
        else:
            r = _from_dict(rest)
            padded = _as_dict(add(r, y))
            # (R + y = 0 is x - x%c, rounding down: left as it is)
            if padded and all(type(v) is int and v % c == 0 for v in padded.values()):
                return _scale(floordiv(add(r, c - 1), c), k * c)
    return None


def _as_dict(d: Dim) -> dict:
    if isinstance(d, Expr):
        return dict(d.terms)
    if isinstance(d, (int, Fraction)):
        return {(): d} if d != 0 else {}
    raise TypeError(f"not a dim: {d!r}")


def atom_dim(atom: Atom) -> Expr:
    """The dim that is just this atom."""
    return Expr((((((atom, 1),), 1)),), 1 + atom.size, atom.depth)


def constant_value(d) -> Optional[Number]:
    """The value of a constant dim (int, or an Expr holding only a rational constant), else None."""
    if isinstance(d, int):
        return d
    if isinstance(d, Fraction):
        return _norm_coef(d)
    if isinstance(d, Expr) and len(d.terms) == 1 and d.terms[0][0] == ():
        return d.terms[0][1]
    return None


@_memo
def add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    d = _as_dict(a)
    for m, c in _as_dict(b).items():
        d[m] = d.get(m, 0) + c
    return _from_dict(d)


def neg(a: Dim) -> Dim:
    if isinstance(a, int):
        return -a
    return _from_dict({m: -c for m, c in a.terms})


def sub(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return add(a, neg(b))


def _mono_mul(m1: tuple, m2: tuple) -> Optional[tuple]:
    """The product of two monomials, or None when it is 0 for every binding (``s*iszero(s)``)."""
    if not m1:
        return m2
    if not m2:
        return m1
    exps: dict = dict(m1)
    reduce = False
    for a, e in m2:
        exps[a] = exps.get(a, 0) + e
        reduce = reduce or a.reduces_monomials
    if reduce or any(a.reduces_monomials for a, _ in m1):
        kept = {}
        for a, e in exps.items():
            if a.reduces_monomials:
                e = a._in_monomial(exps)
                if e is None:
                    return None
            kept[a] = e
        exps = kept
    return tuple(sorted(exps.items(), key=lambda ae: ae[0].key))


@_memo
def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    da, db = _as_dict(a), _as_dict(b)
    if len(da) * len(db) > MAX_TERMS * MAX_TERMS // 4:  # refuse before the quadratic work
        raise _too_large("terms", len(da) * len(db))
    out: dict = {}
    for m1, c1 in da.items():
        for m2, c2 in db.items():
            m = _mono_mul(m1, m2)
            if m is not None:
                out[m] = out.get(m, 0) + c1 * c2
    return _from_dict(out)


def _scale(a: Dim, c: Number) -> Dim:
    return _from_dict({m: k * c for m, k in _as_dict(a).items()})


def _mono_div(m1: tuple, m2: tuple):
    """m1 / m2 if m2 divides m1, else None."""
    exps = dict(m1)
    for a, e in m2:
        have = exps.get(a, 0)
        if have < e:
            return None
        if have == e:
            del exps[a]
        else:
            exps[a] = have - e
    return tuple(sorted(exps.items(), key=lambda ae: ae[0].key))


def _poly_divide(a: Dim, b: Expr):
    """Exact polynomial quotient a / b, or None when b does not divide a."""
    num = _as_dict(a)
    den = sorted(b.terms, key=_term_sort_key)
    lead_m, lead_c = den[0]
    quotient: dict = {}
    for _ in range(4 * MAX_TERMS):  # bounded: each step removes the leading term of the remainder
        if not num:
            return _from_dict(quotient)
        rem_lead_m, rem_lead_c = sorted(num.items(), key=_term_sort_key)[0]
        qm = _mono_div(rem_lead_m, lead_m)
        if qm is None:
            return None
        qc = Fraction(rem_lead_c) / lead_c
        quotient[qm] = quotient.get(qm, 0) + qc
        for m, c in den:
            mm = _mono_mul(qm, m)
            if mm is None:
                continue
            v = num.get(mm, 0) - qc * c
            if v == 0:
                num.pop(mm, None)
            else:
                num[mm] = v
    return None


# ---------------------------------------------------------------------------------------------
# Bounds and predicates


def _imul(x, y):
    if x == 0 or y == 0:
        return 0
    return x * y


def _interval_mul(p, q):
    c = [_imul(p[0], q[0]), _imul(p[0], q[1]), _imul(p[1], q[0]), _imul(p[1], q[1])]
    return (min(c), max(c))


def _interval_pow(p, e):
    out = (1, 1)
    for _ in range(e):
        out = _interval_mul(out, p)
    if e % 2 == 0 and p[0] < 0 < p[1]:
        out = (0, out[1])
    return out


def _quot_interval(pa, pb):
    """Range of a/b for a in pa, b in pb with pb strictly positive."""
    c = []
    for x in pa:
        for y in pb:
            if y == inf:
                c.append(0)
            elif x in (inf, -inf):
                c.append(x)
            else:
                c.append(Fraction(x) / y)
    return (min(c), max(c))


def _atom_bounds(atom: Atom, top=inf):
    if top != inf:
        key = (atom, top)
        got = _TOP_BOUNDS.get(key)
        if got is None:
            got = atom.interval(top)
            if len(_TOP_BOUNDS) >= _MEMO_LIMIT:
                _TOP_BOUNDS.clear()
            _TOP_BOUNDS[key] = got
        return got
    if atom._bounds is None:
        atom._bounds = atom.interval(inf)
    return atom._bounds


# (atom or expression, top) -> its bounds with every symbol at most top (the canonical forms
# make good keys; fits() asks the same questions of every repeated layer)
_TOP_BOUNDS: dict = {}


def bounds(d: Dim, top=inf) -> tuple:
    """(lo, hi) with lo <= d <= hi for every binding of non-negative symbols (inf where open).

    ``top``: take every symbol to be at most top (for questions such as "does this value fit an
    int32 for every dim up to 2**31-1?"); the default leaves symbols unbounded above."""
    if isinstance(d, int):
        return (d, d)
    if isinstance(d, Fraction):
        return (d, d)
    if top == inf and d._bounds is not None:
        return d._bounds
    lo, hi = 0, 0
    for mono, coef in d.terms:
        p = (1, 1)
        for atom, e in mono:
            p = _interval_mul(p, _interval_pow(_atom_bounds(atom, top), e))
        p = _interval_mul(p, (coef, coef))
        lo, hi = lo + p[0], hi + p[1]
    # Every dim is an integer in a valid run (an exact division divides), so round inward.
    if lo not in (inf, -inf):
        lo = -floor(-Fraction(lo))
    if hi not in (inf, -inf):
        hi = floor(Fraction(hi))
    if top == inf:
        d._bounds = (lo, hi)
    return (lo, hi)


def replace_atom(d: Dim, atom: Atom, value: Dim) -> Dim:
    """d with every occurrence of the atom (as a factor of a term) replaced by value."""
    return d if isinstance(d, int) else _replace_atom(d, atom, value)


def _replace_atom(d: Expr, atom: Atom, value: Dim) -> Dim:
    total: Dim = 0
    for mono, coef in d.terms:
        term: Dim = _from_dict({(): coef})
        for a, e in mono:
            v = value if a == atom else atom_dim(a)
            for _ in range(e):
                term = mul(term, v)
        total = add(total, term)
    return total


def _nonneg(d: Dim, depth: int) -> bool:
    """d >= 0 for every binding: by bounds, else by reasoning about one opaque atom at a time
    (the first atom, in canonical order, whose kind has something to say: ``_nonneg_in``)."""
    if bounds(d)[0] >= 0:
        return True
    if depth == 0 or isinstance(d, int):
        return False
    for mono, _ in d.terms:
        for atom, _ in mono:
            proven = atom._nonneg_in(d, depth)
            if proven is not None:
                return proven
    return False


# The predicates answer "not proven" (False) where the work to prove it would pass the budget.


@_memo
def provably_nonneg(d: Dim) -> bool:
    try:
        return _nonneg(d, 3)
    except ExpressionTooLarge:
        return False


def provably_positive(d: Dim) -> bool:
    if bounds(d)[0] > 0:
        return True
    try:
        return provably_nonneg(sub(d, 1))
    except ExpressionTooLarge:
        return False


def provably_le(a: Dim, b: Dim) -> bool:
    """True only when a <= b for every binding."""
    try:
        return provably_nonneg(sub(b, a))
    except ExpressionTooLarge:
        return False


def provably_equal(a: Dim, b: Dim) -> bool:
    if a == b:
        return True
    try:
        return sub(a, b) == 0
    except ExpressionTooLarge:
        return False


# The largest size a symbol takes where a question is about integer overflow: no tensor dim
# reaches 2**31 elements in practice (a 1-D tensor that long holds 2 GiB even as uint8), and
# without some limit no product of two dims would provably fit int64. Shape *values* copied from
# dims of tensors that exist are not asked: only values computed from them (see fits()).
DIM_MAX = 2**31 - 1


def fits(d: Dim, lo: int, hi: int) -> bool:
    """True when lo <= d <= hi for every binding with each symbol at most DIM_MAX: a computed
    shape value that may not fit its integer type (and would wrap) is not known."""
    if isinstance(d, int):
        return lo <= d <= hi
    key = (d, DIM_MAX)
    got = _TOP_BOUNDS.get(key)
    if got is None:
        got = bounds(d, DIM_MAX)
        if len(_TOP_BOUNDS) >= _MEMO_LIMIT:
            _TOP_BOUNDS.clear()
        _TOP_BOUNDS[key] = got
    a, b = got
    return lo <= a and b <= hi


def provably_one(d: Dim) -> bool:
    return d == 1


def provably_not_one(d: Dim) -> bool:
    """True only when d != 1 for every binding (by bounds, or because every coefficient is even)."""
    if isinstance(d, int):
        return d != 1
    lo, hi = bounds(d)
    if lo >= 2 or hi <= 0:
        return True
    return all(isinstance(c, int) and c % 2 == 0 for _, c in d.terms)


# ---------------------------------------------------------------------------------------------
# Evaluation and inspection


def _num(x: Number) -> Number:
    return _norm_coef(x) if isinstance(x, Fraction) else x


class Binding(dict):
    """A binding of the symbols that remembers the value of each atom evaluated under it: an
    expression that repeats a sub-expression in many places (a chain of convolutions' dims)
    evaluates each once. Read-only once made: the remembered values hold for these sizes."""

    __slots__ = ("memo",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.memo: dict = {}


def evaluate(d: Dim, binding: Mapping[str, int]) -> Number:
    """The value of d when each symbol takes the value binding[name] (exact; int when integral).
    A :class:`Binding` remembers the atoms' values across calls.

    An atom with no value there (a broadcast that fails, a division by 0) leaves d without one
    -- unless d does not depend on it at that binding: in ``R1 + iszero(a)*(R0 - R1)``, the
    exact form of a zero case, R0 need not have a value where a != 0 (its factor is 0) nor R1
    where a == 0 (it cancels). Such an atom is then read as an opaque unknown, and d has a
    value when the unknowns drop out."""
    if isinstance(d, (int, Fraction)):
        return d
    total: Number = 0
    memo = binding.memo if type(binding) is Binding else None
    try:
        for mono, coef in d.terms:
            v: Number = coef
            for atom, e in mono:
                if memo is None:
                    x = atom.value(binding)
                else:
                    x = memo.get(atom)
                    if x is None:
                        x = memo[atom] = atom.value(binding)
                v = v * x ** e
            total += v
    except EvaluationError:
        return _evaluate_around(d, binding)
    return _num(total) if isinstance(total, Fraction) else total


# The opaque unknowns standing for atoms that have no value (never a symbol of a model: a model's
# names hold no NUL character).
_NO_VALUE = "\x00no value "


def _evaluate_around(d: Expr, binding: Mapping[str, int]) -> Number:
    """evaluate() where some atom of d has no value: each such atom an opaque unknown."""
    failed: list = []

    def value_of(atom):
        try:
            return atom.value(binding)
        except EvaluationError as err:
            failed.append(err)
            raise

    c = constant_value(_rebuild_around(d, value_of, (EvaluationError,)))
    if c is None:
        raise failed[0]
    return _num(c) if isinstance(c, Fraction) else c


def _rebuild_around(d: Expr, value_of, errors: tuple) -> Dim:
    """d rebuilt from its terms with each atom replaced by ``value_of(atom)``; an atom for which
    that raises one of ``errors`` (it has no value there) becomes an opaque unknown of its own,
    which the caller then finds in the result where d depends on it."""
    unknowns: dict = {}
    total: Dim = 0
    for mono, coef in d.terms:
        term: Dim = _from_dict({(): coef})
        for atom, e in mono:
            try:
                v = value_of(atom)
            except errors:
                if atom not in unknowns:
                    unknowns[atom] = sym(f"{_NO_VALUE}{len(unknowns)}")
                v = unknowns[atom]
            for _ in range(e):
                term = mul(term, v)
            if term == 0:
                break
        total = add(total, term)
    return total


def _has_unknown(d: Dim) -> bool:
    return any(name.startswith(_NO_VALUE) for name in free_symbols(d))


def substitute(d: Dim, mapping: Mapping) -> Dim:
    """d with each symbol named in mapping (a str key) or each atom (an Atom key) replaced by
    its dim, wherever it occurs (inside other atoms too), rebuilt in canonical form. An atom
    with no value under the mapping (a broadcast that fails, a division by 0) is fine where d
    does not depend on it (see evaluate); elsewhere its error is raised."""
    if isinstance(d, int):
        return d
    if all(isinstance(k, str) for k in mapping) and not (free_symbols(d) & mapping.keys()):
        return d
    failed: list = []

    def value_of(atom):
        try:
            return mapping[atom] if atom in mapping else atom._substituted(mapping)
        except (BroadcastError, ZeroDivisionError) as err:
            failed.append(err)
            raise

    total = _rebuild_around(d, value_of, (BroadcastError, ZeroDivisionError))
    if failed and _has_unknown(total):
        raise failed[0]
    return total


def at_zero(d: Dim, atom: Atom) -> Dim:
    """d where the atom is 0, everywhere (inside other atoms too) -- and so is what its being 0
    forces: ``(h+1)//2``
    is 0 only where h is (h >= 0), so h is set to 0 too."""
    if isinstance(atom, Sym):
        return substitute(d, {atom.name: 0})
    d = substitute(d, {atom: 0})
    for forced in _zero_forces(atom):
        d = at_zero(d, forced)
    return d


def _zero_forces(atom: Atom) -> list:
    """The atoms that are 0 wherever this one is: for ``(a*u + k)//c`` (c > 0, u an atom >= 0,
    a >= 1) the atom is 0 only where a*u + k <= c - 1, which leaves u = 0 alone when c-1-k < a."""
    lin = _linear_division(atom)
    if lin is not None and lin[4] == 0:
        return [lin[0]]
    return []


def _linear_division(atom: Atom) -> Optional[tuple]:
    """(u, a, k, c, u0) for an atom ``(a*u + k)//c`` (c > 0, u an atom >= 0, a >= 1, k an int)
    that is 0 for some u >= 0: exactly where u <= u0; None for any other atom."""
    if not isinstance(atom, FloorDiv):
        return None
    x, c = atom.args
    if not isinstance(c, int) or c <= 0 or not isinstance(x, Expr):
        return None
    k, lin = 0, None
    for mono, coef in x.terms:
        if not mono:
            k = coef
        elif len(mono) == 1 and mono[0][1] == 1 and isinstance(coef, int) and coef >= 1 and lin is None:
            lin = (mono[0][0], coef)
        else:
            return None
    if lin is None or not isinstance(k, int):
        return None
    u, a = lin
    if bounds(atom_dim(u))[0] >= 0 and c - 1 - k >= 0:
        return (u, a, k, c, (c - 1 - k) // a)
    return None


def zero_range(atom: Atom) -> Optional[tuple]:
    """(name, top) when the atom is 0 exactly where the symbol ``name`` is at most ``top``: the
    symbol itself (top 0), or a division ``(a*s + k)//c`` of it that is 0 for some s; else None."""
    if isinstance(atom, Sym):
        return (atom.name, 0) if atom.lo == 0 else None
    lin = _linear_division(atom)
    if lin is not None and isinstance(lin[0], Sym):
        return lin[0].name, lin[4]
    return None


def atoms(d: Dim):
    """Every atom of d at any depth (those inside other atoms too), outermost first."""
    stack = [d]
    while stack:
        x = stack.pop()
        if not isinstance(x, Expr):
            continue
        for mono, _ in x.terms:
            for atom, _ in mono:
                yield atom
                stack.extend(atom.args)


def term_atoms(d: Dim) -> Iterator[Atom]:
    """The atoms that are factors of d's terms, term by term in canonical order (an atom of
    several terms comes once for each); not those nested inside them (see :func:`atoms`)."""
    if isinstance(d, Expr):
        for mono, _ in d.terms:
            for atom, _ in mono:
                yield atom


def as_single_atom(d: Dim) -> Optional[Atom]:
    """The atom when d is just one atom (``min(a,b)``, not ``2*min(a,b)``), else None."""
    if isinstance(d, Expr) and len(d.terms) == 1:
        (mono, coef), = d.terms
        if coef == 1 and len(mono) == 1 and mono[0][1] == 1:
            return mono[0][0]
    return None


def zero_factors(d: Dim) -> Optional[tuple]:
    """The atoms of d when d is a positive multiple of a product of atoms (``2*B*S**2``): d is 0
    exactly when one of them is. None for any other dim (a constant, a sum)."""
    if not isinstance(d, Expr) or len(d.terms) != 1:
        return None
    (mono, coef), = d.terms
    if not mono or coef <= 0:
        return None
    return tuple(atom for atom, _ in mono)


def common_denominator(d: Dim) -> Optional[int]:
    """The least c >= 1 for which c*d has integer coefficients (``B*S/4`` gives 4; an int 1),
    or None when an exact division a/b is a factor of one of d's terms (atoms nested inside
    others are not looked into)."""
    if isinstance(d, int):
        return 1
    c = 1
    for mono, coef in d.terms:
        if any(isinstance(atom, Div) for atom, _ in mono):
            return None
        if type(coef) is not int:
            c = lcm(c, coef.denominator)
    return c


def free_symbols(d: Dim) -> set:
    """Names of the symbols d depends on."""
    out: set = set()
    if isinstance(d, int):
        return out
    stack = [d]
    while stack:
        x = stack.pop()
        if isinstance(x, Expr):
            for mono, _ in x.terms:
                for atom, _ in mono:
                    if type(atom) is Sym:
                        out.add(atom.name)
                    else:
                        stack.extend(atom.args)
    return out


def is_static(d) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)


def dim_key(d: Dim) -> tuple:
    """A total order on dims, used to keep commutative arguments in canonical order."""
    if isinstance(d, int):
        return (0, d)
    if isinstance(d, Fraction):
        return (0, d)
    return (1, tuple((_mono_key(m), str(c)) for m, c in d.terms))


# ---------------------------------------------------------------------------------------------
# Atom kinds: one class each, its constructor right after it


def _operand_values(atom: Atom, binding: Mapping[str, int]) -> tuple:
    return tuple(evaluate(x, binding) for x in atom.args)


def _divisor_values(atom: Atom, binding: Mapping[str, int]) -> tuple:
    """The values of a division's operands (EvaluationError for a divisor of 0)."""
    a, b = _operand_values(atom, binding)
    if b == 0:
        raise EvaluationError(f"{atom.tag} by zero")
    return a, b


class Sym(Atom):
    """A named symbol: a tensor dim, so an integer >= 0, or >= ``lo`` (1 for a dim assumed
    non-empty). Printed as its name, quoted unless it is an identifier."""

    __slots__ = ("name", "lo")
    tag = "sym"

    def __init__(self, name: str, lo: int = 0):
        self.name = name
        self.lo = lo
        self.args = ()
        self.key = (0, name) if lo == 0 else (0, name, lo)  # before every operation, by name
        self._hash = hash(self.key)
        self._bounds = None
        self.size, self.depth = 1, 0

    def __repr__(self):
        return f"Atom({self.tag}, {(self.name,)!r})"

    def interval(self, top) -> tuple:
        return (self.lo, top)

    def value(self, binding: Mapping[str, int]) -> Number:
        if self.name not in binding:
            raise EvaluationError(f"symbol {self.name!r} is not bound")
        return binding[self.name]

    def _substituted(self, mapping: Mapping) -> Dim:
        v = mapping.get(self.name, None)
        return atom_dim(self) if v is None else v


def sym(name: str, lo: int = 0) -> Expr:
    """The symbol ``name`` as a dim. ``lo=1`` declares it at least 1 (a dim assumed non-empty);
    that is part of its identity, so one model should name each symbol with one ``lo``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a symbol needs a non-empty name, got {name!r}")
    return atom_dim(Sym(name, lo))


def _divisor_bounds(atom, top) -> tuple:
    """The bounds of a division's operands where it has a value: a divisor that is never
    negative is then at least 1 (the atom has no value where it is 0)."""
    pa, pb = bounds(atom.args[0], top), bounds(atom.args[1], top)
    if pb[0] == 0 and pb[1] >= 1:
        pb = (1, pb[1])
    return pa, pb


class Div(Atom):
    """``a/b``, an exact division that is not a polynomial (an element count over another, for
    Reshape's -1): an integer in every valid run, though not for every binding."""

    __slots__ = ()
    tag = "div"
    infix = "/"

    @staticmethod
    def build(args: tuple) -> Dim:
        return truediv(*args)

    def interval(self, top) -> tuple:
        pa, pb = _divisor_bounds(self, top)
        if pb[0] <= 0 or pb[0] > pb[1]:  # (an empty range: a divisor no valid run has)
            return (-inf, inf)
        lo, hi = _quot_interval(pa, pb)
        # an integer in a valid run: positive means >= 1
        lo = lo if lo == -inf else -floor(-Fraction(lo))
        hi = hi if hi == inf else floor(Fraction(hi))
        if pa[0] > 0:
            lo = max(lo, 1)
        return (lo, hi)

    def value(self, binding: Mapping[str, int]) -> Number:
        a, b = _divisor_values(self, binding)
        return _num(Fraction(a) / b)


@_memo
def truediv(a: Dim, b: Dim) -> Dim:
    """Exact division a / b (the quotient of element counts, for Reshape's -1)."""
    cb = constant_value(b)
    if cb is not None:
        if cb == 0:
            raise ZeroDivisionError("division of a dim by zero")
        ca = constant_value(a)
        if ca is not None:
            return _from_dict({(): Fraction(ca) / cb})
        return _scale(a, Fraction(1) / cb)
    if a == b:
        return 1
    q = _poly_divide(a, b)
    if q is not None:
        return q
    q = _divide_zero_case(a, b)
    if q is not None:
        return q
    g = _common_monomial(a, b)
    if g:
        # A factor of every term on both sides cancels: where it is 0 the divisor is too, and
        # the division has no value there anyway.
        return truediv(_divide_terms(a, g), _divide_terms(b, g))
    return atom_dim(Div((a, b)))


def _divide_zero_case(a: Dim, b: Expr) -> Optional[Dim]:
    """a / b for a divisor ``m + iszero(m)*z`` (a dim that copies z where m is 0) and m dividing
    a: ``(a/m)*(1 - iszero(m))`` -- a/m where m != 0, and where m == 0 a is 0 too (a multiple
    of m), so the quotient is 0 (z != 0 there, or the division has no value)."""
    for mono, _ in b.terms:
        for atom, _ in mono:
            if not isinstance(atom, IsZero):
                continue
            m = _replace_atom(b, atom, 0)
            if isinstance(m, int) or as_single_atom(iszero(m)) != atom:
                continue
            q = _poly_divide(a, m) if a != m else 1
            if q is not None:
                return mul(q, sub(1, atom_dim(atom)))
    return None


def _common_monomial(a: Dim, b: Dim) -> tuple:
    """The greatest monomial dividing every term of a and of b (``()`` when there is none)."""
    if not isinstance(a, Expr) or not isinstance(b, Expr):
        return ()
    exps: Optional[dict] = None
    for mono, _ in a.terms + b.terms:
        if exps is None:
            exps = dict(mono)
        else:
            here = dict(mono)
            exps = {x: min(e, here[x]) for x, e in exps.items() if x in here}
        if not exps:
            return ()
    return tuple(sorted(exps.items(), key=lambda ae: ae[0].key))


def _divide_terms(d: Expr, g: tuple) -> Dim:
    return _from_dict({_mono_div(m, g): c for m, c in d.terms})


class FloorDiv(Atom):
    """``a//b``, floor division (Python's)."""

    __slots__ = ()
    tag = "floordiv"
    infix = "//"

    @staticmethod
    def build(args: tuple) -> Dim:
        return floordiv(*args)

    def interval(self, top) -> tuple:
        pa, pb = _divisor_bounds(self, top)
        if pb[0] <= 0 or pb[0] > pb[1]:  # (an empty range: a divisor no valid run has)
            return (-inf, inf)
        lo, hi = _quot_interval(pa, pb)
        lo = lo if lo == -inf else floor(lo)
        hi = hi if hi == inf else floor(hi)
        return (lo, hi)

    def value(self, binding: Mapping[str, int]) -> Number:
        a, b = _divisor_values(self, binding)
        return int(floor(Fraction(a) / b))

    def _nonneg_in(self, d: Expr, depth: int) -> Optional[bool]:
        """floordiv(x, c) with c > 0 lies in [(x-c+1)/c, x/c]; where it enters d linearly with a
        constant coefficient, d is non-negative if it is with the end that makes d smaller."""
        x, c = self.args
        if not (isinstance(c, int) and c > 0):
            return None
        uses = [(m, k) for m, k in d.terms if any(a == self for a, _ in m)]
        if all(m == ((self, 1),) for m, _ in uses) and len(uses) == 1:
            lower = uses[0][1] > 0
            value = truediv(sub(x, c - 1), c) if lower else truediv(x, c)
            if _nonneg(_replace_atom(d, self, value), depth - 1):
                return True
        return None


def _int_coefs(d: dict) -> bool:
    return all(isinstance(c, int) for c in d.values())


@_memo
def floordiv(a: Dim, b: Dim) -> Dim:
    ca, cb = constant_value(a), constant_value(b)
    if cb is not None:
        if cb == 0:
            raise ZeroDivisionError("floordiv of a dim by zero")
        if ca is not None:
            return int(floor(Fraction(ca) / cb))
        if cb == 1:
            return a if _int_coefs(_as_dict(a)) else atom_dim(FloorDiv((a, b)))
        if isinstance(cb, int) and cb > 0:
            da = _as_dict(a)
            if _int_coefs(da):
                q = {m: c // cb for m, c in da.items()}
                r = {m: c % cb for m, c in da.items()}
                qd, rd = _from_dict(q), _from_dict(r)
                if rd == 0:
                    return qd
                lo, hi = bounds(rd)
                if lo >= 0 and hi <= cb - 1:
                    return qd
                # floordiv(floordiv(x, c1) + k, c2) == floordiv(x + k*c1, c1*c2) for positive
                # c1, c2 and an integer k (floor(x/c1) + k is floor((x + k*c1)/c1))
                k = r.get((), 0)
                inner = as_single_atom(sub(rd, k)) if k else as_single_atom(rd)
                if isinstance(inner, FloorDiv):
                    x, c1 = inner.args
                    if isinstance(c1, int) and c1 > 0 and _int_coefs(_as_dict(x)):
                        return add(qd, floordiv(add(x, k * c1), c1 * cb))
                # rd = R + mod(y, c) with R + y a multiple c*P of c (padding to a multiple:
                # x + mod(-x, c)) divides exactly: floordiv(rd, c) = P - floordiv(y, c).
                for mono, coef in rd.terms if isinstance(rd, Expr) else ():
                    if coef == 1 and len(mono) == 1 and mono[0][1] == 1:
                        atom = mono[0][0]
                        if isinstance(atom, Mod) and atom.args[1] == cb:
                            y = atom.args[0]
                            rest = add(sub(rd, atom_dim(atom)), y)
                            drest = _as_dict(rest)
                            if _int_coefs(drest) and all(c % cb == 0 for c in drest.values()):
                                # mod(y, c) == mod(-R, c), so rd = c*ceil(R/c)
                                r_part = sub(rd, atom_dim(atom))
                                return add(qd, floordiv(add(r_part, cb - 1), cb))
                return add(qd, atom_dim(FloorDiv((rd, b))))
    if isinstance(b, Expr):
        q = _poly_divide(a, b)  # an exact quotient with integer coefficients is the floor too
        if q is not None and _int_coefs(_as_dict(q)):
            return q
    if provably_nonneg(a) and provably_positive(b) and provably_le(add(a, 1), b):
        return 0
    return atom_dim(FloorDiv((a, b)))


class Mod(Atom):
    """``a%b``, the remainder of floor division (Python's; ONNX ``Mod`` with ``fmod=0``)."""

    __slots__ = ()
    tag = "mod"
    infix = "%"

    @staticmethod
    def build(args: tuple) -> Dim:
        return mod(*args)

    def interval(self, top) -> tuple:
        pa, pb = _divisor_bounds(self, top)
        if pb[0] <= 0 or pb[0] > pb[1]:  # (an empty range: a divisor no valid run has)
            return (-inf, inf)
        hi = pb[1] - 1
        if pa[0] >= 0:
            hi = min(hi, pa[1])
        return (0, hi)

    def value(self, binding: Mapping[str, int]) -> Number:
        a, b = _divisor_values(self, binding)
        return _num(Fraction(a) - b * floor(Fraction(a) / b))


@_memo
def mod(a: Dim, b: Dim) -> Dim:
    ca, cb = constant_value(a), constant_value(b)
    if cb is not None:
        if cb == 0:
            raise ZeroDivisionError("mod of a dim by zero")
        if ca is not None:
            return _from_dict({(): Fraction(ca) - cb * floor(Fraction(ca) / cb)})
        if isinstance(cb, int) and cb in (1, -1) and _int_coefs(_as_dict(a)):
            return 0
        if isinstance(cb, int) and cb > 0:
            da = _as_dict(a)
            if _int_coefs(da):
                da = _inner_mods_read_through(da, cb)
                rd = _from_dict({m: c % cb for m, c in da.items()})
                if rd == 0:
                    return 0
                lo, hi = bounds(rd)
                if lo >= 0 and hi <= cb - 1:
                    return rd
                return atom_dim(Mod((rd, b)))
    if a == b:
        return 0  # a % a is 0 wherever it is defined
    if provably_nonneg(a) and provably_positive(b) and provably_le(add(a, 1), b):
        return a
    return atom_dim(Mod((a, b)))


def _inner_mods_read_through(da: dict, c: int) -> dict:
    """{mono: coef} of a dim taken modulo c, with each term ``k*(z%c2)`` (c2 a multiple of c)
    read as ``k*z`` -- equal modulo c -- so that ``(c - x%c)%c`` is ``(-x)%c``."""
    inner = [m for m in da if len(m) == 1 and type(m[0][0]) is Mod and m[0][1] == 1
             and type(m[0][0].args[1]) is int and m[0][0].args[1] % c == 0]
    if not inner:
        return da
    out = {m: v for m, v in da.items() if m not in inner}
    for m in inner:
        for zm, zc in _as_dict(m[0][0].args[0]).items():
            out[zm] = out.get(zm, 0) + zc * da[m]
    return out if _int_coefs(out) else da


class _OneOperand(Atom):
    """An atom whose value is always one of its operands' (min, max, bcast)."""

    __slots__ = ()

    def _nonneg_in(self, d: Expr, depth: int) -> Optional[bool]:
        """d is non-negative if it is with the atom replaced by each operand in turn."""
        return all(_nonneg(_replace_atom(d, self, x), depth - 1) for x in self.args)


def _ordered(a: Dim, b: Dim) -> tuple:
    return (a, b) if dim_key(a) <= dim_key(b) else (b, a)


class Min(_OneOperand):
    """``min(a,b)``."""

    __slots__ = ()
    tag = "min"
    call = "min"

    @staticmethod
    def build(args: tuple) -> Dim:
        """min of two or more dims (the parser takes ``min(a,b,c)``), folded from the left."""
        out = args[0]
        for x in args[1:]:
            out = dmin(out, x)
        return out

    def interval(self, top) -> tuple:
        ps = [bounds(x, top) for x in self.args]
        return (min(p[0] for p in ps), min(p[1] for p in ps))

    def value(self, binding: Mapping[str, int]) -> Number:
        a, b = _operand_values(self, binding)
        return min(a, b)


@_memo
def dmin(a: Dim, b: Dim) -> Dim:
    ca, cb = constant_value(a), constant_value(b)
    if ca is not None and cb is not None:
        return _from_dict({(): min(ca, cb)})
    if a == b or provably_le(a, b):
        return a
    if provably_le(b, a):
        return b
    return atom_dim(Min(_ordered(a, b)))


class Max(_OneOperand):
    """``max(a,b)``."""

    __slots__ = ()
    tag = "max"
    call = "max"

    @staticmethod
    def build(args: tuple) -> Dim:
        """max of two or more dims (the parser takes ``max(a,b,c)``), folded from the left."""
        out = args[0]
        for x in args[1:]:
            out = dmax(out, x)
        return out

    def interval(self, top) -> tuple:
        ps = [bounds(x, top) for x in self.args]
        return (max(p[0] for p in ps), max(p[1] for p in ps))

    def value(self, binding: Mapping[str, int]) -> Number:
        a, b = _operand_values(self, binding)
        return max(a, b)


@_memo
def dmax(a: Dim, b: Dim) -> Dim:
    ca, cb = constant_value(a), constant_value(b)
    if ca is not None and cb is not None:
        return _from_dict({(): max(ca, cb)})
    if a == b or provably_le(b, a):
        return a
    if provably_le(a, b):
        return b
    return atom_dim(Max(_ordered(a, b)))


class Bcast(_OneOperand):
    """``bcast(a,b,...)``, the ONNX broadcast of dims that cannot be decided: the one that is
    not 1 (they all are equal or 1 in a valid run), 1 if all are."""

    __slots__ = ()
    tag = "bcast"
    call = "bcast"

    @staticmethod
    def build(args: tuple) -> Dim:
        return bcast(*args)

    def interval(self, top) -> tuple:
        ps = [bounds(x, top) for x in self.args]
        return (min(p[0] for p in ps), max(p[1] for p in ps))

    def value(self, binding: Mapping[str, int]) -> Number:
        values = set(_operand_values(self, binding)) - {1}
        if len(values) > 1:
            raise EvaluationError(f"bcast of {sorted(values)}: dims do not broadcast")
        return values.pop() if values else 1


def _bcast_args(d: Dim) -> tuple:
    """The operands of d if it is a bare bcast(...), else (d,)."""
    atom = as_single_atom(d)
    return atom.args if isinstance(atom, Bcast) else (d,)


@_memo
def bcast(*dims: Dim) -> Dim:
    """The multidirectional-broadcast result of dims (n-ary: nested bcasts flatten).

    Exact: where it cannot be decided which side wins, the result is the opaque
    ``bcast(a, b, ...)``, which evaluates to the run-time value. A dim that is provably not 1
    must be the result of any valid run. Raises :class:`BroadcastError` when two constants can
    never broadcast (different, neither 1)."""
    args: dict = {}
    for d in dims:
        for x in _bcast_args(d):
            if x != 1:
                args[dim_key(x)] = x
    ints = {x for x in args.values() if isinstance(x, int)}
    if len(ints) > 1:
        a, b = sorted(ints)[:2]
        raise BroadcastError(f"dims {a} and {b} cannot broadcast")
    if not args:
        return 1
    ordered = [args[k] for k in sorted(args)]
    if len(ordered) == 1:
        return ordered[0]
    not_one = [x for x in ordered if provably_not_one(x)]
    if not_one:
        # Every valid run has all the others equal to it or 1; the canonical first one serves.
        return not_one[0]
    kept = [y for y in ordered if not any(x is not y and broadcast_implied(x, y) for x in ordered)]
    if len(kept) == 1:
        return kept[0]
    return atom_dim(Bcast(tuple(kept)))


def broadcast_implied(x: Dim, y: Dim) -> bool:
    """True when ``bcast(x, y)`` is x in every run that has both dims, though y may differ:

    - y equals x except where x is 0 (``y = x + iszero(x)*z``, a Reshape entry that copied
      another dim in x's zero case): there x = 0, and a broadcast of 0 with y gives 0 or fails;
    - y is ``max(0, x)``: x is a tensor's dim, never negative where it exists;
    - y is ``min(c, x)`` with c >= 1 (a position table of c rows sliced to x): x where x <= c,
      and where x > c the broadcast gives x (c is 1) or fails.

    The broadcast can still fail (0 against z): inference says so as a condition."""
    if not isinstance(x, Expr) or not isinstance(y, Expr) or x == y:
        return False
    y_atom = as_single_atom(y)
    if isinstance(y_atom, Max) and len(y_atom.args) == 2 and 0 in y_atom.args and x in y_atom.args:
        return True
    if isinstance(y_atom, Min) and len(y_atom.args) == 2 and x in y_atom.args:
        # min(c, x) with c >= 1: x where x <= c; where x > c >= 1, x >= 2 wins or it fails
        c = y_atom.args[0] if y_atom.args[1] == x else y_atom.args[1]
        if provably_positive(c):
            return True
    ind = as_single_atom(iszero(x))
    if ind is None:
        return False
    try:
        return replace_atom(sub(y, x), ind, 0) == 0
    except ExpressionTooLarge:
        return False


class IsZero(Atom):
    """``iszero(m)``, the indicator of ``m == 0``: 1 where m is 0, else 0. It makes a dim exact
    where the zero case of some dim changes the result (a Reshape entry that copies the input
    dim when it is 0): ``R1 + iszero(s)*(R0 - R1)``.

    Its argument is canonical (see :func:`iszero`), and in products ``iszero(m)**k`` is
    ``iszero(m)`` and a monomial holding every atom of a monomial m times ``iszero(m)`` is 0
    (``s*iszero(s)``; not ``a*iszero(a*b)``, which is ``a`` at ``b == 0``)."""

    __slots__ = ()
    tag = "iszero"
    call = "iszero"
    arity = 1
    reduces_monomials = True

    @staticmethod
    def build(args: tuple) -> Dim:
        if len(args) != 1:
            raise ValueError(f"iszero() takes one argument, got {len(args)}")
        return iszero(args[0])

    def interval(self, top) -> tuple:
        return (0, 1)

    def value(self, binding: Mapping[str, int]) -> Number:
        return 1 if evaluate(self.args[0], binding) == 0 else 0

    def _in_monomial(self, exps: dict) -> Optional[int]:
        (m,) = self.args
        if len(m.terms) == 1:
            mono, _ = m.terms[0]
            if all(a in exps for a, _ in mono):
                return None  # m * iszero(m) == 0
        return 1

    def _nonneg_in(self, d: Expr, depth: int) -> Optional[bool]:
        """d is non-negative if it is in both cases: m == 0 and m != 0. For m a symbol s (>= 0)
        the cases are s = 0 and s = t+1 (t >= 0, which makes iszero 0); for a division
        ``(a*s + k)//c``, 0 exactly where s <= s0, each value of s up to s0 and s = s0+1+t
        (every other atom over s then follows); otherwise the atom is taken to be 1 and 0 in
        turn."""
        (m,) = self.args
        s = as_single_atom(m)
        lin = _linear_division(s)
        if lin is not None and isinstance(lin[0], Sym) and lin[0].lo == 0 and lin[4] <= _CASES_MAX:
            # (a*u + k)//c is 0 exactly where u <= u0: the cases u = 0, 1, ..., u0 and u > u0,
            # each a value of u itself, so every other atom over u follows it
            u, u0 = lin[0], lin[4]
            try:
                cases = [substitute(d, {u.name: v}) for v in range(u0 + 1)]
                cases.append(substitute(d, {u.name: add(atom_dim(u), u0 + 1)}))
            except (BroadcastError, ZeroDivisionError):
                return None
            return all(_nonneg(x, depth - 1) for x in cases)
        if isinstance(s, Sym) and s.lo == 0:
            try:
                zero = substitute(d, {s.name: 0})
                nonzero = substitute(d, {s.name: add(atom_dim(s), 1)})
            except (BroadcastError, ZeroDivisionError):
                return None
        elif s is not None and bounds(m)[0] == 0:
            # another atom (h//4): 0, or 1 + t for a t >= 0 of its own
            try:
                zero = substitute(d, {s: 0})
                nonzero = substitute(d, {s: add(sym(f"{_NO_VALUE}t{s.key!r}"), 1)})
            except (BroadcastError, ZeroDivisionError):
                return None
        else:
            zero, nonzero = _replace_atom(d, self, 1), _replace_atom(d, self, 0)
        return _nonneg(zero, depth - 1) and _nonneg(nonzero, depth - 1)


# The most values a symbol is split into where a division of it is 0 (the sign reasoning above).
_CASES_MAX = 8


@_memo
def iszero(d: Dim) -> Dim:
    """The indicator of ``d == 0`` (1 or 0), simplified: a constant gives 1 or 0, and so does a
    dim whose bounds exclude 0 (``s+1`` gives 0); a nonzero constant factor is dropped and the
    sign made canonical (``iszero(4*s) == iszero(-s) == iszero(s)``, ``iszero(2*a+4*b) ==
    iszero(a+2*b)``); a product is 0 when one factor is, so the powers of a single term go
    (``iszero(a**2*b) == iszero(a*b)``); ``iszero(iszero(m))`` is ``1 - iszero(m)``."""
    c = constant_value(d)
    if c is not None:
        return 1 if c == 0 else 0
    lo, hi = bounds(d)  # (rounded inward, which keeps 0 out exactly when the exact range does)
    if lo >= 1 or hi <= -1:
        return 0
    if any(isinstance(a, IsZero) for a in term_atoms(d)) and (provably_positive(d) or provably_positive(neg(d))):
        return 0  # never 0, by cases (w + 16*iszero(w))
    terms = d.terms
    dominant = _dominant_atom(d) if len(terms) > 1 else None
    if dominant is not None:
        return iszero(atom_dim(dominant))
    if len(terms) == 1:
        mono, _ = terms[0]
        arg = _from_dict({tuple((a, 1) for a, _ in mono): 1})
    else:
        den, num = 1, 0
        for _, k in terms:
            k = Fraction(k)
            den = lcm(den, k.denominator)
            num = gcd(num, k.numerator)
        scale = Fraction(den, num)
        if terms[0][1] < 0:
            scale = -scale
        arg = _from_dict({m: k * scale for m, k in terms})
    inner = as_single_atom(arg)
    if isinstance(inner, IsZero):
        return sub(1, arg)
    return atom_dim(IsZero((arg,)))


def _dominant_atom(d: Expr) -> Optional[Atom]:
    """An atom a such that d == 0 exactly where a == 0: d a sum of terms that are never
    negative, one of them a positive multiple of a, the others 0 wherever a is (``h + h%2``:
    h)."""
    candidates = []
    for mono, coef in d.terms:
        if not mono or coef <= 0:
            return None
        if len(mono) == 1 and mono[0][1] == 1:
            candidates.append(mono[0][0])
    if not candidates:
        return None
    try:
        if not all(bounds(_from_dict({mono: coef}))[0] >= 0 for mono, coef in d.terms):
            return None
        for a in candidates:
            if bounds(atom_dim(a))[0] >= 0 and at_zero(d, a) == 0:
                return a
    except (BroadcastError, ZeroDivisionError):
        return None
    return None


def zero_cases(d: Dim) -> list:
    """The arguments m of the ``iszero(m)`` atoms of d (factors of its terms or inside its other
    atoms), in canonical order: the zero cases in which d takes another value than
    :func:`plain` says."""
    if not isinstance(d, Expr):
        return []
    found = {a for a in atoms(d) if isinstance(a, IsZero)}
    return [a.args[0] for a in sorted(found, key=lambda a: a.key)]


def plain(d: Dim) -> Dim:
    """d where no zero case holds (every ``iszero(m)`` taken as 0, wherever it occurs): the
    value for every binding that makes none of :func:`zero_cases` zero -- what a table shows,
    with the zero cases said beside it."""
    cases = zero_cases(d)
    if not cases:
        return d
    return substitute(d, {IsZero((m,)): 0 for m in cases})


# Every kind, for the printer and the parser (which read their syntax).
KINDS = (Sym, Div, FloorDiv, Mod, Min, Max, Bcast, IsZero)
