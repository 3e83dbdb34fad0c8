"""Lower bounds on the input dims that every run of a model that succeeds meets.

An optimised model must compute what the original does wherever the original runs; where the
original fails, there is nothing to compare. A Reshape fails where its element count would
change, and where its ``-1`` sits beside a 0 (the -1 cannot be inferred: the spec gives it no
value, onnxruntime and onnx.reference refuse). So a binding of the input dims that makes some
Reshape fail, whatever the other dims are, is no run at all -- and a rewrite need not be right
there. Swin's ``[batch, 16, -1]`` makes ``batch >= 1`` a fact of every run that succeeds; with it,
its window Reshapes make ``height >= 4``; then a Reshape entry ``(height+4)//8`` is never the 0 that
would copy another dim, and the optimizer may give the Reshape a constant shape or merge it with
the one before. The passes read the facts through :class:`BoundedFacts`, each symbol at least
its bound.

:func:`run_lows` finds such bounds: for each symbol of the graph inputs that a zero case reads
(an ``iszero`` atom over it, see symbolic.zero_cases), each value from 0 up is tried in turn, the
other symbols at least their bounds found so far, and it is refuted where a constraint of a
Reshape that every run executes (one whose output a graph output needs, in the main graph) is
then false for every binding of the others. The first value not refuted is the bound. Only
facts inference is sure of are read: a tensor whose dims a runtime may give otherwise
(``Fact.unsure``) or that inference does not know makes no constraint.

The search is bounded: at most ``MAX_LOW`` values per symbol, ``MAX_CONSTRAINTS`` Reshapes and
``MAX_SUBSTITUTIONS`` evaluations in all; past them, the bounds found so far stand (fewer bounds
are only fewer rewrites).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..symbolic import (BroadcastError, EvaluationError, Expr, ExpressionTooLarge, Sym, as_single_atom, atoms,
                        free_symbols, mul, neg, provably_positive, sub, substitute, sym, zero_cases, zero_factors, zero_range)
from .adapter import Constant, import_model, outer_variables

MAX_LOW = 64  # the largest bound looked for: values 0 .. MAX_LOW-1 of a symbol may be refuted
MAX_CONSTRAINTS = 4096
MAX_SUBSTITUTIONS = 20000
MAX_ROUNDS = 8  # passes over the symbols (a bound found may let another be refuted)
MAX_CHAIN = 8  # nodes walked back from a Reshape's shape to the Concat it may come from

_ERRORS = (BroadcastError, EvaluationError, ExpressionTooLarge, ZeroDivisionError, OverflowError)


@dataclass(frozen=True)
class Constraint:
    """``expr == 0`` (kind "count": the element count does not change) or ``expr != 0`` (kind
    "beside-1": the dims beside a -1) in every run of ``node`` that succeeds."""

    kind: str
    expr: object
    node: str

    def refuted(self, value) -> bool:
        """This constraint is false wherever the symbols substituted take their values."""
        if self.kind == "beside-1":
            return value == 0
        return value != 0 and (isinstance(value, int) or provably_positive(value) or provably_positive(neg(value)))

    def why(self) -> str:
        if self.kind == "beside-1":
            return f"Reshape {self.node!r} would infer its -1 beside a 0"
        return f"Reshape {self.node!r} would change the element count"


def _product(dims) -> object:
    total = 1
    for d in dims:
        total = mul(total, d)
    return total


def _wanted(result) -> dict:
    """Symbol name -> the largest value of it at which some zero case of the facts holds (where a
    dim takes another value than its plain form): the values worth refuting."""
    seen: set = set()
    for f in result.facts.values():
        if f is None or f.shape is None:
            continue
        for d in f.shape:
            if type(d) is not int:
                seen.add(d)
    wanted: dict = {}
    for d in seen:
        for m in zero_cases(d):
            factors = zero_factors(m)
            if factors is None:
                single = as_single_atom(m)
                factors = () if single is None else (single,)
            for atom in factors:
                found = zero_range(atom)
                if found is not None and found[1] < MAX_LOW:
                    wanted[found[0]] = max(wanted.get(found[0], 0), found[1])
    return wanted


# Ops whose reading a Reshape's output alone leaves it out: a Reshape and the reshape-like op
# after it may be merged into one (simplifiers do it), which then runs where the Reshape alone
# would fail.
_SKIPPING_READERS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"})
# Ops that read only their input's shape: what only they read need not run. onnxruntime's graph
# optimizations (from its basic level) fold a Shape of a tensor whose shape they know, and the
# nodes before it then never run.
_SHAPE_READERS = frozenset({"Shape", "Size"})


def _live_reshapes(graph, overridable: set) -> list:
    """(name, data, shape, output, chain) for each Reshape of the main graph (an onnx-graphsurgeon
    graph; opset >= 5: the shape an input) whose output some graph output needs -- its data, not
    only its shape (_SHAPE_READERS): every run that succeeds executes them. Only explicit inputs
    count as reads (a node read from a subgraph alone is left out, which only loses
    constraints), and a Reshape read by reshape-like ops alone is left out (_SKIPPING_READERS).

    ``chain``: the producers of its shape, back to a Concat (at most MAX_CHAIN), each as (op,
    domain, input names, output name, which inputs are constants to onnxruntime: initializers
    but those in ``overridable``, which a caller may override, and Constant outputs)."""
    outputs = {t.name for t in graph.outputs}
    seen: set = set()
    found = []
    stack = list(graph.outputs)
    while stack:
        for node in stack.pop().inputs:
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.op not in _SHAPE_READERS:
                stack.extend(node.inputs)
            if node.op == "Reshape" and (node.domain or "") in ("", "ai.onnx") and len(node.inputs) >= 2 and node.outputs:
                made = node.outputs[0]
                if made.name in outputs or any(r.op not in _SKIPPING_READERS or (r.domain or "") not in ("", "ai.onnx")
                                               for r in made.outputs):
                    found.append(node)
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    found.sort(key=lambda n: order.get(id(n), -1))
    out = []
    for n in found:
        chain, t = [], n.inputs[1]
        for _ in range(MAX_CHAIN):
            if len(t.inputs) != 1:
                break
            p = t.inputs[0]
            chain.append((p.op, p.domain or "", [x.name for x in p.inputs], t.name,
                          [isinstance(x, Constant) and x.name not in overridable
                           or bool(x.inputs) and x.inputs[0].op == "Constant" for x in p.inputs]))
            if p.op == "Concat" or not p.inputs:
                break
            t = p.inputs[0]
        out.append((n.name or n.outputs[0].name, n.inputs[0].name, n.inputs[1].name, n.outputs[0].name, chain))
    return out


def _fused_pieces(result, chain: list):
    """The inputs of the Concat the shape comes from, as (name, is an initializer), through
    nodes that leave its value as it is (Identity, a Cast to its own type, Add 0, a Slice of all
    of it...: onnxruntime removes them before its ReshapeFusion); None if it comes from none."""
    for op, domain, ins, out, consts in chain:
        if domain not in ("", "ai.onnx"):
            return None
        if op == "Concat":
            return list(zip(ins, consts))
        a, b = result.fact(out), result.fact(ins[0]) if ins else None
        if a is None or not a.same_value(b):
            return None
    return None


def _may_be_fused(result, data_shape: tuple, pieces: list) -> bool:
    """Whether onnxruntime may run this Reshape (its shape a Concat of ``pieces``: (name, is an
    initializer)) with another shape than the spec's. Its ReshapeFusion (basic level) makes a
    Concat whose every input is a constant or the input's own dim at that index, but one, a
    constant shape -- that one input becoming -1, which then runs where the entry would not.
    It sees between ``free_min`` (inputs neither a known int nor the input dim at its index, as
    inference knows them) and ``free_max`` (inputs not initializers) such inputs; with a -1
    among them it can make no other."""
    free_max = sum(1 for _, is_init in pieces if not is_init)
    free_min, at = 0, 0
    for name, _ in pieces:
        f = result.fact(name)
        elems = None if f is None or f.value is None or f.value.ndim != 1 else f.value.tolist()
        if elems is None:
            return free_max >= 1  # (its length unknown: where the others sit is too)
        if any(type(e) is int and e == -1 for e in elems):
            return False
        if not all(type(e) is int or at + k < len(data_shape) and e == data_shape[at + k] for k, e in enumerate(elems)):
            free_min += 1
        at += len(elems)
    return free_min <= 1 <= free_max


def _after_lenient_reshapes(graph, result) -> set:
    """The tensors computed from the output of an allowzero=1 Reshape whose shape may hold a 0
    beside its -1 (the shape's value unknown, or an entry not provably positive). The spec calls
    such a shape invalid; onnxruntime runs it, its -1 the quotient of the input's and the shape's
    dims that are not 0 -- so there, at sizes where the spec has no run, the dims that follow are
    onnxruntime's own, and a Reshape further on that fails in the spec may run (a dynamo export's
    view [batch, seq, -1, 8] at batch 0). No constraint is drawn from what they feed."""
    found: set = set()
    if not any(node.op == "Reshape" and node.attrs.get("allowzero", 0) for node in graph.nodes):
        return found  # (most models: one quick look)
    for node in graph.nodes:
        reads = [t.name for t in node.inputs]
        if any(hasattr(v, "nodes") for v in node.attrs.values()):
            reads += [t.name for t in outer_variables(node)]
        if any(r in found for r in reads):
            found.update(t.name for t in node.outputs)
        elif node.op == "Reshape" and (node.domain or "") in ("", "ai.onnx") and node.attrs.get("allowzero", 0) \
                and len(node.inputs) > 1:
            f = result.fact(node.inputs[1].name)
            entries = None if f is None or f.value is None else f.value.reshape(-1).tolist()
            if entries is None or any(type(e) is int and e == -1 for e in entries) and not all(
                    type(e) is int and e != 0 or isinstance(e, Expr) and provably_positive(e) for e in entries):
                found.update(t.name for t in node.outputs)
    return found


def _constraints(model, result, symbols: set, graph=None) -> list:
    """The constraints of the live Reshapes of the model that involve one of ``symbols``;
    ``graph``: the model imported into onnx-graphsurgeon, if there is one (else it is imported
    here)."""
    out: list = []
    if any(f.name == "Reshape" and f.domain in ("", "ai.onnx") for f in model.functions):
        return out  # a model-local function named Reshape: those nodes compute anything
    if graph is None:
        graph = import_model(model).graph
    overridable = {t.name for t in model.graph.initializer} & {i.name for i in model.graph.input}
    lenient = None
    for name, data_name, shape_name, made_name, chain in _live_reshapes(graph, overridable):
        if len(out) >= MAX_CONSTRAINTS:
            break
        data, shape, made = result.fact(data_name), result.fact(shape_name), result.fact(made_name)
        if any(f is None or f.unsure or f.shape is None for f in (data, shape, made)):
            continue
        if lenient is None:
            lenient = _after_lenient_reshapes(graph, result)
        if data_name in lenient or shape_name in lenient or made_name in lenient:
            continue  # (made_name: the Reshape is such a one itself -- where a 0 stands beside its -1,
            #          onnxruntime makes the -1 from the dims that are not 0, and the count holds)
        dims = tuple(data.shape) + tuple(made.shape)
        if any(result.is_unknown_dim(d) for d in dims):
            continue
        pieces = _fused_pieces(result, chain)
        if pieces is not None and _may_be_fused(result, data.shape, pieces):
            continue
        try:
            count = sub(_product(data.shape), _product(made.shape))
            if count != 0 and free_symbols(count) & symbols:
                out.append(Constraint("count", count, name))
            entries = None if shape.value is None else shape.value.reshape(-1).tolist()
            if entries is not None and len(entries) == len(made.shape):
                minus = [k for k, e in enumerate(entries) if type(e) is int and e == -1]
                if len(minus) == 1:
                    beside = _product(d for k, d in enumerate(made.shape) if k != minus[0])
                    if isinstance(beside, Expr) and free_symbols(beside) & symbols and not provably_positive(beside):
                        out.append(Constraint("beside-1", beside, name))
        except _ERRORS:
            continue
    return out


def run_lows(model, result, graph=None) -> dict:
    """{symbol name: (bound, why)}: each symbol of the graph inputs is at least ``bound`` in
    every run of the model that succeeds; ``why`` says which Reshape fails below it. Only
    symbols that some zero case of the inferred shapes reads are looked at. ``graph``: the
    model imported into onnx-graphsurgeon, unchanged yet, if there is one."""
    inputs = {s for s in result.input_symbols() if s not in result.minted}
    wanted = {s: top for s, top in _wanted(result).items() if s in inputs}
    if not wanted:
        return {}
    # every input symbol may be needed at >= 1 for another's value to be refuted
    candidates = sorted(inputs)
    constraints = _constraints(model, result, set(candidates), graph)
    if not constraints:
        return {}
    by_symbol: dict = {s: [c for c in constraints if s in free_symbols(c.expr)] for s in candidates}
    reach = max(wanted.values())
    declared = _declared_lows(model, result)  # (1 for every input symbol under assume_nonempty)
    lows: dict = {s: lo for s, lo in declared.items() if lo > 0}
    why: dict = {}
    budget = [MAX_SUBSTITUTIONS]

    def refuted(s: str, v: int):
        mapping = {t: sym(t, lo) for t, lo in lows.items() if t != s}
        mapping[s] = v
        for c in by_symbol[s]:
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            try:
                value = substitute(c.expr, mapping)
                if c.refuted(value):
                    return c
            except _ERRORS:
                continue
        return None

    for _ in range(MAX_ROUNDS):
        changed = False
        for s in candidates:
            # (a symbol no zero case reads is tried as far: its bound may refute another's values)
            top = wanted.get(s, reach)
            while lows.get(s, 0) <= top and budget[0] > 0:
                c = refuted(s, lows.get(s, 0))
                if c is None:
                    break
                lows[s] = lows.get(s, 0) + 1
                why[s] = c.why()
                changed = True
        if not changed or budget[0] <= 0:
            break
    return {s: (lo, why[s]) for s, lo in sorted(lows.items()) if s in why}


def _declared_lows(model, result) -> dict:
    """Symbol name -> the lower bound it carries in the inferred dims of the graph inputs."""
    out: dict = {}
    for vi in model.graph.input:
        f = result.fact(vi.name)
        for d in (() if f is None or f.shape is None else f.shape):
            for atom in atoms(d):
                if isinstance(atom, Sym):
                    out[atom.name] = max(out.get(atom.name, 0), atom.lo)
    return out


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
