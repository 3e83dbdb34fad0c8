"""The input contract: the sizes of a model's input dims at which it runs.

Inference records what each node needs of the sizes it sees: a Reshape keeps its element count,
two dims broadcast, TopK's k fits its axis (the "condition" diagnostics), and a broadcast the
algebra could not resolve stays a ``bcast`` atom in the facts. The contract reads those
requirements of the code every run executes -- the main graph, not an If branch or a loop body
-- where they are over the graph inputs' named dims, and says them as a user writes a serving
config: bounds (``seq <= 64``), divisibility (``height % 32 == 0``), equalities between inputs
(``src == tgt``) and single sizes (``seq == 5``).

The contract is over non-empty inputs: each symbol at least 1 (a size-0 corner is not part of
it; check tells those apart). A requirement is read one symbol at a time, the others at sizes
where it holds (``example``): the sizes of that symbol where it holds among SIZES (every size to
256, then a spread to 65536, and the roots of a requirement linear in it) form a range, the
sizes of one residue modulo a number within a range, a single size, or none of these -- then
the requirement stays ``open`` and its own words are the condition. A clause is verified against
the requirement at sizes of the envelope it describes; one that is not stays open too.

What is said as fact:
  - a single size is ``proven`` where the requirement, an equality polynomial in that symbol of
    degree 1, has that root whatever the other symbols are (checked on the algebra, not by
    probing): the model runs at that size and at no other. A single size found by probing only
    is said as "of the sizes tried".
  - a bound or a divisibility is read from the sizes tried; each is verified at the sizes beside
    it (the size past a bound fails: the message evaluates it).

Bounded: at most MAX_REQUIREMENTS requirements and MAX_EVALUATIONS evaluations; past them the
rest stay open (``complete`` is False).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Optional

from ..graph.structure import node_label
from ..symbolic import (Bcast, Binding, EvaluationError, Expr, IsZero, Max, Min, Sym, add, as_single_atom, atom_dim, atoms,
                        evaluate, free_symbols, mul, provably_positive, replace_atom, sub, substitute, sym, to_str)
from ..symbolic.search import broadcasts, holds

SIZES = tuple(range(1, 257)) + (288, 320, 384, 448, 500, 512, 513, 640, 768, 1000, 1023, 1024, 1025, 1536, 2000,
                                 2048, 3000, 4096, 4097, 8192, 10000, 16384, 65536)
MAX_REQUIREMENTS = 512
MAX_EVALUATIONS = 150_000
OTHERS = (1, 2, 3, 7, 16, 64)  # sizes of the other symbols a clause of one symbol is checked at
# the sizes an example first tries, every symbol at one of them: sizes a model is used at, before
# the corner sizes (at 1 a broadcast holds with anything, and says nothing of the other side)
FIRST_TRIED = (64, 32, 16, 8, 12, 24, 48, 128, 256, 96, 7, 5, 6, 3, 2, 10, 100, 512, 1024)
ENVELOPE_SAMPLES = 48
# what a reading at other sizes of the others scans: every size to 256 (a form that moves with
# them, 2..3 at one size and 200..201 at another, shows there), and a spread past it
STABLE_SIZES = tuple(range(1, 257)) + (320, 512, 1000, 4096)  # (each one of SIZES)
_ERRORS = (EvaluationError, ZeroDivisionError, ArithmeticError, OverflowError)


@dataclass(frozen=True)
class Requirement:
    """What a node needs of the sizes: ``dims[0] == dims[1]`` (kind "equal"), dims[0] a
    multiple of dims[1] ("multiple"), dims[0] <= dims[1] ("le"), or ``dims`` broadcast together
    ("broadcast")."""

    kind: str
    dims: tuple
    node: str
    op: str
    message: str

    @property
    def symbols(self) -> frozenset:
        out: set = set()
        for d in self.dims:
            out |= free_symbols(d)
        return frozenset(out)

    def said(self) -> Optional[str]:
        """The requirement as a condition a user reads (``seq <= 64``), or None where its dims
        are not spoken (an internal term, or too long)."""
        words = [spoken(d) for d in self.dims]
        if any(w is None for w in words):
            return None
        if self.kind == "broadcast":
            return broadcast_condition(self.dims)
        a, b = words
        return {"equal": f"{a} == {b}", "le": f"{a} <= {b}", "multiple": f"{a} is a multiple of {b}"}[self.kind]

    def test(self):
        return broadcasts(self.dims) if self.kind == "broadcast" else holds(self.kind, *self.dims)


@dataclass
class Clause:
    """One condition of the contract on one input symbol: ``kind`` "min" (symbol >= value),
    "max" (<= value), "mod" (symbol % value[0] == value[1]), "point" (== value), "set" (one of
    the sizes ``value``), "finite" (an equality over several symbols that finitely many sizes
    meet, ``value`` its text: ``batch*seq == 16``), "equal" (==
    the symbol named by value; ``or_one``: or one of them is 1, as a broadcast allows) or "none"
    (no size runs the requirement). ``requirement`` is the one that imposes it (the tightest);
    ``failing`` a binding of that requirement's symbols at which it fails, evaluated."""

    kind: str
    symbol: str
    value: object
    requirement: Requirement
    failing: dict = field(default_factory=dict)
    proven: bool = False
    or_one: bool = False

    def text(self) -> str:
        s = name_str(self.symbol)
        if self.kind == "min":
            return f"{s} >= {self.value}"
        if self.kind == "max":
            return f"{s} <= {self.value}"
        if self.kind == "mod":
            k, r = self.value
            return f"{s} % {k} == {r}"
        if self.kind == "point":
            return f"{s} == {self.value}"
        if self.kind == "equal":
            return f"{s} == {name_str(self.value)}" + (" (or one of them is 1)" if self.or_one else "")
        if self.kind == "set":
            return f"{s} in {{{', '.join(str(v) for v in self.value)}}}"
        if self.kind == "finite":
            return self.value
        if self.kind == "relation":
            return f"{s} == {to_str(self.value)}" + (" (or one of them is 1)" if self.or_one else "")
        return f"no size of {s}"

    def admits(self, binding: dict) -> bool:
        v = binding.get(self.symbol)
        if v is None:
            return True
        if self.kind == "min":
            return v >= self.value
        if self.kind == "max":
            return v <= self.value
        if self.kind == "mod":
            return v % self.value[0] == self.value[1]
        if self.kind == "point":
            return v == self.value
        if self.kind == "equal":
            w = binding.get(self.value)
            return w is None or v == w or (self.or_one and 1 in (v, w))
        if self.kind == "set":
            return v in self.value
        if self.kind == "relation":
            if not free_symbols(self.value) <= binding.keys():
                return True
            try:
                w = evaluate(self.value, binding)
            except _ERRORS:
                return False
            return v == w or (self.or_one and 1 in (v, w))
        if self.kind == "finite":
            if not self.requirement.symbols <= binding.keys():
                return True
            try:
                return bool(self.requirement.test()(Binding(binding)))
            except _ERRORS:
                return False
        return False

    def as_dict(self) -> dict:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        value = to_str(value) if isinstance(value, Expr) else value
        return {"kind": self.kind, "symbol": self.symbol, "value": value, "text": self.text(),
                "node": self.requirement.node, "op": self.requirement.op, "proven": self.proven,
                "failing": dict(self.failing)}


