"""Graph edits the passes (and the pass manager) share, on the onnx-graphsurgeon graph.

A pass takes these from here, never from another pass's module; what needs more of
onnx-graphsurgeon than its public classes -- a constant's values, new constants, the edits that
keep a node's and a tensor's lists in step, the walks over bodies -- from optimizer/adapter.py.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...errors import CannotDecide
from ...semantics import LOAD_SAFE_DIM, shape_loads
from ..adapter import (Constant, Graph, clear_inputs, clear_outputs, constant, constant_array, held_constant,
                       outer_variables, replace_uses)

__all__ = ["branch_guard", "bypass", "bypass_refusal", "can_bypass", "claim_node_names", "constant_input",
           "EXPAND_ZERO", "expand_zero_hazard", "huge_tensors", "known_condition", "node_name", "remove_dead_nodes",
           "remove_node", "shape_constant", "subgraph_names", "unloadable_constant"]


def constant_input(node, i: int) -> Optional[np.ndarray]:
    """The value of node's input i when it is a constant, else None (absent, empty, computed)."""
    if i >= len(node.inputs) or node.inputs[i].is_empty() or not isinstance(node.inputs[i], Constant):
        return None
    return constant_array(node.inputs[i])


# onnxruntime runs onnx's shape inference when it loads a model and refuses the model where a
# static dim computed there passes int64 (onnx's checkedMultiply / checkedAdd). A value that
# becomes a dim once it is a constant (a Tile repeat, a Reshape entry, ...) or a dim of an empty
# constant, this large, can make a model that ran (its tensor empty, its node never reached)
# fail to load. Such values stay computed. Operands of larger products are a bound left open
# (a declared static dim past 2**31 times a constant repeat past 2**32). LOAD_SAFE_DIM: see
# shapeinfer/semantics.py.
INT64_MAX = 2**63 - 1
# Inputs whose constant value onnx's inference makes output dims, by op.
DIM_INPUTS = {"Reshape": (1,), "Expand": (1,), "Tile": (1,), "ConstantOfShape": (0,), "Pad": (1,), "Resize": (3,),
              "Range": (0, 1, 2), "OneHot": (1,), "TopK": (1,), "CenterCropPad": (1,), "Col2Im": (1, 2),
              "Split": (1,)}


def dims_load_safely(values) -> bool:
    """Every value is within +-LOAD_SAFE_DIM (so, written as a constant dim, it loads)."""
    return all(-LOAD_SAFE_DIM <= int(v) <= LOAD_SAFE_DIM for v in values)


def huge_tensors(facts: dict) -> frozenset:
    """The names of the tensors inference knows a dim past LOAD_SAFE_DIM of, or static dims that
    multiply past int64 (semantics.shape_loads; each is empty, or it could not exist). The passes leave every node that reads or makes one as it is
    (PassContext.nodes), and keep a value computed that would make a dim of one
    (unloadable_constant): a rewrite there -- a bypass, a reduction reading the Tile before it,
    a Reshape pair cancelled, a Tile's repeats folded -- can let onnxruntime's load-time
    inference see such a dim where it could not before, and onnx's inference miscounts such
    dims (Split then refuses a model that holds no element at all). ``facts``: name -> Fact, as
    inference gives them."""
    return frozenset(name for name, f in facts.items() if f is not None and f.shape and not shape_loads(f.shape))


def reshape_data_loads(ctx, data) -> bool:
    """Whether a Reshape of ``data`` may get a constant shape: onnx's inference (which
    onnxruntime runs when it loads a model) multiplies a Reshape's input dims when its shape is
    a constant, and refuses the model when the product passes int64 -- an input [2**63-1, 4, 0]
    has no element, yet it would. The product of its nonzero static dims must fit."""
    shape = ctx.shape(data)
    total = 1
    for d in shape or ():
        if type(d) is int and d:
            total *= d
            if total > INT64_MAX:
                return False
    return True


