"""Graph structure: every tensor produced once, every input produced by something, no cycle
(subgraphs too), every stored tensor what it says (wherever it lives), checked before anything
else reads a graph; the topological order the engine walks in; and how a node is named in
messages (node_label, defined with the tensors' places in modelio.tensors).

``structure_problems`` lists every problem (``check`` reports them all), ``validate_structure``
raises for the first (``infer`` and ``optimize`` refuse such a model before doing anything)."""

from __future__ import annotations

import heapq
from itertools import chain
from dataclasses import dataclass
from typing import Iterator, Optional

import onnx
from onnx import ModelProto

from ..errors import ModelLoadError, ShapeInferenceError
from ..modelio.tensors import node_label, stored_tensor_problems
from ..modelio.text import as_text

__all__ = ["SHADOWING", "NodeIO", "Problem", "find_cycle", "graphs_of", "implicit_inputs", "node_label",
           "read_names", "shadowed_name", "shadowed_names", "shadowing_message", "structure_problems", "subgraphs_of",
           "unread_initializer_problems",
           "topological_order", "validate_structure"]


_GRAPH, _GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS


@dataclass(frozen=True)
class Problem:
    code: str  # duplicate-output, duplicate-node-name, dangling-input, not-a-dag, initializer
    message: str
    node: str = ""
    op: str = ""


def structure_problems(model: ModelProto, io: Optional[list] = None) -> list:
    """Every structural problem of a model, in the order found (``io``: a list that receives
    the main graph's NodeIO): first each stored tensor that cannot be what it says, wherever it
    lives (code ``initializer``: an initializer, a sparse one's values or indices, a Constant's
    value, in any graph, function or training_info -- modelio.tensors.stored_tensors), then
    the main graph's and its subgraphs' structure."""
    found: list = []
    unread = {name for name, _ in unread_initializer_problems(model)}
    for place, problem in stored_tensor_problems(model):
        if place.kind == "initializer" and not place.scope and place.name in unread:
            continue  # (onnxruntime drops an initializer nothing reads, and loads the model)
        node = place.node
        found.append(Problem("initializer", f"{place.describe(with_node=False)}: {problem}",
                             node_label(node) if node is not None else "", node.op_type if node is not None else ""))
    known = set(onnx.TensorProto.DataType.values())
    for g in graphs_of(model):
        for message in _initializer_input_conflicts(g):
            found.append(Problem("initializer", message, "", ""))
        for vi in (*g.input, *g.output, *g.value_info):
            elem = _declared_elem(vi.type)
            if elem is not None and elem not in known:
                found.append(Problem("declared-type", f"{as_text(vi.name)!r} is declared of element type {elem}, which "
                                     "no ONNX type has: onnxruntime refuses the model", "", ""))
    _walk(model.graph, set(), lambda code, message, node="", op="": found.append(Problem(code, message, node or "", op or "")),
          io)
    return found


def read_names(model: ModelProto) -> set:
    """Every name a node of the main graph or of a subgraph reads, and the main graph's outputs."""
    names = {o.name for o in model.graph.output}
    for g in graphs_of(model):
        for n in g.node:
            names.update(n.input)
    return names


def unread_initializer_problems(model: ModelProto) -> list:
    """(name, why) for each main-graph initializer that cannot be what it says (fewer bytes than
    its dims need, ...) and that nothing reads: onnxruntime drops it and loads the model."""
    from ..modelio.tensors import tensor_problem

    bad = [(t.name, p) for t in model.graph.initializer for p in [tensor_problem(t)] if p]
    if not bad:
        return []
    read = read_names(model)
    return [(name, p) for name, p in bad if name not in read]


def _declared_elem(tp, depth: int = 0):
    """The element type a declared type holds (through sequence, optional and map values), or
    None."""
    kind = tp.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        return getattr(tp, kind).elem_type
    if depth < 8 and kind in ("sequence_type", "optional_type"):
        inner = getattr(tp, kind)
        return _declared_elem(inner.elem_type, depth + 1) if inner.HasField("elem_type") else None
    return None


def _type_name(elem_type: int) -> str:
    known = elem_type in onnx.TensorProto.DataType.values()
    return onnx.TensorProto.DataType.Name(elem_type).lower() if known else f"element type {elem_type}"