def name_str(symbol: str) -> str:
    """A symbol as messages write it: its name, quoted where it is not an identifier ('past+seq')."""
    return to_str(sym(symbol))


@dataclass
class Contract:
    """The conditions on the graph inputs' named dims under which the model runs (non-empty)."""

    symbols: tuple = ()  # the input symbols, in the order the inputs name them
    clauses: list = field(default_factory=list)
    open: list = field(default_factory=list)  # (requirement, a failing binding inside the envelope or None)
    example: Optional[dict] = None  # sizes at which every requirement holds (None: none found)
    complete: bool = True  # every condition inference recorded is read, within the bounds
    unread: list = field(default_factory=list)  # conditions not read: inside an If or a loop, over unnamed dims
    # {symbol: (bound, why)}: lower bounds every run that succeeds meets, proven on the algebra
    # (run_bounds.py); what optimize's rewrites rely on
    lows: dict = field(default_factory=dict)

    def within(self, test):
        """``test`` (a test of a binding) that holds outside the envelope: a search for a binding
        where it fails finds one where the clauses hold. A binding with a dim of 0 is not judged
        by the clauses (they are read over non-empty inputs): there the test is the test."""
        def held(binding):
            if (self.clauses or self.lows) and not self.admits(binding) and all(v != 0 for v in binding.values()):
                return True
            return test(binding)

        return held

    def admits(self, binding: dict) -> bool:
        """Whether the clauses hold at binding (symbols it leaves out are not read)."""
        return all(c.admits(binding) for c in self.clauses) \
            and all(binding.get(s, lo) >= lo for s, (lo, _) in self.lows.items())

    @property
    def runs_nowhere(self) -> bool:
        return any(c.kind == "none" for c in self.clauses)

    def text(self) -> str:
        """The contract in a user's terms: ``1 <= seq <= 64, height % 4 == 0``."""
        parts = []
        by_symbol: dict = {}
        for c in self.clauses:
            by_symbol.setdefault(c.symbol, []).append(c)
        for s, (bound, _) in self.lows.items():
            if bound > 1:
                by_symbol.setdefault(s, [])
        for s in sorted(by_symbol, key=lambda s: self.symbols.index(s) if s in self.symbols else len(self.symbols)):
            cs = by_symbol[s]
            lo = next((c.value for c in cs if c.kind == "min"), None)
            proven = self.lows.get(s, (0, ""))[0]
            if proven > 1 and (lo is None or proven > lo):
                lo = proven
            hi = next((c.value for c in cs if c.kind == "max"), None)
            if hi is not None:
                parts.append(f"{lo if lo is not None else 1} <= {name_str(s)} <= {hi}")
            elif lo is not None:
                parts.append(f"{name_str(s)} >= {lo}")
            parts.extend(c.text() for c in cs if c.kind not in ("min", "max"))
        if self.open:  # (check warns of each, with a failing size)
            r = self.open[0][0]
            more = f" and {len(self.open) - 1} more node(s)" if len(self.open) > 1 else ""
            parts.append(f"where {r.op} {r.node!r}{more} hold{'s' if not more else ''}")
        if self.unread:  # (check warns of each, where it finds a size that breaks it)
            parts.append(f"{'and ' if parts else ''}{len(self.unread)} condition(s) not read ({self.unread[0]}"
                         f"{', ...' if len(self.unread) > 1 else ''})")
        if not parts:
            return "no condition found on the input sizes" if self.symbols else "the inputs have no dynamic dims"
        return ", ".join(parts)

    def as_dict(self) -> dict:
        return {"runs_when": self.text(), "symbols": list(self.symbols), "clauses": [c.as_dict() for c in self.clauses],
                "open": [{"node": r.node, "op": r.op, "failing": failing,
                          "condition": r.said() or ("its condition (check warns with a size that breaks it)"
                                                    if any(t in r.message for t in ("iszero(", "bcast(")) else r.message)}
                         for r, failing in self.open],
                "example": self.example, "complete": self.complete, "unread": list(self.unread),
                "proven_lows": {s: {"bound": lo, "why": why} for s, (lo, why) in self.lows.items()}}