def unloadable_constant(tensor, arr, ctx=None) -> str:
    """Why making ``tensor`` the constant ``arr`` could stop onnxruntime loading the model
    (see LOAD_SAFE_DIM, reshape_data_loads), or ''."""
    if any(d > LOAD_SAFE_DIM for d in arr.shape):
        return f"its shape {list(arr.shape)} has a dim past {LOAD_SAFE_DIM}"
    if arr.dtype.kind in "iu" and arr.size and not arr.all():
        for reader in tensor.outputs:
            if reader.op in ("Div", "Mod") and len(reader.inputs) > 1 and reader.inputs[1] is tensor \
                    and (reader.domain or "") in ("", "ai.onnx"):
                return (f"it holds a 0 that {reader.name or reader.op} ({reader.op}) divides by: onnxruntime "
                        "refuses a constant integer divisor with a 0 when it loads the model (even in a "
                        "branch that never runs)")
            if reader.op == "Concat" and ctx is not None and _feeds_reshape_of_empty(ctx, reader):
                return ("it holds a 0 that a Concat makes the shape of a Reshape of a tensor with a dim of 0 from: "
                        "onnxruntime's ReshapeFusion (its default level) then writes -1 beside it, a shape its "
                        "own inference refuses")
    if ctx is not None and arr.dtype.kind in "iu" and arr.size and _reaches_zero_expand(ctx, tensor, arr):
        return EXPAND_ZERO
    if ctx is not None:
        for reader in tensor.outputs:
            if (reader.domain or "") not in ("", "ai.onnx"):
                continue
            if reader.op == "Reshape" and len(reader.inputs) > 1 and reader.inputs[1] is tensor \
                    and not reshape_data_loads(ctx, reader.inputs[0]):
                return (f"{reader.name or reader.op} (Reshape) reshapes a tensor whose static dims multiply past "
                        "int64: with a constant shape, onnxruntime would refuse to load the model")
            if ctx.huge and any(i < len(reader.inputs) and reader.inputs[i] is tensor for i in DIM_INPUTS.get(reader.op, ())) \
                    and any(t.name in ctx.huge for t in reader.outputs):
                return (f"{reader.name or reader.op} ({reader.op}) makes a dim past {LOAD_SAFE_DIM} of it, which "
                        "onnxruntime's load-time inference would see (see huge_tensors)")
    if arr.size == 0 or arr.dtype.kind not in "iu":
        return ""
    if -LOAD_SAFE_DIM <= int(arr.min()) and int(arr.max()) <= LOAD_SAFE_DIM:
        return ""
    for reader in tensor.outputs:
        for i in DIM_INPUTS.get(reader.op, ()):
            if i < len(reader.inputs) and reader.inputs[i] is tensor and (reader.domain or "") in ("", "ai.onnx"):
                return (f"it holds a value past {LOAD_SAFE_DIM}, which {reader.name or reader.op} ({reader.op}) "
                        "would make a dim: onnxruntime may refuse to load the model")
    return ""


# ops onnxruntime's constant folding computes once every input is a constant
_FOLDED_BY_RUNTIME = frozenset({"Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Reshape", "Cast", "Identity",
                                "Add", "Sub", "Mul", "Div", "Max", "Min", "Abs", "Neg", "Where", "ReduceProd", "ReduceSum"})
_ZERO_EXPAND_WALK = 32  # nodes followed from a folded constant toward an Expand's shape


def _reaches_zero_expand(ctx, tensor, arr) -> bool:
    """Whether making ``tensor`` the constant ``arr`` hands onnxruntime a constant Expand shape
    holding a 0 over a dim that may not be 0 (expand_zero_hazard): ``tensor`` is that shape, or
    flows into it through ops onnxruntime folds once their other inputs are constants (a Gather
    of a folded Shape, a Concat of constants...), with the value inference knows there."""
    if not tensor.outputs:
        return False
    seen, todo, steps = set(), [tensor], 0
    while todo and steps < _ZERO_EXPAND_WALK:
        t = todo.pop()
        for reader in t.outputs:
            steps += 1
            if id(reader) in seen or (reader.domain or "") not in ("", "ai.onnx"):
                continue
            seen.add(id(reader))
            if reader.op == "Expand" and len(reader.inputs) > 1 and reader.inputs[1] is t:
                value = arr.reshape(-1).tolist() if t is tensor else _known_ints(ctx, t)
                if value is not None and expand_zero_hazard(ctx.shape(reader.inputs[0]), value):
                    return True
            elif reader.op in _FOLDED_BY_RUNTIME and all(
                    i is t or i.is_empty() or isinstance(i, Constant) for i in reader.inputs):
                todo.extend(o for o in reader.outputs if not o.is_empty())
    return False


def _known_ints(ctx, t) -> Optional[list]:
    fact = ctx.facts.fact(t.name)
    return None if fact is None else fact.int_elements()


