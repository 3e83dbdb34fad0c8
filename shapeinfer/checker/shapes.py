"""The checker's shape findings: declared shapes inference contradicts, and per node the
tensors too large to count, the forced broadcasts and the dims no rule could express."""

from __future__ import annotations

import functools

from ..errors import ModelLoadError
from ..graph.structure import implicit_inputs, node_label
from ..infer.contract import broadcast_condition, spoken
from ..infer.facts import shape_str
from ..infer.protos import declared_size
from ..symbolic import Bcast, EvaluationError, Expr, Sym, atoms, bounds, evaluate, free_symbols, provably_positive, sub
from ..symbolic.search import binding_str, broadcasts, counterexample, holds, relevant
from .findings import ERROR, HUGE_ELEMENTS, INT64_MAX, WARNING, CheckReport

def declared_shapes(result, report: CheckReport, engine=None, contract=None, nonempty=()) -> None:
    """Declared shapes on outputs/value_info that inference proves different (or equal only
    for some sizes, when the declared dim is an expression over the input symbols) -- at sizes
    inside the ``contract``'s envelope (outside it the model does not run) and, under
    assume_nonempty, where no tensor is empty (``nonempty``: the tensors' dims)."""
    search = functools.partial(_search, contract=contract, nonempty=nonempty)
    inputs = result.input_symbols()
    g = result.model.graph
    producers = {o: n for n in g.node for o in n.output}
    for vi, fact in result.declared_shapes():
        tt = vi.type.tensor_type
        n = producers.get(vi.name)
        node, op = (node_label(n), n.op_type) if n is not None else ("", "")
        dims = tt.shape.dim
        if len(dims) != len(fact.shape):
            report.add(WARNING, "declared-shape", f"{vi.name!r} is declared with rank {len(dims)}, inferred "
                       f"{said_shape(fact.shape)} (rank {len(fact.shape)}){_DECLARED_NOTE}", node, op)
            continue
        for axis, (d, ours) in enumerate(zip(dims, fact.shape)):
            if declared_size(d) is not None and not result.is_unknown_dim(ours):
                theirs = declared_size(d)
                if isinstance(ours, int) and ours != theirs or (not isinstance(ours, int) and _never(ours, theirs)):
                    report.add(WARNING, "declared-shape", f"{vi.name!r} is declared {declared_str(tt)}, but dim {axis} "
                               f"is {spoken(ours) or 'another size'}, never {theirs}; inferred {said_shape(fact.shape)}"
                               f"{_DECLARED_NOTE}",
                               node, op)
                    break
                # a size baked in where the inputs' sizes decide (onnxruntime's default level trusts
                # the declaration: Shape of the tensor gives it at every size)
                if not isinstance(ours, int) and free_symbols(ours) <= inputs and \
                        _only_for_some(report, vi, axis, ours, theirs, str(theirs), node, op, search):
                    break
            elif d.dim_param and engine is not None and not result.is_unknown_dim(ours):
                # a declared expression over the input symbols is a claim: check it
                try:
                    theirs = engine.symbols.claim(d.dim_param)
                except ModelLoadError:  # (a name that is not valid UTF-8: no claim to compare)
                    continue
                free = free_symbols(theirs)
                if not free or not free <= inputs or str(theirs) == str(ours):
                    continue  # a free name (seq_plus_1) only names the dim
                diff = sub(ours, theirs)
                if isinstance(diff, int) or provably_positive(diff) or provably_positive(sub(0, diff)):
                    report.add(WARNING, "declared-shape", f"{vi.name!r} is declared {declared_str(tt)}, but dim {axis} "
                               f"is {spoken(ours) or 'another size'}, never {d.dim_param}; inferred {said_shape(fact.shape)}"
                               f"{_DECLARED_NOTE}", node, op)
                    break
                if _only_for_some(report, vi, axis, ours, theirs, d.dim_param, node, op, search):
                    break


def said_shape(shape) -> str:
    """A shape as a message writes it: each dim spoken, '?' for one no user would read."""
    return "[" + ",".join(spoken(d) or "?" for d in shape) + "]"


_DECLARED_NOTE = " (onnxruntime runs the model and warns; consumers that trust declared shapes may fail)"


def _search(dims, test, contract=None, nonempty=()):
    """A binding at which ``test`` fails, inside ``contract`` (a checker.contract.Scope: the
    contract's envelope and the user's sizes) when there is one."""
    if contract is None:
        return counterexample(dims, test, nonempty)
    return counterexample(dims, contract.within(test), nonempty, contract.extra())