def _initializer_input_conflicts(graph) -> Iterator[str]:
    """Why, for each initializer that a graph input of the same name declares with
    another element type, rank or numeric dim: onnxruntime refuses the model ("Type Error:
    Shape of initializer ... does not match"); a symbolic or unknown declared dim matches any."""
    if not graph.initializer or not graph.input:
        return
    inits = {t.name: t for t in graph.initializer}
    for vi in graph.input:
        t = inits.get(vi.name)
        if t is None or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        stored = f"{_type_name(t.data_type)} {list(t.dims)}"
        if tt.elem_type and t.data_type and tt.elem_type != t.data_type:
            yield (f"initializer {as_text(vi.name)!r} is {stored}, but the graph input of that name is "
                   f"declared {_type_name(tt.elem_type)}: onnxruntime refuses the model (the types must match)")
        elif tt.HasField("shape"):
            dims = list(tt.shape.dim)
            if len(dims) != len(t.dims) or any(d.HasField("dim_value") and d.dim_value >= 0 and d.dim_value != n
                                               for d, n in zip(dims, t.dims)):
                declared = "[" + ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                                          for d in dims) + "]"
                yield (f"initializer {as_text(vi.name)!r} is {stored}, but the graph input of that name is "
                       f"declared {declared}: onnxruntime refuses the model (the shapes must match)")


@dataclass(frozen=True)
class NodeIO:
    """The input and output names of a graph's nodes, as read from the protobuf once (a read of
    ``node.input`` makes new objects each time): ``ins[k]``, ``outs[k]`` for ``nodes[k]``.
    Valid for the graph as it was read -- the callers that share it do not change the graph."""

    nodes: list
    ins: list
    outs: list
    in_order: bool = True  # every node after the producers of what it reads (its subgraphs' reads too)
    has_subgraphs: bool = False  # some node holds a graph attribute


def validate_structure(model: ModelProto) -> NodeIO:
    """Raise ShapeInferenceError for the first structural error (a tensor produced twice, an
    input nothing produces, a cycle): what infer/optimize refuse before doing anything. Returns
    the main graph's NodeIO, which the walks that follow may take instead of reading it again."""
    io: list = []
    problems = structure_problems(model, io)
    if problems:
        p = problems[0]
        raise ShapeInferenceError(f"[{p.code}] {p.message}", node_name=p.node, op_type=p.op)
    return io[0]


def _walk(graph, outer: set, add, io: Optional[list] = None) -> bool:
    """Duplicate producers, dangling inputs, cycles (subgraphs too). True if any was found.
    ``io``: a list that receives the graph's NodeIO.

    One pass over the nodes (their inputs and outputs read from the protobuf once); the cycle
    search runs only when the nodes are not already in topological order."""
    found = False
    where = "" if not outer else " (in a subgraph)"
    nodes = list(graph.node)
    ins = [n.input[:] for n in nodes]  # (each read of a protobuf field makes new objects: once)
    outs = [n.output[:] for n in nodes]
    try:  # (a name that is not valid UTF-8 reads as bytes, which join refuses: one C-level pass)
        "".join(chain.from_iterable(ins))
        "".join(chain.from_iterable(outs))
    except TypeError:
        for n, names, made in zip(nodes, ins, outs):
            if not all(type(x) is str for x in names) or not all(type(x) is str for x in made):
                raise ModelLoadError(f"node {node_label(n)!r} ({n.op_type}): a tensor name is not valid UTF-8; "
                                     "the file is corrupt") from None
        raise
    producer: dict = {}  # tensor name -> index of its node, -1 for a graph input or initializer
    for t in graph.input:
        producer[t.name] = -1
    for t in graph.initializer:
        producer.setdefault(t.name, -1)
    for t in graph.sparse_initializer:
        producer.setdefault(t.values.name, -1)
    named: dict = {}
    for n in nodes:
        name = n.name
        if name and named.setdefault(name, n) is not n:
            add("duplicate-node-name", f"another node of this graph{where} has the same name "
                       f"({named[n.name].op_type}); onnxruntime refuses a model with two nodes of one name",
                       as_text(name), n.op_type)
            found = True
    for k, made in enumerate(outs):
        for o in made:
            if not o:
                continue
            other = producer.get(o)
            if other is None:
                producer[o] = k
                continue
            what = (f"node {nodes[other].name!r} ({nodes[other].op_type})" if other >= 0
                    else "a graph input or initializer")
            n = nodes[k]
            add("duplicate-output", f"its output {o!r} is also produced by {what}{where}", node_label(n), n.op_type)
            found = True
    in_order = True
    for k, names in enumerate(ins):
        for i in names:
            if not i:
                continue
            p = producer.get(i)
            if p is None:
                if i not in outer:
                    n = nodes[k]
                    add("dangling-input", f"input {i!r} is produced by no node, graph input or "
                               f"initializer{where}", node_label(n), n.op_type)
                    found = True
            elif p >= k:
                in_order = False
    # what the subgraphs of a node read from this graph must come before it too (onnxruntime
    # orders by these implicit inputs; an importer that follows the given order would not find them)
    deps = ins
    with_graphs = [k for k, n in enumerate(nodes) if has_subgraph(n)]
    for k in with_graphs:
        implicit = [i for i in implicit_inputs(nodes[k]) if producer.get(i, -1) >= 0]
        if implicit:
            if deps is ins:
                deps = list(ins)
            deps[k] = list(ins[k]) + implicit
            if any(producer[i] >= k for i in implicit):
                in_order = False
    for o in graph.output:
        if o.name not in producer and o.name not in outer:
            add("dangling-input", f"graph output {o.name!r} is produced by nothing{where}")
            found = True
    if io is not None:
        io.append(NodeIO(nodes, ins, outs, in_order, bool(with_graphs)))
    cycle = None if in_order else find_cycle(nodes, deps, producer)
    if cycle is not None:
        add("not-a-dag", f"the graph has a cycle through this node{where}: "
                   + " -> ".join(repr(c.name or c.op_type) for c in cycle), as_text(cycle[0].name), cycle[0].op_type)
        found = True
    names = None
    for k in with_graphs:
        for a in nodes[k].attribute:
            kind = a.type
            if kind != _GRAPH and kind != _GRAPHS:
                continue
            for g in ([a.g] if kind == _GRAPH else a.graphs):
                names = names if names is not None else set(producer) | outer
                found |= _walk(g, names, add)
    return found