SPOKEN_LENGTH = 60  # characters: a longer dim expression is told by its value at an example


def spoken(dim):
    """How a message writes a dim: its expression, or None where that holds an internal term
    (iszero, bcast) or is past SPOKEN_LENGTH characters."""
    text = to_str(dim)
    if len(text) > SPOKEN_LENGTH or any(isinstance(a, (Bcast, IsZero)) for a in atoms(dim)):
        return None
    return text


def broadcast_condition(args) -> str:
    """The condition under which dims broadcast together, said simply where it is simple."""
    if len(args) == 2:
        for a, b in (args, args[::-1]):
            atom = as_single_atom(b)
            if isinstance(atom, (Min, Max)) and a in atom.args and len(atom.args) == 2:
                other = atom.args[1] if atom.args[0] == a else atom.args[0]
                if spoken(a) is not None and spoken(other) is not None:
                    return f"{spoken(a)} {'<=' if isinstance(atom, Min) else '>='} {spoken(other)} (or one of them is 1)"
    words = [spoken(a) for a in args]
    if any(w is None for w in words):  # (an internal term, or too long: no user reads it)
        return "the dims it broadcasts are equal (or 1)"
    return " and ".join(words) + " are equal (or 1)"


# -- the requirements ----------------------------------------------------------------------------

def requirements(result, symbols: set, unread: Optional[list] = None) -> list:
    """The requirements of the main graph's code that every run executes, over ``symbols`` only
    (and none reading a dim no rule could express), each once, in graph order. Each is read
    with the symbols at least 1 (the contract is over non-empty inputs): a term that only an
    empty input gives (``bcast(past, total)*iszero(seq)``) is gone. ``unread`` collects what
    the contract cannot read: conditions inside an If or a loop, or over a dim no input names."""
    if unread is None:
        unread = []
    positive = {s: sym(s, 1) for s in symbols}
    out: dict = {}
    for d in result.diagnostics:
        if d.kind != "condition" or len(d.dims) != 3:
            continue
        if d.region is not None:
            if d.region.runs != 0:
                unread.append(f"{d.op_type} {d.node_name!r} inside an If or a loop")
            continue
        kind, a, b = d.dims
        if not _add(out, Requirement(kind, (a, b), d.node_name, d.op_type, d.message), symbols, positive):
            unread.append(f"{d.op_type} {d.node_name!r} over a dim the inputs do not name")
    minted = {n for n, origin in result.minted.items() if not origin.startswith("input ")}
    seen: set = set()
    read: dict = {}  # dim -> its bcast atoms with the symbols positive
    unknown: set = set()
    told: set = set()
    for n in result.model.graph.node:  # (a broadcast the algebra kept: at the node that made it)
        for o in n.output:
            fact = result.facts.get(o) if o else None
            for dim in (() if fact is None or fact.shape is None else fact.shape):
                if not isinstance(dim, Expr):
                    continue
                fresh = free_symbols(dim) & minted
                if fresh - unknown:  # (dims no rule could express: what the node needs is not known)
                    unknown |= fresh
                    if id(n) not in told:
                        told.add(id(n))
                        unread.append(f"{n.op_type} {node_label(n)!r} makes dims no rule could express")
                if dim not in read:
                    read[dim] = tuple(_live_broadcasts(dim, positive))
                for atom in read[dim]:
                    if atom not in seen:
                        seen.add(atom)
                        _add(out, Requirement("broadcast", atom.args, node_label(n), n.op_type,
                                              f"broadcasting holds only when {broadcast_condition(atom.args)}"),
                             symbols, None)
    return list(out.values())[:MAX_REQUIREMENTS]


_MARK = "\x00bcast"  # (no model's name holds a NUL)


def _live_broadcasts(dim, positive: dict):
    """The bcast atoms of dim that a non-empty run meets (not under a factor only an empty
    input makes non-zero), each with its operands read over symbols at least 1 -- as a bcast
    atom over them (the condition stays, though positive operands may make bcast pick one)."""
    for atom in atoms(dim):
        if not isinstance(atom, Bcast):
            continue
        try:
            marked = substitute(replace_atom(dim, atom, sym(_MARK)), positive)
            if _MARK not in free_symbols(marked):
                continue
            yield Bcast(tuple(substitute(a, positive) for a in atom.args))
        except _ERRORS:
            continue