def _only_for_some(report: CheckReport, vi, axis: int, ours, theirs, spelled: str, node, op, search=_search) -> bool:
    """A declared-shape warning when dim ``axis`` of ``vi``, inferred ``ours``, equals the declared
    ``theirs`` (written ``spelled``) for some sizes and not others; whether it was made."""
    example = search((ours, theirs), holds("equal", ours, theirs))
    if example is None:
        return False
    said = spoken(ours)
    if said is not None:
        what = f"dim {axis} is {said}: equal to {spelled} only for some sizes (not for {binding_str(example)})"
    else:  # (an expression no user would read: its value where it differs instead)
        try:
            what = (f"dim {axis} differs from {spelled} at some sizes: at {binding_str(example)} it is "
                    f"{evaluate(ours, example)}, not {evaluate(theirs, example)}")
        except EvaluationError:
            what = f"dim {axis} differs from {spelled} at some sizes (at {binding_str(example)})"
    report.add(WARNING, "declared-shape", f"{vi.name!r} is declared {declared_str(vi.type.tensor_type)}, but {what}"
               f"{_DECLARED_NOTE}", node, op)
    return True


def _never(ours, theirs: int) -> bool:
    lo, hi = bounds(ours)
    return (lo is not None and lo > theirs) or (hi is not None and hi < theirs)


def declared_str(tt) -> str:
    return "[" + ",".join(d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?") for d in tt.shape.dim) + "]"


def _count_str(count: int) -> str:
    """An element count in three digits (a count past a float's range as a power of ten)."""
    if count < 10 ** 300:
        return f"{count:.3g}"
    digits = str(count)
    return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def _only_shape_reads(graph, name: str) -> bool:
    """Whether name is not a graph output and every node that reads it is a Shape (onnxruntime's
    constant folding replaces those by their values, so the tensor is never computed)."""
    if any(o.name == name for o in graph.output):
        return False
    for n in graph.node:
        if name in implicit_inputs(n):
            return False
        if name in n.input and (n.op_type != "Shape" or n.domain not in ("", "ai.onnx")):
            return False
    return True


def per_node(graph, result, report: CheckReport, nonempty=(), contract=None) -> None:
    """Forced broadcasts and unknown dims, each at the node that first made it; a failing size
    is searched inside the ``contract``'s envelope (outside it, a clause of the contract says
    the failure, once)."""
    seen_bcast: set = set()
    seen_unknown: set = set()
    for n in graph.node:
        new_bcast, new_unknown = [], []
        for o in n.output:
            fact = result.facts.get(o) if o else None
            if fact is None or fact.shape is None:
                continue
            if all(type(d) is int for d in fact.shape):
                count = 1
                for d in fact.shape:
                    count *= d
                if count > INT64_MAX:
                    what = f"output {o!r} of shape {shape_str(fact.shape)} would have {_count_str(count)} " \
                           "elements, more than int64 can count"
                    if _only_shape_reads(graph, o):
                        report.add(WARNING, "int64-overflow", f"{what}: onnxruntime fails where it computes the "
                                   "tensor (graph optimizations off); at its default level it folds the Shape "
                                   "that only reads its dims, and the model runs", node_label(n), n.op_type)
                    else:
                        report.add(ERROR, "int64-overflow", what, node_label(n), n.op_type)
                elif count >= HUGE_ELEMENTS:
                    report.add(WARNING, "huge-tensor", f"output {o!r} of shape {shape_str(fact.shape)} has "
                               f"{_count_str(count)} elements", node_label(n), n.op_type)
            for d in fact.shape:
                if not isinstance(d, Expr):
                    continue
                for atom in atoms(d):
                    if isinstance(atom, Bcast) and atom not in seen_bcast:
                        seen_bcast.add(atom)
                        if not any(result.is_unknown_dim(a) for a in atom.args):
                            new_bcast.append(atom)
                    elif isinstance(atom, Sym) and atom.name in result.minted and atom.name not in seen_unknown:
                        seen_unknown.add(atom.name)
                        if not result.minted[atom.name].startswith("input "):
                            new_unknown.append(atom.name)
        for atom in new_bcast:
            test = broadcasts(atom.args)
            if contract is not None:
                test = contract.within(test)
            found = counterexample(atom.args, test, nonempty, contract.extra() if contract is not None else None)
            if found is None:
                continue
            found = relevant(atom.args, found, test, nonempty)
            report.add(ERROR if contract is not None and contract.inside(found) else WARNING, "forced-broadcast", f"fails for {binding_str(found)}: "
                       f"broadcasting holds only when {broadcast_condition(atom.args)}", node_label(n), n.op_type)
        if new_unknown:
            report.add(WARNING, "unknown-dims", f"output dims no rule could express: {', '.join(new_unknown)}",
                       node_label(n), n.op_type)
