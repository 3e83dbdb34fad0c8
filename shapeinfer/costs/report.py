"""``shapeinfer.cost``: what a model costs -- MACs, FLOPs, parameters, activation memory -- as
formulas in its input dims (the symbols of its inputs), and as numbers once they are bound.

One inference gives every tensor's shape; each main-graph node's MACs and FLOPs follow from them
(formulas.py). Parameters are the tensors the model stores for inference -- initializers and
Constant tensors, wherever they live (bodies and functions too) -- counted from their dims
(external data is never read). Activation memory is the bytes of every tensor a node makes; the
peak walks the nodes in the model's order with the graph inputs live from the start, every
tensor live from its producer to its last reader (graph outputs to the end). Where the peak
depends on the sizes it is a ``max`` of the candidate sums that no other provably bounds; past
MAX_PEAK_CANDIDATES of them it is a simpler upper bound (the largest coefficient of every term),
and the report says so. Bound, every figure is computed from the evaluated sizes, exactly.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Mapping, Optional

from onnx import AttributeProto, TensorProto

from ..errors import BindError, ShapeInferenceError
from ..infer.run import infer
from ..modelio.external import tensor_elements, tensor_nbytes
from ..modelio.tensors import ATTRIBUTE, FUNCTION_DEFAULT, stored_tensors
from ..modelio.load import as_model
from ..symbolic import (Dim, EvaluationError, ExpressionTooLarge, add, atom_dim, bounds, dmax, evaluate, floordiv,
                        free_symbols, mul, provably_le, sub, substitute, to_str)
from ..modelio.text import as_text
from .formulas import node_cost, not_counted, prod

INT64_MAX = 2**63 - 1
MAX_PEAK_CANDIDATES = 16  # past this many, the max gives way to one simpler upper bound
BITS = {TensorProto.FLOAT: 32, TensorProto.DOUBLE: 64, TensorProto.FLOAT16: 16, TensorProto.BFLOAT16: 16,
        TensorProto.INT8: 8, TensorProto.UINT8: 8, TensorProto.INT16: 16, TensorProto.UINT16: 16,
        TensorProto.INT32: 32, TensorProto.UINT32: 32, TensorProto.INT64: 64, TensorProto.UINT64: 64,
        TensorProto.BOOL: 8, TensorProto.COMPLEX64: 64, TensorProto.COMPLEX128: 128,
        TensorProto.FLOAT8E4M3FN: 8, TensorProto.FLOAT8E4M3FNUZ: 8, TensorProto.FLOAT8E5M2: 8,
        TensorProto.FLOAT8E5M2FNUZ: 8}
for _name, _bits in (("INT4", 4), ("UINT4", 4), ("FLOAT4E2M1", 4), ("FLOAT8E8M0", 8), ("INT2", 2), ("UINT2", 2)):
    if hasattr(TensorProto, _name):
        BITS[getattr(TensorProto, _name)] = _bits


def tensor_bytes(elements: Dim, dtype: int) -> Optional[Dim]:
    """Bytes of a tensor of this many elements (sub-byte types packed, rounded up), or None for
    a type without a fixed size (strings)."""
    bits = BITS.get(dtype)
    if bits is None:
        return None
    if bits % 8 == 0:
        return mul(elements, bits // 8)
    per = 8 // bits
    return floordiv(add(elements, per - 1), per)


@dataclass
class NodeCost:
    name: str
    op: str
    macs: Optional[Dim]
    flops: Optional[Dim]
    output_bytes: Optional[Dim]


@dataclass
class NotCounted:
    """A node whose cost the figures leave out, and why (formulas.not_counted): a compute op
    without a MAC rule, a node with subgraphs, an op of another domain."""
    name: str
    op: str
    why: str


@dataclass
class CostReport:
    """What ``cost`` found. Dims are ints or expressions in the input symbols (``symbols``);
    a figure is None where a shape it needs is unknown (``notes`` says which)."""

    model: str = ""
    symbols: list = field(default_factory=list)  # the input dims' symbols
    unknown_symbols: dict = field(default_factory=dict)  # minted symbol -> where it comes from (data-dependent)
    nodes: list = field(default_factory=list)  # NodeCost, in graph order
    macs: Optional[Dim] = 0
    flops: Optional[Dim] = 0
    params: int = 0
    param_bytes: int = 0
    activation_bytes: Optional[Dim] = 0  # every tensor the nodes make
    activation_peak_bytes: Optional[Dim] = 0
    peak_is_bound: bool = False  # an upper bound, not the max itself (too many candidates)
    binding: dict = field(default_factory=dict)  # the values the figures were bound at (all ints then)
    notes: list = field(default_factory=list)
    not_counted: list = field(default_factory=list)  # NotCounted: nodes whose cost no figure holds

    def not_counted_groups(self) -> list:
        """(why, {op: count}) for the nodes not counted, in order of first appearance."""
        groups: dict = {}
        for n in self.not_counted:
            ops = groups.setdefault(n.why, {})
            ops[n.op] = ops.get(n.op, 0) + 1
        return list(groups.items())

    def by_op(self) -> dict:
        """{op: {"macs", "flops", "count"}} in order of first appearance."""
        out: dict = {}
        for n in self.nodes:
            entry = out.setdefault(n.op, {"macs": 0, "flops": 0, "count": 0})
            entry["count"] += 1
            for key, value in (("macs", n.macs), ("flops", n.flops)):
                entry[key] = _plus(entry[key], value)
        return out

    def as_dict(self) -> dict:
        from ..infer.result import JSON_SCHEMA_VERSION

        return {
            "schema_version": JSON_SCHEMA_VERSION,
            "model": self.model,
            "symbols": list(self.symbols),
            "binding": dict(self.binding),
            "unknown_symbols": dict(self.unknown_symbols),
            "total": {"macs": _json(self.macs), "flops": _json(self.flops), "params": self.params,
                      "param_bytes": self.param_bytes, "activation_bytes": _json(self.activation_bytes),
                      "activation_peak_bytes": _json(self.activation_peak_bytes),
                      "activation_peak_is_upper_bound": self.peak_is_bound},
            "by_op": {op: {"macs": _json(v["macs"]), "flops": _json(v["flops"]), "count": v["count"]}
                      for op, v in self.by_op().items()},
            "nodes": [{"name": n.name, "op": n.op, "macs": _json(n.macs), "flops": _json(n.flops),
                       "output_bytes": _json(n.output_bytes)} for n in self.nodes],
            "not_counted": [{"name": n.name, "op": n.op, "why": n.why} for n in self.not_counted],
            "notes": list(self.notes),
        }


def _json(d):
    if d is None or isinstance(d, int):
        return d
    if hasattr(d, "denominator") and d.denominator == 1:
        return int(d)
    return to_str(d)


def _plus(a, b):
    """a + b, None when either is unknown or the sum passes the expression budget."""
    if a is None or b is None:
        return None
    try:
        return add(a, b)
    except ExpressionTooLarge:
        return None


def cost(model, *, bind: Optional[Mapping[str, int]] = None, input_shapes: Optional[dict] = None,
         assume_nonempty: bool = False, base_dir: Optional[str] = None) -> CostReport:
    """The cost of ``model`` (a ModelProto or a path): MACs, FLOPs, parameters and activation
    memory, per node and in total, as formulas in the input dims -- or, with ``bind``
    ({symbol: size} for every input symbol), as integers at those sizes. ``input_shapes`` and
    ``assume_nonempty`` as for :func:`shapeinfer.infer`. Raises what ``infer`` raises, and
    BindError (an InputShapeError) for a bound symbol the inputs do not have or a size below 0."""
    m = as_model(model)
    result = infer(m, input_shapes=input_shapes, assume_nonempty=assume_nonempty, base_dir=base_dir)
    report = CostReport(model=model if isinstance(model, str) else (m.graph.name or "<model>"))
    report.symbols = sorted(result.input_symbols())
    report.unknown_symbols = {s: result.minted[s] for s in result.symbols() if s in result.minted}
    binding = _check_binding(bind, report.symbols, report.unknown_symbols)
    report.binding = binding
    at_inputs = {k: v for k, v in binding.items() if k in report.symbols}
    if at_inputs:  # inference at those sizes: every shape exact there, and a size the model refuses said so
        sized = _inputs_at(m, result, at_inputs, input_shapes)
        try:
            result = infer(m, input_shapes=sized, assume_nonempty=assume_nonempty, base_dir=base_dir)
        except ShapeInferenceError as e:
            raise BindError(f"the model is invalid at {', '.join(f'{k}={v}' for k, v in at_inputs.items())}: "
                            f"{getattr(e, 'rule', e)} (node {e.node_name!r}, {e.op_type})") from e
        minted = {s: result.minted[s] for s in result.symbols() if s in result.minted}
        binding = {k: v for k, v in binding.items() if k not in report.symbols and k in minted}
        report.unknown_symbols = minted

    def value(d):
        """d, or its value at the binding (an int; None where the binding leaves it open)."""
        if d is None or not binding:
            return d
        try:
            v = evaluate(d, binding)
        except (EvaluationError, KeyError, ArithmeticError):
            if free_symbols(d) <= binding.keys():
                return None
            try:  # a symbol left unbound (a size known only at run time): the rest bound
                return substitute(d, binding)
            except (EvaluationError, ArithmeticError):
                return d
        return int(v) if hasattr(v, "denominator") and v.denominator == 1 else v

    def shape(name):
        return result.shape(name) if name else None

    graph = m.graph
    report.params, report.param_bytes = _parameters(m, report.notes)
    elements: dict = {}  # tensor -> its bytes (for the peak)
    total_macs: Optional[Dim] = 0
    total_flops: Optional[Dim] = 0
    activations: Optional[Dim] = 0
    for node in graph.node:
        domain = as_text(node.domain)
        domain = "" if domain in ("", "ai.onnx") else domain
        op_type = as_text(node.op_type)
        try:
            macs, flops = node_cost(node, shape)
        except ExpressionTooLarge:
            macs, flops = None, None
        out_bytes: Optional[Dim] = 0
        for o in node.output:
            if not o:
                continue
            f, s = result.fact(o), shape(o)
            b = None if f is None or s is None or not f.dtype else tensor_bytes(prod(s), f.dtype)
            elements[o] = b
            out_bytes = _plus(out_bytes, b)
        macs, flops, out_bytes = value(macs), value(flops), value(out_bytes)
        label = as_text(node.name) or f"<{op_type} -> {next((o for o in node.output if o), '')}>"
        op = op_type if domain == "" else f"{domain}.{op_type}"
        report.nodes.append(NodeCost(label, op, macs, flops, out_bytes))
        why = not_counted(node)
        if why is not None:
            report.not_counted.append(NotCounted(label, op, why))
        if macs is None or flops is None:
            report.notes.append(f"{label} ({op}): {'MACs' if macs is None else 'FLOPs'} not known: a shape it "
                                "needs is not known (the total is unknown too)")
        total_macs = _plus(total_macs, macs)
        total_flops = _plus(total_flops, flops)
        activations = _plus(activations, out_bytes)
    report.macs, report.flops, report.activation_bytes = total_macs, total_flops, activations
    for key, what in (("macs", "MACs"), ("flops", "FLOPs"), ("activation_bytes", "activation bytes")):
        if getattr(report, key) is None:
            report.notes.append(f"the total of {what} is not known: a node's is not (see the notes above), or the "
                                "sum passes the expression budget (bind the symbols)")
    for name, (f, s) in _inputs(graph, result).items():
        elements[name] = None if f is None or s is None or not f.dtype else tensor_bytes(prod(s), f.dtype)
    try:
        report.activation_peak_bytes, report.peak_is_bound = _peak(graph, elements, value, report.notes)
    except ExpressionTooLarge:  # (a sum, a max or the simpler bound of them: wherever it passes the budget)
        report.activation_peak_bytes, report.peak_is_bound = None, False
        report.notes.append("the activation peak passes the expression budget: bind the symbols for its value")
    return report


def _inputs_at(m, result, binding: dict, input_shapes: Optional[dict]) -> dict:
    """input_shapes for the graph inputs whose dims hold bound symbols: those dims at the
    binding (ints, or the printed form of what stays symbolic)."""
    out = dict(input_shapes or {})
    init = {t.name for t in m.graph.initializer}
    for vi in m.graph.input:
        shape = result.shape(vi.name)
        if vi.name in init or shape is None or not any(free_symbols(d) & binding.keys() for d in shape):
            continue
        dims = []
        for d in shape:
            v = substitute(d, binding) if free_symbols(d) & binding.keys() else d
            dims.append(int(v) if isinstance(v, int) else to_str(v))
        if any(isinstance(d, int) and d < 0 for d in dims):
            raise BindError(f"input {vi.name!r} would have a negative dim at "
                            f"{', '.join(f'{k}={v}' for k, v in binding.items())}: {dims}")
        out[vi.name] = dims
    return out


def _check_binding(bind, symbols: list, unknown: dict) -> dict:
    if not bind:
        return {}
    if not isinstance(bind, Mapping):
        raise TypeError(f"bind must map symbol names to sizes, e.g. {{'batch': 1}}; got {type(bind).__name__}")
    out = {}
    for name, v in bind.items():
        if name not in symbols and name not in unknown:
            raise BindError(f"{name!r} is no symbol of the model's inputs (symbols: {', '.join(symbols) or 'none'})")
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v <= INT64_MAX:
            raise BindError(f"{name!r}: a size is an int from 0 to 2**63-1; got {v!r}")
        out[name] = int(v)
    return out


def _inputs(graph, result) -> dict:
    init = {t.name for t in graph.initializer}
    return {i.name: (result.fact(i.name), result.shape(i.name)) for i in graph.input if i.name not in init}


def _parameters(model, notes: list) -> tuple:
    """(elements, bytes) of the tensors the model stores for inference, from their dims, wherever
    they live (modelio.tensors.stored_tensors: the initializers of every graph, sparse ones
    counted as their dense elements and stored bytes, Constant nodes' tensors in the main graph,
    bodies and functions; not training_info) and the literals of the main graph's Constant nodes
    (value_float, value_ints, ...)."""
    count, size, unsized = 0, 0, 0
    for place in stored_tensors(model, training_info=False):
        if place.kind == FUNCTION_DEFAULT or place.kind == ATTRIBUTE and not _is_constant(place.node):
            continue
        t = place.tensor
        if place.part != "indices":  # (a sparse tensor's elements: its dense ones, counted with its values)
            count += tensor_elements(place.sparse if place.sparse is not None else t)
        b = tensor_nbytes(t)
        if b is None:
            unsized += 1
        else:
            size += b
    for node in model.graph.node:
        if _is_constant(node):
            for a in node.attribute:
                if a.type in (AttributeProto.FLOAT, AttributeProto.INT):  # value_float / value_int
                    count, size = count + 1, size + (4 if a.type == AttributeProto.FLOAT else 8)
                elif a.type in (AttributeProto.FLOATS, AttributeProto.INTS):
                    n = len(a.floats) if a.type == AttributeProto.FLOATS else len(a.ints)
                    count, size = count + n, size + n * (4 if a.type == AttributeProto.FLOATS else 8)
                elif a.type in (AttributeProto.STRING, AttributeProto.STRINGS):
                    count += 1 if a.type == AttributeProto.STRING else len(a.strings)
    if unsized:
        notes.append(f"{unsized} parameter tensor(s) of strings: their bytes are not counted")
    return count, size


def _is_constant(node) -> bool:
    return node.op_type == "Constant" and node.domain in ("", "ai.onnx")


def _peak(graph, sizes: dict, value, notes: list) -> tuple:
    """(peak bytes, whether it is an upper bound rather than the max) over the node order."""
    last_use: dict = {}
    for k, node in enumerate(graph.node):
        for i in list(node.input) + sorted(_outer_reads(node)):
            if i:
                last_use[i] = k
    keep = {o.name for o in graph.output}
    produced = {o for n in graph.node for o in n.output}
    live: dict = {name: b for name, b in sizes.items() if name not in produced}
    current: Optional[Dim] = 0
    unknown = any(b is None for b in live.values())
    for b in live.values():
        current = _plus(current, b if b is not None else 0)
    candidates: list = []
    bounded = False

    def consider(c) -> None:
        nonlocal bounded
        c = value(c)
        if isinstance(c, int) and all(isinstance(k, int) for k in candidates):
            if not candidates or c > candidates[0]:
                candidates[:] = [c]
            return
        if any(_le(c, k) for k in candidates):
            return
        candidates[:] = [k for k in candidates if not _le(k, c)] + [c]
        if len(candidates) > MAX_PEAK_CANDIDATES:
            merged = _upper_bound(candidates)
            if merged is not None:
                candidates[:] = [merged]
                bounded = True

    consider(current)
    for k, node in enumerate(graph.node):
        for o in node.output:
            if o:
                b = sizes.get(o)
                unknown = unknown or b is None
                live[o] = b
                current = _plus(current, b if b is not None else 0)
        if current is None:
            break
        consider(current)
        for i in set(node.input) | set(node.output) | _outer_reads(node):
            if i in live and last_use.get(i, -1) <= k and i not in keep:
                b = live.pop(i)
                if b is not None:
                    try:
                        current = sub(current, b)
                    except ExpressionTooLarge:
                        current = None
                        break
        if current is None:
            break
    if current is None:
        notes.append("the activation peak passes the expression budget: bind the symbols for its value")
        return None, False
    if unknown:
        notes.append("some tensors' sizes are not known: the activation peak leaves them out (a lower bound)")
    peak: Optional[Dim] = 0
    for c in candidates:
        try:
            peak = value(dmax(peak, c))
        except ExpressionTooLarge:
            merged = _upper_bound(candidates)
            notes.append("the activation peak is given as an upper bound (the exact max passes the budget)")
            return merged, True
    if bounded:
        notes.append(f"the activation peak is an upper bound: more than {MAX_PEAK_CANDIDATES} sums of live tensors "
                     "could be the largest, depending on the sizes")
    return peak, bounded


def _outer_reads(node) -> set:
    """Names a node's subgraphs (If/Loop/Scan bodies) read from the scopes around them."""
    from onnx import AttributeProto as A

    graphs = [a.g for a in node.attribute if a.type == A.GRAPH]
    graphs += [g for a in node.attribute if a.type == A.GRAPHS for g in a.graphs]
    reads: set = set()
    for g in graphs:
        inner = {i.name for i in g.input} | {t.name for t in g.initializer}
        for n in g.node:
            reads.update(i for i in n.input if i and i not in inner)
            reads.update(r for r in _outer_reads(n) if r not in inner)
            inner.update(n.output)
        reads.update(o.name for o in g.output if o.name not in inner)
    return reads


def _le(a, b) -> bool:
    try:
        return provably_le(a, b)
    except ExpressionTooLarge:
        return False


def _upper_bound(candidates: list) -> Optional[Dim]:
    """A dim at least each candidate for every binding: each term with the largest coefficient
    any candidate gives it (terms are products of non-negative atoms), or None where a term's
    atom may be negative."""
    best: dict = {}
    present: dict = {}  # mono -> how many candidates have it (a candidate without it has 0 there)
    for c in candidates:
        terms = c.terms if not isinstance(c, int) else ((((), c),) if c else ())
        for mono, coef in terms:
            for atom, _ in mono:
                if bounds(atom_dim(atom))[0] < 0:
                    return None
            best[mono] = max(best.get(mono, coef), coef)
            present[mono] = present.get(mono, 0) + 1
    for mono in best:
        if present[mono] < len(candidates):
            best[mono] = max(best[mono], 0)
    total: Dim = 0
    for mono, coef in best.items():
        term: Dim = coef
        for atom, e in mono:
            for _ in range(e):
                term = mul(term, atom_dim(atom))
        total = add(total, term)
    return total