def _feeds_reshape_of_empty(ctx, concat) -> bool:
    """Whether ``concat`` makes the shape of a Reshape whose data has a static dim of 0."""
    for out in concat.outputs:
        for r in out.outputs:
            if r.op == "Reshape" and len(r.inputs) > 1 and r.inputs[1] is out and (r.domain or "") in ("", "ai.onnx"):
                shape = ctx.shape(r.inputs[0])
                if shape is not None and 0 in shape:
                    return True
    return False


EXPAND_ZERO = ("it would be an Expand's constant shape holding a 0 over a dim that may not be 0: onnxruntime's "
               "ExpandElimination (its default level) takes such an Expand for a no-op and drops it")


def expand_zero_hazard(data_shape, target) -> bool:
    """Whether an Expand of a tensor of ``data_shape`` to the constant ``target`` holds a 0 over
    a dim not known to be 0. onnxruntime's ExpandElimination removes an Expand whose constant
    target entries are each at most 1 or the input's dim -- a 0 included, which broadcasts a 1
    (or any dim) to 0: the model it runs then computes over the unexpanded tensor."""
    if 0 not in target:
        return False
    if data_shape is None:
        return True
    if len(target) > len(data_shape):
        return False  # (a target longer than the input's rank adds dims: never taken for a no-op)
    aligned = list(data_shape)[len(data_shape) - len(target):]
    return any(t == 0 and d != 0 for t, d in zip(target, aligned))


def shape_constant(ctx, base: str, values) -> Constant:
    """An int64 shape constant; equal ones are shared (one initializer for every [0,0,8,8])."""
    key = tuple(int(v) for v in values)
    made = ctx.shared_constants.get(key)
    if made is None:
        name = ctx.unique_name(base)
        made = ctx.shared_constants[key] = constant(name, np.asarray(key, dtype=np.int64))
    return made


def remove_node(node) -> None:
    """Take node out of the graph: no outputs, and no longer a consumer of its inputs (a removed
    node that still read its inputs would show up among their consumers, without outputs). The
    node itself is dropped from graph.nodes at the end of the run."""
    clear_outputs(node)
    clear_inputs(node)


def can_bypass(ctx, node, source) -> bool:
    """Whether ``bypass(ctx, node, source)`` may be done (see bypass_refusal)."""
    return not bypass_refusal(ctx, node, source)


def bypass_refusal(ctx, node, source) -> str:
    """Why ``bypass(ctx, node, source)`` may not be done, or ''.

    A graph output must keep its name, so when node's output is one ``source`` takes it --
    which it may only when its own name is not one to keep: not a graph input, an initializer
    or another graph output, but a tensor a node of the graph makes -- and only once the manager
    allows renames (``ctx.rename_outputs``; until then such a bypass is noted in
    ``ctx.renames_waiting``). A constant ``source`` must be one its new readers may read as a
    constant (unloadable_constant: a Reshape shape, Tile repeats or Div divisor that onnxruntime
    would refuse at load, which it did not see while node stood between)."""
    held = held_constant(source)
    if held is not None:
        why = _constant_refusal(ctx, node.outputs[0], held)
        if why:
            return why
    if node.outputs[0].name not in ctx.graph_outputs:
        return ""
    if (isinstance(source, Constant) or len(source.inputs) != 1 or source.name in ctx.graph_outputs
            or any(t is source for t in ctx.graph.inputs)):
        return "its output is a graph output"
    if ctx.guarded_tensors and id(source) in ctx.guarded_tensors:
        # (renamed, it would take the output's declared type, which onnxruntime reads)
        return "its output is a graph output, and an If's branch reads the tensor that would take its name"
    if not ctx.rename_outputs:
        ctx.renames_waiting = True
        return "its output is a graph output"
    return ""


# Readers whose constant input unloadable_constant judges by its values.
_VALUE_READERS = frozenset(DIM_INPUTS) | {"Div", "Mod"}


def _constant_refusal(ctx, out, source) -> str:
    """Why the readers of ``out`` may not read the constant ``source`` instead, or ''."""
    if not any(r.op in _VALUE_READERS for r in out.outputs) and all(int(d) <= LOAD_SAFE_DIM for d in source.shape):
        return ""
    try:
        arr = constant_array(source)
    except CannotDecide:  # (external data, never read)
        return "the constant it would hand on is not loaded (external data)"
    return unloadable_constant(out, arr, ctx)


