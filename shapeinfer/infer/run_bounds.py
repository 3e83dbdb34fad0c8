"""The proven part of the input contract: lower bounds on the input dims that every run of a
model that succeeds meets (what optimize's rewrites rely on; the contract reports them too).

An optimised model must compute what the original does wherever the original runs; where the
original fails, there is nothing to compare. A Reshape fails where its element count would
change, and where its ``-1`` sits beside a 0 (the -1 cannot be inferred: the spec gives it no
value, onnxruntime and onnx.reference refuse). So a binding of the input dims that makes some
Reshape fail, whatever the other dims are, is no run at all -- and a rewrite need not be right
there. Swin's ``[batch, 16, -1]`` makes ``batch >= 1`` a fact of every run that succeeds; with it,
its window Reshapes make ``height >= 4``; then a Reshape entry ``(height+4)//8`` is never the 0 that
would copy another dim, and the optimizer may give the Reshape a constant shape or merge it with
the one before. The passes read the facts through :class:`BoundedFacts`, each symbol at least
its bound (optimizer/run_facts.py). The bounds are read from the protos and the inference
facts, as the rest of the contract is (infer/contract.py).

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

from ..graph.structure import implicit_inputs, topological_order
from ..symbolic import (BroadcastError, EvaluationError, Expr, ExpressionTooLarge, Sym, as_single_atom, atoms,
                        free_symbols, mul, neg, provably_positive, sub, substitute, sym, zero_cases, zero_factors, zero_range)

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


def _is_default(domain: str) -> bool:
    return domain in ("", "ai.onnx")


def _allowzero(node) -> int:
    for a in node.attribute:
        if a.name == "allowzero":
            return a.i
    return 0


def _live_reshapes(graph, overridable: set) -> list:
    """(name, data, shape, output, chain) for each Reshape of the main graph (a GraphProto;
    opset >= 5: the shape an input) whose output some graph output needs -- its data, not only
    its shape (_SHAPE_READERS): every run that succeeds executes them. Only explicit inputs
    count as reads (a node read from a subgraph alone is left out, which only loses
    constraints), and a Reshape read by reshape-like ops alone is left out (_SKIPPING_READERS).

    ``chain``: the producers of its shape, back to a Concat (at most MAX_CHAIN), each as (op,
    domain, input names, output name, which inputs are constants to onnxruntime: initializers
    but those in ``overridable``, which a caller may override, and Constant outputs)."""
    nodes = list(graph.node)
    producer: dict = {}
    readers: dict = {}
    for k, n in enumerate(nodes):
        for o in n.output:
            if o:
                producer.setdefault(o, k)
        for i in n.input:
            if i:
                readers.setdefault(i, []).append(k)
    initializers = {t.name for t in graph.initializer}
    outputs = {t.name for t in graph.output}
    seen: set = set()
    found = []
    stack = [t.name for t in graph.output]
    while stack:
        k = producer.get(stack.pop())
        if k is None or k in seen:
            continue
        seen.add(k)
        node = nodes[k]
        if node.op_type not in _SHAPE_READERS:
            stack.extend(i for i in node.input if i)
        if node.op_type == "Reshape" and _is_default(node.domain) and len(node.input) >= 2 and node.output \
                and node.input[1]:
            made = node.output[0]
            if made in outputs or any(nodes[r].op_type not in _SKIPPING_READERS or not _is_default(nodes[r].domain)
                                      for r in readers.get(made, ())):
                found.append(k)
    found.sort()

    def constant(name: str) -> bool:
        if name in initializers:
            return name not in overridable
        p = producer.get(name)
        return p is not None and nodes[p].op_type == "Constant"

    out = []
    for k in found:
        n = nodes[k]
        chain, t = [], n.input[1]
        for _ in range(MAX_CHAIN):
            p = producer.get(t)
            if p is None:
                break
            pn = nodes[p]
            chain.append((pn.op_type, pn.domain or "", list(pn.input), t, [constant(x) for x in pn.input]))
            if pn.op_type == "Concat" or not pn.input:
                break
            t = pn.input[0]
        out.append((n.name or n.output[0], n.input[0], n.input[1], n.output[0], chain))
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
    if not any(node.op_type == "Reshape" and _allowzero(node) for node in graph.node):
        return found  # (most models: one quick look)
    for node in topological_order(graph.node):
        reads = list(node.input) + implicit_inputs(node)
        if any(r in found for r in reads):
            found.update(o for o in node.output if o)
        elif node.op_type == "Reshape" and _is_default(node.domain) and _allowzero(node) and len(node.input) > 1:
            f = result.fact(node.input[1])
            entries = None if f is None or f.value is None else f.value.reshape(-1).tolist()
            if entries is None or any(type(e) is int and e == -1 for e in entries) and not all(
                    type(e) is int and e != 0 or isinstance(e, Expr) and provably_positive(e) for e in entries):
                found.update(o for o in node.output if o)
    return found


def _constraints(model, result, symbols: set) -> list:
    """The constraints of the live Reshapes of the model that involve one of ``symbols``."""
    out: list = []
    if any(f.name == "Reshape" and f.domain in ("", "ai.onnx") for f in model.functions):
        return out  # a model-local function named Reshape: those nodes compute anything
    graph = model.graph
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


def run_lows(model, result) -> dict:
    """{symbol name: (bound, why)}: each symbol of the graph inputs is at least ``bound`` in
    every run of the model that succeeds; ``why`` says which Reshape fails below it. Only
    symbols that some zero case of the inferred shapes reads are looked at."""
    inputs = {s for s in result.input_symbols() if s not in result.minted}
    wanted = {s: top for s, top in _wanted(result).items() if s in inputs}
    if not wanted:
        return {}
    # every input symbol may be needed at >= 1 for another's value to be refuted
    candidates = sorted(inputs)
    constraints = _constraints(model, result, set(candidates))
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