def _add(out: dict, r: Requirement, symbols: set, positive: Optional[dict]) -> bool:
    """Add r (read with the symbols positive); False where it reads a dim no input names."""
    if positive is not None:
        try:
            dims = tuple(substitute(d, positive) for d in r.dims)
        except _ERRORS:
            return True
        if r.kind == "equal" and dims[0] == dims[1]:
            return True
        r = Requirement(r.kind, dims, r.node, r.op, r.message)
    free = r.symbols
    if free and not free <= symbols:
        return False
    if not free or (r.kind, r.dims) in out:
        return True
    if any(isinstance(a, Bcast) for d in r.dims for a in atoms(d)) and r.kind != "broadcast":
        return True  # (follows from the broadcast it reads, which is a requirement of its own)
    out[(r.kind, r.dims)] = r
    return True


# -- the derivation ----------------------------------------------------------------------------

class _Budget:
    def __init__(self, n: int):
        self.left = n

    def check(self, r: Requirement, test, binding: dict) -> bool:
        """Whether r holds at binding (a binding where it has no value: it does not)."""
        self.left -= 1
        if self.left < 0:
            raise _Exhausted
        try:
            return bool(test(Binding(binding)))
        except _ERRORS:
            return False


class _Exhausted(Exception):
    pass


def derive(result, input_symbols: Optional[list] = None) -> Contract:
    """The contract of the model inferred in ``result`` (an InferenceResult)."""
    if input_symbols is None:
        input_symbols = _input_symbols(result)
    contract = Contract(symbols=tuple(input_symbols))
    contract.lows = {s: low for s, low in result.run_lows().items() if s in input_symbols}
    reqs = requirements(result, set(input_symbols), contract.unread)
    contract.complete = not contract.unread
    if not reqs:
        contract.example = {s: max(1, contract.lows.get(s, (1, ""))[0]) for s in input_symbols}
        return contract
    budget = _Budget(MAX_EVALUATIONS)
    tests = {r: r.test() for r in reqs}
    try:
        example = _example(reqs, tests, list(input_symbols), budget)
        contract.example = example
        found: list = []
        for r in reqs:
            base = example if example is not None else _own_example(r, tests[r], budget)
            if base is None:
                found.append([Clause("none", s, None, r, failing={t: 1 for t in sorted(r.symbols)},
                                     proven=_never_equal(r)) for s in sorted(r.symbols)[:1]])
                continue
            found.append(_read(r, tests[r], base, budget))
        readable = [cs is not None for cs in found]
        contract.clauses = _merge([c for cs in found if cs for c in cs])
        for _ in range(3):  # (a requirement the clauses do not say is open, and its clauses go)
            failed = _verify(contract, reqs, tests, [cs is not None for cs in found], budget)
            if not failed:
                break
            for k, failing in failed.items():
                contract.open.append((reqs[k], failing))
                found[k] = None
            contract.clauses = _merge([c for cs in found if cs for c in cs])
        # a requirement no clause says: open where it fails inside the envelope (else the
        # clauses imply it, at the sizes tried)
        opened = {id(r) for r, _ in contract.open}
        unread = [not ok and id(r) not in opened for r, ok in zip(reqs, readable)]
        for k, failing in _verify(contract, reqs, tests, unread, budget).items():
            contract.open.append((reqs[k], failing))
        if contract.example is None or contract.runs_nowhere:
            contract.open += [(r, None) for r, u in zip(reqs, unread) if u]
        order = {id(r): k for k, r in enumerate(reqs)}
        contract.open.sort(key=lambda o: order[id(o[0])])
    except _Exhausted:
        contract.complete = False
        contract.unread.append(f"past {MAX_EVALUATIONS} evaluations")
        named = {id(c.requirement) for c in contract.clauses}
        contract.open = [(r, None) for r in reqs if id(r) not in named]
    return contract


def _input_symbols(result) -> list:
    """The graph inputs' named symbols (not those minted for a dim nothing expresses), in the
    order the inputs name them."""
    init = {t.name for t in result.model.graph.initializer}
    out: list = []
    for i in result.model.graph.input:
        f = result.facts.get(i.name)
        if i.name in init or f is None or f.shape is None:
            continue
        for d in f.shape:
            for s in sorted(free_symbols(d)):
                if s not in result.minted and s not in out:
                    out.append(s)
    return out


def _example(reqs: list, tests: dict, names: list, budget: _Budget) -> Optional[dict]:
    """Sizes (each symbol at least 1) at which every requirement holds, or None if none is found:
    every symbol at one size, then one requirement at a time repaired by moving one of its
    symbols (to a size of SIZES or a root of a linear equality), keeping those that held."""
    def score(b):
        return sum(1 for r in reqs if budget.check(r, tests[r], b))

    best, best_score = None, -1
    hints = tuple(sorted({v for r in reqs for v in _constants(r)} - set(FIRST_TRIED)))
    for v in FIRST_TRIED + hints + SIZES[1:]:  # (1 last: a broadcast holds there whatever the other side is)
        b = {s: v for s in names}
        got = score(b)
        if got == len(reqs):
            return b
        if got > best_score:
            best, best_score = b, got
    for _ in range(4):
        for r in reqs:
            if budget.check(r, tests[r], best):
                continue
            for s in sorted(r.symbols):
                low = {**best, **{t: 1 for t in r.symbols if t != s}}  # (its other dims at 1: a product baked in)
                for trial in [{**best, s: v} for v in _roots(r, s, best) + SIZES] + \
                        [{**low, s: v} for v in _roots(r, s, low)]:
                    if budget.check(r, tests[r], trial):
                        got = score(trial)
                        if got >= best_score:
                            best, best_score = trial, got
                            break
                if best_score == len(reqs):
                    return best
                if budget.check(r, tests[r], best):
                    break
    if best_score == len(reqs):
        return best
    ones = {s: 1 for s in names}
    return ones if score(ones) == len(reqs) else None