# What runtimes do with a subgraph initializer that reuses a name the graphs around it define
# (tests/test_shadowed_initializer.py runs each case in onnxruntime and onnx.reference).
SHADOWING = ("runtimes disagree on which of the two tensors the subgraph reads: onnxruntime 1.32 reads the inner "
             "one in a Loop or Scan body and in an If branch whose sibling branch does not read the name; when the "
             "sibling reads it, the answer depends on the optimisation level and the graph (with optimisations off "
             "the outer one; where its constant folding reaches the branch, the inner one); onnx.reference reads "
             "the outer one")


def shadowing_message(name: str) -> str:
    """What is wrong with a node whose subgraph holds an initializer ``name`` that an enclosing
    graph defines too (check's warning and optimize's refusal say it alike)."""
    return f"a subgraph of it holds an initializer {name!r}, a name the graph around it defines too: {SHADOWING}"


def shadowed_names(graph) -> Iterator[tuple]:
    """(name, node) for each subgraph (of ``node``, at any depth) holding an initializer whose
    name the graphs around it define too, in the order found -- ambiguous: see SHADOWING (and
    onnx-graphsurgeon resolves such a name to the outer tensor). A body input of an outer name
    is a tensor of its own to every runtime; a node output of one, onnxruntime refuses."""
    stack = [(graph, frozenset())]
    while stack:
        g, outer = stack.pop()
        here = {t.name for t in g.input} | {t.name for t in g.initializer} \
            | {t.values.name for t in g.sparse_initializer} | {o for n in g.node for o in n.output if o}
        for n in g.node:
            if not has_subgraph(n):
                continue
            scope = outer | here
            for body in subgraphs_of(n):
                defined = chain((t.name for t in body.initializer), (t.values.name for t in body.sparse_initializer))
                for d in defined:
                    if d in scope:
                        yield d, n
                stack.append((body, scope))


def shadowed_name(graph) -> Optional[tuple]:
    """The first of shadowed_names(graph), else None."""
    return next(shadowed_names(graph), None)


def find_cycle(nodes, ins, producer: dict) -> Optional[list]:
    """Some cycle of nodes (as a list) if the nodes' data dependencies have one."""
    deps = [{producer[i] for i in names if i and producer.get(i, -1) >= 0} for names in ins]
    color = [0] * len(deps)  # 0 new, 1 on the stack, 2 done
    for start in range(len(deps)):
        if color[start]:
            continue
        stack = [(start, iter(deps[start]))]
        color[start] = 1
        path = [start]
        while stack:
            k, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[k] = 2
                stack.pop()
                path.pop()
            elif color[nxt] == 1:
                loop = path[path.index(nxt):]
                return [nodes[j] for j in reversed(loop)]
            elif color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))
                path.append(nxt)
    return None


def has_subgraph(node) -> bool:
    """Whether one of node's attributes is a graph (a plain loop: it runs for every node)."""
    attrs = node.attribute
    if attrs:
        for a in attrs:
            kind = a.type
            if kind == _GRAPH or kind == _GRAPHS:
                return True
    return False


def subgraphs_of(node, names=None):
    """The graphs node's attributes hold (of the attributes named in ``names`` only, if given)."""
    for a in node.attribute:
        if names is not None and a.name not in names:
            continue
        if a.type == _GRAPH:
            yield a.g
        elif a.type == _GRAPHS:
            yield from a.graphs


def graphs_of(model: ModelProto) -> list:
    """The main graph and every subgraph, each after the subgraphs inside it."""
    out, stack = [], [(model.graph, False)]
    while stack:
        graph, expanded = stack.pop()
        if expanded:
            out.append(graph)
            continue
        stack.append((graph, True))
        for n in graph.node:
            stack.extend((g, False) for g in subgraphs_of(n))
    return out


