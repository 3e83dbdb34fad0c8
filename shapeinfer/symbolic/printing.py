"""The printed form of a dim, and its parser.

Grammar (what goes into ``dim_param``; Python precedence and associativity)::

    expr  := term (('+' | '-') term)*
    term  := unary (('*' | '/' | '//' | '%') unary)*
    unary := ('-' | '+') unary | atom
    atom  := INT | NAME | QUOTED | NAME '(' expr (',' expr)* ')' | '(' expr ')'

``/`` is exact division, ``//`` and ``%`` floor division and modulo; the calls are ``min``,
``max`` and ``bcast`` (two or more arguments) and ``iszero`` (one: a kind's ``arity``). Both directions take an atom's syntax from its kind (``call`` or
``infix``, in expr.py), so a kind written as a call needs nothing here. ``to_str`` prints the
canonical form without spaces (``2*seq+1``, ``batch*seq/4``, ``(S+1)//2``) and
``parse(to_str(d)) == d`` for every dim.

A symbol's name is whatever string named it (a ``dim_param`` of someone else's model is an
opaque name: ``"3"``, ``"a*b"``, ``"batch size"``). A name that is not an identifier is printed
quoted, ``'a*b'`` (``\\`` and ``\'`` escaped), so that ``2*'3'`` can never read back as ``6``.
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import lcm

from .expr import KINDS, Dim, Sym, add, mul, neg, sub, sym

__all__ = ["to_str", "parse", "ParseError", "NAME_RE", "quote_name"]

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SIMPLE_PRODUCT = re.compile(r"[A-Za-z0-9_]+(\*[A-Za-z0-9_]+)*\Z")
_SIMPLE = re.compile(r"[A-Za-z0-9_]+\Z")


class ParseError(ValueError):
    """A string that is not a dim expression in the printed syntax."""


def _operand(d: Dim, left: bool) -> str:
    s = to_str(d)
    ok = _SIMPLE_PRODUCT if left else _SIMPLE
    return s if ok.match(s) else f"({s})"


def quote_name(name: str) -> str:
    """A symbol's name as printed: bare if it is an identifier, else quoted."""
    if NAME_RE.match(name):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _atom_str(atom) -> str:
    """An atom in its kind's syntax (see the kinds in expr.py)."""
    if isinstance(atom, Sym):
        return quote_name(atom.name)
    if atom.call is not None:
        return f"{atom.call}(" + ",".join(to_str(x) for x in atom.args) + ")"
    a, b = atom.args
    return f"{_operand(a, True)}{atom.infix}{_operand(b, False)}"


def _term_str(mono: tuple, n: int, negative: bool) -> str:
    if not mono:
        return str(n)
    single = len(mono) == 1 and mono[0][1] == 1
    parts = []
    for atom, e in mono:
        s = _atom_str(atom)
        if atom.infix is not None and not (single and n == 1 and not negative):
            s = f"({s})"
        parts.extend([s] * e)
    body = "*".join(parts)
    return body if n == 1 else f"{n}*{body}"


def to_str(d: Dim) -> str:
    """The canonical printed form of a dim."""
    if isinstance(d, int):
        return str(d)
    if d._str is not None:
        return d._str
    den = 1
    for _, c in d.terms:
        if isinstance(c, Fraction):
            den = lcm(den, c.denominator)
    pieces = []
    for i, (mono, c) in enumerate(d.terms):
        n = int(c * den)
        body = _term_str(mono, abs(n), n < 0)
        if i == 0:
            pieces.append(("-" if n < 0 else "") + body)
        else:
            pieces.append(("-" if n < 0 else "+") + body)
    num = "".join(pieces)
    if den != 1:
        num = f"{num}/{den}" if len(d.terms) == 1 else f"({num})/{den}"
    d._str = num
    return num


_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*/%(),])|'((?:[^'\\]|\\.)*)')")
_UNESCAPE = re.compile(r"\\(.)")
# The calls and operators of the atom kinds (``*`` is the polynomial product).
_CALLS = {k.call: k for k in KINDS if k.call is not None}
_INFIX = {k.infix: k for k in KINDS if k.infix is not None}
_PRODUCT_OPS = {("op", "*")} | {("op", op) for op in _INFIX}


class _Parser:
    def __init__(self, text: str, symbol=sym):
        self.symbol = symbol
        self.text = text
        self.tokens = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if not m:
                raise ParseError(f"unexpected character at {pos} in {text!r}")
            if m.group(1) is not None:
                self.tokens.append(("int", int(m.group(1))))
            elif m.group(2) is not None:
                self.tokens.append(("name", m.group(2)))
            elif m.group(3) is not None:
                self.tokens.append(("op", m.group(3)))
            else:
                self.tokens.append(("quoted", _UNESCAPE.sub(r"\1", m.group(4))))
            pos = m.end()
        self.i = 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self, op=None):
        tok = self.peek()
        if tok[0] is None or (op is not None and tok != ("op", op)):
            want = repr(op) if op else "more input"
            raise ParseError(f"expected {want} in {self.text!r}")
        self.i += 1
        return tok

    def expr(self):
        d = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            rhs = self.term()
            d = add(d, rhs) if op == "+" else sub(d, rhs)
        return d

    def term(self):
        d = self.unary()
        while self.peek() in _PRODUCT_OPS:
            op = self.take()[1]
            rhs = self.unary()
            try:
                d = mul(d, rhs) if op == "*" else _INFIX[op].build((d, rhs))
            except ZeroDivisionError as e:
                raise ParseError(f"{e} in {self.text!r}") from None
        return d

    def unary(self):
        tok = self.peek()
        if tok == ("op", "-"):
            self.take()
            return neg(self.unary())
        if tok == ("op", "+"):
            self.take()
            return self.unary()
        return self.atom()

    def atom(self):
        kind, val = self.take()
        if kind == "int":
            return val
        if kind == "name":
            if self.peek() == ("op", "("):
                call = _CALLS.get(val)
                if call is None:
                    raise ParseError(f"unknown function {val!r} in {self.text!r}")
                self.take("(")
                args = [self.expr()]
                while self.peek() == ("op", ","):
                    self.take(",")
                    args.append(self.expr())
                self.take(")")
                if call.arity is None and len(args) < 2:
                    raise ParseError(f"{val}() takes two or more arguments in {self.text!r}")
                if call.arity is not None and len(args) != call.arity:
                    raise ParseError(f"{val}() takes {call.arity} argument(s) in {self.text!r}")
                try:
                    return call.build(tuple(args))
                except ValueError as e:
                    raise ParseError(f"{e} in {self.text!r}") from None
            return self.symbol(val)
        if kind == "quoted":
            return self.symbol(val)
        if val == "(":
            d = self.expr()
            self.take(")")
            return d
        raise ParseError(f"unexpected {val!r} in {self.text!r}")


def parse(text: str, symbol=sym) -> Dim:
    """Parse the printed form of a dim. Raises ParseError on anything else.

    ``symbol(name)`` makes the dim for each name (default: a plain symbol)."""
    p = _Parser(text, symbol)
    if not p.tokens:
        raise ParseError("empty dim expression")
    d = p.expr()
    if p.i != len(p.tokens):
        raise ParseError(f"unexpected {p.tokens[p.i][1]!r} in {text!r}")
    return d