def _constants(r: Requirement) -> set:
    """Sizes a requirement names (a divisor of 777, a table of 300 rows) and their doubles: an
    example may need a dim at one of them."""
    out: set = set()
    for d in r.dims:
        if type(d) is int:
            out.add(d)
        elif isinstance(d, Expr):
            out |= {c for mono, c in d.terms if type(c) is int and not mono}
    return {v for c in out if c > 1 for v in (c, 2 * c) if v <= SIZES[-1]}


def _own_example(r: Requirement, test, budget: _Budget) -> Optional[dict]:
    return _example([r], {r: test}, sorted(r.symbols), budget)


def _linear(r: Requirement, s: str, broadcast: bool = False):
    """(c0, c1) with ``dims[0] - dims[1] == c1*s + c0`` where that is the requirement's
    difference as a polynomial of degree at most 1 in s (s in no other term: not under a
    division, a min...), the other symbols at least 1; else None. Of an equality (and, with
    ``broadcast``, of a broadcast of two dims)."""
    if r.kind != "equal" and not (broadcast and r.kind == "broadcast" and len(r.dims) == 2):
        return None
    others = {t: sym(t, 1) for t in r.symbols if t != s}
    try:
        diff = substitute(sub(r.dims[0], r.dims[1]), others)
    except _ERRORS:
        return None
    if not isinstance(diff, Expr):
        return None
    for mono, _ in diff.terms:
        for atom, e in mono:
            if isinstance(atom, Sym) and atom.name == s:
                if e > 1:
                    return None
            elif s in free_symbols(atom_dim(atom)):
                return None
    try:
        c0 = substitute(diff, {s: 0})
        c1 = sub(substitute(diff, {s: 1}), c0)
    except _ERRORS:
        return None
    return c0, c1


def _roots(r: Requirement, s: str, binding: dict) -> tuple:
    """The root in s of an equality (or a broadcast of two dims: where they are equal) linear in
    s, at binding, if it is a size (>= 1)."""
    lin = _linear(r, s, r.kind == "broadcast")
    if lin is None:
        return ()
    try:
        c0, c1 = (evaluate(c, binding) for c in lin)
    except _ERRORS:
        return ()
    if not (isinstance(c0, int) and isinstance(c1, int)) or c1 == 0 or c0 % c1:
        return ()
    root = -c0 // c1
    return (root,) if root >= 1 else ()


def _solutions(r: Requirement, test, s: str, base: dict, budget: _Budget, sizes: tuple = SIZES) -> tuple:
    extra = tuple(v for v in _roots(r, s, base) if v not in SIZES) if sizes is SIZES else ()
    return tuple(v for v in extra + sizes if budget.check(r, test, {**base, s: v}))


def _shape_of(sol: tuple, sizes: tuple = SIZES):
    """(kind, value, lo, hi) for the sizes ``sol`` of one symbol among those tried: "any",
    "point", "range" (lo..hi), "mod" ((k, residue) within lo..hi), or None (no such form)."""
    tried = sorted(set(sizes) | set(sol))
    if not sol:
        return ("none", None, None, None)
    if len(sol) == len(tried):
        return ("any", None, None, None)
    sol = sorted(sol)
    lo, hi = sol[0], sol[-1]
    seen = set(tried)
    if len(sol) == 1:
        return ("point", lo, lo, lo)
    if sol == [v for v in tried if lo <= v <= hi]:  # (a bound only where the size past it was tried)
        return ("range", None, lo, hi if hi + 1 in seen else None)
    k = 0
    for a, b in zip(sol, sol[1:]):
        k = math.gcd(k, b - a)
    progression = k > 1 and sol == [v for v in tried if lo <= v <= hi and v % k == lo % k]
    if len(sol) <= MAX_SET and hi + 1 in seen and (len(sol) == 2 or not progression):
        return ("set", tuple(sol), lo, hi)
    if progression:
        first = lo % k or k
        # (a bound only where the next size of that residue was tried: 208 + 52 = 260 may run)
        return ("mod", (k, lo % k), lo if lo > first else None, hi if hi + k in seen else None)
    return None


