"""check's findings from the input contract (infer/contract.py), once per model and clause.

Severity comes from the contract, not from a probe:
  error   ``baked-in-size``: an input dim declared dynamic that an equality of the graph pins to
          one size, proven on the algebra (a Reshape that hardcodes the sequence length traced
          with); ``no-size``: a node no size runs (none of the sizes tried, from 1 to 65536),
          or single sizes that contradict one another.
  warning ``input-bound`` (an upper bound: ``seq <= 64`` from a position table),
          ``input-multiple`` (``height % 32 == 0``), ``input-equality`` (two inputs' dims that
          must be equal), and a single size found by probing only (``baked-in-size``, said as of
          the sizes tried). Bounds and divisibilities stay warnings even where together they
          leave few sizes.
  none    a lower bound (``height >= 29``, ``samples >= 400``): every model with windows,
          patches or a top-k has one, and no deployment sends inputs that small; the contract
          line and the JSON say it.
Each message names the node that imposes the clause and a failing size, evaluated (at the sizes
of the other dims the contract was read at; a clause of one dim holds whatever they are, as
checked at several).
"""

from __future__ import annotations

from typing import Optional

from ..infer.contract import Clause, Contract, name_str, spoken
from ..symbolic import EvaluationError, ParseError, evaluate, parse, to_str
from ..symbolic.search import binding_str
from .findings import ERROR, WARNING, CheckReport

CONTRACT_CODES = frozenset({"baked-in-size", "no-size", "input-bound", "input-multiple", "input-equality"})
_CODES = {"max": "input-bound", "mod": "input-multiple", "equal": "input-equality"}


class Scope:
    """Where check looks for failing sizes: inside the contract's envelope and the sizes the
    user runs at (``--dims``: {symbol: DimSizes}). A failure outside them is a clause's (said
    once) or not the user's concern."""

    def __init__(self, contract: Contract, dims: Optional[dict] = None):
        self.contract = contract
        self.dims = dict(dims or {})

    def admits(self, binding: dict) -> bool:
        """Whether the user's sizes admit binding (symbols they leave out: any size)."""
        return all(s.admits(binding[n]) for n, s in self.dims.items() if n in binding)

    def within(self, test):
        inner = self.contract.within(test)
        if not self.dims:
            return inner

        def held(binding):
            return not self.admits(binding) or inner(binding)

        return held

    def extra(self) -> Optional[dict]:
        return {n: s.samples() for n, s in self.dims.items()} if self.dims else None

    def inside(self, binding: dict) -> bool:
        """Whether the user's sizes name every symbol of binding (a failure there is one of theirs)."""
        return bool(self.dims) and all(n in self.dims for n in binding)


def contract_findings(model, contract: Contract, report: CheckReport, dims: Optional[dict] = None) -> None:
    """The contract's findings (see the module); with ``dims`` (the sizes the user runs at:
    {symbol: DimSizes}) a clause on a symbol they name is an error where their sizes include one
    it excludes, and no finding where they do not."""
    declared = _declared_places(model)
    for c in contract.clauses:
        r = c.requirement
        if dims and c.symbol in dims and c.kind != "none":
            _against_dims(c, dims, report)
            continue
        why = _why(c)
        if c.kind in ("point", "set", "finite"):
            names = sorted(r.symbols) if c.kind == "finite" else [c.symbol]
            places = [f"input {declared[n][0]!r}, dim {declared[n][1]}" for n in names if n in declared]
            where = f" ({'; '.join(places)})" if places else ""
            what = " and ".join(name_str(n) for n in names) + (" are" if len(names) > 1 else " is")
            s = name_str(c.symbol)
            sizes = {"point": f"at {s}={c.value}", "finite": f"where {c.value}",
                     "set": "at " + " or ".join(f"{s}={v}" for v in c.value) if c.kind == "set" else ""}[c.kind]
            if c.proven:
                report.add(ERROR, "baked-in-size", f"{what} declared dynamic{where}, but the model runs only {sizes}: "
                           f"this node hardcodes {'them' if len(names) > 1 else 'it'}; {why}", r.node, r.op)
            else:
                report.add(WARNING, "baked-in-size", f"{what} declared dynamic{where}, but of the sizes tried "
                           f"(1 to 65536) the model runs only {sizes}: this node fixes it; {why}", r.node, r.op)
        elif c.kind == "none" and c.value is None:
            if c.proven:  # (an equality whose sides differ at every non-empty size)
                report.add(ERROR, "no-size", f"this node runs at no size where no input is empty: {why}", r.node, r.op)
            else:
                report.add(WARNING, "no-size", "this node runs at none of the sizes tried (every input dim from 1 to "
                           f"65536 and the sizes it names): {why}", r.node, r.op)
        elif c.kind == "none":
            report.add(ERROR if c.proven else WARNING, "no-size", f"the conditions on {c.symbol} leave no size: "
                       f"{contract.text()}", r.node, r.op)
        elif c.kind == "relation":
            if not _expected(c):  # (a mask declared [batch, past+seq] says so itself)
                report.add(WARNING, "input-equality", f"the model runs only when {c.text()}: {why}", r.node, r.op)
        elif c.kind in _CODES:
            report.add(WARNING, _CODES[c.kind], f"the model runs only when {c.text()}: {why}", r.node, r.op)