def bypass(ctx, node, source) -> None:
    """Node's readers read ``source`` (a tensor equal to node's output, bit for bit) instead, and
    node leaves the graph. When node's output is a graph output, ``source`` is renamed to it and
    takes its place among the outputs (as onnx-ir's identity elimination does): the tensor the
    graph returns keeps its name, and every reader of ``source`` reads the same tensor under
    the new name. Only where ``can_bypass`` allows it."""
    out = node.outputs[0]
    replace_uses(ctx.graph, out, source)
    if out.name in ctx.graph_outputs:
        source.name = out.name
        ctx.graph.outputs = [source if t is out else t for t in ctx.graph.outputs]
    remove_node(node)


def known_condition(ctx, node, main: bool = True, main_ids=None):
    """The If's condition as a bool, when it is known (one element), else None: a constant, a
    Constant node's value, or -- for a tensor of the main graph (``main``: node is in it; else
    the tensor must be the main graph's by identity, not a body's of the same name) -- the
    value inference knows. ``main_ids``: the ids of the main graph's tensors, when the caller
    has them (else they are looked up)."""
    from onnx.checker import ValidationError

    cond = node.inputs[0] if node.inputs and node.inputs[0].name else None
    held = held_constant(cond) if cond is not None else None
    arr = None
    if held is not None:
        try:
            arr = constant_array(held)
        except (ValidationError, ValueError, OSError):  # unreadable (external data): not known
            arr = None
    if arr is None and cond is not None:
        if main or (id(cond) in main_ids if main_ids is not None else ctx.graph.tensors().get(cond.name) is cond):
            fact = ctx.facts.fact(cond.name)
            arr = None if fact is None else fact.value
    if arr is None or arr.size != 1:
        return None
    e = arr.reshape(-1)[0]
    if isinstance(e, (bool, np.bool_)) or isinstance(e, (int, np.integer)) and not isinstance(e, bool):
        return bool(e)
    return None


def branch_guard(ctx) -> tuple:
    """(ids of the nodes the passes leave as they are, ids of the tensors those make): every
    tensor a branch that onnxruntime checks at load reads from the graphs around it, and every
    tensor that is computed from.

    onnxruntime infers both branches of every If when it loads a model -- the branch a run never
    takes too -- from the types it knows of what they read, and refuses the model where a
    branch contradicts them (a Split whose sizes do not sum to a dim it sees as 3). Its inference
    knows a shape where the graph makes it plain (a constant Reshape shape, a constant) and no
    value a node computes (the ``Shape`` of a static shape is no constant to it): a computed
    shape is unknown to it. A rewrite of what the branch reads -- a Shape chain folded to a
    constant, a computed Reshape shape made constant, a node bypassed that hid a shape -- can
    make a fact plain that the branch contradicts, and a model that loaded would be refused:
    the nodes that make those tensors stay (onnxruntime then knows of them what it knew).
    Nothing else is held back.

    Only what onnxruntime does not already see in full (``ctx.visible``, see
    optimizer/load_view.py) is guarded, and the walk back stops at what it does: a rewrite
    cannot show it more of such a tensor (a bypass hands the branch a tensor equal to it, which
    onnxruntime cannot know more of than inference does), whatever happens further up.

    The branches: both of an If whose condition is not known, the one never taken of an If
    whose condition is (until inline-if replaces it by the other), in the main graph and in
    every body -- with ``ctx.optimistic``, none of an If whose condition is computed from
    constants alone (inlining a decided If upstream and folding may decide it: an If nested in
    the branch an If takes, whose condition reads that If's outputs, as in AffineGrid's
    function), and ``ctx.pending_ifs`` says whether one is left; for a call of a model-local
    function holding an If (``ctx.if_functions``), onnxruntime inlines the call and checks the
    If with the types of the call's inputs: those inputs. Computed from: the producers of each such tensor, through the graphs' boundaries (a
    body's input is given by the inputs of the node whose body it is), what a producer's own
    subgraphs read included. One walk of the bodies (of the main graph, the nodes that may hold
    one or call a function) and one of those producers."""
    holders = ctx.if_functions
    reads: list = []
    owners: dict = {}  # id(a body's input) -> the node whose body it is
    main_ids = None
    ctx.pending_ifs = False
    stack = [(None, True)]  # (a graph -- None: the main graph, whose nodes of interest the index gives)
    while stack:
        g, main = stack.pop()
        for n in ctx.graph_holders() if g is None else g.nodes:
            if not n.outputs:
                continue
            op = ctx.op(n)
            if not op and holders and (n.domain or "", n.op) in holders:
                reads.extend(n.inputs)
            bodies = [v for v in n.attrs.values() if isinstance(v, Graph)] if n.attrs else ()
            if not bodies:
                continue
            if op == "If":
                if not main and main_ids is None:
                    main_ids = {id(t) for t in ctx.graph.tensors().values()}
                taken = known_condition(ctx, n, main, main_ids)
                if taken is None and ctx.optimistic and n.inputs and id(n.inputs[0]) in ctx.constant_derived:
                    ctx.pending_ifs = True  # (its condition may yet fold: then inline-if takes a branch)
                else:
                    reads.extend(outer_variables(n, None if taken is None else ("else_branch" if taken else "then_branch",)))
            for body in bodies:
                for t in body.inputs:
                    owners[id(t)] = n
                stack.append((body, False))
    if not reads:
        return frozenset(), frozenset()
    if ctx.visible is None:
        ctx.visible = ctx.find_visible() if ctx.find_visible is not None else frozenset()
    visible = ctx.visible
    nodes: set = set()
    tensors: set = set()
    while reads:
        t = reads.pop()
        if id(t) in tensors or isinstance(t, Constant) or t.is_empty() or id(t) in visible:
            continue
        tensors.add(id(t))
        for p in t.inputs:
            if id(p) not in nodes:
                nodes.add(id(p))
                reads.extend(p.inputs)
                if p.attrs and any(isinstance(v, Graph) for v in p.attrs.values()):
                    reads.extend(outer_variables(p))
        owner = owners.get(id(t))
        if owner is not None:
            reads.extend(owner.inputs)
    return frozenset(nodes), frozenset(tensors)