def _read(r: Requirement, test, base: dict, budget: _Budget) -> Optional[list]:
    """The clauses that say r, one symbol at a time (others at ``base``), or None when r is
    not said so (it stays open). A symbol's form must stay the same where another symbol takes
    other sizes at which r holds; else r relates them (an equality, or open)."""
    names = sorted(r.symbols)
    related = _relation(r)
    if related is not None:  # (a dim that must be a sum of others: a mask of past + seq)
        t, e = related
        return [Clause("relation", t, e, r, failing={**{n: base[n] for n in names}, t: base[t] + 1},
                       or_one=r.kind == "broadcast")]
    finite = _finite(r)
    if finite is not None:  # (a size baked over several dims: batch*seq == 16)
        s0 = names[0]
        bad = {**{t: base[t] for t in names}, s0: base[s0] + 1}
        return [Clause("finite", s0, finite, r, failing=bad, proven=True)]
    sols = {s: _solutions(r, test, s, base, budget) for s in names}
    clauses: list = []
    for s in names:
        form = _shape_of(sols[s])
        if form is not None and form[0] not in ("any", "none"):
            sols[s], tried = _fill(r, test, s, base, sols[s], form, budget)
            form = _shape_of(sols[s], tried)
        if form is None:
            return None
        kind, value, lo, hi = form
        # (on fewer sizes: the form each reading takes there must be the same)
        near = _shape_of(tuple(v for v in sols[s] if v in STABLE_SIZES), STABLE_SIZES)
        # (a single size must stay where the others take any size: one that moves with them is
        # an equality between symbols, not a size)
        proven = kind == "point" and _proven_point(r, s, value)
        stable = proven or _stable(r, test, s, base, sols, near, budget)
        if not stable:
            eq = _equality(r, test, s, base, budget)
            if eq is None:
                return None
            if eq is not True:
                clauses.append(eq)
            continue
        if kind == "any":
            continue

        def failing(v):
            return {**{t: base[t] for t in names}, s: v}

        if kind == "point":
            clauses.append(Clause("point", s, value, r, failing=failing(value + 1), proven=proven))
            continue
        if kind == "set":
            wrong = next(v for v in range(1, value[-1] + 2) if v not in value)
            clauses.append(Clause("set", s, value, r, failing=failing(wrong), proven=_proven_set(r, s, value)))
            continue
        if kind == "mod":
            k, res = value
            start = lo or 1
            wrong = next(v for v in range(start, start + k) if v % k != res)
            clauses.append(Clause("mod", s, (k, res), r, failing=failing(wrong)))
        if lo is not None and lo > 1:
            clauses.append(Clause("min", s, lo, r, failing=failing(lo - 1)))
        if hi is not None:
            clauses.append(Clause("max", s, hi, r, failing=failing(hi + 1)))
    return clauses


MAX_FILL = 4096  # sizes tried between two of SIZES, below a lower bound
MAX_FILL_STEPS = 2048  # steps upward from the largest size that holds, to find where it stops
MAX_SET = 4  # a few single sizes (a broadcast against a baked size: 1 or 8) are a set; more stay open


def _fill(r: Requirement, test, s: str, base: dict, sol: tuple, form: tuple, budget: _Budget) -> tuple:
    """(sol, the sizes tried) with the sizes between those of SIZES read beside the bounds of
    ``form`` (a bound found among SIZES, 448, may lie between two of them: 385..448), stepping
    by the modulus of a "mod" form."""
    kind, value, lo, hi = form
    step = value[0] if kind == "mod" else 1
    sol, tried = set(sol), set(SIZES) | set(sol)
    ordered = sorted(tried)
    first, last = min(sol), max(sol)
    below = max((v for v in ordered if v < first), default=0)
    v = first - step
    while v > below and v >= 1 and first - v <= MAX_FILL:
        tried.add(v)
        if not budget.check(r, test, {**base, s: v}):
            break
        sol.add(v)
        v -= step
    if last + 1 not in tried and last + 1 <= SIZES[-1]:  # (the size just past the largest: a set ends there)
        tried.add(last + 1)
        if budget.check(r, test, {**base, s: last + 1}):
            sol.add(last + 1)
            last += 1
    v, steps = last + step, 0  # (upward: through the sizes known to hold, to the first that fails)
    while v <= SIZES[-1] and steps < MAX_FILL_STEPS:
        if v not in sol:
            if v in tried:
                break  # (tried before, and it fails)
            tried.add(v)
            if not budget.check(r, test, {**base, s: v}):
                break
            sol.add(v)
        v += step
        steps += 1
    return tuple(sorted(sol)), tuple(sorted(tried))


def _stable(r: Requirement, test, s: str, base: dict, sols: dict, near, budget: _Budget) -> bool:
    """Whether s takes the same form (``near``, on STABLE_SIZES) where the other symbols take
    other sizes: each alone at OTHERS and at sizes of its own solutions, and all together at
    each of OTHERS (a three-way broadcast moves only so). A variation at which no size of s
    holds says nothing (the others are outside their own envelope there)."""
    others = [t for t in sorted(r.symbols) if t != s]
    variations = [{t: w} for t in others for w in sorted((set(OTHERS) | set(_picks(sols[t], base[t]))) - {base[t]})]
    if len(others) > 1:
        variations += [{t: w for t in others} for w in OTHERS]
    for v in variations:
        form = _shape_of(_solutions(r, test, s, {**base, **v}, budget, STABLE_SIZES), STABLE_SIZES)
        if form[0] != "none" and form != near:
            return False
    return True