def _expected(c: Clause) -> bool:
    """Whether the dim's declared name reads as the expression the relation gives it (a dim
    named ``past+seq`` that must be past + seq)."""
    try:
        return to_str(parse(c.symbol)) == to_str(c.value)
    except (ParseError, ArithmeticError, ValueError):
        return False


def _against_dims(c: Clause, dims: dict, report: CheckReport) -> None:
    """A clause on a symbol the user gives sizes: an error naming a size of theirs it excludes."""
    r = c.requirement
    mine = dims[c.symbol]
    other = dims.get(c.value) if c.kind == "equal" else None
    if c.kind == "equal":
        if other is None:  # (the other side's sizes are free: the clause stands as it is)
            report.add(WARNING, "input-equality", f"the model runs only when {c.text()}: {_why(c)}", r.node, r.op)
            return
        pairs = ((v, w) for v in mine.samples() for w in other.samples())
        bad = next(({c.symbol: v, c.value: w} for v, w in pairs if not c.admits({c.symbol: v, c.value: w})), None)
    else:
        bad = next(({c.symbol: v} for v in _sizes_of(mine) if not c.admits({c.symbol: v})), None)
    if bad is None:
        return  # (every size the user runs at is one the model runs at)
    given = ", ".join(f"{n}={dims[n].text()}" for n in bad)
    code = "baked-in-size" if c.kind in ("point", "set", "finite") else _CODES.get(c.kind, "input-bound")
    failing = {**c.failing, **bad}
    report.add(ERROR, code, f"--dims {given} includes {binding_str(bad)}, where the model fails: it runs only when "
               f"{c.text()}; {_why(Clause(c.kind, c.symbol, c.value, r, failing=failing))}", r.node, r.op)


MAX_SIZES_READ = 4096


def _sizes_of(sizes) -> list:
    """The sizes of a --dims entry a clause is judged at: a set's, a range's samples and (for a
    short range) every size of it."""
    got = list(sizes.samples())
    if sizes.values is None and sizes.hi - sizes.lo < MAX_SIZES_READ:
        got += range(sizes.lo, sizes.hi + 1)
    return got


def _why(c: Clause) -> str:
    """What fails at the clause's failing sizes: the requirement in a user's words, or its
    dims' values there."""
    r = c.requirement
    if not c.failing:
        return "its condition never holds"
    shown = [c.symbol] + ([c.value] if c.kind == "equal" else []) + (sorted(r.symbols) if c.kind in ("finite", "relation") else [])
    at = binding_str({s: v for s, v in c.failing.items() if s in shown} if c.kind != "none" else c.failing)
    if r.kind == "broadcast":
        said = r.said()
        return f"at {at} broadcasting fails" + (f" (it holds only when {said})" if said else "")
    if r.kind in ("equal", "le"):
        return f"at {at} it fails: {spoken_condition(r.message, *r.dims, c.failing)}"
    return f"at {at} it fails: {r.message}" if r.said() is not None else f"at {at} its condition fails"


INTERNAL = ("iszero(", "bcast(")  # the algebra's own terms, which no message shows


def spoken_condition(message: str, a, b, example: dict) -> str:
    """A condition (a message "valid only when A == B (what they are)") as a user reads it:
    A and B as the dims ``a`` and ``b`` are spoken, or where they hold an internal term or run
    long, their values at the failing sizes ``example``."""
    what = message.split(" (", 1)[1].rstrip(")") if " (" in message else ""
    if any(t in what for t in INTERNAL) or len(what) > 160:
        what = ""
    if spoken(a) is not None and spoken(b) is not None:
        if not any(t in message for t in INTERNAL):
            return message
        return f"valid only when {spoken(a)} == {spoken(b)}" + (f" ({what})" if what else "")
    what = what or "the two sides"
    try:
        return f"valid only when {what} agree, which at those sizes are {evaluate(a, example)} and {evaluate(b, example)}"
    except (EvaluationError, ArithmeticError):
        return f"valid only when {what} agree, which they do not at those sizes"


def _declared_places(model) -> dict:
    """Symbol -> (input name, axis) where a graph input first declares it."""
    init = {t.name for t in model.graph.initializer}
    out: dict = {}
    for vi in model.graph.input:
        if vi.name in init or not vi.type.HasField("tensor_type"):
            continue
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.dim_param and d.dim_param not in out:
                out[d.dim_param] = (vi.name, axis)
    return out