def implicit_inputs(node, names=None) -> list:
    """The names node's subgraphs (those of the attributes in ``names``, if given) read from the
    graphs around node (through nested subgraphs too), each once, in the order found: what must
    be computed before node runs."""
    found: dict = {}
    for g in subgraphs_of(node, names):
        _outer_reads(g, frozenset(), found)
    return list(found)


def graph_reads(graph) -> list:
    """The names ``graph`` (its nested subgraphs too) reads or returns without defining them --
    what it takes from a graph around it (a training_info graph: from the model's graph)."""
    found: dict = {}
    _outer_reads(graph, frozenset(), found)
    return list(found)


def _nodes_deep(nodes):
    """The nodes given and those of their subgraphs, at any depth."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        if has_subgraph(n):
            for g in subgraphs_of(n):
                stack.extend(g.node)


def functions_holding_if(functions) -> frozenset:
    """(domain, name) of the model-local functions whose body holds an If -- in a subgraph, or in
    a function it calls, at any depth: a call of one may run a branch that onnxruntime checks
    at load with the shapes of what the call reads (it inlines the call first)."""
    keys = {(f.domain, f.name) for f in functions}
    holders: set = set()
    callers: dict = {}  # (domain, name) of a function -> the functions that call it
    for f in functions:
        me = (f.domain, f.name)
        for n in _nodes_deep(f.node):
            if n.op_type == "If" and n.domain in ("", "ai.onnx"):
                holders.add(me)
            for callee in _callees(n, keys):
                callers.setdefault(callee, set()).add(me)
    stack = list(holders)
    while stack:  # (and every function that calls one, at any depth)
        for caller in callers.get(stack.pop(), ()):
            if caller not in holders:
                holders.add(caller)
                stack.append(caller)
    return frozenset(holders)


def _callees(node, keys) -> list:
    """The (domain, name) of ``keys`` node calls ("" and "ai.onnx" name one domain)."""
    d = node.domain
    return [k for k in ((d, node.op_type), ("" if d == "ai.onnx" else "ai.onnx" if d == "" else d, node.op_type))
            if k in keys][:1]


def calls_function(node, keys) -> bool:
    """Whether node (a NodeProto) is a call of one of the functions ``keys`` ((domain, name))."""
    return bool(keys) and bool(_callees(node, keys))


def _outer_reads(graph, enclosing: frozenset, found: dict) -> None:
    """Into found: the names graph reads that neither it nor ``enclosing`` (the subgraphs
    between it and node) defines."""
    local = {t.name for t in graph.input} | {t.name for t in graph.initializer} \
        | {t.values.name for t in graph.sparse_initializer}
    for n in graph.node:
        local.update(o for o in n.output if o)
    for n in graph.node:
        for i in n.input:
            if i and i not in local and i not in enclosing:
                found.setdefault(i, None)
        if has_subgraph(n):
            inner = enclosing | local
            for a in n.attribute:
                for g in ([a.g] if a.type == _GRAPH else a.graphs if a.type == _GRAPHS else ()):
                    _outer_reads(g, inner, found)
    for o in graph.output:
        if o.name not in local and o.name not in enclosing:
            found.setdefault(o.name, None)


def _reads(n) -> list:
    """What node n reads: its inputs, then what its subgraphs read from outside."""
    if has_subgraph(n):
        return list(n.input) + implicit_inputs(n)
    return n.input


def topological_order(nodes) -> list:
    """The nodes in an order where each runs after its producers, the producers of what its
    subgraphs read included (the given order if it is one)."""
    nodes = list(nodes)
    produced = {o for n in nodes for o in n.output if o}
    available = set()
    ordered = True
    reads = [_reads(n) for n in nodes]
    for n, names in zip(nodes, reads):
        for i in names:
            if i and i in produced and i not in available:
                ordered = False
                break
        if not ordered:
            break
        available.update(n.output)
    if ordered:
        return nodes
    # Kahn's algorithm, stable with respect to the given order.
    producer = {}
    for idx, n in enumerate(nodes):
        for o in n.output:
            if o:
                producer[o] = idx
    deps = [set(producer[i] for i in names if i in producer and producer[i] != idx) for idx, names in enumerate(reads)]
    users: dict = {}
    for idx, ds in enumerate(deps):
        for d in ds:
            users.setdefault(d, []).append(idx)
    pending = [len(ds) for ds in deps]
    ready = [i for i, p in enumerate(pending) if p == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(nodes[i])
        for u in users.get(i, ()):
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, u)
    if len(out) != len(nodes):
        stuck = [nodes[i] for i, p in enumerate(pending) if p > 0]
        n = stuck[0]
        raise ShapeInferenceError(
            "the graph has a cycle through this node (it is not a DAG)", node_name=as_text(n.name), op_type=n.op_type
        )
    return out