def _picks(sol: tuple, current: int) -> list:
    """A few sizes of ``sol`` other than ``current``: its smallest, middle and largest."""
    if not sol:
        return []
    return sorted({sol[0], sol[len(sol) // 2], sol[-1]} - {current})


def _equality(r: Requirement, test, s: str, base: dict, budget: _Budget):
    """``s == t`` (or one is 1, for a broadcast) where r has one other symbol t and holds
    exactly there at each size of t tried; True where that is so and t < s (the clause is made
    from t's side); None where it is not so."""
    others = sorted(r.symbols - {s})
    if len(others) != 1:
        return None
    t = others[0]
    or_one = False
    for w in (2, 3, 7, 16, 64):
        sol = set(_solutions(r, test, s, {**base, t: w}, budget))
        if sol == {w, 1} and r.kind == "broadcast":
            or_one = True
        elif sol != {w}:
            return None
    if s > t:
        return True  # (said once, from the other side)
    return Clause("equal", s, t, r, failing={s: 2, t: 3}, or_one=or_one)


def _proven_point(r: Requirement, s: str, value: int) -> bool:
    """r, an equality of degree 1 in s whose coefficient of s is never 0 (every other symbol
    at least 1), holds at ``s == value`` whatever the other symbols are: checked on the algebra."""
    lin = _linear(r, s)
    if lin is None:
        return False
    c0, c1 = lin
    try:
        if not (provably_positive(c1) or provably_positive(mul(c1, -1))):
            return False
        return add(c0, mul(c1, value)) == 0
    except _ERRORS:
        return False


def _relation(r: Requirement):
    """(t, E) where r says the symbol t alone equals (or broadcasts with) E, an expression of
    other symbols that is not a single symbol nor a size: ``s53 == past + seq``."""
    if r.kind not in ("equal", "broadcast") or len(r.dims) != 2:
        return None
    for x, e in (r.dims, r.dims[::-1]):
        if not isinstance(x, Expr) or not isinstance(e, Expr) or len(x.terms) != 1 or x.terms[0][1] != 1:
            continue
        mono = x.terms[0][0]
        if len(mono) != 1 or mono[0][1] != 1 or not isinstance(mono[0][0], Sym):
            continue
        t = mono[0][0].name
        free = free_symbols(e)
        if t in free or len(free) < 2 and len(e.terms) == 1 and e.terms[0][1] == 1:
            continue  # (t on both sides, or t against another single symbol: an equality)
        if any(not isinstance(a, Sym) for a in atoms(e)):
            continue
        return t, e
    return None


def _finite(r: Requirement) -> Optional[str]:
    """``Q == c`` where r is an equality whose difference, over symbols at least 1, is a
    polynomial in two or more symbols, each in some term, every term but the constant of one
    sign and the constant of the other: each symbol is then at most c over its term's
    coefficient, and finitely many sizes meet it -- a size baked in over several dims (a traced
    [2, 8, 4, 8] for [batch, seq, 32]: ``batch*seq == 16``). Its text, or None."""
    if r.kind != "equal" or len(r.symbols) < 2:
        return None
    try:
        diff = sub(r.dims[0], r.dims[1])
    except _ERRORS:
        return None
    if not isinstance(diff, Expr) or any(not isinstance(a, Sym) for a in atoms(diff)):
        return None
    const = 0
    terms = []
    for mono, coef in diff.terms:
        if not mono:
            const = coef
        else:
            terms.append((mono, coef))
    if not terms or const == 0 or any((c > 0) == (const > 0) for _, c in terms):
        return None
    if const > 0:  # (written with positive terms on the left)
        const, terms = -const, [(m, -c) for m, c in terms]
    if not all(isinstance(c, int) for _, c in terms):
        return None
    g = 0
    for _, c in terms:
        g = math.gcd(g, c)
    g = math.gcd(g, -const) or 1
    left = 0
    for mono, c in terms:
        term = c // g
        for atom, e in mono:
            for _ in range(e):
                term = mul(term, atom_dim(atom))
        left = add(left, term)
    used = set()
    for mono, _ in terms:
        used |= {a.name for a, _ in mono}
    if used != set(r.symbols):
        return None
    return f"{to_str(left)} == {-const // g}"


def _never_equal(r: Requirement) -> bool:
    """r is an equality whose sides differ at every size (each symbol at least 1): proven."""
    if r.kind != "equal":
        return False
    try:
        diff = sub(r.dims[0], r.dims[1])
        return diff != 0 and (isinstance(diff, int) or provably_positive(diff) or provably_positive(mul(diff, -1)))
    except _ERRORS:
        return False


def _proven_set(r: Requirement, s: str, values: tuple) -> bool:
    """r broadcasts the symbol s alone with a constant k > 1: it holds at s = 1 and s = k only."""
    if r.kind != "broadcast" or len(r.dims) != 2 or len(values) != 2:
        return False
    a, b = r.dims
    for x, k in ((a, b), (b, a)):
        if type(k) is int and k > 1 and isinstance(x, Expr) and len(x.terms) == 1 and x.terms[0][1] == 1:
            mono = x.terms[0][0]
            if len(mono) == 1 and isinstance(mono[0][0], Sym) and mono[0][0].name == s and mono[0][1] == 1:
                return values == (1, k)
    return False


def _merge(clauses: list) -> list:
    """One clause of each kind per symbol (the tightest; a point over the others), in the
    order first imposed; a symbol whose clauses leave no size gets a "none" clause."""
    by_symbol: dict = {}
    for c in clauses:
        by_symbol.setdefault(c.symbol, []).append(c)
    out: list = []
    for s, cs in by_symbol.items():
        nones = [c for c in cs if c.kind == "none"]
        if nones:
            out.append(nones[0])
            continue
        if any(c.kind in ("finite", "relation") for c in cs):  # (said as they are, each once)
            for c in cs:
                if c.kind in ("finite", "relation") and not any(
                        (o.kind, o.symbol, str(o.value)) == (c.kind, c.symbol, str(c.value)) for o in out):
                    out.append(c)
            cs = [c for c in cs if c.kind not in ("finite", "relation")]
            if not cs:
                continue
        sets = [c for c in cs if c.kind == "set"]
        if sets:  # (the sizes every set holds and every other clause admits: a set, one size or none)
            others = [c for c in cs if c.kind not in ("set", "equal")]
            values = tuple(v for v in sets[0].value if all(v in c.value for c in sets) and all(
                c.admits({s: v}) for c in others))
            first = sets[0]
            proven = all(c.proven for c in sets) and not others
            if not values:
                out.append(Clause("none", s, "contradiction", first.requirement, failing=dict(first.failing),
                                  proven=proven))
            elif len(values) == 1:
                out.append(Clause("point", s, values[0], first.requirement,
                                  failing={**first.failing, s: values[0] + 1}, proven=proven))
            else:
                out.append(Clause("set", s, values, first.requirement, failing=dict(first.failing), proven=proven))
            continue
        points = [c for c in cs if c.kind == "point"]
        lows = [c for c in cs if c.kind == "min"]
        highs = [c for c in cs if c.kind == "max"]
        mods = [c for c in cs if c.kind == "mod"]
        lo = max(lows, key=lambda c: c.value, default=None)
        hi = min(highs, key=lambda c: c.value, default=None)
        kept = []
        if points:
            p = points[0]
            if any(q.value != p.value for q in points) or any(not c.admits({s: p.value}) for c in lows + highs + mods):
                other = next((q for q in points if q.value != p.value), None)
                out.append(Clause("none", s, "contradiction", p.requirement, failing=dict(p.failing),
                                  proven=other is not None and p.proven and other.proven))
                continue
            kept.append(p)
        else:
            kept += [c for c in (lo, hi) if c is not None]
            modulus, residue, first = 1, 0, None
            for c in mods:
                k, res = c.value
                if math.gcd(modulus, k) != 1 and residue % math.gcd(modulus, k) != res % math.gcd(modulus, k):
                    modulus = None
                    first = c
                    break
                residue, modulus = _crt(residue, modulus, res, k)
                first = first or c
            if modulus is None:
                out.append(Clause("none", s, "contradiction", first.requirement, failing=dict(first.failing)))
                continue
            if mods:
                strongest = max(mods, key=lambda c: c.value[0])
                kept.append(Clause("mod", s, (modulus, residue), strongest.requirement, failing=dict(strongest.failing)))
            if lo is not None and hi is not None and lo.value > hi.value:
                out.append(Clause("none", s, "contradiction", hi.requirement, failing=dict(hi.failing)))
                continue
        out.extend(kept)
    equal = [c for c in clauses if c.kind == "equal"]
    return out + [c for k, c in enumerate(equal) if all((c.symbol, c.value) != (e.symbol, e.value) for e in equal[:k])]


def _crt(r1: int, m1: int, r2: int, m2: int) -> tuple:
    """(residue, modulus) of the sizes that are r1 mod m1 and r2 mod m2 (compatible)."""
    g = math.gcd(m1, m2)
    lcm = m1 // g * m2
    for v in range(r1, lcm + r1, m1):
        if v % m2 == r2 % m2:
            return v % lcm, lcm
    return r1, m1  # (not reached: compatibility was checked)


def _verify(contract: Contract, reqs: list, tests: dict, wanted: list, budget: _Budget) -> dict:
    """{index: a failing binding} of the requirements ``wanted`` (a flag per requirement) that
    fail somewhere the clauses hold, among sizes sampled inside the envelope."""
    if contract.runs_nowhere or contract.example is None:
        return {}
    names = list(contract.symbols)
    rng = random.Random(len(names))
    samples = [dict(contract.example)]
    admitted = {s: [v for v in SIZES if contract.admits({s: v})] or [1] for s in names}
    for _ in range(ENVELOPE_SAMPLES * 4):
        if len(samples) > ENVELOPE_SAMPLES:
            break
        b = {s: rng.choice(admitted[s]) for s in names}
        for c in contract.clauses:  # (an equality: the same size on both sides)
            if c.kind == "equal":
                b[c.symbol] = b[c.value]
        for c in contract.clauses:  # (a relation: its dim made of the others)
            if c.kind == "relation" and free_symbols(c.value) <= b.keys():
                try:
                    b[c.symbol] = max(1, int(evaluate(c.value, b)))
                except _ERRORS:
                    pass
        if contract.admits(b):
            samples.append(b)
    failed: dict = {}
    for k, (r, want) in enumerate(zip(reqs, wanted)):
        if not want:
            continue
        for b in samples:
            if not budget.check(r, tests[r], b):
                failed[k] = {t: b[t] for t in sorted(r.symbols)}
                break
    return failed
