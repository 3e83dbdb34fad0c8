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

from ..infer.contract import Clause, Contract, spoken
from ..symbolic import EvaluationError, evaluate
from ..symbolic.search import binding_str
from .findings import ERROR, WARNING, CheckReport

CONTRACT_CODES = frozenset({"baked-in-size", "no-size", "input-bound", "input-multiple", "input-equality"})
_CODES = {"max": "input-bound", "mod": "input-multiple", "equal": "input-equality"}


def contract_findings(model, contract: Contract, report: CheckReport) -> None:
    declared = _declared_places(model)
    for c in contract.clauses:
        r = c.requirement
        why = _why(c)
        if c.kind == "point":
            place = declared.get(c.symbol)
            where = f" (input {place[0]!r}, dim {place[1]})" if place else ""
            if c.proven:
                report.add(ERROR, "baked-in-size", f"{c.symbol} is declared dynamic{where}, but the model runs only at "
                           f"{c.symbol}={c.value}: this node hardcodes it; {why}", r.node, r.op)
            else:
                report.add(WARNING, "baked-in-size", f"{c.symbol} is declared dynamic{where}, but of the sizes tried "
                           f"(1 to 65536) the model runs only at {c.symbol}={c.value}: this node fixes it; {why}",
                           r.node, r.op)
        elif c.kind == "none" and c.value is None:
            report.add(ERROR, "no-size", f"this node runs at none of the sizes tried (every input dim from 1 to 65536): "
                       f"{why}", r.node, r.op)
        elif c.kind == "none":
            report.add(ERROR if c.proven else WARNING, "no-size", f"the conditions on {c.symbol} leave no size: "
                       f"{contract.text()}", r.node, r.op)
        elif c.kind in _CODES:
            report.add(WARNING, _CODES[c.kind], f"the model runs only when {c.text()}: {why}", r.node, r.op)


def _why(c: Clause) -> str:
    """What fails at the clause's failing sizes: the requirement in a user's words, or its
    dims' values there."""
    r = c.requirement
    if not c.failing:
        return "its condition never holds"
    shown = [c.symbol] + ([c.value] if c.kind == "equal" else [])
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