def _node_names(ctx, graph) -> tuple:
    """(the names of graph's nodes, base name -> the last suffix tried for it): one pair per
    graph, built once per run and kept up to date by claim_node_names and node_name (a name a
    removed node had stays taken)."""
    cache = ctx.memo.setdefault("node-names", {})  # id(graph) -> (graph, names, suffixes)
    got = cache.get(id(graph))
    if got is None or got[0] is not graph:
        got = cache[id(graph)] = (graph, {n.name for n in graph.nodes if n.name}, {})
    return got[1], got[2]


def _free_name(base: str, taken: set, suffixes: dict) -> str:
    """``base``, or ``base_k`` for the first k not taken (k goes on from where it last stopped
    for this base: many nodes named alike cost one step each); taken from then on."""
    name, k = base, suffixes.get(base, 0)
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    suffixes[base] = k
    taken.add(name)
    return name


def claim_node_names(ctx, graph, nodes) -> None:
    """Nodes about to join ``graph`` (inlined from a branch): each whose name a node of graph has
    already -- or one joining before it -- is renamed (``n1`` -> ``n1_1``). onnxruntime refuses a
    graph with two nodes of one name; nodes of different graphs (the main graph and a branch)
    may share one, and an empty name is no name."""
    taken, suffixes = _node_names(ctx, graph)
    for n in nodes:
        if n.name:
            n.name = _free_name(n.name, taken, suffixes)


def node_name(ctx, graph, base: str) -> str:
    """A name for a new node of ``graph`` that none of its nodes has (see claim_node_names)."""
    taken, suffixes = _node_names(ctx, graph)
    return _free_name(base, taken, suffixes)


def subgraph_names(graph) -> set:
    """The names of the tensors made or given inside graph's subgraphs (nested ones too): each
    name is made once in a whole model, so a name a pass adds to the graph must be none of them."""
    names: set = set()
    stack = [v for n in graph.nodes for v in n.attrs.values() if isinstance(v, Graph)]
    while stack:
        g = stack.pop()
        names.update(t.name for t in g.inputs)
        for n in g.nodes:
            names.update(t.name for t in n.outputs)
            names.update(t.name for t in n.inputs if isinstance(t, Constant))
            stack.extend(v for v in n.attrs.values() if isinstance(v, Graph))
    return names


def remove_dead_nodes(graph) -> None:
    """Keep the nodes the graph outputs depend on (through subgraph reads too), in order.

    (onnx-graphsurgeon's cleanup does this too, several times slower on large graphs.)"""
    live: set = set()
    stack = list(graph.outputs)
    seen_tensors: set = set()
    while stack:
        t = stack.pop()
        if id(t) in seen_tensors:
            continue
        seen_tensors.add(id(t))
        for producer in t.inputs:
            if id(producer) in live:
                continue
            live.add(id(producer))
            stack.extend(x for x in producer.inputs if not x.is_empty())
            if any(hasattr(v, "nodes") for v in producer.attrs.values()):
                stack.extend(outer_variables(producer))
    graph.nodes = [n for n in graph.nodes if id(n) in live and n.outputs]
